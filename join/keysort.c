/*
 * join/keysort.c — see keysort.h.
 */
#include "join/keysort.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

wd_keyref_t *wd_keysort_reserve(wd_keysort_t *ks, size_t n) {
  if (n <= ks->cap && ks->v) return ks->v;
  size_t cap = ks->cap ? ks->cap : 256;
  while (cap < n) cap *= 2;
  wd_keyref_t *v = malloc(cap * sizeof(*v)), *tmp = malloc(cap * sizeof(*tmp));
  if (!v || !tmp) {
    free(v);
    free(tmp);
    return NULL;
  }
  free(ks->v);
  free(ks->tmp);
  ks->v = v;
  ks->tmp = tmp;
  ks->cap = cap;
  return v;
}

void wd_keysort_set(wd_keyref_t *r, const uint8_t *key, size_t klen) {
  uint8_t b[16] = {0};
  memcpy(b, key, klen < 16 ? klen : 16);
  uint64_t w0, w1;
  memcpy(&w0, b, 8);
  memcpy(&w1, b + 8, 8);
  r->w0 = be64toh(w0); /* big-endian: integer order is byte order */
  r->w1 = be64toh(w1);
  r->key = key;
  r->klen = klen;
}

/* a < b in the store's order (bytewise, a prefix first) */
static inline int before(const wd_keyref_t *a, const wd_keyref_t *b) {
  if (a->w0 != b->w0) return a->w0 < b->w0;
  if (a->w1 != b->w1) return a->w1 < b->w1;
  /* the first 16 bytes (zero-padded) are equal: the whole keys decide */
  size_t n = a->klen < b->klen ? a->klen : b->klen;
  int c = n > 16 ? memcmp(a->key + 16, b->key + 16, n - 16) : 0;
  return c ? c < 0 : a->klen < b->klen;
}

#define WD_KEYSORT_RUN 8 /* runs of this many sorted by insertion first */

const wd_keyref_t *wd_keysort_run(wd_keysort_t *ks, size_t n) {
  wd_keyref_t *src = ks->v, *dst = ks->tmp;
  for (size_t lo = 0; lo < n; lo += WD_KEYSORT_RUN) {
    size_t hi = lo + WD_KEYSORT_RUN < n ? lo + WD_KEYSORT_RUN : n;
    for (size_t i = lo + 1; i < hi; i++) {
      wd_keyref_t x = src[i];
      size_t j = i;
      for (; j > lo && before(&x, &src[j - 1]); j--) src[j] = src[j - 1];
      src[j] = x;
    }
  }
  for (size_t w = WD_KEYSORT_RUN; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      if (mid == hi || !before(&src[mid], &src[mid - 1])) { /* already in order */
        memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*src));
        continue;
      }
      while (i < mid && j < hi) dst[k++] = before(&src[j], &src[i]) ? src[j++] : src[i++];
      if (i < mid) memcpy(dst + k, src + i, (mid - i) * sizeof(*src));
      if (j < hi) memcpy(dst + k, src + j, (hi - j) * sizeof(*src));
    }
    wd_keyref_t *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

void wd_keysort_free(wd_keysort_t *ks) {
  free(ks->v);
  free(ks->tmp);
  ks->v = ks->tmp = NULL;
  ks->cap = 0;
}
