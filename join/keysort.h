/*
 * join/keysort.h — sorts a set of keys in the store's order: bytewise, a key before a longer one
 * it is a prefix of (RocksDB's BytewiseComparator, which the state's column families use).
 *
 * The state sorts the keys it reads in one multi-get and the keys it writes in one batch (the
 * memtable's insert hint, join/store_rocksdb.c); with qsort each of the n log n comparisons was
 * a call through a pointer and a memcmp. Here the first 16 bytes of each key are taken once as two
 * big-endian integers, so nearly every comparison is two integer compares inlined, and the merge
 * sort is over those (a memcmp of the whole keys only when their first 16 bytes are equal).
 * A stable bottom-up merge sort: O(n log n) whatever the input; the keys need not be distinct.
 *
 * Thread: a wd_keysort_t is used by one thread at a time.
 */
#ifndef WD_JOIN_KEYSORT_H
#define WD_JOIN_KEYSORT_H

#include <stddef.h>
#include <stdint.h>

/* One key to sort: its first 16 bytes as two big-endian integers (zero-padded) and the key itself
 * (borrowed: it must stay valid until the sort's result has been read). */
typedef struct wd_keyref {
  uint64_t w0, w1;
  const uint8_t *key;
  size_t klen;
} wd_keyref_t;

/* The sort's reusable buffers (zero-initialised: {0}); wd_keysort_free releases them. */
typedef struct wd_keysort {
  wd_keyref_t *v, *tmp;
  size_t cap;
} wd_keysort_t;

/* An array of n keys to fill with wd_keysort_set (owned by ks, valid until the next call on ks),
 * grown as needed; NULL when memory runs out (ks unchanged). */
wd_keyref_t *wd_keysort_reserve(wd_keysort_t *ks, size_t n);

/* Sets r to key (klen bytes; borrowed). */
void wd_keysort_set(wd_keyref_t *r, const uint8_t *key, size_t klen);

/* Sorts the n keys set in wd_keysort_reserve's array; returns the sorted array (ks's, valid until
 * the next call on ks: it is either of ks's two buffers). Keys comparing equal keep their order. */
const wd_keyref_t *wd_keysort_run(wd_keysort_t *ks, size_t n);

/* Releases ks's buffers (ks stays usable). Accepts a zeroed ks. */
void wd_keysort_free(wd_keysort_t *ks);

#endif
