/*
 * ingest/consumer.h — the pipeline's Kafka consumer over N source topics (a librdkafka
 * KafkaConsumer).
 *
 * Two modes, chosen by conf->group_id:
 *   - group mode (group_id set): subscribes to the topics in that consumer group with the eager
 *     assignment protocol (partition.assignment.strategy cooperative-sticky is refused: 2.0.2's
 *     incremental protocol does not fit our seek-on-assign pattern). On every assignment the
 *     on_assign callback gives each partition's starting offset (the pipeline reads it from its
 *     state store: the store's offsets are the truth) or WD_OFFSET_STORED for the committed
 *     group offset (else auto.offset.reset, default earliest); the partitions are then assigned
 *     at those offsets. On revocation the on_revoke callback runs first (so the pipeline can
 *     finish and commit its batch), then the partitions are unassigned.
 *   - assign mode (group_id NULL): every partition of the topics, as the broker's metadata lists
 *     them at wd_consumer_new(), is assigned directly: no group join, no rebalances, no commits
 *     (`widen tail`, `widen replay`). on_assign gives the starting offsets the same way
 *     (WD_OFFSET_STORED means auto.offset.reset here).
 * Offsets are never committed automatically (enable.auto.commit=false,
 * enable.auto.offset.store=false): the pipeline commits explicit offsets with
 * wd_consumer_commit() once their effects are durable.
 *
 * A broker that goes away is logged once ("cannot reach HOST:PORT (...); retrying") and polling goes on
 * returning empty batches until it is back.
 *
 * A subscribed topic that does not exist (group mode) is logged once at WARN ("topic X does not
 * exist yet; waiting"); while one is missing, the polls request the cluster's metadata every
 * second, so that a topic created later is joined within seconds rather than at librdkafka's
 * next topic.metadata.refresh.interval.ms (5 minutes by default); "topic X exists now" at INFO.
 * After every group assignment the next poll compares the assigned topics with the subscribed
 * topics that exist: one that no member of the group holds (DescribeGroups) is logged at WARN
 * ("topic X exists but has no partition in this member's assignment ...; rejoining group G") and
 * the consumer leaves the group (rd_kafka_unsubscribe: its partitions are revoked, LeaveGroup
 * rebalances the group) and the next poll subscribes again (at most once per topic). This covers a static member (KIP-345) restarted within session.timeout.ms, which
 * gets its previous assignment back without a rebalance, made before topic X was created.
 *
 * Thread: a consumer is used by one thread; the callbacks run on that thread, inside
 * wd_consumer_poll_batch() or wd_consumer_close().
 */
#ifndef WD_CONSUMER_H
#define WD_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/kafka_stats.h"

typedef struct wd_consumer wd_consumer_t;

/* Called once per newly assigned partition (topic borrowed for the call). Returns the offset to
 * start reading at (the next offset to process, >= 0) or one of WD_OFFSET_STORED,
 * WD_OFFSET_BEGINNING, WD_OFFSET_END (common/kafka_conf.h). */
typedef int64_t (*wd_consumer_assign_cb)(void *ctx, const char *topic, int32_t partition);

/* Called once per revocation, before the partitions are unassigned, with every revoked
 * partition (array and topics borrowed for the call; offset is the consumer's position, the next
 * offset it would have returned, or -1 when unknown). Messages of these partitions that were
 * polled inside the wd_consumer_poll_batch() call running the callback are dropped from that
 * batch (the partitions' next owner reads them again). lost is true when the assignment was lost
 * (session timeout): offsets can then no longer be committed for these partitions. */
typedef void (*wd_consumer_revoke_cb)(void *ctx, const wd_tp_offset_t *parts, size_t n, bool lost);

/* Called once per assignment, before the per-partition on_assign calls, with every newly
 * assigned partition (array and topics borrowed for the call; offsets -1): lets the caller record
 * the assignment per task (partition i of every topic) before it answers per partition. Returns
 * true to have every partition of this assignment assigned **held** (paused, as
 * wd_consumer_hold_partition: nothing is fetched) until the caller releases each with
 * wd_consumer_release_partition, after deciding outside the callback where it starts (Kafka
 * Streams: tasks are created in the callback and initialised in the poll loop); false to start
 * them at once at the on_assign offsets. */
typedef bool (*wd_consumer_assign_all_cb)(void *ctx, const wd_tp_offset_t *parts, size_t n);

/* Creates a consumer of topics[0..ntopics) (copied) with conf (borrowed).
 * conf->props are passed to librdkafka (security settings, client.id, session.timeout.ms,
 * group.instance.id, ...); widen sets enable.auto.commit=false, enable.auto.offset.store=false
 * (not overridable), auto.offset.reset=earliest and isolation.level=read_committed (only
 * committed transactions are read: a widen pipeline may read another's output; both overridable). on_assign may be NULL (every
 * partition starts at WD_OFFSET_STORED); ctx is passed to the callbacks. In group mode the
 * subscription starts with the first poll (wd_consumer_poll_batch or wd_consumer_serve), so that
 * wd_consumer_committed before it is not held up by a group join; in assign mode the
 * partitions are assigned here (one metadata request, up to 10 s).
 * On success *out is owned by the caller (wd_consumer_destroy).
 * Errors (*out NULL): WD_ERR_CONFIG "C_KAFKA_PROPERTY" for a bad property (named) or a
 * cooperative assignment strategy, "C_KAFKA_TOPIC" when ntopics is 0 or a topic name is empty;
 * WD_ERR_KAFKA "E_KAFKA" when the client cannot be created or subscribe fails; in assign mode
 * "E_KAFKA_METADATA" when the metadata request fails (retriable) and "E_KAFKA_UNKNOWN_TOPIC"
 * when a topic does not exist; E_NOMEM. */
wd_error_t *wd_consumer_new(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                            wd_consumer_assign_cb on_assign, void *ctx, wd_consumer_t **out);

/* wd_consumer_new_ex flags. */
#define WD_CONSUMER_WAIT_FOR_TOPICS 1u /* assign mode: a topic that does not exist yet is waited for */
#define WD_CONSUMER_ONE_TRY 2u /* assign mode: the topics' metadata is asked for 10 s, not 60 s */

/* As wd_consumer_new, with flags (WD_CONSUMER_WAIT_FOR_TOPICS: in assign mode a topic that does
 * not exist is not an error: it is logged once at WARN ("topic X does not exist yet; waiting"),
 * checked for every second inside the polls, and its partitions are assigned (on_assign called
 * for each) when it appears, as kafka-console-consumer waits; `widen tail`; WD_CONSUMER_ONE_TRY: in
 * assign mode the topics' metadata is retried for 10 s instead of 60 s, then E_KAFKA_METADATA, for
 * a one-shot reader that should not wait a minute for an absent broker (with the connect check
 * before it, 11 s for a refused connection, up to 20 s for a host that does not answer); `widen
 * changes`). */
wd_error_t *wd_consumer_new_ex(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                               wd_consumer_assign_cb on_assign, void *ctx, unsigned flags, wd_consumer_t **out);

/* Sets (or with NULL removes) the revocation callback; it gets the ctx given to
 * wd_consumer_new(). Call it before the first poll. */
void wd_consumer_set_revoke_cb(wd_consumer_t *c, wd_consumer_revoke_cb on_revoke);

/* Sets (or with NULL removes) the whole-assignment callback (ctx as for wd_consumer_new). Call it
 * before the first poll. */
void wd_consumer_set_assign_all_cb(wd_consumer_t *c, wd_consumer_assign_all_cb on_assign_all);

/* Polls up to max messages into msgs[0..*n), waiting until max messages were read or timeout_ms
 * passed (so a batch is at most timeout_ms late; timeout_ms 0 returns what is already fetched).
 * Rebalance callbacks run inside. Each returned message is owned by the caller until released
 * with wd_kmsg_release() (release every one, in any order; a message stays valid after its
 * partition is revoked). Partition EOF events and transient errors (broker down, unknown topic)
 * are logged, not returned: the batch may then be empty.
 * Errors (*n = 0, every message of the batch already released): WD_ERR_KAFKA "E_KAFKA_FATAL"
 * (fatal = true) for a fatal client error; "E_KAFKA" for a consumer error that does not go away
 * by waiting (e.g. topic authorization failed, offset out of range with auto.offset.reset=error),
 * naming the topic and partition when it has one. */
wd_error_t *wd_consumer_poll_batch(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n);

/* As wd_consumer_poll_batch, but the batch is whatever is there once the first message is in hand
 * (the semantics of Kafka's poll with max.poll.records): waits up to timeout_ms for a first
 * message, then takes the messages librdkafka has already fetched, up to max, without waiting for
 * more. Under load the fetched queue holds more than max and batches are full; at a low rate a
 * record is processed without waiting for the batch to fill (latency at half of
 * saturation). Same ownership and errors as wd_consumer_poll_batch. */
wd_error_t *wd_consumer_poll_available(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n);

/* Releases n messages from wd_consumer_poll_batch() (their rkm); each is left zeroed. Accepts
 * messages with a NULL rkm. */
void wd_kmsg_release(wd_kmsg_t *msgs, size_t n);

/* Header i of a consumed record: *name and *value (NULL for a null value) borrowed from the
 * message, valid until it is released. Returns 0, or -1 past the last header (or for a record
 * built by hand, without rkm). */
int wd_kmsg_header(const wd_kmsg_t *m, size_t i, const char **name, const void **value, size_t *len);

/* Synchronously commits offsets[0..n) (each the next offset to read, >= 0) for the consumer's
 * group. Partitions need not be assigned to this consumer.
 * Errors: WD_ERR_KAFKA "E_KAFKA_COMMIT" naming the first failing partition or the request
 * error (retriable for coordinator movement/rebalance in progress); WD_ERR_CONFIG "C_KAFKA_GROUP"
 * in assign mode (no group); E_NOMEM. n == 0 is a no-op. */
wd_error_t *wd_consumer_commit(wd_consumer_t *c, const wd_tp_offset_t *offsets, size_t n);

/* Reads the group's committed offsets for offsets[0..n) (topic and partition given; offset is
 * overwritten with the committed next offset, or -1 when the group has none), waiting up to
 * timeout_ms. A retriable answer (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ... while the
 * group's coordinator moves in a broker restart) is asked again every 200 ms until timeout_ms has
 * passed. Errors: "E_KAFKA" (the request or a partition failed; retriable as the last answer
 * was), "C_KAFKA_GROUP" in assign mode. */
wd_error_t *wd_consumer_committed(wd_consumer_t *c, wd_tp_offset_t *offsets, size_t n, int timeout_ms);

/* The total consumer lag: the sum over assigned partitions of (high watermark - position),
 * from librdkafka's cached values (no request; the high watermark comes with each fetch
 * response). Recomputed at most once per second; partitions without a known position or
 * watermark count 0. Returns 0 when nothing is assigned. */
int64_t wd_consumer_lag(wd_consumer_t *c);

/* The lag of each assigned partition (high watermark - position, from librdkafka's cached
 * values, no request): *out a new array (free()) of *n entries whose offset is the lag; topics
 * borrowed from c. Partitions without a known position or watermark are left out.
 * Errors: "E_KAFKA" (the assignment cannot be read), E_NOMEM. */
wd_error_t *wd_consumer_lags(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n);

/* The high watermarks (end offsets: the offset the next produced record gets; for a
 * read_committed consumer, the last stable offset) of every partition of every topic of the
 * consumer, at the time of the call. *out is a new array of *n entries, sorted by topic (in
 * the order given to wd_consumer_new) then partition; free it with free(); its topic pointers
 * are borrowed from c (valid until wd_consumer_destroy).
 * Retriable answers (NOT_LEADER_FOR_PARTITION while a leader moves, a metadata request timing
 * out while a broker restarts) are asked again every 200 ms until timeout_ms has passed.
 * Errors (*out NULL, *n 0): "E_KAFKA_METADATA", "E_KAFKA_UNKNOWN_TOPIC", "E_KAFKA" (ListOffsets
 * failed for a partition; retriable when librdkafka says so), E_NOMEM. */
wd_error_t *wd_consumer_end_offsets(wd_consumer_t *c, int timeout_ms, wd_tp_offset_t **out, size_t *n);

/* The partitions currently assigned, as a new array (free()) of *n entries whose offset is the
 * consumer's position (next offset to read, -1 when unknown); topics borrowed from c.
 * Errors: "E_KAFKA", E_NOMEM. */
wd_error_t *wd_consumer_assignment(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n);

/* The consumer's group metadata (group id, generation, member id) for a transactional
 * producer's send_offsets_to_transaction (KIP-447 fencing). *out is owned by the caller
 * (wd_group_meta_destroy). Take it anew for each commit: the generation changes with each
 * rebalance. Errors: "C_KAFKA_GROUP" in assign mode; E_NOMEM. */
wd_error_t *wd_consumer_group_metadata(wd_consumer_t *c, wd_group_meta_t **out);
/* Releases gm; accepts NULL. */
void wd_group_meta_destroy(wd_group_meta_t *gm);

/* Moves the position of each offsets[i] partition (assigned to c) to offsets[i].offset (the next
 * offset to read, >= 0), dropping what was fetched beyond it: after an aborted transaction the
 * consumer is rewound to the committed offsets. Errors: "E_KAFKA" naming the first partition
 * that could not be moved; E_NOMEM. */
wd_error_t *wd_consumer_seek(wd_consumer_t *c, const wd_tp_offset_t *offsets, size_t n);

/* Pauses (pause = true) or resumes fetching of every assigned partition. While paused, polls
 * return no records but keep the group membership alive (max.poll.interval.ms) and run the
 * rebalance callbacks; the positions are kept, so resuming continues where the application
 * stopped. New assignments start resumed. Errors: "E_KAFKA". */
wd_error_t *wd_consumer_pause(wd_consumer_t *c, bool pause);

/* Holds one assigned partition (docs/runtime.md "the gate"): pauses it and, when
 * offset >= 0, moves its position back to offset, dropping what was fetched of it beyond (held
 * records included). It stays paused across wd_consumer_pause(false) until
 * wd_consumer_release_partition or the next rebalance (which clears every hold). topic is copied.
 * Errors: "E_KAFKA" (pause or seek refused, e.g. the partition is not assigned), E_NOMEM. */
wd_error_t *wd_consumer_hold_partition(wd_consumer_t *c, const char *topic, int32_t partition, int64_t offset);
/* Assigns the current assignment's partitions parts[0..n) again (the whole assignment: partitions
 * left out are unassigned), each at parts[i].offset (>= 0, or WD_OFFSET_BEGINNING / END / STORED):
 * for a caller that decided where they start after the assignment callback
 * (wd_consumer_assign_all_cb returned true) and needs positions other than the on_assign ones.
 * release: each is released (as wd_consumer_release_partition with offset -1: it fetches unless
 * every partition is paused); else each stays held until released. The pause state is set before
 * the assignment, never right after it: a pause or resume racing librdkafka's start of the
 * partition's fetcher can discard that start (the partition then never fetches; seeks answer
 * _STATE). librdkafka applies assignments in order, so unlike a seek issued right after an
 * assignment it cannot be overtaken by the assignment's own start. Fetched records of these
 * partitions are dropped; no rebalance callback runs. Errors: "E_KAFKA" (the assignment
 * refused), E_NOMEM. */
wd_error_t *wd_consumer_reassign(wd_consumer_t *c, const wd_tp_offset_t *parts, size_t n, bool release);
/* Releases a held partition: when offset >= 0 (or WD_OFFSET_BEGINNING / WD_OFFSET_END) moves its
 * position to offset first (dropping what was fetched beyond), then resumes it unless every partition is paused (wd_consumer_pause(true):
 * the next wd_consumer_pause(false) resumes it). Errors: "E_KAFKA", E_NOMEM. */
wd_error_t *wd_consumer_release_partition(wd_consumer_t *c, const char *topic, int32_t partition, int64_t offset);
/* The application's position of an assigned partition (the next offset it will deliver; past
 * transaction markers the consumer skipped), or -1 when unknown. */
int64_t wd_consumer_position(wd_consumer_t *c, const char *topic, int32_t partition);

/* Polls once, up to timeout_ms, without taking records: for waits (schema registry, broker,
 * acknowledgements) while the partitions are paused (wd_consumer_pause), so that the group
 * does not evict the process. Rebalance callbacks run inside. A record that was already fetched
 * is not lost: it is held and returned first by the next wd_consumer_poll_batch (dropped when its
 * partition is revoked meanwhile). */
void wd_consumer_serve(wd_consumer_t *c, int timeout_ms);

/* A counter that increases with every assignment and revocation (rebalance callbacks): a caller
 * that sees it change across a wait knows that the records it holds may no longer be its own. */
uint64_t wd_consumer_generation(const wd_consumer_t *c);

/* Leaves the group (running on_revoke for the current assignment) and closes the consumer.
 * Idempotent. Errors: "E_KAFKA" when librdkafka's close reports one (the consumer is closed
 * anyway). */
wd_error_t *wd_consumer_close(wd_consumer_t *c);

/* Closes (if not yet closed) and releases c; accepts NULL. Messages still held by the caller
 * must be released before. */
void wd_consumer_destroy(wd_consumer_t *c);

/* Why the consumer holds no partitions, for the status line (README "Monitoring"): NULL when it
 * holds some, else a static text: "waiting for the group's assignment" (no assignment yet),
 * "rebalancing: waiting for the new assignment" (revoked, not yet assigned again), "all
 * partitions are assigned to other members" (its assignment is empty: more members than
 * partitions), "its topics do not exist yet". From the rebalance callbacks; no request. */
const char *wd_consumer_idle_reason(const wd_consumer_t *c);

/* The first of the consumer's topics that did not exist when last looked for (the one logged as
 * "topic X does not exist yet; waiting"; looked for again every few seconds in the polls), borrowed
 * from c; NULL when every topic exists. No request. */
const char *wd_consumer_missing_topic(const wd_consumer_t *c);

/* librdkafka's last statistics of this consumer (ingest/kafka_stats.h; emitted every
 * statistics.interval.ms when that property is set, parsed in the polls), borrowed from c and valid
 * until the next poll; NULL before the first (or with statistics off). */
const wd_kafka_stats_t *wd_consumer_stats(const wd_consumer_t *c);

/* The number of partitions the consumer holds now (from the rebalance callbacks). */
int wd_consumer_assigned_count(const wd_consumer_t *c);

/* Which clients take a property (wd_kafka_property_check). */
#define WD_KAFKA_CONSUMER_PROPERTY 1u
#define WD_KAFKA_PRODUCER_PROPERTY 2u

/* Checks one pass-through librdkafka property (name, value borrowed) as widen's clients would take
 * it, without a broker or a client: librdkafka validates it on a fresh configuration
 * (rd_kafka_conf_set, as wd_consumer_new / the producer do), and widen's own refusals apply to
 * the clients given (WD_KAFKA_CONSUMER_PROPERTY | WD_KAFKA_PRODUCER_PROPERTY). For `widen config
 * check` and the config loader (app/config/config.c), so that a config that check accepts starts.
 * Returns NULL when accepted, else WD_ERR_CONFIG "C_KAFKA_PROPERTY": "unknown Kafka property 'X';
 * did you mean 'Y'?" (the closest of librdkafka's own property names, when one is close), "Kafka
 * property 'X' = 'V': <librdkafka's reason>" for a refused value, bootstrap.servers/group.id
 * (use the brokers / group settings), a property widen sets itself (consumer:
 * enable.auto.commit, enable.auto.offset.store; producer: enable.idempotence, acks, partitioner),
 * a cooperative partition.assignment.strategy (consumer), "Kafka property 'X' = 'V': cannot read it
 * (<strerror>)" for a file property (a name ending in .location, sasl.kerberos.keytab; not
 * ssl.ca.location's `probe`) whose file is not readable (librdkafka opens it only when the client
 * is created); E_NOMEM. */
wd_error_t *wd_kafka_property_check(const char *name, const char *value, unsigned clients);

#endif
