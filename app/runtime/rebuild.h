/*
 * app/runtime/rebuild.h — the rebuild on an incompatible table definition as a runtime mode of `widen run`
 * (docs/runtime.md "Rebuild as a runtime mode").
 *
 * wd_definition_prepare (app/ops/fingerprint.h) arms it: the state directory is a fresh one holding
 * the new definition and the old one (meta WD_REBUILD_OLD_DEF_KEY); the state before the change is
 * kept beside it. From then on every task this process owns is taken through these phases, in the
 * poll loop, between polls of the group (wd_task_t.rebuild; the task is RESTORING and produces no
 * output until its switch):
 *
 *   old rows   per-partition tasks: restored from the state changelog topic like any task whose
 *              local state is not at the group's committed offsets (a standby copy is only the
 *              start of that restore, never the old rows themselves); single task: the state
 *              before the change, which must be at the group's committed offsets.
 *   STAGE      the old rows are read with the old definition, projected onto the new columns by
 *              name and written aside under their new key ('O' + task + key), in slices of a
 *              bounded number of entries; per-partition, the restored old rows are dropped then.
 *   SOURCES    the task's partitions are read from their beginning up to the group's committed
 *              offsets and merged without output (the gate's RESTORE); commits go on as usual
 *              (their offsets are stored), but none of the task's rows reach the state changelog
 *              topic yet, and records past the group's offsets are held.
 *   DIFF       the switch: in a commit of its own (history mode "rebuild"), two sorted readers over
 *              the staged old rows and the rebuilt ones (key order, bounded chunks, never a whole
 *              table in memory) give the difference, sent to sink.topic in the sink's formats
 *              (-D, +I, -U/+U); per-partition, every rebuilt entry of the task, a tombstone for
 *              each old key gone and the task's mark go to the state changelog topic; the staged
 *              rows are deleted and the mark ('M' + task = the new fingerprint) written by the
 *              commit's finalize. The commit carries no input offsets: it is prepared and sends
 *              the commit marker of this process's group "<transactional.id>.rebuild"
 *              (wd_commit_set_marker), so recovery resolves it like any other commit. Then the
 *              task is RUNNING.
 *
 * A task whose store holds its mark with the current fingerprint is current: it is never rebuilt
 * (a process that takes it over restores it, mark included, from the state changelog topic). A
 * crash or a rebalance before the switch commit leaves the mark absent and the state changelog
 * topic with the old rows: the task is restored and rebuilt again by its next owner; after it, the
 * mark says the task is done. So each task's difference is emitted once, by the process that owns
 * it, whatever the number of processes.
 *
 * Ownership: the rebuild borrows the store, the state and the table of the pipeline; it owns the
 * old table, the state before the change (single task: opened on demand) and its scratch.
 * Thread: the pipeline's.
 */
#ifndef WD_REBUILD_H
#define WD_REBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/commit.h"
#include "common/error.h"
#include "common/types.h"
#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

typedef struct wd_rebuild wd_rebuild_t;

/* Where the switch's records go: the one place of the rebuild's output (the pipeline's producer
 * and transaction, through the record collector). */
typedef struct wd_rebuild_io {
  void *ctx;
  /* The difference rows rows[0..n) (kinds set; an -U is followed by its +U) to sink.topic, encoded
   * as the pipeline encodes its changelog (its sink and key formats), inside the open commit. */
  wd_error_t *(*changes)(void *ctx, wd_row_t *const *rows, size_t n);
  /* One state entry of task `task` (val NULL: a tombstone) to the state changelog topic's
   * partition `task`, inside the open commit. NULL when there is no state changelog topic. */
  wd_error_t *(*state)(void *ctx, uint32_t task, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
  /* Completes the open commit (*aborted: it was aborted instead). */
  wd_error_t *(*complete)(void *ctx, bool *aborted);
} wd_rebuild_io_t;

/* The rebuild armed in the state of store (st, borrowed), or *out NULL when none is. table and
 * state are the pipeline's (borrowed; the new definition's). changelog: per-partition tasks with a
 * state changelog topic (old rows restored from it), else single task (old rows from the state
 * before the change). Errors: E_STATE_CORRUPT (the old definition), the table config's errors,
 * E_STORE_READ, E_NOMEM. */
wd_error_t *wd_rebuild_open(wd_store_t *st, wd_state_t *state, const wd_table_t *table, bool changelog,
                            wd_rebuild_t **out);
void wd_rebuild_destroy(wd_rebuild_t *rb); /* accepts NULL */

/* The commit hook (wd_commit_hooks_t.task_current; ctx: the rebuild): whether the store holds the
 * task's mark with the current fingerprint. A read error counts as "not current" (the task is
 * rebuilt: slower, never wrong) and is logged. */
bool wd_rebuild_task_current(void *rb, uint32_t task);

/* Whether some task of the assignment is in a rebuild phase that the poll loop must drive (STAGE
 * or DIFF): the loop then calls wd_rebuild_step and polls without waiting. */
bool wd_rebuild_busy(const wd_rebuild_t *rb, wd_commit_t *c);

/* One slice of the rebuild (up to about max_ms): stages the old rows of the tasks in STAGE and
 * moves them on to SOURCES (wd_commit_rebuild_sources); makes the switch of each task in DIFF (the
 * open commit is completed first; the switch is a commit of its own, aborted by a rebalance that
 * comes meanwhile and then done again by the task's next owner). stop: the pipeline's stop request;
 * while set, no switch is begun. Errors: E_REBUILD (single task: the state before the change is not
 * at the group's committed offsets, naming the partition), E_STORE_*, E_STATE_CORRUPT, the
 * commit's and the io's errors, E_NOMEM. */
wd_error_t *wd_rebuild_step(wd_rebuild_t *rb, wd_commit_t *c, const wd_rebuild_io_t *io, volatile const int *stop,
                            int max_ms);

/* The commit hooks of the switch commit (the pipeline calls them from its own): whether the open
 * commit is a switch (the history records mode "rebuild"); before_finalize adds the switch's
 * entries to the finalize batch b (the staged rows deleted, the mark); before_write is the fault
 * hook WIDEN_FAULT=rebuild-after-commit (SIGKILL once the switch's transaction is committed and
 * before its finalize). 0, or -1 on no memory. */
bool wd_rebuild_switching(const wd_rebuild_t *rb);
int wd_rebuild_before_finalize(wd_rebuild_t *rb, wd_store_batch_t *b);
void wd_rebuild_before_write(wd_rebuild_t *rb);

/* Start-up of an armed rebuild: its switch commits carry no input offsets, so they are resolved by
 * this process's commit marker: a consumer of kconf's brokers and properties (borrowed) in group
 * "<txn_id>.rebuild", never subscribed, over topic (borrowed; the state changelog topic, else the
 * sink topic), set as commit's marker (wd_commit_set_marker). *out owned by the caller
 * (wd_consumer_destroy). Errors: wd_consumer_new's, E_NOMEM. */
wd_error_t *wd_rebuild_marker(const wd_kafka_conf_t *kconf, const char *txn_id, const char *topic, wd_commit_t *commit,
                              wd_consumer_t **out);

#endif
