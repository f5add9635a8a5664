/*
 * app/runtime/status_report.h — the status snapshot of a running pipeline, made by the pipeline's
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
#include "ingest/consumer.h"
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

#endif
