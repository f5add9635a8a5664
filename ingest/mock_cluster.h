/*
 * ingest/mock_cluster.h — librdkafka's in-process mock cluster, for `widen demo` (the whole job
 * with nothing installed) and fault-injection tests. Never the only proof of a Kafka path: the
 * integration tests run on a real Apache Kafka broker (scripts/kafka).
 * Known limits (toolchain-notes §2): no read_committed, 5 MiB retention per partition, first
 * group join takes ~3 s.
 */
#ifndef WD_MOCK_CLUSTER_H
#define WD_MOCK_CLUSTER_H

#include <stdint.h>

#include "common/error.h"

typedef struct wd_mock_cluster wd_mock_cluster_t;

/* Starts a mock cluster of nbrokers brokers on 127.0.0.1 ephemeral ports. Errors: "E_KAFKA". */
wd_error_t *wd_mock_cluster_new(int nbrokers, wd_mock_cluster_t **out);
/* "host:port,..." of the cluster (borrowed, valid until destroy). */
const char *wd_mock_cluster_bootstraps(const wd_mock_cluster_t *mc);
/* Creates topic with partitions (replication 1). Errors: "E_KAFKA". */
wd_error_t *wd_mock_cluster_topic(wd_mock_cluster_t *mc, const char *topic, int partitions);
/* Stops the cluster; accepts NULL. */
void wd_mock_cluster_destroy(wd_mock_cluster_t *mc);

#endif
