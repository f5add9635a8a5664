/*
 * app/runtime/global_table.h — lookup sources under scale-out: the lookup topics read
 * whole by every process of the group, like a global table, while the main sources are shared by
 * the group in per-partition tasks. The design and the argument are in docs/lookups-scale-out.md.
 *
 * A wd_gtable_t holds:
 *   - the global consumer: a consumer in assign mode (no group) over every partition of the
 *     lookup topics, read_committed, starting at the positions stored in the local state (meta
 *     offset/<topic>/<partition>, written with each commit's state by wd_commit_note_global), or
 *     at the beginning;
 *   - the position group's consumer: a consumer in a group of this process alone
 *     (<transactional.id>.lookups), never subscribed, through which the commit coordinator sends
 *     and reads its commit marker (app/runtime/commit.h wd_commit_set_global);
 * Which tasks this process owns, and which are still to reconcile before their first record
 * (join/lookup.h wd_join_reconcile_task), is the task table's (app/runtime/tasks.h: owned =
 * wd_tasks_active, to reconcile = RECONCILING; commit.h wd_commit_task_owned and
 * wd_commit_next_reconcile), not this unit's.
 * The pipeline polls the global consumer between its group polls and applies those records in
 * the open commit like any other; their positions never go to the group.
 *
 * Ownership: the table borrows the store (it must outlive it) and owns its consumers.
 * Thread: the pipeline's thread.
 */
#ifndef WD_GLOBAL_TABLE_H
#define WD_GLOBAL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/commit.h"
#include "app/runtime/emit.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "join/lookup.h"
#include "ingest/consumer.h"
#include "join/store.h"

typedef struct wd_gtable wd_gtable_t;

/* A global table over topics[0..n) (borrowed: they must outlive it; the pipeline's sources'
 * copies), with conf's brokers and properties (copied; its group id is ignored) and position group
 * pos_group (copied; NULL under at-least-once: no position group). Creates the position group's consumer only (wd_gtable_start creates the
 * global one, after recovery has applied any prepared commit's positions). *out owned by the
 * caller (wd_gtable_destroy). Errors: those of wd_consumer_new; E_NOMEM. */
wd_error_t *wd_gtable_new(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, wd_store_t *store,
                          const char *pos_group, wd_gtable_t **out);
/* Start-up of lookups under per-partition tasks: the global table over topics[0..n) (as
 * wd_gtable_new) with, under exactly-once (txn_id set), its position group "<txn_id>.lookups"
 * registered with the commit (wd_commit_set_global, with the state changelog topic); the join
 * layer asks the commit's task table which tasks are owned; each task is reconciled before its
 * first record (wd_commit_set_reconcile). *out as wd_gtable_new. Errors: wd_gtable_new's. */
wd_error_t *wd_gtable_open(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, wd_store_t *store,
                           const char *txn_id, wd_commit_t *commit, wd_join_t *join, const char *changelog_topic,
                           wd_gtable_t **out);
/* Reconciles every RECONCILING task of commit's task table (join/lookup.h wd_join_reconcile_task)
 * before its first record, which waits held meanwhile: its rows' lookup columns recomputed from
 * this process's lookup tables (join, over table), the differences emitted into the open commit
 * through emitter (rows of no message: an output too large is logged), then the task is RUNNING
 * (wd_commit_reconciled; docs/lookups-scale-out.md). Errors: the join's, the emitter's (abortable
 * ones: the caller aborts the commit), the task manager's. */
wd_error_t *wd_gtable_reconcile(wd_commit_t *commit, wd_join_t *join, wd_table_t *table, wd_emitter_t *emitter);

/* Closes both consumers and releases gt; accepts NULL. */
void wd_gtable_destroy(wd_gtable_t *gt);

/* The position group's consumer (borrowed from gt; NULL without pos_group), for wd_commit_set_global. */
wd_consumer_t *wd_gtable_group_consumer(wd_gtable_t *gt);

/* Creates the global consumer: every partition of the topics assigned at its stored position (or
 * the beginning). Errors: those of wd_consumer_new in assign mode (E_KAFKA_METADATA,
 * E_KAFKA_UNKNOWN_TOPIC, ...). */
wd_error_t *wd_gtable_start(wd_gtable_t *gt);

/* Polls up to max records already fetched (no wait) into msgs[0..*n) (released by the caller with
 * wd_kmsg_release). Errors: those of wd_consumer_poll_batch. */
wd_error_t *wd_gtable_poll(wd_gtable_t *gt, size_t max, wd_kmsg_t *msgs, size_t *n);

/* Records that the pipeline took (topic, partition) up to offset (it is in the open commit). 0, or
 * -1 on no memory. */
int wd_gtable_taken(wd_gtable_t *gt, const char *topic, int32_t partition, int64_t offset);

/* Moves the global consumer back: to the positions taken so far (a batch abandoned unprocessed),
 * or, with to_stored, to the positions stored in the state (the open commit was aborted: what it
 * took is read again). Errors: those of wd_consumer_seek; E_STORE_READ. */
wd_error_t *wd_gtable_rewind(wd_gtable_t *gt, bool to_stored);

/* The end offsets of every partition of the lookup topics now (*out malloc'd, caller frees), to
 * read them to before the group is joined (wd_pipeline_run). Errors: those of
 * wd_consumer_end_offsets. */
wd_error_t *wd_gtable_end_offsets(wd_gtable_t *gt, wd_tp_offset_t **out, size_t *n);
/* Whether the global consumer's position, or the next offset this table took (the stored position
 * before the first record), has reached ends[i] in every partition (empty ones count as reached;
 * positions pass transaction markers). */
bool wd_gtable_reached(wd_gtable_t *gt, const wd_tp_offset_t *ends, size_t n);

/* Records read by the global consumer so far (statistics). */
uint64_t wd_gtable_records(const wd_gtable_t *gt);

#endif
