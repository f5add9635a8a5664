/*
 * common/text.h — small text helpers: typo suggestions for the config loader and the table
 * validation, UTF-8 decoding (the JSON writers, listagg's whitespace rules) and base64 decoding
 * (BYTES text, Debezium's base64 decimals and bytes). Pure functions, any thread.
 */
#ifndef WD_TEXT_H
#define WD_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Levenshtein distance of a and b (ASCII case-insensitive), capped at 99 for strings longer than
 * 63 bytes. */
size_t wd_edit_distance(const char *a, const char *b);

/* The candidate of cands[0..n) closest to word when it is close enough to be a likely typo (at
 * most 1 edit for words up to 4 characters, 2 up to 8, 3 above), else NULL. Borrowed from cands. */
const char *wd_closest(const char *word, const char *const *cands, size_t n);

/* Decodes the UTF-8 sequence at s[0..n) (n >= 1), strictly as RFC 3629 defines it: no overlong
 * forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Returns its length 1..4 and sets
 * *cp to the code point (cp may be NULL), or returns 0 when s does not start with a valid
 * sequence (a bad lead byte, a missing or bad continuation byte, a truncated sequence). Inline:
 * the changelog's string writer calls it for every non-ASCII character. */
static inline size_t wd_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
  uint8_t c = s[0];
  size_t len;
  uint32_t v;
  if (c < 0x80) {
    len = 1;
    v = c;
  } else if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    v = c & 0x1fu;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    v = c & 0x0fu;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    v = c & 0x07u;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3fu);
  }
  if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (len == 4 && (v < 0x10000 || v > 0x10ffff)))
    return 0;
  if (cp) *cp = v;
  return len;
}

/* How wd_base64_decode reads its text (RFC 4648). */
typedef enum wd_base64_mode {
  /* the standard alphabet (+ /) only; at most two '=' and, when present, a padded length that
   * is a multiple of 4 (Debezium's and Avro-JSON's bytes) */
  WD_BASE64_STRICT = 0,
  /* the standard or the URL-safe alphabet (+ / or - _); any number of trailing '=' (the text of
   * a BYTES value, spec §12.2) */
  WD_BASE64_LENIENT = 1
} wd_base64_mode_t;

/* Decodes the base64 text p[0..n) (no whitespace; padding optional) into out, which must hold
 * n / 4 * 3 + 3 bytes; *outn is the decoded length. Returns 0, or -1 on a character outside the
 * alphabet, a bad padding (strict mode) or a length that leaves 6 stray bits (n % 4 == 1). */
int wd_base64_decode(const char *p, size_t n, wd_base64_mode_t mode, uint8_t *out, size_t *outn);

#endif
