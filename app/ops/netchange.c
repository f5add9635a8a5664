/*
 * app/ops/netchange.c — net change per key and table difference (see netchange.h).
 */
#include "app/ops/netchange.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

typedef struct {
  size_t koff, klen; /* encoded key in nc->keys */
  size_t seq;
  wd_row_t *row;
} nc_item_t;

struct wd_netchange {
  const wd_schema_t *schema;
  nc_item_t *items;
  size_t n, cap;
  wd_buf_t keys;
};

wd_netchange_t *wd_netchange_new(const wd_schema_t *schema) {
  wd_netchange_t *nc = calloc(1, sizeof(*nc));
  if (nc) nc->schema = schema;
  return nc;
}

void wd_netchange_destroy(wd_netchange_t *nc) {
  if (!nc) return;
  for (size_t i = 0; i < nc->n; i++) wd_row_destroy(nc->schema, nc->items[i].row);
  free(nc->items);
  wd_buf_free(&nc->keys);
  free(nc);
}

int wd_netchange_add(wd_netchange_t *nc, const wd_row_t *row) {
  if (nc->n == nc->cap) {
    size_t cap = nc->cap ? nc->cap * 2 : 256;
    nc_item_t *it = realloc(nc->items, cap * sizeof(*it));
    if (!it) return -1;
    nc->items = it;
    nc->cap = cap;
  }
  size_t off = nc->keys.len;
  if (wd_row_key_encode(nc->schema, row, &nc->keys)) return -1;
  wd_row_t *copy = wd_row_copy(nc->schema, row);
  if (!copy) {
    nc->keys.len = off;
    return -1;
  }
  copy->kind = row->kind;
  nc->items[nc->n] = (nc_item_t){off, nc->keys.len - off, nc->n, copy};
  nc->n++;
  return 0;
}

bool wd_row_same(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b) {
  for (size_t c = 0; c < schema->ncols; c++)
    if (!wd_value_eq(schema->cols[c].type, &a->v[c], &b->v[c])) return false;
  return true;
}

static int item_cmp(const void *x, const void *y, void *ctx) {
  const uint8_t *keys = ctx;
  const nc_item_t *a = x, *b = y;
  size_t n = a->klen < b->klen ? a->klen : b->klen;
  int r = memcmp(keys + a->koff, keys + b->koff, n);
  if (r) return r;
  if (a->klen != b->klen) return a->klen < b->klen ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Emits row with kind k (restoring its kind afterwards). */
static int emit_as(wd_netchange_cb cb, void *ctx, wd_row_t *row, wd_row_kind_t k) {
  wd_row_kind_t old = row->kind;
  row->kind = k;
  int rc = cb(ctx, row);
  row->kind = old;
  return rc;
}

/* The net change from before (NULL: absent; known=false: existed, image unknown) to after. */
static int emit_net(const wd_schema_t *schema, wd_row_t *before, bool known, wd_row_t *after, wd_netchange_cb cb,
                    void *ctx) {
  if (!known) return after ? emit_as(cb, ctx, after, WD_UPDATE_AFTER) : 0;
  if (!before && !after) return 0;
  if (!before) return emit_as(cb, ctx, after, WD_INSERT);
  if (!after) return emit_as(cb, ctx, before, WD_DELETE);
  if (wd_row_same(schema, before, after)) return 0;
  return emit_as(cb, ctx, before, WD_UPDATE_BEFORE) || emit_as(cb, ctx, after, WD_UPDATE_AFTER);
}

wd_error_t *wd_netchange_emit(wd_netchange_t *nc, wd_netchange_cb cb, void *ctx) {
  if (nc->n > 1) qsort_r(nc->items, nc->n, sizeof(*nc->items), item_cmp, nc->keys.data);
  for (size_t i = 0; i < nc->n;) {
    size_t j = i + 1;
    while (j < nc->n && nc->items[j].klen == nc->items[i].klen &&
           !memcmp(nc->keys.data + nc->items[j].koff, nc->keys.data + nc->items[i].koff, nc->items[i].klen))
      j++;
    wd_row_t *first = nc->items[i].row, *last = nc->items[j - 1].row;
    wd_row_t *before = NULL, *after = NULL;
    bool known = true;
    if (first->kind == WD_UPDATE_BEFORE || first->kind == WD_DELETE) before = first;
    else if (first->kind == WD_UPDATE_AFTER) known = false;
    if (wd_row_kind_is_add(last->kind)) after = last;
    if (emit_net(nc->schema, before, known, after, cb, ctx))
      return wd_error_new(WD_ERR_INTERNAL, E_STOPPED, "stopped by the caller");
    i = j;
  }
  return NULL;
}

static int pk_cmp(const wd_schema_t *sc, const wd_row_t *x, const wd_row_t *y) {
  for (size_t k = 0; k < sc->npk; k++) {
    int c = sc->pk[k];
    int r = wd_value_cmp(sc->cols[c].type, &x->v[c], &y->v[c]);
    if (r) return r;
  }
  return 0;
}

wd_error_t *wd_table_diff(const wd_schema_t *schema, wd_row_t *const *old, size_t nold, wd_row_t *const *new_,
                          size_t nnew, wd_netchange_cb cb, void *ctx, size_t *deletes, size_t *inserts,
                          size_t *updates) {
  size_t i = 0, j = 0, nd = 0, ni = 0, nu = 0;
  int stop = 0;
  while (!stop && (i < nold || j < nnew)) {
    int c = i == nold ? 1 : j == nnew ? -1 : pk_cmp(schema, old[i], new_[j]);
    if (c < 0) {
      stop = emit_as(cb, ctx, old[i++], WD_DELETE);
      nd++;
    } else if (c > 0) {
      stop = emit_as(cb, ctx, new_[j++], WD_INSERT);
      ni++;
    } else {
      if (!wd_row_same(schema, old[i], new_[j])) {
        stop = emit_as(cb, ctx, old[i], WD_UPDATE_BEFORE) || emit_as(cb, ctx, new_[j], WD_UPDATE_AFTER);
        nu++;
      }
      i++;
      j++;
    }
  }
  if (deletes) *deletes = nd;
  if (inserts) *inserts = ni;
  if (updates) *updates = nu;
  return stop ? wd_error_new(WD_ERR_INTERNAL, E_STOPPED, "stopped by the caller") : NULL;
}
