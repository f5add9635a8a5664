/*
 * tests/fuzz/fuzz_debezium_avro.c — the debezium-avro source decoder (ingest/decode_debezium_avro.c)
 * with fixed registered schemas: the writer schemas of tests/fixtures/avro/schemas.json (ids 1, 2
 * and 3: Debezium envelopes of one table in three versions; 7: its key) served by the registry
 * stand-in (tests/support/registry_standin.h) on loopback, fetched once and then from the
 * client's cache. One input is decoded three ways: as the record value (key key_1.bin) through
 * the decoder's binary walk and through avro-c's generic values (wd_avro_decoder_set_generic), and
 * as the record key of the fixed value v1_create.bin. A wire header naming an id that is not
 * registered is given a registered one (id % 4 picks it), so that mutations reach the body
 * rather than ask the registry for ids it does not have; fuzz.h. Seeds: the .bin files of tests/fixtures/avro.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/decode_avro.h"
#include "ingest/schema_registry.h"
#include "tests/fuzz/fuzz.h"
#include "tests/support/registry_standin.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

/* the wide table of tests/unit/test_avro.c */
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
#define NCOLS (sizeof(COLS) / sizeof(*COLS))
static const int32_t IDS[] = {1, 2, 3, 7};

static struct {
  wd_standin_t *server;
  wd_registry_t *reg;
  wd_avro_decoder_t *walk, *generic;
  wd_schema_t *schema;
  wd_source_t *src;
  char *create, *key; /* v1_create.bin, key_1.bin */
  size_t create_len, key_len;
} F;

static char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/fixtures/avro/%s", WD_SOURCE_DIR, name);
  FILE *fp = fopen(path, "rb");
  if (!fp) wd_fuzz_fail("debezium-avro", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, fp) != (size_t)n) wd_fuzz_fail("debezium-avro", path);
  s[n] = 0;
  fclose(fp);
  *len = (size_t)n;
  return s;
}

/* Releases the fixed state at exit, so that a leak report at exit is a real one. */
static void teardown(void) {
  wd_source_destroy(F.src);
  wd_schema_destroy(F.schema);
  wd_avro_decoder_destroy(F.walk);
  wd_avro_decoder_destroy(F.generic);
  wd_registry_destroy(F.reg);
  wd_standin_stop(F.server);
  free(F.create);
  free(F.key);
  memset(&F, 0, sizeof(F));
}

static void setup(void) {
  if (F.src) return;
  atexit(teardown);
  if (!(F.server = wd_standin_start(NULL, NULL))) wd_fuzz_fail("debezium-avro", "the registry stand-in did not start");
  size_t n;
  char *text = slurp("schemas.json", &n);
  json_error_t jerr;
  json_t *schemas = json_loads(text, 0, &jerr);
  free(text);
  if (!schemas) wd_fuzz_fail("debezium-avro", jerr.text);
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(F.server, atoi(k), json_string_value(v));
  json_decref(schemas);
  wd_registry_conf_t rc = {wd_standin_url(F.server), NULL, NULL, 5000};
  wd_error_t *err = wd_registry_new(&rc, &F.reg);
  if (!err) err = wd_avro_decoder_new(F.reg, &F.walk);
  if (!err) err = wd_avro_decoder_new(F.reg, &F.generic);
  const char *pk[] = {"id"};
  if (!err) err = wd_schema_new(NCOLS, COLS, TYPES, 1, pk, &F.schema);
  if (!err) err = wd_source_new("orders", WD_FMT_DEBEZIUM_AVRO, &F.src);
  for (size_t i = 0; !err && i < NCOLS; i++) err = wd_source_add_column(F.src, F.schema, COLS[i], SPECS[i]);
  if (!err) err = wd_source_add_topic(F.src, "shop.public.orders");
  if (!err) err = wd_source_check(F.src, F.schema);
  if (err) wd_fuzz_fail("debezium-avro", err->message);
  wd_avro_decoder_set_generic(F.generic, true);
  F.create = slurp("v1_create.bin", &F.create_len);
  F.key = slurp("key_1.bin", &F.key_len);
}

int wd_fuzz_debezium_avro(const uint8_t *data, size_t size) {
  setup();
  uint8_t *in = malloc(size ? size : 1);
  if (!in) return 0;
  if (size) memcpy(in, data, size);
  if (size >= 5 && in[0] == 0) {
    uint32_t id = (uint32_t)in[1] << 24 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 8 | in[4];
    bool known = false;
    for (size_t i = 0; i < sizeof(IDS) / sizeof(*IDS); i++) known |= id == (uint32_t)IDS[i];
    if (!known) {
      id = (uint32_t)IDS[id % (sizeof(IDS) / sizeof(*IDS))];
      in[1] = in[2] = in[3] = 0;
      in[4] = (uint8_t)id;
    }
  }
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_kafka_meta_t meta = {"shop.public.orders", 0, 5, 1000, F.key, F.key_len};
  wd_fuzz_check_decode("debezium-avro", F.schema,
                       wd_decode_debezium_avro(F.walk, F.src, F.schema, &meta, in, size, &ch), &ch);
  wd_fuzz_check_decode("debezium-avro generic", F.schema,
                       wd_decode_debezium_avro(F.generic, F.src, F.schema, &meta, in, size, &ch), &ch);
  wd_kafka_meta_t kmeta = {"shop.public.orders", 0, 6, 1000, in, size};
  wd_fuzz_check_decode("debezium-avro key", F.schema,
                       wd_decode_debezium_avro(F.walk, F.src, F.schema, &kmeta, F.create, F.create_len, &ch), &ch);
  wd_changes_free(&ch);
  free(in);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_debezium_avro(data, size); }
#endif
