/*
 * tests/unit/test_connect_json.c — Kafka Connect JsonConverter's envelope of the changelog
 * (changelog/encode_connect.c, sink.schemas-enable): exact key and value encodings, Connect's
 * logical types (Decimal bytes as Java's BigInteger.toByteArray in base64, Date days, Time and
 * Timestamp milliseconds, floored before 1970), the schema's struct names and optional flags,
 * nested types, and the sink format registry's Connect variants.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "changelog/changelog.h"
#include "changelog/sink_format.h"
#include "common/json.h"
#include "common/types.h"

static wd_schema_t *schema_make(size_t n, const char *const *names, const char *const *types, size_t npk,
                                const char *const *pk) {
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(n, names, types, npk, pk, &s);
  cr_assert_null(err, "schema: %s", err ? err->message : "");
  return s;
}

static const char *buf_str(wd_buf_t *b) {
  wd_buf_append(b, "", 0);
  return (const char *)b->data;
}

/* order_id BIGINT pk, amount DECIMAL(12,2), at TIMESTAMP(3), day DATE, t TIME(3), note STRING */
static wd_schema_t *wide_schema(void) {
  static const char *const names[] = {"order_id", "amount", "at", "day", "t", "note"};
  static const char *const types[] = {"BIGINT NOT NULL", "DECIMAL(12,2)", "TIMESTAMP(3)", "DATE", "TIME(3)", "STRING"};
  static const char *const pk[] = {"order_id"};
  return schema_make(6, names, types, 1, pk);
}

static wd_row_t *wide_row(const wd_schema_t *s, int64_t id, wd_i128 amount, int64_t at_us, int64_t day, int64_t t_ns,
                          const char *note) {
  wd_row_t *r = wd_row_new(s);
  cr_assert_not_null(r);
  r->v[0] = (wd_value_t){.is_null = false, .i = id};
  r->v[1] = (wd_value_t){.is_null = false, .dec = amount};
  r->v[2] = (wd_value_t){.is_null = false, .ts = {at_us, 0}};
  r->v[3] = (wd_value_t){.is_null = false, .i = day};
  r->v[4] = (wd_value_t){.is_null = false, .i = t_ns};
  if (note) {
    cr_assert_eq(wd_value_set_bytes(&r->v[5], note, strlen(note)), 0);
    r->v[5].is_null = false;
  }
  return r;
}

static const char *VALUE_SCHEMA_COLS =
    "[{\"type\":\"int64\",\"optional\":false,\"field\":\"order_id\"},"
    "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\",\"version\":1,"
    "\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"12\"},\"optional\":true,\"field\":\"amount\"},"
    "{\"type\":\"int64\",\"name\":\"org.apache.kafka.connect.data.Timestamp\",\"version\":1,\"optional\":true,"
    "\"field\":\"at\"},"
    "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Date\",\"version\":1,\"optional\":true,"
    "\"field\":\"day\"},"
    "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Time\",\"version\":1,\"optional\":true,"
    "\"field\":\"t\"},"
    "{\"type\":\"string\",\"optional\":true,\"field\":\"note\"}]";

Test(connect_json, key_exact) {
  wd_schema_t *s = wide_schema();
  wd_row_t *r = wide_row(s, 7, 0, 0, 0, 0, NULL);
  wd_buf_t out = {0};
  cr_assert_null(wd_connect_encode_key(s, "orders_wide", r, &out));
  cr_expect_str_eq(buf_str(&out), "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,"
                                  "\"field\":\"order_id\"}],\"optional\":false,\"name\":\"orders_wide.Key\"},"
                                  "\"payload\":{\"order_id\":7}}");
  wd_buf_reset(&out);
  cr_assert_null(wd_connect_encode_string_key("7,a\"b", 5, &out));
  cr_expect_str_eq(buf_str(&out), "{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":\"7,a\\\"b\"}");
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

Test(connect_json, value_exact) {
  wd_schema_t *s = wide_schema();
  /* 1234.50; 2026-12-07T01:02:03.456789 -> ms floored; 1969-12-31 = day -1; 13:45:06.789123456 */
  wd_row_t *b = wide_row(s, 7, 123450, 1796605323456789LL, -1, 49506789123456LL, "é\"");
  wd_row_t *a = wide_row(s, 7, -5, -1, 0, 0, NULL);
  wd_buf_t out = {0}, want = {0};
  cr_assert_null(wd_connect_encode_debezium(s, "orders_wide", 1700000000123, WD_UPDATE_AFTER, b, a, &out));
  const char *row_schema_fmt = "{\"type\":\"struct\",\"fields\":%s,\"optional\":true,\"name\":\"orders_wide.Value\","
                               "\"field\":\"%s\"}";
  char sb[2048], sa[2048];
  snprintf(sb, sizeof(sb), row_schema_fmt, VALUE_SCHEMA_COLS, "before");
  snprintf(sa, sizeof(sa), row_schema_fmt, VALUE_SCHEMA_COLS, "after");
  cr_assert_eq(
      wd_buf_printf(&want,
                    "{\"schema\":{\"type\":\"struct\",\"fields\":[%s,%s,"
                    "{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"name\"},"
                    "{\"type\":\"string\",\"optional\":true,\"field\":\"table\"}],\"optional\":false,"
                    "\"name\":\"io.widen.Source\",\"field\":\"source\"},"
                    "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},"
                    "{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"}],\"optional\":false,"
                    "\"name\":\"orders_wide.Envelope\",\"version\":1},"
                    "\"payload\":{\"before\":{\"order_id\":7,\"amount\":\"AeI6\",\"at\":1796605323456,"
                    "\"day\":-1,\"t\":49506789,\"note\":\"é\\\"\"},"
                    "\"after\":{\"order_id\":7,\"amount\":\"+w==\",\"at\":-1,\"day\":0,\"t\":0,\"note\":null},"
                    "\"source\":{\"name\":\"widen\",\"table\":\"orders_wide\"},\"op\":\"u\",\"ts_ms\":1700000000123}}",
                    sb, sa),
      0);
  cr_expect_str_eq(buf_str(&out), buf_str(&want));
  /* a delete: op d with the before image, after null; no table, no time */
  wd_buf_reset(&out);
  cr_assert_null(wd_connect_encode_debezium(s, NULL, -1, WD_DELETE, a, NULL, &out));
  json_error_t jerr;
  json_t *j = json_loads(buf_str(&out), 0, &jerr);
  cr_assert_not_null(j, "%s", jerr.text);
  json_t *p = json_object_get(j, "payload");
  cr_expect_str_eq(json_string_value(json_object_get(p, "op")), "d");
  cr_expect(json_is_null(json_object_get(p, "after")));
  cr_expect(json_is_null(json_object_get(p, "ts_ms")));
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(p, "before"), "order_id")), 7);
  cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "schema"), "name")), "widen.Envelope");
  json_decref(j);
  /* misuse: a lone -U; out unchanged */
  size_t len = out.len;
  wd_error_t *err = wd_connect_encode_debezium(s, NULL, 0, WD_UPDATE_BEFORE, b, NULL, &out);
  cr_expect_eq(err->cls, WD_ERR_INTERNAL);
  wd_error_destroy(err);
  err = wd_connect_encode_debezium(s, NULL, 0, WD_DELETE, NULL, a, &out);
  cr_expect_eq(err->cls, WD_ERR_INTERNAL);
  wd_error_destroy(err);
  cr_expect_eq(out.len, len);
  wd_buf_free(&out);
  wd_buf_free(&want);
  wd_row_destroy(s, a);
  wd_row_destroy(s, b);
  wd_schema_destroy(s);
}

/* The payload of the DECIMAL column for value v. */
static void expect_decimal(wd_i128 v, const char *b64) {
  static const char *const names[] = {"k", "d"};
  static const char *const types[] = {"INT NOT NULL", "DECIMAL(38,0)"};
  static const char *const pk[] = {"k"};
  wd_schema_t *s = schema_make(2, names, types, 1, pk);
  wd_row_t *r = wd_row_new(s);
  r->v[0] = (wd_value_t){.is_null = false, .i = 1};
  r->v[1] = (wd_value_t){.is_null = false, .dec = v};
  wd_buf_t out = {0};
  cr_assert_null(wd_connect_encode_debezium(s, "t", 0, WD_INSERT, NULL, r, &out));
  json_t *j = json_loads(buf_str(&out), 0, NULL);
  cr_assert_not_null(j);
  const char *got = json_string_value(json_object_get(json_object_get(json_object_get(j, "payload"), "after"), "d"));
  cr_expect_str_eq(got, b64, "decimal %lld", (long long)v);
  json_decref(j);
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

/* BigInteger.valueOf(x).toByteArray(): the fewest two's complement bytes */
Test(connect_json, decimal_bytes_as_java_biginteger) {
  expect_decimal(0, "AA=="); /* 00 */
  expect_decimal(1, "AQ=="); /* 01 */
  expect_decimal(-1, "/w=="); /* ff */
  expect_decimal(127, "fw=="); /* 7f */
  expect_decimal(128, "AIA="); /* 00 80 */
  expect_decimal(-128, "gA=="); /* 80 */
  expect_decimal(-129, "/38="); /* ff 7f */
  expect_decimal(65535, "AP//"); /* 00 ff ff */
  wd_i128 max = 1;
  for (int i = 0; i < 38; i++) max *= 10;
  max -= 1; /* 10^38 - 1 = 0x4b3b4ca85a86c47a098a223fffffffff */
  expect_decimal(max, "SztMqFqGxHoJiiI//////w==");
  expect_decimal(-max, "tMSzV6V5O4X2dd3AAAAAAQ==");
}

Test(connect_json, nested_types_and_not_null) {
  static const char *const names[] = {"id", "tags", "attrs", "pos", "raw", "f"};
  static const char *const types[] = {"STRING NOT NULL",     "ARRAY<INT NOT NULL>",
                                      "MAP<STRING, BIGINT>", "ROW<x DOUBLE, y DOUBLE NOT NULL>",
                                      "BYTES NOT NULL",      "FLOAT"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = schema_make(6, names, types, 1, pk);
  wd_row_t *r = wd_row_new(s);
  const char *vals[] = {"\"a\"", "[1,2]", "{\"k\":5}", "{\"x\":1.5,\"y\":-2}", "\"AQI=\"", "0.5"};
  for (int c = 0; c < 6; c++) {
    json_t *j = json_loads(vals[c], JSON_DECODE_ANY, NULL);
    cr_assert_not_null(j);
    wd_error_t *err = wd_value_from_json(s->cols[c].type, j, &r->v[c]);
    cr_assert_null(err, "%s", err ? err->message : "");
    json_decref(j);
  }
  wd_buf_t out = {0};
  cr_assert_null(wd_connect_encode_debezium(s, "n", 0, WD_INSERT, NULL, r, &out));
  json_t *j = json_loads(buf_str(&out), 0, NULL);
  cr_assert_not_null(j, "%s", buf_str(&out));
  json_t *after = json_object_get(json_object_get(j, "payload"), "after");
  char *a = json_dumps(after, JSON_COMPACT | JSON_PRESERVE_ORDER);
  /* a DOUBLE with an integral value is written as an integer; JsonConverter reads any number */
  cr_expect_str_eq(a, "{\"id\":\"a\",\"tags\":[1,2],\"attrs\":{\"k\":5},\"pos\":{\"x\":1.5,\"y\":-2},"
                      "\"raw\":\"AQI=\",\"f\":0.5}");
  free(a);
  json_t *fields =
      json_object_get(json_array_get(json_object_get(json_object_get(j, "schema"), "fields"), 1), "fields");
  cr_assert_eq(json_array_size(fields), 6);
  char *f = json_dumps(fields, JSON_COMPACT | JSON_PRESERVE_ORDER);
  cr_expect_str_eq(f,
                   "[{\"type\":\"string\",\"optional\":false,\"field\":\"id\"},"
                   "{\"type\":\"array\",\"items\":{\"type\":\"int32\",\"optional\":false},\"optional\":true,"
                   "\"field\":\"tags\"},"
                   "{\"type\":\"map\",\"keys\":{\"type\":\"string\",\"optional\":false},\"values\":{\"type\":\"int64\","
                   "\"optional\":true},\"optional\":true,\"field\":\"attrs\"},"
                   "{\"type\":\"struct\",\"fields\":[{\"type\":\"double\",\"optional\":true,\"field\":\"x\"},"
                   "{\"type\":\"double\",\"optional\":false,\"field\":\"y\"}],\"optional\":true,\"field\":\"pos\"},"
                   "{\"type\":\"bytes\",\"optional\":false,\"field\":\"raw\"},"
                   "{\"type\":\"float\",\"optional\":true,\"field\":\"f\"}]");
  free(f);
  json_decref(j);
  wd_buf_free(&out);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

Test(connect_json, registry_variants) {
  const wd_sink_format_t *dbz = wd_sink_format_find("debezium-json");
  const wd_sink_format_t *c = wd_sink_format_with_schemas(dbz);
  cr_assert_not_null(c);
  cr_expect_neq(c, dbz);
  cr_expect_str_eq(c->name, "debezium-json");
  cr_expect_null(wd_sink_format_with_schemas(wd_sink_format_find("changelog-json")));
  cr_expect_null(wd_sink_format_with_schemas(wd_sink_format_find("avro")));
  cr_expect_not_null(wd_key_format_with_schemas(wd_key_format_find("json")));
  cr_expect_not_null(wd_key_format_with_schemas(wd_key_format_find("string")));
  cr_expect_null(wd_key_format_with_schemas(wd_key_format_find("avro")));

  /* through the registry: an -U/+U pair is one message keyed by the +U row */
  wd_schema_t *s = wide_schema();
  wd_row_t *rows[2] = {wide_row(s, 3, 100, 0, 0, 0, "x"), wide_row(s, 3, 200, 0, 0, 0, "y")};
  rows[0]->kind = WD_UPDATE_BEFORE;
  rows[1]->kind = WD_UPDATE_AFTER;
  wd_sink_ctx_t ctx = {s, "w", 5, NULL};
  wd_buf_t out = {0}, key = {0};
  size_t i = 0;
  const wd_row_t *keyrow = NULL;
  cr_assert_null(c->encode(&ctx, rows, 2, &i, &keyrow, &out));
  cr_expect_eq(i, 2);
  cr_expect_eq(keyrow, rows[1]);
  cr_assert_null(wd_key_format_with_schemas(wd_key_format_find("string"))->encode(&ctx, keyrow, &key));
  cr_expect_str_eq(buf_str(&key), "{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":\"3\"}");
  json_t *j = json_loads(buf_str(&out), 0, NULL);
  cr_assert_not_null(j);
  json_t *p = json_object_get(j, "payload");
  cr_expect_str_eq(json_string_value(json_object_get(p, "op")), "u");
  cr_expect_str_eq(json_string_value(json_object_get(json_object_get(p, "before"), "amount")), "ZA=="); /* 100 */
  cr_expect_str_eq(json_string_value(json_object_get(json_object_get(p, "after"), "amount")), "AMg="); /* 200 */
  json_decref(j);
  wd_buf_free(&out);
  wd_buf_free(&key);
  wd_row_destroy(s, rows[0]);
  wd_row_destroy(s, rows[1]);
  wd_schema_destroy(s);
}

/* widen reads its own Connect output back (widen changes): the same rows, to the millisecond */
Test(connect_json, decode_rows_round_trip) {
  wd_schema_t *s = wide_schema();
  wd_row_t *b = wide_row(s, 7, -12345678901LL, -1000, -1, 49506789000000LL, "x");
  wd_row_t *a = wide_row(s, 7, 99999999999LL, 1796605323456000LL, 20000, 0, NULL);
  a->v[1].dec = -(wd_i128)99999999999LL;
  b->kind = WD_UPDATE_BEFORE;
  a->kind = WD_UPDATE_AFTER;
  wd_buf_t out = {0};
  cr_assert_null(wd_connect_encode_debezium(s, "w", 1, WD_UPDATE_AFTER, b, a, &out));
  wd_row_t *rows[2];
  size_t n = 0;
  wd_error_t *err = wd_changelog_decode_rows(WD_CHANGELOG_DEBEZIUM_JSON, s, out.data, out.len, rows, &n);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(n, 2);
  const wd_row_t *want[2] = {b, a};
  for (size_t r = 0; r < 2; r++) {
    cr_expect_eq(rows[r]->kind, want[r]->kind);
    for (size_t c = 0; c < s->ncols; c++) {
      wd_buf_t x = {0}, y = {0};
      cr_assert_eq(wd_value_format(s->cols[c].type, &rows[r]->v[c], &x), 0);
      cr_assert_eq(wd_value_format(s->cols[c].type, &want[r]->v[c], &y), 0);
      cr_expect_str_eq(buf_str(&x), buf_str(&y), "row %zu column %s", r, s->cols[c].name);
      wd_buf_free(&x);
      wd_buf_free(&y);
    }
    wd_row_destroy(s, rows[r]);
  }
  /* and the key of a delete */
  wd_buf_reset(&out);
  cr_assert_null(wd_connect_encode_debezium(s, "w", 1, WD_DELETE, b, NULL, &out));
  err = wd_changelog_decode_rows(WD_CHANGELOG_DEBEZIUM_JSON, s, out.data, out.len, rows, &n);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(n, 1);
  cr_expect_eq(rows[0]->kind, WD_DELETE);
  cr_expect_eq(rows[0]->v[1].dec, b->v[1].dec);
  wd_row_destroy(s, rows[0]);
  wd_buf_free(&out);
  wd_row_destroy(s, a);
  wd_row_destroy(s, b);
  wd_schema_destroy(s);
}
