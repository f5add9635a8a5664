/*
 * app/runtime/batch.h — one poll batch through the table: Kafka Streams' StreamTask.process for a
 * batch of records, with the batch's own scratch.
 *
 * Per batch, in this order (docs/runtime.md "The batch"):
 *   1. decode: every record passes the task manager's gate (app/runtime/commit.h wd_commit_gate:
 *      run, rebuild state only, or hold), then is decoded with its source's format (ingest/format.h;
 *      undecodable -> dead-letter), its change records keyed (widen's key bytes) and given their
 *      task; records of sources keyed otherwise go to their repartition topic
 *      (app/runtime/repartition.h), a lookup source's into the lookups' batch (app/runtime/lookups.h);
 *   2. state read: one multi-get of the batch's keys (join/state.h wd_state_prefetch_tasks);
 *   3. merge, message by message in delivery order, through the join layer (rejected ->
 *      dead-letter), collecting the changelog and, per changelog row, its message;
 *   4. emit: the changelog rows with their flags (per message: only rebuilds state) to the emit
 *      hook, by default app/runtime/emit.h wd_emit_changelog; the dead letters to the collector;
 *   5. note: per partition of the batch its last offset taken, in the open commit (or, for a lookup
 *      topic read by the global table, as this process's position) and the commit's history record.
 * The counters go to the pipeline's stats (borrowed).
 *
 * Ownership: the batch owns its scratch (messages, their decoded records, keys, tasks, the
 * changelog and its row-to-message map), the source formats' decoder states and the dead letters'
 * rate-limited log; everything in wd_batch_conf_t is borrowed and must outlive it. Per record
 * there is no allocation once the arrays have grown to the batch's size, and no call through a
 * pointer but the source's decoder. Thread: the pipeline's.
 */
#ifndef WD_APP_BATCH_H
#define WD_APP_BATCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app/ops/history_gather.h"
#include "app/ops/run_metrics.h"
#include "app/runtime/collector.h"
#include "app/runtime/commit.h"
#include "app/runtime/emit.h"
#include "app/runtime/global_table.h"
#include "app/runtime/lookups.h"
#include "app/runtime/pipeline.h"
#include "app/runtime/repartition.h"
#include "app/runtime/replay.h"
#include "app/runtime/topic_index.h"
#include "common/ratelog.h"
#include "ingest/schema_registry.h"
#include "join/state.h"

typedef struct wd_batch wd_batch_t;

/* The changelog's output of a batch, called once per batch (NULL in wd_batch_conf_t: wd_emit_changelog
 * on conf.emitter). Errors as wd_emit_changelog's. */
typedef wd_error_t *(*wd_batch_emit_fn)(void *ctx, const wd_emit_rows_t *rows);

typedef struct wd_batch_conf {
  wd_table_t *table;
  wd_source_t *const *sources; /* [nsources], indexed as the config's */
  size_t nsources;
  wd_state_t *state;
  wd_commit_t *commit; /* the gate, the open commit's inputs */
  wd_collector_t *coll; /* dead letters, repartition forwards */
  wd_lookups_t *lk; /* the join layer */
  wd_repart_t *rp; /* the repartition plan */
  wd_topic_index_t *tix; /* every topic read */
  wd_gtable_t *gt; /* the lookup topics read outside the group, or NULL */
  wd_hist_gather_t *hg; /* the open commit's history record and trace */
  wd_run_metrics_t *rm; /* or NULL */
  wd_registry_t *registry; /* for the decoders (Avro), or NULL */
  const wd_replay_t *replay; /* replay --from and a rebuild's stop offsets */
  wd_emitter_t *emitter; /* the changelog's output (when emit is NULL) */
  wd_batch_emit_fn emit; /* or NULL: see wd_batch_emit_fn */
  void *emit_ctx;
  const char *dlq_topic; /* sink.dead-letter-topic */
  size_t max; /* pipeline.batch-size: the most records a batch holds */
  bool per_partition; /* one task per source partition */
  bool no_output; /* replay --no-output: dead letters counted, not sent */
  FILE *trace; /* --trace: each applied message's rows go to the history's trace, or NULL */
  const volatile sig_atomic_t *stop; /* the pipeline's stop: a decode stops retrying */
  /* a decode waiting for the schema registry: called about every 100 ms (the loop's metrics), or NULL */
  void (*waiting)(void *ctx);
  void *waiting_ctx;
  wd_pipeline_stats_t *st; /* the counters the batch adds to */
} wd_batch_conf_t;

/* A batch for conf (copied; see Ownership), with the decoder state of each source format in use
 * opened (ingest/format.h). Errors: the formats' open errors, E_NOMEM. */
wd_error_t *wd_batch_new(const wd_batch_conf_t *conf, wd_batch_t **out);
/* Frees the batch's scratch and rows, closes the decoders (accepts NULL). */
void wd_batch_destroy(wd_batch_t *bt);

/* The batch's messages, [conf.max]: the poll fills them, wd_batch_release releases them. */
wd_kmsg_t *wd_batch_msgs(wd_batch_t *bt);

/* Processes msgs[0..n) as one batch of the open commit, in the order above, between
 * wd_commit_batch_begin and _end; its counts go to the metrics when it was taken; then the batch
 * is released (wd_batch_release). *abandoned: a rebalance or an abort came meanwhile (nothing of
 * the batch was noted and its records are read again; the error, if any, is then the caller's to
 * drop). Errors: E_BATCH_ABANDONED (retriable: as *abandoned), the collector's (abortable ones:
 * the caller aborts the commit), store errors, C_SOURCE_KEYING, E_NOMEM; a record's own error
 * never (it is dead-lettered). */
wd_error_t *wd_batch_run(wd_batch_t *bt, size_t n, bool *abandoned);
/* Releases msgs[0..n) (a poll whose batch is not run), the batch's rows and the dead-letter reasons. */
void wd_batch_release(wd_batch_t *bt, size_t n);

/* The dead letters by (source, error id, field), for the status line's counts. */
const wd_ratelog_t *wd_batch_dead_letters(const wd_batch_t *bt);

#endif
