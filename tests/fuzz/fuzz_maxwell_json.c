/*
 * tests/fuzz/fuzz_maxwell_json.c — the maxwell-json source decoder (ingest/decode_maxwell_json.c) on one Kafka record
 * value: fuzz.h. Seeds: ../shared/data's maxwell-json records (tests/fuzz/run).
 */
#include "ingest/format.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_maxwell_json(const uint8_t *data, size_t size) {
  const wd_schema_t *s = wd_fuzz_schema();
  const wd_source_t *src = wd_fuzz_source("maxwell-json");
  static const char key[] = "{\"id\":7,\"payload\":{\"name\":\"k\"}}";
  wd_kafka_meta_t meta = {"fuzzed", 3, 42, 1700000000000, key, sizeof(key) - 1};
  wd_changes_t ch;
  wd_changes_init(&ch);
  /* twice into the same container: the second decode reuses what the first left (scratch, rows) */
  for (int pass = 0; pass < 2; pass++)
    wd_fuzz_check_decode("maxwell-json", s, wd_format_of(src->format)->decode(NULL, src, s, &meta, data, size, &ch),
                         &ch);
  wd_changes_free(&ch);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_maxwell_json(data, size); }
#endif
