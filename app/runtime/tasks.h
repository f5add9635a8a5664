/*
 * app/runtime/tasks.h — the task table of `widen run`: one object per task with its state, its assigned
 * partitions and how far each has caught up, and one transition function that checks a table of
 * legal moves and logs each (docs/runtime.md). Kafka Streams' task lifecycle, narrowed to what
 * widen's runtime does.
 *
 * A task is the unit of state: partition i of every task topic (pipeline.tasks: per-partition) or
 * all partitions together (single). Its states:
 *
 *   CREATED      assigned to this process, not yet decided (the assignment callback records it)
 *   RESTORING    its local state is not at the group's committed offsets: its rows are rebuilt
 *                (from the sources, without output, or from the state changelog topic); records
 *                past a partition's restore end wait (the partition is held) until **every**
 *                partition of the task has caught up
 *   RECONCILING  restored; its rows' lookup columns are recomputed from this process's lookup
 *                tables before its first record (docs/lookups-scale-out.md); its records wait
 *                (held) meanwhile. RUNNING goes back to it when an abort took back its reconcile.
 *   RUNNING      processing: the only state in which the task produces output. RUNNING and
 *                RECONCILING go back to RESTORING when an abort rewound a partition of the task
 *                below its restore end (the records it rebuilt from were taken back with the
 *                commit: they are read again without output, wd_task_part_rewound)
 *   SUSPENDED    revoked (a rebalance); its local state is kept and trusted if it comes back
 *                (a lost assignment closes its tasks instead)
 *   STANDBY      not owned here; a standby copy is kept (pipeline.num-standby-replicas)
 *   CLOSED       not owned here, no copy
 *
 * Legal moves (wd_task_move refuses any other):
 *   CREATED     -> RESTORING | RECONCILING | RUNNING | CLOSED
 *   RESTORING   -> RECONCILING | RUNNING | SUSPENDED | CLOSED
 *   RECONCILING -> RESTORING | RUNNING | SUSPENDED | CLOSED
 *   RUNNING     -> RESTORING | RECONCILING | SUSPENDED | CLOSED
 *   SUSPENDED   -> CREATED | STANDBY | CLOSED
 *   STANDBY     -> CREATED | CLOSED
 *   CLOSED      -> CREATED | STANDBY
 *
 * Ownership: the table owns its tasks (each allocated alone); a wd_task_t pointer stays valid
 * until wd_tasks_destroy (tasks are never removed, only CLOSED). Topic names given to wd_tasks_add_partition are
 * borrowed and must outlive the table. Thread: one (the pipeline's).
 */
#ifndef WD_TASKS_H
#define WD_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum wd_task_state {
  WD_TASK_CREATED = 0,
  WD_TASK_RESTORING,
  WD_TASK_RECONCILING,
  WD_TASK_RUNNING,
  WD_TASK_SUSPENDED,
  WD_TASK_STANDBY,
  WD_TASK_CLOSED,
  WD_TASK_NSTATES
} wd_task_state_t;

/* The phases of a task's rebuild after an incompatible table definition change (app/runtime/rebuild.h,
 * docs/runtime.md "Rebuild as a runtime mode"); the task is RESTORING throughout and produces no
 * output until the rebuild's switch commit made it RUNNING. */
typedef enum wd_task_rebuild {
  WD_REBUILD_NONE = 0,
  WD_REBUILD_STAGE, /* its old rows are copied, projected onto the new columns, aside: every record
                         of the task is held */
  WD_REBUILD_SOURCES, /* its rows are rebuilt from the sources' beginning up to the group's offsets,
                         without output (the gate's RESTORE); a record past them is held */
  WD_REBUILD_DIFF /* rebuilt: the difference is emitted with the switch (every record held) */
} wd_task_rebuild_t;

/* One assigned partition of a task. */
typedef struct wd_task_part {
  const char *topic; /* borrowed */
  int32_t partition;
  int64_t restore_end; /* RESTORING from the sources: records below it only rebuild state; <= 0: none */
  bool reached; /* the partition's position reached restore_end */
  int64_t held_at; /* >= 0: the partition is held (paused) at this offset until the task runs */
} wd_task_part_t;

typedef struct wd_task {
  uint32_t id;
  wd_task_state_t state;
  wd_task_part_t *parts; /* this assignment's partitions of the task (owned by the table) */
  size_t nparts, cap_parts;
  size_t unreached; /* partitions with a restore end not reached yet */
  bool changelog_pending; /* RESTORING from the state changelog topic (run in the poll loop in
                             slices, wd_commit_restore_step): every record of the task is held
                             until it is done */
  wd_task_rebuild_t rebuild; /* a rebuild on a changed table definition (app/runtime/rebuild.h), in the
                                poll loop, while RESTORING */
  bool reconcile; /* lookups under per-partition tasks: once caught up it is RECONCILING
                                (its rows' lookup columns recomputed) before RUNNING */
  bool was_suspended; /* it became CREATED from SUSPENDED: it was in the assignment revoked
                                last, its state kept (set by wd_task_move) */
  unsigned round; /* bumped by every revoke (wd_tasks_clear_partitions): work begun for an
                                earlier assignment of the task starts again */
  unsigned restores; /* moves into RESTORING so far (set by wd_task_move; the metrics) */
  int64_t moved_at_ms; /* wall-clock ms of its last move (wd_task_move), 0 before */
} wd_task_t;

typedef struct wd_tasks wd_tasks_t;

/* The state's name ("RUNNING", ...); "?" for a value out of range. */
const char *wd_task_state_name(wd_task_state_t s);

/* Whether from -> to is a legal move (the table above). */
bool wd_task_move_legal(wd_task_state_t from, wd_task_state_t to);

/* A new, empty table (*out owned by the caller: wd_tasks_destroy). Errors: E_NOMEM. */
wd_error_t *wd_tasks_new(wd_tasks_t **out);
void wd_tasks_destroy(wd_tasks_t *t); /* accepts NULL */

/* The task with this id, or NULL when the table has none. */
wd_task_t *wd_tasks_find(wd_tasks_t *t, uint32_t id);

/* Whether task id is owned by this process now: it exists in t and is CREATED, RESTORING,
 * RECONCILING or RUNNING (not SUSPENDED, STANDBY or CLOSED). The one answer to "is it ours" for
 * the units around the coordinator (app/runtime/standby.c skips the state changelog records of
 * these tasks: they are this process's own writes). t may be NULL (nothing owned). */
bool wd_tasks_active(const wd_tasks_t *t, uint32_t id);
/* The task with this id, created CLOSED with no partitions if the table has none. NULL: no memory. */
wd_task_t *wd_tasks_ensure(wd_tasks_t *t, uint32_t id);
/* How many tasks are in state s now (t may be NULL: 0). */
size_t wd_tasks_in_state(const wd_tasks_t *t, wd_task_state_t s);
/* Iteration over all tasks (CLOSED ones too): the count, and the i-th (NULL past the end). */
size_t wd_tasks_count(const wd_tasks_t *t);
wd_task_t *wd_tasks_at(wd_tasks_t *t, size_t i);

/* Moves task to `to`, logging "task N: FROM -> TO (why)" at INFO (DEBUG for moves that every
 * rebalance makes). A move to the same state is a no-op. Errors: E_TASK_TRANSITION (an illegal
 * move; the task keeps its state; a bug in the caller). */
wd_error_t *wd_task_move(wd_task_t *task, wd_task_state_t to, const char *why);

/* Adds a partition to a task of the current assignment with its restore end (<= 0: nothing to
 * rebuild from it). Returns the partition, or NULL on no memory. */
wd_task_part_t *wd_task_add_partition(wd_task_t *task, const char *topic, int32_t partition, int64_t restore_end);
/* The task's partition (topic, partition), or NULL. */
wd_task_part_t *wd_task_partition(wd_task_t *task, const char *topic, int32_t partition);
/* Drops every task's partitions (a revoke: the assignment is gone); states are left as they are. */
void wd_tasks_clear_partitions(wd_tasks_t *t);

/* A RESTORING task's partition reached its restore end (a record at or past it was seen, or the
 * consumer's position is there). Returns true when this was the task's last unreached partition
 * (the caller then moves the task on: RUNNING, or RECONCILING). */
bool wd_task_part_reached(wd_task_t *task, wd_task_part_t *part);

/* An abort rewound the task's partition to `offset` (the offset stored with the local state; < 0:
 * the partition's beginning): the partition is no longer held (held_at -1: the caller releases
 * the consumer's hold; the gate holds it again at its next record if the task is still not
 * RUNNING) and, when offset is below its restore end, it has not reached it any more (counted in
 * task->unreached again). Returns true in that case: the records from `offset` up to the restore
 * end only rebuild state, so the caller moves the task back to RESTORING if it was RUNNING or
 * RECONCILING (else those records would be merged again with output, and a partition held at
 * its restore end released past records never merged). False: nothing below the restore end. */
bool wd_task_part_rewound(wd_task_t *task, wd_task_part_t *part, int64_t offset);

/* What a record at `offset` of a task's partition is to the runtime. */
typedef enum wd_gate {
  WD_GATE_RUN = 0, /* apply it and produce its output */
  WD_GATE_RESTORE, /* apply it without output: it rebuilds state up to the group's offset */
  WD_GATE_HOLD /* do not take it: the task is still restoring other partitions; the partition
                       is held at this offset and read again once the task runs */
} wd_gate_t;

/* Decides a record of (task, part) at offset (docs/runtime.md "the gate"); a record at or past
 * the restore end marks the partition reached (and may make the task's last partition reached:
 * *now_running is then set and the caller moves the task to RUNNING; the record is WD_GATE_RUN;
 * a task rebuilding from the sources (WD_REBUILD_SOURCES) goes to WD_REBUILD_DIFF instead, stays
 * RESTORING and the record is held). A task in WD_REBUILD_STAGE or WD_REBUILD_DIFF holds every record.
 * A held partition (held_at >= 0) gives WD_GATE_HOLD whatever the task's state (its later records
 * must not be taken before the held ones); HOLD sets held_at to the first held offset. A task
 * restoring from the state changelog topic (changelog_pending) holds every record, and so does a
 * RECONCILING task; a task with `reconcile` set that catches up moves to RECONCILING (not RUNNING:
 * *now_running is still set, the record is held). Any other record of a task that is not
 * RESTORING gives WD_GATE_RUN. */
wd_gate_t wd_task_gate(wd_task_t *task, wd_task_part_t *part, int64_t offset, bool *now_running);

#endif
