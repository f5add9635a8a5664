/*
 * ingest/json_simd.cpp — see json_simd.h. simdjson's public implementation interface
 * (simdjson::get_active_implementation(), the run-time CPU dispatch) makes the parser
 * implementation that its DOM and On-Demand parsers run stage 1 with; this file runs stage 1
 * alone and hands its structural index to C. Compiled as C++17 without exceptions or RTTI
 * (simdjson reports error codes).
 *
 * Why not the On-Demand front end: walking every value of a 516-byte Debezium record with it
 * to make jsmn's tokens cost ~6.4k instructions a record on top of stage 1's ~2.1k (callgrind,
 * bench/decode; bench/notes/simd.md), more than the structural walk of ingest/json_fast.c over
 * the same index (which also checks the whole grammar).
 */
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "ingest/json_simd.h"

struct wd_json_simd {
  std::unique_ptr<simdjson::internal::dom_parser_implementation> impl;
  char *buf = nullptr; /* the padded copy of the text */
  size_t bufcap = 0;
};

extern "C" wd_json_simd_t *wd_json_simd_new(void) {
  void *m = std::malloc(sizeof(wd_json_simd));
  if (!m) return nullptr;
  return new (m) wd_json_simd();
}

extern "C" void wd_json_simd_free(wd_json_simd_t *s) {
  if (!s) return;
  std::free(s->buf);
  s->~wd_json_simd();
  std::free(s);
}

extern "C" int wd_json_simd_index(wd_json_simd_t *s, const char *js, size_t len, const char **text,
                                  const uint32_t **idx, size_t *n, const char **why) {
  *why = "";
  if (len > 0xFFFFFFFFu - simdjson::SIMDJSON_PADDING) {
    *why = "the value is too large";
    return WD_JSON_SIMD_INVALID;
  }
  if (s->bufcap < len + simdjson::SIMDJSON_PADDING) {
    size_t nc = len + simdjson::SIMDJSON_PADDING;
    if (nc < 4096) nc = 4096;
    char *b = static_cast<char *>(std::realloc(s->buf, nc));
    if (!b) return WD_JSON_SIMD_NOMEM;
    s->buf = b;
    s->bufcap = nc;
  }
  std::memcpy(s->buf, js, len);
  std::memset(s->buf + len, 0, simdjson::SIMDJSON_PADDING);
  /* the index has room for len structurals (plus simdjson's own sentinels) */
  size_t want = len < 4096 ? 4096 : len;
  if (!s->impl) {
    if (simdjson::get_active_implementation()->create_dom_parser_implementation(want, simdjson::DEFAULT_MAX_DEPTH,
                                                                                s->impl) != simdjson::SUCCESS)
      return WD_JSON_SIMD_NOMEM;
  } else if (s->impl->capacity() < want) {
    if (s->impl->set_capacity(want) != simdjson::SUCCESS) return WD_JSON_SIMD_NOMEM;
  }
  simdjson::error_code e =
      s->impl->stage1(reinterpret_cast<const uint8_t *>(s->buf), len, simdjson::stage1_mode::regular);
  if (e != simdjson::SUCCESS) {
    if (e == simdjson::MEMALLOC) return WD_JSON_SIMD_NOMEM;
    *why = simdjson::error_message(e);
    return WD_JSON_SIMD_INVALID;
  }
  /* two sentinel entries after the last, both len (the text's first padding byte, a zero): the
   * index has room for them (simdjson allocates capacity + 9 entries for at most len entries) */
  uint32_t *ix = s->impl->structural_indexes.get();
  size_t nix = s->impl->n_structural_indexes;
  ix[nix] = static_cast<uint32_t>(len);
  ix[nix + 1] = static_cast<uint32_t>(len);
  *text = s->buf;
  *idx = ix;
  *n = nix;
  return 0;
}
