/*
 * tests/unit/test_repart_forward.c — forwarding a repartitioned source's change records
 * (app/runtime/repartition.h wd_repart_forward) through the record collector on librdkafka's mock
 * cluster: one repartition record per wide key, in the order of each key's first change record,
 * at partition murmur2(key) mod N, carrying that key's change records in order and the origin.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/runtime/collector.h"
#include "app/runtime/repartition.h"
#include "sink/producer.h"

#define NPART 4

static wd_schema_t *schema2(void) {
  const char *names[] = {"order_id", "amount"}, *types[] = {"BIGINT NOT NULL", "BIGINT"}, *pk[] = {"order_id"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &s));
  return s;
}

static wd_row_t *row(const wd_schema_t *s, wd_row_kind_t kind, int64_t id, int64_t amount) {
  wd_row_t *r = wd_row_new(s);
  r->kind = kind;
  r->v[0] = (wd_value_t){.is_null = false, .i = id};
  r->v[1] = (wd_value_t){.is_null = false, .i = amount};
  return r;
}

typedef struct {
  int32_t partition;
  wd_repartition_rec_t rec;
  uint8_t key[64];
  size_t klen;
} got_t;

/* Every record of topic (all NPART partitions) in produce order per partition. */
static size_t read_all(rd_kafka_mock_cluster_t *mc, const char *topic, const wd_schema_t *s, got_t *got, size_t max) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", "reader", errstr, sizeof(errstr));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk, "%s", errstr);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NPART);
  for (int p = 0; p < NPART; p++) rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  cr_assert_eq(rd_kafka_assign(rk, l), 0);
  rd_kafka_topic_partition_list_destroy(l);
  size_t n = 0;
  int eofs = 0;
  for (int i = 0; i < 200 && eofs < NPART; i++) {
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 100);
    if (!msg) continue;
    if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) eofs++;
    else if (!msg->err && n < max) {
      got[n].partition = msg->partition;
      cr_assert_leq(msg->key_len, sizeof(got[n].key));
      memcpy(got[n].key, msg->key, msg->key_len);
      got[n].klen = msg->key_len;
      wd_error_t *err = wd_repartition_decode(s, msg->payload, msg->len, &got[n].rec);
      cr_assert_null(err, "%s", err ? err->message : "");
      n++;
    }
    rd_kafka_message_destroy(msg);
  }
  cr_expect_eq(eofs, NPART);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return n;
}

Test(repart_forward, one_record_per_key_at_its_partition) {
  char errstr[256];
  rd_kafka_conf_t *mconf = rd_kafka_conf_new();
  rd_kafka_conf_set(mconf, "log_level", "0", errstr, sizeof(errstr));
  rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, errstr, sizeof(errstr));
  cr_assert_not_null(mrk, "%s", errstr);
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(mrk, 1);
  cr_assert_not_null(mc);
  const char *topic = "g-wide-payments-repartition";
  cr_assert_eq(rd_kafka_mock_topic_create(mc, topic, NPART, 1), 0);

  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(mc)));
  cr_assert_null(wd_kafka_conf_set(&kc, "log_level", "0"));
  wd_collector_t *coll = NULL;
  wd_error_t *err = wd_collector_new(&kc, &coll);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc);

  static const char *const T[] = {"payments"};
  int c4 = NPART;
  wd_repartition_input_t in[] = {{"payments", WD_CONFIG_REPARTITION_TRUE, false, 1, T, &c4}};
  wd_repart_t *rp = wd_repart_new(1);
  cr_assert_null(wd_repart_plan(rp, in, 0, true, "g", "wide", NULL));
  cr_assert_str_eq(wd_repart_topic(rp, 0), topic);

  /* one source record whose change records have keys 7, 9, 7, 11, 9: three repartition records,
   * 7 first (its -U and +U), then 9, then 11 */
  wd_schema_t *s = schema2();
  wd_row_t *rows[] = {row(s, WD_UPDATE_BEFORE, 7, 1), row(s, WD_INSERT, 9, 2), row(s, WD_UPDATE_AFTER, 7, 3),
                      row(s, WD_INSERT, 11, 4), row(s, WD_DELETE, 9, 5)};
  wd_kafka_meta_t origin = {"payments", 1, 42, 1700000000000, NULL, 0};
  uint64_t sent = 0;
  err = wd_repart_forward(rp, 0, s, "payments", &origin, rows, 5, coll, &sent);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_eq(sent, 3);
  /* a second record: the scratch is reused (one key) */
  wd_row_t *more[] = {row(s, WD_INSERT, 13, 6)};
  err = wd_repart_forward(rp, 0, s, "payments", &origin, more, 1, coll, &sent);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_eq(sent, 4);
  err = wd_collector_wait_acked(coll, 10000);
  cr_assert_null(err, "%s", err ? err->message : "");

  got_t got[8];
  size_t n = read_all(mc, topic, s, got, 8);
  cr_assert_eq(n, 4);
  int64_t want_first[] = {7, 9, 11, 13};
  size_t want_n[] = {2, 2, 1, 1};
  for (int k = 0; k < 4; k++) {
    size_t i = 0; /* the record of key want_first[k] (the order is per partition only) */
    while (i < n && got[i].rec.rows[0]->v[0].i != want_first[k]) i++;
    cr_assert_lt(i, n, "no record of key %lld", (long long)want_first[k]);
    cr_expect_eq(got[i].rec.n, want_n[k], "key %lld", (long long)want_first[k]);
    for (size_t r = 0; r < got[i].rec.n; r++) cr_expect_eq(got[i].rec.rows[r]->v[0].i, want_first[k]);
    cr_expect_eq(got[i].partition, wd_producer_partition_of(got[i].key, got[i].klen, NPART), "murmur2 mod N");
    cr_expect_str_eq(got[i].rec.source, "payments");
    cr_expect_str_eq(got[i].rec.topic, "payments");
    cr_expect_eq(got[i].rec.offset, 42);
  }
  /* the order within a key's record is the source record's: 7's -U then +U, 9's +I then -D */
  for (size_t i = 0; i < n; i++) {
    if (got[i].rec.rows[0]->v[0].i == 7) {
      cr_expect_eq(got[i].rec.rows[0]->kind, WD_UPDATE_BEFORE);
      cr_expect_eq(got[i].rec.rows[1]->kind, WD_UPDATE_AFTER);
      cr_expect_eq(got[i].rec.rows[1]->v[1].i, 3);
    }
    if (got[i].rec.rows[0]->v[0].i == 9) {
      cr_expect_eq(got[i].rec.rows[0]->kind, WD_INSERT);
      cr_expect_eq(got[i].rec.rows[1]->kind, WD_DELETE);
    }
  }
  /* records of one partition keep the order of the keys' first change records */
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (got[i].partition == got[j].partition) {
        int ki = 0, kj = 0;
        for (int k = 0; k < 4; k++) {
          if (want_first[k] == got[i].rec.rows[0]->v[0].i) ki = k;
          if (want_first[k] == got[j].rec.rows[0]->v[0].i) kj = k;
        }
        cr_expect_lt(ki, kj, "keys %lld before %lld in partition %d", (long long)want_first[ki],
                     (long long)want_first[kj], got[i].partition);
      }
  for (size_t i = 0; i < n; i++) wd_repartition_rec_free(s, &got[i].rec);
  for (int i = 0; i < 5; i++) wd_row_destroy(s, rows[i]);
  wd_row_destroy(s, more[0]);
  wd_schema_destroy(s);
  wd_repart_destroy(rp);
  wd_collector_destroy(coll);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(mrk);
}
