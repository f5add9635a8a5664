/*
 * tests/fuzz/fuzz_debezium_json.c — the debezium-json source decoder (ingest/decode_debezium_json.c)
 * on one Kafka record value, and `widen tail`'s reading of the same value as a debezium-json
 * changelog (changelog/changelog.h): fuzz.h. Seeds: ../shared/data's Debezium records (with and
 * without the schema envelope, MySQL and Postgres; tests/fuzz/run).
 */
#include "changelog/changelog.h"
#include "common/buf.h"
#include "ingest/format.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_debezium_json(const uint8_t *data, size_t size) {
  const wd_schema_t *s = wd_fuzz_schema();
  const wd_source_t *src = wd_fuzz_source("debezium-json");
  static const char key[] = "{\"id\":7,\"payload\":{\"name\":\"k\"}}";
  wd_kafka_meta_t meta = {"fuzzed", 3, 42, 1700000000000, key, sizeof(key) - 1};
  wd_changes_t ch;
  wd_changes_init(&ch);
  /* twice into the same container: the second decode reuses what the first left (scratch, rows) */
  for (int pass = 0; pass < 2; pass++)
    wd_fuzz_check_decode("debezium-json", s, wd_decode_debezium_json(src, s, &meta, data, size, &ch), &ch);
  wd_changes_free(&ch);

  wd_buf_t out = {0};
  size_t nlines = 0;
  wd_error_t *err =
      wd_changelog_decode_tail(WD_CHANGELOG_DEBEZIUM_JSON, key, sizeof(key) - 1, data, size, &out, &nlines);
  if (err && out.len) wd_fuzz_fail("tail debezium-json", "output appended with an error");
  wd_error_destroy(err);
  wd_buf_free(&out);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_debezium_json(data, size); }
#endif
