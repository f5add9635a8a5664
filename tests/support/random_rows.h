/*
 * tests/support/random_rows.h — a seeded generator of random types, schemas, values and rows
 * (every type, nested, NULLs, edge values, empty and long text) for the property tests of the
 * row codec and the JSON writers. Header-only (static inline); fails the calling Criterion test
 * through cr_assert. Values are owned by the caller (wd_value_clear / wd_row_destroy); schemas
 * likewise (wd_schema_destroy). Included as "../support/random_rows.h" (see shared.h).
 */
#ifndef WD_TEST_RANDOM_ROWS_H
#define WD_TEST_RANDOM_ROWS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/types.h"

typedef struct rng {
  uint64_t s;
} rng_t;

static inline uint64_t rnd(rng_t *r) { /* xorshift64* */
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * UINT64_C(2685821657736338717);
}
static inline uint64_t below(rng_t *r, uint64_t n) { return n ? rnd(r) % n : 0; }
static inline bool chance(rng_t *r, int percent) { return below(r, 100) < (uint64_t)percent; }

static const char *const scalar_types[] = {"BOOLEAN",      "TINYINT",      "SMALLINT",         "INT",
                                           "BIGINT",       "FLOAT",        "DOUBLE",           "DECIMAL",
                                           "CHAR(5)",      "VARCHAR(20)",  "STRING",           "BYTES",
                                           "DATE",         "TIME",         "TIME(3)",          "TIMESTAMP(3)",
                                           "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(9)"};
#define NSCALAR (sizeof(scalar_types) / sizeof(scalar_types[0]))

/* Appends a random type's text to b (depth limits nesting). */
static inline void gen_type(rng_t *r, int depth, wd_buf_t *b) {
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

static inline void gen_value(rng_t *r, const wd_type_t *t, wd_value_t *v, bool nullable);

/* Random bytes of random length (sometimes empty, sometimes long). */
static inline void gen_bytes(rng_t *r, wd_value_t *v, bool text) {
  size_t n = chance(r, 15) ? 0 : (chance(r, 5) ? 1000 + below(r, 5000) : below(r, 30));
  char *p = malloc(n + 1);
  for (size_t i = 0; i < n; i++) p[i] = text ? (char)('a' + below(r, 26)) : (char)below(r, 256);
  cr_assert_eq(wd_value_set_bytes(v, p, n), 0);
  free(p);
}

static const int64_t edge_ints[] = {0, 1, -1, 127, -128, 32767, -32768, 2147483647, -2147483647 - 1};

/* A random non-NULL value of t into v. */
static inline void gen_nonnull(rng_t *r, const wd_type_t *t, wd_value_t *v) {
  memset(v, 0, sizeof(*v));
  switch (t->id) {
  case WD_BOOLEAN: v->b = chance(r, 50); break;
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
  case WD_STRING: gen_bytes(r, v, true); break;
  case WD_BYTES: gen_bytes(r, v, false); break;
  case WD_DATE: v->i = (int64_t)(int32_t)rnd(r); break;
  case WD_TIME: v->i = (int64_t)below(r, UINT64_C(86400000000000)); break;
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

static inline void gen_value(rng_t *r, const wd_type_t *t, wd_value_t *v, bool nullable) {
  if (nullable && !t->not_null && chance(r, 20)) {
    memset(v, 0, sizeof(*v));
    v->is_null = true;
    return;
  }
  gen_nonnull(r, t, v);
}

/* A random schema of 1..12 columns; pk is c0. */
static inline wd_schema_t *gen_schema(rng_t *r) {
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

static inline wd_row_t *gen_row(rng_t *r, const wd_schema_t *s) {
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

#endif
