/*
 * app/runtime/replay.h — a replay's bookkeeping (`widen replay`, and the automatic rebuild's
 * replay of the old state): where it starts, which records it skips, when it is done.
 *
 * A replay reads every partition of the sources without a group, from `--from` (a point in time;
 * records older are skipped) or the beginning, up to the end offsets seen at its start, and stops
 * there. With stop_at_state (a rebuild) each partition stops instead at the offset stored in that
 * (closed) state directory, the old state's position: records at or past it are not taken.
 *
 * A partition is done when the state holds its records up to its end offset, or the consumer's
 * position has passed it with nothing pending (transaction markers and deleted records occupy
 * offsets that no record brings).
 *
 * Ownership: plain data, held by the pipeline; wd_replay_free frees the end offsets. Thread: the
 * pipeline's.
 */
#ifndef WD_APP_REPLAY_H
#define WD_APP_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "join/store.h"

typedef struct wd_replay {
  bool on; /* a replay (else every function here says "nothing") */
  int64_t from_ms; /* --from: records older are skipped; -1: none */
  const char *stop_at_state; /* a rebuild: the old state directory (borrowed), or NULL */
  wd_tp_offset_t *end; /* per partition: where it stops (owned) */
  size_t nend;
} wd_replay_t;

/* r for a replay when on, from from_ms (-1: the beginning), stopping at stop_at_state's offsets
 * when set (borrowed). */
void wd_replay_init(wd_replay_t *r, bool on, int64_t from_ms, const char *stop_at_state);
void wd_replay_free(wd_replay_t *r);

/* At the start of the run: the end offsets of every partition cons holds (30 s to answer), with
 * stop_at_state's stored offsets in their place when set. Nothing when !r->on. Errors: the
 * consumer's (end offsets), the store's (opening the old state). */
wd_error_t *wd_replay_start(wd_replay_t *r, wd_consumer_t *cons);

/* Whether m lies at or past its partition's stop offset (a rebuild's replay; false otherwise). */
bool wd_replay_past_stop(const wd_replay_t *r, const wd_kmsg_t *m);

/* Whether m is not taken: older than --from, or past its stop offset. */
static inline bool wd_replay_skips(const wd_replay_t *r, const wd_kmsg_t *m) {
  return (r->on && r->from_ms >= 0 && m->timestamp >= 0 && m->timestamp < r->from_ms) ||
         (r->stop_at_state && wd_replay_past_stop(r, m));
}

/* Whether every partition reached its end (see above): store holds its stored offsets, cons its
 * positions (not asked while a commit is pending: pending). False when !r->on. */
bool wd_replay_done(const wd_replay_t *r, wd_consumer_t *cons, wd_store_t *store, bool pending);

/* The share of the end offsets the state holds, 0..1 (the restore metric); -1 when not a replay
 * or before wd_replay_start. */
double wd_replay_progress(const wd_replay_t *r, wd_store_t *store);

#endif
