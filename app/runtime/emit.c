/*
 * app/runtime/emit.c — the changelog's output (see emit.h).
 */
#include "app/runtime/emit.h"

#include <inttypes.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "ingest/schema_registry.h"
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

/* Registers schema_json under subject, retrying with backoff (logged) while the registry does not
 * answer, for at most about a minute. */
static wd_error_t *register_schema(wd_registry_t *reg, const char *subject, const char *schema_json,
                                   const volatile sig_atomic_t *start_stop, int32_t *id) {
  long waited = 0;
  for (unsigned attempt = 0;; attempt++) {
    wd_error_t *err = wd_registry_register(reg, subject, schema_json, id);
    if (!err || !err->retriable || waited >= 60000) return err;
    if (start_stop && *start_stop) { /* stopped during the start: say what it waited for */
      wd_error_t *serr = wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                                      "stopped during the start while the schema registry "
                                      "did not answer (%s); nothing was consumed or produced",
                                      err->message);
      wd_error_destroy(err);
      return serr;
    }
    long ms = wd_registry_backoff_ms(attempt);
    wd_log(WD_LOG_WARN, "pipeline", "%s; retrying in %ld ms", err->message, ms);
    wd_error_destroy(err);
    for (long left = ms; left > 0 && !(start_stop && *start_stop); left -= 100) wd_sleep_ms(left > 100 ? 100 : left);
    waited += ms;
  }
}

wd_error_t *wd_emit_setup_avro(const wd_config_t *cfg, const wd_schema_t *schema,
                               const volatile sig_atomic_t *start_stop, wd_registry_t **registry,
                               wd_avro_sink_t **avro) {
  wd_error_t *err = NULL;
  if (!cfg->schema_registry.url) return NULL;
  wd_registry_conf_t rc = {cfg->schema_registry.url, cfg->schema_registry.username, cfg->schema_registry.password,
                           (long)cfg->schema_registry.timeout_ms};
  if ((err = wd_registry_new(&rc, registry))) return err;
  bool value = cfg->sink.format == WD_CONFIG_SINK_AVRO, key = cfg->sink.key_format == WD_CONFIG_KEY_AVRO;
  if (!value && !key) return NULL;
  if ((err = wd_avro_sink_new(schema, cfg->table.name, avro))) return err;
  int32_t vid = 0, kid = 0;
  char subject[600];
  if (value) {
    snprintf(subject, sizeof(subject), "%s-value", cfg->sink.topic);
    if ((err = register_schema(*registry, subject, wd_avro_sink_value_schema(*avro), start_stop, &vid))) return err;
  }
  if (key) {
    snprintf(subject, sizeof(subject), "%s-key", cfg->sink.topic);
    if ((err = register_schema(*registry, subject, wd_avro_sink_key_schema(*avro), start_stop, &kid))) return err;
  }
  wd_avro_sink_set_ids(*avro, vid, kid);
  return NULL;
}
