/*
 * app/runtime/rebuild_output.c — a rebuild's records into the open commit (see rebuild_output.h).
 */
#include "app/runtime/rebuild_output.h"

/* A rebalance aborted the switch in hand: nothing more of it may be sent. */
static wd_error_t *switch_abandoned(const wd_rebuild_output_t *o) {
  return wd_commit_batch_invalid(o->commit)
             ? wd_error_new(WD_ERR_KAFKA, E_BATCH_ABANDONED, "a rebalance came while the switch was in hand")
             : NULL;
}

static wd_error_t *changes(void *ctx, wd_row_t *const *rows, size_t n) {
  wd_rebuild_output_t *o = ctx;
  wd_error_t *aerr = switch_abandoned(o);
  if (aerr) return aerr;
  wd_emitter_t *e = o->emit;
  for (size_t i = 0; i < n;) {
    size_t at = i;
    wd_error_t *err = wd_emit_encode(e, rows, n, &i);
    if (!err) err = wd_commit_begin(o->commit);
    if (!err)
      err = wd_collector_send(o->coll, WD_OUT_CHANGELOG, e->c.topic, -1, e->kbuf.data, e->kbuf.len, e->vbuf.data,
                              e->vbuf.len);
    if (err) return err;
    *e->c.changes_out += i - at;
    wd_hist_gather_count(o->hg, 0, i - at, 0, 0);
    (*e->c.messages_out)++;
  }
  return NULL;
}

static wd_error_t *state(void *ctx, uint32_t task, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  wd_rebuild_output_t *o = ctx;
  wd_error_t *err = switch_abandoned(o);
  if (!err) err = wd_commit_begin(o->commit);
  if (!err)
    err = wd_collector_send(o->coll, WD_OUT_STATE_CHANGELOG, o->changelog_topic, (int32_t)task, key, klen, val,
                            val ? vlen : 0);
  return err;
}

static wd_error_t *complete(void *ctx, bool *aborted) {
  wd_rebuild_output_t *o = ctx;
  return wd_commit_run(o->commit, o->stop, aborted);
}

wd_rebuild_io_t wd_rebuild_output_io(wd_rebuild_output_t *out) {
  return (wd_rebuild_io_t){out, changes, out->changelog_topic ? state : NULL, complete};
}
