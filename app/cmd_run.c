/*
 * app/cmd_run.c — `widen run`, `widen replay` and `widen rows`: the main job, a rebuild of the
 * table from the source topics, and a dump of the table's rows from a state directory.
 */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/commands.h"
#include "app/config.h"
#include "app/pipeline.h"
#include "changelog/changelog.h"
#include "common/log.h"
#include "join/state.h"

static wd_pipeline_t *running;

static void on_signal(int sig) {
  (void)sig;
  if (running) wd_pipeline_stop(running);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses "earliest" or a timestamp: ms since the epoch, or "YYYY-MM-DD[THH:MM[:SS]]" (UTC). */
static int parse_from(const char *s, int64_t *ms) {
  if (!strcmp(s, "earliest")) {
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

static int run_pipeline(const char *cmd, const char *config, wd_pipeline_opts_t *opts) {
  wd_config_t *cfg = NULL;
  wd_pipeline_t *p = NULL;
  wd_error_t *err = wd_config_load(config, &cfg);
  int rc = 1;
  if (err) goto done;
  if ((err = wd_pipeline_new(cfg, opts, &p))) goto done;
  running = p;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  wd_log(WD_LOG_INFO, cmd, "table %s: %zu source(s) -> %s (dead letters: %s), state %s", cfg->table.name,
         cfg->sources.n, opts->no_output ? "(no output)" : cfg->sink.topic, cfg->sink.dead_letter_topic,
         opts->state_dir ? opts->state_dir : cfg->state.dir);
  double t0 = mono_s();
  err = wd_pipeline_run(p);
  running = NULL;
  wd_pipeline_print_summary(p, stderr, mono_s() - t0);
  if (!err) rc = 0;
done:
  if (err) {
    fprintf(stderr, "widen %s: %s\n", cmd, err->message);
    wd_error_destroy(err);
  }
  running = NULL;
  wd_pipeline_destroy(p);
  wd_config_destroy(cfg);
  return rc;
}

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: widen run [--config] FILE [--quiet] [--trace FILE] [--max-idle-ms N]\n"
          "\n"
          "Consumes the config's source topics in its consumer group, merges every record into the\n"
          "RocksDB state (state.dir) with the table's merge engine, and produces the wide table's\n"
          "full-row changelog to sink.topic (bad input to sink.dead-letter-topic). Stops on SIGINT or\n"
          "SIGTERM after finishing the batch in hand (exit 0).\n"
          "  --config FILE     pipeline config (YAML; see configs/example.yaml)\n"
          "  --quiet           no status line every pipeline.status-interval-s seconds\n"
          "  --trace FILE      append every applied source message to FILE in apply order (JSON lines\n"
          "                    usable as `widen simulate` input; for debugging and tests)\n"
          "  --max-idle-ms N   stop after N ms without input\n"
          "Environment: WIDEN_BROKERS overrides kafka.bootstrap.servers.\n");
}

int wd_cmd_run(int argc, char **argv) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"trace", required_argument, NULL, 't'},
                                           {"max-idle-ms", required_argument, NULL, 'i'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  wd_pipeline_opts_t opts = {0};
  opts.from_ms = -1;
  const char *config = NULL;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "c:qh", longopts, NULL)) != -1) {
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
  return run_pipeline("run", config, &opts);
}

static void replay_usage(FILE *f) {
  fprintf(f,
          "usage: widen replay --config FILE --from earliest|TIMESTAMP --state-dir DIR [--no-output] [--quiet]\n"
          "\n"
          "Rebuilds the table from the source topics into the state directory DIR (use a fresh one):\n"
          "every partition from the start (earliest), or only the records whose Kafka timestamp is at or\n"
          "after TIMESTAMP (ms since the epoch, or YYYY-MM-DD[THH:MM[:SS]] in UTC). No consumer group is\n"
          "joined. Emits the changelog to the sink unless --no-output. Stops when it reaches the end\n"
          "offsets it saw at start and prints a summary (records, keys, time); a status line while it runs.\n");
}

int wd_cmd_replay(int argc, char **argv) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"from", required_argument, NULL, 'f'},
                                           {"state-dir", required_argument, NULL, 's'},
                                           {"no-output", no_argument, NULL, 'n'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"trace", required_argument, NULL, 't'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  wd_pipeline_opts_t opts = {0};
  opts.replay = true;
  opts.from_ms = -2;
  const char *config = NULL;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
    switch (ch) {
      case 'c': config = optarg; break;
      case 'f':
        if (parse_from(optarg, &opts.from_ms)) {
          fprintf(stderr, "widen replay: --from '%s': use earliest, ms since the epoch, or YYYY-MM-DD[THH:MM[:SS]]\n",
                  optarg);
          return 1;
        }
        break;
      case 's': opts.state_dir = optarg; break;
      case 'n': opts.no_output = true; break;
      case 'q': opts.quiet = true; break;
      case 't': opts.trace_path = optarg; break;
      case 'h': replay_usage(stdout); return 0;
      default: replay_usage(stderr); return 1;
    }
  }
  if (!config || !opts.state_dir || opts.from_ms == -2 || optind != argc) {
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
      fprintf(stderr, "widen replay: --state-dir %s is not empty; replay rebuilds the table into a fresh directory "
                      "(give a new path, or remove this one)\n", opts.state_dir);
      return 1;
    }
  }
  return run_pipeline("replay", config, &opts);
}

/* ---- widen rows ---------------------------------------------------------------------- */

int wd_cmd_rows(int argc, char **argv) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'}, {"state-dir", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *config = NULL, *dir = NULL;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
    if (ch == 'c')
      config = optarg;
    else if (ch == 's')
      dir = optarg;
    else {
      FILE *f = ch == 'h' ? stdout : stderr;
      fprintf(f,
              "usage: widen rows --config FILE [--state-dir DIR]\n\nPrints the wide table's rows from the state "
              "directory (default state.dir) as JSON lines, sorted by primary key. The directory must not be in "
              "use by a running widen.\n");
      return ch == 'h' ? 0 : 1;
    }
  }
  if (!config) {
    fprintf(stderr, "widen rows: --config FILE is required\n");
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
    err = wd_error_new(WD_ERR_CONFIG, "C_STATE_DIR", "state directory %s does not exist: %s", sdir,
                       dir ? "check --state-dir" : "check state.dir (it is relative to the working directory)");
  if (!err) err = wd_store_open_rocksdb(sdir, NULL, &st);
  if (!err && !(state = wd_state_new(t, st, 0))) err = wd_error_nomem();
  if (!err) err = wd_state_check_table(state, sdir);
  if (!err) {
    schema = wd_table_schema(t);
    err = wd_state_rows_sorted(state, &rows, &nrows);
  }
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
  wd_buf_free(&buf);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  return rc;
}
