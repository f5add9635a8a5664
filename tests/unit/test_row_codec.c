/*
 * tests/unit/test_row_codec.c — join/row_codec.c: a seeded property test (random schemas of every
 * type, nested, with NULLs, empty and long values: encode -> decode gives an equal row and the same
 * bytes again), every truncation refused, random corruption never crashes, version and flag checks.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/types.h"
#include "join/row_codec.h"

/* ---- a seeded generator ---------------------------------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng_t;

static uint64_t rnd(rng_t *r) { /* xorshift64* */
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * UINT64_C(2685821657736338717);
}
static uint64_t below(rng_t *r, uint64_t n) { return n ? rnd(r) % n : 0; }
static bool chance(rng_t *r, int percent) { return below(r, 100) < (uint64_t)percent; }

static const char *const scalar_types[] = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                                           "DECIMAL", "CHAR(5)", "VARCHAR(20)", "STRING", "BYTES", "DATE", "TIME",
                                           "TIME(3)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
                                           "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(9)"};
#define NSCALAR (sizeof(scalar_types) / sizeof(scalar_types[0]))

/* Appends a random type's text to b (depth limits nesting). */
static void gen_type(rng_t *r, int depth, wd_buf_t *b) {
  uint64_t pick = below(r, depth < 3 ? NSCALAR + 6 : NSCALAR);
  if (pick < NSCALAR) {
    if (strcmp(scalar_types[pick], "DECIMAL") == 0) {
      int p = 1 + (int)below(r, 38);
      wd_buf_printf(b, "DECIMAL(%d,%d)", p, (int)below(r, (uint64_t)p + 1));
    } else {
      wd_buf_printf(b, "%s", scalar_types[pick]);
    }
  } else if (pick < NSCALAR + 2) {
    wd_buf_printf(b, "ARRAY<");
    gen_type(r, depth + 1, b);
    wd_buf_printf(b, ">");
  } else if (pick < NSCALAR + 4) {
    wd_buf_printf(b, "MAP<%s, ", scalar_types[below(r, NSCALAR)]);
    gen_type(r, depth + 1, b);
    wd_buf_printf(b, ">");
  } else {
    int nf = 1 + (int)below(r, 4);
    wd_buf_printf(b, "ROW<");
    for (int i = 0; i < nf; i++) {
      wd_buf_printf(b, "%sf%d ", i ? ", " : "", i);
      gen_type(r, depth + 1, b);
    }
    wd_buf_printf(b, ">");
  }
  if (chance(r, 5)) wd_buf_printf(b, " NOT NULL");
}

static void gen_value(rng_t *r, const wd_type_t *t, wd_value_t *v, bool nullable);

/* Random bytes of random length (sometimes empty, sometimes long). */
static void gen_bytes(rng_t *r, wd_value_t *v, bool text) {
  size_t n = chance(r, 15) ? 0 : (chance(r, 5) ? 1000 + below(r, 5000) : below(r, 30));
  char *p = malloc(n + 1);
  for (size_t i = 0; i < n; i++) p[i] = text ? (char)('a' + below(r, 26)) : (char)below(r, 256);
  cr_assert_eq(wd_value_set_bytes(v, p, n), 0);
  free(p);
}

static const int64_t edge_ints[] = {0, 1, -1, 127, -128, 32767, -32768, 2147483647, -2147483647 - 1};

/* A random non-NULL value of t into v. */
static void gen_nonnull(rng_t *r, const wd_type_t *t, wd_value_t *v) {
  memset(v, 0, sizeof(*v));
  switch (t->id) {
    case WD_BOOLEAN:
      v->b = chance(r, 50);
      break;
    case WD_TINYINT:
    case WD_SMALLINT:
    case WD_INT:
    case WD_BIGINT: {
      int64_t lo = wd_type_int_min(t), hi = wd_type_int_max(t);
      uint64_t k = below(r, 4);
      if (k == 0) v->i = lo;
      else if (k == 1) v->i = hi;
      else if (k == 2) v->i = edge_ints[below(r, 9)];
      else v->i = (int64_t)rnd(r);
      if (v->i < lo || v->i > hi) v->i = lo + (int64_t)(rnd(r) % ((uint64_t)hi - (uint64_t)lo + 1));
      break;
    }
    case WD_FLOAT:
    case WD_DOUBLE: {
      static const double specials[] = {0.0, -0.0, 1.0, -1.5, 1e300, -1e-300, 5e-324, 3.14};
      uint64_t k = below(r, 5);
      if (k == 0) v->f = NAN;
      else if (k == 1) v->f = chance(r, 50) ? INFINITY : -INFINITY;
      else if (k == 2) v->f = specials[below(r, 8)];
      else {
        uint64_t u = rnd(r);
        memcpy(&v->f, &u, sizeof(u));
      }
      if (t->id == WD_FLOAT) v->f = (double)(float)v->f;
      break;
    }
    case WD_DECIMAL: {
      int nd = (int)below(r, (uint64_t)t->precision + 1);
      wd_i128 x = 0;
      for (int i = 0; i < nd; i++) x = x * 10 + (wd_i128)below(r, 10);
      if (chance(r, 10)) x = wd_pow10(t->precision) - 1;
      v->dec = chance(r, 50) ? -x : x;
      break;
    }
    case WD_CHAR:
    case WD_VARCHAR:
    case WD_STRING:
      gen_bytes(r, v, true);
      break;
    case WD_BYTES:
      gen_bytes(r, v, false);
      break;
    case WD_DATE:
      v->i = (int64_t)(int32_t)rnd(r);
      break;
    case WD_TIME:
      v->i = (int64_t)below(r, UINT64_C(86400000000000));
      break;
    case WD_TIMESTAMP:
    case WD_TIMESTAMP_LTZ:
      v->ts.us = chance(r, 20) ? -(int64_t)below(r, UINT64_C(1) << 50) : (int64_t)rnd(r);
      v->ts.ns = t->precision > 6 ? (int32_t)below(r, 1000) : 0;
      break;
    case WD_ARRAY: {
      size_t n = chance(r, 15) ? 0 : below(r, chance(r, 3) ? 300 : 6);
      v->list.v = calloc(n ? n : 1, sizeof(wd_value_t));
      v->list.n = n;
      for (size_t i = 0; i < n; i++) gen_value(r, t->elem, &v->list.v[i], true);
      break;
    }
    case WD_ROW:
      v->list.v = calloc(t->nfields, sizeof(wd_value_t));
      v->list.n = t->nfields;
      for (size_t i = 0; i < t->nfields; i++) gen_value(r, t->fields[i].type, &v->list.v[i], true);
      break;
    case WD_MAP: {
      size_t want = chance(r, 15) ? 0 : below(r, 6);
      v->map.k = calloc(want ? want : 1, sizeof(wd_value_t));
      v->map.v = calloc(want ? want : 1, sizeof(wd_value_t));
      v->map.n = 0;
      for (size_t i = 0; i < want; i++) {
        wd_value_t k;
        gen_nonnull(r, t->elem, &k);
        bool dup = false;
        for (size_t j = 0; j < v->map.n && !dup; j++) dup = wd_value_eq(t->elem, &v->map.k[j], &k);
        if (dup) {
          wd_value_clear(t->elem, &k);
          continue;
        }
        v->map.k[v->map.n] = k;
        gen_value(r, t->val, &v->map.v[v->map.n], true);
        v->map.n++;
      }
      break;
    }
  }
  v->is_null = false;
}

static void gen_value(rng_t *r, const wd_type_t *t, wd_value_t *v, bool nullable) {
  if (nullable && !t->not_null && chance(r, 20)) {
    memset(v, 0, sizeof(*v));
    v->is_null = true;
    return;
  }
  gen_nonnull(r, t, v);
}

/* A random schema of 1..12 columns; pk is c0. */
static wd_schema_t *gen_schema(rng_t *r) {
  size_t n = 1 + below(r, 12);
  wd_buf_t tb[12];
  char names[12][8];
  const char *np[12], *tp[12];
  for (size_t i = 0; i < n; i++) {
    memset(&tb[i], 0, sizeof(tb[i]));
    gen_type(r, 0, &tb[i]);
    snprintf(names[i], sizeof(names[i]), "c%zu", i);
    np[i] = names[i];
    tp[i] = (const char *)tb[i].data;
  }
  const char *pk[] = {"c0"};
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(n, np, tp, 1, pk, &s);
  cr_assert_null(err, "%s", err ? err->message : "");
  for (size_t i = 0; i < n; i++) wd_buf_free(&tb[i]);
  return s;
}

static wd_row_t *gen_row(rng_t *r, const wd_schema_t *s) {
  wd_row_t *row = wd_row_new(s);
  cr_assert_not_null(row);
  row->kind = (wd_row_kind_t)below(r, 4);
  bool all_null = chance(r, 3);
  for (size_t i = 0; i < s->ncols; i++) {
    if (all_null) continue;
    gen_value(r, s->cols[i].type, &row->v[i], true);
  }
  return row;
}

/* Decoding must fail with E_STATE_CORRUPT. */
static void decode_fails(const wd_schema_t *s, const void *p, size_t n, const char *what) {
  wd_row_t *row = (wd_row_t *)1;
  bool tomb = false;
  wd_error_t *err = wd_row_decode(s, p, n, &row, &tomb);
  cr_assert_not_null(err, "%s: decoding should fail", what);
  cr_assert_str_eq(err->id, "E_STATE_CORRUPT", "%s: %s", what, err->message);
  cr_assert_eq(err->cls, WD_ERR_IO);
  cr_assert_null(row);
  wd_error_destroy(err);
}

/* ---- the property test -------------------------------------------------------------- */

Test(row_codec, property_roundtrip, .timeout = 300) {
  const char *env = getenv("WD_CODEC_SEED");
  uint64_t base = env ? strtoull(env, NULL, 10) : 20240501;
  size_t rows = 0, bytes = 0;
  for (uint64_t iter = 0; iter < 250; iter++) {
    rng_t r = {base * 1000003 + iter + 1};
    for (int warm = 0; warm < 4; warm++) rnd(&r);
    wd_schema_t *s = gen_schema(&r);
    for (int k = 0; k < 20; k++) {
      wd_row_t *row = gen_row(&r, s);
      bool tomb = chance(&r, 20);
      uint64_t ms = rnd(&r);
      wd_buf_t b = {0};
      cr_assert_eq(wd_buf_append(&b, "pre", 3), 0); /* encode appends */
      cr_assert_eq(wd_row_encode(s, row, tomb, ms, &b), 0, "seed %llu iter %llu row %d", (unsigned long long)base,
                   (unsigned long long)iter, k);
      cr_assert_eq(memcmp(b.data, "pre", 3), 0);
      const uint8_t *enc = b.data + 3;
      size_t len = b.len - 3;
      cr_assert_eq(enc[0], WD_ROW_CODEC_VERSION);
      cr_assert_eq((enc[1] & WD_ENTRY_FLAG_TOMBSTONE) != 0, tomb);
      if (tomb) {
        uint64_t got = 0;
        for (int i = 0; i < 8; i++) got |= (uint64_t)enc[2 + i] << (8 * i);
        cr_assert_eq(got, ms, "tombstone time little-endian at bytes 2-9");
      }

      wd_row_t *back = NULL;
      bool tomb2 = !tomb;
      wd_error_t *err = wd_row_decode(s, enc, len, &back, &tomb2);
      cr_assert_null(err, "seed %llu iter %llu row %d: %s", (unsigned long long)base, (unsigned long long)iter, k,
                     err ? err->message : "");
      cr_assert_eq(tomb2, tomb);
      cr_assert_eq(back->kind, row->kind);
      cr_assert(wd_row_eq(s, row, back, NULL), "seed %llu iter %llu row %d: decoded row differs",
                (unsigned long long)base, (unsigned long long)iter, k);
      for (size_t c = 0; c < s->ncols; c++)
        cr_assert_eq(wd_value_cmp(s->cols[c].type, &row->v[c], &back->v[c]), 0);

      /* re-encoding gives the same bytes */
      wd_buf_t b2 = {0};
      cr_assert_eq(wd_row_encode(s, back, tomb, ms, &b2), 0);
      cr_assert_eq(b2.len, len);
      cr_assert_eq(memcmp(b2.data, enc, len), 0, "re-encoding differs");

      /* every strict prefix is refused (sampled for long encodings) */
      size_t step = len > 400 ? len / 200 : 1;
      for (size_t cut = 0; cut < len; cut += step) decode_fails(s, enc, cut, "truncated");
      decode_fails(s, enc, len - 1, "truncated by one byte");

      /* a trailing byte is refused */
      cr_assert_eq(wd_buf_putc(&b, 0), 0);
      enc = b.data + 3; /* the buffer may have moved */
      decode_fails(s, enc, len + 1, "trailing byte");

      /* random corruption: never crashes; when it decodes, the row is usable */
      for (int f = 0; f < 4; f++) {
        memcpy(b2.data, enc, len);
        size_t at = below(&r, len);
        b2.data[at] ^= (uint8_t)(1u << below(&r, 8));
        wd_row_t *x = NULL;
        bool tx;
        err = wd_row_decode(s, b2.data, len, &x, &tx);
        if (err) {
          cr_assert_str_eq(err->id, "E_STATE_CORRUPT");
          wd_error_destroy(err);
        } else {
          wd_buf_t b3 = {0};
          cr_assert_eq(wd_row_encode(s, x, tx, 0, &b3), 0);
          wd_buf_free(&b3);
          wd_row_destroy(s, x);
        }
      }

      rows++;
      bytes += len;
      wd_buf_free(&b);
      wd_buf_free(&b2);
      wd_row_destroy(s, row);
      wd_row_destroy(s, back);
    }
    wd_schema_destroy(s);
  }
  cr_log_info("%zu random rows round-tripped (%zu bytes)", rows, bytes);
  cr_assert_eq(rows, 5000);
}

/* ---- fixed cases --------------------------------------------------------------------- */

static wd_schema_t *fixed_schema(void) {
  const char *names[] = {"k", "s", "d", "m"};
  const char *types[] = {"INT", "STRING", "DECIMAL(4,2)", "MAP<STRING,INT>"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(4, names, types, 1, pk, &s));
  return s;
}

Test(row_codec, layout) {
  wd_schema_t *s = fixed_schema();
  wd_row_t *row = wd_row_new(s);
  row->kind = WD_DELETE;
  row->v[0].is_null = false;
  row->v[0].i = -2;
  wd_buf_t b = {0};
  cr_assert_eq(wd_row_encode(s, row, false, 0, &b), 0);
  /* version, flags (kind -D = 3 in bits 2-3), bitmap 0b1110 (s, d, m NULL), zig-zag(-2) = 3 */
  const uint8_t want[] = {1, 3 << 2, 0x0e, 3};
  cr_assert_eq(b.len, sizeof(want));
  cr_assert_eq(memcmp(b.data, want, sizeof(want)), 0);
  wd_buf_reset(&b);
  cr_assert_eq(wd_row_encode(s, row, true, 0x0102030405060708ULL, &b), 0);
  const uint8_t want_t[] = {1, (3 << 2) | 1, 8, 7, 6, 5, 4, 3, 2, 1, 0x0e, 3};
  cr_assert_eq(b.len, sizeof(want_t));
  cr_assert_eq(memcmp(b.data, want_t, sizeof(want_t)), 0);
  wd_row_t *back = NULL;
  bool tomb = false;
  cr_assert_null(wd_row_decode(s, b.data, b.len, &back, &tomb));
  cr_assert(tomb);
  cr_assert_eq(back->kind, WD_DELETE);
  cr_assert(wd_row_eq(s, row, back, NULL));
  wd_row_destroy(s, back);
  wd_buf_free(&b);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}

Test(row_codec, bad_version_and_flags) {
  wd_schema_t *s = fixed_schema();
  wd_row_t *row = wd_row_new(s);
  wd_buf_t b = {0};
  cr_assert_eq(wd_row_encode(s, row, false, 0, &b), 0);
  b.data[0] = 2;
  wd_row_t *back = NULL;
  bool tomb;
  wd_error_t *err = wd_row_decode(s, b.data, b.len, &back, &tomb);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_STATE_CORRUPT");
  cr_assert(strstr(err->message, "version"), "%s", err->message);
  cr_assert_null(back);
  wd_error_destroy(err);
  b.data[0] = 0;
  decode_fails(s, b.data, b.len, "version 0");
  b.data[0] = 1;
  b.data[1] = 0x02;
  decode_fails(s, b.data, b.len, "unknown flag bit 1");
  b.data[1] = 0x10;
  decode_fails(s, b.data, b.len, "unknown flag bit 4");
  b.data[1] = 0;
  b.data[2] = 0x1f; /* bit 4: beyond the 4 columns */
  decode_fails(s, b.data, b.len, "bitmap bit beyond the columns");
  decode_fails(s, "", 0, "empty");
  decode_fails(s, "\x01", 1, "one byte");
  wd_buf_free(&b);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}

Test(row_codec, invalid_values) {
  wd_schema_t *s = fixed_schema();
  /* k = INT from a zig-zag varint beyond INT's range */
  const uint8_t big_int[] = {1, 0, 0x0e, 0x80, 0x80, 0x80, 0x80, 0x20};
  decode_fails(s, big_int, sizeof(big_int), "INT out of range");
  /* d = DECIMAL(4,2) with unscaled 10000 (100.00) */
  uint8_t dec[3 + 16] = {1, 0, 0x0b};
  dec[3] = 0x10;
  dec[4] = 0x27;
  decode_fails(s, dec, sizeof(dec), "DECIMAL beyond precision");
  /* s = STRING with a length beyond the input */
  const uint8_t long_str[] = {1, 0, 0x0d, 0x7f, 'a'};
  decode_fails(s, long_str, sizeof(long_str), "string length beyond the input");
  /* m = MAP with a huge count */
  const uint8_t huge_map[] = {1, 0, 0x07, 0xff, 0xff, 0xff, 0xff, 0x0f};
  decode_fails(s, huge_map, sizeof(huge_map), "huge MAP count");
  /* m = MAP entry with a bad null byte */
  const uint8_t bad_null[] = {1, 0, 0x07, 0x01, 0x01, 'a', 0x07, 0x00};
  decode_fails(s, bad_null, sizeof(bad_null), "null byte 7");
  /* and the good version of that entry decodes */
  const uint8_t good[] = {1, 0, 0x06, 0x00, 0x01, 0x01, 'a', 0x00, 0x0a};
  wd_row_t *row = NULL;
  bool tomb;
  wd_error_t *err = wd_row_decode(s, good, sizeof(good), &row, &tomb);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(row->v[3].map.n, 1);
  cr_assert_str_eq(row->v[3].map.k[0].s.p, "a");
  cr_assert_eq(row->v[3].map.v[0].i, 5);
  cr_assert_eq(row->v[0].i, 0);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}
