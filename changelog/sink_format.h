/*
 * changelog/sink_format.h — sink formats behind one encoder interface: the value formats of the
 * changelog topic and the formats of its keys, each a small table chosen by name from one
 * registry (changelog/sink_format.c), the counterpart of ingest/format.h for the output side.
 *
 * A value format turns the changelog rows of one message (spec §10) into Kafka record values:
 * each call consumes one row, or two for an -U/+U pair that the format writes as one message
 * (debezium-json), and names the row whose key keys the message. A key format turns a row's
 * primary key into the Kafka record key. Adding a format: its encode function (here or in its
 * own file) and one line in the registry.
 *
 * Registry order is the order of the config enums (app/config/config.h: wd_config_sink_format_t
 * debezium-json, changelog-json, avro; wd_config_key_format_t json, string, avro).
 */
#ifndef WD_SINK_FORMAT_H
#define WD_SINK_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "changelog/avro.h"
#include "common/buf.h"
#include "common/error.h"
#include "common/types.h"

/* What encoders may use; everything borrowed. */
typedef struct wd_sink_ctx {
  const wd_schema_t *schema;
  const char *table; /* the table name written into the values (may be NULL) */
  int64_t ts_ms; /* the time written into the values, < 0 for none */
  wd_avro_sink_t *avro; /* the Avro sink with its registered ids (avro formats), else NULL */
} wd_sink_ctx_t;

typedef struct wd_sink_format {
  const char *name; /* "debezium-json" */
  bool needs_registry; /* the Avro formats */
  /* Encodes the message that starts at rows[*i] (i < n) into out (appended), advances *i past
   * the rows it used (also on error) and sets *keyrow to the row whose key keys the message.
   * Errors: E_NOMEM;
   * WD_ERR_INTERNAL for a misuse (no avro sink). */
  wd_error_t *(*encode)(const wd_sink_ctx_t *c, wd_row_t *const *rows, size_t n, size_t *i, const wd_row_t **keyrow,
                        wd_buf_t *out);
} wd_sink_format_t;

typedef struct wd_key_format {
  const char *name; /* "json", "string", "avro" */
  bool needs_registry;
  /* Appends the key of row (borrowed) to out. Errors: E_NOMEM; WD_ERR_INTERNAL (no avro sink). */
  wd_error_t *(*encode)(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out);
} wd_key_format_t;

/* The value format named name, or NULL; the format at registry index i, or NULL. */
const wd_sink_format_t *wd_sink_format_find(const char *name);
const wd_sink_format_t *wd_sink_format_at(int i);

/* The key format named name, or NULL; the one at registry index i, or NULL. */
const wd_key_format_t *wd_key_format_find(const char *name);
const wd_key_format_t *wd_key_format_at(int i);

/* The same format in Kafka Connect JsonConverter's envelope ({"schema","payload"}, Connect's
 * logical types; changelog.h wd_connect_*), for `sink.schemas-enable: true`: debezium-json and
 * the json and string keys have one; NULL for the others (changelog-json, avro). */
const wd_sink_format_t *wd_sink_format_with_schemas(const wd_sink_format_t *f);
const wd_key_format_t *wd_key_format_with_schemas(const wd_key_format_t *f);

#endif
