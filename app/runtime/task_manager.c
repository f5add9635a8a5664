/*
 * app/runtime/task_manager.c — the task manager: the task table and the assignment
 * (app/runtime/task_manager.h, docs/runtime.md).
 */
#include "app/runtime/task_manager.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/commit.h"
#include "app/runtime/standby.h"
#include "common/log.h"

/* One assigned partition and what its assignment decided (where it starts, the offsets it was
 * decided with). How far it has caught up (its restore end, reached, held) is kept once, by its
 * task (wd_task_part_t, app/runtime/tasks.h). */
typedef struct wd_ctp {
  const char *topic;
  int32_t partition;
  int64_t start; /* the starting offset on_assign answers */
  int64_t g_end; /* the group's committed offset a rebuild started from (-1: none): offsets up
                          to it are never sent to the transaction (they would move the group back) */
  int64_t group; /* exactly-once: the group's committed offset at the assignment (-1: none) */
  int64_t stored; /* the offset stored with the local state at the assignment (-1: none) */
  int64_t placed; /* the offset it was assigned at (held until wd_taskmgr_init_step decides) */
  bool stateless; /* only forwarded to a repartition topic (conf.stateless_topics): no task's */
} wd_ctp_t;

struct wd_taskmgr {
  wd_commit_conf_t conf;
  wd_state_t *state;
  wd_store_t *store;
  wd_consumer_t *cons;
  wd_stop_clock_t *stop; /* borrowed from the commit coordinator */
  wd_error_t *err; /* the first error kept inside a callback */
  wd_tasks_t *tasks; /* the task table (app/runtime/tasks.h) */
  wd_ctp_t *tps; /* the assigned partitions */
  size_t ntps, cap_tps;
  bool quiet; /* every record runs: nothing restores, reconciles, rebuilds or is held (the
                          gate's fast path); computed from the tasks by settle(), never counted */
  bool holds_dirty; /* a record was held since the last wd_taskmgr_after_batch */
  bool rebuilt; /* a task caught up after a rebuild without output (wd_taskmgr_take_rebuilt) */
  bool init_pending; /* an assignment recorded, its tasks CREATED, to decide (wd_taskmgr_init_step) */
  double init_since; /* the first failed try of the group's offsets for it (retry_transient) */
  bool global; /* wd_taskmgr_set_global */
  bool reconcile; /* wd_taskmgr_set_reconcile: caught-up tasks are RECONCILING before RUNNING */
  /* the state changelog restores of the current assignment, run in the poll loop in slices
   * (wd_taskmgr_restore_step, docs/runtime.md "Restoration in the poll loop") */
  wd_restorer_t *rs;
  wd_restore_io_t restore_io;
  uint64_t restored_records; /* changelog records restored (all tasks, this process) */
};

static void keep_error(wd_taskmgr_t *tm, wd_error_t *err) {
  if (!err) return;
  if (tm->err) wd_error_destroy(err);
  else tm->err = err;
}

wd_error_t *wd_taskmgr_new(const wd_commit_conf_t *conf, wd_state_t *state, wd_store_t *store, wd_stop_clock_t *stop,
                           wd_taskmgr_t **out) {
  *out = NULL;
  wd_taskmgr_t *tm = calloc(1, sizeof(*tm));
  if (!tm || wd_tasks_new(&tm->tasks)) {
    free(tm);
    return wd_error_nomem();
  }
  tm->conf = *conf;
  tm->state = state;
  tm->store = store;
  tm->stop = stop;
  tm->quiet = true;
  wd_standby_set_tasks(tm->conf.standby, tm->tasks); /* which tasks are this process's (one table) */
  *out = tm;
  return NULL;
}

void wd_taskmgr_destroy(wd_taskmgr_t *tm) {
  if (!tm) return;
  wd_restorer_destroy(tm->rs);
  free(tm->tps);
  wd_tasks_destroy(tm->tasks);
  wd_error_destroy(tm->err);
  free(tm);
}

void wd_taskmgr_set_consumer(wd_taskmgr_t *tm, wd_consumer_t *cons) { tm->cons = cons; }
void wd_taskmgr_set_global(wd_taskmgr_t *tm, bool on) { tm->global = on; }
void wd_taskmgr_set_reconcile(wd_taskmgr_t *tm, bool on) {
  tm->reconcile = on;
  tm->quiet = tm->quiet && !on;
}
void wd_taskmgr_set_restore_io(wd_taskmgr_t *tm, const wd_restore_io_t *io) { tm->restore_io = *io; }
wd_tasks_t *wd_taskmgr_tasks(wd_taskmgr_t *tm) { return tm->tasks; }

wd_error_t *wd_taskmgr_take_error(wd_taskmgr_t *tm) {
  wd_error_t *e = tm->err;
  tm->err = NULL;
  return e;
}

wd_error_t *wd_taskmgr_stored_offset(wd_store_t *store, const char *topic, int32_t partition, int64_t *next) {
  *next = -1;
  wd_error_t *err = wd_store_get_offset(store, topic, partition, next);
  if (err) {
    *next = -1;
    return wd_error_wrap(err,
                         "reading the stored offset of %s[%d] from the state directory (the process stops "
                         "rather than take the partition for one without state)",
                         topic, partition);
  }
  return NULL;
}

/* Whether task's rows are in the current definition (rebuild mode, hooks.task_current). */
static bool task_current(const wd_taskmgr_t *tm, uint32_t task) {
  return !tm->conf.hooks.task_current || tm->conf.hooks.task_current(tm->conf.hooks.ctx, task);
}

/* ---- the assigned partitions ---------------------------------------------------------------- */

static wd_ctp_t *find_tp(const wd_taskmgr_t *tm, const char *topic, int32_t partition) {
  for (size_t i = 0; i < tm->ntps; i++)
    if (tm->tps[i].partition == partition && (tm->tps[i].topic == topic || !strcmp(tm->tps[i].topic, topic)))
      return &tm->tps[i];
  return NULL;
}

static bool is_stateless(const wd_taskmgr_t *tm, const char *topic) {
  for (size_t i = 0; i < tm->conf.nstateless; i++)
    if (!strcmp(tm->conf.stateless_topics[i], topic)) return true;
  return false;
}

static uint32_t task_of(const wd_taskmgr_t *tm, int32_t partition) {
  return tm->conf.per_partition ? (uint32_t)partition : 0;
}

/* Scale-out with lookups (wd_commit_set_global): whether this process owned task continuously up
 * to this assignment. Lookup changes (and reconciles) change a task's rows without moving its
 * input offsets, so the stored offsets equal to the group's do not prove the local rows current:
 * another process may have owned the task meanwhile. Only a task this process kept across the
 * rebalance is trusted: one that became CREATED from SUSPENDED (it was in the assignment revoked last;
 * a lost assignment closes its tasks instead, and a task left out of an assignment is STANDBY or
 * CLOSED from then on; the group protocol is eager, so every assignment follows a revoke). Any
 * other is restored from the state changelog topic. Without global inputs: always true. */
static bool kept_task(wd_taskmgr_t *tm, uint32_t task) {
  if (!tm->global || !tm->conf.changelog_topic) return true;
  const wd_task_t *t = wd_tasks_find(tm->tasks, task);
  return t && t->state == WD_TASK_CREATED && t->was_suspended;
}

/* The deferred state flush (state.flush-interval-ms, docs/exactly-once.md): whether task's local
 * state, not at the group's committed offsets g (of tm->tps), is a flushed state behind them that
 * a replay of its partitions without output brings there: the deferred flush on, and every
 * assigned partition of the task with a stored offset at or before the group's, or none (no record
 * of it flushed yet: read from its beginning). A flush writes only committed commits, rows and
 * offsets in one write, and without a state changelog topic a task's rows and offsets are dropped
 * in one write too, so such a state is one the group passed through. Otherwise (a partition ahead
 * of the group) the task is dropped and rebuilt as a lost one. */
static bool replayable(wd_taskmgr_t *tm, uint32_t task, const wd_tp_offset_t *g) {
  if (!tm->conf.exactly_once || tm->conf.flush_interval_ms <= 0 || !task_current(tm, task)) return false;
  for (size_t k = 0; k < tm->ntps; k++) {
    const wd_ctp_t *t = &tm->tps[k];
    if (t->stateless || task_of(tm, t->partition) != task) continue;
    if (g[k].offset < t->stored) return false; /* ahead of the group (no stored offset: nothing of it yet) */
  }
  return true;
}

/* ---- the task table (app/runtime/tasks.h, docs/runtime.md) --------------------------------------------- */

/* Computes tm->quiet from the tasks themselves, after every change to them: no restorer, no
 * reconcile, no task RESTORING, RECONCILING or in a rebuild phase, no partition held. While it is
 * true the gate answers RUN at once (and after_batch has nothing to do). */
static void settle(wd_taskmgr_t *tm) {
  bool quiet = !tm->rs && !tm->reconcile;
  for (size_t i = 0; quiet && i < wd_tasks_count(tm->tasks); i++) {
    const wd_task_t *t = wd_tasks_at(tm->tasks, i);
    if (t->state == WD_TASK_RESTORING || t->state == WD_TASK_RECONCILING || t->rebuild != WD_REBUILD_NONE)
      quiet = false;
    for (size_t k = 0; quiet && k < t->nparts; k++) quiet = t->parts[k].held_at < 0;
  }
  tm->quiet = quiet;
}

static void move_task(wd_taskmgr_t *tm, wd_task_t *task, wd_task_state_t to, const char *why) {
  wd_error_t *err = wd_task_move(task, to, why);
  if (err) keep_error(tm, err); /* an illegal move is a bug: the pipeline stops with it */
}

/* A task caught up with the group's offsets: RUNNING, or RECONCILING first with lookups under
 * per-partition tasks (its rows' lookup columns recomputed before its first record). */
static void caught_up(wd_taskmgr_t *tm, wd_task_t *task, const char *why) {
  move_task(tm, task, task->reconcile ? WD_TASK_RECONCILING : WD_TASK_RUNNING, why);
}

/* At an assignment (the callback): every task partition joins its task, CREATED (from SUSPENDED,
 * CLOSED or STANDBY); a task revoked before and not assigned again becomes STANDBY (standby copies
 * on) or CLOSED. Again in wd_commit_init_step, with the partitions' restore ends ends[i] of
 * tm->tps[i] (NULL: none). */
static void record_tasks(wd_taskmgr_t *tm, const int64_t *ends) {
  tm->holds_dirty = false;
  for (size_t i = 0; i < tm->ntps; i++) {
    if (tm->tps[i].stateless) continue; /* a raw topic forwarded: no task's */
    wd_task_t *task = wd_tasks_ensure(tm->tasks, task_of(tm, tm->tps[i].partition));
    if (!task) {
      keep_error(tm, wd_error_nomem());
      return;
    }
    if (task->state == WD_TASK_SUSPENDED || task->state == WD_TASK_CLOSED || task->state == WD_TASK_STANDBY)
      move_task(tm, task, WD_TASK_CREATED, "assigned");
    task->reconcile = tm->reconcile; /* lookups under per-partition tasks (wd_commit_set_reconcile) */
    if (!wd_task_add_partition(task, tm->tps[i].topic, tm->tps[i].partition, ends ? ends[i] : -1)) {
      keep_error(tm, wd_error_nomem());
      return;
    }
  }
  for (size_t i = 0; i < wd_tasks_count(tm->tasks); i++) {
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    if (task->state == WD_TASK_SUSPENDED) {
      move_task(tm, task, tm->conf.standby ? WD_TASK_STANDBY : WD_TASK_CLOSED, "not assigned here");
    } else if (task->state == WD_TASK_CLOSED && task->nparts == 0 && tm->conf.standby) {
      move_task(tm, task, WD_TASK_STANDBY, "not assigned here"); /* closed when its partitions were lost */
    }
  }
}

/* Once the assignment is decided: each CREATED task is RESTORING while some partition must be
 * rebuilt up to the group's offset (or its rows are restored from the state changelog topic, or
 * it is rebuilt on a changed definition), else RUNNING (RECONCILING first with lookups under
 * per-partition tasks). */
static void decide_tasks(wd_taskmgr_t *tm) {
  for (size_t i = 0; tm->rs && i < wd_restorer_count(tm->rs); i++) { /* restored in the poll loop */
    wd_task_t *task = wd_tasks_find(tm->tasks, wd_restorer_task(tm->rs, i));
    if (task) task->changelog_pending = true;
  }
  for (size_t i = 0; i < wd_tasks_count(tm->tasks); i++) {
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    if (task->state != WD_TASK_CREATED) continue;
    char why[96];
    if (task->changelog_pending) {
      move_task(tm, task, WD_TASK_RESTORING, "its rows are restored from the state changelog topic");
    } else if (!task_current(tm, task->id) && tm->conf.exactly_once && tm->conf.group) {
      /* rebuild mode without a state changelog: its old rows are staged from the state before
       * the change (app/runtime/rebuild.c), then rebuilt from the sources */
      task->rebuild = WD_REBUILD_STAGE;
      move_task(tm, task, WD_TASK_RESTORING, "its table definition changed: it is rebuilt");
    } else if (task->unreached) {
      snprintf(why, sizeof(why), "%zu of its %zu partition(s) rebuilt up to the group's offsets", task->unreached,
               task->nparts);
      move_task(tm, task, WD_TASK_RESTORING, why);
    } else {
      /* under at-least-once the task resumes from the offsets stored with its state (the
       * group's are committed later and may be behind them) */
      caught_up(tm, task,
                tm->conf.exactly_once ? "its state is at the group's offsets"
                                      : "it resumes from the offsets stored with its state");
    }
  }
}

/* A RESTORING task whose partitions all reached their restore end: it produces output from now
 * on; its held partitions are released after the batch (wd_commit_after_batch). */
static void task_now_running(wd_taskmgr_t *tm, wd_task_t *task) {
  tm->rebuilt = true;
  wd_log(WD_LOG_INFO, "commit",
         "task %" PRIu32 ": state rebuilt up to the group's committed offsets of all its %zu "
         "partition(s); producing output from here on%s",
         task->id, task->nparts,
         task->state == WD_TASK_RECONCILING ? ", once reconciled with this process's lookup tables" : "");
}

bool wd_taskmgr_take_rebuilt(wd_taskmgr_t *tm) {
  bool r = tm->rebuilt;
  tm->rebuilt = false;
  return r;
}

bool wd_taskmgr_next_reconcile(wd_taskmgr_t *tm, uint32_t *task) {
  if (tm->rs || tm->init_pending)
    return false; /* after the restores (they rewrite rows of the tasks they restore) and the initialisation */
  for (size_t i = 0; i < wd_tasks_count(tm->tasks); i++) {
    wd_task_t *t = wd_tasks_at(tm->tasks, i);
    if (t->state == WD_TASK_RECONCILING) {
      *task = t->id;
      return true;
    }
  }
  return false;
}

wd_error_t *wd_taskmgr_reconciled(wd_taskmgr_t *tm, uint32_t task) {
  wd_task_t *t = wd_tasks_find(tm->tasks, task);
  if (!t || t->state != WD_TASK_RECONCILING) return NULL; /* a rebalance meanwhile took it */
  wd_error_t *err = wd_task_move(t, WD_TASK_RUNNING, "reconciled with this process's lookup tables");
  tm->holds_dirty = true; /* its held partitions are released after the batch */
  settle(tm);
  return err;
}

bool wd_taskmgr_task_owned(void *ctx, uint32_t task) {
  const wd_taskmgr_t *tm = ctx;
  return wd_tasks_active(tm->tasks, task);
}

wd_gate_t wd_taskmgr_gate(wd_taskmgr_t *tm, const char *topic, int32_t partition, int64_t offset) {
  if (tm->quiet) return WD_GATE_RUN;
  if (is_stateless(tm, topic)) return WD_GATE_RUN;
  wd_task_t *task = wd_tasks_find(tm->tasks, task_of(tm, partition));
  if (!task) return WD_GATE_RUN;
  wd_task_part_t *part = wd_task_partition(task, topic, partition);
  bool was_held = part && part->held_at >= 0, now_running = false;
  wd_gate_t g = wd_task_gate(task, part, offset, &now_running);
  if (now_running) task_now_running(tm, task);
  if (g == WD_GATE_HOLD) tm->holds_dirty = true;
  if (now_running || (g == WD_GATE_HOLD && !was_held)) settle(tm);
  return g;
}

wd_error_t *wd_taskmgr_after_batch(wd_taskmgr_t *tm) {
  wd_error_t *err = NULL;
  if (!tm->cons || tm->quiet) return NULL;
  for (size_t i = 0; i < wd_tasks_count(tm->tasks) && !err; i++) {
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    /* a partition whose position reached its restore end without a record past it (idle, or a
     * transaction marker last) */
    for (size_t k = 0; k < task->nparts && task->state == WD_TASK_RESTORING; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (pt->reached) continue;
      int64_t pos = wd_consumer_position(tm->cons, pt->topic, pt->partition);
      if (task->rebuild == WD_REBUILD_STAGE) continue; /* its partitions are moved at the sources phase */
      if (pos >= pt->restore_end && wd_task_part_reached(task, pt)) {
        if (task->rebuild == WD_REBUILD_SOURCES) { /* rebuilt: the switch first (app/runtime/rebuild.c) */
          task->rebuild = WD_REBUILD_DIFF;
          continue;
        }
        caught_up(tm, task, "all its partitions reached the group's committed offsets");
        task_now_running(tm, task);
      }
    }
    for (size_t k = 0; k < task->nparts && !err; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (pt->held_at < 0) continue;
      if (task->state == WD_TASK_RUNNING) {
        err = wd_consumer_release_partition(tm->cons, pt->topic, pt->partition, pt->held_at);
        wd_log(WD_LOG_DEBUG, "commit", "%s[%d] released at %" PRId64, pt->topic, pt->partition, pt->held_at);
        pt->held_at = -1;
      } else if (tm->holds_dirty) {
        /* read again from its first held record once the task runs */
        err = wd_consumer_hold_partition(tm->cons, pt->topic, pt->partition, pt->held_at);
      }
    }
  }
  tm->holds_dirty = false;
  settle(tm);
  return err;
}

/* ---- the restorer: the state changelog topic ---------------------------------------------------- */

/* The restorer's report (wd_restored_cb): a task's rows are all written, so now its partitions'
 * offsets become the group's (rows first, offsets last: a crash before this write restores it
 * again), and it runs. */
static wd_error_t *task_restored(void *ctx, uint32_t id, int64_t from, uint64_t records, double seconds) {
  wd_taskmgr_t *tm = ctx;
  wd_error_t *err = NULL;
  wd_task_t *task = wd_tasks_find(tm->tasks, id);
  if (!task_current(tm, id)) {
    /* rebuild mode: the restored rows are the task's old rows at the group's offsets (no switch
     * mark): they are staged and the task rebuilt (app/runtime/rebuild.c); its offsets stay unset, so a
     * crash meanwhile restores it again */
    tm->restored_records += records;
    wd_log(WD_LOG_INFO, "rebuild",
           "task %u: its old rows restored from %s (%" PRIu64 " records); its table "
           "definition changed: it is rebuilt",
           id, tm->conf.changelog_topic, records);
    if (task) {
      task->changelog_pending = false;
      if (task->state == WD_TASK_RESTORING) task->rebuild = WD_REBUILD_STAGE;
    }
    return NULL;
  }
  wd_store_batch_t *b = wd_store_batch_new();
  if (!b) return wd_error_nomem();
  for (size_t i = 0; i < tm->ntps; i++) {
    const wd_ctp_t *tp = &tm->tps[i];
    if (is_stateless(tm, tp->topic) || task_of(tm, tp->partition) != id || tp->start < 0) continue;
    if (wd_store_batch_set_offset(b, tp->topic, tp->partition, tp->start)) {
      wd_store_batch_destroy(b);
      return wd_error_nomem();
    }
  }
  err = wd_store_write_sync(tm->store, b);
  wd_store_batch_destroy(b);
  if (err) return err;
  tm->restored_records += records;
  char why[200];
  snprintf(why, sizeof(why), "%s from %s[%u]: %" PRIu64 " records in %.2f s",
           from > 0 ? "caught up (standby copy)" : "restored", tm->conf.changelog_topic, id, records, seconds);
  if (task) {
    task->changelog_pending = false;
    if (task->state == WD_TASK_RESTORING && task->unreached == 0) {
      if ((err = wd_task_move(task, task->reconcile ? WD_TASK_RECONCILING : WD_TASK_RUNNING, why))) return err;
    }
  } else {
    wd_log(WD_LOG_INFO, "commit", "task %u %s", id, why);
  }
  return NULL;
}

bool wd_taskmgr_restoring(const wd_taskmgr_t *tm) { return tm->rs != NULL; }

wd_error_t *wd_taskmgr_restore_step(wd_taskmgr_t *tm, int max_ms) {
  if (!tm->rs) return NULL;
  bool done = false;
  wd_error_t *err = wd_restorer_step(tm->rs, max_ms, &done);
  if (!err && done) {
    wd_restorer_destroy(tm->rs);
    tm->rs = NULL;
  }
  settle(tm);
  return err;
}

/* Takes tasks[0..n) and from[0..n) (allocated) as the restores of this assignment. */
static wd_error_t *restore_plan(wd_taskmgr_t *tm, uint32_t *tasks, int64_t *from, size_t n, size_t copies) {
  wd_restorer_conf_t rc = {.changelog_topic = tm->conf.changelog_topic,
                           .restore_conf = tm->conf.restore_conf,
                           .store = tm->store,
                           .stop = tm->stop,
                           .restored = task_restored,
                           .ctx = tm,
                           .io = tm->restore_io};
  wd_restorer_t *r = NULL;
  wd_error_t *err = wd_restorer_new(&rc, tasks, from, n, copies, &r); /* takes tasks, from */
  if (err) return err;
  wd_restorer_destroy(tm->rs);
  tm->rs = r;
  return NULL;
}

uint64_t wd_taskmgr_restored_records(const wd_taskmgr_t *tm) { return tm->restored_records; }

/* The assignment callback only records (docs/runtime.md "Callbacks only record"):
 * each partition with its stored offset, and its task CREATED. Under a group whose decision needs
 * the group's committed offsets (exactly-once, or partitions only forwarded), the partitions are
 * assigned held and the rest is decided in the poll loop (wd_commit_init_step); otherwise (no
 * group, at-least-once) the stored offsets decide here, with no request to the broker. */
bool wd_taskmgr_assign(wd_taskmgr_t *tm, const wd_tp_offset_t *parts, size_t n) {
  bool hold = false;
  if (tm->ntps + n > tm->cap_tps) {
    size_t cap = (tm->ntps + n) * 2;
    wd_ctp_t *t = realloc(tm->tps, cap * sizeof(*t));
    if (!t) {
      keep_error(tm, wd_error_nomem());
      goto done;
    }
    tm->tps = t;
    tm->cap_tps = cap;
  }
  size_t nstateless = 0;
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &tm->tps[tm->ntps++];
    memset(t, 0, sizeof(*t));
    t->topic = parts[i].topic;
    t->partition = parts[i].partition;
    t->g_end = -1;
    t->group = -1;
    t->stateless = is_stateless(tm, parts[i].topic);
    nstateless += t->stateless;
    wd_error_t *err = wd_taskmgr_stored_offset(tm->store, parts[i].topic, parts[i].partition, &t->stored);
    if (err) {
      keep_error(tm, err);
      goto done;
    }
    int64_t s = t->stored;
    if (!tm->conf.group) t->start = tm->conf.replay_from_stored && s >= 0 ? s : WD_OFFSET_BEGINNING;
    else t->start = s >= 0 ? s : (tm->conf.latest_when_empty ? WD_OFFSET_STORED : WD_OFFSET_BEGINNING);
  }
  /* (the tasks it gives are this process's from here on: the standby copies read that,
   * wd_tasks_active) */
  wd_standby_set_ready(tm->conf.standby); /* the copies of the others' tasks from now on */
  if (tm->conf.group && (tm->conf.exactly_once || nstateless)) {
    /* decided in the poll loop, with the group's committed offsets: held until then at an
     * explicit offset (the stored one, else 0), where a paused partition waits without asking the
     * broker anything. At the group's committed offset librdkafka asked for it and, with none,
     * looked the beginning up (ListOffsets); an answer that came after wd_commit_init_step had
     * assigned the partition again was dropped as outdated but restarted librdkafka's offset
     * query timer, which 500 ms later looked the beginning up again and moved the running
     * partition back to it: its records were read twice (docs/runtime.md) */
    for (size_t i = 0; i < tm->ntps; i++) tm->tps[i].placed = tm->tps[i].stored >= 0 ? tm->tps[i].stored : 0;
    record_tasks(tm, NULL);
    tm->init_pending = true;
    tm->init_since = 0;
    hold = true;
    wd_log(WD_LOG_DEBUG, "commit", "%zu partition(s) assigned: their tasks are initialised in the poll loop", n);
    goto done;
  }
  size_t fresh = 0;
  for (size_t i = 0; i < tm->ntps; i++) {
    tm->tps[i].placed = tm->tps[i].start;
    fresh += tm->tps[i].start < 0 && !tm->tps[i].stateless;
  }
  if (fresh)
    wd_log(WD_LOG_INFO, "commit",
           "%zu of %zu assigned partitions have no state in this directory: read from the %s to build their rows "
           "(at-least-once: if the group consumed them before, downstream sees those changes again)",
           fresh, n, tm->conf.latest_when_empty ? "end (auto.offset.reset=latest)" : "beginning");
  record_tasks(tm, NULL);
  decide_tasks(tm);
done:
  settle(tm);
  return hold;
}

bool wd_taskmgr_initialising(const wd_taskmgr_t *tm) { return tm->init_pending; }

/* The decision of an assignment with the group's committed offsets g[i] of tm->tps[i] (in the
 * poll loop): where each partition starts, which tasks restore (from the state changelog
 * topic, planned for wd_commit_restore_step) or rebuild from the sources, and their key ranges and
 * offsets dropped (rows first, offsets last). */
static wd_error_t *decide_assignment(wd_taskmgr_t *tm, const wd_tp_offset_t *g, int64_t *ends) {
  wd_error_t *err = NULL;
  size_t n = tm->ntps;
  wd_store_batch_t *b = NULL;
  bool *drop = NULL, *lead = NULL; /* the task goes / the first assigned partition of a task that goes */
  /* stateless partitions (forwarded to a repartition topic): the group's committed offset */
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &tm->tps[i];
    if (!t->stateless) continue;
    int64_t o = g[i].offset;
    /* at-least-once commits the group's offsets at most once a second: the offset stored here is
     * further when this process was the partition's last owner (nothing is skipped: records
     * before it were forwarded by this process) */
    if (!tm->conf.exactly_once && t->stored > o) o = t->stored;
    t->start = o >= 0 ? o : (tm->conf.latest_when_empty ? WD_OFFSET_STORED : WD_OFFSET_BEGINNING);
  }
  if (!tm->conf.exactly_once) {
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++) fresh += tm->tps[i].start < 0 && !tm->tps[i].stateless;
    if (fresh)
      wd_log(WD_LOG_INFO, "commit",
             "%zu of %zu assigned partitions have no state in this directory: read from the %s to build their rows "
             "(at-least-once: if the group consumed them before, downstream sees those changes again)",
             fresh, n, tm->conf.latest_when_empty ? "end (auto.offset.reset=latest)" : "beginning");
    goto done;
  }
  /* exactly-once: local state is trusted only at exactly the group's committed position */
  if (!(drop = calloc(n ? n : 1, sizeof(*drop))) || !(lead = calloc(n ? n : 1, sizeof(*lead))) ||
      !(b = wd_store_batch_new())) {
    err = wd_error_nomem();
    goto done;
  }
  size_t ntasks_restore = 0, restoring = 0;
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &tm->tps[i];
    if (t->stateless) continue;
    /* (a task the group never committed has no rows anywhere: nothing to restore) */
    t->group = g[i].offset; /* a rebuild reads its task's partitions up to it */
    uint32_t task = task_of(tm, t->partition);
    if (t->stored != g[i].offset && replayable(tm, task, g)) continue; /* replayed from its stored offsets */
    if (t->stored != g[i].offset || (g[i].offset >= 0 && !kept_task(tm, task)) || !task_current(tm, task)) {
      /* the whole task goes: mark every assigned partition of it */
      for (size_t k = 0; k < n; k++)
        if (!tm->tps[k].stateless && task_of(tm, tm->tps[k].partition) == task) drop[k] = true;
    }
  }
  for (size_t i = 0; i < n; i++) {
    lead[i] = drop[i];
    for (size_t k = 0; k < i && lead[i]; k++)
      if (drop[k] && task_of(tm, tm->tps[k].partition) == task_of(tm, tm->tps[i].partition)) lead[i] = false;
  }
  size_t nreplay = 0;
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &tm->tps[i];
    if (t->stateless) continue; /* started at the group's offset above */
    if (!drop[i] && t->stored != g[i].offset) {
      /* the deferred state flush: the task's store is at its last flush, behind the group; the
       * records in between are read again without output (their output is committed) */
      t->start = t->stored >= 0 ? t->stored : WD_OFFSET_BEGINNING;
      ends[i] = g[i].offset;
      t->g_end = ends[i];
      nreplay++;
      continue;
    }
    if (!drop[i]) {
      t->start = g[i].offset >= 0 ? g[i].offset : WD_OFFSET_BEGINNING;
      continue;
    }
    if (lead[i]) {
      ntasks_restore++;
      if (!tm->conf.changelog_topic && (err = wd_state_drop_task(tm->state, task_of(tm, t->partition), b))) goto done;
      /* the task's offsets of every source topic go with its rows (also of partitions not
       * assigned now: their rows are gone too) */
      for (size_t k = 0; k < tm->conf.ntopics; k++) {
        int rc = tm->conf.per_partition ? wd_store_batch_delete_offset(b, tm->conf.topics[k], t->partition)
                                        : wd_store_batch_delete_offsets(b, tm->conf.topics[k]);
        if (rc) {
          err = wd_error_nomem();
          goto done;
        }
      }
    }
    t->start = WD_OFFSET_BEGINNING;
    if (tm->conf.changelog_topic) {
      /* restored from the changelog below: then it starts at the group's committed offset */
      if (g[i].offset >= 0) t->start = g[i].offset; /* stored when the task's restore is done */
      continue;
    }
    ends[i] = g[i].offset; /* -1: the group never committed: nothing to rebuild silently */
    if (ends[i] > 0) {
      t->g_end = ends[i];
      restoring++;
    }
  }
  if (ntasks_restore && tm->conf.changelog_topic) {
    /* the rows first (range deleted, then restored), the offsets last: a crash in between leaves
     * no offsets, so the next start restores again */
    wd_store_batch_t *rows = wd_store_batch_new();
    if (!rows) {
      err = wd_error_nomem();
      goto done;
    }
    uint32_t *rtasks = calloc(n, sizeof(*rtasks));
    int64_t *rfrom = calloc(n, sizeof(*rfrom));
    size_t nr = 0, ncopies = 0;
    if (!rtasks || !rfrom) err = wd_error_nomem();
    for (size_t i = 0; i < n && !err; i++) {
      if (!lead[i]) continue;
      uint32_t task = task_of(tm, tm->tps[i].partition);
      int64_t from = wd_standby_position(tm->conf.standby, task);
      wd_store_batch_clear(rows);
      /* the cached entries go either way; the rows too unless a standby copy is caught up */
      if ((err = wd_state_drop_task(tm->state, task, rows))) break;
      if (from > 0) wd_store_batch_clear(rows);
      if ((err = wd_store_write_sync(tm->store, rows))) break;
      rtasks[nr] = task;
      rfrom[nr++] = from > 0 ? from : 0;
      ncopies += from > 0;
    }
    /* the offsets of the tasks go (written before the restore begins: a crash during it restores
     * again); the restores themselves run in the poll loop, a slice per turn */
    if (!err) err = wd_store_write_sync(tm->store, b);
    if (!err && nr) {
      err = restore_plan(tm, rtasks, rfrom, nr, ncopies); /* takes rtasks, rfrom */
    } else {
      free(rtasks);
      free(rfrom);
    }
    wd_store_batch_destroy(rows);
    if (err) goto done;
    wd_log(WD_LOG_INFO, "commit",
           "%zu task(s) of this assignment are not at the group's committed position "
           "here: %zu to catch up from standby copies, %zu to restore from the beginning of %s",
           ntasks_restore, ncopies, ntasks_restore - ncopies, tm->conf.changelog_topic);
  } else if (ntasks_restore) {
    if ((err = wd_store_write_sync(tm->store, b))) goto done;
    wd_log(WD_LOG_INFO, "commit",
           "%zu task(s) of this assignment have no local state at the group's committed position: their rows are "
           "rebuilt from the beginning of %zu partition(s), without output until all of a task's partitions reach "
           "the group's committed offsets (a partition that gets there first waits for the others)",
           ntasks_restore, restoring);
  }
  if (nreplay)
    wd_log(WD_LOG_INFO, "commit",
           "%zu partition(s) have their state behind the group's committed offsets (the deferred state flush, "
           "state.flush-interval-ms): their records up to those offsets are read again without output",
           nreplay);
done:
  free(drop);
  free(lead);
  wd_store_batch_destroy(b);
  return err;
}

wd_error_t *wd_taskmgr_init_step(wd_taskmgr_t *tm) {
  if (!tm->init_pending) return NULL;
  size_t n = tm->ntps;
  wd_tp_offset_t *g = calloc(n ? n : 1, sizeof(*g));
  if (!g) return wd_error_nomem();
  for (size_t i = 0; i < n; i++) {
    g[i].topic = tm->tps[i].topic;
    g[i].partition = tm->tps[i].partition;
    g[i].offset = -1;
  }
  /* one request per turn: between tries the loop polls (the member stays in the group; a
   * rebalance meanwhile records the next assignment, and this one is gone) */
  wd_error_t *err = wd_consumer_committed(tm->cons, g, n, wd_stop_budget_ms(tm->stop, 5000));
  if (err) {
    free(g);
    if (err->retriable && wd_stop_expired(tm->stop))
      return wd_stopped_error(err, "reading the consumer group's committed offsets");
    /* at least as long as a transaction holding the group's offsets can stay open (a member
     * killed for good: its offsets are UNSTABLE_OFFSET_COMMIT to a read_committed OffsetFetch until
     * the broker aborts it after transaction.timeout.ms, the members' configured alike) */
    double bound = tm->conf.txn_timeout_ms / 1000.0 + 15;
    if (bound < 60) bound = 60;
    if (wd_stop_retry_transient(
            tm->stop, &tm->init_since, bound,
            "reading the group's committed offsets (the broker away, or an open transaction of a member "
            "that is gone holding them until the broker aborts it)",
            err)) {
      wd_error_destroy(err);
      return NULL;
    }
    return wd_error_wrap(err, "E_RECOVER: cannot read the consumer group's committed offsets");
  }
  err = wd_taskmgr_decide(tm, g);
  free(g);
  if (err) return err;
  /* each partition from where it was decided: always assigned again at that offset first. Where
   * it waits is librdkafka's own reading of the group's committed offset, which is not always the
   * decision's: a partition whose committed offset was held by an open transaction (a killed
   * member's) while a rebalance changed the assignment was started at its beginning, and a
   * restarted member applied its records again (found with two members, per-partition tasks) */
  wd_tp_offset_t *at = NULL;
  size_t nat = 0;
  if ((err = wd_taskmgr_starts(tm, &at, &nat))) return err;
  /* released with the assignment: a release right after it could discard its start
   * (wd_consumer_reassign) */
  if (nat) err = wd_consumer_reassign(tm->cons, at, nat, true);
  free(at);
  return err;
}

int64_t wd_taskmgr_start_offset(wd_taskmgr_t *tm, const char *topic, int32_t partition) {
  wd_ctp_t *t = find_tp(tm, topic, partition);
  if (t) return t->placed;
  /* not announced by on_assign_all (assign mode: replay, which assigns inside wd_consumer_new) */
  int64_t s = -1;
  wd_error_t *err = wd_taskmgr_stored_offset(tm->store, topic, partition, &s);
  if (err) {
    keep_error(tm, err); /* the pipeline stops with it at its next step */
    return WD_OFFSET_END;
  }
  if (!tm->conf.group) return tm->conf.replay_from_stored && s >= 0 ? s : WD_OFFSET_BEGINNING;
  return s >= 0 ? s : WD_OFFSET_STORED;
}

wd_error_t *wd_taskmgr_decide(wd_taskmgr_t *tm, const wd_tp_offset_t *g) {
  tm->init_pending = false;
  int64_t *ends = malloc((tm->ntps ? tm->ntps : 1) * sizeof(*ends));
  if (!ends) return wd_error_nomem();
  for (size_t i = 0; i < tm->ntps; i++) {
    tm->tps[i].group = g[i].offset;
    ends[i] = -1;
  }
  wd_error_t *err = decide_assignment(tm, g, ends);
  if (!err) {
    /* the tasks with their restore ends (re-added): RESTORING, RECONCILING or RUNNING */
    record_tasks(tm, ends);
    decide_tasks(tm);
    err = wd_taskmgr_take_error(tm);
  }
  free(ends);
  settle(tm);
  return err;
}

wd_error_t *wd_taskmgr_starts(const wd_taskmgr_t *tm, wd_tp_offset_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!tm->ntps) return NULL;
  wd_tp_offset_t *at = calloc(tm->ntps, sizeof(*at));
  if (!at) return wd_error_nomem();
  for (size_t i = 0; i < tm->ntps; i++) {
    at[i].topic = tm->tps[i].topic;
    at[i].partition = tm->tps[i].partition;
    at[i].offset = tm->tps[i].start;
  }
  *out = at;
  *n = tm->ntps;
  return NULL;
}

void wd_taskmgr_revoke(wd_taskmgr_t *tm, bool lost) {
  for (size_t i = 0; i < wd_tasks_count(tm->tasks); i++) { /* a rebuild cut short: its rows go */
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    if (task->rebuild == WD_REBUILD_NONE || task->state != WD_TASK_RESTORING) continue;
    /* rows rebuilt from the sources (or old rows restored) are no copy of the changelog: were they
     * kept, a standby copy would continue from them and a later restore start from a mixture */
    wd_store_batch_t *b = wd_store_batch_new();
    wd_error_t *err = b ? wd_state_drop_task(tm->state, task->id, b) : wd_error_nomem();
    if (!err) err = wd_store_write_sync(tm->store, b);
    if (!err) err = wd_standby_forget(tm->conf.standby, task->id);
    wd_store_batch_destroy(b);
    if (err)
      keep_error(tm, wd_error_wrap(err, "dropping the rows of task %" PRIu32 " whose rebuild was cut short", task->id));
    else
      wd_log(WD_LOG_INFO, "rebuild",
             "task %" PRIu32 ": its rebuild was cut short by the rebalance; it starts again "
             "when assigned",
             task->id);
  }
  for (size_t i = 0; i < wd_tasks_count(tm->tasks); i++) {
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    if (task->state == WD_TASK_CREATED) move_task(tm, task, WD_TASK_CLOSED, lost ? "lost" : "revoked");
    else if (task->state == WD_TASK_RESTORING || task->state == WD_TASK_RECONCILING || task->state == WD_TASK_RUNNING)
      /* revoked: SUSPENDED, its state kept and trusted when it comes back (kept_task); lost: closed
       * (Kafka Streams closes such tasks dirty), as another process may own it already. Either
       * way its standby copy is kept warm from now on (wd_tasks_active). */
      move_task(tm, task, lost ? WD_TASK_CLOSED : WD_TASK_SUSPENDED, lost ? "its partitions were lost" : "revoked");
  }
  wd_tasks_clear_partitions(tm->tasks);
  if (tm->rs) { /* a restore cut short: its tasks' offsets are gone, so it starts again when assigned */
    wd_log(WD_LOG_INFO, "commit", "the rebalance stops the restore of %zu task(s) from %s", wd_restorer_left(tm->rs),
           tm->conf.changelog_topic);
    wd_restorer_destroy(tm->rs);
    tm->rs = NULL;
  }
  tm->holds_dirty = false;
  tm->init_pending = false; /* an assignment not yet decided: gone with it */
  tm->ntps = 0;
  settle(tm);
}

void wd_taskmgr_abort_reconciles(wd_taskmgr_t *tm) {
  /* lookups under per-partition tasks: the reconciles the commit held are taken back with it, so
   * each running task is reconciled again before its next record (docs/lookups-scale-out.md) */
  for (size_t i = 0; tm->reconcile && i < wd_tasks_count(tm->tasks); i++) {
    wd_task_t *task = wd_tasks_at(tm->tasks, i);
    if (task->state == WD_TASK_RUNNING && task->reconcile)
      move_task(tm, task, WD_TASK_RECONCILING, "the abort took back its reconcile");
  }
  settle(tm);
}

bool wd_taskmgr_task_rebuilding(wd_taskmgr_t *tm, uint32_t id) {
  wd_task_t *t = wd_tasks_find(tm->tasks, id);
  return t && t->rebuild != WD_REBUILD_NONE;
}

bool wd_taskmgr_below_group_end(const wd_taskmgr_t *tm, const char *topic, int32_t partition, int64_t next) {
  const wd_ctp_t *t = find_tp(tm, topic, partition);
  return t && next <= t->g_end;
}

wd_error_t *wd_taskmgr_committed_positions(wd_taskmgr_t *tm, wd_tp_offset_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!tm->ntps) return NULL;
  wd_tp_offset_t *to = calloc(tm->ntps, sizeof(*to));
  if (!to) return wd_error_nomem();
  for (size_t i = 0; i < tm->ntps; i++) {
    to[i].topic = tm->tps[i].topic;
    to[i].partition = tm->tps[i].partition;
    int64_t s = -1;
    wd_error_t *err = wd_taskmgr_stored_offset(tm->store, tm->tps[i].topic, tm->tps[i].partition, &s);
    if (err) {
      free(to);
      return err;
    }
    /* never before where the assignment started it (the group's offset): a task restoring from
     * the state changelog has no stored offsets yet, and a stateless partition may keep an older
     * one from an earlier ownership; records before the start are not this commit's */
    if (tm->tps[i].start >= 0 && s < tm->tps[i].start) s = tm->tps[i].start;
    to[i].offset = s >= 0 ? s : -1; /* -1: the beginning (wd_consumer_seek) */
  }
  *out = to;
  *n = tm->ntps;
  return NULL;
}

wd_error_t *wd_taskmgr_rewound(wd_taskmgr_t *tm, const wd_tp_offset_t *to, size_t n) {
  wd_error_t *err = NULL;
  for (size_t i = 0; i < n && !err; i++) {
    if (is_stateless(tm, to[i].topic)) continue;
    wd_task_t *task = wd_tasks_find(tm->tasks, task_of(tm, to[i].partition));
    if (!task || task->rebuild != WD_REBUILD_NONE) continue;
    wd_task_part_t *pt = wd_task_partition(task, to[i].topic, to[i].partition);
    if (!pt) continue;
    bool held = pt->held_at >= 0;
    int64_t end = pt->restore_end;
    bool below = wd_task_part_rewound(task, pt, to[i].offset);
    /* WD_OFFSET_STORED: resumed where the rewind's seek placed it */
    if (held && tm->cons) err = wd_consumer_release_partition(tm->cons, to[i].topic, to[i].partition, WD_OFFSET_STORED);
    if (below && (task->state == WD_TASK_RUNNING || task->state == WD_TASK_RECONCILING)) {
      char why[224];
      snprintf(why, sizeof(why),
               "an aborted commit took back records of %s[%" PRId32 "] below %" PRId64
               ", the group's committed offset its rows were rebuilt up to: read again from %s without output",
               to[i].topic, to[i].partition, end,
               to[i].offset >= 0 ? "the offset stored with the state" : "the beginning");
      move_task(tm, task, WD_TASK_RESTORING, why);
    }
  }
  settle(tm);
  return err; /* an illegal move is kept (keep_error): the pipeline stops with it at its next step */
}

int64_t wd_taskmgr_group_offset(const wd_taskmgr_t *tm, const char *topic, int32_t partition) {
  const wd_ctp_t *t = find_tp(tm, topic, partition);
  return t ? t->group : -1;
}

wd_error_t *wd_taskmgr_rebuild_sources(wd_taskmgr_t *tm, uint32_t id) {
  wd_task_t *task = wd_tasks_find(tm->tasks, id);
  if (!task || task->rebuild != WD_REBUILD_STAGE) return NULL;
  wd_error_t *err = NULL;
  size_t n = task->nparts;
  wd_tp_offset_t *to = calloc(n ? n : 1, sizeof(*to));
  if (!to) return wd_error_nomem();
  for (size_t k = 0; k < n; k++) {
    wd_task_part_t *pt = &task->parts[k];
    wd_ctp_t *t = find_tp(tm, pt->topic, pt->partition);
    int64_t g = t ? t->group : -1;
    if (!wd_task_add_partition(task, pt->topic, pt->partition, g > 0 ? g : -1)) { /* reached, held_at reset */
      free(to);
      return wd_error_nomem();
    }
    if (t) {
      t->start = WD_OFFSET_BEGINNING; /* an abort rewinds to the stored offsets, or the beginning */
      t->g_end = g > 0 ? g : -1;
    }
    to[k] = (wd_tp_offset_t){pt->topic, pt->partition, -1}; /* -1: the beginning */
  }
  task->rebuild = task->unreached ? WD_REBUILD_SOURCES : WD_REBUILD_DIFF;
  if (tm->cons && n) err = wd_consumer_seek(tm->cons, to, n);
  for (size_t k = 0; k < n && !err; k++)
    err = wd_consumer_release_partition(tm->cons, task->parts[k].topic, task->parts[k].partition, -1);
  free(to);
  settle(tm);
  if (!err)
    wd_log(WD_LOG_INFO, "rebuild",
           "task %" PRIu32 ": rebuilding its rows from the sources' earliest offsets up to "
           "the group's committed offsets of its %zu partition(s), without output",
           id, n);
  return err;
}

wd_error_t *wd_taskmgr_rebuild_done(wd_taskmgr_t *tm, uint32_t id) {
  wd_task_t *task = wd_tasks_find(tm->tasks, id);
  if (!task) return NULL;
  task->rebuild = WD_REBUILD_NONE;
  wd_error_t *err = wd_task_move(task, WD_TASK_RUNNING, "rebuilt: its difference is emitted and its rows switched");
  if (!err) task_now_running(tm, task);
  tm->holds_dirty = true; /* its held partitions are released after the next batch */
  settle(tm);
  return err;
}
