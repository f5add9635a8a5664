/*
 * app/runtime/restorer.c — the state changelog restores of one assignment (app/runtime/restorer.h).
 */
#include "app/runtime/restorer.h"

#include <inttypes.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"

struct wd_restorer {
  wd_restorer_conf_t conf;
  size_t n, left; /* tasks; tasks not finished yet */
  uint32_t *tasks;
  int64_t *from, *end; /* end: the partition's end offset when the restore began; <= 0: nothing */
  uint64_t *records;
  bool *finished;
  wd_consumer_t *cons; /* NULL until the first step */
  wd_store_batch_t *b; /* rows read and not written yet */
  size_t nb;
  wd_kmsg_t *msgs;
  double t0, last_progress;
  uint64_t copies; /* tasks caught up from a standby copy */
  double retry_since; /* the first failure of the end offsets' request (retry_transient), 0: none */
};

void wd_restorer_destroy(wd_restorer_t *r) {
  if (!r) return;
  if (r->cons) r->conf.io.close(r->cons);
  wd_store_batch_destroy(r->b);
  free(r->tasks);
  free(r->from);
  free(r->end);
  free(r->records);
  free(r->finished);
  free(r->msgs);
  free(r);
}

wd_error_t *wd_restorer_new(const wd_restorer_conf_t *conf, uint32_t *tasks, int64_t *from, size_t n, size_t copies,
                            wd_restorer_t **out) {
  *out = NULL;
  wd_restorer_t *r = calloc(1, sizeof(*r));
  if (!r || !(r->end = calloc(n ? n : 1, sizeof(*r->end))) || !(r->records = calloc(n ? n : 1, sizeof(*r->records))) ||
      !(r->finished = calloc(n ? n : 1, sizeof(*r->finished))) || !(r->msgs = calloc(1000, sizeof(*r->msgs))) ||
      !(r->b = wd_store_batch_new())) {
    free(tasks);
    free(from);
    if (r) r->conf.io.close = NULL;
    wd_restorer_destroy(r);
    return wd_error_nomem();
  }
  r->conf = *conf;
  if (!r->conf.io.open) r->conf.io.open = wd_consumer_new;
  if (!r->conf.io.end_offsets) r->conf.io.end_offsets = wd_consumer_end_offsets;
  if (!r->conf.io.poll) r->conf.io.poll = wd_consumer_poll_batch;
  if (!r->conf.io.release) r->conf.io.release = wd_kmsg_release;
  if (!r->conf.io.positions) r->conf.io.positions = wd_consumer_assignment;
  if (!r->conf.io.close) r->conf.io.close = wd_consumer_destroy;
  r->tasks = tasks;
  r->from = from;
  r->n = r->left = n;
  r->copies = copies;
  *out = r;
  return NULL;
}

size_t wd_restorer_count(const wd_restorer_t *r) { return r->n; }
uint32_t wd_restorer_task(const wd_restorer_t *r, size_t i) { return r->tasks[i]; }
size_t wd_restorer_left(const wd_restorer_t *r) { return r->left; }

static int64_t restore_on_assign(void *ctx, const char *topic, int32_t partition) {
  (void)topic;
  const wd_restorer_t *r = ctx;
  for (size_t i = 0; i < r->n; i++)
    if ((int32_t)r->tasks[i] == partition) return r->from[i] > 0 ? r->from[i] : WD_OFFSET_BEGINNING;
  return WD_OFFSET_END;
}

/* Task t's rows are all written: the owner is told, then it counts as finished. */
static wd_error_t *restore_finish(wd_restorer_t *r, size_t t) {
  wd_error_t *err = r->conf.restored(r->conf.ctx, r->tasks[t], r->from[t], r->records[t], wd_mono_s() - r->t0);
  if (err) return err;
  r->finished[t] = true;
  r->left--;
  return NULL;
}

/* The first slice: the consumer and where each task ends. *again: a transient failure, asked
 * again at the next slice. */
static wd_error_t *restore_open(wd_restorer_t *r, bool *again) {
  wd_error_t *err = NULL;
  wd_tp_offset_t *ends = NULL;
  size_t nends = 0;
  *again = false;
  const char *topics[] = {r->conf.changelog_topic};
  if ((err = r->conf.io.open(r->conf.restore_conf, topics, 1, restore_on_assign, r, &r->cons))) return err;
  if ((err = r->conf.io.end_offsets(r->cons, 30000, &ends, &nends))) {
    /* a leader that moved near a broker restart: the next slice asks again (bounded) */
    if (wd_stop_retry_transient(r->conf.stop, &r->retry_since, 60, "reading the state changelog's end offsets", err)) {
      wd_error_destroy(err);
      err = NULL;
      r->conf.io.close(r->cons);
      r->cons = NULL;
      *again = true;
    }
    return err;
  }
  r->retry_since = 0;
  for (size_t t = 0; t < r->n; t++) {
    r->end[t] = 0;
    for (size_t i = 0; i < nends; i++)
      if (ends[i].partition == (int32_t)r->tasks[t]) r->end[t] = ends[i].offset;
    if (r->from[t] > 0 && r->from[t] >= r->end[t]) r->end[t] = 0; /* the standby copy is at the end already */
  }
  free(ends);
  r->t0 = r->last_progress = wd_mono_s();
  wd_log(WD_LOG_INFO, "commit",
         "restoring %zu task(s) from %s in the poll loop (%" PRIu64 " from standby copies); "
         "their records wait until each is restored",
         r->n, r->conf.changelog_topic, r->copies);
  return NULL;
}

/* Writes the rows read so far. */
static wd_error_t *flush_rows(wd_restorer_t *r) {
  if (!r->nb) return NULL;
  wd_error_t *err = wd_store_write(r->conf.store, r->b);
  if (err) return err;
  wd_store_batch_clear(r->b);
  r->nb = 0;
  return NULL;
}

/* Polls batches while they come, up to max_ms; *last: the size of the last batch. */
static wd_error_t *read_slice(wd_restorer_t *r, int max_ms, size_t *last) {
  wd_error_t *err = NULL;
  size_t n = 0;
  double until = wd_mono_s() + max_ms / 1000.0;
  for (;;) {
    double left_ms = (until - wd_mono_s()) * 1000.0;
    if ((err = r->conf.io.poll(r->cons, 1000, left_ms > 50 ? 50 : left_ms < 1 ? 1 : (int)left_ms, r->msgs, &n)))
      return err;
    for (size_t i = 0; i < n; i++) {
      size_t t = 0;
      while (t < r->n && (int32_t)r->tasks[t] != r->msgs[i].partition) t++;
      if (t == r->n || r->finished[t]) continue;
      int rc = r->msgs[i].value ? wd_store_batch_put(r->b, r->msgs[i].key, r->msgs[i].key_len, r->msgs[i].value,
                                                     r->msgs[i].value_len)
                                : wd_store_batch_delete(r->b, r->msgs[i].key, r->msgs[i].key_len);
      if (rc) {
        r->conf.io.release(r->msgs, n);
        return wd_error_nomem();
      }
      r->nb++;
      r->records[t]++;
    }
    r->conf.io.release(r->msgs, n);
    if (n) r->last_progress = wd_mono_s();
    if (r->nb >= 5000 && (err = flush_rows(r))) return err;
    if (!n || wd_mono_s() >= until) break;
  }
  *last = n;
  return NULL;
}

wd_error_t *wd_restorer_step(wd_restorer_t *r, int max_ms, bool *done) {
  wd_error_t *err = NULL;
  wd_tp_offset_t *pos = NULL;
  size_t npos = 0, n = 0;
  *done = false;
  if (!r->cons) {
    bool again = false;
    if ((err = restore_open(r, &again)) || again) return err;
  }
  if ((err = read_slice(r, max_ms, &n))) return err;
  if ((r->nb >= 5000 || n == 0) && (err = flush_rows(r))) return err;
  if ((err = r->conf.io.positions(r->cons, &pos, &npos))) return err;
  for (size_t t = 0; t < r->n && !err; t++) {
    if (r->finished[t]) continue;
    bool reached = r->end[t] <= 0;
    for (size_t i = 0; i < npos && !reached; i++)
      if (pos[i].partition == (int32_t)r->tasks[t] && pos[i].offset >= r->end[t]) reached = true;
    if (!reached) continue;
    if ((err = flush_rows(r))) break; /* its last rows first */
    err = restore_finish(r, t);
  }
  free(pos);
  if (!err && r->left && wd_mono_s() - r->last_progress > 60.0)
    err = wd_error_new(WD_ERR_KAFKA, E_RESTORE, "restoring %zu task(s) from %s: no progress for 60 s", r->left,
                       r->conf.changelog_topic);
  if (!err && !r->left) {
    wd_log(WD_LOG_INFO, "commit", "%zu task(s) restored from %s in %.2f s", r->n, r->conf.changelog_topic,
           wd_mono_s() - r->t0);
    *done = true;
  }
  return err;
}
