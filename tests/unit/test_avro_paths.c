/*
 * tests/unit/test_avro_paths.c — the debezium-avro decoder's two ways of reading the Avro binary
 * encoding give the same result: its direct walk of the bytes with the writer schema (the
 * default) and avro-c's generic value of the whole record (wd_avro_decoder_set_generic(dec,
 * true), the reference). Every fixture of tests/fixtures/avro, every prefix of it and every
 * single-byte change of it, hand-written bytes (duplicate map keys, a map key with a NUL, blocks
 * with byte sizes, arrays of nulls), and random records of the fixtures' writer schemas and of a schema
 * with every Avro type and the logical / Debezium types (decimal bytes and fixed,
 * VariableScaleDecimal, enum, date, time-millis/micros, timestamp-micros, NanoTimestamp,
 * ZonedTimestamp, Json, nested records, arrays and maps of records, multi-branch unions) decode
 * to the same rows (kind, values, absent flags, ts_ms, op) or fail with the same error (id,
 * class, message) both ways.
 */
#include <avro.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"
#include "ingest/decode_avro.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"
#include "tests/support/registry_standin.h"

static char *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof(path), "%s/tests/fixtures/avro/%s", WD_SOURCE_DIR, name);
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

/* ---- a schema with every type ------------------------------------------------------------ */

#define KS_VALUE                                                                                                       \
  "{\"type\":\"record\",\"name\":\"Value\",\"namespace\":\"ks\",\"fields\":["                                          \
  "{\"name\":\"id\",\"type\":\"long\"},"                                                                               \
  "{\"name\":\"i\",\"type\":\"int\"},"                                                                                 \
  "{\"name\":\"fl\",\"type\":\"float\"},"                                                                              \
  "{\"name\":\"dbl\",\"type\":\"double\"},"                                                                            \
  "{\"name\":\"b\",\"type\":\"boolean\"},"                                                                             \
  "{\"name\":\"dec_fixed\",\"type\":{\"type\":\"fixed\",\"name\":\"DecFixed\",\"size\":8,"                             \
  "\"logicalType\":\"decimal\",\"precision\":18,\"scale\":3}},"                                                        \
  "{\"name\":\"dec_bytes\",\"type\":[\"null\",{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":10,"       \
  "\"scale\":0}]},"                                                                                                    \
  "{\"name\":\"vsd\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"VariableScaleDecimal\",\"namespace\":"         \
  "\"io.debezium.data\",\"connect.name\":\"io.debezium.data.VariableScaleDecimal\",\"fields\":[{\"name\":"             \
  "\"scale\",\"type\":\"int\"},{\"name\":\"value\",\"type\":\"bytes\"}]}]},"                                           \
  "{\"name\":\"color\",\"type\":{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\",\"BLUE\"]}},"     \
  "{\"name\":\"d\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"                                             \
  "{\"name\":\"t_ms\",\"type\":{\"type\":\"int\",\"logicalType\":\"time-millis\"}},"                                   \
  "{\"name\":\"t_us\",\"type\":{\"type\":\"long\",\"logicalType\":\"time-micros\"}},"                                  \
  "{\"name\":\"ts_us\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"                            \
  "{\"name\":\"ts_ns\",\"type\":[\"null\",{\"type\":\"long\",\"connect.name\":\"io.debezium.time.NanoTimestamp\"}]},"  \
  "{\"name\":\"zts\",\"type\":[\"null\",{\"type\":\"string\",\"connect.name\":\"io.debezium.time.ZonedTimestamp\"}]}," \
  "{\"name\":\"js\",\"type\":[\"null\",{\"type\":\"string\",\"connect.name\":\"io.debezium.data.Json\"}]},"            \
  "{\"name\":\"raw\",\"type\":\"bytes\"},"                                                                             \
  "{\"name\":\"uuid_f\",\"type\":{\"type\":\"fixed\",\"name\":\"Four\",\"size\":4}},"                                  \
  "{\"name\":\"nested\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Inner\",\"fields\":["                       \
  "{\"name\":\"a\",\"type\":\"int\"},{\"name\":\"b\",\"type\":[\"null\",\"string\"]},"                                 \
  "{\"name\":\"deep\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Deep\",\"fields\":[{\"name\":\"x\","          \
  "\"type\":\"long\"},{\"name\":\"pad\",\"type\":\"Four\"}]}]}]}]},"                                                   \
  "{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":\"Inner\"}},"                                              \
  "{\"name\":\"arr_int\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"long\"]}},"                                \
  "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"double\"]}},"                                     \
  "{\"name\":\"m_rec\",\"type\":{\"type\":\"map\",\"values\":\"Inner\"}},"                                             \
  "{\"name\":\"e_str\",\"type\":[\"null\",\"string\",\"long\",\"Color\"]},"                                            \
  "{\"name\":\"skipped\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"map\",\"values\":\"Inner\"}}},"            \
  "{\"name\":\"tail\",\"type\":\"string\"}]}"

#define KS_ENVELOPE                                                                                                    \
  "{\"type\":\"record\",\"name\":\"Envelope\",\"namespace\":\"ks\",\"fields\":["                                       \
  "{\"name\":\"before\",\"type\":[\"null\"," KS_VALUE "]},"                                                            \
  "{\"name\":\"after\",\"type\":[\"null\",\"Value\"]},"                                                                \
  "{\"name\":\"source\",\"type\":{\"type\":\"record\",\"name\":\"Source\",\"fields\":["                                \
  "{\"name\":\"name\",\"type\":\"string\"},{\"name\":\"ts_ms\",\"type\":\"long\"},"                                    \
  "{\"name\":\"lsn\",\"type\":[\"null\",\"long\"]}]}},"                                                                \
  "{\"name\":\"op\",\"type\":\"string\"},"                                                                             \
  "{\"name\":\"ts_ms\",\"type\":[\"null\",\"long\"]}]}"

/* ids: 100 the envelope above, 102 the same as ["null", envelope], 101 its key (a union root) */
static const char KS_KEY[] =
    "[\"null\",{\"type\":\"record\",\"name\":\"Key\",\"namespace\":\"ks\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"region\",\"type\":[\"null\",\"string\"]}]}]";

/* id 103, for hand-written bytes: duplicate map keys, a key with a NUL, negative block counts */
#define HAND_ENVELOPE                                                                                                  \
  "{\"type\":\"record\",\"name\":\"Envelope\",\"fields\":[{\"name\":\"after\",\"type\":{\"type\":\"record\","          \
  "\"name\":\"Value\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"m\",\"type\":{\"type\":\"map\","     \
  "\"values\":\"long\"}},{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},{\"name\":\"s\","         \
  "\"type\":\"string\"}]}},{\"name\":\"op\",\"type\":\"string\"}]}"

/* id 104: an array of nulls (items without bytes) */
#define NULLS_ENVELOPE                                                                                                 \
  "{\"type\":\"record\",\"name\":\"Envelope\",\"fields\":[{\"name\":\"after\",\"type\":{\"type\":\"record\","          \
  "\"name\":\"Value\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"nulls\",\"type\":{\"type\":"         \
  "\"array\",\"items\":\"null\"}}]}},{\"name\":\"op\",\"type\":\"string\"}]}"

static const char *const NULLS_COLS[][3] = {
    {"id", "BIGINT", NULL}, {"nulls", "ARRAY<INT>", NULL}, {"n3", "INT", "nulls.3"}};

static const char *const HAND_COLS[][3] = {
    {"id", "BIGINT", NULL},         {"m", "MAP<STRING,BIGINT>", NULL},
    {"m_a", "BIGINT", "m.a"},       {"m_b", "BIGINT", "m.b"},
    {"arr", "ARRAY<BIGINT>", NULL}, {"arr_2", "BIGINT", "arr.2"},
    {"s", "STRING", NULL},          {"s_int", "INT", "s"},
};

static const char *const KS_COLS[][4] = {
    {"id", "BIGINT", NULL, "0"},
    {"i", "INT", NULL, "1"},
    {"i_text", "STRING", "i", "1"},
    {"i_small", "SMALLINT", "i", "2"},
    {"fl", "FLOAT", NULL, "1"},
    {"dbl", "DOUBLE", NULL, "1"},
    {"dbl_dec", "DECIMAL(20,4)", "dbl", "2"},
    {"dbl_text", "STRING", "dbl", "1"},
    {"b", "BOOLEAN", NULL, "1"},
    {"b_text", "STRING", "b", "1"},
    {"dec_fixed", "DECIMAL(18,3)", NULL, "3"},
    {"dec_fixed_s", "STRING", "dec_fixed", "3"},
    {"dec_fixed_i", "BIGINT", "dec_fixed", "8"},
    {"dec_bytes", "DECIMAL(10,0)", NULL, "3"},
    {"dec_bytes_d", "DOUBLE", "dec_bytes", "3"},
    {"vsd", "DECIMAL(20,5)", NULL, "3"},
    {"vsd_s", "STRING", "vsd", "3"},
    {"color", "STRING", NULL, "1"},
    {"d", "DATE", NULL, "4"},
    {"d_ts", "TIMESTAMP(3)", "d", "4"},
    {"t_ms", "TIME(3)", NULL, "4"},
    {"t_us", "TIME(6)", NULL, "4"},
    {"ts_us", "TIMESTAMP(6)", NULL, "4"},
    {"ts_us_date", "DATE", "ts_us", "4"},
    {"ts_us_3", "TIMESTAMP_LTZ(3)", "ts_us", "4"},
    {"ts_ns", "TIMESTAMP(9)", NULL, "4"},
    {"zts", "TIMESTAMP_LTZ(3)", NULL, "5"},
    {"js", "ARRAY<INT>", NULL, "5"},
    {"js_map", "MAP<STRING,INT>", "js", "8"},
    {"raw", "BYTES", NULL, "1"},
    {"raw_text", "STRING", "raw", "1"},
    {"uuid_f", "BYTES", NULL, "1"},
    {"nested", "ROW<a INT, b STRING, deep ROW<x BIGINT, missing INT>>", NULL, "6"},
    {"nested_a", "INT", "nested.a", "6"},
    {"nested_deep_x", "BIGINT", "nested.deep.x", "6"},
    {"arr", "ARRAY<ROW<a INT, b STRING>>", NULL, "6"},
    {"arr_1_b", "STRING", "arr.1.b", "6"},
    {"arr_int", "ARRAY<BIGINT>", NULL, "6"},
    {"arr_int_0", "BIGINT", "arr_int.0", "6"},
    {"m", "MAP<STRING,DOUBLE>", NULL, "6"},
    {"m_a", "DOUBLE", "m.a", "6"},
    {"m_int", "MAP<INT,DOUBLE>", "m", "6"},
    {"m_rec", "MAP<STRING,ROW<a INT>>", NULL, "6"},
    {"m_rec_k1_a", "INT", "m_rec.k1.a", "6"},
    {"e_str", "STRING", NULL, "7"},
    {"e_str_i", "BIGINT", "e_str", "7"},
    {"tail", "STRING", NULL, "1"},
    {"absent", "STRING", "no_such_field", "7"},
    {"src_ts", "TIMESTAMP(3)", "$.source.ts_ms", "7"},
    {"src_name", "STRING", "$.source.name", "1"},
    {"lsn", "BIGINT", "$.source.lsn", "7"},
    {"env_ts", "TIMESTAMP(3)", "$.ts_ms", "7"},
    {"env_none", "STRING", "$.source.nothing", "7"},
    {"key_id", "BIGINT", "$key.id", "7"},
    {"key_region", "STRING", "$key.region", "1"},
};
#define KS_N (sizeof(KS_COLS) / sizeof(KS_COLS[0]))
#define KS_GROUPS                                                                                                      \
  8 /* tables of the every-type schema: id and the columns of group g (KS_COLS[i][3]); group 8
                      * has the conversions that mostly fail (a decimal's fraction into BIGINT, a JSON array
                      * into MAP) */

/* the fixtures' table (tests/unit/test_avro.c) */
static const char *const FX_COLS[][3] = {
    {"id", "BIGINT", NULL},
    {"customer", "STRING", NULL},
    {"amount", "DECIMAL(12,2)", NULL},
    {"order_date", "DATE", NULL},
    {"created_at", "TIMESTAMP(6)", NULL},
    {"updated_at", "TIMESTAMP(3)", NULL},
    {"tags", "ARRAY<STRING>", NULL},
    {"attrs", "MAP<STRING,BIGINT>", NULL},
    {"city", "STRING", "address.city"},
    {"price", "DOUBLE", NULL},
    {"paid", "BOOLEAN", NULL},
    {"src_ts", "TIMESTAMP(3)", "$.source.ts_ms"},
    {"lsn", "BIGINT", "$.source.lsn"},
    {"key_id", "BIGINT", "$key.id"},
    {"note", "STRING", NULL},
    {"paid_text", "STRING", "paid"},
    {"zip", "STRING", "address.zip"},
    {"tag0", "STRING", "tags.0"},
    {"attr_a", "BIGINT", "attrs.a"},
    {"version", "STRING", "$.source.version"},
    {"txid", "STRING", "$.transaction.id"},
};
#define FX_N (sizeof(FX_COLS) / sizeof(FX_COLS[0]))

typedef struct {
  wd_schema_t *schema;
  wd_source_t *src;
  wd_changes_t a, b; /* bound to schema: the direct walk's records, avro-c's */
} table_t;

/* A table of columns cols[0..n) (name, type, mapping; stride: the row length of cols). */
static void table_new_cols(table_t *t, const char *const *cols, size_t stride, size_t n) {
  const char *names[80], *types[80], *specs[80];
  cr_assert(n <= 80);
  for (size_t i = 0; i < n; i++) {
    names[i] = cols[i * stride];
    types[i] = cols[i * stride + 1];
    specs[i] = cols[i * stride + 2];
  }
  const char *pk[] = {"id"};
  wd_error_t *err = wd_schema_new(n, names, types, 1, pk, &t->schema);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_null(wd_source_new("s", WD_FMT_DEBEZIUM_AVRO, &t->src));
  /* random longs into temporal columns: read them by the column's precision (the decoders are compared) */
  cr_assert_null(wd_source_set_option(t->src, "timestamp-unit", "precision"));
  cr_assert_null(wd_source_set_option(t->src, "time-unit", "precision"));
  for (size_t i = 0; i < n; i++) {
    err = wd_source_add_column(t->src, t->schema, names[i], specs[i]);
    cr_assert_null(err, "%s: %s", names[i], err ? err->message : "");
  }
  cr_assert_null(wd_source_add_topic(t->src, "t"));
  cr_assert_null(wd_source_check(t->src, t->schema));
  wd_changes_init(&t->a);
  wd_changes_init(&t->b);
}

static void table_new(table_t *t, const char *const cols[][3], size_t n) { table_new_cols(t, cols[0], 3, n); }

/* The every-type table of group g: id and that group's columns; g 0: every column. */
static void table_new_ks(table_t *t, int g) {
  const char *cols[KS_N * 3];
  size_t n = 0;
  for (size_t i = 0; i < KS_N; i++)
    if (g == 0 || i == 0 || atoi(KS_COLS[i][3]) == g) {
      cols[n * 3] = KS_COLS[i][0];
      cols[n * 3 + 1] = KS_COLS[i][1];
      cols[n * 3 + 2] = KS_COLS[i][2];
      n++;
    }
  table_new_cols(t, cols, 3, n);
}

static void table_free(table_t *t) {
  wd_changes_free(&t->a);
  wd_changes_free(&t->b);
  wd_source_destroy(t->src);
  wd_schema_destroy(t->schema);
}

typedef struct {
  wd_standin_t *srv;
  wd_registry_t *reg;
  wd_avro_decoder_t *fast, *generic;
  wd_buf_t ta, tb;
  size_t ok, failed; /* records compared that decoded / failed (both ways) */
} both_t;

static void both_init(both_t *c) {
  memset(c, 0, sizeof(*c));
  c->srv = wd_standin_start(NULL, NULL);
  cr_assert_not_null(c->srv);
  char *sj = slurp("schemas.json", NULL);
  json_t *schemas = json_loads(sj, 0, NULL);
  cr_assert_not_null(schemas);
  free(sj);
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(c->srv, atoi(k), json_string_value(v));
  json_decref(schemas);
  wd_standin_put(c->srv, 100, KS_ENVELOPE);
  wd_standin_put(c->srv, 102, "[\"null\"," KS_ENVELOPE "]");
  wd_standin_put(c->srv, 101, KS_KEY);
  wd_standin_put(c->srv, 103, HAND_ENVELOPE);
  wd_standin_put(c->srv, 104, NULLS_ENVELOPE);
  wd_registry_conf_t rc = {wd_standin_url(c->srv), NULL, NULL, 5000};
  cr_assert_null(wd_registry_new(&rc, &c->reg));
  cr_assert_null(wd_avro_decoder_new(c->reg, &c->fast));
  cr_assert_null(wd_avro_decoder_new(c->reg, &c->generic));
  wd_avro_decoder_set_generic(c->generic, true);
}

static void both_done(both_t *c) {
  wd_buf_free(&c->ta);
  wd_buf_free(&c->tb);
  wd_avro_decoder_destroy(c->fast);
  wd_avro_decoder_destroy(c->generic);
  wd_registry_destroy(c->reg);
  wd_standin_stop(c->srv);
}

/* A row as text: kind, the values as changelog JSON, the absent flags. */
static void row_text(const wd_schema_t *s, const wd_row_t *r, wd_buf_t *out) {
  wd_buf_reset(out);
  cr_assert_eq(wd_buf_append(out, wd_row_kind_str(r->kind), strlen(wd_row_kind_str(r->kind))), 0);
  cr_assert_eq(wd_changelog_put_row(out, s, r), 0);
  for (size_t i = 0; i < s->ncols; i++) cr_assert_eq(wd_buf_putc(out, r->absent && r->absent[i] ? 'A' : '.'), 0);
  cr_assert_eq(wd_buf_putc(out, 0), 0);
}

/* Decodes value (and key) both ways and asserts the same outcome. */
static void same_both_ways(both_t *c, table_t *t, const void *value, size_t len, const void *key, size_t klen,
                           const char *what) {
  wd_kafka_meta_t meta = {"t", 0, 7, 1000, key, klen};
  wd_error_t *ea = wd_decode_debezium_avro(c->fast, t->src, t->schema, &meta, value, len, &t->a);
  wd_error_t *eb = wd_decode_debezium_avro(c->generic, t->src, t->schema, &meta, value, len, &t->b);
  cr_assert_eq(ea != NULL, eb != NULL, "%s: direct %s, avro-c %s", what, ea ? ea->message : "ok",
               eb ? eb->message : "ok");
  if (ea) {
    cr_assert_str_eq(ea->id ? ea->id : "", eb->id ? eb->id : "", "%s", what);
    cr_assert_eq(ea->cls, eb->cls, "%s", what);
    cr_assert_str_eq(ea->message, eb->message, "%s", what);
    cr_assert_eq(ea->index, eb->index, "%s", what);
    cr_assert_eq(t->a.count, 0);
    wd_error_destroy(ea);
    wd_error_destroy(eb);
    c->failed++;
    return;
  }
  cr_assert_eq(t->a.count, t->b.count, "%s", what);
  cr_assert_eq(t->a.flags, t->b.flags, "%s", what);
  cr_assert_eq(t->a.op, t->b.op, "%s", what);
  cr_assert_eq(t->a.ts_ms, t->b.ts_ms, "%s", what);
  for (size_t r = 0; r < t->a.count; r++) {
    row_text(t->schema, t->a.rows[r], &c->ta);
    row_text(t->schema, t->b.rows[r], &c->tb);
    cr_assert_str_eq((const char *)c->ta.data, (const char *)c->tb.data, "%s row %zu", what, r);
    cr_assert(wd_row_eq(t->schema, t->a.rows[r], t->b.rows[r], NULL) ||
                  strstr((const char *)c->ta.data, "NaN") /* NaN != NaN */,
              "%s row %zu", what, r);
  }
  c->ok++;
}

/* ---- the fixtures ------------------------------------------------------------------------- */

Test(avro_paths, fixtures_their_prefixes_and_byte_changes_decode_the_same_both_ways) {
  both_t c;
  both_init(&c);
  table_t fx, ks;
  table_new(&fx, FX_COLS, FX_N);
  table_new_ks(&ks, 0); /* another source on the same decoders: its hints are its own */
  char *ex = slurp("expected.json", NULL);
  json_t *cases = json_loads(ex, 0, NULL);
  free(ex);
  cr_assert_not_null(cases);
  size_t i;
  json_t *tc;
  size_t nrows = 0;
  json_array_foreach(cases, i, tc) {
    size_t vlen, klen;
    char *value = slurp(json_string_value(json_object_get(tc, "value")), &vlen);
    char *key = slurp(json_string_value(json_object_get(tc, "key")), &klen);
    char what[96];
    snprintf(what, sizeof(what), "%s", json_string_value(json_object_get(tc, "value")));
    same_both_ways(&c, &fx, value, vlen, key, klen, what);
    nrows += fx.a.count;
    same_both_ways(&c, &ks, value, vlen, key, klen, what); /* the other table: fields absent */
    for (size_t n = 0; n < vlen; n++) { /* every prefix */
      snprintf(what, sizeof(what), "%s[0..%zu)", json_string_value(json_object_get(tc, "value")), n);
      same_both_ways(&c, &fx, value, n, key, klen, what);
    }
    for (size_t n = 0; n < klen; n++) {
      snprintf(what, sizeof(what), "%s with key[0..%zu)", json_string_value(json_object_get(tc, "value")), n);
      same_both_ways(&c, &fx, value, vlen, key, n, what);
    }
    char *m = malloc(vlen);
    static const uint8_t XOR[] = {0x01, 0x02, 0x80, 0x7f, 0xff, 0x40};
    for (size_t n = 5; n < vlen; n++) /* every byte of the Avro part, changed */
      for (size_t x = 0; x < sizeof(XOR); x++) {
        memcpy(m, value, vlen);
        m[n] = (char)(m[n] ^ XOR[x]);
        snprintf(what, sizeof(what), "%s byte %zu ^ 0x%02x", json_string_value(json_object_get(tc, "value")), n,
                 XOR[x]);
        same_both_ways(&c, &fx, m, vlen, key, klen, what);
      }
    free(m);
    free(value);
    free(key);
  }
  /* the fixtures decode (4 of 5; v3 is an E_TYPE), and the changed bytes both decode and fail */
  cr_expect_geq(nrows, 5);
  cr_expect_gt(c.ok, 100, "%zu decoded", c.ok);
  cr_expect_gt(c.failed, 100, "%zu failed", c.failed);
  json_decref(cases);
  table_free(&fx);
  table_free(&ks);
  both_done(&c);
}

Test(avro_paths, duplicate_map_keys_nul_keys_and_sized_blocks_decode_the_same_both_ways) {
  both_t c;
  both_init(&c);
  table_t t;
  table_new(&t, HAND_COLS, sizeof(HAND_COLS) / sizeof(HAND_COLS[0]));
  /* wire header (id 103); after: id 21; m: block of 3 {a:1, b:2, a:3}, then a sized block (-2,
   * 9 bytes) {"a\0z":4, c:5}, end; arr: sized block (-2) [7, 8], block of 2 [9, 10], end;
   * s "12"; op "c" */
  static const uint8_t v[] = {0, 0,   0, 0, 103, 42, 6, 2, 'a', 2,  2,  'b', 4,  2,  'a', 6, 3,   18,  6, 'a',
                              0, 'z', 8, 2, 'c', 10, 0, 3, 4,   14, 16, 4,   18, 20, 0,   4, '1', '2', 2, 'c'};
  same_both_ways(&c, &t, v, sizeof(v), NULL, 0, "hand-written record");
  cr_assert_eq(c.ok, 1);
  cr_assert_eq(t.a.count, 1);
  wd_buf_t txt = {0};
  cr_assert_eq(wd_changelog_put_row(&txt, t.schema, t.a.rows[0]), 0);
  cr_assert_eq(wd_buf_putc(&txt, 0), 0);
  /* avro-c keeps one entry per key (C strings: "a\0z" is "a"), at its first place, with the last
   * value read */
  cr_expect_str_eq((const char *)txt.data,
                   "{\"id\":21,\"m\":{\"a\":4,\"b\":2,\"c\":5},\"m_a\":4,\"m_b\":2,\"arr\":[7,8,9,10],\"arr_2\":9,"
                   "\"s\":\"12\",\"s_int\":12}");
  for (size_t n = 5; n < sizeof(v); n++) { /* every prefix */
    char what[48];
    snprintf(what, sizeof(what), "hand-written record [0..%zu)", n);
    same_both_ways(&c, &t, v, n, NULL, 0, what);
  }
  wd_buf_free(&txt);
  table_free(&t);
  both_done(&c);
}

Test(avro_paths, arrays_of_items_without_bytes_decode_the_same_both_ways) {
  both_t c;
  both_init(&c);
  table_t t;
  table_new(&t, NULLS_COLS, sizeof(NULLS_COLS) / sizeof(NULLS_COLS[0]));
  /* id 21; nulls: a block of 1000 (zig-zag 2000 = d0 0f), a block of 5, end; op "c" */
  static const uint8_t v[] = {0, 0, 0, 0, 104, 42, 0xd0, 0x0f, 10, 0, 2, 'c'};
  same_both_ways(&c, &t, v, sizeof(v), NULL, 0, "1005 nulls");
  cr_assert_eq(c.ok, 1);
  cr_assert_eq(t.a.rows[0]->v[1].list.n, 1005);
  cr_assert(t.a.rows[0]->v[1].list.v[1004].is_null && t.a.rows[0]->v[2].is_null);
  for (size_t n = 5; n < sizeof(v); n++) same_both_ways(&c, &t, v, n, NULL, 0, "1005 nulls, cut");
  /* a count no record of this size could have been written from (2^40 items): refused at once by
   * the direct walk, as avro-c's allocations refuse it (not compared: avro-c would append 2^40
   * values first) */
  static const uint8_t huge[] = {0, 0, 0, 0, 104, 42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0, 2, 'c'};
  wd_kafka_meta_t meta = {"t", 0, 7, 1000, NULL, 0};
  wd_error_t *err = wd_decode_debezium_avro(c.fast, t.src, t.schema, &meta, huge, sizeof(huge), &t.a);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_DECODE", "%s", err->message);
  wd_error_destroy(err);
  table_free(&t);
  both_done(&c);
}

/* ---- random records ----------------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void ok(int rc) { cr_assert_eq(rc, 0, "avro-c: %s", avro_strerror()); }

static const char *const STRINGS[] = {"",
                                      "abc",
                                      "true",
                                      "false",
                                      "12.5",
                                      "-7",
                                      "42",
                                      "2024-03-01T10:00:00.123456Z",
                                      "2024-03-01T10:00:00+02:00",
                                      "2024-03-01",
                                      "10:15:30.5",
                                      "[1,2,3]",
                                      "{\"a\":1,\"b\":2}",
                                      "[1,\"x\"]",
                                      "h\xc3\xa9llo \xe2\x82\xac",
                                      "quote\"back\\slash\n",
                                      "1e400",
                                      "NaN",
                                      "99999999999999999999999"};
static const char *const KEYS[] = {"a", "b", "k1", "1", "2", "", "zz"};

/* Fills v with a random value of its type; op fields get mostly valid ops. */
static void fill(avro_value_t *v, uint64_t *r, int depth, const char *name) {
  avro_value_t c;
  switch (avro_value_get_type(v)) {
  case AVRO_NULL: ok(avro_value_set_null(v)); break;
  case AVRO_BOOLEAN: ok(avro_value_set_boolean(v, (int)(rnd(r) & 1))); break;
  case AVRO_INT32: {
    uint64_t k = rnd(r) % 10;
    /* small, ms of a day, days of 2022-2027, any, the ends */
    int32_t x = k < 6   ? (int32_t)(rnd(r) % 100000) - 1000
                : k < 7 ? (int32_t)(rnd(r) % 86400000)
                : k < 8 ? 19000 + (int32_t)(rnd(r) % 2000)
                : k < 9 ? (int32_t)rnd(r)
                        : (k & 1 ? INT32_MIN : INT32_MAX);
    ok(avro_value_set_int(v, x));
    break;
  }
  case AVRO_INT64: {
    uint64_t k = rnd(r) % 10;
    /* small, µs of 2024 (ms of year 56000: outside a TIMESTAMP), ms of 2024, any, µs of a day */
    int64_t x = k < 5   ? (int64_t)(rnd(r) % 100000) - 1000
                : k < 6 ? 1709287872000000LL + (int64_t)(rnd(r) % 1000000000000ULL)
                : k < 8 ? 1709287872000LL + (int64_t)(rnd(r) % 1000000000ULL)
                : k < 9 ? (int64_t)rnd(r)
                        : (int64_t)(rnd(r) % 86400000000ULL);
    ok(avro_value_set_long(v, x));
    break;
  }
  case AVRO_FLOAT:
  case AVRO_DOUBLE: {
    static const double D[] = {0.0, -0.0, 1.5, -2.25, 1e300, 0.1, 123456789.0, 3.0};
    uint64_t k = rnd(r) % 12;
    double d = k < 8 ? D[k] : k < 10 ? (double)(int64_t)(rnd(r) % 2000000) / 8.0 : k < 11 ? NAN : INFINITY;
    if (avro_value_get_type(v) == AVRO_FLOAT) ok(avro_value_set_float(v, (float)d));
    else ok(avro_value_set_double(v, d));
    break;
  }
  case AVRO_STRING:
    if (name && !strcmp(name, "op")) {
      static const char *const OPS[] = {"c", "r", "u", "d", "c", "u", "u", "d"}, *const BAD[] = {"t", "m", "x", "",
                                                                                                 "uu"};
      ok(avro_value_set_string(v, rnd(r) % 12 ? OPS[rnd(r) % 8] : BAD[rnd(r) % 5]));
    } else if (name && !strcmp(name, "zts") && rnd(r) % 4) {
      static const char *const TS[] = {"2024-03-01T10:00:00.123456Z", "2024-03-01T10:00:00+02:00",
                                       "2024-03-01T23:59:59Z", "1969-12-31T23:59:59.999Z"};
      ok(avro_value_set_string(v, TS[rnd(r) % 4]));
    } else if (name && !strcmp(name, "js") && rnd(r) % 4) {
      static const char *const JS[] = {"[1,2,3]", "[]", "[null,-4]", "[7]"};
      ok(avro_value_set_string(v, JS[rnd(r) % 4]));
    } else if (name && !strcmp(name, "e_str") && rnd(r) % 4) {
      static const char *const NUM[] = {"12", "-3", "0", "123456789"};
      ok(avro_value_set_string(v, NUM[rnd(r) % 4]));
    } else {
      ok(avro_value_set_string(v, STRINGS[rnd(r) % (sizeof(STRINGS) / sizeof(*STRINGS))]));
    }
    break;
  case AVRO_BYTES: {
    uint8_t b[20];
    uint64_t k = rnd(r) % 10;
    size_t n = k < 7 ? (size_t)(rnd(r) % 4) : k < 9 ? 8 : 17;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rnd(r);
    ok(avro_value_set_bytes(v, b, n));
    break;
  }
  case AVRO_FIXED: {
    size_t n = (size_t)avro_schema_fixed_size(avro_value_get_schema(v));
    uint8_t b[64];
    cr_assert(n <= sizeof(b));
    int64_t small = (int64_t)(rnd(r) % 2000000) - 1000000;
    bool random = rnd(r) % 4 == 0;
    for (size_t i = 0; i < n; i++) b[i] = random ? (uint8_t)rnd(r) : (uint8_t)((uint64_t)small >> (8 * (n - 1 - i)));
    ok(avro_value_set_fixed(v, b, n));
    break;
  }
  case AVRO_ENUM: {
    avro_schema_t s = avro_value_get_schema(v);
    ok(avro_value_set_enum(v, (int)(rnd(r) % (uint64_t)avro_schema_enum_number_of_symbols(s))));
    break;
  }
  case AVRO_ARRAY: {
    int n = depth > 3 ? 0 : (int)(rnd(r) % 4);
    for (int i = 0; i < n; i++) {
      ok(avro_value_append(v, &c, NULL));
      fill(&c, r, depth + 1, NULL);
    }
    break;
  }
  case AVRO_MAP: {
    int n = depth > 3 ? 0 : (int)(rnd(r) % 4);
    for (int i = 0; i < n; i++) {
      ok(avro_value_add(v, KEYS[rnd(r) % (sizeof(KEYS) / sizeof(*KEYS))], &c, NULL, NULL));
      fill(&c, r, depth + 1, NULL);
    }
    break;
  }
  case AVRO_RECORD: {
    size_t n = 0;
    ok(avro_value_get_size(v, &n));
    for (size_t i = 0; i < n; i++) {
      const char *fname = NULL;
      ok(avro_value_get_by_index(v, i, &c, &fname));
      fill(&c, r, depth + 1, fname);
    }
    break;
  }
  case AVRO_UNION: {
    avro_schema_t s = avro_value_get_schema(v);
    size_t nb = avro_schema_union_size(s);
    /* null branches a quarter of the time at most */
    int d = (int)(rnd(r) % nb);
    if (nb > 1 && d == 0 && rnd(r) % 2) d = 1 + (int)(rnd(r) % (nb - 1));
    if (name && (!strcmp(name, "before") || !strcmp(name, "after"))) d = rnd(r) % 16 ? 1 : 0;
    ok(avro_value_set_branch(v, d, &c));
    fill(&c, r, depth + 1, name);
    break;
  }
  default: cr_assert_fail("type %d", (int)avro_value_get_type(v));
  }
}

/* v in the wire format with schema id into out (reset first). */
static void wire(int32_t id, avro_value_t *v, wd_buf_t *out) {
  size_t size = 0;
  ok(avro_value_sizeof(v, &size));
  wd_buf_reset(out);
  cr_assert_eq(wd_buf_reserve(out, size + WD_WIRE_HEADER), 0);
  wd_wire_header(id, out->data);
  avro_writer_t w = avro_writer_memory((char *)out->data + WD_WIRE_HEADER, (int64_t)size);
  ok(avro_value_write(w, v));
  avro_writer_free(w);
  out->len = size + WD_WIRE_HEADER;
}

typedef struct {
  avro_schema_t schema;
  avro_value_iface_t *iface;
  avro_value_t v;
} gen_t;

static void gen_new(gen_t *g, const char *json) {
  ok(avro_schema_from_json_length(json, strlen(json), &g->schema));
  g->iface = avro_generic_class_from_schema(g->schema);
  cr_assert_not_null(g->iface);
  ok(avro_generic_value_new(g->iface, &g->v));
}

static void gen_free(gen_t *g) {
  avro_value_decref(&g->v);
  avro_value_iface_decref(g->iface);
  avro_schema_decref(g->schema);
}

Test(avro_paths, random_records_decode_the_same_both_ways) {
  both_t c;
  both_init(&c);
  table_t fx, ks[KS_GROUPS + 1];
  table_new(&fx, FX_COLS, FX_N);
  for (int g = 0; g <= KS_GROUPS; g++) table_new_ks(&ks[g], g);
  /* the writer schemas: the fixtures' envelopes 1, 2, 3 and key 7; every type: 100 / 102, key 101 */
  char *sj = slurp("schemas.json", NULL);
  json_t *schemas = json_loads(sj, 0, NULL);
  free(sj);
  cr_assert_not_null(schemas);
  gen_t g1, g2, g3, g7, g100, g102, g101;
  gen_new(&g1, json_string_value(json_object_get(schemas, "1")));
  gen_new(&g2, json_string_value(json_object_get(schemas, "2")));
  gen_new(&g3, json_string_value(json_object_get(schemas, "3")));
  gen_new(&g7, json_string_value(json_object_get(schemas, "7")));
  json_decref(schemas);
  gen_new(&g100, KS_ENVELOPE);
  gen_new(&g102, "[\"null\"," KS_ENVELOPE "]");
  gen_new(&g101, KS_KEY);
  struct {
    gen_t *g;
    int32_t id;
  } kinds[] = {{&g1, 1}, {&g2, 2}, {&g3, 3}, {&g100, 100}, {&g102, 102}, {&g100, 100}};
  wd_buf_t vb = {0}, kb = {0};
  uint64_t r = 0x9e3779b97f4a7c15ULL;
  size_t fx_rows = 0, ks_rows[KS_GROUPS + 1] = {0};
  for (int n = 0; n < 4000; n++) {
    size_t k = rnd(&r) % (sizeof(kinds) / sizeof(*kinds));
    bool every = kinds[k].id >= 100;
    gen_t *g = kinds[k].g, *gk = every ? &g101 : &g7;
    ok(avro_value_reset(&g->v));
    fill(&g->v, &r, 0, NULL);
    wire(kinds[k].id, &g->v, &vb);
    ok(avro_value_reset(&gk->v));
    fill(&gk->v, &r, 0, NULL);
    wire(every ? 101 : 7, &gk->v, &kb);
    char what[80];
    snprintf(what, sizeof(what), "random record %d (schema id %d)", n, (int)kinds[k].id);
    if (!every) {
      same_both_ways(&c, &fx, vb.data, vb.len, kb.data, kb.len, what);
      fx_rows += fx.a.count;
      same_both_ways(&c, &ks[0], vb.data, vb.len, kb.data, kb.len, what); /* none of its fields there */
      continue;
    }
    for (int t = 0; t <= KS_GROUPS; t++) {
      snprintf(what, sizeof(what), "random record %d (schema id %d), table %d", n, (int)kinds[k].id, t);
      same_both_ways(&c, &ks[t], vb.data, vb.len, kb.data, kb.len, what);
      ks_rows[t] += ks[t].a.count;
    }
  }
  /* enough of them decode in every table (the rest fail with the same errors both ways: values
   * out of a column's range (integers, the years 0001-9999), texts that do not parse, truncate ops, ...) */
  cr_expect_gt(fx_rows, 200, "%zu rows of the fixtures' schemas",
               fx_rows); /* ~460: a date or timestamp outside 0001-9999, or without its unit, fails */
  for (int t = 1; t < KS_GROUPS; t++) cr_expect_gt(ks_rows[t], 100, "table %d: %zu rows", t, ks_rows[t]);
  cr_expect_gt(c.failed, 500, "%zu failed", c.failed);
  cr_log_info(
      "%zu decoded, %zu failed; fixtures' schemas %zu rows; every-type tables %zu %zu %zu %zu %zu %zu %zu %zu %zu",
      c.ok, c.failed, fx_rows, ks_rows[0], ks_rows[1], ks_rows[2], ks_rows[3], ks_rows[4], ks_rows[5], ks_rows[6],
      ks_rows[7], ks_rows[8]);
  wd_buf_free(&vb);
  wd_buf_free(&kb);
  gen_free(&g1);
  gen_free(&g2);
  gen_free(&g3);
  gen_free(&g7);
  gen_free(&g100);
  gen_free(&g102);
  gen_free(&g101);
  table_free(&fx);
  for (int g = 0; g <= KS_GROUPS; g++) table_free(&ks[g]);
  both_done(&c);
}

/* Debezium's unavailable.value.placeholder (a TOAST column an UPDATE did not touch) in a
 * debezium-avro record: the column is absent from the change records (the merge keeps the stored
 * value), the same through both Avro readers, as in the JSON decoder. */
Test(avro_paths, the_unavailable_value_placeholder_is_not_carried) {
  both_t c;
  both_init(&c);
  static const char *const cols[][3] = {{"id", "BIGINT", NULL}, {"s", "STRING", NULL}};
  table_t t;
  table_new(&t, cols, 2);
  /* wire header (id 103); after: id 21, m {}, arr [], s "__debezium_unavailable_value"; op "u" */
  uint8_t v[64] = {0, 0, 0, 0, 103, 42, 0, 0, 56};
  size_t n = 9;
  memcpy(v + n, "__debezium_unavailable_value", 28);
  n += 28;
  v[n++] = 2;
  v[n++] = 'u';
  same_both_ways(&c, &t, v, n, NULL, 0, "placeholder record");
  cr_assert_eq(c.ok, 1);
  cr_assert_eq(t.a.count, 2, "an update without a before image: -U of the key, +U");
  const wd_row_t *after = t.a.rows[1];
  cr_expect_eq(after->kind, WD_UPDATE_AFTER);
  cr_expect(after->absent && after->absent[1], "s is not carried");
  cr_expect(after->v[1].is_null, "and holds nothing");
  /* with the option off the text is a value */
  cr_assert_null(wd_source_set_option(t.src, "unavailable.value.placeholder", ""));
  same_both_ways(&c, &t, v, n, NULL, 0, "placeholder record, option off");
  after = t.a.rows[1];
  cr_expect(!(after->absent && after->absent[1]));
  cr_expect(!after->v[1].is_null && after->v[1].s.n == 28);
  table_free(&t);
  both_done(&c);
}
