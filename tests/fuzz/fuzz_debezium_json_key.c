/*
 * tests/fuzz/fuzz_debezium_json_key.c — the Kafka record key of a debezium-json source (read by
 * `$key.` mappings, ingest/json_event.c): fixed record values (an insert, an update, a delete
 * with a null before image, whose key then comes from the record key alone) decoded with the
 * fuzzed bytes as the record key; fuzz.h. Seeds: Debezium keys, plain and with the schema
 * envelope (tests/fuzz/seeds/debezium_json_key).
 */
#include <string.h>

#include "ingest/format.h"
#include "tests/fuzz/fuzz.h"

static const char *const VALUES[] = {
    "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":7,\"name\":\"a\"},\"source\":{\"ts_ms\":1},\"ts_ms\":2}",
    "{\"op\":\"u\",\"before\":null,\"after\":{\"id\":7,\"name\":\"b\"},\"ts_ms\":3}",
    "{\"op\":\"d\",\"before\":null,\"after\":null,\"ts_ms\":4}",
    "{\"schema\":{},\"payload\":{\"op\":\"d\",\"before\":{\"name\":\"x\"},\"after\":null}}",
};

int wd_fuzz_debezium_json_key(const uint8_t *data, size_t size) {
  const wd_schema_t *s = wd_fuzz_schema();
  const wd_source_t *src = wd_fuzz_source("debezium-json");
  wd_kafka_meta_t meta = {"fuzzed", 0, 1, 1700000000000, data, size};
  wd_changes_t ch;
  wd_changes_init(&ch);
  for (size_t i = 0; i < sizeof(VALUES) / sizeof(*VALUES); i++)
    wd_fuzz_check_decode("debezium-json key", s,
                         wd_decode_debezium_json(src, s, &meta, VALUES[i], strlen(VALUES[i]), &ch), &ch);
  wd_changes_free(&ch);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_debezium_json_key(data, size); }
#endif
