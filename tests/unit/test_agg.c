/*
 * tests/unit/test_agg.c — join/agg.c: the aggregate functions of spec §9 (add, retract, the
 * older-sequence swap of §7.4), lookup and type checks. Values are written as case JSON (spec
 * §12.2) and compared by value; order-sensitive results (D5) are compared as arrays, in order.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/types.h"
#include "join/agg.h"

/* ---- fixture: everything a test creates is registered and released in teardown ---------- */

typedef struct fx {
  wd_agg_spec_t spec;
  wd_type_t *t;
  bool seen;
} fx_t;

#define MAX_REG 256
static fx_t *g_fx[MAX_REG];
static size_t g_nfx;
static struct {
  const wd_type_t *t;
  wd_value_t *v;
} g_val[MAX_REG * 4];
static size_t g_nval;

static void teardown(void) {
  for (size_t i = 0; i < g_nval; i++) {
    wd_value_clear(g_val[i].t, g_val[i].v);
    free(g_val[i].v);
  }
  for (size_t i = 0; i < g_nfx; i++) {
    wd_agg_spec_clear(&g_fx[i]->spec);
    wd_type_destroy(g_fx[i]->t);
    free(g_fx[i]);
  }
  g_nval = g_nfx = 0;
}

TestSuite(agg, .fini = teardown);

/* A spec for fn over a column of the given type, named "c". */
static fx_t *FX(wd_agg_fn_t fn, const char *type) {
  fx_t *f = calloc(1, sizeof(*f));
  wd_error_t *err;
  cr_assert_not_null(f);
  err = wd_type_parse(type, &f->t);
  cr_assert_null(err, "type '%s': %s", type, err ? err->message : "");
  f->spec.fn = fn;
  f->spec.type = f->t;
  f->spec.column = "c";
  f->spec.nested_null = WD_NESTED_NULL_MERGE;
  f->spec.count_limit = 2147483647;
  f->spec.ts_field = -1;
  if (f->t->id == WD_MAP && f->t->val && f->t->val->id == WD_ROW) f->spec.ts_field = (int)f->t->val->nfields - 1;
  g_fx[g_nfx++] = f;
  return f;
}

/* ROW field index of name in the element ROW of an ARRAY<ROW> column. */
static int field_of(const fx_t *f, const char *name) {
  const wd_type_t *rt = f->t->elem;
  for (size_t i = 0; i < rt->nfields; i++)
    if (strcmp(rt->fields[i].name, name) == 0) return (int)i;
  cr_assert_fail("no field %s", name);
  return -1;
}

static void set_nested_key(fx_t *f, const char *a, const char *b) {
  f->spec.n_nested_key = b ? 2 : 1;
  f->spec.nested_key = calloc(2, sizeof(int));
  f->spec.nested_key[0] = field_of(f, a);
  if (b) f->spec.nested_key[1] = field_of(f, b);
}

/* A value of type t from case JSON (registered). */
static wd_value_t *V(const wd_type_t *t, const char *json) {
  json_error_t jerr;
  json_t *j = json_loads(json, JSON_DECODE_ANY, &jerr);
  wd_value_t *v = calloc(1, sizeof(*v));
  wd_error_t *err;
  cr_assert_not_null(j, "bad test JSON '%s': %s", json, jerr.text);
  cr_assert_not_null(v);
  err = wd_value_from_json(t, j, v);
  json_decref(j);
  cr_assert_null(err, "value '%s': %s", json, err ? err->message : "");
  g_val[g_nval].t = t;
  g_val[g_nval].v = v;
  g_nval++;
  return v;
}

static wd_value_t *VN(const wd_type_t *t) { return V(t, "null"); }

/* A registered string/bytes value holding n given bytes. */
static wd_value_t *VB(const wd_type_t *t, const void *p, size_t n) {
  wd_value_t *v = calloc(1, sizeof(*v));
  cr_assert_not_null(v);
  cr_assert_eq(wd_value_set_bytes(v, p, n), 0);
  v->is_null = false;
  g_val[g_nval].t = t;
  g_val[g_nval].v = v;
  g_nval++;
  return v;
}

static char *to_text(const wd_type_t *t, const wd_value_t *v) {
  json_t *j = wd_value_to_json(t, v);
  char *s = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  json_decref(j);
  return s;
}

/* Asserts v equals the value written as json (ARRAY order matters, MAP order does not). */
static void EQ(const wd_type_t *t, const wd_value_t *v, const char *json) {
  wd_value_t *want = V(t, json);
  if (!wd_value_eq(t, v, want)) {
    char *got = to_text(t, v);
    cr_assert_fail("got %s, want %s", got ? got : "?", json);
  }
}

static void OK(wd_error_t *err) {
  if (err) cr_assert_fail("unexpected error: %s", err->message);
}

/* Asserts an error with id whose message contains fragment (may be NULL); releases it. */
static void FAILS(wd_error_t *err, wd_err_class_t cls, const char *id, const char *fragment) {
  cr_assert_not_null(err, "expected %s", id);
  cr_assert_str_eq(err->id, id, "%s", err->message);
  cr_assert_eq(err->cls, cls, "%s", err->message);
  cr_assert(strncmp(err->message, id, strlen(id)) == 0, "message starts with the id: %s", err->message);
  if (fragment) cr_assert(strstr(err->message, fragment), "message '%s' lacks '%s'", err->message, fragment);
  wd_error_destroy(err);
}

#define ADD(f, acc, in) wd_agg_add(&(f)->spec, (acc), (in), &(f)->seen)
#define OLDER(f, acc, in) wd_agg_add_older(&(f)->spec, (acc), (in), &(f)->seen)
#define RETRACT(f, acc, in) wd_agg_retract(&(f)->spec, (acc), (in))

/* acc <- add of each json input in turn, then compare. */
static void add_all(fx_t *f, wd_value_t *acc, const char *const *inputs, size_t n) {
  for (size_t i = 0; i < n; i++) OK(ADD(f, acc, V(f->t, inputs[i])));
}
#define ADD_ALL(f, acc, ...)                                                                                           \
  do {                                                                                                                 \
    static const char *const in_[] = {__VA_ARGS__};                                                                    \
    add_all((f), (acc), in_, sizeof(in_) / sizeof(in_[0]));                                                            \
  } while (0)

/* ==== lookup, names, type checks =========================================================== */

Test(agg, lookup_every_name) {
  static const struct {
    const char *name;
    wd_agg_fn_t fn;
  } names[] = {{"sum", WD_AGG_SUM},
               {"product", WD_AGG_PRODUCT},
               {"max", WD_AGG_MAX},
               {"min", WD_AGG_MIN},
               {"last_value", WD_AGG_LAST_VALUE},
               {"last_non_null_value", WD_AGG_LAST_NON_NULL_VALUE},
               {"first_value", WD_AGG_FIRST_VALUE},
               {"first_non_null_value", WD_AGG_FIRST_NON_NULL_VALUE},
               {"first_not_null_value", WD_AGG_FIRST_NON_NULL_VALUE},
               {"listagg", WD_AGG_LISTAGG},
               {"bool_and", WD_AGG_BOOL_AND},
               {"bool_or", WD_AGG_BOOL_OR},
               {"collect", WD_AGG_COLLECT},
               {"merge_map", WD_AGG_MERGE_MAP},
               {"merge_map_with_keytime", WD_AGG_MERGE_MAP_WITH_KEYTIME},
               {"nested_update", WD_AGG_NESTED_UPDATE},
               {"nested_partial_update", WD_AGG_NESTED_PARTIAL_UPDATE},
               {"rbm32", WD_AGG_RBM32}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    wd_agg_fn_t fn = WD_AGG_NONE;
    OK(wd_agg_lookup(names[i].name, "c", &fn));
    cr_assert_eq(fn, names[i].fn, "%s", names[i].name);
  }
  cr_assert_str_eq(wd_agg_name(WD_AGG_FIRST_NON_NULL_VALUE), "first_non_null_value");
  cr_assert_str_eq(wd_agg_name(WD_AGG_MERGE_MAP_WITH_KEYTIME), "merge_map_with_keytime");
  cr_assert_str_eq(wd_agg_name(WD_AGG_RBM32), "rbm32");
  cr_assert_str_eq(wd_agg_name(WD_AGG_SUM), "sum");
}

Test(agg, lookup_unsupported_and_unknown) {
  static const char *const unsupported[] = {"hll_sketch", "theta_sketch", "rbm64"};
  static const char *const unknown[] = {"not_exist", "count", "", "SUM", " sum", "avg"};
  wd_agg_fn_t fn = WD_AGG_NONE;
  for (size_t i = 0; i < 3; i++) {
    char want[64];
    snprintf(want, sizeof(want), "C_AGG_UNSUPPORTED: %s is not supported yet", unsupported[i]);
    wd_error_t *err = wd_agg_lookup(unsupported[i], "users64", &fn);
    cr_assert_not_null(err);
    cr_assert(strncmp(err->message, want, strlen(want)) == 0, "%s", err->message);
    FAILS(err, WD_ERR_CONFIG, "C_AGG_UNSUPPORTED", "users64");
  }
  for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
    wd_error_t *err = wd_agg_lookup(unknown[i], "v", &fn);
    cr_assert_not_null(err, "'%s' must be unknown", unknown[i]);
    cr_assert(strstr(err->message, "Could not find any factory for identifier"), "%s", err->message);
    cr_assert(strstr(err->message, "column v"), "%s", err->message);
    FAILS(err, WD_ERR_CONFIG, "C_AGG_UNKNOWN_FUNCTION", unknown[i]);
  }
  FAILS(wd_agg_lookup("not_exist", "v", &fn), WD_ERR_CONFIG, "C_AGG_UNKNOWN_FUNCTION",
        "C_AGG_UNKNOWN_FUNCTION: unknown aggregate function 'not_exist'");
}

Test(agg, can_retract_table) {
  wd_agg_fn_t yes[] = {WD_AGG_SUM,
                       WD_AGG_PRODUCT,
                       WD_AGG_COLLECT,
                       WD_AGG_MERGE_MAP,
                       WD_AGG_NESTED_UPDATE,
                       WD_AGG_LAST_VALUE,
                       WD_AGG_LAST_NON_NULL_VALUE};
  wd_agg_fn_t no[] = {WD_AGG_MAX,
                      WD_AGG_MIN,
                      WD_AGG_FIRST_VALUE,
                      WD_AGG_FIRST_NON_NULL_VALUE,
                      WD_AGG_LISTAGG,
                      WD_AGG_BOOL_AND,
                      WD_AGG_BOOL_OR,
                      WD_AGG_MERGE_MAP_WITH_KEYTIME,
                      WD_AGG_NESTED_PARTIAL_UPDATE,
                      WD_AGG_RBM32};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) cr_assert(wd_agg_can_retract(yes[i]), "%d", yes[i]);
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) cr_assert(!wd_agg_can_retract(no[i]), "%d", no[i]);
}

static void type_ok(wd_agg_fn_t fn, const char *type) { OK(wd_agg_check_type(&FX(fn, type)->spec)); }

static void type_bad(wd_agg_fn_t fn, const char *type, const char *fragment) {
  FAILS(wd_agg_check_type(&FX(fn, type)->spec), WD_ERR_CONFIG, "C_AGG_TYPE", fragment);
}

Test(agg, check_type) {
  static const char *const numerics[] = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(4,2)"};
  static const char *const orderable[] = {"BOOLEAN", "INT",     "DOUBLE",       "DECIMAL(6,2)",
                                          "STRING",  "CHAR(3)", "VARCHAR(9)",   "BYTES",
                                          "DATE",    "TIME(3)", "TIMESTAMP(6)", "TIMESTAMP_LTZ(3)"};
  for (size_t i = 0; i < 7; i++) {
    type_ok(WD_AGG_SUM, numerics[i]);
    type_ok(WD_AGG_PRODUCT, numerics[i]);
  }
  for (size_t i = 0; i < 12; i++) {
    type_ok(WD_AGG_MAX, orderable[i]);
    type_ok(WD_AGG_MIN, orderable[i]);
  }
  type_bad(WD_AGG_SUM, "STRING", "sum needs a numeric column, c is STRING");
  type_bad(WD_AGG_PRODUCT, "BOOLEAN", "product needs a numeric column");
  type_bad(WD_AGG_MAX, "ARRAY<INT>", "max needs");
  type_bad(WD_AGG_MIN, "MAP<INT,INT>", "min needs");
  type_bad(WD_AGG_MAX, "ROW<a INT>", NULL);
  type_ok(WD_AGG_LISTAGG, "STRING");
  type_bad(WD_AGG_LISTAGG, "VARCHAR(100)", "listagg needs STRING");
  type_bad(WD_AGG_LISTAGG, "CHAR(5)", "listagg needs STRING");
  type_ok(WD_AGG_BOOL_AND, "BOOLEAN");
  type_bad(WD_AGG_BOOL_OR, "INT", "bool_or needs a BOOLEAN column");
  type_ok(WD_AGG_COLLECT, "ARRAY<ROW<a INT>>");
  type_bad(WD_AGG_COLLECT, "MAP<INT,INT>", "collect needs an ARRAY column");
  type_ok(WD_AGG_MERGE_MAP, "MAP<INT,STRING>");
  type_bad(WD_AGG_MERGE_MAP, "ARRAY<INT>", NULL);
  type_ok(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<STRING,ROW<value STRING, ts STRING>>");
  type_bad(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<STRING,ROW<ts STRING>>", "at least 2 ROW fields");
  type_bad(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<STRING,STRING>", NULL);
  type_bad(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<STRING,ROW<value STRING, ts BIGINT>>", "STRING ts-field");
  {
    fx_t *f = FX(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<STRING,ROW<value STRING, ts STRING>>");
    f->spec.ts_field = -1; /* fields.<f>.ts-field names a missing field */
    FAILS(wd_agg_check_type(&f->spec), WD_ERR_CONFIG, "C_AGG_TYPE", "ts-field");
    f->spec.ts_field = 0; /* 'value' is a STRING too: accepted */
    OK(wd_agg_check_type(&f->spec));
  }
  type_ok(WD_AGG_NESTED_UPDATE, "ARRAY<ROW<k INT, v STRING>>");
  type_ok(WD_AGG_NESTED_PARTIAL_UPDATE, "ARRAY<ROW<k INT, v STRING>>");
  type_bad(WD_AGG_NESTED_UPDATE, "ARRAY<INT>", "ARRAY<ROW");
  type_bad(WD_AGG_NESTED_PARTIAL_UPDATE, "ROW<k INT>", "ARRAY<ROW");
  type_ok(WD_AGG_RBM32, "BYTES");
  type_bad(WD_AGG_RBM32, "STRING", "rbm32 needs a BYTES column");
  type_ok(WD_AGG_LAST_VALUE, "MAP<STRING,ARRAY<INT>>");
  type_ok(WD_AGG_FIRST_NON_NULL_VALUE, "ROW<a INT, b STRING>");
}

Test(agg, spec_clear_releases_and_resets) {
  wd_agg_spec_t spec = {0};
  spec.delimiter = strdup("|");
  spec.nested_key = calloc(2, sizeof(int));
  spec.n_nested_key = 2;
  spec.nested_seq = calloc(1, sizeof(int));
  spec.n_nested_seq = 1;
  wd_agg_spec_clear(&spec);
  cr_assert_null(spec.delimiter);
  cr_assert_null(spec.nested_key);
  cr_assert_null(spec.nested_seq);
  cr_assert_eq(spec.n_nested_key, 0);
  cr_assert_eq(spec.n_nested_seq, 0);
  wd_agg_spec_clear(&spec); /* twice is harmless */
  wd_agg_spec_clear(NULL);
}

/* ==== sum ================================================================================== */

Test(agg, sum_null_sides) {
  fx_t *f = FX(WD_AGG_SUM, "INT");
  wd_value_t *acc = VN(f->t);
  OK(ADD(f, acc, VN(f->t)));
  cr_assert(acc->is_null, "NULL + NULL is NULL");
  OK(ADD(f, acc, V(f->t, "5")));
  EQ(f->t, acc, "5");
  OK(ADD(f, acc, VN(f->t)));
  EQ(f->t, acc, "5");
  ADD_ALL(f, acc, "-7", "3");
  EQ(f->t, acc, "1");
}

Test(agg, sum_tinyint_overflow) {
  fx_t *f = FX(WD_AGG_SUM, "TINYINT");
  wd_value_t *acc = VN(f->t);
  ADD_ALL(f, acc, "100", "27");
  EQ(f->t, acc, "127");
  FAILS(ADD(f, acc, V(f->t, "1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "E_ARITH_OVERFLOW: TINYINT overflow");
  EQ(f->t, acc, "127"); /* unchanged */
  acc = V(f->t, "-128");
  FAILS(ADD(f, acc, V(f->t, "-1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "TINYINT overflow");
  EQ(f->t, acc, "-128");
}

Test(agg, sum_smallint_int_bigint_limits) {
  fx_t *s = FX(WD_AGG_SUM, "SMALLINT"), *i = FX(WD_AGG_SUM, "INT"), *b = FX(WD_AGG_SUM, "BIGINT");
  wd_value_t *acc = VN(s->t);
  ADD_ALL(s, acc, "32000", "767");
  EQ(s->t, acc, "32767");
  FAILS(ADD(s, acc, V(s->t, "1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "SMALLINT overflow");
  ADD_ALL(s, acc, "-32767", "-32767", "-1");
  EQ(s->t, acc, "-32768");

  acc = V(i->t, "2147483647");
  FAILS(ADD(i, acc, V(i->t, "1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "INT overflow");
  EQ(i->t, acc, "2147483647");

  acc = V(b->t, "9223372036854775807");
  FAILS(ADD(b, acc, V(b->t, "1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "BIGINT overflow");
  EQ(b->t, acc, "9223372036854775807");
  acc = V(b->t, "-9223372036854775807");
  OK(ADD(b, acc, V(b->t, "-1")));
  cr_assert_eq(acc->i, INT64_MIN);
  FAILS(ADD(b, acc, V(b->t, "-1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "BIGINT overflow");
  cr_assert_eq(acc->i, INT64_MIN);
}

Test(agg, sum_retract_and_min_negation) {
  fx_t *f = FX(WD_AGG_SUM, "INT"), *t = FX(WD_AGG_SUM, "TINYINT"), *b = FX(WD_AGG_SUM, "BIGINT");
  wd_value_t *acc = V(f->t, "10");
  OK(RETRACT(f, acc, V(f->t, "3")));
  EQ(f->t, acc, "7");
  OK(RETRACT(f, acc, VN(f->t)));
  EQ(f->t, acc, "7");
  acc = VN(f->t); /* spec §8.3: retract(NULL, v) = -v */
  OK(RETRACT(f, acc, V(f->t, "5")));
  EQ(f->t, acc, "-5");
  acc = VN(f->t);
  OK(RETRACT(f, acc, VN(f->t)));
  cr_assert(acc->is_null);
  /* negating MIN overflows, per column type */
  acc = VN(t->t);
  FAILS(RETRACT(t, acc, V(t->t, "-128")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "TINYINT overflow");
  cr_assert(acc->is_null);
  OK(RETRACT(t, acc, V(t->t, "-127")));
  EQ(t->t, acc, "127");
  acc = VN(b->t);
  FAILS(RETRACT(b, acc, V(b->t, "-9223372036854775808")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "BIGINT overflow");
  cr_assert(acc->is_null);
  acc = V(b->t, "-9223372036854775808");
  FAILS(RETRACT(b, acc, V(b->t, "1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "BIGINT overflow");
  /* ignore-retract leaves the value */
  f->spec.ignore_retract = true;
  acc = V(f->t, "4");
  OK(RETRACT(f, acc, V(f->t, "4")));
  EQ(f->t, acc, "4");
}

Test(agg, sum_double_nan_infinity) {
  fx_t *f = FX(WD_AGG_SUM, "DOUBLE");
  wd_value_t *acc = V(f->t, "1.5");
  OK(ADD(f, acc, V(f->t, "\"NaN\"")));
  cr_assert(isnan(acc->f));
  OK(ADD(f, acc, V(f->t, "1.0")));
  cr_assert(isnan(acc->f), "NaN stays NaN");
  acc = V(f->t, "\"Infinity\"");
  OK(ADD(f, acc, V(f->t, "1e308")));
  cr_assert(isinf(acc->f) && acc->f > 0);
  OK(ADD(f, acc, V(f->t, "\"-Infinity\"")));
  cr_assert(isnan(acc->f), "Inf + -Inf is NaN");
  acc = V(f->t, "1e308");
  OK(ADD(f, acc, V(f->t, "1e308")));
  cr_assert(isinf(acc->f), "IEEE overflow is Infinity, not an error");
  acc = V(f->t, "1.11");
  ADD_ALL(f, acc, "1.11", "-1.11");
  cr_assert_eq(acc->f, 1.11 + 1.11 - 1.11);
  acc = VN(f->t);
  OK(RETRACT(f, acc, V(f->t, "\"Infinity\"")));
  cr_assert(isinf(acc->f) && acc->f < 0);
}

Test(agg, sum_float_is_binary32) {
  fx_t *f = FX(WD_AGG_SUM, "FLOAT");
  wd_value_t *acc = V(f->t, "16777216");
  OK(ADD(f, acc, V(f->t, "1")));
  cr_assert_eq(acc->f, 16777216.0, "binary32 has no 16777217");
  acc = V(f->t, "1.11");
  ADD_ALL(f, acc, "null", "-1.11");
  cr_assert_eq(acc->f, 0.0);
  acc = V(f->t, "0.1");
  OK(ADD(f, acc, V(f->t, "0.2")));
  cr_assert_eq(acc->f, (double)(0.1f + 0.2f));
  cr_assert_eq(acc->f, (double)(float)acc->f);
  acc = V(f->t, "3e38");
  OK(ADD(f, acc, V(f->t, "3e38")));
  cr_assert(isinf(acc->f), "FLOAT overflow rounds to Infinity");
}

Test(agg, sum_decimal_precision_overflow) {
  fx_t *f = FX(WD_AGG_SUM, "DECIMAL(5,2)");
  wd_value_t *acc = V(f->t, "\"999.98\"");
  OK(ADD(f, acc, V(f->t, "\"0.01\"")));
  EQ(f->t, acc, "\"999.99\"");
  FAILS(ADD(f, acc, V(f->t, "\"0.01\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "E_ARITH_OVERFLOW: DECIMAL(5,2) overflow: 1000.00");
  EQ(f->t, acc, "\"999.99\"");
  acc = V(f->t, "\"-999.99\"");
  FAILS(ADD(f, acc, V(f->t, "\"-0.01\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "DECIMAL(5,2) overflow: -1000.00");
  OK(RETRACT(f, acc, V(f->t, "\"-0.99\"")));
  EQ(f->t, acc, "\"-999.00\"");
  acc = VN(f->t);
  OK(RETRACT(f, acc, V(f->t, "\"-999.99\"")));
  EQ(f->t, acc, "\"999.99\"");
  /* the example of agg-sum-numeric-types */
  fx_t *g = FX(WD_AGG_SUM, "DECIMAL(4,2)");
  acc = VN(g->t);
  ADD_ALL(g, acc, "\"1.01\"", "\"1.10\"", "\"10.00\"");
  EQ(g->t, acc, "\"12.11\"");
}

Test(agg, sum_decimal38_at_int128_edge) {
  fx_t *f = FX(WD_AGG_SUM, "DECIMAL(38,0)");
  const char *max = "\"99999999999999999999999999999999999999\"";
  wd_value_t *acc = V(f->t, max);
  OK(ADD(f, acc, V(f->t, "\"0\"")));
  FAILS(ADD(f, acc, V(f->t, "\"1\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "DECIMAL(38,0) overflow: 100000000000000000000000000000000000000");
  FAILS(ADD(f, acc, V(f->t, max)), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "overflow: 199999999999999999999999999999999999998"); /* beyond 2^127 */
  EQ(f->t, acc, max);
  acc = V(f->t, "\"-99999999999999999999999999999999999999\"");
  FAILS(RETRACT(f, acc, V(f->t, max)), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "overflow: -199999999999999999999999999999999999998");
}

/* ==== product ============================================================================== */

Test(agg, product_integers) {
  fx_t *f = FX(WD_AGG_PRODUCT, "INT"), *b = FX(WD_AGG_PRODUCT, "BIGINT"), *t = FX(WD_AGG_PRODUCT, "TINYINT");
  wd_value_t *acc = VN(f->t);
  ADD_ALL(f, acc, "null", "10", "null", "-5");
  EQ(f->t, acc, "-50");
  acc = V(b->t, "4294967296");
  OK(ADD(b, acc, V(b->t, "-2147483648")));
  cr_assert_eq(acc->i, INT64_MIN, "2^32 * -2^31 is exactly MIN");
  acc = V(b->t, "4294967296");
  FAILS(ADD(b, acc, V(b->t, "2147483648")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "E_ARITH_OVERFLOW: BIGINT overflow");
  EQ(b->t, acc, "4294967296");
  acc = V(t->t, "64");
  FAILS(ADD(t, acc, V(t->t, "2")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "TINYINT overflow");
  OK(ADD(t, acc, V(t->t, "-2")));
  EQ(t->t, acc, "-128");
}

Test(agg, product_decimal_half_up_each_step) {
  fx_t *f = FX(WD_AGG_PRODUCT, "DECIMAL(4,2)"), *g = FX(WD_AGG_PRODUCT, "DECIMAL(5,3)");
  wd_value_t *acc = VN(f->t);
  ADD_ALL(f, acc, "\"1.01\"", "\"1.10\"");
  EQ(f->t, acc, "\"1.11\""); /* 1.111 -> 1.11 */
  OK(ADD(f, acc, V(f->t, "\"10.00\"")));
  EQ(f->t, acc, "\"11.10\"");
  acc = VN(g->t);
  ADD_ALL(g, acc, "\"1.01\"", "\"1.10\"", "\"10.00\"");
  EQ(g->t, acc, "\"11.110\"");
  acc = V(f->t, "\"9.99\"");
  OK(ADD(f, acc, V(f->t, "\"9.99\"")));
  EQ(f->t, acc, "\"99.80\""); /* 99.8001 */
  FAILS(ADD(f, acc, V(f->t, "\"1.01\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "E_ARITH_OVERFLOW: DECIMAL(4,2) overflow: 100.80");
  EQ(f->t, acc, "\"99.80\"");
  acc = V(f->t, "\"0.25\"");
  OK(ADD(f, acc, V(f->t, "\"0.50\"")));
  EQ(f->t, acc, "\"0.13\""); /* 0.125 rounds up, not to even */
  acc = V(f->t, "\"-0.25\"");
  OK(ADD(f, acc, V(f->t, "\"0.50\"")));
  EQ(f->t, acc, "\"-0.13\""); /* HALF_UP is away from zero */
  acc = V(f->t, "\"0.01\"");
  OK(ADD(f, acc, V(f->t, "\"0.49\"")));
  EQ(f->t, acc, "\"0.00\""); /* 0.0049 */
}

Test(agg, product_decimal_beyond_128_bits) {
  fx_t *f = FX(WD_AGG_PRODUCT, "DECIMAL(38,10)");
  wd_value_t *acc = V(f->t, "\"12345678901234567890.1234567890\"");
  OK(ADD(f, acc, V(f->t, "\"2.0000000000\""))); /* unscaled product ~2.5e39 > 2^127 */
  EQ(f->t, acc, "\"24691357802469135780.2469135780\"");
  OK(ADD(f, acc, V(f->t, "\"0.0000000001\"")));
  EQ(f->t, acc, "\"2469135780.2469135780\""); /* ...2469135780|2469135780 rounds down */
  OK(ADD(f, acc, V(f->t, "\"0.0000000001\"")));
  EQ(f->t, acc, "\"0.2469135780\"");
  OK(ADD(f, acc, V(f->t, "\"0.0000000002\"")));
  EQ(f->t, acc, "\"0.0000000000\""); /* 0.0000000000493827156 */
  acc = V(f->t, "\"0.0000000005\"");
  OK(ADD(f, acc, V(f->t, "\"0.1000000000\"")));
  EQ(f->t, acc, "\"0.0000000001\""); /* 0.00000000005 rounds half up */
  acc = V(f->t, "\"9999999999999999999999999999.9999999999\"");
  FAILS(ADD(f, acc, V(f->t, "\"10.0000000000\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "DECIMAL(38,10) overflow: 99999999999999999999999999999.9999999990");
}

Test(agg, product_retract_integers) {
  fx_t *f = FX(WD_AGG_PRODUCT, "INT"), *b = FX(WD_AGG_PRODUCT, "BIGINT"), *t = FX(WD_AGG_PRODUCT, "TINYINT");
  wd_value_t *acc = V(f->t, "10");
  OK(RETRACT(f, acc, V(f->t, "5")));
  EQ(f->t, acc, "2");
  acc = V(f->t, "7");
  OK(RETRACT(f, acc, V(f->t, "2")));
  EQ(f->t, acc, "3");
  acc = V(f->t, "-7");
  OK(RETRACT(f, acc, V(f->t, "2")));
  EQ(f->t, acc, "-3"); /* truncation toward zero */
  OK(RETRACT(f, acc, VN(f->t)));
  EQ(f->t, acc, "-3");
  acc = VN(f->t);
  OK(RETRACT(f, acc, V(f->t, "5")));
  cr_assert(acc->is_null, "retract(NULL, v) is NULL for product");
  acc = V(f->t, "10");
  FAILS(RETRACT(f, acc, V(f->t, "0")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "division by zero");
  EQ(f->t, acc, "10");
  acc = V(b->t, "-9223372036854775808");
  FAILS(RETRACT(b, acc, V(b->t, "-1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "BIGINT overflow");
  cr_assert_eq(acc->i, INT64_MIN);
  acc = V(t->t, "-128");
  FAILS(RETRACT(t, acc, V(t->t, "-1")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "TINYINT overflow");
  OK(RETRACT(t, acc, V(t->t, "2")));
  EQ(t->t, acc, "-64");
}

Test(agg, product_retract_decimal_terminating) {
  fx_t *f = FX(WD_AGG_PRODUCT, "DECIMAL(6,2)");
  wd_value_t *acc = V(f->t, "\"10.00\"");
  OK(RETRACT(f, acc, V(f->t, "\"8.00\"")));
  EQ(f->t, acc, "\"1.25\"");
  OK(RETRACT(f, acc, V(f->t, "\"2.00\"")));
  EQ(f->t, acc, "\"0.63\""); /* 0.625 terminates; HALF_UP */
  acc = V(f->t, "\"10.00\"");
  FAILS(RETRACT(f, acc, V(f->t, "\"3.00\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW",
        "E_ARITH_OVERFLOW: DECIMAL quotient 10.00 / 3.00 does not terminate");
  EQ(f->t, acc, "\"10.00\"");
  FAILS(RETRACT(f, acc, V(f->t, "\"0.00\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "division by zero");
  FAILS(RETRACT(f, acc, V(f->t, "\"0.07\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "does not terminate");
  EQ(f->t, acc, "\"10.00\"");
  acc = V(f->t, "\"-1.25\"");
  OK(RETRACT(f, acc, V(f->t, "\"2.00\"")));
  EQ(f->t, acc, "\"-0.63\"");
  acc = V(f->t, "\"1.00\"");
  OK(RETRACT(f, acc, V(f->t, "\"0.16\""))); /* 6.25 */
  EQ(f->t, acc, "\"6.25\"");
  OK(RETRACT(f, acc, V(f->t, "\"-1024.00\""))); /* 0.006103515625 terminates, rounds to 0.01 */
  EQ(f->t, acc, "\"-0.01\"");
  acc = V(f->t, "\"1.00\"");
  OK(RETRACT(f, acc, V(f->t, "\"5.00\""))); /* 1/5 terminates */
  EQ(f->t, acc, "\"0.20\"");
  OK(RETRACT(f, acc, V(f->t, "\"12.50\""))); /* 0.016 = 2/125 terminates, rounds to 0.02 */
  EQ(f->t, acc, "\"0.02\"");
  OK(RETRACT(f, acc, V(f->t, "\"-0.40\""))); /* -1/20 */
  EQ(f->t, acc, "\"-0.05\"");
  FAILS(RETRACT(f, acc, V(f->t, "\"0.15\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "-0.05 / 0.15 does not terminate");
  acc = V(f->t, "\"3.00\"");
  OK(RETRACT(f, acc, V(f->t, "\"6.00\""))); /* 1/2 after reduction */
  EQ(f->t, acc, "\"0.50\"");
  acc = V(f->t, "\"0.00\"");
  OK(RETRACT(f, acc, V(f->t, "\"3.00\"")));
  EQ(f->t, acc, "\"0.00\"");
  acc = V(f->t, "\"9999.99\"");
  FAILS(RETRACT(f, acc, V(f->t, "\"0.01\"")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "DECIMAL(6,2) overflow: 999999.00");
  acc = VN(f->t);
  OK(RETRACT(f, acc, V(f->t, "\"3.00\"")));
  cr_assert(acc->is_null);
}

Test(agg, product_float_ieee) {
  fx_t *f = FX(WD_AGG_PRODUCT, "DOUBLE"), *g = FX(WD_AGG_PRODUCT, "FLOAT");
  wd_value_t *acc = V(f->t, "1.0");
  OK(RETRACT(f, acc, V(f->t, "0.0")));
  cr_assert(isinf(acc->f), "IEEE division by zero, no error");
  acc = V(f->t, "0.0");
  OK(RETRACT(f, acc, V(f->t, "0.0")));
  cr_assert(isnan(acc->f));
  acc = V(g->t, "0.1");
  OK(ADD(g, acc, V(g->t, "0.1")));
  cr_assert_eq(acc->f, (double)(0.1f * 0.1f));
  OK(RETRACT(g, acc, V(g->t, "3")));
  cr_assert_eq(acc->f, (double)((0.1f * 0.1f) / 3.0f));
}

/* ==== max / min ============================================================================ */

Test(agg, max_min_numbers_and_nulls) {
  fx_t *mx = FX(WD_AGG_MAX, "INT"), *mn = FX(WD_AGG_MIN, "INT");
  wd_value_t *a = VN(mx->t), *b = VN(mn->t);
  ADD_ALL(mx, a, "null", "3", "null", "-1", "7", "7");
  ADD_ALL(mn, b, "null", "3", "null", "-1", "7", "-1");
  EQ(mx->t, a, "7");
  EQ(mn->t, b, "-1");
  fx_t *d = FX(WD_AGG_MIN, "DECIMAL(6,2)");
  wd_value_t *c = VN(d->t);
  ADD_ALL(d, c, "\"10.00\"", "\"9.99\"", "\"-1.50\"", "\"-10.00\"");
  EQ(d->t, c, "\"-10.00\"");
  fx_t *tiny = FX(WD_AGG_MAX, "TINYINT");
  c = VN(tiny->t);
  ADD_ALL(tiny, c, "-128", "127", "-1", "null");
  EQ(tiny->t, c, "127");
}

Test(agg, max_min_double_compare_semantics) {
  fx_t *mx = FX(WD_AGG_MAX, "DOUBLE"), *mn = FX(WD_AGG_MIN, "DOUBLE");
  wd_value_t *a = V(mx->t, "1.0"), *b = V(mn->t, "1.0");
  OK(ADD(mx, a, V(mx->t, "\"NaN\"")));
  cr_assert(isnan(a->f), "NaN sorts after +Infinity (Double.compare)");
  OK(ADD(mx, a, V(mx->t, "\"Infinity\"")));
  cr_assert(isnan(a->f));
  OK(ADD(mn, b, V(mn->t, "\"NaN\"")));
  cr_assert_eq(b->f, 1.0);
  OK(ADD(mn, b, V(mn->t, "\"-Infinity\"")));
  cr_assert(isinf(b->f) && b->f < 0);
  a = V(mx->t, "-0.0");
  OK(ADD(mx, a, V(mx->t, "0.0")));
  cr_assert(!signbit(a->f), "0.0 > -0.0");
  b = V(mn->t, "0.0");
  OK(ADD(mn, b, V(mn->t, "-0.0")));
  cr_assert(signbit(b->f), "-0.0 < 0.0");
}

Test(agg, max_min_strings_utf8_bytes_order) {
  fx_t *mx = FX(WD_AGG_MAX, "STRING"), *mn = FX(WD_AGG_MIN, "STRING");
  wd_value_t *a = VN(mx->t), *b = VN(mn->t);
  ADD_ALL(mx, a, "\"apple\"", "\"Apple\"", "\"äpfel\"", "\"ｚ\"", "\"😀\"", "null");
  ADD_ALL(mn, b, "\"apple\"", "\"Apple\"", "\"äpfel\"", "\"ｚ\"", "\"😀\"", "null");
  EQ(mx->t, a, "\"😀\"");
  EQ(mn->t, b, "\"Apple\"");
  b = V(mn->t, "\"b\"");
  OK(ADD(mn, b, V(mn->t, "\"\"")));
  cr_assert(!b->is_null && b->s.n == 0, "the empty string is a value, smaller than all");
}

Test(agg, max_min_bytes_unsigned_and_temporal) {
  fx_t *mx = FX(WD_AGG_MAX, "BYTES"), *mn = FX(WD_AGG_MIN, "BYTES");
  wd_value_t *a = VN(mx->t), *b = VN(mn->t);
  ADD_ALL(mx, a, "\"fw==\"", "\"gA==\"", "\"AP8=\"", "\"AA==\"");
  ADD_ALL(mn, b, "\"fw==\"", "\"gA==\"", "\"AP8=\"", "\"AA==\"");
  EQ(mx->t, a, "\"gA==\""); /* 0x80 > 0x7f */
  EQ(mn->t, b, "\"AA==\""); /* 00 < 00 ff */
  OK(ADD(mn, b, V(mn->t, "\"\"")));
  cr_assert(!b->is_null && b->s.n == 0);
  fx_t *ts = FX(WD_AGG_MAX, "TIMESTAMP(6)");
  a = VN(ts->t);
  ADD_ALL(ts, a, "\"2024-05-01 10:00:00.000002\"", "\"2024-05-01 10:00:00.000010\"", "\"1969-12-31 23:59:59.999999\"");
  EQ(ts->t, a, "\"2024-05-01 10:00:00.000010\"");
  fx_t *dt = FX(WD_AGG_MIN, "DATE");
  a = VN(dt->t);
  ADD_ALL(dt, a, "\"2024-02-29\"", "\"1969-12-31\"", "null", "\"1970-01-01\"");
  EQ(dt->t, a, "\"1969-12-31\"");
  fx_t *bo = FX(WD_AGG_MAX, "BOOLEAN");
  a = VN(bo->t);
  ADD_ALL(bo, a, "false", "true", "false");
  EQ(bo->t, a, "true");
}

Test(agg, max_min_no_retract) {
  fx_t *mx = FX(WD_AGG_MAX, "INT");
  wd_value_t *a = V(mx->t, "3");
  mx->spec.column = "c";
  FAILS(RETRACT(mx, a, V(mx->t, "3")), WD_ERR_RECORD, "E_AGG_NO_RETRACT",
        "E_AGG_NO_RETRACT: aggregate function 'max' (field c) does not support retraction");
  EQ(mx->t, a, "3");
  FAILS(RETRACT(mx, a, VN(mx->t)), WD_ERR_RECORD, "E_AGG_NO_RETRACT", "'fields.c.ignore-retract'='true'");
  mx->spec.ignore_retract = true;
  OK(RETRACT(mx, a, V(mx->t, "3")));
  EQ(mx->t, a, "3");
  static const wd_agg_fn_t no[] = {WD_AGG_MIN,     WD_AGG_FIRST_VALUE, WD_AGG_FIRST_NON_NULL_VALUE,
                                   WD_AGG_LISTAGG, WD_AGG_BOOL_AND,    WD_AGG_BOOL_OR,
                                   WD_AGG_RBM32};
  static const char *const types[] = {"INT", "INT", "INT", "STRING", "BOOLEAN", "BOOLEAN", "BYTES"};
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    fx_t *f = FX(no[i], types[i]);
    f->spec.column = "col_x";
    wd_value_t *acc = VN(f->t);
    FAILS(RETRACT(f, acc, VN(f->t)), WD_ERR_RECORD, "E_AGG_NO_RETRACT", wd_agg_name(no[i]));
    FAILS(RETRACT(f, acc, VN(f->t)), WD_ERR_RECORD, "E_AGG_NO_RETRACT", "'fields.col_x.ignore-retract'='true'");
  }
}

/* ==== last / first ========================================================================= */

Test(agg, last_value_and_last_non_null) {
  fx_t *lv = FX(WD_AGG_LAST_VALUE, "STRING"), *ln = FX(WD_AGG_LAST_NON_NULL_VALUE, "STRING");
  wd_value_t *a = VN(lv->t), *b = VN(ln->t);
  ADD_ALL(lv, a, "\"x\"", "\"y\"", "null");
  ADD_ALL(ln, b, "\"x\"", "\"y\"", "null");
  cr_assert(a->is_null, "last_value takes NULL too");
  EQ(ln->t, b, "\"y\"");
  a = V(lv->t, "\"x\"");
  OK(RETRACT(lv, a, V(lv->t, "\"other\"")));
  cr_assert(a->is_null, "last_value retraction sets NULL");
  OK(RETRACT(ln, b, VN(ln->t)));
  EQ(ln->t, b, "\"y\""); /* retracting NULL keeps the field */
  OK(RETRACT(ln, b, V(ln->t, "\"q\"")));
  cr_assert(b->is_null);
  /* older-sequence records (spec §7.4) */
  a = V(lv->t, "\"stored\"");
  OK(OLDER(lv, a, V(lv->t, "\"older\"")));
  EQ(lv->t, a, "\"stored\"");
  b = V(ln->t, "\"stored\"");
  OK(OLDER(ln, b, V(ln->t, "\"older\"")));
  EQ(ln->t, b, "\"stored\"");
  b = VN(ln->t);
  OK(OLDER(ln, b, V(ln->t, "\"older\"")));
  EQ(ln->t, b, "\"older\"");
  fx_t *arr = FX(WD_AGG_LAST_VALUE, "ARRAY<MAP<STRING,INT>>");
  a = VN(arr->t);
  OK(ADD(arr, a, V(arr->t, "[{\"a\":1},null,{}]")));
  EQ(arr->t, a, "[{\"a\":1},null,{}]");
}

Test(agg, first_value_seen_flag) {
  fx_t *f = FX(WD_AGG_FIRST_VALUE, "INT");
  wd_value_t *a = VN(f->t);
  f->seen = false;
  OK(ADD(f, a, VN(f->t)));
  cr_assert(f->seen, "a NULL first value counts");
  OK(ADD(f, a, V(f->t, "1")));
  cr_assert(a->is_null, "a stored NULL is final for first_value");
  /* next merge */
  f->seen = false;
  a = V(f->t, "5");
  OK(ADD(f, a, V(f->t, "2")));
  EQ(f->t, a, "2"); /* first in this merge: the stored row's value comes first in practice */
  OK(ADD(f, a, V(f->t, "3")));
  EQ(f->t, a, "2");
  /* older record after the stored value (spec §7.4): replaces, even with NULL */
  OK(OLDER(f, a, V(f->t, "0")));
  EQ(f->t, a, "0");
  OK(OLDER(f, a, VN(f->t)));
  cr_assert(a->is_null);
  /* a NULL seen pointer means "not seen" */
  a = V(f->t, "9");
  OK(wd_agg_add(&f->spec, a, V(f->t, "4"), NULL));
  EQ(f->t, a, "4");
}

Test(agg, first_non_null_value_seen_flag) {
  fx_t *f = FX(WD_AGG_FIRST_NON_NULL_VALUE, "STRING");
  wd_value_t *a = VN(f->t);
  f->seen = false;
  OK(ADD(f, a, VN(f->t)));
  cr_assert(!f->seen, "NULL does not count as first");
  ADD_ALL(f, a, "\"1\"", "\"2\"", "null");
  EQ(f->t, a, "\"1\"");
  cr_assert(f->seen);
  /* older record, stored non-NULL and seen: replaced even by NULL (Paimon quirk) */
  OK(OLDER(f, a, V(f->t, "\"0\"")));
  EQ(f->t, a, "\"0\"");
  OK(OLDER(f, a, VN(f->t)));
  cr_assert(a->is_null);
  /* stored NULL, nothing seen: the older value is taken */
  f->seen = false;
  a = VN(f->t);
  OK(OLDER(f, a, V(f->t, "\"old\"")));
  EQ(f->t, a, "\"old\"");
}

/* ==== listagg ============================================================================== */

Test(agg, listagg_default_delimiter_and_nulls) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "\"first line\"", "null", "\"second line\"");
  EQ(f->t, a, "\"first line,second line\"");
  a = VN(f->t);
  ADD_ALL(f, a, "null", "null");
  cr_assert(a->is_null);
}

Test(agg, listagg_blank_inputs_java_whitespace) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "\"\"", "\" \"", "\"user1\"", "\"\"", "\"\\t\"", "\"\\r\\n\"", "\" \\t\\n\\r\\n \\u3000 \"",
          "\"user2\"", "\"\\u3000\"", "\"\\u2000\"", "\"\\u1680\"", "\"\\u001c\\u001f\\u000b\\f\"",
          "\"\\u2028\\u2029\\u205f\\u200a\"");
  EQ(f->t, a, "\"user1,user2\"");
  /* not Java whitespace: no-break spaces are text */
  OK(ADD(f, a, V(f->t, "\"\\u00a0\"")));
  OK(ADD(f, a, V(f->t, "\"\\u2007\"")));
  OK(ADD(f, a, V(f->t, "\"\\u202f\"")));
  EQ(f->t, a, "\"user1,user2,\\u00a0,\\u2007,\\u202f\"");
  /* a blank accumulator is replaced by the input, no leading delimiter */
  a = V(f->t, "\" \\t \"");
  OK(ADD(f, a, V(f->t, "\"x\"")));
  EQ(f->t, a, "\"x\"");
  /* a lone blank input normalises to NULL (spec §1.2) */
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "\"   \"")));
  cr_assert(a->is_null);
  /* invalid UTF-8 is not whitespace */
  a = VN(f->t);
  OK(ADD(f, a, VB(f->t, "\xc0\xa0", 2)));
  cr_assert(!a->is_null && a->s.n == 2);
}

Test(agg, listagg_custom_and_empty_delimiter) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  f->spec.delimiter = strdup("-");
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "\"1\"", "\"2\"", "\"3\"");
  EQ(f->t, a, "\"1-2-3\"");
  free(f->spec.delimiter);
  f->spec.delimiter = strdup(" || ");
  a = VN(f->t);
  ADD_ALL(f, a, "\"a\"", "\"b\"");
  EQ(f->t, a, "\"a || b\"");
  free(f->spec.delimiter);
  f->spec.delimiter = strdup("");
  a = VN(f->t);
  ADD_ALL(f, a, "\"a\"", "\"b\"");
  EQ(f->t, a, "\"ab\"");
  /* distinct with an empty delimiter splits on a single space and joins with nothing */
  f->spec.distinct = true;
  a = V(f->t, "\"a b\"");
  OK(ADD(f, a, V(f->t, "\"b c  d\"")));
  EQ(f->t, a, "\"a bcd\"");
}

Test(agg, listagg_distinct_tokens) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  f->spec.distinct = true;
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "\"user1\"", "\"user2\"", "\"user1\"", "\"user3\"");
  EQ(f->t, a, "\"user1,user2,user3\"");
  a = VN(f->t);
  ADD_ALL(f, a, "\"user1\"", "\"user2\"", "\"user1,user3\"");
  EQ(f->t, a, "\"user1,user2,user3\"");
  a = VN(f->t);
  ADD_ALL(f, a, "\"\"", "\"user2\"", "\"user1,user3\"");
  EQ(f->t, a, "\"user2,user1,user3\"");
  a = V(f->t, "\"abc,def,asd\"");
  OK(ADD(f, a, V(f->t, "\"ab,xy\""))); /* token equality, never substring */
  EQ(f->t, a, "\"abc,def,asd,ab,xy\"");
  a = V(f->t, "\"a\"");
  OK(ADD(f, a, V(f->t, "\"b,,b, ,c,a\""))); /* blank tokens skipped, repeats inside the input too */
  EQ(f->t, a, "\"a,b,c\"");
  OK(ADD(f, a, V(f->t, "\"c,b\"")));
  EQ(f->t, a, "\"a,b,c\""); /* nothing new: unchanged */
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "\"x,x\""))); /* the first input is taken verbatim */
  EQ(f->t, a, "\"x,x\"");
  f->spec.delimiter = strdup("::");
  a = V(f->t, "\"a::b\"");
  OK(ADD(f, a, V(f->t, "\"b::c:::d\"")));
  EQ(f->t, a, "\"a::b::c:::d\""); /* tokens of b::c:::d are b, c, :d */
}

Test(agg, listagg_one_megabyte_strings) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  const size_t n = 1u << 20;
  char *big = malloc(n);
  cr_assert_not_null(big);
  memset(big, 'a', n);
  wd_value_t *a = VB(f->t, big, n);
  memset(big, 'b', n);
  OK(ADD(f, a, VB(f->t, big, n)));
  cr_assert_eq(a->s.n, 2 * n + 1);
  cr_assert_eq(a->s.p[n - 1], 'a');
  cr_assert_eq(a->s.p[n], ',');
  cr_assert_eq(a->s.p[n + 1], 'b');
  cr_assert_eq(a->s.p[2 * n], 'b');
  cr_assert_eq(a->s.p[2 * n + 1], 0);
  /* distinct over ~200k short tokens */
  f->spec.distinct = true;
  size_t len = 0;
  for (size_t i = 0; i < 150000; i++) len += (size_t)snprintf(big + len, n - len, i ? ",%zu" : "%zu", i % 100000);
  a = V(f->t, "\"0\"");
  OK(ADD(f, a, VB(f->t, big, len)));
  /* "0" plus the 99999 other distinct tokens */
  size_t commas = 0;
  for (size_t i = 0; i < a->s.n; i++) commas += a->s.p[i] == ',';
  cr_assert_eq(commas, 99999);
  cr_assert(strncmp(a->s.p, "0,1,2,3,", 8) == 0);
  free(big);
}

Test(agg, listagg_older_prepends) {
  fx_t *f = FX(WD_AGG_LISTAGG, "STRING");
  wd_value_t *a = V(f->t, "\"b\"");
  OK(OLDER(f, a, V(f->t, "\"a\"")));
  OK(ADD(f, a, V(f->t, "\"c\"")));
  EQ(f->t, a, "\"a,b,c\"");
  OK(OLDER(f, a, V(f->t, "\" \"")));
  EQ(f->t, a, "\"a,b,c\"");
  a = VN(f->t);
  OK(OLDER(f, a, V(f->t, "\"z\"")));
  EQ(f->t, a, "\"z\"");
  f->spec.distinct = true;
  a = V(f->t, "\"x,y\"");
  OK(OLDER(f, a, V(f->t, "\"y,z\"")));
  EQ(f->t, a, "\"y,z,x\""); /* stored tokens not in the older string follow it */
}

/* ==== bool ================================================================================= */

Test(agg, bool_and_or) {
  fx_t *o = FX(WD_AGG_BOOL_OR, "BOOLEAN"), *n = FX(WD_AGG_BOOL_AND, "BOOLEAN");
  wd_value_t *a = VN(o->t), *b = VN(n->t);
  ADD_ALL(o, a, "true", "null", "false");
  ADD_ALL(n, b, "true", "null", "false");
  EQ(o->t, a, "true");
  EQ(n->t, b, "false");
  a = VN(o->t);
  b = VN(n->t);
  ADD_ALL(o, a, "false", "null", "false");
  ADD_ALL(n, b, "true", "null", "true");
  EQ(o->t, a, "false");
  EQ(n->t, b, "true");
  a = VN(o->t);
  ADD_ALL(o, a, "null", "null");
  cr_assert(a->is_null);
  b = V(n->t, "false");
  OK(OLDER(n, b, V(n->t, "true")));
  EQ(n->t, b, "false");
}

/* ==== collect ============================================================================== */

Test(agg, collect_plain) {
  fx_t *f = FX(WD_AGG_COLLECT, "ARRAY<STRING>");
  wd_value_t *a = VN(f->t);
  OK(ADD(f, a, VN(f->t)));
  cr_assert(a->is_null);
  ADD_ALL(f, a, "[\"A\",\"B\"]", "null", "[\"A\",null]", "[]");
  EQ(f->t, a, "[\"A\",\"B\",\"A\",null]");
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[]")));
  EQ(f->t, a, "[]");
  cr_assert(!a->is_null);
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[\"x\",\"x\"]"))); /* a lone side is taken unchanged */
  EQ(f->t, a, "[\"x\",\"x\"]");
}

Test(agg, collect_distinct_first_occurrence_order) {
  fx_t *f = FX(WD_AGG_COLLECT, "ARRAY<STRING>");
  f->spec.distinct = true;
  wd_value_t *a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[\"paimon\",\"paimon\"]")));
  EQ(f->t, a, "[\"paimon\"]");
  a = V(f->t, "[\"A\",\"B\"]");
  OK(ADD(f, a, V(f->t, "[\"A\",\"B\",\"C\"]")));
  EQ(f->t, a, "[\"A\",\"B\",\"C\"]");
  a = V(f->t, "[\"b\",\"a\"]");
  OK(ADD(f, a, V(f->t, "[\"c\",\"a\",\"b\",\"d\",\"c\"]")));
  EQ(f->t, a, "[\"b\",\"a\",\"c\",\"d\"]");
  a = V(f->t, "[null,\"x\",null]");
  OK(ADD(f, a, VN(f->t))); /* distinct also cleans a lone side */
  EQ(f->t, a, "[null,\"x\"]");
  a = V(f->t, "[]");
  OK(ADD(f, a, V(f->t, "[]")));
  EQ(f->t, a, "[]");
  fx_t *r = FX(WD_AGG_COLLECT, "ARRAY<ROW<k INT, v BYTES>>");
  r->spec.distinct = true;
  a = V(r->t, "[{\"k\":1,\"v\":\"AQI=\"}]");
  OK(ADD(r, a, V(r->t, "[{\"k\":1,\"v\":\"AQI=\"},{\"k\":1,\"v\":\"AQM=\"},{\"k\":1,\"v\":null}]")));
  EQ(r->t, a, "[{\"k\":1,\"v\":\"AQI=\"},{\"k\":1,\"v\":\"AQM=\"},{\"k\":1,\"v\":null}]");
  fx_t *b = FX(WD_AGG_COLLECT, "ARRAY<BYTES>");
  b->spec.distinct = true;
  a = V(b->t, "[\"AQI=\",\"\"]");
  OK(ADD(b, a, V(b->t, "[\"AQI=\",\"\",\"Ag==\"]"))); /* BYTES by value (Paimon master) */
  EQ(b->t, a, "[\"AQI=\",\"\",\"Ag==\"]");
}

Test(agg, collect_retract_multiset) {
  fx_t *f = FX(WD_AGG_COLLECT, "ARRAY<INT>");
  wd_value_t *a = V(f->t, "[1,1,2,2,3]");
  OK(RETRACT(f, a, V(f->t, "[1,2,3]")));
  EQ(f->t, a, "[1,2]");
  a = V(f->t, "[3,1,2,1]");
  OK(RETRACT(f, a, V(f->t, "[1]"))); /* the first occurrence goes */
  EQ(f->t, a, "[3,2,1]");
  OK(RETRACT(f, a, V(f->t, "[9,null]")));
  EQ(f->t, a, "[3,2,1]");
  OK(RETRACT(f, a, V(f->t, "[1,2,3,3]")));
  EQ(f->t, a, "[]"); /* empty, not NULL */
  cr_assert(!a->is_null);
  a = V(f->t, "[null,1,null]");
  OK(RETRACT(f, a, V(f->t, "[null]")));
  EQ(f->t, a, "[1,null]");
  OK(RETRACT(f, a, VN(f->t)));
  OK(RETRACT(f, a, V(f->t, "[]")));
  EQ(f->t, a, "[1,null]");
  a = VN(f->t);
  OK(RETRACT(f, a, V(f->t, "[1]")));
  cr_assert(a->is_null);
  fx_t *s = FX(WD_AGG_COLLECT, "ARRAY<STRING>");
  a = V(s->t, "[\"A\",\"B\"]");
  OK(RETRACT(s, a, V(s->t, "[\"A\"]")));
  EQ(s->t, a, "[\"B\"]");
}

Test(agg, collect_older_sequence) {
  fx_t *f = FX(WD_AGG_COLLECT, "ARRAY<INT>");
  wd_value_t *a = V(f->t, "[1,2]");
  OK(OLDER(f, a, V(f->t, "[0]"))); /* spec §7.4 exception: appended */
  EQ(f->t, a, "[1,2,0]");
  f->spec.ignore_retract = true;
  a = V(f->t, "[1,2]");
  OK(OLDER(f, a, V(f->t, "[0]"))); /* with ignore-retract the generic swap: prepended */
  EQ(f->t, a, "[0,1,2]");
}

/* ==== merge_map ============================================================================ */

Test(agg, merge_map_union_input_wins) {
  fx_t *f = FX(WD_AGG_MERGE_MAP, "MAP<INT,STRING>");
  wd_value_t *a = VN(f->t);
  OK(ADD(f, a, VN(f->t)));
  cr_assert(a->is_null);
  ADD_ALL(f, a, "{\"1\":\"A\",\"2\":\"B\"}", "null", "{\"2\":\"b\",\"3\":null}", "{}");
  EQ(f->t, a, "{\"1\":\"A\",\"2\":\"b\",\"3\":null}");
  cr_assert_eq(a->map.n, 3);
  cr_assert_eq(a->map.k[0].i, 1); /* acc order kept, the replaced value in place */
  cr_assert_eq(a->map.k[1].i, 2);
  cr_assert_eq(a->map.k[2].i, 3);
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "{}")));
  EQ(f->t, a, "{}");
  /* older-sequence: the older map is the base, stored entries win */
  a = V(f->t, "{\"1\":\"new\"}");
  OK(OLDER(f, a, V(f->t, "{\"1\":\"old\",\"9\":\"x\"}")));
  EQ(f->t, a, "{\"1\":\"new\",\"9\":\"x\"}");
}

Test(agg, merge_map_retract_removes_keys) {
  fx_t *f = FX(WD_AGG_MERGE_MAP, "MAP<INT,STRING>");
  wd_value_t *a = V(f->t, "{\"1\":\"A\",\"2\":\"B\",\"3\":\"C\"}");
  OK(RETRACT(f, a, V(f->t, "{\"1\":\"A\",\"2\":\"A\"}")));
  EQ(f->t, a, "{\"3\":\"C\"}");
  OK(RETRACT(f, a, V(f->t, "{}")));
  OK(RETRACT(f, a, VN(f->t)));
  EQ(f->t, a, "{\"3\":\"C\"}");
  OK(RETRACT(f, a, V(f->t, "{\"3\":null}")));
  EQ(f->t, a, "{}");
  cr_assert(!a->is_null);
  a = VN(f->t);
  OK(RETRACT(f, a, V(f->t, "{\"1\":\"A\"}")));
  cr_assert(a->is_null);
  fx_t *b = FX(WD_AGG_MERGE_MAP, "MAP<BYTES,INT>");
  a = V(b->t, "{\"AQI=\":1,\"\":2}");
  OK(RETRACT(b, a, V(b->t, "{\"AQI=\":0}"))); /* BYTES keys by value */
  EQ(b->t, a, "{\"\":2}");
}

/* ==== merge_map_with_keytime =============================================================== */

#define KT_TYPE "MAP<STRING,ROW<value STRING, ts STRING>>"

Test(agg, keytime_string_timestamps) {
  fx_t *f = FX(WD_AGG_MERGE_MAP_WITH_KEYTIME, KT_TYPE);
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a,
          "{\"product_name\":{\"value\":\"iPhone\",\"ts\":\"100\"},\"color\":{\"value\":\"Black\",\"ts\":\"100\"}}",
          "{\"product_name\":{\"value\":\"iPad\",\"ts\":\"200\"},\"price\":{\"value\":\"999\",\"ts\":\"200\"}}",
          "{\"color\":{\"value\":\"White\",\"ts\":\"50\"}}");
  EQ(f->t, a,
     "{\"product_name\":{\"value\":\"iPad\",\"ts\":\"200\"},\"color\":{\"value\":\"White\",\"ts\":\"50\"},"
     "\"price\":{\"value\":\"999\",\"ts\":\"200\"}}");
  /* a tie keeps the stored entry */
  OK(ADD(f, a, V(f->t, "{\"price\":{\"value\":\"1\",\"ts\":\"200\"}}")));
  EQ(f->t, a,
     "{\"product_name\":{\"value\":\"iPad\",\"ts\":\"200\"},\"color\":{\"value\":\"White\",\"ts\":\"50\"},"
     "\"price\":{\"value\":\"999\",\"ts\":\"200\"}}");
}

Test(agg, keytime_null_handling) {
  fx_t *f = FX(WD_AGG_MERGE_MAP_WITH_KEYTIME, KT_TYPE);
  wd_value_t *a = VN(f->t);
  /* a NULL accumulator takes the input unchanged, even entries that would be skipped */
  OK(ADD(f, a,
         V(f->t, "{\"a\":{\"value\":\"A\",\"ts\":\"100\"},\"b\":{\"value\":\"B\",\"ts\":\"100\"},\"n\":null,"
                 "\"z\":{\"value\":\"Z\",\"ts\":null}}")));
  EQ(f->t, a,
     "{\"a\":{\"value\":\"A\",\"ts\":\"100\"},\"b\":{\"value\":\"B\",\"ts\":\"100\"},\"n\":null,"
     "\"z\":{\"value\":\"Z\",\"ts\":null}}");
  OK(ADD(f, a,
         V(f->t, "{\"a\":null,\"b\":{\"value\":\"B2\",\"ts\":null},\"c\":{\"value\":\"C\",\"ts\":\"090\"},"
                 "\"n\":{\"value\":\"N\",\"ts\":\"000\"},\"z\":{\"value\":\"Z2\",\"ts\":\"000\"}}")));
  /* a: removed; b: NULL ts skipped; c: new; n, z: stored row / ts NULL, replaced */
  EQ(f->t, a,
     "{\"b\":{\"value\":\"B\",\"ts\":\"100\"},\"n\":{\"value\":\"N\",\"ts\":\"000\"},"
     "\"z\":{\"value\":\"Z2\",\"ts\":\"000\"},\"c\":{\"value\":\"C\",\"ts\":\"090\"}}");
  OK(ADD(f, a, VN(f->t)));
  cr_assert_eq(a->map.n, 4);
  OK(ADD(f, a, V(f->t, "{\"gone\":null}"))); /* removing an absent key is harmless */
  cr_assert_eq(a->map.n, 4);
  OK(ADD(f, a, V(f->t, "{\"b\":null,\"n\":null,\"z\":null,\"c\":null}")));
  EQ(f->t, a, "{}");
  cr_assert(!a->is_null);
}

Test(agg, keytime_utf16_order) {
  fx_t *f = FX(WD_AGG_MERGE_MAP_WITH_KEYTIME, KT_TYPE);
  /* Java compares UTF-16 units: U+1F600 is D83D DE00, below U+FF5A; UTF-8 bytes say the reverse */
  wd_value_t *a = V(f->t, "{\"k\":{\"value\":\"fullwidth\",\"ts\":\"\\uff5a\"}}");
  OK(ADD(f, a, V(f->t, "{\"k\":{\"value\":\"emoji\",\"ts\":\"\\ud83d\\ude00\"}}")));
  EQ(f->t, a, "{\"k\":{\"value\":\"fullwidth\",\"ts\":\"\\uff5a\"}}");
  a = V(f->t, "{\"k\":{\"value\":\"emoji\",\"ts\":\"\\ud83d\\ude00\"}}");
  OK(ADD(f, a, V(f->t, "{\"k\":{\"value\":\"fullwidth\",\"ts\":\"\\uff5a\"}}")));
  EQ(f->t, a, "{\"k\":{\"value\":\"fullwidth\",\"ts\":\"\\uff5a\"}}");
  /* a longer string with an equal prefix is greater; the empty string is smallest */
  a = V(f->t, "{\"k\":{\"value\":\"1\",\"ts\":\"2024\"}}");
  OK(ADD(f, a, V(f->t, "{\"k\":{\"value\":\"2\",\"ts\":\"2024-01\"}}")));
  OK(ADD(f, a, V(f->t, "{\"k\":{\"value\":\"3\",\"ts\":\"\"}}")));
  EQ(f->t, a, "{\"k\":{\"value\":\"2\",\"ts\":\"2024-01\"}}");
  /* ts-field other than the last field */
  fx_t *g = FX(WD_AGG_MERGE_MAP_WITH_KEYTIME, "MAP<INT,ROW<ts STRING, v INT>>");
  g->spec.ts_field = 0;
  a = V(g->t, "{\"1\":{\"ts\":\"b\",\"v\":1}}");
  OK(ADD(g, a, V(g->t, "{\"1\":{\"ts\":\"a\",\"v\":2},\"2\":{\"ts\":\"a\",\"v\":3}}")));
  EQ(g->t, a, "{\"1\":{\"ts\":\"b\",\"v\":1},\"2\":{\"ts\":\"a\",\"v\":3}}");
  FAILS(RETRACT(g, a, VN(g->t)), WD_ERR_RECORD, "E_AGG_NO_RETRACT", "merge_map_with_keytime");
}

/* ==== nested_update ======================================================================== */

#define SUB_TYPE "ARRAY<ROW<daily_id INT, today STRING, product_name STRING, price BIGINT>>"

Test(agg, nested_update_keyed_orders) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, SUB_TYPE);
  set_nested_key(f, "daily_id", "today");
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "null", "[{\"daily_id\":1,\"today\":\"12-20\",\"product_name\":\"Apple\",\"price\":8000}]",
          "[{\"daily_id\":2,\"today\":\"12-20\",\"product_name\":\"Tesla\",\"price\":400000}]",
          "[{\"daily_id\":1,\"today\":\"12-21\",\"product_name\":\"Sangsung\",\"price\":5000}]",
          "[{\"daily_id\":2,\"today\":\"12-20\",\"product_name\":\"Benz\",\"price\":380000}]");
  EQ(f->t, a,
     "[{\"daily_id\":1,\"today\":\"12-20\",\"product_name\":\"Apple\",\"price\":8000},"
     "{\"daily_id\":2,\"today\":\"12-20\",\"product_name\":\"Benz\",\"price\":380000},"
     "{\"daily_id\":1,\"today\":\"12-21\",\"product_name\":\"Sangsung\",\"price\":5000}]");
  /* retraction removes by key, whatever the other fields */
  OK(RETRACT(f, a, V(f->t, "[{\"daily_id\":2,\"today\":\"12-20\",\"product_name\":null,\"price\":null},null]")));
  EQ(f->t, a,
     "[{\"daily_id\":1,\"today\":\"12-20\",\"product_name\":\"Apple\",\"price\":8000},"
     "{\"daily_id\":1,\"today\":\"12-21\",\"product_name\":\"Sangsung\",\"price\":5000}]");
  OK(RETRACT(f, a,
             V(f->t, "[{\"daily_id\":1,\"today\":\"12-20\",\"product_name\":null,\"price\":null},"
                     "{\"daily_id\":1,\"today\":\"12-21\",\"product_name\":null,\"price\":null}]")));
  EQ(f->t, a, "[]");
  a = VN(f->t);
  OK(RETRACT(f, a, V(f->t, "[{\"daily_id\":1,\"today\":\"x\",\"product_name\":null,\"price\":null}]")));
  cr_assert(a->is_null);
}

Test(agg, nested_update_null_elements_dropped) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, SUB_TYPE);
  set_nested_key(f, "daily_id", "today");
  wd_value_t *a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[null]")));
  EQ(f->t, a, "[]");
  OK(ADD(f, a, V(f->t, "[{\"daily_id\":1,\"today\":\"01-01\",\"product_name\":\"Apple\",\"price\":6999},null]")));
  EQ(f->t, a, "[{\"daily_id\":1,\"today\":\"01-01\",\"product_name\":\"Apple\",\"price\":6999}]");
  OK(ADD(f, a, VN(f->t)));
  cr_assert_eq(a->list.n, 1);
  fx_t *g = FX(WD_AGG_NESTED_UPDATE, SUB_TYPE); /* append mode */
  a = VN(g->t);
  OK(ADD(g, a, V(g->t, "[null,null]")));
  EQ(g->t, a, "[]");
}

#define KV_TYPE "ARRAY<ROW<k0 INT, k1 INT, v STRING, seq INT>>"

Test(agg, nested_update_append_and_retract) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, "ARRAY<ROW<k0 INT, k1 INT, v STRING>>");
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "[{\"k0\":0,\"k1\":1,\"v\":\"B\"}]", "[{\"k0\":0,\"k1\":1,\"v\":\"b\"},null]",
          "[{\"k0\":0,\"k1\":1,\"v\":\"B\"}]");
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"B\"},{\"k0\":0,\"k1\":1,\"v\":\"b\"},{\"k0\":0,\"k1\":1,\"v\":\"B\"}]");
  OK(RETRACT(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"B\"},null]"))); /* every equal row goes */
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"b\"}]");
  OK(RETRACT(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"x\"}]")));
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"b\"}]");
  OK(RETRACT(f, a, VN(f->t)));
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"b\"}]");
}

Test(agg, nested_update_count_limit) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, "ARRAY<ROW<k INT, v STRING>>");
  f->spec.count_limit = 3;
  wd_value_t *a = V(f->t, "[{\"k\":1,\"v\":\"a\"},{\"k\":2,\"v\":\"b\"}]");
  OK(ADD(f, a, V(f->t, "[null,{\"k\":3,\"v\":\"c\"},{\"k\":4,\"v\":\"d\"}]")));
  EQ(f->t, a, "[{\"k\":1,\"v\":\"a\"},{\"k\":2,\"v\":\"b\"},{\"k\":3,\"v\":\"c\"}]");
  OK(ADD(f, a, V(f->t, "[{\"k\":5,\"v\":\"e\"}]"))); /* full: unchanged */
  EQ(f->t, a, "[{\"k\":1,\"v\":\"a\"},{\"k\":2,\"v\":\"b\"},{\"k\":3,\"v\":\"c\"}]");
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[{\"k\":1,\"v\":\"a\"},{\"k\":2,\"v\":\"b\"},{\"k\":3,\"v\":\"c\"},{\"k\":4,\"v\":\"d\"}]")));
  cr_assert_eq(a->list.n, 3);
  /* keyed: replacements always apply, new keys only below the limit */
  fx_t *g = FX(WD_AGG_NESTED_UPDATE, "ARRAY<ROW<k INT, v STRING>>");
  set_nested_key(g, "k", NULL);
  g->spec.count_limit = 2;
  a = V(g->t, "[{\"k\":1,\"v\":\"a\"}]");
  OK(ADD(g, a, V(g->t, "[{\"k\":1,\"v\":\"A\"},{\"k\":2,\"v\":\"b\"},{\"k\":3,\"v\":\"c\"},{\"k\":2,\"v\":\"B\"}]")));
  EQ(g->t, a, "[{\"k\":1,\"v\":\"A\"},{\"k\":2,\"v\":\"B\"}]");
  g->spec.count_limit = 1; /* stored rows are never cut */
  OK(ADD(g, a, V(g->t, "[{\"k\":3,\"v\":\"c\"},{\"k\":1,\"v\":\"x\"}]")));
  EQ(g->t, a, "[{\"k\":1,\"v\":\"x\"},{\"k\":2,\"v\":\"B\"}]");
}

Test(agg, nested_update_sequence_field) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, KV_TYPE);
  set_nested_key(f, "k0", "k1");
  f->spec.nested_seq = calloc(1, sizeof(int));
  f->spec.nested_seq[0] = field_of(f, "seq");
  f->spec.n_nested_seq = 1;
  wd_value_t *a = V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":5}]");
  OK(ADD(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"old\",\"seq\":4}]")));
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":5}]");
  OK(ADD(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"nullseq\",\"seq\":null}]")));
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":5}]");
  OK(ADD(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"same\",\"seq\":5}]"))); /* >= replaces */
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"same\",\"seq\":5}]");
  OK(ADD(f, a, V(f->t, "[{\"k0\":0,\"k1\":1,\"v\":\"new\",\"seq\":6},{\"k0\":0,\"k1\":1,\"v\":\"newer\",\"seq\":7}]")));
  EQ(f->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"newer\",\"seq\":7}]");
}

Test(agg, nested_update_key_null_strategies) {
  const char *row_null = "[{\"k0\":0,\"k1\":null,\"v\":\"B\",\"seq\":2}]";
  fx_t *m = FX(WD_AGG_NESTED_UPDATE, KV_TYPE);
  set_nested_key(m, "k0", "k1");
  wd_value_t *a = V(m->t, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1},{\"k0\":0,\"k1\":null,\"v\":\"X\",\"seq\":1}]");
  OK(ADD(m, a, V(m->t, row_null))); /* merge: NULL parts are equal, so X is replaced */
  EQ(m->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1},{\"k0\":0,\"k1\":null,\"v\":\"B\",\"seq\":2}]");

  fx_t *ig = FX(WD_AGG_NESTED_UPDATE, KV_TYPE);
  set_nested_key(ig, "k0", "k1");
  ig->spec.nested_null = WD_NESTED_NULL_IGNORE;
  a = V(ig->t, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1},{\"k0\":0,\"k1\":null,\"v\":\"X\",\"seq\":1}]");
  OK(ADD(ig, a, V(ig->t, row_null))); /* ignore: dropped from acc and input */
  EQ(ig->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1}]");

  fx_t *er = FX(WD_AGG_NESTED_UPDATE, KV_TYPE);
  set_nested_key(er, "k0", "k1");
  er->spec.nested_null = WD_NESTED_NULL_ERROR;
  a = V(er->t, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1}]");
  FAILS(ADD(er, a, V(er->t, row_null)), WD_ERR_RECORD, "E_NESTED_KEY_NULL",
        "E_NESTED_KEY_NULL: nested key contains null");
  EQ(er->t, a, "[{\"k0\":0,\"k1\":1,\"v\":\"A\",\"seq\":1}]");
}

Test(agg, nested_update_older_sequence) {
  fx_t *f = FX(WD_AGG_NESTED_UPDATE, "ARRAY<ROW<k INT, v STRING>>");
  set_nested_key(f, "k", NULL);
  wd_value_t *a = V(f->t, "[{\"k\":1,\"v\":\"new\"}]");
  OK(OLDER(f, a, V(f->t, "[{\"k\":2,\"v\":\"x\"},{\"k\":1,\"v\":\"old\"}]")));
  EQ(f->t, a, "[{\"k\":2,\"v\":\"x\"},{\"k\":1,\"v\":\"new\"}]"); /* older rows first, stored wins */
}

/* ==== nested_partial_update ================================================================ */

Test(agg, nested_partial_update) {
  fx_t *f = FX(WD_AGG_NESTED_PARTIAL_UPDATE, "ARRAY<ROW<k INT, v1 INT, v2 STRING>>");
  set_nested_key(f, "k", NULL);
  wd_value_t *a = VN(f->t);
  ADD_ALL(f, a, "[{\"k\":0,\"v1\":0,\"v2\":null}]", "[{\"k\":0,\"v1\":null,\"v2\":\"A\"}]");
  EQ(f->t, a, "[{\"k\":0,\"v1\":0,\"v2\":\"A\"}]");
  ADD_ALL(f, a, "[{\"k\":0,\"v1\":1,\"v2\":\"B\"}]", "[{\"k\":1,\"v1\":2,\"v2\":\"C\"}]",
          "[{\"k\":null,\"v1\":0,\"v2\":\"D\"}]", "null", "[null]");
  EQ(f->t, a, "[{\"k\":0,\"v1\":1,\"v2\":\"B\"},{\"k\":1,\"v1\":2,\"v2\":\"C\"},{\"k\":null,\"v1\":0,\"v2\":\"D\"}]");
  OK(ADD(f, a, V(f->t, "[{\"k\":null,\"v1\":null,\"v2\":\"E\"},{\"k\":1,\"v1\":null,\"v2\":null}]")));
  EQ(f->t, a, "[{\"k\":0,\"v1\":1,\"v2\":\"B\"},{\"k\":1,\"v1\":2,\"v2\":\"C\"},{\"k\":null,\"v1\":0,\"v2\":\"E\"}]");
  /* rows of one input with the same key merge too */
  a = VN(f->t);
  OK(ADD(f, a,
         V(f->t,
           "[{\"k\":7,\"v1\":1,\"v2\":null},{\"k\":8,\"v1\":null,\"v2\":null},{\"k\":7,\"v1\":null,\"v2\":\"z\"}]")));
  EQ(f->t, a, "[{\"k\":7,\"v1\":1,\"v2\":\"z\"},{\"k\":8,\"v1\":null,\"v2\":null}]");
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "[]")));
  EQ(f->t, a, "[]");
  FAILS(RETRACT(f, a, V(f->t, "[]")), WD_ERR_RECORD, "E_AGG_NO_RETRACT", "nested_partial_update");
}

Test(agg, nested_partial_update_null_strategies) {
  const char *in = "[{\"k\":null,\"v1\":1,\"v2\":\"x\"},{\"k\":2,\"v1\":2,\"v2\":null}]";
  fx_t *ig = FX(WD_AGG_NESTED_PARTIAL_UPDATE, "ARRAY<ROW<k INT, v1 INT, v2 STRING>>");
  set_nested_key(ig, "k", NULL);
  ig->spec.nested_null = WD_NESTED_NULL_IGNORE;
  wd_value_t *a = V(ig->t, "[{\"k\":null,\"v1\":0,\"v2\":\"old\"}]");
  OK(ADD(ig, a, V(ig->t, in)));
  EQ(ig->t, a, "[{\"k\":2,\"v1\":2,\"v2\":null}]");
  fx_t *er = FX(WD_AGG_NESTED_PARTIAL_UPDATE, "ARRAY<ROW<k INT, v1 INT, v2 STRING>>");
  set_nested_key(er, "k", NULL);
  er->spec.nested_null = WD_NESTED_NULL_ERROR;
  a = V(er->t, "[{\"k\":1,\"v1\":0,\"v2\":\"old\"}]");
  FAILS(ADD(er, a, V(er->t, in)), WD_ERR_RECORD, "E_NESTED_KEY_NULL", NULL);
  EQ(er->t, a, "[{\"k\":1,\"v1\":0,\"v2\":\"old\"}]");
  /* older-sequence: older rows first, stored non-NULL fields win */
  fx_t *f = FX(WD_AGG_NESTED_PARTIAL_UPDATE, "ARRAY<ROW<k INT, v1 INT, v2 STRING>>");
  set_nested_key(f, "k", NULL);
  a = V(f->t, "[{\"k\":1,\"v1\":5,\"v2\":null}]");
  OK(OLDER(f, a, V(f->t, "[{\"k\":1,\"v1\":4,\"v2\":\"old\"}]")));
  EQ(f->t, a, "[{\"k\":1,\"v1\":5,\"v2\":\"old\"}]");
}

/* ==== rbm32 ================================================================================ */

static wd_value_t *bitmap_of(const wd_type_t *t, const uint32_t *vals, size_t n) {
  roaring_bitmap_t *r = n ? roaring_bitmap_of_ptr(n, vals) : roaring_bitmap_create();
  size_t len = roaring_bitmap_portable_size_in_bytes(r);
  char *buf = malloc(len);
  cr_assert_not_null(buf);
  roaring_bitmap_portable_serialize(r, buf);
  wd_value_t *v = VB(t, buf, len);
  free(buf);
  roaring_bitmap_free(r);
  return v;
}

/* Asserts v deserializes (CRoaring) to exactly the given cardinality and range of values. */
static void bitmap_is(const wd_value_t *v, uint64_t card, uint32_t lo, uint32_t hi) {
  roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe(v->s.p, v->s.n);
  cr_assert_not_null(r, "result deserializes");
  cr_assert_eq(roaring_bitmap_portable_deserialize_size(v->s.p, v->s.n), v->s.n, "no trailing bytes");
  cr_assert_eq(roaring_bitmap_get_cardinality(r), card);
  if (card) {
    cr_assert_eq(roaring_bitmap_minimum(r), lo);
    cr_assert_eq(roaring_bitmap_maximum(r), hi);
  }
  roaring_bitmap_free(r);
}

Test(agg, rbm32_union_exact_bytes) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  wd_value_t *a = V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAEA\""); /* {1} */
  OK(ADD(f, a, V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAIA\""))); /* {2} */
  cr_assert_eq(a->s.n, 20);
  EQ(f->t, a, "\"OjAAAAEAAAAAAAEAEAAAAAEAAgA=\"");
  OK(ADD(f, a, V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAIA\""))); /* {1,2} | {2} */
  EQ(f->t, a, "\"OjAAAAEAAAAAAAEAEAAAAAEAAgA=\"");
  a = V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAIA\"");
  OK(ADD(f, a, V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAMA\"")));
  EQ(f->t, a, "\"OjAAAAEAAAAAAAEAEAAAAAIAAwA=\"");
}

Test(agg, rbm32_single_side_unchanged) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  static const char junk[] = "not a bitmap";
  wd_value_t *a = VN(f->t);
  OK(ADD(f, a, VB(f->t, junk, sizeof(junk) - 1))); /* returned byte for byte, never parsed */
  cr_assert_eq(a->s.n, sizeof(junk) - 1);
  cr_assert(memcmp(a->s.p, junk, a->s.n) == 0);
  OK(ADD(f, a, VN(f->t)));
  cr_assert(memcmp(a->s.p, junk, a->s.n) == 0);
  FAILS(ADD(f, a, V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAIA\"")), WD_ERR_RECORD, "E_TYPE", "roaring bitmap");
  cr_assert(memcmp(a->s.p, junk, a->s.n) == 0, "unchanged after the error");
  a = V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAEA\"");
  FAILS(ADD(f, a, V(f->t, "\"OjAAAAEAAAAAAAAAEAAA\"")), WD_ERR_RECORD, "E_TYPE", "input"); /* truncated */
  FAILS(ADD(f, a, V(f->t, "\"\"")), WD_ERR_RECORD, "E_TYPE", "input");
  EQ(f->t, a, "\"OjAAAAEAAAAAAAAAEAAAAAEA\"");
  a = VN(f->t);
  OK(ADD(f, a, V(f->t, "\"\"")));
  cr_assert(!a->is_null && a->s.n == 0, "empty bytes are a value");
  a = VN(f->t);
  OK(ADD(f, a, VN(f->t)));
  cr_assert(a->is_null);
}

/* Bytes that CRoaring's portable_deserialize_safe takes although a container contradicts its
 * header are refused with E_TYPE before any bitmap operation (a run container without runs
 * crashed the union: found by the simulate fuzz harness). */
Test(agg, rbm32_containers_that_contradict_their_header_are_refused) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  /* cookie 12347, one run container (key 0, cardinality 1) with 0 runs */
  static const uint8_t no_runs[] = {0x3b, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x02, 0};
  /* cookie 12347, one run container of cardinality 1 whose one run [3, 3+1] holds 2 values */
  static const uint8_t run_card[] = {0x3b, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0x01, 0, 0x03, 0, 0x01, 0};
  /* cookie 12346, one array container of 2 values not ascending (5, 3) */
  static const uint8_t unsorted[] = {0x3a, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0, 0x01, 0, 0x10, 0, 0, 0, 0x05, 0, 0x03, 0};
  /* cookie 12346, one bitset container claiming 5000 values, all bits clear */
  uint8_t bits[16 + 8192] = {0x3a, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0, 0x87, 0x13, 0x10, 0, 0, 0};
  const uint8_t *bad[] = {no_runs, run_card, unsorted, bits};
  const size_t len[] = {sizeof(no_runs), sizeof(run_card), sizeof(unsorted), sizeof(bits)};
  for (size_t i = 0; i < 4; i++) {
    wd_value_t *a = V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAEA\""); /* {1} */
    FAILS(ADD(f, a, VB(f->t, (const char *)bad[i], len[i])), WD_ERR_RECORD, "E_TYPE", "input");
    EQ(f->t, a, "\"OjAAAAEAAAAAAAAAEAAAAAEA\"");
    wd_value_t *b = VB(f->t, (const char *)bad[i], len[i]);
    FAILS(ADD(f, b, V(f->t, "\"OjAAAAEAAAAAAAAAEAAAAAEA\"")), WD_ERR_RECORD, "E_TYPE", "stored");
  }
  /* the same layouts made consistent are taken: {3} as one run, {3, 5} as an array */
  static const uint8_t one_run[] = {0x3b, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0x01, 0, 0x03, 0, 0, 0};
  static const uint8_t sorted[] = {0x3a, 0x30, 0, 0, 0x01, 0, 0, 0, 0, 0, 0x01, 0, 0x10, 0, 0, 0, 0x03, 0, 0x05, 0};
  wd_value_t *a = VB(f->t, (const char *)one_run, sizeof(one_run));
  OK(ADD(f, a, VB(f->t, (const char *)sorted, sizeof(sorted))));
  bitmap_is(a, 2, 3, 5);
}

Test(agg, rbm32_run_optimisation_strictly_smaller) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  /* {1,2} | {3}: one run (6 bytes) is not strictly smaller than the array (6 bytes): array */
  uint32_t v12[] = {1, 2}, v3[] = {3};
  wd_value_t *a = bitmap_of(f->t, v12, 2);
  OK(ADD(f, a, bitmap_of(f->t, v3, 1)));
  EQ(f->t, a, "\"OjAAAAEAAAAAAAIAEAAAAAEAAgADAA==\"");
  bitmap_is(a, 3, 1, 3);
  /* {1..10} | {11..20}: one run (6 bytes) < 40 bytes of array: run container, no offsets */
  uint32_t lo[10], hi[10];
  for (uint32_t i = 0; i < 10; i++) lo[i] = 1 + i, hi[i] = 11 + i;
  a = bitmap_of(f->t, lo, 10);
  OK(ADD(f, a, bitmap_of(f->t, hi, 10)));
  static const uint8_t want[] = {0x3B, 0x30, 0, 0, 0x01, 0, 0, 19, 0, 1, 0, 1, 0, 19, 0};
  cr_assert_eq(a->s.n, sizeof(want));
  cr_assert(memcmp(a->s.p, want, sizeof(want)) == 0);
  bitmap_is(a, 20, 1, 20);
}

Test(agg, rbm32_bitset_and_many_containers) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  /* 5000 even numbers: too many for an array, 5000 runs: a bitset container (8192 bytes) */
  uint32_t *ev = malloc(2500 * sizeof(uint32_t)), *od = malloc(2500 * sizeof(uint32_t));
  cr_assert(ev && od);
  for (uint32_t i = 0; i < 2500; i++) ev[i] = 4 * i, od[i] = 4 * i + 2;
  wd_value_t *a = bitmap_of(f->t, ev, 2500);
  OK(ADD(f, a, bitmap_of(f->t, od, 2500)));
  cr_assert_eq(a->s.n, 8 + 4 + 4 + 8192);
  bitmap_is(a, 5000, 0, 9998);
  free(ev);
  free(od);
  /* five containers of one run each: the run header carries offsets from 4 containers on; the
   * bytes equal CRoaring's own run-optimised serialization, where both rules agree */
  uint32_t x[50], y[50];
  for (uint32_t c = 0; c < 5; c++)
    for (uint32_t i = 0; i < 10; i++) x[c * 10 + i] = c * 65536 + i, y[c * 10 + i] = c * 65536 + 10 + i;
  a = bitmap_of(f->t, x, 50);
  OK(ADD(f, a, bitmap_of(f->t, y, 50)));
  roaring_bitmap_t *r = roaring_bitmap_of_ptr(50, x);
  for (uint32_t i = 0; i < 50; i++) roaring_bitmap_add(r, y[i]);
  roaring_bitmap_run_optimize(r);
  size_t len = roaring_bitmap_portable_size_in_bytes(r);
  char *buf = malloc(len);
  roaring_bitmap_portable_serialize(r, buf);
  cr_assert_eq(a->s.n, len);
  cr_assert(memcmp(a->s.p, buf, len) == 0);
  cr_assert_eq(a->s.n, 4 + 1 + 5 * 4 + 5 * 4 + 5 * 6);
  bitmap_is(a, 100, 0, 4 * 65536 + 19);
  free(buf);
  roaring_bitmap_free(r);
}

Test(agg, rbm32_empty_bitmaps) {
  fx_t *f = FX(WD_AGG_RBM32, "BYTES");
  wd_value_t *a = bitmap_of(f->t, NULL, 0);
  OK(ADD(f, a, bitmap_of(f->t, NULL, 0)));
  static const uint8_t want[] = {0x3A, 0x30, 0, 0, 0, 0, 0, 0};
  cr_assert_eq(a->s.n, 8);
  cr_assert(memcmp(a->s.p, want, 8) == 0);
  uint32_t one[] = {70000};
  OK(ADD(f, a, bitmap_of(f->t, one, 1)));
  bitmap_is(a, 1, 70000, 70000);
}

/* ==== misc: empty values, older sum, NONE ================================================== */

Test(agg, empty_strings_and_bytes_are_values) {
  fx_t *lv = FX(WD_AGG_LAST_NON_NULL_VALUE, "BYTES");
  wd_value_t *a = V(lv->t, "\"AQI=\"");
  OK(ADD(lv, a, V(lv->t, "\"\"")));
  cr_assert(!a->is_null && a->s.n == 0);
  fx_t *c = FX(WD_AGG_COLLECT, "ARRAY<STRING>");
  c->spec.distinct = true;
  a = VN(c->t);
  OK(ADD(c, a, V(c->t, "[\"\",\"\",null,\"\"]")));
  EQ(c->t, a, "[\"\",null]");
}

Test(agg, older_sequence_order_free_functions) {
  fx_t *s = FX(WD_AGG_SUM, "INT");
  wd_value_t *a = V(s->t, "5");
  OK(OLDER(s, a, V(s->t, "3")));
  EQ(s->t, a, "8");
  OK(OLDER(s, a, VN(s->t)));
  EQ(s->t, a, "8");
  a = VN(s->t);
  OK(OLDER(s, a, V(s->t, "2")));
  EQ(s->t, a, "2");
  fx_t *m = FX(WD_AGG_MAX, "INT");
  a = V(m->t, "5");
  OK(OLDER(m, a, V(m->t, "9")));
  EQ(m->t, a, "9");
  fx_t *t = FX(WD_AGG_SUM, "TINYINT");
  a = V(t->t, "100");
  FAILS(OLDER(t, a, V(t->t, "100")), WD_ERR_RECORD, "E_ARITH_OVERFLOW", "TINYINT overflow");
  EQ(t->t, a, "100");
}

Test(agg, none_keeps_input) {
  fx_t *f = FX(WD_AGG_NONE, "INT");
  wd_value_t *a = V(f->t, "1");
  OK(ADD(f, a, V(f->t, "2")));
  EQ(f->t, a, "2");
  OK(RETRACT(f, a, V(f->t, "3")));
  EQ(f->t, a, "3");
  cr_assert_str_eq(wd_agg_name(WD_AGG_NONE), "none");
}
