/*
 * common/hindex.h — the open-addressing hash index widen's fixed-size sets and lookups share:
 * a power-of-two array of slots, each empty or holding the number of one entry of an array the
 * caller keeps (its keys, hashes and payloads, in insertion order, so iteration never depends on
 * the hash), with linear probing. The caller hashes (common/hash.h) and compares keys; the index
 * stores no keys. No deletion and no growth: it is sized for its most entries up front (at most
 * half full), which is what the aggregate functions' sets (join/agg.c), the JSON decoders' field
 * lookup (ingest/source.c) and the benchmarks need. Header-only (static inline, so that the
 * comparison callback inlines on hot paths); an index is used by one thread at a time.
 *
 * Ownership: wd_hindex_init allocates the slot array; wd_hindex_free frees it.
 */
#ifndef WD_HINDEX_H
#define WD_HINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wd_hindex {
  size_t *slot; /* entry number + 1; 0 = empty */
  size_t mask; /* slot count - 1 */
} wd_hindex_t;

/* Prepares ix for at most max_entries entries (at least 8 slots, at least 2 * max_entries + 1).
 * Returns 0, or -1 on no memory (ix is then empty and wd_hindex_free is still safe). */
static inline int wd_hindex_init(wd_hindex_t *ix, size_t max_entries) {
  size_t n = 8;
  while (n < 2 * max_entries + 1) n <<= 1;
  ix->slot = calloc(n, sizeof(*ix->slot));
  ix->mask = ix->slot ? n - 1 : 0;
  return ix->slot ? 0 : -1;
}

static inline void wd_hindex_free(wd_hindex_t *ix) {
  free(ix->slot);
  ix->slot = NULL;
  ix->mask = 0;
}

/* Empties ix (keeps its size). */
static inline void wd_hindex_clear(wd_hindex_t *ix) {
  if (ix->slot) memset(ix->slot, 0, (ix->mask + 1) * sizeof(*ix->slot));
}

/* Probes for hash h: returns the first entry e in h's probe sequence for which eq(ctx, e) is
 * true (eq typically compares a stored hash first, then the key), or -1 when none is, with
 * *free_slot (if not NULL) the empty slot that ends the sequence, where wd_hindex_put files a new
 * entry with this hash. ix must have been initialised and be less than full. */
static inline ptrdiff_t wd_hindex_find(const wd_hindex_t *ix, uint64_t h, bool (*eq)(const void *ctx, size_t e),
                                       const void *ctx, size_t *free_slot) {
  for (size_t i = (size_t)h & ix->mask;; i = (i + 1) & ix->mask) {
    size_t s = ix->slot[i];
    if (!s) {
      if (free_slot) *free_slot = i;
      return -1;
    }
    if (eq(ctx, s - 1)) return (ptrdiff_t)(s - 1);
  }
}

/* Files entry e under hash h in the first empty slot of h's probe sequence (for an entry known
 * not to be there yet). ix must be less than full. */
static inline void wd_hindex_add(wd_hindex_t *ix, uint64_t h, size_t e) {
  size_t i = (size_t)h & ix->mask;
  while (ix->slot[i]) i = (i + 1) & ix->mask;
  ix->slot[i] = e + 1;
}

/* Files entry e in free_slot (from wd_hindex_find for the entry's hash, with no put since). */
static inline void wd_hindex_put(wd_hindex_t *ix, size_t free_slot, size_t e) { ix->slot[free_slot] = e + 1; }

#endif
