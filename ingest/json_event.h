/*
 * ingest/json_event.h — private to ingest/: the JSON side shared by every JSON source format
 * (debezium-json, canal-json, maxwell-json, ogg-json, changelog-json). One record value is
 * tokenised once into jsmn's tokens (by simdjson's index, ingest/json_fast.h, in json_event.c
 * only); a format walks the tokens with the accessors below
 * to find its op and images, then hands events to wd_event_emit() (ingest/format.h) with the
 * reader of wd_jev_reader(), which converts values by the table of source.h (Debezium's JSON
 * conventions, with the envelope schema's hints when the record carries one, and the format's
 * hints otherwise).
 *
 * A token is an int index into the record's tokens; -1 means absent. Handles and the text they
 * point at are valid until the next wd_jev_start() on the same container.
 */
#ifndef WD_INGEST_JSON_EVENT_H
#define WD_INGEST_JSON_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest/format.h"

typedef struct wd_dbz wd_jev_t;

/* A row image: the object token obj (-1: none) with, when overlay >= 0, the keys of object
 * overlay replacing obj's (Canal and Maxwell before images: `data` overlaid with `old`). */
typedef struct wd_jimg {
  int obj;
  int overlay;
} wd_jimg_t;

/* Format hints for values the record itself does not describe. */
typedef struct wd_json_hints {
  bool strings_only; /* every value is a JSON string (Canal): BOOLEAN also from "0"/"1"/"true"/"false",
                        BYTES from the string's text (ISO-8859-1 when the type hint says binary) */
} wd_json_hints_t;

typedef enum { WD_JT_OTHER = 0, WD_JT_OBJECT, WD_JT_ARRAY, WD_JT_STRING, WD_JT_PRIMITIVE } wd_jtype_t;

/* Starts decoding one record of src into out: resets out, checks that out is bound to schema
 * and src to schema's width, and binds the container's scratch memory. *x is owned by out.
 * Errors: WD_ERR_INTERNAL (another schema), E_NOMEM. */
wd_error_t *wd_jev_start(wd_changes_t *out, const wd_source_t *src, const wd_schema_t *schema,
                         const wd_kafka_meta_t *meta, const wd_json_hints_t *hints, wd_jev_t **x);

/* Tokenises value[0..len). connect_envelope: a top object {"schema":S,"payload":P} (Kafka
 * Connect's JsonConverter with schemas.enable) is unwrapped, S kept for schema hints. Returns 1
 * for a tombstone (NULL/empty value, the literal null, a null payload; out is flagged), 0 when
 * the root object is ready (wd_jev_root), -1 with *err (E_DECODE naming src: not JSON anywhere in
 * the text — invalid UTF-8, raw control characters, bad literals or numbers included —, not an
 * object, too deep; or E_NOMEM). */
int wd_jev_parse(wd_jev_t *x, const void *value, size_t len, bool connect_envelope, wd_error_t **err);

int wd_jev_root(const wd_jev_t *x);
wd_jtype_t wd_jev_type(const wd_jev_t *x, int tok); /* WD_JT_OTHER for -1 */
bool wd_jev_is_null(const wd_jev_t *x, int tok); /* true for -1 and the literal null */
int wd_jev_get(const wd_jev_t *x, int obj, const char *key); /* the value of key in object obj, or -1 */
int wd_jev_size(const wd_jev_t *x, int tok); /* elements of an array / keys of an object */
int wd_jev_index(const wd_jev_t *x, int arr, int i); /* element i of array arr, or -1 */
/* Whether tok is a string equal to s (after unescaping). */
bool wd_jev_str_eq(const wd_jev_t *x, int tok, const char *s);
/* tok's JSON text as it is in the record (strings with quotes), cut to ~64 bytes, for messages. */
void wd_jev_text(const wd_jev_t *x, int tok, char *out, size_t cap);
/* A JSON integer (or a string holding one) at tok. 0, or -1 when it is not one. */
int wd_jev_int(const wd_jev_t *x, int tok, int64_t *out);

/* Sets an object of per-field type names (Canal's mysqlType: {"col":"varbinary(16)"}) that
 * the value reader consults for image fields (tok -1: none). */
void wd_jev_set_type_hints(wd_jev_t *x, int tok);

/* Whether object img, the before image of a Debezium PostgreSQL delete (source.connector
 * "postgresql"), is the old key that REPLICA IDENTITY DEFAULT gives: every field of the Kafka
 * key (a JSON object, envelope or not) is in it, and every other field is null or its type's
 * zero (0, false, "", "AA==", {"scale":0,"value":"AA=="}, "{}", or Debezium's fallback for a
 * temporal type: "1970-01-01T00:00:00Z", "1970-01-01", "00:00:00Z"), at least one not null:
 * Debezium fills NOT NULL columns it has no value of.
 * Returns 1 and makes the image reader leave those fields out (not carried: a retraction takes
 * them from the stored row, as for a delete-without-sequence) and sets WD_CHANGES_KEY_ONLY_BEFORE
 * in the container's flags; 0 when the image is not that (nothing changes); -1 when a column of
 * the wide table's primary key is read from a field outside the Kafka key: the delete's wide row
 * is unknown (the source needs its own primary-key); the flags then have WD_CHANGES_ROW_UNKNOWN
 * too, and the caller makes no records of the delete. */
int wd_jev_key_only_image(wd_jev_t *x, int img);

/* For an update without a before image: when the record is Debezium PostgreSQL's and a column of
 * the wide table's primary key is read from a field outside its Kafka key (the source is keyed by
 * another column: REPLICA IDENTITY DEFAULT sends no before image, so a move of the row to another
 * wide key cannot be retracted without the source's own primary-key), sets
 * WD_CHANGES_KEY_ONLY_BEFORE in the container's flags. Nothing else changes. */
void wd_jev_note_update_without_before(wd_jev_t *x);

/* The image reader over x (image handles: const wd_jimg_t *), naming images names[0] (before)
 * and names[1] (after) in messages (static strings). */
wd_image_reader_t wd_jev_reader(wd_jev_t *x, const char *before_name, const char *after_name);

/* Ends the record: on error resets out and keeps err (its index as set); returns err. */
wd_error_t *wd_jev_finish(wd_jev_t *x, wd_error_t *err);

#endif
