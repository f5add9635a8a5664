/*
 * ingest/kafka_stats.h — the useful numbers of librdkafka's statistics (the JSON document it emits
 * every statistics.interval.ms; librdkafka's STATISTICS.md), parsed here so that nothing above
 * ingest/ and sink/ needs librdkafka: per broker its request round trip and queue depths, the
 * client's reply queue, and per partition the fetch queue and the consumer lag as librdkafka sees
 * it (its end offset minus the committed offset, or minus the position).
 *
 * Ownership: a wd_kafka_stats_t owns its arrays (wd_kafka_stats_clear frees them). Thread: any.
 */
#ifndef WD_KAFKA_STATS_H
#define WD_KAFKA_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct wd_kafka_broker_stats {
  char name[128]; /* librdkafka's broker name, "host:port/nodeid" */
  double rtt_avg_s, rtt_p99_s; /* request round trip over the last window (seconds; 0: none) */
  int64_t outbuf_msgs; /* messages waiting to be sent (outbuf_msg_cnt) */
  int64_t waitresp_msgs; /* messages sent, waiting for a response (waitresp_msg_cnt) */
} wd_kafka_broker_stats_t;

typedef struct wd_kafka_part_stats {
  char topic[256];
  int32_t partition;
  int64_t consumer_lag; /* consumer_lag; when librdkafka knows no committed offset (widen commits in
                         * transactions), ls_offset (else hi_offset) minus app_offset; -1: unknown */
  int64_t fetchq_msgs; /* messages fetched, not yet delivered to the application (fetchq_cnt) */
} wd_kafka_part_stats_t;

typedef struct wd_kafka_stats {
  int64_t at_ms; /* librdkafka's "ts" / 1000 (its monotonic clock) */
  int64_t replyq; /* operations waiting in the reply queue */
  int64_t msg_cnt; /* messages in the producer queues (0 for a consumer) */
  wd_kafka_broker_stats_t *brokers; /* the real brokers (nodeid >= 0; bootstrap entries left out) */
  size_t nbrokers;
  wd_kafka_part_stats_t *parts; /* the partitions with a known leader (partition -1 left out) */
  size_t nparts;
} wd_kafka_stats_t;

/* Parses one statistics document (json[0..len), borrowed) into *out (cleared first).
 * 0, or -1 when it is no JSON object or on no memory (*out then empty). */
int wd_kafka_stats_parse(const char *json, size_t len, wd_kafka_stats_t *out);

/* Frees out's arrays and empties it; accepts an empty one. */
void wd_kafka_stats_clear(wd_kafka_stats_t *out);

#endif
