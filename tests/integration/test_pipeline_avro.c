/*
 * tests/integration/test_pipeline_avro.c — `widen run` with a debezium-avro source and the avro
 * sink (Avro keys) on the real Kafka broker (WIDEN_TEST_BROKERS), black box like
 * test_pipeline.c. The first two tests run against a real schema registry (WIDEN_TEST_REGISTRY:
 * Apicurio Registry's Confluent-compatible API, started by scripts/registry; scripts/test and
 * .ci/run start it): the fixtures' writer schemas are registered there and the fixtures' wire
 * headers carry the ids it assigned. The tests of registry faults (an outage, 503s) use the
 * in-process STAND-IN of tests/support, which can be told to fail.
 * The input is the fastavro-written fixtures of tests/fixtures/avro (an independent encoder):
 * create, evolved writer schema, a type change (dead-lettered with E_TYPE), update, delete.
 * The output is read back with avro-c and the schema its wire header names, which must be the
 * one registered under <topic>-value.
 *
 * Second test, the Avro counterpart of test_pipeline.c's three_streams_equal_simulate: a
 * generated stream of Debezium Avro envelopes (avro-c, the fixtures' writer schemas 1 and 2 mixed
 * record by record, c/r/u/d over 4 partitions, ~20 % late by the sequence field) through
 * `widen run --trace`; the final state (RocksDB, opened after widen exited) and the output topic
 * per key (decoded from the Avro sink's wire format into rows) must equal wd_simulate_run over
 * the trace.
 */
#include <avro.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/cli/simulate.h"
#include "common/json.h"
#include "ingest/consumer.h"
#include "ingest/schema_registry.h"
#include "join/state.h"
#include "sink/producer.h"
#include "tests/support/integration.h"
#include "tests/support/json_same.h"
#include "tests/support/registry_standin.h"

extern char **environ;

static char *fixture(const char *name, size_t *len) {
  char path[512];
  const char *f = __FILE__;
  const char *end = strstr(f, "tests/integration/");
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

/* Every record of topic from the beginning (copied: key, value). */
typedef struct {
  size_t n;
  char *key[64], *value[64];
  size_t klen[64], vlen[64];
} recs_t;

static void read_topic(const char *topic, recs_t *r) {
  wd_consumer_t *c = wd_it_consumer(topic);
  memset(r, 0, sizeof(*r));
  wd_kmsg_t msgs[64];
  int idle = 0;
  while (idle < 6) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 64, 500, msgs, &n));
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n && r->n < 64; i++, r->n++) {
      r->klen[r->n] = msgs[i].key_len;
      r->vlen[r->n] = msgs[i].value_len;
      r->key[r->n] = malloc(msgs[i].key_len + 1);
      r->value[r->n] = malloc(msgs[i].value_len + 1);
      if (msgs[i].key_len) memcpy(r->key[r->n], msgs[i].key, msgs[i].key_len);
      if (msgs[i].value_len) memcpy(r->value[r->n], msgs[i].value, msgs[i].value_len);
    }
    wd_kmsg_release(msgs, n);
  }
  wd_consumer_destroy(c);
}

static void recs_free(recs_t *r) {
  for (size_t i = 0; i < r->n; i++) {
    free(r->key[i]);
    free(r->value[i]);
  }
}

static const char *YAML =
    "kafka:\n  bootstrap.servers: unused\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: orders_wide\n  schema:\n"
    "    - {name: id, type: BIGINT}\n    - {name: customer, type: STRING}\n"
    "    - {name: amount, type: \"DECIMAL(12,2)\"}\n    - {name: order_date, type: DATE}\n"
    "    - {name: created_at, type: TIMESTAMP(6)}\n    - {name: updated_at, type: TIMESTAMP(3)}\n"
    "    - {name: tags, type: ARRAY<STRING>}\n    - {name: attrs, type: \"MAP<STRING, BIGINT>\"}\n"
    "    - {name: city, type: STRING}\n    - {name: price, type: DOUBLE}\n    - {name: paid, type: BOOLEAN}\n"
    "    - {name: src_ts, type: TIMESTAMP(3)}\n    - {name: lsn, type: BIGINT}\n    - {name: note, type: STRING}\n"
    "  primary-key: id\n"
    "sources:\n  - name: orders\n    topic: PREFIXorders\n    format: debezium-avro\n    columns:\n"
    "      id:\n      customer:\n      amount:\n      order_date:\n      created_at:\n      updated_at:\n"
    "      tags:\n      attrs:\n      city: address.city\n      price:\n      paid:\n"
    "      src_ts: $.source.ts_ms\n      lsn: $.source.lsn\n      note:\n"
    "sink:\n  topic: PREFIXout\n  format: avro\n  key-format: avro\n"
    "schema-registry:\n  url: URL\n  username: alice\n  password: s3cret\n  timeout: 5s\n"
    "state:\n  dir: STATE\n"
    "pipeline:\n  batch-size: 2\n  status-interval-s: 0\n";

/* ---- the real schema registry (WIDEN_TEST_REGISTRY) ------------------------------------------ */

/* The registry's URL; the test fails with what to start when it is not set. */
static const char *real_registry(void) {
  const char *u = getenv("WIDEN_TEST_REGISTRY");
  cr_assert(u && *u, "WIDEN_TEST_REGISTRY is not set: start a registry with scripts/registry start and set it to "
                     "`scripts/registry url` (scripts/test does)");
  return u;
}

/* Registers the fixtures' writer schemas (schemas.json: fixture id -> schema) in the registry at
 * url, the value schemas under <in_topic>-value and the key schema (fixture id 7) under
 * <in_topic>-key, as a Debezium connector would; ids[fixture id] = the id the registry assigned. */
static void register_fixture_schemas(const char *url, const char *in_topic, json_t *schemas, int32_t ids[16]) {
  wd_registry_conf_t rc = {url, NULL, NULL, 10000};
  wd_registry_t *reg = NULL;
  cr_assert_null(wd_registry_new(&rc, &reg));
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) {
    int fid = atoi(k);
    cr_assert(fid > 0 && fid < 16);
    char subject[160];
    snprintf(subject, sizeof(subject), "%s-%s", in_topic, fid == 7 ? "key" : "value");
    wd_error_t *e = wd_registry_register(reg, subject, json_string_value(v), &ids[fid]);
    cr_assert_null(e, "registering fixture schema %d under %s at %s: %s", fid, subject, url, e ? e->message : "");
    cr_assert_gt(ids[fid], 0);
  }
  wd_registry_destroy(reg);
}

/* A fixture in the wire format with its schema id replaced by the registry's (ids). */
static void rewire(char *bin, size_t len, const int32_t ids[16]) {
  cr_assert(len > WD_WIRE_HEADER && bin[0] == 0);
  uint32_t fid = ((uint32_t)(uint8_t)bin[1] << 24) | ((uint32_t)(uint8_t)bin[2] << 16) |
                 ((uint32_t)(uint8_t)bin[3] << 8) | (uint8_t)bin[4];
  cr_assert(fid < 16 && ids[fid] > 0, "fixture schema id %u was not registered", fid);
  wd_wire_header(ids[fid], (uint8_t *)bin);
}

/* The schema of the records widen wrote: the id in the wire header of the first record of topic
 * (its key when key, else its value),
 * its text from the registry (*json, malloc'd), and proof that it is the schema registered under
 * subject (registering the same text there again gives the same id, and no new one). */
static int32_t written_schema(const char *url, const char *topic, int key, const char *subject, char **json) {
  wd_consumer_t *c = wd_it_consumer(topic);
  wd_kmsg_t msgs[8];
  size_t n = 0;
  for (int i = 0; i < 60 && n == 0; i++) cr_assert_null(wd_consumer_poll_batch(c, 1, 500, msgs, &n));
  cr_assert_gt(n, 0, "nothing in %s", topic);
  const uint8_t *h = key ? msgs[0].key : msgs[0].value;
  size_t hl = key ? msgs[0].key_len : msgs[0].value_len;
  cr_assert(hl > WD_WIRE_HEADER && h[0] == 0, "the first %s of %s is not in the wire format", key ? "key" : "value",
            topic);
  int32_t id = (int32_t)(((uint32_t)h[1] << 24) | ((uint32_t)h[2] << 16) | ((uint32_t)h[3] << 8) | h[4]);
  wd_kmsg_release(msgs, n);
  wd_consumer_destroy(c);
  wd_registry_conf_t rc = {url, NULL, NULL, 10000};
  wd_registry_t *reg = NULL;
  cr_assert_null(wd_registry_new(&rc, &reg));
  const char *text = NULL;
  wd_error_t *e = wd_registry_get_schema(reg, id, &text);
  cr_assert_null(e, "schema %d of %s: %s", (int)id, topic, e ? e->message : "");
  *json = strdup(text);
  int32_t again = -1;
  cr_assert_null(wd_registry_register(reg, subject, *json, &again));
  cr_assert_eq(again, id, "the schema of %s's records (id %d) is not the one under %s (%d)", topic, (int)id, subject,
               (int)again);
  wd_registry_destroy(reg);
  return id;
}

static char *subst(const char *in, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to);
  char *out = malloc(strlen(in) * 2 + 4096), *o = out;
  for (const char *p = in; *p;) {
    if (!strncmp(p, from, fl)) {
      memcpy(o, to, tl);
      o += tl;
      p += fl;
    } else *o++ = *p++;
  }
  *o = 0;
  return out;
}

Test(pipeline_avro, avro_in_avro_out_on_the_broker, .timeout = 200) {
  const char *url = real_registry();
  size_t n;
  char *schemas = fixture("schemas.json", &n);
  json_t *sj = json_loads(schemas, 0, NULL);
  free(schemas);

  char dir[] = "/tmp/widen-it-avro-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char prefix[64], group[96], state[128], cfgpath[128], out_topic[96], dlq[128], in_topic[96];
  snprintf(prefix, sizeof(prefix), "wdtest.avro%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(group, sizeof(group), "%sgroup", prefix);
  snprintf(state, sizeof(state), "%s/state", dir);
  snprintf(cfgpath, sizeof(cfgpath), "%s/widen.yaml", dir);
  snprintf(in_topic, sizeof(in_topic), "%sorders", prefix);
  snprintf(out_topic, sizeof(out_topic), "%sout", prefix);
  snprintf(dlq, sizeof(dlq), "%s.dlq", out_topic);
  char *y1 = subst(YAML, "PREFIX", prefix), *y2 = subst(y1, "GROUP", group), *y3 = subst(y2, "STATE", state),
       *y4 = subst(y3, "URL", url);
  FILE *f = fopen(cfgpath, "w");
  fputs(y4, f);
  fclose(f);
  free(y1);
  free(y2);
  free(y3);
  free(y4);

  /* the input, written by fastavro, its writer schemas registered as a Debezium connector would */
  int32_t ids[16] = {0};
  register_fixture_schemas(url, in_topic, sj, ids);
  json_decref(sj);
  static const char *const VALUES[] = {"v1_create.bin", "v2_evolved.bin", "v3_type_changed.bin", "v1_update.bin",
                                       "v1_delete.bin"};
  static const char *const KEYS[] = {"key_1.bin", "key_2.bin", "key_3.bin", "key_1.bin", "key_1.bin"};
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  char *v3 = NULL;
  size_t v3len = 0;
  for (size_t i = 0; i < 5; i++) {
    size_t kl, vl;
    char *key = fixture(KEYS[i], &kl), *val = fixture(VALUES[i], &vl);
    rewire(key, kl, ids);
    rewire(val, vl, ids);
    cr_assert_null(wd_producer_send(p, in_topic, key, kl, val, vl, NULL, 0));
    free(key);
    if (i == 2) {
      v3 = val;
      v3len = vl;
    } else free(val);
  }
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);

  const char *bin = getenv("WIDEN_BIN");
  cr_assert(bin && access(bin, X_OK) == 0);
  const char *argv[] = {bin, "run", "--config", cfgpath, "--quiet", "--max-idle-ms", "2500", NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed (status %d)", status);

  /* the output: Avro values with the schema registered under <out>-value */
  char *vschema = NULL;
  char subject[160];
  snprintf(subject, sizeof(subject), "%s-value", out_topic);
  written_schema(url, out_topic, 0, subject, &vschema);
  /* Avro keys with the schema registered under <out>-key */
  char *kschema = NULL;
  snprintf(subject, sizeof(subject), "%s-key", out_topic);
  written_schema(url, out_topic, 1, subject, &kschema);
  cr_expect(strstr(kschema, "\"id\"") != NULL, "key schema: %s", kschema);
  free(kschema);
  avro_schema_t as;
  cr_assert_eq(avro_schema_from_json_length(vschema, strlen(vschema), &as), 0);
  avro_value_iface_t *iface = avro_generic_class_from_schema(as);
  avro_value_t val;
  avro_generic_value_new(iface, &val);
  recs_t out;
  read_topic(out_topic, &out);
  char seq1[64] = "", seq2[64] = "";
  char city2[32] = "";
  for (size_t i = 0; i < out.n; i++) {
    cr_assert(out.vlen[i] > 5 && out.value[i][0] == 0, "record %zu is not in the wire format", i);
    cr_assert(out.klen[i] > 5 && out.key[i][0] == 0, "key %zu is not in the wire format", i);
    avro_reader_t rd = avro_reader_memory(out.value[i] + 5, (int64_t)out.vlen[i] - 5);
    avro_value_reset(&val);
    cr_assert_eq(avro_value_read(rd, &val), 0);
    avro_reader_free(rd);
    avro_value_t fk, fid, fcity, br;
    const char *kind;
    size_t kl;
    int64_t id;
    avro_value_get_by_name(&val, "_row_kind", &fk, NULL);
    avro_value_get_string(&fk, &kind, &kl);
    avro_value_get_by_name(&val, "id", &fid, NULL);
    avro_value_get_long(&fid, &id);
    strcat(id == 1 ? seq1 : seq2, kind);
    if (id == 2) {
      avro_value_get_by_name(&val, "city", &fcity, NULL);
      avro_value_get_current_branch(&fcity, &br);
      const char *s;
      size_t sl;
      if (!avro_value_get_string(&br, &s, &sl)) snprintf(city2, sizeof(city2), "%s", s);
    }
  }
  cr_expect_str_eq(seq1, "+I-U+U-D", "key 1: %s", seq1);
  cr_expect_str_eq(seq2, "+I", "key 2: %s", seq2);
  cr_expect_str_eq(city2, "Bergen");
  recs_free(&out);
  /* the type change is dead-lettered, bytes unchanged */
  recs_t dl;
  read_topic(dlq, &dl);
  cr_expect_eq(dl.n, 1);
  if (dl.n == 1) cr_expect(dl.vlen[0] == v3len && memcmp(dl.value[0], v3, v3len) == 0);
  recs_free(&dl);
  free(v3);
  avro_value_decref(&val);
  avro_value_iface_decref(iface);
  avro_schema_decref(as);
  free(vschema);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* ---- a generated Avro stream against simulate ---------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Sets union u to its null branch (0) or its value branch (1), returning the branch in *b. */
static void branch(avro_value_t *u, int which, avro_value_t *b) {
  cr_assert_eq(avro_value_set_branch(u, which, b), 0, "%s", avro_strerror());
  if (!which) cr_assert_eq(avro_value_set_null(b), 0);
}

/* Minimal big-endian two's complement of v (Avro decimal bytes). */
static size_t be_twos(int64_t v, uint8_t out[8]) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[7 - i] = (uint8_t)((uint64_t)v >> (8 * i));
  size_t s = 0;
  while (s < 7 && ((b[s] == 0 && !(b[s + 1] & 0x80)) || (b[s] == 0xff && (b[s + 1] & 0x80)))) s++;
  memcpy(out, b + s, 8 - s);
  return 8 - s;
}

/* Fills the Value record img (writer schema version 1 or 2) of key id from seed: every field
 * kind of the fixtures, nullable ones NULL now and then. */
static void fill_image(avro_value_t *img, int64_t id, uint64_t seed, int version) {
  avro_value_t f, b, e;
  char s[48];
  uint64_t r = seed;
  cr_assert_eq(avro_value_get_by_name(img, "id", &f, NULL), 0);
  avro_value_set_long(&f, id);
  avro_value_get_by_name(img, "customer", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_STRING) {
    snprintf(s, sizeof(s), "customer-%" PRIu64, rnd(&r) % 100000);
    avro_value_set_string(&b, s);
  }
  avro_value_get_by_name(img, "amount", &f, NULL);
  branch(&f, rnd(&r) % 7 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_BYTES) {
    uint8_t d[8];
    size_t n = be_twos((int64_t)(rnd(&r) % 20000000) - 10000000, d);
    avro_value_set_bytes(&b, d, n);
  }
  avro_value_get_by_name(img, "order_date", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT32) avro_value_set_int(&b, -100 + (int32_t)(rnd(&r) % 20000));
  avro_value_get_by_name(img, "created_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64) avro_value_set_long(&b, (int64_t)(rnd(&r) % 4000000000000000ULL) - 1000);
  avro_value_get_by_name(img, "updated_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64)
    avro_value_set_long(&b, 1709287872000LL + (int64_t)(rnd(&r) % 1000000000ULL));
  avro_value_get_by_name(img, "tags", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_ARRAY)
    for (int i = 0, n = (int)(rnd(&r) % 4); i < n; i++) {
      avro_value_append(&b, &e, NULL);
      snprintf(s, sizeof(s), "tag \"%d\"", (int)(rnd(&r) % 50));
      avro_value_set_string(&e, s);
    }
  avro_value_get_by_name(img, "attrs", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_MAP)
    for (int i = 0, n = (int)(rnd(&r) % 3); i < n; i++) {
      snprintf(s, sizeof(s), "k%d", i);
      avro_value_add(&b, s, &e, NULL, NULL);
      avro_value_set_long(&e, (int64_t)(rnd(&r) % 2001) - 1000);
    }
  avro_value_get_by_name(img, "address", &f, NULL);
  branch(&f, rnd(&r) % 4 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_RECORD) {
    avro_value_get_by_name(&b, "city", &e, NULL);
    snprintf(s, sizeof(s), "city-%d", (int)(rnd(&r) % 300));
    avro_value_set_string(&e, s);
    avro_value_t z, zb;
    avro_value_get_by_name(&b, "zip", &z, NULL);
    branch(&z, (int)(rnd(&r) & 1), &zb);
    if (avro_value_get_type(&zb) == AVRO_STRING) avro_value_set_string(&zb, "0150");
  }
  avro_value_get_by_name(img, "price", &f, NULL);
  avro_value_set_double(&f, ((double)(rnd(&r) % 2000000) - 1000000.0) / 3.0);
  avro_value_get_by_name(img, "paid", &f, NULL);
  avro_value_set_boolean(&f, (int)(rnd(&r) & 1));
  if (version == 1) {
    avro_value_get_by_name(img, "internal_flag", &f, NULL);
    avro_value_set_int(&f, 7);
  } else {
    avro_value_get_by_name(img, "note", &f, NULL);
    branch(&f, (int)(rnd(&r) & 1), &b);
    if (avro_value_get_type(&b) == AVRO_STRING) {
      snprintf(s, sizeof(s), "note %" PRIu64, rnd(&r) % 1000);
      avro_value_set_string(&b, s);
    }
  }
}

/* Fills envelope env: op, before (seed bseed) / after (seed aseed) images of key id. */
static void fill_envelope(avro_value_t *env, int version, char op, int64_t id, uint64_t bseed, uint64_t aseed,
                          int64_t ts_ms, int64_t lsn) {
  avro_value_t f, b, src, x;
  avro_value_reset(env);
  avro_value_get_by_name(env, "before", &f, NULL);
  branch(&f, op == 'u' || op == 'd', &b);
  if (op == 'u' || op == 'd') fill_image(&b, id, bseed, version);
  avro_value_get_by_name(env, "after", &f, NULL);
  branch(&f, op != 'd', &b);
  if (op != 'd') fill_image(&b, id, aseed, version);
  avro_value_get_by_name(env, "source", &src, NULL);
  static const char *const S[][2] = {
      {"version", "2.5.0.Final"}, {"connector", "postgresql"}, {"name", "shop"}, {"db", "shop"}, {"table", "orders"}};
  for (size_t i = 0; i < 5; i++) {
    avro_value_get_by_name(&src, S[i][0], &x, NULL);
    avro_value_set_string(&x, S[i][1]);
  }
  avro_value_get_by_name(&src, "ts_ms", &x, NULL);
  avro_value_set_long(&x, ts_ms);
  avro_value_get_by_name(&src, "lsn", &x, NULL);
  branch(&x, 1, &b);
  avro_value_set_long(&b, lsn);
  char ops[2] = {op, 0};
  avro_value_get_by_name(env, "op", &f, NULL);
  avro_value_set_string(&f, ops);
  avro_value_get_by_name(env, "ts_ms", &f, NULL);
  branch(&f, 1, &b);
  avro_value_set_long(&b, ts_ms + 2);
  avro_value_get_by_name(env, "transaction", &f, NULL);
  branch(&f, 0, &b);
}

/* v in the wire format with schema id: a new buffer of *len bytes. */
static char *wire(int32_t id, avro_value_t *v, size_t *len) {
  size_t sz = 0;
  cr_assert_eq(avro_value_sizeof(v, &sz), 0);
  char *out = malloc(sz + WD_WIRE_HEADER);
  wd_wire_header(id, (uint8_t *)out);
  avro_writer_t w = avro_writer_memory(out + WD_WIRE_HEADER, (int64_t)sz);
  cr_assert_eq(avro_value_write(w, v), 0, "%s", avro_strerror());
  avro_writer_free(w);
  *len = sz + WD_WIRE_HEADER;
  return out;
}

/* Produces n generated Debezium Avro records over nkeys keys (ids 1..nkeys) to topic, writer
 * schemas 1 and 2 of schemas (fixture id -> JSON text) mixed, the key schema 7, each written with
 * the registry's id for it (ids[fixture id]); the source lsn (the table's sequence field)
 * rises, but one record in five carries an older one. */
static void produce_avro_stream(const char *topic, json_t *schemas, const int32_t ids[16], uint64_t nkeys, uint64_t n,
                                uint64_t seed) {
  avro_schema_t as[3];
  avro_value_iface_t *ifc[3];
  avro_value_t env[3];
  static const char *const IDS[] = {"1", "2", "7"};
  for (int i = 0; i < 3; i++) {
    const char *txt = json_string_value(json_object_get(schemas, IDS[i]));
    cr_assert_not_null(txt);
    cr_assert_eq(avro_schema_from_json_length(txt, strlen(txt), &as[i]), 0, "%s", avro_strerror());
    ifc[i] = avro_generic_class_from_schema(as[i]);
    cr_assert_eq(avro_generic_value_new(ifc[i], &env[i]), 0);
  }
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  uint64_t *cur = calloc(nkeys, sizeof(uint64_t)); /* seed of the key's current image, 0 = absent */
  uint64_t r = 0x9e3779b97f4a7c15ULL ^ seed;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t key = rnd(&r) % nkeys;
    int ver = rnd(&r) % 3 == 0 ? 2 : 1;
    uint64_t ns = rnd(&r) | 1;
    char op = !cur[key] ? (rnd(&r) % 8 == 0 ? 'r' : 'c') : (rnd(&r) % 8 == 0 ? 'd' : 'u');
    int64_t lsn = 1000 + 2 * (int64_t)i;
    if (rnd(&r) % 5 == 0) lsn -= 2 * (int64_t)(1 + rnd(&r) % 60) + 1; /* late, and never equal */
    fill_envelope(&env[ver - 1], ver, op, (int64_t)key + 1, cur[key], ns, 1709287872000LL + (int64_t)i * 10, lsn);
    cur[key] = op == 'd' ? 0 : ns;
    avro_value_t kf;
    avro_value_reset(&env[2]);
    avro_value_get_by_name(&env[2], "id", &kf, NULL);
    avro_value_set_long(&kf, (int64_t)key + 1);
    size_t vl, kl;
    char *val = wire(ids[ver], &env[ver - 1], &vl), *k = wire(ids[7], &env[2], &kl);
    cr_assert_null(wd_producer_send(p, topic, k, kl, val, vl, NULL, 0));
    free(val);
    free(k);
  }
  wd_error_t *err = wd_producer_wait_acked(p, 60000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_producer_destroy(p);
  free(cur);
  for (int i = 0; i < 3; i++) {
    avro_value_decref(&env[i]);
    avro_value_iface_decref(ifc[i]);
    avro_schema_decref(as[i]);
  }
}

/* An Avro value written by the sink (changelog/avro.h) back into a wide-table value of type t. */
static void avro_to_value(avro_value_t *v, const wd_type_t *t, wd_value_t *out) {
  avro_value_t br;
  memset(out, 0, sizeof(*out));
  if (avro_value_get_type(v) == AVRO_UNION) {
    cr_assert_eq(avro_value_get_current_branch(v, &br), 0);
    v = &br;
  }
  if (avro_value_get_type(v) == AVRO_NULL) {
    out->is_null = true;
    return;
  }
  int32_t i32;
  int64_t i64;
  const void *p;
  const char *s;
  size_t n;
  switch (t->id) {
  case WD_BOOLEAN: {
    int x;
    cr_assert_eq(avro_value_get_boolean(v, &x), 0);
    out->b = x != 0;
    break;
  }
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_DATE:
    cr_assert_eq(avro_value_get_int(v, &i32), 0);
    out->i = i32;
    break;
  case WD_BIGINT:
    cr_assert_eq(avro_value_get_long(v, &i64), 0);
    out->i = i64;
    break;
  case WD_FLOAT: {
    float x;
    cr_assert_eq(avro_value_get_float(v, &x), 0);
    out->f = x;
    break;
  }
  case WD_DOUBLE: cr_assert_eq(avro_value_get_double(v, &out->f), 0); break;
  case WD_DECIMAL: {
    cr_assert_eq(avro_value_get_bytes(v, &p, &n), 0);
    cr_assert(n >= 1 && n <= 16, "decimal of %zu bytes", n);
    const uint8_t *b = p;
    wd_i128 u = (b[0] & 0x80) ? -1 : 0;
    for (size_t i = 0; i < n; i++) u = (wd_i128)(((unsigned __int128)u << 8) | b[i]);
    out->dec = u;
    break;
  }
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
    cr_assert_eq(avro_value_get_string(v, &s, &n), 0);
    cr_assert_eq(wd_value_set_bytes(out, s, n ? n - 1 : 0), 0); /* avro-c counts the NUL */
    break;
  case WD_BYTES:
    cr_assert_eq(avro_value_get_bytes(v, &p, &n), 0);
    cr_assert_eq(wd_value_set_bytes(out, p, n), 0);
    break;
  case WD_TIME:
    if (t->precision <= 3) {
      cr_assert_eq(avro_value_get_int(v, &i32), 0);
      out->i = (int64_t)i32 * 1000000;
    } else {
      cr_assert_eq(avro_value_get_long(v, &i64), 0);
      out->i = i64 * 1000;
    }
    break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    cr_assert_eq(avro_value_get_long(v, &i64), 0);
    out->ts.us = t->precision <= 3 ? i64 * 1000 : i64;
    break;
  case WD_ARRAY:
  case WD_ROW: {
    cr_assert_eq(avro_value_get_size(v, &n), 0);
    if (t->id == WD_ROW) cr_assert_eq(n, t->nfields);
    out->list.v = calloc(n ? n : 1, sizeof(wd_value_t));
    out->list.n = n;
    for (size_t i = 0; i < n; i++) {
      avro_value_t e;
      cr_assert_eq(avro_value_get_by_index(v, i, &e, NULL), 0);
      avro_to_value(&e, t->id == WD_ROW ? t->fields[i].type : t->elem, &out->list.v[i]);
    }
    break;
  }
  case WD_MAP: {
    cr_assert_eq(avro_value_get_size(v, &n), 0);
    out->map.k = calloc(n ? n : 1, sizeof(wd_value_t));
    out->map.v = calloc(n ? n : 1, sizeof(wd_value_t));
    out->map.n = n;
    for (size_t i = 0; i < n; i++) {
      avro_value_t e;
      const char *name;
      cr_assert_eq(avro_value_get_by_index(v, i, &e, &name), 0);
      wd_error_t *err = wd_value_parse_text(t->elem, name, strlen(name), &out->map.k[i]);
      cr_assert_null(err, "map key %s: %s", name, err ? err->message : "");
      avro_to_value(&e, t->val, &out->map.v[i]);
    }
    break;
  }
  }
}

/* Every record of the Avro sink's topic from the beginning, as {"op","row"} in partition order
 * (one key's records are in order): the value read with the schema the sink registered
 * (vschema, id vid), converted into a row of schema and written by wd_row_to_json as the trace
 * and simulate write rows. */
static json_t *read_avro_changelog(const char *topic, const char *vschema, int32_t vid, const wd_schema_t *schema) {
  avro_schema_t as;
  cr_assert_eq(avro_schema_from_json_length(vschema, strlen(vschema), &as), 0, "%s", avro_strerror());
  avro_value_iface_t *iface = avro_generic_class_from_schema(as);
  avro_value_t val;
  cr_assert_eq(avro_generic_value_new(iface, &val), 0);
  wd_consumer_t *c = wd_it_consumer(topic);
  json_t *out = json_array();
  wd_kmsg_t msgs[500];
  int idle = 0;
  while (idle < 4) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 500, 500, msgs, &n));
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n; i++) {
      int32_t id = -1;
      cr_assert_eq(wd_wire_parse(msgs[i].value, msgs[i].value_len, &id), 0, "not the wire format");
      cr_assert_eq(id, vid, "value schema id %d, registered %d", (int)id, (int)vid);
      int32_t kid = -1;
      cr_assert_eq(wd_wire_parse(msgs[i].key, msgs[i].key_len, &kid), 0, "key not in the wire format");
      avro_reader_t rd =
          avro_reader_memory((const char *)msgs[i].value + WD_WIRE_HEADER, (int64_t)msgs[i].value_len - WD_WIRE_HEADER);
      avro_value_reset(&val);
      cr_assert_eq(avro_value_read(rd, &val), 0, "%s", avro_strerror());
      avro_reader_free(rd);
      avro_value_t f;
      const char *kind;
      size_t kl;
      cr_assert_eq(avro_value_get_by_name(&val, "_row_kind", &f, NULL), 0);
      cr_assert_eq(avro_value_get_string(&f, &kind, &kl), 0);
      wd_row_t *row = wd_row_new(schema);
      cr_assert_eq(wd_row_kind_parse(kind, &row->kind), 0, "row kind %s", kind);
      for (size_t col = 0; col < schema->ncols; col++) {
        cr_assert_eq(avro_value_get_by_name(&val, schema->cols[col].name, &f, NULL), 0, "no field %s",
                     schema->cols[col].name);
        avro_to_value(&f, schema->cols[col].type, &row->v[col]);
      }
      json_array_append_new(out, json_pack("{s:s,s:o}", "op", kind, "row", wd_row_to_json(schema, row)));
      wd_row_destroy(schema, row);
    }
    wd_kmsg_release(msgs, n);
  }
  wd_consumer_destroy(c);
  avro_value_decref(&val);
  avro_value_iface_decref(iface);
  avro_schema_decref(as);
  return out;
}

/* The table of config file cfgpath as a simulate case with the trace's lines as input. */
static json_t *simulate_trace(const char *cfgpath, const char *trace, size_t *messages) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(cfgpath, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  json_t *cs = json_object(), *schema = json_array(), *pk = json_array(), *opts = json_object(), *input = json_array();
  size_t n = 0, npk = 0, nopt = 0;
  const char *const *names = wd_config_column_names(cfg, &n);
  const char *const *types = wd_config_column_types(cfg, &n);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(schema, json_pack("{s:s,s:s}", "name", names[i], "type", types[i]));
  const char *const *pkn = wd_config_primary_key(cfg, &npk);
  for (size_t i = 0; i < npk; i++) json_array_append_new(pk, json_string(pkn[i]));
  const wd_option_t *o = wd_config_table_options(cfg, &nopt);
  for (size_t i = 0; i < nopt; i++) json_object_set_new(opts, o[i].key, json_string(o[i].value));
  wd_config_destroy(cfg);
  FILE *f = fopen(trace, "r");
  cr_assert_not_null(f, "no trace at %s", trace);
  char *line = NULL;
  size_t cap = 0;
  json_int_t last = -1;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, 0, NULL);
    cr_assert_not_null(j, "bad trace line %s", line);
    json_int_t m = json_integer_value(json_object_get(j, "message"));
    if (m > last) last = m;
    json_array_append_new(input, j);
  }
  free(line);
  fclose(f);
  *messages = (size_t)(last + 1);
  json_object_set_new(cs, "schema", schema);
  json_object_set_new(cs, "primary_key", pk);
  json_object_set_new(cs, "options", opts);
  json_object_set_new(cs, "input", input);
  json_t *out = NULL;
  cr_assert_eq(wd_simulate_run(cs, "memory", 1, &out), 0);
  json_decref(cs);
  return out;
}

/* The final rows in the state directory, sorted by the integer key `id`. */
static int add_row(void *ctx, const wd_row_t *row) {
  void **c = ctx;
  json_array_append_new(c[0], wd_row_to_json(c[1], row));
  return 0;
}
static int by_id(const void *a, const void *b) {
  json_int_t p = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
  json_int_t q = json_integer_value(json_object_get(*(json_t *const *)b, "id"));
  return p < q ? -1 : p > q;
}
static json_t *state_rows(const wd_table_t *t, const char *dir) {
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &st);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_state_t *s = wd_state_new(t, st, 0);
  json_t *rows = json_array();
  void *ctx[2] = {rows, (void *)wd_table_schema(t)};
  cr_assert_null(wd_state_scan_rows(s, add_row, ctx));
  size_t n = json_array_size(rows);
  json_t **v = malloc((n + 1) * sizeof(*v));
  for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(rows, i));
  qsort(v, n, sizeof(*v), by_id);
  json_t *sorted = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(sorted, v[i]);
  free(v);
  json_decref(rows);
  wd_state_destroy(s);
  wd_store_close(st);
  return sorted;
}

/* Changelog entries {"op","row"} grouped by the row's `id`: key text -> array of [op, row]. */
static json_t *by_key_seq(json_t *cl) {
  json_t *m = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(cl, i, e) {
    char k[64];
    snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(json_object_get(e, "row"), "id")));
    json_t *seq = json_object_get(m, k);
    if (!seq) {
      seq = json_array();
      json_object_set_new(m, k, seq);
    }
    json_array_append_new(seq, json_pack("[OO]", json_object_get(e, "op"), json_object_get(e, "row")));
  }
  return m;
}

static void assert_json_eq(json_t *a, json_t *b, const char *what) {
  if (!wd_test_json_same(a, b)) {
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    cr_assert_fail("%s differ:\n got  %.1500s\n want %.1500s", what, x, y);
  }
}

/* Generated Avro envelopes (two writer schemas, c/r/u/d, late records, 4 partitions): the output
 * topic per key and the final state equal simulate over the order widen applied the records. */
Test(pipeline_avro, generated_avro_stream_equals_simulate, .timeout = 280) {
  enum { KEYS = 40, RECORDS = 800 };
  const char *url = real_registry();
  char *schemas_text = fixture("schemas.json", NULL);
  json_t *schemas = json_loads(schemas_text, 0, NULL);
  cr_assert_not_null(schemas);
  free(schemas_text);

  char dir[] = "/tmp/widen-it-avrosim-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char prefix[64], group[96], state[128], cfgpath[128], trace[128], in_topic[96], out_topic[96];
  snprintf(prefix, sizeof(prefix), "wdtest.avrosim%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(group, sizeof(group), "%sgroup", prefix);
  snprintf(state, sizeof(state), "%s/state", dir);
  snprintf(cfgpath, sizeof(cfgpath), "%s/widen.yaml", dir);
  snprintf(trace, sizeof(trace), "%s/trace.jsonl", dir);
  snprintf(in_topic, sizeof(in_topic), "%sorders", prefix);
  snprintf(out_topic, sizeof(out_topic), "%sout", prefix);
  /* the first test's table, ordered by the source lsn, with lookup changelog, bigger batches */
  char *y0 = subst(YAML, "  primary-key: id\n",
                   "  primary-key: id\n  options:\n    sequence.field: lsn\n    changelog-producer: lookup\n");
  char *y1 = subst(y0, "PREFIX", prefix), *y2 = subst(y1, "GROUP", group), *y3 = subst(y2, "STATE", state),
       *y4 = subst(y3, "URL", url), *y5 = subst(y4, "batch-size: 2\n", "batch-size: 50\n");
  FILE *f = fopen(cfgpath, "w");
  fputs(y5, f);
  fclose(f);
  free(y0);
  free(y1);
  free(y2);
  free(y3);
  free(y4);
  free(y5);

  int32_t ids[16] = {0};
  register_fixture_schemas(url, in_topic, schemas, ids);
  produce_avro_stream(in_topic, schemas, ids, KEYS, RECORDS, 21);
  json_decref(schemas);

  const char *bin = getenv("WIDEN_BIN");
  cr_assert(bin && access(bin, X_OK) == 0);
  const char *argv[] = {bin, "run", "--config", cfgpath, "--quiet", "--trace", trace, "--max-idle-ms", "2500", NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed (status %d)", status);

  /* simulate over the apply order; every record was applied */
  size_t messages = 0;
  json_t *sim = simulate_trace(cfgpath, trace, &messages);
  cr_assert(json_is_null(json_object_get(sim, "error")), "simulate reported an error");
  cr_assert_eq(messages, RECORDS, "%zu of %d records in the trace", messages, RECORDS);

  /* the final state */
  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  cr_assert_null(wd_config_load(cfgpath, &cfg));
  cr_assert_null(wd_config_build_table(cfg, &t));
  json_t *rows = state_rows(t, state);
  cr_assert_gt(json_array_size(rows), 0);
  assert_json_eq(rows, json_object_get(sim, "rows"), "final state rows vs simulate");

  /* the output topic, per key, decoded from the Avro wire format */
  char subject[160], *vschema = NULL;
  snprintf(subject, sizeof(subject), "%s-value", out_topic);
  int32_t vid = written_schema(url, out_topic, 0, subject, &vschema);
  json_t *out = read_avro_changelog(out_topic, vschema, vid, wd_table_schema(t));
  json_t *got = by_key_seq(out), *want = by_key_seq(json_object_get(sim, "changelog"));
  assert_json_eq(got, want, "output changelog per key vs simulate");
  cr_log_info("%zu records, %zu rows, %zu changelog records checked", messages, json_array_size(rows),
              json_array_size(out));
  json_decref(got);
  json_decref(want);
  json_decref(out);
  json_decref(rows);
  json_decref(sim);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  free(vschema);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* ---- a registry that stalls longer than max.poll.interval.ms -------------------------------- */

static char *fixture_path_read(const char *path) {
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, fp), (size_t)n);
  s[n] = 0;
  fclose(fp);
  return s;
}

/* The registry answers 503 for about 30 s while records wait to be decoded, three times
 * max.poll.interval.ms: widen keeps serving the consumer (paused partitions, polls) while it
 * retries, so the group never evicts it (no "maximum poll interval exceeded", no second
 * assignment), and the records come out once when the registry is back. */
Test(pipeline_avro, registry_stall_longer_than_max_poll_interval, .timeout = 240) {
  wd_standin_t *srv = wd_standin_start("alice", "s3cret");
  cr_assert_not_null(srv);
  size_t n;
  char *schemas = fixture("schemas.json", &n);
  json_t *sj = json_loads(schemas, 0, NULL);
  const char *k;
  json_t *v;
  json_object_foreach(sj, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  json_decref(sj);
  free(schemas);
  char dir[] = "/tmp/widen-it-stall-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char prefix[64], group[96], state[128], cfgpath[128], out_topic[96], in_topic[96], logpath[128];
  snprintf(prefix, sizeof(prefix), "wdtest.stall%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(group, sizeof(group), "%sgroup", prefix);
  snprintf(state, sizeof(state), "%s/state", dir);
  snprintf(cfgpath, sizeof(cfgpath), "%s/widen.yaml", dir);
  snprintf(logpath, sizeof(logpath), "%s/widen.log", dir);
  snprintf(in_topic, sizeof(in_topic), "%sorders", prefix);
  snprintf(out_topic, sizeof(out_topic), "%sout", prefix);
  char *y0 =
      subst(YAML, "    session.timeout.ms: 6000\n", "    session.timeout.ms: 6000\n    max.poll.interval.ms: 10000\n");
  char *y1 = subst(y0, "PREFIX", prefix), *y2 = subst(y1, "GROUP", group), *y3 = subst(y2, "STATE", state),
       *y4 = subst(y3, "URL", wd_standin_url(srv));
  FILE *f = fopen(cfgpath, "w");
  fputs(y4, f);
  fclose(f);
  free(y0);
  free(y1);
  free(y2);
  free(y3);
  free(y4);
  /* widen starts (registers the sink's schemas, joins the group) before the input exists; the
   * registry refuses its first 3 requests: widen waits and retries */
  wd_standin_fail_next(srv, 3);
  const char *bin = getenv("WIDEN_BIN");
  cr_assert(bin && access(bin, X_OK) == 0);
  const char *argv[] = {bin, "run", "--config", cfgpath, "--max-idle-ms", "8000", NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  for (int i = 0; i < 300 && wd_standin_requests(srv) < 3 + 2; i++) usleep(50 * 1000);
  cr_assert_geq(wd_standin_requests(srv), 3 + 2, "widen did not register its schemas after 3 refusals");
  usleep(2000 * 1000); /* the group join */
  wd_standin_fail_next(srv, 9); /* 100 ms doubling to 10 s: about 32 s of 503s */
  static const char *const VALUES[] = {"v1_create.bin", "v2_evolved.bin", "v1_update.bin"};
  static const char *const KEYS[] = {"key_1.bin", "key_2.bin", "key_1.bin"};
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  for (size_t i = 0; i < 3; i++) {
    size_t kl, vl;
    char *key = fixture(KEYS[i], &kl), *val = fixture(VALUES[i], &vl);
    cr_assert_null(wd_producer_send(p, in_topic, key, kl, val, vl, NULL, 0));
    free(key);
    free(val);
  }
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  char *log = fixture_path_read(logpath);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed (status %d): %s", status, log);
  cr_assert_geq(wd_standin_requests(srv), 3 + 2 + 9, "the registry stall was not reached");
  cr_assert_null(strstr(log, "maximum poll interval"), "the group evicted widen while it waited:\n%s", log);
  cr_assert_null(strstr(log, "lost"), "partitions were lost while widen waited:\n%s", log);
  size_t assigned = 0;
  for (const char *s = log; (s = strstr(s, "[ingest] assigned")); s++) assigned++;
  cr_assert_eq(assigned, 1, "widen was assigned %zu times (a rebalance while it waited):\n%s", assigned, log);
  /* each input change once: key 1 +I, -U, +U; key 2 +I */
  recs_t out;
  read_topic(out_topic, &out);
  cr_assert_eq(out.n, 4, "%zu output records", out.n);
  recs_free(&out);
  free(log);
  wd_standin_stop(srv);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* Spawns `widen run --config cfg --max-idle-ms idle_ms` with its stderr to logpath. */
static pid_t spawn_widen(const char *cfg, const char *idle_ms, const char *logpath) {
  const char *bin = getenv("WIDEN_BIN");
  cr_assert(bin && access(bin, X_OK) == 0);
  const char *argv[] = {bin, "run", "--config", cfg, "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

/* The record collector: a registry outage during a stop with
 * a repartitioned source. One poll batch holds a record whose writer schema is known (forwarded to
 * the repartition topic at once) and a record whose writer schema the registry refuses (503); the
 * SIGTERM comes while widen waits on it. The batch is half sent: the open commit must be aborted
 * (exit 3, nothing of it committed), not completed without the batch's source offsets. After a
 * restart with the registry back, read_committed: each input record forwarded once (3 repartition
 * records, not 4) and each change once in the output (key 1 +I, -U, +U; key 2 +I). */
Test(pipeline_avro, registry_outage_during_stop_repartitioned_nothing_forwarded_twice, .timeout = 180) {
  wd_standin_t *srv = wd_standin_start("alice", "s3cret");
  cr_assert_not_null(srv);
  size_t n;
  char *schemas = fixture("schemas.json", &n);
  json_t *sj = json_loads(schemas, 0, NULL);
  const char *k;
  json_t *v;
  json_object_foreach(sj, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  json_decref(sj);
  free(schemas);
  char dir[] = "/tmp/widen-it-rpstop-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char prefix[64], group[96], state[128], cfgpath[128], out_topic[96], in_topic[96], rp_topic[160], logpath[128];
  snprintf(prefix, sizeof(prefix), "wdtest.rpstop%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(group, sizeof(group), "%sgroup", prefix);
  snprintf(state, sizeof(state), "%s/state", dir);
  snprintf(cfgpath, sizeof(cfgpath), "%s/widen.yaml", dir);
  snprintf(logpath, sizeof(logpath), "%s/widen.log", dir);
  snprintf(in_topic, sizeof(in_topic), "%sorders", prefix);
  snprintf(out_topic, sizeof(out_topic), "%sout", prefix);
  snprintf(rp_topic, sizeof(rp_topic), "%s-orders_wide-orders-repartition", group);
  char *y0 = subst(YAML, "    format: debezium-avro\n", "    format: debezium-avro\n    repartition: true\n");
  char *y5 = subst(y0, "pipeline:\n", "pipeline:\n  tasks: per-partition\n");
  char *y1 = subst(y5, "PREFIX", prefix), *y2 = subst(y1, "GROUP", group), *y3 = subst(y2, "STATE", state),
       *y4 = subst(y3, "URL", wd_standin_url(srv));
  FILE *f = fopen(cfgpath, "w");
  fputs(y4, f);
  fclose(f);
  free(y0);
  free(y1);
  free(y2);
  free(y3);
  free(y4);
  free(y5);
  /* the input first, in one partition, so that the first poll batch (batch-size 2) holds records 1
   * and 2 */
  wd_it_create_topic(in_topic, 1);
  static const char *const VALUES[] = {"v1_create.bin", "v2_evolved.bin", "v1_update.bin"};
  static const char *const KEYS[] = {"key_1.bin", "key_2.bin", "key_1.bin"};
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  for (size_t i = 0; i < 3; i++) {
    size_t kl, vl;
    char *key = fixture(KEYS[i], &kl), *val = fixture(VALUES[i], &vl);
    cr_assert_null(wd_producer_send(p, in_topic, key, kl, val, vl, NULL, 0));
    free(key);
    free(val);
  }
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);
  wd_standin_fail_id(srv, 2); /* record 2's writer schema (v2_evolved) */
  pid_t pid = spawn_widen(cfgpath, "60000", logpath);
  for (int i = 0; i < 1200 && wd_standin_failed_id(srv) < 2; i++) usleep(50 * 1000);
  cr_assert_geq(wd_standin_failed_id(srv), 2, "widen never asked for the failing schema");
  usleep(500 * 1000);
  cr_assert_eq(kill(pid, SIGTERM), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  char *log = fixture_path_read(logpath);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3,
            "a stop with the batch half sent exits 3 (the last commit not made), got status %d:\n%s", status, log);
  cr_expect_not_null(strstr(log, "half sent"), "the stop did not find the batch half sent:\n%s", log);
  free(log);
  /* the registry back: the restart reads every record again and finishes */
  wd_standin_fail_id(srv, 0);
  pid = spawn_widen(cfgpath, "6000", logpath);
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  log = fixture_path_read(logpath);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the restart failed (status %d):\n%s", status, log);
  free(log);
  recs_t rp;
  read_topic(rp_topic, &rp);
  cr_assert_eq(rp.n, 3, "%zu records in %s read_committed: each of the 3 input records must be forwarded once", rp.n,
               rp_topic);
  recs_free(&rp);
  recs_t out;
  read_topic(out_topic, &out);
  cr_assert_eq(out.n, 4, "%zu output records (key 1 +I, -U, +U; key 2 +I)", out.n);
  recs_free(&out);
  wd_standin_stop(srv);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* ---- widen produce --format debezium-avro through the real registry ------------------------- */

/* sh -c of the formatted command; its exit status (0 = success). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The walkthrough's workload written twice by `widen produce --generate` with one seed, as
 * Debezium JSON and as Debezium Avro through the registry (--format debezium-avro), and read by
 * configs/demo.yaml and configs/demo-avro.yaml (topics, group, state and registry URL
 * substituted): both tables have the same rows, all 60 keys. The Avro schemas are registered
 * under <topic>-value and <topic>-key and the records carry their ids. */
Test(pipeline_avro, produce_debezium_avro_same_rows_as_json, .timeout = 240) {
  const char *url = real_registry();
  const char *bin = wd_it_widen_bin();
  const char *src = __FILE__;
  const char *end = strstr(src, "tests/integration/");
  cr_assert_not_null(end);
  char repo[512];
  snprintf(repo, sizeof(repo), "%.*s", (int)(end - src), src);
  char dir[] = "/tmp/widen-it-avroproduce-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char p[64];
  snprintf(p, sizeof(p), "wdtest.avprod%d%ld", (int)getpid(), (long)time(NULL) % 100000);
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  /* the two configs: the repository's, renamed into this test's topics, group and state */
  cr_assert_eq(sh("sed -e 's#shop\\.#%s.j.#g; s#\\./state/demo#%s/state-json#; s#widen-demo#%s-json#' "
                  "'%sconfigs/demo.yaml' > %s/json.yaml",
                  p, dir, p, repo, dir),
               0);
  cr_assert_eq(sh("sed -e 's#shop-avro\\.#%s.a.#g; s#\\./state/demo-avro#%s/state-avro#; s#widen-demo-avro#%s-avro#; "
                  "s#http://127.0.0.1:8081/apis/ccompat/v7#%s#' '%sconfigs/demo-avro.yaml' > %s/avro.yaml",
                  p, dir, p, url, repo, dir),
               0);
  cr_assert_eq(sh("grep -q '%s' %s/avro.yaml", url, dir), 0, "the registry URL of demo-avro.yaml was not replaced");
  const char *gen = "--generate --keys 60 --records 1500 --seed 7";
  cr_assert_eq(sh("'%s' produce %s --topic-prefix %s.j. > %s/pj.log 2>&1", bin, gen, p, dir), 0);
  cr_assert_eq(sh("'%s' produce %s --topic-prefix %s.a. --format debezium-avro --registry '%s' > %s/pa.log 2>&1", bin,
                  gen, p, url, dir),
               0, "widen produce --format debezium-avro failed: %s/pa.log", dir);
  for (int i = 0; i < 2; i++) {
    const char *name = i ? "avro" : "json";
    cr_assert_eq(
        sh("'%s' run --config %s/%s.yaml --quiet --max-idle-ms 2500 > %s/run-%s.log 2>&1", bin, dir, name, dir, name),
        0, "widen run (%s) failed: %s/run-%s.log", name, dir, name);
    cr_assert_eq(sh("'%s' rows --config %s/%s.yaml > %s/rows-%s.jsonl 2>/dev/null", bin, dir, name, dir, name), 0);
  }
  cr_assert_eq(sh("test $(wc -l < %s/rows-json.jsonl) -eq 60", dir), 0, "not 60 rows from the JSON topics");
  cr_assert_eq(sh("cmp -s %s/rows-json.jsonl %s/rows-avro.jsonl", dir, dir), 0,
               "the Avro topics gave other rows than the JSON ones (%s/rows-*.jsonl)", dir);
  /* the avro topics are in the wire format with the ids registered under <topic>-value/-key */
  char topic[128], subject[160], *schema = NULL;
  snprintf(topic, sizeof(topic), "%s.a.orders", p);
  snprintf(subject, sizeof(subject), "%s-value", topic);
  written_schema(url, topic, 0, subject, &schema);
  cr_expect(strstr(schema, "\"Envelope\"") && strstr(schema, "\"order_version\""), "%s", schema);
  free(schema);
  snprintf(subject, sizeof(subject), "%s-key", topic);
  written_schema(url, topic, 1, subject, &schema);
  cr_expect(strstr(schema, "\"order_id\"") != NULL, "%s", schema);
  free(schema);
  cr_expect_eq(sh("rm -rf '%s'", dir), 0);
}
