/*
 * common/error_ids.h — the one list of widen's stable error ids.
 *
 * Every id that a wd_error_t carries is listed here once, with whether an error of that id is
 * retriable (waiting and trying again may succeed: a broker or registry that is away, a batch
 * abandoned by a rebalance, a stop that ran out of time). wd_error_new() looks the id up and sets
 * err->eid and err->retriable from this list; code dispatches on err->eid (an enum), never on the
 * id's text. Kafka errors made by kafka/kafka.h (wd_kafka_error*) then set retriable from
 * librdkafka's own classification of the code, which is finer than the id.
 *
 * What each id means for users and what to do about it is in common/error_docs.c (printed by
 * `widen config doc --errors` into docs/operations.md; tests/unit/test_error_docs.c fails when an
 * id has no entry there or the page is stale: run scripts/gen-docs). tests/unit/test_error_ids.c
 * fails when the source uses an id that is not listed here.
 *
 * X(ID, retriable)
 */
#ifndef WD_ERROR_IDS_H
#define WD_ERROR_IDS_H

#define WD_ERROR_IDS(X)                                                                                                \
  X(C_AGG_REMOVE_ON_DELETE_VS_IGNORE_RETRACT, 0)                                                                       \
  X(C_AGG_TYPE, 0)                                                                                                     \
  X(C_AGG_UNKNOWN_FUNCTION, 0)                                                                                         \
  X(C_AGG_UNSUPPORTED, 0)                                                                                              \
  X(C_AVRO_NAME, 0)                                                                                                    \
  X(C_BAD_CONFIG, 0)                                                                                                   \
  X(C_BAD_MAPPING, 0)                                                                                                  \
  X(C_BAD_OPTION_VALUE, 0)                                                                                             \
  X(C_BAD_TYPE, 0)                                                                                                     \
  X(C_CONFIG, 0)                                                                                                       \
  X(C_CONFIG_PROVIDER, 0)                                                                                              \
  X(C_CONFLICT_IGNORE_DELETE_REMOVE_ON_DELETE, 0)                                                                      \
  X(C_CONFLICT_IGNORE_DELETE_REMOVE_ON_SEQUENCE_GROUP, 0)                                                              \
  X(C_CONFLICT_SEQUENCE_GROUP_REMOVE_ON_DELETE, 0)                                                                     \
  X(C_DECIMAL_PRECISION, 0)                                                                                            \
  X(C_DUPLICATE_COLUMN, 0)                                                                                             \
  X(C_DUPLICATE_MAPPING, 0)                                                                                            \
  X(C_FIRST_ROW_CHANGELOG_PRODUCER, 0)                                                                                 \
  X(C_FIRST_ROW_SEQUENCE_FIELD, 0)                                                                                     \
  X(C_GENERATE, 0)                                                                                                     \
  X(C_HISTORY_RANGE, 0)                                                                                                \
  X(C_INTERNAL_TOPIC_PARTITIONS, 0)                                                                                    \
  X(C_JOIN_TOO_MANY_SOURCES, 0)                                                                                        \
  X(C_KAFKA_GROUP, 0)                                                                                                  \
  X(C_KAFKA_PROPERTY, 0)                                                                                               \
  X(C_KAFKA_TOPIC, 0)                                                                                                  \
  X(C_LOOKUP_COLUMN_KEY, 0)                                                                                            \
  X(C_LOOKUP_COLUMN_NOT_NULL, 0)                                                                                       \
  X(C_LOOKUP_COLUMN_ORDERING, 0)                                                                                       \
  X(C_LOOKUP_COLUMN_SHARED, 0)                                                                                         \
  X(C_LOOKUP_COLUMN_UNKNOWN, 0)                                                                                        \
  X(C_LOOKUP_CYCLE, 0)                                                                                                 \
  X(C_LOOKUP_NO_ON, 0)                                                                                                 \
  X(C_LOOKUP_ON_UNFILLED, 0)                                                                                           \
  X(C_LOOKUP_ON_UNKNOWN, 0)                                                                                            \
  X(C_METRICS_LISTEN, 0)                                                                                               \
  X(C_NESTED_OPTION_NEEDS_KEY, 0)                                                                                      \
  X(C_NOT_NULL_FIELD, 0)                                                                                               \
  X(C_NO_REGISTRY, 0)                                                                                                  \
  X(C_PRIMARY_KEY, 0)                                                                                                  \
  X(C_PU_AGG_NEEDS_SEQUENCE_GROUP, 0)                                                                                  \
  X(C_REGISTRY_AUTH, 0)                                                                                                \
  X(C_REGISTRY_REJECTED, 0)                                                                                            \
  X(C_REGISTRY_URL, 0)                                                                                                 \
  X(C_REMOVE_ON_SEQUENCE_GROUP_NOT_SEQUENCE_FIELD, 0)                                                                  \
  X(C_REPLAY_OUTPUT, 0)                                                                                                \
  X(C_SEQ_FIELD_DUPLICATE, 0)                                                                                          \
  X(C_SEQ_FIELD_HAS_AGG, 0)                                                                                            \
  X(C_SEQ_FIELD_TYPE, 0)                                                                                               \
  X(C_SEQ_FIELD_UNKNOWN, 0)                                                                                            \
  X(C_SEQ_GROUP_CONTAINS_PK, 0)                                                                                        \
  X(C_SEQ_GROUP_DUPLICATE_FIELD, 0)                                                                                    \
  X(C_SEQ_GROUP_UNKNOWN_FIELD, 0)                                                                                      \
  X(C_SOURCE_GROUP_NO_SEQUENCE, 0)                                                                                     \
  X(C_SOURCE_KEYING, 0)                                                                                                \
  X(C_SOURCE_KEY_EMPTY, 0)                                                                                             \
  X(C_SOURCE_KEY_LOOKUP, 0)                                                                                            \
  X(C_SOURCE_KEY_PER_PARTITION, 0)                                                                                     \
  X(C_SOURCE_KEY_REQUIRED, 0)                                                                                          \
  X(C_SOURCE_NO_KEY, 0)                                                                                                \
  X(C_SOURCE_NO_TOPIC, 0)                                                                                              \
  X(C_SOURCE_TOPIC_MISSING, 0)                                                                                         \
  X(C_STATE_DEFINITION, 0)                                                                                             \
  X(C_STATE_DIR, 0)                                                                                                    \
  X(C_STATE_SCHEMA, 0)                                                                                                 \
  X(C_TASKS_LAYOUT, 0)                                                                                                 \
  X(C_TASKS_NOT_COPARTITIONED, 0)                                                                                      \
  X(C_TEMPORAL_UNIT, 0)                                                                                                \
  X(C_UNKNOWN_COLUMN, 0)                                                                                               \
  X(C_UNKNOWN_FIELD, 0)                                                                                                \
  X(C_UNKNOWN_OPTION, 0)                                                                                               \
  X(C_UNSUPPORTED_FORMAT, 0)                                                                                           \
  X(E_AGG_NO_RETRACT, 0)                                                                                               \
  X(E_ARITH_OVERFLOW, 0)                                                                                               \
  X(E_BATCH_ABANDONED, 1)                                                                                              \
  X(E_CHANGES_TIMEOUT, 1)                                                                                              \
  X(E_COLLECTOR_FULL, 1)                                                                                               \
  X(E_COMMIT_PHASE, 0)                                                                                                 \
  X(E_DECODE, 0)                                                                                                       \
  X(E_DELETE_NO_SEQUENCE, 0)                                                                                           \
  X(E_FIRST_ROW_RETRACT, 0)                                                                                            \
  X(E_INTERNAL, 0)                                                                                                     \
  X(E_KAFKA, 1)                                                                                                        \
  X(E_KAFKA_AUTH, 0)                                                                                                   \
  X(E_KAFKA_TLS, 0)                                                                                                    \
  X(E_KAFKA_TLS_CERT, 0)                                                                                               \
  X(E_KAFKA_TLS_HOSTNAME, 0)                                                                                           \
  X(E_KAFKA_COMMIT, 1)                                                                                                 \
  X(E_KAFKA_FATAL, 0)                                                                                                  \
  X(E_KAFKA_METADATA, 1)                                                                                               \
  X(E_KAFKA_UNKNOWN_TOPIC, 0)                                                                                          \
  X(E_METRICS_LISTEN, 0)                                                                                               \
  X(E_NESTED_KEY_NULL, 0)                                                                                              \
  X(E_NOMEM, 0)                                                                                                        \
  X(E_NOT_NULL, 0)                                                                                                     \
  X(E_NO_KEY, 0)                                                                                                       \
  X(E_OUTPUT_TOO_LARGE, 0)                                                                                             \
  X(E_PRODUCER_FATAL, 0)                                                                                               \
  X(E_PRODUCE_AVRO, 0)                                                                                                 \
  X(E_PU_DELETE_NOT_ACCEPTED, 0)                                                                                       \
  X(E_REBUILD, 0)                                                                                                      \
  X(E_RECOVER, 1)                                                                                                      \
  X(E_REGISTRY, 1)                                                                                                     \
  X(E_REPARTITION_RECORD, 0)                                                                                           \
  X(E_RESTORE, 0)                                                                                                      \
  X(E_SCHEMA_NOT_FOUND, 0)                                                                                             \
  X(E_SINK_DELIVERY, 1)                                                                                                \
  X(E_SINK_FATAL, 0)                                                                                                   \
  X(E_SINK_PRODUCE, 1)                                                                                                 \
  X(E_SINK_TIMEOUT, 1)                                                                                                 \
  X(E_STATE_CORRUPT, 0)                                                                                                \
  X(E_STATE_DISK_FULL, 0)                                                                                              \
  X(E_STOPPED, 1)                                                                                                      \
  X(E_STORE_LOCKED, 0)                                                                                                 \
  X(E_STORE_OPEN, 0)                                                                                                   \
  X(E_STORE_READ, 0)                                                                                                   \
  X(E_STORE_WRITE, 0)                                                                                                  \
  X(E_TASK_TRANSITION, 0)                                                                                              \
  X(E_TOPIC_CREATE, 1)                                                                                                 \
  X(E_TOPIC_METADATA, 1)                                                                                               \
  X(E_TRACE, 0)                                                                                                        \
  X(E_TXN_ABORT, 1)                                                                                                    \
  X(E_TXN_BEGIN, 1)                                                                                                    \
  X(E_TXN_COMMIT, 1)                                                                                                   \
  X(E_TXN_INIT, 1)                                                                                                     \
  X(E_TXN_OFFSETS, 1)                                                                                                  \
  X(E_TXN_UNKNOWN, 0)                                                                                                  \
  X(E_TYPE, 0)                                                                                                         \
  X(E_UNKNOWN_COLUMN, 0)

/* WD_EID_<ID> for each listed id; WD_EID_NONE for an error without id; WD_EID_UNLISTED for an id
 * missing from the list (a bug that tests/unit/test_error_ids.c catches). */
typedef enum wd_eid {
  WD_EID_NONE = 0,
#define WD_EID_ENUM_(id, retriable) WD_EID_##id,
  WD_ERROR_IDS(WD_EID_ENUM_)
#undef WD_EID_ENUM_
      WD_EID_UNLISTED
} wd_eid_t;

#endif
