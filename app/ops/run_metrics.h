/*
 * app/ops/run_metrics.h — the metrics of a running pipeline (out of
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
 *   widen_kafka_tombstones_skipped_total, widen_rebalances_total, widen_restores_total,
 *   widen_last_commit_timestamp_seconds, widen_tasks{state}, widen_task_state{task,state},
 *   widen_consumer_lag_sum, widen_build_info{version}, process_cpu_seconds_total,
 *   process_resident_memory_bytes, process_open_fds, process_start_time_seconds,
 *   widen_kafka_broker_rtt_seconds{broker,quantile}, widen_kafka_broker_queue_messages{broker,queue},
 *   widen_kafka_reply_queue, widen_kafka_fetch_queue_messages, widen_kafka_consumer_lag{topic,partition}
 *                                           (librdkafka's statistics, ingest/kafka_stats.h)
 *
 * Every series without labels, every source's records_in, every row kind's changes_out and every
 * task state's widen_tasks exist from the start at 0: an alert on them needs no "absent()".
 *
 * The unit also keeps what the status document shows that only it sees (the last commits, the
 * dead letters by error id with the latest examples, the rates over the last ten seconds:
 * wd_run_metrics_status_json) and owns the probes' unit (app/ops/status.h), whose routes it
 * serves beside /metrics.
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
#include "ingest/kafka_stats.h"
#include "ingest/source.h"
#include "app/ops/status.h"
#include "join/merge.h"

typedef struct wd_run_metrics wd_run_metrics_t;

typedef struct wd_run_metrics_conf {
  const char *listen; /* metrics.listen ("host:port", app/ops/metrics.h wd_metrics_serve); NULL: off */
  bool replay; /* a replay/rebuild: restore progress starts at 0 (else 1), and a listen address in
                         * use is a warning, not an error (a replay beside a running `widen run`) */
  const wd_table_t *table; /* borrowed, outlives the unit: the sequence groups' names */
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
/* As wd_run_metrics_commit_done, with the commit's number (for the status document's last commits,
 * which also get the records taken and the rows emitted since the previous commit). */
void wd_run_metrics_commit_made(wd_run_metrics_t *m, uint64_t number, double duration_s);

/* A dead letter of a batch taken (as wd_run_metrics_dead_letter), with where its record came from
 * and the reason's text (all borrowed for the call; topic and message may be NULL): counted, and
 * kept among the latest examples of the status document. */
void wd_run_metrics_dead_letter_at(wd_run_metrics_t *m, const char *error_id, const char *topic, int32_t partition,
                                   int64_t offset, const char *message);

/* A Kafka tombstone (a record with a null value) of a batch taken, skipped. */
void wd_run_metrics_skipped_tombstone(wd_run_metrics_t *m);

/* The group gave this process a new assignment (a rebalance). */
void wd_run_metrics_rebalance(wd_run_metrics_t *m);

/* The task states of now (tick): n tasks, ids[i] in states[i] (wd_task_state_t values, names
 * given by state_names[0..nstates)); restores: how many times a task of this process entered
 * RESTORING so far. Tasks in the state "CLOSED" get no series. */
void wd_run_metrics_tasks(wd_run_metrics_t *m, size_t n, const uint32_t *ids, const int *states,
                          const char *const *state_names, size_t nstates, uint64_t restores);

/* librdkafka's statistics of the pipeline's consumer (tick; ks borrowed for the call, NULL:
 * none yet, the series keep their values). */
void wd_run_metrics_kafka(wd_run_metrics_t *m, const wd_kafka_stats_t *ks);

/* The status document's part that this unit keeps (pipeline thread): a new JSON object text
 * (malloc'd, the caller frees) without the outer braces' closing, i.e. members only:
 *   "rates":{...},"commits":[...],"dead_letters":{"by_reason":{...},"latest":[...]},"process":{...}
 * NULL when m is NULL or on no memory. */
char *wd_run_metrics_status_members(wd_run_metrics_t *m);

/* The probes' unit (borrowed from m; NULL when off): the pipeline beats it (wd_run_metrics_tick_due
 * does, every loop turn) and publishes its snapshot into it. */
wd_status_t *wd_run_metrics_status(wd_run_metrics_t *m);

/* ---- the tick: gauges of now -------------------------------------------------------------- */

/* What the loop reads for a tick (all borrowed for the call). */
typedef struct wd_run_tick {
  const wd_tp_offset_t *lags; /* per partition held now: its lag (records behind its end offset) */
  size_t nlags;
  int assigned; /* source partitions held now */
  uint64_t state_bytes; /* the store's approximate bytes on disk */
  uint64_t cache_hits, cache_misses; /* the state cache's counts since it was made (join/state.h) */
  size_t cache_entries;
  double restore; /* replay progress 0..1; < 0: not measured (the gauge keeps its value) */
} wd_run_tick_t;

/* Whether a tick is due at now (monotonic seconds): one second after the last (force: always).
 * Every call is also the loop's heartbeat for /livez (wd_status_beat).
 * When it returns true the tick counts as made at now: gather the values and call
 * wd_run_metrics_tick. Always false when m is NULL. */
bool wd_run_metrics_tick_due(wd_run_metrics_t *m, double now, bool force);

/* Sets the gauges from t: the lag series become exactly t->lags' partitions (a revoked
 * partition's series goes); the cache counters grow by what t's counts grew since the last tick. */
void wd_run_metrics_tick(wd_run_metrics_t *m, const wd_run_tick_t *t);

/* A replay ended: restore progress 1. */
void wd_run_metrics_restore_done(wd_run_metrics_t *m);

#endif
