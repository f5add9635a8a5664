/*
 * bench/e2e.c — widen end to end on a real Kafka broker, and the transport ceiling.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/e2e --widen build-bench/widen
 *       [--records 300000] [--keys 100000] [--latency-seconds 20] [--rate-fraction 0.5]
 *       [--config configs/demo.yaml] [--work /tmp/widen-bench-e2e] [--no-latency] [--no-ceiling]
 *
 * Phase 1, saturation: creates fresh topics <prefix>orders|payments|shipments (4 partitions
 *   each) and the output topic, produces --records generated Debezium JSON records (app/generate.h,
 *   keyed {"order_id":N}, murmur2), then runs `widen run --config <demo.yaml with the fresh
 *   topics, group and state dir> --max-idle-ms 1500 --quiet` as a child process over that backlog.
 *   Input records/s per core = records / CPU seconds of the widen process (user + system of all
 *   its threads, from wait4's rusage; it includes start-up, the group join and the idle wait at
 *   the end, so it slightly understates). Wall rate = records / (last output timestamp - first
 *   output timestamp) (the output topic's CreateTime timestamps).
 * Phase 2, transport ceiling: in this process, a plain librdkafka consumer (assign, from the
 *   beginning, the same 12 partitions) and an idempotent acks=all linger.ms=5 murmur2 producer
 *   (widen's producer settings) copy every record's key and value unchanged to another topic,
 *   then flush: records / CPU seconds of this process during the copy.
 * Phase 3, latency: fresh topics again; widen is started first, then records are produced at
 *   rate-fraction x the phase-1 wall rate for latency-seconds, each with its send time as the
 *   Kafka timestamp. Each output record is matched to the latest source record of the same
 *   key produced before it (keys are spread over --keys, so same-key records are seconds apart
 *   at these rates); latency = output record timestamp - source record timestamp (ms).
 *
 * Prints a `RESULT` line (key=value) for bench/run-e2e.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/generate.h"
#include "bench/bench_util.h"
#include "bench/kafka_util.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static const char *const streams[3] = {"orders", "payments", "shipments"};

/* Writes the widen config: configs/demo.yaml with the topics, group and state dir replaced. */
static void write_config(const char *demo, const char *path, const char *prefix, const char *group,
                         const char *state) {
  FILE *in = fopen(demo, "r"), *out = fopen(path, "w");
  if (!in || !out) bench_die("cannot open %s", demo);
  char line[1024];
  while (fgets(line, sizeof line, in)) {
    char *p;
    if ((p = strstr(line, "group.id:")))
      fprintf(out, "  group.id: %s\n", group);
    else if ((p = strstr(line, "  dir: ")) && strstr(line, "state"))
      fprintf(out, "  dir: %s\n", state);
    else if ((p = strstr(line, "status-interval-s")))
      fprintf(out, "  status-interval-s: 0\n");
    else if ((p = strstr(line, "topic: shop.")) || (p = strstr(line, "dead-letter-topic: shop."))) {
      char *dot = strstr(p, "shop.");
      fprintf(out, "%.*s%s%s", (int)(dot - line), line, prefix, dot + 5);
    } else
      fputs(line, out);
  }
  fclose(in);
  fclose(out);
}

/* Source records of a produce phase: key (order_id) and send time, per record. */
typedef struct {
  uint64_t *key;
  int64_t *ts;
  size_t n;
} sent_t;

/* Produces `records` generated records to prefix+stream at `rate` records/s (0 = unlimited);
 * records each one's key and send time in *sent when given. Returns wall seconds. */
static double produce(const char *prefix, uint64_t keys, uint64_t records, uint64_t seed, double rate, sent_t *sent) {
  rd_kafka_t *rk = bench_new_producer();
  wd_gen_opts_t go = {0};
  go.keys = keys;
  go.records = records;
  go.seed = seed;
  go.topic_prefix = prefix;
  wd_gen_t *gen = NULL;
  if (wd_gen_new(&go, &gen)) bench_die("%s", "generator");
  rd_kafka_topic_t *rkt[3];
  for (int i = 0; i < 3; i++) {
    char t[256];
    snprintf(t, sizeof t, "%s%s", prefix, streams[i]);
    rkt[i] = rd_kafka_topic_new(rk, t, NULL);
  }
  if (sent) {
    sent->key = malloc(records * sizeof(uint64_t));
    sent->ts = malloc(records * sizeof(int64_t));
    sent->n = 0;
  }
  double t0 = bench_mono();
  wd_gen_msg_t m;
  uint64_t n = 0;
  while (wd_gen_next(gen, &m)) {
    if (rate > 0) {
      double due = t0 + (double)n / rate, now = bench_mono();
      if (due > now) usleep((useconds_t)((due - now) * 1e6));
    }
    int64_t ts = bench_wall_ms();
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt[m.stream_index]),
                                                RD_KAFKA_V_KEY(m.key, m.key_len),
                                                RD_KAFKA_V_VALUE((void *)m.value, m.value_len),
                                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(ts),
                                                RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("produce: %s", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
    if (sent) {
      sent->key[sent->n] = m.order_id;
      sent->ts[sent->n++] = ts;
    }
    n++;
    rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, 120000)) bench_die("%s", "flush timed out");
  double secs = bench_mono() - t0;
  for (int i = 0; i < 3; i++) rd_kafka_topic_destroy(rkt[i]);
  rd_kafka_destroy(rk);
  wd_gen_destroy(gen);
  return secs;
}

typedef struct {
  int64_t *ts;
  uint64_t *key;
  size_t n;
} outs_t;

/* Reads the whole output topic. */
static void read_output(const char *topic, outs_t *o) {
  const char *t[1] = {topic};
  rd_kafka_t *rk = bench_new_consumer(t, 1);
  int64_t end = bench_topic_end(rk, topic);
  o->ts = malloc((end + 1) * sizeof(int64_t));
  o->key = malloc((end + 1) * sizeof(uint64_t));
  o->n = 0;
  double t0 = bench_mono();
  while ((int64_t)o->n < end && bench_mono() - t0 < 120) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) continue;
    if (!m->err) {
      o->ts[o->n] = rd_kafka_message_timestamp(m, NULL);
      uint64_t k = 0;
      const char *p = m->key;
      size_t i = 0;
      while (i < m->key_len && (p[i] < '0' || p[i] > '9')) i++;
      while (i < m->key_len && p[i] >= '0' && p[i] <= '9') k = k * 10 + (uint64_t)(p[i++] - '0');
      o->key[o->n++] = k;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

/* The transport ceiling: copy every record of the input topics to out_topic. Sets cpu and wall. */
static void transport_ceiling(const char *prefix, uint64_t records, double *cpu, double *wall) {
  char in[3][256], out[256];
  const char *tp[3];
  for (int i = 0; i < 3; i++) {
    snprintf(in[i], sizeof in[i], "%s%s", prefix, streams[i]);
    tp[i] = in[i];
  }
  snprintf(out, sizeof out, "%sceiling", prefix);
  double c0 = bench_cpu_self(), t0 = bench_mono();
  rd_kafka_t *cons = bench_new_consumer(tp, 3);
  rd_kafka_t *prod = bench_new_producer();
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
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("ceiling produce: %s", rd_kafka_err2str(e));
        rd_kafka_poll(prod, 10);
      }
      n++;
      rd_kafka_poll(prod, 0);
    }
    rd_kafka_message_destroy(m);
  }
  if (rd_kafka_flush(prod, 120000)) bench_die("%s", "ceiling flush timed out");
  *wall = bench_mono() - t0;
  *cpu = bench_cpu_self() - c0;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(prod);
  rd_kafka_consumer_close(cons);
  rd_kafka_destroy(cons);
  if (n < records) fprintf(stderr, "e2e: ceiling copied only %" PRIu64 " of %" PRIu64 "\n", n, records);
}

int main(int argc, char **argv) {
  const char *demo = WD_SOURCE_DIR "/configs/demo.yaml", *widen = NULL, *work = "/tmp/widen-bench-e2e";
  uint64_t records = 300000, keys = 100000, seed = 1;
  double lat_secs = 20, frac = 0.5;
  bool latency = true, ceiling = true;
  static const struct option lo[] = {{"widen", 1, 0, 'w'},           {"records", 1, 0, 'r'}, {"keys", 1, 0, 'k'},
                                     {"latency-seconds", 1, 0, 'l'}, {"rate-fraction", 1, 0, 'f'},
                                     {"config", 1, 0, 'c'},          {"work", 1, 0, 'W'},    {"seed", 1, 0, 's'},
                                     {"no-latency", 0, 0, 'L'},      {"no-ceiling", 0, 0, 'N'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
      case 'w': widen = optarg; break;
      case 'r': records = strtoull(optarg, NULL, 10); break;
      case 'k': keys = strtoull(optarg, NULL, 10); break;
      case 'l': lat_secs = atof(optarg); break;
      case 'f': frac = atof(optarg); break;
      case 'c': demo = optarg; break;
      case 'W': work = optarg; break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'L': latency = false; break;
      case 'N': ceiling = false; break;
      default: fprintf(stderr, "usage: see bench/e2e.c\n"); return 2;
    }
  }
  bench_prog = "e2e";
  bench_brokers = getenv("WIDEN_BROKERS");
  if (!bench_brokers || !*bench_brokers || !widen) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port e2e --widen PATH [...]\n");
    return 2;
  }
  bench_rm_rf(work);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd)) return 1;
  char prefix[128], group[160], cfgp[4300], state[4300], logp[4300], outt[256];
  const char *names[5] = {"orders", "payments", "shipments", "orders_wide", "orders_wide.dlq"};

  /* ---- phase 1: saturation over a backlog ---- */
  snprintf(prefix, sizeof prefix, "bench%d-%" PRId64 "-sat.", (int)getpid(), bench_wall_ms() % 100000000);
  bench_create_topics(prefix, names, 5);
  double psecs = produce(prefix, keys, records, seed, 0, NULL);
  fprintf(stderr, "e2e: produced %" PRIu64 " records in %.2f s (%.0f/s)\n", records, psecs, records / psecs);
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/sat.yaml", work);
  snprintf(state, sizeof state, "%s/sat-state", work);
  snprintf(logp, sizeof logp, "%s/sat.log", work);
  write_config(demo, cfgp, prefix, group, state);
  double w0 = bench_mono();
  pid_t pid = bench_start_widen(widen, cfgp, logp);
  double wcpu = bench_wait_widen(pid);
  double wwall_proc = bench_mono() - w0;
  snprintf(outt, sizeof outt, "%sorders_wide", prefix);
  outs_t o = {0};
  read_output(outt, &o);
  int64_t tmin = INT64_MAX, tmax = 0;
  for (size_t i = 0; i < o.n; i++) {
    if (o.ts[i] < tmin) tmin = o.ts[i];
    if (o.ts[i] > tmax) tmax = o.ts[i];
  }
  double span = o.n ? (double)(tmax - tmin) / 1e3 : 0;
  double sat = span > 0 ? records / span : 0;
  printf("widen    %" PRIu64 " input records -> %zu output messages; widen CPU %.2f s -> %.0f input records/s per core; "
         "output span %.2f s -> %.0f records/s wall (process lifetime %.2f s incl. start, join, 1.5 s idle)\n",
         records, o.n, wcpu, records / wcpu, span, sat, wwall_proc);
  free(o.ts);
  free(o.key);

  /* ---- phase 2: transport ceiling over the same records ---- */
  double ccpu = 0, cwall = 0;
  if (ceiling) {
    transport_ceiling(prefix, records, &ccpu, &cwall);
    printf("ceiling  consume + produce %" PRIu64 " records: CPU %.2f s -> %.0f records/s per core; wall %.2f s -> %.0f/s\n",
           records, ccpu, records / ccpu, cwall, records / cwall);
    printf("ratio    widen/ceiling %.3f (per core)\n", (records / wcpu) / (records / ccpu));
  }

  /* ---- phase 3: latency at a fixed rate ---- */
  double p50 = 0, p99 = 0, rate = 0, lcpu = 0;
  size_t nlat = 0;
  if (latency && sat > 0) {
    rate = frac * sat;
    uint64_t lrec = (uint64_t)(rate * lat_secs);
    snprintf(prefix, sizeof prefix, "bench%d-%" PRId64 "-lat.", (int)getpid(), bench_wall_ms() % 100000000);
    bench_create_topics(prefix, names, 5);
    snprintf(group, sizeof group, "%sgroup", prefix);
    snprintf(cfgp, sizeof cfgp, "%s/lat.yaml", work);
    snprintf(state, sizeof state, "%s/lat-state", work);
    snprintf(logp, sizeof logp, "%s/lat.log", work);
    write_config(demo, cfgp, prefix, group, state);
    pid = bench_start_widen(widen, cfgp, logp);
    sleep(5); /* start-up and group join (group.initial.rebalance.delay.ms=0 on scripts/kafka) */
    sent_t sent = {0};
    double ls = produce(prefix, keys, lrec, seed + 1, rate, &sent);
    lcpu = bench_wait_widen(pid);
    snprintf(outt, sizeof outt, "%sorders_wide", prefix);
    read_output(outt, &o);
    /* per key: indices of its source records in send order (linked newest first) */
    int64_t *head = malloc((keys + 1) * sizeof(int64_t));
    int64_t *prev = malloc(sent.n * sizeof(int64_t));
    for (uint64_t k = 0; k <= keys; k++) head[k] = -1;
    for (size_t i = 0; i < sent.n; i++) {
      prev[i] = head[sent.key[i]];
      head[sent.key[i]] = (int64_t)i;
    }
    double *lat = malloc((o.n + 1) * sizeof(double));
    for (size_t i = 0; i < o.n; i++) {
      if (o.key[i] > keys) continue;
      int64_t j = head[o.key[i]];
      while (j >= 0 && sent.ts[j] > o.ts[i]) j = prev[j];
      if (j < 0) continue;
      lat[nlat++] = (double)(o.ts[i] - sent.ts[j]);
    }
    p50 = bench_quantile(lat, nlat, 0.50);
    p99 = bench_quantile(lat, nlat, 0.99);
    printf("latency  %" PRIu64 " records at %.0f/s (%.0f%% of %.0f/s) over %.1f s -> %zu outputs matched: "
           "p50 %.0f ms, p99 %.0f ms (widen CPU %.2f s)\n",
           lrec, rate, frac * 100, sat, ls, nlat, p50, p99, lcpu);
    free(head);
    free(prev);
    free(lat);
    free(sent.key);
    free(sent.ts);
    free(o.ts);
    free(o.key);
  }
  printf("RESULT records=%" PRIu64 " widen_cpu_s=%.3f widen_rps_cpu=%.0f widen_rps_wall=%.0f ceiling_rps_cpu=%.0f "
         "ratio=%.3f rate=%.0f p50_ms=%.0f p99_ms=%.0f matched=%zu\n",
         records, wcpu, records / wcpu, sat, ceiling ? records / ccpu : 0, ceiling ? ccpu / wcpu : 0, rate, p50, p99,
         nlat);
  return 0;
}
