/*
 * app/cli/cmd_ops.c — the operator commands: `widen status` (commit history, position,
 * lag and state size of a running pipeline, read without its lock) and `widen changes` (the net
 * change per key between two commits, read from the output records the history names).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/cli/commands.h"
#include "common/clock.h"
#include "app/config/config.h"
#include "app/ops/history.h"
#include "app/ops/netchange.h"
#include "app/cli/cli.h"
#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "ingest/positions.h"
#include "join/merge.h"
#include "join/store.h"

/* The source topics of cfg as a new array (free()) of borrowed names. */
static const char **source_topics(const wd_config_t *cfg, size_t *n) {
  size_t cnt = 0;
  for (size_t i = 0; i < cfg->sources.n; i++) cnt += cfg->sources.v[i].topics.n;
  const char **t = calloc(cnt ? cnt : 1, sizeof(*t));
  *n = 0;
  if (!t) return NULL;
  for (size_t i = 0; i < cfg->sources.n; i++)
    for (size_t k = 0; k < cfg->sources.v[i].topics.n; k++) t[(*n)++] = cfg->sources.v[i].topics.v[k];
  return t;
}

static wd_error_t *kafka_conf(const wd_config_t *cfg, bool group, wd_kafka_conf_t *kc) {
  wd_error_t *err = wd_kafka_conf_set_brokers(kc, cfg->kafka.bootstrap_servers);
  for (size_t i = 0; !err && i < cfg->kafka.properties.n; i++) {
    const char *k = cfg->kafka.properties.v[i].key;
    if (!strcmp(k, "group.instance.id") || !strcmp(k, "partition.assignment.strategy")) continue;
    err = wd_kafka_conf_set(kc, k, cfg->kafka.properties.v[i].value);
  }
  if (!err && group) err = wd_kafka_conf_set_group(kc, cfg->kafka.group_id);
  return err;
}

static void fmt_time(int64_t ms, char *buf, size_t n) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + k, n - k, ".%03dZ", (int)(ms % 1000));
}

/* ---- widen status ------------------------------------------------------------------------ */

static void status_usage(FILE *f) {
  fprintf(f,
          "usage: widen status --config FILE [--state-dir DIR] [--last N] [--no-kafka]  (or: widen status FILE ...)\n"
          "\n"
          "Prints the commit history (the last N commits, default 20, oldest first, one JSON object a line:\n"
          "number, time, mode, input and output offset ranges, records in, changes out, dead letters,\n"
          "duration), then per source partition whether this state directory holds it (owned), the position\n"
          "stored with the state, the group's committed offset, the end offset and the lag (end - committed),\n"
          "and the state's size. Works while\n"
          "`widen run` runs: the state is opened read-only without its lock (a RocksDB secondary instance).\n"
          "  --no-kafka   skip the group's offsets and the lag (no broker needed)\n");
}

/* The kept history's time span and what keeps it (state.history-*), one line. */
static void print_history_kept(const wd_config_t *cfg, uint64_t first, int64_t first_ms, uint64_t last,
                               int64_t last_ms) {
  char a[40] = "-", b[40] = "-", age[32] = "no age limit", size[32] = "no size limit";
  if (last) {
    fmt_time(first_ms, a, sizeof(a));
    fmt_time(last_ms, b, sizeof(b));
  }
  if (cfg->state.history_retention_ms > 0)
    snprintf(age, sizeof(age), "%.3g h", (double)cfg->state.history_retention_ms / 3600000.0);
  if (cfg->state.history_max_bytes > 0)
    snprintf(size, sizeof(size), "%.3g MiB", (double)cfg->state.history_max_bytes / 1048576.0);
  printf("history: %" PRIu64 " commits kept, %s .. %s (state.history-retention %s, state.history-max-bytes %s%s)\n",
         last ? last - first + 1 : 0, a, b, age, size, cfg->state.history_size > 0 ? ", state.history-size" : "");
}

/* The deferred state flush (state.flush-interval-ms): the offsets stored with the state trail the
 * commits this directory made. For each position pos[i] with stored[i] < its committed offset,
 * done[i] := the newest commit of the history (walked back from `last`, at most `bound` records)
 * whose input reached the committed offset: the partition's state up to there is this directory's,
 * in memory or replayed at the next start, not another member's. Errors: wd_history_get's. */
static wd_error_t *history_reached(wd_store_t *st, uint64_t first, uint64_t last, const wd_partition_position_t *pos,
                                   const int64_t *stored, size_t n, bool *done, uint64_t bound) {
  size_t open = 0;
  for (size_t i = 0; i < n; i++) {
    done[i] = false;
    open += pos[i].committed > stored[i];
  }
  for (uint64_t k = last; open && k >= first && k > 0 && last - k < bound; k--) {
    wd_history_entry_t *e = NULL;
    wd_error_t *err = wd_history_get(st, k, &e);
    if (err) return err;
    for (size_t j = 0; e && j < e->info.nin; j++)
      for (size_t i = 0; i < n; i++)
        if (!done[i] && pos[i].committed > stored[i] && e->info.in[j].partition == pos[i].partition &&
            !strcmp(e->info.in[j].topic, pos[i].topic) && e->info.in[j].to >= pos[i].committed) {
          done[i] = true;
          open--;
        }
    wd_history_entry_free(e);
  }
  return NULL;
}

int wd_cmd_status(int argc, char **argv) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'}, {"state-dir", required_argument, NULL, 's'},
      {"last", required_argument, NULL, 'n'},   {"no-kafka", no_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},         {0}};
  const char *config = NULL, *dir = NULL;
  long last_n = 20;
  bool last_given = false; /* the note about a history shorter than --last only when it was asked for */
  bool no_kafka = false;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("status", argc, argv, "c:h", longopts)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 's': dir = optarg; break;
    case 'n':
      last_n = strtol(optarg, NULL, 10);
      last_given = true;
      break;
    case 'k': no_kafka = true; break;
    case 'h': status_usage(stdout); return 0;
    default: status_usage(stderr); return 1;
    }
  }
  if (!config && optind == argc - 1) config = argv[optind++]; /* `widen status FILE`, as run and rows */
  if (!config || optind != argc) {
    fprintf(stderr, "widen status: %s%s%s\n", config ? "unexpected argument '" : "--config FILE is required",
            config ? argv[optind] : "", config ? "'" : "");
    status_usage(stderr);
    return 1;
  }
  wd_config_t *cfg = NULL;
  wd_store_t *st = NULL;
  wd_kafka_conf_t kc = {0};
  wd_partition_position_t *pos = NULL;
  int64_t *stored_at = NULL; /* per pos[i]: the offset stored with the state (-1: none) */
  bool *flushing = NULL; /* per pos[i]: committed past stored_at by this directory's own commits */
  size_t npos = 0, ntopics = 0;
  const char **topics = NULL;
  wd_buf_t line = {0};
  int rc = 1;
  wd_error_t *err = wd_config_load(config, &cfg);
  if (err) goto done;
  const char *sdir = dir ? dir : cfg->state.dir;
  if ((err = wd_store_open_rocksdb_secondary(sdir, &st))) goto done;
  uint64_t first = 0, last = 0;
  int64_t first_ms = 0, last_ms = 0;
  if ((err = wd_history_kept_range(st, &first, &first_ms, &last, &last_ms))) goto done;
  uint64_t from = last_n > 0 && last >= (uint64_t)last_n && last - (uint64_t)last_n + 1 > first
                      ? last - (uint64_t)last_n + 1
                      : first;
  char when[40] = "-";
  printf("table %s, state %s: %" PRIu64 " bytes of data (its SST files and memtables); commits %" PRIu64 "..%" PRIu64
         " in the history\n",
         cfg->table.name, sdir, wd_store_disk_bytes(st), first, last);
  print_history_kept(cfg, first, first_ms, last, last_ms);
  if (last_given && last_n > 0 && last && (uint64_t)last_n > last - first + 1)
    printf("history: --last %ld reaches before the history: it keeps %" PRIu64 " commits\n", last_n, last - first + 1);
  printf("commits (oldest first):\n");
  for (uint64_t n = from; last && n <= last; n++) {
    wd_history_entry_t *e = NULL;
    if ((err = wd_history_get(st, n, &e))) goto done;
    if (!e) continue;
    wd_buf_reset(&line);
    if (wd_history_to_json(&e->info, &line)) {
      wd_history_entry_free(e);
      err = wd_error_nomem();
      goto done;
    }
    if (n == last) fmt_time(e->info.time_ms, when, sizeof(when));
    printf("%.*s\n", (int)line.len, (const char *)line.data);
    wd_history_entry_free(e);
  }
  printf("last commit: %s\n", when);
  if (!(topics = source_topics(cfg, &ntopics))) {
    err = wd_error_nomem();
    goto done;
  }
  if (!no_kafka) {
    if ((err = kafka_conf(cfg, true, &kc))) goto done;
    if ((err = wd_kafka_group_positions(&kc, topics, ntopics, 10000, &pos, &npos))) goto done;
    /* owned = this state directory holds the partition's current state: its stored
     * position is at (or, mid-commit, past) the group's committed offset. Behind it, another member
     * moved the partition on: the stored offset is only this directory's old copy, shown in
     * parentheses. Never stored: "-". */
    if (!(stored_at = calloc(npos ? npos : 1, sizeof(*stored_at))) || !(flushing = calloc(npos ? npos : 1, 1))) {
      err = wd_error_nomem();
      goto done;
    }
    for (size_t i = 0; i < npos; i++)
      if ((err = wd_store_get_offset(st, pos[i].topic, pos[i].partition, &stored_at[i]))) goto done;
    /* the deferred state flush: a committed offset past the stored one that this directory's own
     * commits reached (its history says so) is still this directory's */
    if ((err = history_reached(st, first, last, pos, stored_at, npos, flushing, 100000))) goto done;
    bool any_flushing = false;
    printf("%-40s %-6s %12s %12s %12s %10s\n", "partition", "owned", "stored", "committed", "end", "lag");
    int64_t total = 0;
    for (size_t i = 0; i < npos; i++) {
      int64_t stored = stored_at[i];
      bool behind = pos[i].committed > stored && !flushing[i];
      any_flushing |= flushing[i];
      const char *owned = flushing[i] ? "yes" : stored < 0 ? "-" : behind ? "no" : "yes";
      int64_t base = pos[i].committed >= 0 ? pos[i].committed : stored >= 0 ? stored : 0;
      int64_t lag = pos[i].end > base ? pos[i].end - base : 0;
      total += lag;
      char name[300], stored_s[32], committed_s[32];
      snprintf(name, sizeof(name), "%s[%" PRId32 "]", pos[i].topic, pos[i].partition);
      if (flushing[i] && stored < 0) snprintf(stored_s, sizeof(stored_s), "-*");
      else if (flushing[i]) snprintf(stored_s, sizeof(stored_s), "%" PRId64 "*", stored);
      else if (stored < 0) snprintf(stored_s, sizeof(stored_s), "-");
      else if (behind) snprintf(stored_s, sizeof(stored_s), "(%" PRId64 ")", stored);
      else snprintf(stored_s, sizeof(stored_s), "%" PRId64, stored);
      if (pos[i].committed < 0) snprintf(committed_s, sizeof(committed_s), "-");
      else snprintf(committed_s, sizeof(committed_s), "%" PRId64, pos[i].committed);
      printf("%-40s %-6s %12s %12s %12" PRId64 " %10" PRId64 "\n", name, owned, stored_s, committed_s, pos[i].end, lag);
    }
    printf("lag: %" PRId64 " (group %s; owned: this state directory holds the partition's current state, \"no\": "
           "another member moved it on and (N) is this directory's old position, \"-\": never held here)\n",
           total, cfg->kafka.group_id);
    if (any_flushing)
      printf("*: the rows of this directory's commits from the stored offset up to the committed one are not written "
             "to the state yet (state.flush-interval-ms): kept in memory by the running process, or read again "
             "without output by its next start\n");
  }
  rc = 0;
done:
  if (err) fprintf(stderr, "widen status: %s\n", err->message);
  wd_error_destroy(err);
  wd_buf_free(&line);
  free(pos);
  free(stored_at);
  free(flushing);
  free(topics);
  wd_kafka_conf_clear(&kc);
  wd_store_close(st);
  wd_config_destroy(cfg);
  return rc;
}

/* ---- widen changes ----------------------------------------------------------------------- */

static void changes_usage(FILE *f) {
  fprintf(f, "usage: widen changes --config FILE --from A --to B [--state-dir DIR]\n"
             "\n"
             "Prints the net change of every key over the commits A..B (both included) of the commit\n"
             "history, as changelog-json lines {\"op\",\"table\",\"row\"} sorted by key: +I for a key that\n"
             "appeared, -D for one that went, -U then +U for a changed row, nothing for a key whose net\n"
             "change is empty. A and B are commit numbers, or points in time (ms since the epoch, or\n"
             "YYYY-MM-DD[THH:MM[:SS]] UTC) that select the commits made between them; A after B is a\n"
             "usage error, and commits or a point in time before the history (once older commits were\n"
             "dropped) or a range starting after its last commit are C_HISTORY_RANGE (exit 1). Reads only the\n"
             "output records of those commits (their offsets are in the history), never the whole state;\n"
             "the state is opened read-only, so this works while `widen run` runs.\n");
}

/* A bound: a commit number, or a time in ms (is_time). */
typedef struct {
  bool is_time;
  int64_t v;
} bound_t;

static int parse_bound(const char *s, bound_t *b) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end && *end == 0 && v >= 0) {
    b->is_time = v >= 100000000000LL; /* 1973 in ms: a number this big is a time */
    b->v = v;
    return 0;
  }
  struct tm tm = {0};
  const char *rest = strptime(s, "%Y-%m-%d", &tm);
  if (!rest) return -1;
  if (*rest == 'T' || *rest == ' ') {
    if (!(rest = strptime(rest + 1, "%H:%M", &tm))) return -1;
    if (*rest == ':' && !(rest = strptime(rest + 1, "%S", &tm))) return -1;
  }
  if (*rest == 'Z') rest++;
  if (*rest) return -1;
  b->is_time = true;
  b->v = (int64_t)timegm(&tm) * 1000;
  return 0;
}

/* The wanted range of one output partition. */
typedef struct {
  int32_t partition;
  int64_t from, to;
  bool done;
} want_t;

typedef struct {
  want_t *w;
  size_t n;
} wants_t;

static int64_t changes_on_assign(void *ctx, const char *topic, int32_t partition) {
  (void)topic;
  const wants_t *ws = ctx;
  for (size_t i = 0; i < ws->n; i++)
    if (ws->w[i].partition == partition) return ws->w[i].from;
  return WD_OFFSET_END;
}

typedef struct {
  const wd_schema_t *schema;
  const char *table;
  wd_buf_t buf;
  size_t lines;
} printer_t;

static int print_row(void *ctx, const wd_row_t *row) {
  printer_t *pr = ctx;
  wd_buf_reset(&pr->buf);
  wd_error_t *err = wd_changelog_encode_changelog_json(pr->schema, pr->table, -1, row, &pr->buf);
  if (err) {
    wd_error_destroy(err);
    return 1;
  }
  fwrite(pr->buf.data, 1, pr->buf.len, stdout);
  fputc('\n', stdout);
  pr->lines++;
  return 0;
}

int wd_cmd_changes(int argc, char **argv) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'}, {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},     {"state-dir", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},         {0}};
  const char *config = NULL, *dir = NULL, *from_s = NULL, *to_s = NULL;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("changes", argc, argv, "c:h", longopts)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 'f': from_s = optarg; break;
    case 't': to_s = optarg; break;
    case 's': dir = optarg; break;
    case 'h': changes_usage(stdout); return 0;
    default: changes_usage(stderr); return 1;
    }
  }
  bound_t a = {0}, b = {0};
  if (!config || !from_s || !to_s || optind != argc) {
    if (optind != argc) fprintf(stderr, "widen changes: unexpected argument '%s'\n", argv[optind]);
    if (!config) fprintf(stderr, "widen changes: --config FILE is required\n");
    if (!from_s || !to_s) fprintf(stderr, "widen changes: --from A and --to B are required\n");
    changes_usage(stderr);
    return 1;
  }
  if (parse_bound(from_s, &a) || parse_bound(to_s, &b)) {
    fprintf(stderr, "widen changes: --from/--to: a commit number, ms since the epoch, or YYYY-MM-DD[THH:MM[:SS]]\n");
    return 1;
  }
  if (a.is_time == b.is_time && a.v > b.v) { /* an empty range is a mistake, not "no change" */
    fprintf(stderr, "widen changes: --from %s is after --to %s: give the older %s first (A..B, both included)\n",
            from_s, to_s, a.is_time ? "point in time" : "commit");
    return 1;
  }
  wd_config_t *cfg = NULL;
  wd_table_t *table = NULL;
  wd_store_t *st = NULL;
  wd_netchange_t *nc = NULL;
  wd_consumer_t *cons = NULL;
  wd_kafka_conf_t kc = {0};
  wants_t ws = {0};
  wd_kmsg_t *msgs = NULL;
  size_t nmsgs = 0;
  printer_t pr = {0};
  int rc = 1;
  wd_error_t *err = wd_config_load(config, &cfg);
  if (err) goto done;
  if (cfg->sink.format == WD_CONFIG_SINK_AVRO) {
    err = wd_error_new(WD_ERR_CONFIG, C_CONFIG, "widen changes reads debezium-json and changelog-json sinks only");
    goto done;
  }
  if ((err = wd_config_build_table(cfg, &table))) goto done;
  const wd_schema_t *schema = wd_table_schema(table);
  if (!(nc = wd_netchange_new(schema))) goto nomem;
  if ((err = wd_store_open_rocksdb_secondary(dir ? dir : cfg->state.dir, &st))) goto done;
  uint64_t first = 0, last = 0;
  if ((err = wd_history_last(st, &last)) || (err = wd_history_first(st, &first))) goto done;
  if (!a.is_time && !b.is_time && a.v <= b.v && last && (uint64_t)a.v < first && (uint64_t)b.v >= first) {
    /* the older commits' changes are gone from the history: the answer would be incomplete
     * (commits after the last one do not exist yet: B is taken as the last) */
    err = wd_error_new(WD_ERR_CONFIG, C_HISTORY_RANGE,
                       "commits %" PRId64 "..%" PRId64 " are not all in the history (it holds %" PRIu64 "..%" PRIu64
                       "; state.history-retention and state.history-max-bytes set how much is kept)",
                       a.v, b.v, first, last);
    goto done;
  }
  if (a.is_time && last && first > 1) {
    /* a point in time before the oldest commit kept: the commits between it and that one are
     * gone from the history (as commit numbers before it are refused above) */
    wd_history_entry_t *e0 = NULL;
    if ((err = wd_history_get(st, first, &e0))) goto done;
    int64_t t0 = e0 ? e0->info.time_ms : 0;
    wd_history_entry_free(e0);
    if (t0 && a.v < t0) {
      time_t ta = (time_t)(a.v / 1000), tf = (time_t)(t0 / 1000);
      char sa[32], sf[32];
      strftime(sa, sizeof(sa), "%Y-%m-%dT%H:%M:%SZ", gmtime(&ta));
      strftime(sf, sizeof(sf), "%Y-%m-%dT%H:%M:%SZ", gmtime(&tf));
      err =
          wd_error_new(WD_ERR_CONFIG, C_HISTORY_RANGE,
                       "--from %s (%s) is before the history: its oldest commit kept, %" PRIu64 ", was made at %s "
                       "(%" PRId64 "); the commits before it are gone, so the answer would be incomplete. Give "
                       "--from %" PRId64 " or later (state.history-retention and state.history-max-bytes set how much "
                       "is kept)",
                       from_s, sa, first, sf, t0, t0);
      goto done;
    }
  }
  if (!a.is_time && (!last || (uint64_t)a.v > last)) {
    /* the range begins after the last commit: none of its commits exists (yet) */
    if (last)
      err = wd_error_new(WD_ERR_CONFIG, C_HISTORY_RANGE,
                         "commits %" PRId64 "..%" PRId64 " are past the history (it holds %" PRIu64 "..%" PRIu64
                         "; the last commit is %" PRIu64 ")",
                         a.v, b.v, first, last, last);
    else
      err = wd_error_new(WD_ERR_CONFIG, C_HISTORY_RANGE,
                         "commits %" PRId64 "..%" PRId64 " are past the history: it is empty (no commit yet in %s)",
                         a.v, b.v, dir ? dir : cfg->state.dir);
    goto done;
  }
  /* the output ranges of the selected commits, merged per partition */
  for (uint64_t n = first; last && n <= last; n++) {
    wd_history_entry_t *e = NULL;
    if ((err = wd_history_get(st, n, &e))) goto done;
    if (!e) continue;
    bool in = (a.is_time ? e->info.time_ms >= a.v : (int64_t)n >= a.v) &&
              (b.is_time ? e->info.time_ms <= b.v : (int64_t)n <= b.v);
    for (size_t i = 0; in && i < e->info.nout; i++) {
      const wd_commit_range_t *r = &e->info.out[i];
      if (strcmp(r->topic, cfg->sink.topic)) continue;
      size_t k = 0;
      while (k < ws.n && ws.w[k].partition != r->partition) k++;
      if (k == ws.n) {
        want_t *w = realloc(ws.w, (ws.n + 1) * sizeof(*w));
        if (!w) {
          wd_history_entry_free(e);
          goto nomem;
        }
        ws.w = w;
        ws.w[ws.n++] = (want_t){r->partition, r->from, r->to, false};
      } else {
        if (r->from < ws.w[k].from) ws.w[k].from = r->from;
        if (r->to > ws.w[k].to) ws.w[k].to = r->to;
      }
    }
    wd_history_entry_free(e);
  }
  if (ws.n) {
    if ((err = kafka_conf(cfg, false, &kc))) goto done;
    const char *topic = cfg->sink.topic;
    /* a one-shot reader: an absent broker is reported after 10 s, not waited for */
    if ((err = wd_consumer_new_ex(&kc, &topic, 1, changes_on_assign, &ws, WD_CONSUMER_ONE_TRY, &cons))) {
      if (err->cls == WD_ERR_KAFKA && err->retriable) {
        wd_error_t *why = wd_error_make(err->cls, err->eid,
                                        "%s; widen changes reads the commits' changes back from the output topic %s "
                                        "at %s: is the broker up?",
                                        wd_error_text(err), topic, cfg->kafka.bootstrap_servers);
        if (why != wd_error_nomem()) {
          why->retriable = true;
          wd_error_destroy(err);
          err = why;
        }
      }
      err = wd_config_brokers_origin(cfg, err);
      goto done;
    }
    if (!(msgs = calloc(500, sizeof(*msgs)))) goto nomem;
    size_t left = ws.n;
    int64_t last_data = wd_mono_ms();
    while (left) {
      if ((err = wd_consumer_poll_batch(cons, 500, 200, msgs, &nmsgs))) goto done;
      if (nmsgs) last_data = wd_mono_ms();
      for (size_t i = 0; i < nmsgs && !err; i++) {
        want_t *w = NULL;
        for (size_t k = 0; k < ws.n && !w; k++)
          if (ws.w[k].partition == msgs[i].partition) w = &ws.w[k];
        if (!w || w->done || msgs[i].offset < w->from) continue;
        if (msgs[i].offset >= w->to) {
          w->done = true;
          left--;
          continue;
        }
        wd_row_t *rows[2] = {NULL, NULL};
        size_t nr = 0;
        if ((err = wd_changelog_decode_rows(
                 cfg->sink.format == WD_CONFIG_SINK_CHANGELOG_JSON ? WD_CHANGELOG_JSON : WD_CHANGELOG_DEBEZIUM_JSON,
                 schema, msgs[i].value, msgs[i].value_len, rows, &nr))) {
          err = wd_error_wrap(err, "%s[%d]@%" PRId64, msgs[i].topic, msgs[i].partition, msgs[i].offset);
          break;
        }
        for (size_t r = 0; r < nr; r++) {
          if (!err && wd_netchange_add(nc, rows[r])) err = wd_error_nomem();
          wd_row_destroy(schema, rows[r]);
        }
        if (!err && msgs[i].offset + 1 >= w->to) {
          w->done = true;
          left--;
        }
      }
      wd_kmsg_release(msgs, nmsgs);
      nmsgs = 0;
      if (err) goto done;
      if (left && wd_mono_ms() - last_data > 30000) {
        err = wd_error_new(WD_ERR_KAFKA, E_CHANGES_TIMEOUT,
                           "no records of %s for 30 s while %zu partition range(s) named by the history are not read "
                           "to their end (deleted by retention?)",
                           cfg->sink.topic, left);
        goto done;
      }
    }
  }
  pr.schema = schema;
  pr.table = cfg->table.name;
  if ((err = wd_netchange_emit(nc, print_row, &pr))) goto done;
  rc = 0;
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (err) fprintf(stderr, "widen changes: %s\n", err->message);
  wd_error_destroy(err);
  if (msgs) wd_kmsg_release(msgs, nmsgs);
  free(msgs);
  wd_consumer_destroy(cons);
  wd_kafka_conf_clear(&kc);
  free(ws.w);
  wd_buf_free(&pr.buf);
  wd_netchange_destroy(nc);
  wd_store_close(st);
  wd_table_destroy(table);
  wd_config_destroy(cfg);
  return rc;
}
