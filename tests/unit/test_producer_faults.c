/*
 * tests/unit/test_producer_faults.c — sink/producer.h under faults injected by librdkafka's mock
 * cluster (rd_kafka_mock_push_request_errors):
 *   - a produce that fails inside a transaction leaves the transaction abortable: the next send is
 *     refused with txn_requires_abort (wd_error_abortable), not as a plain error that stops widen;
 *     after abort_transaction the producer goes on;
 *   - a full local queue calls the owner's wait (wd_producer_set_wait), which serves what must not
 *     starve, and the send gives up with a retriable E_STOPPED when the wait says so.
 * The mock cluster is for fault injection only; the producer's real paths run on the real broker in
 * the integration tests.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "sink/producer.h"

/* the Kafka protocol's ApiKey of Produce requests (librdkafka's RD_KAFKAP_Produce is not public) */
enum { KAFKA_API_PRODUCE = 0 };

typedef struct {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc;
} mock_t;

static void mock_new(mock_t *m) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(m->rk, "%s", errstr);
  m->mc = rd_kafka_mock_cluster_new(m->rk, 1);
  cr_assert_not_null(m->mc);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "t", 1, 1), 0);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "t2", 1, 1), 0);
}

static void mock_done(mock_t *m) {
  rd_kafka_mock_cluster_destroy(m->mc);
  rd_kafka_destroy(m->rk);
}

static wd_producer_t *producer(mock_t *m, const char *txn_id, const char *extra_name, const char *extra_value) {
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(m->mc)));
  if (txn_id) cr_assert_null(wd_kafka_conf_set(&kc, "transactional.id", txn_id));
  cr_assert_null(wd_kafka_conf_set(&kc, "log_level", "0"));
  if (extra_name) cr_assert_null(wd_kafka_conf_set(&kc, extra_name, extra_value));
  wd_producer_t *p = NULL;
  wd_error_t *err = wd_producer_new(&kc, &p);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc);
  return p;
}

Test(producer_faults, a_failed_produce_makes_the_next_send_abortable_and_abort_recovers, .timeout = 60) {
  mock_t m;
  mock_new(&m);
  wd_producer_t *p = producer(&m, "wd-faults-1", "message.timeout.ms", "3000");
  wd_error_t *err = wd_producer_txn_init(p, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_null(wd_producer_txn_begin(p));
  /* the next Produce request fails with a non-retriable error: the delivery fails inside the
   * transaction, which librdkafka then holds in its abortable error state */
  rd_kafka_mock_push_request_errors(m.mc, KAFKA_API_PRODUCE, 1, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  cr_assert_null(wd_producer_send(p, "t", "k", 1, "v", 1, NULL, 0));
  /* wait for the failed delivery, then send again: refused, and abortable */
  wd_error_t *werr = wd_producer_wait_acked(p, 10000);
  cr_assert_not_null(werr, "the failed delivery was not reported");
  wd_error_destroy(werr);
  wd_error_t *serr = NULL;
  for (int i = 0; i < 50 && !serr; i++) {
    serr = wd_producer_send(p, "t", "k", 1, "v2", 2, NULL, 0);
    if (!serr) wd_producer_poll(p);
  }
  cr_assert_not_null(serr, "a send into a failed transaction was accepted");
  cr_assert(wd_error_abortable(serr), "not abortable: %s (txn_requires_abort %d fenced %d fatal %d)", serr->message,
            serr->txn_requires_abort, serr->fenced, serr->fatal);
  wd_error_destroy(serr);
  /* the abort clears it: a new transaction takes messages and commits them (to another topic:
   * librdkafka keeps the authorization error on "t") */
  err = wd_producer_txn_abort(p, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_null(wd_producer_txn_begin(p));
  err = wd_producer_send(p, "t2", "k", 1, "v3", 2, NULL, 0);
  cr_assert_null(err, "%s", err ? err->message : "");
  err = wd_producer_txn_commit(p, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_producer_destroy(p);
  mock_done(&m);
}

typedef struct {
  int calls;
  int give_up_after;
} waiter_t;

static int wait_fn(void *ctx, int ms) {
  waiter_t *w = ctx;
  cr_assert_gt(ms, 0);
  return ++w->calls >= w->give_up_after;
}

Test(producer_faults, a_full_queue_serves_the_owner_and_gives_up_when_told, .timeout = 60) {
  mock_t m;
  mock_new(&m);
  /* room for 2 messages; the broker answers nothing for 30 s, so the queue stays full */
  wd_producer_t *p = producer(&m, NULL, "queue.buffering.max.messages", "2");
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, KAFKA_API_PRODUCE, 4, RD_KAFKA_RESP_ERR_NO_ERROR, 30000,
                                               RD_KAFKA_RESP_ERR_NO_ERROR, 30000, RD_KAFKA_RESP_ERR_NO_ERROR, 30000,
                                               RD_KAFKA_RESP_ERR_NO_ERROR, 30000);
  waiter_t w = {0, 5};
  wd_producer_set_wait(p, wait_fn, &w);
  wd_error_t *err = NULL;
  int sent = 0;
  for (; sent < 10 && !err; sent++) err = wd_producer_send(p, "t", "k", 1, "v", 1, NULL, 0);
  cr_assert_not_null(err, "10 sends into a queue of 2 all succeeded");
  cr_assert_str_eq(err->id, "E_STOPPED");
  cr_assert(err->retriable);
  cr_assert_eq(w.calls, 5, "the wait was called %d times", w.calls);
  cr_assert_leq(sent, 4);
  wd_error_destroy(err);
  wd_producer_set_wait(p, NULL, NULL);
  wd_producer_destroy(p);
  mock_done(&m);
}
