/*
 * app/ops/run_metrics.h — the metrics of a running pipeline (issue 13; issue 21 point 7: out of
 * the pipeline's struct): the widen_* families of the Prometheus endpoint (app/ops/metrics.h)
 * and the bookkeeping between the loop's events and them. The pipeline only reports what
 * happened (a batch taken into the open commit, a commit made, a tick with the values of now);
 * this unit turns it into counters, gauges and the commit histogram:
 *
 *   widen_records_in_total{source}          records taken, per source (batch done)
 *   widen_changes_out_total{row_kind}       changelog rows emitted, per row kind (batch done)
 *   widen_dead_letters_total{error_id}      dead letters, per error id (batch done)
 *   widen_records_ignored_older_total{sequence_group}, widen_ordering_tombstones_written_total
 *                                           from the batch's merge stats (join/merge.h)
 *   widen_commit_duration_seconds, widen_commits_total            (commit done)
 *   widen_consumer_lag{topic,partition}, widen_assigned_partitions, widen_state_size_bytes,
 *   widen_state_cache_{hits,misses}_total, widen_state_cache_entries,
 *   widen_restore_progress_ratio                                  (tick, at most once a second)
 *
 * Off (metrics.listen not set): wd_run_metrics_new gives NULL and every function here accepts
 * NULL and does nothing.
 *
 * Thread: the pipeline's thread calls these; the registry's own server thread renders (its mutex,
 * app/ops/metrics.h).
 */
#ifndef WD_RUN_METRICS_H
#define WD_RUN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "app/ops/metrics.h"
#include "common/kafka_conf.h"
#include "ingest/source.h"
#include "join/merge.h"

typedef struct wd_run_metrics wd_run_metrics_t;

typedef struct wd_run_metrics_conf {
  const char *listen;   /* metrics.listen ("host:port", app/ops/metrics.h wd_metrics_serve); NULL: off */
  bool replay;          /* a replay/rebuild: restore progress starts at 0 (else 1), and a listen address in
                         * use is a warning, not an error (a replay beside a running `widen run`) */
  const wd_table_t *table;          /* borrowed, outlives the unit: the sequence groups' names */
  const wd_source_t *const *sources; /* per source index: its name labels records_in (borrowed, outlive the unit) */
  size_t nsources;
} wd_run_metrics_conf_t;

/* Registers the families and starts the HTTP server on c->listen (logs the address). *out: the
 * new unit (owner: the caller, wd_run_metrics_destroy), or NULL when c->listen is NULL.
 * Errors: E_NOMEM; those of wd_metrics_serve (C_METRICS_LISTEN, E_METRICS_LISTEN) except in a
 * replay, where the server's failure is logged and the unit goes on unserved. On error *out is
 * NULL and nothing is left. */
wd_error_t *wd_run_metrics_new(const wd_run_metrics_conf_t *c, wd_run_metrics_t **out);

/* Stops the server thread first, then frees everything. Accepts NULL. */
void wd_run_metrics_destroy(wd_run_metrics_t *m);

/* The registry (borrowed from m, NULL when off): for rendering in tests. */
wd_metrics_t *wd_run_metrics_registry(wd_run_metrics_t *m);

/* ---- a batch, counted once it is taken into the open commit (not when it was abandoned) ----
 * While the batch is merged: wd_run_metrics_merged keeps its merge stats. Once it is taken: one
 * wd_run_metrics_record per record of a source (source index < nsources; others are ignored),
 * wd_run_metrics_change per changelog row, wd_run_metrics_dead_letter per dead letter, then
 * wd_run_metrics_batch_done adds the counts gathered and the kept merge stats (and forgets
 * them). A batch abandoned after wd_run_metrics_merged is not counted: the next batch's
 * wd_run_metrics_merged replaces its stats. */
void wd_run_metrics_merged(wd_run_metrics_t *m, const wd_merge_stats_t *ms);
void wd_run_metrics_record(wd_run_metrics_t *m, int source);
void wd_run_metrics_change(wd_run_metrics_t *m, wd_row_kind_t kind);
void wd_run_metrics_dead_letter(wd_run_metrics_t *m, const char *error_id); /* error_id borrowed for the call */
void wd_run_metrics_batch_done(wd_run_metrics_t *m);

/* A commit was made: its duration (seconds, from its first batch to its state write). */
void wd_run_metrics_commit_done(wd_run_metrics_t *m, double duration_s);

/* ---- the tick: gauges of now -------------------------------------------------------------- */

/* What the loop reads for a tick (all borrowed for the call). */
typedef struct wd_run_tick {
  const wd_tp_offset_t *lags; /* per partition held now: its lag (records behind its end offset) */
  size_t nlags;
  int assigned;               /* source partitions held now */
  uint64_t state_bytes;       /* the store's approximate bytes on disk */
  uint64_t cache_hits, cache_misses; /* the state cache's counts since it was made (join/state.h) */
  size_t cache_entries;
  double restore;             /* replay progress 0..1; < 0: not measured (the gauge keeps its value) */
} wd_run_tick_t;

/* Whether a tick is due at now (monotonic seconds): one second after the last (force: always).
 * When it returns true the tick counts as made at now: gather the values and call
 * wd_run_metrics_tick. Always false when m is NULL. */
bool wd_run_metrics_tick_due(wd_run_metrics_t *m, double now, bool force);

/* Sets the gauges from t: the lag series become exactly t->lags' partitions (a revoked
 * partition's series goes); the cache counters grow by what t's counts grew since the last tick. */
void wd_run_metrics_tick(wd_run_metrics_t *m, const wd_run_tick_t *t);

/* A replay ended: restore progress 1. */
void wd_run_metrics_restore_done(wd_run_metrics_t *m);

#endif
