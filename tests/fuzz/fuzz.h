/*
 * tests/fuzz/fuzz.h — the fuzz harnesses of widen's input parsers.
 *
 * One harness per untrusted input: each source format's decoder (ingest/format.h), the Debezium
 * JSON key, the decoders of `widen tail` (changelog/changelog.h), the YAML config loader
 * (app/config/config.h) and the conformance-case reader of `widen simulate` (app/cli/simulate.h). A harness
 * is a function wd_fuzz_<name>(data, size) that feeds one input to the parser and checks the
 * parser's contract (an error leaves no records; an error has an id and a message); it aborts on a
 * broken contract, and the sanitizers abort on memory errors, leaks and undefined behaviour.
 *
 * The same functions are built two ways:
 *   - as libFuzzer targets (clang, cmake -DWD_FUZZ=ON: tests/fuzz/CMakeLists.txt), each file with
 *     WD_FUZZ_MAIN defined, which adds LLVMFuzzerTestOneInput calling its wd_fuzz_<name>;
 *   - into the unit test tests/unit/test_fuzz_regressions.c (the normal gcc + ASan/UBSan build),
 *     which runs every harness on the inputs kept under tests/fuzz/regressions/<name>/ (each a
 *     crash found by fuzzing, fixed in the decoder) and on the committed seeds.
 * Each harness keeps its fixed state (schema, source, decoder) in statics made on first use and
 * never released (reachable, so not a leak); everything made per input is released per input.
 */
#ifndef WD_FUZZ_H
#define WD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/types.h"
#include "ingest/source.h"

/* The harnesses: each returns 0 (libFuzzer's convention); a broken contract aborts. */
int wd_fuzz_debezium_json(const uint8_t *data, size_t size);
int wd_fuzz_debezium_json_key(const uint8_t *data, size_t size);
int wd_fuzz_debezium_avro(const uint8_t *data, size_t size);
int wd_fuzz_canal_json(const uint8_t *data, size_t size);
int wd_fuzz_maxwell_json(const uint8_t *data, size_t size);
int wd_fuzz_ogg_json(const uint8_t *data, size_t size);
int wd_fuzz_changelog_json(const uint8_t *data, size_t size);
int wd_fuzz_config(const uint8_t *data, size_t size);
int wd_fuzz_simulate(const uint8_t *data, size_t size);
int wd_fuzz_marker(const uint8_t *data, size_t size);
int wd_fuzz_json_fast(const uint8_t *data, size_t size);
int wd_fuzz_stored_row(const uint8_t *data, size_t size);

/* The wide table every decoder harness maps into (static, made on first use): the columns of
 * the real data in ../shared/data (id, name, description, weight) plus one column of each other
 * type, nested paths, `$.` envelope fields (formats that have them), `$kafka.` metadata and a
 * `$key.` field, so that every conversion of ingest/conv.h is reachable. */
const wd_schema_t *wd_fuzz_schema(void);

/* A source of format `format` ("canal-json") mapping every column of wd_fuzz_schema() (static,
 * one per format, made on first use). Aborts when the mapping is refused (a harness bug). */
const wd_source_t *wd_fuzz_source(const char *format);

/* Checks the decoder contract of format.h on one result: after an error, out holds no records
 * and err has an id and a message; after success every record is full width for schema s
 * (borrowed) with its primary key set.
 * Releases err. Aborts (with a message on stderr naming `what`) when broken. */
void wd_fuzz_check_decode(const char *what, const wd_schema_t *s, wd_error_t *err, const wd_changes_t *out);

/* Follows each decoded record of out (after success) through what the pipeline does with it:
 * the message merged into a table on a memory store (the simulate path: wd_message_apply, the
 * changelog rows formatted and encoded, the state flushed through the stored-row codec and read
 * back), every value inside its type's range (wd_value_in_range) and formatted (wd_value_format), the
 * stored-row codec (encoded and decoded back equal), and each sink format: changelog-json and
 * debezium-json encoded and read back (wd_changelog_decode_rows) equal, Avro encoded. Called by
 * wd_fuzz_check_decode. Aborts when a step fails or a round trip differs. */
void wd_fuzz_follow(const char *what, const wd_schema_t *s, const wd_changes_t *out);
/* Aborts with "fuzz: <what>: <message>" on stderr. */
void wd_fuzz_fail(const char *what, const char *message) __attribute__((noreturn));

#endif
