/*
 * tests/unit/test_tasks.c — app/runtime/tasks.h: the table of legal task moves (every illegal move refused,
 * the state kept), and the gate driven by a fake consumer: a RESTORING task produces nothing until
 * all its partitions reached the group's offsets, and its held partitions, read again from their
 * first held record, give every record exactly once and in order.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/tasks.h"

static const wd_task_state_t S[] = {WD_TASK_CREATED,   WD_TASK_RESTORING, WD_TASK_RECONCILING, WD_TASK_RUNNING,
                                    WD_TASK_SUSPENDED, WD_TASK_STANDBY,   WD_TASK_CLOSED};

/* the table of app/runtime/tasks.h, written out again as pairs */
static bool documented(wd_task_state_t a, wd_task_state_t b) {
  static const struct {
    wd_task_state_t from, to;
  } legal[] = {
      {WD_TASK_CREATED, WD_TASK_RESTORING},     {WD_TASK_CREATED, WD_TASK_RECONCILING},
      {WD_TASK_CREATED, WD_TASK_RUNNING},       {WD_TASK_CREATED, WD_TASK_CLOSED},
      {WD_TASK_RESTORING, WD_TASK_RECONCILING}, {WD_TASK_RESTORING, WD_TASK_RUNNING},
      {WD_TASK_RESTORING, WD_TASK_SUSPENDED},   {WD_TASK_RESTORING, WD_TASK_CLOSED},
      {WD_TASK_RECONCILING, WD_TASK_RUNNING},   {WD_TASK_RECONCILING, WD_TASK_SUSPENDED},
      {WD_TASK_RECONCILING, WD_TASK_RESTORING}, {WD_TASK_RUNNING, WD_TASK_RESTORING},
      {WD_TASK_RECONCILING, WD_TASK_CLOSED},    {WD_TASK_RUNNING, WD_TASK_SUSPENDED},
      {WD_TASK_RUNNING, WD_TASK_RECONCILING},   {WD_TASK_RUNNING, WD_TASK_CLOSED},
      {WD_TASK_SUSPENDED, WD_TASK_CREATED},     {WD_TASK_SUSPENDED, WD_TASK_STANDBY},
      {WD_TASK_SUSPENDED, WD_TASK_CLOSED},      {WD_TASK_STANDBY, WD_TASK_CREATED},
      {WD_TASK_STANDBY, WD_TASK_CLOSED},        {WD_TASK_CLOSED, WD_TASK_CREATED},
      {WD_TASK_CLOSED, WD_TASK_STANDBY},
  };
  for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
    if (legal[i].from == a && legal[i].to == b) return true;
  return false;
}

Test(tasks, every_move_is_legal_exactly_as_documented) {
  size_t nlegal = 0;
  for (size_t i = 0; i < 7; i++)
    for (size_t j = 0; j < 7; j++) {
      if (i == j) continue;
      cr_assert_eq(wd_task_move_legal(S[i], S[j]), documented(S[i], S[j]), "%s -> %s", wd_task_state_name(S[i]),
                   wd_task_state_name(S[j]));
      nlegal += documented(S[i], S[j]);
    }
  cr_assert_eq(nlegal, 23);
  cr_assert_not(wd_task_move_legal((wd_task_state_t)99, WD_TASK_RUNNING));
  cr_assert_str_eq(wd_task_state_name((wd_task_state_t)99), "?");
}

/* Each illegal move, one by one: refused with E_TASK_TRANSITION, the task keeps its state. */
Test(tasks, each_illegal_move_is_refused_and_the_state_kept) {
  size_t refused = 0;
  for (size_t i = 0; i < 7; i++)
    for (size_t j = 0; j < 7; j++) {
      if (i == j || documented(S[i], S[j])) continue;
      wd_task_t task = {.id = 3, .state = S[i]};
      wd_error_t *err = wd_task_move(&task, S[j], "test");
      cr_assert_not_null(err, "%s -> %s was taken", wd_task_state_name(S[i]), wd_task_state_name(S[j]));
      cr_assert_str_eq(err->id, "E_TASK_TRANSITION");
      cr_assert_eq(err->cls, WD_ERR_INTERNAL);
      cr_assert(strstr(err->message, wd_task_state_name(S[i])) && strstr(err->message, wd_task_state_name(S[j])), "%s",
                err->message);
      cr_assert_eq(task.state, S[i]);
      wd_error_destroy(err);
      refused++;
    }
  cr_assert_eq(refused, 42 - 23);
}

Test(tasks, a_lifecycle_of_legal_moves) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 7);
  cr_assert_not_null(task);
  cr_assert_eq(task->state, WD_TASK_CLOSED);
  cr_assert_eq(wd_tasks_ensure(t, 7), task, "ensure finds the task it made");
  const wd_task_state_t path[] = {WD_TASK_CREATED, WD_TASK_RESTORING, WD_TASK_RECONCILING,
                                  WD_TASK_RUNNING, WD_TASK_SUSPENDED, WD_TASK_STANDBY,
                                  WD_TASK_CREATED, WD_TASK_RUNNING,   WD_TASK_CLOSED};
  for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
    cr_assert_null(wd_task_move(task, path[i], NULL));
    cr_assert_eq(task->state, path[i]);
  }
  /* pointers stay valid while the table grows */
  for (uint32_t id = 100; id < 400; id++) cr_assert_not_null(wd_tasks_ensure(t, id));
  cr_assert_eq(wd_tasks_find(t, 7), task);
  cr_assert_eq(wd_tasks_count(t), 301);
  cr_assert_null(wd_tasks_find(t, 99));
  wd_tasks_destroy(t);
}

/* ---- the gate with a fake consumer ------------------------------------------------------------ */

#define NP 4
#define PER 40 /* records per partition */

typedef struct {
  int64_t pos[NP]; /* the next offset each partition delivers */
  bool paused[NP];
} fake_consumer_t;

/* One partition's next record, or -1 when it has none left or is paused. */
static int64_t fake_next(fake_consumer_t *fc, int p) {
  if (fc->paused[p] || fc->pos[p] >= PER) return -1;
  return fc->pos[p]++;
}

static void gate_run(unsigned seed, const int64_t *restore_end) {
  const char *topics[NP] = {"orders", "payments", "shipments", "orders"};
  const int32_t parts[NP] = {0, 0, 0, 1};
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 0);
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, "assigned"));
  for (int p = 0; p < NP; p++) cr_assert_not_null(wd_task_add_partition(task, topics[p], parts[p], restore_end[p]));
  cr_assert_null(wd_task_move(task, task->unreached ? WD_TASK_RESTORING : WD_TASK_RUNNING, NULL));
  fake_consumer_t fc = {{0}, {false}};
  int64_t taken[NP]; /* next offset the pipeline expects to take, per partition */
  bool run_seen = false;
  size_t restored = 0, ran = 0;
  for (int p = 0; p < NP; p++) taken[p] = 0;
  srand(seed);
  for (int round = 0; round < 10000; round++) {
    /* a batch: a few records of random partitions, in delivery order */
    int batch = 1 + rand() % 12;
    for (int k = 0; k < batch; k++) {
      int p = rand() % NP;
      int64_t off = fake_next(&fc, p);
      if (off < 0) continue;
      wd_task_part_t *pt = wd_task_partition(task, topics[p], parts[p]);
      cr_assert_not_null(pt);
      bool now = false;
      wd_gate_t g = wd_task_gate(task, pt, off, &now);
      if (g == WD_GATE_HOLD) {
        cr_assert_neq(task->state == WD_TASK_RUNNING && pt->held_at < 0, true);
        continue;
      }
      /* taken: exactly the next record of its partition, never one twice or out of order */
      cr_assert_eq(off, taken[p], "partition %d: took %lld, expected %lld", p, (long long)off, (long long)taken[p]);
      taken[p]++;
      if (g == WD_GATE_RESTORE) {
        cr_assert_not(run_seen, "a record rebuilt state after output began");
        cr_assert_lt(off, restore_end[p]);
        restored++;
      } else {
        /* output only once every partition has reached its restore end */
        for (int q = 0; q < NP; q++)
          cr_assert(taken[q] >= restore_end[q] || fc.pos[q] >= restore_end[q],
                    "output at partition %d while partition %d is at %lld of %lld", p, q, (long long)taken[q],
                    (long long)restore_end[q]);
        run_seen = true;
        ran++;
      }
    }
    /* after the batch (wd_commit_after_batch): held partitions are moved back and paused, or,
     * once the task runs, moved back and resumed; a partition whose position reached its restore
     * end without a record past it counts as caught up */
    for (size_t k = 0; k < task->nparts && task->state == WD_TASK_RESTORING; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (!pt->reached && taken[k] >= pt->restore_end && wd_task_part_reached(task, pt))
        cr_assert_null(wd_task_move(task, WD_TASK_RUNNING, NULL));
    }
    for (size_t k = 0; k < task->nparts; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (pt->held_at < 0) continue;
      fc.pos[k] = pt->held_at;
      fc.paused[k] = task->state != WD_TASK_RUNNING;
      if (task->state == WD_TASK_RUNNING) pt->held_at = -1;
    }
    bool done = true;
    for (int p = 0; p < NP; p++) done = done && taken[p] == PER;
    if (done) break;
  }
  for (int p = 0; p < NP; p++) cr_assert_eq(taken[p], PER, "partition %d ended at %lld", p, (long long)taken[p]);
  size_t want_restored = 0;
  for (int p = 0; p < NP; p++) want_restored += restore_end[p] > 0 ? (size_t)restore_end[p] : 0;
  cr_assert_eq(restored, want_restored);
  cr_assert_eq(ran, NP * PER - want_restored);
  cr_assert_eq(task->state, WD_TASK_RUNNING);
  wd_tasks_destroy(t);
}

Test(tasks, the_gate_gives_output_only_after_every_partition_caught_up) {
  const int64_t ends[][NP] = {{10, 30, 5, 20}, {39, 1, 1, 1}, {0, 0, 25, 0}, {40, 40, 40, 40}, {0, 0, 0, 0}};
  for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++)
    for (unsigned seed = 1; seed <= 40; seed++) gate_run(seed * 7919u + (unsigned)e, ends[e]);
}

/* A partition re-added with another restore end is counted once. */
Test(tasks, re_adding_a_partition_counts_it_once) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 1);
  cr_assert_not_null(wd_task_add_partition(task, "a", 1, 10));
  cr_assert_not_null(wd_task_add_partition(task, "a", 1, 12));
  cr_assert_not_null(wd_task_add_partition(task, "b", 1, 0));
  cr_assert_eq(task->nparts, 2);
  cr_assert_eq(task->unreached, 1);
  wd_task_part_t *pt = wd_task_partition(task, "a", 1);
  cr_assert_eq(pt->restore_end, 12);
  cr_assert(wd_task_part_reached(task, pt));
  cr_assert_not(wd_task_part_reached(task, pt), "reached twice");
  cr_assert_eq(task->unreached, 0);
  wd_tasks_clear_partitions(t);
  cr_assert_eq(task->nparts, 0);
  wd_tasks_destroy(t);
}

/* An abort rewinds a running task's partitions to the offsets stored with its state. A partition
 * rewound below its restore end has not reached it any more (its records there rebuild state
 * again, without output: the task goes back to RESTORING); one rewound at or past it stays
 * reached; a held partition is no longer held (the consumer reads it again from the rewind). Then
 * the gate restores up to the end, holds the partition that gets there first, and runs once the
 * last one does: every record of [rewind, end) without output, none skipped. */
Test(tasks, a_rewind_below_the_restore_end_restores_again_without_output) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 4);
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, "assigned"));
  wd_task_part_t *a = wd_task_add_partition(task, "orders", 4, 10), *b = wd_task_add_partition(task, "payments", 4, 6),
                 *c = wd_task_add_partition(task, "shipments", 4, 0);
  cr_assert_null(wd_task_move(task, WD_TASK_RESTORING, NULL));
  bool now = false;
  for (int64_t off = 0; off < 6; off++) cr_assert_eq(wd_task_gate(task, b, off, &now), WD_GATE_RESTORE);
  cr_assert_eq(wd_task_gate(task, b, 6, &now), WD_GATE_HOLD, "b first at its end: held");
  cr_assert_eq(b->held_at, 6);
  for (int64_t off = 0; off < 10; off++) cr_assert_eq(wd_task_gate(task, a, off, &now), WD_GATE_RESTORE);
  cr_assert_eq(wd_task_gate(task, a, 10, &now), WD_GATE_RUN);
  cr_assert(now);
  cr_assert_eq(task->state, WD_TASK_RUNNING);
  cr_assert_eq(task->unreached, 0);
  /* the commit with [4, 10) of a and [2, 6) of b aborts: rewound to the stored 4 and 2, c to its 7 */
  cr_assert(wd_task_part_rewound(task, a, 4), "a below its end");
  cr_assert(wd_task_part_rewound(task, b, 2), "b below its end");
  cr_assert_not(wd_task_part_rewound(task, c, 7), "c has no restore end");
  cr_assert_eq(task->unreached, 2);
  cr_assert_eq(b->held_at, -1, "no longer held: read again from 2");
  cr_assert_not(a->reached);
  cr_assert(c->reached);
  cr_assert_null(wd_task_move(task, WD_TASK_RESTORING, "rewound"));
  cr_assert_eq(task->restores, 2);
  for (int64_t off = 2; off < 6; off++) cr_assert_eq(wd_task_gate(task, b, off, &now), WD_GATE_RESTORE);
  cr_assert_eq(wd_task_gate(task, b, 6, &now), WD_GATE_HOLD);
  cr_assert_eq(wd_task_gate(task, c, 7, &now), WD_GATE_HOLD, "reached, the task restoring: held");
  for (int64_t off = 4; off < 10; off++) cr_assert_eq(wd_task_gate(task, a, off, &now), WD_GATE_RESTORE);
  cr_assert_not(now);
  cr_assert_eq(wd_task_gate(task, a, 10, &now), WD_GATE_RUN);
  cr_assert(now);
  cr_assert_eq(task->state, WD_TASK_RUNNING);
  /* a rewind to the beginning (nothing stored) is below any restore end; to the end is not */
  cr_assert(wd_task_part_rewound(task, a, -1));
  cr_assert_not(wd_task_part_rewound(task, b, 6));
  cr_assert_eq(task->unreached, 1);
  /* a RECONCILING task goes back too */
  cr_assert_null(wd_task_move(task, WD_TASK_RECONCILING, "abort"));
  cr_assert_null(wd_task_move(task, WD_TASK_RESTORING, "rewound"));
  wd_tasks_destroy(t);
}

/* A task being rebuilt (app/runtime/rebuild.h) holds every record while its old rows are
 * staged and while its switch is made; from the sources it rebuilds below the group's offsets, and
 * the record that brings its last partition there is held (DIFF), never run: no output before the
 * switch. A revoke starts the rebuild over (the phase and the round). */
Test(tasks, a_rebuilding_task_gives_no_output_before_its_switch) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 2);
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, "assigned"));
  wd_task_part_t *a = wd_task_add_partition(task, "orders", 2, 5), *b = wd_task_add_partition(task, "payments", 2, 3);
  cr_assert_null(wd_task_move(task, WD_TASK_RESTORING, NULL));
  task->rebuild = WD_REBUILD_STAGE;
  bool now = false;
  cr_assert_eq(wd_task_gate(task, a, 0, &now), WD_GATE_HOLD, "staging: held");
  cr_assert_eq(a->held_at, 0);
  a->held_at = -1; /* the sources phase moves the partitions back to their beginning */
  task->rebuild = WD_REBUILD_SOURCES;
  for (int64_t off = 0; off < 3; off++) {
    cr_assert_eq(wd_task_gate(task, b, off, &now), WD_GATE_RESTORE);
    cr_assert_not(now);
  }
  cr_assert_eq(wd_task_gate(task, b, 3, &now), WD_GATE_HOLD, "b reached, a not yet: held");
  for (int64_t off = 0; off < 5; off++) cr_assert_eq(wd_task_gate(task, a, off, &now), WD_GATE_RESTORE);
  cr_assert_eq(wd_task_gate(task, a, 5, &now), WD_GATE_HOLD, "the last partition reached: the switch first");
  cr_assert_not(now, "a rebuilding task never moves to RUNNING at the gate");
  cr_assert_eq(task->rebuild, WD_REBUILD_DIFF);
  cr_assert_eq(task->state, WD_TASK_RESTORING);
  a->held_at = -1;
  cr_assert_eq(wd_task_gate(task, a, 5, &now), WD_GATE_HOLD, "switching: held");
  unsigned round = task->round;
  wd_tasks_clear_partitions(t);
  cr_assert_eq(task->rebuild, WD_REBUILD_NONE);
  cr_assert_eq(task->round, round + 1);
  wd_tasks_destroy(t);
}

/* Lookups under per-partition tasks: a task with `reconcile` set that catches up
 * goes to RECONCILING, not RUNNING, and holds every record until it is reconciled (the record that
 * brought it there included); an abort that takes back its reconcile moves RUNNING back to it. */
Test(tasks, a_task_with_lookups_is_reconciled_before_its_first_record) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 3);
  task->reconcile = true;
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, "assigned"));
  wd_task_part_t *a = wd_task_add_partition(task, "orders", 3, 4);
  cr_assert_null(wd_task_move(task, WD_TASK_RESTORING, NULL));
  bool now = false;
  for (int64_t off = 0; off < 4; off++) cr_assert_eq(wd_task_gate(task, a, off, &now), WD_GATE_RESTORE);
  cr_assert_eq(wd_task_gate(task, a, 4, &now), WD_GATE_HOLD, "caught up: reconciled before this record");
  cr_assert(now);
  cr_assert_eq(task->state, WD_TASK_RECONCILING);
  cr_assert_eq(a->held_at, 4);
  a->held_at = -1; /* read again after the reconcile */
  cr_assert_eq(wd_task_gate(task, a, 4, &now), WD_GATE_HOLD, "still reconciling: held");
  cr_assert_null(wd_task_move(task, WD_TASK_RUNNING, "reconciled"));
  a->held_at = -1;
  cr_assert_eq(wd_task_gate(task, a, 4, &now), WD_GATE_RUN);
  cr_assert_null(wd_task_move(task, WD_TASK_RECONCILING, "an abort took back its reconcile"));
  cr_assert_eq(wd_task_gate(task, a, 5, &now), WD_GATE_HOLD);
  wd_tasks_destroy(t);
}

/* kept_task (app/runtime/commit.c) trusts a task's local rows only when it was in the assignment
 * revoked last: wd_task_move records whether CREATED came from SUSPENDED. */
Test(tasks, created_remembers_whether_it_came_from_suspended) {
  wd_tasks_t *t = NULL;
  cr_assert_null(wd_tasks_new(&t));
  wd_task_t *task = wd_tasks_ensure(t, 0);
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, NULL));
  cr_assert_not(task->was_suspended, "CLOSED -> CREATED");
  cr_assert_null(wd_task_move(task, WD_TASK_RUNNING, NULL));
  cr_assert_null(wd_task_move(task, WD_TASK_SUSPENDED, NULL));
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, NULL));
  cr_assert(task->was_suspended, "SUSPENDED -> CREATED");
  cr_assert_null(wd_task_move(task, WD_TASK_CLOSED, NULL));
  cr_assert_null(wd_task_move(task, WD_TASK_STANDBY, NULL));
  cr_assert_null(wd_task_move(task, WD_TASK_CREATED, NULL));
  cr_assert_not(task->was_suspended, "STANDBY -> CREATED");
  wd_tasks_destroy(t);
}
