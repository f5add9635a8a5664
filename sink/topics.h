/*
 * sink/topics.h — creating the pipeline's output topics at start (the changelog topic and the
 * dead-letter topic), so that a downstream consumer (`widen tail`) can subscribe to them before
 * the first record is written to them: without it the dead-letter topic would not exist until the
 * first dead letter.
 *
 * Only ingest/ and sink/ include librdkafka; this header does not (app/ calls it).
 */
#ifndef WD_SINK_TOPICS_H
#define WD_SINK_TOPICS_H

#include <stddef.h>

#include "common/kafka_conf.h"

/* Creates each of the n topics (borrowed names) that does not exist yet, with the broker's default
 * partition count and replication factor (Kafka's CreateTopics with -1, -1; librdkafka admin API
 * through a short-lived client built from conf, borrowed), waiting at most timeout_ms in all.
 * Best effort: a topic that exists already is fine; any other failure (no broker within the
 * timeout, no permission to create topics, the broker refusing) is logged at WARN naming the topic
 * and the reason, and the topic is then created by its first record if the broker auto-creates
 * topics. An unreachable broker is said once ("cannot reach HOST:PORT (connection refused);
 * retrying", kafka/kafka.h) and nothing is created. Returns the number of topics that exist
 * afterwards (created or there already). */
size_t wd_sink_create_topics(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, int timeout_ms);

#endif
