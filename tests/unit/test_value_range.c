/*
 * tests/unit/test_value_range.c — every value inside its type's range: a value outside the years
 * 0001-9999 (or an integer outside its column's type) is E_TYPE in every source format (Debezium
 * JSON value and key, Debezium Avro, canal-json, maxwell-json, ogg-json, changelog-json), the
 * extremes inside the range decode and format exactly, and the formatters, encoders and the
 * stored-row codec take any int64 without undefined behaviour (run under UBSan in build-san).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/avro.h"
#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/types.h"
#include "ingest/decode_avro.h"
#include "ingest/format.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"
#include "join/row_codec.h"
#include "tests/support/registry_standin.h"

/* id BIGINT, ts TIMESTAMP(6), d DATE, t TIME(3), k TIMESTAMP(6) from the record key, s TINYINT */
static wd_schema_t *range_schema(void) {
  static const char *const names[] = {"id", "ts", "d", "t", "k", "s"};
  static const char *const types[] = {"BIGINT NOT NULL", "TIMESTAMP(6)", "DATE", "TIME(3)", "TIMESTAMP(6)", "TINYINT"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(6, names, types, 1, pk, &s));
  return s;
}

static wd_source_t *range_source(const char *format, const wd_schema_t *s) {
  wd_source_format_t f;
  cr_assert_null(wd_source_format_parse(format, &f));
  wd_source_t *src = NULL;
  cr_assert_null(wd_source_new("src", f, &src));
  cr_assert_null(wd_source_add_topic(src, "t"));
  for (size_t i = 0; i < s->ncols; i++)
    cr_assert_null(wd_source_add_column(src, s, s->cols[i].name, strcmp(s->cols[i].name, "k") ? NULL : "$key.k"));
  /* the integers are in the columns' units: micros for TIMESTAMP(6), millis for TIME(3); a schemaless
   * record does not say its unit, so the source declares it (`auto` refuses: C_TEMPORAL_UNIT) */
  cr_assert_null(wd_source_set_option(src, "timestamp-unit", "micros"));
  cr_assert_null(wd_source_set_option(src, "time-unit", "millis"));
  cr_assert_null(wd_source_check(src, s));
  return src;
}

/* Decodes value (key: the record key) with format; returns the error's id ("" when none) and
 * writes the decoded rows' text (wd_value_format of every column) into text. */
static char *decode(const char *format, const char *value, const char *key, char *text, size_t cap) {
  wd_schema_t *s = range_schema();
  wd_source_t *src = range_source(format, s);
  wd_changes_t ch = {0};
  wd_kafka_meta_t meta = {
      .topic = "t", .partition = 3, .offset = 42, .timestamp = -1, .key = key, .key_len = key ? strlen(key) : 0};
  const wd_format_t *f = wd_format_of(src->format);
  wd_error_t *err = f->decode(NULL, src, s, &meta, value, strlen(value), &ch);
  char *id = strdup(err ? err->id : "");
  text[0] = 0;
  if (err) {
    snprintf(text, cap, "%s", err->message);
    wd_error_destroy(err);
  } else {
    wd_buf_t b = {0};
    for (size_t i = 0; i < ch.count; i++) {
      for (size_t c = 0; c < s->ncols; c++) {
        if (c) wd_buf_putc(&b, ',');
        wd_value_format(s->cols[c].type, &ch.rows[i]->v[c], &b);
      }
    }
    snprintf(text, cap, "%.*s", (int)b.len, b.data ? (const char *)b.data : "");
    wd_buf_free(&b);
  }
  wd_changes_free(&ch);
  wd_source_destroy(src);
  wd_schema_destroy(s);
  return id;
}

static void expect_type_error(const char *format, const char *value, const char *key, const char *col) {
  char text[1024];
  char *id = decode(format, value, key, text, sizeof(text));
  cr_expect_str_eq(id, "E_TYPE", "%s: %s -> %s %s", format, value, id, text);
  char want[64];
  snprintf(want, sizeof(want), "column '%s'", col);
  cr_expect(strstr(text, want) != NULL, "%s: the message names %s: %s", format, want, text);
  free(id);
}

static void expect_rows(const char *format, const char *value, const char *key, const char *want) {
  char text[1024];
  char *id = decode(format, value, key, text, sizeof(text));
  cr_expect_str_eq(id, "", "%s: %s -> %s", format, value, text);
  cr_expect_str_eq(text, want, "%s: %s", format, value);
  free(id);
}

#define KEY "{\"k\":1}"

/* The six inputs of the report: -9223372036854775807 µs into a TIMESTAMP(6) column, through the
 * Debezium JSON value and key, canal-json, maxwell-json, ogg-json and changelog-json (the Avro
 * one is below). Before the range check these decoded, and formatting the value was a signed
 * overflow (UBSan: common/types.c "-106751992 * 86400000000"). */
Test(range, int64_min_timestamp_is_e_type_in_every_json_format) {
  expect_type_error("debezium-json", "{\"op\":\"c\",\"after\":{\"id\":1,\"ts\":-9223372036854775807}}", KEY, "ts");
  expect_type_error("debezium-json", "{\"op\":\"c\",\"after\":{\"id\":1}}", "{\"k\":-9223372036854775807}", "k");
  expect_type_error("canal-json",
                    "{\"data\":[{\"id\":\"1\",\"ts\":-9223372036854775807}],\"type\":\"INSERT\",\"database\":\"d\","
                    "\"table\":\"t\",\"isDdl\":false}",
                    KEY, "ts");
  expect_type_error("maxwell-json",
                    "{\"database\":\"d\",\"table\":\"t\",\"type\":\"insert\",\"data\":{\"id\":1,\"ts\":"
                    "-9223372036854775807}}",
                    KEY, "ts");
  expect_type_error(
      "ogg-json", "{\"table\":\"D.T\",\"op_type\":\"I\",\"after\":{\"id\":1,\"ts\":-9223372036854775807}}", KEY, "ts");
  expect_type_error("changelog-json", "{\"op\":\"+I\",\"row\":{\"id\":1,\"ts\":-9223372036854775807}}", KEY, "ts");
}

/* Other values outside the years 0001-9999: the largest µs, a year 0 and a year 10000 as text,
 * days outside, a time of day past 24 h; an integer outside TINYINT. */
Test(range, other_extremes_are_e_type) {
  const char *F = "debezium-json";
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"ts\":9223372036854775807}}", KEY, "ts");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"ts\":253402300800000000}}", KEY, "ts");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"ts\":-62135596800000001}}", KEY, "ts");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"ts\":\"0000-12-31T23:59:59Z\"}}", KEY, "ts");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"d\":2147483647}}", KEY, "d");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"d\":-719163}}", KEY, "d");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"d\":\"0000-01-01\"}}", KEY, "d");
  expect_type_error(F, "{\"op\":\"c\",\"after\":{\"id\":1,\"s\":128}}", KEY, "s");
  expect_type_error("changelog-json", "{\"op\":\"+I\",\"row\":{\"id\":1,\"ts\":\"0000-12-31 23:59:59.000000\"}}", KEY,
                    "ts");
  expect_type_error("canal-json",
                    "{\"data\":[{\"id\":\"1\",\"d\":\"0000-02-29\"}],\"type\":\"INSERT\",\"database\":\"d\","
                    "\"table\":\"t\",\"isDdl\":false}",
                    KEY, "d");
}

/* The range's ends decode and format exactly. */
Test(range, the_ends_of_the_range_decode_and_format) {
  expect_rows("debezium-json",
              "{\"op\":\"c\",\"after\":{\"id\":9223372036854775807,\"ts\":-62135596800000000,\"d\":-719162,"
              "\"t\":86399999,\"s\":-128}}",
              "{\"k\":253402300799999999}",
              "9223372036854775807,0001-01-01 00:00:00.000000,0001-01-01,23:59:59.999,9999-12-31 23:59:59.999999,-128");
  expect_rows("debezium-json",
              "{\"op\":\"c\",\"after\":{\"id\":-9223372036854775808,\"ts\":\"9999-12-31T23:59:59.999999Z\","
              "\"d\":\"9999-12-31\",\"s\":127}}",
              "{\"k\":\"0001-01-01T00:00:00Z\"}",
              "-9223372036854775808,9999-12-31 23:59:59.999999,9999-12-31,NULL,0001-01-01 00:00:00.000000,127");
  expect_rows("changelog-json",
              "{\"op\":\"+I\",\"row\":{\"id\":1,\"ts\":\"0001-01-01 00:00:00.000000\",\"d\":\"9999-12-31\"}}", KEY,
              "1,0001-01-01 00:00:00.000000,9999-12-31,NULL,1970-01-01 00:00:00.000001,NULL");
}

/* The Debezium Avro input of the report: v1_create.bin (tests/fixtures/avro) with created_at (a
 * MicroTimestamp) replaced by -9223372036854775807. */
Test(range, int64_min_timestamp_is_e_type_in_debezium_avro) {
  char path[512];
  const char *f = __FILE__;
  const char *end = strstr(f, "tests/unit/");
  cr_assert_not_null(end);
  snprintf(path, sizeof(path), "%.*stests/fixtures/avro/schemas.json", (int)(end - f), f);
  json_error_t jerr;
  json_t *schemas = json_load_file(path, 0, &jerr);
  cr_assert_not_null(schemas, "%s: %s", path, jerr.text);
  snprintf(path, sizeof(path), "%.*stests/fixtures/avro/v1_create.bin", (int)(end - f), f);
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp);
  uint8_t in[512];
  size_t n = fread(in, 1, sizeof(in), fp);
  fclose(fp);
  /* header 5, before null 1, after branch 1, id 1, customer 1+1+3, amount 1+1+2, order_date 1+3,
   * created_at's branch at 21, its long at 22..29 */
  cr_assert_eq(in[21], 2);
  cr_assert_eq(in[29], 0x06);
  uint8_t out[540];
  static const uint8_t big[] = {0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  memcpy(out, in, 22);
  memcpy(out + 22, big, sizeof(big));
  memcpy(out + 22 + sizeof(big), in + 30, n - 30);
  size_t m = n - 8 + sizeof(big);

  wd_standin_t *server = wd_standin_start(NULL, NULL);
  cr_assert_not_null(server);
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(server, atoi(k), json_string_value(v));
  json_decref(schemas);
  wd_registry_conf_t rc = {wd_standin_url(server), NULL, NULL, 5000};
  wd_registry_t *reg = NULL;
  wd_avro_decoder_t *dec = NULL;
  cr_assert_null(wd_registry_new(&rc, &reg));
  cr_assert_null(wd_avro_decoder_new(reg, &dec));
  static const char *const names[] = {"id", "created_at"};
  static const char *const types[] = {"BIGINT", "TIMESTAMP(6)"};
  const char *pk[] = {"id"};
  wd_schema_t *s = NULL;
  wd_source_t *src = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &s));
  cr_assert_null(wd_source_new("orders", WD_FMT_DEBEZIUM_AVRO, &src));
  for (size_t i = 0; i < 2; i++) cr_assert_null(wd_source_add_column(src, s, names[i], NULL));
  cr_assert_null(wd_source_add_topic(src, "shop.public.orders"));
  cr_assert_null(wd_source_check(src, s));
  for (int generic = 0; generic < 2; generic++) {
    wd_avro_decoder_set_generic(dec, generic);
    wd_changes_t ch = {0};
    /* the unchanged record decodes */
    wd_error_t *err = wd_decode_debezium_avro(dec, src, s, NULL, in, n, &ch);
    cr_assert_null(err, "%s", err ? err->message : "");
    wd_changes_free(&ch);
    err = wd_decode_debezium_avro(dec, src, s, NULL, out, m, &ch);
    cr_assert_not_null(err, "generic %d: decoded", generic);
    cr_expect_str_eq(err->id, "E_TYPE", "%s", err->message);
    cr_expect(strstr(err->message, "column 'created_at'") != NULL, "%s", err->message);
    wd_error_destroy(err);
    wd_changes_free(&ch);
  }
  wd_source_destroy(src);
  wd_schema_destroy(s);
  wd_avro_decoder_destroy(dec);
  wd_registry_destroy(reg);
  wd_standin_stop(server);
}

/* The formatters, the changelog encoders and the stored-row codec take any int64 without
 * undefined behaviour (no decoder produces these values; the check is UBSan's). */
Test(range, formatters_and_encoders_take_any_int64) {
  static const int64_t X[] = {INT64_MIN,     INT64_MIN + 1, -106751991LL * 86400000000LL - 1, -1, 0, 1,
                              INT64_MAX - 1, INT64_MAX};
  static const char *const T[] = {"DATE",         "TIME(9)",      "TIME(0)",          "TIMESTAMP(3)",
                                  "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "BIGINT"};
  for (size_t ti = 0; ti < sizeof(T) / sizeof(*T); ti++) {
    wd_type_t *t = NULL;
    cr_assert_null(wd_type_parse(T[ti], &t));
    for (size_t xi = 0; xi < sizeof(X) / sizeof(*X); xi++) {
      wd_value_t v = {.is_null = false};
      if (t->id == WD_TIMESTAMP || t->id == WD_TIMESTAMP_LTZ) {
        v.ts.us = X[xi];
        v.ts.ns = 999;
      } else {
        v.i = X[xi];
      }
      wd_buf_t b = {0};
      cr_assert_eq(wd_value_format(t, &v, &b), 0);
      cr_expect(b.len > 0 && b.len < WD_SCALAR_TEXT_MAX);
      json_t *j = wd_value_to_json(t, &v);
      json_decref(j);
      wd_buf_free(&b);
      char why[128];
      bool in = wd_value_in_range(t, &v, why, sizeof(why));
      if (t->id != WD_BIGINT && (X[xi] == INT64_MIN || X[xi] == INT64_MAX))
        cr_expect(!in, "%s %lld", T[ti], (long long)X[xi]);
    }
    wd_type_destroy(t);
  }
  /* the text of the report's value: a defined text, the date of -106751992 days */
  wd_type_t *t = NULL;
  cr_assert_null(wd_type_parse("TIMESTAMP(6)", &t));
  wd_value_t v = {.is_null = false, .ts = {.us = -9223372036854775807LL, .ns = 0}};
  char buf[WD_SCALAR_TEXT_MAX + 1];
  size_t n = wd_scalar_text(t, &v, buf);
  buf[n] = 0;
  cr_expect_str_eq(buf, "-290308-12-21 19:59:05.224193");
  wd_type_destroy(t);
}

/* The range constants are the days and µs of 0001-01-01 and 9999-12-31 23:59:59.999999. */
Test(range, constants) {
  cr_expect_eq(wd_days_from_civil(1, 1, 1), WD_DATE_MIN_DAYS);
  cr_expect_eq(wd_days_from_civil(9999, 12, 31), WD_DATE_MAX_DAYS);
  cr_expect_eq(WD_TIMESTAMP_MIN_US, -62135596800000000LL);
  cr_expect_eq(WD_TIMESTAMP_MAX_US, 253402300799999999LL);
  /* any int64 year: clamped, no overflow */
  cr_expect_eq(wd_days_from_civil(INT64_MAX, 12, 31), INT64_MAX);
  cr_expect_eq(wd_days_from_civil(INT64_MIN, 1, 1), INT64_MIN);
  wd_type_t *t = NULL;
  wd_value_t v = {0};
  cr_assert_null(wd_type_parse("TIMESTAMP(6)", &t));
  wd_error_t *err = wd_value_parse_text(t, "10000-01-01 00:00:00", 20, &v);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_TYPE");
  wd_error_destroy(err);
  cr_assert_null(wd_value_parse_text(t, "9999-12-31 23:59:59.999999", 26, &v));
  cr_expect_eq(v.ts.us, WD_TIMESTAMP_MAX_US);
  wd_type_destroy(t);
}
