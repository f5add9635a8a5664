/*
 * tests/unit/test_avro.c — Avro in and out: the schema-registry client against the stand-in
 * (tests/support/registry_standin.c), the debezium-avro decoder on byte-exact payloads written by
 * an independent encoder (fastavro, tests/fixtures/avro/make_fixtures.py), checked against the
 * expected rows and against the JSON decoder on the same events, and the avro sink's schema and
 * bytes against fastavro's.
 */
#include <avro.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/avro.h"
#include "common/json.h"
#include "ingest/decode_avro.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"
#include "tests/support/registry_standin.h"

static char *fixture(const char *name, size_t *len) {
  char path[512];
  const char *f = __FILE__;
  const char *end = strstr(f, "tests/unit/");
  cr_assert_not_null(end);
  snprintf(path, sizeof(path), "%.*stests/fixtures/avro/%s", (int)(end - f), f, name);
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, fp), (size_t)n);
  s[n] = 0;
  fclose(fp);
  if (len) *len = (size_t)n;
  return s;
}

static json_t *fixture_json(const char *name) {
  char *s = fixture(name, NULL);
  json_error_t e;
  json_t *j = json_loads(s, 0, &e);
  cr_assert_not_null(j, "%s: %s", name, e.text);
  free(s);
  return j;
}

/* ---- the wide table and source of the decoder fixtures ---------------------------------- */

typedef struct {
  wd_standin_t *reg_server;
  wd_registry_t *reg;
  wd_avro_decoder_t *dec;
  wd_schema_t *schema;
  wd_source_t *src, *jsrc;
} ctx_t;

static const char *const COLS[] = {"id",         "customer", "amount", "order_date", "created_at",
                                   "updated_at", "tags",     "attrs",  "city",       "price",
                                   "paid",       "src_ts",   "lsn",    "key_id",     "note"};
static const char *const TYPES[] = {"BIGINT",       "STRING",       "DECIMAL(12,2)", "DATE",
                                    "TIMESTAMP(6)", "TIMESTAMP(3)", "ARRAY<STRING>", "MAP<STRING,BIGINT>",
                                    "STRING",       "DOUBLE",       "BOOLEAN",       "TIMESTAMP(3)",
                                    "BIGINT",       "BIGINT",       "STRING"};
static const char *const SPECS[] = {
    NULL,           NULL,      NULL, NULL, NULL, NULL, NULL, NULL, "address.city", NULL, NULL, "$.source.ts_ms",
    "$.source.lsn", "$key.id", NULL};

static void ctx_init(ctx_t *c, const char *user, const char *password) {
  memset(c, 0, sizeof(*c));
  c->reg_server = wd_standin_start(user, password);
  cr_assert_not_null(c->reg_server);
  json_t *schemas = fixture_json("schemas.json");
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(c->reg_server, atoi(k), json_string_value(v));
  json_decref(schemas);
  wd_registry_conf_t rc = {wd_standin_url(c->reg_server), user, password, 5000};
  cr_assert_null(wd_registry_new(&rc, &c->reg));
  cr_assert_null(wd_avro_decoder_new(c->reg, &c->dec));
  const char *pk[] = {"id"};
  cr_assert_null(wd_schema_new(15, COLS, TYPES, 1, pk, &c->schema));
  cr_assert_null(wd_source_new("orders", WD_FMT_DEBEZIUM_AVRO, &c->src));
  cr_assert_null(wd_source_new("orders_json", WD_FMT_DEBEZIUM_JSON, &c->jsrc));
  for (size_t i = 0; i < 15; i++) {
    cr_assert_null(wd_source_add_column(c->src, c->schema, COLS[i], SPECS[i]));
    cr_assert_null(wd_source_add_column(c->jsrc, c->schema, COLS[i], SPECS[i]));
  }
  /* the JSON twins carry no envelope schema: their columns have the source columns' precisions */
  cr_assert_null(wd_source_set_option(c->jsrc, "timestamp-unit", "precision"));
  cr_assert_null(wd_source_set_option(c->jsrc, "time-unit", "precision"));
  cr_assert_null(wd_source_add_topic(c->src, "shop.public.orders"));
  cr_assert_null(wd_source_check(c->src, c->schema));
}

static void ctx_done(ctx_t *c) {
  wd_source_destroy(c->src);
  wd_source_destroy(c->jsrc);
  wd_schema_destroy(c->schema);
  wd_avro_decoder_destroy(c->dec);
  wd_registry_destroy(c->reg);
  wd_standin_stop(c->reg_server);
}

Test(avro, independent_encoder_fixtures_decode_to_expected_rows) {
  ctx_t c;
  ctx_init(&c, NULL, NULL);
  json_t *cases = fixture_json("expected.json");
  size_t i;
  json_t *tc;
  wd_changes_t ch, jch;
  wd_changes_init(&ch);
  wd_changes_init(&jch);
  json_array_foreach(cases, i, tc) {
    const char *vname = json_string_value(json_object_get(tc, "value"));
    size_t vlen, klen;
    char *value = fixture(vname, &vlen);
    char *key = fixture(json_string_value(json_object_get(tc, "key")), &klen);
    wd_kafka_meta_t meta = {"shop.public.orders", 0, (int64_t)i, 1000, key, klen};
    wd_error_t *err = wd_decode_debezium_avro(c.dec, c.src, c.schema, &meta, value, vlen, &ch);
    const char *want_err = json_string_value(json_object_get(tc, "error"));
    /* the same event as Debezium JSON, with a JSON key */
    const char *js = json_string_value(json_object_get(tc, "json"));
    json_t *jrow = json_object_get(json_array_get(json_object_get(tc, "rows"), 0), "row");
    char jkey[64];
    snprintf(jkey, sizeof(jkey), "{\"id\":%lld", (long long)(vname[1] == '1' ? 1 : vname[1] == '2' ? 2 : 3));
    strcat(jkey, "}");
    wd_kafka_meta_t jmeta = {"shop.public.orders", 0, (int64_t)i, 1000, jkey, strlen(jkey)};
    wd_error_t *jerr = wd_decode_debezium_json(c.jsrc, c.schema, &jmeta, js, strlen(js), &jch);
    (void)jrow;
    if (want_err) {
      cr_assert_not_null(err, "%s: expected %s", vname, want_err);
      cr_expect_str_eq(err->id, want_err, "%s: %s", vname, err->message);
      /* names the field and both types */
      cr_expect(strstr(err->message, "'paid'") && strstr(err->message, "Avro string") &&
                    strstr(err->message, "BOOLEAN"),
                "%s", err->message);
      cr_expect_not_null(jerr);
      if (jerr) cr_expect_str_eq(jerr->id, want_err);
      wd_error_destroy(err);
      wd_error_destroy(jerr);
    } else {
      cr_assert_null(err, "%s: %s", vname, err ? err->message : "");
      cr_assert_null(jerr, "%s (JSON): %s", vname, jerr ? jerr->message : "");
      json_t *rows = json_object_get(tc, "rows");
      cr_assert_eq(ch.count, json_array_size(rows), "%s: %zu records", vname, ch.count);
      cr_assert_eq(jch.count, ch.count);
      for (size_t r = 0; r < ch.count; r++) {
        json_t *want = json_array_get(rows, r);
        cr_expect_str_eq(wd_row_kind_str(ch.rows[r]->kind), json_string_value(json_object_get(want, "op")), "%s",
                         vname);
        json_t *got = wd_row_to_json(c.schema, ch.rows[r]);
        char *gs = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        char *ws = json_dumps(json_object_get(want, "row"), JSON_COMPACT | JSON_SORT_KEYS);
        cr_expect(json_equal(got, json_object_get(want, "row")), "%s record %zu:\n got  %s\n want %s", vname, r, gs,
                  ws);
        free(gs);
        free(ws);
        json_decref(got);
        cr_expect_eq(ch.rows[r]->kind, jch.rows[r]->kind);
        cr_expect(wd_row_eq(c.schema, ch.rows[r], jch.rows[r], NULL), "%s record %zu differs from the JSON path", vname,
                  r);
      }
    }
    free(value);
    free(key);
  }
  wd_changes_free(&ch);
  wd_changes_free(&jch);
  json_decref(cases);
  ctx_done(&c);
}

Test(avro, schemas_are_fetched_once_per_id) {
  ctx_t c;
  ctx_init(&c, "alice", "s3cret");
  size_t vlen, klen;
  char *value = fixture("v1_create.bin", &vlen), *key = fixture("key_1.bin", &klen);
  wd_kafka_meta_t meta = {"t", 0, 0, 0, key, klen};
  wd_changes_t ch;
  wd_changes_init(&ch);
  for (int i = 0; i < 5; i++) cr_assert_null(wd_decode_debezium_avro(c.dec, c.src, c.schema, &meta, value, vlen, &ch));
  cr_expect_eq(wd_standin_requests(c.reg_server), 2); /* value schema 1 and key schema 7 */
  uint64_t req, hits;
  const char *json;
  cr_assert_null(wd_registry_get_schema(c.reg, 1, &json));
  wd_registry_stats(c.reg, &req, &hits);
  cr_expect_eq(req, 2);
  cr_expect_eq(hits, 1);
  wd_changes_free(&ch);
  free(value);
  free(key);
  ctx_done(&c);
}

Test(avro, registry_unavailable_is_retriable_and_recovers) {
  ctx_t c;
  ctx_init(&c, NULL, NULL);
  size_t vlen;
  char *value = fixture("v2_evolved.bin", &vlen);
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_standin_fail_next(c.reg_server, 2);
  for (int i = 0; i < 2; i++) {
    wd_error_t *err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, value, vlen, &ch);
    cr_assert_not_null(err);
    cr_expect_str_eq(err->id, "E_REGISTRY");
    cr_expect(err->retriable);
    cr_expect_eq(ch.count, 0);
    wd_error_destroy(err);
  }
  /* a registry that does not listen at all */
  wd_registry_t *dead = NULL;
  wd_registry_conf_t rc = {"http://127.0.0.1:1", NULL, NULL, 500};
  cr_assert_null(wd_registry_new(&rc, &dead));
  const char *json;
  wd_error_t *err = wd_registry_get_schema(dead, 1, &json);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_REGISTRY");
  cr_expect(err->retriable);
  wd_error_destroy(err);
  wd_registry_destroy(dead);
  cr_expect_eq(wd_registry_backoff_ms(0), 100);
  cr_expect_eq(wd_registry_backoff_ms(3), 800);
  cr_expect_eq(wd_registry_backoff_ms(30), 10000);
  /* $key.id is NULL without a key, but the key column comes from the image */
  err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, value, vlen, &ch);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_eq(ch.count, 1);
  wd_changes_free(&ch);
  free(value);
  ctx_done(&c);
}

Test(avro, bad_input_and_auth) {
  ctx_t c;
  ctx_init(&c, "alice", "s3cret");
  wd_changes_t ch;
  wd_changes_init(&ch);
  size_t vlen;
  char *value = fixture("v1_create.bin", &vlen);
  /* not the wire format */
  wd_error_t *err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, "{\"op\":\"c\"}", 10, &ch);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_DECODE");
  wd_error_destroy(err);
  /* an unknown schema id */
  char unknown[8] = {0, 0, 0, 0x30, 0x39, 2, 0, 0};
  err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, unknown, sizeof(unknown), &ch);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_SCHEMA_NOT_FOUND", "%s", err->message);
  cr_expect_eq(err->cls, WD_ERR_DECODE);
  wd_error_destroy(err);
  /* truncated bytes (avro-c leaks on this path: suppressed in tests/lsan.supp) */
  err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, value, vlen - 20, &ch);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_DECODE", "%s", err->message);
  wd_error_destroy(err);
  /* a length that claims far more than the record holds (break-it run: byte 9 = 0x67, -52, made
   * avro-c ask for ~2^63 bytes and crash under ASan): refused, a decode error */
  char *mangled = malloc(vlen);
  memcpy(mangled, value, vlen);
  mangled[9] = 0x67;
  err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, mangled, vlen, &ch);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_DECODE", "%s", err->message);
  wd_error_destroy(err);
  for (int b = 0x10; b < 0x80; b += 0x0b) { /* other huge or negative lengths at the same place */
    mangled[9] = (char)b;
    err = wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, mangled, vlen, &ch);
    wd_error_destroy(err);
  }
  free(mangled);
  /* tombstone */
  cr_assert_null(wd_decode_debezium_avro(c.dec, c.src, c.schema, NULL, NULL, 0, &ch));
  cr_expect(ch.flags & WD_CHANGES_TOMBSTONE);
  /* wrong credentials */
  wd_registry_t *bad = NULL;
  wd_registry_conf_t rc = {wd_standin_url(c.reg_server), "alice", "wrong", 5000};
  cr_assert_null(wd_registry_new(&rc, &bad));
  const char *json;
  err = wd_registry_get_schema(bad, 1, &json);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_REGISTRY_AUTH");
  cr_expect(!err->retriable);
  wd_error_destroy(err);
  wd_registry_destroy(bad);
  rc.url = "ftp://x";
  err = wd_registry_new(&rc, &bad);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_REGISTRY_URL");
  wd_error_destroy(err);
  wd_changes_free(&ch);
  free(value);
  ctx_done(&c);
}

/* ---- the sink ------------------------------------------------------------------------------ */

Test(avro, sink_schema_and_bytes_match_fastavro) {
  json_t *spec = fixture_json("sink.json");
  json_t *cols = json_object_get(spec, "columns");
  size_t n = json_array_size(cols);
  const char *names[32], *types[32];
  for (size_t i = 0; i < n; i++) {
    names[i] = json_string_value(json_array_get(json_array_get(cols, i), 0));
    types[i] = json_string_value(json_array_get(json_array_get(cols, i), 1));
  }
  const char *pk[] = {"id"};
  wd_schema_t *schema = NULL;
  wd_error_t *err = wd_schema_new(n, names, types, 1, pk, &schema);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_avro_sink_t *sink = NULL;
  cr_assert_null(wd_avro_sink_new(schema, "orders_wide", &sink));
  /* the schema: what fastavro's side expects, and accepted by avro-c */
  json_t *got = json_loads(wd_avro_sink_value_schema(sink), 0, NULL);
  cr_assert_not_null(got);
  cr_expect(json_equal(got, json_object_get(spec, "value_schema")), "value schema:\n%s",
            wd_avro_sink_value_schema(sink));
  json_decref(got);
  got = json_loads(wd_avro_sink_key_schema(sink), 0, NULL);
  cr_expect(json_equal(got, json_object_get(spec, "key_schema")), "key schema:\n%s", wd_avro_sink_key_schema(sink));
  json_decref(got);
  avro_schema_t as;
  cr_assert_eq(
      avro_schema_from_json_length(wd_avro_sink_value_schema(sink), strlen(wd_avro_sink_value_schema(sink)), &as), 0);
  /* the bytes */
  wd_avro_sink_set_ids(sink, (int32_t)json_integer_value(json_object_get(spec, "value_id")),
                       (int32_t)json_integer_value(json_object_get(spec, "key_id")));
  wd_row_t *row = wd_row_new(schema);
  err = wd_row_from_json(schema, json_object_get(spec, "row"), row);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(wd_row_kind_parse(json_string_value(json_object_get(spec, "row_kind")), &row->kind), 0);
  wd_buf_t b = {0};
  cr_assert_null(wd_avro_sink_encode_value(sink, row, &b));
  size_t want_len;
  char *want = fixture("sink_value.bin", &want_len);
  cr_expect_eq(b.len, want_len);
  cr_expect(b.len == want_len && memcmp(b.data, want, want_len) == 0, "value bytes differ from fastavro's");
  /* avro-c reads it back */
  avro_value_iface_t *iface = avro_generic_class_from_schema(as);
  avro_value_t v;
  avro_generic_value_new(iface, &v);
  avro_reader_t rd = avro_reader_memory((const char *)b.data + 5, (int64_t)b.len - 5);
  cr_expect_eq(avro_value_read(rd, &v), 0);
  avro_value_t f;
  const char *s;
  size_t sl;
  avro_value_get_by_name(&v, "_row_kind", &f, NULL);
  avro_value_get_string(&f, &s, &sl);
  cr_expect_str_eq(s, "+U");
  avro_reader_free(rd);
  avro_value_decref(&v);
  avro_value_iface_decref(iface);
  avro_schema_decref(as);
  free(want);
  wd_buf_reset(&b);
  cr_assert_null(wd_avro_sink_encode_key(sink, row, &b));
  want = fixture("sink_key.bin", &want_len);
  cr_expect(b.len == want_len && memcmp(b.data, want, want_len) == 0, "key bytes differ from fastavro's");
  free(want);
  wd_buf_free(&b);
  wd_row_destroy(schema, row);
  wd_avro_sink_destroy(sink);
  wd_schema_destroy(schema);
  json_decref(spec);
}

Test(avro, sink_registers_through_the_registry) {
  wd_standin_t *srv = wd_standin_start(NULL, NULL);
  cr_assert_not_null(srv);
  wd_registry_t *reg = NULL;
  wd_registry_conf_t rc = {wd_standin_url(srv), NULL, NULL, 5000};
  cr_assert_null(wd_registry_new(&rc, &reg));
  const char *names[] = {"id", "v"}, *types[] = {"INT", "DECIMAL(38,0)"}, *pk[] = {"id"};
  wd_schema_t *schema = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &schema));
  wd_avro_sink_t *sink = NULL;
  cr_assert_null(wd_avro_sink_new(schema, "t", &sink));
  int32_t id1 = 0, id2 = 0;
  cr_assert_null(wd_registry_register(reg, "out-value", wd_avro_sink_value_schema(sink), &id1));
  cr_assert_null(wd_registry_register(reg, "out-value", wd_avro_sink_value_schema(sink), &id2));
  cr_expect_eq(id1, id2);
  char text[4096];
  cr_assert_eq(wd_standin_subject_schema(srv, "out-value", text, sizeof(text)), 0);
  cr_expect(strstr(text, "\"logicalType\":\"decimal\"") != NULL, "%s", text);
  const char *json;
  cr_assert_null(wd_registry_get_schema(reg, id1, &json));
  cr_expect_str_eq(json, wd_avro_sink_value_schema(sink));
  /* extreme decimals: 38 digits both signs */
  wd_row_t *row = wd_row_new(schema);
  row->v[0].is_null = false;
  row->v[0].i = 1;
  row->v[1].is_null = false;
  row->v[1].dec = -(wd_pow10(38) - 1);
  wd_buf_t b = {0};
  cr_assert_null(wd_avro_sink_encode_value(sink, row, &b));
  /* header 5, kind "+I" 3, id 1, union 1, bytes: length 1 + 16 */
  cr_expect_eq(b.len, 5u + 3 + 1 + 1 + 1 + 16);
  wd_buf_free(&b);
  wd_row_destroy(schema, row);
  /* names Avro cannot take */
  const char *bad[] = {"id", "bad-name"};
  wd_schema_t *s2 = NULL;
  cr_assert_null(wd_schema_new(2, bad, types, 1, pk, &s2));
  wd_avro_sink_t *sk2 = NULL;
  wd_error_t *err = wd_avro_sink_new(s2, "t", &sk2);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_AVRO_NAME");
  wd_error_destroy(err);
  wd_schema_destroy(s2);
  wd_avro_sink_destroy(sink);
  wd_schema_destroy(schema);
  wd_registry_destroy(reg);
  wd_standin_stop(srv);
}
