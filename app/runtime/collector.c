/*
 * app/runtime/collector.c — the record collector: the one path into the producer and the transaction
 * (see collector.h and docs/runtime.md "The record collector").
 */
#include "app/runtime/collector.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"

/* A record kept while holding: its bytes are in c->hbuf at the offsets below. */
typedef struct wd_held {
  wd_out_kind_t kind;
  size_t topic; /* index into c->topics */
  int32_t partition; /* < 0: by key */
  size_t koff, klen; /* key bytes; knull: a null key */
  size_t voff, vlen;
  size_t hoff; /* nh headers: per header name\0, then a size_t length, then the value */
  size_t nh;
  bool knull, vnull;
} wd_held_t;

struct wd_collector {
  wd_kafka_conf_t conf; /* owned copy: to re-create the producer */
  wd_producer_t *prod; /* owned */
  bool transactional;
  bool txn_open;
  uint64_t txn_acked0; /* the producer's acknowledged count when the open transaction began */
  bool round_open; /* the opening hook was called for the commit's output in hand */
  void (*opening)(void *ctx);
  void *opening_ctx;
  int (*wait)(void *ctx, int ms);
  void *wait_ctx;
  int (*budget)(void *ctx, int cap_ms); /* ms a long wait may take now (0: give up), or NULL */
  void *budget_ctx;
  uint64_t count[WD_OUT_KINDS];
  uint64_t mark; /* records produced (all kinds) at wd_collector_batch_mark */
  /* holding */
  bool holding;
  size_t hold_max;
  wd_held_t *held;
  size_t nheld, cap_held, next_held; /* next_held: the first not sent yet by release */
  wd_buf_t hbuf;
  char **topics; /* topic names of held records, owned */
  size_t ntopics;
  /* the commit on a helper thread (wd_collector_commit_start): while started, only that thread
   * touches the producer (its delivery reports run there) */
  size_t max_message_bytes; /* the producer's message.max.bytes */
  bool bg_started;
  atomic_bool bg_done;
  pthread_t bg_thread;
  int bg_timeout_ms;
  wd_error_t *bg_err; /* the thread's result, read after the join */
  /* re-creations after fatal errors (wd_collector_recreate): when, a ring of the last few */
  double recreated[WD_RECREATE_MAX];
  size_t nrecreated;
  uint64_t generation; /* producers replaced (reopen, recreate) */
};

static wd_error_t *busy_error(const char *what) {
  return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "%s while the transaction's commit runs in the background", what);
}

wd_collect_class_t wd_collector_classify(const wd_error_t *err) {
  if (!err) return WD_COLLECT_OK;
  if (err->fenced) return WD_COLLECT_FATAL;
  if (err->fatal) { /* the producer's own fatal errors (never a consumer's, out of memory, or the bound's) */
    bool producer = wd_error_is(err, WD_EID_E_SINK_FATAL) || wd_error_is(err, WD_EID_E_SINK_PRODUCE) ||
                    wd_error_is(err, WD_EID_E_TXN_BEGIN) || wd_error_is(err, WD_EID_E_TXN_OFFSETS) ||
                    wd_error_is(err, WD_EID_E_TXN_COMMIT) || wd_error_is(err, WD_EID_E_TXN_ABORT);
    return producer && err->cls == WD_ERR_KAFKA ? WD_COLLECT_RECREATE : WD_COLLECT_FATAL;
  }
  if (err->txn_requires_abort) return WD_COLLECT_ABORT;
  if (wd_error_is(err, WD_EID_E_STOPPED)) return WD_COLLECT_STOPPED;
  if (err->retriable) return WD_COLLECT_RETRY;
  return WD_COLLECT_FATAL;
}

static int producer_wait(void *ctx, int ms) {
  wd_collector_t *c = ctx;
  return c->wait ? c->wait(c->wait_ctx, ms) : 0;
}

wd_error_t *wd_collector_new(const wd_kafka_conf_t *conf, wd_collector_t **out) {
  *out = NULL;
  wd_collector_t *c = calloc(1, sizeof(*c));
  if (!c) return wd_error_nomem();
  wd_error_t *err = wd_kafka_conf_copy(&c->conf, conf);
  if (!err) err = wd_producer_new(&c->conf, &c->prod);
  if (err) {
    wd_kafka_conf_clear(&c->conf);
    free(c);
    return err;
  }
  c->transactional = wd_producer_transactional(c->prod);
  const char *mmb = wd_kafka_conf_get(&c->conf, "message.max.bytes");
  c->max_message_bytes = mmb && atol(mmb) > 0 ? (size_t)atol(mmb) : 1000000; /* librdkafka's default */
  wd_producer_set_wait(c->prod, producer_wait, c);
  *out = c;
  return NULL;
}

void wd_collector_destroy(wd_collector_t *c) {
  if (!c) return;
  if (c->bg_started) wd_error_destroy(wd_collector_commit_join(c));
  if (c->prod) {
    wd_error_t *err = wd_producer_flush(c->prod, 10000);
    if (err) wd_log(WD_LOG_WARN, "collector", "closing the producer: %s", err->message);
    wd_error_destroy(err);
    wd_producer_destroy(c->prod);
  }
  wd_kafka_conf_clear(&c->conf);
  free(c->held);
  wd_buf_free(&c->hbuf);
  for (size_t i = 0; i < c->ntopics; i++) free(c->topics[i]);
  free(c->topics);
  free(c);
}

void wd_collector_set_opening(wd_collector_t *c, void (*opening)(void *ctx), void *ctx) {
  c->opening = opening;
  c->opening_ctx = ctx;
}

void wd_collector_set_budget(wd_collector_t *c, int (*budget)(void *ctx, int cap_ms), void *ctx) {
  c->budget = budget;
  c->budget_ctx = ctx;
}

void wd_collector_set_wait(wd_collector_t *c, int (*wait)(void *ctx, int ms), void *ctx) {
  c->wait = wait;
  c->wait_ctx = ctx;
}

bool wd_collector_transactional(const wd_collector_t *c) { return c->transactional; }

bool wd_collector_txn_open(const wd_collector_t *c) { return c->txn_open; }

wd_error_t *wd_collector_init(wd_collector_t *c, int timeout_ms) {
  if (!c->transactional) return NULL;
  if (c->bg_started) return busy_error("init_transactions");
  return wd_producer_txn_init(c->prod, timeout_ms);
}

/* The commit's output starts: the owner's hook, once per commit. */
static void open_round(wd_collector_t *c) {
  if (c->round_open) return;
  c->round_open = true;
  if (c->opening) c->opening(c->opening_ctx);
}

/* A commit's output is complete (committed, acknowledged) or gone (aborted). */
static void close_round(wd_collector_t *c) {
  c->round_open = false;
  c->txn_open = false;
}

wd_error_t *wd_collector_begin(wd_collector_t *c) {
  if (c->holding) return NULL;
  if (c->bg_started) return busy_error("beginning a transaction");
  open_round(c);
  if (!c->transactional || c->txn_open) return NULL;
  wd_error_t *err = wd_producer_fatal(c->prod); /* a fatal producer: re-created by the caller, never used */
  if (!err) err = wd_producer_txn_begin(c->prod);
  if (!err) c->txn_open = true;
  if (!err) c->txn_acked0 = wd_producer_acked(c->prod);
  return err;
}

/* The producer's send of one record (no holding, no counting). */
static wd_error_t *produce(wd_collector_t *c, const char *topic, int32_t partition, const void *key, size_t klen,
                           const void *value, size_t vlen, const wd_header_t *h, size_t nh) {
  if (partition >= 0) return wd_producer_send_to(c->prod, topic, partition, key, klen, value, vlen);
  return wd_producer_send(c->prod, topic, key, klen, value, vlen, h, nh);
}

static int topic_index(wd_collector_t *c, const char *topic, size_t *idx) {
  for (size_t i = 0; i < c->ntopics; i++)
    if (!strcmp(c->topics[i], topic)) {
      *idx = i;
      return 0;
    }
  char **t = realloc(c->topics, (c->ntopics + 1) * sizeof(*t));
  if (!t) return -1;
  c->topics = t;
  if (!(t[c->ntopics] = strdup(topic))) return -1;
  *idx = c->ntopics++;
  return 0;
}

/* Keeps one record while holding. */
/* librdkafka's per-message bound on its wire size beyond key, value and headers (record batch v2:
 * attributes, deltas, varint lengths; taken generously) */
#define WD_MSG_OVERHEAD 128

/* The bytes of a record's headers h[0..nh) on the wire, taken generously as WD_MSG_OVERHEAD is. */
static size_t headers_wire(const wd_header_t *h, size_t nh) {
  size_t wire = 0;
  for (size_t i = 0; i < nh; i++) wire += strlen(h[i].name) + (h[i].value ? h[i].len : 0) + 8;
  return wire;
}

/* The largest message of wire bytes that topic takes: the producer's message.max.bytes, or the
 * topic's max.message.bytes when it is lower (wd_producer_max_message_bytes). */
static size_t max_bytes_of(wd_collector_t *c, const char *topic, size_t wire) {
  size_t t = wd_producer_max_message_bytes(c->prod, topic, wire);
  return t < c->max_message_bytes ? t : c->max_message_bytes;
}

/* MSG_SIZE_TOO_LARGE, as the producer gives it, for a record over max_bytes_of(topic) with its
 * overhead; NULL when it fits. */
static wd_error_t *check_size(wd_collector_t *c, const char *topic, const void *key, size_t klen, const void *value,
                              size_t vlen, const wd_header_t *h, size_t nh) {
  size_t wire = (key ? klen : 0) + (value ? vlen : 0) + WD_MSG_OVERHEAD + headers_wire(h, nh);
  size_t max = max_bytes_of(c, topic, wire);
  if (wire <= max) return NULL;
  wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_SINK_PRODUCE,
                               "produce to '%s': Broker: Message size too large "
                               "(%zu bytes with its overhead, %s %zu)",
                               topic, wire,
                               max < c->max_message_bytes ? "the topic's max.message.bytes" : "message.max.bytes", max);
  if (e != wd_error_nomem()) {
    e->code = WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE;
    e->retriable = false;
  }
  return e;
}

static wd_error_t *hold_one(wd_collector_t *c, wd_out_kind_t kind, const char *topic, int32_t partition,
                            const void *key, size_t klen, const void *value, size_t vlen, const wd_header_t *h,
                            size_t nh) {
  /* a record that the producer will refuse for its size is refused now, as a send would (the
   * pipeline dead-letters its source record), not when it is released */
  wd_error_t *e = check_size(c, topic, key, klen, value, vlen, h, nh);
  if (e) return e;
  if (c->hold_max && c->hbuf.len + klen + vlen > c->hold_max && c->nheld)
    return wd_error_new(WD_ERR_KAFKA, E_COLLECTOR_FULL,
                        "%zu records (%zu bytes) held while the previous commit "
                        "completes",
                        c->nheld, c->hbuf.len);
  if (c->nheld == c->cap_held) {
    size_t cap = c->cap_held ? c->cap_held * 2 : 256;
    wd_held_t *n = realloc(c->held, cap * sizeof(*n));
    if (!n) return wd_error_nomem();
    c->held = n;
    c->cap_held = cap;
  }
  wd_held_t r = {.kind = kind, .partition = partition, .knull = !key, .vnull = !value, .nh = nh};
  if (topic_index(c, topic, &r.topic)) return wd_error_nomem();
  size_t at = c->hbuf.len;
  r.koff = c->hbuf.len;
  r.klen = key ? klen : 0;
  if (r.klen && wd_buf_append(&c->hbuf, key, r.klen)) goto nomem;
  r.voff = c->hbuf.len;
  r.vlen = value ? vlen : 0;
  if (r.vlen && wd_buf_append(&c->hbuf, value, r.vlen)) goto nomem;
  r.hoff = c->hbuf.len;
  for (size_t i = 0; i < nh; i++) {
    size_t len = h[i].value ? h[i].len : SIZE_MAX;
    if (wd_buf_append(&c->hbuf, h[i].name, strlen(h[i].name) + 1) || wd_buf_append(&c->hbuf, &len, sizeof(len)) ||
        (h[i].value && h[i].len && wd_buf_append(&c->hbuf, h[i].value, h[i].len)))
      goto nomem;
  }
  c->held[c->nheld++] = r;
  return NULL;
nomem:
  c->hbuf.len = at;
  return wd_error_nomem();
}

static wd_error_t *send_kind(wd_collector_t *c, wd_out_kind_t kind, const char *topic, int32_t partition,
                             const void *key, size_t klen, const void *value, size_t vlen, const wd_header_t *h,
                             size_t nh) {
  wd_error_t *err;
  if (c->holding) {
    if ((err = hold_one(c, kind, topic, partition, key, klen, value, vlen, h, nh))) return err;
  } else {
    /* over a topic's max.message.bytes that the broker enforced once: refused as the producer
     * refuses one over its message.max.bytes, not sent to fail the transaction again */
    if ((err = check_size(c, topic, key, klen, value, vlen, h, nh))) return err;
    if ((err = wd_collector_begin(c))) return err;
    if ((err = produce(c, topic, partition, key, klen, value, vlen, h, nh))) return err;
  }
  c->count[kind]++;
  return NULL;
}

wd_error_t *wd_collector_send(wd_collector_t *c, wd_out_kind_t kind, const char *topic, int32_t partition,
                              const void *key, size_t klen, const void *value, size_t vlen) {
  return send_kind(c, kind, topic, partition, key, klen, value, vlen, NULL, 0);
}

wd_error_t *wd_collector_dead_letter(wd_collector_t *c, const char *dlq_topic, const wd_kmsg_t *src,
                                     const char *error_id, const char *error_message) {
  wd_dead_letter_headers_t dh;
  wd_dead_letter_headers(&dh, src, error_id, error_message);
  size_t nh = sizeof(dh.h) / sizeof(*dh.h);
  size_t klen = src->key ? src->key_len : 0, vlen = src->value ? src->value_len : 0;
  /* a rejected record larger than the producer's message.max.bytes (a source topic may take
   * larger messages than the sink's producer) would fail the commit at every try: its value,
   * then its key, are cut to fit, and the reason says so and gives their lengths */
  size_t fixed = WD_MSG_OVERHEAD + headers_wire(dh.h, nh) + 256; /* 256: the note added to the reason */
  size_t max = max_bytes_of(c, dlq_topic, klen + vlen + fixed);
  if (klen + vlen + fixed <= max || fixed >= max)
    return send_kind(c, WD_OUT_DEAD_LETTER, dlq_topic, -1, src->key, src->key_len, src->value, src->value_len, dh.h,
                     nh);
  size_t room = max - fixed;
  size_t kcut = klen < room ? klen : room;
  size_t vcut = vlen < room - kcut ? vlen : room - kcut;
  wd_buf_t note = {0};
  if (wd_buf_printf(&note,
                    "%s (dead letter cut to fit message.max.bytes %zu: key %zu of %zu bytes, value %zu of %zu bytes)",
                    error_message ? error_message : "", max, kcut, klen, vcut, vlen)) {
    wd_buf_free(&note);
    return wd_error_nomem();
  }
  dh.h[1].value = note.data;
  dh.h[1].len = note.len;
  wd_log(WD_LOG_WARN, "collector",
         "%s[%" PRId32 "]@%" PRId64
         ": its dead letter is cut to its first %zu value bytes of %zu (over the producer's message.max.bytes %zu)",
         src->topic ? src->topic : "", src->partition, src->offset, vcut, vlen, max);
  wd_error_t *err = send_kind(c, WD_OUT_DEAD_LETTER, dlq_topic, -1, src->key, kcut, src->value, vcut, dh.h, nh);
  wd_buf_free(&note);
  return err;
}

wd_error_t *wd_collector_send_offsets(wd_collector_t *c, const wd_tp_offset_t *offsets, size_t n,
                                      const wd_group_meta_t *gm, int timeout_ms) {
  if (n == 0) return NULL;
  if (c->bg_started) return busy_error("sending offsets");
  wd_error_t *err = wd_collector_begin(c);
  if (!err) err = wd_producer_fatal(c->prod);
  if (!err) err = wd_producer_txn_send_offsets(c->prod, offsets, n, gm, timeout_ms);
  return err;
}

wd_error_t *wd_collector_commit(wd_collector_t *c, int timeout_ms) {
  if (c->bg_started) return wd_collector_commit_join(c);
  if (!c->txn_open) {
    close_round(c);
    return NULL;
  }
  wd_error_t *err = wd_producer_fatal(c->prod);
  if (!err) err = wd_producer_txn_commit(c->prod, timeout_ms);
  if (!err) close_round(c);
  return err;
}

static void drop_held(wd_collector_t *c) {
  c->nheld = c->next_held = 0;
  wd_buf_reset(&c->hbuf);
}

wd_error_t *wd_collector_abort(wd_collector_t *c, int timeout_ms) {
  /* never while its commit runs: it may have committed (the caller resolves it first) */
  if (c->bg_started) return busy_error("aborting the transaction");
  drop_held(c);
  c->holding = false;
  wd_producer_offsets_reset(c->prod);
  c->mark = 0;
  for (int k = 0; k < WD_OUT_KINDS; k++) c->mark += c->count[k];
  if (!c->txn_open) {
    c->round_open = false;
    return NULL;
  }
  wd_error_t *err = wd_producer_fatal(c->prod);
  if (!err) err = wd_producer_txn_abort(c->prod, timeout_ms);
  if (!err) close_round(c);
  return err;
}

void wd_collector_wait_registered(wd_collector_t *c, int timeout_ms) {
  if (!c->txn_open || c->bg_started) return;
  wd_producer_wait_ack_after(c->prod, c->txn_acked0, timeout_ms);
}

wd_error_t *wd_collector_wait_acked(wd_collector_t *c, int timeout_ms) {
  if (c->bg_started) return busy_error("waiting for acknowledgements");
  wd_error_t *err = wd_producer_wait_acked(c->prod, timeout_ms);
  if (!err && !c->transactional) c->round_open = false; /* at-least-once: the commit's output is complete */
  return err;
}

wd_error_t *wd_collector_reopen(wd_collector_t *c) {
  if (c->bg_started) return busy_error("re-creating the producer");
  wd_producer_t *np = NULL;
  wd_error_t *err = wd_producer_new(&c->conf, &np);
  for (int attempt = 0; !err && c->transactional; attempt++) { /* at-least-once: nothing to initialise */
    /* a stop bounds it: the owner's budget, 0 once the stop is past its time */
    int ms = c->budget ? c->budget(c->budget_ctx, 30000) : 30000;
    if (ms <= 0) {
      err = wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                         "stopped while re-creating the producer: the last commit was not "
                         "made; its records are read again on restart");
      err->retriable = true;
      break;
    }
    wd_error_t *ierr = wd_producer_txn_init(np, ms);
    if (!ierr) break;
    if (!ierr->retriable || attempt >= 4) err = ierr;
    else wd_error_destroy(ierr);
  }
  if (err) {
    wd_producer_destroy(np);
    return err;
  }
  wd_producer_offsets_carry(np, c->prod); /* the commit history's output ranges of the commit in hand */
  wd_producer_destroy(c->prod); /* its open transaction was resolved by the new one's init */
  c->prod = np;
  wd_producer_set_wait(c->prod, producer_wait, c);
  close_round(c);
  c->generation++;
  wd_log(WD_LOG_INFO, "collector", "producer re-created (transactions initialised)");
  return NULL;
}

wd_error_t *wd_collector_recreate(wd_collector_t *c, const wd_error_t *cause) {
  const char *why = cause ? cause->message : "a fatal producer error";
  if (c->bg_started) return busy_error("re-creating the producer");
  wd_error_t *err = NULL;
  if (cause && cause->fenced) { /* a zombie never goes on */
    err = wd_error_new(WD_ERR_KAFKA, E_PRODUCER_FATAL, "%s", why);
    if (err != wd_error_nomem()) err->fenced = true;
    goto fatal;
  }
  double now = wd_mono_s();
  int recent = 0;
  for (int i = 0; i < WD_RECREATE_MAX; i++)
    if (c->recreated[i] > 0 && now - c->recreated[i] < WD_RECREATE_WINDOW_S) recent++;
  if (recent >= WD_RECREATE_MAX) {
    err = wd_error_new(WD_ERR_KAFKA, E_PRODUCER_FATAL,
                       "the producer failed fatally again (%s) after %d "
                       "re-creations within %d s: stopping; the last commit was not made, its records are read "
                       "again on restart",
                       why, recent, WD_RECREATE_WINDOW_S);
    goto fatal;
  }
  wd_log(WD_LOG_WARN, "collector",
         "the producer failed fatally, not fenced (%s): re-creating it with the same "
         "transactional.id; the open commit is resolved and redone (re-creation %d within %d s, at most %d)",
         why, recent + 1, WD_RECREATE_WINDOW_S, WD_RECREATE_MAX);
  wd_error_t *rerr = wd_collector_reopen(c);
  if (!rerr) {
    c->recreated[c->nrecreated++ % WD_RECREATE_MAX] = now;
    return NULL;
  }
  err = wd_error_new(WD_ERR_KAFKA, E_PRODUCER_FATAL,
                     "the producer failed fatally (%s) and a new one could not "
                     "start: %s",
                     why, rerr->message);
  if (err != wd_error_nomem()) err->fenced = rerr->fenced; /* another process took the transactional.id */
  wd_error_destroy(rerr);
fatal:
  if (err != wd_error_nomem()) {
    err->fatal = true;
    err->retriable = false;
  }
  return err;
}

uint64_t wd_collector_generation(const wd_collector_t *c) { return c->generation; }

void wd_collector_inject_fatal(wd_collector_t *c, int code) {
  wd_log(WD_LOG_WARN, "collector", "fault hook: the producer raises a fatal error (code %d)", code);
  wd_producer_inject_fatal(c->prod, code, "WIDEN_FAULT");
}

void wd_collector_hold(wd_collector_t *c, size_t max_bytes) {
  c->holding = true;
  c->hold_max = max_bytes;
}

bool wd_collector_holding(const wd_collector_t *c) { return c->holding; }

size_t wd_collector_held(const wd_collector_t *c) { return c->nheld - c->next_held; }

wd_error_t *wd_collector_release(wd_collector_t *c) {
  if (c->bg_started) return busy_error("releasing held records");
  c->holding = false;
  wd_error_t *err = NULL;
  if (c->next_held < c->nheld && (err = wd_collector_begin(c))) return err;
  wd_header_t h[8];
  while (c->next_held < c->nheld) {
    const wd_held_t *r = &c->held[c->next_held];
    const uint8_t *d = c->hbuf.data;
    size_t at = r->hoff, nh = r->nh < 8 ? r->nh : 8;
    for (size_t i = 0; i < nh; i++) {
      h[i].name = (const char *)d + at;
      at += strlen(h[i].name) + 1;
      size_t len;
      memcpy(&len, d + at, sizeof(len));
      at += sizeof(len);
      h[i].value = len == SIZE_MAX ? NULL : d + at;
      h[i].len = len == SIZE_MAX ? 0 : len;
      at += len == SIZE_MAX ? 0 : len;
    }
    if ((err = produce(c, c->topics[r->topic], r->partition, r->knull ? NULL : d + r->koff, r->klen,
                       r->vnull ? NULL : d + r->voff, r->vlen, h, nh)))
      return err;
    c->next_held++;
  }
  drop_held(c);
  return NULL;
}

void wd_collector_batch_mark(wd_collector_t *c) {
  c->mark = 0;
  for (int k = 0; k < WD_OUT_KINDS; k++) c->mark += c->count[k];
}

bool wd_collector_batch_sent(const wd_collector_t *c) {
  uint64_t n = 0;
  for (int k = 0; k < WD_OUT_KINDS; k++) n += c->count[k];
  return n != c->mark;
}

uint64_t wd_collector_count(const wd_collector_t *c, wd_out_kind_t kind) {
  return kind < WD_OUT_KINDS ? c->count[kind] : 0;
}

size_t wd_collector_ranges(const wd_collector_t *c, const wd_producer_range_t **out) {
  return wd_producer_offsets(c->prod, out);
}

void wd_collector_ranges_reset(wd_collector_t *c) { wd_producer_offsets_reset(c->prod); }

void wd_collector_poll(wd_collector_t *c) {
  if (!c->bg_started) wd_producer_poll(c->prod); /* else the commit's thread serves the reports */
}

bool wd_collector_unreachable(const wd_collector_t *c) { return !c->bg_started && wd_producer_unreachable(c->prod); }

static void *commit_thread(void *arg) {
  wd_collector_t *c = arg;
  c->bg_err = wd_producer_txn_commit(c->prod, c->bg_timeout_ms);
  atomic_store(&c->bg_done, true);
  return NULL;
}

wd_error_t *wd_collector_commit_start(wd_collector_t *c, int timeout_ms) {
  if (c->bg_started) return busy_error("starting a commit");
  if (!c->txn_open) return NULL; /* nothing to commit: done at once */
  wd_error_t *ferr = wd_producer_fatal(c->prod);
  if (ferr) return ferr;
  c->holding = true; /* records sent meanwhile belong to the next transaction */
  c->bg_timeout_ms = timeout_ms;
  c->bg_err = NULL;
  atomic_store(&c->bg_done, false);
  int rc = pthread_create(&c->bg_thread, NULL, commit_thread, c);
  if (rc) return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "starting the commit's thread: %s", strerror(rc));
  c->bg_started = true;
  return NULL;
}

bool wd_collector_commit_busy(const wd_collector_t *c) { return c->bg_started && !atomic_load(&c->bg_done); }

bool wd_collector_commit_started(const wd_collector_t *c) { return c->bg_started; }

wd_error_t *wd_collector_commit_join(wd_collector_t *c) {
  if (!c->bg_started) return NULL;
  pthread_join(c->bg_thread, NULL);
  c->bg_started = false;
  wd_error_t *err = c->bg_err;
  c->bg_err = NULL;
  if (!err) close_round(c);
  return err;
}

wd_error_t *wd_collector_ensure_topic(wd_collector_t *c, const char *topic, int partitions, const char *const *configs,
                                      int timeout_ms) {
  return wd_producer_ensure_topic(c->prod, topic, partitions, configs, timeout_ms);
}

wd_error_t *wd_collector_partition_count(wd_collector_t *c, const char *topic, int timeout_ms, int *count) {
  return wd_producer_partition_count(c->prod, topic, timeout_ms, count);
}
