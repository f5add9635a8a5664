/*
 * sink/producer.h — the pipeline's Kafka producer: the output changelog keyed by primary key,
 * and the dead-letter topic.
 *
 * An idempotent librdkafka producer (enable.idempotence=true, acks=all) with
 * partitioner=murmur2_random, so a key lands on the partition Java clients (Debezium, Kafka
 * Connect, Flink) would pick: (murmur2(key) & 0x7fffffff) % partitions; null keys go to a
 * random partition. linger.ms=5 by default (overridable).
 *
 * Producing and waiting are separate steps: wd_producer_send() only enqueues (copying key and
 * value) and counts the message in flight; wd_producer_wait_acked() waits until every message
 * sent so far is acknowledged, and fails if any delivery failed. The pipeline commits its input
 * offsets only after wait_acked succeeded. (A transactional id can later wrap these steps in
 * begin/commit_transaction without changing callers.)
 *
 * A delivery failure is sticky: once a message could not be delivered (after librdkafka's own
 * retries), every later wd_producer_wait_acked()/wd_producer_flush() returns E_SINK_DELIVERY
 * naming the first failure, since output is missing and offsets must not advance past it.
 *
 * Thread: one thread uses a producer; the delivery-report callback runs on that thread, inside
 * the producer's calls.
 */
#ifndef WD_PRODUCER_H
#define WD_PRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/kafka_conf.h"

typedef struct wd_producer wd_producer_t;

/* One message header (all borrowed; value may be NULL for a null header value). */
typedef struct wd_header {
  const char *name;
  const void *value;
  size_t len;
} wd_header_t;

/* Counters since wd_producer_new(). in_flight = sent - acked - failed. */
typedef struct wd_producer_stats {
  uint64_t sent; /* messages enqueued by wd_producer_send / _send_dead_letter */
  uint64_t acked; /* delivery confirmed by the broker */
  uint64_t failed; /* delivery failed permanently */
  uint64_t bytes; /* key + value bytes enqueued */
  uint64_t in_flight;
} wd_producer_stats_t;

/* The wait of a send while librdkafka's local queue is full (queue.buffering.max.messages /
 * .kbytes): called between delivery-report polls with a budget of about ms milliseconds, in
 * which it serves what must not starve (the pipeline polls its consumer, so the group does not
 * evict it). Returns non-zero to give up: the send then fails with a retriable "E_STOPPED". */
typedef int (*wd_producer_wait_fn)(void *ctx, int ms);

/* Sets (fn NULL: clears) the queue-full wait of p; ctx is borrowed. Without one the send polls
 * delivery reports in 100 ms steps until there is room (a fatal error ends it). */
void wd_producer_set_wait(wd_producer_t *p, wd_producer_wait_fn fn, void *ctx);

/* Creates a producer with conf (borrowed; conf->group_id is ignored). conf->props are passed to
 * librdkafka (compression.type, linger.ms, message.timeout.ms, security settings, ...); widen
 * fixes enable.idempotence=true, acks=all and partitioner=murmur2_random (refused as props).
 * On success *out is owned by the caller (wd_producer_destroy).
 * Errors (*out NULL): WD_ERR_CONFIG "C_KAFKA_PROPERTY" naming a bad property; WD_ERR_KAFKA
 * "E_KAFKA" when librdkafka cannot create the client; E_NOMEM. */
wd_error_t *wd_producer_new(const wd_kafka_conf_t *conf, wd_producer_t **out);

/* Enqueues one message for topic: key[0..klen) (NULL = null key) and value[0..vlen) (NULL =
 * null value, a tombstone) are copied; headers[0..nheaders) are copied (may be NULL when
 * nheaders is 0). The partition comes from the key (murmur2). When librdkafka's queue is full,
 * serves delivery reports and retries until there is room (logging once that it waits), calling
 * the wait of wd_producer_set_wait between tries when one is set.
 * Errors (the message is not sent and not counted): WD_ERR_KAFKA "E_SINK_PRODUCE" naming the
 * topic and librdkafka's reason (e.g. MSG_SIZE_TOO_LARGE, UNKNOWN_TOPIC, a sticky topic error;
 * retriable when librdkafka's code is; txn_requires_abort on a transactional producer whose
 * transaction is in an abortable error state: librdkafka's _STATE); "E_STOPPED" (retriable) when
 * the wait gave up on a full queue; "E_SINK_FATAL" (fatal = true) after a fatal producer
 * error (idempotence broken: the producer must be recreated); E_NOMEM. */
wd_error_t *wd_producer_send(wd_producer_t *p, const char *topic, const void *key, size_t klen, const void *value,
                             size_t vlen, const wd_header_t *headers, size_t nheaders);

/* As wd_producer_send without headers, to partition `partition` of topic (not by key): the state
 * changelog topic, whose partition i holds task i's state. */
wd_error_t *wd_producer_send_to(wd_producer_t *p, const char *topic, int32_t partition, const void *key, size_t klen,
                                const void *value, size_t vlen);

/* Creates topic with `partitions` partitions (the broker's default replication factor) and the
 * topic configs configs[0..] (name, value, name, value, ..., NULL), unless it exists already
 * (then nothing is checked or changed). Blocks up to timeout_ms. Errors: "E_TOPIC_CREATE" with
 * the broker's reason (retriable when it did not answer); E_NOMEM. */
wd_error_t *wd_producer_ensure_topic(wd_producer_t *p, const char *topic, int partitions, const char *const *configs,
                                     int timeout_ms);

/* The partition count of topic from the broker's metadata (*count = 0 when the topic does not
 * exist; asking never creates it). Blocks up to timeout_ms. Errors: "E_TOPIC_METADATA" (retriable) when the broker did not
 * answer in time. */
wd_error_t *wd_producer_partition_count(wd_producer_t *p, const char *topic, int timeout_ms, int *count);

/* The partition of a record keyed by key[0..klen) in a topic of `partitions` partitions, as the
 * Java client's default partitioner and librdkafka's murmur2 partitioner choose it (murmur2 of the
 * key bytes, positive, modulo the count): the repartition topics (app/runtime/repartition.h) and the tasks
 * of a replay compute the same number. partitions > 0. */
int32_t wd_producer_partition_of(const void *key, size_t klen, int32_t partitions);

/* The largest message topic takes, as far as p knows, for a message of `wire` bytes (key, value,
 * headers and overhead): the topic's max.message.bytes, which the first send to the topic asks for
 * (Kafka's DescribeConfigs, answered while p sends; a message of 4 kB or more waits for the answer,
 * at most 6 s) and asks again after the broker refused a message to it for its size (a delivery
 * report with MSG_SIZE_TOO_LARGE, logged at WARN); SIZE_MAX while it is not known (no send to
 * topic yet, no answer, no permission to describe the topic). librdkafka checks messages against
 * the producer's message.max.bytes alone, so a topic whose limit is lower refuses them at the
 * broker, which fails the transaction at every retry (at-least-once: the delivery): wd_producer_send
 * refuses larger messages itself ("E_SINK_PRODUCE", code MSG_SIZE_TOO_LARGE) and the record
 * collector (app/runtime/collector.c) before it holds them. */
size_t wd_producer_max_message_bytes(wd_producer_t *p, const char *topic, size_t wire);

/* The headers of a dead letter of src (borrowed: the headers point into src, error_id,
 * error_message and the struct itself, so fill it in place and do not copy it): widen.error.id
 * (error_id, "" when NULL), widen.error.message (error_message, "" when NULL),
 * widen.source.topic, widen.source.partition and widen.source.offset (decimal text). The one
 * definition of those headers, for wd_producer_send_dead_letter and the record collector. */
typedef struct wd_dead_letter_headers {
  char partition[16], offset[24];
  wd_header_t h[5];
} wd_dead_letter_headers_t;
void wd_dead_letter_headers(wd_dead_letter_headers_t *out, const wd_kmsg_t *src, const char *error_id,
                            const char *error_message);

/* Sends a rejected input record to the dead-letter topic dlq_topic: src's key and value bytes
 * unchanged (src borrowed; its rkm is not used) with the string headers widen.error.id
 * (error_id, "" when NULL), widen.error.message (error_message, "" when NULL),
 * widen.source.topic, widen.source.partition and widen.source.offset (decimal text).
 * Delivery is tracked like wd_producer_send's. Errors: as wd_producer_send. */
wd_error_t *wd_producer_send_dead_letter(wd_producer_t *p, const char *dlq_topic, const wd_kmsg_t *src,
                                         const char *error_id, const char *error_message);

/* Messages acknowledged by the broker since the producer was made (a count that only grows). */
uint64_t wd_producer_acked(const wd_producer_t *p);

/* Waits, serving delivery reports, until more than `acked` messages in all are acknowledged (the
 * count of wd_producer_acked taken earlier), or nothing is in flight, or the producer turned
 * fatal, or timeout_ms (>= 0) passed; whichever comes first, and returns nothing: the caller reads
 * the outcome of its messages later (wd_producer_wait_acked, a transaction's commit). As
 * wd_producer_wait_acked, it asks librdkafka to send lingering batches at once. Used under
 * exactly-once to know that a transaction's partitions are registered with its coordinator (a
 * record of the transaction was acknowledged) before its offsets are sent. */
void wd_producer_wait_ack_after(wd_producer_t *p, uint64_t acked, int timeout_ms);

/* Waits until every message sent so far is acknowledged or failed, up to timeout_ms (< 0: no
 * limit), serving delivery reports and asking librdkafka to send lingering batches now.
 * Errors: WD_ERR_KAFKA "E_SINK_DELIVERY" (not retriable) naming the first failed delivery's
 * topic, partition and librdkafka reason (sticky, see above) and how many failed;
 * "E_SINK_TIMEOUT" (retriable) when messages are still in flight at the timeout (how many);
 * "E_SINK_FATAL" after a fatal producer error. */
wd_error_t *wd_producer_wait_acked(wd_producer_t *p, int timeout_ms);

/* Output batches for pipelining (the pipeline overlaps one batch's acknowledgement wait with the
 * next batch's work). Messages sent after wd_producer_begin_batch() belong to the batch it
 * returns (an increasing id; before the first call, batch 0). At most WD_PRODUCER_EPOCHS batches
 * can be in flight; begin_batch waits (serving delivery reports) for the slot it reuses. */
#define WD_PRODUCER_EPOCHS 64
uint64_t wd_producer_begin_batch(wd_producer_t *p);

/* Waits until every message of batch `batch` and of every earlier batch is acknowledged, up to
 * timeout_ms (< 0: no limit), serving delivery reports. Messages of later batches may still be
 * in flight. Errors: "E_SINK_DELIVERY" (sticky, as wd_producer_wait_acked), "E_SINK_TIMEOUT"
 * (retriable), "E_SINK_FATAL". */
wd_error_t *wd_producer_wait_batch(wd_producer_t *p, uint64_t batch, int timeout_ms);

/* The offsets of the messages acknowledged since the last wd_producer_offsets_reset (or since
 * wd_producer_new), per (topic, partition), from the delivery reports: *out points at the
 * producer's array of the returned number of ranges (borrowed; valid until the next call into
 * the producer). topic points at the producer's own copy of the name (valid until
 * wd_producer_destroy). For the commit history's output ranges (app/ops/history.h): read them once a
 * commit's output is complete (acknowledged or its transaction committed), then reset. */
typedef struct wd_producer_range {
  const char *topic;
  int32_t partition;
  int64_t first, end; /* offsets [first, end) hold the messages to this partition */
} wd_producer_range_t;
size_t wd_producer_offsets(const wd_producer_t *p, const wd_producer_range_t **out);
void wd_producer_offsets_reset(wd_producer_t *p);
/* Adds src's acknowledged ranges to dst's (topic names copied into dst's handles): a producer that
 * replaces src keeps the output ranges of the commit in hand (app/runtime/collector.h
 * wd_collector_reopen). A range that cannot be carried (no memory) is lost: bookkeeping only. */
void wd_producer_offsets_carry(wd_producer_t *dst, const wd_producer_t *src);

/* rd_kafka_flush: sends everything queued and waits up to timeout_ms for its delivery reports.
 * Same result as wd_producer_wait_acked (kept for callers that only want the queue emptied,
 * e.g. before destroy). */
wd_error_t *wd_producer_flush(wd_producer_t *p, int timeout_ms);

/* Serves pending delivery reports without blocking (call now and then when idle). */
void wd_producer_poll(wd_producer_t *p);

/* Whether the producer's last connection error is not yet followed by a delivery (it said
 * "cannot reach HOST:PORT (...); retrying", kafka/kafka.h): a caller retrying a request that timed
 * out can then keep its own message quiet. Served by wd_producer_poll. */
bool wd_producer_unreachable(const wd_producer_t *p);

/* The fatal error librdkafka raised on p (rd_kafka_fatal_error: an idempotence or transaction
 * state the producer cannot leave), as "E_SINK_FATAL" (fatal; fenced when the cause is a fencing
 * one: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, _FENCED); NULL while there is none. The producer is
 * unusable after one: its owner re-creates it or stops (app/runtime/collector.h). */
wd_error_t *wd_producer_fatal(wd_producer_t *p);

/* Fault injection (tests and the WIDEN_FAULT hook, docs/exactly-once.md): raises a fatal error
 * with code `code` (an rd_kafka_resp_err_t, e.g. INVALID_TXN_STATE = 48) on p, as librdkafka's
 * rd_kafka_test_fatal_error does; from then on wd_producer_fatal and every send report it. */
void wd_producer_inject_fatal(wd_producer_t *p, int code, const char *reason);

/* ---- transactions (exactly-once; docs/exactly-once.md) ------------------------------------
 * A producer whose conf names a `transactional.id` property is transactional: call
 * wd_producer_txn_init once, then per commit begin, send (wd_producer_send / _dead_letter),
 * send_offsets, commit (or abort). Every function below returns errors built from librdkafka's
 * rd_kafka_error_t (wd_error_t code, retriable, fatal, txn_requires_abort, fenced):
 *   "E_TXN_INIT", "E_TXN_BEGIN", "E_TXN_OFFSETS", "E_TXN_COMMIT", "E_TXN_ABORT" with the
 *   librdkafka name and text; fenced = another instance took over (stop);
 *   txn_requires_abort = abort and redo; retriable = call the same function again (for commit:
 *   its outcome is not known yet); fatal = the producer is unusable. */

/* Whether p was created with a transactional.id. */
bool wd_producer_transactional(const wd_producer_t *p);

/* rd_kafka_init_transactions: registers the transactional.id with its coordinator, fencing an
 * earlier producer with the same id and completing or aborting its open transaction. Blocks up
 * to timeout_ms. */
wd_error_t *wd_producer_txn_init(wd_producer_t *p, int timeout_ms);

/* Begins a transaction (local; no request). */
wd_error_t *wd_producer_txn_begin(wd_producer_t *p);

/* Adds offsets[0..n) (next offsets to read; topics borrowed) for the consumer group of gm
 * (borrowed) to the open transaction, up to timeout_ms. n == 0 is a no-op. */
wd_error_t *wd_producer_txn_send_offsets(wd_producer_t *p, const wd_tp_offset_t *offsets, size_t n,
                                         const wd_group_meta_t *gm, int timeout_ms);

/* Flushes and commits the open transaction, up to timeout_ms. On success every message sent in
 * it was delivered (the delivery counters agree). */
wd_error_t *wd_producer_txn_commit(wd_producer_t *p, int timeout_ms);

/* Aborts the open transaction (its messages are purged and never visible to read_committed
 * consumers) and clears the sticky delivery failure state, up to timeout_ms. */
wd_error_t *wd_producer_txn_abort(wd_producer_t *p, int timeout_ms);

/* Fills *stats with the producer's counters. */
void wd_producer_stats(const wd_producer_t *p, wd_producer_stats_t *stats);

/* Releases p; accepts NULL. Messages not yet delivered are dropped (their delivery fails):
 * call wd_producer_wait_acked() first. */
void wd_producer_destroy(wd_producer_t *p);

#endif
