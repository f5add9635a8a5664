/*
 * tests/unit/test_keysort.c — join/keysort.h against qsort with the store's comparator (bytewise,
 * a prefix first) on keys built to hit every branch: equal first 16 bytes, prefixes of each
 * other, zero bytes where the padding is, duplicates, runs already in order and reversed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "join/keysort.h"

typedef struct {
  uint8_t b[40];
  size_t n;
} key_t_;

static int cmp_ref(const void *a, const void *b) {
  const key_t_ *x = *(key_t_ *const *)a, *y = *(key_t_ *const *)b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->b, y->b, n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

static uint32_t rng = 12345;
static uint32_t next(void) {
  rng = rng * 1103515245u + 12345u;
  return rng >> 8;
}

/* a key from a small alphabet (0, 1, 255) so that equal prefixes and zero padding are common */
static void make(key_t_ *k, int mode) {
  static const uint8_t AB[] = {0, 1, 255};
  k->n = mode == 0 ? next() % 20 : 14 + next() % 26;
  for (size_t i = 0; i < k->n; i++) k->b[i] = i < 16 && mode == 1 ? 7 : AB[next() % 3];
}

static void check(size_t n, int mode, int order) {
  key_t_ *keys = calloc(n ? n : 1, sizeof(*keys));
  key_t_ **ref = calloc(n ? n : 1, sizeof(*ref));
  for (size_t i = 0; i < n; i++) {
    make(&keys[i], mode);
    ref[i] = &keys[i];
  }
  if (order) { /* presorted (1) or reversed (2) input */
    qsort(ref, n, sizeof(*ref), cmp_ref);
    if (order == 2)
      for (size_t i = 0; i < n / 2; i++) {
        key_t_ *t = ref[i];
        ref[i] = ref[n - 1 - i];
        ref[n - 1 - i] = t;
      }
  }
  wd_keysort_t ks = {0};
  wd_keyref_t *r = wd_keysort_reserve(&ks, n);
  cr_assert_not_null(r);
  for (size_t i = 0; i < n; i++) wd_keysort_set(&r[i], ref[i]->b, ref[i]->n);
  const wd_keyref_t *o = wd_keysort_run(&ks, n);
  qsort(ref, n, sizeof(*ref), cmp_ref);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(o[i].klen, ref[i]->n, "n %zu mode %d order %d: key %zu", n, mode, order, i);
    cr_assert_eq(memcmp(o[i].key, ref[i]->b, o[i].klen), 0, "n %zu mode %d order %d: key %zu", n, mode, order, i);
  }
  wd_keysort_free(&ks);
  free(keys);
  free(ref);
}

Test(keysort, agrees_with_the_stores_order) {
  static const size_t SIZES[] = {0, 1, 2, 7, 8, 9, 16, 17, 100, 257, 1000, 4099};
  for (size_t s = 0; s < sizeof(SIZES) / sizeof(SIZES[0]); s++)
    for (int mode = 0; mode < 3; mode++)
      for (int order = 0; order < 3; order++) check(SIZES[s], mode, order);
}

Test(keysort, a_prefix_and_zero_padding_are_told_apart) {
  /* "a" < "a\0" < "a\0\0...": the padding of the first 16 bytes is zero, the lengths decide */
  static const uint8_t K[] = {'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const size_t lens[] = {18, 1, 16, 2, 17};
  wd_keysort_t ks = {0};
  wd_keyref_t *r = wd_keysort_reserve(&ks, 5);
  cr_assert_not_null(r);
  for (int i = 0; i < 5; i++) wd_keysort_set(&r[i], K, lens[i]);
  const wd_keyref_t *o = wd_keysort_run(&ks, 5);
  const size_t want[] = {1, 2, 16, 17, 18};
  for (int i = 0; i < 5; i++) cr_expect_eq(o[i].klen, want[i], "position %d: length %zu", i, o[i].klen);
  wd_keysort_free(&ks);
}
