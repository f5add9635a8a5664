/*
 * common/hash.h — the one non-cryptographic hash of widen's in-memory tables: XXH3-64 from
 * libxxhash (Debian's libxxhash-dev, https://xxhash.com), and the splitmix64 finaliser that
 * combines hashes of parts. Header-only (static inline); pure, any thread.
 *
 * Not persisted anywhere: every table built on these hashes lives in memory and is rebuilt at
 * start, and no output order depends on them (the tables iterate in insertion order). A value
 * that must stay the same across versions (the table definition's fingerprint,
 * app/ops/fingerprint.c; Kafka partitioning, which is librdkafka's) does not use these helpers.
 */
#ifndef WD_HASH_H
#define WD_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* XXH3-64 of p[0..n) with seed (0 for none); p may be NULL when n == 0. */
static inline uint64_t wd_hash_bytes(const void *p, size_t n, uint64_t seed) {
  return (uint64_t)XXH3_64bits_withSeed(n ? p : "", n, (XXH64_hash_t)seed);
}

/* The splitmix64 finaliser (Steele, Lea, Flood 2014): a bijection on 64 bits that spreads every
 * input bit over the result; combines the hashes of the parts of a composite value. */
static inline uint64_t wd_hash_mix64(uint64_t x) {
  x += UINT64_C(0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

#endif
