/*
 * join/state.c — write-back cache of decoded entries in front of the store (see state.h).
 */
#include "join/state.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* uthash's default on a failed allocation is exit(-1): a silent end of the process. Non-fatal
 * mode leaves the element out and calls uthash_nonfatal_oom, which insert() turns into E_NOMEM. */
static _Thread_local int wd_uthash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (wd_uthash_oom = 1)
#include <uthash.h>

#include "join/keysort.h"
#include "join/merge_int.h"
#include "join/row_codec.h"

/* The entry a key had before the open snapshot's first change of it (wd_state_set_undo). */
typedef struct wd_prior {
  wd_entry_t e; /* owned */
  uint64_t ms; /* a tombstone's stored ms */
  bool known; /* false: the key was put without being read first (no prior: the store is read) */
} wd_prior_t;

typedef struct wd_cached {
  UT_hash_handle hh;
  wd_entry_t e;
  bool dirty;
  bool ref; /* used since the last trim (second chance, CLOCK-style eviction) */
  uint32_t pidx; /* dirty, with the undo image on: its prior entry is s->prior[pidx] */
  uint64_t tomb_ms; /* a tombstone: the wall-clock ms its stored bytes carry */
  size_t est; /* estimated memory of the entry (bytes), counted in s->bytes */
  uint64_t snap; /* the snapshot holding the entry's latest bytes; evictable once it is written */
  size_t klen;
  uint8_t key[]; /* flexible: the key bytes */
} wd_cached_t;

struct wd_state {
  bool (*scan_keep)(void *ctx, uint32_t task); /* wd_state_set_task_filter, or NULL */
  void *scan_keep_ctx;
  uint64_t scan_left_out;
  const wd_table_t *t;
  wd_store_t *st;
  size_t max_cached;
  size_t max_bytes; /* 0: no memory budget */
  size_t bytes; /* sum of the entries' est */
  size_t ndirty;
  uint64_t now_ms;
  uint64_t snapshots; /* snapshots taken (the last one's number) */
  uint64_t written; /* the last snapshot known to be in the store */
  wd_cached_t *map;
  wd_buf_t buf;
  uint32_t task; /* the task (source partition) of get/put: the key prefix's number */
  uint8_t ns; /* the key prefix's namespace byte: WD_STATE_ROW_NS, or another layer's */
  wd_buf_t kbuf; /* scratch: a full key (prefix + primary key) */
  wd_buf_t pkeys; /* scratch: the full keys of a prefetch, back to back */
  size_t *pkoff;
  const uint8_t **pk; /* scratch: pointers to the full keys of a prefetch, and their lengths */
  size_t *pl;
  size_t cap_pkoff;
  /* the dirty entries (ndirty of them), so a flush visits only what the batch changed, not the
   * whole cache; sorted by key at each snapshot */
  wd_cached_t **dirty;
  size_t cap_dirty;
  /* prefetch scratch, reused: the keys to read (pointing into their new cache entries) */
  wd_cached_t **pend;
  const uint8_t **mk;
  size_t *ml;
  size_t cap_pend;
  wd_keysort_t ks; /* sort_by_key's buffers, reused */
  size_t base_ncols; /* columns of the rows first written (meta "table/base-ncols"); 0: the schema's */
  uint64_t hits, misses; /* key lookups of wd_state_prefetch found cached / read from the store */
  wd_cached_t *last; /* the entry of the last state_get (its put follows), NULL after a drop of it */
  const wd_state_hooks_t *hooks; /* borrowed, may be NULL */
  void *hooks_ctx;
  const wd_state_hooks_t *hooks2; /* a second layer's (wd_state_add_hooks), may be NULL */
  void *hooks2_ctx;
  /* the undo image (wd_state_set_undo): the entry each dirty entry had before its first change
   * since the last snapshot, handed to the snapshot's batch as its prior */
  bool undo;
  wd_prior_t *prior;
  size_t nprior, cap_prior;
};

void wd_state_cache_counts(const wd_state_t *s, uint64_t *hits, uint64_t *misses) {
  *hits = s->hits;
  *misses = s->misses;
}

#define BASE_NCOLS_KEY "table/base-ncols"

void wd_state_set_hooks(wd_state_t *s, const wd_state_hooks_t *hooks, void *ctx) {
  s->hooks = hooks;
  s->hooks_ctx = ctx;
}

void wd_state_set_base_ncols(wd_state_t *s, size_t n) { s->base_ncols = n; }

int wd_state_add_hooks(wd_state_t *s, const wd_state_hooks_t *hooks, void *ctx) {
  if (hooks && s->hooks2) return -1;
  s->hooks2 = hooks;
  s->hooks2_ctx = ctx;
  return 0;
}

wd_state_t *wd_state_new(const wd_table_t *t, wd_store_t *st, size_t max_cached) {
  wd_state_t *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->t = t;
  s->st = st;
  s->max_cached = max_cached ? max_cached : 100000;
  /* a state whose schema got nullable columns appended records the column count of its first
   * rows (wd_state_check_table); a read error here surfaces at the first read of the store */
  uint8_t *v = NULL;
  size_t vlen = 0;
  wd_error_t *err = wd_store_get_meta(st, BASE_NCOLS_KEY, &v, &vlen);
  wd_error_destroy(err);
  if (v && vlen < 20) {
    char buf[24];
    memcpy(buf, v, vlen);
    buf[vlen] = 0;
    s->base_ncols = (size_t)strtoull(buf, NULL, 10);
  }
  free(v);
  s->ns = WD_STATE_ROW_NS;
  return s;
}

static void drop(wd_state_t *s, wd_cached_t *c) {
  if (s->last == c) s->last = NULL;
  s->bytes -= c->est;
  HASH_DEL(s->map, c);
  wd_entry_clear(s->t, &c->e);
  free(c);
}

static void clear_priors(wd_state_t *s) {
  for (size_t i = 0; i < s->nprior; i++) wd_entry_clear(s->t, &s->prior[i].e);
  s->nprior = 0;
}

void wd_state_set_undo(wd_state_t *s, bool on) {
  if (s->ndirty) return; /* only between snapshots */
  s->undo = on;
}

void wd_state_destroy(wd_state_t *s) {
  if (!s) return;
  clear_priors(s);
  free(s->prior);
  wd_cached_t *c, *tmp;
  HASH_ITER(hh, s->map, c, tmp) drop(s, c);
  wd_buf_free(&s->buf);
  wd_buf_free(&s->kbuf);
  wd_buf_free(&s->pkeys);
  free(s->pkoff);
  free(s->pk);
  free(s->pl);
  free(s->dirty);
  free(s->pend);
  free(s->mk);
  free(s->ml);
  wd_keysort_free(&s->ks);
  free(s);
}

void wd_state_set_now(wd_state_t *s, uint64_t now_ms) { s->now_ms = now_ms; }

void wd_state_set_task(wd_state_t *s, uint32_t task) { s->task = task; }

void wd_state_set_namespace(wd_state_t *s, uint8_t ns) { s->ns = ns; }

/* Appends the key prefix of task to out: the namespace (WD_STATE_ROW_NS unless set), then the
 * task big-endian. */
static int put_prefix(const wd_state_t *s, wd_buf_t *out, uint32_t task) {
  uint8_t x[WD_STATE_PREFIX_LEN] = {s->ns, (uint8_t)(task >> 24), (uint8_t)(task >> 16), (uint8_t)(task >> 8),
                                    (uint8_t)task};
  return wd_buf_append(out, x, sizeof(x));
}

/* s->kbuf = the full key of pk[0..klen) in task. 0, or -1 on no memory. */
static int full_key(wd_state_t *s, uint32_t task, const uint8_t *pk, size_t klen) {
  wd_buf_reset(&s->kbuf);
  return put_prefix(s, &s->kbuf, task) || (klen && wd_buf_append(&s->kbuf, pk, klen));
}
void wd_state_set_memory_budget(wd_state_t *s, size_t bytes) { s->max_bytes = bytes; }
size_t wd_state_cached_bytes(const wd_state_t *s) { return s->bytes; }

/* Sets c's memory estimate from the size of its stored form: decoded rows take about three times
 * their encoding (value structs, separate string allocations) plus the entry itself. */
static void set_est(wd_state_t *s, wd_cached_t *c, size_t stored) {
  size_t est = sizeof(*c) + c->klen + 3 * stored + 64;
  s->bytes = s->bytes - c->est + est;
  c->est = est;
}
size_t wd_state_dirty(const wd_state_t *s) { return s->ndirty; }
size_t wd_state_cached(const wd_state_t *s) { return HASH_COUNT(s->map); }

/* Decodes stored bytes into entry e. */
static wd_error_t *decode_entry(wd_state_t *s, const uint8_t *v, size_t vlen, wd_entry_t *e) {
  e->state = WD_ENTRY_ABSENT;
  e->row = NULL;
  e->borrowed = false;
  if (!v) return NULL;
  bool tomb = false;
  wd_error_t *err = wd_row_decode_base(s->t->schema, s->base_ncols, v, vlen, &e->row, &tomb);
  if (err) return err;
  e->state = tomb ? WD_ENTRY_TOMBSTONE : WD_ENTRY_ROW;
  return NULL;
}

/* The wall-clock ms of stored tombstone bytes (row_codec.h: bytes 2-9, little-endian), else 0. */
static uint64_t tomb_ms_of(const uint8_t *v, size_t vlen) {
  uint64_t ms = 0;
  if (!v || vlen < 10 || !(v[1] & WD_ENTRY_FLAG_TOMBSTONE)) return 0;
  for (int i = 7; i >= 0; i--) ms = (ms << 8) | v[2 + i];
  return ms;
}

/* A new (absent) cache entry for key, whose uthash hash value is hashv. */
static wd_cached_t *insert_hashed(wd_state_t *s, const uint8_t *key, size_t klen, unsigned hashv) {
  wd_cached_t *c = calloc(1, sizeof(*c) + klen);
  if (!c) return NULL;
  c->klen = klen;
  memcpy(c->key, key, klen);
  wd_uthash_oom = 0;
  HASH_ADD_KEYPTR_BYHASHVALUE(hh, s->map, c->key, klen, hashv, c);
  if (wd_uthash_oom) { /* not added: the bucket table could not be allocated */
    free(c);
    return NULL;
  }
  return c;
}

static wd_cached_t *insert(wd_state_t *s, const uint8_t *key, size_t klen) {
  unsigned hashv;
  HASH_VALUE(key, klen, hashv);
  return insert_hashed(s, key, klen, hashv);
}

/* RocksDB's bytewise order (memcmp, then the shorter first) of two cache entries' keys. */
static int cmp_dirty_key(const void *a, const void *b) {
  const wd_cached_t *x = *(wd_cached_t *const *)a, *y = *(wd_cached_t *const *)b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* Sorts v[0..n) by key in the store's order (join/keysort.h: the first 16 bytes of each key as
 * two integers, a fraction of qsort's comparisons through a pointer; qsort if memory runs out). */
static void sort_by_key(wd_state_t *s, wd_cached_t **v, size_t n) {
  wd_keyref_t *r = wd_keysort_reserve(&s->ks, n);
  if (!r) {
    qsort(v, n, sizeof(*v), cmp_dirty_key);
    return;
  }
  for (size_t i = 0; i < n; i++) wd_keysort_set(&r[i], v[i]->key, v[i]->klen);
  const wd_keyref_t *o = wd_keysort_run(&s->ks, n);
  for (size_t i = 0; i < n; i++) /* each key is its entry's flexible member */
    v[i] = (wd_cached_t *)(void *)((uint8_t *)(uintptr_t)o[i].key - offsetof(wd_cached_t, key));
}

/* Grows the prefetch scratch to n keys; 0 or -1 on no memory. */
static int pend_reserve(wd_state_t *s, size_t n) {
  if (n <= s->cap_pend) return 0;
  size_t cap = s->cap_pend ? s->cap_pend : 256;
  while (cap < n) cap *= 2;
  wd_cached_t **pend = realloc(s->pend, cap * sizeof(*pend));
  if (pend) s->pend = pend;
  const uint8_t **mk = realloc(s->mk, cap * sizeof(*mk));
  if (mk) s->mk = mk;
  size_t *ml = realloc(s->ml, cap * sizeof(*ml));
  if (ml) s->ml = ml;
  if (!pend || !mk || !ml) return -1;
  s->cap_pend = cap;
  return 0;
}

/* wd_store_multi_get_each's callback of prefetch_full: decodes entry i into s->pend[i]. */
typedef struct {
  wd_state_t *s;
  size_t done; /* entries decoded */
} pf_ctx_t;

static wd_error_t *pf_decode(void *ctx, size_t i, const uint8_t *v, size_t vlen) {
  pf_ctx_t *pc = ctx;
  wd_error_t *err = decode_entry(pc->s, v, vlen, &pc->s->pend[i]->e);
  if (err) return err;
  pc->s->pend[i]->tomb_ms = tomb_ms_of(v, vlen);
  set_est(pc->s, pc->s->pend[i], vlen);
  pc->done = i + 1;
  return NULL;
}

/* Reads the n full keys not yet cached with one multi-get. */
static wd_error_t *prefetch_full(wd_state_t *s, size_t n, const uint8_t *const *keys, const size_t *klens) {
  wd_error_t *err = NULL;
  size_t m = 0, done = 0;
  if (pend_reserve(s, n ? n : 1)) return wd_error_nomem();
  /* every key not cached gets an (absent) cache entry now: later duplicates of the batch find it */
  for (size_t i = 0; i < n; i++) {
    wd_cached_t *c = NULL;
    unsigned hashv; /* once for the lookup and the insert */
    HASH_VALUE(keys[i], klens[i], hashv);
    HASH_FIND_BYHASHVALUE(hh, s->map, keys[i], klens[i], hashv, c);
    if (c) {
      s->hits++;
      continue;
    }
    s->misses++;
    if (!(c = insert_hashed(s, keys[i], klens[i], hashv))) {
      err = wd_error_nomem();
      goto done;
    }
    s->pend[m++] = c;
  }
  if (m == 0) return NULL;
  /* in key order: the store's multi-get then need not sort them (RocksDB's MultiGet sorts its
   * keys unless told they are sorted, which cost more than this sort; store_rocksdb.c checks) */
  if (m > 1) sort_by_key(s, s->pend, m);
  for (size_t i = 0; i < m; i++) {
    s->mk[i] = s->pend[i]->key;
    s->ml[i] = s->pend[i]->klen;
  }
  /* each entry is decoded where the store holds it (no copy of the value) */
  pf_ctx_t pc = {s, 0};
  err = wd_store_multi_get_each(s->st, m, s->mk, s->ml, pf_decode, &pc);
  done = pc.done;
done:
  /* on error the entries not decoded are taken out again */
  if (err)
    for (size_t i = done; i < m; i++) drop(s, s->pend[i]);
  return err;
}

wd_error_t *wd_state_prefetch_tasks(wd_state_t *s, size_t n, const uint32_t *tasks, const uint8_t *const *keys,
                                    const size_t *klens) {
  if (n == 0) return NULL;
  if (n + 1 > s->cap_pkoff) {
    size_t cap = (n + 1) * 2;
    size_t *o = realloc(s->pkoff, cap * sizeof(*o));
    if (o) s->pkoff = o;
    const uint8_t **k = realloc(s->pk, cap * sizeof(*k));
    if (k) s->pk = k;
    size_t *l = realloc(s->pl, cap * sizeof(*l));
    if (l) s->pl = l;
    if (!o || !k || !l) return wd_error_nomem();
    s->cap_pkoff = cap;
  }
  wd_buf_reset(&s->pkeys);
  for (size_t i = 0; i < n; i++) {
    s->pkoff[i] = s->pkeys.len;
    if (put_prefix(s, &s->pkeys, tasks ? tasks[i] : s->task) ||
        (klens[i] && wd_buf_append(&s->pkeys, keys[i], klens[i])))
      return wd_error_nomem();
  }
  s->pkoff[n] = s->pkeys.len;
  for (size_t i = 0; i < n; i++) {
    s->pk[i] = s->pkeys.data + s->pkoff[i];
    s->pl[i] = s->pkoff[i + 1] - s->pkoff[i];
  }
  return prefetch_full(s, n, s->pk, s->pl);
}

wd_error_t *wd_state_prefetch(wd_state_t *s, size_t n, const uint8_t *const *keys, const size_t *klens) {
  return wd_state_prefetch_tasks(s, n, NULL, keys, klens);
}

/* wd_state_ops_t.get: the cached entry, borrowed (state.h says how long it stays valid), reading
 * the store on a miss. */
static wd_error_t *state_get(void *ctx, const uint8_t *pk, size_t pklen, wd_entry_t *e) {
  wd_state_t *s = ctx;
  wd_cached_t *c = NULL;
  if (full_key(s, s->task, pk, pklen)) return wd_error_nomem();
  const uint8_t *key = s->kbuf.data;
  size_t klen = s->kbuf.len;
  HASH_FIND(hh, s->map, key, klen, c);
  if (!c) {
    wd_error_t *err = prefetch_full(s, 1, &key, &klen);
    if (err) return err;
    HASH_FIND(hh, s->map, key, klen, c);
    if (!c) return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "state cache lost a prefetched key");
  }
  c->ref = true;
  s->last = c;
  e->state = c->e.state;
  e->row = c->e.row;
  e->borrowed = c->e.row != NULL;
  return NULL;
}

/* wd_state_ops_t.put: the entry replaces the cached one and is marked dirty. */
static wd_error_t *state_put(void *ctx, const uint8_t *pk, size_t pklen, wd_entry_t *e) {
  wd_state_t *s = ctx;
  wd_cached_t *c = NULL;
  if (full_key(s, s->task, pk, pklen)) return wd_error_nomem();
  const uint8_t *key = s->kbuf.data;
  size_t klen = s->kbuf.len;
  /* a message puts the keys it got: the last one is at hand without a hash lookup */
  if (s->last && s->last->klen == klen && memcmp(s->last->key, key, klen) == 0) c = s->last;
  else HASH_FIND(hh, s->map, key, klen, c);
  bool unread = !c; /* put without a read: its prior entry is not known here */
  if (!c && !(c = insert(s, key, klen))) return wd_error_nomem();
  if (!c->dirty && s->ndirty == s->cap_dirty) {
    size_t cap = s->cap_dirty ? s->cap_dirty * 2 : 1024;
    wd_cached_t **d = realloc(s->dirty, cap * sizeof(*d));
    if (!d) return wd_error_nomem();
    s->dirty = d;
    s->cap_dirty = cap;
  }
  if (!c->dirty && s->undo && s->nprior == s->cap_prior) {
    size_t cap = s->cap_prior ? s->cap_prior * 2 : 1024;
    wd_prior_t *p = realloc(s->prior, cap * sizeof(*p));
    if (!p) return wd_error_nomem();
    s->prior = p;
    s->cap_prior = cap;
  }
  if (!c->dirty && s->undo) {
    /* the first change since the last snapshot: the entry as stored is the undo image's */
    wd_prior_t *p = &s->prior[s->nprior];
    p->known = !unread;
    p->e = c->e;
    p->e.borrowed = false;
    p->ms = c->tomb_ms;
    c->pidx = (uint32_t)s->nprior++;
  } else {
    wd_entry_clear(s->t, &c->e); /* a row the changelog still shares stays alive there */
  }
  c->e = *e;
  e->state = WD_ENTRY_ABSENT;
  e->row = NULL;
  e->borrowed = false;
  if (!c->dirty) {
    c->dirty = true;
    s->dirty[s->ndirty++] = c;
  }
  return NULL;
}

static const wd_state_ops_t WD_STATE_OPS = {state_get, state_put};
const wd_state_ops_t *wd_state_ops(void) { return &WD_STATE_OPS; }

wd_error_t *wd_state_snapshot(wd_state_t *s, wd_store_batch_t *b, uint64_t *snap) {
  uint64_t n = s->snapshots + 1;
  /* in key order: the memtable's skip list inserts a write batch's entries one after the other
   * from the last insert's position of the same key prefix (the insert hint of store_rocksdb.c),
   * so sorted keys find their place in a few steps instead of a search from the top each (issue
   * 14: the memtable insert was the largest cost of the state write) */
  if (s->ndirty > 1) sort_by_key(s, s->dirty, s->ndirty);
  for (size_t i = 0; i < s->ndirty; i++) {
    wd_cached_t *c = s->dirty[i];
    if (c->e.state == WD_ENTRY_ABSENT) {
      if (wd_store_batch_delete(b, c->key, c->klen)) return wd_error_nomem();
    } else {
      wd_buf_reset(&s->buf);
      if (wd_row_encode_base(s->t->schema, s->base_ncols, c->e.row, c->e.state == WD_ENTRY_TOMBSTONE, s->now_ms,
                             &s->buf) ||
          wd_store_batch_put(b, c->key, c->klen, s->buf.data, s->buf.len))
        return wd_error_nomem();
      set_est(s, c, s->buf.len);
    }
    if (!s->undo || !s->prior[c->pidx].known) continue; /* no prior: wd_store_undo_image reads it */
    const wd_prior_t *p = &s->prior[c->pidx];
    int rc = 0;
    if (p->e.state == WD_ENTRY_ABSENT) {
      rc = wd_store_batch_prior(b, NULL, 0);
    } else { /* the stored bytes again: the same encoding, a tombstone with its own ms */
      wd_buf_reset(&s->buf);
      rc =
          wd_row_encode_base(s->t->schema, s->base_ncols, p->e.row, p->e.state == WD_ENTRY_TOMBSTONE, p->ms, &s->buf) ||
          wd_store_batch_prior(b, s->buf.data, s->buf.len);
    }
    if (rc) return wd_error_nomem();
  }
  if (s->hooks && s->hooks->snapshot) {
    wd_error_t *err = s->hooks->snapshot(s->hooks_ctx, b, n);
    if (err) return err;
  }
  if (s->hooks2 && s->hooks2->snapshot) {
    wd_error_t *err = s->hooks2->snapshot(s->hooks2_ctx, b, n);
    if (err) return err;
  }
  for (size_t i = 0; i < s->ndirty; i++) {
    s->dirty[i]->dirty = false;
    s->dirty[i]->snap = n;
    if (s->dirty[i]->e.state == WD_ENTRY_TOMBSTONE) s->dirty[i]->tomb_ms = s->now_ms;
  }
  s->ndirty = 0;
  clear_priors(s);
  s->snapshots = n;
  *snap = n;
  return NULL;
}

void wd_state_written(wd_state_t *s, uint64_t snap) {
  wd_cached_t *c, *tmp;
  if (snap > s->written) s->written = snap;
  if (s->hooks && s->hooks->written) s->hooks->written(s->hooks_ctx, snap);
  if (s->hooks2 && s->hooks2->written) s->hooks2->written(s->hooks2_ctx, snap);
  bool over_bytes = s->max_bytes && s->bytes > s->max_bytes;
  if (HASH_COUNT(s->map) <= s->max_cached && !over_bytes) return;
  /* trim to 90% of the budgets, second-chance style: an entry used since the last trim is kept
   * once more; only entries whose bytes are in the store (clean, snapshot written) go, so a later
   * read never sees an older version than the cache had */
  size_t target = s->max_cached - s->max_cached / 10;
  size_t target_bytes = s->max_bytes - s->max_bytes / 10;
#define WD_OVER() (HASH_COUNT(s->map) > target || (s->max_bytes && s->bytes > target_bytes))
  for (int pass = 0; pass < 2 && WD_OVER(); pass++) {
    HASH_ITER(hh, s->map, c, tmp) {
      if (c->dirty || c->snap > s->written) continue;
      if (c->ref && pass == 0) {
        c->ref = false;
        continue;
      }
      drop(s, c);
      if (!WD_OVER()) break;
    }
  }
#undef WD_OVER
}

wd_error_t *wd_state_flush(wd_state_t *s, wd_store_batch_t *b) {
  uint64_t snap = 0;
  wd_error_t *err = wd_state_snapshot(s, b, &snap);
  if (!err) err = wd_store_write(s->st, b);
  if (err) return err;
  wd_store_batch_clear(b);
  wd_state_written(s, snap);
  return NULL;
}

void wd_state_drop_clean(wd_state_t *s) {
  wd_cached_t *c, *tmp;
  if (s->hooks && s->hooks->drop_clean) s->hooks->drop_clean(s->hooks_ctx);
  if (s->hooks2 && s->hooks2->drop_clean) s->hooks2->drop_clean(s->hooks2_ctx);
  HASH_ITER(hh, s->map, c, tmp) {
    if (!c->dirty && c->snap <= s->written) drop(s, c);
  }
}

void wd_state_discard(wd_state_t *s) {
  if (s->hooks && s->hooks->discard) s->hooks->discard(s->hooks_ctx);
  if (s->hooks2 && s->hooks2->discard) s->hooks2->discard(s->hooks2_ctx);
  for (size_t i = 0; i < s->ndirty; i++) drop(s, s->dirty[i]);
  s->ndirty = 0;
  clear_priors(s);
}

static bool in_task(const wd_state_t *s, const wd_cached_t *c, uint32_t task) {
  return c->klen >= WD_STATE_PREFIX_LEN && c->key[0] == s->ns &&
         (((uint32_t)c->key[1] << 24) | ((uint32_t)c->key[2] << 16) | ((uint32_t)c->key[3] << 8) | c->key[4]) == task;
}

wd_error_t *wd_state_drop_task(wd_state_t *s, uint32_t task, wd_store_batch_t *b) {
  wd_cached_t *c, *tmp;
  for (size_t i = 0; i < s->ndirty; i++)
    if (in_task(s, s->dirty[i], task))
      return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "dropping task %u with uncommitted rows", task);
  HASH_ITER(hh, s->map, c, tmp) {
    if (in_task(s, c, task)) drop(s, c);
  }
  if (s->hooks && s->hooks->drop_task) {
    wd_error_t *err = s->hooks->drop_task(s->hooks_ctx, task, b);
    if (err) return err;
  }
  if (s->hooks2 && s->hooks2->drop_task) {
    wd_error_t *err = s->hooks2->drop_task(s->hooks2_ctx, task, b);
    if (err) return err;
  }
  uint8_t begin[WD_STATE_PREFIX_LEN] = {s->ns, (uint8_t)(task >> 24), (uint8_t)(task >> 16), (uint8_t)(task >> 8),
                                        (uint8_t)task};
  uint8_t end[WD_STATE_PREFIX_LEN + 1];
  memcpy(end, begin, sizeof(begin));
  end[WD_STATE_PREFIX_LEN] = 0;
  size_t elen = WD_STATE_PREFIX_LEN;
  /* the end key: the prefix + 1 (task 0xffffffff ends at the next namespace byte) */
  int k = WD_STATE_PREFIX_LEN - 1;
  while (k >= 1 && end[k] == 0xff) end[k--] = 0;
  if (k >= 1) end[k]++;
  else end[0]++, elen = 1;
  if (wd_store_batch_delete_range(b, begin, sizeof(begin), end, elen)) return wd_error_nomem();
  return NULL;
}

typedef struct {
  wd_state_t *s;
  wd_state_row_cb cb;
  void *ctx;
  wd_error_t *err;
} scan_ctx_t;

void wd_state_set_task_filter(wd_state_t *s, bool (*keep)(void *ctx, uint32_t task), void *ctx) {
  s->scan_keep = keep;
  s->scan_keep_ctx = ctx;
  s->scan_left_out = 0;
}

uint64_t wd_state_left_out(const wd_state_t *s) { return s->scan_left_out; }

static int scan_one(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  scan_ctx_t *sc = ctx;
  if (klen < WD_STATE_PREFIX_LEN || key[0] != WD_STATE_ROW_NS) return 0; /* another namespace */
  wd_entry_t e;
  if ((sc->err = decode_entry(sc->s, val, vlen, &e))) return 1;
  int rc = 0;
  uint32_t task = (uint32_t)key[1] << 24 | (uint32_t)key[2] << 16 | (uint32_t)key[3] << 8 | key[4];
  if (e.state == WD_ENTRY_ROW && sc->s->scan_keep && !sc->s->scan_keep(sc->s->scan_keep_ctx, task))
    sc->s->scan_left_out++;
  else if (e.state == WD_ENTRY_ROW) rc = sc->cb(sc->ctx, e.row);
  wd_entry_clear(sc->s->t, &e);
  return rc;
}

wd_error_t *wd_state_scan_rows(wd_state_t *s, wd_state_row_cb cb, void *ctx) {
  scan_ctx_t sc = {s, cb, ctx, NULL};
  wd_error_t *err = wd_store_scan(s->st, scan_one, &sc);
  if (err) {
    wd_error_destroy(sc.err);
    return err;
  }
  return sc.err;
}

/* The schema's canonical text: "name TYPE,...|pk=k1,k2". */
static int schema_text(const wd_schema_t *sc, wd_buf_t *out) {
  for (size_t c = 0; c < sc->ncols; c++) {
    char *ty = wd_type_to_string(sc->cols[c].type);
    int rc = !ty || wd_buf_printf(out, "%s%s %s", c ? "," : "", sc->cols[c].name, ty);
    free(ty);
    if (rc) return -1;
  }
  if (wd_buf_printf(out, "|pk=")) return -1;
  for (size_t k = 0; k < sc->npk; k++)
    if (wd_buf_printf(out, "%s%s", k ? "," : "", sc->cols[sc->pk[k]].name)) return -1;
  /* the key layout (task prefixes since layout 2): an older directory's rows cannot be found */
  return wd_buf_printf(out, "|layout=2");
}

/* The columns ("name TYPE") of a schema text, split at the commas outside parentheses and angle
 * brackets; *pk points at the text after "|pk=" (or the end). Returns the count (at most max). */
static size_t schema_cols(const char *text, size_t len, const char **col, size_t *col_len, size_t max, const char **pk,
                          size_t *pk_len) {
  size_t n = 0, start = 0;
  int depth = 0;
  *pk = text + len;
  *pk_len = 0;
  for (size_t i = 0; i <= len; i++) {
    char c = i < len ? text[i] : '|';
    if (c == '(' || c == '<') depth++;
    if (c == ')' || c == '>') depth--;
    if ((c == ',' && depth == 0) || c == '|') {
      if (i > start && n < max) {
        col[n] = text + start;
        col_len[n++] = i - start;
      }
      start = i + 1;
      if (c == '|') {
        if (i + 4 <= len && !strncmp(text + i, "|pk=", 4)) {
          *pk = text + i + 4;
          *pk_len = len - i - 4;
        }
        break;
      }
    }
  }
  return n;
}

/* The first difference between the stored schema text have and the config's want, in words:
 * "column 'x' is BIGINT in the state, STRING in this config", a column only in one of them, or
 * the primary key. */
static void schema_diff(const char *have, size_t hlen, const char *want, size_t wlen, char *out, size_t size) {
  enum { MAXC = 512 };
  const char *hc[MAXC], *wc[MAXC];
  size_t hl[MAXC], wl[MAXC];
  const char *hpk, *wpk;
  size_t hpkl, wpkl;
  size_t hn = schema_cols(have, hlen, hc, hl, MAXC, &hpk, &hpkl);
  size_t wn = schema_cols(want, wlen, wc, wl, MAXC, &wpk, &wpkl);
  snprintf(out, size, "the schemas differ");
  /* a column's name is up to its first space */
#define NAME_LEN(p, l) ((size_t)((memchr((p), ' ', (l)) ? (const char *)memchr((p), ' ', (l)) : (p) + (l)) - (p)))
  for (size_t i = 0; i < hn || i < wn; i++) {
    if (i < hn && i < wn && hl[i] == wl[i] && !memcmp(hc[i], wc[i], hl[i])) continue;
    if (i < hn && i < wn) {
      size_t a = NAME_LEN(hc[i], hl[i]), b = NAME_LEN(wc[i], wl[i]);
      if (a == b && !memcmp(hc[i], wc[i], a))
        snprintf(out, size, "column '%.*s' is %.*s in the state, %.*s in this config", (int)a, hc[i],
                 (int)(hl[i] - a - (a < hl[i])), hc[i] + a + (a < hl[i]), (int)(wl[i] - b - (b < wl[i])),
                 wc[i] + b + (b < wl[i]));
      else
        snprintf(out, size, "column %zu is '%.*s' in the state, '%.*s' in this config", i + 1, (int)hl[i], hc[i],
                 (int)wl[i], wc[i]);
    } else if (i < hn) {
      snprintf(out, size, "column '%.*s' is in the state but not in this config", (int)hl[i], hc[i]);
    } else {
      snprintf(out, size, "column '%.*s' is in this config but not in the state", (int)wl[i], wc[i]);
    }
    return;
  }
#undef NAME_LEN
  if (hpkl != wpkl || memcmp(hpk, wpk, hpkl))
    snprintf(out, size, "the primary key is (%.*s) in the state, (%.*s) in this config", (int)hpkl, hpk, (int)wpkl,
             wpk);
}

wd_error_t *wd_state_check_table(wd_state_t *s, const char *dir) {
  wd_error_t *err = NULL;
  wd_buf_t want = {0};
  uint8_t *have = NULL;
  size_t hlen = 0;
  wd_store_batch_t *b = NULL;
  if (schema_text(s->t->schema, &want)) {
    err = wd_error_nomem();
    goto done;
  }
  if ((err = wd_store_get_meta(s->st, "table/schema", &have, &hlen))) goto done;
  if (have && (hlen != want.len || memcmp(have, want.data, hlen) != 0)) {
    /* nullable columns appended at the end (same primary key) keep the stored rows readable: the
     * rows written so far have the old column count (table/base-ncols), later ones carry theirs */
    const char *hp = memchr(have, '|', hlen), *wp = strchr((const char *)want.data, '|');
    size_t hcols = hp ? (size_t)(hp - (const char *)have) : hlen;
    size_t old_n = 0;
    bool appended = hp && wp && hlen - hcols == strlen(wp) && !memcmp(hp, wp, strlen(wp));
    if (appended) { /* the first k columns of the schema give exactly the stored column text */
      wd_buf_t part = {0};
      appended = false;
      for (size_t k = 1; k < s->t->schema->ncols && !appended; k++) {
        wd_schema_t view = *s->t->schema;
        view.ncols = k;
        view.npk = 0;
        wd_buf_reset(&part);
        if (schema_text(&view, &part)) break;
        const char *bar = memchr(part.data, '|', part.len); /* the column part of the view's text */
        appended = bar && (size_t)(bar - (const char *)part.data) == hcols && !memcmp(part.data, have, hcols);
        old_n = k;
      }
      wd_buf_free(&part);
      for (size_t c = old_n; appended && c < s->t->schema->ncols; c++) appended = !s->t->schema->cols[c].type->not_null;
    }
    if (appended) {
      char nbuf[24];
      int nl = snprintf(nbuf, sizeof(nbuf), "%zu", s->base_ncols ? s->base_ncols : old_n);
      if (!(b = wd_store_batch_new()) || wd_store_batch_set_meta(b, "table/schema", want.data, want.len) ||
          wd_store_batch_set_meta(b, BASE_NCOLS_KEY, (const uint8_t *)nbuf, (size_t)nl)) {
        err = wd_error_nomem();
        goto done;
      }
      if (!(err = wd_store_write(s->st, b)) && !s->base_ncols) s->base_ncols = old_n;
      goto done;
    }
  }
  if (have) {
    if (hlen != want.len || memcmp(have, want.data, hlen) != 0) {
      char diff[600];
      schema_diff((const char *)have, hlen, (const char *)want.data, want.len, diff, sizeof(diff));
      err = wd_error_new(WD_ERR_CONFIG, C_STATE_SCHEMA,
                         "the state directory %s holds a table with another schema: %s (state: %.*s; this config: "
                         "%s); point state.dir at another directory, or rebuild with widen replay into a fresh one",
                         dir ? dir : "", diff, (int)(hlen > 400 ? 400 : hlen), (const char *)have,
                         (const char *)want.data);
    }
    goto done;
  }
  if (!(b = wd_store_batch_new()) || wd_store_batch_set_meta(b, "table/schema", want.data, want.len)) {
    err = wd_error_nomem();
    goto done;
  }
  err = wd_store_write(s->st, b);
done:
  wd_store_batch_destroy(b);
  free(have);
  wd_buf_free(&want);
  return err;
}

typedef struct {
  const wd_schema_t *schema;
  wd_row_t **rows;
  size_t n, cap;
  bool nomem;
} collect_t;

static int collect_row(void *ctx, const wd_row_t *row) {
  collect_t *c = ctx;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    wd_row_t **rows = realloc(c->rows, cap * sizeof(*rows));
    if (!rows) return c->nomem = true;
    c->rows = rows;
    c->cap = cap;
  }
  if (!(c->rows[c->n] = wd_row_copy(c->schema, row))) return c->nomem = true;
  c->n++;
  return 0;
}

static int cmp_pk(const void *a, const void *b, void *ctx) {
  const wd_schema_t *sc = ctx;
  const wd_row_t *x = *(wd_row_t *const *)a, *y = *(wd_row_t *const *)b;
  for (size_t k = 0; k < sc->npk; k++) {
    int c = sc->pk[k];
    int r = wd_value_cmp(sc->cols[c].type, &x->v[c], &y->v[c]);
    if (r) return r;
  }
  return 0;
}

wd_error_t *wd_state_rows_sorted(wd_state_t *s, wd_row_t ***rows, size_t *n) {
  collect_t c = {s->t->schema, NULL, 0, 0, false};
  *rows = NULL;
  *n = 0;
  wd_error_t *err = wd_state_scan_rows(s, collect_row, &c);
  if (!err && c.nomem) err = wd_error_nomem();
  if (err) {
    wd_state_rows_free(s, c.rows, c.n);
    return err;
  }
  if (c.n > 1) qsort_r(c.rows, c.n, sizeof(*c.rows), cmp_pk, (void *)s->t->schema);
  *rows = c.rows;
  *n = c.n;
  return NULL;
}

void wd_state_rows_free(wd_state_t *s, wd_row_t **rows, size_t n) {
  for (size_t i = 0; i < n; i++) wd_row_destroy(s->t->schema, rows[i]);
  free(rows);
}
