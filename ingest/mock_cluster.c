/*
 * ingest/mock_cluster.c — see mock_cluster.h.
 */
#include "ingest/mock_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>

struct wd_mock_cluster {
  rd_kafka_t *rk; /* the spare client the mock cluster needs */
  rd_kafka_mock_cluster_t *mc;
};

wd_error_t *wd_mock_cluster_new(int nbrokers, wd_mock_cluster_t **out) {
  char errstr[512];
  *out = NULL;
  wd_mock_cluster_t *m = calloc(1, sizeof(*m));
  if (!m) return wd_error_nomem();
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
  m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!m->rk) {
    rd_kafka_conf_destroy(conf);
    free(m);
    return wd_error_new(WD_ERR_KAFKA, E_KAFKA, "mock cluster: %s", errstr);
  }
  m->mc = rd_kafka_mock_cluster_new(m->rk, nbrokers);
  if (!m->mc) {
    rd_kafka_destroy(m->rk);
    free(m);
    return wd_error_new(WD_ERR_KAFKA, E_KAFKA, "mock cluster could not start");
  }
  *out = m;
  return NULL;
}

const char *wd_mock_cluster_bootstraps(const wd_mock_cluster_t *mc) { return rd_kafka_mock_cluster_bootstraps(mc->mc); }

wd_error_t *wd_mock_cluster_topic(wd_mock_cluster_t *mc, const char *topic, int partitions) {
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc->mc, topic, partitions, 1);
  if (e) return wd_error_new(WD_ERR_KAFKA, E_KAFKA, "mock cluster: creating %s: %s", topic, rd_kafka_err2str(e));
  return NULL;
}

void wd_mock_cluster_destroy(wd_mock_cluster_t *mc) {
  if (!mc) return;
  rd_kafka_mock_cluster_destroy(mc->mc);
  rd_kafka_destroy(mc->rk);
  free(mc);
}
