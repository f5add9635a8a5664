/*
 * app/runtime/emit.h — the changelog's output: rows encoded in the sink's value and key formats
 * (changelog/sink_format.h) and produced, keyed by primary key, into the open commit through the
 * record collector (app/runtime/collector.h).
 *
 * Three callers, one encoder: a poll batch's changelog (app/runtime/batch.h), a task's reconcile
 * with this process's lookup tables (rows of no message), and a rebuild's difference
 * (app/runtime/rebuild.h, one output message at a time through wd_emit_encode). The caller gives the
 * rows and, per row, the message they came from with its flags; the emitter keeps no reference to
 * them.
 *
 * An output over the producer's message.max.bytes never stalls the pipeline: the source message
 * that caused it is rejected through the caller's too_large hook (the batch dead-letters it with
 * E_OUTPUT_TOO_LARGE; the state keeps the change), or, for rows of no message, only logged.
 *
 * Ownership: the emitter owns its two encode buffers; everything in wd_emitter_conf_t is borrowed
 * and must outlive it. Thread: the pipeline's.
 */
#ifndef WD_APP_EMIT_H
#define WD_APP_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <signal.h>

#include "app/config/config.h"
#include "app/runtime/collector.h"
#include "changelog/avro.h"
#include "changelog/sink_format.h"
#include "common/kafka_conf.h"
#include "common/types.h"
#include "ingest/schema_registry.h"

typedef struct wd_emitter_conf {
  const wd_schema_t *schema; /* the table's */
  const char *table; /* the table name written into the values */
  const char *topic; /* the changelog (sink) topic */
  const wd_sink_format_t *fmt; /* the value format */
  const wd_key_format_t *key_fmt; /* the key format */
  wd_avro_sink_t *avro; /* the Avro sink with its registered ids, or NULL */
  wd_collector_t *coll; /* where the messages go */
  bool no_output; /* replay --no-output: rows counted, nothing encoded or sent */
  uint64_t *changes_out, *messages_out; /* counters the emitter adds to (rows, output messages) */
} wd_emitter_conf_t;

typedef struct wd_emitter {
  wd_emitter_conf_t c;
  wd_buf_t kbuf, vbuf; /* the output message being encoded: its key and value (owned) */
} wd_emitter_t;

/* The rows to emit and where they came from. Only rows and n are required: with the rest NULL
 * the rows are one message's (a task's reconcile), sent, and an output too large is logged. */
typedef struct wd_emit_rows {
  wd_row_t *const *rows;
  size_t n;
  const size_t *msg; /* per row: the index of its source message (a message's rows are contiguous) */
  const bool *quiet; /* per message: its flag "only rebuilds state" (rows neither sent nor counted), or NULL */
  const wd_kmsg_t *msgs; /* per message: named in the log of an output too large, or NULL */
  /* an output of message msg too large for the producer: reason (owned by the hook) rejects the
   * message; NULL: the output is only logged as not sent */
  void (*too_large)(void *ctx, size_t msg, wd_error_t *reason);
  void *ctx;
} wd_emit_rows_t;

/* Sets up e from conf (copied; its pointers borrowed). Nothing allocated until the first row. */
void wd_emitter_init(wd_emitter_t *e, const wd_emitter_conf_t *conf);
/* Frees the encode buffers (accepts a zeroed emitter). */
void wd_emitter_free(wd_emitter_t *e);

/* Encodes the output message that starts at rows[*i] (i < n): its value into e->vbuf, its key
 * into e->kbuf, and advances *i past the rows it took (at least one). Errors: the formats'
 * (E_NOMEM; WD_ERR_INTERNAL: an Avro format without the Avro sink, a format that took no row). */
wd_error_t *wd_emit_encode(wd_emitter_t *e, wd_row_t *const *rows, size_t n, size_t *i);

/* Encodes and produces r->rows[0..n) in the sink's formats (or counts them only: no_output; rows
 * of a quiet message are skipped unencoded and uncounted), adding to the counters. An output
 * over message.max.bytes goes to r->too_large (see above) and the rows after it go on. Errors: the
 * collector's (abortable ones included: the caller aborts the commit), the encoders'. */
wd_error_t *wd_emit_changelog(wd_emitter_t *e, const wd_emit_rows_t *r);

/* Start-up, when the config has a schema registry: its client into *registry (owned by the caller:
 * wd_registry_destroy; the Avro decoders use it too) and, for the avro sink format or Avro keys,
 * the Avro sink of schema into *avro (owned by the caller: wd_avro_sink_destroy) with its schemas
 * registered under <sink topic>-value and <sink topic>-key, retried with backoff (logged) while
 * the registry does not answer, for at most about a minute. Nothing when there is no registry.
 * Errors: the registry's (E_REGISTRY), E_STOPPED when start_stop (may be NULL) was set during
 * a wait, E_NOMEM. */
wd_error_t *wd_emit_setup_avro(const wd_config_t *cfg, const wd_schema_t *schema,
                               const volatile sig_atomic_t *start_stop, wd_registry_t **registry,
                               wd_avro_sink_t **avro);

#endif
