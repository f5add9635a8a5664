/*
 * join/lookup.c — lookup sources, chains, INNER/LEFT and retractions over the merge engine (see
 * lookup.h for the design).
 */
#include "join/lookup.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "join/merge_int.h"

/* The key namespaces (first byte of a "state" key; the wide rows' is WD_STATE_ROW_NS 'R', the
 * lookups' rows are a wd_state under NS_LROW). A wide row is named by its task-qualified key "tk":
 * the task (4 bytes big-endian, join/state.h) then its encoded primary key. */
enum { NS_LROW = 'L', NS_INDEX = 0xF2, NS_FLAGS = 0xF3 };

static uint32_t tk_task(const uint8_t *tk) {
  return ((uint32_t)tk[0] << 24) | ((uint32_t)tk[1] << 16) | ((uint32_t)tk[2] << 8) | tk[3];
}
static int tk_put(wd_buf_t *out, uint32_t task, const uint8_t *wk, size_t wklen) {
  uint8_t t[4] = {(uint8_t)(task >> 24), (uint8_t)(task >> 16), (uint8_t)(task >> 8), (uint8_t)task};
  return wd_buf_append(out, t, 4) || (wklen && wd_buf_append(out, wk, wklen));
}

/* One entry of the overlay: a change of the index or the flags not yet in the store. */
typedef struct kv_ent {
  UT_hash_handle hh;
  uint8_t *val; /* owned; NULL when vlen is 0 */
  size_t vlen;
  bool present; /* false: deleted */
  bool dirty; /* changed since the last snapshot */
  uint64_t snap; /* the snapshot holding its latest change */
  size_t plen; /* index entries: length of the prefix (namespace, lookup, on key); else 0 */
  bool in_dirty, in_pending; /* listed in j->dirty / j->pending */
  size_t klen;
  uint8_t key[];
} kv_ent_t;

/* The index entries of the overlay grouped by prefix, for prefix scans. */
typedef struct kv_bucket {
  UT_hash_handle hh;
  kv_ent_t **v;
  size_t n, cap;
  size_t plen;
  uint8_t p[];
} kv_bucket_t;

typedef struct lk_src lk_src_t;
typedef struct {
  wd_join_t *j;
  lk_src_t *s;
} lk_ctx_t;

struct lk_src {
  char *name;
  bool lookup, required;
  int bit; /* index among the mains or among the lookups */
  bool *mapped; /* main: per wide column */
  /* lookup */
  wd_table_t *table; /* owns the lookup schema */
  const wd_schema_t *schema;
  wd_state_t *state;
  size_t non;
  int *on; /* wide columns; lookup column i is on[i] */
  size_t ncols;
  int *cols; /* wide columns; lookup column non + c is cols[c] */
  wd_row_t *scratch; /* a lookup-schema row whose values are borrowed while encoding on keys */
  lk_ctx_t octx;
};

/* One wide key touched by a main message. */
typedef struct {
  wd_buf_t key;
  wd_entry_t before, after;
  bool touched;
} cap_t;

struct wd_join {
  const wd_table_t *t;
  const wd_schema_t *ws;
  wd_state_t *wide;
  wd_store_t *st;
  lk_src_t *src;
  size_t nsrc, nmain, nlk;
  int *topo; /* lookup source ids in dependency order */
  uint64_t req_main, req_lk;
  bool checked, started, active;
  kv_ent_t *kv;
  kv_bucket_t *buckets;
  wd_changelog_t scratch; /* the engine's changelog of main messages (discarded) */
  wd_changelog_t lcl; /* a lookup message's changelog of lookup rows */
  cap_t *cap;
  size_t ncap, capcap;
  wd_buf_t kb, kb2, kb3, wkeys;
  size_t *woff;
  size_t nwoff, capwoff;
  uint64_t fanout;
  uint64_t written; /* the last snapshot known to be in the store */
  uint32_t task; /* the task of main messages (wd_join_set_task) */
  /* scale-out (wd_join_set_owner): lookup changes refresh rows of owned tasks only; reconcile
   * mode (wd_join_reconcile_task): refresh writes the index entries and emits only differences */
  bool (*owned)(void *ctx, uint32_t task);
  void *owned_ctx;
  bool reconciling;
  /* the overlay's entries changed since the last snapshot, and those snapshotted but not yet
   * known written: the hooks visit these only, not the whole overlay */
  kv_ent_t **dirty, **pending;
  size_t ndirty, npending, cap_dirty, cap_pending;
};

static int list_push(kv_ent_t ***v, size_t *n, size_t *cap, kv_ent_t *e) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 256;
    kv_ent_t **nv = realloc(*v, c * sizeof(*nv));
    if (!nv) return -1;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = e;
  return 0;
}

/* ---- key namespaces: the one place that builds this layer's store keys ------------------------ */

/* Appends ns, then (lookup id as a byte, when id >= 0), a, b to out. 0, or -1 on no memory. */
static int lk_key(wd_buf_t *out, uint8_t ns, int id, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  wd_buf_reset(out);
  if (wd_buf_putc(out, ns)) return -1;
  if (id >= 0 && wd_buf_putc(out, (uint8_t)id)) return -1;
  if (alen && wd_buf_append(out, a, alen)) return -1;
  if (blen && wd_buf_append(out, b, blen)) return -1;
  return 0;
}

/* ---- the overlay ---------------------------------------------------------------------------- */

static kv_ent_t *kv_find(wd_join_t *j, const uint8_t *key, size_t klen) {
  kv_ent_t *e = NULL;
  HASH_FIND(hh, j->kv, key, klen, e);
  return e;
}

static int bucket_add(wd_join_t *j, kv_ent_t *e) {
  kv_bucket_t *b = NULL;
  HASH_FIND(hh, j->buckets, e->key, e->plen, b);
  if (!b) {
    if (!(b = calloc(1, sizeof(*b) + e->plen))) return -1;
    b->plen = e->plen;
    memcpy(b->p, e->key, e->plen);
    HASH_ADD_KEYPTR(hh, j->buckets, b->p, b->plen, b);
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 8;
    kv_ent_t **v = realloc(b->v, cap * sizeof(*v));
    if (!v) return -1;
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = e;
  return 0;
}

/* Sets key to val (present) or deletes it, in the overlay. plen: index prefix length or 0. */
static wd_error_t *kv_set(wd_join_t *j, const uint8_t *key, size_t klen, size_t plen, const uint8_t *val, size_t vlen,
                          bool present) {
  kv_ent_t *e = kv_find(j, key, klen);
  if (!e) {
    if (!(e = calloc(1, sizeof(*e) + klen))) return wd_error_nomem();
    e->klen = klen;
    e->plen = plen;
    memcpy(e->key, key, klen);
    HASH_ADD_KEYPTR(hh, j->kv, e->key, e->klen, e);
    if (plen && bucket_add(j, e)) return wd_error_nomem(); /* the entry stays, unbucketed: a bug only on OOM */
  }
  uint8_t *copy = NULL;
  if (present && vlen) {
    if (!(copy = malloc(vlen))) return wd_error_nomem();
    memcpy(copy, val, vlen);
  }
  free(e->val);
  e->val = copy;
  e->vlen = present ? vlen : 0;
  e->present = present;
  e->dirty = true;
  if (!e->in_dirty) {
    if (list_push(&j->dirty, &j->ndirty, &j->cap_dirty, e)) return wd_error_nomem();
    e->in_dirty = true;
  }
  return NULL;
}

/* Reads key: *found, and its value into out (reset first). */
static wd_error_t *kv_get(wd_join_t *j, const uint8_t *key, size_t klen, bool *found, wd_buf_t *out) {
  wd_buf_reset(out);
  kv_ent_t *e = kv_find(j, key, klen);
  if (e) {
    *found = e->present;
    if (e->present && e->vlen && wd_buf_append(out, e->val, e->vlen)) return wd_error_nomem();
    return NULL;
  }
  uint8_t *v = NULL;
  size_t vlen = 0;
  wd_error_t *err = wd_store_multi_get(j->st, 1, &key, &klen, &v, &vlen);
  if (err) return err;
  *found = v != NULL;
  int rc = v && vlen ? wd_buf_append(out, v, vlen) : 0;
  /* kept as a clean entry (a read cache of the flags, trimmed in hook_written) */
  if (!rc && (err = kv_set(j, key, klen, 0, v, vlen, v != NULL))) {
    free(v);
    return err;
  }
  e = kv_find(j, key, klen);
  if (e && e->in_dirty && j->ndirty && j->dirty[j->ndirty - 1] == e) { /* just listed: as in the store */
    e->dirty = e->in_dirty = false;
    j->ndirty--;
  }
  free(v);
  return rc ? wd_error_nomem() : NULL;
}

/* Reads the flags of the n wide keys wk[i] (wl[i] bytes) not in the overlay with one multi-get,
 * keeping them as clean entries (the read cache kv_get fills one by one). */
static wd_error_t *kv_prefetch_flags(wd_join_t *j, size_t n, const uint8_t *const *wk, const size_t *wl) {
  wd_buf_t keys = {0};
  size_t *off = calloc(n + 1, sizeof(*off)), m = 0;
  const uint8_t **kp = calloc(n + 1, sizeof(*kp));
  size_t *kl = calloc(n + 1, sizeof(*kl)), *vl = calloc(n + 1, sizeof(*vl));
  uint8_t **vals = calloc(n + 1, sizeof(*vals));
  wd_error_t *err = NULL;
  if (!off || !kp || !kl || !vl || !vals) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    if (lk_key(&j->kb, NS_FLAGS, -1, wk[i], wl[i], NULL, 0)) {
      err = wd_error_nomem();
      goto done;
    }
    if (kv_find(j, j->kb.data, j->kb.len)) continue;
    off[m] = keys.len;
    kl[m++] = j->kb.len;
    if (wd_buf_append(&keys, j->kb.data, j->kb.len)) {
      err = wd_error_nomem();
      goto done;
    }
  }
  for (size_t i = 0; i < m; i++) kp[i] = keys.data + off[i];
  if (m && (err = wd_store_multi_get(j->st, m, kp, kl, vals, vl))) goto done;
  for (size_t i = 0; i < m && !err; i++) {
    if (kv_find(j, kp[i], kl[i])) continue; /* a key listed twice */
    err = kv_set(j, kp[i], kl[i], 0, vals[i], vl[i], vals[i] != NULL);
    kv_ent_t *e = kv_find(j, kp[i], kl[i]);
    if (!err && e && e->in_dirty && j->ndirty && j->dirty[j->ndirty - 1] == e) { /* as in the store */
      e->dirty = e->in_dirty = false;
      j->ndirty--;
    }
  }
done:
  for (size_t i = 0; vals && i < m; i++) free(vals[i]);
  free(vals);
  free(vl);
  free(kl);
  free(kp);
  free(off);
  wd_buf_free(&keys);
  return err;
}

/* Collects into j->wkeys/j->woff the suffixes (wide keys) of the present keys under prefix. */
typedef struct {
  wd_join_t *j;
  size_t plen;
  bool nomem;
} scan_t;

static int add_wkey(wd_join_t *j, const uint8_t *k, size_t klen) {
  if (j->nwoff + 1 >= j->capwoff) {
    size_t cap = j->capwoff ? j->capwoff * 2 : 256;
    size_t *o = realloc(j->woff, cap * sizeof(*o));
    if (!o) return -1;
    j->woff = o;
    j->capwoff = cap;
  }
  if (wd_buf_append(&j->wkeys, k, klen)) return -1;
  j->woff[++j->nwoff] = j->wkeys.len;
  return 0;
}

static int scan_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  (void)val;
  (void)vlen;
  scan_t *sc = ctx;
  if (kv_find(sc->j, key, klen)) return 0; /* the overlay decides */
  if (add_wkey(sc->j, key + sc->plen, klen - sc->plen)) return sc->nomem = true;
  return 0;
}

static wd_error_t *kv_scan_prefix(wd_join_t *j, const uint8_t *prefix, size_t plen) {
  wd_buf_reset(&j->wkeys);
  j->nwoff = 0;
  if (add_wkey(j, NULL, 0)) return wd_error_nomem(); /* makes room for woff[0] */
  j->nwoff = 0;
  j->woff[0] = 0;
  scan_t sc = {j, plen, false};
  wd_error_t *err = wd_store_scan_prefix(j->st, prefix, plen, scan_cb, &sc);
  if (err) return err;
  if (sc.nomem) return wd_error_nomem();
  kv_bucket_t *b = NULL;
  HASH_FIND(hh, j->buckets, prefix, plen, b);
  for (size_t i = 0; b && i < b->n; i++)
    if (b->v[i]->present && add_wkey(j, b->v[i]->key + plen, b->v[i]->klen - plen)) return wd_error_nomem();
  return NULL;
}

/* ---- state hooks: the lookups' rows and the overlay go into the wide state's store batch ------ */

static wd_error_t *hook_snapshot(void *ctx, wd_store_batch_t *b, uint64_t snap) {
  wd_join_t *j = ctx;
  for (size_t i = 0; i < j->nsrc; i++) {
    if (!j->src[i].lookup) continue;
    uint64_t m = 0; /* in step with the wide state's numbers: the lookups' states are only
                       snapshotted here */
    wd_error_t *err = wd_state_snapshot(j->src[i].state, b, &m);
    if (err) return err;
  }
  for (size_t i = 0; i < j->ndirty; i++) {
    kv_ent_t *e = j->dirty[i];
    int rc = e->present ? wd_store_batch_put(b, e->key, e->klen, e->val ? e->val : (const uint8_t *)"", e->vlen)
                        : wd_store_batch_delete(b, e->key, e->klen);
    if (rc || (!e->in_pending && list_push(&j->pending, &j->npending, &j->cap_pending, e))) return wd_error_nomem();
    e->in_pending = true;
  }
  for (size_t i = 0; i < j->ndirty; i++) {
    j->dirty[i]->dirty = j->dirty[i]->in_dirty = false;
    j->dirty[i]->snap = snap;
  }
  j->ndirty = 0;
  return NULL;
}

static void kv_free(wd_join_t *j, kv_ent_t *e) {
  HASH_DEL(j->kv, e);
  free(e->val);
  free(e);
}

/* Clean flags entries kept as a read cache (beyond it, clean entries are dropped). */
#define KV_CACHE_MAX 200000

static void hook_written(void *ctx, uint64_t snap) {
  wd_join_t *j = ctx;
  for (size_t i = 0; i < j->nsrc; i++)
    if (j->src[i].lookup) wd_state_written(j->src[i].state, snap);
  if (snap > j->written) j->written = snap;
  size_t keep = 0;
  bool freed = false;
  for (size_t i = 0; i < j->npending; i++) {
    kv_ent_t *e = j->pending[i];
    if (e->snap > snap) {
      j->pending[keep++] = e;
      continue;
    }
    e->in_pending = false;
    if (e->dirty) continue; /* changed again: listed in dirty */
    if (e->plen) { /* an index entry: the store has it, scans read it there */
      kv_free(j, e);
      freed = true;
    } /* else flags: stay as the read cache */
  }
  j->npending = keep;
  if (freed) { /* the buckets hold the index entries still in the overlay: dirty or pending ones */
    kv_bucket_t *b, *btmp;
    HASH_ITER(hh, j->buckets, b, btmp) {
      HASH_DEL(j->buckets, b);
      free(b->v);
      free(b);
    }
    for (size_t i = 0; i < j->ndirty; i++)
      if (j->dirty[i]->plen) (void)bucket_add(j, j->dirty[i]); /* on no memory: found by key, not by scans */
    for (size_t i = 0; i < j->npending; i++)
      if (j->pending[i]->plen && !j->pending[i]->in_dirty) (void)bucket_add(j, j->pending[i]);
  }
  if (HASH_COUNT(j->kv) > KV_CACHE_MAX) {
    kv_ent_t *e, *tmp;
    HASH_ITER(hh, j->kv, e, tmp)
    if (!e->in_dirty && !e->in_pending) kv_free(j, e);
  }
}

static void hook_drop_clean(void *ctx) {
  wd_join_t *j = ctx;
  for (size_t i = 0; i < j->nsrc; i++)
    if (j->src[i].lookup) wd_state_drop_clean(j->src[i].state);
  /* the cached flags of rows that may be another process's now; pending changes stay */
  kv_ent_t *e, *tmp;
  HASH_ITER(hh, j->kv, e, tmp)
  if (!e->in_dirty && !e->in_pending) kv_free(j, e);
}

/* After an aborted commit (join/state.h wd_state_discard): the uncommitted changes go, the next
 * reads get the committed entries from the store. */
static void hook_discard(void *ctx) {
  wd_join_t *j = ctx;
  for (size_t i = 0; i < j->nsrc; i++)
    if (j->src[i].lookup) wd_state_discard(j->src[i].state);
  for (size_t i = 0; i < j->ndirty; i++) j->dirty[i]->snap = UINT64_MAX; /* marks the discarded */
  size_t keep = 0;
  for (size_t i = 0; i < j->npending; i++)
    if (j->pending[i]->snap != UINT64_MAX) j->pending[keep++] = j->pending[i];
  j->npending = keep;
  for (size_t i = 0; i < j->ndirty; i++) kv_free(j, j->dirty[i]); /* reads go to the store again */
  j->ndirty = 0;
  /* the buckets may point at freed entries: rebuild them from what is left */
  kv_bucket_t *b, *btmp;
  HASH_ITER(hh, j->buckets, b, btmp) {
    HASH_DEL(j->buckets, b);
    free(b->v);
    free(b);
  }
  for (size_t i = 0; i < j->npending; i++)
    if (j->pending[i]->plen) (void)bucket_add(j, j->pending[i]);
}

static const wd_state_hooks_t HOOKS = {hook_snapshot, hook_written, hook_drop_clean, hook_discard, NULL};

/* ---- the lookups' row states, under their namespace ------------------------------------------- */

/* The lookup's own wd_state keeps its rows under NS_LROW, its task being the lookup's number. */
static wd_error_t *lk_get(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  lk_ctx_t *c = ctx;
  return wd_state_ops()->get(c->s->state, key, klen, e);
}

static wd_error_t *lk_put(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  lk_ctx_t *c = ctx;
  return wd_state_ops()->put(c->s->state, key, klen, e);
}

static const wd_state_ops_t LK_OPS = {lk_get, lk_put};

/* ---- building ----------------------------------------------------------------------------------- */

wd_error_t *wd_join_new(const wd_table_t *t, wd_join_t **out) {
  *out = NULL;
  wd_join_t *j = calloc(1, sizeof(*j));
  if (!j) return wd_error_nomem();
  j->src = calloc(WD_JOIN_MAX_SOURCES, sizeof(*j->src));
  if (!j->src) {
    free(j);
    return wd_error_nomem();
  }
  j->t = t;
  j->ws = wd_table_schema(t);
  *out = j;
  return NULL;
}

void wd_join_destroy(wd_join_t *j) {
  if (!j) return;
  if (j->started && j->active) wd_state_set_hooks(j->wide, NULL, NULL);
  for (size_t i = 0; i < j->nsrc; i++) {
    lk_src_t *s = &j->src[i];
    free(s->name);
    free(s->mapped);
    free(s->on);
    free(s->cols);
    if (s->lookup) {
      wd_row_destroy(s->schema, s->scratch);
      wd_state_destroy(s->state);
      wd_table_destroy(s->table);
    }
  }
  free(j->src);
  free(j->topo);
  kv_ent_t *e, *tmp;
  HASH_ITER(hh, j->kv, e, tmp) {
    HASH_DEL(j->kv, e);
    free(e->val);
    free(e);
  }
  kv_bucket_t *b, *btmp;
  HASH_ITER(hh, j->buckets, b, btmp) {
    HASH_DEL(j->buckets, b);
    free(b->v);
    free(b);
  }
  wd_changelog_free(j->t, &j->scratch);
  free(j->lcl.rows); /* its rows are reset after every lookup message */
  wd_buf_free(&j->lcl.keys);
  for (size_t i = 0; i < j->capcap; i++) {
    wd_buf_free(&j->cap[i].key);
    wd_entry_clear(j->t, &j->cap[i].before);
    wd_entry_clear(j->t, &j->cap[i].after);
  }
  free(j->cap);
  free(j->dirty);
  free(j->pending);
  wd_buf_free(&j->kb);
  wd_buf_free(&j->kb2);
  wd_buf_free(&j->kb3);
  wd_buf_free(&j->wkeys);
  free(j->woff);
  free(j);
}

static wd_error_t *add_src(wd_join_t *j, const char *name, lk_src_t **out) {
  if (j->nsrc >= WD_JOIN_MAX_SOURCES || j->started)
    return wd_error_new(WD_ERR_CONFIG, C_JOIN_TOO_MANY_SOURCES, "source '%s': at most %d sources per table", name,
                        WD_JOIN_MAX_SOURCES);
  lk_src_t *s = &j->src[j->nsrc];
  memset(s, 0, sizeof(*s));
  if (!(s->name = strdup(name ? name : ""))) return wd_error_nomem();
  *out = s;
  return NULL;
}

wd_error_t *wd_join_add_main(wd_join_t *j, const char *name, const bool *mapped, bool required, int *id) {
  lk_src_t *s = NULL;
  wd_error_t *err = add_src(j, name, &s);
  if (err) return err;
  if (!(s->mapped = calloc(j->ws->ncols, sizeof(bool)))) {
    free(s->name);
    return wd_error_nomem();
  }
  memcpy(s->mapped, mapped, j->ws->ncols * sizeof(bool));
  s->required = required;
  s->bit = (int)j->nmain++;
  *id = (int)j->nsrc++;
  return NULL;
}

wd_error_t *wd_join_add_lookup(wd_join_t *j, const char *name, const char *const *on, size_t non,
                               const char *const *cols, size_t ncols, bool has_seq, bool required, int *id) {
  wd_error_t *err = NULL;
  lk_src_t *s = NULL;
  size_t n = non + ncols + (has_seq ? 1 : 0);
  const char **names = calloc(n + 1, sizeof(*names));
  char **types = calloc(n + 1, sizeof(*types));
  wd_schema_t *schema = NULL;
  if (!names || !types) {
    err = wd_error_nomem();
    goto done;
  }
  if (non == 0) {
    err = wd_error_new(WD_ERR_CONFIG, C_LOOKUP_NO_ON,
                       "lookup source '%s': `on:` names no wide column; list the wide columns its key is joined on",
                       name);
    goto done;
  }
  if ((err = add_src(j, name, &s))) goto done;
  s->lookup = true;
  s->required = required;
  s->non = non;
  s->ncols = ncols;
  if (!(s->on = calloc(non, sizeof(int))) || !(s->cols = calloc(ncols + 1, sizeof(int)))) {
    err = wd_error_nomem();
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    const char *cname = i < non ? on[i] : i < non + ncols ? cols[i - non] : "_seq";
    int c = i < non + ncols ? wd_schema_find(j->ws, cname) : -1;
    if (i < non + ncols && c < 0) {
      err = wd_error_make(WD_ERR_CONFIG, i < non ? WD_EID_C_LOOKUP_ON_UNKNOWN : WD_EID_C_LOOKUP_COLUMN_UNKNOWN,
                          "lookup source '%s': '%s' is not a column of the wide table; name one of its columns", name,
                          cname);
      goto fail;
    }
    if (i >= non && i < non + ncols) {
      bool own_on = false;
      for (size_t k = 0; k < non; k++) own_on |= s->on[k] == c;
      if (wd_schema_is_pk(j->ws, c) || own_on) {
        err = wd_error_new(WD_ERR_CONFIG, C_LOOKUP_COLUMN_KEY,
                           "lookup source '%s' fills column '%s', which is %s; a lookup fills other columns only", name,
                           cname, own_on ? "one of its own `on` columns" : "part of the wide primary key");
        goto fail;
      }
      if (j->ws->cols[c].type->not_null) {
        err = wd_error_new(WD_ERR_CONFIG, C_LOOKUP_COLUMN_NOT_NULL,
                           "lookup source '%s' fills column '%s', declared NOT NULL; it is NULL while no lookup row "
                           "matches, so drop NOT NULL from it",
                           name, cname);
        goto fail;
      }
    }
    if (i < non) s->on[i] = c;
    else if (i < non + ncols) s->cols[i - non] = c;
    names[i] = cname;
    if (c >= 0) {
      wd_type_t *ty = wd_type_copy(j->ws->cols[c].type);
      if (ty) ty->not_null = false;
      types[i] = ty ? wd_type_to_string(ty) : NULL;
      wd_type_destroy(ty);
    } else {
      types[i] = strdup("BIGINT");
    }
    if (!types[i]) {
      err = wd_error_nomem();
      goto fail;
    }
  }
  if ((err = wd_schema_new(n, names, (const char *const *)types, non, on, &schema))) goto fail;
  wd_option_t opts[2] = {{"merge-engine", "deduplicate"}, {"sequence.field", "_seq"}};
  if ((err = wd_table_new(schema, has_seq ? 2 : 1, opts, &s->table))) goto fail;
  s->schema = wd_table_schema(s->table);
  if (!(s->scratch = wd_row_new(s->schema))) {
    err = wd_error_nomem();
    goto fail;
  }
  s->bit = (int)j->nlk++;
  s->octx.j = j;
  s->octx.s = s;
  *id = (int)j->nsrc++;
  goto done;
fail:
  wd_row_destroy(s->schema, s->scratch);
  wd_state_destroy(s->state);
  wd_table_destroy(s->table);
  free(s->name);
  free(s->on);
  free(s->cols);
  memset(s, 0, sizeof(*s));
done:
  if (types)
    for (size_t i = 0; i < n; i++) free(types[i]);
  free(types);
  free(names);
  return err;
}

const wd_schema_t *wd_join_source_schema(const wd_join_t *j, int id) {
  if (id < 0 || (size_t)id >= j->nsrc) return NULL;
  return j->src[id].lookup ? j->src[id].schema : j->ws;
}

bool wd_join_is_lookup(const wd_join_t *j, int id) { return id >= 0 && (size_t)id < j->nsrc && j->src[id].lookup; }

bool wd_join_active(const wd_join_t *j) { return j->active; }

uint64_t wd_join_fanout_rows(const wd_join_t *j) { return j->fanout; }

void wd_join_set_task(wd_join_t *j, uint32_t task) {
  j->task = task;
  if (j->wide) wd_state_set_task(j->wide, task);
}

/* The lookup filling wide column c, or -1. */
static int lookup_filling(const wd_join_t *j, int c, int except) {
  for (size_t i = 0; i < j->nsrc; i++) {
    const lk_src_t *s = &j->src[i];
    if (!s->lookup || (int)i == except) continue;
    for (size_t k = 0; k < s->ncols; k++)
      if (s->cols[k] == c) return (int)i;
  }
  return -1;
}

static int main_filling(const wd_join_t *j, int c) {
  for (size_t i = 0; i < j->nsrc; i++)
    if (!j->src[i].lookup && j->src[i].mapped[c]) return (int)i;
  return -1;
}

/* Depth-first topological order; colour 0 new, 1 on the stack, 2 done. */
static wd_error_t *visit(wd_join_t *j, int id, int *colour, int *stack, size_t depth, size_t *ntopo) {
  if (colour[id] == 2) return NULL;
  stack[depth] = id;
  if (colour[id] == 1) {
    wd_buf_t msg = {0};
    size_t from = 0;
    while (stack[from] != id) from++;
    for (size_t k = from; k <= depth; k++) wd_buf_printf(&msg, "%s%s", k > from ? " -> " : "", j->src[stack[k]].name);
    wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_LOOKUP_CYCLE,
                                   "lookup sources join on each other's columns in a cycle (%s); a lookup's `on` "
                                   "columns must come from main sources or from lookups earlier in a chain",
                                   msg.data ? (char *)msg.data : "");
    wd_buf_free(&msg);
    return err;
  }
  colour[id] = 1;
  const lk_src_t *s = &j->src[id];
  for (size_t k = 0; k < s->non; k++) {
    int m = lookup_filling(j, s->on[k], -1);
    if (m < 0) continue;
    wd_error_t *err = visit(j, m, colour, stack, depth + 1, ntopo);
    if (err) return err;
  }
  colour[id] = 2;
  j->topo[(*ntopo)++] = id;
  return NULL;
}

wd_error_t *wd_join_check(wd_join_t *j) {
  if (j->checked) return NULL;
  const wd_table_t *t = j->t;
  for (size_t i = 0; i < j->nsrc; i++) {
    const lk_src_t *s = &j->src[i];
    if (s->required) {
      if (s->lookup) j->req_lk |= 1ull << s->bit;
      else j->req_main |= 1ull << s->bit;
    }
    if (!s->lookup) continue;
    for (size_t k = 0; k < s->non; k++) {
      int c = s->on[k];
      if (main_filling(j, c) < 0 && lookup_filling(j, c, (int)i) < 0)
        return wd_error_new(WD_ERR_CONFIG, C_LOOKUP_ON_UNFILLED,
                            "lookup source '%s' joins on column '%s', which no source fills; map it in a main source "
                            "(or in another lookup, for a chain)",
                            s->name, j->ws->cols[c].name);
    }
    for (size_t k = 0; k < s->ncols; k++) {
      int c = s->cols[k], m = main_filling(j, c), l = lookup_filling(j, c, (int)i);
      if (m >= 0 || l >= 0)
        return wd_error_new(WD_ERR_CONFIG, C_LOOKUP_COLUMN_SHARED,
                            "column '%s' is filled by lookup source '%s' and by source '%s'; a lookup's columns are "
                            "its own, so map it in one of them",
                            j->ws->cols[c].name, s->name, j->src[m >= 0 ? m : l].name);
      bool seq = false;
      for (size_t q = 0; q < t->nseq_fields; q++) seq |= t->seq_fields[q] == c;
      if (seq || t->group_of[c] >= 0 || t->seq_group_of[c] >= 0)
        return wd_error_new(WD_ERR_CONFIG, C_LOOKUP_COLUMN_ORDERING,
                            "lookup source '%s' fills column '%s', a sequence field or sequence-group column of the "
                            "table; ordering columns must come from main sources",
                            s->name, j->ws->cols[c].name);
    }
  }
  j->active = j->nlk > 0 || j->req_main || j->req_lk;
  free(j->topo);
  if (!(j->topo = calloc(j->nsrc + 1, sizeof(int)))) return wd_error_nomem();
  int colour[WD_JOIN_MAX_SOURCES] = {0}, stack[WD_JOIN_MAX_SOURCES + 1];
  size_t ntopo = 0;
  for (size_t i = 0; i < j->nsrc; i++) {
    if (!j->src[i].lookup) continue;
    wd_error_t *err = visit(j, (int)i, colour, stack, 0, &ntopo);
    if (err) return err;
  }
  j->checked = true;
  return NULL;
}

wd_error_t *wd_join_start(wd_join_t *j, wd_state_t *wide, wd_store_t *st) {
  if (j->started) return NULL;
  wd_error_t *err = wd_join_check(j);
  if (err) return err;
  j->wide = wide;
  j->st = st;
  for (size_t i = 0; i < j->nsrc; i++)
    if (j->src[i].lookup) {
      if (!(j->src[i].state = wd_state_new(j->src[i].table, st, 0))) return wd_error_nomem();
      wd_state_set_namespace(j->src[i].state, NS_LROW);
      wd_state_set_task(j->src[i].state, (uint32_t)j->src[i].bit);
    }
  if (j->active) wd_state_set_hooks(j->wide, &HOOKS, j);
  j->started = true;
  return NULL;
}

/* ---- refresh: one wide row made consistent with the lookups, its diff emitted ------------------ */

/* Encodes L's key for the on values of wide row w into out: 1 when one is NULL (no key), 0, or -1
 * on no memory. */
static int on_key(lk_src_t *L, const wd_row_t *w, wd_buf_t *out) {
  wd_buf_reset(out);
  for (size_t i = 0; i < L->non; i++)
    if (w->v[L->on[i]].is_null) return 1;
  for (size_t i = 0; i < L->non; i++) L->scratch->v[i] = w->v[L->on[i]];
  int rc = wd_row_key_encode(L->schema, L->scratch, out);
  for (size_t i = 0; i < L->non; i++) {
    memset(&L->scratch->v[i], 0, sizeof(L->scratch->v[i]));
    L->scratch->v[i].is_null = true;
  }
  return rc;
}

/* Appends a view of row (wd_row_view: shared, not copied; join/merge.h) with kind. row is not
 * changed afterwards: a before row is the state's or a share of it, an after row goes to the state
 * right after its changelog rows. Only its share count changes (hence the cast). */
static int cl_add(const wd_schema_t *s, wd_changelog_t *cl, const wd_row_t *row, wd_row_kind_t kind) {
  (void)s;
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? cl->cap * 2 : 16;
    wd_row_t **rows = realloc(cl->rows, cap * sizeof(*rows));
    if (!rows) return -1;
    cl->rows = rows;
    cl->cap = cap;
  }
  wd_row_t *view = wd_row_view((wd_row_t *)row, kind);
  if (!view) return -1;
  cl->rows[cl->n++] = view;
  return 0;
}

static void flags_parse(const wd_buf_t *v, bool found, uint64_t *mains, uint64_t *lks) {
  *mains = *lks = 0;
  if (!found) return;
  wd_reader_t r = {v->data, v->data + v->len};
  if (wd_reader_varint(&r, mains) || wd_reader_varint(&r, lks)) *mains = *lks = 0;
}

static bool visible(const wd_join_t *j, const wd_entry_t *e, uint64_t mains, uint64_t lks) {
  return e->state == WD_ENTRY_ROW && (mains & j->req_main) == j->req_main && (lks & j->req_lk) == j->req_lk;
}

/* Makes wide row wk consistent: before is its stored entry, after its new entry from the engine
 * (both owned by the caller; after is put and left ABSENT). main >= 0: the main source whose
 * records recs[0..n) made after (their key is compared with wk). */
static wd_error_t *refresh(wd_join_t *j, const uint8_t *tk, size_t tklen, wd_entry_t *before, wd_entry_t *after,
                           int main, wd_row_t *const *recs, size_t n, wd_changelog_t *out) {
  const uint8_t *wk = tk + 4;
  size_t wklen = tklen - 4;
  wd_error_t *err = NULL;
  wd_buf_t fv = {0};
  bool found = false;
  uint64_t mains = 0, lks = 0;
  if (lk_key(&j->kb, NS_FLAGS, -1, tk, tklen, NULL, 0)) return wd_error_nomem();
  if ((err = kv_get(j, j->kb.data, j->kb.len, &found, &fv))) goto done;
  /* a row that is not there has no flags (ones left by a dropped task, join/state.h, are stale) */
  flags_parse(&fv, found && before->state != WD_ENTRY_ABSENT, &mains, &lks);
  bool old_vis = visible(j, before, mains, lks);
  uint64_t new_mains = mains, new_lks = 0;
  if (main >= 0) {
    uint64_t bit = 1ull << j->src[main].bit;
    for (size_t i = 0; i < n; i++) {
      wd_buf_reset(&j->kb2);
      if (wd_row_key_encode(j->ws, recs[i], &j->kb2)) {
        err = wd_error_nomem();
        goto done;
      }
      if (j->kb2.len != wklen || memcmp(j->kb2.data, wk, wklen) != 0) continue;
      wd_row_kind_t k = recs[i]->kind;
      if (wd_row_kind_is_add(k)) new_mains |= bit;
      else if (!j->t->ignore_delete && !(k == WD_UPDATE_BEFORE && j->t->ignore_update_before)) new_mains &= ~bit;
    }
  }
  /* the lookup columns, in dependency order (a chain's later `on` columns are filled first) */
  bool a_row = after->state == WD_ENTRY_ROW, b_row = before->state == WD_ENTRY_ROW;
  for (size_t q = 0; q < j->nlk; q++) {
    lk_src_t *L = &j->src[j->topo[q]];
    int rc = 0;
    if (a_row) {
      wd_entry_t le = {0};
      rc = on_key(L, after->row, &j->kb2);
      if (rc < 0) {
        err = wd_error_nomem();
        goto done;
      }
      if (rc == 0 && (err = LK_OPS.get(&L->octx, j->kb2.data, j->kb2.len, &le))) goto done;
      bool match = rc == 0 && le.state == WD_ENTRY_ROW;
      for (size_t c = 0; c < L->ncols; c++) {
        wd_value_t *dst = &after->row->v[L->cols[c]];
        const wd_type_t *ty = j->ws->cols[L->cols[c]].type;
        wd_row_clear_value(j->ws, after->row, (size_t)L->cols[c]); /* after may be packed (join/merge.h) */
        if (match && wd_value_copy(ty, dst, &le.row->v[L->non + c])) { /* le is borrowed from the state */
          wd_entry_release(L->table, &le);
          err = wd_error_nomem();
          goto done;
        }
      }
      if (match) new_lks |= 1ull << L->bit;
      wd_entry_release(L->table, &le);
    }
    /* the index: move W from the old on value to the new one */
    wd_buf_reset(&j->kb);
    int orc = b_row ? on_key(L, before->row, &j->kb) : 1;
    int nrc = a_row ? on_key(L, after->row, &j->kb2) : 1;
    if (orc < 0 || nrc < 0) {
      err = wd_error_nomem();
      goto done;
    }
    bool same = orc == nrc && (orc == 1 || (j->kb.len == j->kb2.len && !memcmp(j->kb.data, j->kb2.data, j->kb.len)));
    if (same && !(j->reconciling && nrc == 0))
      continue; /* reconcile: the index is rebuilt (not in the
                                                           state changelog topic) */
    if (same) orc = 1;
    wd_buf_t ik = {0};
    if (orc == 0) {
      if (lk_key(&ik, NS_INDEX, L->bit, j->kb.data, j->kb.len, tk, tklen) ||
          (err = kv_set(j, ik.data, ik.len, ik.len - tklen, NULL, 0, false))) {
        wd_buf_free(&ik);
        if (!err) err = wd_error_nomem();
        goto done;
      }
    }
    if (nrc == 0) {
      if (lk_key(&ik, NS_INDEX, L->bit, j->kb2.data, j->kb2.len, tk, tklen) ||
          (err = kv_set(j, ik.data, ik.len, ik.len - tklen, NULL, 0, true))) {
        wd_buf_free(&ik);
        if (!err) err = wd_error_nomem();
        goto done;
      }
    }
    wd_buf_free(&ik);
  }
  bool new_vis = visible(j, after, new_mains, new_lks);
  int rc = 0;
  if (!old_vis && new_vis) {
    rc = cl_add(j->ws, out, after->row, j->t->engine == WD_ENGINE_FIRST_ROW ? after->row->kind : WD_INSERT);
  } else if (old_vis && !new_vis) {
    rc = cl_add(j->ws, out, before->row, WD_DELETE);
  } else if (old_vis && new_vis) {
    if (j->reconciling && wd_row_eq(j->ws, before->row, after->row, NULL)) {
      /* reconcile: nothing changed, nothing to say */
    } else if (!(j->t->row_dedup && wd_row_eq(j->ws, before->row, after->row, j->t->row_dedup_ignore)))
      rc = cl_add(j->ws, out, before->row, WD_UPDATE_BEFORE) || cl_add(j->ws, out, after->row, WD_UPDATE_AFTER);
  }
  if (rc) {
    err = wd_error_nomem();
    goto done;
  }
  /* the flags, then the entry */
  if (lk_key(&j->kb, NS_FLAGS, -1, tk, tklen, NULL, 0)) {
    err = wd_error_nomem();
    goto done;
  }
  if (a_row) {
    wd_buf_reset(&fv);
    if (wd_buf_put_varint(&fv, new_mains) || wd_buf_put_varint(&fv, new_lks)) {
      err = wd_error_nomem();
      goto done;
    }
    if (!found || new_mains != mains || new_lks != lks)
      err = kv_set(j, j->kb.data, j->kb.len, 0, fv.data, fv.len, true);
  } else if (found) {
    err = kv_set(j, j->kb.data, j->kb.len, 0, NULL, 0, false);
  }
  wd_state_set_task(j->wide, tk_task(tk));
  if (!err) err = wd_state_ops()->put(j->wide, wk, wklen, after);
done:
  wd_buf_free(&fv);
  return err;
}

/* ---- applying messages ------------------------------------------------------------------------ */

static cap_t *cap_find(wd_join_t *j, const uint8_t *key, size_t klen) {
  for (size_t i = 0; i < j->ncap; i++)
    if (j->cap[i].key.len == klen && !memcmp(j->cap[i].key.data, key, klen)) return &j->cap[i];
  return NULL;
}

/* The capturing ops of a main message: reads from the wide state (remembering the entry before),
 * writes into the capture (refresh puts it). */
static wd_error_t *cap_get(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  wd_join_t *j = ctx;
  wd_error_t *err = wd_state_ops()->get(j->wide, key, klen, e);
  if (err) return err;
  if (j->ncap == j->capcap) {
    size_t cap = j->capcap ? j->capcap * 2 : 8;
    cap_t *c = realloc(j->cap, cap * sizeof(*c));
    if (!c) return wd_error_nomem();
    memset(c + j->capcap, 0, (cap - j->capcap) * sizeof(*c));
    j->cap = c;
    j->capcap = cap;
  }
  cap_t *c = &j->cap[j->ncap++];
  wd_buf_reset(&c->key);
  c->touched = false;
  c->before.state = WD_ENTRY_ABSENT;
  c->before.row = NULL;
  c->before.borrowed = false;
  if (wd_buf_append(&c->key, key, klen)) return wd_error_nomem();
  c->before.state = e->state;
  if (e->row) c->before.row = wd_row_share(e->row); /* kept past the put that replaces it (no copy) */
  return NULL;
}

static wd_error_t *cap_put(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  wd_join_t *j = ctx;
  cap_t *c = cap_find(j, key, klen);
  if (!c) return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "join: put of a key the message did not read");
  wd_entry_clear(j->t, &c->after);
  c->after = *e;
  e->state = WD_ENTRY_ABSENT;
  e->row = NULL;
  c->touched = true;
  return NULL;
}

static const wd_state_ops_t CAP_OPS = {cap_get, cap_put};

static void cap_reset(wd_join_t *j) {
  for (size_t i = 0; i < j->ncap; i++) {
    wd_entry_clear(j->t, &j->cap[i].before);
    wd_entry_clear(j->t, &j->cap[i].after);
  }
  j->ncap = 0;
}

static wd_error_t *apply_main(wd_join_t *j, int id, wd_row_t *const *recs, size_t n, wd_changelog_t *out,
                              wd_merge_stats_t *stats) {
  cap_reset(j);
  wd_changelog_reset(j->t, &j->scratch);
  wd_error_t *err = wd_message_apply(j->t, &CAP_OPS, j, recs, n, &j->scratch, stats);
  wd_changelog_reset(j->t, &j->scratch);
  size_t cl_start = out->n;
  for (size_t i = 0; !err && i < j->ncap; i++) {
    cap_t *c = &j->cap[i];
    if (!c->touched) continue;
    wd_buf_reset(&j->kb3);
    if (tk_put(&j->kb3, j->task, c->key.data, c->key.len)) {
      err = wd_error_nomem();
      break;
    }
    err = refresh(j, j->kb3.data, j->kb3.len, &c->before, &c->after, id, recs, n, out);
  }
  if (err && err->cls == WD_ERR_RECORD)
    while (out->n > cl_start) wd_row_destroy(j->ws, out->rows[--out->n]);
  cap_reset(j);
  return err;
}

static wd_error_t *apply_lookup(wd_join_t *j, lk_src_t *L, wd_row_t *const *recs, size_t n, wd_changelog_t *out,
                                wd_merge_stats_t *stats) {
  wd_changelog_reset(L->table, &j->lcl);
  wd_error_t *err = wd_message_apply(L->table, &LK_OPS, &L->octx, recs, n, &j->lcl, stats);
  if (err) return err;
  /* the lookup keys that changed, each once */
  wd_buf_t done = {0}, lkey = {0}, prefix = {0};
  size_t *doff = NULL, nd = 0;
  wd_entry_t before = {0}, after = {0};
  if (!(doff = calloc(j->lcl.n + 1, sizeof(*doff)))) {
    err = wd_error_nomem();
    goto out;
  }
  for (size_t r = 0; r < j->lcl.n; r++) {
    wd_buf_reset(&lkey);
    if (wd_row_key_encode(L->schema, j->lcl.rows[r], &lkey)) {
      err = wd_error_nomem();
      goto out;
    }
    bool seen = false;
    for (size_t d = 0; d < nd && !seen; d++)
      seen = doff[d + 1] - doff[d] == lkey.len && !memcmp(done.data + doff[d], lkey.data, lkey.len);
    if (seen) continue;
    if (wd_buf_append(&done, lkey.data, lkey.len)) {
      err = wd_error_nomem();
      goto out;
    }
    doff[++nd] = done.len;
  }
  for (size_t d = 0; d < nd; d++) {
    if (lk_key(&prefix, NS_INDEX, L->bit, done.data + doff[d], doff[d + 1] - doff[d], NULL, 0)) {
      err = wd_error_nomem();
      goto out;
    }
    if ((err = kv_scan_prefix(j, prefix.data, prefix.len))) goto out;
    /* refresh writes the index of other lookups only, never this prefix; the keys are copied out */
    size_t nw = j->nwoff;
    size_t *woff = malloc((nw + 1) * sizeof(*woff));
    uint8_t *wk = malloc(j->wkeys.len + 1);
    if (!woff || !wk) {
      free(woff);
      free(wk);
      err = wd_error_nomem();
      goto out;
    }
    memcpy(woff, j->woff, (nw + 1) * sizeof(*woff));
    if (j->wkeys.len) memcpy(wk, j->wkeys.data, j->wkeys.len);
    enum { CHUNK = 4096 }; /* rows and flags read with one multi-get per chunk */
    const uint8_t *ck[CHUNK], *ctk[CHUNK];
    size_t cl[CHUNK], ctl[CHUNK];
    uint32_t ct[CHUNK];
    for (size_t w = 0; w < nw && !err; w++) {
      const uint8_t *k = wk + woff[w];
      size_t klen = woff[w + 1] - woff[w];
      if (w % CHUNK == 0 && nw > 1) {
        size_t c = 0;
        for (size_t x = 0; x < CHUNK && w + x < nw; x++) {
          ctk[c] = wk + woff[w + x];
          ctl[c] = woff[w + x + 1] - woff[w + x];
          if (ctl[c] < 4) continue;
          ct[c] = tk_task(ctk[c]);
          if (j->owned && !j->owned(j->owned_ctx, ct[c])) continue; /* not refreshed: not read */
          ck[c] = ctk[c] + 4;
          cl[c] = ctl[c] - 4;
          c++;
        }
        if ((err = wd_state_prefetch_tasks(j->wide, c, ct, ck, cl)) || (err = kv_prefetch_flags(j, c, ctk, ctl))) break;
      }
      if (klen < 4) continue; /* not a task-qualified key: cannot happen */
      if (j->owned && !j->owned(j->owned_ctx, tk_task(k))) continue; /* another process's row now */
      wd_state_set_task(j->wide, tk_task(k));
      if ((err = wd_state_ops()->get(j->wide, k + 4, klen - 4, &before))) break;
      if (before.state != WD_ENTRY_ROW) { /* a row of a dropped task (join/lookup.h) */
        wd_entry_release(j->t, &before);
        continue;
      }
      if (j->owned) {
        /* an entry left by a task that was dropped and restored with another on value: it goes */
        int orc = on_key(L, before.row, &j->kb2);
        if (orc < 0) {
          err = wd_error_nomem();
          break;
        }
        size_t dl = doff[d + 1] - doff[d];
        if (orc == 1 || j->kb2.len != dl || memcmp(j->kb2.data, done.data + doff[d], dl) != 0) {
          wd_entry_release(j->t, &before);
          wd_buf_t ik = {0};
          if (lk_key(&ik, NS_INDEX, L->bit, done.data + doff[d], dl, k, klen) ||
              (err = kv_set(j, ik.data, ik.len, ik.len - klen, NULL, 0, false))) {
            wd_buf_free(&ik);
            if (!err) err = wd_error_nomem();
            break;
          }
          wd_buf_free(&ik);
          continue;
        }
      }
      after.state = WD_ENTRY_ROW;
      if (!(after.row = wd_row_copy(j->ws, before.row))) {
        err = wd_error_nomem();
        break;
      }
      err = refresh(j, k, klen, &before, &after, -1, NULL, 0, out);
      j->fanout++;
      wd_entry_release(j->t, &before);
      wd_entry_clear(j->t, &after);
    }
    free(woff);
    free(wk);
    if (err) goto out;
  }
out:
  if (j->wide) wd_state_set_task(j->wide, j->task);
  wd_entry_release(j->t, &before);
  wd_entry_clear(j->t, &after);
  wd_changelog_reset(L->table, &j->lcl);
  free(doff);
  wd_buf_free(&done);
  wd_buf_free(&lkey);
  wd_buf_free(&prefix);
  return err;
}

wd_error_t *wd_join_apply(wd_join_t *j, int id, wd_row_t *const *recs, size_t n, wd_changelog_t *out,
                          wd_merge_stats_t *stats) {
  if (id < 0 || (size_t)id >= j->nsrc)
    return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "join: unknown source id %d", id);
  if (!j->active) return wd_message_apply(j->t, wd_state_ops(), j->wide, recs, n, out, stats);
  if (j->src[id].lookup) return apply_lookup(j, &j->src[id], recs, n, out, stats);
  return apply_main(j, id, recs, n, out, stats);
}

/* wd_join_rows_sorted's scan of the flags: the visible rows, read from the wide state. */
typedef struct {
  wd_join_t *j;
  wd_row_t **rows;
  size_t n, cap;
  wd_error_t *err;
} rows_t;

static int rows_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  rows_t *r = ctx;
  wd_join_t *j = r->j;
  if (klen < 5) return 0;
  uint64_t mains = 0, lks = 0;
  wd_buf_t v = {(uint8_t *)val, vlen, vlen};
  flags_parse(&v, true, &mains, &lks);
  wd_entry_t e = {0};
  wd_state_set_task(j->wide, tk_task(key + 1));
  if ((r->err = wd_state_ops()->get(j->wide, key + 5, klen - 5, &e))) return 1;
  if (visible(j, &e, mains, lks)) {
    if (r->n == r->cap) {
      size_t cap = r->cap ? r->cap * 2 : 64;
      wd_row_t **rows = realloc(r->rows, cap * sizeof(*rows));
      if (!rows) {
        wd_entry_release(j->t, &e);
        r->err = wd_error_nomem();
        return 1;
      }
      r->rows = rows;
      r->cap = cap;
    }
    if (e.borrowed && !(e.row = wd_row_copy(j->ws, e.row))) { /* borrowed from the state: the caller's copy */
      r->err = wd_error_nomem();
      return 1;
    }
    r->rows[r->n++] = e.row;
    e.row = NULL;
    e.borrowed = false;
  }
  wd_entry_release(j->t, &e);
  return 0;
}

static int cmp_pk(const void *a, const void *b, void *ctx) {
  const wd_schema_t *sc = ctx;
  const wd_row_t *x = *(wd_row_t *const *)a, *y = *(wd_row_t *const *)b;
  for (size_t k = 0; k < sc->npk; k++) {
    int r = wd_value_cmp(sc->cols[sc->pk[k]].type, &x->v[sc->pk[k]], &y->v[sc->pk[k]]);
    if (r) return r;
  }
  return 0;
}

wd_error_t *wd_join_rows_sorted(wd_join_t *j, wd_row_t ***rows, size_t *n) {
  if (!j->active) return wd_state_rows_sorted(j->wide, rows, n);
  *rows = NULL;
  *n = 0;
  /* every stored wide row has its flags entry: the visible ones are the rows */
  rows_t r = {j, NULL, 0, 0, NULL};
  uint8_t ns = NS_FLAGS;
  wd_error_t *err = wd_store_scan_prefix(j->st, &ns, 1, rows_cb, &r);
  wd_state_set_task(j->wide, j->task);
  if (!err) err = r.err;
  else wd_error_destroy(r.err);
  if (err) {
    for (size_t i = 0; i < r.n; i++) wd_row_destroy(j->ws, r.rows[i]);
    free(r.rows);
    return err;
  }
  if (r.n > 1) qsort_r(r.rows, r.n, sizeof(*r.rows), cmp_pk, (void *)j->ws);
  *rows = r.rows;
  *n = r.n;
  return NULL;
}

/* ---- scale-out: owned tasks, reconcile, the keys of no task ------------------------------------ */

void wd_join_set_owner(wd_join_t *j, bool (*owned)(void *ctx, uint32_t task), void *ctx) {
  j->owned = owned;
  j->owned_ctx = ctx;
}

bool wd_join_global_key(const uint8_t *key, size_t klen) {
  return klen > 0 && (key[0] == NS_LROW || key[0] == NS_INDEX);
}

static int collect_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  (void)val;
  (void)vlen;
  scan_t *sc = ctx;
  if (add_wkey(sc->j, key + sc->plen, klen - sc->plen)) return sc->nomem = true;
  return 0;
}

wd_error_t *wd_join_reconcile_task(wd_join_t *j, uint32_t task, wd_changelog_t *out, size_t *rows) {
  if (rows) *rows = 0;
  if (!j->active) return NULL;
  /* the task's flags cached before it was assigned (restored since, in the store) go */
  uint8_t fp[5] = {NS_FLAGS, (uint8_t)(task >> 24), (uint8_t)(task >> 16), (uint8_t)(task >> 8), (uint8_t)task};
  kv_ent_t *e, *etmp;
  HASH_ITER(hh, j->kv, e, etmp)
  if (!e->plen && !e->in_dirty && !e->in_pending && e->klen >= 5 && !memcmp(e->key, fp, 5)) kv_free(j, e);
  /* the task's stored wide keys (the cache holds none that the store lacks: reconcile runs before
   * the task's first record) */
  uint8_t prefix[WD_STATE_PREFIX_LEN] = {WD_STATE_ROW_NS, (uint8_t)(task >> 24), (uint8_t)(task >> 16),
                                         (uint8_t)(task >> 8), (uint8_t)task};
  wd_buf_reset(&j->wkeys);
  j->nwoff = 0;
  if (add_wkey(j, NULL, 0)) return wd_error_nomem();
  j->nwoff = 0;
  j->woff[0] = 0;
  scan_t sc = {j, sizeof(prefix), false};
  wd_error_t *err = wd_store_scan_prefix(j->st, prefix, sizeof(prefix), collect_cb, &sc);
  if (err) return err;
  if (sc.nomem) return wd_error_nomem();
  size_t nw = j->nwoff;
  size_t *woff = malloc((nw + 1) * sizeof(*woff));
  uint8_t *wk = malloc(j->wkeys.len + 1);
  if (!woff || !wk) {
    free(woff);
    free(wk);
    return wd_error_nomem();
  }
  memcpy(woff, j->woff, (nw + 1) * sizeof(*woff));
  if (j->wkeys.len) memcpy(wk, j->wkeys.data, j->wkeys.len);
  wd_entry_t before = {0}, after = {0};
  wd_buf_t tk = {0};
  j->reconciling = true;
  wd_state_set_task(j->wide, task);
  for (size_t w = 0; w < nw && !err; w++) {
    const uint8_t *k = wk + woff[w];
    size_t klen = woff[w + 1] - woff[w];
    wd_state_set_task(j->wide, task);
    if ((err = wd_state_ops()->get(j->wide, k, klen, &before))) break;
    if (before.state != WD_ENTRY_ROW) { /* an ordering tombstone */
      wd_entry_release(j->t, &before);
      continue;
    }
    after.state = WD_ENTRY_ROW;
    wd_buf_reset(&tk);
    if (!(after.row = wd_row_copy(j->ws, before.row)) || tk_put(&tk, task, k, klen)) {
      err = wd_error_nomem();
      break;
    }
    err = refresh(j, tk.data, tk.len, &before, &after, -1, NULL, 0, out);
    if (rows) (*rows)++;
    wd_entry_release(j->t, &before);
    wd_entry_clear(j->t, &after);
  }
  j->reconciling = false;
  wd_state_set_task(j->wide, j->task);
  wd_entry_release(j->t, &before);
  wd_entry_clear(j->t, &after);
  wd_buf_free(&tk);
  free(woff);
  free(wk);
  return err;
}
