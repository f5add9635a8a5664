/* Proves the integration harness: a real broker (WIDEN_TEST_BROKERS, started by scripts/kafka) takes
 * a fresh 4-partition topic, 10,000 keyed messages, and a consumer group that commits part way,
 * closes, and resumes in a second consumer exactly after the committed offsets. */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/support/integration.h"

#define N_MSGS 10000
#define N_PARTS 4
#define COMMIT_AT 6000

static void set(rd_kafka_conf_t *conf, const char *name, const char *value) {
  char errstr[512];
  cr_assert_eq(rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr), RD_KAFKA_CONF_OK, "conf %s=%s: %s", name,
               value, errstr);
}

static rd_kafka_t *new_client(rd_kafka_type_t type, rd_kafka_conf_t *conf) {
  char errstr[512];
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  cr_assert_not_null(rk, "rd_kafka_new: %s", errstr);
  return rk;
}

static rd_kafka_conf_t *base_conf(void) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", wd_it_brokers());
  set(conf, "reconnect.backoff.max.ms", "500");
  return conf;
}

/* Admin API on a producer handle: delete one topic, wait for the result. */
static void delete_topic(rd_kafka_t *rk, const char *topic) {
  rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (ev) {
    if (rd_kafka_event_error(ev)) cr_log_warn("DeleteTopics %s: %s", topic, rd_kafka_event_error_string(ev));
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_DeleteTopic_destroy(dt);
  rd_kafka_queue_destroy(q);
}

static int delivered, delivery_errors;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    if (delivery_errors++ < 5) fprintf(stderr, "delivery failed: %s\n", rd_kafka_err2str(m->err));
  } else {
    delivered++;
  }
}

static int key_index(const rd_kafka_message_t *m) {
  char buf[16];
  if (!m->key || m->key_len < 2 || m->key_len >= sizeof buf) return -1;
  memcpy(buf, m->key, m->key_len);
  buf[m->key_len] = '\0';
  char *end;
  long i = strtol(buf + 1, &end, 10);
  if (buf[0] != 'k' || *end || i < 0 || i >= N_MSGS) return -1;
  return (int)i;
}

static rd_kafka_t *new_consumer(const char *group, const char *topic) {
  rd_kafka_conf_t *conf = base_conf();
  set(conf, "group.id", group);
  set(conf, "session.timeout.ms", "6000");
  set(conf, "enable.auto.commit", "false");
  set(conf, "auto.offset.reset", "earliest");
  rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
  cr_assert_eq(rd_kafka_subscribe(rk, sub), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(sub);
  return rk;
}

Test(kafka_harness, produce_commit_resume, .timeout = 240) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *bs = wd_it_brokers();
  char topic[96], group[128];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(topic, sizeof topic, "wdtest.harness-%ld-%ld-%09ld", (long)getpid(), (long)ts.tv_sec, ts.tv_nsec);
  snprintf(group, sizeof group, "%s-group", topic);
  double t0 = wd_mono_s();

  /* --- produce 10,000 keyed messages to a fresh 4-partition topic --- */
  rd_kafka_conf_t *pconf = base_conf();
  set(pconf, "enable.idempotence", "true");
  set(pconf, "linger.ms", "5");
  rd_kafka_conf_set_dr_msg_cb(pconf, dr_cb);
  rd_kafka_t *prod = new_client(RD_KAFKA_PRODUCER, pconf);
  wd_it_create_topic(topic, N_PARTS);
  double t_created = wd_mono_s();

  for (int i = 0; i < N_MSGS; i++) {
    char key[16], val[32];
    int kl = snprintf(key, sizeof key, "k%05d", i);
    int vl = snprintf(val, sizeof val, "value-%d", i);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)kl),
                                    RD_KAFKA_V_VALUE(val, (size_t)vl), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(prod, 10);
    cr_assert_eq(err, RD_KAFKA_RESP_ERR_NO_ERROR, "produce %d: %s", i, rd_kafka_err2str(err));
    rd_kafka_poll(prod, 0);
  }
  cr_assert_eq(rd_kafka_flush(prod, 60000), RD_KAFKA_RESP_ERR_NO_ERROR, "flush did not finish in 60 s");
  cr_assert_eq(delivery_errors, 0, "%d delivery errors", delivery_errors);
  cr_assert_eq(delivered, N_MSGS, "delivered %d of %d", delivered, N_MSGS);
  double t_produced = wd_mono_s();

  /* --- first consumer: read 6000 messages, commit their offsets synchronously, close --- */
  static int count[N_MSGS];
  memset(count, 0, sizeof count);
  int64_t next[N_PARTS]; /* per partition: offset after the last message consumer 1 read */
  for (int p = 0; p < N_PARTS; p++) next[p] = -1;

  rd_kafka_t *c1 = new_consumer(group, topic);
  int got = 0;
  double deadline = wd_mono_s() + 90;
  while (got < COMMIT_AT && wd_mono_s() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c1, 500);
    if (!m) continue;
    if (m->err) {
      cr_log_warn("consumer 1: %s", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    cr_assert(m->partition >= 0 && m->partition < N_PARTS, "partition %" PRId32, m->partition);
    int k = key_index(m);
    cr_assert(k >= 0, "consumer 1: unexpected key at %" PRId32 "/%" PRId64, m->partition, m->offset);
    count[k]++;
    cr_assert(m->offset >= next[m->partition], "consumer 1 went backwards on partition %" PRId32, m->partition);
    next[m->partition] = m->offset + 1;
    got++;
    rd_kafka_message_destroy(m);
  }
  cr_assert_eq(got, COMMIT_AT, "consumer 1 read %d of %d messages within 90 s", got, COMMIT_AT);
  double t_c1 = wd_mono_s();

  rd_kafka_topic_partition_list_t *commit = rd_kafka_topic_partition_list_new(N_PARTS);
  for (int p = 0; p < N_PARTS; p++)
    if (next[p] >= 0) rd_kafka_topic_partition_list_add(commit, topic, p)->offset = next[p];
  rd_kafka_resp_err_t cerr = rd_kafka_commit(c1, commit, 0 /* sync */);
  cr_assert_eq(cerr, RD_KAFKA_RESP_ERR_NO_ERROR, "sync commit: %s", rd_kafka_err2str(cerr));
  for (int i = 0; i < commit->cnt; i++)
    cr_assert_eq(commit->elems[i].err, RD_KAFKA_RESP_ERR_NO_ERROR, "commit partition %" PRId32 ": %s",
                 commit->elems[i].partition, rd_kafka_err2str(commit->elems[i].err));
  rd_kafka_topic_partition_list_destroy(commit);

  /* the broker reports back exactly what was committed */
  rd_kafka_topic_partition_list_t *cm = rd_kafka_topic_partition_list_new(N_PARTS);
  for (int p = 0; p < N_PARTS; p++) rd_kafka_topic_partition_list_add(cm, topic, p);
  cr_assert_eq(rd_kafka_committed(c1, cm, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int i = 0; i < cm->cnt; i++) {
    int p = cm->elems[i].partition;
    int64_t want = next[p] >= 0 ? next[p] : RD_KAFKA_OFFSET_INVALID;
    cr_assert_eq(cm->elems[i].offset, want, "committed offset of partition %d: %" PRId64 ", want %" PRId64, p,
                 cm->elems[i].offset, want);
  }
  rd_kafka_topic_partition_list_destroy(cm);
  cr_assert_eq(rd_kafka_consumer_close(c1), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(c1);

  /* --- second consumer in the same group: resumes exactly at the committed offsets --- */
  rd_kafka_t *c2 = new_consumer(group, topic);
  int64_t first[N_PARTS];
  for (int p = 0; p < N_PARTS; p++) first[p] = -1;
  int got2 = 0, below = 0;
  deadline = wd_mono_s() + 90;
  double quiet_until = 0;
  /* read the remaining 4000, then keep polling 2 s more to catch anything repeated or extra */
  while (wd_mono_s() < deadline && (got2 < N_MSGS - COMMIT_AT || wd_mono_s() < quiet_until)) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c2, 200);
    if (!m) continue;
    if (m->err) {
      cr_log_warn("consumer 2: %s", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    int p = m->partition;
    cr_assert(p >= 0 && p < N_PARTS);
    if (first[p] < 0) first[p] = m->offset;
    if (next[p] >= 0 && m->offset < next[p]) below++;
    int k = key_index(m);
    cr_assert(k >= 0, "consumer 2: unexpected key at %d/%" PRId64, p, m->offset);
    count[k]++;
    if (++got2 == N_MSGS - COMMIT_AT) quiet_until = wd_mono_s() + 2;
    rd_kafka_message_destroy(m);
  }
  double t_c2 = wd_mono_s();
  cr_assert_eq(rd_kafka_consumer_close(c2), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(c2);

  cr_assert_eq(below, 0, "consumer 2 re-read %d messages below the committed offsets", below);
  for (int p = 0; p < N_PARTS; p++) {
    int64_t want = next[p] >= 0 ? next[p] : 0;
    /* a partition consumer 1 had fully read gives consumer 2 nothing: first[p] stays -1 */
    if (first[p] >= 0)
      cr_assert_eq(first[p], want, "partition %d: consumer 2 started at %" PRId64 ", committed %" PRId64, p, first[p],
                   want);
  }
  cr_assert_eq(got2, N_MSGS - COMMIT_AT, "consumer 2 read %d, want %d", got2, N_MSGS - COMMIT_AT);
  int missing = 0, repeated = 0, first_bad = -1;
  for (int i = 0; i < N_MSGS; i++) {
    if (count[i] != 1 && first_bad < 0) first_bad = i;
    missing += count[i] == 0;
    repeated += count[i] > 1;
  }
  cr_assert(missing == 0 && repeated == 0, "keys missing %d, repeated %d (first: k%05d)", missing, repeated, first_bad);

  delete_topic(prod, topic);
  rd_kafka_destroy(prod);
  cr_log_info("broker %s topic %s: create %.2f s, produce %.2f s, consumer 1 (join+%d) %.2f s, "
              "consumer 2 (join+%d) %.2f s",
              bs, topic, t_created - t0, t_produced - t_created, COMMIT_AT, t_c1 - t_produced, N_MSGS - COMMIT_AT,
              t_c2 - t_c1);
}

/* Sanity of the harness itself: the metadata of the broker under test answers with at least one broker. */
Test(kafka_harness, broker_metadata, .timeout = 60) {
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, base_conf());
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, NULL, &md, 10000);
  cr_assert_eq(err, RD_KAFKA_RESP_ERR_NO_ERROR, "metadata from %s: %s", wd_it_brokers(), rd_kafka_err2str(err));
  cr_assert_geq(md->broker_cnt, 1);
  rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
}
