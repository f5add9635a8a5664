/*
 * app/runtime/commit.c — the commit coordinator: the commit protocol of docs/exactly-once.md (commit.h).
 *
 * What lives where: the task table and the assignment are the task manager's (task_manager.c),
 * the state changelog restores the restorer's (restorer.c), the prepared marker's bytes the
 * marker codec's (marker.c), recovery at start recovery.c's, the WIDEN_FAULT hook fault.c's, the
 * stop budget stop_clock.c's. This file keeps the protocol: a commit's phases and the open commit,
 * and the consumer callbacks (which complete or abort the open commit, then hand the assignment to
 * the task manager). commit_end.c holds how a commit ends otherwise (an abort, a transaction that
 * commits in the background, an unknown outcome resolved); the two share commit_int.h.
 *
 * The phases. A commit moves IDLE -> OPEN -> SNAPPED -> [PREPARED -> OFFSETS_SENT] -> COMMITTED
 * -> IDLE, each move through commit_set_phase(), which checks it against phase_legal[] (an illegal
 * one is a bug: E_COMMIT_PHASE stops the pipeline) and logs it at DEBUG (the "commit" unit). Every
 * phase has one function (phase_open, phase_snapped, phase_prepared, phase_offsets_sent,
 * phase_committed); commit_run_phases() calls the current phase's function until the commit is
 * IDLE, an error or an abort. An abort (commit_abort) moves any phase back to IDLE.
 *
 *   IDLE ---first input / output---> OPEN ---snapshot---> SNAPPED
 *   SNAPPED ---prepare (exactly-once, offsets or marker)---> PREPARED ---send offsets---> OFFSETS_SENT
 *   SNAPPED ---output only---> OFFSETS_SENT;  SNAPPED ---at-least-once acked / nothing sent---> COMMITTED
 *   OFFSETS_SENT ---commit_transaction (or resolved committed)---> COMMITTED ---finalize---> IDLE
 *   any ---abort---> IDLE
 *
 * Re-entrancy. A phase that waits (acknowledgements, send_offsets, commit_transaction, abort)
 * serves the group consumer (commit_serve()), and serving may run the consumer's rebalance
 * callbacks on this same thread: wd_commit_on_revoke then completes the open commit itself (a
 * nested commit_run_phases(RUN_ALL) from the phase where the outer one stands) or aborts it. So
 * after every commit_serve() a phase function checks whether the phase is still the one it was
 * in; if not (the nested run moved it on, or an abort reset it to IDLE) it returns without acting,
 * and the outer commit_run_phases continues from the phase it finds (or ends at IDLE). in_callback
 * counts the callbacks we are in: inside one, commit_serve() only polls the producer and sleeps
 * (no nested poll of the group), and an abort does not rewind the consumer (the assignment is
 * being replaced anyway).
 *
 * A commit that does not block the pipeline (wd_commit_run_async): the commit in OFFSETS_SENT may
 * commit its transaction in the background (committing); the records taken meanwhile are noted
 * in nx and their output is held by the collector until the commit is finalized (commit_promote
 * makes them the open commit), or dropped with it when it aborts.
 */
#include "app/runtime/commit_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/interleaving.h"
#include "app/runtime/marker.h"
#include "common/clock.h"
#include "common/log.h"

void commit_keep_error(wd_commit_t *c, wd_error_t *err) {
  if (!err) return;
  if (c->cb_err) wd_error_destroy(err);
  else c->cb_err = err;
}

/* ---- the phase machine ---------------------------------------------------------------------- */

static const char *const phase_names[WD_PHASE_N] = {"IDLE", "OPEN", "SNAPPED", "PREPARED", "OFFSETS_SENT", "COMMITTED"};

#define PBIT(p) (1u << (p))
/* phase_legal[from]: the phases `from` may move to (the picture at the top of the file) */
static const unsigned phase_legal[WD_PHASE_N] = {
    [WD_PHASE_IDLE] = PBIT(WD_PHASE_OPEN),
    [WD_PHASE_OPEN] = PBIT(WD_PHASE_SNAPPED) | PBIT(WD_PHASE_IDLE),
    [WD_PHASE_SNAPPED] =
        PBIT(WD_PHASE_PREPARED) | PBIT(WD_PHASE_OFFSETS_SENT) | PBIT(WD_PHASE_COMMITTED) | PBIT(WD_PHASE_IDLE),
    [WD_PHASE_PREPARED] = PBIT(WD_PHASE_OFFSETS_SENT) | PBIT(WD_PHASE_IDLE),
    [WD_PHASE_OFFSETS_SENT] = PBIT(WD_PHASE_COMMITTED) | PBIT(WD_PHASE_IDLE),
    [WD_PHASE_COMMITTED] = PBIT(WD_PHASE_IDLE),
};

bool wd_commit_phase_legal(int from, int to) {
  if (from < 0 || from >= WD_PHASE_N || to < 0 || to >= WD_PHASE_N) return false;
  return (phase_legal[from] & PBIT(to)) != 0;
}

const char *wd_commit_phase_name(int phase) { return phase >= 0 && phase < WD_PHASE_N ? phase_names[phase] : "?"; }

/* The one place a commit changes phase: checked against phase_legal (an illegal move keeps
 * E_COMMIT_PHASE, which stops the pipeline, and leaves the phase as it is) and logged. A move to the
 * same phase is a no-op. Returns whether the commit is now in `to`. */
bool commit_set_phase(wd_commit_t *c, wd_phase_t to, const char *why) {
  wd_phase_t from = c->phase;
  if (from == to) return true;
  if (!wd_commit_phase_legal((int)from, (int)to)) {
    wd_log(WD_LOG_ERROR, "commit", "commit %" PRIu64 ": %s -> %s is not a legal move (%s)", c->number + 1,
           phase_names[from], phase_names[to], why);
    if (!c->phase_err)
      c->phase_err = wd_error_new(WD_ERR_INTERNAL, E_COMMIT_PHASE,
                                  "commit %" PRIu64 ": %s -> %s is not a legal "
                                  "move (%s)",
                                  c->number + 1, phase_names[from], phase_names[to], why);
    return false;
  }
  wd_log(WD_LOG_DEBUG, "commit", "commit %" PRIu64 ": %s -> %s (%s)", c->number + 1, phase_names[from], phase_names[to],
         why);
  c->phase = to;
  return true;
}

/* IDLE -> OPEN with the commit's first input or output. */
static void open_commit(wd_commit_t *c, const char *why) {
  if (c->phase != WD_PHASE_IDLE) return;
  commit_set_phase(c, WD_PHASE_OPEN, why);
  c->opened = wd_mono_s();
}

/* ---- the fault hook (app/runtime/fault.h) ------------------------------------------------------ */

void commit_fault_kill(wd_commit_t *c, const char *point) {
  char what[40];
  snprintf(what, sizeof(what), "commit %" PRIu64, c->number + 1);
  wd_fault_kill("commit", point, what);
}

void commit_fault_point(wd_commit_t *c, const char *point) {
  if (!wd_fault_due(&c->fault, point)) return;
  if (c->fault.fatal) wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
  else commit_fault_kill(c, point);
}

static void on_opening(void *ctx);
static int collector_budget(void *ctx, int cap_ms);

wd_error_t *wd_commit_new(const wd_commit_conf_t *conf, wd_collector_t *coll, wd_consumer_t *cons, wd_state_t *state,
                          wd_store_t *store, wd_commit_t **out) {
  *out = NULL;
  wd_commit_t *c = calloc(1, sizeof(*c));
  if (!c || !(c->b = wd_store_batch_new()) || !(c->fb = wd_store_batch_new())) {
    if (c) wd_store_batch_destroy(c->fb);
    if (c) wd_store_batch_destroy(c->b);
    free(c);
    return wd_error_nomem();
  }
  c->conf = *conf;
  if (c->conf.interval_ms < 0) c->conf.interval_ms = 0;
  if (c->conf.txn_timeout_ms <= 0) c->conf.txn_timeout_ms = 60000;
  c->stop.txn_timeout_ms = c->conf.txn_timeout_ms;
  wd_error_t *err = wd_taskmgr_new(&c->conf, state, store, &c->stop, &c->tm);
  if (err) {
    wd_store_batch_destroy(c->fb);
    wd_store_batch_destroy(c->b);
    free(c);
    return err;
  }
  wd_taskmgr_set_consumer(c->tm, cons);
  c->coll = coll;
  if (coll) wd_collector_set_opening(coll, on_opening, c);
  if (coll) wd_collector_set_budget(coll, collector_budget, c);
  c->cons = cons;
  c->state = state;
  c->store = store;
  /* exactly-once writes each commit's rows before its outcome is known: with their prior entries */
  if (state) wd_state_set_undo(state, c->conf.exactly_once && !commit_deferred(c));
  /* WIDEN_COMMIT_OVERLAP=0 waits for every commit (for interleaved before/after benchmarks,
   * bench/README.md) */
  const char *ov = getenv("WIDEN_COMMIT_OVERLAP");
  c->no_overlap = ov && !strcmp(ov, "0");
  wd_fault_from_env(&c->fault);
  if (c->fault.point[0])
    wd_log(WD_LOG_WARN, "commit", "fault hook armed: %s at the %ld. time%s at %s",
           c->fault.fatal ? "a fatal producer error" : "SIGKILL", c->fault.left,
           c->fault.repeat ? " and every time after" : "", c->fault.point);
  *out = c;
  return NULL;
}

void wd_commit_destroy(wd_commit_t *c) {
  if (!c) return;
  wd_taskmgr_destroy(c->tm);
  wd_store_batch_destroy(c->b);
  wd_store_batch_destroy(c->fb);
  wd_store_batch_destroy(c->pend);
  wd_store_batch_destroy(c->hb);
  for (size_t i = 0; i < c->nruns; i++) wd_store_batch_destroy(c->runs[i]);
  free(c->runs);
  for (size_t i = 0; i < c->nspare; i++) wd_store_batch_destroy(c->spare[i]);
  wd_buf_free(&c->undo);
  free(c->in);
  free(c->t);
  free(c->gc);
  free(c->gin);
  free(c->nx.in);
  free(c->nx.gin);
  wd_error_destroy(c->cb_err);
  wd_error_destroy(c->phase_err);
  wd_error_destroy(c->send_err);
  free(c);
}

uint64_t wd_commit_number(const wd_commit_t *c) { return c->number; }

wd_error_t *wd_commit_take_error(wd_commit_t *c) {
  wd_error_t *e = c->cb_err;
  c->cb_err = NULL;
  if (!e) {
    e = c->phase_err;
    c->phase_err = NULL;
  }
  return e ? e : wd_taskmgr_take_error(c->tm);
}

/* ---- the stop budget (app/runtime/stop_clock.h) ------------------------------------------------ */

bool commit_stop_expired(wd_commit_t *c) { return wd_stop_expired(&c->stop); }

int commit_stop_budget_ms(wd_commit_t *c, int cap_ms) { return wd_stop_budget_ms(&c->stop, cap_ms); }

void wd_commit_set_stop(wd_commit_t *c, volatile const int *stop) { c->stop.stop = stop; }

/* The collector's stop budget (wd_collector_set_budget): 0 once the stop is past its time. */
static int collector_budget(void *ctx, int cap_ms) {
  wd_commit_t *c = ctx;
  return commit_stop_expired(c) ? 0 : commit_stop_budget_ms(c, cap_ms);
}

bool wd_commit_stop_expired(wd_commit_t *c) { return commit_stop_expired(c); }

/* ---- serving the consumer while waiting ------------------------------------------------ */

void commit_serve(wd_commit_t *c, int ms) {
  /* stopping while a commit waits for the broker: the commits already committed are written now
   * (the deferred state flush), so that a stop whose time bound ends the process inside this wait
   * (the broker away) leaves only the open commit to read again */
  if (c->stop.stop && *c->stop.stop) commit_keep_error(c, wd_commit_flush(c)); /* nothing kept: a no-op */
  if (c->in_callback || !c->conf.group) {
    wd_collector_poll(c->coll);
    wd_sleep_ms(ms);
    return;
  }
  if (!c->paused) {
    wd_error_t *err = wd_consumer_pause(c->cons, true);
    if (err) {
      wd_log(WD_LOG_WARN, "commit", "%s", err->message);
      wd_error_destroy(err);
    } else {
      c->paused = true;
    }
  }
  uint64_t gen = wd_consumer_generation(c->cons);
  wd_consumer_serve(c->cons, ms);
  if (wd_consumer_generation(c->cons) != gen) c->paused = false; /* a new assignment starts resumed */
  wd_collector_poll(c->coll);
}

void commit_unpause(wd_commit_t *c) {
  if (!c->paused) return;
  wd_error_t *err = wd_consumer_pause(c->cons, false);
  if (err) {
    wd_log(WD_LOG_WARN, "commit", "%s", err->message);
    wd_error_destroy(err);
  }
  c->paused = false;
}

void wd_commit_wait(wd_commit_t *c, int ms) {
  uint64_t gen = c->conf.group ? wd_consumer_generation(c->cons) : 0;
  int left = ms;
  while (left > 0) {
    int slice = left > 100 ? 100 : left;
    commit_serve(c, slice);
    left -= slice;
    if (c->conf.group && wd_consumer_generation(c->cons) != gen) break;
  }
  if (c->in_batch && c->conf.group && wd_consumer_generation(c->cons) != gen) c->batch_invalid = true;
  commit_unpause(c);
}

/* The offset stored with the state for (topic, partition) (task_manager.h). */
static wd_error_t *stored_offset(wd_commit_t *c, const char *topic, int32_t partition, int64_t *next) {
  return wd_taskmgr_stored_offset(c->store, topic, partition, next);
}

/* ---- recovery (app/runtime/recovery.h) ---------------------------------------------------------- */

/* What recovery borrows from the coordinator. */
wd_recovery_t commit_recovery_view(wd_commit_t *c) {
  return (wd_recovery_t){c->conf.exactly_once, c->conf.txn_id, c->store, c->coll, c->cons, c->gcons,
                         c->marker_topic,      &c->stop};
}

wd_error_t *wd_commit_recover(wd_commit_t *c, volatile const int *stop) {
  wd_recovery_t rv = commit_recovery_view(c);
  return wd_recovery_run(&rv, stop, &c->number);
}

/* ---- the consumer callbacks and the task manager (app/runtime/task_manager.h) ------------------- */

/* The assignment callback only records (docs/runtime.md "Callbacks only record"): the task
 * manager notes each partition with its stored offset and makes its task CREATED; a batch in hand
 * is invalid from here on. */
bool wd_commit_on_assign_all(wd_commit_t *c, const wd_tp_offset_t *parts, size_t n) {
  c->in_callback++;
  if (c->in_batch) c->batch_invalid = true;
  bool hold = wd_taskmgr_assign(c->tm, parts, n);
  c->in_callback--;
  return hold;
}

int64_t wd_commit_on_assign(wd_commit_t *c, const char *topic, int32_t partition) {
  return wd_taskmgr_start_offset(c->tm, topic, partition);
}

/* The revoke: the open commit is completed (a clean revoke between batches: a nested run, see the
 * top of the file) or aborted (lost partitions, or a batch half done), then the task manager
 * suspends or closes the tasks. */
void wd_commit_on_revoke(wd_commit_t *c, bool lost) {
  c->in_callback++;
  if (c->phase != WD_PHASE_IDLE) {
    if (lost || c->in_batch) {
      /* the partitions are gone (or the batch in hand is half done): nothing of this commit may
       * become visible; the next owner reads it again */
      wd_error_t *err =
          wd_commit_abort(c, lost ? "the partitions were lost" : "a rebalance came in the middle of a batch");
      commit_keep_error(c, err);
    } else {
      bool aborted = false;
      wd_error_t *err = wd_commit_run(c, NULL, &aborted);
      if (err) {
        wd_log(WD_LOG_ERROR, "commit",
               "completing the commit before its partitions are given up (a rebalance or the stop): %s", err->message);
        commit_keep_error(c, err);
      }
    }
  }
  /* the deferred state flush: the committed rows kept in memory are written before the tasks move
   * (the next owner, or this process when they come back, starts from the store) */
  commit_keep_error(c, wd_commit_flush(c));
  /* rows made dirty outside any commit belong to none: a lookup reconcile that changed nothing
   * opens no commit, and a batch in hand is abandoned here. Left in the cache they would be
   * neither committed nor aborted, and the next restore of their task would refuse to drop them
   * ("dropping task N with uncommitted rows", found by the multi-process chaos test). */
  if (c->phase == WD_PHASE_IDLE) wd_state_discard(c->state);
  /* at-least-once: the group's offsets now, so that the next owner of a stateless partition
   * (forwarded to a repartition topic) starts where this one stopped */
  if (!lost && !c->conf.exactly_once) commit_group_commit(c, true);
  if (c->in_batch) c->batch_invalid = true;
  wd_taskmgr_revoke(c->tm, lost);
  c->paused = false;
  c->in_callback--;
}

void wd_commit_set_consumer(wd_commit_t *c, wd_consumer_t *cons) {
  c->cons = cons;
  wd_taskmgr_set_consumer(c->tm, cons);
}

bool wd_commit_initialising(const wd_commit_t *c) { return wd_taskmgr_initialising(c->tm); }
wd_error_t *wd_commit_init_step(wd_commit_t *c) { return wd_taskmgr_init_step(c->tm); }
wd_gate_t wd_commit_gate(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset) {
  return wd_taskmgr_gate(c->tm, topic, partition, offset);
}
wd_error_t *wd_commit_after_batch(wd_commit_t *c) { return wd_taskmgr_after_batch(c->tm); }
bool wd_commit_next_reconcile(wd_commit_t *c, uint32_t *task) { return wd_taskmgr_next_reconcile(c->tm, task); }
wd_error_t *wd_commit_reconciled(wd_commit_t *c, uint32_t task) { return wd_taskmgr_reconciled(c->tm, task); }
bool wd_commit_task_owned(void *ctx, uint32_t task) { return wd_taskmgr_task_owned(((wd_commit_t *)ctx)->tm, task); }
bool wd_commit_changelog_restoring(const wd_commit_t *c) { return wd_taskmgr_restoring(c->tm); }
wd_error_t *wd_commit_restore_step(wd_commit_t *c, int max_ms) { return wd_taskmgr_restore_step(c->tm, max_ms); }
uint64_t wd_commit_restored_records(const wd_commit_t *c) { return wd_taskmgr_restored_records(c->tm); }
wd_tasks_t *wd_commit_tasks(wd_commit_t *c) { return wd_taskmgr_tasks(c->tm); }
void wd_commit_set_reconcile(wd_commit_t *c, bool on) { wd_taskmgr_set_reconcile(c->tm, on); }
int64_t wd_commit_group_offset(const wd_commit_t *c, const char *topic, int32_t partition) {
  return wd_taskmgr_group_offset(c->tm, topic, partition);
}
wd_error_t *wd_commit_rebuild_sources(wd_commit_t *c, uint32_t task) { return wd_taskmgr_rebuild_sources(c->tm, task); }
wd_error_t *wd_commit_rebuild_done(wd_commit_t *c, uint32_t task) { return wd_taskmgr_rebuild_done(c->tm, task); }

/* ---- the open commit ------------------------------------------------------------------------ */

void wd_commit_batch_begin(wd_commit_t *c) {
  c->in_batch = true;
  c->batch_invalid = false;
}

void wd_commit_batch_end(wd_commit_t *c) { c->in_batch = false; }

bool wd_commit_batch_invalid(const wd_commit_t *c) { return c->batch_invalid; }

/* The collector's opening hook: the commit's output starts (before its transaction begins). */
static void on_opening(void *ctx) {
  wd_commit_t *c = ctx;
  open_commit(c, "its first output");
  if (c->conf.exactly_once && !wd_collector_txn_open(c->coll)) commit_fault_point(c, "before-begin");
}

wd_error_t *wd_commit_begin(wd_commit_t *c) {
  open_commit(c, "begun");
  if (!c->conf.exactly_once) return NULL;
  return wd_collector_begin(c->coll);
}

/* Notes next offset (offset + 1) of (topic, partition) in v[0..*n) (grown). 0, or -1 on no memory. */
static int note_next(wd_tp_offset_t **v, size_t *n, size_t *cap, const char *topic, int32_t partition, int64_t offset) {
  for (size_t i = 0; i < *n; i++)
    if ((*v)[i].partition == partition && (*v)[i].topic == topic) {
      if (offset + 1 > (*v)[i].offset) (*v)[i].offset = offset + 1;
      return 0;
    }
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    wd_tp_offset_t *nv = realloc(*v, nc * sizeof(*nv));
    if (!nv) return -1;
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = (wd_tp_offset_t){topic, partition, offset + 1};
  return 0;
}

/* A record taken while the previous commit's transaction commits: the next commit's. */
static int note_next_commit(wd_commit_t *c, bool global, const char *topic, int32_t partition, int64_t offset,
                            uint64_t records) {
  if (c->nx.opened == 0) c->nx.opened = wd_mono_s();
  c->nx.records += records;
  return global ? note_next(&c->nx.gin, &c->nx.ngin, &c->nx.cap_gin, topic, partition, offset)
                : note_next(&c->nx.in, &c->nx.nin, &c->nx.cap_in, topic, partition, offset);
}

int wd_commit_note_input(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset, uint64_t records) {
  if (c->committing) return note_next_commit(c, false, topic, partition, offset, records);
  open_commit(c, "its first input");
  c->records += records;
  for (size_t i = 0; i < c->nin; i++)
    if (c->in[i].partition == partition && c->in[i].topic == topic) {
      if (offset + 1 > c->in[i].offset) c->in[i].offset = offset + 1;
      return 0;
    }
  if (c->nin == c->cap_in) {
    size_t cap = c->cap_in ? c->cap_in * 2 : 64;
    wd_tp_offset_t *in = realloc(c->in, cap * sizeof(*in));
    if (!in) return -1;
    c->in = in;
    c->cap_in = cap;
  }
  c->in[c->nin].topic = topic;
  c->in[c->nin].partition = partition;
  c->in[c->nin].offset = offset + 1;
  c->nin++;
  if (!c->dp_seen && wd_collector_txn_open(c->coll)) { /* the commit's first input with its transaction open */
    c->dp_seen = true;
    commit_fault_point(c, "during-produce");
  }
  return 0;
}

bool wd_commit_pending(const wd_commit_t *c) { return c->phase != WD_PHASE_IDLE; }

bool wd_commit_due(const wd_commit_t *c) {
  if (c->phase == WD_PHASE_IDLE) return false;
  if (c->committing) return true; /* its transaction commits in the background: see how it goes */
  if (c->conf.max_records && c->records >= c->conf.max_records) return true;
  return (wd_mono_s() - c->opened) * 1000.0 >= (double)c->conf.interval_ms;
}

void wd_commit_set_interval(wd_commit_t *c, int64_t ms) { c->conf.interval_ms = ms > 0 ? ms : 0; }

bool wd_commit_committing(const wd_commit_t *c) { return c->committing; }

uint64_t wd_commit_overlapped(const wd_commit_t *c) { return c->overlapped; }

void commit_reset_open(wd_commit_t *c, const char *why) {
  commit_set_phase(c, WD_PHASE_IDLE, why);
  c->dp_seen = false;
  c->changelog_sent = false;
  c->records = 0;
  c->nin = 0;
  c->ngin = 0;
  c->prepared = false;
  wd_store_batch_clear(c->b);
  wd_store_batch_clear(c->fb);
  wd_buf_reset(&c->undo);
}

/* The group commit of at-least-once (monitoring only), at most once a second unless now. */
void commit_group_commit(wd_commit_t *c, bool now) {
  double t = wd_mono_s();
  if (!c->conf.group || !c->ngc || (!now && t - c->last_gc < 1.0)) return;
  wd_error_t *err = wd_consumer_commit(c->cons, c->gc, c->ngc);
  if (err) {
    wd_log(WD_LOG_WARN, "commit", "committing offsets to the group: %s (the state store has them)", err->message);
    wd_error_destroy(err);
  }
  c->ngc = 0;
  c->last_gc = t;
}

static void note_gc(wd_commit_t *c, const wd_tp_offset_t *o) {
  for (size_t i = 0; i < c->ngc; i++)
    if (c->gc[i].partition == o->partition && c->gc[i].topic == o->topic) {
      if (o->offset > c->gc[i].offset) c->gc[i].offset = o->offset;
      return;
    }
  if (c->ngc == c->cap_gc) {
    size_t cap = c->cap_gc ? c->cap_gc * 2 : 64;
    wd_tp_offset_t *g = realloc(c->gc, cap * sizeof(*g));
    if (!g) return; /* monitoring only */
    c->gc = g;
    c->cap_gc = cap;
  }
  c->gc[c->ngc++] = *o;
}

/* ---- the state changelog topic --------------------------------------------------------------- */

static uint32_t task_of_key(const uint8_t *key, size_t klen) {
  if (klen < WD_STATE_PREFIX_LEN) return 0;
  return ((uint32_t)key[1] << 24) | ((uint32_t)key[2] << 16) | ((uint32_t)key[3] << 8) | key[4];
}

static int send_changelog(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  wd_commit_t *c = ctx;
  if (c->conf.hooks.changelog_skip && c->conf.hooks.changelog_skip(key, klen)) return 0; /* no task's */
  if (c->conf.hooks.task_current && klen >= WD_STATE_PREFIX_LEN && key[0] == WD_STATE_ROW_NS) {
    /* rebuild: a task's rows rebuilt from the sources reach the changelog only with its switch
     * (app/runtime/rebuild.c), in one transaction with its mark: until then the topic keeps its old rows */
    if (wd_taskmgr_task_rebuilding(c->tm, task_of_key(key, klen))) return 0;
  }
  c->send_err = wd_collector_send(c->coll, WD_OUT_STATE_CHANGELOG, c->conf.changelog_topic,
                                  (int32_t)task_of_key(key, klen), key, klen, val, val ? vlen : 0);
  return c->send_err ? 1 : 0;
}

/* The targets sent to the transaction: the commit's offsets of partitions that are not restoring
 * (a restoring partition is behind the group's committed offset: sending it would move it back). */
static size_t targets(wd_commit_t *c, wd_tp_offset_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < c->nin; i++) {
    if (wd_taskmgr_below_group_end(c->tm, c->in[i].topic, c->in[i].partition, c->in[i].offset)) continue;
    out[n++] = c->in[i];
  }
  return n;
}

/* ---- the deferred state flush (docs/exactly-once.md "Deferred state flush") -------------------- */

bool commit_deferred(const wd_commit_t *c) { return c->conf.exactly_once && c->conf.flush_interval_ms > 0; }

bool wd_commit_flush_deferrable(bool exactly_once, bool group, bool changelog, bool lookups, bool rebuild,
                                bool interleaving_dependent, const char **why) {
  *why = !exactly_once            ? "at-least-once writes the state with its offsets after each commit"
         : !group                 ? "a replay has no group to be behind of"
         : changelog              ? "a task behind the group would need the whole state changelog topic read again"
         : lookups                ? "lookup changes move rows without moving offsets"
         : rebuild                ? "a rebuild is in progress"
         : interleaving_dependent ? "the table's rows depend on how its sources interleave, and a replay may "
                                    "interleave them otherwise"
                                  : NULL;
  return *why == NULL;
}

wd_error_t *wd_commit_conf_flush(wd_commit_conf_t *cc, const wd_config_t *cfg, bool group, bool changelog, bool lookups,
                                 bool rebuild) {
  cc->flush_interval_ms = 0;
  cc->flush_max_bytes = 0;
  if (cfg->state.flush_interval_ms <= 0) return NULL;
  char **w = NULL;
  int nw = wd_interleaving_warnings(cfg, &w);
  wd_interleaving_free(w);
  if (nw < 0) return wd_error_nomem();
  const char *why = NULL;
  if (!wd_commit_flush_deferrable(cc->exactly_once, group, changelog, lookups, rebuild, nw > 0, &why)) {
    wd_log(WD_LOG_INFO, "commit", "state.flush-interval-ms: each commit writes its rows here (%s)", why);
    return NULL;
  }
  cc->flush_interval_ms = cfg->state.flush_interval_ms;
  cc->flush_max_bytes = (uint64_t)cfg->state.flush_max_bytes;
  return NULL;
}

/* An empty batch for the open commit: a spare one, or a new one (NULL on no memory). */
static wd_store_batch_t *take_spare(wd_commit_t *c) { return c->nspare ? c->spare[--c->nspare] : wd_store_batch_new(); }

/* A committed commit's rows (c->b) and finalize entries (c->fb) kept for the next flush, as they are
 * (the batches themselves, no copy: the open commit takes fresh ones); its snapshot's entries stay in
 * the state cache (not evictable) until then. Errors: E_NOMEM (then nothing kept is ever written:
 * the store stays at its last flush, the pipeline stops with the error). */
static wd_error_t *keep_committed(wd_commit_t *c) {
  if (c->pend_lost) return wd_error_nomem();
  wd_store_batch_t *b = NULL, *fb = NULL;
  if (c->nruns + 2 > c->cap_runs) {
    size_t cap = c->cap_runs ? c->cap_runs * 2 : 64;
    wd_store_batch_t **r = realloc(c->runs, cap * sizeof(*r));
    if (r) {
      c->runs = r;
      c->cap_runs = cap;
    }
  }
  if (c->nruns + 2 > c->cap_runs || !(b = take_spare(c)) || !(fb = take_spare(c))) {
    wd_store_batch_destroy(b);
    for (size_t i = 0; i < c->nruns; i++) wd_store_batch_destroy(c->runs[i]);
    c->nruns = 0; /* never a commit half kept: its rows without its offsets */
    c->pend_commits = 0;
    c->pend_lost = true;
    return wd_error_nomem();
  }
  c->pend_bytes += wd_store_batch_size(c->b) + wd_store_batch_size(c->fb);
  c->runs[c->nruns++] = c->b;
  c->runs[c->nruns++] = c->fb;
  c->b = b;
  c->fb = fb;
  if (!c->pend_commits) c->pend_since = wd_mono_s();
  c->pend_commits++;
  c->pend_snap = c->snap;
  return NULL;
}

wd_error_t *wd_commit_flush(wd_commit_t *c) {
  if (!c->pend_commits) return NULL;
  if (c->pend_lost) return wd_error_nomem();
  commit_fault_point(c, "before-flush");
  double t0 = wd_mono_s();
  if (!c->pend && !(c->pend = wd_store_batch_new())) return wd_error_nomem();
  wd_store_batch_clear(c->pend);
  if (wd_store_batch_merge(c->pend, c->runs, c->nruns)) return wd_error_nomem();
  wd_error_t *err = wd_store_write(c->store, c->pend);
  if (err) return err;
  wd_state_written(c->state, c->pend_snap);
  wd_log(WD_LOG_DEBUG, "commit", "state flush: %" PRIu64 " commits, %zu bytes, written as %zu ops in %.1f ms",
         c->pend_commits, c->pend_bytes, wd_store_batch_count(c->pend), (wd_mono_s() - t0) * 1000.0);
  for (size_t i = 0; i < c->nruns; i++) {
    if (c->nspare < sizeof(c->spare) / sizeof(c->spare[0])) {
      wd_store_batch_clear(c->runs[i]);
      c->spare[c->nspare++] = c->runs[i];
    } else {
      wd_store_batch_destroy(c->runs[i]);
    }
  }
  c->nruns = 0;
  c->pend_bytes = 0;
  c->pend_commits = 0;
  wd_store_batch_clear(c->pend);
  commit_fault_point(c, "after-flush");
  return NULL;
}

wd_error_t *wd_commit_flush_due(wd_commit_t *c) {
  /* a task caught up after a replay without output: the replay is written now, and again once the
   * commit open now (which may hold its end) is finalized, so a process that crashes again soon
   * does not read it again, and more each time */
  bool now = false;
  if (commit_deferred(c) && wd_taskmgr_take_rebuilt(c->tm)) {
    now = true;
    c->flush_at = c->number + 1;
  } else if (c->flush_at && c->number >= c->flush_at) {
    now = true;
    c->flush_at = 0;
  }
  if (!c->pend_commits) return NULL;
  if (now || (wd_mono_s() - c->pend_since) * 1000.0 >= (double)c->conf.flush_interval_ms ||
      c->pend_bytes >= c->conf.flush_max_bytes)
    return wd_commit_flush(c);
  return NULL;
}

/* ---- the phases: one function each (run_phases calls the current one) ---------------------------- */

/* One run of the phases: what every phase function shares. */
typedef struct run {
  volatile const int *stop; /* the caller's stop request (may be NULL) */
  int mode; /* RUN_ALL, RUN_ASYNC, RUN_FIRST */
  bool ab; /* the commit was aborted */
  bool yield; /* RUN_ASYNC: its transaction commits in the background; return */
  wd_buf_t rec; /* the marker being written */
  wd_store_batch_t *pb; /* the prepare's meta entries */
} run_t;

/* The deferred state flush: the open commit's history record, put by `hook` (before_finalize or
 * before_write; NULL: none), with its number when `number` is set, written to the store at once
 * (one small unsynced write) and appended to fin, so the flush writes the same entries again with
 * the rest of the commit's finalize entries. Errors: E_NOMEM, wd_store_write's. */
static wd_error_t *write_history_now(wd_commit_t *c, int (*hook)(void *, uint64_t, wd_store_batch_t *), bool number,
                                     wd_store_batch_t *fin) {
  if (!c->hb && !(c->hb = wd_store_batch_new())) return wd_error_nomem();
  wd_store_batch_clear(c->hb);
  if ((hook && hook(c->conf.hooks.ctx, c->number + 1, c->hb)) ||
      (number && wd_recovery_put_number(c->hb, c->number + 1)) || wd_store_batch_append(fin, c->hb))
    return wd_error_nomem();
  return wd_store_write(c->store, c->hb);
}

/* OPEN: the commit's state: every dirty row once, the offsets, the commit number -> SNAPPED. */
static wd_error_t *phase_open(wd_commit_t *c, run_t *r) {
  (void)r;
  wd_error_t *err = NULL;
  c->t0 = wd_mono_s();
  if ((err = wd_state_snapshot(c->state, c->b, &c->snap))) return err;
  c->snapped = true;
  /* exactly-once: the offsets, number and history are finalize's (c->fb), written once the
   * transaction committed; at-least-once writes everything at once */
  wd_store_batch_t *fin = c->conf.exactly_once ? c->fb : c->b;
  for (size_t i = 0; i < c->nin; i++)
    if (wd_store_batch_set_offset(fin, c->in[i].topic, c->in[i].partition, c->in[i].offset)) return wd_error_nomem();
  for (size_t i = 0; i < c->ngin; i++) /* the global inputs' positions: local state only */
    if (wd_store_batch_set_offset(fin, c->gin[i].topic, c->gin[i].partition, c->gin[i].offset)) return wd_error_nomem();
  if (wd_recovery_put_number(fin, c->number + 1)) return wd_error_nomem();
  if (commit_deferred(c)) {
    /* the deferred state flush: the commit's history record (its input ranges so far; its output
     * ranges once it committed, phase_committed) is written at once, before its transaction
     * commits: `widen status` finds this directory's own progress in it however long the commit
     * runs in the background; aborted, the next commit puts its own record under the number */
    if ((err = write_history_now(c, c->conf.hooks.before_finalize, false, fin))) return err;
  } else if (c->conf.hooks.before_finalize && c->conf.hooks.before_finalize(c->conf.hooks.ctx, c->number + 1, fin)) {
    return wd_error_nomem();
  }
  if (c->nin > c->cap_t) {
    wd_tp_offset_t *t = realloc(c->t, c->nin * sizeof(*t));
    if (!t) return wd_error_nomem();
    c->t = t;
    c->cap_t = c->nin;
  }
  c->nt = targets(c, c->t);
  commit_set_phase(c, WD_PHASE_SNAPPED, "its state batch is built");
  return NULL;
}

/* SNAPPED, exactly-once with offsets (or a marker) to send: step 1 of docs/exactly-once.md, prepare
 * before the transaction can commit: the rows once, their undo image and the small marker, in one
 * write; the stored offsets stay S -> PREPARED. */
static wd_error_t *prepare(wd_commit_t *c, run_t *r) {
  wd_error_t *err = NULL;
  wd_buf_reset(&r->rec);
  wd_buf_reset(&c->undo);
  if (!r->pb && !(r->pb = wd_store_batch_new())) return wd_error_nomem();
  wd_store_batch_clear(r->pb);
  int64_t *from = calloc(c->nt ? c->nt : 1, sizeof(*from));
  if (!from) return wd_error_nomem();
  for (size_t i = 0; i < c->nt && !err; i++) err = stored_offset(c, c->t[i].topic, c->t[i].partition, &from[i]);
  if (err) {
    free(from);
    return err;
  }
  int rc = wd_marker_encode(c->number + 1, c->conf.txn_id, c->t, from, c->nt, c->fb, &r->rec);
  free(from);
  if (rc) return wd_error_nomem();
  if ((err = wd_store_undo_image(c->store, c->b, &c->undo))) return err;
  if (wd_store_batch_set_meta(r->pb, WD_UNDO_KEY, c->undo.data, c->undo.len) ||
      wd_store_batch_set_meta(r->pb, WD_PREPARED_KEY, r->rec.data, r->rec.len))
    return wd_error_nomem();
  /* not fsync'ed: a kill loses nothing, and a machine crash that loses it leaves the stored
   * offsets behind the group's (the task is restored). Lookup inputs' positions and rows are
   * restored by no task: a commit that carries them is fsync'ed. */
  if ((err = wd_store_write_both(c->store, c->b, r->pb, c->ngin > 0))) return err;
  c->prepared = true;
  commit_set_phase(c, WD_PHASE_PREPARED, "its rows, undo image and marker are written");
  commit_fault_point(c, "after-prepare");
  return NULL;
}

/* SNAPPED, at-least-once: the output is acknowledged before the state and offsets are written
 * -> COMMITTED. Serves the consumer while it waits (a nested run may complete the commit). */
static wd_error_t *wait_acked(wd_commit_t *c, run_t *r) {
  wd_error_t *err = NULL;
  bool told = false;
  for (;;) {
    if (!(err = wd_collector_wait_acked(c->coll, 1000))) break;
    if (!err->retriable) break;
    if ((r->stop && *r->stop >= 2) || commit_stop_expired(c)) {
      err = wd_stopped_error(err, "the broker had not acknowledged the output");
      break;
    }
    if (!told) wd_log(WD_LOG_WARN, "commit", "waiting for the broker to acknowledge the output: %s", err->message);
    told = true;
    wd_error_destroy(err);
    err = NULL;
    commit_serve(c, 100);
    if (c->phase != WD_PHASE_SNAPPED) break; /* completed inside a rebalance callback */
  }
  if (!err && c->phase == WD_PHASE_SNAPPED) commit_set_phase(c, WD_PHASE_COMMITTED, "its output is acknowledged");
  return commit_abort_if_abortable(c, err, &r->ab); /* a fatal producer: re-created, the commit redone */
}

/* SNAPPED: the changelog records of the commit's row changes, in its transaction; then prepare,
 * or commit the output as it is, or wait for the acknowledgements. */
static wd_error_t *phase_snapped(wd_commit_t *c, run_t *r) {
  wd_error_t *err = NULL;
  if (c->conf.changelog_topic && !c->changelog_sent && wd_store_batch_count(c->b) + wd_store_batch_count(c->fb)) {
    /* the commit's row changes to the state changelog, in the same transaction */
    if ((err = wd_commit_begin(c))) return commit_abort_if_abortable(c, err, &r->ab);
    if (wd_store_batch_foreach_state(c->b, send_changelog, c)) {
      err = commit_abort_if_abortable(c, c->send_err, &r->ab);
      c->send_err = NULL;
      return err;
    }
    c->changelog_sent = true;
  }
  if (c->conf.exactly_once && (c->nt || (c->gcons && wd_collector_txn_open(c->coll)))) {
    if (!commit_deferred(c)) return prepare(c, r);
    /* the deferred state flush: nothing is written before the transaction committed (no undo image,
     * no marker: a crash leaves the store at its last flush, behind the group) */
    commit_set_phase(c, WD_PHASE_PREPARED, "deferred flush: its rows stay in memory until it committed");
    return NULL;
  }
  if (wd_collector_txn_open(c->coll)) {
    /* output without offsets to send (only restoring partitions): commit it as it is */
    commit_set_phase(c, WD_PHASE_OFFSETS_SENT, "output only: no offsets to send");
    return NULL;
  }
  if (!c->conf.exactly_once) return wait_acked(c, r);
  commit_set_phase(c, WD_PHASE_COMMITTED, "nothing sent: only the state"); /* nothing to send: only the state */
  return NULL;
}

/* Exactly-once, before the offsets go in: a record of the transaction acknowledged. An
 * acknowledged record means its partition was registered with the transaction coordinator
 * (AddPartitionsToTxn), which the coordinator refuses with CONCURRENT_TRANSACTIONS until the
 * previous transaction's markers are written. librdkafka retries that refusal after 20 ms, but the
 * same refusal of AddOffsetsToTxn only after retry.backoff.ms (100 ms by default): a commit that
 * follows the previous one closely (the adaptive interval while caught up) met it whenever the
 * markers were slow, and it was the tail of the visible latency (bench/notes/latency.md). Waiting
 * here orders the two requests as the coordinator wants them. It costs nothing under a backlog
 * (the commit's first records were acknowledged long before) and little otherwise; it is only an
 * ordering: whatever the records' outcome, send_offsets and commit_transaction report it as
 * before. At most WD_COMMIT_REGISTER_WAIT_MS. */
#define WD_COMMIT_REGISTER_WAIT_MS 1000
static void commit_wait_registered(wd_commit_t *c) {
  wd_collector_wait_registered(c->coll, commit_stop_budget_ms(c, WD_COMMIT_REGISTER_WAIT_MS));
}

/* PREPARED: step 2, the input offsets (and the commit's marker) in the transaction -> OFFSETS_SENT. */
static wd_error_t *phase_prepared(wd_commit_t *c, run_t *r) {
  wd_error_t *err = NULL;
  if ((err = wd_commit_begin(c))) return commit_abort_if_abortable(c, err, &r->ab);
  if (c->conf.exactly_once) commit_wait_registered(c);
  wd_group_meta_t *gm = NULL;
  if ((err = wd_consumer_group_metadata(c->cons, &gm))) return err;
  for (int attempt = 0;; attempt++) {
    err = wd_collector_send_offsets(c->coll, c->t, c->nt, gm, 10000);
    /* the commit's marker: every commit with scale-out lookups (wd_commit_set_global); with the
     * rebuild's marker only (wd_commit_set_marker) the commits without input offsets, which the
     * group's offsets cannot resolve (a switch) */
    if (!err && c->gcons && (c->global || !c->nt)) {
      wd_group_meta_t *pm = NULL;
      wd_tp_offset_t m = {c->marker_topic, 0, (int64_t)(c->number + 1)};
      if (!(err = wd_consumer_group_metadata(c->gcons, &pm)))
        err = wd_collector_send_offsets(c->coll, &m, 1, pm, 10000);
      wd_group_meta_destroy(pm);
    }
    if (wd_collector_classify(err) != WD_COLLECT_RETRY || attempt >= 30) break;
    if ((r->stop && *r->stop >= 2) || commit_stop_expired(c)) {
      err = wd_stopped_error(err, "sending the offsets to the transaction");
      break;
    }
    wd_error_destroy(err);
    err = NULL;
    commit_serve(c, 100);
    if (c->phase != WD_PHASE_PREPARED) break;
  }
  wd_group_meta_destroy(gm);
  if (!err && c->phase == WD_PHASE_PREPARED)
    commit_set_phase(c, WD_PHASE_OFFSETS_SENT, "its offsets are in the transaction");
  return commit_abort_if_abortable(c, err, &r->ab);
}

/* OFFSETS_SENT: step 3, commit_transaction (commit_txn) -> COMMITTED; under RUN_ASYNC it may go on
 * in the background (r->yield). */
static wd_error_t *phase_offsets_sent(wd_commit_t *c, run_t *r) {
  wd_error_t *err = commit_txn(c, r->stop, &r->ab, r->mode == RUN_ASYNC);
  if (!err && r->mode == RUN_ASYNC && c->committing && c->phase == WD_PHASE_OFFSETS_SENT) r->yield = true;
  return err;
}

/* COMMITTED: step 4, finalize: the offsets, the number, the history, the marker and the undo image
 * gone: one small write (the rows are written at prepare; without a prepare they go with it)
 * -> IDLE, or OPEN with what was taken while it committed in the background (promote). */
static wd_error_t *phase_committed(wd_commit_t *c, run_t *r) {
  wd_error_t *err = NULL;
  commit_fault_point(c, "after-commit");
  wd_store_batch_t *fin = c->conf.exactly_once ? c->fb : c->b;
  if (c->prepared && (wd_store_batch_delete_meta(fin, WD_PREPARED_KEY) || wd_store_batch_delete_meta(fin, WD_UNDO_KEY)))
    return wd_error_nomem();
  if (commit_deferred(c) && !c->prepared) {
    /* the history record with the commit's output offsets, and its number, are written at once (a
     * small unsynced write): a crash loses the kept rows, which the restart replays without output,
     * never the record of a commit whose output is committed (`widen changes` reads its ranges),
     * and the replay's commits take the numbers after it. The flush writes them again with the
     * rest of the finalize entries (the same bytes). */
    if ((err = write_history_now(c, c->conf.hooks.before_write, true, fin))) return err;
    if ((err = keep_committed(c))) return err; /* written by a later flush */
  } else {
    /* the history record with the commit's output offsets */
    if (c->conf.hooks.before_write && c->conf.hooks.before_write(c->conf.hooks.ctx, c->number + 1, fin))
      return wd_error_nomem();
    if ((err = wd_commit_flush(c))) return err; /* what is kept is older: first */
    if (!c->conf.exactly_once || c->prepared) err = wd_store_write(c->store, fin);
    else err = wd_store_write_both(c->store, c->b, c->fb, false);
    if (err) return err;
    wd_state_written(c->state, c->snap);
  }
  c->snapped = false;
  c->number++;
  commit_fault_point(c, "after-finalize");
  if (!c->conf.exactly_once)
    for (size_t i = 0; i < c->nin; i++) note_gc(c, &c->in[i]);
  wd_log(WD_LOG_DEBUG, "commit", "commit %" PRIu64 ": %" PRIu64 " records, %zu partitions, %.1f ms", c->number,
         c->records, c->nin, (wd_mono_s() - c->t0) * 1000.0);
  commit_reset_open(c, "finalized");
  bool was_committing = c->committing;
  commit_promote(c); /* what was taken meanwhile is the open commit now */
  if (c->conf.hooks.committed) c->conf.hooks.committed(c->conf.hooks.ctx, c->number);
  /* at once when stopping or in a rebalance (in_callback): the next owner of a stateless
   * partition starts at the group's offset */
  commit_group_commit(c, (r->stop && *r->stop) || c->in_callback);
  /* the deferred state flush: when its bounds are reached, and at once when stopping or in a rebalance */
  err = (r->stop && *r->stop) || c->in_callback ? wd_commit_flush(c) : wd_commit_flush_due(c);
  if (!err && was_committing && r->mode != RUN_FIRST) err = commit_release_next(c, &r->ab);
  return err;
}

/* mode RUN_ALL: every commit open is completed (a commit committing in the background first, then
 * the one taken meanwhile); RUN_ASYNC: the open commit is completed unless its transaction goes on
 * committing in the background (then it returns; call again), and the one taken meanwhile stays
 * open; RUN_FIRST: only the commit committing in the background is completed, what was taken
 * meanwhile stays open and held (for an abort of it). A nested run (a rebalance callback inside a
 * wait, see the top of the file) continues from the phase the outer one is in. */
wd_error_t *commit_run_phases(wd_commit_t *c, volatile const int *stop, bool *aborted, int mode) {
  wd_error_t *err = NULL;
  run_t r = {.stop = stop, .mode = mode};
  uint64_t n0 = c->number;
  if (aborted) *aborted = false;
  while (c->phase != WD_PHASE_IDLE && !err && !r.ab && !r.yield) {
    if (mode != RUN_ALL && c->number != n0) break; /* a commit was finalized: the next one stays open */
    wd_phase_t at = c->phase;
    switch (at) {
    case WD_PHASE_IDLE: break;
    case WD_PHASE_OPEN: err = phase_open(c, &r); break;
    case WD_PHASE_SNAPPED: err = phase_snapped(c, &r); break;
    case WD_PHASE_PREPARED: err = phase_prepared(c, &r); break;
    case WD_PHASE_OFFSETS_SENT: err = phase_offsets_sent(c, &r); break;
    case WD_PHASE_COMMITTED: err = phase_committed(c, &r); break;
    case WD_PHASE_N: break;
    }
    if (!err && c->phase_err) { /* an illegal move (a bug): stop here rather than loop */
      err = c->phase_err;
      c->phase_err = NULL;
    }
  }
  if (r.ab && aborted) *aborted = true;
  if (!c->in_callback) commit_unpause(c);
  wd_buf_free(&r.rec);
  wd_store_batch_destroy(r.pb);
  return err;
}

/* ---- scale-out with lookups ------------------------------------------------------------------- */

void wd_commit_set_global(wd_commit_t *c, wd_consumer_t *group_cons, const char *marker_topic) {
  c->gcons = group_cons;
  c->marker_topic = marker_topic;
  c->global = true;
  wd_taskmgr_set_global(c->tm, true);
}

void wd_commit_set_marker(wd_commit_t *c, wd_consumer_t *cons, const char *marker_topic) {
  c->gcons = cons;
  c->marker_topic = marker_topic;
}

int wd_commit_note_global(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset, uint64_t records) {
  if (c->committing) return note_next_commit(c, true, topic, partition, offset, records);
  open_commit(c, "its first global input");
  c->records += records;
  for (size_t i = 0; i < c->ngin; i++)
    if (c->gin[i].partition == partition && c->gin[i].topic == topic) {
      if (offset + 1 > c->gin[i].offset) c->gin[i].offset = offset + 1;
      return 0;
    }
  if (c->ngin == c->cap_gin) {
    size_t cap = c->cap_gin ? c->cap_gin * 2 : 16;
    wd_tp_offset_t *g = realloc(c->gin, cap * sizeof(*g));
    if (!g) return -1;
    c->gin = g;
    c->cap_gin = cap;
  }
  c->gin[c->ngin].topic = topic;
  c->gin[c->ngin].partition = partition;
  c->gin[c->ngin].offset = offset + 1;
  c->ngin++;
  return 0;
}

wd_error_t *wd_commit_run(wd_commit_t *c, volatile const int *stop, bool *aborted) {
  return commit_run_phases(c, stop, aborted, RUN_ALL);
}

wd_error_t *wd_commit_run_async(wd_commit_t *c, volatile const int *stop, bool *aborted) {
  return commit_run_phases(c, stop, aborted, c->conf.exactly_once && !c->no_overlap ? RUN_ASYNC : RUN_ALL);
}
