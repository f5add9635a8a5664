/*
 * bench/avro_gen.h — the generated input of the Avro benchmarks (bench/avro, bench/e2e_avro):
 * Debezium Avro envelopes (writer schemas 1 and 2 of tests/fixtures/avro/schemas.json mixed,
 * ops c/r/u/d over a key space) with Avro keys (schema 7), each in the Confluent wire format.
 * Deterministic for a seed. Exits the process on an avro-c failure (benchmark code).
 */
#ifndef WD_BENCH_AVRO_GEN_H
#define WD_BENCH_AVRO_GEN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Values and keys back to back; record i is vals[voff[i] .. voff[i+1]), likewise keys. */
typedef struct wd_bench_avro_input {
  wd_buf_t vals, keys;
  size_t *voff, *koff; /* n + 1 offsets each */
  uint64_t n;
} wd_bench_avro_input_t;

/* Generates `records` records over keys 1..`keys` from the writer schemas in `schemas` (the
 * parsed schemas.json: id text -> schema JSON; borrowed) into *in (owned by the caller, release
 * with wd_bench_avro_input_free). */
void wd_bench_avro_generate(json_t *schemas, uint64_t records, uint64_t keys, uint64_t seed, wd_bench_avro_input_t *in);
void wd_bench_avro_input_free(wd_bench_avro_input_t *in);

/* The whole file at path, NUL-terminated (caller frees); exits on failure. */
char *wd_bench_slurp(const char *path);

#endif
