/*
 * changelog/changelog.h — output formats of the wide table's changelog, and their decoders for
 * `widen tail` and for pipelines that read widen's output.
 *
 * This module owns the bytes of output messages: the Kafka key (the primary key as a JSON
 * object of the key columns, as Debezium writes keys: {"order_id":5}) and the value in one of
 * two formats:
 *
 *   debezium-json   one Debezium envelope per change
 *                     {"before":{..}|null,"after":{..}|null,"op":"c|u|d","ts_ms":N|null,
 *                      "source":{"name":"widen","table":"t"|null}}
 *                   +I -> op c (before null); an -U/+U pair -> ONE message, op u, the -U row as
 *                   before and the +U row as after; -D -> op d (after null).
 *   changelog-json  one record per row kind
 *                     {"op":"+I|-U|+U|-D","table":"t","ts_ms":N,"row":{..full row..}}
 *                   ("table" only when a table name is given, "ts_ms" only when >= 0).
 *
 * Rows are JSON objects naming every column in schema order, values as spec §12.2 writes them
 * (the same conventions as common/json.h): integers and BOOLEAN as JSON numbers/literals,
 * FLOAT/DOUBLE as the shortest text that reads back exactly (binary32 for FLOAT) with NaN,
 * Infinity, -Infinity as strings, DECIMAL as a string with exactly s fraction digits, DATE
 * "YYYY-MM-DD", TIME "hh:mm:ss[.f]", TIMESTAMP[_LTZ] "YYYY-MM-DD hh:mm:ss.fff[fff[fff]]" (UTC for
 * LTZ), BYTES base64, text as JSON strings (control characters, '"' and '\' escaped; bytes that
 * are not UTF-8 replaced by U+FFFD), ARRAY as arrays, ROW as objects, MAP as objects keyed by the
 * canonical text of the key. JSON is written straight into a wd_buf_t (no DOM).
 *
 * Thread: every function is pure (any thread, own buffers).
 */
#ifndef WD_CHANGELOG_H
#define WD_CHANGELOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/types.h"

typedef enum wd_changelog_format {
  WD_CHANGELOG_DEBEZIUM_JSON = 0, /* "debezium-json" */
  WD_CHANGELOG_JSON /* "changelog-json" */
} wd_changelog_format_t;

/* Parses "debezium-json" / "changelog-json" into *out.
 * Errors: WD_ERR_CONFIG "C_BAD_OPTION_VALUE" naming the accepted values. */
wd_error_t *wd_changelog_format_parse(const char *text, wd_changelog_format_t *out);

/* The name of a format; static storage. */
const char *wd_changelog_format_name(wd_changelog_format_t format);

/* ---- JSON writing helpers (also for other modules that write JSON) ------------------------- */

/* Appends p[0..n) as a quoted JSON string (escaping '"', '\', control characters; invalid UTF-8
 * bytes become U+FFFD). 0, or -1 on no memory. */
int wd_changelog_put_string(wd_buf_t *out, const char *p, size_t n);

/* Appends the JSON of value v (borrowed) of type t per spec §12.2 (see above). 0 or -1. */
int wd_changelog_put_value(wd_buf_t *out, const wd_type_t *t, const wd_value_t *v);

/* Appends row (borrowed) as a JSON object of every column of schema. 0 or -1. */
int wd_changelog_put_row(wd_buf_t *out, const wd_schema_t *schema, const wd_row_t *row);

/* ---- encoders: append to out; on error out is left as it was -------------------------------- */

/* The Kafka key of row: {"k1":v1,...} over the primary-key columns in key order.
 * Errors: E_NOMEM. */
wd_error_t *wd_changelog_encode_key_json(const wd_schema_t *schema, const wd_row_t *row, wd_buf_t *out);

/* The Debezium op of a change and the rows its message carries (the debezium-json and Kafka Connect
 * encoders share it): WD_INSERT -> "c" (*before set to NULL, *after required), WD_UPDATE_AFTER -> "u"
 * (*after required), WD_DELETE -> "d" (*after set to NULL, *before required). *op is a static string.
 * Errors: WD_ERR_INTERNAL for WD_UPDATE_BEFORE or a missing required row (nothing is changed). */
wd_error_t *wd_changelog_debezium_op(wd_row_kind_t kind, const wd_row_t **before, const wd_row_t **after,
                                     const char **op);

/* One debezium-json value. kind is the change: WD_INSERT (after required, op c),
 * WD_UPDATE_AFTER (after required, before = the -U row or NULL; op u), WD_DELETE (before
 * required, op d). table (may be NULL) goes to source.table; ts_ms < 0 writes null.
 * Errors: WD_ERR_INTERNAL for WD_UPDATE_BEFORE or a missing required row (pair a -U with its
 * +U first, wd_changelog_pair); E_NOMEM. */
wd_error_t *wd_changelog_encode_debezium_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                              wd_row_kind_t kind, const wd_row_t *before, const wd_row_t *after,
                                              wd_buf_t *out);

/* One changelog-json value for row (borrowed; its kind is written as "op").
 * Errors: E_NOMEM. */
wd_error_t *wd_changelog_encode_changelog_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                               const wd_row_t *row, wd_buf_t *out);

/* Walks a list of changelog rows as debezium-json messages: at rows[*i] (i < n) sets *kind,
 * *before, *after for wd_changelog_encode_debezium_json and advances *i by one, or by two when
 * an -U is followed by a +U (one update message). A +U without a preceding -U gives before
 * NULL; an -U without a following +U is encoded as a delete (WD_DELETE). */
void wd_changelog_pair(wd_row_t *const *rows, size_t n, size_t *i, wd_row_kind_t *kind, const wd_row_t **before,
                       const wd_row_t **after);

/* ---- decoders --------------------------------------------------------------------------- */

/* For `widen tail`: appends one JSON line per row-kind record of the message,
 *   {"op":"+U","key":<key>,"row":<row>}\n
 * (a debezium-json update expands to an -U line (when before is not null) and a +U line; c
 * and r give +I, d gives -D). The key is the key's JSON text when the key bytes are a JSON
 * object, a JSON string of the bytes otherwise, null for a null key; the row is the message's
 * own JSON text of the image/row, unchanged. A null or empty value (tombstone) appends nothing.
 * A Kafka Connect {"schema","payload"} envelope around a debezium-json value is unwrapped.
 * *nlines (may be NULL) is the number of lines appended.
 * Errors (out unchanged): WD_ERR_DECODE "E_DECODE" for a value that is not a JSON object, an
 * unknown op, or a missing/non-object row/before/after where one is needed; E_NOMEM. */
wd_error_t *wd_changelog_decode_tail(wd_changelog_format_t format, const void *key, size_t key_len, const void *value,
                                     size_t len, wd_buf_t *out, size_t *nlines);

/* Typed decoding of one value back into rows of schema (borrowed): rows[0..*n) are new rows
 * owned by the caller (wd_row_destroy), *n <= 2, each with its row kind (debezium-json u:
 * -U then +U, or +U alone when before is null; c/r: +I; d: -D). A tombstone gives *n = 0.
 * A value in Kafka Connect's envelope with a schema (sink.schemas-enable, wd_connect_encode_debezium)
 * is read with Connect's forms of DECIMAL, DATE, TIME and TIMESTAMP (of top-level columns).
 * Errors (nothing returned): "E_DECODE" as for wd_changelog_decode_tail; WD_ERR_RECORD "E_TYPE"
 * / "E_ARITH_OVERFLOW" / "E_UNKNOWN_COLUMN" from wd_row_from_json (the message says which
 * image); E_NOMEM. */
wd_error_t *wd_changelog_decode_rows(wd_changelog_format_t format, const wd_schema_t *schema, const void *value,
                                     size_t len, wd_row_t *rows[2], size_t *n);

/* ---- Kafka Connect JsonConverter envelope (changelog/encode_connect.c, `sink.schemas-enable`) ----
 * Messages as Kafka Connect's JsonConverter with schemas.enable=true writes them:
 * {"schema": <Connect schema>, "payload": <value>}, with Connect's logical types for DECIMAL
 * (org.apache.kafka.connect.data.Decimal: base64 two's complement bytes, scale parameter), DATE
 * (Date: days), TIME (Time: milliseconds of the day) and TIMESTAMP/TIMESTAMP_LTZ (Timestamp:
 * milliseconds since the epoch; finer digits dropped). Mapping of every type: encode_connect.c.
 * Each appends to out; on error out is as it was. Errors: E_NOMEM (wd_error_nomem); the
 * debezium value also WD_ERR_INTERNAL for the misuses wd_changelog_encode_debezium_json reports. */

/* The key: a struct named "<table>.Key" (table NULL: "widen.Key") of the primary-key columns of
 * row (borrowed), as Debezium's keys are. */
wd_error_t *wd_connect_encode_key(const wd_schema_t *schema, const char *table, const wd_row_t *row, wd_buf_t *out);
/* A string key: schema {"type":"string"}, payload the text p[0..n). */
wd_error_t *wd_connect_encode_string_key(const char *text, size_t n, wd_buf_t *out);
/* A Debezium change event (arguments as wd_changelog_encode_debezium_json) in a struct named
 * "<table>.Envelope" with fields before/after ("<table>.Value", optional), source {name, table},
 * op and ts_ms: what Debezium's JDBC sink connector and ExtractNewRecordState recognise as a
 * Debezium envelope. */
wd_error_t *wd_connect_encode_debezium(const wd_schema_t *schema, const char *table, int64_t ts_ms, wd_row_kind_t kind,
                                       const wd_row_t *before, const wd_row_t *after, wd_buf_t *out);

#endif
