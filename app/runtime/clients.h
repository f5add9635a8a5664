/*
 * app/runtime/clients.h — the Kafka clients' configurations of a pipeline, made once at start-up
 * from the config (docs/configuration.md "kafka", "sink"):
 *   - the group consumer's: kafka.properties (but the producer-only ones), the group, static
 *     membership (KIP-345) with the state directory's instance id;
 *   - the producer's: kafka.properties (but the consumer-only ones, which librdkafka would warn
 *     about), then sink.properties; under exactly-once its transactional.id (docs/exactly-once.md)
 *     and transaction.timeout.ms (10 s by default, as Kafka Streams);
 *   - the restore consumer's (per-partition tasks under exactly-once): brokers and kafka.properties,
 *     no group, no group.instance.id.
 * The output topics (sink and dead-letter topic) are created when missing, so that a consumer can
 * read them before their first record.
 *
 * Ownership: wd_clients_t owns its configurations and the transactional.id; wd_clients_clear
 * frees them. Thread: the pipeline's start-up.
 */
#ifndef WD_APP_CLIENTS_H
#define WD_APP_CLIENTS_H

#include <stdbool.h>

#include "app/config/config.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "join/store.h"

typedef struct wd_clients {
  wd_kafka_conf_t kconf; /* the group consumer's */
  wd_kafka_conf_t pconf; /* the producer's (kept to re-create it) */
  wd_kafka_conf_t rconf; /* the restore consumer's (wd_clients_restore_conf), else empty */
  char *txn_id; /* exactly-once: the producer's transactional.id, else NULL */
  int txn_timeout_ms; /* its transaction.timeout.ms (librdkafka's default 60000 otherwise) */
} wd_clients_t;

/* Makes k's consumer and producer configurations from cfg (borrowed) for a run that is a replay
 * (no group, no static membership) or not, exactly-once or not, with output or not (no_output:
 * the output topics are not created); store (the state directory) keeps the instance id (meta
 * "instance/id", generated once) that names the static member and the transactional.id.
 * Errors: the Kafka configuration's (an unknown property: C_...), E_STORE_*, E_NOMEM. */
wd_error_t *wd_clients_configure(wd_clients_t *k, const wd_config_t *cfg, wd_store_t *store, bool replay,
                                 bool exactly_once, bool no_output);

/* Makes k->rconf, the restore consumer's configuration. Errors: as wd_clients_configure. */
wd_error_t *wd_clients_restore_conf(wd_clients_t *k, const wd_config_t *cfg);

/* Frees k's configurations and transactional.id (accepts a zeroed k). */
void wd_clients_clear(wd_clients_t *k);

#endif
