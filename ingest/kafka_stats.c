/*
 * ingest/kafka_stats.c — librdkafka's statistics document, parsed with jansson (see kafka_stats.h).
 */
#include "ingest/kafka_stats.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t num(const json_t *o, const char *key, int64_t dflt) {
  const json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : json_is_real(v) ? (int64_t)json_real_value(v) : dflt;
}

void wd_kafka_stats_clear(wd_kafka_stats_t *out) {
  free(out->brokers);
  free(out->parts);
  memset(out, 0, sizeof(*out));
}

int wd_kafka_stats_parse(const char *json, size_t len, wd_kafka_stats_t *out) {
  wd_kafka_stats_clear(out);
  json_t *root = json_loadb(json, len, 0, NULL);
  if (!json_is_object(root)) {
    json_decref(root);
    return -1;
  }
  int rc = 0;
  out->at_ms = num(root, "ts", 0) / 1000;
  out->replyq = num(root, "replyq", 0);
  out->msg_cnt = num(root, "msg_cnt", 0);
  const json_t *brokers = json_object_get(root, "brokers"), *topics = json_object_get(root, "topics");
  size_t nb = json_is_object(brokers) ? json_object_size(brokers) : 0;
  size_t np = 0;
  const char *key;
  const json_t *v;
  if (json_is_object(topics)) json_object_foreach((json_t *)topics, key, v) {
      const json_t *ps = json_object_get(v, "partitions");
      np += json_is_object(ps) ? json_object_size(ps) : 0;
    }
  if ((nb && !(out->brokers = calloc(nb, sizeof(*out->brokers)))) ||
      (np && !(out->parts = calloc(np, sizeof(*out->parts))))) {
    rc = -1;
    goto done;
  }
  if (nb) json_object_foreach((json_t *)brokers, key, v) {
      if (num(v, "nodeid", -1) < 0) continue; /* a bootstrap entry, not a broker of the cluster */
      wd_kafka_broker_stats_t *b = &out->brokers[out->nbrokers++];
      const json_t *name = json_object_get(v, "name"), *rtt = json_object_get(v, "rtt");
      snprintf(b->name, sizeof(b->name), "%s", json_is_string(name) ? json_string_value(name) : key);
      b->rtt_avg_s = (double)num(rtt, "avg", 0) / 1e6; /* librdkafka gives microseconds */
      b->rtt_p99_s = (double)num(rtt, "p99", 0) / 1e6;
      b->outbuf_msgs = num(v, "outbuf_msg_cnt", 0);
      b->waitresp_msgs = num(v, "waitresp_msg_cnt", 0);
    }
  if (np) json_object_foreach((json_t *)topics, key, v) {
      const json_t *ps = json_object_get(v, "partitions"), *pv;
      const char *pk;
      if (!json_is_object(ps)) continue;
      json_object_foreach((json_t *)ps, pk, pv) {
        int64_t part = num(pv, "partition", -1);
        if (part < 0) continue; /* the topic's unassigned-partition queue */
        wd_kafka_part_stats_t *p = &out->parts[out->nparts++];
        snprintf(p->topic, sizeof(p->topic), "%s", key);
        p->partition = (int32_t)part;
        p->consumer_lag = num(pv, "consumer_lag", -1);
        if (p->consumer_lag < 0) { /* no committed offset librdkafka knows (widen commits in transactions):
                                    * its end offset (ls_offset under read_committed) minus its position */
          int64_t end = num(pv, "ls_offset", -1), app = num(pv, "app_offset", -1);
          if (end < 0) end = num(pv, "hi_offset", -1);
          if (end >= 0 && app >= 0) p->consumer_lag = end > app ? end - app : 0;
        }
        p->fetchq_msgs = num(pv, "fetchq_cnt", 0);
      }
    }
done:
  json_decref(root);
  if (rc) wd_kafka_stats_clear(out);
  return rc;
}
