/*
 * tests/unit/test_consumer_faults.c — ingest/consumer.h under the answers a restarting broker gives,
 * injected by librdkafka's mock cluster (rd_kafka_mock_push_request_errors), issue 21: a group
 * coordinator that moves answers OffsetFetch with NOT_COORDINATOR at once, and a partition whose
 * leader moves answers ListOffsets with NOT_LEADER_FOR_PARTITION; both used to end widen with rc 1
 * (E_RECOVER / "end offsets of N partitions") seconds after a broker restart in the chaos runs.
 * Now they are asked again within the caller's timeout.
 * The mock cluster is for fault injection only; the consumer's real paths run on the real broker
 * in tests/integration.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"

/* the Kafka protocol's ApiKeys (librdkafka's RD_KAFKAP_* are not public) */
enum { KAFKA_API_LIST_OFFSETS = 2, KAFKA_API_OFFSET_FETCH = 9 };

typedef struct {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc;
  wd_consumer_t *cons;
} mock_t;

static void mock_new(mock_t *m, const char *group) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(m->rk, "%s", errstr);
  m->mc = rd_kafka_mock_cluster_new(m->rk, 1);
  cr_assert_not_null(m->mc);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "t", 2, 1), 0);
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(m->mc)));
  cr_assert_null(wd_kafka_conf_set(&kc, "log_level", "0"));
  if (group) cr_assert_null(wd_kafka_conf_set_group(&kc, group));
  const char *topics[] = {"t"};
  wd_error_t *err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &m->cons);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc);
}

static void mock_done(mock_t *m) {
  wd_consumer_destroy(m->cons);
  rd_kafka_mock_cluster_destroy(m->mc);
  rd_kafka_destroy(m->rk);
}

Test(consumer_faults, committed_offsets_are_asked_again_while_the_coordinator_moves, .timeout = 60) {
  mock_t m;
  mock_new(&m, "g1");
  /* one answer first, so that the coordinator is known; then 8 NOT_COORDINATOR answers in a row */
  wd_tp_offset_t parts[2] = {{.topic = "t", .partition = 0, .offset = 7}, {.topic = "t", .partition = 1, .offset = 7}};
  wd_error_t *err = wd_consumer_committed(m.cons, parts, 2, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  rd_kafka_mock_push_request_errors(m.mc, KAFKA_API_OFFSET_FETCH, 8, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  parts[0].offset = parts[1].offset = 7;
  err = wd_consumer_committed(m.cons, parts, 2, 20000);
  cr_assert_null(err, "a moving coordinator ended the read: %s", err ? err->message : "");
  cr_assert_eq(parts[0].offset, -1); /* nothing committed in the group */
  cr_assert_eq(parts[1].offset, -1);
  mock_done(&m);
}

Test(consumer_faults, a_coordinator_away_past_the_timeout_is_a_retriable_error, .timeout = 60) {
  mock_t m;
  mock_new(&m, "g2");
  wd_tp_offset_t parts[1] = {{.topic = "t", .partition = 0}};
  cr_assert_null(wd_consumer_committed(m.cons, parts, 1, 10000));
  rd_kafka_resp_err_t errs[200];
  for (size_t i = 0; i < 200; i++) errs[i] = RD_KAFKA_RESP_ERR_NOT_COORDINATOR;
  rd_kafka_mock_push_request_errors_array(m.mc, KAFKA_API_OFFSET_FETCH, 200, errs);
  wd_error_t *err = wd_consumer_committed(m.cons, parts, 1, 1500);
  cr_assert_not_null(err, "200 NOT_COORDINATOR answers within 1.5 s were not reported");
  cr_assert(err->retriable, "%s", err->message);
  cr_assert(strstr(err->message, "NOT_COORDINATOR"), "%s", err->message);
  wd_error_destroy(err);
  mock_done(&m);
}

Test(consumer_faults, end_offsets_are_asked_again_while_a_leader_moves, .timeout = 60) {
  mock_t m;
  mock_new(&m, NULL);
  rd_kafka_mock_push_request_errors(m.mc, KAFKA_API_LIST_OFFSETS, 6, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
  wd_tp_offset_t *ends = NULL;
  size_t n = 0;
  wd_error_t *err = wd_consumer_end_offsets(m.cons, 20000, &ends, &n);
  cr_assert_null(err, "a moving leader ended the read: %s", err ? err->message : "");
  cr_assert_eq(n, 2);
  cr_assert_eq(ends[0].offset, 0); /* empty partitions: end offset 0 */
  cr_assert_eq(ends[1].offset, 0);
  free(ends);
  mock_done(&m);
}

