/*
 * app/runtime/clients.c — the Kafka clients' configurations (see clients.h).
 */
#include "app/runtime/clients.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sink/topics.h"

/* librdkafka properties that only a consumer takes: kafka.properties go to both clients, and
 * the producer would warn about these at every start. */
static bool consumer_only(const char *name) {
  static const char *const names[] = {"session.timeout.ms",
                                      "heartbeat.interval.ms",
                                      "group.instance.id",
                                      "max.poll.interval.ms",
                                      "auto.offset.reset",
                                      "partition.assignment.strategy",
                                      "fetch.min.bytes",
                                      "fetch.max.bytes",
                                      "fetch.wait.max.ms",
                                      "max.partition.fetch.bytes",
                                      "isolation.level",
                                      "enable.partition.eof",
                                      "auto.commit.interval.ms",
                                      "queued.min.messages",
                                      "queued.max.messages.kbytes",
                                      "check.crcs",
                                      "fetch.error.backoff.ms",
                                      "coordinator.query.interval.ms",
                                      "group.protocol.type",
                                      "offset.store.method",
                                      "allow.auto.create.topics"};
  for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
    if (strcmp(name, names[i]) == 0) return true;
  return false;
}

/* librdkafka properties that only the producer takes (kept from the consumer's configuration). */
static bool producer_only(const char *name) {
  return !strcmp(name, "transactional.id") || !strcmp(name, "transaction.timeout.ms");
}

/* The instance id generated once and kept in the state directory (meta "instance/id"): 16 hex
 * digits into inst (n >= 17). Errors: E_STORE_*, E_NOMEM. */
static wd_error_t *stored_instance_id(wd_store_t *store, char *inst, size_t n) {
  wd_error_t *err = NULL;
  uint8_t *val = NULL;
  size_t vlen = 0;
  inst[0] = 0;
  if ((err = wd_store_get_meta(store, "instance/id", &val, &vlen))) return err;
  if (val && vlen < n) {
    memcpy(inst, val, vlen);
    inst[vlen] = 0;
  }
  free(val);
  if (inst[0]) return NULL;
  uint64_t r = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&r, sizeof(r), 1, f) != 1) r = (uint64_t)(uint64_t)wd_wall_ms() ^ ((uint64_t)getpid() << 32);
  if (f) fclose(f);
  snprintf(inst, n, "%016" PRIx64, r);
  wd_store_batch_t *b = wd_store_batch_new();
  if (!b || wd_store_batch_set_meta(b, "instance/id", (const uint8_t *)inst, strlen(inst))) {
    wd_store_batch_destroy(b);
    return wd_error_nomem();
  }
  err = wd_store_write_sync(store, b);
  wd_store_batch_destroy(b);
  return err;
}

/* The producer's transactional.id under exactly-once (docs/exactly-once.md): kafka.properties'
 * or sink.properties' own, else widen-<group>-<instance> with the group.instance.id, or an id
 * generated once and kept in the state directory (meta "instance/id"), so that a restarted
 * process fences its earlier incarnation. Also reads transaction.timeout.ms. */
static wd_error_t *transactional_id(wd_clients_t *k, const wd_config_t *cfg, wd_store_t *store) {
  wd_kafka_conf_t *pconf = &k->pconf;
  int *txn_timeout_ms = &k->txn_timeout_ms;
  wd_error_t *err = NULL;
  const char *tt = wd_kafka_conf_get(pconf, "transaction.timeout.ms");
  if (tt) {
    *txn_timeout_ms = atoi(tt);
  } else {
    /* 10 s, as Kafka Streams under exactly-once (librdkafka's default is 60 s): the open
     * transaction of a process killed for good (not restarted with its transactional.id) holds
     * every read_committed reader of the partitions it wrote to (the other members' repartition
     * topics and changelog restores, downstream consumers) until the broker aborts it */
    *txn_timeout_ms = 10000;
    if ((err = wd_kafka_conf_set(pconf, "transaction.timeout.ms", "10000"))) return err;
  }
  const char *tid = wd_kafka_conf_get(pconf, "transactional.id");
  if (tid) return (k->txn_id = strdup(tid)) ? NULL : wd_error_nomem();
  char inst[64] = "";
  const char *gi = wd_kafka_conf_get(&k->kconf, "group.instance.id");
  if (gi) snprintf(inst, sizeof(inst), "%s", gi);
  else if ((err = stored_instance_id(store, inst, sizeof(inst)))) return err;
  if (asprintf(&k->txn_id, "widen-%s-%s", cfg->kafka.group_id ? cfg->kafka.group_id : "nogroup", inst) < 0) {
    k->txn_id = NULL;
    return wd_error_nomem();
  }
  return wd_kafka_conf_set(pconf, "transactional.id", k->txn_id);
}

wd_error_t *wd_clients_configure(wd_clients_t *k, const wd_config_t *cfg, wd_store_t *store, bool replay,
                                 bool exactly_once, bool no_output) {
  wd_error_t *err = NULL;
  if ((err = wd_kafka_conf_set_brokers(&k->kconf, cfg->kafka.bootstrap_servers))) return err;
  for (size_t i = 0; i < cfg->kafka.properties.n; i++)
    if (!producer_only(cfg->kafka.properties.v[i].key) &&
        (err = wd_kafka_conf_set(&k->kconf, cfg->kafka.properties.v[i].key, cfg->kafka.properties.v[i].value)))
      return err;
  if ((err = wd_kafka_conf_set_brokers(&k->pconf, cfg->kafka.bootstrap_servers))) return err;
  for (size_t i = 0; i < cfg->kafka.properties.n && !err; i++)
    if (!consumer_only(cfg->kafka.properties.v[i].key))
      err = wd_kafka_conf_set(&k->pconf, cfg->kafka.properties.v[i].key, cfg->kafka.properties.v[i].value);
  for (size_t i = 0; i < cfg->sink.properties.n && !err; i++)
    err = wd_kafka_conf_set(&k->pconf, cfg->sink.properties.v[i].key, cfg->sink.properties.v[i].value);
  if (!err && !no_output) { /* so that a consumer can read them before their first record */
    const char *out_topics[] = {cfg->sink.topic, cfg->sink.dead_letter_topic};
    wd_sink_create_topics(&k->pconf, out_topics, 2, 10000);
  }
  /* static membership by default (KIP-345), with the state directory's instance id */
  if (!err && !replay && cfg->kafka.static_membership && !wd_kafka_conf_get(&k->kconf, "group.instance.id")) {
    char inst[64];
    if (!(err = stored_instance_id(store, inst, sizeof(inst))))
      err = wd_kafka_conf_set(&k->kconf, "group.instance.id", inst);
    if (!err)
      wd_log(WD_LOG_INFO, "pipeline",
             "static membership: group.instance.id %s (kept in %s; a restart within "
             "session.timeout.ms takes the partitions back without a rebalance)",
             inst, cfg->state.dir);
  }
  k->txn_timeout_ms = 60000; /* librdkafka's default transaction.timeout.ms */
  if (!err && exactly_once) err = transactional_id(k, cfg, store);
  if (!err && !replay) err = wd_kafka_conf_set_group(&k->kconf, cfg->kafka.group_id);
  return err;
}

wd_error_t *wd_clients_restore_conf(wd_clients_t *k, const wd_config_t *cfg) {
  wd_error_t *err = wd_kafka_conf_set_brokers(&k->rconf, cfg->kafka.bootstrap_servers);
  for (size_t i = 0; !err && i < cfg->kafka.properties.n; i++) {
    const char *key = cfg->kafka.properties.v[i].key;
    if (producer_only(key) || !strcmp(key, "group.instance.id")) continue;
    err = wd_kafka_conf_set(&k->rconf, key, cfg->kafka.properties.v[i].value);
  }
  return err;
}

void wd_clients_clear(wd_clients_t *k) {
  wd_kafka_conf_clear(&k->kconf);
  wd_kafka_conf_clear(&k->pconf);
  wd_kafka_conf_clear(&k->rconf);
  free(k->txn_id);
  k->txn_id = NULL;
}
