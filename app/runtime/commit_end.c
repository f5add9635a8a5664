/*
 * app/runtime/commit_end.c — how a commit ends otherwise than by its phases (commit_int.h): an abort
 * (its output discarded, its rows taken back, the consumer rewound), the transaction's commit
 * (commit_txn: in the background or waited for, retried while its outcome is unknown), an outcome
 * resolved from the group's offsets after a fatal producer, and the commit taken while the last
 * one committed in the background (promote, release_next). The phase machine and the
 * re-entrancy rules are at the top of commit.c.
 */
#include "app/runtime/commit_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/marker.h"
#include "common/clock.h"
#include "common/log.h"

/* The rewind after an abort: every assigned partition back to its stored (= committed) offset,
 * or the beginning when it has none (a restoring task that finalized nothing yet); then the task
 * table learns of it (wd_taskmgr_rewound: holds released, a task rewound below its restore end
 * RESTORING again). */
wd_error_t *commit_rewind_consumer(wd_commit_t *c) {
  if (!c->conf.group) return NULL;
  wd_tp_offset_t *to = NULL;
  size_t nto = 0;
  wd_error_t *err = wd_taskmgr_committed_positions(c->tm, &to, &nto);
  if (err || !nto) return err;
  for (double since = 0;; wd_sleep_ms(200)) { /* a seek that timed out near a broker restart: again */
    wd_error_destroy(err);
    err = wd_consumer_seek(c->cons, to, nto);
    if (!wd_stop_retry_transient(&c->stop, &since, 30, "rewinding the consumer to the committed offsets", err)) break;
  }
  /* held partitions resumed there; a running task rewound below its restore end restores again */
  if (!err) err = wd_taskmgr_rewound(c->tm, to, nto);
  free(to);
  return err;
}

/* The records taken while a commit's transaction committed go with an abort. */
void commit_drop_next(wd_commit_t *c) {
  c->committing = false;
  c->nx.nin = c->nx.ngin = 0;
  c->nx.records = 0;
  c->nx.opened = 0;
}

/* The producer re-created after a fatal error that is not fencing (the collector's
 * WD_COLLECT_RECREATE, cause), unless it was replaced since generation gen already (the
 * resolution of a commit that was committing re-created it). Errors: wd_collector_recreate's. */
static wd_error_t *recreate_once(wd_commit_t *c, uint64_t gen, const wd_error_t *cause) {
  if (wd_collector_generation(c->coll) != gen) return NULL;
  return wd_collector_recreate(c->coll, cause);
}

/* wd_commit_abort; cause (borrowed, may be NULL): a fatal producer error that is not fencing
 * (WD_COLLECT_RECREATE): the producer is re-created first (its new init_transactions aborts the
 * old transaction, which never reached its commit: commit_txn resolves those that did). */
wd_error_t *commit_abort(wd_commit_t *c, const char *why, const wd_error_t *cause) {
  wd_error_t *err = NULL;
  bool recreate = wd_collector_classify(cause) == WD_COLLECT_RECREATE;
  uint64_t gen = wd_collector_generation(c->coll);
  if (c->committing && c->phase == WD_PHASE_OFFSETS_SENT) {
    /* the commit whose transaction is committing is resolved first (completed, or
     * aborted by the broker's answer): it may have committed, so it is never taken back here; what
     * is aborted is what was taken after it */
    bool ab = false;
    if ((err = commit_run_phases(c, c->stop.stop, &ab, RUN_FIRST))) return err;
    if (ab) return recreate ? recreate_once(c, gen, cause) : NULL; /* it aborted itself, and all after it */
  }
  /* the deferred state flush: the commits already committed are written before the abort's
   * requests, which may wait for an absent broker until the stop's time bound ends the process
   * (their transactions committed: the store may move to them however this abort ends) */
  if ((err = wd_commit_flush(c))) return err;
  if (recreate && (err = recreate_once(c, gen, cause))) return err;
  if (c->phase == WD_PHASE_IDLE) return NULL;
  c->naborts++;
  wd_log(WD_LOG_WARN, "commit",
         "aborting commit %" PRIu64 " (%" PRIu64 " records): %s; its output is discarded and "
         "its records are read again",
         c->number + 1, c->records, why);
  {
    for (int attempt = 0; attempt < 10; attempt++) {
      wd_error_destroy(err);
      if (wd_collector_classify(err = wd_collector_abort(c->coll, commit_stop_budget_ms(c, 30000))) != WD_COLLECT_RETRY)
        break;
      if (commit_stop_expired(c)) break; /* the broker aborts it after transaction.timeout.ms */
      commit_serve(c, 100);
    }
    if (wd_collector_classify(err) == WD_COLLECT_RECREATE) {
      /* the producer turned fatal: a new one's init_transactions aborts the transaction */
      wd_error_t *rerr = recreate_once(c, gen, err);
      wd_error_destroy(err);
      if ((err = rerr)) return err;
      err = wd_collector_abort(c->coll, 0); /* no transaction open now: drops what is held */
    }
    if (wd_collector_classify(err) == WD_COLLECT_FATAL && (err->fatal || err->fenced)) return err;
    if (err) {
      wd_log(WD_LOG_WARN, "commit", "%s", err->message);
      wd_error_destroy(err);
      err = NULL;
    }
  }
  /* and again, for a commit a callback served in those requests completed (the cache's entries of
   * this commit are dropped below, and reads must then find the committed ones; a no-op when
   * nothing was kept meanwhile) */
  if ((err = wd_commit_flush(c))) return err;
  if (c->prepared) {
    /* the rows written at prepare go back to their prior entries (the undo image kept in memory),
     * the marker and the image go: one write (were it lost, recovery finds the marker and G = S) */
    wd_store_batch_t *b = wd_store_batch_new();
    if (!b || wd_store_batch_decode(b, c->undo.data, c->undo.len) || wd_store_batch_delete_meta(b, WD_PREPARED_KEY) ||
        wd_store_batch_delete_meta(b, WD_UNDO_KEY) || (err = wd_store_write(c->store, b))) {
      if (!err) err = wd_error_nomem();
    }
    wd_store_batch_destroy(b);
    if (err) return err;
    c->prepared = false;
  }
  if (c->snapped) {
    wd_state_written(c->state, c->snap); /* the snapshot's entries: evictable again; dropped below */
    c->snapped = false;
  }
  wd_state_discard(c->state);
  wd_state_drop_clean(c->state); /* the snapshot's entries were marked clean with uncommitted bytes */
  commit_reset_open(c, "aborted");
  commit_drop_next(c);
  if (c->in_batch) c->batch_invalid = true;
  /* lookups under per-partition tasks: the reconciles the commit held are taken back with it, so
   * each running task is reconciled again before its next record (docs/lookups-scale-out.md) */
  wd_taskmgr_abort_reconciles(c->tm);
  if (c->conf.hooks.aborted) c->conf.hooks.aborted(c->conf.hooks.ctx);
  if (!c->in_callback) err = commit_rewind_consumer(c);
  return err;
}

wd_error_t *wd_commit_abort(wd_commit_t *c, const char *why) { return commit_abort(c, why, NULL); }

wd_error_t *wd_commit_abort_for(wd_commit_t *c, const wd_error_t *cause) {
  return commit_abort(c, cause ? cause->message : "aborted", cause);
}

/* An abortable error (the collector's WD_COLLECT_ABORT: txn_requires_abort, not fenced or fatal)
 * aborts the open commit, and so does a fatal producer error that is not fencing
 * (WD_COLLECT_RECREATE, before the commit's commit_transaction: the producer is re-created first,
 * its init_transactions aborts the old transaction): the abort's
 * own error (or NULL) is returned in its place and *aborted set; any other error is returned as
 * it is. Takes err. */
wd_error_t *commit_abort_if_abortable(wd_commit_t *c, wd_error_t *err, bool *aborted) {
  wd_collect_class_t k = wd_collector_classify(err);
  if (k != WD_COLLECT_ABORT && k != WD_COLLECT_RECREATE) return err;
  wd_error_t *aerr = commit_abort(c, err->message, err);
  wd_error_destroy(err);
  if (aborted) *aborted = true;
  return aerr;
}

/* Step 3 under exactly-once: commit_transaction, retried while its outcome is unknown. Returns
 * with c->phase COMMITTED on success, IDLE when aborted (or completed by a nested run inside a
 * rebalance callback while it waited). */
/* How long, and for how many held records, a commit's transaction may commit in the background
 * before the pipeline waits for it as before; also once the next commit holds
 * pipeline.commit-max-records records (a commit stays within its bound). */
#define WD_OVERLAP_MAX_S 2.0
#define WD_OVERLAP_MAX_HELD 200000

static wd_error_t *resolve_outcome(wd_commit_t *c, bool *aborted);

wd_error_t *commit_txn(wd_commit_t *c, volatile const int *stop, bool *aborted, bool async) {
  wd_error_t *err = NULL;
  double deadline = wd_mono_s() + c->conf.txn_timeout_ms / 1000.0;
  if (async && c->conf.group && !c->in_callback && !(stop && *stop)) {
    /* commit_transaction runs on the collector's helper thread while the
     * pipeline merges the next batches, whose output the collector holds until this commit is
     * finalized (librdkafka 2.0.2 is not safe with short commit timeouts called again and again:
     * collector.h) */
    if (!c->committing) {
      if (wd_fault_due(&c->fault, "during-commit")) {
        if (c->fault.fatal) {
          wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
        } else {
          wd_error_destroy(wd_collector_commit(c->coll, 1));
          commit_fault_kill(c, "during-commit");
        }
      }
      if ((err = wd_collector_commit_start(c->coll, commit_stop_budget_ms(c, 10000)))) {
        if (wd_collector_classify(err) == WD_COLLECT_RECREATE) goto resolve;
        return err;
      }
      if (!wd_collector_commit_started(c->coll)) { /* no transaction open: nothing to wait for */
        commit_set_phase(c, WD_PHASE_COMMITTED, "no transaction open");
        return NULL;
      }
      c->committing = true;
      c->committing_since = wd_mono_s();
      return NULL;
    }
    if (wd_collector_commit_busy(c->coll) && wd_mono_s() - c->committing_since < WD_OVERLAP_MAX_S &&
        wd_collector_held(c->coll) < WD_OVERLAP_MAX_HELD &&
        (!c->conf.max_records || c->nx.records < c->conf.max_records))
      return NULL;
    /* done, or too long in the background: its result (waited for) below, as before */
  }
  if (!c->committing && wd_fault_due(&c->fault, "during-commit")) {
    if (c->fault.fatal) {
      wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
    } else {
      /* the EndTxn request is on its way (or not yet: a 1 ms wait); its outcome is the broker's */
      wd_error_destroy(wd_collector_commit(c->coll, 1));
      commit_fault_kill(c, "during-commit");
    }
  }
  bool told = false;
  for (;;) {
    wd_error_destroy(err);
    if (!(err = wd_collector_commit(c->coll, commit_stop_budget_ms(c, 10000)))) {
      commit_set_phase(c, WD_PHASE_COMMITTED, "its transaction committed");
      return NULL;
    }
    wd_collect_class_t k = wd_collector_classify(err);
    if (k == WD_COLLECT_ABORT) {
      c->committing = false; /* what was taken after it goes too (drop_next) */
      return commit_abort_if_abortable(c, err, aborted);
    }
    if (k == WD_COLLECT_RECREATE) goto resolve; /* the outcome is not known: as below */
    if (k != WD_COLLECT_RETRY) return err; /* fenced, fatal, other */
    if ((stop && *stop >= 2) || commit_stop_expired(c)) {
      wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                                   "stopped while the transaction's commit was not "
                                   "confirmed (%s): the last commit may not be made; recovery resolves it on "
                                   "restart",
                                   err->message);
      wd_error_destroy(err);
      return e;
    }
    if (wd_mono_s() > deadline) break;
    if (!told) {
      wd_log(WD_LOG_WARN, "commit", "waiting to commit the transaction: %s", err->message);
      told = true;
    }
    commit_serve(c, 100);
    if (c->phase != WD_PHASE_OFFSETS_SENT && c->phase != WD_PHASE_SNAPPED) { /* completed or aborted meanwhile */
      wd_error_destroy(err);
      return NULL;
    }
  }
  /* the outcome stayed unknown past transaction.timeout.ms: a new producer with the same
   * transactional.id resolves it (init_transactions completes or aborts the transaction), then
   * the group's committed offsets say which */
  if (!c->nt && !c->gcons)
    return wd_error_wrap(err,
                         "E_TXN_UNKNOWN: the transaction's outcome is not known after %d ms; restart widen to "
                         "resolve it from the group's committed offsets",
                         c->conf.txn_timeout_ms);
  wd_log(WD_LOG_WARN, "commit",
         "the outcome of commit %" PRIu64 " is not known after %d ms (%s): re-creating the "
         "producer to resolve it from the group's committed offsets",
         c->number + 1, c->conf.txn_timeout_ms, err->message);
  wd_error_destroy(err);
  if ((err = wd_collector_reopen(c->coll))) return err;
  return resolve_outcome(c, aborted);
resolve:
  /* a fatal producer error that is not fencing (WD_COLLECT_RECREATE) while committing: whether the
   * transaction committed is not known (its EndTxn may have reached the coordinator); the new
   * producer's init_transactions completes or aborts it, and it is resolved as above (Kafka
   * Streams re-creates the task producer and re-processes from the committed offsets) */
  if (!c->nt && !c->gcons) {
    wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_PRODUCER_FATAL,
                                 "the producer failed fatally while committing "
                                 "(%s) and the outcome cannot be read from the group's offsets (only restoring "
                                 "partitions): restart widen to resolve it",
                                 err->message);
    if (e != wd_error_nomem()) {
      e->fatal = true;
      e->retriable = false;
    }
    wd_error_destroy(err);
    return e;
  }
  wd_log(WD_LOG_WARN, "commit",
         "commit %" PRIu64 ": the producer failed fatally while committing (%s): re-creating "
         "it to resolve the transaction from the group's committed offsets",
         c->number + 1, err->message);
  {
    wd_error_t *rerr = wd_collector_recreate(c->coll, err);
    wd_error_destroy(err);
    if ((err = rerr)) return err;
  }
  return resolve_outcome(c, aborted);
}

/* After a new producer's init_transactions (which completed or aborted the commit's transaction):
 * whether the open commit's transaction committed, from the group's committed offsets (or the
 * marker); committed: phase COMMITTED (finalize next); not: the commit is aborted (*aborted). */
static wd_error_t *resolve_outcome(wd_commit_t *c, bool *aborted) {
  wd_error_t *err = NULL;
  wd_tp_offset_t *g = calloc(c->nt ? c->nt : 1, sizeof(*g));
  if (!g) return wd_error_nomem();
  memcpy(g, c->t, c->nt * sizeof(*g));
  wd_recovery_t rv = commit_recovery_view(c);
  if (c->nt) err = wd_recovery_group_offsets(&rv, c->cons, g, c->nt);
  bool committed = false;
  for (size_t i = 0; !err && i < c->nt && !committed; i++) committed = g[i].offset == c->t[i].offset;
  free(g);
  if (!err && !committed) err = wd_recovery_marker_committed(&rv, c->number + 1, &committed);
  if (err) return err;
  if (committed) {
    wd_log(WD_LOG_INFO, "commit", "commit %" PRIu64 ": the transaction had committed", c->number + 1);
    commit_set_phase(c, WD_PHASE_COMMITTED, "resolved: its transaction had committed");
    return NULL;
  }
  wd_log(WD_LOG_INFO, "commit", "commit %" PRIu64 ": the transaction did not commit", c->number + 1);
  if (aborted) *aborted = true;
  c->committing = false;
  return wd_commit_abort(c, "its transaction did not commit");
}

/* The steps of docs/exactly-once.md, one phase at a time, so that a nested run (a rebalance
 * callback while this one waits) continues from where the outer one is and the outer one then
 * finds the commit done. */
/* After the commit that committed in the background is finalized: what was taken meanwhile becomes
 * the open commit (its output still held by the collector: release_next sends it). */
void commit_promote(wd_commit_t *c) {
  if (!c->committing) return;
  c->committing = false;
  c->overlapped++;
  wd_tp_offset_t *t = c->in;
  size_t cap = c->cap_in;
  c->in = c->nx.in;
  c->cap_in = c->nx.cap_in;
  c->nin = c->nx.nin;
  c->nx.in = t;
  c->nx.cap_in = cap;
  t = c->gin;
  cap = c->cap_gin;
  c->gin = c->nx.gin;
  c->cap_gin = c->nx.cap_gin;
  c->ngin = c->nx.ngin;
  c->nx.gin = t;
  c->nx.cap_gin = cap;
  c->records = c->nx.records;
  if (c->nx.opened > 0 || wd_collector_held(c->coll)) {
    commit_set_phase(c, WD_PHASE_OPEN, "taken while the last one committed");
    c->opened = c->nx.opened > 0 ? c->nx.opened : wd_mono_s();
  } else {
    wd_error_destroy(wd_collector_release(c->coll)); /* nothing held: holding ends */
  }
  c->nx.nin = c->nx.ngin = 0;
  c->nx.records = 0;
  c->nx.opened = 0;
}

/* The held output of the promoted commit into its transaction (begun now). */
wd_error_t *commit_release_next(wd_commit_t *c, bool *ab) {
  if (!wd_collector_holding(c->coll)) return NULL;
  /* sent as a batch in hand: a full queue serves the group, and a rebalance meanwhile aborts this
   * commit (its output is half sent) instead of completing it */
  bool in_batch = c->in_batch;
  if (!c->in_callback) {
    c->in_batch = true;
    c->batch_invalid = false;
  }
  wd_error_t *err = NULL;
  for (;;) {
    uint64_t a0 = c->naborts;
    err = wd_collector_release(c->coll);
    if (c->naborts != a0) { /* aborted by a rebalance while it waited: its records are read again */
      wd_error_destroy(err);
      err = NULL;
      if (ab) *ab = true;
      break;
    }
    if (err && c->batch_invalid && wd_error_is(err, WD_EID_E_STOPPED) && !commit_stop_expired(c)) {
      c->batch_invalid = false; /* an assignment, not an abort: go on sending */
      wd_error_destroy(err);
      continue;
    }
    break;
  }
  if (!c->in_callback) {
    c->in_batch = in_batch;
    c->batch_invalid = false;
  }
  if (!err && ab && *ab) return NULL;
  if (!err && c->nin && !c->dp_seen && wd_collector_txn_open(c->coll)) {
    c->dp_seen = true;
    commit_fault_point(c, "during-produce");
  }
  return commit_abort_if_abortable(c, err, ab);
}
