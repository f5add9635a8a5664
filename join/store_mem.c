/*
 * join/store_mem.c — the in-memory store (`--store memory` and tests): two open-addressing hash
 * tables (linear probing, backward-shift deletion), one for "state" and one for "meta".
 *
 * A write is atomic: every allocation it needs (new entries, table growth) happens before the
 * first change, so a failed write leaves the store as it was. Scan visits entries in key order
 * (bytewise, like RocksDB), although store.h promises no order for this backend.
 */
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "join/store.h"
#include "join/store_impl.h"

/* One key -> value pair; key at data[0..klen), value at data[klen..klen+vlen). */
typedef struct wd_mem_entry {
  uint64_t hash;
  size_t klen;
  size_t vlen;
  uint8_t data[];
} wd_mem_entry_t;

typedef struct wd_mem_table {
  wd_mem_entry_t **slots; /* cap slots, NULL = empty */
  size_t cap; /* 0 or a power of two */
  size_t count;
} wd_mem_table_t;

typedef struct wd_store_mem {
  struct wd_store base; /* first: wd_store_t * <-> wd_store_mem_t * */
  wd_mem_table_t state;
  wd_mem_table_t meta;
} wd_store_mem_t;

/* The slot hash of a key (XXH3, common/hash.h; its low bits are well spread). */
static uint64_t wd_mem_hash(const uint8_t *key, size_t klen) { return wd_hash_bytes(key, klen, 0); }

/*
 * Finds key in t. Returns the slot index holding it (*found = 1) or the empty slot where it would
 * go (*found = 0). t->cap must be > t->count (there is always an empty slot).
 */
static size_t wd_mem_find(const wd_mem_table_t *t, const uint8_t *key, size_t klen, uint64_t hash, int *found) {
  size_t mask = t->cap - 1;
  size_t i = (size_t)hash & mask;
  for (;;) {
    const wd_mem_entry_t *e = t->slots[i];
    if (!e) break;
    if (e->hash == hash && e->klen == klen && (klen == 0 || memcmp(e->data, key, klen) == 0)) {
      *found = 1;
      return i;
    }
    i = (i + 1) & mask;
  }
  *found = 0;
  return i;
}

/*
 * Makes room for `extra` more entries at a load factor of at most 3/4, rehashing into a larger
 * slot array when needed. Returns 0, or -1 on no memory (t unchanged).
 */
static int wd_mem_reserve(wd_mem_table_t *t, size_t extra) {
  int rc = -1;
  wd_mem_entry_t **slots = NULL;
  size_t need = t->count + extra;
  size_t cap = t->cap ? t->cap : 16;
  while (need >= cap / 4 * 3) {
    if (cap > SIZE_MAX / 2 / sizeof(*slots)) goto cleanup;
    cap *= 2;
  }
  if (cap == t->cap) {
    rc = 0;
    goto cleanup;
  }
  slots = calloc(cap, sizeof(*slots));
  if (!slots) goto cleanup;
  for (size_t i = 0; i < t->cap; i++) {
    wd_mem_entry_t *e = t->slots[i];
    if (!e) continue;
    size_t j = (size_t)e->hash & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = e;
  }
  free(t->slots);
  t->slots = slots;
  t->cap = cap;
  slots = NULL;
  rc = 0;
cleanup:
  free(slots);
  return rc;
}

/*
 * Empties slot i (whose entry the caller has taken) and shifts later entries of the same probe
 * run back, so lookups never need deletion markers.
 */
static void wd_mem_remove_at(wd_mem_table_t *t, size_t i) {
  size_t mask = t->cap - 1;
  size_t j = i;
  t->slots[i] = NULL;
  t->count--;
  for (;;) {
    j = (j + 1) & mask;
    wd_mem_entry_t *e = t->slots[j];
    if (!e) break;
    size_t home = (size_t)e->hash & mask;
    /* e may move to i unless its home lies cyclically in (i, j]. */
    int stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    t->slots[i] = e;
    t->slots[j] = NULL;
    i = j;
  }
}

/* Frees every entry and the slot array of t; t becomes empty. */
static void wd_mem_table_free(wd_mem_table_t *t) {
  for (size_t i = 0; i < t->cap; i++) free(t->slots[i]);
  free(t->slots);
  memset(t, 0, sizeof(*t));
}

/* A malloc'd entry holding copies of key and val, or NULL on no memory. */
static wd_mem_entry_t *wd_mem_entry_new(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  if (klen > SIZE_MAX - sizeof(wd_mem_entry_t) - vlen) return NULL;
  wd_mem_entry_t *e = malloc(sizeof(*e) + klen + vlen);
  if (!e) return NULL;
  e->hash = wd_mem_hash(key, klen);
  e->klen = klen;
  e->vlen = vlen;
  if (klen) memcpy(e->data, key, klen);
  if (vlen) memcpy(e->data + klen, val, vlen);
  return e;
}

/* A malloc'd copy of e's value (at least 1 byte allocated, so a present value is never NULL). */
static uint8_t *wd_mem_copy_val(const wd_mem_entry_t *e) {
  uint8_t *v = malloc(e->vlen ? e->vlen : 1);
  if (v && e->vlen) memcpy(v, e->data + e->klen, e->vlen);
  return v;
}

/* Looks up one key of t: a new copy of its value in *val (NULL when absent). Returns 0, or -1
 * on no memory. */
static int wd_mem_get(const wd_mem_table_t *t, const uint8_t *key, size_t klen, uint8_t **val, size_t *vlen) {
  int found = 0;
  *val = NULL;
  *vlen = 0;
  if (t->count == 0) return 0;
  size_t i = wd_mem_find(t, key, klen, wd_mem_hash(key, klen), &found);
  if (!found) return 0;
  *val = wd_mem_copy_val(t->slots[i]);
  if (!*val) return -1;
  *vlen = t->slots[i]->vlen;
  return 0;
}

/*
 * The multi_get callback: copies each present value; on no memory frees what it copied and
 * fails with WD_ERR_NOMEM "E_STORE_READ". The thread that uses st.
 */
static wd_error_t *wd_mem_multi_get(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                    uint8_t **vals, size_t *vlens) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  wd_error_t *err = NULL;
  for (size_t i = 0; i < n; i++) {
    if (wd_mem_get(&ms->state, keys[i], klens[i], &vals[i], &vlens[i])) {
      err = wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "memory store: out of memory copying %zu values", n);
      goto cleanup;
    }
  }
cleanup:
  if (err) {
    for (size_t i = 0; i < n; i++) {
      free(vals[i]);
      vals[i] = NULL;
      vlens[i] = 0;
    }
  }
  return err;
}

/* The meta_get callback (offsets). */
static wd_error_t *wd_mem_meta_get(wd_store_t *st, const uint8_t *key, size_t klen, uint8_t **val, size_t *vlen) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  if (wd_mem_get(&ms->meta, key, klen, val, vlen))
    return wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "memory store: out of memory reading an offset");
  return NULL;
}

/* Inserts e into t, replacing (and freeing) an entry with the same key. t has room (reserved). */
static void wd_mem_put(wd_mem_table_t *t, wd_mem_entry_t *e) {
  int found = 0;
  size_t i = wd_mem_find(t, e->data, e->klen, e->hash, &found);
  if (found) {
    free(t->slots[i]);
  } else {
    t->count++;
  }
  t->slots[i] = e;
}

/* Removes key from t if present. */
static void wd_mem_delete(wd_mem_table_t *t, const uint8_t *key, size_t klen) {
  int found = 0;
  if (t->count == 0) return;
  size_t i = wd_mem_find(t, key, klen, wd_mem_hash(key, klen), &found);
  if (!found) return;
  free(t->slots[i]);
  wd_mem_remove_at(t, i);
}

/*
 * The write callback. Phase 1 allocates an entry per put and reserves table room for all of
 * them; phase 2 applies the ops in order and cannot fail. Errors: WD_ERR_NOMEM "E_STORE_WRITE"
 * (nothing applied). The thread that uses st.
 */
/* Bytewise order, a shorter prefix first (RocksDB's). */
static int wd_mem_cmp_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen < blen ? -1 : alen > blen ? 1 : 0);
}

/* Removes every key k of t with begin <= k < end. */
static void wd_mem_delete_range(wd_mem_table_t *t, const uint8_t *begin, size_t blen, const uint8_t *end, size_t elen) {
  /* backward-shift deletion moves entries only into the hole, which starts at i and moves on:
   * re-checking slot i after a removal sees every entry that moved into the unscanned part */
  for (size_t i = 0; i < t->cap; i++) {
    wd_mem_entry_t *e;
    while ((e = t->slots[i]) && wd_mem_cmp_bytes(e->data, e->klen, begin, blen) >= 0 &&
           wd_mem_cmp_bytes(e->data, e->klen, end, elen) < 0) {
      free(e);
      wd_mem_remove_at(t, i);
    }
  }
}

static wd_error_t *wd_mem_write(wd_store_t *st, const wd_store_batch_t *const *bs, size_t nb, bool sync) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  wd_error_t *err = NULL;
  size_t total = 0;
  for (size_t k = 0; k < nb; k++) total += bs[k]->n;
  wd_mem_entry_t **fresh = calloc(total ? total : 1, sizeof(*fresh)); /* per op of every batch, in order */
  size_t nstate = 0, nmeta = 0, at = 0;
  wd_store_op_view_t v;
  (void)sync; /* nothing to make durable */
  if (!fresh) goto nomem;
  for (size_t k = 0; k < nb; k++)
    for (size_t i = 0; i < bs[k]->n; i++, at++) {
      wd_store_batch_view(bs[k], i, &v);
      if (v.kind == WD_STORE_OP_DELETE || v.kind == WD_STORE_OP_META_DELETE || v.kind == WD_STORE_OP_DELETE_RANGE ||
          v.kind == WD_STORE_OP_META_DELETE_RANGE)
        continue;
      fresh[at] = wd_mem_entry_new(v.key, v.klen, v.val, v.vlen);
      if (!fresh[at]) goto nomem;
      if (v.kind == WD_STORE_OP_PUT) {
        nstate++;
      } else {
        nmeta++;
      }
    }
  if (wd_mem_reserve(&ms->state, nstate) || wd_mem_reserve(&ms->meta, nmeta)) goto nomem;
  at = 0;
  for (size_t k = 0; k < nb; k++)
    for (size_t i = 0; i < bs[k]->n; i++, at++) {
      wd_store_batch_view(bs[k], i, &v);
      if (v.kind == WD_STORE_OP_DELETE) {
        wd_mem_delete(&ms->state, v.key, v.klen);
      } else if (v.kind == WD_STORE_OP_META_DELETE) {
        wd_mem_delete(&ms->meta, v.key, v.klen);
      } else if (v.kind == WD_STORE_OP_DELETE_RANGE) {
        wd_mem_delete_range(&ms->state, v.key, v.klen, v.val, v.vlen);
      } else if (v.kind == WD_STORE_OP_META_DELETE_RANGE) {
        wd_mem_delete_range(&ms->meta, v.key, v.klen, v.val, v.vlen);
      } else {
        wd_mem_put(v.kind == WD_STORE_OP_PUT ? &ms->state : &ms->meta, fresh[at]);
        fresh[at] = NULL; /* the table owns it now */
      }
    }
  goto cleanup;
nomem:
  err = wd_error_new(WD_ERR_NOMEM, E_STORE_WRITE, "memory store: out of memory applying a batch of %zu ops", total);
cleanup:
  if (fresh) {
    for (size_t i = 0; i < total; i++) free(fresh[i]);
  }
  free(fresh);
  return err;
}

/* qsort order of entry pointers: bytewise key order, a shorter prefix first (RocksDB's). */
static int wd_mem_cmp(const void *a, const void *b) {
  const wd_mem_entry_t *x = *(wd_mem_entry_t *const *)a;
  const wd_mem_entry_t *y = *(wd_mem_entry_t *const *)b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = n ? memcmp(x->data, y->data, n) : 0;
  if (c) return c;
  return (x->klen > y->klen) - (x->klen < y->klen);
}

/*
 * The scan callback: sorts the entries by key and calls cb on each until it returns non-zero.
 * cb must not write to the store. Errors: WD_ERR_NOMEM "E_STORE_READ". The thread that uses st.
 */
static wd_error_t *wd_mem_scan(wd_store_t *st, wd_store_scan_cb cb, void *ctx) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  wd_error_t *err = NULL;
  wd_mem_entry_t **all = NULL;
  size_t n = 0;
  if (ms->state.count == 0) goto cleanup;
  all = malloc(ms->state.count * sizeof(*all));
  if (!all) {
    err = wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "memory store: out of memory sorting %zu entries", ms->state.count);
    goto cleanup;
  }
  for (size_t i = 0; i < ms->state.cap; i++) {
    if (ms->state.slots[i]) all[n++] = ms->state.slots[i];
  }
  qsort(all, n, sizeof(*all), wd_mem_cmp);
  for (size_t i = 0; i < n; i++) {
    const wd_mem_entry_t *e = all[i];
    if (cb(ctx, e->data, e->klen, e->data + e->klen, e->vlen)) break;
  }
cleanup:
  free(all);
  return err;
}

/* The scan_prefix callback: the entries whose key starts with prefix, sorted, as wd_mem_scan. */
static wd_error_t *wd_mem_scan_prefix(wd_store_t *st, const uint8_t *prefix, size_t plen, const uint8_t *from,
                                      size_t flen, wd_store_scan_cb cb, void *ctx) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  wd_mem_entry_t **all = NULL;
  size_t n = 0;
  if (ms->state.count == 0) return NULL;
  all = malloc(ms->state.count * sizeof(*all));
  if (!all)
    return wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "memory store: out of memory scanning %zu entries",
                        ms->state.count);
  for (size_t i = 0; i < ms->state.cap; i++) {
    wd_mem_entry_t *e = ms->state.slots[i];
    if (!e || e->klen < plen || (plen && memcmp(e->data, prefix, plen) != 0)) continue;
    if (from) { /* keys before `from` are left out */
      size_t m = e->klen < flen ? e->klen : flen;
      int c = memcmp(e->data, from, m);
      if (c < 0 || (c == 0 && e->klen < flen)) continue;
    }
    all[n++] = e;
  }
  if (n > 1) qsort(all, n, sizeof(*all), wd_mem_cmp);
  for (size_t i = 0; i < n; i++)
    if (cb(ctx, all[i]->data, all[i]->klen, all[i]->data + all[i]->klen, all[i]->vlen)) break;
  free(all);
  return NULL;
}

/* Nothing to compact in memory. */
static wd_error_t *wd_mem_compact(wd_store_t *st) {
  (void)st;
  return NULL;
}

static uint64_t wd_mem_disk_bytes(wd_store_t *st) {
  (void)st;
  return 0;
}

static void wd_mem_close(wd_store_t *st) {
  wd_store_mem_t *ms = (wd_store_mem_t *)st;
  wd_mem_table_free(&ms->state);
  wd_mem_table_free(&ms->meta);
  free(ms);
}

static const wd_store_ops_t wd_store_mem_ops = {
    .name = "memory",
    .multi_get = wd_mem_multi_get,
    .write = wd_mem_write,
    .meta_get = wd_mem_meta_get,
    .scan = wd_mem_scan,
    .scan_prefix = wd_mem_scan_prefix,
    .compact = wd_mem_compact,
    .disk_bytes = wd_mem_disk_bytes,
    .close = wd_mem_close,
};

wd_error_t *wd_store_open_memory(wd_store_t **out) {
  if (!out) return wd_error_new(WD_ERR_INTERNAL, E_STORE_OPEN, "open_memory: NULL out");
  *out = NULL;
  wd_store_mem_t *ms = calloc(1, sizeof(*ms));
  if (!ms) return wd_error_new(WD_ERR_NOMEM, E_STORE_OPEN, "memory store: out of memory");
  ms->base.ops = &wd_store_mem_ops;
  *out = &ms->base;
  return NULL;
}
