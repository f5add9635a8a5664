/*
 * ingest/positions.h — where a consumer group stands, read from outside the group: the group's
 * committed offset and the end offset of every partition of some topics. For `widen status`,
 * which must not join the running pipeline's group (that would rebalance it): a librdkafka
 * consumer handle with the group's group.id that never subscribes asks the group coordinator
 * for the committed offsets (OffsetFetch) and the partition leaders for the watermarks.
 */
#ifndef WD_POSITIONS_H
#define WD_POSITIONS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/kafka_conf.h"

typedef struct wd_partition_position {
  const char *topic; /* borrowed from the caller's topics[] */
  int32_t partition;
  int64_t committed; /* the group's committed next offset, -1 when it has none */
  int64_t end; /* high watermark: the offset the next produced record gets */
} wd_partition_position_t;

/* Fills *out with a new array (free()) of *n positions, ordered by topic (as given) then
 * partition, for every partition of topics[0..ntopics) (borrowed), in the group conf->group_id
 * (conf borrowed; group_id required). Waits up to timeout_ms per request.
 * Errors (*out NULL): WD_ERR_CONFIG "C_KAFKA_GROUP" without a group id, "C_KAFKA_PROPERTY";
 * WD_ERR_KAFKA "E_KAFKA_METADATA" / "E_KAFKA_UNKNOWN_TOPIC" naming the topic, "E_KAFKA" when the
 * committed offsets or a watermark cannot be read (naming the partition); E_NOMEM. */
wd_error_t *wd_kafka_group_positions(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                                     int timeout_ms, wd_partition_position_t **out, size_t *n);

#endif
