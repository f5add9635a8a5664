/*
 * tests/fuzz/fuzz_changelog_json.c — widen's own changelog-json read back: the changelog-json
 * source decoder (ingest/decode_changelog_json.c) and the decoders of `widen tail`
 * (changelog/decode_json.c: wd_changelog_decode_tail and wd_changelog_decode_rows, for both
 * changelog formats) on one record value; fuzz.h. Seeds: changelog-json and debezium-json lines
 * as widen writes them (tests/fuzz/seeds/changelog_json) and ../shared/data's Debezium records.
 */
#include "changelog/changelog.h"
#include "common/buf.h"
#include "ingest/format.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_changelog_json(const uint8_t *data, size_t size) {
  const wd_schema_t *s = wd_fuzz_schema();
  const wd_source_t *src = wd_fuzz_source("changelog-json");
  static const char key[] = "{\"id\":7}";
  wd_kafka_meta_t meta = {"fuzzed", 3, 42, 1700000000000, key, sizeof(key) - 1};
  wd_changes_t ch;
  wd_changes_init(&ch);
  for (int pass = 0; pass < 2; pass++)
    wd_fuzz_check_decode("changelog-json", s, wd_format_of(src->format)->decode(NULL, src, s, &meta, data, size, &ch),
                         &ch);
  wd_changes_free(&ch);

  static const wd_changelog_format_t fmts[] = {WD_CHANGELOG_JSON, WD_CHANGELOG_DEBEZIUM_JSON};
  for (size_t f = 0; f < 2; f++) {
    wd_buf_t out = {0};
    size_t nlines = 0;
    /* the key as the value's own bytes too: tail prints a JSON key as it is */
    wd_error_t *err = wd_changelog_decode_tail(fmts[f], data, size, data, size, &out, &nlines);
    if (err && out.len) wd_fuzz_fail("tail", "output appended with an error");
    wd_error_destroy(err);
    wd_buf_free(&out);

    wd_row_t *rows[2] = {NULL, NULL};
    size_t n = 0;
    err = wd_changelog_decode_rows(fmts[f], s, data, size, rows, &n);
    if (err && n) wd_fuzz_fail("decode_rows", "rows returned with an error");
    if (n > 2) wd_fuzz_fail("decode_rows", "more than two rows");
    for (size_t i = 0; i < n; i++) {
      if (!rows[i] || rows[i]->n != s->ncols) wd_fuzz_fail("decode_rows", "a row that is not full width");
      wd_row_destroy(s, rows[i]);
    }
    wd_error_destroy(err);
  }
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_changelog_json(data, size); }
#endif
