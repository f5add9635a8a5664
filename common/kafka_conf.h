/*
 * common/kafka_conf.h — plain Kafka client types that need no librdkafka: the client
 * configuration as the config loader fills it (wd_kafka_conf_t), a (topic, partition, offset)
 * triple (wd_tp_offset_t) and one consumed record (wd_kmsg_t).
 *
 * app/ fills a wd_kafka_conf_t from YAML or the command line; kafka/kafka.h turns it into an
 * rd_kafka_conf_t (wd_kafka_conf_build), and ingest/consumer.h and sink/producer.h take it.
 * Nothing here includes librdkafka, so app/ code can use these types without it.
 *
 * Ownership: a wd_kafka_conf_t owns its strings (set them with wd_kafka_conf_set_* and release
 * them with wd_kafka_conf_clear). A wd_tp_offset_t borrows its topic. A wd_kmsg_t borrows
 * everything from the librdkafka message it wraps (rkm) and is released with wd_kmsg_release()
 * (ingest/consumer.h).
 */
#ifndef WD_KAFKA_CONF_H
#define WD_KAFKA_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* One pass-through librdkafka property ("client.id" = "widen-1"). Both strings owned. */
typedef struct wd_kafka_prop {
  char *name;
  char *value;
} wd_kafka_prop_t;

/* A Kafka client configuration. Zero-initialised is empty and valid. */
typedef struct wd_kafka_conf {
  char *brokers; /* bootstrap.servers, "host:port[,host:port...]" (owned; required) */
  char *group_id; /* consumer group id (owned); NULL: consumers assign partitions
                             themselves and never commit (tail, replay) */
  size_t nprops;
  wd_kafka_prop_t *props; /* pass-through librdkafka properties, applied in order (owned) */
} wd_kafka_conf_t;

/* Sets conf->brokers to a copy of brokers (NULL clears it). Returns NULL, or E_NOMEM
 * (conf unchanged). */
wd_error_t *wd_kafka_conf_set_brokers(wd_kafka_conf_t *conf, const char *brokers);

/* Sets conf->group_id to a copy of group_id (NULL clears it). Returns NULL, or E_NOMEM
 * (conf unchanged). */
wd_error_t *wd_kafka_conf_set_group(wd_kafka_conf_t *conf, const char *group_id);

/* Adds the pass-through property name=value (both copied), replacing the value of an earlier
 * property of the same name. Whether librdkafka knows it is checked later, by
 * wd_kafka_conf_build(). Errors: WD_ERR_CONFIG "C_KAFKA_PROPERTY" when name is NULL or empty
 * or value is NULL; E_NOMEM (conf unchanged). */
wd_error_t *wd_kafka_conf_set(wd_kafka_conf_t *conf, const char *name, const char *value);

/* Parses "name=value" (as given to --property / -X) and adds it with wd_kafka_conf_set(); the
 * value may take ${env:NAME} / ${file:PATH} references (wd_conf_expand; its errors, prefixed
 * with the property's name).
 * Errors: WD_ERR_CONFIG "C_KAFKA_PROPERTY" when there is no '=' or the name is empty;
 * E_NOMEM. */
wd_error_t *wd_kafka_conf_set_pair(wd_kafka_conf_t *conf, const char *name_eq_value);

/* The value of pass-through property name, or NULL (borrowed from conf). */
const char *wd_kafka_conf_get(const wd_kafka_conf_t *conf, const char *name);

/* Whether a property or option named name holds a secret that widen never prints: its name
 * (case-insensitive) contains "password", "passwd", "secret", "credential" or "token", or it is
 * ssl.key.pem / ssl_key.pem (a private key given inline) or sasl.jaas.config / sasl.oauthbearer.config
 * (which embed credentials). As Kafka's own clients hide PASSWORD-typed configs. name may be NULL. */
int wd_conf_is_secret(const char *name);

/* The text to print for the value of property name: "[hidden]" for a secret (wd_conf_is_secret),
 * else value itself (borrowed). */
const char *wd_conf_shown(const char *name, const char *value);

/* Expands config providers in value, as Kafka's config providers do: "${env:NAME}" is replaced by
 * the environment variable NAME, "${file:PATH}" by the contents of file PATH (one trailing
 * newline removed); any other text is kept, "$${" stands for a literal "${". On success
 * returns a new string (*out, owned by the caller: free) or NULL in *out when value has no
 * provider reference (use value as it is). Errors (WD_ERR_CONFIG "C_CONFIG_PROVIDER", the message
 * names the reference, never a value): NAME unset; PATH unreadable (with strerror); an
 * unterminated "${"; an unknown provider; E_NOMEM. */
wd_error_t *wd_conf_expand(const char *value, char **out);

/* Deep copy of src into *dst (dst is overwritten, not cleared first). Returns NULL, or E_NOMEM
 * (dst is then empty). */
wd_error_t *wd_kafka_conf_copy(wd_kafka_conf_t *dst, const wd_kafka_conf_t *src);

/* Frees everything conf owns and leaves it empty; accepts NULL. */
void wd_kafka_conf_clear(wd_kafka_conf_t *conf);

/* A position in a partition: for commits and starting points the next offset to read; for end
 * offsets the high watermark. topic is borrowed (see each function). */
typedef struct wd_tp_offset {
  const char *topic;
  int32_t partition;
  int64_t offset;
} wd_tp_offset_t;

/* librdkafka error codes (rd_kafka_resp_err_t) that app/ dispatches on through wd_error_t.code
 * without including librdkafka; ingest/kafka.c checks at compile time that they match. */
#define WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE 10 /* RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE */
#define WD_KAFKA_ERR_TIMED_OUT (-185) /* RD_KAFKA_RESP_ERR__TIMED_OUT */

/* The consumer group metadata a transactional producer sends with its offsets
 * (send_offsets_to_transaction, KIP-447): made by wd_consumer_group_metadata (ingest/consumer.h),
 * taken by wd_producer_txn_send_offsets (sink/producer.h), released by wd_group_meta_destroy. */
typedef struct wd_group_meta wd_group_meta_t;

/* Special starting offsets an on_assign callback may return (ingest/consumer.h). */
#define WD_OFFSET_STORED (-1) /* the committed group offset, else auto.offset.reset */
#define WD_OFFSET_BEGINNING (-2) /* the oldest offset still in the log */
#define WD_OFFSET_END (-3) /* only records produced from now on */

struct rd_kafka_message_s; /* librdkafka's rd_kafka_message_t (opaque here) */

/* One consumed record. Every pointer is borrowed from rkm and valid until the record is
 * released (wd_kmsg_release, ingest/consumer.h). Code that builds a wd_kmsg_t by hand (tests,
 * dead-letter callers) leaves rkm NULL. */
typedef struct wd_kmsg {
  const char *topic;
  int32_t partition;
  int64_t offset;
  int64_t timestamp; /* ms since the epoch (CreateTime or LogAppendTime), -1 when unknown */
  const void *key; /* NULL for a null key */
  size_t key_len;
  const void *value; /* NULL for a null value (tombstone) */
  size_t value_len;
  struct rd_kafka_message_s *rkm; /* owned by the wd_kmsg_t: released by wd_kmsg_release */
} wd_kmsg_t;

#endif
