/*
 * bench/e2e_avro.c — `widen run` end to end on a real Kafka broker with Debezium **Avro** sources
 * (Confluent wire format) through the schema-registry stand-in of tests/support.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/e2e_avro --widen build-bench/widen
 *       [--records 200000] [--keys 100000] [--sink avro|json] [--seed 1] [--work /tmp/widen-bench-e2e-avro]
 *       [--no-ceiling]
 *
 * The registry: the in-process stand-in (HTTP on 127.0.0.1, an ephemeral port) serving the
 *   fixtures' writer schemas (tests/fixtures/avro/schemas.json); widen fetches each id once and
 *   the Avro sink registers <out>-value / <out>-key there. Its CPU is this process's, not widen's.
 * Input: --records Debezium Avro envelopes generated with avro-c exactly as bench/avro.c does
 *   (writer schemas 1 and 2 mixed, c/r/u/d over --keys keys, Avro key schema 7 as the Kafka key),
 *   produced (idempotent, acks=all, murmur2) to one fresh topic <prefix>orders of 4 partitions.
 *   The table and source mapping are tests/integration/test_pipeline_avro.c's (14 columns,
 *   `address.city`, `$.source.ts_ms`, `$.source.lsn`), changelog-producer lookup, batch-size 1000.
 * Saturation: `widen run --config <that> --max-idle-ms 1500 --quiet` as a child over the backlog;
 *   input records/s per core = records / CPU s of the widen process (wait4 rusage: user + system,
 *   incl. start-up, group join, schema fetches, the 1.5 s idle wait), as bench/e2e.c. Wall rate =
 *   records / span of the output records' CreateTime timestamps.
 * Transport ceiling (unless --no-ceiling): plain librdkafka consume + produce copy of the same
 *   records in this process (bench/e2e.c phase 2), records / CPU s.
 * No latency phase (bench/e2e.c measures latency with JSON sources).
 *
 * Prints a `RESULT` line (key=value) for bench/median.py (bench/run-e2e --avro).
 */
#include <avro.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "common/buf.h"
#include "ingest/schema_registry.h"
#include "tests/support/registry_standin.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static const char *brokers;

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "e2e_avro: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

static rd_kafka_conf_t *base_conf(void) {
  char errstr[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  if (rd_kafka_conf_set(c, "bootstrap.servers", brokers, errstr, sizeof errstr)) die("%s", errstr);
  return c;
}

static void conf_set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char errstr[512];
  if (rd_kafka_conf_set(c, k, v, errstr, sizeof errstr)) die("%s", errstr);
}

static rd_kafka_t *new_producer(void) {
  char errstr[512];
  rd_kafka_conf_t *c = base_conf();
  conf_set(c, "enable.idempotence", "true");
  conf_set(c, "acks", "all");
  conf_set(c, "linger.ms", "5");
  conf_set(c, "partitioner", "murmur2_random");
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
  if (!rk) die("producer: %s", errstr);
  return rk;
}

static void create_topics(const char *prefix, const char *const *names, int n) {
  char errstr[512];
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(), errstr, sizeof errstr);
  if (!rk) die("admin: %s", errstr);
  rd_kafka_NewTopic_t *nt[8];
  char full[8][256];
  for (int i = 0; i < n; i++) {
    snprintf(full[i], sizeof full[i], "%s%s", prefix, names[i]);
    nt[i] = rd_kafka_NewTopic_new(full[i], 4, 1, errstr, sizeof errstr);
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, nt, (size_t)n, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  if (!ev) die("CreateTopics: %s", "timeout");
  const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
  size_t cnt = 0;
  const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
  for (size_t i = 0; i < cnt; i++)
    if (rd_kafka_topic_result_error(tr[i])) die("CreateTopics: %s", rd_kafka_topic_result_error_string(tr[i]));
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  for (int i = 0; i < n; i++) rd_kafka_NewTopic_destroy(nt[i]);
  rd_kafka_destroy(rk);
  usleep(500000); /* metadata propagation */
}

static pid_t start_widen(const char *widen, const char *config, const char *log) {
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    setenv("WIDEN_BROKERS", brokers, 1);
    execl(widen, widen, "run", "--config", config, "--max-idle-ms", "1500", "--quiet", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static double wait_widen(pid_t pid) {
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) die("wait4: %s", strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fprintf(stderr, "e2e: widen exited with status %d\n", status);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* An assign-mode consumer of all partitions (0..3) of topics[0..n) from the beginning. */
static rd_kafka_t *new_consumer(const char *const *topics, int n) {
  char errstr[512];
  rd_kafka_conf_t *c = base_conf();
  conf_set(c, "group.id", "widen-bench-reader");
  conf_set(c, "enable.auto.commit", "false");
  conf_set(c, "enable.partition.eof", "false");
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
  if (!rk) die("consumer: %s", errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n * 4);
  for (int i = 0; i < n; i++)
    for (int p = 0; p < 4; p++) rd_kafka_topic_partition_list_add(l, topics[i], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  return rk;
}

/* Sum of the high watermarks of topic's 4 partitions. */
static int64_t topic_end(rd_kafka_t *rk, const char *topic) {
  int64_t total = 0;
  for (int p = 0; p < 4; p++) {
    int64_t lo = 0, hi = 0;
    if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000)) die("watermarks of %s", topic);
    total += hi;
  }
  return total;
}

/* ---- the generator: Debezium Avro envelopes with avro-c (as bench/avro.c) ---------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "e2e_avro: avro-c %s: %s\n", what, avro_strerror());
    exit(1);
  }
}

/* Sets union u to its null branch (0) or its value branch (1), returning the branch in *b. */
static void branch(avro_value_t *u, int which, avro_value_t *b) {
  check(avro_value_set_branch(u, which, b), "set_branch");
  if (!which) check(avro_value_set_null(b), "set_null");
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

/* Fills the Value record img (writer schema version 1 or 2) of key id from seed. */
static void fill_image(avro_value_t *img, int64_t id, uint64_t seed, int version) {
  avro_value_t f, b, e;
  char s[48];
  uint64_t r = seed;
  check(avro_value_get_by_name(img, "id", &f, NULL), "id");
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
  if (avro_value_get_type(&b) == AVRO_INT32) avro_value_set_int(&b, 18000 + (int32_t)(rnd(&r) % 2000));
  avro_value_get_by_name(img, "created_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64) avro_value_set_long(&b, 1709287872000000LL + (int64_t)(rnd(&r) % 1000000000000ULL));
  avro_value_get_by_name(img, "updated_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64) avro_value_set_long(&b, 1709287872000LL + (int64_t)(rnd(&r) % 1000000000ULL));
  avro_value_get_by_name(img, "tags", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_ARRAY)
    for (int i = 0, n = (int)(rnd(&r) % 4); i < n; i++) {
      avro_value_append(&b, &e, NULL);
      snprintf(s, sizeof(s), "tag%d", (int)(rnd(&r) % 50));
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
  avro_value_t f, b;
  avro_value_reset(env);
  avro_value_get_by_name(env, "before", &f, NULL);
  branch(&f, op == 'u' || op == 'd', &b);
  if (op == 'u' || op == 'd') fill_image(&b, id, bseed, version);
  avro_value_get_by_name(env, "after", &f, NULL);
  branch(&f, op != 'd', &b);
  if (op != 'd') fill_image(&b, id, aseed, version);
  avro_value_t src, x;
  avro_value_get_by_name(env, "source", &src, NULL);
  static const char *const S[][2] = {{"version", "2.5.0.Final"}, {"connector", "postgresql"}, {"name", "shop"},
                                     {"db", "shop"}, {"table", "orders"}};
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

/* Appends value v in the wire format with schema id to out. */
static void wire_append(wd_buf_t *out, int32_t id, avro_value_t *v) {
  size_t sz = 0;
  check(avro_value_sizeof(v, &sz), "sizeof");
  uint8_t h[WD_WIRE_HEADER];
  wd_wire_header(id, h);
  wd_buf_append(out, h, WD_WIRE_HEADER);
  char *tmp = malloc(sz ? sz : 1);
  avro_writer_t w = avro_writer_memory(tmp, (int64_t)sz);
  check(avro_value_write(w, v), "write");
  avro_writer_free(w);
  wd_buf_append(out, tmp, sz);
  free(tmp);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n) die("cannot read %s", path);
  s[n] = 0;
  fclose(f);
  return s;
}

/* The generated input: values and keys in the wire format, back to back, with offsets. */
typedef struct {
  wd_buf_t vals, keys;
  size_t *voff, *koff;
  uint64_t n;
} input_t;

static void generate(json_t *schemas, uint64_t records, uint64_t keys, uint64_t seed, input_t *in) {
  avro_schema_t as[3];
  avro_value_iface_t *ifc[3];
  avro_value_t env[3];
  static const char *const IDS[] = {"1", "2", "7"};
  for (int i = 0; i < 3; i++) {
    const char *txt = json_string_value(json_object_get(schemas, IDS[i]));
    check(avro_schema_from_json_length(txt, strlen(txt), &as[i]), "schema");
    ifc[i] = avro_generic_class_from_schema(as[i]);
    check(avro_generic_value_new(ifc[i], &env[i]), "value_new");
  }
  memset(in, 0, sizeof *in);
  in->n = records;
  in->voff = malloc((records + 1) * sizeof(size_t));
  in->koff = malloc((records + 1) * sizeof(size_t));
  uint64_t *cur = calloc(keys, sizeof(uint64_t)); /* seed of the key's current image, 0 = absent */
  uint64_t r = 0x9e3779b97f4a7c15ULL ^ seed;
  for (uint64_t i = 0; i < records; i++) {
    uint64_t key = rnd(&r) % keys;
    int ver = (rnd(&r) % 3 == 0) ? 2 : 1;
    uint64_t ns = rnd(&r) | 1;
    char op;
    if (!cur[key])
      op = (rnd(&r) % 8 == 0) ? 'r' : 'c';
    else
      op = (rnd(&r) % 10 == 0) ? 'd' : 'u';
    fill_envelope(&env[ver - 1], ver, op, (int64_t)key + 1, cur[key], ns, 1709287872000LL + (int64_t)i, (int64_t)i + 1);
    cur[key] = op == 'd' ? 0 : ns;
    in->voff[i] = in->vals.len;
    wire_append(&in->vals, ver, &env[ver - 1]);
    avro_value_t kf;
    avro_value_reset(&env[2]);
    avro_value_get_by_name(&env[2], "id", &kf, NULL);
    avro_value_set_long(&kf, (int64_t)key + 1);
    in->koff[i] = in->keys.len;
    wire_append(&in->keys, 7, &env[2]);
  }
  in->voff[records] = in->vals.len;
  in->koff[records] = in->keys.len;
  free(cur);
  for (int i = 0; i < 3; i++) {
    avro_value_decref(&env[i]);
    avro_value_iface_decref(ifc[i]);
    avro_schema_decref(as[i]);
  }
}

/* Produces every input record to topic (unlimited rate). Returns wall seconds. */
static double produce(const char *topic, const input_t *in) {
  rd_kafka_t *rk = new_producer();
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  double t0 = bench_mono();
  for (uint64_t i = 0; i < in->n; i++) {
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_KEY(in->keys.data + in->koff[i], in->koff[i + 1] - in->koff[i]),
          RD_KAFKA_V_VALUE((void *)(in->vals.data + in->voff[i]), in->voff[i + 1] - in->voff[i]),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce: %s", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, 120000)) die("%s", "flush timed out");
  double secs = bench_mono() - t0;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return secs;
}

/* Reads the whole output topic: count, first and last CreateTime timestamp. */
static size_t read_output(const char *topic, int64_t *tmin, int64_t *tmax) {
  const char *t[1] = {topic};
  rd_kafka_t *rk = new_consumer(t, 1);
  int64_t end = topic_end(rk, topic);
  size_t n = 0;
  *tmin = INT64_MAX;
  *tmax = 0;
  double t0 = bench_mono();
  while ((int64_t)n < end && bench_mono() - t0 < 120) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) continue;
    if (!m->err) {
      int64_t ts = rd_kafka_message_timestamp(m, NULL);
      if (ts < *tmin) *tmin = ts;
      if (ts > *tmax) *tmax = ts;
      n++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return n;
}

/* The transport ceiling: copy every record of topic to out (bench/e2e.c phase 2). */
static void transport_ceiling(const char *topic, const char *out, uint64_t records, double *cpu, double *wall) {
  const char *tp[1] = {topic};
  double c0 = bench_cpu_self(), t0 = bench_mono();
  rd_kafka_t *cons = new_consumer(tp, 1);
  rd_kafka_t *prod = new_producer();
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(prod, out, NULL);
  uint64_t n = 0;
  while (n < records && bench_mono() - t0 < 300) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
    if (!m) continue;
    if (!m->err) {
      for (;;) {
        rd_kafka_resp_err_t e =
            rd_kafka_producev(prod, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_KEY(m->key, m->key_len),
                              RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_END);
        if (!e) break;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("ceiling produce: %s", rd_kafka_err2str(e));
        rd_kafka_poll(prod, 10);
      }
      n++;
      rd_kafka_poll(prod, 0);
    }
    rd_kafka_message_destroy(m);
  }
  if (rd_kafka_flush(prod, 120000)) die("%s", "ceiling flush timed out");
  *wall = bench_mono() - t0;
  *cpu = bench_cpu_self() - c0;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(prod);
  rd_kafka_consumer_close(cons);
  rd_kafka_destroy(cons);
  if (n < records) fprintf(stderr, "e2e_avro: ceiling copied only %" PRIu64 " of %" PRIu64 "\n", n, records);
}

/* The widen config: test_pipeline_avro.c's table and mapping, a real batch size. */
static void write_config(const char *path, const char *prefix, const char *group, const char *state, const char *url,
                         bool avro_sink) {
  FILE *f = fopen(path, "w");
  if (!f) die("cannot write %s", path);
  fprintf(f,
          "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: %s\n"
          "table:\n  name: orders_wide\n  schema:\n"
          "    - {name: id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
          "    - {name: amount, type: \"DECIMAL(12,2)\"}\n    - {name: order_date, type: DATE}\n"
          "    - {name: created_at, type: TIMESTAMP(6)}\n    - {name: updated_at, type: TIMESTAMP(3)}\n"
          "    - {name: tags, type: ARRAY<STRING>}\n    - {name: attrs, type: \"MAP<STRING, BIGINT>\"}\n"
          "    - {name: city, type: STRING}\n    - {name: price, type: DOUBLE}\n    - {name: paid, type: BOOLEAN}\n"
          "    - {name: src_ts, type: TIMESTAMP(3)}\n    - {name: lsn, type: BIGINT}\n    - {name: note, type: STRING}\n"
          "  primary-key: [id]\n"
          "  options:\n    changelog-producer: lookup\n"
          "sources:\n  - name: orders\n    topic: %sorders\n    format: debezium-avro\n    columns:\n"
          "      id:\n      customer:\n      amount:\n      order_date:\n      created_at:\n      updated_at:\n"
          "      tags:\n      attrs:\n      city: address.city\n      price:\n      paid:\n"
          "      src_ts: $.source.ts_ms\n      lsn: $.source.lsn\n      note:\n"
          "sink:\n  topic: %sout\n  format: %s\n%s  dead-letter-topic: %sout.dlq\n"
          "schema-registry:\n  url: %s\n  timeout: 5s\n"
          "state:\n  dir: %s\n"
          "pipeline:\n  batch-size: 1000\n  batch-timeout-ms: 100\n  status-interval-s: 0\n",
          group, prefix, prefix, avro_sink ? "avro" : "debezium-json", avro_sink ? "  key-format: avro\n" : "", prefix,
          url, state);
  fclose(f);
}

int main(int argc, char **argv) {
  const char *widen = NULL, *work = "/tmp/widen-bench-e2e-avro";
  uint64_t records = 200000, keys = 100000, seed = 1;
  bool ceiling = true, avro_sink = true;
  static const struct option lo[] = {{"widen", 1, 0, 'w'}, {"records", 1, 0, 'r'}, {"keys", 1, 0, 'k'},
                                     {"sink", 1, 0, 'S'},  {"work", 1, 0, 'W'},    {"seed", 1, 0, 's'},
                                     {"no-ceiling", 0, 0, 'N'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
      case 'w': widen = optarg; break;
      case 'r': records = strtoull(optarg, NULL, 10); break;
      case 'k': keys = strtoull(optarg, NULL, 10); break;
      case 'S':
        if (strcmp(optarg, "avro") && strcmp(optarg, "json")) die("--sink avro|json, not %s", optarg);
        avro_sink = !strcmp(optarg, "avro");
        break;
      case 'W': work = optarg; break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'N': ceiling = false; break;
      default: fprintf(stderr, "usage: see bench/e2e_avro.c\n"); return 2;
    }
  }
  brokers = getenv("WIDEN_BROKERS");
  if (!brokers || !*brokers || !widen || !records || !keys) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port e2e_avro --widen PATH [...]\n");
    return 2;
  }
  bench_rm_rf(work);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd)) return 1;

  /* the registry stand-in with the fixtures' writer schemas, and the input records */
  char *sj = slurp(WD_SOURCE_DIR "/tests/fixtures/avro/schemas.json");
  json_t *schemas = json_loads(sj, 0, NULL);
  free(sj);
  if (!schemas) die("%s", "schemas.json does not parse");
  wd_standin_t *srv = wd_standin_start(NULL, NULL);
  if (!srv) die("%s", "registry stand-in does not start");
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  input_t in;
  double g0 = bench_mono();
  generate(schemas, records, keys, seed, &in);
  json_decref(schemas);
  fprintf(stderr, "e2e_avro: generated %" PRIu64 " records (%.0f B avg value, %.0f B avg key) in %.2f s\n", records,
          (double)in.vals.len / records, (double)in.keys.len / records, bench_mono() - g0);

  char prefix[128], group[160], cfgp[4300], state[4300], logp[4300], topic[256], outt[256], ceil_t[256];
  const char *names[4] = {"orders", "out", "out.dlq", "ceiling"};
  snprintf(prefix, sizeof prefix, "benchavro%d-%" PRId64 ".", (int)getpid(), bench_wall_ms() % 100000000);
  create_topics(prefix, names, 4);
  snprintf(topic, sizeof topic, "%sorders", prefix);
  snprintf(outt, sizeof outt, "%sout", prefix);
  snprintf(ceil_t, sizeof ceil_t, "%sceiling", prefix);
  double psecs = produce(topic, &in);
  fprintf(stderr, "e2e_avro: produced %" PRIu64 " records in %.2f s (%.0f/s)\n", records, psecs, records / psecs);

  /* saturation */
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/sat.yaml", work);
  snprintf(state, sizeof state, "%s/sat-state", work);
  snprintf(logp, sizeof logp, "%s/sat.log", work);
  write_config(cfgp, prefix, group, state, wd_standin_url(srv), avro_sink);
  int req0 = wd_standin_requests(srv);
  double w0 = bench_mono();
  pid_t pid = start_widen(widen, cfgp, logp);
  double wcpu = wait_widen(pid);
  double wwall_proc = bench_mono() - w0;
  int reqs = wd_standin_requests(srv) - req0;
  int64_t tmin = 0, tmax = 0;
  size_t nout = read_output(outt, &tmin, &tmax);
  double span = nout ? (double)(tmax - tmin) / 1e3 : 0;
  double sat = span > 0 ? records / span : 0;
  char dlq[300];
  snprintf(dlq, sizeof dlq, "%sout.dlq", prefix);
  rd_kafka_t *wm = new_consumer((const char *[]){dlq}, 1);
  int64_t ndlq = topic_end(wm, dlq);
  rd_kafka_consumer_close(wm);
  rd_kafka_destroy(wm);
  printf("widen    %" PRIu64 " Avro input records -> %zu output messages (%s sink; %" PRId64 " dead letters; %d registry "
         "requests); widen CPU %.2f s -> %.0f input records/s per core; output span %.2f s -> %.0f records/s wall "
         "(process lifetime %.2f s incl. start, join, 1.5 s idle)\n",
         records, nout, avro_sink ? "Avro" : "Debezium JSON", ndlq, reqs, wcpu, records / wcpu, span, sat, wwall_proc);

  double ccpu = 0, cwall = 0;
  if (ceiling) {
    transport_ceiling(topic, ceil_t, records, &ccpu, &cwall);
    printf("ceiling  consume + produce %" PRIu64 " records: CPU %.2f s -> %.0f records/s per core; wall %.2f s -> %.0f/s\n",
           records, ccpu, records / ccpu, cwall, records / cwall);
    printf("ratio    widen/ceiling %.3f (per core)\n", ccpu / wcpu);
  }
  printf("RESULT records=%" PRIu64 " outputs=%zu dlq=%" PRId64 " widen_cpu_s=%.3f widen_rps_cpu=%.0f widen_rps_wall=%.0f "
         "ceiling_rps_cpu=%.0f ratio=%.3f\n",
         records, nout, ndlq, wcpu, records / wcpu, sat, ceiling ? records / ccpu : 0, ceiling ? ccpu / wcpu : 0);
  wd_standin_stop(srv);
  wd_buf_free(&in.vals);
  wd_buf_free(&in.keys);
  free(in.voff);
  free(in.koff);
  return 0;
}
