/*
 * tests/unit/test_repartition.c — app/runtime/repartition.h: the plan (which sources go through a
 * repartition topic, the table's partition count), the repartition record round trip, the keying
 * check, and the partitioner against Kafka's Java client.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/runtime/repartition.h"
#include "sink/producer.h"

static const char *const T1[] = {"orders"};
static const char *const T2[] = {"payments"};
static const char *const T3[] = {"shipments"};

/* One source that needs a repartition topic puts every main source through one: a repartition
 * topic is partitioned by murmur2 of widen's key bytes, a source topic by its producer's key
 * bytes, so partition i of both would not hold the same keys. */
Test(repartition_plan, auto_repartitions_the_source_whose_count_differs) {
  int c6 = 6, c3 = 3;
  wd_repartition_input_t in[] = {{"orders", WD_CONFIG_REPARTITION_AUTO, false, 1, T1, &c6},
                                 {"payments", WD_CONFIG_REPARTITION_AUTO, false, 1, T2, &c3},
                                 {"shipments", WD_CONFIG_REPARTITION_TRUE, false, 1, T3, &c6}};
  bool on[3];
  int32_t n = 0;
  char *why = NULL;
  wd_error_t *err = wd_repartition_plan(in, 3, 0, &n, on, &why);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(n, 6);
  cr_assert(on[1], "payments has 3 partitions, the table 6");
  cr_assert(on[2], "repartition: true");
  cr_assert(on[0], "orders goes along: the others' repartition topics are not partitioned like its topic");
  cr_assert(strstr(why, "source 'payments': topic payments has 3 partitions, the table 6"), "%s", why);
  cr_assert(strstr(why, "source 'orders': through its repartition topic too"), "%s", why);
  free(why);
  /* every source co-partitioned: read directly */
  in[1].counts = &c6;
  in[2].mode = WD_CONFIG_REPARTITION_AUTO;
  cr_assert_null(wd_repartition_plan(in, 3, 0, &n, on, &why));
  cr_assert(!on[0] && !on[1] && !on[2]);
  cr_assert(strstr(why, "source 'payments': co-partitioned (6 partitions"), "%s", why);
  free(why);
}

Test(repartition_plan, configured_count_and_forced_sources) {
  int c4 = 4, c8 = 8;
  wd_repartition_input_t in[] = {{"orders", WD_CONFIG_REPARTITION_TRUE, false, 1, T1, &c4},
                                 {"payments", WD_CONFIG_REPARTITION_TRUE, false, 1, T2, &c8}};
  bool on[2];
  int32_t n = 0;
  /* every source forced: the largest of theirs */
  cr_assert_null(wd_repartition_plan(in, 2, 0, &n, on, NULL));
  cr_assert_eq(n, 8);
  cr_assert(on[0] && on[1]);
  /* pipeline.partitions wins */
  in[0].mode = WD_CONFIG_REPARTITION_AUTO;
  cr_assert_null(wd_repartition_plan(in, 2, 4, &n, on, NULL));
  cr_assert_eq(n, 4);
  cr_assert(on[1]);
  cr_assert(on[0], "orders has the configured 4 partitions but goes along with payments");
  /* a lookup is never repartitioned and does not set the count */
  in[1].lookup = true;
  in[1].mode = WD_CONFIG_REPARTITION_AUTO;
  cr_assert_null(wd_repartition_plan(in, 2, 0, &n, on, NULL));
  cr_assert_eq(n, 4);
  cr_assert(!on[0] && !on[1]);
}

Test(repartition_plan, refuses_false_with_another_count_and_missing_topics) {
  int c6 = 6, c3 = 3, c0 = 0;
  wd_repartition_input_t in[] = {{"orders", WD_CONFIG_REPARTITION_AUTO, false, 1, T1, &c6},
                                 {"payments", WD_CONFIG_REPARTITION_FALSE, false, 1, T2, &c3}};
  bool on[2];
  int32_t n = 0;
  wd_error_t *err = wd_repartition_plan(in, 2, 0, &n, on, NULL);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_TASKS_NOT_COPARTITIONED");
  cr_assert(strstr(err->message, "topic payments has 3 partitions but the table has 6"), "%s", err->message);
  cr_assert(strstr(err->message, "repartition: auto"), "%s", err->message);
  wd_error_destroy(err);
  /* false beside a repartitioned source: refused, saying why */
  in[1].counts = &c6;
  in[0].mode = WD_CONFIG_REPARTITION_TRUE;
  err = wd_repartition_plan(in, 2, 0, &n, on, NULL);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_TASKS_NOT_COPARTITIONED");
  cr_assert(strstr(err->message, "source 'payments' says `repartition: false`, but another source"), "%s",
            err->message);
  wd_error_destroy(err);
  in[0].mode = WD_CONFIG_REPARTITION_AUTO;
  in[1].counts = &c0;
  err = wd_repartition_plan(in, 2, 0, &n, on, NULL);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_SOURCE_TOPIC_MISSING");
  cr_assert(strstr(err->message, "payments"), "%s", err->message);
  wd_error_destroy(err);
}

static wd_schema_t *schema3(void) {
  const char *names[] = {"order_id", "amount", "note"};
  const char *types[] = {"BIGINT NOT NULL", "BIGINT", "STRING"};
  const char *pk[] = {"order_id"};
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(3, names, types, 1, pk, &s);
  cr_assert_null(err);
  return s;
}

Test(repartition_record, round_trip_keeps_kinds_nulls_absent_and_origin) {
  wd_schema_t *s = schema3();
  wd_row_t *a = wd_row_new(s), *b = wd_row_new(s);
  a->kind = WD_UPDATE_BEFORE;
  a->v[0] = (wd_value_t){.is_null = false, .i = 17};
  cr_assert_eq(wd_row_set_absent(a, 2), 0); /* a before image without `note` */
  b->kind = WD_UPDATE_AFTER;
  b->v[0] = (wd_value_t){.is_null = false, .i = 17};
  b->v[1] = (wd_value_t){.is_null = false, .i = -250};
  b->v[2].is_null = false;
  b->v[2].s.p = strdup("late");
  b->v[2].s.n = 4;
  wd_row_t *rows[] = {a, b};
  wd_kafka_meta_t origin = {"payments", 2, 1234567, 1700000000123, NULL, 0};
  wd_buf_t out = {0}, scratch = {0};
  cr_assert_eq(wd_repartition_encode(s, "payments", &origin, rows, 2, &scratch, &out), 0);
  wd_buf_free(&scratch);
  wd_repartition_rec_t rec;
  wd_error_t *err = wd_repartition_decode(s, out.data, out.len, &rec);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_str_eq(rec.source, "payments");
  cr_assert_str_eq(rec.topic, "payments");
  cr_assert_eq(rec.partition, 2);
  cr_assert_eq(rec.offset, 1234567);
  cr_assert_eq(rec.timestamp, 1700000000123);
  cr_assert_eq(rec.n, 2);
  cr_assert_eq(rec.rows[0]->kind, WD_UPDATE_BEFORE);
  cr_assert_eq(rec.rows[1]->kind, WD_UPDATE_AFTER);
  cr_assert(wd_row_eq(s, rec.rows[0], a, NULL));
  cr_assert(wd_row_eq(s, rec.rows[1], b, NULL));
  cr_assert(rec.rows[0]->absent && rec.rows[0]->absent[2] && !rec.rows[0]->absent[1]);
  cr_assert_null(rec.rows[1]->absent);
  wd_repartition_rec_free(s, &rec);
  /* every truncation is refused, never read past the end */
  for (size_t cut = 0; cut < out.len; cut++) {
    err = wd_repartition_decode(s, out.data, cut, &rec);
    cr_assert_not_null(err, "cut at %zu", cut);
    cr_assert_str_eq(err->id, "E_REPARTITION_RECORD");
    cr_assert_eq(rec.n, 0);
    wd_error_destroy(err);
  }
  out.data[0] = 'X';
  err = wd_repartition_decode(s, out.data, out.len, &rec);
  cr_assert_not_null(err);
  wd_error_destroy(err);
  wd_buf_free(&out);
  wd_row_destroy(s, a);
  wd_row_destroy(s, b);
  wd_schema_destroy(s);
}

static wd_source_t *payments_source(const wd_schema_t *s, const char *pk_spec) {
  wd_source_t *src = NULL;
  cr_assert_null(wd_source_new("payments", 0, &src));
  cr_assert_null(wd_source_add_topic(src, "payments"));
  cr_assert_null(wd_source_add_column(src, s, "order_id", pk_spec));
  cr_assert_null(wd_source_add_column(src, s, "amount", NULL));
  return src;
}

Test(repartition_keying, a_key_of_other_fields_is_named) {
  wd_schema_t *s = schema3();
  wd_source_t *src = payments_source(s, "order_id");
  const char *dbz = "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"payment_id\":5}}";
  char *why = wd_repartition_key_mismatch(src, s, dbz, strlen(dbz));
  cr_assert_not_null(why);
  cr_assert(strstr(why, "payment_id") && strstr(why, "order_id"), "%s", why);
  free(why);
  const char *plain = "{\"payment_id\":5,\"region\":\"eu\"}";
  why = wd_repartition_key_mismatch(src, s, plain, strlen(plain));
  cr_assert_not_null(why);
  cr_assert(strstr(why, "payment_id, region"), "%s", why);
  free(why);
  /* the wide key's field in the key, keys that are not JSON objects, and $key mappings pass */
  const char *good = "{\"order_id\":5}";
  cr_assert_null(wd_repartition_key_mismatch(src, s, good, strlen(good)));
  cr_assert_null(wd_repartition_key_mismatch(src, s, "17", 2));
  cr_assert_null(wd_repartition_key_mismatch(src, s, "\x00\x00\x01", 3));
  cr_assert_null(wd_repartition_key_mismatch(src, s, NULL, 0));
  wd_source_destroy(src);
  src = payments_source(s, "$key.payment_id");
  cr_assert_null(wd_repartition_key_mismatch(src, s, plain, strlen(plain)));
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* The partitions Kafka's Java client (Utils.toPositive(Utils.murmur2(key)) % n, kafka-clients
 * 3.9.1) gives these UTF-8 keys, computed once with it. */
Test(repartition_partitioner, agrees_with_the_java_client) {
  struct {
    const char *key;
    int32_t p6, p7;
  } v[] = {{"", 3, 2}, {"a", 4, 5}, {"order-17", 3, 6}, {"widen", 1, 3}};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    cr_assert_eq(wd_producer_partition_of(v[i].key, strlen(v[i].key), 6), v[i].p6, "%s", v[i].key);
    cr_assert_eq(wd_producer_partition_of(v[i].key, strlen(v[i].key), 7), v[i].p7, "%s", v[i].key);
  }
}

/* ---- the pipeline's repartition state (wd_repart_t) ---- */

/* Without a plan (a single task) nothing is repartitioned; a live run's plan names the topics of
 * the repartitioned sources only; a replay's forwards nothing and names none. */
Test(repart, plan_topics_and_lists) {
  wd_repart_t *rp = wd_repart_new(3);
  cr_assert_not_null(rp);
  cr_expect_eq(wd_repart_partitions(rp), 0);
  cr_expect_not(wd_repart_forwarding(rp));
  cr_expect_not(wd_repart_on(rp, 0));
  cr_expect_null(wd_repart_topic(rp, 0));
  cr_expect_not(wd_repart_on(NULL, 0));
  cr_expect_null(wd_repart_topic(NULL, 0));
  int c6 = 6, c3 = 3;
  wd_repartition_input_t in[] = {{"orders", WD_CONFIG_REPARTITION_AUTO, false, 1, T1, &c6},
                                 {"payments", WD_CONFIG_REPARTITION_AUTO, false, 1, T2, &c3},
                                 {"shipments", WD_CONFIG_REPARTITION_FALSE, true, 1, T3, &c3}};
  char *why = NULL;
  wd_error_t *err = wd_repart_plan(rp, in, 0, true, "g", "wide", &why);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_not_null(why);
  free(why);
  cr_expect_eq(wd_repart_partitions(rp), 6);
  cr_expect(wd_repart_forwarding(rp));
  cr_expect(wd_repart_on(rp, 0), "goes along with payments");
  cr_expect(wd_repart_on(rp, 1));
  cr_expect_not(wd_repart_on(rp, 2), "a lookup source is never repartitioned");
  cr_expect_not(wd_repart_on(rp, 3), "out of range");
  cr_expect_str_eq(wd_repart_topic(rp, 0), "g-wide-orders-repartition");
  cr_expect_str_eq(wd_repart_topic(rp, 1), "g-wide-payments-repartition");
  cr_expect_null(wd_repart_topic(rp, 2));
  cr_expect_null(wd_repart_topic(rp, 7));
  /* the lists keep the order given, NULL-terminated */
  cr_assert_eq(wd_repart_add_topic(rp, "orders", false), 0);
  cr_assert_eq(wd_repart_add_topic(rp, "payments", true), 0);
  cr_assert_eq(wd_repart_add_topic(rp, wd_repart_topic(rp, 1), false), 0);
  size_t n = 99, ns = 99;
  const char *const *tt = wd_repart_task_topics(rp, &n);
  const char *const *st = wd_repart_stateless_topics(rp, &ns);
  cr_assert_eq(n, 2);
  cr_expect_str_eq(tt[0], "orders");
  cr_expect_str_eq(tt[1], "g-wide-payments-repartition");
  cr_expect_null(tt[2]);
  cr_assert_eq(ns, 1);
  cr_expect_str_eq(st[0], "payments");
  cr_expect_null(st[1]);
  for (int i = 0; i < 40; i++) cr_assert_eq(wd_repart_add_topic(rp, "x", false), 0); /* grows */
  tt = wd_repart_task_topics(rp, &n);
  cr_expect_eq(n, 42);
  cr_expect_str_eq(tt[41], "x");
  cr_expect_null(tt[42]);
  wd_repart_destroy(rp);

  /* a replay: the same plan, nothing forwarded, no topic named */
  rp = wd_repart_new(3);
  cr_assert_null(wd_repart_plan(rp, in, 0, false, "g", "wide", NULL));
  cr_expect(wd_repart_on(rp, 1));
  cr_expect_not(wd_repart_forwarding(rp));
  cr_expect_null(wd_repart_topic(rp, 1));
  wd_repart_destroy(rp);

  /* a refused plan is the plan's error */
  rp = wd_repart_new(3);
  in[0].mode = WD_CONFIG_REPARTITION_FALSE;
  err = wd_repart_plan(rp, in, 0, true, "g", "wide", NULL);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_TASKS_NOT_COPARTITIONED");
  wd_error_destroy(err);
  wd_repart_destroy(rp);
  wd_repart_destroy(NULL);
}

/* A source forced to be read directly (`repartition: false`) has its Kafka key's fields checked
 * once, at its first record, and only while forwarding (a live run with a plan); under `auto` the
 * run-time check of each record's partition decides (repart.home_*). */
Test(repart, check_key_once_per_source) {
  wd_schema_t *s = schema3();
  wd_source_t *src = payments_source(s, "order_id");
  const char *bad = "{\"payment_id\":5}", *good = "{\"order_id\":5}";
  wd_kafka_meta_t bad_m = {"payments", 2, 41, -1, bad, strlen(bad)};
  wd_kafka_meta_t good_m = {"payments", 2, 40, -1, good, strlen(good)};
  wd_repart_t *rp = wd_repart_new(1);
  cr_assert_null(wd_repart_check_key(rp, 0, src, s, &bad_m), "no plan: not checked");
  int c3 = 3;
  wd_repartition_input_t in[] = {{"payments", WD_CONFIG_REPARTITION_FALSE, false, 1, T2, &c3}};
  cr_assert_null(wd_repart_plan(rp, in, 0, true, "g", "wide", NULL));
  wd_error_t *err = wd_repart_check_key(rp, 0, src, s, &bad_m);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_SOURCE_KEYING");
  cr_expect(strstr(err->message, "source 'payments' (payments[2]@41)") && strstr(err->message, "payment_id") &&
                strstr(err->message, "repartition: true"),
            "%s", err->message);
  wd_error_destroy(err);
  cr_expect_null(wd_repart_check_key(rp, 0, src, s, &bad_m), "checked once");
  cr_expect_null(wd_repart_check_key(rp, 5, src, s, &bad_m), "out of range");
  wd_repart_destroy(rp);
  /* a good key passes; a later bad one is not looked at */
  rp = wd_repart_new(1);
  cr_assert_null(wd_repart_plan(rp, in, 0, true, "g", "wide", NULL));
  cr_expect_null(wd_repart_check_key(rp, 0, src, s, &good_m));
  cr_expect_null(wd_repart_check_key(rp, 0, src, s, &bad_m));
  wd_repart_destroy(rp);
  /* a replay does not check */
  rp = wd_repart_new(1);
  cr_assert_null(wd_repart_plan(rp, in, 0, false, "g", "wide", NULL));
  cr_expect_null(wd_repart_check_key(rp, 0, src, s, &bad_m));
  wd_repart_destroy(rp);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* The partition a co-partitioned record must be in: murmur2 (Kafka's Java client, the value of
 * org.apache.kafka.common.utils.Utils.murmur2 for these bytes is 301823749) of the JSON key widen
 * writes itself, {"order_id":5}, modulo the partition count. */
Test(repart, direct_partition_is_murmur2_of_widens_json_key) {
  wd_schema_t *s = schema3();
  wd_row_t *r = wd_row_new(s);
  r->kind = WD_INSERT;
  r->v[0] = (wd_value_t){.is_null = false, .i = 5};
  wd_buf_t b = {0};
  cr_assert_eq(wd_repartition_direct_partition(s, r, 7, &b), 301823749 % 7);
  cr_assert_eq(b.len, strlen("{\"order_id\":5}"));
  cr_assert(!memcmp(b.data, "{\"order_id\":5}", b.len));
  cr_assert_eq(wd_repartition_direct_partition(s, r, 12, &b), 301823749 % 12);
  /* Kafka Connect's JsonConverter key of the same order, with its schema, lands elsewhere */
  const char *env = "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,"
                    "\"field\":\"order_id\"}],\"optional\":false,\"name\":\"srv.shop.orders.Key\"},"
                    "\"payload\":{\"order_id\":5}}";
  cr_assert_neq(wd_producer_partition_of(env, strlen(env), 7), 301823749 % 7);
  wd_buf_free(&b);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

/* `auto` read directly falls back to the source's repartition topic for a record outside its
 * key's partition (the topic is named and made at start); `false` stops with C_SOURCE_KEYING
 * naming the record, its key and the fix; a repartitioned source's home is where its repartition
 * topic puts the key (murmur2 of wd_row_key_encode). */
Test(repart, home_fallback_and_misplaced_error) {
  wd_schema_t *s = schema3();
  wd_source_t *src = payments_source(s, "order_id");
  wd_row_t *r = wd_row_new(s);
  r->kind = WD_INSERT;
  r->v[0] = (wd_value_t){.is_null = false, .i = 5};
  int c7 = 7;
  wd_repartition_input_t in[] = {{"orders", WD_CONFIG_REPARTITION_AUTO, false, 1, T1, &c7},
                                 {"payments", WD_CONFIG_REPARTITION_FALSE, false, 1, T2, &c7},
                                 {"shipments", WD_CONFIG_REPARTITION_AUTO, true, 1, T3, &c7}};
  wd_repart_t *rp = wd_repart_new(3);
  wd_error_t *err = wd_repart_plan(rp, in, 0, true, "g", "wide", NULL);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert(wd_repart_fallback(rp, 0) && !wd_repart_on(rp, 0));
  cr_assert_str_eq(wd_repart_topic(rp, 0), "g-wide-orders-repartition");
  cr_assert(!wd_repart_fallback(rp, 1) && !wd_repart_topic(rp, 1), "false: no repartition topic");
  cr_assert(!wd_repart_fallback(rp, 2) && !wd_repart_topic(rp, 2), "a lookup source is never repartitioned");
  cr_assert_eq(wd_repart_home(rp, 1, s, r), 301823749 % 7);
  size_t kl = 0;
  const char *kb = wd_repart_canonical_key(rp, &kl);
  cr_assert(kl == 14 && !memcmp(kb, "{\"order_id\":5}", kl));
  const char *key = "{\"schema\":{\"name\":\"srv.shop.payments.Key\"},\"payload\":{\"order_id\":5}}";
  wd_kafka_meta_t m = {"payments", 1, 77, -1, key, strlen(key)};
  err = wd_repart_misplaced_error(rp, src, &m, 301823749 % 7);
  cr_assert_str_eq(err->id, "C_SOURCE_KEYING");
  cr_expect(strstr(err->message, "source 'payments' (payments[1]@77)") && strstr(err->message, "partition 3 of 7") &&
                strstr(err->message, "{\"order_id\":5}") && strstr(err->message, "srv.shop.payments.Key") &&
                strstr(err->message, "repartition: auto"),
            "%s", err->message);
  wd_error_destroy(err);
  wd_repart_destroy(rp);
  /* a replay forwards nothing: no fallback */
  rp = wd_repart_new(3);
  cr_assert_null(wd_repart_plan(rp, in, 0, false, "g", "wide", NULL));
  cr_assert(!wd_repart_fallback(rp, 0) && !wd_repart_topic(rp, 0));
  wd_repart_destroy(rp);
  /* a repartitioned source: murmur2 of widen's stored key bytes */
  in[0].mode = WD_CONFIG_REPARTITION_TRUE; /* and payments goes along (auto) */
  in[1].mode = WD_CONFIG_REPARTITION_AUTO;
  rp = wd_repart_new(3);
  cr_assert_null(wd_repart_plan(rp, in, 0, true, "g", "wide", NULL));
  wd_buf_t kb2 = {0};
  cr_assert_eq(wd_row_key_encode(s, r, &kb2), 0);
  cr_assert_eq(wd_repart_home(rp, 0, s, r), wd_producer_partition_of(kb2.data, kb2.len, 7));
  wd_buf_free(&kb2);
  wd_repart_destroy(rp);
  wd_row_destroy(s, r);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}
