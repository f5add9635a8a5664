/*
 * app/runtime/emit.c — the changelog's output (see emit.h).
 */
#include "app/runtime/emit.h"

#include <inttypes.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "sink/producer.h"

void wd_emitter_init(wd_emitter_t *e, const wd_emitter_conf_t *conf) { *e = (wd_emitter_t){.c = *conf}; }

void wd_emitter_free(wd_emitter_t *e) {
  wd_buf_free(&e->kbuf);
  wd_buf_free(&e->vbuf);
}

static wd_error_t *encode_at(wd_emitter_t *e, const wd_sink_ctx_t *sc, wd_row_t *const *rows, size_t n, size_t *i) {
  const wd_row_t *keyrow = NULL;
  size_t at = *i;
  wd_buf_reset(&e->kbuf);
  wd_buf_reset(&e->vbuf);
  wd_error_t *err = e->c.fmt->encode(sc, rows, n, i, &keyrow, &e->vbuf);
  if (!err) err = e->c.key_fmt->encode(sc, keyrow, &e->kbuf);
  if (!err && *i == at) /* every format takes at least one row */
    err = wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "sink format %s took no row", e->c.fmt->name);
  return err;
}

wd_error_t *wd_emit_encode(wd_emitter_t *e, wd_row_t *const *rows, size_t n, size_t *i) {
  wd_sink_ctx_t sc = {e->c.schema, e->c.table, wd_wall_ms(), e->c.avro};
  return encode_at(e, &sc, rows, n, i);
}

/* An output that can never be delivered must not stall the pipeline: the source message that caused
 * it is rejected with the reason through r->too_large (the state keeps the change), or logged. */
static void too_large(wd_emitter_t *e, const wd_emit_rows_t *r, size_t src, const wd_error_t *err) {
  static const wd_kmsg_t none = {.topic = "(reconcile)"};
  const wd_kmsg_t *m = r->msgs ? &r->msgs[src] : &none; /* the rows encoded are this message's */
  wd_log(WD_LOG_ERROR, "pipeline",
         "%s[%d]@%" PRId64 ": its %zu-byte changelog message is over the producer's "
         "message.max.bytes; %s (raise message.max.bytes under sink.properties and the topic's "
         "max.message.bytes)",
         m->topic, m->partition, m->offset, e->vbuf.len, r->too_large ? "dead-lettered" : "not sent");
  if (r->too_large)
    r->too_large(r->ctx, src,
                 wd_error_new(WD_ERR_RECORD, E_OUTPUT_TOO_LARGE,
                              "%s[%d]@%" PRId64 ": the changelog message it caused is %zu bytes, over the "
                              "producer's message.max.bytes (%s); the table state has the change",
                              m->topic, m->partition, m->offset, e->vbuf.len, err->message));
}

wd_error_t *wd_emit_changelog(wd_emitter_t *e, const wd_emit_rows_t *r) {
  wd_sink_ctx_t sc = {e->c.schema, e->c.table, wd_wall_ms(), e->c.avro};
  for (size_t i = 0; i < r->n;) {
    size_t src = r->msg ? r->msg[i] : 0;
    bool quiet = r->quiet && r->quiet[src];
    if (e->c.no_output || quiet) {
      /* nothing is sent: skip the rows of this source message (they are contiguous) unencoded */
      size_t at = i;
      while (i < r->n && (r->msg ? r->msg[i] : 0) == src) i++;
      if (!quiet) *e->c.changes_out += i - at;
      continue;
    }
    size_t at = i;
    const wd_row_t *keyrow = NULL;
    wd_buf_reset(&e->kbuf);
    wd_buf_reset(&e->vbuf);
    wd_error_t *err = e->c.fmt->encode(&sc, r->rows, r->n, &i, &keyrow, &e->vbuf);
    *e->c.changes_out += i - at;
    if (!err) err = e->c.key_fmt->encode(&sc, keyrow, &e->kbuf);
    if (!err)
      err = wd_collector_send(e->c.coll, WD_OUT_CHANGELOG, e->c.topic, -1, e->kbuf.data, e->kbuf.len, e->vbuf.data,
                              e->vbuf.len);
    if (err && wd_error_is(err, WD_EID_E_SINK_PRODUCE) && err->code == WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE) {
      too_large(e, r, src, err);
      wd_error_destroy(err);
      continue;
    }
    if (err) return err;
    (*e->c.messages_out)++;
  }
  return NULL;
}
