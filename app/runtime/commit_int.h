/*
 * app/runtime/commit_int.h — the commit coordinator's insides, shared by its two files only:
 * commit.c (the phases, the open commit, the callbacks; its top comment explains the phase machine
 * and the re-entrancy) and commit_end.c (how a commit ends otherwise than by its phases: an abort,
 * a transaction that commits in the background, an outcome resolved after a fatal producer).
 * Nothing outside app/runtime/commit*.c includes it.
 */
#ifndef WD_COMMIT_INT_H
#define WD_COMMIT_INT_H

#include "app/runtime/commit.h"
#include "app/runtime/fault.h"
#include "app/runtime/recovery.h"
#include "app/runtime/stop_clock.h"
#include "app/runtime/task_manager.h"
#include "common/buf.h"

/* A commit's phases, in order (commit_run_phases moves it on one at a time; commit_set_phase checks
 * each move against the table in commit.c). */
typedef enum {
  WD_PHASE_IDLE = 0, /* no commit open */
  WD_PHASE_OPEN, /* records taken since the last commit */
  WD_PHASE_SNAPPED, /* the state batch is built */
  WD_PHASE_PREPARED, /* exactly-once: the rows, their undo image and the marker are written */
  WD_PHASE_OFFSETS_SENT, /* exactly-once: the offsets are in the transaction */
  WD_PHASE_COMMITTED, /* the output is committed (or acknowledged): finalize next */
  WD_PHASE_N
} wd_phase_t;

struct wd_commit {
  wd_commit_conf_t conf;
  wd_collector_t *coll; /* borrowed: the one path into the producer and the transaction */
  wd_consumer_t *cons;
  wd_state_t *state;
  wd_store_t *store;
  wd_taskmgr_t *tm; /* the task table and the assignment (owned) */
  wd_stop_clock_t stop; /* the stop request and its budget (the task manager borrows it) */
  wd_fault_t fault; /* WIDEN_FAULT (app/runtime/fault.h) */
  wd_error_t *cb_err; /* fatal error inside a callback */
  wd_error_t *phase_err; /* an illegal phase move (set_phase): a bug, the pipeline stops with it */
  /* the open commit */
  wd_phase_t phase;
  uint64_t number; /* last finalized commit */
  double opened; /* monotonic s of the open commit's first record */
  uint64_t records; /* records noted in the open commit */
  wd_tp_offset_t *in; /* next offsets per partition of the open commit */
  size_t nin, cap_in;
  wd_tp_offset_t *gin; /* the global inputs' next offsets (scale-out with lookups) */
  size_t ngin, cap_gin;
  wd_store_batch_t *b; /* the open commit's state batch: its rows (with their priors, join/state.h) */
  wd_store_batch_t *fb; /* exactly-once: what finalize writes (offsets, number, history); at-least-once
                         * these go into b */
  wd_buf_t undo; /* the undo image written at prepare (an encoded batch), for an abort */
  bool prepared; /* the rows, the undo image and the marker are in the store */
  uint64_t snap;
  bool snapped; /* snap holds this commit's rows (not yet written) */
  wd_tp_offset_t *t; /* the offsets sent to the transaction */
  size_t nt, cap_t;
  double t0; /* when the commit's completion started */
  bool changelog_sent; /* the open commit's changelog records are produced */
  wd_error_t *send_err;
  bool dp_seen; /* the fault point during-produce was passed in the open commit */
  /* batch in hand */
  bool in_batch, batch_invalid;
  int in_callback; /* depth of consumer callbacks we are in */
  bool paused;
  /* at-least-once group commits (monitoring), at most once a second */
  wd_tp_offset_t *gc;
  size_t ngc, cap_gc;
  double last_gc;
  /* scale-out with lookups (wd_commit_set_global) and the rebuild's marker: the per-process group
   * and its marker partition */
  wd_consumer_t *gcons;
  const char *marker_topic;
  bool global; /* wd_commit_set_global (else only the marker: wd_commit_set_marker) */
  /* the commit that commits in the background (file comment) and what is taken meanwhile */
  bool committing;
  double committing_since;
  bool no_overlap; /* WIDEN_COMMIT_OVERLAP=0 */
  uint64_t naborts; /* commits aborted (wd_commit_abort) */
  uint64_t overlapped; /* commits finalized after committing in the background */
  /* the deferred state flush (conf.flush_interval_ms > 0 under exactly-once; commit.c "the
   * deferred state flush"): committed commits whose rows are not written yet */
  wd_store_batch_t **runs; /* their state batches and finalize batches, in commit order */
  size_t nruns, cap_runs;
  size_t pend_bytes; /* the runs' bytes */
  wd_store_batch_t *pend; /* the flush's write: the runs merged (wd_store_batch_merge) */
  wd_store_batch_t *hb; /* the deferred flush: a commit's history record written at once (write_history_now) */
  wd_store_batch_t *spare[8]; /* emptied runs, for the next commits' batches */
  size_t nspare;
  uint64_t pend_commits; /* commits in runs */
  uint64_t pend_snap; /* the state snapshot of the last of them (wd_state_written at the flush) */
  double pend_since; /* monotonic s when the first of them was kept */
  bool pend_lost; /* a commit could not be kept (no memory): pend is never written */
  uint64_t flush_at; /* > 0: flush once commit flush_at is finalized (a task caught up after a
                        replay without output: wd_commit_flush_due) */
  struct {
    wd_tp_offset_t *in, *gin;
    size_t nin, cap_in, ngin, cap_gin;
    uint64_t records;
    double opened; /* 0: nothing noted */
  } nx;
};

/* How far commit_run_phases goes: RUN_ALL every open commit; RUN_ASYNC the open one unless its
 * transaction commits in the background; RUN_FIRST only the one committing in the background. */
enum { RUN_ALL, RUN_ASYNC, RUN_FIRST };

/* INVALID_TXN_STATE (librdkafka's rd_kafka_resp_err_t): what the fault hook's fatal error carries,
 * as a transaction coordinator's answer after a broker restart */
#define WD_FAULT_FATAL_CODE 48

/* commit.c */
void commit_keep_error(wd_commit_t *c, wd_error_t *err);
bool commit_set_phase(wd_commit_t *c, wd_phase_t to, const char *why);
void commit_fault_kill(wd_commit_t *c, const char *point);
void commit_fault_point(wd_commit_t *c, const char *point);
bool commit_stop_expired(wd_commit_t *c);
int commit_stop_budget_ms(wd_commit_t *c, int cap_ms);
void commit_serve(wd_commit_t *c, int ms);
void commit_unpause(wd_commit_t *c);
wd_recovery_t commit_recovery_view(wd_commit_t *c);
void commit_reset_open(wd_commit_t *c, const char *why);
void commit_group_commit(wd_commit_t *c, bool now);
bool commit_deferred(const wd_commit_t *c);
wd_error_t *commit_run_phases(wd_commit_t *c, volatile const int *stop, bool *aborted, int mode);

/* commit_end.c */
wd_error_t *commit_rewind_consumer(wd_commit_t *c);
void commit_drop_next(wd_commit_t *c);
wd_error_t *commit_abort(wd_commit_t *c, const char *why, const wd_error_t *cause);
wd_error_t *commit_abort_if_abortable(wd_commit_t *c, wd_error_t *err, bool *aborted);
wd_error_t *commit_txn(wd_commit_t *c, volatile const int *stop, bool *aborted, bool async);
void commit_promote(wd_commit_t *c);
wd_error_t *commit_release_next(wd_commit_t *c, bool *ab);

#endif
