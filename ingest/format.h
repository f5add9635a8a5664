/*
 * ingest/format.h — source formats behind one decoder interface .
 *
 * A source format is a small table of functions, wd_format_t, chosen by name from one registry
 * (ingest/format.c, one line per format). A format's own file does only what is particular to
 * its bytes: find the events of one Kafka record value (one for Debezium, OGG and changelog-json;
 * several rows for a Canal message) and, for each, its operation and its row images. Everything
 * else — the part that turns row images into change records — exists once, in wd_event_emit()
 * (ingest/event.c), and every format uses it, Debezium JSON and Avro included:
 *
 *   op to row kind   insert -> +I(after); update -> -U(before), +U(after); delete -> -D(before);
 *                    an event that carries its own row kind (changelog-json) keeps it;
 *   key changes      an update whose before and after keys differ -> -D(before), +I(after);
 *   errors           an insert/update without an after image is E_DECODE, a primary-key column
 *                    missing (or NULL in an insert, +I/+U row kind) is E_NO_KEY (naming the op,
 *                    the column and the image);
 *   NULL keys        a half of an update, or a delete, whose key column is NULL in its image is
 *                    left out and counted (wd_changes_t.null_key_halves): a NULL key
 *                    holds no row, so nothing to retract and nowhere to store; the other half
 *                    applies alone (NULL -> K is +I(K), K -> NULL is -D(K));
 *   column mapping   every mapped column of the source (source.h) is asked of the format's
 *                    image reader, in mapping order; `$kafka.*` metadata is converted here;
 *   missing before   a -U/-D whose before image lacks a column the source maps (an update
 *                    without a before image: Postgres REPLICA IDENTITY DEFAULT; a delete with
 *                    only the key; a partial before image) carries the key and marks those
 *                    columns absent (wd_row_t.absent): the merge completes them from the stored
 *                    row (join/merge.h), so -U/+U stay full rows and retractions stay right.
 *
 * Type conversion is shared by encoding: every JSON format reads its values through one JSON
 * value reader (ingest/json_event.h: the Debezium JSON conversion table of source.h, with the
 * format's hints: Canal's values are all strings, binary as ISO-8859-1 text; decimals written as
 * text by Canal/Maxwell/OGG/widen), Avro through the Avro reader (decode_avro.h); both end in the
 * exact conversions of ingest/conv.h.
 *
 * What a format can carry (wd_format_t.caps) is declared, not discovered: the pipeline and the
 * README use it to say which sources may send key-only deletes or partial before images, and the
 * start-up check warns when a source's decimal encoding is ambiguous (decimal_default).
 *
 * Adding a format: one file ingest/decode_<name>.c defining `const wd_format_t wd_format_<name>`
 * (name, caps, decimal_default, decode, and open/close if it keeps state between records), and
 * one line in the WD_FORMATS list of ingest/format.c (plus its name in the `format` values of
 * app/config/config.c's option table, which tests/unit/test_config.c checks against the registry). Its
 * unit tests decode a real file.
 */
#ifndef WD_INGEST_FORMAT_H
#define WD_INGEST_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/types.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"

/* ---- what a format can carry ------------------------------------------------------------------ */

#define WD_FORMAT_CAP_BEFORE_IMAGE 0x01u /* updates and deletes carry a full before image */
#define WD_FORMAT_CAP_PARTIAL_BEFORE                                                                                   \
  0x02u /* an update's before image may hold only the changed
                                              columns (Canal/Maxwell `old`); completed from after */
#define WD_FORMAT_CAP_NO_BEFORE                                                                                        \
  0x04u /* updates may come without a before image and deletes
                                              with only the key (Postgres default replica
                                              identity); completed from the stored row */
#define WD_FORMAT_CAP_MULTI_ROW 0x08u /* one record value may carry several row changes */
#define WD_FORMAT_CAP_ROW_KINDS 0x10u /* records carry their row kind (+I/-U/+U/-D) */
#define WD_FORMAT_CAP_ENVELOPE 0x20u /* `$.` mappings read envelope fields */
#define WD_FORMAT_CAP_REGISTRY 0x40u /* needs the schema registry */

/* What a format's decoder may use, given at open time (borrowed; outlives the decoder). */
typedef struct wd_format_env {
  wd_registry_t *registry; /* the schema registry client, or NULL when none is configured */
} wd_format_env_t;

/* A source format: a table of functions. All members are static data of the format's file. */
typedef struct wd_format {
  const char *name; /* "canal-json": the `format:` of a source */
  const char *summary; /* one sentence for the option reference and errors */
  unsigned caps; /* WD_FORMAT_CAP_* */
  /* How the format writes a DECIMAL held in a JSON string when nothing in the record says:
   * WD_DECIMAL_TEXT for formats that always write decimal text (Canal, Maxwell, OGG, widen's
   * changelog-json), WD_DECIMAL_AUTO for Debezium JSON, whose encoding depends on the
   * connector's decimal.handling.mode (the envelope schema says it when schemas are enabled). */
  wd_decimal_encoding_t decimal_default;
  /* Creates the decoder state of one pipeline (shared by the sources of this format), or NULL
   * when the format keeps none (open may then be NULL). Errors: E_NOMEM; C_* when env lacks
   * what the format needs (a registry). */
  wd_error_t *(*open)(const wd_format_env_t *env, void **state);
  void (*close)(void *state); /* releases what open made; accepts NULL; may be NULL */
  /* Decodes one Kafka record value of source src into out (reset first): the contract of
   * wd_decode_debezium_json (source.h) — tombstones flagged, every change record full width,
   * out empty after an error, err->index the record being built. state is open's. */
  wd_error_t *(*decode)(void *state, const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                        const void *value, size_t len, wd_changes_t *out);
} wd_format_t;

/* The registered formats in registry order (index = wd_source_format_t); *n their count.
 * Static storage. */
const wd_format_t *const *wd_formats(size_t *n);

/* The format registered as name, or NULL. */
const wd_format_t *wd_format_find(const char *name);

/* The format of a source (src->format indexes the registry); NULL for an index out of range. */
const wd_format_t *wd_format_of(wd_source_format_t format);

/* The registered names joined by ", " ("debezium-json, debezium-avro, ..."); static storage. */
const char *wd_format_names(void);

/* Checks a source against its format once at start and returns a warning text (malloc'd, the
 * caller frees) when its decimal encoding is ambiguous: decimal-encoding `auto` on a format
 * whose decimals may be base64 or text (debezium-json) while the source maps DECIMAL columns
 * from row images — a base64 value whose text is all digits (about 1 in 1,700 three-byte
 * values) would then be read as a number unless the record carries the envelope schema. NULL
 * when there is nothing to say. */
char *wd_format_decimal_warning(const wd_source_t *src, const wd_schema_t *schema);

/* A note (malloc'd, caller frees) for `widen config check` when a debezium-json source maps row
 * fields into TIME/TIMESTAMP/TIMESTAMP_LTZ columns with its unit option auto: their integers must
 * come with the envelope schema naming their unit, else widen stops (C_TEMPORAL_UNIT); NULL when
 * none (or no memory). */
char *wd_format_temporal_note(const wd_source_t *src, const wd_schema_t *schema);

/* The decimal encoding a source uses for JSON strings: its decimal-encoding option when set,
 * else its format's decimal_default. */
wd_decimal_encoding_t wd_format_decimal_encoding(const wd_source_t *src);

/* ---- the shared part: events into change records ------------------------------------------ */

typedef enum wd_event_op {
  WD_EV_INSERT = 0, /* +I(after) */
  WD_EV_UPDATE, /* -U(before), +U(after); -D/+I when the key changed; -U key-only without before */
  WD_EV_DELETE, /* -D(before); key-only (from `$key.` mappings) without before */
  WD_EV_ROW /* one row with its own row kind (ev.kind), image `after` */
} wd_event_op_t;

#define WD_IMAGE_BEFORE 0
#define WD_IMAGE_AFTER 1

/* One row change as a format found it. The image handles are the format's own (passed back to
 * its reader as they are); NULL means the event has no such image (JSON null or absent). */
typedef struct wd_event {
  wd_event_op_t op;
  wd_row_kind_t kind; /* WD_EV_ROW only */
  const char *op_text; /* the op as the record spells it, for messages ("u", "UPDATE", "U") */
  const void *before;
  const void *after;
} wd_event_t;

/* How wd_event_emit reads values out of a format's images. */
typedef struct wd_image_reader {
  void *ctx;
  const char *image_names[2]; /* how messages name the images: {"before","after"}, {"old","data"} */
  /* Called once before the values of one image are read (img may be NULL: no image); may be
   * NULL. E.g. indexes the image object. Errors abort the event (E_DECODE, E_NOMEM). */
  wd_error_t *(*begin)(void *ctx, int image, const void *img);
  /* Converts mapping src->cols[m] (kind IMAGE, ENVELOPE or KEY; never KAFKA) for image `image`
   * (handle img, may be NULL) into v (NULL beforehand) of its column's type. *present: for
   * IMAGE mappings whether the image has the field (false: v stays NULL and the value is
   * unknown); for ENVELOPE/KEY mappings always true. Errors: E_DECODE, E_TYPE (naming source,
   * field, column and type), E_NOMEM. */
  wd_error_t *(*value)(void *ctx, int image, const void *img, size_t m, wd_value_t *v, bool *present);
} wd_image_reader_t;

/* Appends the change records of event ev to out (not reset: a Canal message appends several
 * events), by the rules at the top of this file. src, schema, meta (may be NULL) borrowed; rd
 * reads the images. Errors (out may hold part of the event; the caller resets it): E_DECODE "op
 * <op> without an after image"; WD_ERR_RECORD E_NO_KEY; the reader's errors; E_NOMEM; err->index
 * is the index in out of the record being built. */
wd_error_t *wd_event_emit(const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                          const wd_image_reader_t *rd, const wd_event_t *ev, wd_changes_t *out);

/* Converts a `$kafka.*` mapping c of meta (may be NULL: the value stays NULL) into v (NULL
 * beforehand) of type t. Errors: E_TYPE naming the source and column when the value does not
 * fit; E_NOMEM. */
wd_error_t *wd_event_kafka_value(const wd_source_t *src, const wd_schema_t *schema, const wd_source_col_t *c,
                                 const wd_kafka_meta_t *meta, wd_value_t *v);

/* Whether a and b have equal primary keys. */
bool wd_event_same_key(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b);

#endif
