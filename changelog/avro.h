/*
 * changelog/avro.h — the `avro` changelog format: the wide table's rows as Avro records in the
 * Confluent wire format (magic byte 0, the 4-byte big-endian schema id, then the Avro binary
 * encoding), one message per row kind (like changelog-json).
 *
 * This module owns the Avro schemas of the output and the bytes of its messages. It does not
 * talk to the registry: the caller registers wd_avro_sink_value_schema() under `<topic>-value`
 * (and wd_avro_sink_key_schema() under `<topic>-key` for Avro keys), then gives the ids to
 * wd_avro_sink_set_ids().
 *
 * Value schema: record `<table>` (namespace "widen") with first the field `_row_kind` (string
 * "+I", "-U", "+U" or "-D") then one field per wide column in table order. A column that allows
 * NULL is the union ["null", T] with default null; NOT NULL columns and primary-key columns are
 * plain T. Column types:
 *   BOOLEAN boolean; TINYINT SMALLINT INT int; BIGINT long; FLOAT float; DOUBLE double;
 *   DECIMAL(p,s) bytes with logicalType decimal, precision p, scale s (big-endian two's
 *   complement of the unscaled value, shortest form, exact); CHAR VARCHAR STRING string;
 *   BYTES bytes; DATE int (date); TIME(p) int (time-millis) for p <= 3, else long (time-micros);
 *   TIMESTAMP(p) and TIMESTAMP_LTZ(p) long (timestamp-millis) for p <= 3, else long
 *   (timestamp-micros) (nanoseconds beyond are dropped); ARRAY<T> array; MAP<K,V> map (Avro map
 *   keys are strings: the canonical text of K, wd_value_format); ROW<...> a nested record named
 *   `<table>_<path>`.
 * Key schema: record `<table>_key` of the primary-key columns (not nullable).
 *
 * Thread: a sink object is used by one thread at a time (encoding is pure after set_ids).
 */
#ifndef WD_CHANGELOG_AVRO_H
#define WD_CHANGELOG_AVRO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/types.h"

typedef struct wd_avro_sink wd_avro_sink_t;

/* Builds the value and key schemas of schema (borrowed: it must outlive the sink) for table name
 * table (borrowed). *out is owned by the caller (wd_avro_sink_destroy).
 * Errors: WD_ERR_CONFIG "C_AVRO_NAME" when the table or a column/field name is not a valid Avro
 * name ([A-Za-z_][A-Za-z0-9_]*) or a column is named `_row_kind`; E_NOMEM. */
wd_error_t *wd_avro_sink_new(const wd_schema_t *schema, const char *table, wd_avro_sink_t **out);

/* Releases s; accepts NULL. */
void wd_avro_sink_destroy(wd_avro_sink_t *s);

/* The value / key schema as Avro JSON text (with logicalType attributes), borrowed from s. */
const char *wd_avro_sink_value_schema(const wd_avro_sink_t *s);
const char *wd_avro_sink_key_schema(const wd_avro_sink_t *s);

/* Sets the registry ids written into the wire-format headers (key_id is used only by
 * wd_avro_sink_encode_key). */
void wd_avro_sink_set_ids(wd_avro_sink_t *s, int32_t value_id, int32_t key_id);

/* Appends the value message of row (borrowed; its kind goes to _row_kind) to out.
 * Errors (out unchanged): E_NOMEM. */
wd_error_t *wd_avro_sink_encode_value(const wd_avro_sink_t *s, const wd_row_t *row, wd_buf_t *out);

/* Appends the Avro key message (the primary-key record) of row to out. Errors: E_NOMEM. */
wd_error_t *wd_avro_sink_encode_key(const wd_avro_sink_t *s, const wd_row_t *row, wd_buf_t *out);

/* Appends the Avro binary encoding (no header) of v of type t as the sink writes it (nullable
 * when t allows NULL and nullable is true). 0, or -1 on no memory. For tests and benchmarks. */
int wd_avro_put_value(wd_buf_t *out, const wd_type_t *t, bool nullable, const wd_value_t *v);

#endif
