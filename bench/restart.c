/*
 * bench/restart.c — restart cost of `widen run` (exactly-once) with a large store, and its memory.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/restart --widen build-bench/widen --keys 1000000
 *       [--rate 5000] [--kill-after 5] [--backlog 0] [--run-after 10] [--cache-memory-mb 256]
 *       [--cache-entries N] [--no-static] [--work /tmp/widen-bench-restart] [--config configs/demo.yaml]
 *
 * 1. Store: the state directory is written directly (no Kafka) with the pipeline's own code: the
 *    table of configs/demo.yaml (join/state.h over store_rocksdb.c, wd_state_check_table as widen
 *    does), one Debezium `c` event of the orders stream per key 1..keys decoded by the orders
 *    source and merged with wd_message_apply into task 0 (the `single` task of demo.yaml), flushed
 *    every 10000 keys; then compacted. No offsets are stored: the group has none either, so the
 *    first `widen run` resumes this state (docs/exactly-once.md: S = G) instead of restoring.
 *    A prefilled store is kept in <work>/prefill-<keys> and copied for every run.
 * 2. Fresh topics; a producer child process sends generated records (app/cli/generate.h, keys
 *    1..keys, murmur2) at --rate records/s from now on until the end.
 * 3. `widen run` (exactly-once, commit-interval-ms 100) starts; once its first output record is
 *    visible read_committed, it runs --kill-after more seconds and is killed with SIGKILL (its open
 *    transaction is left to the broker). --backlog M records are then produced at full speed (the
 *    restarted process starts M records behind).
 * 4. Restart: `widen run` again on the same state directory (t0). Restart time = wall time from
 *    t0 to the first output record whose CreateTime is >= t0 arriving at a read_committed reader
 *    (fetch.wait.max.ms 10) that has followed the output topic all along. With static membership
 *    (kafka.properties group.instance.id, default) the restarted member takes over the dead one's
 *    assignment at once; --no-static leaves it out (the group then waits for the dead member's
 *    session timeout, librdkafka's default 45 s).
 * 5. The restarted process runs --run-after seconds more (after its first output), is stopped with
 *    SIGTERM and reaped with wait4: peak RSS (ru_maxrss) and CPU seconds. Its log says whether a
 *    task was restored (it must not be: "rebuilt from the beginning").
 *
 * Prints a `RESULT` line (key=value) for bench/run-restart.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "bench/bench_util.h"
#include "bench/kafka_util.h"
#include "ingest/source.h"
#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static const char *const streams[3] = {"orders", "payments", "shipments"};
static const char *const names[5] = {"orders", "payments", "shipments", "orders_wide", "orders_wide.dlq"};

static void die_err(const char *what, wd_error_t *err) {
  fprintf(stderr, "restart: %s: %s\n", what, err ? err->message : "failed");
  exit(1);
}

/* configs/demo.yaml with the topics, group, state dir, cache budgets and (static) kafka properties. */
static void write_config(const char *demo, const char *path, const char *prefix, const char *group, const char *state,
                         long cache_mb, long cache_entries, bool static_member) {
  FILE *in = fopen(demo, "r"), *out = fopen(path, "w");
  if (!in || !out) bench_die("cannot open %s", demo);
  char line[1024];
  while (fgets(line, sizeof line, in)) {
    char *p;
    if ((p = strstr(line, "group.id:"))) {
      fprintf(out, "  group.id: %s\n", group);
      if (static_member) fprintf(out, "  properties:\n    group.instance.id: %sinstance\n", prefix);
    } else if ((p = strstr(line, "  dir: ")) && strstr(line, "state")) {
      fprintf(out, "  dir: %s\n", state);
      fprintf(out, "  cache-memory-mb: %ld\n", cache_mb);
      if (cache_entries > 0) fprintf(out, "  cache-entries: %ld\n", cache_entries);
    } else if ((p = strstr(line, "status-interval-s"))) {
      fprintf(out, "  status-interval-s: 0\n  processing-guarantee: exactly-once\n");
    } else if ((p = strstr(line, "topic: shop.")) || (p = strstr(line, "dead-letter-topic: shop."))) {
      char *dot = strstr(p, "shop.");
      fprintf(out, "%.*s%s%s", (int)(dot - line), line, prefix, dot + 5);
    } else fputs(line, out);
  }
  fclose(in);
  fclose(out);
}

/* Step 1: the store, written directly with the pipeline's state code. */
static void prefill(const char *config, const char *dir, uint64_t keys) {
  wd_error_t *err = NULL;
  wd_config_t *cfg = NULL;
  if ((err = wd_config_load(config, &cfg))) die_err("config", err);
  wd_table_t *table = NULL;
  if ((err = wd_config_build_table(cfg, &table))) die_err("table", err);
  const wd_schema_t *schema = wd_table_schema(table);
  wd_source_t *src = NULL;
  if ((err = wd_config_build_source(cfg, 0, schema, &src))) die_err("source", err); /* orders */
  wd_store_t *store = NULL;
  wd_store_options_t so = {0};
  so.tombstone_retention_ms = cfg->state.tombstone_retention_ms;
  if ((err = wd_store_open_rocksdb(dir, &so, &store))) die_err("store", err);
  wd_state_t *state = wd_state_new(table, store, 20000);
  if (!state) die_err("state", NULL);
  if ((err = wd_state_check_table(state, dir))) die_err("check table", err);
  wd_state_set_task(state, 0);
  wd_store_batch_t *sb = wd_store_batch_new();
  wd_changes_t changes;
  wd_changes_init(&changes);
  wd_changelog_t cl = {0};
  wd_buf_t kbuf = {0};
  char val[1024], key[64];
  const size_t chunk = 10000;
  wd_row_t **recs = malloc(chunk * 2 * sizeof(*recs));
  size_t *ko = malloc((chunk * 2 + 1) * sizeof(*ko));
  const uint8_t **kp = malloc(chunk * 2 * sizeof(*kp));
  size_t *kl = malloc(chunk * 2 * sizeof(*kl));
  double t0 = wd_mono_s();
  int64_t ts = 1700000000000;
  for (uint64_t k0 = 1; k0 <= keys; k0 += chunk) {
    size_t n = 0;
    for (uint64_t k = k0; k < k0 + chunk && k <= keys; k++) {
      int vl = snprintf(val, sizeof val,
                        "{\"before\":null,\"after\":{\"order_id\":%" PRIu64 ",\"customer\":\"customer-%05" PRIu64
                        "\",\"amount\":\"%" PRIu64 ".%02" PRIu64 "\",\"currency\":\"EUR\",\"order_ts\":%" PRId64
                        ",\"order_version\":1,\"address\":\"%" PRIu64 " Main Street, Springfield\"},"
                        "\"source\":{\"version\":\"2.5.0.Final\",\"connector\":\"mysql\",\"name\":\"widen-gen\","
                        "\"ts_ms\":%" PRId64 ",\"snapshot\":\"true\",\"db\":\"shop\",\"table\":\"orders\"},"
                        "\"op\":\"r\",\"ts_ms\":%" PRId64 ",\"transaction\":null}",
                        k, k % 100000, 10 + k % 990, k % 100, ts, k, ts, ts);
      int kln = snprintf(key, sizeof key, "{\"order_id\":%" PRIu64 "}", k);
      wd_kafka_meta_t meta = {src->topics[0], (int32_t)(k % 4), (int64_t)k, ts, key, (size_t)kln};
      if ((err = wd_decode_debezium_json(src, schema, &meta, val, (size_t)vl, &changes))) die_err("decode", err);
      for (size_t i = 0; i < changes.count; i++) recs[n++] = wd_changes_take(&changes, i);
      ts++;
    }
    wd_buf_reset(&kbuf);
    for (size_t i = 0; i < n; i++) {
      ko[i] = kbuf.len;
      if (wd_row_key_encode(schema, recs[i], &kbuf)) die_err("key", NULL);
    }
    ko[n] = kbuf.len;
    for (size_t i = 0; i < n; i++) {
      kp[i] = kbuf.data + ko[i];
      kl[i] = ko[i + 1] - ko[i];
    }
    if ((err = wd_state_prefetch(state, n, kp, kl))) die_err("prefetch", err);
    for (size_t i = 0; i < n; i++)
      if ((err = wd_message_apply(table, wd_state_ops(), state, recs + i, 1, &cl, NULL))) die_err("apply", err);
    wd_changelog_reset(table, &cl);
    wd_state_set_now(state, (uint64_t)wd_wall_ms());
    if ((err = wd_state_flush(state, sb))) die_err("flush", err);
    for (size_t i = 0; i < n; i++) wd_row_destroy(schema, recs[i]);
    if ((k0 / chunk) % 100 == 0)
      fprintf(stderr, "restart: prefill %" PRIu64 " / %" PRIu64 " keys (%.0f s)\n", k0 + n - 1, keys, wd_mono_s() - t0);
  }
  if ((err = wd_store_compact(store))) die_err("compact", err);
  fprintf(stderr, "restart: prefilled %" PRIu64 " keys in %.1f s\n", keys, wd_mono_s() - t0);
  free(recs);
  free(ko);
  free(kp);
  free(kl);
  wd_buf_free(&kbuf);
  wd_changelog_free(table, &cl);
  wd_changes_free(&changes);
  wd_store_batch_destroy(sb);
  wd_state_destroy(state);
  wd_store_close(store);
  wd_source_destroy(src);
  wd_table_destroy(table);
  wd_config_destroy(cfg);
}

static volatile sig_atomic_t prod_stop, prod_burst;
static void on_term(int sig) {
  (void)sig;
  prod_stop = 1;
}
static void on_usr1(int sig) {
  (void)sig;
  prod_burst = 1;
}

/* Step 2: the producer child: `rate` records/s until SIGTERM; SIGUSR1 sends `backlog` records at
 * full speed first. */
static pid_t start_producer(const char *prefix, uint64_t keys, double rate, uint64_t backlog) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid) return pid;
  signal(SIGTERM, on_term);
  signal(SIGUSR1, on_usr1);
  rd_kafka_t *rk = bench_new_producer();
  wd_gen_opts_t go = {0};
  go.keys = keys;
  go.records = UINT64_MAX / 2;
  go.seed = 7;
  go.topic_prefix = prefix;
  wd_gen_t *gen = NULL;
  if (wd_gen_new(&go, &gen)) bench_die("%s", "generator");
  rd_kafka_topic_t *rkt[3];
  for (int i = 0; i < 3; i++) {
    char t[256];
    snprintf(t, sizeof t, "%s%s", prefix, streams[i]);
    rkt[i] = rd_kafka_topic_new(rk, t, NULL);
  }
  double t0 = wd_mono_s();
  uint64_t n = 0, burst_left = 0;
  wd_gen_msg_t m;
  while (!prod_stop && wd_gen_next(gen, &m)) {
    if (prod_burst) {
      prod_burst = 0;
      burst_left = backlog;
    }
    if (burst_left) {
      if (--burst_left == 0) {
        t0 = wd_mono_s();
        n = 0;
      }
    } else {
      double due = t0 + (double)n / rate, now = wd_mono_s();
      if (due > now) usleep((useconds_t)((due - now) * 1e6));
      n++;
    }
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_RKT(rkt[m.stream_index]), RD_KAFKA_V_KEY(m.key, m.key_len),
          RD_KAFKA_V_VALUE((void *)m.value, m.value_len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("produce: %s", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 10000);
  _exit(0);
}

static pid_t start_widen(const char *widen, const char *config, const char *log) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    setenv("WIDEN_BROKERS", bench_brokers, 1);
    execl(widen, widen, "run", "--config", config, "--quiet", (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* Polls the reader until an output record with CreateTime >= since_ms arrives (returns the wall
 * ms of its arrival) or timeout_s passes (returns -1). */
static int64_t wait_output(rd_kafka_t *rk, int64_t since_ms, double timeout_s, uint64_t *seen) {
  double t0 = wd_mono_s();
  while (wd_mono_s() - t0 < timeout_s) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 20);
    if (!m) continue;
    int64_t now = wd_wall_ms();
    bool hit = false;
    if (!m->err) {
      (*seen)++;
      hit = rd_kafka_message_timestamp(m, NULL) >= since_ms;
    }
    rd_kafka_message_destroy(m);
    if (hit) return now;
  }
  return -1;
}

static void drain(rd_kafka_t *rk, double secs, uint64_t *seen) {
  double t0 = wd_mono_s();
  while (wd_mono_s() - t0 < secs) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
    if (!m) continue;
    if (!m->err) (*seen)++;
    rd_kafka_message_destroy(m);
  }
}

static int log_has(const char *log, const char *needle) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  char line[4096];
  int hit = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle)) hit = 1;
  fclose(f);
  return hit;
}

int main(int argc, char **argv) {
  const char *demo = WD_SOURCE_DIR "/configs/demo.yaml", *widen = NULL, *work = "/tmp/widen-bench-restart";
  uint64_t keys = 1000000, backlog = 0;
  double rate = 5000, kill_after = 5, run_after = 10;
  long cache_mb = 256, cache_entries = 0;
  bool static_member = true;
  static const struct option lo[] = {{"widen", 1, 0, 'w'},
                                     {"keys", 1, 0, 'k'},
                                     {"rate", 1, 0, 'r'},
                                     {"kill-after", 1, 0, 'K'},
                                     {"backlog", 1, 0, 'b'},
                                     {"run-after", 1, 0, 'R'},
                                     {"cache-memory-mb", 1, 0, 'm'},
                                     {"cache-entries", 1, 0, 'e'},
                                     {"no-static", 0, 0, 'S'},
                                     {"work", 1, 0, 'W'},
                                     {"config", 1, 0, 'c'},
                                     {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'w': widen = optarg; break;
    case 'k': keys = strtoull(optarg, NULL, 10); break;
    case 'r': rate = atof(optarg); break;
    case 'K': kill_after = atof(optarg); break;
    case 'b': backlog = strtoull(optarg, NULL, 10); break;
    case 'R': run_after = atof(optarg); break;
    case 'm': cache_mb = atol(optarg); break;
    case 'e': cache_entries = atol(optarg); break;
    case 'S': static_member = false; break;
    case 'W': work = optarg; break;
    case 'c': demo = optarg; break;
    default: fprintf(stderr, "usage: see bench/restart.c\n"); return 2;
    }
  }
  bench_prog = "restart";
  bench_brokers = getenv("WIDEN_BROKERS");
  if (!bench_brokers || !*bench_brokers || !widen) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port restart --widen PATH [...]\n");
    return 2;
  }
  char cmd[13000], pre[4200], state[4200], cfgp[4200], log1[4200], log2[4200], prefix[128], group[160], outt[256];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd)) return 1;
  snprintf(pre, sizeof pre, "%s/prefill-%" PRIu64, work, keys);
  snprintf(state, sizeof state, "%s/state", work);
  struct stat sst;
  char done[4300];
  snprintf(done, sizeof done, "%s/.done", pre);
  if (stat(done, &sst) != 0) {
    bench_rm_rf(pre);
    prefill(demo, pre, keys);
    FILE *f = fopen(done, "w");
    if (f) fclose(f);
  } else fprintf(stderr, "restart: reusing the prefilled store %s\n", pre);
  bench_rm_rf(state);
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s' && rm -f '%s/.done'", pre, state, state);
  if (system(cmd)) return 1;
  uint64_t disk0 = bench_dir_bytes(state);

  snprintf(prefix, sizeof prefix, "bench%d-%" PRId64 "-rs.", (int)getpid(), wd_wall_ms() % 100000000);
  bench_create_topics(prefix, names, 5);
  snprintf(group, sizeof group, "%sgroup", prefix);
  snprintf(cfgp, sizeof cfgp, "%s/restart.yaml", work);
  snprintf(log1, sizeof log1, "%s/first.log", work);
  snprintf(log2, sizeof log2, "%s/restarted.log", work);
  write_config(demo, cfgp, prefix, group, state, cache_mb, cache_entries, static_member);
  snprintf(outt, sizeof outt, "%sorders_wide", prefix);
  rd_kafka_t *reader = bench_new_reader(outt);
  uint64_t seen = 0;

  pid_t prod = start_producer(prefix, keys, rate, backlog);
  int64_t s1 = wd_wall_ms();
  pid_t w1 = start_widen(widen, cfgp, log1);
  int64_t f1 = wait_output(reader, s1, 120, &seen);
  if (f1 < 0) bench_die("%s", "no output from the first widen run in 120 s");
  double first_start = (f1 - s1) / 1e3;
  fprintf(stderr, "restart: first run's first committed output after %.2f s\n", first_start);
  drain(reader, kill_after, &seen);
  kill(w1, SIGKILL);
  int st = 0;
  waitpid(w1, &st, 0);
  fprintf(stderr, "restart: killed the first run (SIGKILL) after %" PRIu64 " committed outputs\n", seen);
  if (backlog) {
    kill(prod, SIGUSR1);
    /* the backlog at full speed: about 60k records/s on this machine */
    drain(reader, (double)backlog / 60000.0 + 1, &seen);
  }

  int64_t t0 = wd_wall_ms();
  pid_t w2 = start_widen(widen, cfgp, log2);
  int64_t f2 = wait_output(reader, t0, 180, &seen);
  double restart_s = f2 < 0 ? -1 : (f2 - t0) / 1e3;
  fprintf(stderr, "restart: restarted run's first committed output after %.2f s\n", restart_s);
  drain(reader, run_after, &seen);
  kill(w2, SIGTERM);
  struct rusage ru;
  if (wait4(w2, &st, 0, &ru) < 0) bench_die("wait4: %s", strerror(errno));
  double cpu2 =
      (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  kill(prod, SIGTERM);
  waitpid(prod, NULL, 0);
  drain(reader, 1, &seen);
  rd_kafka_consumer_close(reader);
  rd_kafka_destroy(reader);
  uint64_t disk1 = bench_dir_bytes(state);
  int restored = log_has(log2, "rebuilt from the beginning");
  printf("restart  %" PRIu64 " keys in the store (%.1f MiB on disk before, %.1f MiB after); stream %.0f records/s, "
         "backlog %" PRIu64 "; %s membership\n",
         keys, disk0 / 1048576.0, disk1 / 1048576.0, rate, backlog, static_member ? "static" : "dynamic");
  printf("restart  first start -> first committed output %.2f s; after SIGKILL: restart -> first committed output "
         "%.2f s; restored a task: %s\n",
         first_start, restart_s, restored ? "YES" : "no");
  printf("memory   restarted process: peak RSS %.1f MiB (cache-memory-mb %ld, cache-entries %ld), CPU %.2f s over "
         "%.1f s; exit status %d\n",
         ru.ru_maxrss / 1024.0, cache_mb, cache_entries, cpu2, restart_s + run_after,
         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  printf("RESULT keys=%" PRIu64 " restart_s=%.3f first_start_s=%.3f disk_mib=%.1f rss_mib=%.1f cpu_s=%.2f restored=%d "
         "outputs=%" PRIu64 "\n",
         keys, restart_s, first_start, disk1 / 1048576.0, ru.ru_maxrss / 1024.0, cpu2, restored, seen);
  return 0;
}
