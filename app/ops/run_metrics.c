/*
 * app/ops/run_metrics.c — the metrics of a running pipeline (see run_metrics.h).
 */
#include "app/ops/run_metrics.h"

#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "app/ops/state_dir.h"
#include "common/log.h"

#ifndef WD_VERSION
#define WD_VERSION "unknown"
#endif

#define WD_RM_COMMITS 60 /* the last commits kept for the status document */
#define WD_RM_EXAMPLES 10 /* the latest dead letters kept */
#define WD_RM_REASONS 64 /* error ids counted for the status document */
#define WD_RM_RATE_WIN 11 /* ticks in the rate window (~10 s) */

struct wd_run_metrics {
  wd_metrics_t *reg;
  const wd_table_t *table;
  const wd_source_t *const *sources;
  size_t nsources;
  struct {
    wd_metric_t *records_in, *changes_out, *dead_letters, *older, *tombstones, *lag, *assigned, *commit, *state_bytes,
        *cache_hits, *cache_misses, *cache_entries, *restore, *commits, *skipped, *rebalances, *restores, *last_commit,
        *tasks, *task_state, *lag_sum, *build, *cpu, *rss, *fds, *start, *k_rtt, *k_queue, *k_replyq, *k_fetchq, *k_lag,
        *disk_free;
  } m;
  wd_status_t *status; /* the probes (app/ops/status.h) */
  /* for the status document */
  uint64_t records, changes, dead, commits_n; /* totals taken / emitted / dead-lettered / commits */
  uint64_t records_at_commit, changes_at_commit; /* the totals at the last commit */
  struct wd_rm_commit {
    uint64_t number;
    int64_t at_ms;
    double duration_s;
    uint64_t records, changes;
  } commits[WD_RM_COMMITS];
  size_t ncommits, commit_next;
  struct wd_rm_example {
    int64_t at_ms;
    char id[64], topic[200], message[400];
    int32_t partition;
    int64_t offset;
  } examples[WD_RM_EXAMPLES];
  size_t nexamples, example_next;
  struct {
    char id[64];
    uint64_t n;
  } reasons[WD_RM_REASONS];
  size_t nreasons;
  struct {
    double t;
    uint64_t records, changes, commits;
  } win[WD_RM_RATE_WIN];
  size_t nwin, win_next;
  double started_s; /* process start, wall seconds */
  /* the batch in hand */
  wd_merge_stats_t ms; /* its merge stats (wd_run_metrics_merged) */
  uint64_t *by_source; /* records per source index (nsources) */
  uint64_t kinds[4]; /* changelog rows per row kind */
  /* the tick */
  double last_tick; /* monotonic s of the last tick, 0 before */
  uint64_t hits, misses; /* cache counts already added to the counters */
};

/* CPU time, resident memory, open descriptors and start time of this process (Linux /proc, as the
 * Prometheus client libraries' process collectors read them). */
static void process_stats(wd_run_metrics_t *m) {
  long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  FILE *f = fopen("/proc/self/stat", "r");
  if (f) {
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    const char *after = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut = 0, st = 0, start = 0;
    /* fields 3.. after the name: state(3) ... utime(14) stime(15) ... starttime(22) */
    if (after && tick > 0 &&
        sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &ut,
               &st, &start) == 3) {
      wd_metric_set(m->m.cpu, NULL, (double)(ut + st) / (double)tick);
      FILE *u = fopen("/proc/uptime", "r");
      double up = 0;
      if (u) {
        if (fscanf(u, "%lf", &up) != 1) up = 0;
        fclose(u);
      }
      if (up > 0) wd_metric_set(m->m.start, NULL, (double)wd_wall_ms() / 1000.0 - up + (double)start / (double)tick);
    }
  }
  if ((f = fopen("/proc/self/statm", "r"))) {
    unsigned long long size = 0, res = 0;
    if (fscanf(f, "%llu %llu", &size, &res) == 2 && page > 0) wd_metric_set(m->m.rss, NULL, (double)res * (double)page);
    fclose(f);
  }
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
      if (e->d_name[0] != '.') n++;
    closedir(d);
    wd_metric_set(m->m.fds, NULL, (double)(n ? n - 1 : 0)); /* not the one opendir holds */
  }
}

wd_error_t *wd_run_metrics_new(const wd_run_metrics_conf_t *c, wd_run_metrics_t **out) {
  *out = NULL;
  if (!c->listen) return NULL;
  wd_run_metrics_t *rm = calloc(1, sizeof(*rm));
  if (!rm) return wd_error_nomem();
  rm->table = c->table;
  rm->sources = c->sources;
  rm->nsources = c->nsources;
  if (!(rm->by_source = calloc(c->nsources ? c->nsources : 1, sizeof(*rm->by_source))) ||
      !(rm->reg = wd_metrics_new())) {
    wd_run_metrics_destroy(rm);
    return wd_error_nomem();
  }
  static const double secs[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  static const char *const source[] = {"source"}, *const kind[] = {"row_kind"}, *const id[] = {"error_id"},
                           *const group[] = {"sequence_group"}, *const tp[] = {"topic", "partition"};
  wd_metrics_t *r = rm->reg;
  rm->m.records_in = wd_metrics_family(r, "widen_records_in_total", "Kafka records consumed, per source.",
                                       WD_METRIC_COUNTER, 1, source, NULL, 0);
  rm->m.changes_out = wd_metrics_family(r, "widen_changes_out_total", "Changelog rows emitted, per row kind.",
                                        WD_METRIC_COUNTER, 1, kind, NULL, 0);
  rm->m.dead_letters =
      wd_metrics_family(r, "widen_dead_letters_total", "Input records sent to the dead-letter topic, per error id.",
                        WD_METRIC_COUNTER, 1, id, NULL, 0);
  rm->m.older = wd_metrics_family(r, "widen_records_ignored_older_total",
                                  "Records ignored as older than the stored row, per sequence group (the group's "
                                  "sequence fields; sequence.field for the table's own ordering).",
                                  WD_METRIC_COUNTER, 1, group, NULL, 0);
  rm->m.tombstones = wd_metrics_family(r, "widen_ordering_tombstones_written_total",
                                       "Removals that left or replaced an ordering tombstone in the state.",
                                       WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.lag = wd_metrics_family(r, "widen_consumer_lag",
                                "Records behind the end offset, per source partition this process holds now (a "
                                "revoked partition's series goes; none while it holds no partitions).",
                                WD_METRIC_GAUGE, 2, tp, NULL, 0);
  rm->m.assigned = wd_metrics_family(r, "widen_assigned_partitions",
                                     "Source partitions this process holds now (0: the group gave it none, or it "
                                     "waits for an assignment).",
                                     WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.commit = wd_metrics_family(r, "widen_commit_duration_seconds",
                                   "Duration of a commit, from its first batch to its state write.",
                                   WD_METRIC_HISTOGRAM, 0, NULL, secs, sizeof(secs) / sizeof(*secs));
  rm->m.commits = wd_metrics_family(r, "widen_commits_total", "Commits written (the commit history's number).",
                                    WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.state_bytes = wd_metrics_family(r, "widen_state_size_bytes",
                                        "Approximate bytes of the state store: its live SST files plus its memtables "
                                        "(the part not yet in SST files; a new memtable counts its allocated blocks).",
                                        WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.disk_free = wd_metrics_family(r, "widen_state_disk_free_bytes",
                                      "Free bytes of the state directory's filesystem (statvfs, measured before each "
                                      "state write); below state.min-free-bytes widen stops with E_STATE_DISK_FULL.",
                                      WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.cache_hits =
      wd_metrics_family(r, "widen_state_cache_hits_total", "Key lookups served by the decoded-row cache.",
                        WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.cache_misses = wd_metrics_family(r, "widen_state_cache_misses_total", "Key lookups read from the state store.",
                                         WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.cache_entries = wd_metrics_family(r, "widen_state_cache_entries", "Rows held decoded in the cache.",
                                          WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.restore = wd_metrics_family(r, "widen_restore_progress_ratio",
                                    "Rebuild/replay progress: input read up to the end offsets seen at its start "
                                    "(0..1); 1 when not rebuilding.",
                                    WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  wd_metric_set(rm->m.restore, NULL, c->replay ? 0.0 : 1.0);
  static const char *const task_state[] = {"task", "state"}, *const state[] = {"state"}, *const ver[] = {"version"},
                           *const brq[] = {"broker", "quantile"}, *const bq[] = {"broker", "queue"};
  rm->m.skipped = wd_metrics_family(r, "widen_kafka_tombstones_skipped_total",
                                    "Kafka tombstones (records with a null value) read and skipped.", WD_METRIC_COUNTER,
                                    0, NULL, NULL, 0);
  rm->m.rebalances =
      wd_metrics_family(r, "widen_rebalances_total", "Assignments the consumer group gave this process (rebalances).",
                        WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.restores = wd_metrics_family(r, "widen_restores_total",
                                     "Times a task of this process entered RESTORING (its state rebuilt from the "
                                     "sources or the state changelog topic, or a rebuild).",
                                     WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.last_commit = wd_metrics_family(r, "widen_last_commit_timestamp_seconds",
                                        "Wall-clock time of the last commit (Unix seconds; 0 before the first).",
                                        WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.tasks = wd_metrics_family(r, "widen_tasks", "Tasks of this process per state (docs/runtime.md).",
                                  WD_METRIC_GAUGE, 1, state, NULL, 0);
  rm->m.task_state = wd_metrics_family(r, "widen_task_state",
                                       "1 for each task this process knows (not CLOSED), labelled with its state.",
                                       WD_METRIC_GAUGE, 2, task_state, NULL, 0);
  rm->m.lag_sum = wd_metrics_family(r, "widen_consumer_lag_sum",
                                    "Records behind the end offsets, summed over the source partitions held now.",
                                    WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.build = wd_metrics_family(r, "widen_build_info", "1, labelled with the version of widen running.",
                                  WD_METRIC_GAUGE, 1, ver, NULL, 0);
  rm->m.cpu = wd_metrics_family(r, "process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
                                WD_METRIC_COUNTER, 0, NULL, NULL, 0);
  rm->m.rss = wd_metrics_family(r, "process_resident_memory_bytes", "Resident memory size in bytes.", WD_METRIC_GAUGE,
                                0, NULL, NULL, 0);
  rm->m.fds = wd_metrics_family(r, "process_open_fds", "Open file descriptors.", WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.start =
      wd_metrics_family(r, "process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.",
                        WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.k_rtt = wd_metrics_family(r, "widen_kafka_broker_rtt_seconds",
                                  "Request round trip to each broker (librdkafka's statistics: average and p99 over "
                                  "the last statistics window).",
                                  WD_METRIC_GAUGE, 2, brq, NULL, 0);
  rm->m.k_queue = wd_metrics_family(r, "widen_kafka_broker_queue_messages",
                                    "Messages queued per broker (librdkafka's statistics: outbuf waiting to be sent, "
                                    "waitresp waiting for a response).",
                                    WD_METRIC_GAUGE, 2, bq, NULL, 0);
  rm->m.k_replyq =
      wd_metrics_family(r, "widen_kafka_reply_queue", "Operations waiting in librdkafka's reply queue of the consumer.",
                        WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.k_fetchq = wd_metrics_family(r, "widen_kafka_fetch_queue_messages",
                                     "Messages fetched by librdkafka, not yet taken by widen (all partitions).",
                                     WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.k_lag = wd_metrics_family(r, "widen_kafka_consumer_lag",
                                  "Consumer lag per partition as librdkafka sees it (end offset minus the group's "
                                  "committed offset).",
                                  WD_METRIC_GAUGE, 2, tp, NULL, 0);
  /* present from the start */
  for (size_t i = 0; i < c->nsources; i++)
    wd_metric_add(rm->m.records_in, (const char *const[]){c->sources[i]->name}, 0);
  for (int k = 0; k < 4; k++)
    wd_metric_add(rm->m.changes_out, (const char *const[]){wd_row_kind_str((wd_row_kind_t)k)}, 0);
  wd_metric_add(rm->m.commits, NULL, 0);
  wd_metric_add(rm->m.commit, NULL, 0); /* the histogram's series, no observation */
  wd_metric_add(rm->m.older, (const char *const[]){"sequence.field"}, 0);
  wd_metric_add(rm->m.tombstones, NULL, 0);
  wd_metric_add(rm->m.skipped, NULL, 0);
  wd_metric_add(rm->m.rebalances, NULL, 0);
  wd_metric_add(rm->m.restores, NULL, 0);
  wd_metric_set(rm->m.last_commit, NULL, 0);
  wd_metric_set(rm->m.lag_sum, NULL, 0);
  wd_metric_set(rm->m.assigned, NULL, 0);
  wd_metric_add(rm->m.cache_hits, NULL, 0);
  wd_metric_add(rm->m.cache_misses, NULL, 0);
  wd_metric_set(rm->m.cache_entries, NULL, 0);
  wd_metric_set(rm->m.state_bytes, NULL, 0);
  wd_metric_set(rm->m.k_replyq, NULL, 0);
  wd_metric_set(rm->m.k_fetchq, NULL, 0);
  wd_metric_set(rm->m.build, (const char *const[]){WD_VERSION}, 1);
  static const char *const states0[] = {"CREATED", "RESTORING", "RECONCILING", "RUNNING", "SUSPENDED", "STANDBY"};
  for (size_t i = 0; i < sizeof(states0) / sizeof(*states0); i++)
    wd_metric_set(rm->m.tasks, (const char *const[]){states0[i]}, 0);
  rm->started_s = (double)wd_wall_ms() / 1000.0;
  process_stats(rm);
  if (!(rm->status = wd_status_new())) {
    wd_run_metrics_destroy(rm);
    return wd_error_nomem();
  }
  wd_metrics_set_route(r, wd_status_route, rm->status);
  int port = 0;
  wd_error_t *err = wd_metrics_serve(r, c->listen, &port);
  if (err && c->replay) { /* a replay beside a running `widen run` of the same config */
    wd_log(WD_LOG_WARN, "pipeline", "%s; going on without metrics", err->message);
    wd_error_destroy(err);
    err = NULL;
  } else if (!err) {
    wd_log(WD_LOG_INFO, "pipeline",
           "metrics on http://%s/metrics, status page on http://%s/, probes /livez /readyz, JSON /status (port %d)",
           wd_metrics_address(r), wd_metrics_address(r), port);
  }
  if (err) {
    wd_run_metrics_destroy(rm);
    return err;
  }
  *out = rm;
  return NULL;
}

void wd_run_metrics_destroy(wd_run_metrics_t *m) {
  if (!m) return;
  wd_metrics_destroy(m->reg); /* stops the server thread first */
  wd_status_destroy(m->status);
  free(m->by_source);
  free(m);
}

wd_metrics_t *wd_run_metrics_registry(wd_run_metrics_t *m) { return m ? m->reg : NULL; }

void wd_run_metrics_merged(wd_run_metrics_t *m, const wd_merge_stats_t *ms) {
  if (m) m->ms = *ms;
}

void wd_run_metrics_record(wd_run_metrics_t *m, int source) {
  if (m && source >= 0 && (size_t)source < m->nsources) m->by_source[source]++;
}

void wd_run_metrics_change(wd_run_metrics_t *m, wd_row_kind_t kind) {
  if (m) m->kinds[kind & 3]++;
}

void wd_run_metrics_dead_letter(wd_run_metrics_t *m, const char *error_id) {
  wd_run_metrics_dead_letter_at(m, error_id, NULL, -1, -1, NULL);
}

void wd_run_metrics_dead_letter_at(wd_run_metrics_t *m, const char *error_id, const char *topic, int32_t partition,
                                   int64_t offset, const char *message) {
  if (!m) return;
  const char *id = error_id ? error_id : "";
  wd_metric_add(m->m.dead_letters, (const char *const[]){id}, 1);
  m->dead++;
  size_t r = 0;
  while (r < m->nreasons && strcmp(m->reasons[r].id, id)) r++;
  if (r == m->nreasons && r < WD_RM_REASONS) snprintf(m->reasons[m->nreasons++].id, sizeof(m->reasons[r].id), "%s", id);
  if (r < m->nreasons) m->reasons[r].n++;
  struct wd_rm_example *e = &m->examples[m->example_next];
  m->example_next = (m->example_next + 1) % WD_RM_EXAMPLES;
  if (m->nexamples < WD_RM_EXAMPLES) m->nexamples++;
  e->at_ms = wd_wall_ms();
  snprintf(e->id, sizeof(e->id), "%s", id);
  snprintf(e->topic, sizeof(e->topic), "%s", topic ? topic : "");
  snprintf(e->message, sizeof(e->message), "%s", message ? message : "");
  e->partition = partition;
  e->offset = offset;
}

void wd_run_metrics_skipped_tombstone(wd_run_metrics_t *m) {
  if (m) wd_metric_add(m->m.skipped, NULL, 1);
}

void wd_run_metrics_rebalance(wd_run_metrics_t *m) {
  if (m) wd_metric_add(m->m.rebalances, NULL, 1);
}

wd_status_t *wd_run_metrics_status(wd_run_metrics_t *m) { return m ? m->status : NULL; }

void wd_run_metrics_batch_done(wd_run_metrics_t *m) {
  if (!m) return;
  for (size_t s = 0; s < m->nsources; s++)
    if (m->by_source[s]) {
      m->records += m->by_source[s];
      wd_metric_add(m->m.records_in, (const char *const[]){m->sources[s]->name}, (double)m->by_source[s]);
      m->by_source[s] = 0;
    }
  for (int k = 0; k < 4; k++)
    if (m->kinds[k]) {
      m->changes += m->kinds[k];
      wd_metric_add(m->m.changes_out, (const char *const[]){wd_row_kind_str((wd_row_kind_t)k)}, (double)m->kinds[k]);
      m->kinds[k] = 0;
    }
  char name[256];
  const wd_merge_stats_t *ms = &m->ms;
  for (size_t g = 0; g < WD_MERGE_STATS_GROUPS && g < wd_table_seq_groups(m->table); g++)
    if (ms->older_in_group[g]) {
      wd_table_seq_group_name(m->table, g, name, sizeof(name));
      wd_metric_add(m->m.older, (const char *const[]){name}, (double)ms->older_in_group[g]);
    }
  if (ms->older_by_sequence_field)
    wd_metric_add(m->m.older, (const char *const[]){"sequence.field"}, (double)ms->older_by_sequence_field);
  if (ms->tombstones) wd_metric_add(m->m.tombstones, NULL, (double)ms->tombstones);
  m->ms = (wd_merge_stats_t){0};
}

void wd_run_metrics_commit_done(wd_run_metrics_t *m, double duration_s) {
  wd_run_metrics_commit_made(m, 0, duration_s);
}

void wd_run_metrics_commit_made(wd_run_metrics_t *m, uint64_t number, double duration_s) {
  if (!m) return;
  wd_metric_observe(m->m.commit, NULL, duration_s);
  wd_metric_add(m->m.commits, NULL, 1);
  int64_t now = wd_wall_ms();
  wd_metric_set(m->m.last_commit, NULL, (double)now / 1000.0);
  m->commits_n++;
  struct wd_rm_commit *c = &m->commits[m->commit_next];
  m->commit_next = (m->commit_next + 1) % WD_RM_COMMITS;
  if (m->ncommits < WD_RM_COMMITS) m->ncommits++;
  *c = (struct wd_rm_commit){number ? number : m->commits_n, now, duration_s, m->records - m->records_at_commit,
                             m->changes - m->changes_at_commit};
  m->records_at_commit = m->records;
  m->changes_at_commit = m->changes;
}

bool wd_run_metrics_tick_due(wd_run_metrics_t *m, double now, bool force) {
  if (m) wd_status_beat(m->status); /* every loop turn */
  if (!m || (!force && now - m->last_tick < 1.0)) return false;
  m->last_tick = now;
  /* the rate window: one sample per tick */
  m->win[m->win_next].t = now;
  m->win[m->win_next].records = m->records;
  m->win[m->win_next].changes = m->changes;
  m->win[m->win_next].commits = m->commits_n;
  m->win_next = (m->win_next + 1) % WD_RM_RATE_WIN;
  if (m->nwin < WD_RM_RATE_WIN) m->nwin++;
  process_stats(m);
  return true;
}

void wd_run_metrics_tasks(wd_run_metrics_t *m, size_t n, const uint32_t *ids, const int *states,
                          const char *const *state_names, size_t nstates, uint64_t restores) {
  if (!m) return;
  size_t counts[16] = {0}, k = 0;
  const char **lv = calloc(2 * n + 1, sizeof(*lv));
  double *val = calloc(n + 1, sizeof(*val));
  char(*idtxt)[16] = calloc(n + 1, sizeof(*idtxt));
  for (size_t i = 0; i < n; i++) {
    if (states[i] < 0 || (size_t)states[i] >= nstates || !strcmp(state_names[states[i]], "CLOSED")) continue;
    if ((size_t)states[i] < 16) counts[states[i]]++;
    if (!lv || !val || !idtxt) continue;
    snprintf(idtxt[k], sizeof(idtxt[k]), "%" PRIu32, ids[i]);
    lv[2 * k] = idtxt[k];
    lv[2 * k + 1] = state_names[states[i]];
    val[k++] = 1;
  }
  if (lv && val && idtxt) wd_metric_set_all(m->m.task_state, k, lv, val);
  free(lv);
  free(val);
  free(idtxt);
  for (size_t s = 0; s < nstates && s < 16; s++)
    if (strcmp(state_names[s], "CLOSED"))
      wd_metric_set(m->m.tasks, (const char *const[]){state_names[s]}, (double)counts[s]);
  wd_metric_set(m->m.restores, NULL, (double)restores); /* a counter, set to the tasks' own count */
}

void wd_run_metrics_kafka(wd_run_metrics_t *m, const wd_kafka_stats_t *ks) {
  if (!m || !ks) return;
  size_t nb = ks->nbrokers, np = ks->nparts;
  const char **lv = calloc(4 * nb + 2 * np + 2, sizeof(*lv));
  double *val = calloc(2 * nb + np + 1, sizeof(*val));
  char(*parts)[16] = calloc(np + 1, sizeof(*parts));
  if (lv && val && parts) {
    for (size_t i = 0; i < nb; i++) {
      lv[4 * i] = ks->brokers[i].name, lv[4 * i + 1] = "avg", val[2 * i] = ks->brokers[i].rtt_avg_s;
      lv[4 * i + 2] = ks->brokers[i].name, lv[4 * i + 3] = "0.99", val[2 * i + 1] = ks->brokers[i].rtt_p99_s;
    }
    wd_metric_set_all(m->m.k_rtt, 2 * nb, lv, val);
    for (size_t i = 0; i < nb; i++) {
      lv[4 * i] = ks->brokers[i].name, lv[4 * i + 1] = "outbuf", val[2 * i] = (double)ks->brokers[i].outbuf_msgs;
      lv[4 * i + 2] = ks->brokers[i].name, lv[4 * i + 3] = "waitresp",
                 val[2 * i + 1] = (double)ks->brokers[i].waitresp_msgs;
    }
    wd_metric_set_all(m->m.k_queue, 2 * nb, lv, val);
    size_t k = 0;
    int64_t fetchq = 0;
    for (size_t i = 0; i < np; i++) {
      fetchq += ks->parts[i].fetchq_msgs;
      if (ks->parts[i].consumer_lag < 0) continue;
      snprintf(parts[k], sizeof(parts[k]), "%d", (int)ks->parts[i].partition);
      lv[2 * k] = ks->parts[i].topic, lv[2 * k + 1] = parts[k], val[k] = (double)ks->parts[i].consumer_lag;
      k++;
    }
    wd_metric_set_all(m->m.k_lag, k, lv, val);
    wd_metric_set(m->m.k_fetchq, NULL, (double)fetchq);
  }
  free(lv);
  free(val);
  free(parts);
  wd_metric_set(m->m.k_replyq, NULL, (double)ks->replyq);
}

char *wd_run_metrics_status_members(wd_run_metrics_t *m) {
  if (!m) return NULL;
  json_t *o = json_object();
  if (!o) return NULL;
  /* rates over the window: the oldest sample to the newest */
  double rin = 0, rout = 0, rcom = 0;
  if (m->nwin >= 2) {
    size_t newest = (m->win_next + WD_RM_RATE_WIN - 1) % WD_RM_RATE_WIN,
           oldest = m->nwin < WD_RM_RATE_WIN ? 0 : m->win_next;
    double dt = m->win[newest].t - m->win[oldest].t;
    if (dt > 0) {
      rin = (double)(m->win[newest].records - m->win[oldest].records) / dt;
      rout = (double)(m->win[newest].changes - m->win[oldest].changes) / dt;
      rcom = (double)(m->win[newest].commits - m->win[oldest].commits) / dt;
    }
  }
  json_object_set_new(
      o, "rates",
      json_pack("{s:f,s:f,s:f}", "records_in_per_s", rin, "changes_out_per_s", rout, "commits_per_s", rcom));
  json_t *commits = json_array();
  for (size_t i = 0; commits && i < m->ncommits; i++) { /* oldest first */
    size_t at = (m->commit_next + WD_RM_COMMITS - m->ncommits + i) % WD_RM_COMMITS;
    const struct wd_rm_commit *c = &m->commits[at];
    json_array_append_new(commits, json_pack("{s:I,s:I,s:f,s:I,s:I}", "number", (json_int_t)c->number, "at_ms",
                                             (json_int_t)c->at_ms, "duration_s", c->duration_s, "records_in",
                                             (json_int_t)c->records, "changes_out", (json_int_t)c->changes));
  }
  json_object_set_new(o, "commits", commits ? commits : json_null());
  json_t *by = json_object(), *latest = json_array();
  for (size_t r = 0; by && r < m->nreasons; r++)
    json_object_set_new(by, m->reasons[r].id, json_integer((json_int_t)m->reasons[r].n));
  for (size_t i = 0; latest && i < m->nexamples; i++) { /* newest first */
    size_t at = (m->example_next + WD_RM_EXAMPLES - 1 - i) % WD_RM_EXAMPLES;
    const struct wd_rm_example *e = &m->examples[at];
    json_array_append_new(latest, json_pack("{s:I,s:s,s:s,s:i,s:I,s:s}", "at_ms", (json_int_t)e->at_ms, "error_id",
                                            e->id, "topic", e->topic, "partition", (int)e->partition, "offset",
                                            (json_int_t)e->offset, "message", e->message));
  }
  json_object_set_new(o, "dead_letters",
                      json_pack("{s:I,s:o,s:o}", "total", (json_int_t)m->dead, "by_reason", by ? by : json_object(),
                                "latest", latest ? latest : json_array()));
  json_object_set_new(o, "process",
                      json_pack("{s:s,s:i,s:I,s:f}", "version", WD_VERSION, "pid", (int)getpid(), "started_at_ms",
                                (json_int_t)(m->started_s * 1000.0), "uptime_s",
                                (double)wd_wall_ms() / 1000.0 - m->started_s));
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!text) return NULL;
  size_t len = strlen(text); /* "{...}" -> "..." */
  if (len < 2) {
    free(text);
    return NULL;
  }
  memmove(text, text + 1, len - 2);
  text[len - 2] = 0;
  return text;
}

void wd_run_metrics_tick(wd_run_metrics_t *m, const wd_run_tick_t *t) {
  if (!m) return;
  size_t nl = t->nlags;
  /* exactly the partitions held now (a revoked partition's gauge goes) */
  const char **lv = calloc(2 * nl + 1, sizeof(*lv));
  double *val = calloc(nl + 1, sizeof(*val));
  char(*parts)[16] = calloc(nl + 1, sizeof(*parts));
  if (lv && val && parts) {
    for (size_t i = 0; i < nl; i++) {
      snprintf(parts[i], sizeof(parts[i]), "%d", (int)t->lags[i].partition);
      lv[2 * i] = t->lags[i].topic;
      lv[2 * i + 1] = parts[i];
      val[i] = (double)t->lags[i].offset;
    }
    wd_metric_set_all(m->m.lag, nl, lv, val);
  }
  free(lv);
  free(val);
  free(parts);
  double sum = 0;
  for (size_t i = 0; i < nl; i++) sum += (double)t->lags[i].offset;
  wd_metric_set(m->m.lag_sum, NULL, sum);
  wd_metric_set(m->m.assigned, NULL, (double)t->assigned);
  wd_metric_set(m->m.state_bytes, NULL, (double)t->state_bytes);
  if (wd_state_disk_free_bytes() >= 0) wd_metric_set(m->m.disk_free, NULL, (double)wd_state_disk_free_bytes());
  wd_metric_add(m->m.cache_hits, NULL, (double)(t->cache_hits - m->hits));
  wd_metric_add(m->m.cache_misses, NULL, (double)(t->cache_misses - m->misses));
  m->hits = t->cache_hits;
  m->misses = t->cache_misses;
  wd_metric_set(m->m.cache_entries, NULL, (double)t->cache_entries);
  if (t->restore >= 0) wd_metric_set(m->m.restore, NULL, t->restore);
}

void wd_run_metrics_restore_done(wd_run_metrics_t *m) {
  if (m) wd_metric_set(m->m.restore, NULL, 1.0);
}
