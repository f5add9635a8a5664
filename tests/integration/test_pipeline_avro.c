/*
 * tests/integration/test_pipeline_avro.c — `widen run` with a debezium-avro source and the avro
 * sink (Avro keys) on the real Kafka broker (WIDEN_TEST_BROKERS), black box like
 * test_pipeline.c. The schema registry is the in-process STAND-IN of tests/support (two
 * endpoints, basic auth), told to refuse its first requests so that widen's backoff is exercised.
 * The input is the fastavro-written fixtures of tests/fixtures/avro (an independent encoder):
 * create, evolved writer schema, a type change (dead-lettered with E_TYPE), update, delete.
 * The output is read back with avro-c and the schema widen registered under <topic>-value.
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
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/config.h"
#include "app/simulate.h"
#include "common/json.h"
#include "ingest/consumer.h"
#include "ingest/schema_registry.h"
#include "join/state.h"
#include "sink/producer.h"
#include "tests/support/registry_standin.h"

extern char **environ;

static const char *brokers(void) {
  const char *b = getenv("WIDEN_TEST_BROKERS");
  cr_assert(b && *b, "WIDEN_TEST_BROKERS is not set: start a broker with scripts/kafka start (scripts/test does)");
  return b;
}

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
  wd_kafka_conf_t kc = {0};
  wd_consumer_t *c = NULL;
  const char *topics[] = {topic};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, brokers()));
  cr_assert_null(wd_kafka_conf_set(&kc, "auto.offset.reset", "earliest"));
  wd_error_t *err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  cr_assert_null(err, "%s", err ? err->message : "");
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
  wd_kafka_conf_clear(&kc);
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

static char *subst(const char *in, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to);
  char *out = malloc(strlen(in) * 2 + 4096), *o = out;
  for (const char *p = in; *p;) {
    if (!strncmp(p, from, fl)) {
      memcpy(o, to, tl);
      o += tl;
      p += fl;
    } else
      *o++ = *p++;
  }
  *o = 0;
  return out;
}

Test(pipeline_avro, avro_in_avro_out_on_the_broker, .timeout = 200) {
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

  char dir[] = "/tmp/widen-it-avro-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char prefix[64], group[96], state[128], cfgpath[128], out_topic[96], dlq[128], in_topic[96];
  snprintf(prefix, sizeof(prefix), "itavro%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(group, sizeof(group), "%sgroup", prefix);
  snprintf(state, sizeof(state), "%s/state", dir);
  snprintf(cfgpath, sizeof(cfgpath), "%s/widen.yaml", dir);
  snprintf(in_topic, sizeof(in_topic), "%sorders", prefix);
  snprintf(out_topic, sizeof(out_topic), "%sout", prefix);
  snprintf(dlq, sizeof(dlq), "%s.dlq", out_topic);
  char *y1 = subst(YAML, "PREFIX", prefix), *y2 = subst(y1, "GROUP", group), *y3 = subst(y2, "STATE", state),
       *y4 = subst(y3, "URL", wd_standin_url(srv));
  FILE *f = fopen(cfgpath, "w");
  fputs(y4, f);
  fclose(f);
  free(y1);
  free(y2);
  free(y3);
  free(y4);

  /* the input, written by fastavro */
  static const char *const VALUES[] = {"v1_create.bin", "v2_evolved.bin", "v3_type_changed.bin", "v1_update.bin",
                                       "v1_delete.bin"};
  static const char *const KEYS[] = {"key_1.bin", "key_2.bin", "key_3.bin", "key_1.bin", "key_1.bin"};
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  char *v3 = NULL;
  size_t v3len = 0;
  for (size_t i = 0; i < 5; i++) {
    size_t kl, vl;
    char *key = fixture(KEYS[i], &kl), *val = fixture(VALUES[i], &vl);
    cr_assert_null(wd_producer_send(p, in_topic, key, kl, val, vl, NULL, 0));
    free(key);
    if (i == 2) {
      v3 = val;
      v3len = vl;
    } else
      free(val);
  }
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);

  /* the registry refuses the first requests: widen waits and retries */
  wd_standin_fail_next(srv, 3);
  const char *bin = getenv("WIDEN_BIN");
  cr_assert(bin && access(bin, X_OK) == 0);
  const char *argv[] = {bin, "run", "--config", cfgpath, "--quiet", "--max-idle-ms", "2500", NULL};
  setenv("WIDEN_BROKERS", brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed (status %d)", status);

  /* the output: Avro values with the registered schema, Avro keys */
  char vschema[8192];
  char subject[160];
  snprintf(subject, sizeof(subject), "%s-value", out_topic);
  cr_assert_eq(wd_standin_subject_schema(srv, subject, vschema, sizeof(vschema)), 0, "nothing registered as %s", subject);
  snprintf(subject, sizeof(subject), "%s-key", out_topic);
  char kschema[2048];
  cr_assert_eq(wd_standin_subject_schema(srv, subject, kschema, sizeof(kschema)), 0);
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
  wd_standin_stop(srv);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}
