/*
 * app/runtime/replay.c — a replay's bookkeeping (see replay.h).
 */
#include "app/runtime/replay.h"

#include <stdlib.h>
#include <string.h>

void wd_replay_init(wd_replay_t *r, bool on, int64_t from_ms, const char *stop_at_state) {
  *r = (wd_replay_t){.on = on, .from_ms = from_ms, .stop_at_state = stop_at_state};
}

void wd_replay_free(wd_replay_t *r) {
  free(r->end);
  r->end = NULL;
  r->nend = 0;
}

bool wd_replay_past_stop(const wd_replay_t *r, const wd_kmsg_t *m) {
  if (!r->stop_at_state) return false;
  for (size_t i = 0; i < r->nend; i++)
    if (r->end[i].partition == m->partition && !strcmp(r->end[i].topic, m->topic)) return m->offset >= r->end[i].offset;
  return true;
}

/* The stop offsets from the offsets stored in stop_at_state (0: nothing to read). */
static wd_error_t *stop_offsets(wd_replay_t *r) {
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(r->stop_at_state, NULL, &st);
  for (size_t i = 0; !err && i < r->nend; i++) {
    int64_t next = -1;
    err = wd_store_get_offset(st, r->end[i].topic, r->end[i].partition, &next);
    if (!err) r->end[i].offset = next > 0 && next < r->end[i].offset ? next : next > 0 ? r->end[i].offset : 0;
  }
  wd_store_close(st);
  return err;
}

wd_error_t *wd_replay_start(wd_replay_t *r, wd_consumer_t *cons) {
  if (!r->on) return NULL;
  wd_error_t *err = wd_consumer_end_offsets(cons, 30000, &r->end, &r->nend);
  if (!err && r->stop_at_state) err = stop_offsets(r);
  return err;
}

bool wd_replay_done(const wd_replay_t *r, wd_consumer_t *cons, wd_store_t *store, bool pending) {
  if (!r->on) return false;
  wd_tp_offset_t *pos = NULL;
  size_t npos = 0;
  bool done = true;
  wd_error_t *perr = pending ? NULL : wd_consumer_assignment(cons, &pos, &npos);
  wd_error_destroy(perr);
  for (size_t i = 0; i < r->nend && done; i++) {
    int64_t next = -1;
    wd_error_t *err = wd_store_get_offset(store, r->end[i].topic, r->end[i].partition, &next);
    wd_error_destroy(err);
    if (r->end[i].offset <= 0 || next >= r->end[i].offset) continue;
    bool passed = false;
    for (size_t k = 0; k < npos && !passed; k++)
      passed = pos[k].partition == r->end[i].partition && !strcmp(pos[k].topic, r->end[i].topic) &&
               pos[k].offset >= r->end[i].offset;
    done = passed;
  }
  free(pos);
  return done;
}

double wd_replay_progress(const wd_replay_t *r, wd_store_t *store) {
  if (!r->on || !r->nend) return -1;
  double want = 0, have = 0;
  for (size_t i = 0; i < r->nend; i++) {
    int64_t next = -1;
    wd_error_destroy(wd_store_get_offset(store, r->end[i].topic, r->end[i].partition, &next));
    want += (double)(r->end[i].offset > 0 ? r->end[i].offset : 0);
    have += (double)(next < 0 ? 0 : next > r->end[i].offset ? r->end[i].offset : next);
  }
  return want > 0 ? have / want : 1.0;
}
