/*
 * sink/producer.c — idempotent, murmur2-partitioned producer with delivery tracking and the
 * dead-letter topic (see producer.h).
 */
#include "sink/producer.h"
#include "common/clock.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "kafka/kafka.h"

typedef struct wd_topic_handle {
  char *name;
  rd_kafka_topic_t *rkt;
  atomic_bool size_refused; /* the broker refused a message of this topic for its size (delivery report,
                             * which may run on the collector's commit thread) */
  size_t max_bytes; /* the topic's max.message.bytes (0: not known): asked at the first send, and after a refusal */
  rd_kafka_queue_t *asked; /* the DescribeConfigs whose answer is awaited, or NULL */
} wd_topic_handle_t;

/* Acknowledged offset ranges per (topic, partition) (grown on demand). */
typedef struct wd_range_list {
  wd_producer_range_t *v;
  size_t n, cap;
} wd_range_list_t;

struct wd_producer {
  rd_kafka_t *rk;
  wd_topic_handle_t *topics; /* handle cache: a pipeline writes to very few topics */
  size_t ntopics;
  uint64_t sent, acked, failed, bytes;
  char first_failure[512]; /* "" until a delivery fails */
  bool waiting; /* a broker is unreachable (logged once) */
  bool queue_full_logged;
  bool fatal;
  bool closing; /* wd_producer_destroy purges: the purged messages' reports are expected */
  /* output batches (epochs): every message is tagged with the epoch current at its send; a
   * batch is acknowledged when its epoch's count is back to zero (acks arrive out of order
   * across partitions, so a plain acked counter cannot tell) */
  uint64_t epoch;
  uint64_t pending[WD_PRODUCER_EPOCHS];
  bool transactional; /* created with a transactional.id */
  /* the wait while the local queue is full (wd_producer_set_wait): serves whatever must not
   * starve meanwhile (the consumer group) and says when to give up (a stop) */
  wd_producer_wait_fn wait;
  void *wait_ctx;
  /* the acknowledged offsets per (topic, partition) since the last wd_producer_offsets_reset, from
   * delivery reports (the commit history's output ranges) */
  wd_range_list_t delivered;
};

/* How long a new producer waits for a first broker answer or error (wd_kafka_check_connect). */
#define WD_PRODUCER_CHECK_MS 10000

#define WD_EPOCH_SLOT(e) ((e) % WD_PRODUCER_EPOCHS)

/* Delivery report: runs inside rd_kafka_poll/flush on the producer's thread. */
/* Notes an acknowledged offset (a failed allocation loses only that range: bookkeeping). */
/* Widens (or adds) the range of (topic, partition) to [first, end); topic is a handle's name of p. */
static void wd_producer_add_range(wd_producer_t *p, const char *topic, int32_t partition, int64_t first, int64_t end) {
  wd_range_list_t *r = &p->delivered;
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i].partition == partition && r->v[i].topic == topic) {
      if (first < r->v[i].first) r->v[i].first = first;
      if (end > r->v[i].end) r->v[i].end = end;
      return;
    }
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 8;
    wd_producer_range_t *v = realloc(r->v, cap * sizeof(*v));
    if (!v) return;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (wd_producer_range_t){topic, partition, first, end};
}

static void wd_producer_note_range(wd_producer_t *p, const rd_kafka_message_t *rkm) {
  const char *topic = NULL;
  for (size_t i = 0; i < p->ntopics && !topic; i++)
    if (p->topics[i].rkt == rkm->rkt) topic = p->topics[i].name;
  if (!topic || rkm->offset < 0) return;
  wd_producer_add_range(p, topic, rkm->partition, rkm->offset, rkm->offset + 1);
}

static void wd_producer_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque) {
  wd_producer_t *p = opaque;
  (void)rk;
  uint64_t e = (uint64_t)(uintptr_t)rkm->_private;
  if (p->pending[WD_EPOCH_SLOT(e)]) p->pending[WD_EPOCH_SLOT(e)]--;
  if (rkm->err) {
    p->failed++;
    if (rkm->err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) /* wd_producer_max_message_bytes reads the limit */
      for (size_t i = 0; i < p->ntopics; i++)
        if (p->topics[i].rkt == rkm->rkt) atomic_store(&p->topics[i].size_refused, true);
    if (!p->first_failure[0])
      snprintf(p->first_failure, sizeof(p->first_failure), "%s [%" PRId32 "]: %s (%s)",
               rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "?", rkm->partition, rd_kafka_err2name(rkm->err),
               rd_kafka_err2str(rkm->err));
    wd_log(p->failed == 1 && !p->closing ? WD_LOG_ERROR : WD_LOG_DEBUG, "sink",
           "delivery to %s [%" PRId32 "] failed: %s", rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : "?", rkm->partition,
           rd_kafka_err2str(rkm->err));
  } else {
    p->acked++;
    wd_producer_note_range(p, rkm);
    wd_kafka_broker_ok("sink", &p->waiting);
  }
}

static void wd_producer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  wd_producer_t *p = opaque;
  if (wd_kafka_on_error(rk, err, reason, "sink", &p->waiting)) p->fatal = true;
}

wd_error_t *wd_producer_new(const wd_kafka_conf_t *conf, wd_producer_t **out) {
  static const wd_kafka_kv_t defaults[] = {{"linger.ms", "5"}, {"reconnect.backoff.max.ms", "1000"}, {NULL, NULL}};
  static const wd_kafka_kv_t fixed[] = {
      {"enable.idempotence", "true"}, {"acks", "all"}, {"partitioner", "murmur2_random"}, {NULL, NULL}};
  wd_error_t *err = NULL;
  wd_producer_t *p = NULL;
  rd_kafka_conf_t *rconf = NULL;
  wd_kafka_conf_t pconf = *conf;
  char errstr[512];
  *out = NULL;
  pconf.group_id = NULL; /* a producer has no group */
  if (!(p = calloc(1, sizeof(*p)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if ((err = wd_kafka_conf_build(&pconf, defaults, fixed, &rconf))) goto cleanup;
  rd_kafka_conf_set_dr_msg_cb(rconf, wd_producer_dr_cb);
  rd_kafka_conf_set_error_cb(rconf, wd_producer_error_cb);
  rd_kafka_conf_set_opaque(rconf, p);
  if (!(p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, rconf, errstr, sizeof(errstr)))) {
    err = wd_error_new(WD_ERR_KAFKA, E_KAFKA, "cannot create the Kafka producer: %s", errstr);
    goto cleanup;
  }
  rconf = NULL; /* owned by p->rk now */
  if ((err = wd_kafka_check_connect(p->rk, WD_PRODUCER_CHECK_MS, "sink", &p->waiting))) goto cleanup;
  p->transactional = wd_kafka_conf_get(conf, "transactional.id") != NULL;
  *out = p;
  p = NULL;
cleanup:
  if (rconf) rd_kafka_conf_destroy(rconf);
  wd_producer_destroy(p);
  return err;
}

static rd_kafka_queue_t *wd_producer_ask_max_bytes(wd_producer_t *p, const char *topic, int timeout_ms);

/* The cached topic handle for name, created on first use (reading the topic's max.message.bytes);
 * NULL with *err set on failure. */
static rd_kafka_topic_t *wd_producer_topic(wd_producer_t *p, const char *name, wd_error_t **err) {
  for (size_t i = 0; i < p->ntopics; i++)
    if (strcmp(p->topics[i].name, name) == 0) return p->topics[i].rkt;
  wd_topic_handle_t *topics = realloc(p->topics, (p->ntopics + 1) * sizeof(*topics));
  if (!topics) {
    *err = wd_error_nomem();
    return NULL;
  }
  p->topics = topics;
  char *copy = strdup(name);
  if (!copy) {
    *err = wd_error_nomem();
    return NULL;
  }
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(p->rk, name, NULL);
  if (!rkt) {
    free(copy);
    *err = wd_kafka_error(p->rk, rd_kafka_last_error(), E_SINK_PRODUCE, "topic '%s'", name);
    return NULL;
  }
  topics[p->ntopics] = (wd_topic_handle_t){.name = copy, .rkt = rkt};
  /* a topic whose max.message.bytes is below message.max.bytes refuses larger messages at the
   * broker, which fails the transaction (or, at-least-once, the delivery): they are refused here */
  topics[p->ntopics].asked = wd_producer_ask_max_bytes(p, name, 5000); /* answered while it sends */
  p->ntopics++;
  return rkt;
}

/* Asks for the topic's max.message.bytes (Kafka's DescribeConfigs through p's client, answered
 * within timeout_ms): the queue its answer arrives on (owned by the caller), NULL when it could not
 * be asked. */
static rd_kafka_queue_t *wd_producer_ask_max_bytes(wd_producer_t *p, const char *topic, int timeout_ms) {
  char errstr[256];
  rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
  rd_kafka_queue_t *q = rd_kafka_queue_new(p->rk);
  rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(p->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  if (res && q && opt) {
    rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, errstr, sizeof(errstr));
    rd_kafka_DescribeConfigs(p->rk, &res, 1, opt, q); /* copies res and opt */
  } else if (q) {
    rd_kafka_queue_destroy(q);
    q = NULL;
  }
  if (opt) rd_kafka_AdminOptions_destroy(opt);
  if (res) rd_kafka_ConfigResource_destroy(res);
  return q;
}

/* Takes the answer of t's DescribeConfigs, waiting at most wait_ms for it (0: only if it is there):
 * sets t->max_bytes when the answer names max.message.bytes. true when the question is settled
 * (answered, failed or given up after wait_ms > 0), false while it is still awaited. */
static bool wd_producer_take_max_bytes(wd_topic_handle_t *t, int wait_ms) {
  if (!t->asked) return true;
  rd_kafka_event_t *ev = rd_kafka_queue_poll(t->asked, wait_ms);
  if (!ev && wait_ms == 0) return false;
  const rd_kafka_DescribeConfigs_result_t *r =
      ev && !rd_kafka_event_error(ev) ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
  size_t nres = 0, nconf = 0;
  const rd_kafka_ConfigResource_t **rs = r ? rd_kafka_DescribeConfigs_result_resources(r, &nres) : NULL;
  if (nres == 1 && !rd_kafka_ConfigResource_error(rs[0])) {
    const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(rs[0], &nconf);
    for (size_t i = 0; i < nconf; i++) {
      const char *v = rd_kafka_ConfigEntry_value(ce[i]);
      if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]), "max.message.bytes") && v && atoll(v) > 0)
        t->max_bytes = (size_t)atoll(v);
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(t->asked);
  t->asked = NULL;
  return true;
}

/* A message of this many bytes or more to a topic whose max.message.bytes is still being asked for
 * waits for the answer (smaller ones go on: no broker's limit is that small in practice). */
#define WD_PRODUCER_ASK_WAIT_BYTES 4096

static size_t wd_producer_max_bytes_for(wd_producer_t *p, wd_topic_handle_t *t, size_t wire) {
  if (atomic_exchange(&t->size_refused, false)) { /* asked again once per refusal */
    if (!t->asked) t->asked = wd_producer_ask_max_bytes(p, t->name, 5000);
    wd_producer_take_max_bytes(t, 6000);
    wd_log(WD_LOG_WARN, "sink",
           "the broker refused a message to %s for its size; the topic's max.message.bytes is %s%zu: larger "
           "messages to it are refused before they are sent",
           t->name, t->max_bytes ? "" : "not readable", t->max_bytes);
  } else if (!wd_producer_take_max_bytes(t, 0) && wire >= WD_PRODUCER_ASK_WAIT_BYTES) {
    wd_producer_take_max_bytes(t, 6000);
  }
  return t->max_bytes ? t->max_bytes : SIZE_MAX;
}

size_t wd_producer_max_message_bytes(wd_producer_t *p, const char *topic, size_t wire) {
  for (size_t i = 0; i < p->ntopics; i++)
    if (!strcmp(p->topics[i].name, topic)) return wd_producer_max_bytes_for(p, &p->topics[i], wire);
  return SIZE_MAX;
}

static wd_error_t *wd_producer_fatal_error(wd_producer_t *p) {
  return wd_kafka_error(p->rk, RD_KAFKA_RESP_ERR__FATAL, E_SINK_FATAL, "producer");
}

static wd_error_t *wd_producer_send_part(wd_producer_t *p, const char *topic, int32_t partition, const void *key,
                                         size_t klen, const void *value, size_t vlen, const wd_header_t *headers,
                                         size_t nheaders);

wd_error_t *wd_producer_send(wd_producer_t *p, const char *topic, const void *key, size_t klen, const void *value,
                             size_t vlen, const wd_header_t *headers, size_t nheaders) {
  return wd_producer_send_part(p, topic, RD_KAFKA_PARTITION_UA, key, klen, value, vlen, headers, nheaders);
}

wd_error_t *wd_producer_send_to(wd_producer_t *p, const char *topic, int32_t partition, const void *key, size_t klen,
                                const void *value, size_t vlen) {
  return wd_producer_send_part(p, topic, partition, key, klen, value, vlen, NULL, 0);
}

static wd_error_t *wd_producer_send_part(wd_producer_t *p, const char *topic, int32_t partition, const void *key,
                                         size_t klen, const void *value, size_t vlen, const wd_header_t *headers,
                                         size_t nheaders) {
  wd_error_t *err = NULL;
  rd_kafka_headers_t *hdrs = NULL;
  if (p->fatal) {
    err = wd_producer_fatal_error(p);
    goto cleanup;
  }
  rd_kafka_topic_t *rkt = wd_producer_topic(p, topic, &err);
  if (!rkt) goto cleanup;
  size_t wire = (key ? klen : 0) + (value ? vlen : 0) + 128;
  for (size_t i = 0; i < nheaders; i++) wire += strlen(headers[i].name) + (headers[i].value ? headers[i].len : 0) + 8;
  size_t max = wd_producer_max_message_bytes(p, topic, wire);
  if (wire > max) { /* as librdkafka refuses one over message.max.bytes */
    err = wd_error_new(WD_ERR_KAFKA, E_SINK_PRODUCE,
                       "produce to '%s': Broker: Message size too large (%zu bytes with its overhead, the topic's "
                       "max.message.bytes %zu)",
                       topic, wire, max);
    if (err != wd_error_nomem()) err->code = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
    goto cleanup;
  }
  for (;;) {
    if (nheaders) {
      if (!(hdrs = rd_kafka_headers_new(nheaders))) {
        err = wd_error_nomem();
        goto cleanup;
      }
      for (size_t i = 0; i < nheaders; i++)
        rd_kafka_header_add(hdrs, headers[i].name, -1, headers[i].value,
                            headers[i].value ? (ssize_t)headers[i].len : 0);
    }
    rd_kafka_resp_err_t rerr;
    if (hdrs)
      rerr = rd_kafka_producev(p->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key ? klen : 0),
                               RD_KAFKA_V_VALUE((void *)value, value ? vlen : 0), RD_KAFKA_V_HEADERS(hdrs),
                               RD_KAFKA_V_OPAQUE((void *)(uintptr_t)p->epoch), RD_KAFKA_V_END);
    else /* the plain call: the same message, without producev's parse of its argument list (~1/4 of its cost) */
      rerr = rd_kafka_produce(rkt, partition, RD_KAFKA_MSG_F_COPY, (void *)value, value ? vlen : 0, key, key ? klen : 0,
                              (void *)(uintptr_t)p->epoch) == -1
                 ? rd_kafka_last_error()
                 : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (!rerr) {
      hdrs = NULL; /* owned by the message now */
      break;
    }
    if (rerr != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      err = rerr == RD_KAFKA_RESP_ERR__FATAL ? wd_producer_fatal_error(p)
                                             : wd_kafka_error(p->rk, rerr, E_SINK_PRODUCE, "produce to '%s'", topic);
      /* A transactional producer refuses new messages with __STATE while its transaction is in
       * an abortable error state (a delivery inside it failed): the transaction must be aborted
       * and the work redone (librdkafka's transactions guide). Fatal states were taken above. */
      if (p->transactional && rerr == RD_KAFKA_RESP_ERR__STATE && err != wd_error_nomem() && !err->fatal)
        err->txn_requires_abort = true;
      goto cleanup;
    }
    /* Queue full: headers were not taken; serve delivery reports to make room and retry. */
    if (hdrs) {
      rd_kafka_headers_destroy(hdrs);
      hdrs = NULL;
    }
    wd_log(p->queue_full_logged ? WD_LOG_DEBUG : WD_LOG_WARN, "sink",
           "producer queue full (%" PRIu64 " in flight): waiting for deliveries", p->sent - p->acked - p->failed);
    p->queue_full_logged = true;
    if (p->wait) { /* the owner serves its consumer while deliveries drain, and may give up */
      rd_kafka_poll(p->rk, 10);
      if (p->wait(p->wait_ctx, 90)) {
        err =
            wd_error_new(WD_ERR_KAFKA, E_STOPPED, "produce to '%s': stopped while the producer queue was full", topic);
        err->retriable = true;
        goto cleanup;
      }
    } else {
      rd_kafka_poll(p->rk, 100);
    }
    if (p->fatal) {
      err = wd_producer_fatal_error(p);
      goto cleanup;
    }
  }
  p->sent++;
  p->pending[WD_EPOCH_SLOT(p->epoch)]++;
  p->bytes += (key ? klen : 0) + (value ? vlen : 0);
  if ((p->sent & 1023) == 0) rd_kafka_poll(p->rk, 0);
cleanup:
  if (hdrs) rd_kafka_headers_destroy(hdrs);
  return err;
}

void wd_dead_letter_headers(wd_dead_letter_headers_t *out, const wd_kmsg_t *src, const char *error_id,
                            const char *error_message) {
  snprintf(out->partition, sizeof(out->partition), "%" PRId32, src->partition);
  snprintf(out->offset, sizeof(out->offset), "%" PRId64, src->offset);
  const char *id = error_id ? error_id : "";
  const char *msg = error_message ? error_message : "";
  const char *topic = src->topic ? src->topic : "";
  out->h[0] = (wd_header_t){"widen.error.id", id, strlen(id)};
  out->h[1] = (wd_header_t){"widen.error.message", msg, strlen(msg)};
  out->h[2] = (wd_header_t){"widen.source.topic", topic, strlen(topic)};
  out->h[3] = (wd_header_t){"widen.source.partition", out->partition, strlen(out->partition)};
  out->h[4] = (wd_header_t){"widen.source.offset", out->offset, strlen(out->offset)};
}

wd_error_t *wd_producer_send_dead_letter(wd_producer_t *p, const char *dlq_topic, const wd_kmsg_t *src,
                                         const char *error_id, const char *error_message) {
  wd_dead_letter_headers_t dh;
  wd_dead_letter_headers(&dh, src, error_id, error_message);
  return wd_producer_send(p, dlq_topic, src->key, src->key_len, src->value, src->value_len, dh.h,
                          sizeof(dh.h) / sizeof(*dh.h));
}

/* Common tail of wait_acked/flush: the state after waiting. */
static wd_error_t *wd_producer_result(wd_producer_t *p) {
  if (p->fatal) return wd_producer_fatal_error(p);
  if (p->failed) {
    wd_error_t *err =
        wd_error_new(WD_ERR_KAFKA, E_SINK_DELIVERY, "%" PRIu64 " message(s) could not be delivered; first: %s",
                     p->failed, p->first_failure);
    if (err != wd_error_nomem()) err->retriable = false;
    return err;
  }
  uint64_t in_flight = p->sent - p->acked - p->failed;
  if (in_flight) return wd_error_new(WD_ERR_KAFKA, E_SINK_TIMEOUT, "%" PRIu64 " message(s) still in flight", in_flight);
  return NULL;
}

uint64_t wd_producer_acked(const wd_producer_t *p) { return p->acked; }

void wd_producer_wait_ack_after(wd_producer_t *p, uint64_t acked, int timeout_ms) {
  int64_t deadline = wd_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  while (p->acked <= acked && p->sent != p->acked + p->failed && !p->fatal) {
    int64_t left = deadline - wd_mono_ms();
    if (left <= 0) break;
    rd_kafka_flush(p->rk, left > 5 ? 5 : (int)left); /* serves the reports; lingering batches go now */
  }
}

wd_error_t *wd_producer_wait_acked(wd_producer_t *p, int timeout_ms) {
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : wd_mono_ms() + timeout_ms;
  while (p->sent != p->acked + p->failed && !p->fatal) {
    int64_t left = deadline - wd_mono_ms();
    if (left <= 0) break;
    rd_kafka_flush(p->rk, left > 200 ? 200 : (int)left);
  }
  return wd_producer_result(p);
}

uint64_t wd_producer_begin_batch(wd_producer_t *p) {
  p->epoch++;
  /* the slot is reused every WD_PRODUCER_EPOCHS batches: wait until its old batch is done */
  while (p->pending[WD_EPOCH_SLOT(p->epoch)] && !p->fatal) rd_kafka_poll(p->rk, 10);
  return p->epoch;
}

size_t wd_producer_offsets(const wd_producer_t *p, const wd_producer_range_t **out) {
  *out = p->delivered.v;
  return p->delivered.n;
}

void wd_producer_offsets_reset(wd_producer_t *p) { p->delivered.n = 0; }

void wd_producer_offsets_carry(wd_producer_t *dst, const wd_producer_t *src) {
  for (size_t i = 0; i < src->delivered.n; i++) {
    const wd_producer_range_t *r = &src->delivered.v[i];
    wd_error_t *err = NULL;
    rd_kafka_topic_t *rkt = wd_producer_topic(dst, r->topic, &err);
    wd_error_destroy(err); /* bookkeeping only: a range that cannot be carried is lost */
    const char *name = NULL;
    for (size_t k = 0; rkt && k < dst->ntopics && !name; k++)
      if (dst->topics[k].rkt == rkt) name = dst->topics[k].name;
    if (name) wd_producer_add_range(dst, name, r->partition, r->first, r->end);
  }
}

wd_error_t *wd_producer_wait_batch(wd_producer_t *p, uint64_t epoch, int timeout_ms) {
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : wd_mono_ms() + timeout_ms;
  for (;;) {
    bool done = true;
    uint64_t first = epoch + 1 > WD_PRODUCER_EPOCHS ? epoch + 1 - WD_PRODUCER_EPOCHS : 0;
    for (uint64_t e = first; e <= epoch && done; e++) done = p->pending[WD_EPOCH_SLOT(e)] == 0;
    if (done || p->fatal || p->failed) break;
    int64_t left = deadline - wd_mono_ms();
    if (left <= 0) {
      uint64_t n = 0;
      for (uint64_t e = first; e <= epoch; e++) n += p->pending[WD_EPOCH_SLOT(e)];
      return wd_error_new(WD_ERR_KAFKA, E_SINK_TIMEOUT,
                          "%" PRIu64 " message(s) of output batch %" PRIu64 " still in flight", n, epoch);
    }
    rd_kafka_poll(p->rk, left > 100 ? 100 : (int)left);
  }
  if (p->fatal) return wd_producer_fatal_error(p);
  if (p->failed) return wd_producer_result(p);
  return NULL;
}

wd_error_t *wd_producer_flush(wd_producer_t *p, int timeout_ms) {
  rd_kafka_flush(p->rk, timeout_ms < 0 ? -1 : timeout_ms);
  return wd_producer_result(p);
}

void wd_producer_poll(wd_producer_t *p) { rd_kafka_poll(p->rk, 0); }

bool wd_producer_unreachable(const wd_producer_t *p) { return p->waiting; }

wd_error_t *wd_producer_fatal(wd_producer_t *p) {
  char text[16];
  if (!rd_kafka_fatal_error(p->rk, text, sizeof(text))) return NULL;
  p->fatal = true;
  return wd_producer_fatal_error(p);
}

void wd_producer_inject_fatal(wd_producer_t *p, int code, const char *reason) {
  rd_kafka_test_fatal_error(p->rk, (rd_kafka_resp_err_t)code, reason ? reason : "injected");
  p->fatal = true;
}

bool wd_producer_transactional(const wd_producer_t *p) { return p->transactional; }

wd_error_t *wd_producer_txn_init(wd_producer_t *p, int timeout_ms) {
  rd_kafka_error_t *e = rd_kafka_init_transactions(p->rk, timeout_ms);
  if (!e) wd_kafka_broker_ok("sink", &p->waiting); /* the coordinator answered: reachable */
  return e ? wd_kafka_error_obj(p->rk, e, E_TXN_INIT, "initialising transactions") : NULL;
}

wd_error_t *wd_producer_txn_begin(wd_producer_t *p) {
  rd_kafka_error_t *e = rd_kafka_begin_transaction(p->rk);
  return e ? wd_kafka_error_obj(p->rk, e, E_TXN_BEGIN, "beginning a transaction") : NULL;
}

wd_error_t *wd_producer_txn_send_offsets(wd_producer_t *p, const wd_tp_offset_t *offsets, size_t n,
                                         const wd_group_meta_t *gm, int timeout_ms) {
  if (n == 0) return NULL;
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)n);
  if (!list) return wd_error_nomem();
  for (size_t i = 0; i < n; i++)
    rd_kafka_topic_partition_list_add(list, offsets[i].topic, offsets[i].partition)->offset = offsets[i].offset;
  rd_kafka_error_t *e = rd_kafka_send_offsets_to_transaction(p->rk, list, gm->cgmd, timeout_ms);
  rd_kafka_topic_partition_list_destroy(list);
  return e ? wd_kafka_error_obj(p->rk, e, E_TXN_OFFSETS, "sending %zu offsets to the transaction", n) : NULL;
}

wd_error_t *wd_producer_txn_commit(wd_producer_t *p, int timeout_ms) {
  rd_kafka_error_t *e = rd_kafka_commit_transaction(p->rk, timeout_ms);
  if (e) return wd_kafka_error_obj(p->rk, e, E_TXN_COMMIT, "committing the transaction");
  rd_kafka_poll(p->rk, 0); /* delivery reports of the committed messages */
  return NULL;
}

wd_error_t *wd_producer_txn_abort(wd_producer_t *p, int timeout_ms) {
  rd_kafka_error_t *e = rd_kafka_abort_transaction(p->rk, timeout_ms);
  if (e) return wd_kafka_error_obj(p->rk, e, E_TXN_ABORT, "aborting the transaction");
  /* the aborted messages were purged: serve their delivery reports, then forget them (they
   * are not a sticky failure, and not "sent" output) */
  for (int i = 0; i < 50 && p->sent != p->acked + p->failed; i++) rd_kafka_poll(p->rk, 20);
  p->sent = p->acked;
  p->failed = 0;
  p->first_failure[0] = 0;
  memset(p->pending, 0, sizeof(p->pending));
  return NULL;
}

void wd_producer_stats(const wd_producer_t *p, wd_producer_stats_t *stats) {
  stats->sent = p->sent;
  stats->acked = p->acked;
  stats->failed = p->failed;
  stats->bytes = p->bytes;
  stats->in_flight = p->sent - p->acked - p->failed;
}

void wd_producer_destroy(wd_producer_t *p) {
  if (!p) return;
  /* the delivery reports served below (messages acknowledged but not reported yet: a producer
   * replaced after a fatal error) note no ranges: their topic handles go after them */
  size_t ntopics = p->ntopics;
  p->ntopics = 0;
  p->closing = true;
  if (p->rk) {
    uint64_t in_flight = p->sent - p->acked - p->failed;
    if (in_flight) wd_log(WD_LOG_WARN, "sink", "closing the producer with %" PRIu64 " message(s) in flight", in_flight);
    rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(p->rk, 0);
  }
  for (size_t i = 0; i < ntopics; i++) {
    if (p->topics[i].asked) rd_kafka_queue_destroy(p->topics[i].asked);
    rd_kafka_topic_destroy(p->topics[i].rkt);
    free(p->topics[i].name);
  }
  free(p->topics);
  free(p->delivered.v);
  if (p->rk) rd_kafka_destroy(p->rk);
  free(p);
}

wd_error_t *wd_producer_ensure_topic(wd_producer_t *p, const char *topic, int partitions, const char *const *configs,
                                     int timeout_ms) {
  wd_error_t *err = NULL;
  char errstr[512];
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, -1, errstr, sizeof(errstr));
  rd_kafka_queue_t *q = NULL;
  rd_kafka_event_t *ev = NULL;
  if (!nt) return wd_error_new(WD_ERR_KAFKA, E_TOPIC_CREATE, "topic '%s': %s", topic, errstr);
  for (size_t i = 0; configs && configs[i] && configs[i + 1]; i += 2)
    if (rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1])) {
      err = wd_error_new(WD_ERR_KAFKA, E_TOPIC_CREATE, "topic '%s': config %s", topic, configs[i]);
      goto done;
    }
  if (!(q = rd_kafka_queue_new(p->rk))) {
    err = wd_error_nomem();
    goto done;
  }
  rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(p->rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  if (opts) rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, errstr, sizeof(errstr));
  rd_kafka_CreateTopics(p->rk, &nt, 1, opts, q);
  if (opts) rd_kafka_AdminOptions_destroy(opts);
  if (!(ev = rd_kafka_queue_poll(q, timeout_ms + 1000))) {
    err = wd_error_new(WD_ERR_KAFKA, E_TOPIC_CREATE, "creating topic '%s': no answer in %d ms", topic, timeout_ms);
    err->retriable = true;
    goto done;
  }
  rd_kafka_resp_err_t rerr = rd_kafka_event_error(ev);
  if (rerr) {
    err = wd_kafka_error(p->rk, rerr, E_TOPIC_CREATE, "creating topic '%s'", topic);
    goto done;
  }
  size_t n = 0;
  const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
  rerr = n == 1 ? rd_kafka_topic_result_error(tr[0]) : RD_KAFKA_RESP_ERR__FAIL;
  if (rerr && rerr != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
    err = wd_kafka_error(p->rk, rerr, E_TOPIC_CREATE, "creating topic '%s' (%s)", topic,
                         n == 1 && rd_kafka_topic_result_error_string(tr[0]) ? rd_kafka_topic_result_error_string(tr[0])
                                                                             : "");
  else if (!rerr) wd_log(WD_LOG_INFO, "sink", "created topic %s (%d partitions)", topic, partitions);
done:
  if (ev) rd_kafka_event_destroy(ev);
  if (q) rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  return err;
}

wd_error_t *wd_producer_partition_count(wd_producer_t *p, const char *topic, int timeout_ms, int *count) {
  *count = 0;
  /* all topics: a request naming the topic would make a broker with auto.create.topics.enable
   * create it with its default partition count */
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t rerr = rd_kafka_metadata(p->rk, 1, NULL, &md, timeout_ms);
  if (rerr) {
    wd_error_t *err = wd_kafka_error(p->rk, rerr, E_TOPIC_METADATA, "reading the metadata of topic '%s'", topic);
    err->retriable = true;
    return err;
  }
  for (int t = 0; t < md->topic_cnt; t++)
    if (!strcmp(md->topics[t].topic, topic) && !md->topics[t].err) *count = md->topics[t].partition_cnt;
  rd_kafka_metadata_destroy(md);
  return NULL;
}

int32_t wd_producer_partition_of(const void *key, size_t klen, int32_t partitions) {
  /* librdkafka's own murmur2 partitioner (public API); it reads neither the topic nor the opaques */
  return rd_kafka_msg_partitioner_murmur2(NULL, key, klen, partitions, NULL, NULL);
}

void wd_producer_set_wait(wd_producer_t *p, wd_producer_wait_fn fn, void *ctx) {
  p->wait = fn;
  p->wait_ctx = ctx;
}
