/*
 * ingest/source.h — sources and the change records one source message decodes into.
 *
 * A source is a set of Kafka topics, their format, and a column mapping: for every wide-table
 * column the source owns, where its value comes from. Decoding one Kafka record of a source gives
 * zero or more change records, each a full-width wd_row_t of the wide table (columns the source
 * does not own are NULL) with its row kind (spec §2). They form one message (spec §10.1) and go
 * to wd_message_apply() (join/merge.h) as they are.
 *
 * This module owns: wd_source_t and its mapping syntax, wd_kafka_meta_t (the Kafka record's
 * metadata as a plain struct: decoders never include librdkafka), wd_changes_t (the reusable
 * output container) and the decoders' entry points. It does not consume Kafka.
 *
 * ---- Mapping syntax (the `spec` of wd_source_add_column) -----------------------------------
 *
 *   weight               a field of the row image: `after` for +I/+U, `before` for -U/-D
 *   address.city         a nested field of the row image (a struct inside the image)
 *   tags.0               a segment of digits indexes a JSON array (and names a key in an object)
 *   $.ts_ms              a path in the event payload (the envelope): `$.ts_ms`, `$.op`,
 *   $.source.ts_ms       `$.source.ts_ms`, `$.source.lsn`, `$.source.pos`, `$.source.file`, any
 *                        dotted path; with the {"schema","payload"} envelope it is relative to
 *                        `payload`. The same value goes into every record of the message.
 *   $key.id              a path in the Kafka record key, read as Debezium JSON (a bare object or
 *                        the {"schema","payload"} envelope). Lets a delete whose images are null
 *                        (Postgres REPLICA IDENTITY DEFAULT) still carry its key.
 *   $kafka.topic         the Kafka record's own metadata: topic (text), partition, offset,
 *   $kafka.partition     timestamp (ms since epoch; into integers, DECIMAL, TIMESTAMP[_LTZ],
 *   $kafka.offset        STRING) and key (the raw key bytes; into STRING or BYTES). A value the
 *   $kafka.timestamp     metadata does not have (negative partition/offset/timestamp, NULL
 *   $kafka.key           topic or key) is NULL.
 *
 * A NULL spec means the column's own name (a row-image field). Segments are separated by `.`; a
 * segment that contains `.`, starts with `$` or is otherwise awkward can be quoted with backticks
 * (`` `a.b`.c `` is the key "a.b" then "c"; a doubled backtick inside quotes is one backtick).
 * Empty segments, unknown `$...` prefixes and unknown `$kafka.` fields are config errors.
 * Primary-key columns are mapped like any other column; wd_source_check() refuses a source that
 * leaves one unmapped, and the decoder rejects a record whose key column is missing or NULL
 * (E_NO_KEY).
 *
 * ---- Debezium JSON values into wide-table column types --------------------------------------
 *
 * JSON null (or a field absent from the image) is NULL for every type. Otherwise:
 *   BOOLEAN       true/false; the integers 0 and 1 (MySQL TINYINT(1) arrives as int16).
 *   TINYINT..BIGINT  a JSON number whose value is an integer ("2.0E10" is accepted, "1.5" is
 *                 not), range-checked; a string holding such a number; base64 bytes when the
 *                 envelope schema says org.apache.kafka.connect.data.Decimal (BIGINT UNSIGNED,
 *                 scale 0); a VariableScaleDecimal struct {"scale","value"}.
 *   FLOAT/DOUBLE  a JSON number (FLOAT rounded once, straight from the text, to binary32); the
 *                 strings "NaN", "Infinity", "-Infinity" or a numeric string; Decimal bytes.
 *   DECIMAL(p,s)  a JSON number, parsed exactly from its text (never through a double); a string
 *                 "12.30"; base64 of the big-endian two's complement unscaled value, its scale
 *                 from the envelope schema's parameters.scale (without a schema: the column's
 *                 scale; a string that is valid decimal text is read as text first); a
 *                 VariableScaleDecimal struct. More fraction digits than s round HALF_UP;
 *                 |value| >= 10^(p-s) is E_TYPE.
 *   DATE          days since 1970-01-01 (io.debezium.time.Date) in the years 0001-9999, or
 *                 "YYYY-MM-DD".
 *   TIME(p)       an integer in the unit of the envelope schema's field name
 *                 (io.debezium.time.Time ms, MicroTime µs, NanoTime ns, Connect's Time ms);
 *                 without a schema name the source option `time-unit` (millis, micros, nanos;
 *                 precision: ms for p <= 3, µs for 4-6, ns above; the default `auto` refuses an
 *                 integer without a schema name: WD_ERR_CONFIG C_TEMPORAL_UNIT, the pipeline
 *                 stops; note MySQL's default adaptive_time_microseconds sends MicroTime for
 *                 every TIME column); or "hh:mm[:ss[.fffffffff]]" (a trailing "Z" is allowed).
 *                 0 <= t < 24h.
 *   TIMESTAMP(p), TIMESTAMP_LTZ(p)  an integer in the unit of the schema name
 *                 (io.debezium.time.Timestamp ms, MicroTimestamp µs, NanoTimestamp ns,
 *                 io.debezium.time.Date days, Connect's Timestamp ms and Date days); without one,
 *                 for `$.`/`$key.` paths whose last segment ends in _ms/_us/_ns that unit, else
 *                 the option `timestamp-unit` (as time-unit: `auto` refuses, C_TEMPORAL_UNIT);
 *                 the instant must lie in the years 0001-9999 (else E_TYPE); or an ISO-8601 string
 *                 "YYYY-MM-DD[T| ]hh:mm[:ss[.f{1,9}]][Z|±hh[:mm]]" (ZonedTimestamp). A zone
 *                 offset is applied: the value is the UTC instant, for TIMESTAMP as well as for
 *                 TIMESTAMP_LTZ; a string without zone is taken as is (as UTC for LTZ).
 *   TIME/TIMESTAMP values finer than p are truncated (towards the past) to p digits.
 *   BYTES         base64 (io.debezium.data.Bits too); the raw bytes of the string when the
 *                 envelope schema declares the field "type":"string".
 *   CHAR/VARCHAR/STRING  a JSON string, unescaped (\uXXXX and surrogate pairs; a lone surrogate
 *                 is E_DECODE); any other JSON value as its text exactly as it appears in the
 *                 message (12345.110 -> "12345.110", true -> "true", an object -> its JSON).
 *                 CHAR(n)/VARCHAR(n) lengths are not enforced.
 *   ARRAY/MAP/ROW JSON arrays/objects (or a string holding JSON, io.debezium.data.Json) read by
 *                 wd_value_from_json (common/json.h).
 *
 * JSON is tokenised with jsmn: fields the source does not map are not validated beyond
 * tokenisation, and raw (unescaped) UTF-8 is passed through without validation. In one object
 * the last of several equal keys wins.
 */
#ifndef WD_SOURCE_H
#define WD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/hindex.h"
#include "common/types.h"

/* ---- formats, options ------------------------------------------------------------------- */

/* A source format: an index into the format registry (ingest/format.h, wd_format_of), which
 * has debezium-json, debezium-avro, canal-json, maxwell-json, ogg-json and changelog-json. */
typedef int wd_source_format_t;
#define WD_FMT_DEBEZIUM_JSON                                                                                           \
  0 /* "debezium-json": Debezium change events, JsonConverter, with or
                                  without schemas.enable (also widen's debezium-json output) */
#define WD_FMT_DEBEZIUM_AVRO                                                                                           \
  1 /* "debezium-avro": Confluent wire format through a schema registry
                                  (ingest/decode_avro.h) */

/* Integer unit of TIME/TIMESTAMP values that carry no schema name (option time-unit,
 * timestamp-unit). */
typedef enum wd_time_unit {
  WD_UNIT_AUTO = 0, /* the record's type decides (envelope schema name, Avro logical type); an
                       integer that has none is refused (C_TEMPORAL_UNIT), never guessed */
  WD_UNIT_MILLIS,
  WD_UNIT_MICROS,
  WD_UNIT_NANOS,
  WD_UNIT_PRECISION /* declared by the user: the source columns have the wide columns' precisions,
                       so Debezium's adaptive mode sends ms for p <= 3, µs for 4-6, ns above */
} wd_time_unit_t;

/* How a schemaless JSON string goes into a DECIMAL column (option decimal-encoding). */
typedef enum wd_decimal_encoding {
  WD_DECIMAL_AUTO = 0, /* decimal text when it is one, else well-formed base64 bytes */
  WD_DECIMAL_TEXT, /* always decimal text (decimal.handling.mode=string) */
  WD_DECIMAL_BASE64 /* always base64 bytes (decimal.handling.mode=precise) */
} wd_decimal_encoding_t;

/* What happens to a delete whose sequence field is NULL or absent because the record carries
 * only the key (option delete-without-sequence; app/runtime/pipeline.c applies it, the status line
 * counts such deletes). */
typedef enum wd_delete_no_seq {
  WD_DELETE_NO_SEQ_APPLY = 0, /* the sequence field is taken from the stored row: the delete applies */
  WD_DELETE_NO_SEQ_DEAD_LETTER, /* rejected to the dead-letter topic (E_DELETE_NO_SEQUENCE) */
  WD_DELETE_NO_SEQ_IGNORE /* not applied (the merge would order it oldest), only counted */
} wd_delete_no_seq_t;

/* Source options, one row each (for the YAML loader and the generated option reference).
 * The array wd_source_options ends with a row whose name is NULL. */
typedef struct wd_source_option {
  const char *name; /* "time-unit" */
  const char *values; /* "auto|millis|micros|nanos" */
  const char *def; /* "auto" */
  const char *description; /* one sentence */
} wd_source_option_t;
extern const wd_source_option_t wd_source_options[];

/* ---- the mapping -------------------------------------------------------------------------- */

typedef enum wd_map_kind {
  WD_MAP_IMAGE = 0, /* a row-image field: "weight", "address.city" */
  WD_MAP_ENVELOPE, /* a payload path: "$.source.ts_ms" */
  WD_MAP_KEY, /* a Kafka key path: "$key.id" */
  WD_MAP_KAFKA /* Kafka metadata: "$kafka.offset" */
} wd_map_kind_t;

typedef enum wd_kafka_field {
  WD_KAFKA_TOPIC = 0,
  WD_KAFKA_PARTITION,
  WD_KAFKA_OFFSET,
  WD_KAFKA_TIMESTAMP,
  WD_KAFKA_KEY
} wd_kafka_field_t;

/* One mapped column. All pointers owned by the source. */
typedef struct wd_source_col {
  int col; /* index into the wide schema's columns */
  wd_map_kind_t kind;
  char *spec; /* the mapping text as given (or the column name), for messages */
  size_t nseg; /* path segments (IMAGE, ENVELOPE, KEY); 0 for KAFKA */
  char **seg; /* unquoted segment texts, NUL-terminated */
  size_t *seglen;
  wd_kafka_field_t kafka; /* KAFKA only */
  wd_time_unit_t path_unit; /* ENVELOPE/KEY: unit implied by a _ms/_us/_ns suffix, else AUTO */
  int next_same; /* private: next IMAGE mapping with the same first segment, or -1 */
} wd_source_col_t;

/* A source. Build it with the functions below; other modules read its fields and never write
 * them. */
typedef struct wd_source {
  char *name; /* owned */
  wd_source_format_t format;
  size_t ntopics;
  char **topics; /* owned */
  size_t ncols;
  wd_source_col_t *cols; /* owned, in the order they were added */
  wd_time_unit_t time_unit; /* option time-unit */
  wd_time_unit_t timestamp_unit; /* option timestamp-unit */
  wd_decimal_encoding_t decimal_encoding; /* option decimal-encoding (when decimal_encoding_set) */
  bool decimal_encoding_set; /* else the format's default (wd_format_decimal_encoding) */
  wd_delete_no_seq_t delete_without_sequence; /* option delete-without-sequence */
  /* option unavailable.value.placeholder (owned, NUL-terminated; NULL: none; default for the
   * debezium formats set by wd_source_new) and its base64 form */
  char *placeholder, *placeholder_b64;
  size_t placeholder_len, placeholder_b64_len;
  size_t schema_ncols; /* ncols of the schema the mapping was built for */
  /* private: index (common/hindex.h) over the first segment of IMAGE mappings -> index in cols
   * (the first of those sharing it; the others follow through next_same); slot NULL before the
   * first IMAGE mapping */
  wd_hindex_t hash;
  /* private: a number no other source (or earlier mapping of this one) had, renewed by each
   * wd_source_add_column: decoders key what they remember of a source's mapping by it */
  uint64_t serial;
} wd_source_t;

/* Creates an empty source named name (copied) of the given format. *out is owned by the
 * caller (wd_source_destroy). Errors: WD_ERR_CONFIG "C_BAD_MAPPING" when name is NULL or
 * empty; E_NOMEM. */
wd_error_t *wd_source_new(const char *name, wd_source_format_t format, wd_source_t **out);

/* Releases src and everything it owns; accepts NULL. */
void wd_source_destroy(wd_source_t *src);

/* Parses a format name (one of the registry, ingest/format.h) into *out.
 * Errors: WD_ERR_CONFIG "C_BAD_OPTION_VALUE" naming the accepted values. */
wd_error_t *wd_source_format_parse(const char *text, wd_source_format_t *out);

/* The name of a format ("debezium-json"); static storage. */
const char *wd_source_format_name(wd_source_format_t format);

/* Adds a topic (copied). Errors: WD_ERR_CONFIG "C_BAD_MAPPING" for a NULL/empty name or a topic
 * listed twice; E_NOMEM. */
wd_error_t *wd_source_add_topic(wd_source_t *src, const char *topic);

/* Maps wide-table column `column` of schema (borrowed; the same schema must be passed to every
 * call and to the decoder) from spec (syntax above; NULL = the column's own name).
 * Errors (WD_ERR_CONFIG; src unchanged on error):
 *   C_UNKNOWN_COLUMN  column is not in schema;
 *   C_DUPLICATE_MAPPING  the column is already mapped by this source;
 *   C_BAD_MAPPING     spec does not parse (empty segment, unterminated backtick, unknown `$`
 *                     prefix or `$kafka.` field), or a `$kafka.` field cannot go into the
 *                     column's type (topic: text; partition/offset: integers, DECIMAL, STRING;
 *                     timestamp: also TIMESTAMP/TIMESTAMP_LTZ; key: STRING/BYTES), or the
 *                     schema differs in width from the one used before;
 *   E_NOMEM. */
wd_error_t *wd_source_add_column(wd_source_t *src, const wd_schema_t *schema, const char *column, const char *spec);

/* Sets a source option (see wd_source_options): "time-unit" / "timestamp-unit" with value
 * auto|millis|micros|nanos, "decimal-encoding" auto|text|base64, "delete-without-sequence"
 * apply|dead-letter|ignore, "unavailable.value.placeholder" any text (empty: none; E_NOMEM).
 * Errors: WD_ERR_CONFIG "C_UNKNOWN_OPTION" for another key,
 * "C_BAD_OPTION_VALUE" for a value outside the list (the message lists it). */
wd_error_t *wd_source_set_option(wd_source_t *src, const char *key, const char *value);

/* Whether value v (borrowed, of type t) is src's unavailable.value.placeholder: a STRING, CHAR,
 * VARCHAR or BYTES value whose bytes are the placeholder's, or the base64 text of them (Debezium
 * sends a binary column's placeholder as base64 in JSON). Such a value is not carried: the decoder
 * leaves the column absent (wd_row_t.absent) and the merge keeps the stored value. False when the
 * source has no placeholder, for NULL and for other types. */
bool wd_source_unavailable(const wd_source_t *src, const wd_type_t *t, const wd_value_t *v);

/* Checks a fully built source against schema, once at start-up.
 * Errors (WD_ERR_CONFIG): C_SOURCE_NO_KEY when a primary-key column is not mapped (the message
 * names it), C_SOURCE_NO_TOPIC when no topic was added, C_BAD_MAPPING when schema is not the
 * one the mapping was built for (different width), C_UNSUPPORTED_FORMAT for a format index
 * outside the registry. */
wd_error_t *wd_source_check(const wd_source_t *src, const wd_schema_t *schema);

/* ---- Kafka metadata ---------------------------------------------------------------------- */

/* What a decoder may know about the Kafka record besides its value. Everything is borrowed. */
typedef struct wd_kafka_meta {
  const char *topic; /* NULL when unknown */
  int32_t partition; /* < 0 when unknown */
  int64_t offset; /* < 0 when unknown */
  int64_t timestamp; /* ms since the epoch (CreateTime/LogAppendTime); < 0 when unknown */
  const void *key; /* the record key bytes; NULL for a null key */
  size_t key_len;
} wd_kafka_meta_t;

/* ---- decoded change records ---------------------------------------------------------------- */

#define WD_CHANGES_TOMBSTONE 0x1u /* the value was a tombstone: no records, nothing to apply */
#define WD_CHANGES_SCHEMALESS                                                                                          \
  0x2u /* a Debezium JSON value without its envelope schema
                                      (JsonConverter schemas.enable=false): nothing says its types */
/* PostgreSQL's REPLICA IDENTITY DEFAULT through Debezium (ingest/json_event.h): a delete whose
 * before image holds only the table's key and Debezium's defaults for its NOT NULL columns (the
 * defaults were left out of the record), or an update without a before image of a source keyed by
 * another column than the wide key (its moves cannot be retracted) */
#define WD_CHANGES_KEY_ONLY_BEFORE 0x4u
/* with WD_CHANGES_KEY_ONLY_BEFORE: that delete's wide key is not in the key it holds (the source is
 * keyed by another column), so the wide row it leaves is unknown; no records were made of it */
#define WD_CHANGES_ROW_UNKNOWN 0x8u

/* The change records of one source message. Reusable: wd_changes_init once, then each decode
 * resets it and fills it; wd_changes_free at the end. The rows are owned by the container and
 * stay valid until the next decode/reset/free (take one with wd_changes_take to keep it).
 * A container is bound to the schema of its first use until wd_changes_free. */
typedef struct wd_changes {
  wd_row_t **rows; /* rows[0..count): full-width rows with their row kinds, in order */
  size_t count;
  unsigned flags; /* WD_CHANGES_* */
  char op; /* the Debezium op of the message ('c','r','u','d'), 0 when none */
  unsigned null_key_halves; /* halves of updates/deletes left out because their key is NULL
                               (ingest/format.h: a NULL key holds no row); 0 after a reset */
  int64_t ts_ms; /* the payload's ts_ms, or -1 when absent */
  /* private */
  size_t cap; /* rows[count..cap) are cleared spare rows (or NULL) */
  const wd_schema_t *schema; /* borrowed: the schema the rows were made for */
  void *scratch; /* a decoder's reusable working memory */
  void (*scratch_free)(void *scratch);
} wd_changes_t;

/* Makes ch empty (no allocation). */
void wd_changes_init(wd_changes_t *ch);

/* Clears the records (count = 0, flags = 0, op = 0, ts_ms = -1), keeping the memory of rows
 * and scratch for the next message. */
void wd_changes_reset(wd_changes_t *ch);

/* Releases everything ch owns and leaves it as after wd_changes_init. */
void wd_changes_free(wd_changes_t *ch);

/* Appends a record of the given kind for schema (borrowed) and returns its row, all NULL, owned
 * by ch (for decoders). Returns NULL on no memory, or when ch is bound to another schema (a
 * bug). */
wd_row_t *wd_changes_add(wd_changes_t *ch, const wd_schema_t *schema, wd_row_kind_t kind);

/* Takes record i (i < count) out of ch: the caller owns the returned row (wd_row_destroy);
 * ch allocates a new row for that slot when it is next needed. */
wd_row_t *wd_changes_take(wd_changes_t *ch, size_t i);

/* ---- the Debezium JSON decoder ----------------------------------------------------------- */

/* Decodes one Kafka record value of a debezium-json source into out (reset first). (The
 * format's wd_format_t.decode; other formats have the same contract, ingest/format.h.)
 *   src, schema: the source and the wide-table schema its mapping was built for (borrowed).
 *   meta: the record's Kafka metadata (borrowed; may be NULL: $kafka.* and $key.* are NULL).
 *   value, len: the record value (borrowed). NULL, zero length, the JSON literal null and an
 *     envelope whose payload is null are tombstones: no records, flag WD_CHANGES_TOMBSTONE.
 * Records: op c and r -> +I(after); u -> -U(before), +U(after); u with before null -> -U with
 * the key of after and every other image column absent (wd_row_t.absent: completed from the
 * stored row by the merge), +U(after); u whose before and after keys differ -> -D(before),
 * +I(after); d -> -D(before) (columns missing from before marked absent; with before null the
 * key from `$key.` mappings).
 * Thread: any, with its own out (src and schema are only read).
 * Errors (out is empty after an error; err->index is the index of the record being built, or -1):
 *   WD_ERR_DECODE "E_DECODE": not JSON, not an object, no or unknown `op` (t and m included),
 *     op c/r/u without an after image, before/after/payload not an object, an invalid literal
 *     or escape (lone surrogate) in a field the source reads; the message says which.
 *   WD_ERR_RECORD "E_NO_KEY": a primary-key column missing in a record (for example a delete
 *     whose before image is null) or NULL in an insert; the message names the column and the
 *     image. (A NULL key in a half of an update or in a delete is no error: that half is left
 *     out and counted in out->null_key_halves; ingest/format.h.)
 *   WD_ERR_RECORD "E_TYPE": a value that cannot convert to its column's type; the message names
 *     the source, the source field, the wide column, the column type and the JSON found.
 *   WD_ERR_INTERNAL when out is bound to another schema or src is not debezium-json; E_NOMEM.
 * The caller adds topic/partition/offset to the message (wd_error_wrap). */
wd_error_t *wd_decode_debezium_json(const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                                    const void *value, size_t len, wd_changes_t *out);

#endif
