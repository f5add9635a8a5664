/*
 * app/runtime/commit.c — the commit coordinator (see commit.h and docs/exactly-once.md).
 */
#include "app/runtime/commit.h"
#include "app/runtime/tasks.h"
#include "common/clock.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/runtime/standby.h"
#include "common/buf.h"
#include "common/log.h"

#define WD_PREPARED_KEY "commit/prepared"
#define WD_NUMBER_KEY "commit/number"
#define WD_UNDO_KEY "commit/undo"
#define WD_PREPARED_MAGIC "WDP1" /* before issue 22: the whole state batch (still recovered) */
#define WD_MARKER_MAGIC "WDP2"   /* the small marker of "write once with an undo image" */

/* A commit's phases, in order (wd_commit_run moves it on one at a time). */
typedef enum {
  WD_PHASE_IDLE = 0,     /* no commit open */
  WD_PHASE_OPEN,         /* records taken since the last commit */
  WD_PHASE_SNAPPED,      /* the state batch is built */
  WD_PHASE_PREPARED,     /* exactly-once: the rows, their undo image and the marker are written */
  WD_PHASE_OFFSETS_SENT, /* exactly-once: the offsets are in the transaction */
  WD_PHASE_COMMITTED     /* the output is committed (or acknowledged): finalize next */
} wd_phase_t;

/* One assigned partition and what its assignment decided. */
typedef struct wd_ctp {
  const char *topic;
  int32_t partition;
  int64_t start;       /* the starting offset on_assign answers */
  int64_t restore_end; /* records below it only rebuild state (no output); -1: none */
  int64_t g_end;       /* the group's committed offset a rebuild started from (-1: none): offsets up
                          to it are never sent to the transaction (they would move the group back) */
  int64_t group;       /* exactly-once: the group's committed offset at the assignment (-1: none) */
  int64_t stored;      /* the offset stored with the local state at the assignment (-1: none) */
  int64_t placed;      /* the offset it was assigned at (held until wd_commit_init_step decides) */
  bool stateless;      /* only forwarded to a repartition topic (conf.stateless_topics): no task's */
} wd_ctp_t;

/* The changelog restores of one assignment: tasks[0..n) each from from[i] (0: the beginning, its
 * key range deleted at the assignment; else a standby copy's position) to end[i], read together by
 * one read_committed consumer of the state changelog topic. */
typedef struct wd_restore {
  size_t n, left;     /* tasks; tasks not finished yet */
  uint32_t *tasks;
  int64_t *from, *end; /* end: the partition's end offset when the restore began; <= 0: nothing */
  uint64_t *records;
  bool *finished;
  wd_consumer_t *cons; /* NULL until the first step */
  wd_store_batch_t *b; /* rows read and not written yet */
  size_t nb;
  wd_kmsg_t *msgs;
  double t0, last_progress;
  uint64_t copies;     /* tasks caught up from a standby copy */
  double retry_since;  /* the first failure of the end offsets' request (retry_transient), 0: none */
} wd_restore_t;

static void restore_free(wd_restore_t *r);
struct wd_commit;
static bool task_current(const struct wd_commit *c, uint32_t task);

struct wd_commit {
  wd_commit_conf_t conf;
  wd_collector_t *coll; /* borrowed: the one path into the producer and the transaction */
  wd_consumer_t *cons;
  wd_state_t *state;
  wd_store_t *store;
  wd_phase_t phase;
  uint64_t number;   /* last finalized commit */
  double opened;     /* monotonic s of the open commit's first record */
  uint64_t records;  /* records noted in the open commit */
  wd_tp_offset_t *in; /* next offsets per partition of the open commit */
  size_t nin, cap_in;
  wd_store_batch_t *b; /* the open commit's state batch: its rows (with their priors, join/state.h) */
  wd_store_batch_t *fb; /* exactly-once: what finalize writes (offsets, number, history); at-least-once
                         * these go into b */
  wd_buf_t undo;        /* the undo image written at prepare (an encoded batch), for an abort */
  bool prepared;        /* the rows, the undo image and the marker are in the store */
  uint64_t snap;
  bool snapped;        /* snap holds this commit's rows (not yet written) */
  wd_tp_offset_t *t;   /* the offsets sent to the transaction */
  size_t nt, cap_t;
  double t0;           /* when the commit's completion started */
  /* assignment */
  wd_ctp_t *tps;
  size_t ntps, cap_tps;
  size_t nrestoring;   /* partitions of RESTORING tasks not yet running */
  bool any_gend;       /* some assigned partition has a g_end */
  wd_tasks_t *tasks;   /* the task table (app/runtime/tasks.h) */
  size_t nholds;       /* task partitions held (wd_task_part_t.held_at >= 0) */
  bool holds_dirty;    /* a record was held since the last wd_commit_after_batch */
  bool init_pending;   /* an assignment recorded, its tasks CREATED, to decide (wd_commit_init_step) */
  double init_since;   /* the first failed try of the group's offsets for it (retry_transient) */
  /* batch in hand */
  bool in_batch, batch_invalid;
  int in_callback; /* depth of consumer callbacks we are in */
  bool paused;
  /* at-least-once group commits (monitoring), at most once a second */
  wd_tp_offset_t *gc;
  size_t ngc, cap_gc;
  double last_gc;
  wd_error_t *cb_err; /* fatal error inside a callback */
  /* the state changelog restores of the current assignment, run in the poll loop in slices
   * (wd_commit_restore_step, docs/runtime.md "Restoration in the poll loop") */
  struct wd_restore *rs;
  volatile const int *stop; /* the pipeline's stop request (wd_commit_set_stop); may be NULL */
  double stop_deadline;     /* monotonic s: a stop gives up waiting past it (0: not stopping yet) */
  bool changelog_sent; /* the open commit's changelog records are produced */
  wd_error_t *send_err;
  uint64_t restored_records; /* changelog records restored (all tasks, this process) */
  /* scale-out with lookups (wd_commit_set_global): the global inputs of the open commit, the
   * per-process group and its marker partition */
  wd_consumer_t *gcons;
  const char *marker_topic;
  bool global;         /* wd_commit_set_global (else only the marker: wd_commit_set_marker) */
  bool reconcile;      /* wd_commit_set_reconcile: caught-up tasks are RECONCILING before RUNNING */
  size_t nrebuild;     /* tasks in a rebuild phase (wd_task_t.rebuild; app/runtime/rebuild.h) */
  wd_tp_offset_t *gin;
  size_t ngin, cap_gin;
  /* issue 22 point 2 (docs/exactly-once.md "A commit that does not block the pipeline"): the
   * transaction of the commit in OFFSETS_SENT commits in the background (committing) while the
   * next commit's batches are merged; their inputs are noted in nx and their output is held by the
   * collector until the commit is finalized (promote), or dropped with it when it aborts */
  bool committing;
  double committing_since;
  bool dp_seen; /* the fault point during-produce was passed in the open commit */
  bool no_overlap; /* WIDEN_COMMIT_OVERLAP=0 */
  uint64_t naborts; /* commits aborted (wd_commit_abort) */
  uint64_t overlapped; /* commits finalized after committing in the background */
  struct {
    wd_tp_offset_t *in, *gin;
    size_t nin, cap_in, ngin, cap_gin;
    uint64_t records;
    double opened; /* 0: nothing noted */
  } nx;
  /* fault hook */
  char fault[32];
  long fault_left;
  bool fault_fatal; /* WIDEN_FAULT=fatal-<point>: the producer turns fatal there instead of a kill */
  bool fault_repeat; /* WIDEN_FAULT=<point>:<n>+: at the n-th time and every time after */
};

/* The fault hook (docs/exactly-once.md): whether the configured point is reached for the n-th
 * time now; fault_kill then kills the process. */
static bool fault_due(wd_commit_t *c, const char *point) {
  if (!c->fault[0] || strcmp(c->fault, point) != 0) return false;
  return --c->fault_left == 0 || (c->fault_repeat && c->fault_left < 0);
}

static void fault_kill(wd_commit_t *c, const char *point) {
  wd_log(WD_LOG_WARN, "commit", "fault hook: killing the process at %s (commit %" PRIu64 ")", point, c->number + 1);
  fflush(NULL);
  raise(SIGKILL);
}

/* INVALID_TXN_STATE (librdkafka's rd_kafka_resp_err_t): what the fault hook's fatal error carries,
 * as a transaction coordinator's answer after a broker restart */
#define WD_FAULT_FATAL_CODE 48

static void fault_point(wd_commit_t *c, const char *point) {
  if (!fault_due(c, point)) return;
  if (c->fault_fatal) wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
  else fault_kill(c, point);
}

static void on_opening(void *ctx);
static int collector_budget(void *ctx, int cap_ms);

wd_error_t *wd_commit_new(const wd_commit_conf_t *conf, wd_collector_t *coll, wd_consumer_t *cons, wd_state_t *state,
                          wd_store_t *store, wd_commit_t **out) {
  *out = NULL;
  wd_commit_t *c = calloc(1, sizeof(*c));
  if (!c || !(c->b = wd_store_batch_new()) || !(c->fb = wd_store_batch_new()) || wd_tasks_new(&c->tasks)) {
    if (c) wd_store_batch_destroy(c->fb);
    if (c) wd_store_batch_destroy(c->b);
    free(c);
    return wd_error_nomem();
  }
  c->conf = *conf;
  wd_standby_set_tasks(c->conf.standby, c->tasks); /* which tasks are this process's (one table) */
  if (c->conf.interval_ms < 0) c->conf.interval_ms = 0;
  if (c->conf.txn_timeout_ms <= 0) c->conf.txn_timeout_ms = 60000;
  c->coll = coll;
  if (coll) wd_collector_set_opening(coll, on_opening, c);
  if (coll) wd_collector_set_budget(coll, collector_budget, c);
  c->cons = cons;
  c->state = state;
  c->store = store;
  /* exactly-once writes each commit's rows before its outcome is known: with their prior entries */
  if (state) wd_state_set_undo(state, c->conf.exactly_once);
  /* issue 22 point 2: WIDEN_COMMIT_OVERLAP=0 waits for every commit as before (for interleaved
   * before/after benchmarks, bench/README.md) */
  const char *ov = getenv("WIDEN_COMMIT_OVERLAP");
  c->no_overlap = ov && !strcmp(ov, "0");
  const char *f = getenv("WIDEN_FAULT");
  if (f && *f) {
    const char *colon = strchr(f, ':');
    if (!strncmp(f, "fatal-", 6)) {
      c->fault_fatal = true;
      f += 6;
    }
    size_t len = colon ? (size_t)(colon - f) : strlen(f);
    if (len < sizeof(c->fault)) {
      memcpy(c->fault, f, len);
      c->fault[len] = 0;
      char *end = NULL;
      c->fault_left = colon ? strtol(colon + 1, &end, 10) : 1;
      if (c->fault_left < 1) c->fault_left = 1;
      c->fault_repeat = end && *end == '+';
      wd_log(WD_LOG_WARN, "commit", "fault hook armed: %s at the %ld. time%s at %s",
             c->fault_fatal ? "a fatal producer error" : "SIGKILL", c->fault_left,
             c->fault_repeat ? " and every time after" : "", c->fault);
    }
  }
  *out = c;
  return NULL;
}

void wd_commit_destroy(wd_commit_t *c) {
  if (!c) return;
  restore_free(c->rs);
  wd_store_batch_destroy(c->b);
  wd_store_batch_destroy(c->fb);
  wd_buf_free(&c->undo);
  free(c->in);
  free(c->t);
  free(c->tps);
  free(c->gc);
  free(c->gin);
  free(c->nx.in);
  free(c->nx.gin);
  wd_tasks_destroy(c->tasks);
  wd_error_destroy(c->cb_err);
  wd_error_destroy(c->send_err);
  free(c);
}

uint64_t wd_commit_number(const wd_commit_t *c) { return c->number; }

wd_error_t *wd_commit_take_error(wd_commit_t *c) {
  wd_error_t *e = c->cb_err;
  c->cb_err = NULL;
  return e;
}

static void keep_cb_error(wd_commit_t *c, wd_error_t *err) {
  if (!err) return;
  if (c->cb_err) wd_error_destroy(err);
  else c->cb_err = err;
}

/* Whether a stop has used up its time (docs/runtime.md "Stop"): a second signal at once; a first
 * one once transaction.timeout.ms has passed since a wait first saw it (past it the broker aborts
 * the open transaction by itself, so waiting longer for a broker that is away gains nothing). */
static bool stop_expired(wd_commit_t *c) {
  if (!c->stop || !*c->stop) return false;
  if (*c->stop >= 2) return true;
  double now = wd_mono_s();
  if (c->stop_deadline == 0) c->stop_deadline = now + (c->conf.txn_timeout_ms > 0 ? c->conf.txn_timeout_ms : 10000) / 1000.0;
  return now >= c->stop_deadline;
}

/* ms left before a stop gives up (a long operation's timeout), at most cap_ms, at least 100. */
static int stop_budget_ms(wd_commit_t *c, int cap_ms) {
  if (!c->stop || !*c->stop) return cap_ms;
  (void)stop_expired(c);
  double left = (c->stop_deadline - wd_mono_s()) * 1000.0;
  if (left < 100) return 100;
  return left < cap_ms ? (int)left : cap_ms;
}

void wd_commit_set_stop(wd_commit_t *c, volatile const int *stop) { c->stop = stop; }

/* The collector's stop budget (wd_collector_set_budget): 0 once the stop is past its time. */
static int collector_budget(void *ctx, int cap_ms) {
  wd_commit_t *c = ctx;
  return stop_expired(c) ? 0 : stop_budget_ms(c, cap_ms);
}

void wd_commit_keep_error(wd_commit_t *c, wd_error_t *err) { keep_cb_error(c, err); }

bool wd_commit_stop_expired(wd_commit_t *c) { return stop_expired(c); }

static wd_error_t *stopped_error(wd_error_t *cause, const char *what) {
  wd_error_t *e = wd_error_new(WD_ERR_KAFKA, "E_STOPPED", "stopped while %s (%s): the last commit was not made; its "
                               "records are read again on restart", what, cause ? cause->message : "stop requested");
  wd_error_destroy(cause);
  return e;
}

/* ---- serving the consumer while waiting ------------------------------------------------ */

static void serve(wd_commit_t *c, int ms) {
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

static void unpause(wd_commit_t *c) {
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
    serve(c, slice);
    left -= slice;
    if (c->conf.group && wd_consumer_generation(c->cons) != gen) break;
  }
  if (c->in_batch && c->conf.group && wd_consumer_generation(c->cons) != gen) c->batch_invalid = true;
  unpause(c);
}

/* ---- the stored offsets and the group's --------------------------------------------------- */

/* The offset stored with the state for (topic, partition) into *next (-1: none stored). A read
 * error is an error, never "no state" (that would rebuild or re-emit history): the caller stops
 * with it. Errors: E_STORE_READ (wrapped with the partition). */
static wd_error_t *stored_offset(wd_commit_t *c, const char *topic, int32_t partition, int64_t *next) {
  *next = -1;
  wd_error_t *err = wd_store_get_offset(c->store, topic, partition, next);
  if (err) {
    *next = -1;
    return wd_error_wrap(err, "reading the stored offset of %s[%d] from the state directory (the process stops "
                              "rather than take the partition for one without state)", topic, partition);
  }
  return NULL;
}

/* The group's committed offsets of parts[0..n) into parts[i].offset (-1: none), retried for up
 * to about 60 s while the coordinator does not answer. */
/* A transient Kafka error around a broker restart (a request that timed out, a leader or
 * coordinator that moved: retriable): whether to try again — not stopping, and the first such
 * failure (*since, monotonic s; 0 = none yet) less than bound_s ago. The first is logged at WARN. */
static bool retry_transient(wd_commit_t *c, double *since, double bound_s, const char *what, const wd_error_t *err) {
  if (!err || !err->retriable || stop_expired(c)) return false;
  double now = wd_mono_s();
  if (*since == 0) {
    *since = now;
    wd_log(WD_LOG_WARN, "commit", "%s: %s; retrying for up to %.0f s", what, err->message, bound_s);
  }
  return now - *since < bound_s;
}

static wd_error_t *group_offsets_of(wd_commit_t *c, wd_consumer_t *cons, wd_tp_offset_t *parts, size_t n) {
  wd_error_t *err = NULL;
  double since = 0;
  for (;;) {
    wd_error_destroy(err);
    if (!(err = wd_consumer_committed(cons, parts, n, stop_budget_ms(c, 5000)))) return NULL;
    if (err->retriable && stop_expired(c)) return stopped_error(err, "reading the consumer group's committed offsets");
    /* NOT_COORDINATOR and the like answer at once: a pause between tries, bounded in time */
    if (!retry_transient(c, &since, 60, "reading the group's committed offsets", err)) break;
    wd_sleep_ms(200);
  }
  return err ? wd_error_wrap(err, "E_RECOVER: cannot read the consumer group's committed offsets") : NULL;
}

static wd_error_t *group_offsets(wd_commit_t *c, wd_tp_offset_t *parts, size_t n) {
  return group_offsets_of(c, c->cons, parts, n);
}

/* Scale-out with lookups: whether the transaction of commit `number` committed, by the marker
 * offset of the per-process group (commit.h wd_commit_set_global). *yes false when not enabled. */
static wd_error_t *marker_committed(wd_commit_t *c, uint64_t number, bool *yes) {
  *yes = false;
  if (!c->gcons) return NULL;
  wd_tp_offset_t m = {c->marker_topic, 0, -1};
  wd_error_t *err = group_offsets_of(c, c->gcons, &m, 1);
  if (!err) *yes = m.offset == (int64_t)number;
  return err;
}

/* ---- the prepared record ------------------------------------------------------------------ */

static int put_be(wd_buf_t *out, uint64_t v, int bytes) {
  uint8_t x[8];
  for (int i = 0; i < bytes; i++) x[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
  return wd_buf_append(out, x, (size_t)bytes);
}

static int get_be(const uint8_t *d, size_t len, size_t *at, int bytes, uint64_t *v) {
  if (len - *at < (size_t)bytes) return -1;
  *v = 0;
  for (int i = 0; i < bytes; i++) *v = (*v << 8) | d[*at + (size_t)i];
  *at += (size_t)bytes;
  return 0;
}

/* The prepared marker (docs/exactly-once.md): {magic, number, transactional.id, per target partition
 * (topic, partition, target offset T, stored offset S it moves from), the finalize batch (offsets,
 * number, history: meta entries, a few per input partition)}. Its size depends on the partitions of
 * the commit, never on its rows (those are in the state family, their priors under WD_UNDO_KEY). */
static int encode_marker(wd_commit_t *c, const wd_tp_offset_t *t, const int64_t *from, size_t nt, wd_buf_t *out) {
  const char *tid = c->conf.txn_id ? c->conf.txn_id : "";
  size_t idl = strlen(tid);
  if (wd_buf_append(out, WD_MARKER_MAGIC, 4) || put_be(out, c->number + 1, 8) || put_be(out, idl, 2) ||
      wd_buf_append(out, tid, idl) || put_be(out, nt, 4))
    return -1;
  for (size_t i = 0; i < nt; i++) {
    size_t tl = strlen(t[i].topic);
    if (put_be(out, tl, 2) || wd_buf_append(out, t[i].topic, tl) || put_be(out, (uint32_t)t[i].partition, 4) ||
        put_be(out, (uint64_t)t[i].offset, 8) || put_be(out, (uint64_t)from[i], 8))
      return -1;
  }
  size_t at = out->len;
  if (put_be(out, 0, 8) || wd_store_batch_encode(c->fb, out)) return -1;
  uint64_t blen = out->len - at - 8;
  for (int i = 0; i < 8; i++) out->data[at + (size_t)i] = (uint8_t)(blen >> (8 * (7 - i)));
  return 0;
}

typedef struct {
  bool v2;           /* a WDP2 marker (else the WDP1 record of earlier versions) */
  uint64_t number;
  char *txn_id;      /* v2: the transactional.id that prepared it */
  wd_tp_offset_t *t; /* topics point into `topics` */
  int64_t *from;     /* v2: the stored offsets S of the targets */
  size_t nt;
  char *topics;
  const uint8_t *batch; /* v1: the state batch; v2: the finalize batch */
  size_t blen;
} wd_prepared_t;

static void prepared_free(wd_prepared_t *pr) {
  free(pr->t);
  free(pr->from);
  free(pr->topics);
  free(pr->txn_id);
  memset(pr, 0, sizeof(*pr));
}

static int decode_prepared(const uint8_t *d, size_t len, wd_prepared_t *pr) {
  size_t at = 4;
  uint64_t v = 0, nt = 0;
  memset(pr, 0, sizeof(*pr));
  if (len < 4) return -1;
  if (memcmp(d, WD_MARKER_MAGIC, 4) == 0) pr->v2 = true;
  else if (memcmp(d, WD_PREPARED_MAGIC, 4) != 0) return -1;
  if (get_be(d, len, &at, 8, &pr->number)) return -1;
  if (pr->v2) {
    if (get_be(d, len, &at, 2, &v) || len - at < v || !(pr->txn_id = malloc(v + 1))) goto bad;
    memcpy(pr->txn_id, d + at, v);
    pr->txn_id[v] = 0;
    at += v;
  }
  if (get_be(d, len, &at, 4, &nt) || nt > len) goto bad;
  pr->t = calloc(nt ? nt : 1, sizeof(*pr->t));
  pr->from = calloc(nt ? nt : 1, sizeof(*pr->from));
  pr->topics = malloc(len + 1); /* every topic name fits in the record */
  if (!pr->t || !pr->from || !pr->topics) goto bad;
  size_t toff = 0;
  for (size_t i = 0; i < nt; i++) {
    if (get_be(d, len, &at, 2, &v) || len - at < v) goto bad;
    memcpy(pr->topics + toff, d + at, v);
    pr->topics[toff + v] = 0;
    pr->t[i].topic = pr->topics + toff;
    toff += v + 1;
    at += v;
    if (get_be(d, len, &at, 4, &v)) goto bad;
    pr->t[i].partition = (int32_t)(uint32_t)v;
    if (get_be(d, len, &at, 8, &v)) goto bad;
    pr->t[i].offset = (int64_t)v;
    if (pr->v2) {
      if (get_be(d, len, &at, 8, &v)) goto bad;
      pr->from[i] = (int64_t)v;
    }
  }
  pr->nt = nt;
  if (get_be(d, len, &at, 8, &v) || len - at != v) goto bad;
  pr->batch = d + at;
  pr->blen = v;
  return 0;
bad:
  prepared_free(pr);
  return -1;
}

static int put_number(wd_store_batch_t *b, uint64_t n) {
  char text[24];
  int len = snprintf(text, sizeof(text), "%" PRIu64, n);
  return wd_store_batch_set_meta(b, WD_NUMBER_KEY, (const uint8_t *)text, (size_t)len);
}

wd_error_t *wd_commit_recover(wd_commit_t *c, volatile const int *stop) {
  wd_error_t *err = NULL;
  uint8_t *val = NULL;
  size_t vlen = 0;
  wd_prepared_t pr = {0};
  wd_store_batch_t *b = NULL;
  if ((err = wd_store_get_meta(c->store, WD_NUMBER_KEY, &val, &vlen))) goto done;
  if (val) {
    char text[24];
    size_t n = vlen < sizeof(text) - 1 ? vlen : sizeof(text) - 1;
    memcpy(text, val, n);
    text[n] = 0;
    c->number = strtoull(text, NULL, 10);
    free(val);
    val = NULL;
  }
  if (!c->conf.exactly_once) {
    /* a commit left prepared by an exactly-once run (its rows are written, its offsets are not):
     * at-least-once takes its rows back and reads its records again */
    if ((err = wd_store_get_meta(c->store, WD_PREPARED_KEY, &val, &vlen)) || !val) goto done;
    if (vlen < 4 || memcmp(val, WD_MARKER_MAGIC, 4) != 0) goto done; /* WDP1: nothing was written */
    free(val);
    val = NULL;
    if ((err = wd_store_get_meta(c->store, WD_UNDO_KEY, &val, &vlen))) goto done;
    if (!(b = wd_store_batch_new())) {
      err = wd_error_nomem();
      goto done;
    }
    if (!val || wd_store_batch_decode(b, val, vlen)) {
      err = wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the undo image of a prepared commit is %s",
                         val ? "corrupt" : "missing");
      goto done;
    }
    if (wd_store_batch_delete_meta(b, WD_PREPARED_KEY) || wd_store_batch_delete_meta(b, WD_UNDO_KEY)) {
      err = wd_error_nomem();
      goto done;
    }
    if (!(err = wd_store_write_sync(c->store, b)))
      wd_log(WD_LOG_INFO, "commit", "a commit left prepared by an exactly-once run was taken back (undo image); "
             "at-least-once reads its records again");
    goto done;
  }
  /* 1. fence an earlier incarnation and let the broker resolve its open transaction */
  for (int attempt = 0;; attempt++) {
    if (!(err = wd_collector_init(c->coll, 30000))) break;
    wd_collector_poll(c->coll); /* an unreachable broker: its error callback says "cannot reach HOST:PORT" once */
    bool unreachable = wd_collector_unreachable(c->coll); /* then waited for, as the consumer does */
    if (!err->retriable || (attempt >= 4 && !unreachable) || (stop && *stop) || stop_expired(c)) goto done;
    /* while unreachable the "cannot reach" line says it; the error itself every 5th attempt (the
     * flag clears only with a delivery: a broker back but still refusing stays visible) */
    wd_log(unreachable && attempt % 5 != 4 ? WD_LOG_DEBUG : WD_LOG_WARN, "commit", "%s; retrying", err->message);
    wd_error_destroy(err);
    err = NULL;
  }
  /* 2. a commit prepared before a crash: did its transaction commit? */
  if ((err = wd_store_get_meta(c->store, WD_PREPARED_KEY, &val, &vlen))) goto done;
  if (!val) goto done;
  if (decode_prepared(val, vlen, &pr)) {
    err = wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the prepared commit record in the state store does not decode");
    goto done;
  }
  if (pr.v2 && c->conf.txn_id && pr.txn_id[0] && strcmp(pr.txn_id, c->conf.txn_id) != 0)
    wd_log(WD_LOG_WARN, "commit", "commit %" PRIu64 " was left prepared by transactional.id %s, this process runs as "
           "%s: its transaction is resolved by the broker's transaction timeout, not by this process", pr.number,
           pr.txn_id, c->conf.txn_id);
  bool committed = false;
  if (pr.nt) {
    wd_tp_offset_t *g = calloc(pr.nt, sizeof(*g));
    if (!g) {
      err = wd_error_nomem();
      goto done;
    }
    memcpy(g, pr.t, pr.nt * sizeof(*g));
    err = group_offsets(c, g, pr.nt);
    for (size_t i = 0; !err && i < pr.nt && !committed; i++) {
      int64_t s = -1;
      if (pr.v2) s = pr.from[i];
      else if ((err = stored_offset(c, pr.t[i].topic, pr.t[i].partition, &s))) break;
      committed = g[i].offset == pr.t[i].offset && pr.t[i].offset > s;
    }
    free(g);
    if (err) goto done;
  }
  if (!committed && (err = marker_committed(c, pr.number, &committed))) goto done;
  if (!(b = wd_store_batch_new())) {
    err = wd_error_nomem();
    goto done;
  }
  if (pr.v2 && !committed) {
    /* aborted: the rows written at prepare go back to their prior entries (the undo image) */
    free(val);
    val = NULL;
    if ((err = wd_store_get_meta(c->store, WD_UNDO_KEY, &val, &vlen))) goto done;
    if (!val || wd_store_batch_decode(b, val, vlen)) {
      err = wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the undo image of prepared commit %" PRIu64 " is %s",
                         pr.number, val ? "corrupt" : "missing");
      goto done;
    }
  } else if (committed && (wd_store_batch_decode(b, pr.batch, pr.blen) || put_number(b, pr.number))) {
    /* committed: v2 finalizes (the offsets, the number, the history: the rows are written); v1
     * applies its whole state batch */
    err = wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the prepared commit's batch does not decode");
    goto done;
  }
  if (wd_store_batch_delete_meta(b, WD_PREPARED_KEY) || wd_store_batch_delete_meta(b, WD_UNDO_KEY)) {
    err = wd_error_nomem();
    goto done;
  }
  if ((err = wd_store_write_sync(c->store, b))) goto done;
  if (committed) c->number = pr.number;
  wd_log(WD_LOG_INFO, "commit",
         "recovered commit %" PRIu64 " left prepared by the last run: its transaction %s, so its state was %s", pr.number,
         committed ? "committed" : "did not commit",
         committed ? (pr.v2 ? "finalized" : "applied") : (pr.v2 ? "taken back (undo image)" : "discarded"));
done:
  free(val);
  prepared_free(&pr);
  wd_store_batch_destroy(b);
  return err;
}

/* ---- assignment: tasks resume or restore ------------------------------------------------ */

static wd_ctp_t *find_tp(const wd_commit_t *c, const char *topic, int32_t partition) {
  for (size_t i = 0; i < c->ntps; i++)
    if (c->tps[i].partition == partition && (c->tps[i].topic == topic || !strcmp(c->tps[i].topic, topic)))
      return &c->tps[i];
  return NULL;
}

static void group_commit(wd_commit_t *c, bool now);

static bool is_stateless(const wd_commit_t *c, const char *topic) {
  for (size_t i = 0; i < c->conf.nstateless; i++)
    if (!strcmp(c->conf.stateless_topics[i], topic)) return true;
  return false;
}

static uint32_t task_of(const wd_commit_t *c, int32_t partition) {
  return c->conf.per_partition ? (uint32_t)partition : 0;
}

/* Scale-out with lookups (wd_commit_set_global): whether this process owned task continuously up
 * to this assignment. Lookup changes (and reconciles) change a task's rows without moving its
 * input offsets, so the stored offsets equal to the group's do not prove the local rows current:
 * another process may have owned the task meanwhile. Only a task this process kept across the
 * rebalance is trusted: one that became CREATED from SUSPENDED (it was in the assignment revoked last;
 * a lost assignment closes its tasks instead, and a task left out of an assignment is STANDBY or
 * CLOSED from then on; the group protocol is eager, so every assignment follows a revoke). Any
 * other is restored from the state changelog topic. Without global inputs: always true. */
static bool kept_task(wd_commit_t *c, uint32_t task) {
  if (!c->global || !c->conf.changelog_topic) return true;
  const wd_task_t *t = wd_tasks_find(c->tasks, task);
  return t && t->state == WD_TASK_CREATED && t->was_suspended;
}

/* ---- the task table (app/runtime/tasks.h, docs/runtime.md) --------------------------------------------- */

/* Counts the tasks in a rebuild phase (the gate's fast path is off while there are some). */
static void recount_rebuilds(wd_commit_t *c) {
  c->nrebuild = 0;
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) c->nrebuild += wd_tasks_at(c->tasks, i)->rebuild != WD_REBUILD_NONE;
}

static void move_task(wd_commit_t *c, wd_task_t *task, wd_task_state_t to, const char *why) {
  wd_error_t *err = wd_task_move(task, to, why);
  if (err) keep_cb_error(c, err); /* an illegal move is a bug: the pipeline stops with it */
}

/* A task caught up with the group's offsets: RUNNING, or RECONCILING first with lookups under
 * per-partition tasks (its rows' lookup columns recomputed before its first record). */
static void caught_up(wd_commit_t *c, wd_task_t *task, const char *why) {
  move_task(c, task, task->reconcile ? WD_TASK_RECONCILING : WD_TASK_RUNNING, why);
}

/* At an assignment (the callback): every task partition joins its task, CREATED (from SUSPENDED,
 * CLOSED or STANDBY); a task revoked before and not assigned again becomes STANDBY (standby copies
 * on) or CLOSED. Again in wd_commit_init_step, with the partitions' restore ends. */
static void record_tasks(wd_commit_t *c) {
  c->nholds = 0;
  c->holds_dirty = false;
  for (size_t i = 0; i < c->ntps; i++) {
    if (c->tps[i].stateless) continue; /* a raw topic forwarded: no task's */
    wd_task_t *task = wd_tasks_ensure(c->tasks, task_of(c, c->tps[i].partition));
    if (!task) {
      keep_cb_error(c, wd_error_nomem());
      return;
    }
    if (task->state == WD_TASK_SUSPENDED || task->state == WD_TASK_CLOSED || task->state == WD_TASK_STANDBY)
      move_task(c, task, WD_TASK_CREATED, "assigned");
    task->reconcile = c->reconcile; /* lookups under per-partition tasks (wd_commit_set_reconcile) */
    if (!wd_task_add_partition(task, c->tps[i].topic, c->tps[i].partition, c->tps[i].restore_end)) {
      keep_cb_error(c, wd_error_nomem());
      return;
    }
  }
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) {
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    if (task->state == WD_TASK_SUSPENDED) {
      move_task(c, task, c->conf.standby ? WD_TASK_STANDBY : WD_TASK_CLOSED, "not assigned here");
    } else if (task->state == WD_TASK_CLOSED && task->nparts == 0 && c->conf.standby) {
      move_task(c, task, WD_TASK_STANDBY, "not assigned here"); /* closed when its partitions were lost */
    }
  }
}

/* Once the assignment is decided: each CREATED task is RESTORING while some partition must be
 * rebuilt up to the group's offset (or its rows are restored from the state changelog topic, or
 * it is rebuilt on a changed definition), else RUNNING (RECONCILING first with lookups under
 * per-partition tasks). */
static void decide_tasks(wd_commit_t *c) {
  for (size_t i = 0; c->rs && i < c->rs->n; i++) { /* restored from the changelog in the poll loop */
    wd_task_t *task = wd_tasks_find(c->tasks, c->rs->tasks[i]);
    if (task) task->changelog_pending = true;
  }
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) {
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    if (task->state != WD_TASK_CREATED) continue;
    char why[96];
    if (task->changelog_pending) {
      move_task(c, task, WD_TASK_RESTORING, "its rows are restored from the state changelog topic");
    } else if (!task_current(c, task->id) && c->conf.exactly_once && c->conf.group) {
      /* rebuild mode without a state changelog: its old rows are staged from the state before
       * the change (app/runtime/rebuild.c), then rebuilt from the sources */
      task->rebuild = WD_REBUILD_STAGE;
      move_task(c, task, WD_TASK_RESTORING, "its table definition changed: it is rebuilt");
    } else if (task->unreached) {
      snprintf(why, sizeof(why), "%zu of its %zu partition(s) rebuilt up to the group's offsets", task->unreached,
               task->nparts);
      move_task(c, task, WD_TASK_RESTORING, why);
    } else {
      caught_up(c, task, "its state is at the group's offsets");
    }
  }
  recount_rebuilds(c);
}

/* A RESTORING task whose partitions all reached their restore end: it produces output from now
 * on; its held partitions are released after the batch (wd_commit_after_batch). */
static void task_now_running(wd_commit_t *c, wd_task_t *task) {
  for (size_t k = 0; k < task->nparts; k++) {
    wd_ctp_t *t = find_tp(c, task->parts[k].topic, task->parts[k].partition);
    if (t && t->restore_end > 0) {
      t->restore_end = -1;
      c->nrestoring--;
    }
  }
  wd_log(WD_LOG_INFO, "commit", "task %" PRIu32 ": state rebuilt up to the group's committed offsets of all its %zu "
         "partition(s); producing output from here on%s", task->id, task->nparts,
         task->state == WD_TASK_RECONCILING ? ", once reconciled with this process's lookup tables" : "");
}

bool wd_commit_next_reconcile(wd_commit_t *c, uint32_t *task) {
  if (c->rs || c->init_pending) return false; /* after the restores (they rewrite rows of the tasks they restore) and the initialisation */
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) {
    wd_task_t *t = wd_tasks_at(c->tasks, i);
    if (t->state == WD_TASK_RECONCILING) {
      *task = t->id;
      return true;
    }
  }
  return false;
}

wd_error_t *wd_commit_reconciled(wd_commit_t *c, uint32_t task) {
  wd_task_t *t = wd_tasks_find(c->tasks, task);
  if (!t || t->state != WD_TASK_RECONCILING) return NULL; /* a rebalance meanwhile took it */
  wd_error_t *err = wd_task_move(t, WD_TASK_RUNNING, "reconciled with this process's lookup tables");
  c->holds_dirty = true; /* its held partitions are released after the batch */
  return err;
}

bool wd_commit_task_owned(void *ctx, uint32_t task) {
  const wd_commit_t *c = ctx;
  return wd_tasks_active(c->tasks, task);
}

wd_gate_t wd_commit_gate(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset) {
  if (!c->nrestoring && !c->nholds && !c->rs && !c->nrebuild && !c->reconcile) return WD_GATE_RUN;
  if (is_stateless(c, topic)) return WD_GATE_RUN;
  wd_task_t *task = wd_tasks_find(c->tasks, task_of(c, partition));
  if (!task) return WD_GATE_RUN;
  wd_task_part_t *part = wd_task_partition(task, topic, partition);
  bool was_held = part && part->held_at >= 0, now_running = false;
  wd_gate_t g = wd_task_gate(task, part, offset, &now_running);
  if (now_running) task_now_running(c, task);
  if (g == WD_GATE_HOLD) {
    c->holds_dirty = true;
    c->nholds += !was_held;
  }
  return g;
}

wd_error_t *wd_commit_after_batch(wd_commit_t *c) {
  wd_error_t *err = NULL;
  if (!c->cons || (!c->nrestoring && !c->nholds && !c->rs && !c->nrebuild && !c->reconcile)) return NULL;
  for (size_t i = 0; i < wd_tasks_count(c->tasks) && !err; i++) {
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    /* a partition whose position reached its restore end without a record past it (idle, or a
     * transaction marker last) */
    for (size_t k = 0; k < task->nparts && task->state == WD_TASK_RESTORING; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (pt->reached) continue;
      int64_t pos = wd_consumer_position(c->cons, pt->topic, pt->partition);
      if (task->rebuild == WD_REBUILD_STAGE) continue; /* its partitions are moved at the sources phase */
      if (pos >= pt->restore_end && wd_task_part_reached(task, pt)) {
        if (task->rebuild == WD_REBUILD_SOURCES) { /* rebuilt: the switch first (app/runtime/rebuild.c) */
          task->rebuild = WD_REBUILD_DIFF;
          continue;
        }
        caught_up(c, task, "all its partitions reached the group's committed offsets");
        task_now_running(c, task);
      }
    }
    for (size_t k = 0; k < task->nparts && !err; k++) {
      wd_task_part_t *pt = &task->parts[k];
      if (pt->held_at < 0) continue;
      if (task->state == WD_TASK_RUNNING) {
        err = wd_consumer_release_partition(c->cons, pt->topic, pt->partition, pt->held_at);
        wd_log(WD_LOG_DEBUG, "commit", "%s[%d] released at %" PRId64, pt->topic, pt->partition, pt->held_at);
        pt->held_at = -1;
        c->nholds--;
      } else if (c->holds_dirty) {
        /* read again from its first held record once the task runs */
        err = wd_consumer_hold_partition(c->cons, pt->topic, pt->partition, pt->held_at);
      }
    }
  }
  c->holds_dirty = false;
  return err;
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
    wd_task_t *t = wd_tasks_find(c->tasks, task_of_key(key, klen));
    if (t && t->rebuild != WD_REBUILD_NONE) return 0;
  }
  c->send_err = wd_collector_send(c->coll, WD_OUT_STATE_CHANGELOG, c->conf.changelog_topic, (int32_t)task_of_key(key, klen),
                                  key, klen, val, val ? vlen : 0);
  return c->send_err ? 1 : 0;
}


static void restore_free(wd_restore_t *r) {
  if (!r) return;
  if (r->cons) wd_consumer_destroy(r->cons);
  wd_store_batch_destroy(r->b);
  free(r->tasks);
  free(r->from);
  free(r->end);
  free(r->records);
  free(r->finished);
  free(r->msgs);
  free(r);
}

static int64_t restore_on_assign(void *ctx, const char *topic, int32_t partition) {
  (void)topic;
  const wd_restore_t *r = ctx;
  for (size_t i = 0; i < r->n; i++)
    if ((int32_t)r->tasks[i] == partition) return r->from[i] > 0 ? r->from[i] : WD_OFFSET_BEGINNING;
  return WD_OFFSET_END;
}

/* A task's restore is done: its rows are all written, so now its partitions' offsets become the
 * group's (rows first, offsets last: a crash before this write restores it again), and it runs. */
static wd_error_t *restore_finish(wd_commit_t *c, wd_restore_t *r, size_t t) {
  wd_error_t *err = NULL;
  wd_task_t *rtask = wd_tasks_find(c->tasks, r->tasks[t]);
  if (!task_current(c, r->tasks[t])) {
    /* rebuild mode: the restored rows are the task's old rows at the group's offsets (no switch
     * mark): they are staged and the task rebuilt (app/runtime/rebuild.c); its offsets stay unset, so a
     * crash meanwhile restores it again */
    r->finished[t] = true;
    r->left--;
    c->restored_records += r->records[t];
    wd_log(WD_LOG_INFO, "rebuild", "task %u: its old rows restored from %s (%" PRIu64 " records); its table "
           "definition changed: it is rebuilt", r->tasks[t], c->conf.changelog_topic, r->records[t]);
    if (rtask) {
      rtask->changelog_pending = false;
      if (rtask->state == WD_TASK_RESTORING) rtask->rebuild = WD_REBUILD_STAGE;
    }
    recount_rebuilds(c);
    return NULL;
  }
  wd_store_batch_t *b = wd_store_batch_new();
  if (!b) return wd_error_nomem();
  for (size_t i = 0; i < c->ntps; i++) {
    const wd_ctp_t *tp = &c->tps[i];
    if (is_stateless(c, tp->topic) || task_of(c, tp->partition) != r->tasks[t] || tp->start < 0) continue;
    if (wd_store_batch_set_offset(b, tp->topic, tp->partition, tp->start)) {
      wd_store_batch_destroy(b);
      return wd_error_nomem();
    }
  }
  err = wd_store_write_sync(c->store, b);
  wd_store_batch_destroy(b);
  if (err) return err;
  r->finished[t] = true;
  r->left--;
  c->restored_records += r->records[t];
  wd_task_t *task = wd_tasks_find(c->tasks, r->tasks[t]);
  char why[200];
  snprintf(why, sizeof(why), "%s from %s[%u]: %" PRIu64 " records in %.2f s",
           r->from[t] > 0 ? "caught up (standby copy)" : "restored", c->conf.changelog_topic, r->tasks[t],
           r->records[t], wd_mono_s() - r->t0);
  if (task) {
    task->changelog_pending = false;
    if (task->state == WD_TASK_RESTORING) {
      if (task->unreached == 0) {
        if ((err = wd_task_move(task, task->reconcile ? WD_TASK_RECONCILING : WD_TASK_RUNNING, why))) return err;
      }
    }
  } else {
    wd_log(WD_LOG_INFO, "commit", "task %u %s", r->tasks[t], why);
  }
  return NULL;
}

bool wd_commit_changelog_restoring(const wd_commit_t *c) { return c->rs != NULL; }

wd_error_t *wd_commit_restore_step(wd_commit_t *c, int max_ms) {
  wd_restore_t *r = c->rs;
  wd_error_t *err = NULL;
  wd_tp_offset_t *ends = NULL, *pos = NULL;
  size_t nends = 0, npos = 0;
  if (!r) return NULL;
  if (!r->cons) { /* the first slice: the consumer and where each task ends */
    const char *topics[] = {c->conf.changelog_topic};
    if ((err = wd_consumer_new(c->conf.restore_conf, topics, 1, restore_on_assign, r, &r->cons))) goto done;
    if ((err = wd_consumer_end_offsets(r->cons, 30000, &ends, &nends))) {
      /* a leader that moved near a broker restart: the next slice asks again (bounded) */
      if (retry_transient(c, &r->retry_since, 60, "reading the state changelog's end offsets", err)) {
        wd_error_destroy(err);
        err = NULL;
        wd_consumer_destroy(r->cons);
        r->cons = NULL;
      }
      goto done;
    }
    r->retry_since = 0;
    for (size_t t = 0; t < r->n; t++) {
      r->end[t] = 0;
      for (size_t i = 0; i < nends; i++)
        if (ends[i].partition == (int32_t)r->tasks[t]) r->end[t] = ends[i].offset;
      if (r->from[t] > 0 && r->from[t] >= r->end[t]) r->end[t] = 0; /* the standby copy is at the end already */
    }
    r->t0 = r->last_progress = wd_mono_s();
    wd_log(WD_LOG_INFO, "commit", "restoring %zu task(s) from %s in the poll loop (%" PRIu64 " from standby copies); "
           "their records wait until each is restored", r->n, c->conf.changelog_topic, r->copies);
  }
  size_t n = 0;
  double until = wd_mono_s() + max_ms / 1000.0;
  for (;;) { /* a slice: batches while they come, up to max_ms */
  double left_ms = (until - wd_mono_s()) * 1000.0;
  if ((err = wd_consumer_poll_batch(r->cons, 1000, left_ms > 50 ? 50 : left_ms < 1 ? 1 : (int)left_ms, r->msgs, &n)))
    goto done;
  for (size_t i = 0; i < n; i++) {
    size_t t = 0;
    while (t < r->n && (int32_t)r->tasks[t] != r->msgs[i].partition) t++;
    if (t == r->n || r->finished[t]) continue;
    int rc = r->msgs[i].value ? wd_store_batch_put(r->b, r->msgs[i].key, r->msgs[i].key_len, r->msgs[i].value,
                                                   r->msgs[i].value_len)
                              : wd_store_batch_delete(r->b, r->msgs[i].key, r->msgs[i].key_len);
    if (rc) {
      wd_kmsg_release(r->msgs, n);
      err = wd_error_nomem();
      goto done;
    }
    r->nb++;
    r->records[t]++;
  }
  wd_kmsg_release(r->msgs, n);
  if (n) r->last_progress = wd_mono_s();
  if (r->nb >= 5000) {
    if ((err = wd_store_write(c->store, r->b))) goto done;
    wd_store_batch_clear(r->b);
    r->nb = 0;
  }
  if (!n || wd_mono_s() >= until) break;
  }
  if ((r->nb >= 5000 || n == 0) && r->nb) {
    if ((err = wd_store_write(c->store, r->b))) goto done;
    wd_store_batch_clear(r->b);
    r->nb = 0;
  }
  if ((err = wd_consumer_assignment(r->cons, &pos, &npos))) goto done;
  for (size_t t = 0; t < r->n && !err; t++) {
    if (r->finished[t]) continue;
    bool reached = r->end[t] <= 0;
    for (size_t i = 0; i < npos && !reached; i++)
      if (pos[i].partition == (int32_t)r->tasks[t] && pos[i].offset >= r->end[t]) reached = true;
    if (!reached) continue;
    if (r->nb) { /* its last rows first */
      if ((err = wd_store_write(c->store, r->b))) break;
      wd_store_batch_clear(r->b);
      r->nb = 0;
    }
    err = restore_finish(c, r, t);
  }
  if (!err && r->left && wd_mono_s() - r->last_progress > 60.0)
    err = wd_error_new(WD_ERR_KAFKA, "E_RESTORE", "restoring %zu task(s) from %s: no progress for 60 s", r->left,
                       c->conf.changelog_topic);
  if (!err && !r->left) {
    wd_log(WD_LOG_INFO, "commit", "%zu task(s) restored from %s in %.2f s", r->n, c->conf.changelog_topic,
           wd_mono_s() - r->t0);
    restore_free(r);
    c->rs = NULL;
  }
done:
  free(ends);
  free(pos);
  return err;
}

/* Takes tasks[0..n) and from[0..n) (allocated) as the restores of this assignment. */
static wd_error_t *restore_plan(wd_commit_t *c, uint32_t *tasks, int64_t *from, size_t n, size_t copies) {
  wd_restore_t *r = calloc(1, sizeof(*r));
  if (!r || !(r->end = calloc(n, sizeof(*r->end))) || !(r->records = calloc(n, sizeof(*r->records))) ||
      !(r->finished = calloc(n, sizeof(*r->finished))) || !(r->msgs = calloc(1000, sizeof(*r->msgs))) ||
      !(r->b = wd_store_batch_new())) {
    free(tasks);
    free(from);
    restore_free(r);
    return wd_error_nomem();
  }
  r->tasks = tasks;
  r->from = from;
  r->n = r->left = n;
  r->copies = copies;
  restore_free(c->rs);
  c->rs = r;
  return NULL;
}

uint64_t wd_commit_restored_records(const wd_commit_t *c) { return c->restored_records; }

/* The assignment callback only records (issue 21 point 2, docs/runtime.md "Callbacks only record"):
 * each partition with its stored offset, and its task CREATED. Under a group whose decision needs
 * the group's committed offsets (exactly-once, or partitions only forwarded), the partitions are
 * assigned held and the rest is decided in the poll loop (wd_commit_init_step); otherwise (no
 * group, at-least-once) the stored offsets decide here, with no request to the broker. */
bool wd_commit_on_assign_all(wd_commit_t *c, const wd_tp_offset_t *parts, size_t n) {
  bool hold = false;
  c->in_callback++;
  if (c->in_batch) c->batch_invalid = true;
  if (c->ntps + n > c->cap_tps) {
    size_t cap = (c->ntps + n) * 2;
    wd_ctp_t *t = realloc(c->tps, cap * sizeof(*t));
    if (!t) {
      keep_cb_error(c, wd_error_nomem());
      goto done;
    }
    c->tps = t;
    c->cap_tps = cap;
  }
  size_t nstateless = 0;
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &c->tps[c->ntps++];
    memset(t, 0, sizeof(*t));
    t->topic = parts[i].topic;
    t->partition = parts[i].partition;
    t->restore_end = -1;
    t->g_end = -1;
    t->group = -1;
    t->stateless = is_stateless(c, parts[i].topic);
    nstateless += t->stateless;
    wd_error_t *err = stored_offset(c, parts[i].topic, parts[i].partition, &t->stored);
    if (err) {
      keep_cb_error(c, err);
      goto done;
    }
    int64_t s = t->stored;
    if (!c->conf.group)
      t->start = c->conf.replay_from_stored && s >= 0 ? s : WD_OFFSET_BEGINNING;
    else
      t->start = s >= 0 ? s : (c->conf.latest_when_empty ? WD_OFFSET_STORED : WD_OFFSET_BEGINNING);
  }
  /* (the tasks it gives are this process's from here on: the standby copies read that,
   * wd_tasks_active) */
  wd_standby_set_ready(c->conf.standby); /* the copies of the others' tasks from now on */
  if (c->conf.group && (c->conf.exactly_once || nstateless)) {
    /* decided in the poll loop, with the group's committed offsets: held until then at an
     * explicit offset (the stored one, else 0), where a paused partition waits without asking the
     * broker anything. At the group's committed offset librdkafka asked for it and, with none,
     * looked the beginning up (ListOffsets); an answer that came after wd_commit_init_step had
     * assigned the partition again was dropped as outdated but restarted librdkafka's offset
     * query timer, which 500 ms later looked the beginning up again and moved the running
     * partition back to it: its records were read twice (docs/runtime.md) */
    for (size_t i = 0; i < c->ntps; i++) c->tps[i].placed = c->tps[i].stored >= 0 ? c->tps[i].stored : 0;
    record_tasks(c);
    c->init_pending = true;
    c->init_since = 0;
    hold = true;
    wd_log(WD_LOG_DEBUG, "commit", "%zu partition(s) assigned: their tasks are initialised in the poll loop", n);
    goto done;
  }
  size_t fresh = 0;
  for (size_t i = 0; i < c->ntps; i++) {
    c->tps[i].placed = c->tps[i].start;
    fresh += c->tps[i].start < 0 && !c->tps[i].stateless;
  }
  if (fresh)
    wd_log(WD_LOG_INFO, "commit",
           "%zu of %zu assigned partitions have no state in this directory: read from the %s to build their rows "
           "(at-least-once: if the group consumed them before, downstream sees those changes again)",
           fresh, n, c->conf.latest_when_empty ? "end (auto.offset.reset=latest)" : "beginning");
  record_tasks(c);
  decide_tasks(c);
done:
  c->in_callback--;
  return hold;
}

bool wd_commit_initialising(const wd_commit_t *c) { return c->init_pending; }

/* The decision of an assignment with the group's committed offsets g[i] of c->tps[i] (issue 21:
 * in the poll loop): where each partition starts, which tasks restore (from the state changelog
 * topic, planned for wd_commit_restore_step) or rebuild from the sources, and their key ranges and
 * offsets dropped (rows first, offsets last). */
static wd_error_t *decide_assignment(wd_commit_t *c, const wd_tp_offset_t *g) {
  wd_error_t *err = NULL;
  size_t n = c->ntps;
  wd_store_batch_t *b = NULL;
  bool *drop = NULL, *lead = NULL; /* the task goes / the first assigned partition of a task that goes */
  /* stateless partitions (forwarded to a repartition topic): the group's committed offset */
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &c->tps[i];
    if (!t->stateless) continue;
    int64_t o = g[i].offset;
    /* at-least-once commits the group's offsets at most once a second: the offset stored here is
     * further when this process was the partition's last owner (nothing is skipped: records
     * before it were forwarded by this process) */
    if (!c->conf.exactly_once && t->stored > o) o = t->stored;
    t->start = o >= 0 ? o : (c->conf.latest_when_empty ? WD_OFFSET_STORED : WD_OFFSET_BEGINNING);
  }
  if (!c->conf.exactly_once) {
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++) fresh += c->tps[i].start < 0 && !c->tps[i].stateless;
    if (fresh)
      wd_log(WD_LOG_INFO, "commit",
             "%zu of %zu assigned partitions have no state in this directory: read from the %s to build their rows "
             "(at-least-once: if the group consumed them before, downstream sees those changes again)",
             fresh, n, c->conf.latest_when_empty ? "end (auto.offset.reset=latest)" : "beginning");
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
    wd_ctp_t *t = &c->tps[i];
    if (t->stateless) continue;
    /* (a task the group never committed has no rows anywhere: nothing to restore) */
    t->group = g[i].offset; /* a rebuild reads its task's partitions up to it */
    uint32_t task = task_of(c, t->partition);
    if (t->stored != g[i].offset || (g[i].offset >= 0 && !kept_task(c, task)) || !task_current(c, task)) {
      /* the whole task goes: mark every assigned partition of it */
      for (size_t k = 0; k < n; k++)
        if (!c->tps[k].stateless && task_of(c, c->tps[k].partition) == task) drop[k] = true;
    }
  }
  for (size_t i = 0; i < n; i++) {
    lead[i] = drop[i];
    for (size_t k = 0; k < i && lead[i]; k++)
      if (drop[k] && task_of(c, c->tps[k].partition) == task_of(c, c->tps[i].partition)) lead[i] = false;
  }
  for (size_t i = 0; i < n; i++) {
    wd_ctp_t *t = &c->tps[i];
    if (t->stateless) continue; /* started at the group's offset above */
    if (!drop[i]) {
      t->start = g[i].offset >= 0 ? g[i].offset : WD_OFFSET_BEGINNING;
      continue;
    }
    if (lead[i]) {
      ntasks_restore++;
      if (!c->conf.changelog_topic && (err = wd_state_drop_task(c->state, task_of(c, t->partition), b))) goto done;
      /* the task's offsets of every source topic go with its rows (also of partitions not
       * assigned now: their rows are gone too) */
      for (size_t k = 0; k < c->conf.ntopics; k++) {
        int rc = c->conf.per_partition ? wd_store_batch_delete_offset(b, c->conf.topics[k], t->partition)
                                       : wd_store_batch_delete_offsets(b, c->conf.topics[k]);
        if (rc) {
          err = wd_error_nomem();
          goto done;
        }
      }
    }
    t->start = WD_OFFSET_BEGINNING;
    if (c->conf.changelog_topic) {
      /* restored from the changelog below: then it starts at the group's committed offset */
      if (g[i].offset >= 0) t->start = g[i].offset; /* stored when the task's restore is done */
      continue;
    }
    t->restore_end = g[i].offset; /* -1: the group never committed: nothing to rebuild silently */
    if (t->restore_end > 0) {
      t->g_end = t->restore_end;
      c->any_gend = true;
      restoring++;
      c->nrestoring++;
    }
  }
  if (ntasks_restore && c->conf.changelog_topic) {
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
      uint32_t task = task_of(c, c->tps[i].partition);
      int64_t from = wd_standby_position(c->conf.standby, task);
      wd_store_batch_clear(rows);
      /* the cached entries go either way; the rows too unless a standby copy is caught up */
      if ((err = wd_state_drop_task(c->state, task, rows))) break;
      if (from > 0) wd_store_batch_clear(rows);
      if ((err = wd_store_write_sync(c->store, rows))) break;
      rtasks[nr] = task;
      rfrom[nr++] = from > 0 ? from : 0;
      ncopies += from > 0;
    }
    /* the offsets of the tasks go (written before the restore begins: a crash during it restores
     * again); the restores themselves run in the poll loop, a slice per turn */
    if (!err) err = wd_store_write_sync(c->store, b);
    if (!err && nr) {
      err = restore_plan(c, rtasks, rfrom, nr, ncopies); /* takes rtasks, rfrom */
    } else {
      free(rtasks);
      free(rfrom);
    }
    wd_store_batch_destroy(rows);
    if (err) goto done;
    wd_log(WD_LOG_INFO, "commit", "%zu task(s) of this assignment are not at the group's committed position "
           "here: %zu to catch up from standby copies, %zu to restore from the beginning of %s",
           ntasks_restore, ncopies, ntasks_restore - ncopies, c->conf.changelog_topic);
  } else if (ntasks_restore) {
    if ((err = wd_store_write_sync(c->store, b))) goto done;
    wd_log(WD_LOG_INFO, "commit",
           "%zu task(s) of this assignment have no local state at the group's committed position: their rows are "
           "rebuilt from the beginning of %zu partition(s), without output until all of a task's partitions reach "
           "the group's committed offsets (a partition that gets there first waits for the others)",
           ntasks_restore, restoring);
  }
done:
  free(drop);
  free(lead);
  wd_store_batch_destroy(b);
  return err;
}

wd_error_t *wd_commit_init_step(wd_commit_t *c) {
  if (!c->init_pending) return NULL;
  size_t n = c->ntps;
  wd_tp_offset_t *g = calloc(n ? n : 1, sizeof(*g));
  if (!g) return wd_error_nomem();
  for (size_t i = 0; i < n; i++) {
    g[i].topic = c->tps[i].topic;
    g[i].partition = c->tps[i].partition;
    g[i].offset = -1;
  }
  /* one request per turn: between tries the loop polls (the member stays in the group; a
   * rebalance meanwhile records the next assignment, and this one is gone) */
  wd_error_t *err = wd_consumer_committed(c->cons, g, n, stop_budget_ms(c, 5000));
  if (err) {
    free(g);
    if (err->retriable && stop_expired(c)) return stopped_error(err, "reading the consumer group's committed offsets");
    /* at least as long as a transaction holding the group's offsets can stay open (a member
     * killed for good: its offsets are UNSTABLE_OFFSET_COMMIT to a read_committed OffsetFetch until
     * the broker aborts it after transaction.timeout.ms, the members' configured alike) */
    double bound = c->conf.txn_timeout_ms / 1000.0 + 15;
    if (bound < 60) bound = 60;
    if (retry_transient(c, &c->init_since, bound,
                        "reading the group's committed offsets (the broker away, or an open transaction of a member "
                        "that is gone holding them until the broker aborts it)",
                        err)) {
      wd_error_destroy(err);
      return NULL;
    }
    return wd_error_wrap(err, "E_RECOVER: cannot read the consumer group's committed offsets");
  }
  c->init_pending = false;
  for (size_t i = 0; i < n; i++) c->tps[i].group = g[i].offset;
  err = decide_assignment(c, g);
  free(g);
  if (err) return err;
  /* the tasks with their restore ends (re-added): RESTORING, RECONCILING or RUNNING */
  record_tasks(c);
  decide_tasks(c);
  if ((err = wd_commit_take_error(c))) return err;
  /* each partition from where it was decided: always assigned again at that offset first. Where
   * it waits is librdkafka's own reading of the group's committed offset, which is not always the
   * decision's: a partition whose committed offset was held by an open transaction (a killed
   * member's) while a rebalance changed the assignment was started at its beginning, and a
   * restarted member applied its records again (found with two members, per-partition tasks) */
  bool again = c->ntps > 0;
  if (again) {
    wd_tp_offset_t *at = calloc(c->ntps ? c->ntps : 1, sizeof(*at));
    if (!at) return wd_error_nomem();
    for (size_t i = 0; i < c->ntps; i++) {
      at[i].topic = c->tps[i].topic;
      at[i].partition = c->tps[i].partition;
      at[i].offset = c->tps[i].start;
    }
    /* released with the assignment: a release right after it could discard its start
     * (wd_consumer_reassign) */
    err = wd_consumer_reassign(c->cons, at, c->ntps, true);
    free(at);
  }
  return err;
}

int64_t wd_commit_on_assign(wd_commit_t *c, const char *topic, int32_t partition) {
  wd_ctp_t *t = find_tp(c, topic, partition);
  if (t) return t->placed;
  /* not announced by on_assign_all (assign mode: replay, which assigns inside wd_consumer_new) */
  int64_t s = -1;
  wd_error_t *err = stored_offset(c, topic, partition, &s);
  if (err) {
    keep_cb_error(c, err); /* the pipeline stops with it at its next step */
    return WD_OFFSET_END;
  }
  if (!c->conf.group) return c->conf.replay_from_stored && s >= 0 ? s : WD_OFFSET_BEGINNING;
  return s >= 0 ? s : WD_OFFSET_STORED;
}

void wd_commit_set_consumer(wd_commit_t *c, wd_consumer_t *cons) { c->cons = cons; }

bool wd_commit_restoring(const wd_commit_t *c, const char *topic, int32_t partition, int64_t offset) {
  if (!c->nrestoring) return false;
  const wd_ctp_t *t = find_tp(c, topic, partition);
  return t && offset < t->restore_end;
}

const char *wd_commit_task_state(wd_commit_t *c, uint32_t task) {
  wd_task_t *t = wd_tasks_find(c->tasks, task);
  return t ? wd_task_state_name(t->state) : NULL;
}

void wd_commit_on_revoke(wd_commit_t *c, bool lost) {
  c->in_callback++;
  if (c->phase != WD_PHASE_IDLE) {
    if (lost || c->in_batch) {
      /* the partitions are gone (or the batch in hand is half done): nothing of this commit may
       * become visible; the next owner reads it again */
      wd_error_t *err = wd_commit_abort(c, lost ? "the partitions were lost" : "a rebalance came in the middle of a batch");
      keep_cb_error(c, err);
    } else {
      bool aborted = false;
      wd_error_t *err = wd_commit_run(c, NULL, &aborted);
      if (err) {
        wd_log(WD_LOG_ERROR, "commit", "completing the commit before the rebalance: %s", err->message);
        keep_cb_error(c, err);
      }
    }
  }
  /* rows made dirty outside any commit belong to none: a lookup reconcile that changed nothing
   * opens no commit, and a batch in hand is abandoned here. Left in the cache they would be
   * neither committed nor aborted, and the next restore of their task would refuse to drop them
   * ("dropping task N with uncommitted rows", found by the multi-process chaos test). */
  if (c->phase == WD_PHASE_IDLE) wd_state_discard(c->state);
  /* at-least-once: the group's offsets now, so that the next owner of a stateless partition
   * (forwarded to a repartition topic) starts where this one stopped */
  if (!lost && !c->conf.exactly_once) group_commit(c, true);
  if (c->in_batch) c->batch_invalid = true;
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) { /* a rebuild cut short: its rows go */
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    if (task->rebuild == WD_REBUILD_NONE || task->state != WD_TASK_RESTORING) continue;
    /* rows rebuilt from the sources (or old rows restored) are no copy of the changelog: were they
     * kept, a standby copy would continue from them and a later restore start from a mixture */
    wd_store_batch_t *b = wd_store_batch_new();
    wd_error_t *err = b ? wd_state_drop_task(c->state, task->id, b) : wd_error_nomem();
    if (!err) err = wd_store_write_sync(c->store, b);
    if (!err) err = wd_standby_forget(c->conf.standby, task->id);
    wd_store_batch_destroy(b);
    if (err) keep_cb_error(c, wd_error_wrap(err, "dropping the rows of task %" PRIu32 " whose rebuild was cut short",
                                            task->id));
    else
      wd_log(WD_LOG_INFO, "rebuild", "task %" PRIu32 ": its rebuild was cut short by the rebalance; it starts again "
             "when assigned", task->id);
  }
  for (size_t i = 0; i < wd_tasks_count(c->tasks); i++) {
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    if (task->state == WD_TASK_CREATED) move_task(c, task, WD_TASK_CLOSED, lost ? "lost" : "revoked");
    else if (task->state == WD_TASK_RESTORING || task->state == WD_TASK_RECONCILING || task->state == WD_TASK_RUNNING)
      /* revoked: SUSPENDED, its state kept and trusted when it comes back (kept_task); lost: closed
       * (Kafka Streams closes such tasks dirty), as another process may own it already. Either
       * way its standby copy is kept warm from now on (wd_tasks_active). */
      move_task(c, task, lost ? WD_TASK_CLOSED : WD_TASK_SUSPENDED, lost ? "its partitions were lost" : "revoked");
  }
  wd_tasks_clear_partitions(c->tasks);
  c->nrebuild = 0;
  if (c->rs) { /* a restore cut short: its tasks' offsets are gone, so it starts again when assigned */
    wd_log(WD_LOG_INFO, "commit", "the rebalance stops the restore of %zu task(s) from %s", c->rs->left,
           c->conf.changelog_topic);
    restore_free(c->rs);
    c->rs = NULL;
  }
  c->nholds = 0;
  c->holds_dirty = false;
  c->any_gend = false;
  c->init_pending = false; /* an assignment not yet decided: gone with it */
  c->ntps = 0;
  c->nrestoring = 0;
  c->paused = false;
  c->in_callback--;
}

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
  if (c->phase == WD_PHASE_IDLE) {
    c->phase = WD_PHASE_OPEN;
    c->opened = wd_mono_s();
  }
  if (c->conf.exactly_once && !wd_collector_txn_open(c->coll)) fault_point(c, "before-begin");
}

wd_error_t *wd_commit_begin(wd_commit_t *c) {
  if (c->phase == WD_PHASE_IDLE) {
    c->phase = WD_PHASE_OPEN;
    c->opened = wd_mono_s();
  }
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
  if (c->phase == WD_PHASE_IDLE) {
    c->phase = WD_PHASE_OPEN;
    c->opened = wd_mono_s();
  }
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
    fault_point(c, "during-produce");
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

static void reset_open(wd_commit_t *c) {
  c->phase = WD_PHASE_IDLE;
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
static void group_commit(wd_commit_t *c, bool now) {
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

/* The rewind after an abort: every assigned partition back to its stored (= committed) offset,
 * or the beginning when it has none (a restoring task that finalized nothing yet). */
static wd_error_t *rewind_consumer(wd_commit_t *c) {
  if (!c->conf.group || !c->ntps) return NULL;
  wd_tp_offset_t *to = calloc(c->ntps, sizeof(*to));
  if (!to) return wd_error_nomem();
  for (size_t i = 0; i < c->ntps; i++) {
    to[i].topic = c->tps[i].topic;
    to[i].partition = c->tps[i].partition;
    int64_t s = -1;
    wd_error_t *err = stored_offset(c, c->tps[i].topic, c->tps[i].partition, &s);
    if (err) {
      free(to);
      return err;
    }
    /* never before where the assignment started it (the group's offset): a task restoring from
     * the state changelog has no stored offsets yet, and a stateless partition may keep an older
     * one from an earlier ownership; records before the start are not this commit's */
    if (c->tps[i].start >= 0 && s < c->tps[i].start) s = c->tps[i].start;
    to[i].offset = s >= 0 ? s : -1; /* -1: the beginning (wd_consumer_seek) */
  }
  wd_error_t *err = NULL;
  for (double since = 0;; wd_sleep_ms(200)) { /* a seek that timed out near a broker restart: again */
    wd_error_destroy(err);
    err = wd_consumer_seek(c->cons, to, c->ntps);
    if (!retry_transient(c, &since, 30, "rewinding the consumer to the committed offsets", err)) break;
  }
  free(to);
  return err;
}

/* The records taken while a commit's transaction committed go with an abort. */
static void drop_next(wd_commit_t *c) {
  c->committing = false;
  c->nx.nin = c->nx.ngin = 0;
  c->nx.records = 0;
  c->nx.opened = 0;
}

enum { RUN_ALL, RUN_ASYNC, RUN_FIRST };
static wd_error_t *run_phases(wd_commit_t *c, volatile const int *stop, bool *aborted, int mode);

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
static wd_error_t *commit_abort(wd_commit_t *c, const char *why, const wd_error_t *cause) {
  wd_error_t *err = NULL;
  bool recreate = wd_collector_classify(cause) == WD_COLLECT_RECREATE;
  uint64_t gen = wd_collector_generation(c->coll);
  if (c->committing && c->phase == WD_PHASE_OFFSETS_SENT) {
    /* issue 22 point 2: the commit whose transaction is committing is resolved first (completed, or
     * aborted by the broker's answer): it may have committed, so it is never taken back here; what
     * is aborted is what was taken after it */
    bool ab = false;
    if ((err = run_phases(c, c->stop, &ab, RUN_FIRST))) return err;
    if (ab) return recreate ? recreate_once(c, gen, cause) : NULL; /* it aborted itself, and all after it */
  }
  if (recreate && (err = recreate_once(c, gen, cause))) return err;
  if (c->phase == WD_PHASE_IDLE) return NULL;
  c->naborts++;
  wd_log(WD_LOG_WARN, "commit", "aborting commit %" PRIu64 " (%" PRIu64 " records): %s; its output is discarded and "
         "its records are read again", c->number + 1, c->records, why);
  {
    for (int attempt = 0; attempt < 10; attempt++) {
      wd_error_destroy(err);
      if (wd_collector_classify(err = wd_collector_abort(c->coll, stop_budget_ms(c, 30000))) != WD_COLLECT_RETRY) break;
      if (stop_expired(c)) break; /* the broker aborts it after transaction.timeout.ms */
      serve(c, 100);
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
  reset_open(c);
  drop_next(c);
  if (c->in_batch) c->batch_invalid = true;
  /* lookups under per-partition tasks: the reconciles the commit held are taken back with it, so
   * each running task is reconciled again before its next record (docs/lookups-scale-out.md) */
  for (size_t i = 0; c->reconcile && i < wd_tasks_count(c->tasks); i++) {
    wd_task_t *task = wd_tasks_at(c->tasks, i);
    if (task->state == WD_TASK_RUNNING && task->reconcile)
      move_task(c, task, WD_TASK_RECONCILING, "the abort took back its reconcile");
  }
  if (c->conf.hooks.aborted) c->conf.hooks.aborted(c->conf.hooks.ctx);
  if (!c->in_callback) err = rewind_consumer(c);
  return err;
}

wd_error_t *wd_commit_abort(wd_commit_t *c, const char *why) { return commit_abort(c, why, NULL); }

wd_error_t *wd_commit_abort_for(wd_commit_t *c, const wd_error_t *cause) {
  return commit_abort(c, cause ? cause->message : "aborted", cause);
}

/* The targets sent to the transaction: the commit's offsets of partitions that are not restoring
 * (a restoring partition is behind the group's committed offset: sending it would move it back). */
static size_t targets(wd_commit_t *c, wd_tp_offset_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < c->nin; i++) {
    const wd_ctp_t *t = c->any_gend ? find_tp(c, c->in[i].topic, c->in[i].partition) : NULL;
    if (t && c->in[i].offset <= t->g_end) continue;
    out[n++] = c->in[i];
  }
  return n;
}


/* An abortable error (the collector's WD_COLLECT_ABORT: txn_requires_abort, not fenced or fatal)
 * aborts the open commit, and so does a fatal producer error that is not fencing
 * (WD_COLLECT_RECREATE, before the commit's commit_transaction: the producer is re-created first,
 * its init_transactions aborts the old transaction): the abort's
 * own error (or NULL) is returned in its place and *aborted set; any other error is returned as
 * it is. Takes err. */
static wd_error_t *abort_if_abortable(wd_commit_t *c, wd_error_t *err, bool *aborted) {
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
 * (issue 22 point 2) before the pipeline waits for it as before; also once the next commit holds
 * pipeline.commit-max-records records (a commit stays within its bound). */
#define WD_OVERLAP_MAX_S 2.0
#define WD_OVERLAP_MAX_HELD 200000

static wd_error_t *resolve_outcome(wd_commit_t *c, bool *aborted);

static wd_error_t *commit_txn(wd_commit_t *c, volatile const int *stop, bool *aborted, bool async) {
  wd_error_t *err = NULL;
  double deadline = wd_mono_s() + c->conf.txn_timeout_ms / 1000.0;
  if (async && c->conf.group && !c->in_callback && !(stop && *stop)) {
    /* issue 22 point 2: commit_transaction runs on the collector's helper thread while the
     * pipeline merges the next batches, whose output the collector holds until this commit is
     * finalized (librdkafka 2.0.2 is not safe with short commit timeouts called again and again:
     * collector.h) */
    if (!c->committing) {
      if (fault_due(c, "during-commit")) {
        if (c->fault_fatal) {
          wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
        } else {
          wd_error_destroy(wd_collector_commit(c->coll, 1));
          fault_kill(c, "during-commit");
        }
      }
      if ((err = wd_collector_commit_start(c->coll, stop_budget_ms(c, 10000)))) {
        if (wd_collector_classify(err) == WD_COLLECT_RECREATE) goto resolve;
        return err;
      }
      if (!wd_collector_commit_started(c->coll)) { /* no transaction open: nothing to wait for */
        c->phase = WD_PHASE_COMMITTED;
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
  if (!c->committing && fault_due(c, "during-commit")) {
    if (c->fault_fatal) {
      wd_collector_inject_fatal(c->coll, WD_FAULT_FATAL_CODE);
    } else {
      /* the EndTxn request is on its way (or not yet: a 1 ms wait); its outcome is the broker's */
      wd_error_destroy(wd_collector_commit(c->coll, 1));
      fault_kill(c, "during-commit");
    }
  }
  bool told = false;
  for (;;) {
    wd_error_destroy(err);
    if (!(err = wd_collector_commit(c->coll, stop_budget_ms(c, 10000)))) {
      c->phase = WD_PHASE_COMMITTED;
      return NULL;
    }
    wd_collect_class_t k = wd_collector_classify(err);
    if (k == WD_COLLECT_ABORT) {
      c->committing = false; /* what was taken after it goes too (drop_next) */
      return abort_if_abortable(c, err, aborted);
    }
    if (k == WD_COLLECT_RECREATE) goto resolve; /* the outcome is not known: as below */
    if (k != WD_COLLECT_RETRY) return err; /* fenced, fatal, other */
    if ((stop && *stop >= 2) || stop_expired(c)) {
      wd_error_t *e = wd_error_new(WD_ERR_KAFKA, "E_STOPPED", "stopped while the transaction's commit was not "
                                   "confirmed (%s): the last commit may not be made; recovery resolves it on "
                                   "restart", err->message);
      wd_error_destroy(err);
      return e;
    }
    if (wd_mono_s() > deadline) break;
    if (!told) {
      wd_log(WD_LOG_WARN, "commit", "waiting to commit the transaction: %s", err->message);
      told = true;
    }
    serve(c, 100);
    if (c->phase != WD_PHASE_OFFSETS_SENT && c->phase != WD_PHASE_SNAPPED) { /* completed or aborted meanwhile */
      wd_error_destroy(err);
      return NULL;
    }
  }
  /* the outcome stayed unknown past transaction.timeout.ms: a new producer with the same
   * transactional.id resolves it (init_transactions completes or aborts the transaction), then
   * the group's committed offsets say which */
  if (!c->nt && !c->gcons)
    return wd_error_wrap(err, "E_TXN_UNKNOWN: the transaction's outcome is not known after %d ms; restart widen to "
                              "resolve it from the group's committed offsets", c->conf.txn_timeout_ms);
  wd_log(WD_LOG_WARN, "commit", "the outcome of commit %" PRIu64 " is not known after %d ms (%s): re-creating the "
         "producer to resolve it from the group's committed offsets", c->number + 1, c->conf.txn_timeout_ms,
         err->message);
  wd_error_destroy(err);
  if ((err = wd_collector_reopen(c->coll))) return err;
  return resolve_outcome(c, aborted);
resolve:
  /* a fatal producer error that is not fencing (WD_COLLECT_RECREATE) while committing: whether the
   * transaction committed is not known (its EndTxn may have reached the coordinator); the new
   * producer's init_transactions completes or aborts it, and it is resolved as above (Kafka
   * Streams re-creates the task producer and re-processes from the committed offsets) */
  if (!c->nt && !c->gcons) {
    wd_error_t *e = wd_error_new(WD_ERR_KAFKA, "E_PRODUCER_FATAL", "the producer failed fatally while committing "
                                 "(%s) and the outcome cannot be read from the group's offsets (only restoring "
                                 "partitions): restart widen to resolve it", err->message);
    if (e != wd_error_nomem()) {
      e->fatal = true;
      e->retriable = false;
    }
    wd_error_destroy(err);
    return e;
  }
  wd_log(WD_LOG_WARN, "commit", "commit %" PRIu64 ": the producer failed fatally while committing (%s): re-creating "
         "it to resolve the transaction from the group's committed offsets", c->number + 1, err->message);
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
  if (c->nt) err = group_offsets(c, g, c->nt);
  bool committed = false;
  for (size_t i = 0; !err && i < c->nt && !committed; i++) committed = g[i].offset == c->t[i].offset;
  free(g);
  if (!err && !committed) err = marker_committed(c, c->number + 1, &committed);
  if (err) return err;
  if (committed) {
    wd_log(WD_LOG_INFO, "commit", "commit %" PRIu64 ": the transaction had committed", c->number + 1);
    c->phase = WD_PHASE_COMMITTED;
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
static void promote(wd_commit_t *c) {
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
    c->phase = WD_PHASE_OPEN;
    c->opened = c->nx.opened > 0 ? c->nx.opened : wd_mono_s();
  } else {
    wd_error_destroy(wd_collector_release(c->coll)); /* nothing held: holding ends */
  }
  c->nx.nin = c->nx.ngin = 0;
  c->nx.records = 0;
  c->nx.opened = 0;
}

/* The held output of the promoted commit into its transaction (begun now). */
static wd_error_t *release_next(wd_commit_t *c, bool *ab) {
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
    if (err && c->batch_invalid && wd_error_is(err, WD_EID_E_STOPPED) && !stop_expired(c)) {
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
    fault_point(c, "during-produce");
  }
  return abort_if_abortable(c, err, ab);
}

wd_error_t *wd_commit_run(wd_commit_t *c, volatile const int *stop, bool *aborted) {
  return run_phases(c, stop, aborted, RUN_ALL);
}

wd_error_t *wd_commit_run_async(wd_commit_t *c, volatile const int *stop, bool *aborted) {
  return run_phases(c, stop, aborted, c->conf.exactly_once && !c->no_overlap ? RUN_ASYNC : RUN_ALL);
}

/* mode RUN_ALL: every commit open is completed (a commit committing in the background first, then
 * the one taken meanwhile); RUN_ASYNC: the open commit is completed unless its transaction goes on
 * committing in the background (then it returns; call again), and the one taken meanwhile stays
 * open; RUN_FIRST: only the commit committing in the background is completed, what was taken
 * meanwhile stays open and held (for an abort of it). */
static wd_error_t *run_phases(wd_commit_t *c, volatile const int *stop, bool *aborted, int mode) {
  wd_error_t *err = NULL;
  wd_buf_t rec = {0};
  wd_store_batch_t *pb = NULL;
  bool ab = false;
  uint64_t n0 = c->number;
  if (aborted) *aborted = false;
  while (c->phase != WD_PHASE_IDLE && !err && !ab) {
    if (mode != RUN_ALL && c->number != n0) break; /* a commit was finalized: the next one stays open */
    switch (c->phase) {
    case WD_PHASE_IDLE: break;
    case WD_PHASE_OPEN: {
      /* the commit's state: every dirty row once, the offsets, the commit number */
      c->t0 = wd_mono_s();
      if ((err = wd_state_snapshot(c->state, c->b, &c->snap))) break;
      c->snapped = true;
      /* exactly-once: the offsets, number and history are finalize's (c->fb), written once the
       * transaction committed; at-least-once writes everything at once */
      wd_store_batch_t *fin = c->conf.exactly_once ? c->fb : c->b;
      for (size_t i = 0; i < c->nin; i++)
        if (wd_store_batch_set_offset(fin, c->in[i].topic, c->in[i].partition, c->in[i].offset)) goto nomem;
      for (size_t i = 0; i < c->ngin; i++) /* the global inputs' positions: local state only */
        if (wd_store_batch_set_offset(fin, c->gin[i].topic, c->gin[i].partition, c->gin[i].offset)) goto nomem;
      if (put_number(fin, c->number + 1)) goto nomem;
      if (c->conf.hooks.before_finalize && c->conf.hooks.before_finalize(c->conf.hooks.ctx, c->number + 1, fin))
        goto nomem;
      if (c->nin > c->cap_t) {
        wd_tp_offset_t *t = realloc(c->t, c->nin * sizeof(*t));
        if (!t) goto nomem;
        c->t = t;
        c->cap_t = c->nin;
      }
      c->nt = targets(c, c->t);
      c->phase = WD_PHASE_SNAPPED;
      break;
    }
    case WD_PHASE_SNAPPED:
      if (c->conf.changelog_topic && !c->changelog_sent && wd_store_batch_count(c->b) + wd_store_batch_count(c->fb)) {
        /* the commit's row changes to the state changelog, in the same transaction */
        if ((err = wd_commit_begin(c))) {
          err = abort_if_abortable(c, err, &ab);
          break;
        }
        if (wd_store_batch_foreach_state(c->b, send_changelog, c)) {
          err = abort_if_abortable(c, c->send_err, &ab);
          c->send_err = NULL;
          break;
        }
        c->changelog_sent = true;
      }
      if (c->conf.exactly_once && (c->nt || (c->gcons && wd_collector_txn_open(c->coll)))) {
        /* 1. prepare, before the transaction can commit: the rows once, their undo image and the
         * small marker, in one write; the stored offsets stay S (docs/exactly-once.md) */
        wd_buf_reset(&rec);
        wd_buf_reset(&c->undo);
        if (!pb && !(pb = wd_store_batch_new())) goto nomem;
        wd_store_batch_clear(pb);
        int64_t *from = calloc(c->nt ? c->nt : 1, sizeof(*from));
        if (!from) goto nomem;
        for (size_t i = 0; i < c->nt && !err; i++) err = stored_offset(c, c->t[i].topic, c->t[i].partition, &from[i]);
        if (err) {
          free(from);
          break;
        }
        int rc = encode_marker(c, c->t, from, c->nt, &rec);
        free(from);
        if (rc) goto nomem;
        if ((err = wd_store_undo_image(c->store, c->b, &c->undo))) break;
        if (wd_store_batch_set_meta(pb, WD_UNDO_KEY, c->undo.data, c->undo.len) ||
            wd_store_batch_set_meta(pb, WD_PREPARED_KEY, rec.data, rec.len))
          goto nomem;
        /* not fsync'ed: a kill loses nothing, and a machine crash that loses it leaves the stored
         * offsets behind the group's (the task is restored). Lookup inputs' positions and rows are
         * restored by no task: a commit that carries them is fsync'ed. */
        if ((err = wd_store_write_both(c->store, c->b, pb, c->ngin > 0))) break;
        c->prepared = true;
        c->phase = WD_PHASE_PREPARED;
        fault_point(c, "after-prepare");
      } else if (wd_collector_txn_open(c->coll)) {
        /* output without offsets to send (only restoring partitions): commit it as it is */
        c->phase = WD_PHASE_OFFSETS_SENT;
      } else if (!c->conf.exactly_once) {
        /* at-least-once: the output is acknowledged before the state and offsets are written */
        bool told = false;
        for (;;) {
          if (!(err = wd_collector_wait_acked(c->coll, 1000))) break;
          if (!err->retriable) break;
          if ((stop && *stop >= 2) || stop_expired(c)) {
            err = stopped_error(err, "the broker had not acknowledged the output");
            break;
          }
          if (!told) wd_log(WD_LOG_WARN, "commit", "waiting for the broker to acknowledge the output: %s", err->message);
          told = true;
          wd_error_destroy(err);
          err = NULL;
          serve(c, 100);
          if (c->phase != WD_PHASE_SNAPPED) break; /* completed inside a rebalance callback */
        }
        if (!err && c->phase == WD_PHASE_SNAPPED) c->phase = WD_PHASE_COMMITTED;
        err = abort_if_abortable(c, err, &ab); /* a fatal producer: re-created, the commit redone */
      } else {
        c->phase = WD_PHASE_COMMITTED; /* nothing to send: only the state */
      }
      break;
    case WD_PHASE_PREPARED: {
      /* 2. the input offsets, in the transaction */
      if ((err = wd_commit_begin(c))) {
        err = abort_if_abortable(c, err, &ab);
        break;
      }
      wd_group_meta_t *gm = NULL;
      if ((err = wd_consumer_group_metadata(c->cons, &gm))) break;
      for (int attempt = 0;; attempt++) {
        err = wd_collector_send_offsets(c->coll, c->t, c->nt, gm, 10000);
        /* the commit's marker: every commit with scale-out lookups (wd_commit_set_global); with the
         * rebuild's marker only (wd_commit_set_marker) the commits without input offsets, which the
         * group's offsets cannot resolve (a switch) */
        if (!err && c->gcons && (c->global || !c->nt)) {
          wd_group_meta_t *pm = NULL;
          wd_tp_offset_t m = {c->marker_topic, 0, (int64_t)(c->number + 1)};
          if (!(err = wd_consumer_group_metadata(c->gcons, &pm))) err = wd_collector_send_offsets(c->coll, &m, 1, pm, 10000);
          wd_group_meta_destroy(pm);
        }
        if (wd_collector_classify(err) != WD_COLLECT_RETRY || attempt >= 30) break;
        if ((stop && *stop >= 2) || stop_expired(c)) {
          err = stopped_error(err, "sending the offsets to the transaction");
          break;
        }
        wd_error_destroy(err);
        err = NULL;
        serve(c, 100);
        if (c->phase != WD_PHASE_PREPARED) break;
      }
      wd_group_meta_destroy(gm);
      if (!err && c->phase == WD_PHASE_PREPARED) c->phase = WD_PHASE_OFFSETS_SENT;
      err = abort_if_abortable(c, err, &ab);
      break;
    }
    case WD_PHASE_OFFSETS_SENT:
      /* 3. commit */
      err = commit_txn(c, stop, &ab, mode == RUN_ASYNC);
      if (!err && mode == RUN_ASYNC && c->committing && c->phase == WD_PHASE_OFFSETS_SENT) goto done;
      break;
    case WD_PHASE_COMMITTED:
      fault_point(c, "after-commit");
      /* 4. finalize: the offsets, the number, the history, the marker and the undo image gone: one
       * small write (the rows are written at prepare; without a prepare they go with it) */
      wd_store_batch_t *fin = c->conf.exactly_once ? c->fb : c->b;
      if (c->prepared &&
          (wd_store_batch_delete_meta(fin, WD_PREPARED_KEY) || wd_store_batch_delete_meta(fin, WD_UNDO_KEY)))
        goto nomem;
      if (c->conf.hooks.before_write && c->conf.hooks.before_write(c->conf.hooks.ctx, c->number + 1, fin))
        goto nomem; /* issue 13: the history record with the commit's output offsets */
      if (!c->conf.exactly_once || c->prepared) err = wd_store_write(c->store, fin);
      else err = wd_store_write_both(c->store, c->b, c->fb, false);
      if (err) break;
      wd_state_written(c->state, c->snap);
      c->snapped = false;
      c->number++;
      fault_point(c, "after-finalize");
      if (!c->conf.exactly_once)
        for (size_t i = 0; i < c->nin; i++) note_gc(c, &c->in[i]);
      wd_log(WD_LOG_DEBUG, "commit", "commit %" PRIu64 ": %" PRIu64 " records, %zu partitions, %.1f ms", c->number,
             c->records, c->nin, (wd_mono_s() - c->t0) * 1000.0);
      reset_open(c);
      bool was_committing = c->committing;
      promote(c); /* issue 22 point 2: what was taken meanwhile is the open commit now */
      if (c->conf.hooks.committed) c->conf.hooks.committed(c->conf.hooks.ctx, c->number);
      /* at once when stopping or in a rebalance (in_callback): the next owner of a stateless
       * partition starts at the group's offset */
      group_commit(c, (stop && *stop) || c->in_callback);
      if (was_committing && mode != RUN_FIRST) err = release_next(c, &ab);
      break;
    }
  }
  goto done;
nomem:
  err = wd_error_nomem();
done:
  if (ab && aborted) *aborted = true;
  if (!c->in_callback) unpause(c);
  wd_buf_free(&rec);
  wd_store_batch_destroy(pb);
  return err;
}

/* ---- scale-out with lookups ------------------------------------------------------------------- */

void wd_commit_set_global(wd_commit_t *c, wd_consumer_t *group_cons, const char *marker_topic) {
  c->gcons = group_cons;
  c->marker_topic = marker_topic;
  c->global = true;
}

void wd_commit_set_marker(wd_commit_t *c, wd_consumer_t *cons, const char *marker_topic) {
  c->gcons = cons;
  c->marker_topic = marker_topic;
}

wd_tasks_t *wd_commit_tasks(wd_commit_t *c) { return c->tasks; }

void wd_commit_set_reconcile(wd_commit_t *c, bool on) { c->reconcile = on; }

int64_t wd_commit_group_offset(const wd_commit_t *c, const char *topic, int32_t partition) {
  const wd_ctp_t *t = find_tp(c, topic, partition);
  return t ? t->group : -1;
}

/* Whether task's rows are in the current definition (rebuild mode, hooks.task_current). */
static bool task_current(const wd_commit_t *c, uint32_t task) {
  return !c->conf.hooks.task_current || c->conf.hooks.task_current(c->conf.hooks.ctx, task);
}

wd_error_t *wd_commit_rebuild_sources(wd_commit_t *c, uint32_t id) {
  wd_task_t *task = wd_tasks_find(c->tasks, id);
  if (!task || task->rebuild != WD_REBUILD_STAGE) return NULL;
  wd_error_t *err = NULL;
  size_t n = task->nparts;
  wd_tp_offset_t *to = calloc(n ? n : 1, sizeof(*to));
  if (!to) return wd_error_nomem();
  for (size_t k = 0; k < n; k++) {
    wd_task_part_t *pt = &task->parts[k];
    wd_ctp_t *t = find_tp(c, pt->topic, pt->partition);
    int64_t g = t ? t->group : -1;
    if (pt->held_at >= 0) c->nholds--;
    if (pt->restore_end > 0 && !pt->reached && t && t->restore_end > 0) c->nrestoring--; /* set again below */
    if (!wd_task_add_partition(task, pt->topic, pt->partition, g > 0 ? g : -1)) { /* reached, held_at reset */
      free(to);
      return wd_error_nomem();
    }
    if (t) {
      t->start = WD_OFFSET_BEGINNING; /* an abort rewinds to the stored offsets, or the beginning */
      t->restore_end = g > 0 ? g : -1;
      t->g_end = g > 0 ? g : -1;
      if (g > 0) {
        c->any_gend = true;
        c->nrestoring++;
      }
    }
    to[k] = (wd_tp_offset_t){pt->topic, pt->partition, -1}; /* -1: the beginning */
  }
  task->rebuild = task->unreached ? WD_REBUILD_SOURCES : WD_REBUILD_DIFF;
  if (c->cons && n) err = wd_consumer_seek(c->cons, to, n);
  for (size_t k = 0; k < n && !err; k++)
    err = wd_consumer_release_partition(c->cons, task->parts[k].topic, task->parts[k].partition, -1);
  free(to);
  if (!err)
    wd_log(WD_LOG_INFO, "rebuild", "task %" PRIu32 ": rebuilding its rows from the sources' earliest offsets up to "
           "the group's committed offsets of its %zu partition(s), without output", id, n);
  return err;
}

wd_error_t *wd_commit_rebuild_done(wd_commit_t *c, uint32_t id) {
  wd_task_t *task = wd_tasks_find(c->tasks, id);
  if (!task) return NULL;
  task->rebuild = WD_REBUILD_NONE;
  recount_rebuilds(c);
  wd_error_t *err = wd_task_move(task, WD_TASK_RUNNING, "rebuilt: its difference is emitted and its rows switched");
  if (!err) task_now_running(c, task);
  c->holds_dirty = true; /* its held partitions are released after the next batch */
  return err;
}

int wd_commit_note_global(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset, uint64_t records) {
  if (c->committing) return note_next_commit(c, true, topic, partition, offset, records);
  if (c->phase == WD_PHASE_IDLE) {
    c->phase = WD_PHASE_OPEN;
    c->opened = wd_mono_s();
  }
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
