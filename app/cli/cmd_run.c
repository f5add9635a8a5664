/*
 * app/cli/cmd_run.c — `widen run`, `widen replay` and `widen rows`: the main job, a rebuild of the
 * table from the source topics, and a dump of the table's rows from a state directory.
 */
#include <dirent.h>
#include <inttypes.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/cli/commands.h"
#include "common/clock.h"
#include "app/config/config.h"
#include "app/config/interleaving.h"
#include "app/ops/fingerprint.h"
#include "app/ops/state_dir.h"
#include "app/config/join_config.h"
#include "app/runtime/pipeline.h"
#include "app/cli/cli.h"
#include "changelog/changelog.h"
#include "common/log.h"
#include "ingest/positions.h"
#include "join/state.h"

static wd_pipeline_t *running;

static volatile sig_atomic_t signals;
static volatile sig_atomic_t grace_settled = 1;
static volatile sig_atomic_t starting; /* run_pipeline before its pipeline exists */
/* A stop signalled during the start waits for it this long at most (client calls there keep bounds
 * of up to a minute while the broker is away): then it leaves as after a kill. */
#define WD_START_STOP_GRACE_S 15

/* The first SIGINT/SIGTERM stops the pipeline after the batch in hand and the open commit (every
 * wait then bounded by transaction.timeout.ms: docs/runtime.md "Stop"); a second one leaves at
 * once: what was committed is in Kafka and in the state's write-ahead log, and an open
 * transaction is aborted by the broker (or fenced at the next start), as after a kill. */
static void on_signal(int sig) {
  (void)sig;
  if (++signals >= 2) {
    static const char msg[] = "widen: second signal: leaving at once (the open commit, if any, is left to recovery)\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(130);
  }
  if (starting) alarm(WD_START_STOP_GRACE_S);
  if (running) {
    wd_pipeline_stop(running);
    grace_settled = wd_pipeline_settled(running);
    alarm(wd_pipeline_stop_grace_s(running)); /* the stop's bound, whatever librdkafka does */
  }
}

/* The stop's time ran out (a client call that does not keep its timeout while the broker is away):
 * leave as after a kill; exit 0 when no commit was open, else 3 (its records are read again). */
static void on_alarm(int sig) {
  (void)sig;
  if (starting) {
    static const char smsg[] = "widen: the start did not finish within 15 s of the stop signal (a broker or the "
                               "schema registry does not answer: the lines above say which): leaving now, nothing "
                               "consumed or produced; recovery resolves what was open at the next start\n";
    ssize_t w = write(2, smsg, sizeof(smsg) - 1);
    (void)w;
    _exit(3); /* not a clean stop: the start did not finish */
  }
  bool settled = running ? wd_pipeline_settled(running) : grace_settled;
  static const char msg[] = "widen: the stop took longer than transaction.timeout.ms + 5 s (the broker does not "
                            "answer): leaving now; recovery resolves what was open at the next start\n";
  ssize_t w = write(2, msg, sizeof(msg) - 1);
  (void)w;
  _exit(settled ? 0 : 3);
}

/* Parses "beginning" (or "earliest", Kafka's word) or a timestamp: ms since the epoch, or "YYYY-MM-DD[THH:MM[:SS]]" (UTC). */
static int parse_from(const char *s, int64_t *ms) {
  if (!strcmp(s, "earliest") || !strcmp(s, "beginning")) {
    *ms = -1;
    return 0;
  }
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end && *end == 0 && v >= 0) {
    *ms = v;
    return 0;
  }
  struct tm tm = {0};
  const char *rest = strptime(s, "%Y-%m-%d", &tm);
  if (!rest) return -1;
  if (*rest == 'T' || *rest == ' ') {
    rest = strptime(rest + 1, "%H:%M", &tm);
    if (!rest) return -1;
    if (*rest == ':') rest = strptime(rest + 1, "%S", &tm);
    if (!rest) return -1;
  }
  if (*rest == 'Z') rest++;
  if (*rest) return -1;
  *ms = (int64_t)timegm(&tm) * 1000;
  return 0;
}

/* Replay --output TOPIC: the changelog goes to TOPIC and the dead letters to TOPIC.dlq instead of
 * the config's live topics. */
static wd_error_t *redirect_output(wd_config_t *cfg, const char *topic) {
  char *t = strdup(topic), *d = NULL;
  if (!t || asprintf(&d, "%s.dlq", topic) < 0) {
    free(t);
    return wd_error_nomem();
  }
  if (!strcmp(cfg->sink.topic, topic) || (cfg->sink.dead_letter_topic && !strcmp(cfg->sink.dead_letter_topic, topic))) {
    free(t);
    free(d);
    return wd_error_new(WD_ERR_CONFIG, C_REPLAY_OUTPUT,
                        "--output %s: that is the live %s of this config; a replay writes a second full changelog "
                        "(an +I for every existing key) that its consumers cannot tell from new changes. Write to "
                        "another topic (e.g. --output %s.replay) and compare or switch consumers over",
                        topic, !strcmp(cfg->sink.topic, topic) ? "output topic" : "dead-letter topic", topic);
  }
  for (size_t i = 0; i < cfg->sources.n; i++)
    for (size_t k = 0; k < cfg->sources.v[i].topics.n; k++)
      if (!strcmp(cfg->sources.v[i].topics.v[k], topic) || !strcmp(cfg->sources.v[i].topics.v[k], d)) {
        free(t);
        free(d);
        return wd_error_new(WD_ERR_CONFIG, C_REPLAY_OUTPUT, "--output %s: that topic is read by source '%s'", topic,
                            cfg->sources.v[i].name);
      }
  free(cfg->sink.topic);
  free(cfg->sink.dead_letter_topic);
  cfg->sink.topic = t;
  cfg->sink.dead_letter_topic = d;
  return NULL;
}

static int run_pipeline(const char *cmd, const char *config, wd_pipeline_opts_t *opts, const char *output) {
  wd_config_t *cfg = NULL;
  wd_pipeline_t *p = NULL;
  /* the handlers from here on: a SIGTERM during the start (the definition check, the pipeline's
   * clients and state) is kept and stops the pipeline as soon as it exists, instead of the
   * default action killing the process half-way through the start (a second one leaves at once) */
  starting = 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  wd_error_t *err = wd_config_load(config, &cfg);
  int rc = 1;
  if (err) goto done;
  const char *mod = opts->replay ? "widen replay" : "widen run";
  if (output && (err = redirect_output(cfg, output))) goto done;
  char **warn = NULL;
  int nw = wd_interleaving_warnings(cfg, &warn);
  for (int i = 0; i < nw; i++) wd_log(WD_LOG_WARN, mod, "%s", warn[i]);
  wd_interleaving_free(warn);
  /* the file's definition first, as `widen config check` checks it: a mistake in it is reported
   * with its line, not as a definition that differs from the state's, before the directory is
   * opened (or created) */
  if ((err = wd_config_check_definition(cfg))) goto done;
  /* the table definition against the state's (compatible changes go on; incompatible
   * ones fail or rebuild, per state.on-incompatible-change) */
  /* the store is opened once, by the first check, and handed on to the pipeline */
  wd_store_options_t so;
  wd_pipeline_store_options(cfg, &so);
  if ((err = wd_state_dir_check_open(cfg, opts->state_dir, &so, &opts->store)))
    goto done; /* corrupt: refuse, or move aside */
  if ((err = wd_definition_prepare_open(cfg, opts->state_dir, &so, NULL, &opts->store))) goto done;
  if (signals) { /* signalled during the start: nothing was consumed or produced yet */
    wd_store_close(opts->store);
    opts->store = NULL;
    wd_log(WD_LOG_INFO, mod, "stopped during the start");
    rc = 0;
    goto done;
  }
  opts->start_stop = &signals; /* a stop during the start ends its waits (the schema registry's) */
  err = wd_pipeline_new(cfg, opts, &p); /* takes opts->store over */
  opts->store = NULL;
  if (err) goto done;
  running = p;
  starting = 0;
  if (signals) { /* signalled during the start */
    wd_pipeline_stop(p);
    grace_settled = wd_pipeline_settled(p);
    alarm(wd_pipeline_stop_grace_s(p));
  }
  if (opts->no_output)
    wd_log(WD_LOG_INFO, mod,
           "table %s: %zu source(s) -> state %s; nothing is written to Kafka (--output TOPIC "
           "writes the changelog and the dead letters)",
           cfg->table.name, cfg->sources.n, opts->state_dir ? opts->state_dir : cfg->state.dir);
  else
    wd_log(WD_LOG_INFO, mod, "table %s: %zu source(s) -> %s (dead letters: %s), state %s", cfg->table.name,
           cfg->sources.n, cfg->sink.topic, cfg->sink.dead_letter_topic,
           opts->state_dir ? opts->state_dir : cfg->state.dir);
  double t0 = wd_mono_s();
  err = wd_pipeline_run(p);
  grace_settled = wd_pipeline_settled(p); /* for a stop that runs out of time while closing */
  running = NULL;
  wd_pipeline_print_summary(p, stderr, wd_mono_s() - t0);
  if (opts->replay) {
    wd_pipeline_stats_t ps;
    wd_pipeline_get_stats(p, &ps);
    if (opts->no_output)
      fprintf(stderr,
              "widen replay: wrote nothing to Kafka: the %" PRIu64 " changelog rows and %" PRIu64
              " dead letters were counted only (the live topics %s and %s are untouched; --output TOPIC writes "
              "them to TOPIC and TOPIC.dlq)\n",
              ps.changes_out, ps.dead_lettered, cfg->sink.topic, cfg->sink.dead_letter_topic);
    else
      fprintf(stderr, "widen replay: wrote %" PRIu64 " changelog messages to %s and %" PRIu64 " dead letters to %s\n",
              ps.messages_out, cfg->sink.topic, ps.dead_lettered, cfg->sink.dead_letter_topic);
  }
  if (!err) rc = 0;
  else if (wd_error_is(err, WD_EID_E_STOPPED)) rc = 3; /* stopped before its last commit was made: nothing lost */
done:
  starting = 0;
  wd_store_close(opts->store); /* not handed over (an error before the pipeline) */
  opts->store = NULL;
  if (err) {
    if (err->cls == WD_ERR_CONFIG) rc = 2; /* as `widen config check` */
    if (wd_error_is(err, WD_EID_E_STOPPED)) rc = 3; /* stopped before its work was done: nothing lost */
    err = wd_config_brokers_origin(cfg, err); /* a TLS or connection error names WIDEN_BROKERS */
    fprintf(stderr, "widen %s: %s\n", cmd, err->message);
    wd_error_destroy(err);
  }
  running = NULL;
  wd_pipeline_destroy(p);
  wd_config_destroy(cfg);
  return rc;
}

static void run_usage(FILE *f) {
  fprintf(f, "usage: widen run [--config] FILE [--quiet] [--trace FILE] [--max-idle-ms N]\n"
             "\n"
             "Consumes the config's source topics in its consumer group, merges every record into the\n"
             "RocksDB state (state.dir) with the table's merge engine, and produces the wide table's\n"
             "full-row changelog to sink.topic (bad input to sink.dead-letter-topic). Stops on SIGINT or\n"
             "SIGTERM after finishing the batch in hand and its open commit (exit 0); with the broker away\n"
             "it gives up after transaction.timeout.ms (exit 3: the last commit was not made, its records\n"
             "are read again on restart); a second signal leaves at once (exit 130), losing nothing\n"
             "that was committed.\n"
             "  --config FILE     pipeline config (YAML; see configs/example.yaml)\n"
             "  --quiet           no status line every pipeline.status-interval-s seconds\n"
             "  --trace FILE      append every applied source message to FILE in apply order (JSON lines;\n"
             "                    `widen simulate --config FILE TRACE` replays them through the merge engine)\n"
             "  --max-idle-ms N   stop after N ms without input\n"
             "Environment: WIDEN_BROKERS overrides kafka.bootstrap.servers.\n"
             "Exit status: 0 stopped cleanly, 2 the config is refused (as `widen config check`), 1 other errors.\n");
}

int wd_cmd_run(int argc, char **argv) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'}, {"quiet", no_argument, NULL, 'q'},
      {"trace", required_argument, NULL, 't'},  {"max-idle-ms", required_argument, NULL, 'i'},
      {"help", no_argument, NULL, 'h'},         {0}};
  wd_pipeline_opts_t opts = {0};
  opts.from_ms = -1;
  const char *config = NULL;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("run", argc, argv, "c:qh", longopts)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 'q': opts.quiet = true; break;
    case 't': opts.trace_path = optarg; break;
    case 'i': opts.max_idle_ms = strtoll(optarg, NULL, 10); break;
    case 'h': run_usage(stdout); return 0;
    default: run_usage(stderr); return 1;
    }
  }
  if (!config && optind == argc - 1) config = argv[optind++]; /* `widen run FILE` works too */
  if (!config || optind != argc) {
    fprintf(stderr, "widen run: %s\n", config ? "unexpected argument" : "--config FILE is required");
    run_usage(stderr);
    return 1;
  }
  return run_pipeline("run", config, &opts, NULL);
}

static void replay_usage(FILE *f) {
  fprintf(f, "usage: widen replay --config FILE --from beginning|TIMESTAMP --state-dir DIR [--output TOPIC] [--quiet]\n"
             "\n"
             "Rebuilds the table from the source topics into the state directory DIR (use a fresh one):\n"
             "every partition from the start (beginning, or its synonym earliest), or only the records whose\n"
             "Kafka timestamp is at or after TIMESTAMP (ms since the epoch, or YYYY-MM-DD[THH:MM[:SS]] in UTC).\n"
             "No consumer group is joined. By default nothing is written to Kafka (the live changelog and\n"
             "dead-letter topics are left alone: a replay's changelog would repeat every key as +I);\n"
             "--output TOPIC writes the replay's changelog to TOPIC and its dead letters to TOPIC.dlq.\n"
             "Stops when it reaches the end offsets it saw at start and prints a summary saying what was\n"
             "and was not written; a status line while it runs. (--no-output is accepted: it is the default.)\n");
}

int wd_cmd_replay(int argc, char **argv) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"from", required_argument, NULL, 'f'},
                                           {"state-dir", required_argument, NULL, 's'},
                                           {"no-output", no_argument, NULL, 'n'},
                                           {"output", required_argument, NULL, 'o'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"trace", required_argument, NULL, 't'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  wd_pipeline_opts_t opts = {0};
  opts.replay = true;
  opts.no_output = true; /* the safe default: --output TOPIC to write somewhere */
  opts.from_ms = -2;
  const char *config = NULL, *output = NULL;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("replay", argc, argv, "c:h", longopts)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 'f':
      if (parse_from(optarg, &opts.from_ms)) {
        fprintf(
            stderr,
            "widen replay: --from '%s': use beginning (or earliest), ms since the epoch, or YYYY-MM-DD[THH:MM[:SS]]\n",
            optarg);
        return 1;
      }
      break;
    case 's': opts.state_dir = optarg; break;
    case 'n': break; /* the default */
    case 'o':
      output = optarg;
      opts.no_output = false;
      break;
    case 'q': opts.quiet = true; break;
    case 't': opts.trace_path = optarg; break;
    case 'h': replay_usage(stdout); return 0;
    default: replay_usage(stderr); return 1;
    }
  }
  if (!config || !opts.state_dir || opts.from_ms == -2 || optind != argc) {
    if (optind != argc) fprintf(stderr, "widen replay: unexpected argument '%s'\n", argv[optind]);
    if (!config) fprintf(stderr, "widen replay: --config FILE is required\n");
    if (opts.from_ms == -2) fprintf(stderr, "widen replay: --from beginning|TIMESTAMP is required\n");
    if (!opts.state_dir) fprintf(stderr, "widen replay: --state-dir DIR (a fresh directory) is required\n");
    replay_usage(stderr);
    return 1;
  }
  /* a rebuild starts from nothing: a directory with state in it would silently resume */
  DIR *d = opendir(opts.state_dir);
  if (d) {
    struct dirent *de;
    bool empty = true;
    while (empty && (de = readdir(d))) empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
    closedir(d);
    if (!empty) {
      fprintf(stderr,
              "widen replay: --state-dir %s is not empty; replay rebuilds the table into a fresh directory "
              "(give a new path, or remove this one)\n",
              opts.state_dir);
      return 1;
    }
  }
  return run_pipeline("replay", config, &opts, output);
}

/* ---- widen rows ---------------------------------------------------------------------- */

static void rows_usage(FILE *f) {
  fprintf(f, "usage: widen rows [--config] FILE [--state-dir DIR] [--all-tasks]\n\nPrints the wide table's rows from "
             "the state directory (default state.dir) as JSON lines, sorted by primary key. While a widen runs on the "
             "directory it is read without its lock (a read-only RocksDB secondary instance, as `widen status` "
             "does): the rows as of the last write it sees.\n"
             "With pipeline.tasks: per-partition the consumer group is asked which tasks this directory still "
             "holds: the rows of a task that another member moved on (`widen status`: owned \"no\") are this "
             "directory's old copy and are left out, and stderr says how many of which tasks; --all-tasks prints "
             "them too.\n");
}

/* The tasks (per-partition: task i = partition i) another member of the group moved on: a source
 * partition whose group offset is past this directory's stored one (as `widen status`'s owned
 * "no"). *stale a new array (free) of *n task ids. A group that cannot be asked is logged (every
 * row is then printed). */
typedef struct {
  uint32_t *v;
  size_t n;
} task_set_t;

static bool task_kept(void *ctx, uint32_t task) {
  const task_set_t *ts = ctx;
  for (size_t i = 0; i < ts->n; i++)
    if (ts->v[i] == task) return false;
  return true;
}

static wd_error_t *stale_tasks(const wd_config_t *cfg, wd_store_t *st, task_set_t *ts) {
  const char **topics = calloc(cfg->sources.n * 4 + 1, sizeof(*topics));
  size_t nt = 0;
  wd_kafka_conf_t kc = {0};
  wd_partition_position_t *pos = NULL;
  size_t npos = 0;
  wd_error_t *err = topics ? NULL : wd_error_nomem();
  for (size_t i = 0; !err && i < cfg->sources.n; i++)
    for (size_t k = 0; k < cfg->sources.v[i].topics.n; k++) {
      const char *tp = cfg->sources.v[i].topics.v[k];
      bool seen = false;
      for (size_t j = 0; j < nt; j++) seen = seen || !strcmp(topics[j], tp);
      if (!seen && nt < cfg->sources.n * 4) topics[nt++] = tp;
    }
  if (!err) err = wd_kafka_conf_set_brokers(&kc, cfg->kafka.bootstrap_servers);
  for (size_t i = 0; !err && i < cfg->kafka.properties.n; i++) {
    const char *k = cfg->kafka.properties.v[i].key;
    if (!strcmp(k, "group.instance.id") || !strcmp(k, "partition.assignment.strategy")) continue;
    err = wd_kafka_conf_set(&kc, k, cfg->kafka.properties.v[i].value);
  }
  if (!err) err = wd_kafka_conf_set_group(&kc, cfg->kafka.group_id);
  if (!err) err = wd_kafka_group_positions(&kc, topics, nt, 10000, &pos, &npos);
  for (size_t i = 0; !err && i < npos; i++) {
    int64_t stored = -1;
    if ((err = wd_store_get_offset(st, pos[i].topic, pos[i].partition, &stored))) break;
    if (stored < 0 || pos[i].committed <= stored || !task_kept(ts, (uint32_t)pos[i].partition)) continue;
    uint32_t *v = realloc(ts->v, (ts->n + 1) * sizeof(*v));
    if (!v) {
      err = wd_error_nomem();
      break;
    }
    ts->v = v;
    ts->v[ts->n++] = (uint32_t)pos[i].partition;
  }
  free(pos);
  wd_kafka_conf_clear(&kc);
  free(topics);
  return err;
}

int wd_cmd_rows(int argc, char **argv) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"state-dir", required_argument, NULL, 's'},
                                           {"all-tasks", no_argument, NULL, 'a'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *config = NULL, *dir = NULL;
  bool all_tasks = false;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("rows", argc, argv, "c:h", longopts)) != -1) {
    if (ch == 'a') all_tasks = true;
    else if (ch == 'c') config = optarg;
    else if (ch == 's') dir = optarg;
    else {
      rows_usage(ch == 'h' ? stdout : stderr);
      return ch == 'h' ? 0 : 1;
    }
  }
  if (!config && optind == argc - 1) config = argv[optind++]; /* `widen rows FILE` works too */
  if (!config || optind != argc) {
    fprintf(stderr, "widen rows: %s\n", config ? "unexpected argument" : "--config FILE is required");
    rows_usage(stderr);
    return 1;
  }
  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  wd_state_t *state = NULL;
  wd_row_t **rows = NULL;
  size_t nrows = 0;
  const wd_schema_t *schema = NULL;
  wd_buf_t buf = {0};
  int rc = 1;
  wd_error_t *err = wd_config_load(config, &cfg);
  if (!err) err = wd_config_build_table(cfg, &t);
  const char *sdir = dir ? dir : cfg ? cfg->state.dir : NULL;
  struct stat sb;
  if (!err && stat(sdir, &sb) != 0)
    err = wd_error_new(WD_ERR_CONFIG, C_STATE_DIR, "state directory %s does not exist: %s", sdir,
                       dir ? "check --state-dir" : "check state.dir (it is relative to the working directory)");
  if (!err) err = wd_store_open_rocksdb(sdir, NULL, &st);
  if (wd_error_is(err, WD_EID_E_STORE_LOCKED)) {
    /* a running widen holds the directory: read it as `status` and `changes` do, through a
     * read-only secondary instance (the rows as of now, without the lock) */
    wd_error_destroy(err);
    err = wd_store_open_rocksdb_secondary(sdir, &st);
  }
  if (!err && !(state = wd_state_new(t, st, 0))) err = wd_error_nomem();
  if (!err) err = wd_state_check_table(state, sdir);
  /* the visible rows: with lookup or required sources (join/lookup.h) rows that lack a required
   * side are stored but not listed */
  wd_join_t *join = NULL;
  wd_source_t **srcs = cfg ? calloc(cfg->sources.n + 1, sizeof(*srcs)) : NULL;
  int *ids = cfg ? calloc(cfg->sources.n + 1, sizeof(*ids)) : NULL;
  if (!err && (!srcs || !ids)) err = wd_error_nomem();
  if (!err) err = wd_config_build_join(cfg, t, srcs, ids, &join);
  if (!err) err = wd_join_start(join, state, st);
  task_set_t stale = {0};
  if (!err && !all_tasks && cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION && cfg->kafka.group_id) {
    wd_error_t *kerr = stale_tasks(cfg, st, &stale);
    if (kerr) {
      fprintf(stderr,
              "widen rows: the group %s cannot say which tasks this directory still holds (%s): the rows of "
              "every task kept here are printed\n",
              cfg->kafka.group_id, kerr->message);
      wd_error_destroy(kerr);
      stale.n = 0;
    }
    if (stale.n) wd_state_set_task_filter(state, task_kept, &stale);
  }
  if (!err) {
    schema = wd_table_schema(t);
    err = wd_join_rows_sorted(join, &rows, &nrows);
  }
  if (!err && stale.n && wd_state_left_out(state)) { /* nothing left out (a standby copy kept current): no word */
    fprintf(stderr, "widen rows: left out %" PRIu64 " rows of task%s", wd_state_left_out(state),
            stale.n > 1 ? "s" : "");
    for (size_t i = 0; i < stale.n; i++) fprintf(stderr, "%s %" PRIu32, i ? "," : "", stale.v[i]);
    fprintf(stderr,
            ": another member of group %s moved their partitions on, so this directory holds an old copy "
            "(widen status: owned \"no\"); --all-tasks prints them\n",
            cfg->kafka.group_id);
  }
  free(stale.v);
  if (!err) {
    for (size_t i = 0; i < nrows; i++) {
      wd_buf_reset(&buf);
      if (wd_changelog_put_row(&buf, schema, rows[i])) {
        err = wd_error_nomem();
        break;
      }
      fwrite(buf.data, 1, buf.len, stdout);
      fputc('\n', stdout);
    }
    if (!err) rc = 0;
  }
  if (err) fprintf(stderr, "widen rows: %s\n", err->message);
  wd_error_destroy(err);
  if (state) wd_state_rows_free(state, rows, nrows);
  wd_join_destroy(join);
  for (size_t i = 0; srcs && i < cfg->sources.n; i++) wd_source_destroy(srcs[i]);
  free(srcs);
  free(ids);
  wd_buf_free(&buf);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  return rc;
}
