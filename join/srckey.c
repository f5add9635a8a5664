/*
 * join/srckey.c — sources with their own primary key: source rows kept by that key, and the wide
 * table's change records derived from their changelog (see srckey.h).
 */
#include "join/srckey.h"

#include <stdlib.h>
#include <string.h>

typedef struct sk_src {
  char *name;
  wd_table_t *table; /* owns the source schema; deduplicate */
  const wd_schema_t *schema;
  wd_state_t *state;
  size_t nkey;
  int *wcol; /* per source column: the wide column (-1 for a key column) */
  bool *event; /* per source column: read from the event, not the image */
} sk_src_t;

struct wd_srckey {
  const wd_table_t *t;
  const wd_schema_t *ws;
  wd_state_t *wide;
  sk_src_t src[WD_SRCKEY_MAX_SOURCES];
  size_t n;
  bool started;
  wd_changelog_t cl; /* one message's changelog of source rows */
  uint64_t messages, derived;
};

wd_error_t *wd_srckey_new(const wd_table_t *t, wd_srckey_t **out) {
  *out = NULL;
  wd_srckey_t *sk = calloc(1, sizeof(*sk));
  if (!sk) return wd_error_nomem();
  sk->t = t;
  sk->ws = wd_table_schema(t);
  *out = sk;
  return NULL;
}

void wd_srckey_destroy(wd_srckey_t *sk) {
  if (!sk) return;
  if (sk->started && sk->wide) wd_state_add_hooks(sk->wide, NULL, NULL);
  for (size_t i = 0; i < sk->n; i++) {
    sk_src_t *s = &sk->src[i];
    wd_state_destroy(s->state);
    wd_table_destroy(s->table);
    free(s->name);
    free(s->wcol);
    free(s->event);
  }
  free(sk->cl.rows);
  wd_buf_free(&sk->cl.keys);
  free(sk);
}

size_t wd_srckey_count(const wd_srckey_t *sk) { return sk->n; }

wd_error_t *wd_srckey_add(wd_srckey_t *sk, const char *name, const char *const *key, size_t nkey, const bool *mapped,
                          int *id) {
  const wd_schema_t *ws = sk->ws;
  if (!name) name = "";
  if (nkey == 0)
    return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEY_EMPTY,
                        "source '%s': `primary-key:` names no field; list the fields of its own primary key", name);
  if (sk->n >= WD_SRCKEY_MAX_SOURCES || sk->started)
    return wd_error_new(WD_ERR_CONFIG, C_JOIN_TOO_MANY_SOURCES,
                        "source '%s': at most %d sources per table have their own `primary-key`", name,
                        WD_SRCKEY_MAX_SOURCES);
  for (size_t c = 0; c < ws->npk; c++)
    if (!mapped[ws->pk[c]])
      return wd_error_new(WD_ERR_CONFIG, C_SOURCE_NO_KEY,
                          "source '%s' does not map the wide primary-key column '%s': with its own `primary-key` it "
                          "must still say which wide row each of its rows belongs to; map '%s'",
                          name, ws->cols[ws->pk[c]].name, ws->cols[ws->pk[c]].name);
  size_t nmapped = 0;
  for (size_t c = 0; c < ws->ncols; c++) nmapped += mapped[c];
  size_t ncols = nkey + nmapped;
  wd_error_t *err = NULL;
  sk_src_t *s = &sk->src[sk->n];
  memset(s, 0, sizeof(*s));
  const char **names = calloc(ncols + 1, sizeof(*names));
  char **types = calloc(ncols + 1, sizeof(*types));
  wd_schema_t *schema = NULL;
  s->name = strdup(name);
  s->wcol = calloc(ncols + 1, sizeof(int));
  s->event = calloc(ncols + 1, sizeof(bool));
  if (!names || !types || !s->name || !s->wcol || !s->event) {
    err = wd_error_nomem();
    goto fail;
  }
  size_t k = 0;
  for (; k < nkey; k++) {
    names[k] = key[k];
    s->wcol[k] = -1;
    if (!(types[k] = strdup("STRING"))) {
      err = wd_error_nomem();
      goto fail;
    }
  }
  for (size_t c = 0; c < ws->ncols; c++) {
    if (!mapped[c]) continue;
    names[k] = ws->cols[c].name;
    s->wcol[k] = (int)c;
    wd_type_t *ty = wd_type_copy(ws->cols[c].type);
    if (ty) ty->not_null = false; /* a key-only delete's record has them NULL */
    types[k] = ty ? wd_type_to_string(ty) : NULL;
    wd_type_destroy(ty);
    if (!types[k++]) {
      err = wd_error_nomem();
      goto fail;
    }
  }
  if ((err = wd_schema_new(ncols, names, (const char *const *)types, nkey, key, &schema))) {
    err = wd_error_wrap(err, "source '%s': its `primary-key` fields must differ from the wide columns it maps", name);
    goto fail;
  }
  wd_option_t opts[1] = {{"merge-engine", "deduplicate"}};
  if ((err = wd_table_new(schema, 1, opts, &s->table))) goto fail;
  s->schema = wd_table_schema(s->table);
  s->nkey = nkey;
  *id = (int)sk->n++;
  goto done;
fail:
  free(s->name);
  free(s->wcol);
  free(s->event);
  memset(s, 0, sizeof(*s));
done:
  if (types)
    for (size_t i = 0; i < ncols; i++) free(types[i]);
  free(types);
  free(names);
  return err;
}

const wd_schema_t *wd_srckey_schema(const wd_srckey_t *sk, int id) {
  return id >= 0 && (size_t)id < sk->n ? sk->src[id].schema : NULL;
}

void wd_srckey_set_event_col(wd_srckey_t *sk, int id, int col, bool event) {
  if (id < 0 || (size_t)id >= sk->n || col < 0 || (size_t)col >= sk->src[id].schema->ncols) return;
  sk->src[id].event[col] = event;
}

/* ---- the hooks: the source rows go with the wide state's snapshots ---------------------------- */

static wd_error_t *hook_snapshot(void *ctx, wd_store_batch_t *b, uint64_t snap) {
  (void)snap; /* the source states are snapshotted only here, so their numbers stay in step */
  wd_srckey_t *sk = ctx;
  for (size_t i = 0; i < sk->n; i++) {
    uint64_t m = 0;
    wd_error_t *err = wd_state_snapshot(sk->src[i].state, b, &m);
    if (err) return err;
  }
  return NULL;
}

static void hook_written(void *ctx, uint64_t snap) {
  wd_srckey_t *sk = ctx;
  for (size_t i = 0; i < sk->n; i++) wd_state_written(sk->src[i].state, snap);
}

static void hook_drop_clean(void *ctx) {
  wd_srckey_t *sk = ctx;
  for (size_t i = 0; i < sk->n; i++) wd_state_drop_clean(sk->src[i].state);
}

static void hook_discard(void *ctx) {
  wd_srckey_t *sk = ctx;
  for (size_t i = 0; i < sk->n; i++) wd_state_discard(sk->src[i].state);
}

static wd_error_t *hook_drop_task(void *ctx, uint32_t task, wd_store_batch_t *b) {
  wd_srckey_t *sk = ctx;
  for (size_t i = 0; i < sk->n; i++) {
    wd_error_t *err = wd_state_drop_task(sk->src[i].state, task, b);
    if (err) return err;
  }
  return NULL;
}

static const wd_state_hooks_t HOOKS = {hook_snapshot, hook_written, hook_drop_clean, hook_discard, hook_drop_task};

wd_error_t *wd_srckey_start(wd_srckey_t *sk, wd_state_t *wide, wd_store_t *st) {
  if (sk->started) return NULL;
  for (size_t i = 0; i < sk->n; i++) {
    if (!(sk->src[i].state = wd_state_new(sk->src[i].table, st, 0))) return wd_error_nomem();
    wd_state_set_namespace(sk->src[i].state, (uint8_t)(WD_SRCKEY_NS_FIRST + i));
    /* its rows are always written with its whole schema: a change of it is a definition change
     * (app/ops/fingerprint.c "source <s> primary-key"), never columns appended in place */
    wd_state_set_base_ncols(sk->src[i].state, 0);
  }
  if (sk->n && wd_state_add_hooks(wide, &HOOKS, sk))
    return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "the wide state has a second layer's hooks already");
  sk->wide = wide;
  sk->started = true;
  return NULL;
}

void wd_srckey_set_task(wd_srckey_t *sk, uint32_t task) {
  for (size_t i = 0; i < sk->n; i++)
    if (sk->src[i].state) wd_state_set_task(sk->src[i].state, task);
}

void wd_srckey_counts(const wd_srckey_t *sk, uint64_t *messages, uint64_t *derived) {
  *messages = sk->messages;
  *derived = sk->derived;
}

/* ---- derivation ----------------------------------------------------------------------------------- */

static bool wide_key_null(const sk_src_t *s, const wd_schema_t *ws, const wd_row_t *r) {
  for (size_t k = s->nkey; k < s->schema->ncols; k++)
    if (wd_schema_is_pk(ws, s->wcol[k]) && r->v[k].is_null) return true;
  return false;
}

static bool same_wide_key(const sk_src_t *s, const wd_schema_t *ws, const wd_row_t *a, const wd_row_t *b) {
  for (size_t k = s->nkey; k < s->schema->ncols; k++)
    if (wd_schema_is_pk(ws, s->wcol[k]) && !wd_value_eq(s->schema->cols[k].type, &a->v[k], &b->v[k])) return false;
  return true;
}

/* Hands r (a source row) as a wide change record of kind to add; for a retraction, the event
 * columns take the message's values (ev, may be NULL) when it carries them. */
static int emit(wd_srckey_t *sk, const sk_src_t *s, const wd_row_t *r, wd_row_kind_t kind, const wd_row_t *ev,
                wd_srckey_add_cb add, void *ctx) {
  wd_row_t *w = add(ctx, kind);
  if (!w) return -1;
  bool retract = kind == WD_UPDATE_BEFORE || kind == WD_DELETE;
  for (size_t k = s->nkey; k < s->schema->ncols; k++) {
    const wd_value_t *v = &r->v[k];
    if (retract && ev && s->event[k] && !ev->v[k].is_null && !(ev->absent && ev->absent[k])) v = &ev->v[k];
    if (v->is_null) continue;
    if (wd_value_copy(s->schema->cols[k].type, &w->v[s->wcol[k]], v)) return -1;
  }
  sk->derived++;
  return 0;
}

wd_error_t *wd_srckey_apply(wd_srckey_t *sk, int id, wd_row_t *const *recs, size_t n, wd_srckey_add_cb add, void *ctx,
                            unsigned *null_key) {
  if (id < 0 || (size_t)id >= sk->n || !sk->started)
    return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "source-key source %d unknown or not started", id);
  sk_src_t *s = &sk->src[id];
  const wd_schema_t *ws = sk->ws;
  sk->messages++;
  wd_changelog_reset(s->table, &sk->cl);
  wd_error_t *err = wd_message_apply(s->table, wd_state_ops(), s->state, recs, n, &sk->cl, NULL);
  if (err) return err;
  /* the message's event values, for retractions built from stored rows */
  const wd_row_t *ev = n ? recs[n - 1] : NULL;
  unsigned nk = 0;
  int rc = 0;
  for (size_t i = 0; i < sk->cl.n && !rc; i++) {
    const wd_row_t *r = sk->cl.rows[i];
    if (r->kind == WD_UPDATE_BEFORE && i + 1 < sk->cl.n && sk->cl.rows[i + 1]->kind == WD_UPDATE_AFTER) {
      const wd_row_t *a = sk->cl.rows[++i];
      bool on = wide_key_null(s, ws, r), nn = wide_key_null(s, ws, a);
      if (!on && !nn && same_wide_key(s, ws, r, a)) {
        rc = emit(sk, s, r, WD_UPDATE_BEFORE, ev, add, ctx) || emit(sk, s, a, WD_UPDATE_AFTER, ev, add, ctx);
        continue;
      }
      /* a move: out of the old wide row, into the new one */
      if (on) nk++;
      else rc = emit(sk, s, r, WD_DELETE, ev, add, ctx);
      if (nn) nk++;
      else if (!rc) rc = emit(sk, s, a, WD_INSERT, ev, add, ctx);
      continue;
    }
    if (wide_key_null(s, ws, r)) {
      nk++;
      continue;
    }
    /* +I, -D; a lone -U/+U (cannot come from the deduplicate engine) as it is */
    rc = emit(sk, s, r, r->kind, ev, add, ctx);
  }
  wd_changelog_reset(s->table, &sk->cl);
  if (rc) return wd_error_nomem();
  if (null_key) *null_key += nk;
  return NULL;
}
