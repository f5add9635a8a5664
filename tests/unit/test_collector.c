/*
 * tests/unit/test_collector.c — the record collector (app/runtime/collector.h) under faults injected by
 * librdkafka's mock cluster:
 *   - an abortable produce error inside a transaction: the collector classifies the refused send
 *     as WD_COLLECT_ABORT; abort and redo commit the redone records, none lost;
 *   - a coordinator lost during the commit (AddOffsetsToTxn, TxnOffsetCommit, EndTxn answering
 *     NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, and the transaction coordinator moved to another
 *     broker): each commit either completes (group offsets = target, every record in the log) or
 *     is classified abortable and redone, never left half;
 *   - a full queue while the group needs a poll: the collector's wait serves the consumer, which
 *     stays in its group past max.poll.interval.ms (a wait that does not serve it loses the group:
 *     the control case, so the test can fail);
 *   - holding: records kept while the previous commit completes are sent in order by release,
 *     in the next transaction;
 *   - a fatal producer error that is not fencing (EndTxn, AddPartitionsToTxn or AddOffsetsToTxn
 *     answering INVALID_TXN_STATE: librdkafka makes the producer fatal): classified
 *     WD_COLLECT_RECREATE, the producer re-created (same transactional.id) and the redone commit
 *     commits; at most WD_RECREATE_MAX times within WD_RECREATE_WINDOW_S s, then E_PRODUCER_FATAL;
 *     a fencing one (PRODUCER_FENCED) is never re-created.
 * The mock cluster has no read_committed (toolchain-notes §2): what a transaction leaves visible is
 * checked on the real broker by the exactly-once integration tests; here the outcome of each call
 * and the log's contents are.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/runtime/collector.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"

/* the Kafka protocol's ApiKeys (librdkafka's RD_KAFKAP_* are not public) */
enum {
  API_PRODUCE = 0,
  API_ADD_PARTITIONS_TO_TXN = 24,
  API_ADD_OFFSETS_TO_TXN = 25,
  API_END_TXN = 26,
  API_TXN_OFFSET_COMMIT = 28
};

typedef struct {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc;
} mock_t;

static void mock_new(mock_t *m, int brokers) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(m->rk, "%s", errstr);
  m->mc = rd_kafka_mock_cluster_new(m->rk, brokers);
  cr_assert_not_null(m->mc);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "out", 1, 1), 0);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "out2", 1, 1), 0);
  cr_assert_eq(rd_kafka_mock_topic_create(m->mc, "in", 1, 1), 0);
}

static void mock_done(mock_t *m) {
  rd_kafka_mock_cluster_destroy(m->mc);
  rd_kafka_destroy(m->rk);
}

static wd_collector_t *collector(mock_t *m, const char *txn_id, const char *extra_name, const char *extra_value) {
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(m->mc)));
  if (txn_id) cr_assert_null(wd_kafka_conf_set(&kc, "transactional.id", txn_id));
  cr_assert_null(wd_kafka_conf_set(&kc, "log_level", "0"));
  if (extra_name) cr_assert_null(wd_kafka_conf_set(&kc, extra_name, extra_value));
  wd_collector_t *c = NULL;
  wd_error_t *err = wd_collector_new(&kc, &c);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc); /* the collector keeps its own copy */
  if (txn_id) {
    err = wd_collector_init(c, 10000);
    cr_assert_null(err, "%s", err ? err->message : "");
  }
  return c;
}

static wd_consumer_t *group_consumer(mock_t *m, const char *group, const char *topic, const char *max_poll_ms) {
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(m->mc)));
  cr_assert_null(wd_kafka_conf_set_group(&kc, group));
  cr_assert_null(wd_kafka_conf_set(&kc, "log_level", "0"));
  cr_assert_null(wd_kafka_conf_set(&kc, "isolation.level", "read_uncommitted")); /* the mock has no read_committed */
  if (max_poll_ms) {
    cr_assert_null(wd_kafka_conf_set(&kc, "session.timeout.ms", max_poll_ms));
    cr_assert_null(wd_kafka_conf_set(&kc, "max.poll.interval.ms", max_poll_ms));
    cr_assert_null(wd_kafka_conf_set(&kc, "heartbeat.interval.ms", "500"));
  }
  const char *topics[] = {topic};
  wd_consumer_t *c = NULL;
  wd_error_t *err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc);
  return c;
}

/* Every record of topic's partition 0 from the beginning (values as strings "v..."), by a plain
 * consumer of the mock (read_uncommitted). Returns how many; *found counts those equal to want. */
static int read_all(mock_t *m, const char *topic, const char *want_prefix, int *found) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(m->mc), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", "reader", errstr, sizeof(errstr));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk, "%s", errstr);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  cr_assert_eq(rd_kafka_assign(rk, l), 0);
  rd_kafka_topic_partition_list_destroy(l);
  int n = 0;
  *found = 0;
  for (int i = 0; i < 100; i++) {
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 100);
    if (!msg) continue;
    bool eof = msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
    if (!msg->err) {
      n++;
      if (msg->len >= strlen(want_prefix) && !memcmp(msg->payload, want_prefix, strlen(want_prefix))) (*found)++;
    }
    rd_kafka_message_destroy(msg);
    if (eof) break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return n;
}

Test(collector, classify_is_one_table) {
  cr_assert_eq(wd_collector_classify(NULL), WD_COLLECT_OK);
  wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_TXN_COMMIT, "x");
  e->retriable = false;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  e->retriable = true;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_RETRY);
  e->txn_requires_abort = true; /* abortable wins over retriable */
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_ABORT);
  e->fenced = true; /* fenced wins over both */
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  e->fenced = false;
  e->fatal = true; /* a fatal producer error that is not fencing: re-create the producer */
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_RECREATE);
  e->fenced = true; /* fenced: never re-created */
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  wd_error_destroy(e);
  e = wd_error_new(WD_ERR_KAFKA, E_PRODUCER_FATAL, "x"); /* the re-creations' bound */
  e->fatal = true;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  wd_error_destroy(e);
  e = wd_error_new(WD_ERR_KAFKA, E_TXN_INIT, "x"); /* a new producer that cannot start */
  e->fatal = true;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  wd_error_destroy(e);
  e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_FATAL, "consumer: x"); /* a consumer's: no producer to re-create */
  e->fatal = true;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_FATAL);
  wd_error_destroy(e);
  e = wd_error_new(WD_ERR_KAFKA, E_SINK_FATAL, "producer: x"); /* the producer's */
  e->fatal = true;
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_RECREATE);
  wd_error_destroy(e);
  cr_assert_eq(wd_collector_classify(wd_error_nomem()), WD_COLLECT_FATAL); /* "fatal", but no Kafka error */
  e = wd_error_new(WD_ERR_KAFKA, E_STOPPED, "x");
  cr_assert_eq(wd_collector_classify(e), WD_COLLECT_STOPPED);
  wd_error_destroy(e);
}

static void send_batch(wd_collector_t *c, const char *topic, const char *prefix, int n) {
  for (int i = 0; i < n; i++) {
    char v[32];
    int len = snprintf(v, sizeof(v), "%s%d", prefix, i);
    wd_error_t *err = wd_collector_send(c, WD_OUT_CHANGELOG, topic, -1, "k", 1, v, (size_t)len);
    cr_assert_null(err, "%s", err ? err->message : "");
  }
}

static int openings;
static void count_opening(void *ctx) {
  (void)ctx;
  openings++;
}

Test(collector, an_abortable_produce_error_is_aborted_and_redone_nothing_lost, .timeout = 90) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-abort", "message.timeout.ms", "3000");
  openings = 0;
  wd_collector_set_opening(c, count_opening, NULL);
  cr_assert_not(wd_collector_txn_open(c));
  /* the first Produce request fails for good: its delivery fails inside the transaction */
  rd_kafka_mock_push_request_errors(m.mc, API_PRODUCE, 1, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  send_batch(c, "out2", "lost", 3); /* begins the transaction lazily */
  cr_assert(wd_collector_txn_open(c));
  cr_assert_eq(openings, 1);
  /* the next send (or the commit) is refused: classified abortable, never fatal */
  wd_error_t *err = NULL;
  for (int i = 0; i < 100 && !err; i++) {
    err = wd_collector_send(c, WD_OUT_CHANGELOG, "out2", -1, "k", 1, "lost", 4);
    wd_collector_poll(c);
    if (!err) usleep(20000);
  }
  if (!err) err = wd_collector_commit(c, 10000);
  cr_assert_not_null(err, "a transaction whose delivery failed took more records and committed");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_ABORT, "%s: class %d, not abortable", err->message,
               wd_collector_classify(err));
  wd_error_destroy(err);
  /* abort, redo: the same records again in a new transaction, committed */
  err = wd_collector_abort(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_not(wd_collector_txn_open(c));
  send_batch(c, "out", "redo", 5);
  cr_assert_eq(openings, 2, "the redo did not open a new commit");
  err = wd_collector_commit(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  int found = 0;
  int n = read_all(&m, "out", "redo", &found);
  cr_assert_eq(found, 5, "%d of the 5 redone records in the log (%d records)", found, n);
  wd_collector_destroy(c);
  mock_done(&m);
}

/* One commit as the coordinator dispatches it (app/runtime/commit.c: send_offsets retried while
 * WD_COLLECT_RETRY, commit retried while WD_COLLECT_RETRY, abort on WD_COLLECT_ABORT): 1 committed,
 * 0 aborted (the caller redoes it); fatal classes fail the test. */
static int retried; /* commits called again after WD_COLLECT_RETRY (resumed) */

static int commit_like_the_coordinator(wd_collector_t *c, wd_consumer_t *cons, const wd_tp_offset_t *t, int commit_ms,
                                       void (*before_commit)(void *), void *ctx) {
  wd_group_meta_t *gm = NULL;
  wd_error_t *err = wd_consumer_group_metadata(cons, &gm);
  cr_assert_null(err, "%s", err ? err->message : "");
  double deadline = wd_mono_s() + 40;
  for (;;) {
    err = wd_collector_send_offsets(c, t, 1, gm, 5000);
    wd_collect_class_t k = wd_collector_classify(err);
    if (k == WD_COLLECT_OK) break;
    cr_assert(k == WD_COLLECT_RETRY || k == WD_COLLECT_ABORT, "send_offsets: %s (class %d)", err->message, k);
    if (k == WD_COLLECT_ABORT) {
      wd_error_destroy(err);
      wd_group_meta_destroy(gm);
      cr_assert_null(wd_collector_abort(c, 10000));
      return 0;
    }
    wd_error_destroy(err);
    cr_assert_lt(wd_mono_s(), deadline, "send_offsets retried for 40 s");
    wd_consumer_serve(cons, 100);
  }
  wd_group_meta_destroy(gm);
  if (before_commit) before_commit(ctx);
  for (;;) {
    err = wd_collector_commit(c, commit_ms);
    wd_collect_class_t k = wd_collector_classify(err);
    if (k == WD_COLLECT_OK) return 1;
    cr_assert(k == WD_COLLECT_RETRY || k == WD_COLLECT_ABORT, "commit: %s (class %d)", err->message, k);
    wd_error_destroy(err);
    if (k == WD_COLLECT_ABORT) {
      cr_assert_null(wd_collector_abort(c, 10000));
      return 0;
    }
    cr_assert_lt(wd_mono_s(), deadline, "commit retried for 40 s");
    retried++;
    wd_consumer_serve(cons, 100);
  }
}

typedef struct {
  rd_kafka_mock_cluster_t *mc;
  const char *txn_id;
  int to;
} move_t;

static void move_coordinator(void *ctx) {
  move_t *mv = ctx;
  cr_assert_eq(rd_kafka_mock_coordinator_set(mv->mc, "transaction", mv->txn_id, mv->to), 0);
}

Test(collector, a_coordinator_lost_during_the_commit_completes_or_is_redone, .timeout = 240) {
  mock_t m;
  mock_new(&m, 3);
  const char *txn_id = "wd-coll-coord";
  rd_kafka_mock_coordinator_set(m.mc, "transaction", txn_id, 1);
  rd_kafka_mock_coordinator_set(m.mc, "group", "g-coord", 1);
  wd_collector_t *c = collector(&m, txn_id, NULL, NULL);
  wd_consumer_t *cons = group_consumer(&m, "g-coord", "in", NULL);
  struct {
    const char *what;
    int api;
    rd_kafka_resp_err_t code;
    int rtt_ms; /* the injected answers come this late; the commit is called with a 300 ms timeout, so
                  * that it returns the retriable _TIMED_OUT and is called again (resumed) */
    int move_to; /* > 0: the transaction coordinator moves to this broker during the commit (the moves
                  * come last: the coordinator stays there), which first answers with the error too */
  } faults[] = {
      {"AddOffsetsToTxn NOT_COORDINATOR", API_ADD_OFFSETS_TO_TXN, RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0, 0},
      {"AddOffsetsToTxn COORDINATOR_NOT_AVAILABLE", API_ADD_OFFSETS_TO_TXN, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
       0, 0},
      {"TxnOffsetCommit NOT_COORDINATOR", API_TXN_OFFSET_COMMIT, RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0, 0},
      {"TxnOffsetCommit COORDINATOR_NOT_AVAILABLE", API_TXN_OFFSET_COMMIT, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
       0, 0},
      {"EndTxn NOT_COORDINATOR", API_END_TXN, RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0, 0},
      {"EndTxn COORDINATOR_NOT_AVAILABLE answered after 1.5 s, the commit resumed", API_END_TXN,
       RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, 1500, 0},
      {"EndTxn answered after 1.5 s (no error), the commit resumed", API_END_TXN, RD_KAFKA_RESP_ERR_NO_ERROR, 1500, 0},
      {"EndTxn COORDINATOR_NOT_AVAILABLE", API_END_TXN, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, 0, 0},
      {"EndTxn NOT_COORDINATOR, coordinator moved to broker 2", API_END_TXN, RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0, 2},
      {"AddOffsetsToTxn NOT_COORDINATOR, coordinator moved to broker 3", API_ADD_OFFSETS_TO_TXN,
       RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0, 3},
  };
  int64_t next = 0;
  retried = 0;
  int total_found = 0;
  for (size_t f = 0; f < sizeof(faults) / sizeof(*faults); f++) {
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "c%zu-", f);
    next += 10;
    wd_tp_offset_t t = {"in", 0, next};
    int attempts = 0, done = 0;
    int eb = faults[f].move_to ? faults[f].move_to : 1;
    while (!done) {
      cr_assert_lt(attempts++, 3, "%s: not committed after 3 attempts", faults[f].what);
      send_batch(c, "out", prefix, 4);
      move_t mv = {m.mc, txn_id, faults[f].move_to};
      if (attempts == 1) { /* at the coordinator's broker (the new one when it moves), so that the test sees them
                            * answered */
        if (faults[f].code) /* twice: librdkafka's own retry meets it again */
          rd_kafka_mock_broker_push_request_error_rtts(m.mc, eb, faults[f].api, 2, faults[f].code, faults[f].rtt_ms,
                                                       faults[f].code, faults[f].rtt_ms);
        else /* a slow answer: one request */
          rd_kafka_mock_broker_push_request_error_rtts(m.mc, eb, faults[f].api, 1, faults[f].code, faults[f].rtt_ms);
        if (faults[f].move_to && faults[f].api != API_END_TXN) move_coordinator(&mv);
      }
      done = commit_like_the_coordinator(
          c, cons, &t, faults[f].rtt_ms ? 300 : 5000,
          attempts == 1 && faults[f].move_to && faults[f].api == API_END_TXN ? move_coordinator : NULL, &mv);
    }
    cr_assert_not(wd_collector_txn_open(c), "%s: the transaction is still open after its commit", faults[f].what);
    /* the faults were met (not a commit that never asked the failing coordinator) */
    size_t left = 99;
    cr_assert_eq(rd_kafka_mock_broker_error_stack_cnt(m.mc, eb, faults[f].api, &left), 0);
    cr_assert_eq(left, 0, "%s: %zu injected errors were never answered", faults[f].what, left);
    /* never half: the commit's records are in the log (the mock keeps no transactional offsets:
     * the group's offsets after a commit are checked on the real broker, tests/integration) */
    int found = 0;
    read_all(&m, "out", prefix, &found);
    cr_assert_geq(found, 4, "%s: %d of the commit's 4 records in the log", faults[f].what, found);
    total_found += found;
  }
  cr_assert_geq(total_found, 4 * (int)(sizeof(faults) / sizeof(*faults)));
  cr_assert_gt(retried, 0, "no commit returned the retriable _TIMED_OUT: the resumed commit was not exercised");
  wd_consumer_destroy(cons);
  wd_collector_destroy(c);
  mock_done(&m);
}

typedef struct {
  wd_consumer_t *cons;
  bool serve; /* false: the control case, a wait that only sleeps */
  double until; /* give up after this monotonic time */
  int calls;
} waiter_t;

static int wait_serving(void *ctx, int ms) {
  waiter_t *w = ctx;
  w->calls++;
  if (w->serve) wd_consumer_serve(w->cons, ms);
  else usleep((useconds_t)ms * 1000);
  return wd_mono_s() >= w->until;
}

/* Joins the group (first poll subscribes), then fills the producer's queue while the broker
 * answers no Produce for 14 s, waiting 10 s, longer than max.poll.interval.ms (6 s): whether the consumer kept
 * its membership (no new assignment/revocation) across the wait. */
static bool queue_full_keeps_the_group(bool serve) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, NULL, "queue.buffering.max.messages", "2");
  wd_consumer_t *cons = group_consumer(&m, serve ? "g-full" : "g-full-control", "in", "6000");
  /* join: served until the assignment came */
  for (int i = 0; i < 150 && wd_consumer_assigned_count(cons) == 0; i++) wd_consumer_serve(cons, 100);
  cr_assert_gt(wd_consumer_assigned_count(cons), 0, "the consumer did not join the mock group");
  uint64_t gen = wd_consumer_generation(cons);
  /* answered after 14 s: the 10 s wait below gives up first, and the close after it is short */
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, API_PRODUCE, 4, RD_KAFKA_RESP_ERR_NO_ERROR, 14000,
                                               RD_KAFKA_RESP_ERR_NO_ERROR, 14000, RD_KAFKA_RESP_ERR_NO_ERROR, 14000,
                                               RD_KAFKA_RESP_ERR_NO_ERROR, 14000);
  waiter_t w = {cons, serve, wd_mono_s() + 10.0, 0};
  wd_collector_set_wait(c, wait_serving, &w);
  wd_error_t *err = NULL;
  for (int i = 0; i < 10 && !err; i++) err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "v", 1);
  cr_assert_not_null(err, "10 sends into a queue of 2 all succeeded");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_STOPPED, "%s", err->message);
  cr_assert_gt(w.calls, 10, "the wait was called %d times", w.calls);
  wd_error_destroy(err);
  /* the group is served once more (a consumer evicted meanwhile now sees its revocation) */
  for (int i = 0; i < 30; i++) wd_consumer_serve(cons, 100);
  bool kept = wd_consumer_generation(cons) == gen;
  wd_collector_set_wait(c, NULL, NULL);
  wd_consumer_destroy(cons);
  wd_collector_destroy(c);
  mock_done(&m);
  return kept;
}

Test(collector, a_full_queue_serves_the_group_past_max_poll_interval, .timeout = 120) {
  cr_assert(queue_full_keeps_the_group(true), "the consumer lost its group while the collector waited on a full "
                                              "queue serving it");
}

Test(collector, control_a_full_queue_wait_that_does_not_serve_loses_the_group, .timeout = 120) {
  cr_assert_not(queue_full_keeps_the_group(false), "a wait that never polled kept the group past "
                                                   "max.poll.interval.ms: the test above could not fail");
}

Test(collector, held_records_go_in_order_into_the_next_transaction, .timeout = 60) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-hold", NULL, NULL);
  openings = 0;
  wd_collector_set_opening(c, count_opening, NULL);
  send_batch(c, "out", "first", 2);
  cr_assert(wd_collector_txn_open(c));
  wd_collector_hold(c, 1 << 20);
  wd_collector_batch_mark(c);
  send_batch(c, "out", "held", 3); /* kept: the first transaction is committing */
  cr_assert(wd_collector_batch_sent(c));
  cr_assert_eq(wd_collector_held(c), 3);
  /* the commit answered late (EndTxn after 300 ms): called with a 50 ms wait it says _TIMED_OUT
   * (retriable) and goes on in the background; called again it completes (resumable), committing
   * only "first". Called again once, not polled with 0 ms waits: librdkafka 2.0.2 asserts ("Invalid
   * transaction state transition") when a commit is called again and again with tiny timeouts,
   * which CI hit under load (app/runtime/collector.h; widen commits on a helper thread) */
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, API_END_TXN, 1, RD_KAFKA_RESP_ERR_NO_ERROR, 300);
  wd_error_t *err = wd_collector_commit(c, 50);
  cr_assert_not_null(err, "the late commit did not say _TIMED_OUT: the resumed commit was not exercised");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_RETRY, "%s", err->message);
  wd_error_destroy(err);
  err = wd_collector_commit(c, 20000);
  cr_assert_null(err, "%s", err ? err->message : "");
  int found = 0;
  read_all(&m, "out", "held", &found);
  cr_assert_eq(found, 0, "a held record was sent in the committing transaction");
  cr_assert_eq(openings, 1);
  err = wd_collector_release(c);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(openings, 2, "release did not open the next commit");
  cr_assert(wd_collector_txn_open(c));
  cr_assert_eq(wd_collector_held(c), 0);
  err = wd_collector_commit(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  read_all(&m, "out", "held", &found);
  cr_assert_eq(found, 3);
  /* held or not, a record over message.max.bytes is refused at the send (the pipeline dead-letters
   * its source record), not at the release */
  wd_collector_hold(c, 0);
  size_t big = 1100000;
  char *v = calloc(1, big);
  cr_assert_not_null(v);
  err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, v, big);
  free(v);
  cr_assert_not_null(err, "an oversized record was held");
  cr_assert_eq(err->code, WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE, "%s", err->message);
  cr_assert_eq(wd_collector_held(c), 0);
  wd_error_destroy(err);
  cr_assert_null(wd_collector_release(c));
  /* a bound: past max_bytes a send says E_COLLECTOR_FULL (retriable) */
  wd_collector_hold(c, 8);
  cr_assert_null(wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "12345678", 8));
  err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "x", 1);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_COLLECTOR_FULL");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_RETRY);
  wd_error_destroy(err);
  cr_assert_null(wd_collector_abort(c, 10000)); /* drops what is held */
  cr_assert_eq(wd_collector_held(c), 0);
  wd_collector_destroy(c);
  mock_done(&m);
}

Test(collector, a_commit_on_the_helper_thread_holds_what_is_sent_meanwhile, .timeout = 60) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-bg", NULL, NULL);
  send_batch(c, "out", "bgfirst", 3);
  /* EndTxn answered after 1 s: the commit runs on the helper thread meanwhile */
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, API_END_TXN, 1, RD_KAFKA_RESP_ERR_NO_ERROR, 1000);
  double t0 = wd_mono_s();
  wd_error_t *err = wd_collector_commit_start(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert(wd_collector_commit_started(c));
  cr_assert_lt(wd_mono_s() - t0, 0.5, "commit_start waited for the commit");
  cr_assert(wd_collector_commit_busy(c));
  /* records sent meanwhile are held, not produced into the committing transaction */
  send_batch(c, "out", "bgnext", 2);
  cr_assert_eq(wd_collector_held(c), 2);
  wd_collector_poll(c); /* a no-op: the thread serves the producer */
  /* an abort now is refused: the commit may have committed */
  err = wd_collector_abort(c, 1000);
  cr_assert_not_null(err, "an abort while the commit runs was accepted");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_FATAL);
  wd_error_destroy(err);
  cr_assert_eq(wd_collector_held(c), 2, "the refused abort dropped the held records");
  for (int i = 0; i < 500 && wd_collector_commit_busy(c); i++) usleep(10000);
  cr_assert_not(wd_collector_commit_busy(c), "the commit's thread did not finish in 5 s");
  err = wd_collector_commit_join(c);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_not(wd_collector_txn_open(c));
  int found = 0;
  read_all(&m, "out", "bgnext", &found);
  cr_assert_eq(found, 0, "a held record reached the log before its transaction");
  cr_assert_null(wd_collector_release(c));
  cr_assert(wd_collector_txn_open(c), "release did not begin the next transaction");
  err = wd_collector_commit(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  read_all(&m, "out", "bgnext", &found);
  cr_assert_eq(found, 2);
  read_all(&m, "out", "bgfirst", &found);
  cr_assert_eq(found, 3);
  wd_collector_destroy(c);
  mock_done(&m);
}

/* ---- a fatal producer error that is not fencing ---------------------------------------------- */

/* One commit of prefix's 4 records with the input offset t, as the coordinator dispatches (app/runtime/commit.c):
 * send_offsets and commit retried while WD_COLLECT_RETRY; WD_COLLECT_RECREATE: wd_collector_recreate (counted in
 * *recreated) and 0 returned (the caller redoes the commit); 1 when committed. Any other class: the error is
 * returned in *stop (the process would stop with it) and -1. */
static int commit_or_recreate(wd_collector_t *c, wd_consumer_t *cons, const char *prefix, const wd_tp_offset_t *t,
                              int *recreated, wd_error_t **stop) {
  *stop = NULL;
  wd_error_t *err = NULL;
  for (int i = 0; i < 4 && !err; i++) {
    char v[48];
    int len = snprintf(v, sizeof(v), "%s%d", prefix, i);
    err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, v, (size_t)len);
    if (!err) usleep(50000); /* AddPartitionsToTxn is answered meanwhile */
  }
  wd_group_meta_t *gm = NULL;
  double deadline = wd_mono_s() + 40;
  if (!err) cr_assert_null(wd_consumer_group_metadata(cons, &gm));
  for (int step = 0; !err && step < 2;) { /* 0: send_offsets, 1: commit */
    err = step == 0 ? wd_collector_send_offsets(c, t, 1, gm, 5000) : wd_collector_commit(c, 5000);
    if (!err) {
      step++;
      continue;
    }
    if (wd_collector_classify(err) != WD_COLLECT_RETRY) break;
    wd_error_destroy(err);
    err = NULL;
    cr_assert_lt(wd_mono_s(), deadline, "retried for 40 s");
    wd_consumer_serve(cons, 100);
  }
  wd_group_meta_destroy(gm);
  wd_collect_class_t k = wd_collector_classify(err);
  if (k == WD_COLLECT_OK) return 1;
  if (k == WD_COLLECT_RECREATE) {
    uint64_t gen = wd_collector_generation(c);
    const wd_producer_range_t *pr = NULL;
    size_t npr = wd_collector_ranges(c, &pr);
    wd_producer_range_t before[8];
    cr_assert_leq(npr, 8);
    memcpy(before, pr, npr * sizeof(*pr));
    char names[8][64];
    for (size_t i = 0; i < npr; i++) snprintf(names[i], sizeof(names[i]), "%s", pr[i].topic);
    wd_error_t *rerr = wd_collector_recreate(c, err);
    wd_error_destroy(err);
    if (rerr) {
      *stop = rerr;
      return -1;
    }
    cr_assert_eq(wd_collector_generation(c), gen + 1);
    cr_assert_not(wd_collector_txn_open(c), "the transaction of the fatal producer is still open");
    /* the output ranges acknowledged so far are kept (the commit history's, if the commit committed) */
    cr_assert_eq(wd_collector_ranges(c, &pr), npr);
    for (size_t i = 0; i < npr; i++) {
      cr_assert_str_eq(pr[i].topic, names[i]);
      cr_assert_eq(pr[i].partition, before[i].partition);
      cr_assert_eq(pr[i].first, before[i].first);
      cr_assert_eq(pr[i].end, before[i].end);
    }
    wd_collector_ranges_reset(c); /* as the pipeline after the commit's history */
    (*recreated)++;
    return 0;
  }
  *stop = err;
  return -1;
}

Test(collector, a_fatal_producer_error_recreates_the_producer_and_the_commit_is_redone, .timeout = 120) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-fatal", NULL, NULL);
  wd_consumer_t *cons = group_consumer(&m, "g-fatal", "in", NULL);
  struct {
    const char *what;
    int api;
  } faults[] = {
      /* librdkafka 2.0.2 rdkafka_txnmgr.c: INVALID_TXN_STATE on these is ERR_ACTION_FATAL (the producer's
       * fatal error), not normalised to _FENCED as PRODUCER_FENCED and INVALID_PRODUCER_EPOCH are */
      {"EndTxn INVALID_TXN_STATE (the commit hit: outcome resolved by the coordinator)", API_END_TXN},
      {"AddPartitionsToTxn INVALID_TXN_STATE (before the commit)", API_ADD_PARTITIONS_TO_TXN},
      {"AddOffsetsToTxn INVALID_TXN_STATE (before the commit)", API_ADD_OFFSETS_TO_TXN},
  };
  int recreated = 0;
  size_t nf = sizeof(faults) / sizeof(*faults);
  for (size_t i = 0; i < WD_RECREATE_MAX; i++) { /* each fault, in turn, up to the bound */
    size_t f = i % nf;
    wd_tp_offset_t t = {"in", 0, (int64_t)(i + 1) * 10};
    rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, faults[f].api, 1, RD_KAFKA_RESP_ERR_INVALID_TXN_STATE, 0);
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "f%zu-a0-", i);
    wd_error_t *stop = NULL;
    int r = commit_or_recreate(c, cons, prefix, &t, &recreated, &stop);
    cr_assert_eq(r, 0, "%s: %s (class %d) instead of a re-created producer", faults[f].what,
                 stop ? stop->message : "committed", wd_collector_classify(stop));
    cr_assert_eq(recreated, (int)i + 1);
    size_t left = 99;
    cr_assert_eq(rd_kafka_mock_broker_error_stack_cnt(m.mc, 1, faults[f].api, &left), 0);
    cr_assert_eq(left, 0, "%s: the injected error was never answered", faults[f].what);
    /* the redone commit, with the new producer */
    snprintf(prefix, sizeof(prefix), "f%zu-a1-", i);
    r = commit_or_recreate(c, cons, prefix, &t, &recreated, &stop);
    cr_assert_eq(r, 1, "%s: the redone commit did not commit: %s", faults[f].what, stop ? stop->message : "");
    cr_assert_not(wd_collector_txn_open(c));
    int found = 0;
    read_all(&m, "out", prefix, &found);
    cr_assert_eq(found, 4, "%s: %d of the redone commit's 4 records in the log", faults[f].what, found);
  }
  /* the bound: one more fatal error within WD_RECREATE_WINDOW_S stops, with the cause in the message */
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, API_END_TXN, 1, RD_KAFKA_RESP_ERR_INVALID_TXN_STATE, 0);
  wd_tp_offset_t t = {"in", 0, 1000};
  wd_error_t *stop = NULL;
  uint64_t gen = wd_collector_generation(c);
  cr_assert_eq(commit_or_recreate(c, cons, "bound-", &t, &recreated, &stop), -1, "re-creation %d within %d s",
               WD_RECREATE_MAX + 1, WD_RECREATE_WINDOW_S);
  cr_assert_not_null(stop);
  cr_assert_str_eq(stop->id, "E_PRODUCER_FATAL", "%s", stop->message);
  cr_assert_eq(wd_collector_classify(stop), WD_COLLECT_FATAL);
  cr_assert_not_null(strstr(stop->message, "INVALID_TXN_STATE"), "the cause is not in: %s", stop->message);
  cr_assert_eq(wd_collector_generation(c), gen, "the producer was re-created past the bound");
  wd_error_destroy(stop);
  wd_consumer_destroy(cons);
  wd_collector_destroy(c);
  mock_done(&m);
}

Test(collector, a_fenced_producer_is_never_recreated, .timeout = 60) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-fenced", NULL, NULL);
  wd_consumer_t *cons = group_consumer(&m, "g-fenced", "in", NULL);
  rd_kafka_mock_broker_push_request_error_rtts(m.mc, 1, API_END_TXN, 1, RD_KAFKA_RESP_ERR_PRODUCER_FENCED, 0);
  wd_tp_offset_t t = {"in", 0, 10};
  wd_error_t *stop = NULL;
  int recreated = 0;
  cr_assert_eq(commit_or_recreate(c, cons, "fenced-", &t, &recreated, &stop), -1, "a fenced producer was %s",
               recreated ? "re-created" : "committed");
  cr_assert_not_null(stop);
  cr_assert(stop->fenced, "not fenced: %s", stop->message);
  cr_assert_eq(wd_collector_classify(stop), WD_COLLECT_FATAL, "%s", stop->message);
  /* asked anyway, the collector refuses: a zombie never goes on */
  uint64_t gen = wd_collector_generation(c);
  wd_error_t *rerr = wd_collector_recreate(c, stop);
  cr_assert_not_null(rerr);
  cr_assert(rerr->fenced);
  cr_assert_eq(wd_collector_classify(rerr), WD_COLLECT_FATAL);
  cr_assert_eq(wd_collector_generation(c), gen);
  wd_error_destroy(rerr);
  wd_error_destroy(stop);
  wd_consumer_destroy(cons);
  wd_collector_destroy(c);
  mock_done(&m);
}

/* The fault hook's injection (WIDEN_FAULT=fatal-<point>): the collector's next call reports it as a
 * fatal error that is not fencing, and the re-created producer commits. */
Test(collector, an_injected_fatal_error_is_reported_and_recreated, .timeout = 60) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, "wd-coll-inject", NULL, NULL);
  send_batch(c, "out", "inj-a0-", 2);
  wd_collector_inject_fatal(c, RD_KAFKA_RESP_ERR_INVALID_TXN_STATE);
  wd_error_t *err = wd_collector_commit(c, 5000);
  cr_assert_not_null(err, "the commit of a fatal producer succeeded");
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_RECREATE, "%s", err->message);
  cr_assert_not(err->fenced);
  wd_error_t *e2 = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "x", 1);
  cr_assert_eq(wd_collector_classify(e2), WD_COLLECT_RECREATE, "%s", e2 ? e2->message : "sent");
  wd_error_destroy(e2);
  cr_assert_null(wd_collector_recreate(c, err));
  wd_error_destroy(err);
  send_batch(c, "out", "inj-a1-", 3);
  err = wd_collector_commit(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  int found = 0;
  read_all(&m, "out", "inj-a1-", &found);
  cr_assert_eq(found, 3);
  /* a fencing code injected: never re-created */
  wd_collector_inject_fatal(c, RD_KAFKA_RESP_ERR_PRODUCER_FENCED);
  err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "x", 1);
  cr_assert_not_null(err);
  cr_assert(err->fenced, "%s", err->message);
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_FATAL);
  wd_error_destroy(err);
  wd_collector_destroy(c);
  mock_done(&m);
}

/* At-least-once (an idempotent producer, no transactional.id) re-creates too: the new producer needs
 * no init_transactions, and what is sent after it is acknowledged. */
Test(collector, an_idempotent_producer_is_recreated_without_transactions, .timeout = 60) {
  mock_t m;
  mock_new(&m, 1);
  wd_collector_t *c = collector(&m, NULL, NULL, NULL);
  cr_assert_not(wd_collector_transactional(c));
  wd_collector_inject_fatal(c, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
  wd_error_t *err = wd_collector_send(c, WD_OUT_CHANGELOG, "out", -1, "k", 1, "x", 1);
  cr_assert_eq(wd_collector_classify(err), WD_COLLECT_RECREATE, "%s", err ? err->message : "sent");
  wd_error_t *rerr = wd_collector_recreate(c, err);
  cr_assert_null(rerr, "%s", rerr ? rerr->message : "");
  wd_error_destroy(err);
  send_batch(c, "out", "alo-", 3);
  err = wd_collector_wait_acked(c, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");
  int found = 0;
  read_all(&m, "out", "alo-", &found);
  cr_assert_eq(found, 3);
  wd_collector_destroy(c);
  mock_done(&m);
}
