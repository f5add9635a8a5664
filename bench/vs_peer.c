/*
 * bench/vs_peer.c — widen and its peer (bench/peer: the same wide table as a Kafka Streams 4.1
 * application) side by side on one broker, over the same input topics. One run; bench/run-peer
 * repeats it and takes medians.
 *
 *   WIDEN_BROKERS=127.0.0.1:9392 build-bench/bench/vs_peer --widen build-bench/widen
 *       --peer-cp CLASSPATH   (bench/run-peer passes bench/peer/target/classes and the jars of target/lib)
 *       [--records 300000] [--keys 100000] [--seed 1] [--guarantee both|exactly-once|at-least-once]
 *       [--latency-seconds 15] [--rate 10000] [--no-latency] [--commit-interval-ms N]
 *       [--per-partition] [--repartition shipments[,payments...]] [--java-opts '-Xms512m -Xmx512m']
 *       [--work /tmp/widen-bench-peer] [--config configs/demo.yaml] [--check]
 *       [--peer-first] [--instructions auto|off] [--load-procs N]
 *
 * Saturation: fresh input topics <prefix>orders|payments|shipments (4 partitions each), one backlog of
 *   --records generated Debezium JSON records (app/cli/generate.h, as bench/e2e) produced once; then, per
 *   guarantee (exactly-once, then at-least-once), widen and then the peer each read that whole backlog
 *   into an output topic of their own (widen: configs/demo.yaml with the sink in changelog-json,
 *   `widen run --max-idle-ms 1500`; the peer: processing.guarantee exactly_once_v2 / at_least_once,
 *   exiting after 1.5 s without input). Per process (wait4 rusage of the child): input records per CPU
 *   second (user + system of the process, start-up and JVM included), peak RSS (ru_maxrss); wall
 *   rate = records / (last - first output CreateTime). Each output is read whole, read_committed, and
 *   folded into its final table (per key, in partition order: +I/+U set the row, -D removes it, -U
 *   changes nothing); every table is compared with widen's exactly-once table, row by row (the row's
 *   JSON text: both write changelog-json with the same encoding).
 * Latency (unless --no-latency): per guarantee and process, fresh topics; the process is started
 *   (the peer: once its streams are RUNNING; widen: 5 s, as bench/e2e), records are produced at --rate
 *   for --latency-seconds with their send time as timestamp, while a live read_committed reader
 *   (fetch.wait.max.ms 10) follows the output: visible latency = when the reader got an output record
 *   - the send time of the latest source record of its key sent before the output's CreateTime;
 *   records sent in the first 2 s are not counted (as bench/e2e).
 * The machine: the 1-minute load average (/proc/loadavg) before and after each process's run is printed
 *   beside its figures (and `<g>_<who>_load` in RESULT, their mean); --load-procs N only says that
 *   bench/run-peer --load N started N busy processes on purpose. --peer-first runs the peer before
 *   widen under each guarantee (bench/run-peer alternates the order from run to run).
 * Instructions (--instructions auto, the default; off): when `perf stat -e instructions` counts on this
 *   machine (probed over `true` first), each saturation run, widen and the peer's JVM alike, runs under
 *   it and its instructions per input record are printed (`<g>_<who>_ins_per_rec`, `<g>_ratio_ins`); on
 *   a VM without hardware counters perf answers "<not supported>", and the output says that the figures
 *   are CPU seconds from the kernel's accounting (wait4 rusage, the utime + stime of /proc/<pid>/stat).
 * --per-partition runs widen with pipeline.tasks: per-partition (a state changelog topic, as the peer
 *   always has); --repartition names sources read as keyed by another id: widen sets
 *   sources[].repartition: true (and per-partition), the peer re-keys them through a repartition topic.
 *
 * Prints a `RESULT` line for bench/median.py; exit status 1 when a table differs (--check: a small run
 * that only checks the tables).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

typedef struct {
  const char *widen, *demo, *work, *peer_cp, *java_opts, *repartition;
  long commit_ms;
  bool per_partition;
  bool perf; /* wrap the saturation runs in `perf stat -e instructions` (probed: see perf_probe) */
  uint64_t keys;
} opts_t;

/* ---- the machine's load and the instruction counter ------------------------------------- */

/* The 1-minute load average (/proc/loadavg), -1 when unreadable. */
static double loadavg1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

/* Whether `perf stat -e instructions` counts on this machine: runs it over `true` and looks for a
 * number (a VM without a PMU answers "<not supported>"). why gets the reason when it does not. */
static bool perf_probe(const char *work, char *why, size_t whylen) {
  char path[4300], cmd[4600], line[512];
  snprintf(path, sizeof path, "%s/perf-probe.txt", work);
  snprintf(cmd, sizeof cmd, "perf stat -x, -e instructions -o '%s' -- true >/dev/null 2>&1", path);
  if (system(cmd) != 0) {
    snprintf(why, whylen, "perf stat is missing or refused (install linux-perf, kernel.perf_event_paranoid <= 2)");
    return false;
  }
  FILE *f = fopen(path, "r");
  bool ok = false;
  snprintf(why, whylen, "perf stat printed no instruction count");
  while (f && fgets(line, sizeof line, f)) {
    if (!strstr(line, "instructions")) continue;
    if (strstr(line, "<not supported>") || strstr(line, "<not counted>"))
      snprintf(why, whylen, "perf stat -e instructions: <not supported> (no hardware counters on this machine)");
    else if (line[0] >= '0' && line[0] <= '9') ok = true;
  }
  if (f) fclose(f);
  return ok;
}

/* The instruction count perf stat wrote to path (-x, format), 0 when there is none. */
static double perf_instructions(const char *path) {
  char line[512];
  double n = 0;
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, ",instructions") && line[0] >= '0' && line[0] <= '9') n = atof(line);
  if (f) fclose(f);
  return n;
}

/* ---- the two processes ------------------------------------------------------------------ */

static bool listed(const char *list, const char *name) {
  if (!list) return false;
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)); p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return true;
  return false;
}

/* widen's config: demo.yaml with the input prefix, group, state dir, guarantee, output topic and the
 * sink in changelog-json. */
static void write_config(const opts_t *o, const char *path, const char *prefix, const char *group, const char *state,
                         const char *guarantee, const char *out_topic) {
  FILE *in = fopen(o->demo, "r"), *out = fopen(path, "w");
  if (!in || !out) bench_die("cannot open %s", o->demo);
  char line[1024];
  bool per_partition = o->per_partition || (o->repartition && *o->repartition);
  while (fgets(line, sizeof line, in)) {
    char *p;
    if (strstr(line, "group.id:")) fprintf(out, "  group.id: %s\n", group);
    else if (strstr(line, "  dir: ") && strstr(line, "state")) fprintf(out, "  dir: %s\n", state);
    else if (strstr(line, "status-interval-s")) {
      fprintf(out, "  status-interval-s: 0\n  processing-guarantee: %s\n", guarantee);
      if (o->commit_ms >= 0) fprintf(out, "  commit-interval-ms: %ld\n", o->commit_ms);
      if (per_partition) fprintf(out, "  tasks: per-partition\n");
    } else if (!strcmp(line, "  topic: shop.orders_wide\n")) fprintf(out, "  topic: %s\n", out_topic);
    else if (!strcmp(line, "  format: debezium-json\n")) fprintf(out, "  format: changelog-json\n");
    else if ((p = strstr(line, "topic: shop.")) || (p = strstr(line, "dead-letter-topic: shop."))) {
      char *dot = strstr(p, "shop.");
      fprintf(out, "%.*s%s%s", (int)(dot - line), line, prefix, dot + 5);
      for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "shop.%s\n", streams[i]);
        if (!strcmp(dot, want) && listed(o->repartition, streams[i])) fprintf(out, "    repartition: true\n");
      }
    } else fputs(line, out);
  }
  fclose(in);
  fclose(out);
}

/* Starts widen (is_peer false) or the peer over prefix+streams into out_topic; returns its pid. */
static pid_t start(const opts_t *o, bool is_peer, const char *prefix, const char *guarantee, const char *tag,
                   const char *out_topic, const char *ready, uint64_t expect) {
  char group[256], cfgp[4300], state[4300], logp[4300];
  snprintf(group, sizeof group, "%s%s", prefix, tag);
  snprintf(state, sizeof state, "%s/state-%s", o->work, tag);
  snprintf(logp, sizeof logp, "%s/%s.log", o->work, tag);
  bool perf = o->perf && !strncmp(tag, "sat-", 4); /* the saturation runs only */
  fflush(NULL); /* the child must not write this process's buffered output again */
  if (!is_peer) {
    snprintf(cfgp, sizeof cfgp, "%s/%s.yaml", o->work, tag);
    write_config(o, cfgp, prefix, group, state, guarantee, out_topic);
    if (!perf) return bench_start_widen(o->widen, cfgp, logp);
    char perfp[4400];
    snprintf(perfp, sizeof perfp, "%s/%s.perf", o->work, tag);
    pid_t pid = fork(); /* as bench_start_widen, under perf stat */
    if (pid < 0) bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
      FILE *f = freopen(logp, "w", stderr);
      (void)f;
      setenv("WIDEN_BROKERS", bench_brokers, 1);
      execlp("perf", "perf", "stat", "-x,", "-e", "instructions", "-o", perfp, "--", o->widen, "run", "--config", cfgp,
             "--max-idle-ms", "1500", "--quiet", (char *)NULL);
      _exit(127);
    }
    return pid;
  }
  char *argv[64];
  int n = 0;
  char perfp[4400];
  if (perf) { /* the saturation run: the JVM under perf stat too */
    snprintf(perfp, sizeof perfp, "%s/%s.perf", o->work, tag);
    argv[n++] = "perf";
    argv[n++] = "stat";
    argv[n++] = "-x,";
    argv[n++] = "-e";
    argv[n++] = "instructions";
    argv[n++] = "-o";
    argv[n++] = perfp;
    argv[n++] = "--";
  }
  argv[n++] = "java";
  char jopts[512];
  snprintf(jopts, sizeof jopts, "%s", o->java_opts);
  for (char *t = strtok(jopts, " "); t && n < 40; t = strtok(NULL, " ")) argv[n++] = t;
  char cm[32];
  snprintf(cm, sizeof cm, "%ld", o->commit_ms);
  argv[n++] = "-cp";
  argv[n++] = (char *)o->peer_cp;
  argv[n++] = "widen.peer.WidePeer";
  argv[n++] = "--bootstrap";
  argv[n++] = (char *)bench_brokers;
  argv[n++] = "--application-id";
  argv[n++] = group;
  argv[n++] = "--input-prefix";
  argv[n++] = (char *)prefix;
  argv[n++] = "--output";
  argv[n++] = (char *)out_topic;
  argv[n++] = "--state-dir";
  argv[n++] = state;
  argv[n++] = "--guarantee";
  argv[n++] = !strcmp(guarantee, "exactly-once") ? "exactly_once_v2" : "at_least_once";
  if (o->commit_ms >= 0) {
    argv[n++] = "--commit-interval-ms";
    argv[n++] = cm;
  }
  if (o->repartition && *o->repartition) {
    argv[n++] = "--repartition";
    argv[n++] = (char *)o->repartition;
  }
  char ex[32];
  snprintf(ex, sizeof ex, "%" PRIu64, expect);
  argv[n++] = "--expect-records"; /* it ends after these many input records and 1.5 s without more */
  argv[n++] = ex;
  if (ready) {
    argv[n++] = "--ready-file";
    argv[n++] = (char *)ready;
  }
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(logp, "w", stderr);
    (void)f;
    char outp[4400];
    snprintf(outp, sizeof outp, "%s/%s.out", o->work, tag);
    f = freopen(outp, "w", stdout);
    execvp(argv[0], argv);
    _exit(127);
  }
  return pid;
}

typedef struct {
  double cpu, user, sys, rss_mib;
  int status;
} usage_t;

static usage_t wait_child(pid_t pid, const char *what) {
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) bench_die("wait4: %s", strerror(errno));
  usage_t u = {0};
  u.user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  u.sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  u.cpu = u.user + u.sys;
  u.rss_mib = ru.ru_maxrss / 1024.0;
  u.status = status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "vs_peer: %s exited with status %d\n", what, status);
  return u;
}

/* ---- output: the folded table ----------------------------------------------------------- */

/* The order number of an output record: the first run of digits of its key ({"order_id":N}). */
static uint64_t key_number(const void *key, size_t len) {
  uint64_t k = 0;
  const char *p = key;
  size_t i = 0;
  while (i < len && (p[i] < '0' || p[i] > '9')) i++;
  while (i < len && p[i] >= '0' && p[i] <= '9') k = k * 10 + (uint64_t)(p[i++] - '0');
  return k;
}

/* The final table of a changelog-json output: rows[k] = the row's JSON text of key k (malloc'd), or
 * NULL; keys 1..nkeys. */
typedef struct {
  char **rows;
  uint64_t nkeys;
  size_t messages, bad;
  int64_t tmin, tmax;
} table_t;

static void table_apply(table_t *t, const rd_kafka_message_t *m) {
  t->messages++;
  int64_t ts = rd_kafka_message_timestamp(m, NULL);
  if (ts < t->tmin) t->tmin = ts;
  if (ts > t->tmax) t->tmax = ts;
  uint64_t k = key_number(m->key, m->key_len);
  const char *v = m->payload;
  size_t len = m->len;
  const char *row = v ? memmem(v, len, "\"row\":", 6) : NULL;
  if (k == 0 || k > t->nkeys || !row || len < 10 || memcmp(v, "{\"op\":\"", 7) || v[len - 1] != '}') {
    t->bad++;
    return;
  }
  char op0 = v[7], op1 = v[8];
  row += 6;
  size_t rlen = (size_t)(v + len - 1 - row);
  if (op0 == '+') { /* +I, +U */
    free(t->rows[k]);
    t->rows[k] = strndup(row, rlen);
  } else if (op1 == 'D') {
    free(t->rows[k]);
    t->rows[k] = NULL;
  }
}

/* Reads the whole output topic read_committed and folds it into *t. */
static void read_table(const char *topic, uint64_t nkeys, table_t *t) {
  memset(t, 0, sizeof *t);
  t->nkeys = nkeys;
  t->rows = calloc(nkeys + 1, sizeof(char *));
  t->tmin = INT64_MAX;
  rd_kafka_t *rk = bench_new_reader(topic);
  bool at_end[4] = {false, false, false, false};
  double deadline = wd_mono_s() + 120;
  rd_kafka_message_t *m;
  while ((m = bench_reader_next(rk, at_end, deadline))) {
    table_apply(t, m);
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

static size_t table_rows(const table_t *t) {
  size_t n = 0;
  for (uint64_t k = 1; k <= t->nkeys; k++) n += t->rows[k] != NULL;
  return n;
}

/* The number of keys whose rows differ; prints the first few. */
static size_t table_diff(const table_t *a, const table_t *b, const char *an, const char *bn) {
  size_t d = 0;
  for (uint64_t k = 1; k <= a->nkeys; k++) {
    const char *x = a->rows[k], *y = b->rows[k];
    if ((!x && !y) || (x && y && !strcmp(x, y))) continue;
    if (d++ < 3)
      fprintf(stderr, "vs_peer: order_id %" PRIu64 ":\n  %s: %s\n  %s: %s\n", k, an, x ? x : "(absent)", bn,
              y ? y : "(absent)");
  }
  return d;
}

static void table_free(table_t *t) {
  for (uint64_t k = 0; k <= t->nkeys; k++) free(t->rows[k]);
  free(t->rows);
  t->rows = NULL;
}

/* ---- latency ---------------------------------------------------------------------------- */

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
        f->key[f->n++] = key_number(m->key, m->key_len);
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return NULL;
}

static const char *const names[5] = {"orders", "payments", "shipments", "out", "orders_wide.dlq"};

/* One latency run of widen or the peer at `rate` for `secs`: sets visible p50 / p99 (ms). */
static void latency_run(const opts_t *o, bool is_peer, const char *guarantee, uint64_t seed, double rate, double secs,
                        double *v50, double *v99, size_t *matched) {
  char prefix[128], outt[256], ready[4300], tag[64];
  snprintf(prefix, sizeof prefix, "vsp%d-%" PRId64 "-lat-%s-%.2s.", (int)getpid(), wd_wall_ms() % 100000000,
           is_peer ? "peer" : "widen", guarantee);
  bench_create_topics(prefix, names, 5);
  snprintf(outt, sizeof outt, "%sout", prefix);
  snprintf(tag, sizeof tag, "lat-%s-%.2s", is_peer ? "peer" : "widen", guarantee);
  snprintf(ready, sizeof ready, "%s/%s.ready", o->work, tag);
  unlink(ready);
  follow_t fo = {.topic = outt};
  pthread_t fth;
  if (pthread_create(&fth, NULL, follow_main, &fo)) bench_die("%s", "pthread_create failed");
  uint64_t lrec = (uint64_t)(rate * secs);
  pid_t pid = start(o, is_peer, prefix, guarantee, tag, outt, is_peer ? ready : NULL, lrec);
  if (is_peer) { /* until its streams are RUNNING, then 1 s (partitions assigned, stores open) */
    struct stat st;
    for (int i = 0; i < 600 && stat(ready, &st); i++) usleep(100000);
    sleep(1);
  } else {
    sleep(5); /* as bench/e2e */
  }
  sent_t sent = {0};
  bench_produce_generated(prefix, o->keys, lrec, seed + 1, rate, &sent);
  usage_t u = wait_child(pid, is_peer ? "peer" : "widen");
  (void)u;
  fo.stop = 1;
  pthread_join(fth, NULL);
  int64_t *head = malloc((o->keys + 1) * sizeof(int64_t));
  int64_t *prev = malloc((sent.n + 1) * sizeof(int64_t));
  for (uint64_t k = 0; k <= o->keys; k++) head[k] = -1;
  for (size_t i = 0; i < sent.n; i++) {
    prev[i] = head[sent.key[i]];
    head[sent.key[i]] = (int64_t)i;
  }
  double *vis = malloc((fo.n + 1) * sizeof(double));
  size_t nv = 0;
  int64_t warm = sent.n ? sent.ts[0] + 2000 : 0;
  for (size_t i = 0; i < fo.n; i++) {
    if (fo.key[i] > o->keys) continue;
    int64_t j = head[fo.key[i]];
    while (j >= 0 && sent.ts[j] > fo.ts[i]) j = prev[j];
    if (j < 0 || sent.ts[j] < warm) continue;
    vis[nv++] = (double)(fo.recv[i] - sent.ts[j]);
  }
  *v50 = bench_quantile(vis, nv, 0.50);
  *v99 = bench_quantile(vis, nv, 0.99);
  *matched = nv;
  printf("latency  %-5s [%s] %" PRIu64 " records at %.0f/s: %zu outputs matched; visible to a read_committed reader "
         "p50 %.0f ms, p99 %.0f ms; load average %.1f\n",
         is_peer ? "peer" : "widen", guarantee, lrec, rate, nv, *v50, *v99, loadavg1());
  free(vis);
  free(head);
  free(prev);
  free(sent.key);
  free(sent.ts);
  free(sent.acked);
  free(fo.ts);
  free(fo.recv);
  free(fo.key);
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  opts_t o = {.demo = WD_SOURCE_DIR "/configs/demo.yaml",
              .work = "/tmp/widen-bench-peer",
              .java_opts = "-Xms512m -Xmx512m",
              .commit_ms = -1,
              .keys = 100000};
  const char *guarantee = "both";
  uint64_t records = 300000, seed = 1;
  double lat_secs = 15, rate = 10000;
  bool latency = true, check = false, peer_first = false;
  const char *instructions = "auto";
  int load_procs = 0;
  static const struct option lo[] = {{"widen", 1, 0, 'w'},
                                     {"peer-cp", 1, 0, 'p'},
                                     {"records", 1, 0, 'r'},
                                     {"keys", 1, 0, 'k'},
                                     {"seed", 1, 0, 's'},
                                     {"guarantee", 1, 0, 'g'},
                                     {"latency-seconds", 1, 0, 'l'},
                                     {"rate", 1, 0, 'R'},
                                     {"no-latency", 0, 0, 'L'},
                                     {"commit-interval-ms", 1, 0, 'i'},
                                     {"per-partition", 0, 0, 'P'},
                                     {"repartition", 1, 0, 'x'},
                                     {"java-opts", 1, 0, 'j'},
                                     {"work", 1, 0, 'W'},
                                     {"config", 1, 0, 'c'},
                                     {"check", 0, 0, 'C'},
                                     {"peer-first", 0, 0, 'F'},
                                     {"instructions", 1, 0, 'I'},
                                     {"load-procs", 1, 0, 'B'},
                                     {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'w': o.widen = optarg; break;
    case 'p': o.peer_cp = optarg; break;
    case 'r': records = strtoull(optarg, NULL, 10); break;
    case 'k': o.keys = strtoull(optarg, NULL, 10); break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'g': guarantee = optarg; break;
    case 'l': lat_secs = atof(optarg); break;
    case 'R': rate = atof(optarg); break;
    case 'L': latency = false; break;
    case 'i': o.commit_ms = atol(optarg); break;
    case 'P': o.per_partition = true; break;
    case 'x': o.repartition = optarg; break;
    case 'j': o.java_opts = optarg; break;
    case 'W': o.work = optarg; break;
    case 'c': o.demo = optarg; break;
    case 'C': check = true; break;
    case 'F': peer_first = true; break;
    case 'I': instructions = optarg; break;
    case 'B': load_procs = atoi(optarg); break;
    default: fprintf(stderr, "usage: see bench/vs_peer.c\n"); return 2;
    }
  }
  bench_prog = "vs_peer";
  bench_brokers = getenv("WIDEN_BROKERS");
  if (!bench_brokers || !*bench_brokers || !o.widen || !o.peer_cp) {
    fprintf(stderr, "usage: WIDEN_BROKERS=host:port vs_peer --widen PATH --peer-cp CLASSPATH [...]\n");
    return 2;
  }
  if (check) {
    latency = false;
    if (records == 300000) records = 3000;
    if (o.keys == 100000) o.keys = 500;
  }
  const char *gs[2];
  int ng = 0;
  if (!strcmp(guarantee, "both") || !strcmp(guarantee, "exactly-once")) gs[ng++] = "exactly-once";
  if (!strcmp(guarantee, "both") || !strcmp(guarantee, "at-least-once")) gs[ng++] = "at-least-once";
  if (!ng) {
    fprintf(stderr, "vs_peer: --guarantee exactly-once|at-least-once|both\n");
    return 2;
  }
  bench_rm_rf(o.work);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", o.work);
  if (system(cmd)) return 1;

  if (strcmp(instructions, "off")) {
    char why[256];
    o.perf = perf_probe(o.work, why, sizeof why);
    if (o.perf) printf("instructions: perf stat -e instructions over each saturation run (widen, the peer's JVM)\n");
    else
      printf("instructions: not counted: %s; the figures are CPU seconds (user + system) of each process from the "
             "kernel's accounting (wait4 rusage, = /proc/<pid>/stat utime + stime)\n",
             why);
  }
  printf("machine: load average %.1f at the start, %d busy processes started on purpose (bench/run-peer --load)\n",
         loadavg1(), load_procs);

  /* ---- saturation: one backlog, every process over it ---- */
  char prefix[128];
  snprintf(prefix, sizeof prefix, "vsp%d-%" PRId64 "-sat.", (int)getpid(), wd_wall_ms() % 100000000);
  static const char *const sat_names[8] = {"orders",       "payments",    "shipments",    "orders_wide.dlq",
                                           "out-widen-ex", "out-peer-ex", "out-widen-at", "out-peer-at"};
  bench_create_topics(prefix, sat_names, 8);
  double psecs = bench_produce_generated(prefix, o.keys, records, seed, 0, NULL);
  fprintf(stderr, "vs_peer: produced %" PRIu64 " records in %.2f s\n", records, psecs);
  table_t ref = {0};
  bool have_ref = false;
  size_t mismatches = 0;
  double rps[2][2] = {{0}}, wall[2][2] = {{0}}, rss[2][2] = {{0}}, v50[2][2] = {{0}}, v99[2][2] = {{0}};
  size_t diff[2][2] = {{0}};
  double rps_run[2] = {0, 0}; /* the peer's records per CPU s from its first input record on */
  double load[2][2] = {{0}}, ipr[2][2] = {{0}}; /* load average during the run; instructions per record */
  const char *ref_tag = "";
  for (int g = 0; g < ng; g++) {
    for (int k = 0; k < 2; k++) { /* widen, then the peer (--peer-first: the other way round) */
      int s = peer_first ? 1 - k : k;
      bool is_peer = s == 1;
      const char *who = is_peer ? "peer" : "widen";
      char tag[64], outt[256];
      snprintf(tag, sizeof tag, "sat-%s-%.2s", who, gs[g]);
      snprintf(outt, sizeof outt, "%sout-%s-%.2s", prefix, who, gs[g]);
      double load0 = loadavg1();
      pid_t pid = start(&o, is_peer, prefix, gs[g], tag, outt, NULL, records);
      usage_t u = wait_child(pid, who);
      double load1 = loadavg1();
      load[g][s] = (load0 + load1) / 2;
      if (o.perf) {
        char perfp[4400];
        snprintf(perfp, sizeof perfp, "%s/%s.perf", o.work, tag);
        ipr[g][s] = perf_instructions(perfp) / (double)records;
      }
      double cpu_first = 0; /* the peer's own CPU at its first input record (JVM start, join, restore) */
      if (is_peer) {
        char outp[4400], line[512];
        snprintf(outp, sizeof outp, "%s/%s.out", o.work, tag);
        FILE *f = fopen(outp, "r");
        while (f && fgets(line, sizeof line, f)) {
          const char *c = strstr(line, "cpu_first_s=");
          if (!strncmp(line, "PEER ", 5) && c) cpu_first = atof(c + 12);
        }
        if (f) fclose(f);
      }
      rps_run[g] = is_peer && u.cpu > cpu_first ? records / (u.cpu - cpu_first) : rps_run[g];
      table_t t;
      read_table(outt, o.keys, &t);
      double span = t.messages ? (double)(t.tmax - t.tmin) / 1e3 : 0;
      rps[g][s] = records / u.cpu;
      wall[g][s] = span > 0 ? records / span : 0;
      rss[g][s] = u.rss_mib;
      bool is_ref = !have_ref;
      if (!have_ref) {
        ref = t;
        have_ref = true;
        ref_tag = is_peer ? "peer exactly-once" : "widen exactly-once";
      } else {
        diff[g][s] = table_diff(&ref, &t, ref_tag, tag);
        mismatches += diff[g][s];
      }
      char ins[64] = "";
      if (o.perf) snprintf(ins, sizeof ins, "; %.0f instructions per input record", ipr[g][s]);
      printf("%-5s [%s] %" PRIu64 " input records -> %zu output records (%zu unreadable), %zu rows; CPU %.2f s (user "
             "%.2f, system %.2f) -> %.0f input records/s per core%s; output span %.2f s -> %.0f records/s wall; peak "
             "RSS %.0f MiB; load average %.1f -> %.1f (%d busy processes started on purpose); table %s %s\n",
             who, gs[g], records, t.messages, t.bad, table_rows(&t), u.cpu, u.user, u.sys, rps[g][s], ins, span,
             wall[g][s], rss[g][s], load0, load1, load_procs,
             is_ref       ? "(reference)"
             : diff[g][s] ? "DIFFERS from"
                          : "=",
             is_ref ? "" : ref_tag);
      if (t.rows != ref.rows) table_free(&t);
    }
    printf("peer  [%s] from its first input record on (JVM start, group join and store set-up left out): %.0f input "
           "records/s per core\n",
           gs[g], rps_run[g]);
    printf("ratio [%s] widen / peer: %.2f per CPU s, %.2f wall (load average %.1f / %.1f)", gs[g],
           rps[g][0] / rps[g][1], wall[g][1] > 0 ? wall[g][0] / wall[g][1] : 0, load[g][0], load[g][1]);
    if (o.perf && ipr[g][0] > 0) printf("; %.2f per instruction count", ipr[g][1] / ipr[g][0]);
    printf("\n");
  }
  size_t ref_rows = table_rows(&ref);
  table_free(&ref);

  /* ---- latency at a fixed rate ---- */
  size_t matched = 0;
  if (latency)
    for (int g = 0; g < ng; g++)
      for (int s = 0; s < 2; s++)
        latency_run(&o, s == 1, gs[g], seed, rate, lat_secs, &v50[g][s], &v99[g][s], &matched);

  printf("RESULT records=%" PRIu64 " rows=%zu mismatched_keys=%zu", records, ref_rows, mismatches);
  for (int g = 0; g < ng; g++) {
    const char *t = !strcmp(gs[g], "exactly-once") ? "eo" : "alo";
    printf(" %s_widen_rps_cpu=%.0f %s_peer_rps_cpu=%.0f %s_ratio_cpu=%.2f %s_widen_rps_wall=%.0f %s_peer_rps_wall=%.0f"
           " %s_ratio_wall=%.2f %s_widen_rss_mib=%.0f %s_peer_rss_mib=%.0f",
           t, rps[g][0], t, rps[g][1], t, rps[g][0] / rps[g][1], t, wall[g][0], t, wall[g][1], t,
           wall[g][1] > 0 ? wall[g][0] / wall[g][1] : 0, t, rss[g][0], t, rss[g][1]);
    printf(" %s_peer_rps_cpu_from_first=%.0f %s_ratio_cpu_from_first=%.2f", t, rps_run[g], t,
           rps_run[g] > 0 ? rps[g][0] / rps_run[g] : 0);
    printf(" %s_widen_load=%.1f %s_peer_load=%.1f", t, load[g][0], t, load[g][1]);
    if (o.perf)
      printf(" %s_widen_ins_per_rec=%.0f %s_peer_ins_per_rec=%.0f %s_ratio_ins=%.2f", t, ipr[g][0], t, ipr[g][1], t,
             ipr[g][0] > 0 ? ipr[g][1] / ipr[g][0] : 0);
    if (latency)
      printf(" %s_widen_vis_p50_ms=%.0f %s_widen_vis_p99_ms=%.0f %s_peer_vis_p50_ms=%.0f %s_peer_vis_p99_ms=%.0f", t,
             v50[g][0], t, v99[g][0], t, v50[g][1], t, v99[g][1]);
  }
  printf("\n");
  if (mismatches) fprintf(stderr, "vs_peer: the final tables differ (%zu keys)\n", mismatches);
  return mismatches || ref_rows == 0 ? 1 : 0;
}
