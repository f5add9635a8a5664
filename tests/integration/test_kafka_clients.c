/* The Kafka clients of widen (ingest/consumer.h, sink/producer.h) against the real broker
 * (WIDEN_TEST_BROKERS): murmur2 partitioning equal to Java's, delivery tracking, dead-letter
 * headers, starting offsets from on_assign, end offsets, commits, lag, property errors and a
 * broker that is not there. */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "sink/producer.h"
#include "tests/support/integration.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* Java's org.apache.kafka.common.utils.Utils.murmur2, written out independently of librdkafka. */
static int32_t java_murmur2(const void *key, size_t len) {
  const uint8_t *data = key;
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  uint32_t h = 0x9747b28cu ^ (uint32_t)len;
  size_t len4 = len / 4;
  for (size_t i = 0; i < len4; i++) {
    size_t i4 = i * 4;
    uint32_t k = (uint32_t)data[i4] | ((uint32_t)data[i4 + 1] << 8) | ((uint32_t)data[i4 + 2] << 16) |
                 ((uint32_t)data[i4 + 3] << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  size_t tail = len & ~(size_t)3;
  switch (len % 4) {
  case 3: h ^= (uint32_t)data[tail + 2] << 16; /* fall through */
  case 2: h ^= (uint32_t)data[tail + 1] << 8; /* fall through */
  case 1: h ^= (uint32_t)data[tail]; h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return (int32_t)h;
}

/* The partition Java's DefaultPartitioner / BuiltInPartitioner picks for a non-null key. */
static int32_t java_partition(const char *key, int32_t npartitions) {
  return (int32_t)(((uint32_t)java_murmur2(key, strlen(key)) & 0x7fffffffu) % (uint32_t)npartitions);
}

static void unique_topic(char *buf, size_t n, const char *what) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(buf, n, "wdtest.clients-%s-%ld-%lld%03ld", what, (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec / 1000000);
}

static void conf_init(wd_kafka_conf_t *kc, const char *group) {
  memset(kc, 0, sizeof(*kc));
  cr_assert_null(wd_kafka_conf_set_brokers(kc, wd_it_brokers()));
  if (group) cr_assert_null(wd_kafka_conf_set_group(kc, group));
  cr_assert_null(wd_kafka_conf_set(kc, "session.timeout.ms", "6000"));
}

static void check(wd_error_t *err, const char *what) { cr_assert_null(err, "%s: %s", what, err ? err->message : ""); }

static wd_producer_t *new_producer(void) {
  wd_kafka_conf_t kc;
  wd_producer_t *p = NULL;
  memset(&kc, 0, sizeof(kc));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  check(wd_producer_new(&kc, &p), "wd_producer_new");
  wd_kafka_conf_clear(&kc);
  return p;
}

/* Sends key/value strings and waits for their acknowledgement. */
static void send_all(wd_producer_t *p, const char *topic, char keys[][32], char vals[][32], size_t n) {
  for (size_t i = 0; i < n; i++)
    check(wd_producer_send(p, topic, keys[i], strlen(keys[i]), vals[i], strlen(vals[i]), NULL, 0), "send");
  check(wd_producer_wait_acked(p, 30000), "wait_acked");
}

/* A copy of what a test checks of a consumed message. */
typedef struct got {
  int32_t partition;
  int64_t offset;
  char key[64];
  char value[64];
} got_t;

/* Polls until want messages arrived (or timeout_ms); returns how many. */
static size_t poll_n(wd_consumer_t *c, got_t *out, size_t want, int timeout_ms) {
  wd_kmsg_t msgs[64];
  size_t have = 0;
  int64_t deadline = wd_mono_ms() + timeout_ms;
  while (have < want && wd_mono_ms() < deadline) {
    size_t n = 0, max = want - have < 64 ? want - have : 64;
    check(wd_consumer_poll_batch(c, max, 200, msgs, &n), "poll_batch");
    for (size_t i = 0; i < n; i++) {
      got_t *g = &out[have++];
      g->partition = msgs[i].partition;
      g->offset = msgs[i].offset;
      snprintf(g->key, sizeof g->key, "%.*s", (int)msgs[i].key_len, msgs[i].key ? (const char *)msgs[i].key : "");
      snprintf(g->value, sizeof g->value, "%.*s", (int)msgs[i].value_len,
               msgs[i].value ? (const char *)msgs[i].value : "");
    }
    wd_kmsg_release(msgs, n);
  }
  return have;
}

static int64_t start_beginning(void *ctx, const char *topic, int32_t partition) {
  (void)ctx;
  (void)topic;
  (void)partition;
  return WD_OFFSET_BEGINNING;
}

static int64_t start_end(void *ctx, const char *topic, int32_t partition) {
  (void)ctx;
  (void)topic;
  (void)partition;
  return WD_OFFSET_END;
}

/* ---- murmur2 ------------------------------------------------------------------------------ */

Test(murmur2, matches_java_reference_values) {
  /* Values of org.apache.kafka.common.utils.Utils.murmur2 (kafka-clients 3.9.1). */
  cr_assert_eq(java_murmur2("21", 2), -973932308);
  cr_assert_eq(java_murmur2("foobar", 6), -790332482);
  cr_assert_eq(java_murmur2("a-little-bit-long-string", 24), -985981536);
  cr_assert_eq(java_murmur2("{\"order_id\":5}", 14), 301823749);
  cr_assert_eq(java_partition("{\"order_id\":5}", 3), 1);
  cr_assert_eq(java_partition("{\"id\":101}", 4), 2);
}

Test(producer, partitions_keys_like_java, .timeout = 120) {
  char topic[128];
  unique_topic(topic, sizeof topic, "murmur2");
  wd_it_create_topic(topic, 3);
  wd_producer_t *p = new_producer();
  enum { N = 40 };
  char keys[N][32], vals[N][32];
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "{\"order_id\":%d}", i);
    snprintf(vals[i], sizeof vals[i], "v%d", i);
  }
  send_all(p, topic, keys, vals, N);
  wd_producer_stats_t st;
  wd_producer_stats(p, &st);
  cr_assert_eq(st.sent, N);
  cr_assert_eq(st.acked, N);
  cr_assert_eq(st.failed, 0);
  cr_assert_eq(st.in_flight, 0);
  wd_producer_destroy(p);

  wd_kafka_conf_t kc;
  conf_init(&kc, NULL);
  wd_consumer_t *c = NULL;
  const char *topics[] = {topic};
  check(wd_consumer_new(&kc, topics, 1, start_beginning, NULL, &c), "wd_consumer_new");
  got_t got[N];
  cr_assert_eq(poll_n(c, got, N, 30000), N);
  bool seen5 = false;
  for (int i = 0; i < N; i++) {
    cr_assert_eq(got[i].partition, java_partition(got[i].key, 3), "key %s: partition %d, Java picks %d", got[i].key,
                 got[i].partition, java_partition(got[i].key, 3));
    if (strcmp(got[i].key, "{\"order_id\":5}") == 0) {
      cr_assert_eq(got[i].partition, 1);
      cr_assert_str_eq(got[i].value, "v5");
      seen5 = true;
    }
  }
  cr_assert(seen5);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
}

/* ---- dead letters ------------------------------------------------------------------------- */

static void assert_header(rd_kafka_headers_t *hdrs, const char *name, const char *want) {
  const void *v = NULL;
  size_t n = 0;
  cr_assert_eq(rd_kafka_header_get_last(hdrs, name, &v, &n), RD_KAFKA_RESP_ERR_NO_ERROR, "header %s missing", name);
  cr_assert_eq(n, strlen(want), "header %s: %.*s", name, (int)n, (const char *)v);
  cr_assert(memcmp(v, want, n) == 0, "header %s: '%.*s' != '%s'", name, (int)n, (const char *)v, want);
}

Test(producer, dead_letter_keeps_bytes_and_sets_headers, .timeout = 120) {
  char topic[128];
  unique_topic(topic, sizeof topic, "dlq");
  wd_it_create_topic(topic, 1);
  wd_producer_t *p = new_producer();
  static const uint8_t key[] = {'{', '"', 'i', 'd', '"', ':', '7', '}'};
  static const uint8_t value[] = {0x00, 0xff, 'n', 'o', 't', ' ', 'j', 's', 'o', 'n', 0x01};
  wd_kmsg_t src = {.topic = "orders",
                   .partition = 2,
                   .offset = 1234567890123LL,
                   .timestamp = -1,
                   .key = key,
                   .key_len = sizeof key,
                   .value = value,
                   .value_len = sizeof value};
  check(wd_producer_send_dead_letter(p, topic, &src, "E_DECODE", "E_DECODE: not JSON at byte 0"), "dead letter");
  wd_kmsg_t tomb = {.topic = "orders", .partition = 0, .offset = 5};
  check(wd_producer_send_dead_letter(p, topic, &tomb, NULL, NULL), "dead letter (null key/value)");
  check(wd_producer_wait_acked(p, 30000), "wait_acked");
  wd_producer_destroy(p);

  wd_kafka_conf_t kc;
  conf_init(&kc, NULL);
  wd_consumer_t *c = NULL;
  const char *topics[] = {topic};
  check(wd_consumer_new(&kc, topics, 1, start_beginning, NULL, &c), "wd_consumer_new");
  wd_kmsg_t msgs[2];
  size_t have = 0;
  int64_t deadline = wd_mono_ms() + 30000;
  while (have < 2 && wd_mono_ms() < deadline) {
    size_t n = 0;
    check(wd_consumer_poll_batch(c, 2 - have, 200, msgs + have, &n), "poll_batch");
    have += n;
  }
  cr_assert_eq(have, 2);
  cr_assert_eq(msgs[0].key_len, sizeof key);
  cr_assert(memcmp(msgs[0].key, key, sizeof key) == 0);
  cr_assert_eq(msgs[0].value_len, sizeof value);
  cr_assert(memcmp(msgs[0].value, value, sizeof value) == 0);
  rd_kafka_headers_t *hdrs = NULL;
  cr_assert_eq(rd_kafka_message_headers(msgs[0].rkm, &hdrs), RD_KAFKA_RESP_ERR_NO_ERROR);
  assert_header(hdrs, "widen.error.id", "E_DECODE");
  assert_header(hdrs, "widen.error.message", "E_DECODE: not JSON at byte 0");
  assert_header(hdrs, "widen.source.topic", "orders");
  assert_header(hdrs, "widen.source.partition", "2");
  assert_header(hdrs, "widen.source.offset", "1234567890123");
  cr_assert_null(msgs[1].key);
  cr_assert_null(msgs[1].value);
  cr_assert_eq(rd_kafka_message_headers(msgs[1].rkm, &hdrs), RD_KAFKA_RESP_ERR_NO_ERROR);
  assert_header(hdrs, "widen.error.id", "");
  assert_header(hdrs, "widen.source.offset", "5");
  wd_kmsg_release(msgs, have);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
}

/* ---- delivery failures -------------------------------------------------------------------- */

Test(producer, delivery_failure_is_reported_and_sticky, .timeout = 60) {
  wd_kafka_conf_t kc;
  memset(&kc, 0, sizeof(kc));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1")); /* nothing listens there */
  cr_assert_null(wd_kafka_conf_set(&kc, "message.timeout.ms", "1500"));
  wd_producer_t *p = NULL;
  check(wd_producer_new(&kc, &p), "wd_producer_new");
  check(wd_producer_send(p, "wdtest.nowhere", "k", 1, "v", 1, NULL, 0), "send");
  check(wd_producer_send(p, "wdtest.nowhere", "k", 1, "w", 1, NULL, 0), "send");
  wd_error_t *err = wd_producer_wait_acked(p, 20000);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_SINK_DELIVERY", "%s", err->message);
  cr_assert(strstr(err->message, "wdtest.nowhere"), "%s", err->message);
  cr_assert(!err->retriable);
  wd_error_destroy(err);
  wd_producer_stats_t st;
  wd_producer_stats(p, &st);
  cr_assert_eq(st.failed, 2);
  cr_assert_eq(st.in_flight, 0);
  err = wd_producer_wait_acked(p, 0); /* sticky */
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_SINK_DELIVERY");
  wd_error_destroy(err);
  wd_producer_destroy(p);
  wd_kafka_conf_clear(&kc);
}

/* wd_producer_wait_ack_after: returns once a record sent after the count was taken is
 * acknowledged, and at once when nothing is in flight (the test's own timeout is below the wait's:
 * a wait that ignored either would fail it); against an absent broker, when the records failed. */
Test(producer, wait_ack_after_returns_on_an_acknowledgement, .timeout = 40) {
  char topic[128];
  unique_topic(topic, sizeof(topic), "ackafter");
  wd_producer_t *p = new_producer();
  uint64_t a0 = wd_producer_acked(p);
  cr_assert_eq(a0, 0);
  for (int i = 0; i < 3; i++) check(wd_producer_send(p, topic, "k", 1, "v", 1, NULL, 0), "send");
  wd_producer_wait_ack_after(p, a0, 60000);
  cr_assert_geq(wd_producer_acked(p), 1, "returned before an acknowledgement");
  check(wd_producer_wait_acked(p, 30000), "wait_acked");
  cr_assert_eq(wd_producer_acked(p), 3);
  wd_producer_wait_ack_after(p, 3, 60000); /* nothing in flight: at once */
  wd_producer_destroy(p);

  wd_kafka_conf_t kc;
  memset(&kc, 0, sizeof(kc));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1")); /* nothing listens there */
  cr_assert_null(wd_kafka_conf_set(&kc, "message.timeout.ms", "1500"));
  check(wd_producer_new(&kc, &p), "wd_producer_new");
  check(wd_producer_send(p, "wdtest.nowhere", "k", 1, "v", 1, NULL, 0), "send");
  wd_producer_wait_ack_after(p, 0, 60000); /* ends when the record failed */
  wd_producer_stats_t st;
  wd_producer_stats(p, &st);
  cr_assert_eq(st.failed, 1);
  cr_assert_eq(wd_producer_acked(p), 0);
  wd_producer_destroy(p);
  wd_kafka_conf_clear(&kc);
}

Test(consumer, absent_broker_gives_empty_batches, .timeout = 60) {
  wd_kafka_conf_t kc;
  memset(&kc, 0, sizeof(kc));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1"));
  cr_assert_null(wd_kafka_conf_set_group(&kc, "wd-nobody"));
  wd_consumer_t *c = NULL;
  const char *topics[] = {"wdtest.nowhere"};
  check(wd_consumer_new(&kc, topics, 1, NULL, NULL, &c), "wd_consumer_new (group mode needs no broker yet)");
  wd_kmsg_t msgs[4];
  for (int i = 0; i < 5; i++) {
    size_t n = 99;
    check(wd_consumer_poll_batch(c, 4, 300, msgs, &n), "poll_batch");
    cr_assert_eq(n, 0);
  }
  cr_assert_eq(wd_consumer_lag(c), 0);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
}

/* ---- starting offsets, commits, end offsets, lag ----------------------------------------- */

typedef struct assign_ctx {
  const char *topic;
  int assigned; /* on_assign calls */
  int revoked; /* partitions passed to on_revoke */
} assign_ctx_t;

static int64_t start_p0_at_5(void *ctx, const char *topic, int32_t partition) {
  assign_ctx_t *a = ctx;
  cr_assert_str_eq(topic, a->topic);
  a->assigned++;
  return partition == 0 ? 5 : WD_OFFSET_BEGINNING;
}

static void count_revoke(void *ctx, const wd_tp_offset_t *parts, size_t n, bool lost) {
  assign_ctx_t *a = ctx;
  (void)parts;
  (void)lost;
  a->revoked += (int)n;
}

/* Keys that Java (and our producer) put on partition part of npart partitions. */
static void keys_for_partition(char keys[][32], size_t n, int32_t part, int32_t npart) {
  size_t k = 0;
  for (int i = 0; k < n; i++) {
    char key[32];
    snprintf(key, sizeof key, "{\"order_id\":%d}", i);
    if (java_partition(key, npart) == part) snprintf(keys[k++], sizeof keys[0], "%s", key);
  }
}

Test(consumer, on_assign_offset_is_where_reading_starts, .timeout = 120) {
  char topic[128], group[160];
  unique_topic(topic, sizeof topic, "assign");
  snprintf(group, sizeof group, "%s-g", topic);
  wd_it_create_topic(topic, 3);
  enum { N = 10 };
  char keys[N][32], vals[N][32];
  keys_for_partition(keys, N, 0, 3);
  for (int i = 0; i < N; i++) snprintf(vals[i], sizeof vals[i], "m%d", i);
  wd_producer_t *p = new_producer();
  send_all(p, topic, keys, vals, N);
  wd_producer_destroy(p);

  wd_kafka_conf_t kc;
  conf_init(&kc, group);
  assign_ctx_t a = {.topic = topic};
  wd_consumer_t *c = NULL;
  const char *topics[] = {topic};
  check(wd_consumer_new(&kc, topics, 1, start_p0_at_5, &a, &c), "wd_consumer_new");
  wd_consumer_set_revoke_cb(c, count_revoke);
  got_t got[N];
  cr_assert_eq(poll_n(c, got, N - 5, 60000), N - 5);
  cr_assert_eq(a.assigned, 3, "on_assign called %d times", a.assigned);
  for (int i = 0; i < N - 5; i++) {
    cr_assert_eq(got[i].partition, 0);
    cr_assert_eq(got[i].offset, 5 + i);
    cr_assert_str_eq(got[i].value, vals[5 + i]);
    cr_assert_str_eq(got[i].key, keys[5 + i]);
  }
  /* nothing more: offsets 0..4 were skipped */
  cr_assert_eq(poll_n(c, got, 1, 1000), 0);
  cr_assert_eq(wd_consumer_lag(c), 0);
  wd_tp_offset_t *asg = NULL;
  size_t nasg = 0;
  check(wd_consumer_assignment(c, &asg, &nasg), "assignment");
  cr_assert_eq(nasg, 3);
  free(asg);
  check(wd_consumer_close(c), "close");
  cr_assert_eq(a.revoked, 3, "on_revoke got %d partitions", a.revoked);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
}

Test(consumer, end_offsets_commit_committed_and_lag, .timeout = 180) {
  char topic[128], group[160];
  unique_topic(topic, sizeof topic, "commit");
  snprintf(group, sizeof group, "%s-g", topic);
  wd_it_create_topic(topic, 3);
  /* 12 messages on partition 0, 4 on partition 1, none on partition 2 */
  char keys[16][32], vals[16][32];
  keys_for_partition(keys, 12, 0, 3);
  keys_for_partition(keys + 12, 4, 1, 3);
  for (int i = 0; i < 16; i++) snprintf(vals[i], sizeof vals[i], "x%d", i);
  wd_producer_t *p = new_producer();
  send_all(p, topic, keys, vals, 16);
  wd_producer_destroy(p);

  wd_kafka_conf_t kc;
  conf_init(&kc, group);
  const char *topics[] = {topic};
  wd_consumer_t *c = NULL;
  /* consumer A joins the group, reads nothing (starts at the end), commits explicit offsets */
  check(wd_consumer_new(&kc, topics, 1, start_end, NULL, &c), "wd_consumer_new");

  wd_tp_offset_t *end = NULL;
  size_t nend = 0;
  check(wd_consumer_end_offsets(c, 10000, &end, &nend), "end_offsets");
  cr_assert_eq(nend, 3);
  for (size_t i = 0; i < 3; i++) {
    cr_assert_str_eq(end[i].topic, topic);
    cr_assert_eq(end[i].partition, (int32_t)i, "sorted by partition");
  }
  cr_assert_eq(end[0].offset, 12);
  cr_assert_eq(end[1].offset, 4);
  cr_assert_eq(end[2].offset, 0);
  free(end);

  got_t got[16];
  int64_t deadline = wd_mono_ms() + 60000;
  for (;;) {
    wd_tp_offset_t *asg = NULL;
    size_t nasg = 0;
    cr_assert_eq(poll_n(c, got, 1, 200), 0);
    check(wd_consumer_assignment(c, &asg, &nasg), "assignment");
    free(asg);
    if (nasg == 3) break;
    cr_assert_lt(wd_mono_ms(), deadline, "no assignment after 60 s");
  }
  wd_tp_offset_t offs[] = {{topic, 0, 7}, {topic, 1, 3}};
  check(wd_consumer_commit(c, offs, 2), "commit");
  wd_tp_offset_t back[] = {{topic, 0, 0}, {topic, 1, 0}, {topic, 2, 0}};
  check(wd_consumer_committed(c, back, 3, 10000), "committed");
  cr_assert_eq(back[0].offset, 7);
  cr_assert_eq(back[1].offset, 3);
  cr_assert_eq(back[2].offset, -1);
  wd_consumer_destroy(c);

  /* consumer B, same group, on_assign NULL = WD_OFFSET_STORED: starts at the committed offsets */
  check(wd_consumer_new(&kc, topics, 1, NULL, NULL, &c), "wd_consumer_new (B)");
  cr_assert_eq(poll_n(c, got, 6, 60000), 6);
  int p0 = 0, p1 = 0;
  for (int i = 0; i < 6; i++) {
    if (got[i].partition == 0) {
      cr_assert_eq(got[i].offset, 7 + p0);
      cr_assert_str_eq(got[i].value, vals[7 + p0]);
      p0++;
    } else {
      cr_assert_eq(got[i].partition, 1);
      cr_assert_eq(got[i].offset, 3 + p1);
      p1++;
    }
  }
  cr_assert_eq(p0, 5);
  cr_assert_eq(p1, 1);
  wd_consumer_destroy(c);

  /* lag: a fresh assign-mode consumer that has read 3 of partition 0's 12 messages */
  wd_kafka_conf_t kc2;
  conf_init(&kc2, NULL);
  check(wd_consumer_new(&kc2, topics, 1, start_beginning, NULL, &c), "wd_consumer_new (assign)");
  wd_error_t *err = wd_consumer_commit(c, offs, 1);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_KAFKA_GROUP");
  wd_error_destroy(err);
  size_t total = poll_n(c, got, 16, 30000);
  cr_assert_eq(total, 16);
  cr_assert_eq(wd_consumer_lag(c), 0);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
  wd_kafka_conf_clear(&kc2);
}

Test(consumer, lag_counts_unread_messages, .timeout = 120) {
  char topic[128];
  unique_topic(topic, sizeof topic, "lag");
  wd_it_create_topic(topic, 1);
  enum { N = 10 };
  char keys[N][32], vals[N][32];
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    snprintf(vals[i], sizeof vals[i], "v%d", i);
  }
  wd_producer_t *p = new_producer();
  send_all(p, topic, keys, vals, N);
  wd_producer_destroy(p);
  wd_kafka_conf_t kc;
  conf_init(&kc, NULL);
  const char *topics[] = {topic};
  wd_consumer_t *c = NULL;
  check(wd_consumer_new(&kc, topics, 1, start_beginning, NULL, &c), "wd_consumer_new");
  got_t got[N];
  cr_assert_eq(poll_n(c, got, 3, 30000), 3);
  cr_assert_eq(wd_consumer_lag(c), N - 3);
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
}

/* ---- configuration errors ----------------------------------------------------------------- */

Test(conf, bad_properties_are_named) {
  wd_kafka_conf_t kc;
  memset(&kc, 0, sizeof(kc));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1"));
  cr_assert_null(wd_kafka_conf_set_pair(&kc, "no.such.property=1"));
  wd_producer_t *p = NULL;
  wd_error_t *err = wd_producer_new(&kc, &p);
  cr_assert_not_null(err);
  cr_assert_null(p);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  cr_assert(strstr(err->message, "no.such.property"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);

  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1"));
  cr_assert_null(wd_kafka_conf_set(&kc, "enable.idempotence", "false"));
  err = wd_producer_new(&kc, &p);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  cr_assert(strstr(err->message, "enable.idempotence"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);

  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1"));
  cr_assert_null(wd_kafka_conf_set_group(&kc, "g"));
  cr_assert_null(wd_kafka_conf_set(&kc, "partition.assignment.strategy", "cooperative-sticky"));
  wd_consumer_t *c = NULL;
  const char *topics[] = {"t"};
  err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  cr_assert_not_null(err);
  cr_assert_null(c);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  cr_assert(strstr(err->message, "partition.assignment.strategy"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);

  cr_assert_null(wd_kafka_conf_set_group(&kc, "g"));
  cr_assert_null(wd_kafka_conf_set(&kc, "enable.auto.commit", "true"));
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, "127.0.0.1:1"));
  err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  cr_assert(strstr(err->message, "enable.auto.commit"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);

  err = wd_kafka_conf_set_pair(&kc, "novalue");
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  wd_error_destroy(err);
  err = wd_producer_new(&kc, &p); /* no brokers */
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_KAFKA_PROPERTY");
  cr_assert(strstr(err->message, "bootstrap.servers"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);
}
