/*
 * app/runtime/status_report.h — what a running pipeline reports: the status line on stderr (every
 * pipeline.status-interval-s), the summary at the end, and the status snapshot, made by the pipeline's
 * thread once a second (the metrics tick) and published to the probes' unit (app/ops/status.h),
 * from which the metrics listener's thread answers /status, /readyz and the status page. Also
 * sets the task-state and librdkafka-statistics metrics (app/ops/run_metrics.h).
 *
 * The snapshot (JSON; docs/operations.md "Probes and the status page"):
 *   "pipeline":   table, sink topic, group, transactional id, delivery, commit interval, phase
 *                 (starting | running | stopping), assigned partitions, why none are held, the
 *                 totals of the status line
 *   "tasks":      every task this process knows (not CLOSED): id, state, since (wall ms), restores,
 *                 rebuild phase, and per partition of this assignment: position (the next offset
 *                 read), committed (the offset the last commit wrote with the state: where the
 *                 group resumes), end (the end offset), lag (end - position; -1: not known yet)
 *   the members of wd_run_metrics_status_members: rates, commits, dead_letters, process
 *
 * Ready (/readyz) when: not stopping; no assignment is being initialised; no restore from the state
 * changelog and no rebuild runs; the consumer holds an assignment (or the group gave this process
 * none: ready with no tasks); every task it owns is RUNNING; every partition of them at most
 * WD_STATUS_READY_LAG records behind its end offset (a partition whose lag is not known yet, no
 * record fetched, counts as caught up). Else the first reason found.
 *
 * Thread: the pipeline's. Everything in the inputs is borrowed for the call.
 */
#ifndef WD_STATUS_REPORT_H
#define WD_STATUS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/ops/run_metrics.h"
#include "app/runtime/commit.h"
#include "app/runtime/pipeline.h"
#include "common/ratelog.h"
#include "ingest/consumer.h"
#include "join/state.h"
#include "join/store.h"

typedef struct wd_status_inputs {
  wd_commit_t *commit; /* its task table */
  wd_consumer_t *cons;
  wd_store_t *store;
  const wd_pipeline_stats_t *st;
  const char *table, *sink_topic, *group, *transactional_id;
  bool exactly_once;
  int64_t commit_interval_ms;
  bool initialising, restoring, rebuilding, stopping;
  const wd_tp_offset_t *lags; /* per partition held: its lag (the tick's wd_consumer_lags) */
  size_t nlags;
} wd_status_inputs_t;

/* Makes the snapshot from in and publishes it to wd_run_metrics_status(rm); sets the task and
 * librdkafka metrics. Nothing when rm is NULL. On no memory the previous snapshot stays (logged
 * at DEBUG). */
void wd_status_report(const wd_status_inputs_t *in, wd_run_metrics_t *rm);

/* A tick of the metrics (the caller checked wd_run_metrics_tick_due): the lag of each partition of
 * in->cons (into in->lags for the call), the partitions assigned, state's disk bytes and cache
 * counts, and restore (a replay's progress 0..1, or -1) to rm (wd_run_metrics_tick); then the
 * snapshot (wd_status_report). Nothing when rm is NULL. */
void wd_status_tick(wd_status_inputs_t *in, wd_state_t *state, double restore, wd_run_metrics_t *rm);

/* The status line's inputs (borrowed for the call). */
typedef struct wd_status_line {
  const wd_pipeline_stats_t *st;
  double rate; /* records in per second since the last line */
  const wd_ratelog_t *dead_letters; /* the dead letters by error id (app/runtime/batch.h) */
  const char *idle; /* why the process holds no partitions, or NULL (then the lag is shown) */
  bool exactly_once;
  int64_t interval_ms; /* the commit interval in force (exactly-once) */
  int64_t interval_min_ms, interval_max_ms; /* its bounds (commit-interval-min-ms, commit-interval-ms) */
  bool restoring; /* a task restores its state now */
} wd_status_line_t;

/* Prints one status line to f: records in and their rate, changes out, dead letters (by error
 * id), ignored -U, ordering tombstones, deletes without sequence, null-key halves, the lag (or why
 * no partitions are held), commits, the guarantee and the interval in force with its bounds when
 * they differ ("interval 10 ms, adaptive 10..100"), "restoring". */
void wd_status_line(FILE *f, const wd_status_line_t *in);

/* The summary's inputs (borrowed for the call). */
typedef struct wd_status_summary {
  const wd_pipeline_stats_t *st;
  bool exactly_once;
  double busy_s; /* from the first input to the last commit (the records/s while input flowed) */
  uint64_t overlapped; /* commits completed while the next batches were merged */
  bool standby; /* standby copies kept */
  uint64_t standby_applied; /* ... state changelog records applied to them */
  bool from; /* a replay with --from */
} wd_status_summary_t;

/* Prints the one-line summary of a run of `seconds` to f (`widen run` at the end). */
void wd_status_summary(FILE *f, const wd_status_summary_t *in, double seconds);

/* The per-record totals of st (records and change records in, changelog rows and messages out,
 * dead letters, skipped tombstones, -U ignored, ordering tombstones, dropped, restored, deletes
 * without sequence, null-key halves, records before --from) set back to those of base: called when
 * an exactly-once commit aborts, base being the totals at the snapshot of the last commit made, so
 * that the records it re-reads are counted once and the totals match what the output and
 * dead-letter topics hold. The other counters (batches, commits, aborts, lag) stay. No errors. */
void wd_status_totals_rollback(wd_pipeline_stats_t *st, const wd_pipeline_stats_t *base);

#endif
