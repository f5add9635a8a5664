/*
 * bench/e2e_avro.c — `widen run` end to end on a real Kafka broker with Debezium **Avro** sources
 * (Confluent wire format) through the schema-registry stand-in of tests/support.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/e2e_avro --widen build-bench/widen
 *       [--records 200000] [--keys 100000] [--sink avro|json] [--seed 1] [--work /tmp/widen-bench-e2e-avro]
 *       [--no-ceiling]
 *
 * The registry: with --registry URL a real one (scripts/registry: Apicurio Registry's
 *   Confluent-compatible API, e.g. http://127.0.0.1:8081/apis/ccompat/v7; bench/run-e2e --avro
 *   starts it): the fixtures' writer schemas (tests/fixtures/avro/schemas.json) are registered
 *   under <prefix>orders-value/-key and the generated records carry the ids it assigned.
 *   Without it, the in-process stand-in (HTTP on 127.0.0.1, an ephemeral port) serving those
 *   schemas under the fixtures' ids; its CPU is this process's, not widen's. Either way widen
 *   fetches each id once and the Avro sink registers <out>-value / <out>-key there.
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

#include "bench/avro_gen.h"
#include "bench/bench_util.h"
#include "bench/kafka_util.h"
#include "common/buf.h"
#include "ingest/schema_registry.h"
#include "tests/support/registry_standin.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static double produce(const char *topic, const wd_bench_avro_input_t *in) {
  rd_kafka_t *rk = bench_new_producer();
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  double t0 = wd_mono_s();
  for (uint64_t i = 0; i < in->n; i++) {
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_KEY(in->keys.data + in->koff[i], in->koff[i + 1] - in->koff[i]),
          RD_KAFKA_V_VALUE((void *)(in->vals.data + in->voff[i]), in->voff[i + 1] - in->voff[i]),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("produce: %s", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, 120000)) bench_die("%s", "flush timed out");
  double secs = wd_mono_s() - t0;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return secs;
}

/* Reads the whole output topic read_committed (until every partition's end): count, first and
 * last CreateTime timestamp. */
static size_t read_output(const char *topic, int64_t *tmin, int64_t *tmax) {
  rd_kafka_t *rk = bench_new_reader(topic);
  size_t n = 0;
  *tmin = INT64_MAX;
  *tmax = 0;
  bool at_end[4] = {false, false, false, false};
  double deadline = wd_mono_s() + 120;
  rd_kafka_message_t *m;
  while ((m = bench_reader_next(rk, at_end, deadline))) {
    int64_t ts = rd_kafka_message_timestamp(m, NULL);
    if (ts < *tmin) *tmin = ts;
    if (ts > *tmax) *tmax = ts;
    n++;
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return n;
}

/* The transport ceiling: copy every record of topic to out (bench/e2e.c phase 2). */
static void transport_ceiling(const char *topic, const char *out, uint64_t records, double *cpu, double *wall) {
  const char *tp[1] = {topic};
  double c0 = bench_cpu_self(), t0 = wd_mono_s();
  rd_kafka_t *cons = bench_new_consumer(tp, 1);
  rd_kafka_t *prod = bench_new_producer();
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(prod, out, NULL);
  uint64_t n = 0;
  while (n < records && wd_mono_s() - t0 < 300) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
    if (!m) continue;
    if (!m->err) {
      for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(prod, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_KEY(m->key, m->key_len),
                                                  RD_KAFKA_V_VALUE(m->payload, m->len),
                                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e) break;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("ceiling produce: %s", rd_kafka_err2str(e));
        rd_kafka_poll(prod, 10);
      }
      n++;
      rd_kafka_poll(prod, 0);
    }
    rd_kafka_message_destroy(m);
  }
  if (rd_kafka_flush(prod, 120000)) bench_die("%s", "ceiling flush timed out");
  *wall = wd_mono_s() - t0;
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
  if (!f) bench_die("cannot write %s", path);
  fprintf(
      f,
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
      group, prefix, prefix, avro_sink ? "avro" : "debezium-json", avro_sink ? "  key-format: avro\n" : "", prefix, url,
      state);
  fclose(f);
}

int main(int argc, char **argv) {
  const char *widen = NULL, *work = "/tmp/widen-bench-e2e-avro";
  uint64_t records = 200000, keys = 100000, seed = 1;
  bool ceiling = true, avro_sink = true;
  static const struct option lo[] = {{"widen", 1, 0, 'w'},      {"records", 1, 0, 'r'},  {"keys", 1, 0, 'k'},
                                     {"sink", 1, 0, 'S'},       {"work", 1, 0, 'W'},     {"seed", 1, 0, 's'},
                                     {"no-ceiling", 0, 0, 'N'}, {"registry", 1, 0, 'R'}, {0, 0, 0, 0}};
  const char *registry = NULL;
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'w': widen = optarg; break;
    case 'r': records = strtoull(optarg, NULL, 10); break;
    case 'k': keys = strtoull(optarg, NULL, 10); break;
    case 'S':
      if (strcmp(optarg, "avro") && strcmp(optarg, "json")) bench_die("--sink avro|json, not %s", optarg);
      avro_sink = !strcmp(optarg, "avro");
      break;
    case 'W': work = optarg; break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'N': ceiling = false; break;
    case 'R': registry = optarg; break;
    default: fprintf(stderr, "usage: see bench/e2e_avro.c\n"); return 2;
    }
  }
  bench_prog = "e2e_avro";
  bench_brokers = getenv("WIDEN_BROKERS");
  if (!bench_brokers || !*bench_brokers || !widen || !records || !keys) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port e2e_avro --widen PATH [...]\n");
    return 2;
  }
  bench_rm_rf(work);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd)) return 1;

  /* the registry stand-in with the fixtures' writer schemas, and the input records */
  char *sj = wd_bench_slurp(WD_SOURCE_DIR "/tests/fixtures/avro/schemas.json");
  json_t *schemas = json_loads(sj, 0, NULL);
  free(sj);
  if (!schemas) bench_die("%s", "schemas.json does not parse");
  wd_standin_t *srv = NULL;
  const char *k;
  json_t *v;
  if (!registry) {
    if (!(srv = wd_standin_start(NULL, NULL))) bench_die("%s", "registry stand-in does not start");
    json_object_foreach(schemas, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  }
  wd_bench_avro_input_t in;
  double g0 = wd_mono_s();
  wd_bench_avro_generate(schemas, records, keys, seed, &in);

  char prefix[128], group[160], cfgp[4300], state[4300], logp[4300], topic[256], outt[256], ceil_t[256];
  snprintf(prefix, sizeof prefix, "benchavro%d-%" PRId64 ".", (int)getpid(), wd_wall_ms() % 100000000);
  snprintf(topic, sizeof topic, "%sorders", prefix);
  if (registry) {
    /* the real registry assigns its own ids: register, then rewrite each record's wire header */
    int32_t ids[16] = {0};
    wd_registry_conf_t rc = {registry, NULL, NULL, 10000};
    wd_registry_t *reg = NULL;
    wd_error_t *e = wd_registry_new(&rc, &reg);
    if (e) bench_die("--registry: %s", e->message);
    json_object_foreach(schemas, k, v) {
      int fid = atoi(k);
      char subject[300];
      snprintf(subject, sizeof subject, "%s-%s", topic, fid == 7 ? "key" : "value");
      if (fid <= 0 || fid >= 16) bench_die("schemas.json: id %s", k);
      if ((e = wd_registry_register(reg, subject, json_string_value(v), &ids[fid])))
        bench_die("registering a fixture schema in the registry: %s", e->message);
    }
    wd_registry_destroy(reg);
    for (int half = 0; half < 2; half++) {
      wd_buf_t *b = half ? &in.keys : &in.vals;
      size_t *off = half ? in.koff : in.voff;
      for (uint64_t i = 0; i < in.n; i++) {
        uint8_t *h = (uint8_t *)b->data + off[i];
        uint32_t fid = ((uint32_t)h[1] << 24) | ((uint32_t)h[2] << 16) | ((uint32_t)h[3] << 8) | h[4];
        if (fid >= 16 || !ids[fid]) bench_die("%s", "a generated record's schema id was not registered");
        wd_wire_header(ids[fid], h);
      }
    }
  }
  json_decref(schemas);
  fprintf(stderr, "e2e_avro: generated %" PRIu64 " records (%.0f B avg value, %.0f B avg key) in %.2f s\n", records,
          (double)in.vals.len / records, (double)in.keys.len / records, wd_mono_s() - g0);

  const char *names[4] = {"orders", "out", "out.dlq", "ceiling"};
  bench_create_topics(prefix, names, 4);
  snprintf(outt, sizeof outt, "%sout", prefix);
  snprintf(ceil_t, sizeof ceil_t, "%sceiling", prefix);
  double psecs = produce(topic, &in);
  fprintf(stderr, "e2e_avro: produced %" PRIu64 " records in %.2f s (%.0f/s)\n", records, psecs, records / psecs);

  /* saturation */
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/sat.yaml", work);
  snprintf(state, sizeof state, "%s/sat-state", work);
  snprintf(logp, sizeof logp, "%s/sat.log", work);
  write_config(cfgp, prefix, group, state, srv ? wd_standin_url(srv) : registry, avro_sink);
  int req0 = srv ? wd_standin_requests(srv) : 0;
  double w0 = wd_mono_s();
  pid_t pid = bench_start_widen(widen, cfgp, logp);
  double wcpu = bench_wait_widen(pid);
  double wwall_proc = wd_mono_s() - w0;
  int reqs = srv ? wd_standin_requests(srv) - req0 : -1; /* -1: a real registry, not counted */
  int64_t tmin = 0, tmax = 0;
  size_t nout = read_output(outt, &tmin, &tmax);
  double span = nout ? (double)(tmax - tmin) / 1e3 : 0;
  double sat = span > 0 ? records / span : 0;
  char dlq[300];
  snprintf(dlq, sizeof dlq, "%sout.dlq", prefix);
  rd_kafka_t *wm = bench_new_consumer((const char *[]){dlq}, 1);
  int64_t ndlq = bench_topic_end(wm, dlq);
  rd_kafka_consumer_close(wm);
  rd_kafka_destroy(wm);
  printf("widen    %" PRIu64 " Avro input records -> %zu output messages (%s sink; %" PRId64
         " dead letters; %d registry "
         "requests (-1: real registry %s)); widen CPU %.2f s -> %.0f input records/s per core; output span %.2f s -> "
         "%.0f records/s wall "
         "(process lifetime %.2f s incl. start, join, 1.5 s idle)\n",
         records, nout, avro_sink ? "Avro" : "Debezium JSON", ndlq, reqs, registry ? registry : "-", wcpu,
         records / wcpu, span, sat, wwall_proc);

  double ccpu = 0, cwall = 0;
  if (ceiling) {
    transport_ceiling(topic, ceil_t, records, &ccpu, &cwall);
    printf("ceiling  consume + produce %" PRIu64
           " records: CPU %.2f s -> %.0f records/s per core; wall %.2f s -> %.0f/s\n",
           records, ccpu, records / ccpu, cwall, records / cwall);
    printf("ratio    widen/ceiling %.3f (per core)\n", ccpu / wcpu);
  }
  printf("RESULT records=%" PRIu64 " outputs=%zu dlq=%" PRId64
         " widen_cpu_s=%.3f widen_rps_cpu=%.0f widen_rps_wall=%.0f "
         "ceiling_rps_cpu=%.0f ratio=%.3f\n",
         records, nout, ndlq, wcpu, records / wcpu, sat, ceiling ? records / ccpu : 0, ceiling ? ccpu / wcpu : 0);
  wd_standin_stop(srv);
  wd_bench_avro_input_free(&in);
  return 0;
}
