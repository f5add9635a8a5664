/*
 * tests/fuzz/fuzz_stored_row.c — the stored-row codec (join/row_codec.h) and the repartition record
 * format (app/runtime/repartition.h) on arbitrary bytes: fuzz.h. Both read bytes widen wrote
 * itself, but from a disk or a topic that can hand back anything: a corrupt stored row must be
 * E_STATE_CORRUPT and a corrupt repartition record E_REPARTITION_RECORD, never a crash, and what
 * decodes must be a row of the schema whose values are formatted and re-encoded without fault.
 *
 * One input is either
 *   - a JSON object (first byte '{'): a row of wd_fuzz_schema() by column name (common/json.h,
 *     wd_row_from_json; a row it refuses is skipped). The row is encoded by both codecs and must
 *     decode back equal; then every truncation of each encoding and a few bytes changed at
 *     positions drawn from the input must decode or be refused cleanly. The seeds
 *     (tests/fuzz/seeds/stored_row/) are rows of the types' extremes: INT64_MIN/MAX, 0001-01-01,
 *     9999-12-31 23:59:59.999999, NaN, infinities, 38-digit decimals, empty and long strings;
 *   - anything else: the bytes themselves, decoded by both codecs.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/repartition.h"
#include "common/buf.h"
#include "common/json.h"
#include "join/row_codec.h"
#include "tests/fuzz/fuzz.h"

/* Decodes p[0..n) as a stored row: E_STATE_CORRUPT or a row whose values format and re-encode. */
static void stored(const wd_schema_t *s, const uint8_t *p, size_t n, const wd_row_t *want) {
  wd_row_t *row = NULL;
  bool tomb = false;
  wd_error_t *err = wd_row_decode(s, p, n, &row, &tomb);
  if (err) {
    if (strcmp(err->id, "E_STATE_CORRUPT") && err->cls != WD_ERR_NOMEM) wd_fuzz_fail("stored row", err->message);
    if (row) wd_fuzz_fail("stored row", "a row after an error");
    wd_error_destroy(err);
    if (want) wd_fuzz_fail("stored row", "an encoded row does not decode");
    return;
  }
  if (!row || row->n != s->ncols) wd_fuzz_fail("stored row", "a row that is not full width");
  wd_buf_t b = {0};
  for (size_t c = 0; c < s->ncols; c++)
    if (wd_value_format(s->cols[c].type, &row->v[c], &b)) wd_fuzz_fail("stored row", "wd_value_format failed");
  wd_buf_reset(&b);
  if (wd_row_encode(s, row, tomb, 0, &b)) wd_fuzz_fail("stored row", "wd_row_encode failed");
  if (want && (!wd_row_eq(s, want, row, NULL) || want->kind != row->kind))
    wd_fuzz_fail("stored row", "the round trip differs");
  wd_buf_free(&b);
  wd_row_destroy(s, row);
}

/* Decodes p[0..n) as a repartition record: E_REPARTITION_RECORD or rows that format. */
static void repart(const wd_schema_t *s, const uint8_t *p, size_t n, const wd_row_t *want) {
  wd_repartition_rec_t rec;
  wd_error_t *err = wd_repartition_decode(s, p, n, &rec);
  if (err) {
    if (strcmp(err->id, "E_REPARTITION_RECORD") && err->cls != WD_ERR_NOMEM)
      wd_fuzz_fail("repartition record", err->message);
    wd_error_destroy(err);
    if (want) wd_fuzz_fail("repartition record", "an encoded record does not decode");
    return;
  }
  wd_buf_t b = {0};
  for (size_t i = 0; i < rec.n; i++) {
    if (!rec.rows[i] || rec.rows[i]->n != s->ncols) wd_fuzz_fail("repartition record", "a row that is not full width");
    for (size_t c = 0; c < s->ncols; c++)
      if (wd_value_format(s->cols[c].type, &rec.rows[i]->v[c], &b)) wd_fuzz_fail("repartition record", "format failed");
  }
  if (want && (rec.n != 1 || !wd_row_eq(s, want, rec.rows[0], NULL) || strcmp(rec.source, "src") ||
               strcmp(rec.topic, "fuzzed") || rec.partition != 3 || rec.offset != 42))
    wd_fuzz_fail("repartition record", "the round trip differs");
  wd_buf_free(&b);
  wd_repartition_rec_free(s, &rec);
}

/* Every truncation of e[0..n) and a few single-byte changes drawn from seed. */
static void damaged(const wd_schema_t *s, const uint8_t *e, size_t n, uint64_t seed, bool is_repart) {
  uint8_t *c = malloc(n ? n : 1);
  if (!c) return;
  for (size_t k = 0; k < n; k++) {
    if (is_repart) repart(s, e, k, NULL);
    else stored(s, e, k, NULL);
  }
  for (int i = 0; i < 8 && n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    memcpy(c, e, n);
    c[(seed >> 33) % n] ^= (uint8_t)(1u << ((seed >> 20) & 7));
    if (is_repart) repart(s, c, n, NULL);
    else stored(s, c, n, NULL);
  }
  free(c);
}

int wd_fuzz_stored_row(const uint8_t *data, size_t size) {
  const wd_schema_t *s = wd_fuzz_schema();
  if (size == 0 || data[0] != '{') {
    stored(s, data, size, NULL);
    repart(s, data, size, NULL);
    return 0;
  }
  json_error_t jerr;
  json_t *j = json_loadb((const char *)data, size, 0, &jerr);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    return 0;
  }
  wd_row_t *row = wd_row_new(s);
  if (!row) wd_fuzz_fail("stored row", "no memory");
  wd_error_t *err = wd_row_from_json(s, j, row);
  json_decref(j);
  if (err || row->v[s->pk[0]].is_null) { /* not a row of the table, or no key: nothing to store */
    wd_error_destroy(err);
    wd_row_destroy(s, row);
    return 0;
  }
  uint64_t seed = 1469598103934665603ULL;
  for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 1099511628211ULL;
  row->kind = (wd_row_kind_t)(seed & 3);
  wd_buf_t b = {0}, scratch = {0};
  if (wd_row_encode(s, row, false, 0, &b)) wd_fuzz_fail("stored row", "wd_row_encode failed");
  stored(s, b.data, b.len, row);
  damaged(s, b.data, b.len, seed, false);
  wd_buf_reset(&b);
  wd_kafka_meta_t origin = {"fuzzed", 3, 42, 1700000000000, NULL, 0};
  wd_row_t *rows[1] = {row};
  if (wd_repartition_encode(s, "src", &origin, rows, 1, &scratch, &b))
    wd_fuzz_fail("repartition record", "encode failed");
  repart(s, b.data, b.len, row);
  damaged(s, b.data, b.len, seed, true);
  wd_buf_free(&b);
  wd_buf_free(&scratch);
  wd_row_destroy(s, row);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_stored_row(data, size); }
#endif
