/*
 * tests/unit/test_task_manager.c — app/runtime/task_manager.h driven without a broker: the
 * assignment recorded from an in-memory store, decided with fake group offsets
 * (wd_taskmgr_decide), each record gated, and the revoke. Shows that
 *   - without a group (replay) and at-least-once the stored offsets decide at once: RUNNING;
 *   - under exactly-once a task whose stored offsets equal the group's runs, one that is behind
 *     RESTORING: its records below the group's offset only rebuild state (RESTORE), and the task
 *     produces output only once every partition reached its group offset (a partition there first
 *     is held, HOLD);
 *   - the rebuild's offsets up to the group's are never sent to the transaction;
 *   - a revoke suspends the running tasks, a lost assignment closes them, and a task that comes
 *     back after a revoke is CREATED from SUSPENDED and decided again.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/commit.h"
#include "app/runtime/task_manager.h"
#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

#define ok(e)                                                                                                          \
  do {                                                                                                                 \
    wd_error_t *err_ = (e);                                                                                            \
    cr_assert_null(err_, "%s", err_ ? err_->message : "");                                                             \
  } while (0)

static const char *const TOPICS[] = {"a", "b"};

typedef struct {
  wd_table_t *t;
  wd_store_t *st;
  wd_state_t *s;
  wd_stop_clock_t stop;
  wd_taskmgr_t *tm;
} fix_t;

static void fix_open(fix_t *f, bool exactly_once, bool group, bool per_partition) {
  const char *names[] = {"k", "v"};
  const char *types[] = {"INT", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  memset(f, 0, sizeof(*f));
  ok(wd_schema_new(2, names, types, 1, pk, &sc));
  ok(wd_table_new(sc, 0, NULL, &f->t));
  ok(wd_store_open_memory(&f->st));
  cr_assert_not_null(f->s = wd_state_new(f->t, f->st, 0));
  wd_commit_conf_t conf = {.exactly_once = exactly_once,
                           .group = group,
                           .per_partition = per_partition,
                           .txn_timeout_ms = 60000,
                           .topics = TOPICS,
                           .ntopics = 2};
  f->stop.txn_timeout_ms = 60000;
  ok(wd_taskmgr_new(&conf, f->s, f->st, &f->stop, &f->tm));
}

static void fix_close(fix_t *f) {
  wd_taskmgr_destroy(f->tm);
  wd_state_destroy(f->s);
  wd_store_close(f->st);
  wd_table_destroy(f->t);
}

static void store_offset(fix_t *f, const char *topic, int32_t partition, int64_t next) {
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_offset(b, topic, partition, next), 0);
  ok(wd_store_write_sync(f->st, b));
  wd_store_batch_destroy(b);
}

static wd_task_state_t state_of(fix_t *f, uint32_t id) {
  wd_task_t *t = wd_tasks_find(wd_taskmgr_tasks(f->tm), id);
  cr_assert_not_null(t, "task %u not in the table", id);
  return t->state;
}

Test(task_manager, without_a_group_the_stored_offsets_decide_at_once) {
  fix_t f;
  fix_open(&f, false, false, false);
  store_offset(&f, "a", 0, 17);
  const wd_tp_offset_t parts[] = {{"a", 0, -1}, {"a", 1, -1}};
  cr_assert_not(wd_taskmgr_assign(f.tm, parts, 2)); /* not held: decided here */
  ok(wd_taskmgr_take_error(f.tm));
  cr_assert_not(wd_taskmgr_initialising(f.tm));
  cr_assert_eq(state_of(&f, 0), WD_TASK_RUNNING); /* one task for all partitions */
  /* replay without replay_from_stored: from the beginning */
  cr_assert_eq(wd_taskmgr_start_offset(f.tm, "a", 0), WD_OFFSET_BEGINNING);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 5), WD_GATE_RUN);
  wd_taskmgr_revoke(f.tm, false);
  cr_assert_eq(state_of(&f, 0), WD_TASK_SUSPENDED);
  cr_assert_not(wd_taskmgr_assign(f.tm, parts, 2));
  wd_task_t *t = wd_tasks_find(wd_taskmgr_tasks(f.tm), 0);
  cr_assert(t->was_suspended); /* kept across the rebalance */
  cr_assert_eq(t->state, WD_TASK_RUNNING);
  wd_taskmgr_revoke(f.tm, true);
  cr_assert_eq(state_of(&f, 0), WD_TASK_CLOSED); /* lost: closed, another process may own it */
  fix_close(&f);
}

Test(task_manager, exactly_once_runs_a_task_at_the_group_offsets_and_rebuilds_one_behind) {
  fix_t f;
  fix_open(&f, true, true, true);
  store_offset(&f, "a", 0, 10); /* task 0: stored 10 */
  store_offset(&f, "b", 0, 4);
  /* task 1: nothing stored */
  const wd_tp_offset_t parts[] = {{"a", 0, -1}, {"b", 0, -1}, {"a", 1, -1}, {"b", 1, -1}};
  cr_assert(wd_taskmgr_assign(f.tm, parts, 4)); /* held: the group's offsets decide */
  cr_assert(wd_taskmgr_initialising(f.tm));
  cr_assert_eq(state_of(&f, 0), WD_TASK_CREATED);
  cr_assert_eq(state_of(&f, 1), WD_TASK_CREATED);
  /* held at the stored offset, else 0 */
  cr_assert_eq(wd_taskmgr_start_offset(f.tm, "a", 0), 10);
  cr_assert_eq(wd_taskmgr_start_offset(f.tm, "a", 1), 0);
  const wd_tp_offset_t g[] = {{"a", 0, 10}, {"b", 0, 4}, {"a", 1, 20}, {"b", 1, 30}};
  ok(wd_taskmgr_decide(f.tm, g));
  cr_assert_not(wd_taskmgr_initialising(f.tm));
  cr_assert_eq(state_of(&f, 0), WD_TASK_RUNNING);
  cr_assert_eq(state_of(&f, 1), WD_TASK_RESTORING);
  wd_tp_offset_t *at = NULL;
  size_t n = 0;
  ok(wd_taskmgr_starts(f.tm, &at, &n));
  cr_assert_eq(n, 4);
  cr_assert_eq(at[0].offset, 10);
  cr_assert_eq(at[1].offset, 4);
  cr_assert_eq(at[2].offset, WD_OFFSET_BEGINNING); /* rebuilt from the beginning */
  cr_assert_eq(at[3].offset, WD_OFFSET_BEGINNING);
  free(at);
  cr_assert_eq(wd_taskmgr_group_offset(f.tm, "b", 1), 30);
  /* the rebuild's offsets up to the group's are not sent to the transaction */
  cr_assert(wd_taskmgr_below_group_end(f.tm, "a", 1, 20));
  cr_assert_not(wd_taskmgr_below_group_end(f.tm, "a", 1, 21));
  cr_assert_not(wd_taskmgr_below_group_end(f.tm, "a", 0, 5));
  /* the running task's records run; the restoring one's only rebuild state */
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 0, 10), WD_GATE_RUN);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 0), WD_GATE_RESTORE);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 19), WD_GATE_RESTORE);
  /* a's partition reaches its group offset first: held until b's does too */
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 20), WD_GATE_HOLD);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 21), WD_GATE_HOLD);
  cr_assert_eq(state_of(&f, 1), WD_TASK_RESTORING);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "b", 1, 29), WD_GATE_RESTORE);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "b", 1, 30), WD_GATE_RUN); /* the last one: the task runs */
  cr_assert_eq(state_of(&f, 1), WD_TASK_RUNNING);
  /* the held partition stays held until the after-batch release (a consumer's job) */
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 22), WD_GATE_HOLD);
  ok(wd_taskmgr_take_error(f.tm));
  /* the revoke suspends both; the next assignment makes them CREATED again, to decide */
  wd_taskmgr_revoke(f.tm, false);
  cr_assert_eq(state_of(&f, 0), WD_TASK_SUSPENDED);
  cr_assert_eq(state_of(&f, 1), WD_TASK_SUSPENDED);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 1, 22), WD_GATE_RUN); /* no assignment: nothing gated */
  cr_assert(wd_taskmgr_assign(f.tm, parts, 2));
  cr_assert_eq(state_of(&f, 0), WD_TASK_CREATED);
  cr_assert_eq(state_of(&f, 1), WD_TASK_CLOSED); /* not assigned here, no standby copies */
  fix_close(&f);
}

Test(task_manager, a_task_the_group_never_committed_runs_without_a_rebuild) {
  fix_t f;
  fix_open(&f, true, true, true);
  const wd_tp_offset_t parts[] = {{"a", 2, -1}};
  cr_assert(wd_taskmgr_assign(f.tm, parts, 1));
  const wd_tp_offset_t g[] = {{"a", 2, -1}};
  ok(wd_taskmgr_decide(f.tm, g));
  cr_assert_eq(state_of(&f, 2), WD_TASK_RUNNING);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 2, 0), WD_GATE_RUN);
  fix_close(&f);
}

Test(task_manager, an_abort_takes_back_the_reconciles) {
  fix_t f;
  fix_open(&f, true, true, true);
  wd_taskmgr_set_reconcile(f.tm, true);
  const wd_tp_offset_t parts[] = {{"a", 0, -1}};
  cr_assert(wd_taskmgr_assign(f.tm, parts, 1));
  const wd_tp_offset_t g[] = {{"a", 0, -1}};
  ok(wd_taskmgr_decide(f.tm, g));
  cr_assert_eq(state_of(&f, 0), WD_TASK_RECONCILING);
  cr_assert_eq(wd_taskmgr_gate(f.tm, "a", 0, 0), WD_GATE_HOLD); /* reconciled before its first record */
  uint32_t id = 99;
  cr_assert(wd_taskmgr_next_reconcile(f.tm, &id));
  cr_assert_eq(id, 0);
  ok(wd_taskmgr_reconciled(f.tm, 0));
  cr_assert_eq(state_of(&f, 0), WD_TASK_RUNNING);
  cr_assert_not(wd_taskmgr_next_reconcile(f.tm, &id));
  wd_taskmgr_abort_reconciles(f.tm);
  cr_assert_eq(state_of(&f, 0), WD_TASK_RECONCILING);
  fix_close(&f);
}
