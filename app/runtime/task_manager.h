/*
 * app/runtime/task_manager.h — the task manager (Kafka Streams' TaskManager): owns the task table
 * (app/runtime/tasks.h) and the assignment of `widen run`. It records an assignment (the consumer's
 * callback), initialises it in the poll loop (the group's committed offsets decide, per task:
 * RUNNING, RECONCILING, or RESTORING from the state changelog topic or from the sources), gates each
 * record (run, restore without output, hold), releases held partitions once their task runs,
 * starts and drives the restorer (app/runtime/restorer.h) and hears "task restored" from it, moves
 * the rebuild's phases, and suspends or closes the tasks at a revoke. Tasks change only through
 * these functions (and tasks.c's transition function they call); the other units read them.
 *
 * One record per assigned partition (wd_ctp_t, task_manager.c): where the assignment started
 * it, its stored and group offsets, whether it only forwards; the task's own view of it (restore
 * end, reached, held) is its wd_task_part_t.
 *
 * Errors inside consumer callbacks (where they cannot be returned) are kept: the first one is
 * returned by wd_taskmgr_take_error (the commit coordinator's wd_commit_take_error asks it).
 *
 * Ownership: borrows its conf's topic names, standby, hooks, the state, the store, the consumer and
 * the stop clock (they outlive it); owns the task table and the restorer. Thread: the pipeline's;
 * wd_taskmgr_assign / wd_taskmgr_revoke run inside the consumer's callbacks on that thread.
 */
#ifndef WD_TASK_MANAGER_H
#define WD_TASK_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/restorer.h"
#include "app/runtime/stop_clock.h"
#include "app/runtime/tasks.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "join/state.h"
#include "join/store.h"

struct wd_commit_conf; /* app/runtime/commit.h: the same configuration */
typedef struct wd_taskmgr wd_taskmgr_t;

/* A new task manager (conf copied, its pointers borrowed). state, store: borrowed (state may be
 * NULL in tests that assign no task with a changed definition); stop: borrowed. *out owned by the
 * caller (wd_taskmgr_destroy). Errors: E_NOMEM. */
wd_error_t *wd_taskmgr_new(const struct wd_commit_conf *conf, wd_state_t *state, wd_store_t *store,
                           wd_stop_clock_t *stop, wd_taskmgr_t **out);
void wd_taskmgr_destroy(wd_taskmgr_t *tm); /* accepts NULL */
/* The group consumer (borrowed; may be set after creation; NULL: no consumer yet). */
void wd_taskmgr_set_consumer(wd_taskmgr_t *tm, wd_consumer_t *cons);
/* Scale-out with lookups (commit.h wd_commit_set_global): a task's local rows are trusted only when
 * this process kept it across the rebalance. */
void wd_taskmgr_set_global(wd_taskmgr_t *tm, bool on);
/* Lookups under per-partition tasks (commit.h wd_commit_set_reconcile). */
void wd_taskmgr_set_reconcile(wd_taskmgr_t *tm, bool on);
/* Restorer I/O (tests: fakes; default the real consumer). */
void wd_taskmgr_set_restore_io(wd_taskmgr_t *tm, const wd_restore_io_t *io);
/* The first error kept inside a callback (taken over by the caller), or NULL. */
wd_error_t *wd_taskmgr_take_error(wd_taskmgr_t *tm);

/* ---- the assignment --------------------------------------------------------------------------- */

/* The assignment callback (commit.h wd_commit_on_assign_all): records parts[0..n), each with its
 * stored offset, and makes their tasks CREATED. Returns true when the decision needs the group's
 * committed offsets (exactly-once in a group, or stateless partitions): the partitions are then
 * assigned held and wd_taskmgr_init_step decides; false: decided here from the stored offsets. */
bool wd_taskmgr_assign(wd_taskmgr_t *tm, const wd_tp_offset_t *parts, size_t n);
/* The starting offset of one partition (commit.h wd_commit_on_assign). */
int64_t wd_taskmgr_start_offset(wd_taskmgr_t *tm, const char *topic, int32_t partition);
/* Whether an assignment is recorded and not decided yet. */
bool wd_taskmgr_initialising(const wd_taskmgr_t *tm);
/* One try of the initialisation (commit.h wd_commit_init_step): the group's committed offsets,
 * wd_taskmgr_decide, and every partition assigned again at its decided offset. Errors: as there. */
wd_error_t *wd_taskmgr_init_step(wd_taskmgr_t *tm);
/* The decision of the recorded assignment given the group's committed offsets g[i] of its
 * partitions, in the order given to wd_taskmgr_assign (offset -1: none): where each partition
 * starts, which tasks restore (the restorer is planned), rebuild or run; their key ranges and
 * offsets dropped (rows first, offsets last). Errors: E_STORE_*, E_NOMEM, E_TASK_TRANSITION. */
wd_error_t *wd_taskmgr_decide(wd_taskmgr_t *tm, const wd_tp_offset_t *g);
/* The decided partitions and their starting offsets, as a new array (free()) of *n entries. NULL
 * with *n = 0 when none; E_NOMEM. */
wd_error_t *wd_taskmgr_starts(const wd_taskmgr_t *tm, wd_tp_offset_t **out, size_t *n);
/* The revoke (after the commit coordinator completed or aborted its commit): a rebuild cut short
 * drops its rows; CREATED tasks close, active ones are SUSPENDED (revoked) or CLOSED (lost); the
 * partitions, a pending initialisation and the restorer go. */
void wd_taskmgr_revoke(wd_taskmgr_t *tm, bool lost);

/* ---- records ---------------------------------------------------------------------------------- */

/* The gate of a record (commit.h wd_commit_gate). */
wd_gate_t wd_taskmgr_gate(wd_taskmgr_t *tm, const char *topic, int32_t partition, int64_t offset);
/* After each poll (commit.h wd_commit_after_batch). */
wd_error_t *wd_taskmgr_after_batch(wd_taskmgr_t *tm);
/* Whether the task is owned here (wd_tasks_active); ctx: the wd_taskmgr_t. */
bool wd_taskmgr_task_owned(void *ctx, uint32_t task);

/* ---- reconcile, restore, rebuild ------------------------------------------------------------- */

bool wd_taskmgr_next_reconcile(wd_taskmgr_t *tm, uint32_t *task);
/* Whether a task caught up with the group's offsets after a rebuild without output (a lost state,
 * the deferred flush's replay, a rebuild) since the last call; the answer is cleared. The deferred
 * state flush writes the rebuild at the next commit (a crash loop then does not replay more and
 * more). */
bool wd_taskmgr_take_rebuilt(wd_taskmgr_t *tm);
wd_error_t *wd_taskmgr_reconciled(wd_taskmgr_t *tm, uint32_t task);
/* An abort took back the commit's reconciles: every RUNNING task with `reconcile` is RECONCILING
 * again. */
void wd_taskmgr_abort_reconciles(wd_taskmgr_t *tm);
bool wd_taskmgr_restoring(const wd_taskmgr_t *tm); /* a restorer is running */
wd_error_t *wd_taskmgr_restore_step(wd_taskmgr_t *tm, int max_ms);
uint64_t wd_taskmgr_restored_records(const wd_taskmgr_t *tm);
wd_error_t *wd_taskmgr_rebuild_sources(wd_taskmgr_t *tm, uint32_t task);
wd_error_t *wd_taskmgr_rebuild_done(wd_taskmgr_t *tm, uint32_t task);
/* Whether the task is in a rebuild phase (its rows stay out of the state changelog until its switch). */
bool wd_taskmgr_task_rebuilding(wd_taskmgr_t *tm, uint32_t task);

/* ---- what the commit coordinator reads --------------------------------------------------------- */

/* The task table (borrowed; read only outside this unit). */
wd_tasks_t *wd_taskmgr_tasks(wd_taskmgr_t *tm);
/* The group's committed offset of an assigned partition when it was decided (-1: none). */
int64_t wd_taskmgr_group_offset(const wd_taskmgr_t *tm, const char *topic, int32_t partition);
/* Whether the next offset `next` of (topic, partition) is at or below the group's committed offset a
 * rebuild started from: such an offset is never sent to the transaction (it would move the group
 * back). */
bool wd_taskmgr_below_group_end(const wd_taskmgr_t *tm, const char *topic, int32_t partition, int64_t next);
/* The rewind after an abort: every assigned partition at its stored offset, never before where the
 * assignment started it (-1: the beginning), as a new array (free()) of *n entries. Errors:
 * E_STORE_READ, E_NOMEM. */
wd_error_t *wd_taskmgr_committed_positions(wd_taskmgr_t *tm, wd_tp_offset_t **out, size_t *n);
/* After the rewind's seek to to[0..n) (wd_taskmgr_committed_positions'): every held partition is
 * released where the seek placed it (the gate holds it again at its next record while its task
 * does not run), and a RUNNING or RECONCILING task with a partition rewound below its restore end
 * (the group's committed offset it was rebuilt up to: the aborted commit held the end of that
 * rebuild) goes back to RESTORING, so those records are merged again without output
 * (wd_task_part_rewound). Tasks in a rebuild are left to app/runtime/rebuild.c. Errors: the
 * consumer's (resuming a partition); an illegal move (a bug) is kept for wd_taskmgr_take_error. */
wd_error_t *wd_taskmgr_rewound(wd_taskmgr_t *tm, const wd_tp_offset_t *to, size_t n);

/* The offset stored with the state for (topic, partition) into *next (-1: none stored). A read
 * error is an error, never "no state". Errors: E_STORE_READ (wrapped with the partition). */
wd_error_t *wd_taskmgr_stored_offset(wd_store_t *store, const char *topic, int32_t partition, int64_t *next);

#endif
