/*
 * app/runtime/recovery.h — recovery at start and the resolution of a transaction whose outcome is
 * not known (docs/exactly-once.md "Recovery"): a commit left prepared by a crash is finalized when
 * its transaction committed (the group's committed offsets moved to its targets, or its marker
 * offset in the per-process group equals its number) and taken back with its undo image when not.
 * The commit coordinator (app/runtime/commit.c) calls it with a view of what it borrows.
 *
 * Ownership: everything in wd_recovery_t is borrowed. Thread: the pipeline's.
 */
#ifndef WD_RECOVERY_H
#define WD_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/collector.h"
#include "app/runtime/stop_clock.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "join/store.h"

typedef struct wd_recovery {
  bool exactly_once;
  const char *txn_id; /* this process's transactional.id (may be NULL) */
  wd_store_t *store;
  wd_collector_t *coll; /* exactly-once: fences the earlier incarnation (init_transactions) */
  wd_consumer_t *cons; /* the group consumer: its committed offsets */
  wd_consumer_t *gcons; /* the per-process group of the commit marker, or NULL */
  const char *marker_topic; /* its marker partition's topic */
  wd_stop_clock_t *stop;
} wd_recovery_t;

/* At start (commit.h wd_commit_recover): *number := the last finalized commit's number (0: none);
 * under exactly-once init_transactions first (retried while the broker does not answer, until
 * *stop), then a prepared commit resolved; at-least-once takes back a commit an exactly-once run
 * left prepared. Errors: fenced / fatal transaction errors, E_STORE_*, E_STATE_CORRUPT (a marker or
 * undo image that does not decode), "E_RECOVER" (the group's offsets unreadable), E_STOPPED,
 * E_NOMEM. */
wd_error_t *wd_recovery_run(const wd_recovery_t *rv, volatile const int *stop, uint64_t *number);

/* The group's committed offsets of parts[0..n) of cons's group into parts[i].offset (-1: none),
 * retried for up to about 60 s while the coordinator does not answer. Errors: "E_RECOVER",
 * "E_STOPPED". */
wd_error_t *wd_recovery_group_offsets(const wd_recovery_t *rv, wd_consumer_t *cons, wd_tp_offset_t *parts, size_t n);

/* Whether the transaction of commit `number` committed, by the marker offset of the per-process
 * group; *yes false when there is none (gcons NULL). Errors: as wd_recovery_group_offsets. */
wd_error_t *wd_recovery_marker_committed(const wd_recovery_t *rv, uint64_t number, bool *yes);

/* Sets the meta entry WD_NUMBER_KEY (app/runtime/marker.h) of b to n. 0, or -1 on no memory. */
int wd_recovery_put_number(wd_store_batch_t *b, uint64_t n);

#endif
