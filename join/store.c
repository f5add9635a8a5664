/*
 * join/store.c — the backend-independent half of the store: the public functions of store.h
 * dispatch through st->ops (store_impl.h), and the write batch, which records ops that each
 * backend applies (RocksDB as one atomic write batch, memory in order).
 */
#include "join/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "join/store_impl.h"

static const uint8_t wd_store_empty[1];

/*
 * Returns a pointer to bytes [off, off+len) of the batch arena, or to a static empty array when
 * len is 0 (the arena may still be unallocated then). Any thread that owns b.
 */
static const uint8_t *wd_store_batch_bytes(const wd_store_batch_t *b, size_t off, size_t len) {
  if (len == 0 || !b->bytes.data) return wd_store_empty;
  return b->bytes.data + off;
}

void wd_store_batch_view(const wd_store_batch_t *b, size_t i, wd_store_op_view_t *v) {
  const wd_store_op_t *op = &b->ops[i];
  v->kind = op->kind;
  v->key = wd_store_batch_bytes(b, op->koff, op->klen);
  v->klen = op->klen;
  v->val = wd_store_batch_bytes(b, op->voff, op->vlen);
  v->vlen = op->vlen;
}

int wd_store_offset_key(wd_buf_t *out, const char *topic, int32_t partition) {
  return wd_buf_printf(out, WD_STORE_OFFSET_KEY_PREFIX "%s/%" PRId32, topic, partition);
}

/*
 * Parses exactly vlen bytes of decimal text into *next_offset. Returns 0, or -1 for empty input,
 * a non-digit, or a value above INT64_MAX. Any thread.
 */
int wd_store_offset_parse(const uint8_t *val, size_t vlen, int64_t *next_offset) {
  if (vlen == 0 || vlen > 19) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < vlen; i++) {
    if (val[i] < '0' || val[i] > '9') return -1;
    v = v * 10 + (uint64_t)(val[i] - '0');
  }
  if (v > (uint64_t)INT64_MAX) return -1;
  *next_offset = (int64_t)v;
  return 0;
}

wd_store_batch_t *wd_store_batch_new(void) { return calloc(1, sizeof(wd_store_batch_t)); }

void wd_store_batch_destroy(wd_store_batch_t *b) {
  if (!b) return;
  free(b->ops);
  wd_buf_free(&b->bytes);
  wd_buf_free(&b->undo);
  free(b);
}

void wd_store_batch_clear(wd_store_batch_t *b) {
  if (!b) return;
  b->n = 0;
  wd_buf_reset(&b->bytes);
  wd_buf_reset(&b->undo);
  b->nundo = 0;
}

/*
 * Appends one op to b, copying key and val (either may be NULL when its length is 0) into the
 * arena. On failure b is unchanged. Returns 0, or -1 on no memory. The thread that owns b.
 */
static int wd_store_batch_add(wd_store_batch_t *b, wd_store_op_kind_t kind, const uint8_t *key, size_t klen,
                              const uint8_t *val, size_t vlen) {
  int rc = -1;
  size_t old_len = b ? b->bytes.len : 0;
  if (!b || (klen && !key) || (vlen && !val)) goto cleanup;
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    wd_store_op_t *ops = realloc(b->ops, cap * sizeof(*ops));
    if (!ops) goto cleanup;
    b->ops = ops;
    b->cap = cap;
  }
  wd_store_op_t *op = &b->ops[b->n];
  op->kind = kind;
  op->has_prior = false;
  op->koff = b->bytes.len;
  op->klen = klen;
  if (klen && wd_buf_append(&b->bytes, key, klen)) goto cleanup;
  op->voff = b->bytes.len;
  op->vlen = vlen;
  if (vlen && wd_buf_append(&b->bytes, val, vlen)) goto cleanup;
  b->n++;
  rc = 0;
cleanup:
  if (rc && b) b->bytes.len = old_len;
  return rc;
}

int wd_store_batch_put(wd_store_batch_t *b, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  return wd_store_batch_add(b, WD_STORE_OP_PUT, key, klen, val, vlen);
}

int wd_store_batch_delete(wd_store_batch_t *b, const uint8_t *key, size_t klen) {
  return wd_store_batch_add(b, WD_STORE_OP_DELETE, key, klen, NULL, 0);
}

/*
 * Records (topic, partition) -> next_offset as a "meta" put of the decimal text. Returns 0, or
 * -1 on no memory or bad arguments (NULL topic, negative partition or offset). The thread that
 * owns b.
 */
int wd_store_batch_set_offset(wd_store_batch_t *b, const char *topic, int32_t partition, int64_t next_offset) {
  int rc = -1;
  wd_buf_t key = {0};
  char val[24];
  if (!b || !topic || partition < 0 || next_offset < 0) goto cleanup;
  if (wd_store_offset_key(&key, topic, partition)) goto cleanup;
  int vlen = snprintf(val, sizeof(val), "%" PRId64, next_offset);
  rc = wd_store_batch_add(b, WD_STORE_OP_META_PUT, key.data, key.len, (const uint8_t *)val, (size_t)vlen);
cleanup:
  wd_buf_free(&key);
  return rc;
}

int wd_store_batch_set_meta(wd_store_batch_t *b, const char *name, const uint8_t *val, size_t vlen) {
  if (!b || !name || strncmp(name, "offset/", 7) == 0) return -1;
  return wd_store_batch_add(b, WD_STORE_OP_META_PUT, (const uint8_t *)name, strlen(name), val, vlen);
}

int wd_store_batch_delete_meta(wd_store_batch_t *b, const char *name) {
  if (!b || !name || strncmp(name, "offset/", 7) == 0) return -1;
  return wd_store_batch_add(b, WD_STORE_OP_META_DELETE, (const uint8_t *)name, strlen(name), NULL, 0);
}

int wd_store_batch_delete_offset(wd_store_batch_t *b, const char *topic, int32_t partition) {
  wd_buf_t key = {0};
  int rc = -1;
  if (b && topic && partition >= 0 && !wd_store_offset_key(&key, topic, partition))
    rc = wd_store_batch_add(b, WD_STORE_OP_META_DELETE, key.data, key.len, NULL, 0);
  wd_buf_free(&key);
  return rc;
}

int wd_store_batch_delete_range(wd_store_batch_t *b, const uint8_t *begin, size_t blen, const uint8_t *end,
                                size_t elen) {
  if (blen > WD_STORE_RANGE_BEGIN_MAX) return -1; /* store.h: the memtable insert hints */
  return wd_store_batch_add(b, WD_STORE_OP_DELETE_RANGE, begin, blen, end, elen);
}

int wd_store_batch_delete_offsets(wd_store_batch_t *b, const char *topic) {
  wd_buf_t begin = {0}, end = {0};
  int rc = -1;
  /* ["offset/<topic>/", "offset/<topic>0"): '0' follows '/' */
  if (b && topic && !wd_buf_printf(&begin, WD_STORE_OFFSET_KEY_PREFIX "%s/", topic) &&
      !wd_buf_printf(&end, WD_STORE_OFFSET_KEY_PREFIX "%s0", topic))
    rc = wd_store_batch_add(b, WD_STORE_OP_META_DELETE_RANGE, begin.data, begin.len, end.data, end.len);
  wd_buf_free(&begin);
  wd_buf_free(&end);
  return rc;
}

size_t wd_store_batch_count(const wd_store_batch_t *b) { return b ? b->n : 0; }

size_t wd_store_batch_size(const wd_store_batch_t *b) { return b ? b->bytes.len : 0; }

int wd_store_batch_append(wd_store_batch_t *dst, const wd_store_batch_t *src) {
  if (!dst || !src) return -1;
  wd_store_op_view_t v;
  for (size_t i = 0; i < src->n; i++) {
    wd_store_batch_view(src, i, &v);
    if (wd_store_batch_add(dst, v.kind, v.key, v.klen, v.val, v.vlen)) return -1;
  }
  return 0;
}

/* A "state" op of wd_store_batch_merge: its key and where it is (run, op). */
typedef struct wd_mref {
  const uint8_t *key;
  size_t klen;
  size_t run, op;
} wd_mref_t;

/* RocksDB's bytewise order (memcmp, then the shorter first). */
static int wd_mref_cmp(const wd_mref_t *x, const wd_mref_t *y) {
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = n ? memcmp(x->key, y->key, n) : 0;
  return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* Merges the key-ordered segments a[0..na) (older) and b[0..nb) (newer) into out, the newer op of a
 * key present in both; returns the merged length. */
static size_t wd_mref_merge(const wd_mref_t *a, size_t na, const wd_mref_t *b, size_t nb, wd_mref_t *out) {
  size_t i = 0, j = 0, k = 0;
  while (i < na && j < nb) {
    int c = wd_mref_cmp(&a[i], &b[j]);
    if (c < 0) out[k++] = a[i++];
    else if (c > 0) out[k++] = b[j++];
    else {
      out[k++] = b[j++]; /* the newer wins */
      i++;
    }
  }
  while (i < na) out[k++] = a[i++];
  while (j < nb) out[k++] = b[j++];
  return k;
}

int wd_store_batch_merge(wd_store_batch_t *out, wd_store_batch_t *const *runs, size_t nruns) {
  if (!out || (nruns && !runs)) return -1;
  size_t nstate = 0;
  bool ranged = false;
  for (size_t r = 0; r < nruns; r++)
    for (size_t i = 0; i < runs[r]->n; i++) {
      wd_store_op_kind_t k = runs[r]->ops[i].kind;
      nstate += k == WD_STORE_OP_PUT || k == WD_STORE_OP_DELETE;
      ranged |= k == WD_STORE_OP_DELETE_RANGE;
    }
  if (ranged || !nstate) { /* order matters (or nothing to merge): every op as it is */
    for (size_t r = 0; r < nruns; r++)
      if (wd_store_batch_append(out, runs[r])) return -1;
    return 0;
  }
  int rc = -1;
  wd_mref_t *a = malloc(nstate * sizeof(*a)), *t = malloc(nstate * sizeof(*t));
  size_t *seg = malloc((nstate + 1) * sizeof(*seg)); /* segment starts in a, then its end */
  size_t n = 0, nseg = 0;
  wd_store_op_view_t v;
  if (!a || !t || !seg) goto done;
  /* every state op in order, cut into segments of strictly increasing keys (a commit's rows are
   * in key order: one segment each, mostly) */
  for (size_t r = 0; r < nruns; r++)
    for (size_t i = 0; i < runs[r]->n; i++) {
      wd_store_op_kind_t k = runs[r]->ops[i].kind;
      if (k != WD_STORE_OP_PUT && k != WD_STORE_OP_DELETE) continue;
      wd_store_batch_view(runs[r], i, &v);
      a[n] = (wd_mref_t){v.key, v.klen, r, i};
      if (n == 0 || wd_mref_cmp(&a[n - 1], &a[n]) >= 0) seg[nseg++] = n;
      n++;
    }
  seg[nseg] = n;
  /* bottom-up: adjacent segments merged pairwise (older, newer) until one is left */
  while (nseg > 1) {
    size_t w = 0, m = 0;
    for (size_t s2 = 0; s2 < nseg; s2 += 2) {
      size_t b0 = seg[s2], b1 = seg[s2 + 1];
      size_t at = w;
      if (s2 + 1 < nseg) w += wd_mref_merge(a + b0, b1 - b0, a + b1, seg[s2 + 2] - b1, t + w);
      else {
        memcpy(t + w, a + b0, (b1 - b0) * sizeof(*a));
        w += b1 - b0;
      }
      seg[m++] = at;
    }
    seg[m] = w;
    nseg = m;
    wd_mref_t *x = a;
    a = t;
    t = x;
    n = w;
  }
  for (size_t i = 0; i < n; i++) {
    wd_store_batch_view(runs[a[i].run], a[i].op, &v);
    if (wd_store_batch_add(out, v.kind, v.key, v.klen, v.val, v.vlen)) goto done;
  }
  for (size_t r = 0; r < nruns; r++)
    for (size_t i = 0; i < runs[r]->n; i++) {
      wd_store_op_kind_t k = runs[r]->ops[i].kind;
      if (k == WD_STORE_OP_PUT || k == WD_STORE_OP_DELETE) continue;
      wd_store_batch_view(runs[r], i, &v);
      if (wd_store_batch_add(out, v.kind, v.key, v.klen, v.val, v.vlen)) goto done;
    }
  rc = 0;
done:
  free(a);
  free(t);
  free(seg);
  return rc;
}

int wd_store_batch_foreach_state(const wd_store_batch_t *b, wd_store_batch_cb cb, void *ctx) {
  wd_store_op_view_t v;
  for (size_t i = 0; i < b->n; i++) {
    wd_store_batch_view(b, i, &v);
    int rc = 0;
    if (v.kind == WD_STORE_OP_PUT) rc = cb(ctx, v.key, v.klen, v.val, v.vlen);
    else if (v.kind == WD_STORE_OP_DELETE) rc = cb(ctx, v.key, v.klen, NULL, 0);
    if (rc) return rc;
  }
  return 0;
}

static int wd_put_u32(wd_buf_t *out, size_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  return v > UINT32_MAX ? -1 : wd_buf_append(out, x, 4);
}

int wd_store_batch_encode(const wd_store_batch_t *b, wd_buf_t *out) {
  wd_store_op_view_t v;
  if (wd_put_u32(out, b->n)) return -1;
  for (size_t i = 0; i < b->n; i++) {
    wd_store_batch_view(b, i, &v);
    uint8_t kind = (uint8_t)v.kind;
    if (wd_buf_append(out, &kind, 1) || wd_put_u32(out, v.klen) || (v.klen && wd_buf_append(out, v.key, v.klen)) ||
        wd_put_u32(out, v.vlen) || (v.vlen && wd_buf_append(out, v.val, v.vlen)))
      return -1;
  }
  return 0;
}

/* Appends one op in wd_store_batch_encode's format (kind, key, value): one reservation, then the
 * bytes in place (it runs once per changed row of an exactly-once commit). 0, or -1 on no memory
 * or a length above 2^32 - 1. */
static int wd_store_encode_op(wd_buf_t *out, wd_store_op_kind_t k, const uint8_t *key, size_t klen, const uint8_t *val,
                              size_t vlen) {
  if (klen > UINT32_MAX || vlen > UINT32_MAX || wd_buf_reserve(out, 9 + klen + vlen)) return -1;
  uint8_t *p = out->data + out->len;
  *p++ = (uint8_t)k;
  for (int i = 3; i >= 0; i--) *p++ = (uint8_t)(klen >> (8 * i));
  if (klen) memcpy(p, key, klen);
  p += klen;
  for (int i = 3; i >= 0; i--) *p++ = (uint8_t)(vlen >> (8 * i));
  if (vlen) memcpy(p, val, vlen);
  out->len += 9 + klen + vlen;
  return 0;
}

int wd_store_batch_prior(wd_store_batch_t *b, const uint8_t *val, size_t vlen) {
  if (!b || !b->n || (vlen && !val)) return -1;
  wd_store_op_t *op = &b->ops[b->n - 1];
  if (op->has_prior || (op->kind != WD_STORE_OP_PUT && op->kind != WD_STORE_OP_DELETE)) return -1;
  const uint8_t *key = wd_store_batch_bytes(b, op->koff, op->klen);
  size_t old = b->undo.len;
  if (wd_store_encode_op(&b->undo, val ? WD_STORE_OP_PUT : WD_STORE_OP_DELETE, key, op->klen, val, val ? vlen : 0)) {
    b->undo.len = old;
    return -1;
  }
  op->has_prior = true;
  b->nundo++;
  return 0;
}

wd_error_t *wd_store_undo_image(wd_store_t *st, const wd_store_batch_t *b, wd_buf_t *out) {
  wd_error_t *err = NULL;
  size_t nunk = 0, n = 0;
  const uint8_t **keys = NULL;
  size_t *klens = NULL, *vlens = NULL;
  uint8_t **vals = NULL;
  wd_store_op_view_t v;
  for (size_t i = 0; i < b->n; i++) {
    if (b->ops[i].kind == WD_STORE_OP_DELETE_RANGE)
      return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "undo image of a batch with a range deletion");
    if ((b->ops[i].kind == WD_STORE_OP_PUT || b->ops[i].kind == WD_STORE_OP_DELETE) && !b->ops[i].has_prior) nunk++;
  }
  /* the entries nobody recorded a prior for: read from the store as they are before b is written */
  if (nunk) {
    keys = calloc(nunk, sizeof(*keys));
    klens = calloc(nunk, sizeof(*klens));
    vals = calloc(nunk, sizeof(*vals));
    vlens = calloc(nunk, sizeof(*vlens));
    if (!keys || !klens || !vals || !vlens) {
      err = wd_error_nomem();
      goto done;
    }
    for (size_t i = 0; i < b->n; i++) {
      if ((b->ops[i].kind != WD_STORE_OP_PUT && b->ops[i].kind != WD_STORE_OP_DELETE) || b->ops[i].has_prior) continue;
      wd_store_batch_view(b, i, &v);
      keys[n] = v.key;
      klens[n++] = v.klen;
    }
    if ((err = wd_store_multi_get(st, n, keys, klens, vals, vlens))) goto done;
  }
  if (wd_put_u32(out, b->nundo + n) || (b->undo.len && wd_buf_append(out, b->undo.data, b->undo.len))) goto nomem;
  for (size_t i = 0; i < n; i++)
    if (wd_store_encode_op(out, vals[i] ? WD_STORE_OP_PUT : WD_STORE_OP_DELETE, keys[i], klens[i], vals[i],
                           vals[i] ? vlens[i] : 0))
      goto nomem;
  goto done;
nomem:
  err = wd_error_nomem();
done:
  for (size_t i = 0; vals && i < n; i++) free(vals[i]);
  free(keys);
  free(klens);
  free(vals);
  free(vlens);
  return err;
}

static int wd_get_u32(const uint8_t *data, size_t len, size_t *at, size_t *v) {
  if (len - *at < 4) return -1;
  const uint8_t *x = data + *at;
  *v = ((size_t)x[0] << 24) | ((size_t)x[1] << 16) | ((size_t)x[2] << 8) | (size_t)x[3];
  *at += 4;
  return *v > len - *at ? -1 : 0;
}

int wd_store_batch_decode(wd_store_batch_t *b, const uint8_t *data, size_t len) {
  size_t at = 0, nops = 0;
  if (len < 4) return -1;
  nops = ((size_t)data[0] << 24) | ((size_t)data[1] << 16) | ((size_t)data[2] << 8) | (size_t)data[3];
  at = 4;
  for (size_t op = 0; op < nops; op++) {
    if (at >= len) return -1;
    uint8_t kind = data[at++];
    size_t klen = 0, vlen = 0, koff, voff;
    if (kind < WD_STORE_OP_PUT || kind > WD_STORE_OP_META_DELETE_RANGE) return -1;
    if (wd_get_u32(data, len, &at, &klen)) return -1;
    koff = at;
    at += klen;
    if (wd_get_u32(data, len, &at, &vlen)) return -1;
    voff = at;
    at += vlen;
    if (wd_store_batch_add(b, (wd_store_op_kind_t)kind, data + koff, klen, data + voff, vlen)) return -1;
  }
  return at == len ? 0 : -1;
}

wd_error_t *wd_store_get_meta(wd_store_t *st, const char *name, uint8_t **val, size_t *vlen) {
  *val = NULL;
  *vlen = 0;
  if (!st || !name) return wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "get_meta: NULL argument");
  return st->ops->meta_get(st, (const uint8_t *)name, strlen(name), val, vlen);
}

void wd_store_close(wd_store_t *st) {
  if (st) st->ops->close(st);
}

/*
 * Dispatches to the backend after checking the arguments; on any error every vals[i] is NULL
 * and vlens[i] 0. The thread that uses st.
 */
wd_error_t *wd_store_multi_get(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                               uint8_t **vals, size_t *vlens) {
  wd_error_t *err = NULL;
  if (n == 0) goto cleanup;
  if (!vals || !vlens) {
    err = wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "multi_get: NULL output arrays");
    goto cleanup;
  }
  for (size_t i = 0; i < n; i++) {
    vals[i] = NULL;
    vlens[i] = 0;
  }
  if (!st || !keys || !klens) {
    err = wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "multi_get: NULL store or key arrays");
    goto cleanup;
  }
  err = st->ops->multi_get(st, n, keys, klens, vals, vlens);
cleanup:
  return err;
}

/* Dispatches to the backend's multi_get_each, or reads copies with multi_get and hands them to cb
 * (freed after). The thread that uses st. */
wd_error_t *wd_store_multi_get_each(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                    wd_store_value_cb cb, void *ctx) {
  if (n == 0) return NULL;
  if (!st || !keys || !klens || !cb)
    return wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "multi_get_each: NULL store, key arrays or callback");
  if (st->ops->multi_get_each) return st->ops->multi_get_each(st, n, keys, klens, cb, ctx);
  uint8_t **vals = calloc(n, sizeof(*vals));
  size_t *vlens = calloc(n, sizeof(*vlens));
  wd_error_t *err = !vals || !vlens ? wd_error_nomem() : wd_store_multi_get(st, n, keys, klens, vals, vlens);
  for (size_t i = 0; i < n && !err; i++) err = cb(ctx, i, vals[i], vlens[i]);
  for (size_t i = 0; vals && i < n; i++) free(vals[i]);
  free(vals);
  free(vlens);
  return err;
}

wd_error_t *wd_store_write(wd_store_t *st, wd_store_batch_t *b) {
  if (!st || !b) return wd_error_new(WD_ERR_INTERNAL, E_STORE_WRITE, "write: NULL store or batch");
  if (b->n == 0) return NULL;
  const wd_store_batch_t *bs[1] = {b};
  return st->ops->write(st, bs, 1, false);
}

wd_error_t *wd_store_write_sync(wd_store_t *st, wd_store_batch_t *b) {
  if (!st || !b) return wd_error_new(WD_ERR_INTERNAL, E_STORE_WRITE, "write: NULL store or batch");
  if (b->n == 0) return NULL;
  const wd_store_batch_t *bs[1] = {b};
  return st->ops->write(st, bs, 1, true);
}

wd_error_t *wd_store_write_both(wd_store_t *st, const wd_store_batch_t *first, const wd_store_batch_t *second,
                                bool sync) {
  if (!st || !first || !second) return wd_error_new(WD_ERR_INTERNAL, E_STORE_WRITE, "write: NULL store or batch");
  if (first->n + second->n == 0) return NULL;
  const wd_store_batch_t *bs[2] = {first, second};
  return st->ops->write(st, bs, 2, sync);
}

/*
 * Reads the "meta" entry of (topic, partition) and parses it; -1 when absent. Errors:
 * WD_ERR_IO "E_STORE_READ" from the backend or for a value that is not a decimal offset. The
 * thread that uses st.
 */
wd_error_t *wd_store_get_offset(wd_store_t *st, const char *topic, int32_t partition, int64_t *next_offset) {
  wd_error_t *err = NULL;
  wd_buf_t key = {0};
  uint8_t *val = NULL;
  size_t vlen = 0;
  if (next_offset) *next_offset = -1;
  if (!st || !topic || !next_offset) {
    err = wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "get_offset: NULL argument");
    goto cleanup;
  }
  if (wd_store_offset_key(&key, topic, partition)) {
    err = wd_error_nomem();
    goto cleanup;
  }
  err = st->ops->meta_get(st, key.data, key.len, &val, &vlen);
  if (err || !val) goto cleanup;
  if (wd_store_offset_parse(val, vlen, next_offset)) {
    *next_offset = -1;
    err = wd_error_new(WD_ERR_IO, E_STORE_READ, "stored offset of %s/%" PRId32 " is not a decimal offset (%zu bytes)",
                       topic, partition, vlen);
  }
cleanup:
  free(val);
  wd_buf_free(&key);
  return err;
}

wd_error_t *wd_store_scan(wd_store_t *st, wd_store_scan_cb cb, void *ctx) {
  if (!st || !cb) return wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "scan: NULL store or callback");
  return st->ops->scan(st, cb, ctx);
}

wd_error_t *wd_store_scan_prefix(wd_store_t *st, const uint8_t *prefix, size_t plen, wd_store_scan_cb cb, void *ctx) {
  if (!st || !cb || (!prefix && plen))
    return wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "scan_prefix: NULL store, callback or prefix");
  return st->ops->scan_prefix(st, prefix, plen, NULL, 0, cb, ctx);
}

wd_error_t *wd_store_scan_prefix_from(wd_store_t *st, const uint8_t *prefix, size_t plen, const uint8_t *from,
                                      size_t flen, wd_store_scan_cb cb, void *ctx) {
  if (!st || !cb || (!prefix && plen) || (!from && flen))
    return wd_error_new(WD_ERR_INTERNAL, E_STORE_READ, "scan_prefix_from: NULL store, callback, prefix or key");
  return st->ops->scan_prefix(st, prefix, plen, from, flen, cb, ctx);
}

uint64_t wd_store_disk_bytes(wd_store_t *st) { return st ? st->ops->disk_bytes(st) : 0; }

wd_error_t *wd_store_compact(wd_store_t *st) {
  if (!st) return wd_error_new(WD_ERR_INTERNAL, E_STORE_WRITE, "compact: NULL store");
  return st->ops->compact(st);
}
