/*
 * app/ops/run_metrics.c — the metrics of a running pipeline (see run_metrics.h).
 */
#include "app/ops/run_metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include "app/ops/state_dir.h"
#include "common/log.h"

struct wd_run_metrics {
  wd_metrics_t *reg;
  const wd_table_t *table;
  const wd_source_t *const *sources;
  size_t nsources;
  struct {
    wd_metric_t *records_in, *changes_out, *dead_letters, *older, *tombstones, *lag, *assigned, *commit, *state_bytes,
        *cache_hits, *cache_misses, *cache_entries, *restore, *commits, *disk_free;
  } m;
  /* the batch in hand */
  wd_merge_stats_t ms;   /* its merge stats (wd_run_metrics_merged) */
  uint64_t *by_source;   /* records per source index (nsources) */
  uint64_t kinds[4];     /* changelog rows per row kind */
  /* the tick */
  double last_tick;          /* monotonic s of the last tick, 0 before */
  uint64_t hits, misses;     /* cache counts already added to the counters */
};

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
  rm->m.dead_letters = wd_metrics_family(r, "widen_dead_letters_total",
                                         "Input records sent to the dead-letter topic, per error id.",
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
                                        "Approximate bytes of the state store on disk.", WD_METRIC_GAUGE, 0, NULL,
                                        NULL, 0);
  rm->m.disk_free = wd_metrics_family(r, "widen_state_disk_free_bytes",
                                      "Free bytes of the state directory's filesystem (statvfs, measured before each "
                                      "state write); below state.min-free-bytes widen stops with E_STATE_DISK_FULL.",
                                      WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.cache_hits = wd_metrics_family(r, "widen_state_cache_hits_total",
                                       "Key lookups served by the decoded-row cache.", WD_METRIC_COUNTER, 0, NULL,
                                       NULL, 0);
  rm->m.cache_misses = wd_metrics_family(r, "widen_state_cache_misses_total",
                                         "Key lookups read from the state store.", WD_METRIC_COUNTER, 0, NULL, NULL,
                                         0);
  rm->m.cache_entries = wd_metrics_family(r, "widen_state_cache_entries", "Rows held decoded in the cache.",
                                          WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  rm->m.restore = wd_metrics_family(r, "widen_restore_progress_ratio",
                                    "Rebuild/replay progress: input read up to the end offsets seen at its start "
                                    "(0..1); 1 when not rebuilding.",
                                    WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  wd_metric_set(rm->m.restore, NULL, c->replay ? 0.0 : 1.0);
  int port = 0;
  wd_error_t *err = wd_metrics_serve(r, c->listen, &port);
  if (err && c->replay) { /* a replay beside a running `widen run` of the same config */
    wd_log(WD_LOG_WARN, "pipeline", "%s; going on without metrics", err->message);
    wd_error_destroy(err);
    err = NULL;
  } else if (!err) {
    wd_log(WD_LOG_INFO, "pipeline", "metrics on http://%s/metrics (port %d)", wd_metrics_address(r), port);
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
  if (m) wd_metric_add(m->m.dead_letters, (const char *const[]){error_id}, 1);
}

void wd_run_metrics_batch_done(wd_run_metrics_t *m) {
  if (!m) return;
  for (size_t s = 0; s < m->nsources; s++)
    if (m->by_source[s]) {
      wd_metric_add(m->m.records_in, (const char *const[]){m->sources[s]->name}, (double)m->by_source[s]);
      m->by_source[s] = 0;
    }
  for (int k = 0; k < 4; k++)
    if (m->kinds[k]) {
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
  if (!m) return;
  wd_metric_observe(m->m.commit, NULL, duration_s);
  wd_metric_add(m->m.commits, NULL, 1);
}

bool wd_run_metrics_tick_due(wd_run_metrics_t *m, double now, bool force) {
  if (!m || (!force && now - m->last_tick < 1.0)) return false;
  m->last_tick = now;
  return true;
}

void wd_run_metrics_tick(wd_run_metrics_t *m, const wd_run_tick_t *t) {
  if (!m) return;
  size_t nl = t->nlags;
  /* issue 23: exactly the partitions held now (a revoked partition's gauge goes) */
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
