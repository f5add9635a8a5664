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

