/*
 * common/json.h — values and rows to and from JSON (jansson), in the conventions of spec §12.2:
 * DECIMAL as exact strings with exactly s fraction digits, DATE "YYYY-MM-DD", TIME "hh:mm:ss[.fff]",
 * TIMESTAMP(p) "YYYY-MM-DD hh:mm:ss.fff" (3 digits for p <= 3, 6 for p <= 6, 9 above),
 * TIMESTAMP_LTZ the UTC instant likewise, BYTES base64, FLOAT/DOUBLE numbers with NaN/±Infinity
 * as the strings "NaN", "Infinity", "-Infinity", ARRAY as arrays, ROW as objects keyed by field
 * name, MAP as objects keyed by the canonical text of the key (wd_value_format).
 * Used by `widen simulate`, the changelog-json encoder and `widen tail`.
 */
#ifndef WD_JSON_H
#define WD_JSON_H

#include <jansson.h>

#include "common/types.h"

/* Converts j (borrowed) into *out (overwritten; owned by the caller afterwards). JSON null gives
 * NULL. Accepts for numbers either JSON numbers or strings holding them (DECIMAL: strings or
 * numbers, parsed from text exactly, never through a double; jansson reals are first formatted
 * with the fewest significant digits, at most 17, that read back as the same double). Errors: WD_ERR_RECORD "E_TYPE" naming the expected type and
 * what was found; "E_ARITH_OVERFLOW" for a DECIMAL that does not fit p or an integer out of the
 * type's range. */
wd_error_t *wd_value_from_json(const wd_type_t *t, const json_t *j, wd_value_t *out);
/* New reference (caller decrefs), or NULL on no memory. */
json_t *wd_value_to_json(const wd_type_t *t, const wd_value_t *v);

/* Fills row from a JSON object keyed by column name (borrowed); columns absent from obj are NULL.
 * row must have been made for schema; its previous values are cleared.
 * Errors: "E_TYPE" (the message names the column), "E_UNKNOWN_COLUMN" for a key not in schema. */
wd_error_t *wd_row_from_json(const wd_schema_t *schema, const json_t *obj, wd_row_t *row);
/* A JSON object naming every column (NULL as null), new reference; NULL on no memory. */
json_t *wd_row_to_json(const wd_schema_t *schema, const wd_row_t *row);

#endif
