/*
 * app/runtime/restorer.h — the restorer: the state changelog restores of one assignment (Kafka
 * Streams' StoreChangelogReader). It owns a read_committed consumer of the state changelog topic
 * (partition i = task i), reads each task's partition from where its restore starts (0: the
 * beginning, the task's key range deleted beforehand; else a standby copy's position) up to the
 * partition's end offset when the restore began, writes what it reads into the store in slices
 * (wd_restorer_step, run by the pipeline's poll loop between polls of the group), and reports each
 * task whose rows are all written to its owner (the task manager, app/runtime/task_manager.h)
 * through the `restored` callback. It knows nothing of task states or offsets of the sources.
 *
 * Ownership: the restorer borrows its conf's store, stop clock and topic names; it owns its
 * consumer and its buffers. Thread: the pipeline's.
 */
#ifndef WD_RESTORER_H
#define WD_RESTORER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/stop_clock.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "join/store.h"

typedef struct wd_restorer wd_restorer_t;

/* The consumer operations the restorer uses, with wd_consumer_*'s contracts (ingest/consumer.h).
 * All NULL (the default): the real ones. Tests put fakes here. */
typedef struct wd_restore_io {
  wd_error_t *(*open)(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                      wd_consumer_assign_cb on_assign, void *ctx, wd_consumer_t **out);
  wd_error_t *(*end_offsets)(wd_consumer_t *c, int timeout_ms, wd_tp_offset_t **out, size_t *n);
  wd_error_t *(*poll)(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n);
  void (*release)(wd_kmsg_t *msgs, size_t n);
  wd_error_t *(*positions)(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n);
  void (*close)(wd_consumer_t *c);
} wd_restore_io_t;

/* A task's rows are all in the store (its changelog partition reached its end): `from` where its
 * restore started (> 0: a standby copy's position), `records` read for it, `seconds` since the
 * restore began. The owner records it (offsets, task state); an error stops the restore step with
 * it and the task counts as not restored (reported again at the next step). */
typedef wd_error_t *(*wd_restored_cb)(void *ctx, uint32_t task, int64_t from, uint64_t records, double seconds);

typedef struct wd_restorer_conf {
  const char *changelog_topic; /* borrowed */
  const wd_kafka_conf_t *restore_conf; /* brokers and client properties of the restore consumer */
  wd_store_t *store; /* borrowed: where the rows go */
  wd_stop_clock_t *stop; /* borrowed: bounds the retry of the end offsets' request */
  wd_restored_cb restored;
  void *ctx; /* restored's */
  wd_restore_io_t io; /* zeroed: the real consumer */
} wd_restorer_conf_t;

/* A restorer of tasks[0..n), each from from[i] (0: the beginning; else a standby copy's position);
 * copies: how many of them start from a standby copy (for the log). Takes tasks and from
 * (allocated; freed also on failure). *out owned by the caller (wd_restorer_destroy). Errors:
 * E_NOMEM. */
wd_error_t *wd_restorer_new(const wd_restorer_conf_t *conf, uint32_t *tasks, int64_t *from, size_t n, size_t copies,
                            wd_restorer_t **out);
void wd_restorer_destroy(wd_restorer_t *r); /* accepts NULL */

/* One slice: the first call creates the consumer and reads where each task ends (a retriable
 * failure is retried at the next call for up to 60 s); then polls for up to max_ms, writes what it
 * read, and reports each task whose partition reached its end (`restored`). *done is set when every
 * task is restored (the caller then destroys it). Errors: "E_KAFKA" (the restore consumer),
 * "E_RESTORE" (no progress for 60 s), store write errors, the callback's, E_NOMEM. */
wd_error_t *wd_restorer_step(wd_restorer_t *r, int max_ms, bool *done);

/* The tasks of this restore (n of them), and how many are not restored yet. */
size_t wd_restorer_count(const wd_restorer_t *r);
uint32_t wd_restorer_task(const wd_restorer_t *r, size_t i);
size_t wd_restorer_left(const wd_restorer_t *r);

#endif
