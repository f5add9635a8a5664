/*
 * tests/unit/test_changelog.c — the changelog output formats (changelog/changelog.h): exact
 * encodings, encode/decode round trips of every scalar type (NULLs, NaN/Infinity, extremes,
 * unicode), the tail decoder, the pairing of -U/+U rows, and the changelog's JSON value writer
 * agreeing with common/json.h's (wd_value_to_json) on random values of every type.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"
#include "common/json.h"
#include "common/types.h"
#include "../support/random_rows.h"

static wd_schema_t *schema_make(size_t n, const char *const *names, const char *const *types, size_t npk,
                                const char *const *pk) {
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(n, names, types, npk, pk, &s);
  cr_assert_null(err, "schema: %s", err ? err->message : "");
  return s;
}

static void set_i(wd_row_t *r, int c, int64_t v) {
  r->v[c].is_null = false;
  r->v[c].i = v;
}
static void set_b(wd_row_t *r, int c, bool v) {
  r->v[c].is_null = false;
  r->v[c].b = v;
}
static void set_f(wd_row_t *r, int c, double v) {
  r->v[c].is_null = false;
  r->v[c].f = v;
}
static void set_dec(wd_row_t *r, int c, wd_i128 v) {
  r->v[c].is_null = false;
  r->v[c].dec = v;
}
static void set_ts(wd_row_t *r, int c, int64_t us, int32_t ns) {
  r->v[c].is_null = false;
  r->v[c].ts.us = us;
  r->v[c].ts.ns = ns;
}
static void set_s(wd_row_t *r, int c, const char *p, size_t n) {
  cr_assert_eq(wd_value_set_bytes(&r->v[c], p, n), 0);
  r->v[c].is_null = false;
}
static void set_json(const wd_schema_t *s, wd_row_t *r, int c, const char *json) {
  json_error_t jerr;
  json_t *j = json_loads(json, JSON_DECODE_ANY, &jerr);
  cr_assert_not_null(j, "%s", jerr.text);
  wd_error_t *err = wd_value_from_json(s->cols[c].type, j, &r->v[c]);
  cr_assert_null(err, "%s", err ? err->message : "");
  json_decref(j);
}

static const char *buf_str(wd_buf_t *b) {
  wd_buf_append(b, "", 0);
  return (const char *)b->data;
}

/* ---- exact encodings ---------------------------------------------------------------------- */

static wd_schema_t *orders_schema(void) {
  static const char *const names[] = {"order_id", "amount", "note", "paid"};
  static const char *const types[] = {"BIGINT NOT NULL", "DECIMAL(10,2)", "STRING", "BOOLEAN"};
  static const char *const pk[] = {"order_id"};
  return schema_make(4, names, types, 1, pk);
}

static wd_row_t *order_row(const wd_schema_t *s, wd_row_kind_t kind, int64_t id, wd_i128 amount, const char *note) {
  wd_row_t *r = wd_row_new(s);
  r->kind = kind;
  set_i(r, 0, id);
  set_dec(r, 1, amount);
  if (note) set_s(r, 2, note, strlen(note));
  return r;
}

Test(encode, key_and_debezium_json) {
  wd_schema_t *s = orders_schema();
  wd_row_t *b = order_row(s, WD_UPDATE_BEFORE, 5, 1230, "old");
  wd_row_t *a = order_row(s, WD_UPDATE_AFTER, 5, -5, NULL);
  set_b(a, 3, true);
  wd_buf_t out = {0};
  cr_assert_null(wd_changelog_encode_key_json(s, a, &out));
  cr_expect_str_eq(buf_str(&out), "{\"order_id\":5}");
  wd_buf_reset(&out);
  cr_assert_null(wd_changelog_encode_debezium_json(s, "orders", 1700000000123, WD_INSERT, NULL, a, &out));
  cr_expect_str_eq(buf_str(&out),
                   "{\"before\":null,\"after\":{\"order_id\":5,\"amount\":\"-0.05\",\"note\":null,\"paid\":true},"
                   "\"op\":\"c\",\"ts_ms\":1700000000123,\"source\":{\"name\":\"widen\",\"table\":\"orders\"}}");
  wd_buf_reset(&out);
  cr_assert_null(wd_changelog_encode_debezium_json(s, "orders", 7, WD_UPDATE_AFTER, b, a, &out));
  cr_expect_str_eq(buf_str(&out), "{\"before\":{\"order_id\":5,\"amount\":\"12.30\",\"note\":\"old\",\"paid\":null},"
                                  "\"after\":{\"order_id\":5,\"amount\":\"-0.05\",\"note\":null,\"paid\":true},"
                                  "\"op\":\"u\",\"ts_ms\":7,\"source\":{\"name\":\"widen\",\"table\":\"orders\"}}");
  wd_buf_reset(&out);
  cr_assert_null(wd_changelog_encode_debezium_json(s, NULL, -1, WD_DELETE, b, NULL, &out));
  cr_expect_str_eq(buf_str(&out),
                   "{\"before\":{\"order_id\":5,\"amount\":\"12.30\",\"note\":\"old\",\"paid\":null},\"after\":null,"
                   "\"op\":\"d\",\"ts_ms\":null,\"source\":{\"name\":\"widen\",\"table\":null}}");
  /* misuse: a lone -U, missing rows; out unchanged */
  size_t len = out.len;
  wd_error_t *err = wd_changelog_encode_debezium_json(s, NULL, 0, WD_UPDATE_BEFORE, b, NULL, &out);
  cr_expect_eq(err->cls, WD_ERR_INTERNAL);
  wd_error_destroy(err);
  err = wd_changelog_encode_debezium_json(s, NULL, 0, WD_INSERT, NULL, NULL, &out);
  cr_expect_eq(err->cls, WD_ERR_INTERNAL);
  wd_error_destroy(err);
  err = wd_changelog_encode_debezium_json(s, NULL, 0, WD_DELETE, NULL, a, &out);
  cr_expect_eq(err->cls, WD_ERR_INTERNAL);
  wd_error_destroy(err);
  cr_expect_eq(out.len, len);
  wd_buf_free(&out);
  wd_row_destroy(s, a);
  wd_row_destroy(s, b);
  wd_schema_destroy(s);
}

Test(encode, changelog_json) {
  wd_schema_t *s = orders_schema();
  wd_row_t *r = order_row(s, WD_DELETE, -9, 100, "x");
  wd_buf_t out = {0};
  cr_assert_null(wd_changelog_encode_changelog_json(s, "orders", 12, r, &out));
  cr_expect_str_eq(buf_str(&out), "{\"op\":\"-D\",\"table\":\"orders\",\"ts_ms\":12,\"row\":{\"order_id\":-9,"
                                  "\"amount\":\"1.00\",\"note\":\"x\",\"paid\":null}}");
  wd_buf_reset(&out);
  r->kind = WD_UPDATE_BEFORE;
  cr_assert_null(wd_changelog_encode_changelog_json(s, NULL, -1, r, &out));
  cr_expect_str_eq(buf_str(&out),
                   "{\"op\":\"-U\",\"row\":{\"order_id\":-9,\"amount\":\"1.00\",\"note\":\"x\",\"paid\":null}}");
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

Test(encode, composite_key_and_escaping) {
  static const char *const names[] = {"k\"1", "k2", "v"};
  static const char *const types[] = {"STRING", "DATE", "INT"};
  static const char *const pk[] = {"k2", "k\"1"};
  wd_schema_t *s = schema_make(3, names, types, 2, pk);
  wd_row_t *r = wd_row_new(s);
  set_s(r, 0, "a\"b\\c\n\x01\x7f\xc3\xa9\xf0\x9f\x98\x80\xff\xc3", 16);
  set_i(r, 1, -1);
  wd_buf_t out = {0};
  cr_assert_null(wd_changelog_encode_key_json(s, r, &out));
  /* control characters escaped, DEL and valid UTF-8 kept, invalid bytes -> U+FFFD */
  cr_expect_str_eq(buf_str(&out),
                   "{\"k2\":\"1969-12-31\",\"k\\\"1\":\"a\\\"b\\\\c\\n\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80"
                   "\xef\xbf\xbd\xef\xbf\xbd\"}");
  json_error_t jerr;
  json_t *j = json_loadb((const char *)out.data, out.len, 0, &jerr);
  cr_assert_not_null(j, "not JSON: %s", jerr.text);
  json_decref(j);
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

Test(encode, special_floats_and_nested) {
  static const char *const names[] = {"id", "f", "d", "a", "m", "r", "t", "ts9", "ltz", "b"};
  static const char *const types[] = {
      "INT",     "FLOAT",        "DOUBLE",           "ARRAY<DOUBLE>", "MAP<INT, STRING>", "ROW<x INT, y ARRAY<STRING>>",
      "TIME(3)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(6)", "BYTES"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = schema_make(10, names, types, 1, pk);
  wd_row_t *r = wd_row_new(s);
  set_i(r, 0, 1);
  set_f(r, 1, NAN);
  set_f(r, 2, -INFINITY);
  set_json(s, r, 3, "[1.5, null, \"Infinity\"]");
  set_json(s, r, 4, "{\"2\": \"two\", \"-1\": null}");
  set_json(s, r, 5, "{\"x\": 3, \"y\": [\"p\", null]}");
  set_i(r, 6, (int64_t)((10 * 3600 + 5 * 60 + 7) * 1000 + 89) * 1000000);
  set_ts(r, 7, -1, 999);
  set_ts(r, 8, 1577872800123456, 0);
  set_s(r, 9, "\x00\xff\x10", 3);
  wd_buf_t out = {0};
  cr_assert_eq(wd_changelog_put_row(&out, s, r), 0);
  cr_expect_str_eq(buf_str(&out), "{\"id\":1,\"f\":\"NaN\",\"d\":\"-Infinity\",\"a\":[1.5,null,\"Infinity\"],"
                                  "\"m\":{\"2\":\"two\",\"-1\":null},\"r\":{\"x\":3,\"y\":[\"p\",null]},"
                                  "\"t\":\"10:05:07.089\",\"ts9\":\"1969-12-31 23:59:59.999999999\","
                                  "\"ltz\":\"2020-01-01 10:00:00.123456\",\"b\":\"AP8Q\"}");
  wd_buf_reset(&out);
  set_f(r, 1, (double)5.17f);
  set_f(r, 2, 0.1 + 0.2);
  wd_value_t *f = &r->v[1];
  cr_assert_eq(wd_changelog_put_value(&out, s->cols[1].type, f), 0);
  cr_assert_eq(wd_buf_putc(&out, ' '), 0);
  cr_assert_eq(wd_changelog_put_value(&out, s->cols[2].type, &r->v[2]), 0);
  cr_expect_str_eq(buf_str(&out), "5.17 0.30000000000000004");
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

/* A FLOAT or DOUBLE -0 keeps its sign through both JSON formats (written "-0.0": "-0" reads back
 * as the integer 0); +0 stays "0". */
Test(round_trip, negative_zero_keeps_its_sign) {
  static const char *const names[] = {"id", "f", "d", "p"};
  static const char *const types[] = {"INT", "FLOAT", "DOUBLE", "DOUBLE"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = schema_make(4, names, types, 1, pk);
  wd_row_t *r = wd_row_new(s);
  r->kind = WD_INSERT;
  set_i(r, 0, 1);
  set_f(r, 1, -0.0);
  set_f(r, 2, -0.0);
  set_f(r, 3, 0.0);
  wd_buf_t out = {0};
  for (int fmt = 0; fmt < 2; fmt++) {
    wd_buf_reset(&out);
    wd_changelog_format_t f = fmt ? WD_CHANGELOG_DEBEZIUM_JSON : WD_CHANGELOG_JSON;
    if (fmt) cr_assert_null(wd_changelog_encode_debezium_json(s, "t", 5, WD_INSERT, NULL, r, &out));
    else cr_assert_null(wd_changelog_encode_changelog_json(s, "t", 5, r, &out));
    const char *j = buf_str(&out);
    cr_expect(strstr(j, "\"d\":-0.0") && strstr(j, "\"f\":-0.0") && strstr(j, "\"p\":0"), "%s", j);
    wd_row_t *rows[2] = {NULL, NULL};
    size_t n = 0;
    wd_error_t *err = wd_changelog_decode_rows(f, s, out.data, out.len, rows, &n);
    cr_assert_null(err, "%s", err ? err->message : "");
    cr_assert_eq(n, 1);
    cr_expect(rows[0]->v[1].f == 0 && signbit(rows[0]->v[1].f), "FLOAT -0 read back as %g in %s", rows[0]->v[1].f, j);
    cr_expect(rows[0]->v[2].f == 0 && signbit(rows[0]->v[2].f), "DOUBLE -0 read back as %g in %s", rows[0]->v[2].f, j);
    cr_expect(rows[0]->v[3].f == 0 && !signbit(rows[0]->v[3].f), "+0 read back as -0 in %s", j);
    cr_expect(wd_row_eq(s, rows[0], r, NULL), "the row differs after the round trip: %s", j);
    wd_row_destroy(s, rows[0]);
  }
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

/* ---- round trips of every scalar type ---------------------------------------------------------- */

static const char *const all_names[] = {"id",   "bo",  "ti",  "si",   "i",    "bi",  "f",   "d",   "dec",
                                        "dec0", "ch",  "vc",  "s",    "by",   "dt",  "tm0", "tm3", "ts0",
                                        "ts3",  "ts6", "ts9", "ltz3", "ltz6", "arr", "map", "row"};
static const char *const all_types[] = {"BIGINT NOT NULL",
                                        "BOOLEAN",
                                        "TINYINT",
                                        "SMALLINT",
                                        "INT",
                                        "BIGINT",
                                        "FLOAT",
                                        "DOUBLE",
                                        "DECIMAL(38,10)",
                                        "DECIMAL(5,0)",
                                        "CHAR(3)",
                                        "VARCHAR(10)",
                                        "STRING",
                                        "BYTES",
                                        "DATE",
                                        "TIME",
                                        "TIME(3)",
                                        "TIMESTAMP(0)",
                                        "TIMESTAMP(3)",
                                        "TIMESTAMP(6)",
                                        "TIMESTAMP(9)",
                                        "TIMESTAMP_LTZ(3)",
                                        "TIMESTAMP_LTZ(6)",
                                        "ARRAY<INT>",
                                        "MAP<STRING, DOUBLE>",
                                        "ROW<a INT, b STRING>"};
#define NALL (sizeof(all_names) / sizeof(all_names[0]))

static wd_schema_t *all_schema(void) {
  static const char *const pk[] = {"id"};
  cr_assert_eq(NALL, sizeof(all_types) / sizeof(all_types[0]));
  return schema_make(NALL, all_names, all_types, 1, pk);
}

/* Row 0: ordinary values; row 1: all NULL but the key; row 2: extremes and specials. */
static wd_row_t *all_row(const wd_schema_t *s, int which, wd_row_kind_t kind) {
  wd_row_t *r = wd_row_new(s);
  r->kind = kind;
  set_i(r, 0, which == 2 ? INT64_MIN : 100 + which);
  if (which == 1) return r;
  bool x = which == 2;
  set_b(r, 1, !x);
  set_i(r, 2, x ? -128 : 7);
  set_i(r, 3, x ? 32767 : -300);
  set_i(r, 4, x ? INT32_MIN : 123456);
  set_i(r, 5, x ? INT64_MAX : -9876543210);
  set_f(r, 6, x ? (double)-3.4028235e38f : (double)5.17f);
  set_f(r, 7, x ? NAN : 0.1 + 0.2);
  wd_i128 big = 1;
  for (int i = 0; i < 38; i++) big *= 10;
  set_dec(r, 8, x ? -(big - 1) : (wd_i128)123456789 * 10000000000 + 1); /* 123456789.0000000001 */
  set_dec(r, 9, x ? -99999 : 0);
  set_s(r, 10, x ? "\xc3\xa9\"\\" : "abc", x ? 4 : 3);
  set_s(r, 11, x ? "" : "line\nnext", x ? 0 : 9);
  const char *uni = "\xe2\x80\xa8 \xf0\x9f\x98\x80 \x01\x1f \t tab";
  set_s(r, 12, x ? uni : "plain", x ? strlen(uni) : 5);
  set_s(r, 13, x ? "\x00\xff\x00" : "hi", x ? 3 : 2);
  set_i(r, 14, x ? -719162 /* 0001-01-01 */ : 19439);
  set_i(r, 15, x ? (int64_t)86399 * 1000000000 : 0);
  set_i(r, 16, x ? (int64_t)86399999 * 1000000 : (int64_t)36803123 * 1000000);
  set_ts(r, 17, x ? -62135596800000000 /* 0001-01-01 */ : 1679581805000000, 0);
  set_ts(r, 18, x ? -1000 : 1679581805123000, 0);
  set_ts(r, 19, x ? 253402300799999999 /* 9999-12-31 23:59:59.999999 */ : 1679581805123456, 0);
  set_ts(r, 20, x ? -1 : 1679581805123456, x ? 1 : 789);
  set_ts(r, 21, x ? 0 : 1706167086275000, 0);
  set_ts(r, 22, x ? -86400000000 : 1706167086275123, 0);
  set_json(s, r, 23, x ? "[]" : "[1, null, -3]");
  set_json(s, r, 24, x ? "{\"\": null, \"k\\\"\": \"-Infinity\"}" : "{\"a\": 1.5}");
  set_json(s, r, 25, x ? "{\"a\": null, \"b\": \"\\u00e9\"}" : "{\"a\": 1, \"b\": \"z\"}");
  return r;
}

static void round_trip(wd_changelog_format_t fmt) {
  wd_schema_t *s = all_schema();
  wd_buf_t out = {0};
  for (int which = 0; which < 3; which++) {
    wd_row_kind_t kinds[] = {WD_INSERT, WD_UPDATE_BEFORE, WD_UPDATE_AFTER, WD_DELETE};
    for (size_t k = 0; k < 4; k++) {
      wd_row_t *r = all_row(s, which, kinds[k]);
      wd_row_t *before = all_row(s, (which + 1) % 3, WD_UPDATE_BEFORE);
      wd_buf_reset(&out);
      size_t want = 1;
      if (fmt == WD_CHANGELOG_JSON) {
        cr_assert_null(wd_changelog_encode_changelog_json(s, "t", 5, r, &out));
      } else if (kinds[k] == WD_INSERT) {
        cr_assert_null(wd_changelog_encode_debezium_json(s, "t", 5, WD_INSERT, NULL, r, &out));
      } else if (kinds[k] == WD_DELETE) {
        cr_assert_null(wd_changelog_encode_debezium_json(s, "t", 5, WD_DELETE, r, NULL, &out));
      } else if (kinds[k] == WD_UPDATE_AFTER) {
        cr_assert_null(wd_changelog_encode_debezium_json(s, "t", 5, WD_UPDATE_AFTER, before, r, &out));
        want = 2;
      } else {
        wd_row_destroy(s, r);
        wd_row_destroy(s, before);
        continue; /* a -U is not a debezium-json message of its own */
      }
      wd_row_t *rows[2];
      size_t n;
      wd_error_t *err = wd_changelog_decode_rows(fmt, s, out.data, out.len, rows, &n);
      cr_assert_null(err, "row %d kind %zu: %s\n%.*s", which, k, err ? err->message : "", (int)out.len, out.data);
      cr_assert_eq(n, want);
      const wd_row_t *got = rows[n - 1];
      cr_expect_eq(got->kind, kinds[k], "row %d: kind %d", which, got->kind);
      cr_expect(wd_row_eq(s, got, r, NULL), "row %d kind %zu differs after the round trip:\n%.*s", which, k,
                (int)out.len, out.data);
      for (size_t c = 0; c < s->ncols; c++)
        cr_expect(wd_value_eq(s->cols[c].type, &got->v[c], &r->v[c]), "row %d column %s", which, s->cols[c].name);
      if (n == 2) {
        cr_expect_eq(rows[0]->kind, WD_UPDATE_BEFORE);
        cr_expect(wd_row_eq(s, rows[0], before, NULL), "before differs");
      }
      for (size_t i = 0; i < n; i++) wd_row_destroy(s, rows[i]);
      wd_row_destroy(s, r);
      wd_row_destroy(s, before);
    }
  }
  wd_buf_free(&out);
  wd_schema_destroy(s);
}

Test(round_trip, debezium_json) { round_trip(WD_CHANGELOG_DEBEZIUM_JSON); }
Test(round_trip, changelog_json) { round_trip(WD_CHANGELOG_JSON); }

/* Special values look as spec §12.2 says. */
Test(round_trip, special_value_texts) {
  wd_schema_t *s = all_schema();
  wd_row_t *r = all_row(s, 2, WD_INSERT);
  wd_buf_t out = {0};
  cr_assert_null(wd_changelog_encode_changelog_json(s, NULL, -1, r, &out));
  const char *j = buf_str(&out);
  const char *frags[] = {"\"id\":-9223372036854775808",
                         "\"d\":\"NaN\"",
                         "\"f\":-3.4028235e+38",
                         "\"dec\":\"-9999999999999999999999999999.9999999999\"",
                         "\"dec0\":\"-99999\"",
                         "\"s\":\"\xe2\x80\xa8 \xf0\x9f\x98\x80 \\u0001\\u001f \\t tab\"",
                         "\"by\":\"AP8A\"",
                         "\"dt\":\"0001-01-01\"",
                         "\"tm0\":\"23:59:59\"",
                         "\"tm3\":\"23:59:59.999\"",
                         "\"ts0\":\"0001-01-01 00:00:00.000\"",
                         "\"ts3\":\"1969-12-31 23:59:59.999\"",
                         "\"ts6\":\"9999-12-31 23:59:59.999999\"",
                         "\"ts9\":\"1969-12-31 23:59:59.999999001\"",
                         "\"ltz6\":\"1969-12-31 00:00:00.000000\"",
                         "\"map\":{\"\":null,\"k\\\"\":\"-Infinity\"}",
                         "\"vc\":\"\""};
  for (size_t i = 0; i < sizeof(frags) / sizeof(frags[0]); i++)
    cr_expect(strstr(j, frags[i]) != NULL, "'%s' not in %s", frags[i], j);
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

/* ---- tail ---------------------------------------------------------------------------------------- */

static void expect_tail(wd_changelog_format_t fmt, const char *key, const char *value, const char *want,
                        size_t want_lines) {
  wd_buf_t out = {0};
  wd_buf_append(&out, "", 0);
  size_t n = 99;
  wd_error_t *err =
      wd_changelog_decode_tail(fmt, key, key ? strlen(key) : 0, value, value ? strlen(value) : 0, &out, &n);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_eq(n, want_lines);
  cr_expect_str_eq(buf_str(&out), want);
  wd_buf_free(&out);
}

Test(tail, debezium_json_lines) {
  const char *key = "{\"order_id\":5}";
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, key,
              "{\"before\":null,\"after\":{\"order_id\":5,\"w\":5.17},\"op\":\"c\",\"ts_ms\":1}",
              "{\"op\":\"+I\",\"key\":{\"order_id\":5},\"row\":{\"order_id\":5,\"w\":5.17}}\n", 1);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, key,
              "{\"before\":{\"order_id\":5,\"w\":5.18},\"after\":{\"order_id\":5,\"w\":5.17},\"op\":\"u\"}",
              "{\"op\":\"-U\",\"key\":{\"order_id\":5},\"row\":{\"order_id\":5,\"w\":5.18}}\n"
              "{\"op\":\"+U\",\"key\":{\"order_id\":5},\"row\":{\"order_id\":5,\"w\":5.17}}\n",
              2);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, NULL, "{\"before\":null,\"after\":{\"id\":1},\"op\":\"u\"}",
              "{\"op\":\"+U\",\"key\":null,\"row\":{\"id\":1}}\n", 1);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, "plain \"key\"", "{\"before\":{\"id\":1},\"after\":null,\"op\":\"d\"}",
              "{\"op\":\"-D\",\"key\":\"plain \\\"key\\\"\",\"row\":{\"id\":1}}\n", 1);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, " {\"id\": 1} ",
              "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"before\":null,\"after\":{\"id\": 1},\"op\":\"r\"}}",
              "{\"op\":\"+I\",\"key\":{\"id\": 1},\"row\":{\"id\": 1}}\n", 1);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, key, NULL, "", 0);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, key, "null", "", 0);
  expect_tail(WD_CHANGELOG_DEBEZIUM_JSON, key, "{\"schema\":null,\"payload\":null}", "", 0);
}

Test(tail, changelog_json_lines) {
  expect_tail(WD_CHANGELOG_JSON, "{\"k\":1}", "{\"op\":\"-U\",\"table\":\"t\",\"row\":{\"k\":1,\"v\":\"NaN\"}}",
              "{\"op\":\"-U\",\"key\":{\"k\":1},\"row\":{\"k\":1,\"v\":\"NaN\"}}\n", 1);
}

Test(tail, errors) {
  struct {
    wd_changelog_format_t fmt;
    const char *value, *frag;
  } cases[] = {
      {WD_CHANGELOG_DEBEZIUM_JSON, "[1]", "not a JSON object"},
      {WD_CHANGELOG_DEBEZIUM_JSON, "{\"op\":\"c\"", "not a JSON object"},
      {WD_CHANGELOG_DEBEZIUM_JSON, "{\"op\":\"x\",\"after\":{}}", "not one of c, r, u, d"},
      {WD_CHANGELOG_DEBEZIUM_JSON, "{\"op\":\"c\",\"after\":null}", "op \"c\" without its after image"},
      {WD_CHANGELOG_DEBEZIUM_JSON, "{\"op\":\"d\",\"before\":null}", "op \"d\" without its before image"},
      {WD_CHANGELOG_DEBEZIUM_JSON, "{\"op\":\"u\",\"before\":1,\"after\":{}}", "neither an object nor null"},
      {WD_CHANGELOG_JSON, "{\"op\":\"+X\",\"row\":{}}", "not one of +I, -U, +U, -D"},
      {WD_CHANGELOG_JSON, "{\"op\":\"+I\",\"row\":[]}", "\"row\" is missing or not an object"},
  };
  wd_schema_t *s = orders_schema();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    wd_buf_t out = {0};
    wd_buf_append(&out, "keep", 4);
    size_t n = 99;
    wd_error_t *err = wd_changelog_decode_tail(cases[i].fmt, NULL, 0, cases[i].value, strlen(cases[i].value), &out, &n);
    cr_assert_not_null(err, "case %zu", i);
    cr_expect_str_eq(err->id, "E_DECODE");
    cr_expect(strstr(err->message, cases[i].frag) != NULL, "case %zu: %s", i, err->message);
    cr_expect_eq(n, 0);
    cr_expect_eq(out.len, 4);
    wd_error_destroy(err);
    /* the typed decoder refuses the same values */
    wd_row_t *rows[2];
    err = wd_changelog_decode_rows(cases[i].fmt, s, cases[i].value, strlen(cases[i].value), rows, &n);
    cr_assert_not_null(err, "typed case %zu", i);
    cr_expect_str_eq(err->id, "E_DECODE", "typed case %zu: %s", i, err->message);
    cr_expect_eq(n, 0);
    cr_expect_null(rows[0]);
    wd_error_destroy(err);
    wd_buf_free(&out);
  }
  /* typed: a value of the wrong type names the image and the column */
  wd_row_t *rows[2];
  size_t n;
  const char *v = "{\"before\":{\"order_id\":1},\"after\":{\"order_id\":1,\"amount\":\"abc\"},\"op\":\"u\"}";
  wd_error_t *err = wd_changelog_decode_rows(WD_CHANGELOG_DEBEZIUM_JSON, s, v, strlen(v), rows, &n);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_TYPE");
  cr_expect_str_eq(err->message, "E_TYPE: debezium-json after: column 'amount': expected DECIMAL(10,2), got 'abc'");
  cr_expect_eq(n, 0);
  wd_error_destroy(err);
  err = wd_changelog_decode_rows(WD_CHANGELOG_DEBEZIUM_JSON, s, NULL, 0, rows, &n);
  cr_expect_null(err);
  cr_expect_eq(n, 0);
  wd_schema_destroy(s);
}

/* ---- pairing and formats -------------------------------------------------------------------- */

Test(pair, debezium_messages) {
  wd_schema_t *s = orders_schema();
  wd_row_kind_t kinds[] = {WD_INSERT, WD_UPDATE_BEFORE, WD_UPDATE_AFTER, WD_DELETE, WD_UPDATE_AFTER, WD_UPDATE_BEFORE};
  wd_row_t *rows[6];
  for (int i = 0; i < 6; i++) rows[i] = order_row(s, kinds[i], i, 0, NULL);
  size_t i = 0;
  wd_row_kind_t kind;
  const wd_row_t *b, *a;
  wd_changelog_pair(rows, 6, &i, &kind, &b, &a);
  cr_expect(i == 1 && kind == WD_INSERT && !b && a == rows[0]);
  wd_changelog_pair(rows, 6, &i, &kind, &b, &a);
  cr_expect(i == 3 && kind == WD_UPDATE_AFTER && b == rows[1] && a == rows[2]);
  wd_changelog_pair(rows, 6, &i, &kind, &b, &a);
  cr_expect(i == 4 && kind == WD_DELETE && b == rows[3] && !a);
  wd_changelog_pair(rows, 6, &i, &kind, &b, &a);
  cr_expect(i == 5 && kind == WD_UPDATE_AFTER && !b && a == rows[4]);
  wd_changelog_pair(rows, 6, &i, &kind, &b, &a);
  cr_expect(i == 6 && kind == WD_DELETE && b == rows[5] && !a);
  for (int k = 0; k < 6; k++) wd_row_destroy(s, rows[k]);
  wd_schema_destroy(s);
}

Test(pair, formats) {
  wd_changelog_format_t f;
  cr_expect_null(wd_changelog_format_parse("changelog-json", &f));
  cr_expect_eq(f, WD_CHANGELOG_JSON);
  cr_expect_null(wd_changelog_format_parse("debezium-json", &f));
  cr_expect_eq(f, WD_CHANGELOG_DEBEZIUM_JSON);
  wd_error_t *err = wd_changelog_format_parse("avro", &f);
  cr_expect_str_eq(err->id, "C_BAD_OPTION_VALUE");
  wd_error_destroy(err);
  cr_expect_str_eq(wd_changelog_format_name(WD_CHANGELOG_JSON), "changelog-json");
}

/* ---- the two JSON value writers agree ---------------------------------------------------------- */

/* Whether a (jansson's writer: wd_value_to_json) and b (the changelog's text writer, parsed back)
 * are the same JSON for type t: equal JSON, except for numbers of FLOAT and DOUBLE columns, which
 * are equal as numbers of the column's type. The writers differ there in form only: jansson
 * writes a real with a fraction or exponent ("1.0", "-0.0") and a FLOAT as the double of its
 * binary32 value, the changelog writer the shortest text that reads back as the column's value
 * ("1", "-0", "3.14"), which a JSON reader may take as an integer (and "-0" as 0). */
static bool same_json(const wd_type_t *t, const json_t *a, const json_t *b) {
  if (json_is_null(a) || json_is_null(b)) return json_is_null(a) && json_is_null(b);
  switch (t->id) {
  case WD_FLOAT:
  case WD_DOUBLE:
    if (!json_is_number(a) || !json_is_number(b)) return json_equal(a, b); /* "NaN", "Infinity" */
    if (t->id == WD_FLOAT) return (float)json_number_value(a) == (float)json_number_value(b);
    return json_number_value(a) == json_number_value(b);
  case WD_ARRAY:
    if (!json_is_array(a) || !json_is_array(b) || json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!same_json(t->elem, json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  case WD_ROW:
    if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b)) return false;
    for (size_t i = 0; i < t->nfields; i++)
      if (!same_json(t->fields[i].type, json_object_get(a, t->fields[i].name), json_object_get(b, t->fields[i].name)))
        return false;
    return true;
  case WD_MAP: {
    if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    json_t *av;
    json_object_foreach((json_t *)a, k, av) {
      json_t *bv = json_object_get(b, k);
      if (!bv || !same_json(t->val, av, bv)) return false;
    }
    return true;
  }
  default: return json_equal(a, b);
  }
}

/* Both writers on value v of type t. */
static void writers_agree(const wd_type_t *t, const wd_value_t *v) {
  json_t *a = wd_value_to_json(t, v);
  cr_assert_not_null(a);
  wd_buf_t text = {0};
  cr_assert_eq(wd_changelog_put_value(&text, t, v), 0);
  json_error_t je;
  json_t *b = json_loadb(text.len ? (const char *)text.data : "", text.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  cr_assert_not_null(b, "the changelog writer's text is not JSON (%s): %.*s", je.text, (int)text.len, text.data);
  char *at = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
  char *type = wd_type_to_string(t);
  cr_assert(same_json(t, a, b), "%s: wd_value_to_json gives %.300s, the changelog writer %.300s", type, at,
            (const char *)text.data);
  free(type);
  free(at);
  json_decref(a);
  json_decref(b);
  wd_buf_free(&text);
}

Test(json_writers, agree_on_random_values, .timeout = 120) {
  rng_t r = {UINT64_C(0x243f6a8885a308d3)};
  for (int round = 0; round < 300; round++) {
    wd_schema_t *s = gen_schema(&r);
    wd_row_t *row = gen_row(&r, s);
    for (size_t c = 0; c < s->ncols; c++) writers_agree(s->cols[c].type, &row->v[c]);
    wd_row_destroy(s, row);
    wd_schema_destroy(s);
  }
}

Test(json_writers, agree_on_text_that_needs_escaping) {
  /* controls, quotes, backslashes, DEL, valid multi-byte UTF-8, and invalid bytes (U+FFFD each) */
  static const char *const texts[] = {"",
                                      "plain",
                                      "\"q\" \\ /",
                                      "\b\f\n\r\t\x01\x1f\x7f",
                                      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                      "bad \xff\xfe end",
                                      "\xc3",
                                      "\xe2\x82",
                                      "\xed\xa0\x80 surrogate",
                                      "\xc0\xaf overlong"};
  wd_type_t *st, *mt;
  cr_assert_null(wd_type_parse("STRING", &st));
  cr_assert_null(wd_type_parse("MAP<STRING, STRING>", &mt));
  for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
    wd_value_t v = {0};
    cr_assert_eq(wd_value_set_bytes(&v, texts[i], strlen(texts[i])), 0);
    writers_agree(st, &v);
    wd_value_t m = {0};
    m.map.k = calloc(1, sizeof(wd_value_t));
    m.map.v = calloc(1, sizeof(wd_value_t));
    m.map.n = 1;
    cr_assert_eq(wd_value_copy(st, &m.map.k[0], &v), 0);
    cr_assert_eq(wd_value_copy(st, &m.map.v[0], &v), 0);
    writers_agree(mt, &m); /* the text as a MAP key too */
    wd_value_clear(mt, &m);
    wd_value_clear(st, &v);
  }
  wd_type_destroy(st);
  wd_type_destroy(mt);
}
