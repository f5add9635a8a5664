/*
 * app/runtime/recovery.c — recovery at start and the resolution of an unknown outcome
 * (app/runtime/recovery.h, docs/exactly-once.md).
 */
#include "app/runtime/recovery.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/marker.h"
#include "app/runtime/task_manager.h"
#include "common/clock.h"
#include "common/log.h"

/* The group's committed offsets of parts[0..n) into parts[i].offset (-1: none), retried for up
 * to about 60 s while the coordinator does not answer. */
wd_error_t *wd_recovery_group_offsets(const wd_recovery_t *rv, wd_consumer_t *cons, wd_tp_offset_t *parts, size_t n) {
  wd_error_t *err = NULL;
  double since = 0;
  for (;;) {
    wd_error_destroy(err);
    if (!(err = wd_consumer_committed(cons, parts, n, wd_stop_budget_ms(rv->stop, 5000)))) return NULL;
    if (err->retriable && wd_stop_expired(rv->stop))
      return wd_stopped_error(err, "reading the consumer group's committed offsets");
    /* NOT_COORDINATOR and the like answer at once: a pause between tries, bounded in time */
    if (!wd_stop_retry_transient(rv->stop, &since, 60, "reading the group's committed offsets", err)) break;
    wd_sleep_ms(200);
  }
  return err ? wd_error_wrap(err, "E_RECOVER: cannot read the consumer group's committed offsets") : NULL;
}

wd_error_t *wd_recovery_marker_committed(const wd_recovery_t *rv, uint64_t number, bool *yes) {
  *yes = false;
  if (!rv->gcons) return NULL;
  wd_tp_offset_t m = {rv->marker_topic, 0, -1};
  wd_error_t *err = wd_recovery_group_offsets(rv, rv->gcons, &m, 1);
  if (!err) *yes = m.offset == (int64_t)number;
  return err;
}

int wd_recovery_put_number(wd_store_batch_t *b, uint64_t n) {
  char text[24];
  int len = snprintf(text, sizeof(text), "%" PRIu64, n);
  return wd_store_batch_set_meta(b, WD_NUMBER_KEY, (const uint8_t *)text, (size_t)len);
}

wd_error_t *wd_recovery_run(const wd_recovery_t *rv, volatile const int *stop, uint64_t *number) {
  wd_error_t *err = NULL;
  uint8_t *val = NULL;
  size_t vlen = 0;
  wd_marker_t pr = {0};
  wd_store_batch_t *b = NULL;
  if ((err = wd_store_get_meta(rv->store, WD_NUMBER_KEY, &val, &vlen))) goto done;
  if (val) {
    char text[24];
    size_t n = vlen < sizeof(text) - 1 ? vlen : sizeof(text) - 1;
    memcpy(text, val, n);
    text[n] = 0;
    *number = strtoull(text, NULL, 10);
    free(val);
    val = NULL;
  }
  if (!rv->exactly_once) {
    /* a commit left prepared by an exactly-once run (its rows are written, its offsets are not):
     * at-least-once takes its rows back and reads its records again */
    if ((err = wd_store_get_meta(rv->store, WD_PREPARED_KEY, &val, &vlen)) || !val) goto done;
    if (vlen < 4 || memcmp(val, WD_MARKER_MAGIC, 4) != 0) goto done; /* WDP1: nothing was written */
    free(val);
    val = NULL;
    if ((err = wd_store_get_meta(rv->store, WD_UNDO_KEY, &val, &vlen))) goto done;
    if (!(b = wd_store_batch_new())) {
      err = wd_error_nomem();
      goto done;
    }
    if (!val || wd_store_batch_decode(b, val, vlen)) {
      err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the undo image of a prepared commit is %s",
                         val ? "corrupt" : "missing");
      goto done;
    }
    if (wd_store_batch_delete_meta(b, WD_PREPARED_KEY) || wd_store_batch_delete_meta(b, WD_UNDO_KEY)) {
      err = wd_error_nomem();
      goto done;
    }
    if (!(err = wd_store_write_sync(rv->store, b)))
      wd_log(WD_LOG_INFO, "commit",
             "a commit left prepared by an exactly-once run was taken back (undo image); "
             "at-least-once reads its records again");
    goto done;
  }
  /* 1. fence an earlier incarnation and let the broker resolve its open transaction */
  for (int attempt = 0;; attempt++) {
    if (!(err = wd_collector_init(rv->coll, 30000))) break;
    wd_collector_poll(rv->coll); /* an unreachable broker: its error callback says "cannot reach HOST:PORT" once */
    bool unreachable = wd_collector_unreachable(rv->coll); /* then waited for, as the consumer does */
    if (!err->retriable || (attempt >= 4 && !unreachable) || (stop && *stop) || wd_stop_expired(rv->stop)) goto done;
    /* while unreachable the "cannot reach" line says it; the error itself every 5th attempt (the
     * flag clears only with a delivery: a broker back but still refusing stays visible) */
    wd_log(unreachable && attempt % 5 != 4 ? WD_LOG_DEBUG : WD_LOG_WARN, "commit", "%s; retrying", err->message);
    wd_error_destroy(err);
    err = NULL;
  }
  /* 2. a commit prepared before a crash: did its transaction commit? */
  if ((err = wd_store_get_meta(rv->store, WD_PREPARED_KEY, &val, &vlen))) goto done;
  if (!val) goto done;
  if (wd_marker_decode(val, vlen, &pr)) {
    err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the prepared commit record in the state store does not decode");
    goto done;
  }
  if (pr.v2 && rv->txn_id && pr.txn_id[0] && strcmp(pr.txn_id, rv->txn_id) != 0)
    wd_log(WD_LOG_WARN, "commit",
           "commit %" PRIu64 " was left prepared by transactional.id %s, this process runs as "
           "%s: its transaction is resolved by the broker's transaction timeout, not by this process",
           pr.number, pr.txn_id, rv->txn_id);
  bool committed = false;
  if (pr.nt) {
    wd_tp_offset_t *g = calloc(pr.nt, sizeof(*g));
    if (!g) {
      err = wd_error_nomem();
      goto done;
    }
    memcpy(g, pr.t, pr.nt * sizeof(*g));
    err = wd_recovery_group_offsets(rv, rv->cons, g, pr.nt);
    for (size_t i = 0; !err && i < pr.nt && !committed; i++) {
      int64_t s = -1;
      if (pr.v2) s = pr.from[i];
      else if ((err = wd_taskmgr_stored_offset(rv->store, pr.t[i].topic, pr.t[i].partition, &s))) break;
      committed = g[i].offset == pr.t[i].offset && pr.t[i].offset > s;
    }
    free(g);
    if (err) goto done;
  }
  if (!committed && (err = wd_recovery_marker_committed(rv, pr.number, &committed))) goto done;
  if (!(b = wd_store_batch_new())) {
    err = wd_error_nomem();
    goto done;
  }
  if (pr.v2 && !committed) {
    /* aborted: the rows written at prepare go back to their prior entries (the undo image) */
    free(val);
    val = NULL;
    if ((err = wd_store_get_meta(rv->store, WD_UNDO_KEY, &val, &vlen))) goto done;
    if (!val || wd_store_batch_decode(b, val, vlen)) {
      err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the undo image of prepared commit %" PRIu64 " is %s", pr.number,
                         val ? "corrupt" : "missing");
      goto done;
    }
  } else if (committed && (wd_store_batch_decode(b, pr.batch, pr.blen) || wd_recovery_put_number(b, pr.number))) {
    /* committed: v2 finalizes (the offsets, the number, the history: the rows are written); v1
     * applies its whole state batch */
    err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the prepared commit's batch does not decode");
    goto done;
  }
  if (wd_store_batch_delete_meta(b, WD_PREPARED_KEY) || wd_store_batch_delete_meta(b, WD_UNDO_KEY)) {
    err = wd_error_nomem();
    goto done;
  }
  if ((err = wd_store_write_sync(rv->store, b))) goto done;
  if (committed) *number = pr.number;
  wd_log(WD_LOG_INFO, "commit",
         "recovered commit %" PRIu64 " left prepared by the last run: its transaction %s, so its state was %s",
         pr.number, committed ? "committed" : "did not commit",
         committed ? (pr.v2 ? "finalized" : "applied") : (pr.v2 ? "taken back (undo image)" : "discarded"));
done:
  free(val);
  wd_marker_free(&pr);
  wd_store_batch_destroy(b);
  return err;
}
