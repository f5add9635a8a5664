/*
 * tests/unit/test_json_encode.c — the JSON changelog encoders (changelog/encode_json.c) write the
 * same bytes as their previous, plain byte-by-byte version, kept below as the reference (ref_*,
 * a verbatim copy of changelog/encode_json.c before the word-at-a-time string scan and the
 * inline buffer writes, with one rule added since: a FLOAT/DOUBLE -0 is "-0.0"): random rows of every column type (strings with quotes, backslashes,
 * control characters, valid and invalid UTF-8 at every position of long and short texts,
 * NaN/Infinity, decimals, dates, times, timestamps, arrays, maps, rows, NULLs) through
 * wd_changelog_put_row, the key, debezium-json and changelog-json encoders.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"

/* ---- the reference: changelog/encode_json.c as it was ----------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n) (s[0] >= 0x80), or 0. */
static size_t ref_utf8_len(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  size_t len;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

static int ref_changelog_put_string(wd_buf_t *out, const char *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t *s = (const uint8_t *)p;
  if (wd_buf_reserve(out, n + 3)) return -1;
  out->data[out->len++] = '"';
  size_t run = 0; /* start of the pending run of plain bytes */
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      i++;
      continue;
    }
    size_t ulen = 0;
    if (c >= 0x80 && (ulen = ref_utf8_len(s + i, n - i)) != 0) {
      i += ulen;
      continue;
    }
    if (i > run && wd_buf_append(out, s + run, i - run)) return -1;
    char esc[8];
    size_t elen = 2;
    esc[0] = '\\';
    switch (c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    default:
      if (c < 0x20) {
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        elen = 6;
      } else { /* an invalid UTF-8 byte: U+FFFD */
        esc[0] = (char)0xef;
        esc[1] = (char)0xbf;
        esc[2] = (char)0xbd;
        elen = 3;
      }
    }
    if (wd_buf_append(out, esc, elen)) return -1;
    i++;
    run = i;
  }
  if (n > run && wd_buf_append(out, s + run, n - run)) return -1;
  return wd_buf_putc(out, '"');
}

/* Appends a decimal integer (faster than printf on the hot path). */
static int ref_put_i64(wd_buf_t *out, int64_t v) {
  char tmp[24];
  size_t n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[sizeof(tmp) - 1 - n++] = '-';
  return wd_buf_append(out, tmp + sizeof(tmp) - n, n);
}

static int ref_put_lit(wd_buf_t *out, const char *s) { return wd_buf_append(out, s, strlen(s)); }

static int ref_changelog_put_value(wd_buf_t *out, const wd_type_t *t, const wd_value_t *v) {
  if (v->is_null) return ref_put_lit(out, "null");
  switch (t->id) {
  case WD_BOOLEAN: return ref_put_lit(out, v->b ? "true" : "false");
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: return ref_put_i64(out, v->i);
  case WD_FLOAT:
  case WD_DOUBLE:
    if (isnan(v->f)) return ref_put_lit(out, "\"NaN\"");
    if (isinf(v->f)) return ref_put_lit(out, v->f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    if (v->f == 0 && signbit(v->f)) return ref_put_lit(out, "-0.0"); /* the sign kept for JSON readers */
    return wd_value_format(t, v, out);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: return ref_changelog_put_string(out, v->s.p, v->s.n);
  case WD_DECIMAL:
  case WD_BYTES:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    /* canonical texts of these types are plain ASCII without '"' or '\' */
    if (wd_buf_putc(out, '"') || wd_value_format(t, v, out)) return -1;
    return wd_buf_putc(out, '"');
  case WD_ARRAY:
    if (wd_buf_putc(out, '[')) return -1;
    for (size_t i = 0; i < v->list.n; i++) {
      if (i && wd_buf_putc(out, ',')) return -1;
      if (ref_changelog_put_value(out, t->elem, &v->list.v[i])) return -1;
    }
    return wd_buf_putc(out, ']');
  case WD_ROW:
    if (wd_buf_putc(out, '{')) return -1;
    for (size_t i = 0; i < v->list.n && i < t->nfields; i++) {
      if (i && wd_buf_putc(out, ',')) return -1;
      if (ref_changelog_put_string(out, t->fields[i].name, strlen(t->fields[i].name)) || wd_buf_putc(out, ':') ||
          ref_changelog_put_value(out, t->fields[i].type, &v->list.v[i]))
        return -1;
    }
    return wd_buf_putc(out, '}');
  case WD_MAP: {
    wd_buf_t key = {0};
    int rc = wd_buf_putc(out, '{');
    for (size_t i = 0; i < v->map.n && !rc; i++) {
      wd_buf_reset(&key);
      if (i) rc = wd_buf_putc(out, ',');
      if (!rc) rc = wd_value_format(t->elem, &v->map.k[i], &key);
      if (!rc) rc = ref_changelog_put_string(out, key.len ? (const char *)key.data : "", key.len);
      if (!rc) rc = wd_buf_putc(out, ':');
      if (!rc) rc = ref_changelog_put_value(out, t->val, &v->map.v[i]);
    }
    if (!rc) rc = wd_buf_putc(out, '}');
    wd_buf_free(&key);
    return rc;
  }
  }
  return -1;
}

static int ref_changelog_put_row(wd_buf_t *out, const wd_schema_t *schema, const wd_row_t *row) {
  if (wd_buf_putc(out, '{')) return -1;
  for (size_t i = 0; i < schema->ncols; i++) {
    const wd_field_t *c = &schema->cols[i];
    if (i && wd_buf_putc(out, ',')) return -1;
    if (ref_changelog_put_string(out, c->name, strlen(c->name)) || wd_buf_putc(out, ':') ||
        ref_changelog_put_value(out, c->type, &row->v[i]))
      return -1;
  }
  return wd_buf_putc(out, '}');
}

static wd_error_t *ref_changelog_encode_key_json(const wd_schema_t *schema, const wd_row_t *row, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = wd_buf_putc(out, '{');
  for (size_t k = 0; k < schema->npk && !rc; k++) {
    const wd_field_t *c = &schema->cols[schema->pk[k]];
    if (k) rc = wd_buf_putc(out, ',');
    if (!rc) rc = ref_changelog_put_string(out, c->name, strlen(c->name));
    if (!rc) rc = wd_buf_putc(out, ':');
    if (!rc) rc = ref_changelog_put_value(out, c->type, &row->v[schema->pk[k]]);
  }
  if (!rc) rc = wd_buf_putc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

/* ,"ts_ms":N or null */
static int ref_put_ts(wd_buf_t *out, int64_t ts_ms) {
  if (ref_put_lit(out, "\"ts_ms\":")) return -1;
  return ts_ms < 0 ? ref_put_lit(out, "null") : ref_put_i64(out, ts_ms);
}

static wd_error_t *ref_changelog_encode_debezium_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                                      wd_row_kind_t kind, const wd_row_t *before, const wd_row_t *after,
                                                      wd_buf_t *out) {
  const char *op;
  switch (kind) {
  case WD_INSERT:
    op = "c";
    before = NULL;
    if (!after) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: +I without a row");
    break;
  case WD_UPDATE_AFTER:
    op = "u";
    if (!after) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: +U without an after row");
    break;
  case WD_DELETE:
    op = "d";
    after = NULL;
    if (!before) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: -D without a row");
    break;
  default:
    return wd_error_new(WD_ERR_INTERNAL, NONE,
                        "debezium-json: a -U is not a message of its own; pass it as before with its +U");
  }
  size_t mark = out->len;
  int rc = ref_put_lit(out, "{\"before\":");
  if (!rc) rc = before ? ref_changelog_put_row(out, schema, before) : ref_put_lit(out, "null");
  if (!rc) rc = ref_put_lit(out, ",\"after\":");
  if (!rc) rc = after ? ref_changelog_put_row(out, schema, after) : ref_put_lit(out, "null");
  if (!rc) rc = ref_put_lit(out, ",\"op\":\"") || ref_put_lit(out, op) || ref_put_lit(out, "\",");
  if (!rc) rc = ref_put_ts(out, ts_ms);
  if (!rc) rc = ref_put_lit(out, ",\"source\":{\"name\":\"widen\",\"table\":");
  if (!rc) rc = table ? ref_changelog_put_string(out, table, strlen(table)) : ref_put_lit(out, "null");
  if (!rc) rc = ref_put_lit(out, "}}");
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

static wd_error_t *ref_changelog_encode_changelog_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                                       const wd_row_t *row, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = ref_put_lit(out, "{\"op\":\"") || ref_put_lit(out, wd_row_kind_str(row->kind)) || ref_put_lit(out, "\"");
  if (!rc && table) {
    rc = ref_put_lit(out, ",\"table\":");
    if (!rc) rc = ref_changelog_put_string(out, table, strlen(table));
  }
  if (!rc && ts_ms >= 0) {
    rc = wd_buf_putc(out, ',');
    if (!rc) rc = ref_put_ts(out, ts_ms);
  }
  if (!rc) rc = ref_put_lit(out, ",\"row\":");
  if (!rc) rc = ref_changelog_put_row(out, schema, row);
  if (!rc) rc = wd_buf_putc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

/* ---- random rows ------------------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static const char *const COLS[] = {"id",  "b",   "ti", "i",  "big", "f",   "d",       "dec",
                                   "s",   "s2",  "by", "dt", "tm",  "ts3", "ts6",     "ts9",
                                   "ltz", "arr", "m",  "mi", "row", "ch",  "v\u00e9", "q\"b\\s"};
static const char *const TYPES[] = {"BIGINT",
                                    "BOOLEAN",
                                    "TINYINT",
                                    "INT",
                                    "BIGINT",
                                    "FLOAT",
                                    "DOUBLE",
                                    "DECIMAL(12,2)",
                                    "STRING",
                                    "STRING",
                                    "BYTES",
                                    "DATE",
                                    "TIME(3)",
                                    "TIMESTAMP(3)",
                                    "TIMESTAMP(6)",
                                    "TIMESTAMP(9)",
                                    "TIMESTAMP_LTZ(3)",
                                    "ARRAY<STRING>",
                                    "MAP<STRING,INT>",
                                    "MAP<INT,DOUBLE>",
                                    "ROW<a INT, b STRING>",
                                    "CHAR(3)",
                                    "VARCHAR(10)",
                                    "STRING"};
#define NCOLS (sizeof(COLS) / sizeof(COLS[0]))

/* Random text: plain ASCII mostly, with quotes, backslashes, control bytes, 2/3/4-byte UTF-8,
 * broken UTF-8 (lone continuation, truncated sequence, overlong, surrogate) at random places. */
static void rand_text(uint64_t *r, wd_value_t *v) {
  static const char *const PIECES[] = {"\"",
                                       "\\",
                                       "\n",
                                       "\t",
                                       "\x01",
                                       "\x1f",
                                       "\x7f",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "\x80",
                                       "\xc3",
                                       "\xe2\x82",
                                       "\xc0\xaf",
                                       "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80",
                                       "/",
                                       "<",
                                       " "};
  char buf[256];
  size_t n = 0, len = (size_t)(rnd(r) % 40);
  if (rnd(r) % 10 == 0) len = 100 + (size_t)(rnd(r) % 100);
  while (n < len && n < sizeof(buf) - 8) {
    if (rnd(r) % 6 == 0) {
      const char *p = PIECES[rnd(r) % (sizeof(PIECES) / sizeof(*PIECES))];
      size_t pl = strlen(p);
      memcpy(buf + n, p, pl);
      n += pl;
    } else {
      buf[n++] = (char)('a' + rnd(r) % 26);
    }
  }
  if (rnd(r) % 20 == 0 && n) buf[rnd(r) % n] = 0; /* an embedded NUL */
  cr_assert_eq(wd_value_set_bytes(v, buf, n), 0);
  v->is_null = false;
}

static void rand_value(uint64_t *r, const wd_type_t *t, wd_value_t *v, int depth) {
  v->is_null = rnd(r) % 8 == 0;
  if (v->is_null) return;
  switch (t->id) {
  case WD_BOOLEAN: v->b = rnd(r) & 1; break;
  case WD_TINYINT: v->i = (int8_t)rnd(r); break;
  case WD_SMALLINT: v->i = (int16_t)rnd(r); break;
  case WD_INT: v->i = (int32_t)rnd(r); break;
  case WD_BIGINT: v->i = rnd(r) % 4 ? (int64_t)(rnd(r) % 100000) - 500 : (int64_t)rnd(r); break;
  case WD_FLOAT:
  case WD_DOUBLE: {
    static const double D[] = {0.0, -0.0, 1.5, 0.1, 1e300, -2.5e-300, 123456789.125, 1.0 / 3};
    uint64_t k = rnd(r) % 12;
    v->f = k < 8 ? D[k] : k == 8 ? NAN : k == 9 ? INFINITY : k == 10 ? -INFINITY : (double)(int64_t)rnd(r) / 1024;
    if (t->id == WD_FLOAT) v->f = (float)v->f;
    break;
  }
  case WD_DECIMAL: v->dec = (wd_i128)((int64_t)(rnd(r) % 200000000000ULL) - 100000000000LL); break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: rand_text(r, v); break;
  case WD_BYTES: {
    uint8_t b[40];
    size_t n = (size_t)(rnd(r) % sizeof(b));
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rnd(r);
    cr_assert_eq(wd_value_set_bytes(v, b, n), 0);
    v->is_null = false;
    break;
  }
  case WD_DATE: v->i = (int64_t)(rnd(r) % 200000) - 100000; break;
  case WD_TIME: v->i = (int64_t)(rnd(r) % 86400000000000ULL) / 1000000 * 1000000; break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    int64_t q = t->precision <= 3 ? 1000 : 1;
    v->ts.us = ((int64_t)(rnd(r) % 8000000000000000ULL) - 4000000000000000LL) / q * q;
    v->ts.ns = t->precision > 6 ? (int32_t)(rnd(r) % 1000) : 0;
    break;
  }
  case WD_ARRAY: {
    size_t n = depth > 2 ? 0 : (size_t)(rnd(r) % 4);
    v->list.v = calloc(n ? n : 1, sizeof(wd_value_t));
    v->list.n = n;
    for (size_t i = 0; i < n; i++) rand_value(r, t->elem, &v->list.v[i], depth + 1);
    break;
  }
  case WD_MAP: {
    size_t n = depth > 2 ? 0 : (size_t)(rnd(r) % 4);
    v->map.k = calloc(n ? n : 1, sizeof(wd_value_t));
    v->map.v = calloc(n ? n : 1, sizeof(wd_value_t));
    v->map.n = n;
    for (size_t i = 0; i < n; i++) {
      rand_value(r, t->elem, &v->map.k[i], depth + 1);
      rand_value(r, t->val, &v->map.v[i], depth + 1);
    }
    break;
  }
  case WD_ROW:
    v->list.v = calloc(t->nfields ? t->nfields : 1, sizeof(wd_value_t));
    v->list.n = t->nfields;
    for (size_t i = 0; i < t->nfields; i++) rand_value(r, t->fields[i].type, &v->list.v[i], depth + 1);
    break;
  }
}

static void same(const wd_buf_t *a, const wd_buf_t *b, const char *what, int n) {
  cr_assert_eq(a->len, b->len, "%s %d: %zu vs %zu bytes\n new %.*s\n ref %.*s", what, n, a->len, b->len, (int)a->len,
               (const char *)a->data, (int)b->len, (const char *)b->data);
  cr_assert(a->len == 0 || memcmp(a->data, b->data, a->len) == 0, "%s %d:\n new %.*s\n ref %.*s", what, n, (int)a->len,
            (const char *)a->data, (int)b->len, (const char *)b->data);
  cr_assert(a->len == 0 || a->data[a->len] == 0, "%s %d: not NUL-terminated", what, n);
}

Test(json_encode, random_rows_encode_to_the_same_bytes_as_the_reference) {
  wd_schema_t *schema = NULL;
  const char *pk[] = {"id", "s2"};
  wd_error_t *err = wd_schema_new(NCOLS, COLS, TYPES, 2, pk, &schema);
  cr_assert_null(err, "%s", err ? err->message : "");
  uint64_t r = 0x2545f4914f6cdd1dULL;
  wd_buf_t a = {0}, b = {0};
  size_t escapes = 0;
  for (int n = 0; n < 20000; n++) {
    wd_row_t *row = wd_row_new(schema), *row2 = wd_row_new(schema);
    cr_assert(row && row2);
    for (size_t c = 0; c < NCOLS; c++) {
      rand_value(&r, schema->cols[c].type, &row->v[c], 0);
      rand_value(&r, schema->cols[c].type, &row2->v[c], 0);
    }
    row->kind = (wd_row_kind_t)(rnd(&r) % 4);
    const char *table = rnd(&r) % 4 ? "orders_wide" : rnd(&r) % 2 ? NULL : "t\"\xc3\xa9";
    int64_t ts = rnd(&r) % 3 ? (int64_t)(rnd(&r) % 2000000000000ULL) : -1;
    /* the row alone, appended after existing content (out is appended to, not reset) */
    wd_buf_reset(&a);
    wd_buf_reset(&b);
    if (n % 3 == 0) {
      cr_assert_eq(wd_buf_append(&a, "xy", 2), 0);
      cr_assert_eq(wd_buf_append(&b, "xy", 2), 0);
    }
    cr_assert_eq(wd_changelog_put_row(&a, schema, row), 0);
    cr_assert_eq(ref_changelog_put_row(&b, schema, row), 0);
    same(&a, &b, "row", n);
    if (memchr(a.data, '\\', a.len)) escapes++;
    wd_buf_reset(&a);
    wd_buf_reset(&b);
    cr_assert_null(wd_changelog_encode_key_json(schema, row, &a));
    cr_assert_null(ref_changelog_encode_key_json(schema, row, &b));
    same(&a, &b, "key", n);
    wd_buf_reset(&a);
    wd_buf_reset(&b);
    cr_assert_null(wd_changelog_encode_changelog_json(schema, table, ts, row, &a));
    cr_assert_null(ref_changelog_encode_changelog_json(schema, table, ts, row, &b));
    same(&a, &b, "changelog-json", n);
    static const wd_row_kind_t K[] = {WD_INSERT, WD_UPDATE_AFTER, WD_DELETE};
    wd_row_kind_t kind = K[rnd(&r) % 3];
    const wd_row_t *before = kind == WD_INSERT ? NULL : row2, *after = kind == WD_DELETE ? NULL : row;
    if (kind == WD_UPDATE_AFTER && rnd(&r) % 2) before = NULL;
    if (kind == WD_DELETE) before = row;
    wd_buf_reset(&a);
    wd_buf_reset(&b);
    cr_assert_null(wd_changelog_encode_debezium_json(schema, table, ts, kind, before, after, &a));
    cr_assert_null(ref_changelog_encode_debezium_json(schema, table, ts, kind, before, after, &b));
    same(&a, &b, "debezium-json", n);
    wd_row_destroy(schema, row);
    wd_row_destroy(schema, row2);
  }
  cr_expect_gt(escapes, 10000, "%zu rows with escapes", escapes);
  wd_buf_free(&a);
  wd_buf_free(&b);
  wd_schema_destroy(schema);
}

/* Every string of up to 3 bytes from an alphabet of the interesting bytes, at every offset of a
 * 17-byte plain text (so the special bytes fall at every position of the 8-byte words). */
Test(json_encode, special_bytes_at_every_position_encode_as_the_reference) {
  static const uint8_t AB[] = {'a',  '"',  '\\', 0x00, 0x01, 0x1f, 0x20, 0x7f, 0x80, 0xbf, 0xc2, 0xc3,
                               0xa9, 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xf0, 0x9f, 0x98, 0xf4, 0x90, 0xff};
  const size_t na = sizeof(AB);
  wd_buf_t a = {0}, b = {0};
  uint8_t text[24];
  int n = 0;
  for (size_t x = 0; x < na; x++)
    for (size_t y = 0; y < na; y++)
      for (size_t z = 0; z < na; z += 3)
        for (size_t off = 0; off < 15; off += 2) {
          memset(text, 'p', sizeof(text));
          text[off] = AB[x];
          text[off + 1] = AB[y];
          text[off + 2] = AB[z];
          size_t len = 17 + (size_t)(n % 3);
          wd_buf_reset(&a);
          wd_buf_reset(&b);
          cr_assert_eq(wd_changelog_put_string(&a, (const char *)text, len), 0);
          cr_assert_eq(ref_changelog_put_string(&b, (const char *)text, len), 0);
          same(&a, &b, "string", n++);
        }
  wd_buf_free(&a);
  wd_buf_free(&b);
}
