/*
 * bench/e2e.c — widen end to end on a real Kafka broker, and the transport ceiling.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/e2e --widen build-bench/widen
 *       [--records 300000] [--keys 100000] [--latency-seconds 20] [--rate-fraction 0.5]
 *       [--config configs/demo.yaml] [--work /tmp/widen-bench-e2e] [--no-latency] [--no-ceiling]
 *       [--guarantee exactly-once|at-least-once|both (default)|at-least-once,exactly-once]
 *       [--commit-interval-ms N] [--rate R]
 *
 * Phase 1, saturation: creates fresh topics <prefix>orders|payments|shipments (4 partitions
 *   each) and the output topic, produces --records generated Debezium JSON records (app/cli/generate.h,
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
 *   rate-fraction x the phase-1 wall rate (or at --rate R records/s) for latency-seconds, each
 *   with its send time as the Kafka timestamp, while a live reader follows the output topic
 *   (read_committed, fetch.wait.max.ms 10). Each output record is matched to the latest source
 *   record of the same key produced before it (keys are spread over --keys, so same-key records
 *   are seconds apart at these rates); latency = output record timestamp (widen's produce) -
 *   source record timestamp (ms), and visible latency = the time the live reader received it -
 *   source record timestamp (under exactly-once this includes the wait for the commit). Records
 *   sent in the first 2 s of the phase are not counted (warm-up: cold state, first commits).
 *
 * Prints a `RESULT` line (key=value) for bench/run-e2e.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/cli/generate.h"
#include "bench/bench_util.h"
#include "bench/gen_produce.h"
#include "bench/kafka_util.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static const char *const streams[3] = {"orders", "payments", "shipments"};

/* Writes the widen config: configs/demo.yaml with the topics, group and state dir replaced. */
static void write_config(const char *demo, const char *path, const char *prefix, const char *group, const char *state,
                         const char *guarantee, long commit_ms) {
  FILE *in = fopen(demo, "r"), *out = fopen(path, "w");
  if (!in || !out) bench_die("cannot open %s", demo);
  char line[1024];
  while (fgets(line, sizeof line, in)) {
    char *p;
    if ((p = strstr(line, "group.id:"))) fprintf(out, "  group.id: %s\n", group);
    else if ((p = strstr(line, "  dir: ")) && strstr(line, "state")) fprintf(out, "  dir: %s\n", state);
    else if ((p = strstr(line, "status-interval-s"))) {
      fprintf(out, "  status-interval-s: 0\n");
      fprintf(out, "  processing-guarantee: %s\n", guarantee);
      if (commit_ms >= 0) fprintf(out, "  commit-interval-ms: %ld\n", commit_ms);
    } else if ((p = strstr(line, "topic: shop.")) || (p = strstr(line, "dead-letter-topic: shop."))) {
      char *dot = strstr(p, "shop.");
      fprintf(out, "%.*s%s%s", (int)(dot - line), line, prefix, dot + 5);
    } else fputs(line, out);
  }
  fclose(in);
  fclose(out);
}

typedef struct {
  int64_t *ts;
  uint64_t *key;
  size_t n;
} outs_t;

/* The order number of an output record: the first run of digits of its key ({"order_id":N}). */
static uint64_t key_number(const rd_kafka_message_t *m) {
  uint64_t k = 0;
  const char *p = m->key;
  size_t i = 0;
  while (i < m->key_len && (p[i] < '0' || p[i] > '9')) i++;
  while (i < m->key_len && p[i] >= '0' && p[i] <= '9') k = k * 10 + (uint64_t)(p[i++] - '0');
  return k;
}

/* Reads the whole output topic, read_committed (librdkafka's default isolation level): until every
 * partition reported its end (the last stable offset; transaction markers take offsets, so the
 * high watermark is not a message count under exactly-once). */
static void read_output(const char *topic, outs_t *o) {
  rd_kafka_t *rk = bench_new_reader(topic);
  int64_t end = bench_topic_end(rk, topic); /* an upper bound of the message count */
  o->ts = malloc((end + 1) * sizeof(int64_t));
  o->key = malloc((end + 1) * sizeof(uint64_t));
  o->n = 0;
  bool at_end[4] = {false, false, false, false};
  double deadline = wd_mono_s() + 120;
  rd_kafka_message_t *m;
  while ((m = bench_reader_next(rk, at_end, deadline))) {
    if ((int64_t)o->n < end) {
      o->ts[o->n] = rd_kafka_message_timestamp(m, NULL);
      o->key[o->n++] = key_number(m);
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
  double c0 = bench_cpu_self(), t0 = wd_mono_s();
  rd_kafka_t *cons = bench_new_consumer(tp, 3);
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
  if (n < records) fprintf(stderr, "e2e: ceiling copied only %" PRIu64 " of %" PRIu64 "\n", n, records);
}

/* Phase 1 under one guarantee: fresh topics, a backlog of `records`, widen over it. Sets the
 * widen CPU seconds and the output wall rate; returns the input prefix (static buffer). */
static const char *const names[5] = {"orders", "payments", "shipments", "orders_wide", "orders_wide.dlq"};

static void saturation(const char *widen, const char *demo, const char *work, const char *guarantee, long commit_ms,
                       uint64_t keys, uint64_t records, uint64_t seed, char *prefix, size_t plen, double *wcpu_out,
                       double *sat_out) {
  char group[160], cfgp[4300], state[4300], logp[4300], outt[256];
  snprintf(prefix, plen, "bench%d-%" PRId64 "-sat-%.2s.", (int)getpid(), wd_wall_ms() % 100000000, guarantee);
  bench_create_topics(prefix, names, 5);
  double psecs = bench_produce_generated(prefix, keys, records, seed, 0, NULL);
  fprintf(stderr, "e2e: produced %" PRIu64 " records in %.2f s (%.0f/s)\n", records, psecs, records / psecs);
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/sat-%s.yaml", work, guarantee);
  snprintf(state, sizeof state, "%s/sat-state-%s", work, guarantee);
  snprintf(logp, sizeof logp, "%s/sat-%s.log", work, guarantee);
  write_config(demo, cfgp, prefix, group, state, guarantee, commit_ms);
  double w0 = wd_mono_s();
  pid_t pid = bench_start_widen(widen, cfgp, logp);
  double wcpu = bench_wait_widen(pid);
  double wwall_proc = wd_mono_s() - w0;
  double wuser = bench_last_user_s, wsys = bench_last_sys_s;
  long wcs = bench_last_ctxsw;
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
  printf("widen    [%s] %" PRIu64 " input records -> %zu output messages; widen CPU %.2f s -> %.0f input records/s "
         "per core (user %.2f s, system %.2f s, %ld context switches); output span %.2f s -> %.0f records/s wall "
         "(process lifetime %.2f s incl. start, join, 1.5 s idle)\n",
         guarantee, records, o.n, wcpu, records / wcpu, wuser, wsys, wcs, span, sat, wwall_proc);
  free(o.ts);
  free(o.key);
  *wcpu_out = wcpu;
  *sat_out = sat;
}

/* The live reader of phase 3: follows the output topic read_committed from its beginning with
 * short fetch waits (fetch.wait.max.ms 10), as a downstream consumer would, and notes for every
 * record its key, its CreateTime (set by widen's producer) and the wall-clock ms it arrived. It
 * runs until `stop` is set and every partition is at its end. */
typedef struct {
  const char *topic;
  volatile int stop;
  int64_t *ts, *recv;
  uint64_t *key;
  size_t n, cap;
} follow_t;

static void *follow_main(void *arg) {
  follow_t *f = arg;
  rd_kafka_t *rk = bench_new_reader(f->topic);
  bool at_end[4] = {false, false, false, false};
  while (!(f->stop && at_end[0] && at_end[1] && at_end[2] && at_end[3])) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 20);
    if (!m) continue;
    int64_t now = wd_wall_ms();
    if (m->partition >= 0 && m->partition < 4) {
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        at_end[m->partition] = true;
      } else if (!m->err) {
        at_end[m->partition] = false;
        if (f->n == f->cap) {
          f->cap = f->cap ? 2 * f->cap : 65536;
          f->ts = realloc(f->ts, f->cap * sizeof(int64_t));
          f->recv = realloc(f->recv, f->cap * sizeof(int64_t));
          f->key = realloc(f->key, f->cap * sizeof(uint64_t));
          if (!f->ts || !f->recv || !f->key) bench_die("%s", "follower: out of memory");
        }
        f->ts[f->n] = rd_kafka_message_timestamp(m, NULL);
        f->recv[f->n] = now;
        f->key[f->n++] = key_number(m);
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return NULL;
}

/* Phase 3 under one guarantee at `rate` records/s for lat_secs: sets p50, p99 (ms) and matched, from
 * the output records' CreateTime (when widen produced them), and v50, v99: from the time the live
 * reader got them (when a read_committed consumer can see them: under exactly-once after the
 * transaction's commit). */
static void latency_run(const char *widen, const char *demo, const char *work, const char *guarantee, long commit_ms,
                        uint64_t keys, uint64_t seed, double rate, double lat_secs, double *p50, double *p99,
                        double *v50, double *v99, double *a50, double *a99, size_t *matched) {
  char prefix[128], group[160], cfgp[4300], state[4300], logp[4300], outt[256];
  uint64_t lrec = (uint64_t)(rate * lat_secs);
  snprintf(prefix, sizeof prefix, "bench%d-%" PRId64 "-lat-%.2s.", (int)getpid(), wd_wall_ms() % 100000000, guarantee);
  bench_create_topics(prefix, names, 5);
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/lat-%s.yaml", work, guarantee);
  snprintf(state, sizeof state, "%s/lat-state-%s", work, guarantee);
  snprintf(logp, sizeof logp, "%s/lat-%s.log", work, guarantee);
  write_config(demo, cfgp, prefix, group, state, guarantee, commit_ms);
  snprintf(outt, sizeof outt, "%sorders_wide", prefix);
  follow_t fo = {.topic = outt};
  pthread_t fth;
  if (pthread_create(&fth, NULL, follow_main, &fo)) bench_die("%s", "pthread_create failed");
  pid_t pid = bench_start_widen(widen, cfgp, logp);
  sleep(5); /* start-up and group join (group.initial.rebalance.delay.ms=0 on scripts/kafka) */
  sent_t sent = {0};
  double ls = bench_produce_generated(prefix, keys, lrec, seed + 1, rate, &sent);
  double lcpu = bench_wait_widen(pid);
  fo.stop = 1;
  pthread_join(fth, NULL);
  outs_t o = {.ts = fo.ts, .key = fo.key, .n = fo.n};
  /* per key: indices of its source records in send order (linked newest first) */
  int64_t *head = malloc((keys + 1) * sizeof(int64_t));
  int64_t *prev = malloc((sent.n + 1) * sizeof(int64_t));
  for (uint64_t k = 0; k <= keys; k++) head[k] = -1;
  for (size_t i = 0; i < sent.n; i++) {
    prev[i] = head[sent.key[i]];
    head[sent.key[i]] = (int64_t)i;
  }
  /* E2E_DUMP=file: every match as "<guarantee> <sent ms> <produced ms> <received ms> <source acknowledged ms>" (wall clock) */
  const char *dpath = getenv("E2E_DUMP");
  FILE *dump = dpath && *dpath ? fopen(dpath, "a") : NULL;
  double *lat = malloc((o.n + 1) * sizeof(double));
  double *vis = malloc((o.n + 1) * sizeof(double));
  double *avis = malloc((o.n + 1) * sizeof(double)); /* from the source record's acknowledgement */
  size_t nlat = 0, nack = 0;
  /* steady state: records sent in the first 2 s (widen's first reads of cold state, the first
   * commits) are not counted */
  int64_t warm = sent.n ? sent.ts[0] + 2000 : 0;
  for (size_t i = 0; i < o.n; i++) {
    if (o.key[i] > keys) continue;
    int64_t j = head[o.key[i]];
    while (j >= 0 && sent.ts[j] > o.ts[i]) j = prev[j];
    if (j < 0 || sent.ts[j] < warm) continue;
    lat[nlat] = (double)(o.ts[i] - sent.ts[j]);
    vis[nlat++] = (double)(fo.recv[i] - sent.ts[j]);
    if (sent.acked[j] > 0) avis[nack++] = (double)(fo.recv[i] - sent.acked[j]);
    if (dump)
      fprintf(dump, "%s %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", guarantee, sent.ts[j], o.ts[i], fo.recv[i],
              sent.acked[j]);
  }
  *p50 = bench_quantile(lat, nlat, 0.50);
  *p99 = bench_quantile(lat, nlat, 0.99);
  *v50 = bench_quantile(vis, nlat, 0.50);
  *v99 = bench_quantile(vis, nlat, 0.99);
  *a50 = bench_quantile(avis, nack, 0.50);
  *a99 = bench_quantile(avis, nack, 0.99);
  *matched = nlat;
  printf("latency  [%s] %" PRIu64 " records at %.0f/s over %.1f s -> %zu outputs matched: produced p50 %.0f ms, "
         "p99 %.0f ms; visible to a read_committed reader p50 %.0f ms, p99 %.0f ms (from the source record's "
         "acknowledgement: p50 %.0f ms, p99 %.0f ms) (widen CPU %.2f s)\n",
         guarantee, lrec, rate, ls, nlat, *p50, *p99, *v50, *v99, *a50, *a99, lcpu);
  if (dump) fclose(dump);
  free(vis);
  free(avis);
  free(sent.acked);
  free(fo.recv);
  free(head);
  free(prev);
  free(lat);
  free(sent.key);
  free(sent.ts);
  free(o.ts);
  free(o.key);
}

int main(int argc, char **argv) {
  const char *demo = WD_SOURCE_DIR "/configs/demo.yaml", *widen = NULL, *work = "/tmp/widen-bench-e2e";
  const char *guarantee = "both";
  long commit_ms = -1;
  uint64_t records = 300000, keys = 100000, seed = 1;
  double lat_secs = 20, frac = 0.5, fixed_rate = 0;
  bool latency = true, ceiling = true;
  static const struct option lo[] = {{"widen", 1, 0, 'w'},         {"records", 1, 0, 'r'},
                                     {"keys", 1, 0, 'k'},          {"latency-seconds", 1, 0, 'l'},
                                     {"rate-fraction", 1, 0, 'f'}, {"config", 1, 0, 'c'},
                                     {"work", 1, 0, 'W'},          {"seed", 1, 0, 's'},
                                     {"no-latency", 0, 0, 'L'},    {"no-ceiling", 0, 0, 'N'},
                                     {"guarantee", 1, 0, 'g'},     {"commit-interval-ms", 1, 0, 'i'},
                                     {"rate", 1, 0, 'R'},          {0, 0, 0, 0}};
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
    case 'g': guarantee = optarg; break;
    case 'i': commit_ms = atol(optarg); break;
    case 'R': fixed_rate = atof(optarg); break;
    default: fprintf(stderr, "usage: see bench/e2e.c\n"); return 2;
    }
  }
  bench_prog = "e2e";
  bench_brokers = getenv("WIDEN_BROKERS");
  if (!bench_brokers || !*bench_brokers || !widen) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port e2e --widen PATH [...]\n");
    return 2;
  }
  const char *gs[2];
  int ng = 0;
  /* "both" = exactly-once then at-least-once; "at-least-once,exactly-once" reverses the order */
  char glist[64];
  snprintf(glist, sizeof glist, "%s", !strcmp(guarantee, "both") ? "exactly-once,at-least-once" : guarantee);
  for (char *tok = strtok(glist, ","); tok; tok = strtok(NULL, ",")) {
    if (ng == 2 || (strcmp(tok, "exactly-once") && strcmp(tok, "at-least-once"))) {
      fprintf(stderr, "e2e: --guarantee exactly-once|at-least-once|both|at-least-once,exactly-once\n");
      return 2;
    }
    gs[ng++] = !strcmp(tok, "exactly-once") ? "exactly-once" : "at-least-once";
  }
  if (ng == 0) {
    fprintf(stderr, "e2e: --guarantee exactly-once|at-least-once|both|at-least-once,exactly-once\n");
    return 2;
  }
  bench_rm_rf(work);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd)) return 1;

  /* ---- phase 1: saturation over a backlog, per guarantee ---- */
  char prefix[2][128];
  double wcpu[2] = {0, 0}, sat[2] = {0, 0};
  double usr[2] = {0, 0}, sys[2] = {0, 0};
  for (int g = 0; g < ng; g++) {
    saturation(widen, demo, work, gs[g], commit_ms, keys, records, seed, prefix[g], sizeof prefix[g], &wcpu[g],
               &sat[g]);
    usr[g] = bench_last_user_s;
    sys[g] = bench_last_sys_s;
  }
  if (ng == 2)
    printf("cost     exactly-once / at-least-once records per CPU s: %.3f\n",
           strcmp(gs[0], "exactly-once") ? wcpu[0] / wcpu[1] : wcpu[1] / wcpu[0]);

  /* ---- phase 2: transport ceiling over the same records ---- */
  double ccpu = 0, cwall = 0;
  if (ceiling) {
    transport_ceiling(prefix[0], records, &ccpu, &cwall);
    printf("ceiling  consume + produce %" PRIu64
           " records: CPU %.2f s -> %.0f records/s per core; wall %.2f s -> %.0f/s\n",
           records, ccpu, records / ccpu, cwall, records / cwall);
    printf("ratio    widen[%s]/ceiling %.3f (per core)\n", gs[0], (records / wcpu[0]) / (records / ccpu));
  }

  /* ---- phase 3: latency at the same fixed rate per guarantee: frac x the lower saturation rate ---- */
  double p50[2] = {0, 0}, p99[2] = {0, 0}, v50[2] = {0, 0}, v99[2] = {0, 0}, a50[2] = {0, 0}, a99[2] = {0, 0}, rate = 0;
  size_t nlat[2] = {0, 0};
  double smin = sat[0];
  for (int g = 1; g < ng; g++)
    if (sat[g] < smin) smin = sat[g];
  if (latency && smin > 0) {
    rate = fixed_rate > 0 ? fixed_rate : frac * smin;
    for (int g = 0; g < ng; g++)
      latency_run(widen, demo, work, gs[g], commit_ms, keys, seed, rate, lat_secs, &p50[g], &p99[g], &v50[g], &v99[g],
                  &a50[g], &a99[g], &nlat[g]);
  }
  /* RESULT: the first guarantee's figures under the historical names, then per guarantee */
  printf("RESULT records=%" PRIu64 " widen_cpu_s=%.3f widen_rps_cpu=%.0f widen_rps_wall=%.0f ceiling_rps_cpu=%.0f "
         "ratio=%.3f rate=%.0f p50_ms=%.0f p99_ms=%.0f matched=%zu",
         records, wcpu[0], records / wcpu[0], sat[0], ceiling ? records / ccpu : 0, ceiling ? ccpu / wcpu[0] : 0, rate,
         p50[0], p99[0], nlat[0]);
  for (int g = 0; g < ng; g++) {
    const char *t = !strcmp(gs[g], "exactly-once") ? "eo" : "alo";
    printf(" %s_rps_cpu=%.0f %s_rps_wall=%.0f %s_p50_ms=%.0f %s_p99_ms=%.0f %s_vis_p50_ms=%.0f %s_vis_p99_ms=%.0f"
           " %s_vis_ack_p50_ms=%.0f %s_vis_ack_p99_ms=%.0f %s_user_s=%.2f %s_sys_s=%.2f",
           t, records / wcpu[g], t, sat[g], t, p50[g], t, p99[g], t, v50[g], t, v99[g], t, a50[g], t, a99[g], t, usr[g],
           t, sys[g]);
  }
  if (ng == 2) printf(" eo_over_alo=%.3f", strcmp(gs[0], "exactly-once") ? wcpu[0] / wcpu[1] : wcpu[1] / wcpu[0]);
  printf("\n");
  return 0;
}
