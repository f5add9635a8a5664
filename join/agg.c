/*
 * join/agg.c — Paimon's aggregate functions over widen values (spec §9; older-sequence rule of
 * §7.4; retraction rules of §8.2, §8.3 and §9.3).
 *
 * Every function computes its result aside and only then replaces the accumulator, so an error
 * (E_ARITH_OVERFLOW, E_NESTED_KEY_NULL, E_TYPE for a bad bitmap, out of memory) leaves acc as it
 * was. Collections are rebuilt from "picks": pointers to the elements of acc or of the input that
 * the result keeps; input elements are deep-copied first (the only step that can fail), then acc
 * elements are moved into the new array and acc's dropped elements are released.
 *
 * Pure functions: no global state; any thread may call them on values it owns.
 */
#include "join/agg.h"
#include "common/hash.h"
#include "common/hindex.h"
#include "common/text.h"

#include <gmp.h>
#include <roaring/roaring.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GMP_LIMB_BITS == 64, "agg.c converts __int128 through 64-bit GMP limbs");

/* ==== names, lookup ======================================================================== */

static const struct {
  const char *name;
  wd_agg_fn_t fn;
} wd_agg_names[] = {
    {"sum", WD_AGG_SUM},
    {"product", WD_AGG_PRODUCT},
    {"max", WD_AGG_MAX},
    {"min", WD_AGG_MIN},
    {"last_value", WD_AGG_LAST_VALUE},
    {"last_non_null_value", WD_AGG_LAST_NON_NULL_VALUE},
    {"first_value", WD_AGG_FIRST_VALUE},
    {"first_non_null_value", WD_AGG_FIRST_NON_NULL_VALUE},
    {"first_not_null_value", WD_AGG_FIRST_NON_NULL_VALUE}, /* legacy alias (spec §9.1) */
    {"listagg", WD_AGG_LISTAGG},
    {"bool_and", WD_AGG_BOOL_AND},
    {"bool_or", WD_AGG_BOOL_OR},
    {"collect", WD_AGG_COLLECT},
    {"merge_map", WD_AGG_MERGE_MAP},
    {"merge_map_with_keytime", WD_AGG_MERGE_MAP_WITH_KEYTIME},
    {"nested_update", WD_AGG_NESTED_UPDATE},
    {"nested_partial_update", WD_AGG_NESTED_PARTIAL_UPDATE},
    {"rbm32", WD_AGG_RBM32},
};

static const char *const wd_agg_unsupported[] = {"hll_sketch", "theta_sketch", "rbm64"};

static const char *agg_col(const wd_agg_spec_t *spec) { return spec->column ? spec->column : "?"; }

/*
 * Maps a configured function name to its id (spec §9.1, §11.1). Names match exactly, as Paimon's
 * factory identifiers do. Returns NULL, or a WD_ERR_CONFIG error: C_AGG_UNSUPPORTED for the Paimon
 * functions widen does not implement yet, C_AGG_UNKNOWN_FUNCTION for anything else (count too).
 */
wd_error_t *wd_agg_lookup(const char *name, const char *column, wd_agg_fn_t *fn) {
  const char *col = column ? column : "?";
  if (!name) name = "";
  for (size_t i = 0; i < sizeof(wd_agg_names) / sizeof(wd_agg_names[0]); i++) {
    if (strcmp(name, wd_agg_names[i].name) == 0) {
      *fn = wd_agg_names[i].fn;
      return NULL;
    }
  }
  for (size_t i = 0; i < sizeof(wd_agg_unsupported) / sizeof(wd_agg_unsupported[0]); i++) {
    if (strcmp(name, wd_agg_unsupported[i]) == 0)
      return wd_error_new(WD_ERR_CONFIG, C_AGG_UNSUPPORTED, "%s is not supported yet (column %s)", name, col);
  }
  if (strcmp(name, "count") == 0)
    return wd_error_new(WD_ERR_CONFIG, C_AGG_UNKNOWN_FUNCTION,
                        "unknown aggregate function 'count' for column %s: Could not find any factory for "
                        "identifier 'count' (count is not an aggregate function; use sum over 0/1 values)",
                        col);
  const char *names[sizeof(wd_agg_names) / sizeof(wd_agg_names[0])];
  for (size_t i = 0; i < sizeof(wd_agg_names) / sizeof(wd_agg_names[0]); i++) names[i] = wd_agg_names[i].name;
  const char *near = wd_closest(name, names, sizeof(names) / sizeof(*names));
  char hint[96] = "";
  if (near) snprintf(hint, sizeof(hint), "did you mean '%s'? ", near);
  return wd_error_new(WD_ERR_CONFIG, C_AGG_UNKNOWN_FUNCTION,
                      "unknown aggregate function '%s' for column %s: Could not find any factory for identifier "
                      "'%s'; %sfunctions: sum, product, max, min, last_value, last_non_null_value, first_value, "
                      "first_non_null_value, listagg, bool_and, bool_or, collect, merge_map, merge_map_with_keytime, "
                      "nested_update, nested_partial_update, rbm32",
                      name, col, name, hint);
}

const char *wd_agg_name(wd_agg_fn_t fn) {
  if (fn == WD_AGG_NONE) return "none";
  for (size_t i = 0; i < sizeof(wd_agg_names) / sizeof(wd_agg_names[0]); i++)
    if (wd_agg_names[i].fn == fn) return wd_agg_names[i].name;
  return "unknown";
}

bool wd_agg_can_retract(wd_agg_fn_t fn) {
  switch (fn) {
  case WD_AGG_NONE: /* primary-key columns: the retraction's key is taken as is */
  case WD_AGG_SUM:
  case WD_AGG_PRODUCT:
  case WD_AGG_COLLECT:
  case WD_AGG_MERGE_MAP:
  case WD_AGG_NESTED_UPDATE:
  case WD_AGG_LAST_VALUE:
  case WD_AGG_LAST_NON_NULL_VALUE: return true;
  default: return false;
  }
}

void wd_agg_spec_clear(wd_agg_spec_t *spec) {
  if (!spec) return;
  free(spec->delimiter);
  free(spec->nested_key);
  free(spec->nested_seq);
  spec->delimiter = NULL;
  spec->nested_key = NULL;
  spec->n_nested_key = 0;
  spec->nested_seq = NULL;
  spec->n_nested_seq = 0;
}

/* ==== type check =========================================================================== */

/* Unbounded text: STRING, which Paimon spells VARCHAR(2147483647). */
static bool agg_is_string_type(const wd_type_t *t) {
  return t->id == WD_STRING || (t->id == WD_VARCHAR && t->length == 2147483647);
}

static bool agg_row_indexes_ok(const wd_type_t *row, const int *idx, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (idx[i] < 0 || (size_t)idx[i] >= row->nfields) return false;
  return true;
}

/*
 * Checks the column type against the function (spec §9.1 "column types", §9.2; config errors of
 * §11.1). Returns NULL or WD_ERR_CONFIG "C_AGG_TYPE" as "<fn> needs <what>, <column> is <type>".
 */
wd_error_t *wd_agg_check_type(const wd_agg_spec_t *spec) {
  const wd_type_t *t = spec->type;
  const char *need = NULL;
  char *text = NULL;
  wd_error_t *err = NULL;

  if (!t) return wd_error_new(WD_ERR_INTERNAL, NONE, "wd_agg_check_type: column %s has no type", agg_col(spec));
  switch (spec->fn) {
  case WD_AGG_SUM:
  case WD_AGG_PRODUCT:
    if (!wd_type_is_numeric(t)) need = "a numeric column";
    break;
  case WD_AGG_MAX:
  case WD_AGG_MIN:
    if (t->id == WD_ARRAY || t->id == WD_MAP || t->id == WD_ROW) need = "an orderable column (not ARRAY, MAP or ROW)";
    break;
  case WD_AGG_LISTAGG:
    if (!agg_is_string_type(t)) need = "STRING (unbounded; VARCHAR(n) and CHAR(n) are refused)";
    break;
  case WD_AGG_BOOL_AND:
  case WD_AGG_BOOL_OR:
    if (t->id != WD_BOOLEAN) need = "a BOOLEAN column";
    break;
  case WD_AGG_COLLECT:
    if (t->id != WD_ARRAY) need = "an ARRAY column";
    break;
  case WD_AGG_MERGE_MAP:
    if (t->id != WD_MAP) need = "a MAP column";
    break;
  case WD_AGG_MERGE_MAP_WITH_KEYTIME:
    if (t->id != WD_MAP || !t->val || t->val->id != WD_ROW || t->val->nfields < 2)
      need = "MAP<K, ROW<...>> with at least 2 ROW fields";
    else if (spec->ts_field < 0 || (size_t)spec->ts_field >= t->val->nfields)
      need = "a ts-field naming a field of the ROW";
    else if (!agg_is_string_type(t->val->fields[spec->ts_field].type)) need = "a STRING ts-field";
    break;
  case WD_AGG_NESTED_UPDATE:
  case WD_AGG_NESTED_PARTIAL_UPDATE:
    if (t->id != WD_ARRAY || !t->elem || t->elem->id != WD_ROW) need = "ARRAY<ROW<...>>";
    else if (!agg_row_indexes_ok(t->elem, spec->nested_key, spec->n_nested_key) ||
             !agg_row_indexes_ok(t->elem, spec->nested_seq, spec->n_nested_seq))
      need = "nested-key and nested-sequence-field naming fields of the ROW";
    break;
  case WD_AGG_RBM32:
    if (t->id != WD_BYTES) need = "a BYTES column";
    break;
  default: break;
  }
  if (!need) goto done;
  text = wd_type_to_string(t);
  err = wd_error_new(WD_ERR_CONFIG, C_AGG_TYPE, "%s needs %s, %s is %s", wd_agg_name(spec->fn), need, agg_col(spec),
                     text ? text : "?");
done:
  free(text);
  return err;
}

/* ==== small value helpers ================================================================== */

/* acc = deep copy of in (in NULL gives NULL). */
static wd_error_t *agg_assign(const wd_type_t *t, wd_value_t *acc, const wd_value_t *in) {
  wd_value_t tmp;
  if (in->is_null) {
    wd_value_clear(t, acc);
    return NULL;
  }
  if (wd_value_copy(t, &tmp, in) != 0) return wd_error_nomem();
  wd_value_move(t, acc, &tmp);
  return NULL;
}

static bool agg_eq(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b) {
  if (a->is_null || b->is_null) return a->is_null && b->is_null;
  return wd_value_eq(t, a, b);
}

static uint64_t agg_hash(const wd_type_t *t, const wd_value_t *v) {
  return v->is_null ? UINT64_C(0x6a09e667f3bcc909) : wd_value_hash(t, v);
}

/* ==== hash set over values or ROW key projections ========================================== */

/* What a set compares: the whole value of type t, or (nidx > 0) fields idx[] of a ROW of type t. */
typedef struct agg_keyspec {
  const wd_type_t *t;
  const int *idx;
  size_t nidx;
} agg_keyspec_t;

static uint64_t agg_key_hash(const agg_keyspec_t *ks, const wd_value_t *v) {
  if (ks->nidx == 0) return agg_hash(ks->t, v);
  uint64_t h = ks->nidx;
  for (size_t j = 0; j < ks->nidx; j++) {
    int f = ks->idx[j];
    h = wd_hash_mix64(h ^ agg_hash(ks->t->fields[f].type, &v->list.v[f]));
  }
  return h;
}

/* Key equality; NULL key parts are equal to each other (spec §9.2 nested-key-null-strategy merge). */
static bool agg_key_eq(const agg_keyspec_t *ks, const wd_value_t *a, const wd_value_t *b) {
  if (ks->nidx == 0) return agg_eq(ks->t, a, b);
  for (size_t j = 0; j < ks->nidx; j++) {
    int f = ks->idx[j];
    if (!agg_eq(ks->t->fields[f].type, &a->list.v[f], &b->list.v[f])) return false;
  }
  return true;
}

/* A set of borrowed value pointers (common/hindex.h), sized up front (no growth), with a size_t
 * payload per entry (a position or a count); entries in insertion order. */
typedef struct agg_set {
  const agg_keyspec_t *ks;
  const wd_value_t **key;
  uint64_t *hash;
  size_t *aux;
  size_t n, cap;
  wd_hindex_t ix;
} agg_set_t;

static void agg_set_free(agg_set_t *s) {
  free(s->key);
  free(s->hash);
  free(s->aux);
  wd_hindex_free(&s->ix);
  memset(s, 0, sizeof(*s));
}

/* Prepares a set for at most cap entries. 0, or -1 on no memory (s is then empty). */
static int agg_set_init(agg_set_t *s, const agg_keyspec_t *ks, size_t cap) {
  memset(s, 0, sizeof(*s));
  s->ks = ks;
  s->cap = cap;
  s->key = malloc((cap ? cap : 1) * sizeof(*s->key));
  s->hash = malloc((cap ? cap : 1) * sizeof(*s->hash));
  s->aux = malloc((cap ? cap : 1) * sizeof(*s->aux));
  if (wd_hindex_init(&s->ix, cap) || !s->key || !s->hash || !s->aux) {
    agg_set_free(s);
    return -1;
  }
  return 0;
}

/* What agg_set_find looks for. */
typedef struct agg_set_probe {
  const agg_set_t *s;
  const wd_value_t *v;
  uint64_t h;
} agg_set_probe_t;

static bool agg_set_eq(const void *ctx, size_t e) {
  const agg_set_probe_t *q = ctx;
  return q->s->hash[e] == q->h && agg_key_eq(q->s->ks, q->s->key[e], q->v);
}

static ptrdiff_t agg_set_find(const agg_set_t *s, const wd_value_t *v, uint64_t h) {
  agg_set_probe_t q = {s, v, h};
  return wd_hindex_find(&s->ix, h, agg_set_eq, &q, NULL);
}

/* Adds v (not present; fewer than cap entries so far). Returns the entry index. */
static size_t agg_set_add(agg_set_t *s, const wd_value_t *v, uint64_t h, size_t aux) {
  size_t e = s->n++;
  s->key[e] = v;
  s->hash[e] = h;
  s->aux[e] = aux;
  wd_hindex_add(&s->ix, h, e);
  return e;
}

/* ==== rebuilding collections from picks ==================================================== */

/* One element of a result: src is borrowed from acc (acc_idx >= 0, moved at commit) or from the
 * input (acc_idx < 0, deep-copied). */
typedef struct agg_pick {
  const wd_value_t *src;
  ptrdiff_t acc_idx;
} agg_pick_t;

typedef struct agg_build {
  wd_value_t *out;
  size_t n;
  bool *stolen;
  size_t acc_n;
} agg_build_t;

static void agg_build_abort(const wd_type_t *et, agg_build_t *b) {
  for (size_t i = 0; i < b->n && b->out; i++) wd_value_clear(et, &b->out[i]);
  free(b->out);
  free(b->stolen);
  memset(b, 0, sizeof(*b));
}

/* Allocates the result array and deep-copies the input picks. 0, or -1 on no memory (nothing
 * changed, nothing left allocated). */
static int agg_build_prepare(const wd_type_t *et, const agg_pick_t *p, size_t n, size_t acc_n, agg_build_t *b) {
  memset(b, 0, sizeof(*b));
  b->n = n;
  b->acc_n = acc_n;
  if (n) {
    b->out = malloc(n * sizeof(*b->out));
    if (!b->out) goto fail;
    for (size_t i = 0; i < n; i++) b->out[i].is_null = true;
  }
  if (acc_n) {
    b->stolen = calloc(acc_n, sizeof(*b->stolen));
    if (!b->stolen) goto fail;
  }
  for (size_t i = 0; i < n; i++)
    if (p[i].acc_idx < 0 && wd_value_copy(et, &b->out[i], p[i].src) != 0) goto fail;
  return 0;
fail:
  agg_build_abort(et, b);
  return -1;
}

/* Moves the acc picks into the result and releases acc's elements that were not picked (the
 * caller frees acc's element array itself). Cannot fail. */
static void agg_build_commit(const wd_type_t *et, const agg_pick_t *p, agg_build_t *b, wd_value_t *acc_v) {
  for (size_t i = 0; i < b->n; i++) {
    if (p[i].acc_idx < 0) continue;
    b->out[i] = acc_v[p[i].acc_idx];
    b->stolen[p[i].acc_idx] = true;
  }
  for (size_t j = 0; j < b->acc_n; j++)
    if (!b->stolen[j]) wd_value_clear(et, &acc_v[j]);
  free(b->stolen);
  b->stolen = NULL;
}

/* Replaces acc (an ARRAY, or NULL) by an ARRAY of the picked elements. */
static wd_error_t *agg_array_commit(const wd_type_t *t, wd_value_t *acc, const agg_pick_t *p, size_t n) {
  wd_value_t *acc_v = acc->is_null ? NULL : acc->list.v;
  size_t acc_n = acc->is_null ? 0 : acc->list.n;
  agg_build_t b;
  if (agg_build_prepare(t->elem, p, n, acc_n, &b) != 0) return wd_error_nomem();
  agg_build_commit(t->elem, p, &b, acc_v);
  free(acc_v);
  acc->is_null = false;
  acc->list.v = b.out;
  acc->list.n = n;
  return NULL;
}

/* Replaces acc (a MAP, or NULL) by a MAP of the picked keys and values (parallel picks). */
static wd_error_t *agg_map_commit(const wd_type_t *t, wd_value_t *acc, const agg_pick_t *kp, const agg_pick_t *vp,
                                  size_t n) {
  wd_value_t *acc_k = acc->is_null ? NULL : acc->map.k;
  wd_value_t *acc_v = acc->is_null ? NULL : acc->map.v;
  size_t acc_n = acc->is_null ? 0 : acc->map.n;
  agg_build_t bk, bv;
  if (agg_build_prepare(t->elem, kp, n, acc_n, &bk) != 0) return wd_error_nomem();
  if (agg_build_prepare(t->val, vp, n, acc_n, &bv) != 0) {
    agg_build_abort(t->elem, &bk);
    return wd_error_nomem();
  }
  agg_build_commit(t->elem, kp, &bk, acc_k);
  agg_build_commit(t->val, vp, &bv, acc_v);
  free(acc_k);
  free(acc_v);
  acc->is_null = false;
  acc->map.k = bk.out;
  acc->map.v = bv.out;
  acc->map.n = n;
  return NULL;
}

/* ==== exact numbers ======================================================================== */

static const char *agg_int_name(const wd_type_t *t) {
  switch (t->id) {
  case WD_TINYINT: return "TINYINT";
  case WD_SMALLINT: return "SMALLINT";
  case WD_INT: return "INT";
  default: return "BIGINT";
  }
}

static wd_error_t *agg_int_overflow(const wd_agg_spec_t *spec, const char *what) {
  return wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "%s overflow in %s of column %s", agg_int_name(spec->type), what,
                      agg_col(spec));
}

static void agg_mpz_set_i128(mpz_t z, wd_i128 v) {
  unsigned __int128 u = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  mpz_set_ui(z, (unsigned long)(uint64_t)(u >> 64));
  mpz_mul_2exp(z, z, 64);
  mpz_add_ui(z, z, (unsigned long)(uint64_t)u);
  if (v < 0) mpz_neg(z, z);
}

/* z must satisfy |z| < 2^127 (the callers check |z| < 10^38 first). */
static wd_i128 agg_i128_from_mpz(const mpz_t z) {
  unsigned __int128 u = ((unsigned __int128)mpz_getlimbn(z, 1) << 64) | (unsigned __int128)mpz_getlimbn(z, 0);
  return mpz_sgn(z) < 0 ? -(wd_i128)u : (wd_i128)u;
}

static bool agg_mpz_fits(const mpz_t z, int p) {
  mpz_t lim;
  bool ok;
  mpz_init(lim);
  mpz_ui_pow_ui(lim, 10, (unsigned long)p);
  ok = mpz_cmpabs(z, lim) < 0;
  mpz_clear(lim);
  return ok;
}

/* q = n / d rounded HALF_UP (ties away from zero, as Java's RoundingMode.HALF_UP); d != 0. */
static void agg_mpz_div_half_up(mpz_t q, const mpz_t n, const mpz_t d) {
  mpz_t r, twice;
  int neg = (mpz_sgn(n) < 0) != (mpz_sgn(d) < 0);
  mpz_inits(r, twice, NULL);
  mpz_tdiv_qr(q, r, n, d);
  mpz_abs(q, q);
  mpz_abs(r, r);
  mpz_mul_2exp(twice, r, 1);
  if (mpz_cmpabs(twice, d) >= 0) mpz_add_ui(q, q, 1);
  if (neg) mpz_neg(q, q);
  mpz_clears(r, twice, NULL);
}

/* Decimal text of z / 10^scale with exactly scale fraction digits; malloc'd (NULL on no memory). */
static char *agg_mpz_dec_text(const mpz_t z, int scale) {
  size_t nd = mpz_sizeinbase(z, 10) + 2;
  char *digits = malloc(nd);
  char *out = NULL;
  size_t len, pad, pos = 0;
  if (!digits) return NULL;
  {
    mpz_t a;
    mpz_init(a);
    mpz_abs(a, z);
    mpz_get_str(digits, 10, a);
    mpz_clear(a);
  }
  len = strlen(digits);
  pad = len <= (size_t)scale ? (size_t)scale + 1 - len : 0;
  out = malloc(len + pad + 3);
  if (!out) goto done;
  if (mpz_sgn(z) < 0) out[pos++] = '-';
  for (size_t i = 0; i < len + pad; i++) {
    if (scale > 0 && i == len + pad - (size_t)scale) out[pos++] = '.';
    out[pos++] = i < pad ? '0' : digits[i - pad];
  }
  out[pos] = 0;
done:
  free(digits);
  return out;
}

static char *agg_i128_dec_text(wd_i128 v, int scale) {
  mpz_t z;
  char *s;
  mpz_init(z);
  agg_mpz_set_i128(z, v);
  s = agg_mpz_dec_text(z, scale);
  mpz_clear(z);
  return s;
}

static wd_error_t *agg_dec_overflow(const wd_agg_spec_t *spec, const mpz_t z, const char *what) {
  char *text = agg_mpz_dec_text(z, spec->type->scale);
  wd_error_t *err = wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "DECIMAL(%d,%d) overflow: %s in %s of column %s",
                                 spec->type->precision, spec->type->scale, text ? text : "?", what, agg_col(spec));
  free(text);
  return err;
}

/* Checks z against DECIMAL(p,s) and converts it; E_ARITH_OVERFLOW when |z| >= 10^p (spec D6). */
static wd_error_t *agg_dec_result(const wd_agg_spec_t *spec, const mpz_t z, const char *what, wd_i128 *out) {
  if (!agg_mpz_fits(z, spec->type->precision)) return agg_dec_overflow(spec, z, what);
  *out = agg_i128_from_mpz(z);
  return NULL;
}

/* Rounds a float computation to binary32: FLOAT columns hold binary32 values (types.h). Doing
 * one +, -, * or / in double and rounding once gives the binary32 IEEE result. */
static double agg_round_float(const wd_type_t *t, double x) { return t->id == WD_FLOAT ? (double)(float)x : x; }

/*
 * sum (spec §9.2): NULL-skipping acc + in; with retract, acc - in, and -in for a NULL acc.
 * Integers are exact within the column type's range, FLOAT/DOUBLE are IEEE, DECIMAL must fit p.
 * Errors: E_ARITH_OVERFLOW (acc unchanged).
 */
static wd_error_t *agg_sum(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool retract) {
  const wd_type_t *t = spec->type;
  const char *what = retract ? "sum retraction" : "sum";
  wd_error_t *err = NULL;
  mpz_t za, zb;

  if (in->is_null) return NULL;
  if (acc->is_null && !retract) {
    *acc = *in; /* numeric values own no memory */
    return NULL;
  }
  if (wd_type_is_integer(t)) {
    int64_t a = acc->is_null ? 0 : acc->i, r;
    bool ovf = retract ? __builtin_sub_overflow(a, in->i, &r) : __builtin_add_overflow(a, in->i, &r);
    if (ovf || r < wd_type_int_min(t) || r > wd_type_int_max(t)) return agg_int_overflow(spec, what);
    acc->is_null = false;
    acc->i = r;
    return NULL;
  }
  if (t->id == WD_FLOAT || t->id == WD_DOUBLE) {
    double r = acc->is_null ? -in->f : retract ? acc->f - in->f : acc->f + in->f;
    acc->is_null = false;
    acc->f = agg_round_float(t, r);
    return NULL;
  }
  if (t->id != WD_DECIMAL) return wd_error_new(WD_ERR_INTERNAL, NONE, "sum on a non-numeric column %s", agg_col(spec));
  {
    wd_i128 a = acc->is_null ? 0 : acc->dec, r;
    wd_i128 lim = wd_pow10(t->precision);
    bool ovf = retract ? __builtin_sub_overflow(a, in->dec, &r) : __builtin_add_overflow(a, in->dec, &r);
    if (!ovf && r < lim && r > -lim) {
      acc->is_null = false;
      acc->dec = r;
      return NULL;
    }
  }
  /* out of range: recompute exactly for the message */
  mpz_inits(za, zb, NULL);
  agg_mpz_set_i128(za, acc->is_null ? 0 : acc->dec);
  agg_mpz_set_i128(zb, in->dec);
  if (retract) mpz_sub(za, za, zb);
  else mpz_add(za, za, zb);
  err = agg_dec_overflow(spec, za, what);
  mpz_clears(za, zb, NULL);
  return err;
}

/*
 * product (spec §9.2): NULL-skipping acc * in. DECIMAL multiplies the unscaled values and rounds
 * HALF_UP back to the column scale (exactly, through GMP), then checks precision.
 */
static wd_error_t *agg_product(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  wd_error_t *err = NULL;
  mpz_t za, zb, zs;
  wd_i128 r128 = 0;

  if (in->is_null) return NULL;
  if (acc->is_null) {
    *acc = *in;
    return NULL;
  }
  if (wd_type_is_integer(t)) {
    int64_t r;
    if (__builtin_mul_overflow(acc->i, in->i, &r) || r < wd_type_int_min(t) || r > wd_type_int_max(t))
      return agg_int_overflow(spec, "product");
    acc->i = r;
    return NULL;
  }
  if (t->id == WD_FLOAT || t->id == WD_DOUBLE) {
    acc->f = agg_round_float(t, acc->f * in->f);
    return NULL;
  }
  if (t->id != WD_DECIMAL)
    return wd_error_new(WD_ERR_INTERNAL, NONE, "product on a non-numeric column %s", agg_col(spec));
  mpz_inits(za, zb, zs, NULL);
  agg_mpz_set_i128(za, acc->dec);
  agg_mpz_set_i128(zb, in->dec);
  mpz_mul(za, za, zb); /* scale 2s */
  mpz_ui_pow_ui(zs, 10, (unsigned long)t->scale);
  agg_mpz_div_half_up(zb, za, zs); /* back to scale s */
  err = agg_dec_result(spec, zb, "product", &r128);
  if (!err) acc->dec = r128;
  mpz_clears(za, zb, zs, NULL);
  return err;
}

/* Whether the exact quotient a / b (b != 0) has a finite decimal expansion: in lowest terms its
 * denominator has no prime factor other than 2 and 5 (Java's BigDecimal.divide would throw). */
static bool agg_quotient_terminates(const mpz_t a, const mpz_t b) {
  mpz_t g, d;
  bool ok;
  mpz_inits(g, d, NULL);
  mpz_gcd(g, a, b);
  mpz_divexact(d, b, g);
  mpz_abs(d, d);
  while (mpz_divisible_ui_p(d, 2)) mpz_divexact_ui(d, d, 2);
  while (mpz_divisible_ui_p(d, 5)) mpz_divexact_ui(d, d, 5);
  ok = mpz_cmp_ui(d, 1) == 0;
  mpz_clears(g, d, NULL);
  return ok;
}

/*
 * product retraction (spec §9.2, §8.3): acc / in; NULL acc stays NULL, NULL in keeps acc.
 * Integers truncate toward zero; division by zero, MIN / -1 and a non-terminating DECIMAL
 * quotient are E_ARITH_OVERFLOW; a terminating DECIMAL quotient is rounded HALF_UP to scale s.
 */
static wd_error_t *agg_product_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  wd_error_t *err = NULL;
  mpz_t za, zb, zq;
  wd_i128 r128 = 0;

  if (acc->is_null || in->is_null) return NULL;
  if (wd_type_is_integer(t)) {
    int64_t r;
    if (in->i == 0)
      return wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "division by zero in product retraction of column %s",
                          agg_col(spec));
    if (acc->i == INT64_MIN && in->i == -1) return agg_int_overflow(spec, "product retraction");
    r = acc->i / in->i;
    if (r < wd_type_int_min(t) || r > wd_type_int_max(t)) return agg_int_overflow(spec, "product retraction");
    acc->i = r;
    return NULL;
  }
  if (t->id == WD_FLOAT || t->id == WD_DOUBLE) {
    acc->f = agg_round_float(t, acc->f / in->f);
    return NULL;
  }
  if (t->id != WD_DECIMAL)
    return wd_error_new(WD_ERR_INTERNAL, NONE, "product on a non-numeric column %s", agg_col(spec));
  if (in->dec == 0)
    return wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "division by zero in product retraction of column %s",
                        agg_col(spec));
  mpz_inits(za, zb, zq, NULL);
  agg_mpz_set_i128(za, acc->dec);
  agg_mpz_set_i128(zb, in->dec);
  if (!agg_quotient_terminates(za, zb)) {
    char *ta = agg_i128_dec_text(acc->dec, t->scale);
    char *tb = agg_i128_dec_text(in->dec, t->scale);
    err = wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW,
                       "DECIMAL quotient %s / %s does not terminate (product retraction of column %s)", ta ? ta : "?",
                       tb ? tb : "?", agg_col(spec));
    free(ta);
    free(tb);
    goto done;
  }
  /* (a / 10^s) / (b / 10^s) at scale s is a * 10^s / b */
  mpz_ui_pow_ui(zq, 10, (unsigned long)t->scale);
  mpz_mul(za, za, zq);
  agg_mpz_div_half_up(zq, za, zb);
  err = agg_dec_result(spec, zq, "product retraction", &r128);
  if (!err) acc->dec = r128;
done:
  mpz_clears(za, zb, zq, NULL);
  return err;
}

/* ==== value functions ====================================================================== */

/* max / min (spec §9.2): NULL-skipping; a tie keeps acc for max and takes the input for min. */
static wd_error_t *agg_maxmin(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool max) {
  int c;
  if (in->is_null) return NULL;
  if (acc->is_null) return agg_assign(spec->type, acc, in);
  c = wd_value_cmp(spec->type, in, acc);
  if (max ? c > 0 : c <= 0) return agg_assign(spec->type, acc, in);
  return NULL;
}

/* first_value / first_non_null_value (spec §9.2): the first (non-NULL) value of this merge,
 * tracked by *seen exactly as Paimon's `initialized` flag. A NULL seen counts as "not seen". */
static wd_error_t *agg_first(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool *seen,
                             bool non_null) {
  wd_error_t *err;
  if (seen && *seen) return NULL;
  if (non_null && in->is_null) return NULL;
  err = agg_assign(spec->type, acc, in);
  if (!err && seen) *seen = true;
  return err;
}

/* ==== text: UTF-8, Java whitespace, listagg ================================================ */

/* Decodes one code point at p[*i] (strict UTF-8: no overlongs, no surrogates, <= U+10FFFF);
 * an invalid byte decodes as U+FFFD and advances by one, as Java's decoder replaces it. */
static uint32_t agg_utf8_next(const uint8_t *p, size_t n, size_t *i) {
  uint32_t cp;
  size_t len = wd_utf8_decode(p + *i, n - *i, &cp);
  if (!len) {
    (*i)++;
    return 0xFFFD;
  }
  *i += len;
  return cp;
}

/* Java's Character.isWhitespace (spec §9.2 listagg): not U+00A0, U+2007, U+202F. */
static bool agg_java_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x2006) ||
         (cp >= 0x2008 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x205F || cp == 0x3000;
}

/* Empty or only Java whitespace. */
static bool agg_blank(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  while (i < n)
    if (!agg_java_space(agg_utf8_next(p, n, &i))) return false;
  return true;
}

/* Java String.compareTo over the UTF-16 code units of two UTF-8 strings (spec §9.2
 * merge_map_with_keytime): supplementary characters sort as their surrogates (0xD800..), so
 * below U+E000..U+FFFF, unlike UTF-8 byte order. */
static int agg_utf16_cmp(const char *a, size_t an, const char *b, size_t bn) {
  const uint8_t *pa = (const uint8_t *)a, *pb = (const uint8_t *)b;
  size_t ia = 0, ib = 0;
  uint32_t lowa = 0, lowb = 0; /* pending low surrogates */
  for (;;) {
    uint32_t ua, ub;
    bool ea = !lowa && ia >= an, eb = !lowb && ib >= bn;
    if (ea || eb) return ea && eb ? 0 : ea ? -1 : 1;
    if (lowa) {
      ua = lowa;
      lowa = 0;
    } else {
      uint32_t cp = agg_utf8_next(pa, an, &ia);
      if (cp >= 0x10000) {
        ua = 0xD800 + ((cp - 0x10000) >> 10);
        lowa = 0xDC00 + ((cp - 0x10000) & 0x3FF);
      } else {
        ua = cp;
      }
    }
    if (lowb) {
      ub = lowb;
      lowb = 0;
    } else {
      uint32_t cp = agg_utf8_next(pb, bn, &ib);
      if (cp >= 0x10000) {
        ub = 0xD800 + ((cp - 0x10000) >> 10);
        lowb = 0xDC00 + ((cp - 0x10000) & 0x3FF);
      } else {
        ub = cp;
      }
    }
    if (ua != ub) return ua < ub ? -1 : 1;
  }
}

/* A byte span and a set of spans (listagg distinct tokens). */
typedef struct agg_span {
  const char *p;
  size_t n;
} agg_span_t;

/* A set of borrowed spans (common/hindex.h), sized up front. */
typedef struct agg_spanset {
  agg_span_t *e;
  uint64_t *h;
  size_t n, cap;
  wd_hindex_t ix;
} agg_spanset_t;

static void agg_spanset_free(agg_spanset_t *s) {
  free(s->e);
  free(s->h);
  wd_hindex_free(&s->ix);
  memset(s, 0, sizeof(*s));
}

static int agg_spanset_init(agg_spanset_t *s, size_t cap) {
  memset(s, 0, sizeof(*s));
  s->cap = cap;
  s->e = malloc((cap ? cap : 1) * sizeof(*s->e));
  s->h = malloc((cap ? cap : 1) * sizeof(*s->h));
  if (wd_hindex_init(&s->ix, cap) || !s->e || !s->h) {
    agg_spanset_free(s);
    return -1;
  }
  return 0;
}

/* What agg_spanset_add looks for. */
typedef struct agg_span_probe {
  const agg_spanset_t *s;
  const char *p;
  size_t n;
  uint64_t h;
} agg_span_probe_t;

static bool agg_span_eq(const void *ctx, size_t e) {
  const agg_span_probe_t *q = ctx;
  const agg_span_t *x = &q->s->e[e];
  return q->s->h[e] == q->h && x->n == q->n && memcmp(x->p, q->p, q->n) == 0;
}

/* Adds the span unless present; returns true when it was added. */
static bool agg_spanset_add(agg_spanset_t *s, const char *p, size_t n) {
  agg_span_probe_t q = {s, p, n, wd_hash_bytes(p, n, 0)};
  size_t slot = 0;
  if (wd_hindex_find(&s->ix, q.h, agg_span_eq, &q, &slot) >= 0) return false;
  s->e[s->n].p = p;
  s->e[s->n].n = n;
  s->h[s->n] = q.h;
  wd_hindex_put(&s->ix, slot, s->n++);
  return true;
}

/* Number of tokens of a whole-separator split that keeps empty tokens (0 for empty text). */
static size_t agg_split_count(const char *p, size_t n, const char *sep, size_t sl) {
  size_t count = 1, pos = 0;
  const char *f;
  if (n == 0) return 0;
  while (pos <= n && (f = memmem(p + pos, n - pos, sep, sl)) != NULL) {
    count++;
    pos = (size_t)(f - p) + sl;
  }
  return count;
}

/* Split iterator (commons-lang splitByWholeSeparatorPreserveAllTokens): *pos starts at 0,
 * *done at false (or true for empty text). */
static bool agg_split_next(const char *p, size_t n, const char *sep, size_t sl, size_t *pos, bool *done,
                           agg_span_t *tok) {
  const char *f;
  if (*done) return false;
  f = *pos <= n ? memmem(p + *pos, n - *pos, sep, sl) : NULL;
  tok->p = p + *pos;
  if (f) {
    tok->n = (size_t)(f - tok->p);
    *pos = (size_t)(f - p) + sl;
  } else {
    tok->n = n - *pos;
    *done = true;
  }
  return true;
}

/* Makes out a new string value of n uninitialised bytes (NUL-terminated). 0, or -1 on no memory. */
static int agg_string_new(wd_value_t *out, size_t n) {
  out->s.p = malloc(n + 1);
  if (!out->s.p) return -1;
  out->is_null = false;
  out->s.n = n;
  out->s.p[n] = 0;
  return 0;
}

/*
 * listagg (spec §9.2): a blank input keeps acc; a NULL/blank acc takes the input verbatim;
 * otherwise acc + delimiter + in, or with distinct the input's new non-blank tokens, each after
 * the delimiter (an empty delimiter splits on a single space and joins with nothing).
 */
static wd_error_t *agg_listagg(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const char *delim = spec->delimiter ? spec->delimiter : ",";
  size_t dl = strlen(delim);
  const char *sep = dl ? delim : " ";
  size_t sl = dl ? dl : 1;
  wd_error_t *err = NULL;
  wd_value_t tmp;
  agg_spanset_t set;
  agg_span_t tok;
  size_t pos = 0, total, ntok, before;
  bool done = false, have_set = false;
  char *w;

  tmp.is_null = true;
  if (in->is_null || agg_blank(in->s.p, in->s.n)) return NULL;
  if (acc->is_null || agg_blank(acc->s.p, acc->s.n)) return agg_assign(spec->type, acc, in);
  if (!spec->distinct) {
    if (agg_string_new(&tmp, acc->s.n + dl + in->s.n) != 0) goto nomem;
    memcpy(tmp.s.p, acc->s.p, acc->s.n);
    memcpy(tmp.s.p + acc->s.n, delim, dl);
    memcpy(tmp.s.p + acc->s.n + dl, in->s.p, in->s.n);
    wd_value_move(spec->type, acc, &tmp);
    goto done;
  }
  ntok = agg_split_count(acc->s.p, acc->s.n, sep, sl) + agg_split_count(in->s.p, in->s.n, sep, sl);
  if (agg_spanset_init(&set, ntok) != 0) goto nomem;
  have_set = true;
  while (agg_split_next(acc->s.p, acc->s.n, sep, sl, &pos, &done, &tok)) agg_spanset_add(&set, tok.p, tok.n);
  /* the input's new non-blank tokens, in order, become set entries before.. */
  total = acc->s.n;
  before = set.n;
  pos = 0;
  done = false;
  while (agg_split_next(in->s.p, in->s.n, sep, sl, &pos, &done, &tok))
    if (!agg_blank(tok.p, tok.n) && agg_spanset_add(&set, tok.p, tok.n)) total += dl + tok.n;
  if (set.n == before) goto done; /* nothing new: acc unchanged */
  if (agg_string_new(&tmp, total) != 0) goto nomem;
  memcpy(tmp.s.p, acc->s.p, acc->s.n);
  w = tmp.s.p + acc->s.n;
  for (size_t e = before; e < set.n; e++) {
    memcpy(w, delim, dl);
    memcpy(w + dl, set.e[e].p, set.e[e].n);
    w += dl + set.e[e].n;
  }
  wd_value_move(spec->type, acc, &tmp);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_spanset_free(&set);
  return err;
}

/* ==== collections ========================================================================== */

/*
 * collect (spec §9.2): without distinct a NULL side gives the other side unchanged, otherwise acc
 * elements then input elements. With distinct the first occurrences of the union in order (D5);
 * NULL only when both sides are NULL.
 */
static wd_error_t *agg_collect(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, NULL, 0};
  agg_set_t set;
  agg_pick_t *picks = NULL;
  size_t na = acc->is_null ? 0 : acc->list.n, ni = in->is_null ? 0 : in->list.n, n = 0;
  bool have_set = false;
  wd_error_t *err = NULL;

  if (acc->is_null && in->is_null) return NULL;
  if (!spec->distinct && in->is_null) return NULL;
  if (!spec->distinct && acc->is_null) return agg_assign(t, acc, in);
  picks = calloc(na + ni ? na + ni : 1, sizeof(*picks));
  if (!picks) goto nomem;
  if (spec->distinct) {
    if (agg_set_init(&set, &ks, na + ni) != 0) goto nomem;
    have_set = true;
  }
  for (size_t i = 0; i < na + ni; i++) {
    const wd_value_t *e = i < na ? &acc->list.v[i] : &in->list.v[i - na];
    if (spec->distinct) {
      uint64_t h = agg_key_hash(&ks, e);
      if (agg_set_find(&set, e, h) >= 0) continue;
      agg_set_add(&set, e, h, 0);
    }
    picks[n].src = e;
    picks[n].acc_idx = i < na ? (ptrdiff_t)i : -1;
    n++;
  }
  err = agg_array_commit(t, acc, picks, n);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(picks);
  return err;
}

/* collect retraction (spec §9.2): each retracted element removes at most one equal element of
 * acc, the first one left; NULL acc stays NULL; a NULL or empty input keeps acc. */
static wd_error_t *agg_collect_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, NULL, 0};
  agg_set_t set;
  agg_pick_t *picks = NULL;
  size_t n = 0;
  bool have_set = false;
  wd_error_t *err = NULL;

  if (acc->is_null || in->is_null || in->list.n == 0) return NULL;
  if (agg_set_init(&set, &ks, in->list.n) != 0) goto nomem;
  have_set = true;
  picks = calloc(acc->list.n ? acc->list.n : 1, sizeof(*picks));
  if (!picks) goto nomem;
  for (size_t i = 0; i < in->list.n; i++) { /* multiset of retracted elements */
    uint64_t h = agg_key_hash(&ks, &in->list.v[i]);
    ptrdiff_t e = agg_set_find(&set, &in->list.v[i], h);
    if (e >= 0) set.aux[e]++;
    else agg_set_add(&set, &in->list.v[i], h, 1);
  }
  for (size_t i = 0; i < acc->list.n; i++) {
    const wd_value_t *v = &acc->list.v[i];
    ptrdiff_t e = agg_set_find(&set, v, agg_key_hash(&ks, v));
    if (e >= 0 && set.aux[e] > 0) {
      set.aux[e]--;
      continue;
    }
    picks[n].src = v;
    picks[n].acc_idx = (ptrdiff_t)i;
    n++;
  }
  err = agg_array_commit(t, acc, picks, n);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(picks);
  return err;
}

/* merge_map (spec §9.2): NULL-skipping union; on a shared key the input's value replaces acc's in
 * place, new keys are appended in input order. */
static wd_error_t *agg_merge_map(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, NULL, 0};
  agg_set_t set;
  agg_pick_t *kp = NULL, *vp = NULL;
  size_t na, ni, n = 0;
  bool have_set = false;
  wd_error_t *err = NULL;

  if (in->is_null) return NULL;
  if (acc->is_null) return agg_assign(t, acc, in);
  na = acc->map.n;
  ni = in->map.n;
  kp = calloc(na + ni ? na + ni : 1, sizeof(*kp));
  vp = calloc(na + ni ? na + ni : 1, sizeof(*vp));
  if (!kp || !vp || agg_set_init(&set, &ks, na + ni) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < na + ni; i++) {
    bool from_acc = i < na;
    size_t j = from_acc ? i : i - na;
    const wd_value_t *k = from_acc ? &acc->map.k[j] : &in->map.k[j];
    const wd_value_t *v = from_acc ? &acc->map.v[j] : &in->map.v[j];
    uint64_t h = agg_key_hash(&ks, k);
    ptrdiff_t e = agg_set_find(&set, k, h);
    ptrdiff_t ai = from_acc ? (ptrdiff_t)j : -1;
    if (e >= 0) {
      size_t pos = set.aux[e];
      vp[pos].src = v;
      vp[pos].acc_idx = ai;
      continue;
    }
    agg_set_add(&set, k, h, n);
    kp[n].src = k;
    kp[n].acc_idx = ai;
    vp[n].src = v;
    vp[n].acc_idx = ai;
    n++;
  }
  err = agg_map_commit(t, acc, kp, vp, n);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(kp);
  free(vp);
  return err;
}

/* merge_map retraction (spec §9.2): removes every key of the input, whatever its value. */
static wd_error_t *agg_merge_map_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, NULL, 0};
  agg_set_t set;
  agg_pick_t *kp = NULL, *vp = NULL;
  size_t n = 0;
  bool have_set = false;
  wd_error_t *err = NULL;

  if (acc->is_null || in->is_null || in->map.n == 0) return NULL;
  kp = calloc(acc->map.n ? acc->map.n : 1, sizeof(*kp));
  vp = calloc(acc->map.n ? acc->map.n : 1, sizeof(*vp));
  if (!kp || !vp || agg_set_init(&set, &ks, in->map.n) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < in->map.n; i++) {
    uint64_t h = agg_key_hash(&ks, &in->map.k[i]);
    if (agg_set_find(&set, &in->map.k[i], h) < 0) agg_set_add(&set, &in->map.k[i], h, 0);
  }
  for (size_t i = 0; i < acc->map.n; i++) {
    const wd_value_t *k = &acc->map.k[i];
    if (agg_set_find(&set, k, agg_key_hash(&ks, k)) >= 0) continue;
    kp[n].src = k;
    kp[n].acc_idx = (ptrdiff_t)i;
    vp[n].src = &acc->map.v[i];
    vp[n].acc_idx = (ptrdiff_t)i;
    n++;
  }
  err = agg_map_commit(t, acc, kp, vp, n);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(kp);
  free(vp);
  return err;
}

/* ts field of a map entry's ROW, or NULL when the row or the field is NULL. */
static const wd_value_t *agg_keytime_ts(const wd_value_t *row, int ts) {
  if (row->is_null || row->list.v[ts].is_null) return NULL;
  return &row->list.v[ts];
}

/*
 * merge_map_with_keytime (spec §9.2): NULL acc gives the input unchanged; otherwise, from acc, each
 * input entry with a NULL row removes its key, one with a NULL ts is skipped, and one whose key
 * is absent or has a NULL stored ts, or whose ts is greater as a Java string, replaces it.
 */
static wd_error_t *agg_keytime(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, NULL, 0};
  agg_set_t set;
  agg_pick_t *kp = NULL, *vp = NULL;
  bool *alive = NULL, have_set = false;
  size_t na, ni, n = 0, m = 0;
  int ts = spec->ts_field;
  wd_error_t *err = NULL;

  if (acc->is_null) return agg_assign(t, acc, in);
  if (in->is_null) return NULL;
  na = acc->map.n;
  ni = in->map.n;
  kp = calloc(na + ni ? na + ni : 1, sizeof(*kp));
  vp = calloc(na + ni ? na + ni : 1, sizeof(*vp));
  alive = malloc((na + ni ? na + ni : 1) * sizeof(*alive));
  if (!kp || !vp || !alive || agg_set_init(&set, &ks, na + ni) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < na + ni; i++) {
    bool from_acc = i < na;
    size_t j = from_acc ? i : i - na;
    const wd_value_t *k = from_acc ? &acc->map.k[j] : &in->map.k[j];
    const wd_value_t *row = from_acc ? &acc->map.v[j] : &in->map.v[j];
    ptrdiff_t ai = from_acc ? (ptrdiff_t)j : -1;
    uint64_t h = agg_key_hash(&ks, k);
    ptrdiff_t e = agg_set_find(&set, k, h);
    size_t pos;
    if (from_acc) { /* acc entries as they are (a repeated key replaces in place) */
      if (e < 0) {
        e = (ptrdiff_t)agg_set_add(&set, k, h, n);
        kp[n].src = k;
        kp[n].acc_idx = ai;
        n++;
      }
      pos = set.aux[e];
      vp[pos].src = row;
      vp[pos].acc_idx = ai;
      alive[pos] = true;
      continue;
    }
    if (row->is_null) {
      if (e >= 0) alive[set.aux[e]] = false;
      continue;
    }
    if (!agg_keytime_ts(row, ts)) continue;
    if (e < 0) {
      e = (ptrdiff_t)agg_set_add(&set, k, h, n);
      kp[n].src = k;
      kp[n].acc_idx = -1;
      alive[n] = false;
      n++;
    }
    pos = set.aux[e];
    if (alive[pos]) {
      const wd_value_t *old = agg_keytime_ts(vp[pos].src, ts);
      const wd_value_t *cur = agg_keytime_ts(row, ts);
      if (old && agg_utf16_cmp(cur->s.p, cur->s.n, old->s.p, old->s.n) <= 0) continue;
    }
    vp[pos].src = row;
    vp[pos].acc_idx = -1;
    alive[pos] = true;
  }
  for (size_t i = 0; i < n; i++) { /* drop removed keys, keeping order */
    if (!alive[i]) continue;
    kp[m] = kp[i];
    vp[m] = vp[i];
    m++;
  }
  err = agg_map_commit(t, acc, kp, vp, m);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(kp);
  free(vp);
  free(alive);
  return err;
}

/* ==== nested tables ======================================================================== */

static bool agg_key_has_null(const wd_agg_spec_t *spec, const wd_value_t *row) {
  for (size_t j = 0; j < spec->n_nested_key; j++)
    if (row->list.v[spec->nested_key[j]].is_null) return true;
  return false;
}

/* Applies nested-key-null-strategy to a row (spec §9.2): *keep says whether it takes part. */
static wd_error_t *agg_nested_null(const wd_agg_spec_t *spec, const wd_value_t *row, bool *keep) {
  *keep = true;
  if (!agg_key_has_null(spec, row)) return NULL;
  if (spec->nested_null == WD_NESTED_NULL_IGNORE) {
    *keep = false;
    return NULL;
  }
  if (spec->nested_null == WD_NESTED_NULL_ERROR)
    return wd_error_new(WD_ERR_RECORD, E_NESTED_KEY_NULL,
                        "nested key contains null in column %s (nested-key-null-strategy=error)", agg_col(spec));
  return NULL;
}

/* Nested sequence order of two rows: field by field, NULL smallest, ascending. */
static int agg_nested_seq_cmp(const wd_agg_spec_t *spec, const wd_value_t *a, const wd_value_t *b) {
  const wd_type_t *rt = spec->type->elem;
  for (size_t j = 0; j < spec->n_nested_seq; j++) {
    int f = spec->nested_seq[j];
    int c = wd_value_cmp(rt->fields[f].type, &a->list.v[f], &b->list.v[f]);
    if (c) return c;
  }
  return 0;
}

/*
 * nested_update (spec §9.2). Append mode: acc's non-NULL rows then the input's, up to count-limit
 * in total (acc returned unchanged once it holds count-limit elements). Keyed mode: acc rows then
 * input rows upserted by nested key (NULL rows skipped), a replacement only when the nested
 * sequence is >= the stored one, new input keys only while fewer than count-limit rows exist;
 * order per D5 (acc order, replacements in place, new keys appended).
 */
static wd_error_t *agg_nested_update(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, spec->nested_key, spec->n_nested_key};
  agg_set_t set;
  agg_pick_t *picks = NULL;
  size_t na = acc->is_null ? 0 : acc->list.n, ni, n = 0;
  uint64_t limit = spec->count_limit > 0 ? (uint64_t)spec->count_limit : 0;
  bool have_set = false;
  wd_error_t *err = NULL;

  if (in->is_null) return NULL;
  ni = in->list.n;
  picks = calloc(na + ni ? na + ni : 1, sizeof(*picks));
  if (!picks) goto nomem;
  if (spec->n_nested_key == 0) {
    uint64_t remain = limit, added = 0;
    if (!acc->is_null) {
      if ((uint64_t)na >= limit) goto done;
      remain = limit - na;
    }
    for (size_t i = 0; i < na; i++) {
      if (acc->list.v[i].is_null) continue;
      picks[n].src = &acc->list.v[i];
      picks[n].acc_idx = (ptrdiff_t)i;
      n++;
    }
    for (size_t i = 0; i < ni && added < remain; i++) {
      if (in->list.v[i].is_null) continue;
      picks[n].src = &in->list.v[i];
      picks[n].acc_idx = -1;
      n++;
      added++;
    }
    err = agg_array_commit(t, acc, picks, n);
    goto done;
  }
  if (agg_set_init(&set, &ks, na + ni) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < na + ni; i++) {
    bool from_acc = i < na, keep;
    const wd_value_t *row = from_acc ? &acc->list.v[i] : &in->list.v[i - na];
    ptrdiff_t ai = from_acc ? (ptrdiff_t)i : -1, e;
    uint64_t h;
    if (row->is_null) continue;
    if ((err = agg_nested_null(spec, row, &keep)) != NULL) goto done;
    if (!keep) continue;
    h = agg_key_hash(&ks, row);
    e = agg_set_find(&set, row, h);
    if (e >= 0) {
      size_t pos = set.aux[e];
      if (spec->n_nested_seq == 0 || agg_nested_seq_cmp(spec, row, picks[pos].src) >= 0) {
        picks[pos].src = row;
        picks[pos].acc_idx = ai;
      }
    } else if (from_acc || (uint64_t)set.n < limit) {
      agg_set_add(&set, row, h, n);
      picks[n].src = row;
      picks[n].acc_idx = ai;
      n++;
    }
  }
  err = agg_array_commit(t, acc, picks, n);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(picks);
  return err;
}

/* nested_update retraction (spec §9.2): keyed, removes the rows with the retracted keys; append
 * mode, removes every row equal to a retracted row. NULL rows are ignored and dropped. */
static wd_error_t *agg_nested_update_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type;
  agg_keyspec_t ks = {t->elem, spec->nested_key, spec->n_nested_key};
  agg_set_t set;
  agg_pick_t *picks = NULL;
  bool *alive = NULL, have_set = false;
  size_t na, n = 0, m = 0;
  wd_error_t *err = NULL;

  if (acc->is_null || in->is_null) return NULL;
  na = acc->list.n;
  picks = calloc(na ? na : 1, sizeof(*picks));
  alive = malloc((na ? na : 1) * sizeof(*alive));
  if (!picks || !alive) goto nomem;
  if (spec->n_nested_key == 0) {
    if (agg_set_init(&set, &ks, in->list.n) != 0) goto nomem;
    have_set = true;
    for (size_t i = 0; i < in->list.n; i++) {
      const wd_value_t *r = &in->list.v[i];
      uint64_t h;
      if (r->is_null) continue;
      h = agg_key_hash(&ks, r);
      if (agg_set_find(&set, r, h) < 0) agg_set_add(&set, r, h, 0);
    }
    for (size_t i = 0; i < na; i++) {
      const wd_value_t *r = &acc->list.v[i];
      if (r->is_null || agg_set_find(&set, r, agg_key_hash(&ks, r)) >= 0) continue;
      picks[m].src = r;
      picks[m].acc_idx = (ptrdiff_t)i;
      m++;
    }
    err = agg_array_commit(t, acc, picks, m);
    goto done;
  }
  if (agg_set_init(&set, &ks, na) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < na; i++) {
    const wd_value_t *r = &acc->list.v[i];
    uint64_t h;
    ptrdiff_t e;
    if (r->is_null) continue;
    h = agg_key_hash(&ks, r);
    e = agg_set_find(&set, r, h);
    if (e < 0) {
      e = (ptrdiff_t)agg_set_add(&set, r, h, n);
      alive[n++] = true;
    }
    picks[set.aux[e]].src = r;
    picks[set.aux[e]].acc_idx = (ptrdiff_t)i;
  }
  for (size_t i = 0; i < in->list.n; i++) {
    const wd_value_t *r = &in->list.v[i];
    ptrdiff_t e;
    if (r->is_null) continue;
    e = agg_set_find(&set, r, agg_key_hash(&ks, r));
    if (e >= 0) alive[set.aux[e]] = false;
  }
  for (size_t i = 0; i < n; i++)
    if (alive[i]) picks[m++] = picks[i];
  err = agg_array_commit(t, acc, picks, m);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (have_set) agg_set_free(&set);
  free(picks);
  free(alive);
  return err;
}

/*
 * nested_partial_update (spec §9.2): the non-NULL rows of acc then of the input, grouped by nested
 * key (null-key strategy applies); within a group a non-NULL field replaces, NULL is ignored.
 * Groups keep first-occurrence order (D5). Without a nested key the rows are concatenated.
 */
static wd_error_t *agg_nested_partial(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  const wd_type_t *t = spec->type, *rt = t->elem;
  agg_keyspec_t ks = {rt, spec->nested_key, spec->n_nested_key};
  agg_set_t set;
  agg_pick_t *picks = NULL;
  const wd_value_t **fields = NULL; /* group g, field f: fields[g * nf + f], NULL pointer = NULL */
  size_t na = acc->is_null ? 0 : acc->list.n, ni, n = 0, nf = rt->nfields;
  bool have_set = false;
  wd_value_t res;
  wd_error_t *err = NULL;

  res.is_null = true;
  if (in->is_null) return NULL;
  ni = in->list.n;
  picks = calloc(na + ni ? na + ni : 1, sizeof(*picks));
  if (!picks) goto nomem;
  if (spec->n_nested_key == 0) {
    for (size_t i = 0; i < na + ni; i++) {
      const wd_value_t *row = i < na ? &acc->list.v[i] : &in->list.v[i - na];
      if (row->is_null) continue;
      picks[n].src = row;
      picks[n].acc_idx = i < na ? (ptrdiff_t)i : -1;
      n++;
    }
    err = agg_array_commit(t, acc, picks, n);
    goto done;
  }
  fields = calloc((na + ni ? na + ni : 1) * (nf ? nf : 1), sizeof(*fields));
  if (!fields || agg_set_init(&set, &ks, na + ni) != 0) goto nomem;
  have_set = true;
  for (size_t i = 0; i < na + ni; i++) {
    const wd_value_t *row = i < na ? &acc->list.v[i] : &in->list.v[i - na];
    bool keep;
    uint64_t h;
    ptrdiff_t e;
    size_t g;
    if (row->is_null) continue;
    if ((err = agg_nested_null(spec, row, &keep)) != NULL) goto done;
    if (!keep) continue;
    h = agg_key_hash(&ks, row);
    e = agg_set_find(&set, row, h);
    if (e >= 0) {
      g = set.aux[e];
    } else {
      g = n++;
      agg_set_add(&set, row, h, g);
    }
    for (size_t f = 0; f < nf; f++)
      if (!row->list.v[f].is_null) fields[g * nf + f] = &row->list.v[f];
  }
  /* materialise the merged rows (deep copies) */
  res.is_null = false;
  res.list.n = 0;
  res.list.v = n ? malloc(n * sizeof(*res.list.v)) : NULL;
  if (n && !res.list.v) {
    res.is_null = true;
    goto nomem;
  }
  for (size_t g = 0; g < n; g++) {
    wd_value_t *row = &res.list.v[g];
    row->is_null = false;
    row->list.n = nf;
    row->list.v = malloc((nf ? nf : 1) * sizeof(*row->list.v));
    res.list.n = g + 1;
    if (!row->list.v) {
      row->is_null = true;
      goto nomem;
    }
    for (size_t f = 0; f < nf; f++) row->list.v[f].is_null = true;
    for (size_t f = 0; f < nf; f++)
      if (fields[g * nf + f] && wd_value_copy(rt->fields[f].type, &row->list.v[f], fields[g * nf + f]) != 0) goto nomem;
  }
  wd_value_move(t, acc, &res);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (!res.is_null) wd_value_clear(t, &res);
  if (have_set) agg_set_free(&set);
  free(fields);
  free(picks);
  return err;
}

/* ==== rbm32 ================================================================================ */

static void agg_put16(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v & 0xFF);
  p[1] = (uint8_t)((v >> 8) & 0xFF);
}

static void agg_put32(uint8_t *p, uint32_t v) {
  agg_put16(p, v & 0xFFFF);
  agg_put16(p + 2, v >> 16);
}

typedef struct agg_rbm_cont {
  uint16_t key;
  uint32_t card;
  bool run;
  size_t off, len; /* in the data buffer */
} agg_rbm_cont_t;

/* Appends one container (values lo[0..n), ascending) to data, choosing the encoding by Java's
 * runOptimize rule (spec §9.2): runs only when 2 + 4*runs is strictly smaller than the array
 * (2 bytes per value) or bitset (8192 bytes) form. */
static int agg_rbm_put_container(wd_buf_t *data, const uint16_t *lo, size_t n, agg_rbm_cont_t *c) {
  size_t runs = 0, plain = n <= 4096 ? 2 * n : 8192;
  uint8_t b[4];
  c->card = (uint32_t)n;
  c->off = data->len;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || lo[i] != (uint16_t)(lo[i - 1] + 1)) runs++;
  c->run = 2 + 4 * runs < plain;
  if (c->run) {
    agg_put16(b, (uint32_t)runs);
    if (wd_buf_append(data, b, 2)) return -1;
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && lo[j + 1] == (uint16_t)(lo[j] + 1)) j++;
      agg_put16(b, lo[i]);
      agg_put16(b + 2, (uint32_t)(j - i));
      if (wd_buf_append(data, b, 4)) return -1;
      i = j + 1;
    }
  } else if (n <= 4096) {
    for (size_t i = 0; i < n; i++) {
      agg_put16(b, lo[i]);
      if (wd_buf_append(data, b, 2)) return -1;
    }
  } else {
    uint8_t *bits;
    if (wd_buf_reserve(data, 8192 + 1)) return -1;
    bits = data->data + data->len;
    memset(bits, 0, 8192);
    for (size_t i = 0; i < n; i++) bits[lo[i] >> 3] |= (uint8_t)(1u << (lo[i] & 7));
    data->len += 8192; /* little-endian 64-bit words are these bytes in order */
  }
  c->len = data->len - c->off;
  return 0;
}

/* Appends the container of key to the list cs (grown as needed) and its bytes to data. */
static int agg_rbm_close(wd_buf_t *data, const uint16_t *lo, size_t n, uint32_t key, agg_rbm_cont_t **cs, size_t *ncs,
                         size_t *capcs) {
  if (*ncs == *capcs) {
    size_t nc = *capcs ? 2 * *capcs : 16;
    agg_rbm_cont_t *p = realloc(*cs, nc * sizeof(**cs));
    if (!p) return -1;
    *cs = p;
    *capcs = nc;
  }
  (*cs)[*ncs].key = (uint16_t)key;
  if (agg_rbm_put_container(data, lo, n, &(*cs)[*ncs])) return -1;
  (*ncs)++;
  return 0;
}

/* Serializes r in the RoaringBitmap portable format (the RoaringFormatSpec, as Java writes it)
 * into out. 0, or -1 on no memory. */
static int agg_rbm_serialize(const roaring_bitmap_t *r, wd_buf_t *out) {
  roaring_uint32_iterator_t it;
  uint32_t *batch = NULL;
  uint16_t *lo = NULL;
  agg_rbm_cont_t *cs = NULL;
  size_t ncs = 0, capcs = 0, nlo = 0, header;
  uint32_t cur_key = 0;
  bool any_run = false;
  wd_buf_t data = {0};
  int rc = -1;

  batch = malloc(4096 * sizeof(*batch));
  lo = malloc(65536 * sizeof(*lo));
  if (!batch || !lo) goto done;
  roaring_init_iterator(r, &it);
  for (;;) {
    uint32_t got = it.has_value ? roaring_read_uint32_iterator(&it, batch, 4096) : 0;
    for (uint32_t i = 0; i < got; i++) {
      uint32_t key = batch[i] >> 16;
      if (nlo && key != cur_key) {
        if (agg_rbm_close(&data, lo, nlo, cur_key, &cs, &ncs, &capcs)) goto done;
        nlo = 0;
      }
      cur_key = key;
      lo[nlo++] = (uint16_t)(batch[i] & 0xFFFF);
    }
    if (!got) break;
  }
  if (nlo && agg_rbm_close(&data, lo, nlo, cur_key, &cs, &ncs, &capcs)) goto done;
  for (size_t i = 0; i < ncs; i++) any_run |= cs[i].run;
  header = any_run ? 4 + (ncs + 7) / 8 + 4 * ncs + (ncs >= 4 ? 4 * ncs : 0) : 8 + 8 * ncs;
  if (wd_buf_reserve(out, header + data.len + 1)) goto done;
  {
    uint8_t *p = out->data + out->len;
    memset(p, 0, header);
    if (any_run) {
      agg_put32(p, 12347u | (uint32_t)((ncs - 1) << 16));
      p += 4;
      for (size_t i = 0; i < ncs; i++)
        if (cs[i].run) p[i / 8] |= (uint8_t)(1u << (i % 8));
      p += (ncs + 7) / 8;
    } else {
      agg_put32(p, 12346u);
      agg_put32(p + 4, (uint32_t)ncs);
      p += 8;
    }
    for (size_t i = 0; i < ncs; i++, p += 4) {
      agg_put16(p, cs[i].key);
      agg_put16(p + 2, cs[i].card - 1);
    }
    if (!any_run || ncs >= 4)
      for (size_t i = 0; i < ncs; i++, p += 4) agg_put32(p, (uint32_t)(header + cs[i].off));
    out->len += header;
  }
  if (wd_buf_append(out, data.data, data.len)) goto done;
  rc = 0;
done:
  wd_buf_free(&data);
  free(cs);
  free(lo);
  free(batch);
  return rc;
}

static uint32_t agg_get16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t agg_get32(const uint8_t *p) { return agg_get16(p) | agg_get16(p + 2) << 16; }

/*
 * Whether p[0..n) is a well-formed portable 32-bit roaring bitmap (the RoaringFormatSpec layout:
 * cookie 12346 with a 32-bit container count, or 12347 with the count in its high half and a
 * bitset of run containers; keys strictly ascending; offsets, when present, skipped), each
 * container consistent with the cardinality in its header: an array's values strictly
 * ascending, a bitset's population equal to it, runs non-empty, ascending, not overlapping,
 * within 16 bits and adding up to it. Trailing bytes are allowed. CRoaring's
 * roaring_bitmap_portable_deserialize_safe only stays inside the buffer: a container that
 * contradicts its header (e.g. a run container without runs) is taken as is and crashes later
 * operations, so bytes from a record are checked here first.
 */
static bool agg_rbm_valid(const char *p, size_t n) {
  const uint8_t *u = (const uint8_t *)p, *runs = NULL;
  size_t at, size, hdr;
  uint32_t cookie;
  bool offsets;
  if (n < 4) return false;
  cookie = agg_get32(u);
  if (cookie == 12346u) {
    if (n < 8) return false;
    size = agg_get32(u + 4);
    at = 8;
    offsets = true;
  } else if ((cookie & 0xFFFFu) == 12347u) {
    size = (size_t)(cookie >> 16) + 1;
    runs = u + 4;
    at = 4 + (size + 7) / 8;
    offsets = size >= 4;
  } else return false;
  if (size > 65536 || at > n || n - at < size * 4) return false;
  hdr = at;
  at += size * 4;
  if (offsets) {
    if (n - at < size * 4) return false;
    at += size * 4;
  }
  for (size_t i = 0; i < size; i++) {
    uint32_t key = agg_get16(u + hdr + 4 * i), card = agg_get16(u + hdr + 4 * i + 2) + 1;
    if (i > 0 && key <= agg_get16(u + hdr + 4 * (i - 1))) return false;
    if (runs && (runs[i / 8] >> (i % 8) & 1)) {
      uint32_t nruns, sum = 0, next = 0;
      if (n - at < 2) return false;
      nruns = agg_get16(u + at);
      at += 2;
      if (nruns == 0 || n - at < (size_t)nruns * 4) return false;
      for (uint32_t r = 0; r < nruns; r++, at += 4) {
        uint32_t start = agg_get16(u + at), len = agg_get16(u + at + 2);
        if ((r > 0 && start < next) || start + len > 0xFFFFu) return false;
        next = start + len + 1;
        sum += len + 1;
      }
      if (sum != card) return false;
    } else if (card > 4096) {
      uint32_t pop = 0;
      if (n - at < 8192) return false;
      for (size_t w = 0; w < 8192; w++) pop += (uint32_t)__builtin_popcount(u[at + w]);
      at += 8192;
      if (pop != card) return false;
    } else {
      if (n - at < (size_t)card * 2) return false;
      for (uint32_t v = 1; v < card; v++)
        if (agg_get16(u + at + 2 * v) <= agg_get16(u + at + 2 * (v - 1))) return false;
      at += (size_t)card * 2;
    }
  }
  return true;
}

/*
 * rbm32 (spec §9.2): NULL-skipping; a single non-NULL side is returned byte for byte; otherwise
 * both sides are deserialized (portable format), ORed and serialized again after run
 * optimisation. Errors: E_TYPE when a side is not a serialized 32-bit roaring bitmap.
 */
static wd_error_t *agg_rbm32(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  roaring_bitmap_t *a = NULL, *b = NULL;
  wd_buf_t out = {0};
  wd_value_t tmp;
  wd_error_t *err = NULL;

  if (in->is_null) return NULL;
  if (acc->is_null) return agg_assign(spec->type, acc, in);
  if (agg_rbm_valid(acc->s.p, acc->s.n)) a = roaring_bitmap_portable_deserialize_safe(acc->s.p, acc->s.n);
  if (agg_rbm_valid(in->s.p, in->s.n)) b = roaring_bitmap_portable_deserialize_safe(in->s.p, in->s.n);
  if (!a || !b) {
    err = wd_error_new(WD_ERR_RECORD, E_TYPE,
                       "rbm32: the %s value of column %s is not a serialized 32-bit roaring bitmap",
                       !a ? "stored" : "input", agg_col(spec));
    goto done;
  }
  roaring_bitmap_or_inplace(a, b);
  if (agg_rbm_serialize(a, &out) != 0) goto nomem;
  if (agg_string_new(&tmp, out.len) != 0) goto nomem;
  memcpy(tmp.s.p, out.data, out.len);
  wd_value_move(spec->type, acc, &tmp);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  wd_buf_free(&out);
  if (a) roaring_bitmap_free(a);
  if (b) roaring_bitmap_free(b);
  return err;
}

/* ==== entry points ========================================================================= */

/* acc = agg(acc, in) for add records (spec §9, §8.2). */
wd_error_t *wd_agg_add(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool *seen) {
  switch (spec->fn) {
  case WD_AGG_NONE: /* primary-key columns (Paimon's FieldPrimaryKeyAgg): the input */
  case WD_AGG_LAST_VALUE: return agg_assign(spec->type, acc, in);
  case WD_AGG_LAST_NON_NULL_VALUE: return in->is_null ? NULL : agg_assign(spec->type, acc, in);
  case WD_AGG_SUM: return agg_sum(spec, acc, in, false);
  case WD_AGG_PRODUCT: return agg_product(spec, acc, in);
  case WD_AGG_MAX: return agg_maxmin(spec, acc, in, true);
  case WD_AGG_MIN: return agg_maxmin(spec, acc, in, false);
  case WD_AGG_FIRST_VALUE: return agg_first(spec, acc, in, seen, false);
  case WD_AGG_FIRST_NON_NULL_VALUE: return agg_first(spec, acc, in, seen, true);
  case WD_AGG_LISTAGG: return agg_listagg(spec, acc, in);
  case WD_AGG_BOOL_AND:
  case WD_AGG_BOOL_OR:
    if (in->is_null) return NULL;
    if (acc->is_null) *acc = *in;
    else acc->b = spec->fn == WD_AGG_BOOL_AND ? (acc->b && in->b) : (acc->b || in->b);
    return NULL;
  case WD_AGG_COLLECT: return agg_collect(spec, acc, in);
  case WD_AGG_MERGE_MAP: return agg_merge_map(spec, acc, in);
  case WD_AGG_MERGE_MAP_WITH_KEYTIME: return agg_keytime(spec, acc, in);
  case WD_AGG_NESTED_UPDATE: return agg_nested_update(spec, acc, in);
  case WD_AGG_NESTED_PARTIAL_UPDATE: return agg_nested_partial(spec, acc, in);
  case WD_AGG_RBM32: return agg_rbm32(spec, acc, in);
  }
  return wd_error_new(WD_ERR_INTERNAL, NONE, "unknown aggregate function %d", (int)spec->fn);
}

/*
 * Partial-update record older than the group's sequence (spec §7.4): the function runs with its
 * arguments swapped, agg(in, acc), so the older value is combined as if it came first. The one
 * exception is collect without ignore-retract, which appends as a plain agg(acc, in).
 */
wd_error_t *wd_agg_add_older(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool *seen) {
  wd_value_t tmp;
  wd_error_t *err;
  if (spec->fn == WD_AGG_COLLECT && !spec->ignore_retract) return wd_agg_add(spec, acc, in, seen);
  if (wd_value_copy(spec->type, &tmp, in) != 0) return wd_error_nomem();
  err = wd_agg_add(spec, &tmp, acc, seen);
  if (err) {
    wd_value_clear(spec->type, &tmp);
    return err;
  }
  wd_value_move(spec->type, acc, &tmp);
  return NULL;
}

/* acc = retract(acc, in) for -U/-D (spec §8.2, §8.3, §9.1 retract column, §9.3 ignore-retract). */
wd_error_t *wd_agg_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in) {
  if (spec->ignore_retract) return NULL;
  switch (spec->fn) {
  case WD_AGG_NONE: return agg_assign(spec->type, acc, in);
  case WD_AGG_SUM: return agg_sum(spec, acc, in, true);
  case WD_AGG_PRODUCT: return agg_product_retract(spec, acc, in);
  case WD_AGG_LAST_VALUE: wd_value_clear(spec->type, acc); return NULL;
  case WD_AGG_LAST_NON_NULL_VALUE:
    if (!in->is_null) wd_value_clear(spec->type, acc);
    return NULL;
  case WD_AGG_COLLECT: return agg_collect_retract(spec, acc, in);
  case WD_AGG_MERGE_MAP: return agg_merge_map_retract(spec, acc, in);
  case WD_AGG_NESTED_UPDATE: return agg_nested_update_retract(spec, acc, in);
  default:
    return wd_error_new(WD_ERR_RECORD, E_AGG_NO_RETRACT,
                        "aggregate function '%s' (field %s) does not support retraction; if this field may ignore "
                        "retractions, configure 'fields.%s.ignore-retract'='true'",
                        wd_agg_name(spec->fn), agg_col(spec), agg_col(spec));
  }
}
