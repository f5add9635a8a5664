/*
 * tests/unit/test_row_codec.c — join/row_codec.c: a seeded property test (random schemas of every
 * type, nested, with NULLs, empty and long values: encode -> decode gives an equal row and the same
 * bytes again), every truncation refused, random corruption never crashes, version and flag checks.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/types.h"
#include "join/row_codec.h"
#include "../support/random_rows.h"

/* Decoding must fail with E_STATE_CORRUPT. */
static void decode_fails(const wd_schema_t *s, const void *p, size_t n, const char *what) {
  wd_row_t *row = (wd_row_t *)1;
  bool tomb = false;
  wd_error_t *err = wd_row_decode(s, p, n, &row, &tomb);
  cr_assert_not_null(err, "%s: decoding should fail", what);
  cr_assert_str_eq(err->id, "E_STATE_CORRUPT", "%s: %s", what, err->message);
  cr_assert_eq(err->cls, WD_ERR_IO);
  cr_assert_null(row);
  wd_error_destroy(err);
}

/* ---- the property test -------------------------------------------------------------- */

/* Whether row has a non-NULL ARRAY, MAP or ROW value (memory of its own outside the row's block). */
static bool owns_nested(const wd_schema_t *s, const wd_row_t *row) {
  for (size_t c = 0; c < s->ncols; c++) {
    wd_type_id_t id = s->cols[c].type->id;
    if (!row->v[c].is_null && (id == WD_ARRAY || id == WD_MAP || id == WD_ROW)) return true;
  }
  return false;
}

Test(row_codec, property_roundtrip, .timeout = 300) {
  const char *env = getenv("WD_CODEC_SEED");
  uint64_t base = env ? strtoull(env, NULL, 10) : 20240501;
  size_t rows = 0, bytes = 0;
  for (uint64_t iter = 0; iter < 250; iter++) {
    rng_t r = {base * 1000003 + iter + 1};
    for (int warm = 0; warm < 4; warm++) rnd(&r);
    wd_schema_t *s = gen_schema(&r);
    for (int k = 0; k < 20; k++) {
      wd_row_t *row = gen_row(&r, s);
      bool tomb = chance(&r, 20);
      uint64_t ms = rnd(&r);
      wd_buf_t b = {0};
      cr_assert_eq(wd_buf_append(&b, "pre", 3), 0); /* encode appends */
      cr_assert_eq(wd_row_encode(s, row, tomb, ms, &b), 0, "seed %llu iter %llu row %d", (unsigned long long)base,
                   (unsigned long long)iter, k);
      cr_assert_eq(memcmp(b.data, "pre", 3), 0);
      const uint8_t *enc = b.data + 3;
      size_t len = b.len - 3;
      cr_assert_eq(enc[0], WD_ROW_CODEC_VERSION);
      cr_assert_eq((enc[1] & WD_ENTRY_FLAG_TOMBSTONE) != 0, tomb);
      if (tomb) {
        uint64_t got = 0;
        for (int i = 0; i < 8; i++) got |= (uint64_t)enc[2 + i] << (8 * i);
        cr_assert_eq(got, ms, "tombstone time little-endian at bytes 2-9");
      }

      wd_row_t *back = NULL;
      bool tomb2 = !tomb;
      wd_error_t *err = wd_row_decode(s, enc, len, &back, &tomb2);
      cr_assert_null(err, "seed %llu iter %llu row %d: %s", (unsigned long long)base, (unsigned long long)iter, k,
                     err ? err->message : "");
      cr_assert_eq(tomb2, tomb);
      cr_assert_eq(back->kind, row->kind);
      /* flagged as owning nothing outside its block (freed without a walk) exactly when it has no
       * nested value; the sanitizer builds check the flag again when the row is freed */
      cr_assert_eq(back->blk_only, !owns_nested(s, back));
      cr_assert(wd_row_eq(s, row, back, NULL), "seed %llu iter %llu row %d: decoded row differs",
                (unsigned long long)base, (unsigned long long)iter, k);
      for (size_t c = 0; c < s->ncols; c++) cr_assert_eq(wd_value_cmp(s->cols[c].type, &row->v[c], &back->v[c]), 0);

      /* re-encoding gives the same bytes */
      wd_buf_t b2 = {0};
      cr_assert_eq(wd_row_encode(s, back, tomb, ms, &b2), 0);
      cr_assert_eq(b2.len, len);
      cr_assert_eq(memcmp(b2.data, enc, len), 0, "re-encoding differs");

      /* every strict prefix is refused (sampled for long encodings) */
      size_t step = len > 400 ? len / 200 : 1;
      for (size_t cut = 0; cut < len; cut += step) decode_fails(s, enc, cut, "truncated");
      decode_fails(s, enc, len - 1, "truncated by one byte");

      /* a trailing byte is refused */
      cr_assert_eq(wd_buf_putc(&b, 0), 0);
      enc = b.data + 3; /* the buffer may have moved */
      decode_fails(s, enc, len + 1, "trailing byte");

      /* random corruption: never crashes; when it decodes, the row is usable */
      for (int f = 0; f < 4; f++) {
        memcpy(b2.data, enc, len);
        size_t at = below(&r, len);
        b2.data[at] ^= (uint8_t)(1u << below(&r, 8));
        wd_row_t *x = NULL;
        bool tx;
        err = wd_row_decode(s, b2.data, len, &x, &tx);
        if (err) {
          cr_assert_str_eq(err->id, "E_STATE_CORRUPT");
          wd_error_destroy(err);
        } else {
          wd_buf_t b3 = {0};
          cr_assert_eq(wd_row_encode(s, x, tx, 0, &b3), 0);
          wd_buf_free(&b3);
          wd_row_destroy(s, x);
        }
      }

      rows++;
      bytes += len;
      wd_buf_free(&b);
      wd_buf_free(&b2);
      wd_row_destroy(s, row);
      wd_row_destroy(s, back);
    }
    wd_schema_destroy(s);
  }
  cr_log_info("%zu random rows round-tripped (%zu bytes)", rows, bytes);
  cr_assert_eq(rows, 5000);
}

/* ---- fixed cases --------------------------------------------------------------------- */

static wd_schema_t *fixed_schema(void) {
  const char *names[] = {"k", "s", "d", "m"};
  const char *types[] = {"INT", "STRING", "DECIMAL(4,2)", "MAP<STRING,INT>"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(4, names, types, 1, pk, &s));
  return s;
}

Test(row_codec, layout) {
  wd_schema_t *s = fixed_schema();
  wd_row_t *row = wd_row_new(s);
  row->kind = WD_DELETE;
  row->v[0].is_null = false;
  row->v[0].i = -2;
  wd_buf_t b = {0};
  cr_assert_eq(wd_row_encode(s, row, false, 0, &b), 0);
  /* version, flags (kind -D = 3 in bits 2-3), bitmap 0b1110 (s, d, m NULL), zig-zag(-2) = 3 */
  const uint8_t want[] = {1, 3 << 2, 0x0e, 3};
  cr_assert_eq(b.len, sizeof(want));
  cr_assert_eq(memcmp(b.data, want, sizeof(want)), 0);
  wd_buf_reset(&b);
  cr_assert_eq(wd_row_encode(s, row, true, 0x0102030405060708ULL, &b), 0);
  const uint8_t want_t[] = {1, (3 << 2) | 1, 8, 7, 6, 5, 4, 3, 2, 1, 0x0e, 3};
  cr_assert_eq(b.len, sizeof(want_t));
  cr_assert_eq(memcmp(b.data, want_t, sizeof(want_t)), 0);
  wd_row_t *back = NULL;
  bool tomb = false;
  cr_assert_null(wd_row_decode(s, b.data, b.len, &back, &tomb));
  cr_assert(tomb);
  cr_assert_eq(back->kind, WD_DELETE);
  cr_assert(wd_row_eq(s, row, back, NULL));
  wd_row_destroy(s, back);
  wd_buf_free(&b);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}

Test(row_codec, bad_version_and_flags) {
  wd_schema_t *s = fixed_schema();
  wd_row_t *row = wd_row_new(s);
  wd_buf_t b = {0};
  cr_assert_eq(wd_row_encode(s, row, false, 0, &b), 0);
  b.data[0] = 2;
  wd_row_t *back = NULL;
  bool tomb;
  wd_error_t *err = wd_row_decode(s, b.data, b.len, &back, &tomb);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_STATE_CORRUPT");
  cr_assert(strstr(err->message, "version"), "%s", err->message);
  cr_assert_null(back);
  wd_error_destroy(err);
  b.data[0] = 0;
  decode_fails(s, b.data, b.len, "version 0");
  b.data[0] = 1;
  b.data[1] = 0x02;
  decode_fails(s, b.data, b.len, "unknown flag bit 1");
  b.data[1] = 0x10;
  decode_fails(s, b.data, b.len, "unknown flag bit 4");
  b.data[1] = 0;
  b.data[2] = 0x1f; /* bit 4: beyond the 4 columns */
  decode_fails(s, b.data, b.len, "bitmap bit beyond the columns");
  decode_fails(s, "", 0, "empty");
  decode_fails(s, "\x01", 1, "one byte");
  wd_buf_free(&b);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}

Test(row_codec, invalid_values) {
  wd_schema_t *s = fixed_schema();
  /* k = INT from a zig-zag varint beyond INT's range */
  const uint8_t big_int[] = {1, 0, 0x0e, 0x80, 0x80, 0x80, 0x80, 0x20};
  decode_fails(s, big_int, sizeof(big_int), "INT out of range");
  /* d = DECIMAL(4,2) with unscaled 10000 (100.00) */
  uint8_t dec[3 + 16] = {1, 0, 0x0b};
  dec[3] = 0x10;
  dec[4] = 0x27;
  decode_fails(s, dec, sizeof(dec), "DECIMAL beyond precision");
  /* s = STRING with a length beyond the input */
  const uint8_t long_str[] = {1, 0, 0x0d, 0x7f, 'a'};
  decode_fails(s, long_str, sizeof(long_str), "string length beyond the input");
  /* m = MAP with a huge count */
  const uint8_t huge_map[] = {1, 0, 0x07, 0xff, 0xff, 0xff, 0xff, 0x0f};
  decode_fails(s, huge_map, sizeof(huge_map), "huge MAP count");
  /* m = MAP entry with a bad null byte */
  const uint8_t bad_null[] = {1, 0, 0x07, 0x01, 0x01, 'a', 0x07, 0x00};
  decode_fails(s, bad_null, sizeof(bad_null), "null byte 7");
  /* and the good version of that entry decodes */
  const uint8_t good[] = {1, 0, 0x06, 0x00, 0x01, 0x01, 'a', 0x00, 0x0a};
  wd_row_t *row = NULL;
  bool tomb;
  wd_error_t *err = wd_row_decode(s, good, sizeof(good), &row, &tomb);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(row->v[3].map.n, 1);
  cr_assert_str_eq(row->v[3].map.k[0].s.p, "a");
  cr_assert_eq(row->v[3].map.v[0].i, 5);
  cr_assert_eq(row->v[0].i, 0);
  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}
