/*
 * common/text.c — see text.h.
 */
#include "common/text.h"

#include <stdint.h>
#include <string.h>

/* Levenshtein distance of a and b (ASCII case-insensitive), capped at 99 for long strings. */
size_t wd_edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na > 63 || nb > 63) return 99;
  size_t row[64];
  for (size_t j = 0; j <= nb; j++) row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      char ca = a[i - 1], cb = b[j - 1];
      if (ca >= 'A' && ca <= 'Z') ca = (char)(ca - 'A' + 'a');
      if (cb >= 'A' && cb <= 'Z') cb = (char)(cb - 'A' + 'a');
      size_t best = diag + (ca != cb);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = row[j];
      row[j] = best;
    }
  }
  return row[nb];
}

/* The candidate closest to word when it is close enough to be a likely typo, else NULL. */
const char *wd_closest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  size_t bestd = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    size_t d = wd_edit_distance(word, cands[i]);
    if (d < bestd) {
      bestd = d;
      best = cands[i];
    }
  }
  size_t len = strlen(word);
  size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
  return best && bestd <= limit ? best : NULL;
}

/* The 6-bit value of base64 character c in mode, or -1. */
static int wd_b64_val(unsigned char c, wd_base64_mode_t mode) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || (c == '-' && mode == WD_BASE64_LENIENT)) return 62;
  if (c == '/' || (c == '_' && mode == WD_BASE64_LENIENT)) return 63;
  return -1;
}

int wd_base64_decode(const char *p, size_t n, wd_base64_mode_t mode, uint8_t *out, size_t *outn) {
  size_t pad = 0;
  while (n > 0 && p[n - 1] == '=' && (mode == WD_BASE64_LENIENT || pad < 2)) {
    n--;
    pad++;
  }
  if (mode == WD_BASE64_STRICT && pad && (n + pad) % 4 != 0) return -1;
  if (n % 4 == 1) return -1;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = wd_b64_val((unsigned char)p[i], mode);
    if (v < 0) return -1;
    acc = ((acc << 6) | (uint32_t)v) & 0xffffffu; /* at most 14 bits are pending */
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  *outn = o;
  return 0;
}
