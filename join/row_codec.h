/*
 * join/row_codec.h — the stored-row encoding: how one key's entry (a row, or an ordering
 * tombstone of spec D7) is kept as bytes in the state store.
 *
 * Layout (version 1):
 *   byte 0   format version (WD_ROW_CODEC_VERSION); readers refuse versions they do not know
 *   byte 1   flags: bit 0 = tombstone; bits 2-3 = the entry's row kind (wd_row_kind_t): for a
 *            tombstone -D or -U (the kind that made it, D7); for a row the kind that created it
 *            (first-row emits it, spec §6); bit 4 = a column count follows (WD_ENTRY_FLAG_NCOLS)
 *   bytes 2-9  only for tombstones: little-endian uint64, wall-clock ms when it was written (for
 *            state.tombstone-retention; the store's compaction filter reads it)
 *   then     only with bit 4: varint ncols, the columns this entry holds (columns appended to the
 *            schema later read as NULL)
 *   then     a null bitmap of ceil(ncols/8) bytes (bit set = NULL), then each non-NULL column in
 *            schema order: integers/DATE/TIME zig-zag varints, BOOLEAN one byte, FLOAT/DOUBLE 8
 *            bytes IEEE little-endian, DECIMAL 16 bytes two's complement little-endian,
 *            TIMESTAMP zig-zag varint µs + varint ns, text/BYTES varint length + bytes,
 *            ARRAY varint count + per element (null byte, value), MAP varint count + per entry
 *            (key, null byte, value), ROW per field (null byte, value).
 *
 * The engine and codec are independent of RocksDB; the store only sees bytes.
 */
#ifndef WD_ROW_CODEC_H
#define WD_ROW_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/types.h"

#define WD_ROW_CODEC_VERSION 1
#define WD_ENTRY_FLAG_TOMBSTONE 0x01
/* byte 1 bit 4: a varint column count follows the header (after the tombstone time): the entry was
 * written after nullable columns were added at the end of the schema; entries without
 * it have the state's base column count (see wd_row_decode_base) */
#define WD_ENTRY_FLAG_NCOLS 0x10

/* Appends the encoding of row (its kind included) to out. tombstone_ms is written only when
 * tombstone is true. Returns 0, or -1 on no memory. */
int wd_row_encode(const wd_schema_t *schema, const wd_row_t *row, bool tombstone, uint64_t tombstone_ms, wd_buf_t *out);

/* The same for a state whose rows were first written with base_ncols columns (0: the schema's):
 * when base_ncols differs from schema->ncols the entry carries its column count
 * (WD_ENTRY_FLAG_NCOLS), so rows stay readable after nullable columns are appended. */
int wd_row_encode_base(const wd_schema_t *schema, size_t base_ncols, const wd_row_t *row, bool tombstone,
                       uint64_t tombstone_ms, wd_buf_t *out);
/* Decodes with base_ncols (0: the schema's): an entry without a column count has base_ncols
 * columns; the schema's columns after the entry's count are NULL. Errors: as wd_row_decode, also
 * for a column count above the schema's. */
wd_error_t *wd_row_decode_base(const wd_schema_t *schema, size_t base_ncols, const void *p, size_t n, wd_row_t **row,
                               bool *tombstone);

/* Decodes bytes p[0..n) into a new row (*row, owned by the caller) and sets *tombstone.
 * Errors: WD_ERR_IO "E_STATE_CORRUPT" for an unknown version or truncated/invalid bytes. */
wd_error_t *wd_row_decode(const wd_schema_t *schema, const void *p, size_t n, wd_row_t **row, bool *tombstone);

#endif
