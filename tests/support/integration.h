/*
 * tests/support/integration.h — helpers the integration tests (tests/integration/, on the real
 * broker) share: the broker and the widen binary from the environment, creating a topic with a
 * given partition count, text substitution in config templates, whole-file reads, and an output
 * topic read back as `widen tail` lines.
 * Header-only (static inline): they fail the calling Criterion test through cr_assert.
 */
#ifndef WD_TEST_INTEGRATION_H
#define WD_TEST_INTEGRATION_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"

/* The broker of the tests (WIDEN_TEST_BROKERS; scripts/test and .ci/run set it). */
static inline const char *wd_it_brokers(void) {
  const char *b = getenv("WIDEN_TEST_BROKERS");
  cr_assert(b && *b, "WIDEN_TEST_BROKERS is not set: start a broker with scripts/kafka start (scripts/test does)");
  return b;
}

/* The widen binary (WIDEN_BIN, set by ctest). */
static inline const char *wd_it_widen_bin(void) {
  const char *b = getenv("WIDEN_BIN");
  cr_assert(b && access(b, X_OK) == 0, "WIDEN_BIN (the widen binary) is not set or not executable");
  return b;
}

/* Creates topic with npart partitions and one replica (Kafka's CreateTopics through librdkafka's
 * admin API; an existing topic fails the test) and waits until the metadata shows every partition
 * with a leader, at most 30 s. sink/topics.h creates widen's own output topics instead with the
 * broker's defaults and best effort; a test needs its partition count and a failure it sees. */
static inline void wd_it_create_topic(const char *topic, int npart) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof errstr), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  cr_assert_not_null(rk, "rd_kafka_new: %s", errstr);
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, npart, 1, errstr, sizeof errstr);
  cr_assert_not_null(nt, "NewTopic: %s", errstr);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opt, 30000, errstr, sizeof errstr);
  rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  cr_assert_not_null(ev, "CreateTopics: no result within 60 s from %s", wd_it_brokers());
  const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
  cr_assert_not_null(res, "CreateTopics: %s", rd_kafka_event_error_string(ev));
  size_t cnt;
  const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
  cr_assert_eq(cnt, 1);
  cr_assert_eq(rd_kafka_topic_result_error(tr[0]), RD_KAFKA_RESP_ERR_NO_ERROR, "CreateTopics %s: %s", topic,
               rd_kafka_topic_result_error_string(tr[0]));
  rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opt);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  /* wait until the metadata shows every partition with a leader */
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  int64_t deadline = wd_mono_ms() + 30000;
  for (;;) {
    const struct rd_kafka_metadata *md = NULL;
    bool ok = false;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
        md->topics[0].err == 0 && md->topics[0].partition_cnt == npart) {
      ok = true;
      for (int i = 0; i < npart; i++) ok = ok && md->topics[0].partitions[i].leader >= 0;
    }
    if (md) rd_kafka_metadata_destroy(md);
    if (ok) break;
    cr_assert_lt(wd_mono_ms(), deadline, "topic %s has no leaders after 30 s", topic);
    usleep(100 * 1000);
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
}

/* Waits (polling every 50 ms, up to timeout_ms) until the file at path holds the text what, for
 * example a task move of widen's log ("-> RUNNING": app/runtime/tasks.c logs "task N: FROM -> TO (why)"),
 * so that a test waits on the state it needs instead of sleeping. true when it appeared, false on
 * the timeout (a missing file counts as empty). */
static inline bool wd_it_wait_log(const char *path, const char *what, int timeout_ms) {
  for (int waited = 0;; waited += 50) {
    FILE *f = fopen(path, "rb");
    if (f) {
      char buf[8192];
      size_t keep = 0, n, wlen = strlen(what);
      bool found = false;
      /* a sliding window: the text may straddle two reads */
      while (!found && (n = fread(buf + keep, 1, sizeof(buf) - 1 - keep, f)) > 0) {
        buf[keep + n] = 0;
        found = strstr(buf, what) != NULL;
        size_t len = keep + n;
        keep = wlen < len ? wlen : len;
        memmove(buf, buf + len - keep, keep);
      }
      fclose(f);
      if (found) return true;
    }
    if (waited >= timeout_ms) return false;
    usleep(50 * 1000);
  }
}

/* The whole file at path, NUL-terminated (malloc'd; the caller frees). */
static inline char *wd_it_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

/* s with every occurrence of from replaced by to: s is freed, the result is new (malloc'd). */
static inline char *wd_it_replace(char *s, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to), count = 0;
  for (char *p = strstr(s, from); p; p = strstr(p + fl, from)) count++;
  char *out = malloc(strlen(s) + count * (tl + 1) + 1), *o = out;
  const char *p = s;
  for (const char *q = strstr(p, from); q; q = strstr(p, from)) {
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, tl);
    o += tl;
    p = q + fl;
  }
  strcpy(o, p);
  free(s);
  return out;
}

/* An assign-mode consumer of every partition of topic from the beginning, with isolation.level
 * `isolation` ("read_committed" for wd_it_consumer), on the test broker; asserts on failure. The
 * caller destroys it (wd_consumer_destroy). */
static inline wd_consumer_t *wd_it_consumer_iso(const char *topic, const char *isolation) {
  wd_kafka_conf_t kc = {0};
  wd_consumer_t *c = NULL;
  const char *topics[] = {topic};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_kafka_conf_set(&kc, "auto.offset.reset", "earliest"));
  cr_assert_null(wd_kafka_conf_set(&kc, "isolation.level", isolation));
  wd_error_t *err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc); /* borrowed by wd_consumer_new for the call only */
  return c;
}

static inline wd_consumer_t *wd_it_consumer(const char *topic) { return wd_it_consumer_iso(topic, "read_committed"); }

/* Reads every record of topic (all partitions, from the beginning, read_committed) as `widen
 * tail` lines: a JSON array of {"op","key","row"} in partition order (one key's records are in
 * order). It reads until every partition's position reaches the high watermark it had when the
 * read began (a loaded broker may pause longer than any idle bound; a transaction left open by a
 * killed process holds it until the broker aborts it), for at most 180 s. The caller owns the
 * array. */
static inline json_t *wd_it_read_changelog(const char *topic) {
  wd_consumer_t *c = wd_it_consumer(topic);
  wd_error_t *err = NULL;
  json_t *out = json_array();
  wd_buf_t b = {0};
  wd_kmsg_t msgs[500];
  wd_tp_offset_t *ends = NULL, *pos = NULL;
  size_t nends = 0, npos = 0;
  /* the ends read_uncommitted (the high watermarks): read_committed ones stop at the first open
   * transaction, so that the transaction of a process killed for good would cut the read short
   * until the broker aborts it (transaction.timeout.ms, plus up to the broker's cleanup interval) */
  wd_consumer_t *u = wd_it_consumer_iso(topic, "read_uncommitted");
  err = wd_consumer_end_offsets(u, 30000, &ends, &nends);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_consumer_destroy(u);
  int idle = 0;
  for (int round = 0; round < 360; round++) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 500, 500, msgs, &n));
    idle = n ? 0 : idle + 1;
    if (!n && idle >= 2) { /* at every end offset? (positions pass transaction markers too) */
      free(pos);
      pos = NULL;
      cr_assert_null(wd_consumer_assignment(c, &pos, &npos));
      bool done = true;
      for (size_t e = 0; e < nends && done; e++) {
        if (ends[e].offset <= 0) continue;
        bool reached = false;
        for (size_t k = 0; k < npos; k++)
          if (pos[k].partition == ends[e].partition && pos[k].offset >= ends[e].offset) reached = true;
        done = reached;
      }
      if (done) break;
    }
    for (size_t i = 0; i < n; i++) {
      wd_buf_reset(&b);
      cr_assert_null(wd_changelog_decode_tail(WD_CHANGELOG_DEBEZIUM_JSON, msgs[i].key, msgs[i].key_len, msgs[i].value,
                                              msgs[i].value_len, &b, NULL));
      for (char *line = (char *)b.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = 0;
        json_t *j = json_loads(line, 0, NULL);
        cr_assert_not_null(j, "bad tail line %s", line);
        json_array_append_new(out, j);
      }
    }
    wd_kmsg_release(msgs, n);
  }
  free(ends);
  free(pos);
  wd_buf_free(&b);
  wd_consumer_destroy(c);
  return out;
}

#endif
