/*
 * app/runtime/collector.h — the record collector (docs/runtime.md "The record
 * collector"): the ONE path from `widen run` into the Kafka producer and its transaction.
 *
 * Every record widen writes goes through it, tagged with its kind:
 *   WD_OUT_CHANGELOG         the table's changelog (sink.topic), keyed by primary key;
 *   WD_OUT_DEAD_LETTER       a rejected input record (sink.dead-letter-topic), with its reason;
 *   WD_OUT_REPARTITION       a record of a source keyed otherwise, forwarded to its repartition
 *                            topic (app/runtime/repartition.h) to the partition of its wide key;
 *   WD_OUT_STATE_CHANGELOG   a row change of the commit to the state changelog topic (partition =
 *                            task), under per-partition tasks.
 *
 * What it does, in one place:
 *   - owns the producer: creates it from the configuration it copies, and after a commit whose
 *     outcome stays unknown re-creates it with the same transactional.id (wd_collector_reopen:
 *     init_transactions fences the old one and resolves its transaction); so too after a fatal
 *     producer error that is not fencing (wd_collector_recreate, bounded). Nobody else holds the
 *     producer; the commit coordinator (app/runtime/commit.h) and the pipeline borrow the collector;
 *   - begins the transaction lazily (transactional producer: `transactional.id` set), with the
 *     first record of a commit or with the commit's offsets (wd_collector_begin), calling the
 *     owner's `opening` hook first (the coordinator opens its commit there, and its fault point
 *     `before-begin` is there);
 *   - classifies every error it returns (wd_collector_classify): an abortable transaction state
 *     (librdkafka's _STATE on a send after a failed delivery, or txn_requires_abort from any
 *     transaction call) is WD_COLLECT_ABORT (abort the open commit, rewind, redo); a retriable one
 *     is WD_COLLECT_RETRY (call again: a commit whose outcome is not known yet, a coordinator that
 *     moved); a wait that gave up is WD_COLLECT_STOPPED; a fatal producer error that is not
 *     fencing (librdkafka's rd_kafka_fatal_error: INVALID_TXN_STATE on EndTxn or
 *     AddPartitionsToTxn after a broker restart, an idempotence state it cannot leave) is
 *     WD_COLLECT_RECREATE (re-create the producer, resolve the open commit as one whose outcome is
 *     unknown, rewind, redo: Kafka Streams' handling of a task producer's fatal error); fenced,
 *     the re-creations' bound passed ("E_PRODUCER_FATAL") and any other is WD_COLLECT_FATAL (stop
 *     with the message);
 *   - waits while librdkafka's queue is full by calling the owner's `wait` hook, which serves the
 *     consumer group (partitions paused) and says when to give up (a stop that used its time, a
 *     batch abandoned by a rebalance): the send then fails with a retriable "E_STOPPED";
 *   - counts what each batch in hand sent (wd_collector_batch_mark / _batch_sent), so that a batch
 *     left half way (a stop during a registry outage) whose records were partly sent — records
 *     forwarded to a repartition topic among them — makes the caller abort the open commit instead
 *     of committing those records without their source offsets;
 *   - keeps the output offsets of the open commit per (topic, partition) from the delivery
 *     reports (wd_collector_ranges), for the commit history (app/ops/history.h);
 *   - can hold a commit's records (wd_collector_hold): while the previous transaction is being
 *     committed the next commit's records are kept in memory, not sent; wd_collector_release
 *     begins the next transaction and sends them in order (docs/exactly-once.md
 *     "A commit that does not block the pipeline").
 *
 * Ownership: the collector owns its producer and its copy of the configuration; hook contexts
 * are borrowed. Thread: the pipeline's thread only (hooks run on it, inside the collector's calls;
 * the producer's delivery reports run inside them too), except the commit started by
 * wd_collector_commit_start, which runs on a helper thread until joined (see there).
 */
#ifndef WD_COLLECTOR_H
#define WD_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "sink/producer.h"

typedef struct wd_collector wd_collector_t;

typedef enum wd_out_kind {
  WD_OUT_CHANGELOG,
  WD_OUT_DEAD_LETTER,
  WD_OUT_REPARTITION,
  WD_OUT_STATE_CHANGELOG,
  WD_OUT_KINDS
} wd_out_kind_t;

/* What the caller does with an error of the collector (wd_collector_classify). */
typedef enum wd_collect_class {
  WD_COLLECT_OK, /* no error */
  WD_COLLECT_ABORT, /* abortable (wd_error_abortable): abort the open commit, rewind, redo */
  WD_COLLECT_RECREATE, /* the producer failed fatally, not fenced: wd_collector_recreate, then the
                        * open commit is resolved as one with an unknown outcome (its commit was
                        * called) or aborted (it was not), the consumer rewound, the work redone */
  WD_COLLECT_RETRY, /* retriable: call the same function again (after serving the group) */
  WD_COLLECT_STOPPED, /* "E_STOPPED": a wait gave up (stop past its time, batch abandoned) */
  WD_COLLECT_FATAL /* fenced, fatal, or not retriable: stop with the message */
} wd_collect_class_t;

/* The class of err (NULL: WD_COLLECT_OK). Abortable wins over retriable; fatal wins over both:
 * WD_COLLECT_RECREATE for a fatal, not fenced error of the producer (ids "E_SINK_FATAL",
 * "E_SINK_PRODUCE", "E_TXN_BEGIN", "E_TXN_OFFSETS", "E_TXN_COMMIT", "E_TXN_ABORT"); every other
 * fatal one ("E_PRODUCER_FATAL": the bound of wd_collector_recreate passed; "E_TXN_INIT": a new
 * producer that cannot start; a consumer's "E_KAFKA_FATAL"; out of memory) and every fenced one
 * is WD_COLLECT_FATAL. */
wd_collect_class_t wd_collector_classify(const wd_error_t *err);

/* Creates the collector and its producer from conf (copied: kept to re-create the producer).
 * The producer is transactional when conf names `transactional.id` (then call wd_collector_init
 * before the first record). *out owned by the caller (wd_collector_destroy).
 * Errors (*out NULL): those of wd_producer_new (C_KAFKA_PROPERTY, E_KAFKA), E_NOMEM. */
wd_error_t *wd_collector_new(const wd_kafka_conf_t *conf, wd_collector_t **out);

/* Flushes what is queued (up to 10 s; a failure is logged) and releases the collector and its
 * producer; accepts NULL. An open transaction is left to the broker (aborted at its timeout or
 * fenced at the next start). */
void wd_collector_destroy(wd_collector_t *c);

/* The owner's hooks (ctx borrowed; each may be NULL):
 *   opening(ctx): once per commit's output, before its first record is sent or its transaction
 *     begun (the coordinator opens its commit; fault point before-begin);
 *   wait(ctx, ms): while librdkafka's queue is full, between delivery-report polls, a budget of
 *     about ms milliseconds to serve what must not starve; non-zero gives up (the send fails with
 *     a retriable "E_STOPPED"). Without it the send polls delivery reports until there is room. */
void wd_collector_set_opening(wd_collector_t *c, void (*opening)(void *ctx), void *ctx);
void wd_collector_set_wait(wd_collector_t *c, int (*wait)(void *ctx, int ms), void *ctx);
/* The owner's stop budget (ctx borrowed; NULL: none): budget(ctx, cap_ms) is the time in ms a long
 * wait may take now, at most cap_ms; 0 gives up. wd_collector_reopen asks it before each
 * init_transactions try, so that a stop with the broker away is not held up by the re-creation;
 * a give-up is a retriable "E_STOPPED". */
void wd_collector_set_budget(wd_collector_t *c, int (*budget)(void *ctx, int cap_ms), void *ctx);

/* Whether the producer is transactional (exactly-once). */
bool wd_collector_transactional(const wd_collector_t *c);

/* init_transactions: fences an earlier producer with the same transactional.id and resolves its
 * open transaction. Blocks up to timeout_ms. Errors: "E_TXN_INIT" (retriable: the coordinator did
 * not answer; fenced; fatal). A no-op for a producer that is not transactional. */
wd_error_t *wd_collector_init(wd_collector_t *c, int timeout_ms);

/* Begins the commit's transaction when none is open (transactional), after the opening hook.
 * While holding (wd_collector_hold) nothing is begun. Errors: "E_TXN_BEGIN" (fatal / fenced). */
wd_error_t *wd_collector_begin(wd_collector_t *c);

/* Whether a transaction is open (begun and neither committed nor aborted). */
bool wd_collector_txn_open(const wd_collector_t *c);

/* Sends one record of kind `kind` to topic: to `partition` (>= 0), or by key (murmur2) when
 * partition < 0; key[0..klen) and value[0..vlen) are copied (key NULL: null key; value NULL: a
 * tombstone). Begins the transaction first (wd_collector_begin) unless holding; while holding the
 * record is kept in memory and sent by wd_collector_release (one over the producer's
 * message.max.bytes, with 128 bytes of overhead, is refused at once with "E_SINK_PRODUCE" code
 * MSG_SIZE_TOO_LARGE, as the producer would refuse it). A full queue waits (the wait hook).
 * Errors: those of wd_producer_send classified by wd_collector_classify: "E_SINK_PRODUCE"
 * (MSG_SIZE_TOO_LARGE, an unknown topic, ...; txn_requires_abort on _STATE), "E_STOPPED"
 * (retriable), "E_SINK_FATAL", "E_TXN_BEGIN", E_NOMEM. */
wd_error_t *wd_collector_send(wd_collector_t *c, wd_out_kind_t kind, const char *topic, int32_t partition,
                              const void *key, size_t klen, const void *value, size_t vlen);

/* Sends a rejected input record src (borrowed) to dlq_topic with the headers of
 * wd_producer_send_dead_letter (widen.error.id, widen.error.message, widen.source.*): kind
 * WD_OUT_DEAD_LETTER. A record that would be over the producer's message.max.bytes (a source
 * topic may take larger messages) is sent with its value, then its key, cut to fit, and
 * widen.error.message ends with "(dead letter cut to fit message.max.bytes M: key K of N bytes,
 * value V of N bytes)"; it is logged as a warning. Errors: as wd_collector_send. */
wd_error_t *wd_collector_dead_letter(wd_collector_t *c, const char *dlq_topic, const wd_kmsg_t *src,
                                     const char *error_id, const char *error_message);

/* Adds offsets[0..n) (topics borrowed) of the group of gm (borrowed) to the open transaction
 * (begun first when needed), up to timeout_ms. n == 0 is a no-op. Errors: "E_TXN_OFFSETS"
 * (retriable: the group or transaction coordinator moved or did not answer; abortable; fenced). */
wd_error_t *wd_collector_send_offsets(wd_collector_t *c, const wd_tp_offset_t *offsets, size_t n,
                                      const wd_group_meta_t *gm, int timeout_ms);

/* Commits the open transaction (a no-op when none is open), up to timeout_ms. librdkafka's commit
 * is resumable: a retriable error (_TIMED_OUT, a coordinator that moved) leaves the transaction
 * committing, and calling again continues it. On success the transaction is closed and every
 * record sent in it was delivered. Errors: "E_TXN_COMMIT" (retriable; abortable: then call
 * wd_collector_abort; fenced; fatal). */
wd_error_t *wd_collector_commit(wd_collector_t *c, int timeout_ms);

/* Aborts the open transaction (its records are never visible to read_committed readers), up to
 * timeout_ms, and drops the records held (wd_collector_hold; holding ends), the batch's count and
 * the output ranges. Without an open transaction only drops. Errors: "E_TXN_ABORT" (retriable; fenced;
 * fatal). */
wd_error_t *wd_collector_abort(wd_collector_t *c, int timeout_ms);

/* Exactly-once: waits until a record of the open transaction is acknowledged (then its partitions
 * are registered with the transaction coordinator, so the previous transaction is complete there),
 * or nothing of it is in flight, or the producer is fatal, or timeout_ms passed
 * (wd_producer_wait_ack_after). Reports nothing: the transaction's commit reports its records'
 * outcome. No transaction open, or a commit running in the background: returns at once. */
void wd_collector_wait_registered(wd_collector_t *c, int timeout_ms);

/* At-least-once: waits until every record sent so far is acknowledged, up to timeout_ms.
 * Errors: "E_SINK_DELIVERY" (sticky, not retriable), "E_SINK_TIMEOUT" (retriable),
 * "E_SINK_FATAL". */
wd_error_t *wd_collector_wait_acked(wd_collector_t *c, int timeout_ms);

/* Replaces the producer by a new one with the same configuration and initialises its transactions
 * (retried while retriable, 5 tries of up to 30 s): used when a commit's outcome stays unknown; the
 * new producer's init_transactions fences the old one and resolves its transaction (the caller
 * then reads the outcome from the group's committed offsets). The transaction is closed after it;
 * the output ranges acknowledged so far (wd_collector_ranges) are kept.
 * Errors: those of wd_producer_new and "E_TXN_INIT"; the old producer is kept on error. */
wd_error_t *wd_collector_reopen(wd_collector_t *c);

/* After an error of class WD_COLLECT_RECREATE (cause, borrowed; may be NULL): replaces the fatal
 * producer by a new one with the same configuration, as wd_collector_reopen (its
 * init_transactions, with the same transactional.id, bumps the epoch: the old producer is fenced
 * and its open transaction completed, if its commit had reached the coordinator, or aborted). The
 * open transaction is closed after it; held records stay held (the caller resolves or aborts the
 * commit they belong to). Bounded: at most WD_RECREATE_MAX re-creations within
 * WD_RECREATE_WINDOW_S seconds; past it nothing is re-created and "E_PRODUCER_FATAL" (fatal, not
 * retriable) is returned with the cause's message, so a producer that stays broken stops the
 * process as before. Errors: "E_PRODUCER_FATAL" (the bound; a new producer that could not be
 * created or initialised, with its reason), "E_PRODUCER_FATAL" with fenced set when the cause or
 * the new producer's init is fenced (never re-created: a zombie must stop), "E_INTERNAL" (a commit
 * runs on the helper thread). */
#define WD_RECREATE_MAX 5
#define WD_RECREATE_WINDOW_S 300
wd_error_t *wd_collector_recreate(wd_collector_t *c, const wd_error_t *cause);

/* How many times the producer was replaced (wd_collector_reopen, wd_collector_recreate) since
 * wd_collector_new: a caller compares it before and after a step to tell whether that step
 * replaced it already. */
uint64_t wd_collector_generation(const wd_collector_t *c);

/* Fault injection (the WIDEN_FAULT hook "fatal-<point>", tests): the producer raises a fatal error
 * of code `code` (an rd_kafka_resp_err_t: INVALID_TXN_STATE is 48, PRODUCER_FENCED 90); the
 * collector's next call returns it ("E_SINK_FATAL", fatal; fenced for a fencing code). */
void wd_collector_inject_fatal(wd_collector_t *c, int code);

/* Holding: from wd_collector_hold(c) on, records sent are kept in memory in
 * order (up to `max_bytes` of keys and values; past it a send returns the retriable
 * "E_COLLECTOR_FULL": the caller completes the commit in hand and calls wd_collector_release), not
 * sent, and no transaction is begun. wd_collector_release begins the transaction (opening hook
 * first) when anything is held and sends the held records in order; errors as wd_collector_send
 * (the records not sent yet are kept, and dropped by wd_collector_abort). */
void wd_collector_hold(wd_collector_t *c, size_t max_bytes);
bool wd_collector_holding(const wd_collector_t *c);
size_t wd_collector_held(const wd_collector_t *c);
wd_error_t *wd_collector_release(wd_collector_t *c);

/* The commit on a helper thread: wd_collector_commit_start runs librdkafka's
 * commit_transaction(timeout_ms) on a thread of its own and returns at once (a no-op when no
 * transaction is open); from then on the collector holds every record sent (wd_collector_hold)
 * and nothing else touches the producer (wd_collector_poll is a no-op; begin, send_offsets,
 * abort, release, reopen, init and wait_acked refuse with "E_INTERNAL"), since the producer's
 * delivery reports run on that thread. wd_collector_commit_busy says whether the thread still
 * runs; wd_collector_commit_join (and wd_collector_commit, which joins when started) waits for it
 * and returns its result, classified as wd_collector_commit's (RETRY: call wd_collector_commit
 * again, it resumes; ABORT: wd_collector_abort). Short timeouts are not used: librdkafka 2.0.2
 * asserts on a commit called again and again with a tiny timeout (a state transition
 * CommittingTransaction -> AbortedNotAcked), so the commit runs with the normal timeout, off the
 * pipeline's thread. Errors of start: "E_INTERNAL" (a commit runs already, no thread). */
wd_error_t *wd_collector_commit_start(wd_collector_t *c, int timeout_ms);
bool wd_collector_commit_busy(const wd_collector_t *c);
bool wd_collector_commit_started(const wd_collector_t *c);
wd_error_t *wd_collector_commit_join(wd_collector_t *c);

/* The batch in hand: mark at its start; batch_sent says whether any record (sent or held) was
 * produced since the mark. */
void wd_collector_batch_mark(wd_collector_t *c);
bool wd_collector_batch_sent(const wd_collector_t *c);

/* Records of each kind produced since wd_collector_new (sent or held; aborted ones included). */
uint64_t wd_collector_count(const wd_collector_t *c, wd_out_kind_t kind);

/* The offsets of the records acknowledged since the last wd_collector_ranges_reset, per (topic,
 * partition), from the delivery reports (*out borrowed, valid until the next call into the
 * collector; topic names valid until the producer is replaced: wd_collector_reopen, _recreate): for the commit history's output ranges
 * (read them once the commit's output is complete, then reset). */
size_t wd_collector_ranges(const wd_collector_t *c, const wd_producer_range_t **out);
void wd_collector_ranges_reset(wd_collector_t *c);

/* Serves delivery reports without blocking. */
void wd_collector_poll(wd_collector_t *c);
/* Whether the producer's broker is unreachable since its last delivery (wd_producer_unreachable). */
bool wd_collector_unreachable(const wd_collector_t *c);

/* Topic administration through the collector's producer (no transaction): as
 * wd_producer_ensure_topic and wd_producer_partition_count. */
wd_error_t *wd_collector_ensure_topic(wd_collector_t *c, const char *topic, int partitions, const char *const *configs,
                                      int timeout_ms);
wd_error_t *wd_collector_partition_count(wd_collector_t *c, const char *topic, int timeout_ms, int *count);

#endif
