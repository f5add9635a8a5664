/*
 * ingest/json_simd.h — private to ingest/: simdjson's structural indexing ("stage 1": SIMD
 * classification of a JSON text, UTF-8 validation, string boundaries) through a C interface.
 * Implemented in C++ (ingest/json_simd.cpp) over Debian's libsimdjson-dev; used only by the
 * tokenizer of ingest/json_fast.c, which walks the index.
 */
#ifndef WD_INGEST_JSON_SIMD_H
#define WD_INGEST_JSON_SIMD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* simdjson's indexer with its padded copy buffer, reused between texts (one per decoding
 * container; not shared between threads). */
typedef struct wd_json_simd wd_json_simd_t;

/* A new indexer, or NULL when out of memory; freed with wd_json_simd_free (accepts NULL). */
wd_json_simd_t *wd_json_simd_new(void);
void wd_json_simd_free(wd_json_simd_t *s);

#define WD_JSON_SIMD_INVALID (-1)
#define WD_JSON_SIMD_NOMEM (-2)

/* Indexes js[0..len): copies it into the indexer's buffer, padded with SIMDJSON_PADDING (64)
 * zero bytes (simdjson reads past the end of its input), and runs simdjson's stage 1 with the
 * implementation chosen for this CPU at run time (icelake, haswell, westmere or fallback).
 * On 0: *text is the copy (valid until the next call; text[len..len+64) are zero bytes),
 * idx[0..*n) the byte offsets, in order, of every structural character ({ } [ ] : ,), of every
 * string's opening quote and of the first byte of every other scalar (true, 12, and also
 * garbage such as `x`), outside strings, followed by two sentinel entries idx[*n] and idx[*n + 1], both
 * len (where text holds a zero byte), so that a reader may look up to two entries past the last
 * without a bounds check. WD_JSON_SIMD_INVALID with *why (static text) when
 * simdjson refuses the text at this stage: invalid UTF-8, a raw control character in a string,
 * a string not closed, no value at all; WD_JSON_SIMD_NOMEM. len must be below 4 GiB less 64. */
int wd_json_simd_index(wd_json_simd_t *s, const char *js, size_t len, const char **text, const uint32_t **idx,
                       size_t *n, const char **why);

#ifdef __cplusplus
}
#endif

#endif
