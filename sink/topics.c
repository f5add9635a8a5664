/*
 * sink/topics.c — creating the output topics at start (see topics.h).
 */
#include "sink/topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kafka/kafka.h"

/* The temporary client's error callback: "cannot reach HOST:PORT (...); retrying" once. */
static void wd_sink_topics_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  wd_kafka_on_error(rk, err, reason, "sink", (bool *)opaque);
}

size_t wd_sink_create_topics(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, int timeout_ms) {
  if (!n) return 0;
  rd_kafka_conf_t *rconf = NULL;
  char errstr[512];
  bool waiting = false;
  size_t ok = 0;
  wd_error_t *err = wd_kafka_conf_build(conf, NULL, NULL, &rconf);
  if (err) {
    wd_log(WD_LOG_WARN, "sink", "creating the output topics: %s", err->message);
    wd_error_destroy(err);
    return 0;
  }
  rd_kafka_conf_set_error_cb(rconf, wd_sink_topics_error_cb);
  rd_kafka_conf_set_opaque(rconf, &waiting);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, rconf, errstr, sizeof(errstr));
  if (!rk) {
    rd_kafka_conf_destroy(rconf);
    wd_log(WD_LOG_WARN, "sink", "creating the output topics: %s", errstr);
    return 0;
  }
  /* a refused login or certificate: the producer made next reports it, once (debug here) */
  if ((err = wd_kafka_check_connect(rk, timeout_ms, "sink", &waiting))) {
    wd_log(WD_LOG_DEBUG, "sink", "creating the output topics: %s", err->message);
    wd_error_destroy(err);
    rd_kafka_destroy(rk);
    return 0;
  }
  /* the topics that exist already (one metadata request) are not created again */
  const struct rd_kafka_metadata *md = NULL;
  bool *exists = calloc(n, sizeof(*exists));
  if (exists && rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int t = 0; t < md->topic_cnt; t++)
      for (size_t i = 0; i < n; i++)
        if (!md->topics[t].err && !strcmp(md->topics[t].topic, topics[i])) exists[i] = true;
    rd_kafka_metadata_destroy(md);
  } else {
    rd_kafka_poll(rk, 0); /* the error callback says why ("cannot reach ...") */
    if (waiting) { /* no broker: creating the topics would wait as long again for nothing */
      free(exists);
      rd_kafka_destroy(rk);
      return 0;
    }
  }
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    if (exists && exists[i]) ok++;
    else missing++;
  }
  if (!missing) {
    free(exists);
    rd_kafka_destroy(rk);
    return ok;
  }
  rd_kafka_NewTopic_t **nt = calloc(n, sizeof(*nt));
  rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  size_t nt_n = 0;
  if (!nt || !opt || !q) {
    wd_log(WD_LOG_WARN, "sink", "creating the output topics: out of memory");
    goto done;
  }
  rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
  for (size_t i = 0; i < n; i++) {
    if (exists && exists[i]) continue;
    nt[nt_n] = rd_kafka_NewTopic_new(topics[i], -1, -1, errstr, sizeof(errstr));
    if (nt[nt_n]) nt_n++;
    else wd_log(WD_LOG_WARN, "sink", "creating topic %s: %s", topics[i], errstr);
  }
  rd_kafka_CreateTopics(rk, nt, nt_n, opt, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
  const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  if (!res) {
    wd_log(WD_LOG_WARN, "sink",
           "creating the output topics: %s (they are created by their first record if the "
           "broker auto-creates topics)",
           ev ? rd_kafka_event_error_string(ev) : "no answer from the broker in time");
  } else {
    size_t cnt = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
    for (size_t i = 0; i < cnt; i++) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(tr[i]);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        wd_log(WD_LOG_INFO, "sink", "created topic %s", rd_kafka_topic_result_name(tr[i]));
        ok++;
      } else if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        ok++;
      } else {
        const char *es = rd_kafka_topic_result_error_string(tr[i]);
        wd_log(WD_LOG_WARN, "sink",
               "creating topic %s: %s (it is created by its first record if the broker "
               "auto-creates topics)",
               rd_kafka_topic_result_name(tr[i]), es ? es : rd_kafka_err2str(e));
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
done:
  for (size_t i = 0; i < nt_n; i++) rd_kafka_NewTopic_destroy(nt[i]);
  free(nt);
  free(exists);
  if (opt) rd_kafka_AdminOptions_destroy(opt);
  if (q) rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return ok;
}
