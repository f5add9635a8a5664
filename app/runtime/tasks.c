/*
 * app/runtime/tasks.c — the task table and its state machine (app/runtime/tasks.h, docs/runtime.md).
 */
#include "app/runtime/tasks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

struct wd_tasks {
  wd_task_t **tasks; /* each task allocated alone: pointers to it stay valid */
  size_t n, cap;
};

static const char *const state_names[WD_TASK_NSTATES] = {
    [WD_TASK_CREATED] = "CREATED", [WD_TASK_RESTORING] = "RESTORING", [WD_TASK_RECONCILING] = "RECONCILING",
    [WD_TASK_RUNNING] = "RUNNING", [WD_TASK_SUSPENDED] = "SUSPENDED", [WD_TASK_STANDBY] = "STANDBY",
    [WD_TASK_CLOSED] = "CLOSED",
};

#define BIT(s) (1u << (s))
/* legal[from]: the set of states `from` may move to (app/runtime/tasks.h) */
static const unsigned legal[WD_TASK_NSTATES] = {
    [WD_TASK_CREATED] = BIT(WD_TASK_RESTORING) | BIT(WD_TASK_RECONCILING) | BIT(WD_TASK_RUNNING) | BIT(WD_TASK_CLOSED),
    [WD_TASK_RESTORING] =
        BIT(WD_TASK_RECONCILING) | BIT(WD_TASK_RUNNING) | BIT(WD_TASK_SUSPENDED) | BIT(WD_TASK_CLOSED),
    [WD_TASK_RECONCILING] =
        BIT(WD_TASK_RESTORING) | BIT(WD_TASK_RUNNING) | BIT(WD_TASK_SUSPENDED) | BIT(WD_TASK_CLOSED),
    [WD_TASK_RUNNING] =
        BIT(WD_TASK_RESTORING) | BIT(WD_TASK_RECONCILING) | BIT(WD_TASK_SUSPENDED) | BIT(WD_TASK_CLOSED),
    [WD_TASK_SUSPENDED] = BIT(WD_TASK_CREATED) | BIT(WD_TASK_STANDBY) | BIT(WD_TASK_CLOSED),
    [WD_TASK_STANDBY] = BIT(WD_TASK_CREATED) | BIT(WD_TASK_CLOSED),
    [WD_TASK_CLOSED] = BIT(WD_TASK_CREATED) | BIT(WD_TASK_STANDBY),
};

const char *wd_task_state_name(wd_task_state_t s) { return (unsigned)s < WD_TASK_NSTATES ? state_names[s] : "?"; }

bool wd_task_move_legal(wd_task_state_t from, wd_task_state_t to) {
  if ((unsigned)from >= WD_TASK_NSTATES || (unsigned)to >= WD_TASK_NSTATES) return false;
  return (legal[from] & BIT(to)) != 0;
}

wd_error_t *wd_tasks_new(wd_tasks_t **out) {
  *out = calloc(1, sizeof(**out));
  return *out ? NULL : wd_error_nomem();
}

void wd_tasks_destroy(wd_tasks_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) {
    free(t->tasks[i]->parts);
    free(t->tasks[i]);
  }
  free(t->tasks);
  free(t);
}

wd_task_t *wd_tasks_find(wd_tasks_t *t, uint32_t id) {
  for (size_t i = 0; i < t->n; i++)
    if (t->tasks[i]->id == id) return t->tasks[i];
  return NULL;
}

wd_task_t *wd_tasks_ensure(wd_tasks_t *t, uint32_t id) {
  wd_task_t *task = wd_tasks_find(t, id);
  if (task) return task;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    wd_task_t **nt = realloc(t->tasks, cap * sizeof(*nt));
    if (!nt) return NULL;
    t->tasks = nt;
    t->cap = cap;
  }
  if (!(task = calloc(1, sizeof(*task)))) return NULL;
  t->tasks[t->n++] = task;
  task->id = id;
  task->state = WD_TASK_CLOSED;
  return task;
}

size_t wd_tasks_count(const wd_tasks_t *t) { return t->n; }

size_t wd_tasks_in_state(const wd_tasks_t *t, wd_task_state_t s) {
  size_t n = 0;
  for (size_t i = 0; t && i < t->n; i++) n += t->tasks[i]->state == s;
  return n;
}

wd_task_t *wd_tasks_at(wd_tasks_t *t, size_t i) { return i < t->n ? t->tasks[i] : NULL; }

wd_error_t *wd_task_move(wd_task_t *task, wd_task_state_t to, const char *why) {
  wd_task_state_t from = task->state;
  if (from == to) return NULL;
  if (!wd_task_move_legal(from, to))
    return wd_error_new(WD_ERR_INTERNAL, E_TASK_TRANSITION, "task %" PRIu32 ": %s -> %s is not a legal move (%s)",
                        task->id, wd_task_state_name(from), wd_task_state_name(to), why ? why : "");
  task->state = to;
  task->moved_at_ms = wd_wall_ms();
  if (to == WD_TASK_RESTORING) task->restores++;
  if (to == WD_TASK_CREATED) task->was_suspended = from == WD_TASK_SUSPENDED;
  /* the moves every rebalance makes go to DEBUG; those that change what the task emits (every move
   * to RUNNING: the task produces output here from now on; tests/chaos/multi waits on it) to INFO */
  bool routine = to == WD_TASK_CREATED || to == WD_TASK_SUSPENDED || to == WD_TASK_CLOSED || to == WD_TASK_STANDBY;
  wd_log(routine ? WD_LOG_DEBUG : WD_LOG_INFO, "tasks", "task %" PRIu32 ": %s -> %s%s%s%s", task->id,
         wd_task_state_name(from), wd_task_state_name(to), why ? " (" : "", why ? why : "", why ? ")" : "");
  return NULL;
}

wd_task_part_t *wd_task_add_partition(wd_task_t *task, const char *topic, int32_t partition, int64_t restore_end) {
  wd_task_part_t *p = wd_task_partition(task, topic, partition);
  if (!p) {
    if (task->nparts == task->cap_parts) {
      size_t cap = task->cap_parts ? task->cap_parts * 2 : 8;
      wd_task_part_t *np = realloc(task->parts, cap * sizeof(*np));
      if (!np) return NULL;
      task->parts = np;
      task->cap_parts = cap;
    }
    p = &task->parts[task->nparts++];
    p->topic = topic;
    p->partition = partition;
  } else if (p->restore_end > 0 && !p->reached) {
    task->unreached--;
  }
  p->restore_end = restore_end;
  p->reached = restore_end <= 0;
  p->held_at = -1;
  task->unreached += !p->reached;
  return p;
}

wd_task_part_t *wd_task_partition(wd_task_t *task, const char *topic, int32_t partition) {
  for (size_t i = 0; i < task->nparts; i++)
    if (task->parts[i].partition == partition &&
        (task->parts[i].topic == topic || !strcmp(task->parts[i].topic, topic)))
      return &task->parts[i];
  return NULL;
}

void wd_tasks_clear_partitions(wd_tasks_t *t) {
  for (size_t i = 0; i < t->n; i++) {
    t->tasks[i]->nparts = 0;
    t->tasks[i]->unreached = 0;
    t->tasks[i]->changelog_pending = false;
    t->tasks[i]->rebuild = WD_REBUILD_NONE;
    t->tasks[i]->round++;
  }
}

bool wd_task_part_reached(wd_task_t *task, wd_task_part_t *part) {
  if (part->reached) return false;
  part->reached = true;
  return --task->unreached == 0;
}

bool wd_task_part_rewound(wd_task_t *task, wd_task_part_t *part, int64_t offset) {
  part->held_at = -1; /* read again from `offset`: the gate decides its records afresh */
  if (part->restore_end <= 0 || (offset >= 0 && offset >= part->restore_end)) return false;
  if (part->reached) {
    part->reached = false;
    task->unreached++;
  }
  return true;
}

wd_gate_t wd_task_gate(wd_task_t *task, wd_task_part_t *part, int64_t offset, bool *now_running) {
  *now_running = false;
  if (!task || !part) return WD_GATE_RUN;
  /* once held, every later record of the partition in the batch is held too: the partition is read
   * again from its first held record, so none may be taken out of order */
  if (part->held_at >= 0) return WD_GATE_HOLD;
  if (task->state == WD_TASK_RECONCILING) { /* its lookup columns are recomputed first */
    part->held_at = offset;
    return WD_GATE_HOLD;
  }
  if (task->state != WD_TASK_RESTORING) return WD_GATE_RUN;
  if (task->changelog_pending || task->rebuild == WD_REBUILD_STAGE || task->rebuild == WD_REBUILD_DIFF) {
    /* its rows are still being restored (or staged, or switched): nothing of it is taken */
    part->held_at = offset;
    return WD_GATE_HOLD;
  }
  if (!part->reached && offset < part->restore_end) return WD_GATE_RESTORE;
  if (task->rebuild == WD_REBUILD_SOURCES && (wd_task_part_reached(task, part) || task->unreached == 0)) {
    task->rebuild = WD_REBUILD_DIFF; /* rebuilt: the switch comes before any output (app/runtime/rebuild.h) */
    part->held_at = offset;
    return WD_GATE_HOLD;
  }
  if (wd_task_part_reached(task, part) || task->unreached == 0) {
    char why[160];
    snprintf(why, sizeof(why), "all %zu partition(s) reached the group's committed offsets", task->nparts);
    wd_error_t *err = wd_task_move(task, task->reconcile ? WD_TASK_RECONCILING : WD_TASK_RUNNING, why);
    wd_error_destroy(err); /* RESTORING -> RUNNING / RECONCILING is legal */
    *now_running = true;
    if (task->reconcile) { /* reconciled before this record */
      part->held_at = offset;
      return WD_GATE_HOLD;
    }
    return WD_GATE_RUN;
  }
  part->held_at = offset;
  return WD_GATE_HOLD;
}

bool wd_tasks_active(const wd_tasks_t *t, uint32_t id) {
  wd_task_t *task = t ? wd_tasks_find((wd_tasks_t *)t, id) : NULL;
  return task && (task->state == WD_TASK_CREATED || task->state == WD_TASK_RESTORING ||
                  task->state == WD_TASK_RECONCILING || task->state == WD_TASK_RUNNING);
}
