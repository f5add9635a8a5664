/*
 * app/runtime/rebuild.c — the rebuild on an incompatible table definition as a runtime mode (see
 * rebuild.h and docs/runtime.md "Rebuild as a runtime mode").
 */
#include "app/runtime/rebuild.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app/ops/fingerprint.h"
#include "app/ops/netchange.h"
#include "app/runtime/fault.h"
#include "app/runtime/tasks.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "join/row_codec.h"

#define NS_OLD 'O' /* the staged old rows: 'O' + task + new key -> entry in the new encoding */
#define NS_MARK 'M' /* the task's switch mark: 'M' + task -> the definition's fingerprint */
#define CHUNK 512 /* entries a reader holds at once */

/* An old definition the rows of some tasks were built with (per-partition: a task switched by an
 * earlier rebuild that this one has not reached yet holds its rows in that rebuild's definition). */
typedef struct {
  char fp[32]; /* the mark of those tasks ("": the rows of tasks never switched) */
  wd_table_t *t; /* owned (NULL for the default: the rebuild's old_t) */
  const wd_schema_t *os;
  size_t base; /* the rows' base column count (0: the schema's) */
  int *col_of; /* per new column: the old column of the same name and type, -1: none (owned) */
} view_t;

/* One task's progress in this process (for the assignment round it was started in). */
typedef struct {
  uint32_t task;
  unsigned round; /* wd_task_t.round when the stage started */
  bool staging; /* the stage is under way (cleared range, cursor valid) */
  wd_buf_t cursor; /* the next old key to read (empty: the range's start) */
  uint64_t staged; /* old rows staged */
} progress_t;

struct wd_rebuild {
  wd_store_t *st; /* the pipeline's (borrowed) */
  wd_state_t *state; /* the pipeline's (borrowed) */
  const wd_schema_t *ns; /* the new schema (the pipeline's table) */
  wd_table_t *old_t; /* the old definition's table (owned) */
  const wd_schema_t *os;
  size_t old_base; /* the old rows' base column count (0: the old schema's) */
  bool changelog; /* per-partition tasks: old rows restored from the state changelog topic */
  char *old_dir; /* single task: the state before the change */
  wd_store_t *old_st; /* ... opened on first use (owned) */
  char fp[32]; /* the current definition's fingerprint */
  size_t fplen;
  char old_fp[32]; /* the old definition's */
  bool chained; /* the state before the change was rebuilding too (WD_REBUILD_CHAINED_KEY) */
  int *col_of; /* per new column: the old column of the same name and type, -1: none */
  progress_t *pg;
  size_t npg, cap_pg;
  int64_t switching; /* the task whose switch commit is open, -1: none */
  json_t *defs; /* meta WD_REBUILD_DEFS_KEY: mark -> {definition, base} (owned; NULL: none) */
  view_t *views; /* the views of defs built so far (owned) */
  size_t nviews;
  wd_fault_t fault; /* WIDEN_FAULT=rebuild-<point> (app/runtime/fault.h) */
};

/* ---- the fault hook (app/runtime/fault.h; tests: a SIGKILL in a phase) -------------------------- */

static void fault(wd_rebuild_t *rb, const char *point) {
  if (!rb->fault.fatal && wd_fault_due(&rb->fault, point)) wd_fault_kill("rebuild", point, NULL);
}

/* ---- opening ---------------------------------------------------------------------------------- */

static char *meta_text(wd_store_t *st, const char *name, size_t *len, wd_error_t **err) {
  uint8_t *v = NULL;
  size_t n = 0;
  *err = wd_store_get_meta(st, name, &v, &n);
  if (*err || !v) {
    free(v);
    return NULL;
  }
  char *s = realloc(v, n + 1);
  if (!s) {
    free(v);
    *err = wd_error_nomem();
    return NULL;
  }
  s[n] = 0;
  if (len) *len = n;
  return s;
}

/* Per new column of ns: the column of os of the same name and type, -1: none; NULL on no memory. */
static int *projection(const wd_schema_t *ns, const wd_schema_t *os) {
  int *col_of = calloc(ns->ncols ? ns->ncols : 1, sizeof(*col_of));
  if (!col_of) return NULL;
  for (size_t c = 0; c < ns->ncols; c++) { /* projection by column name (and the same type) */
    col_of[c] = -1;
    for (size_t k = 0; k < os->ncols; k++)
      if (!strcmp(ns->cols[c].name, os->cols[k].name)) {
        char *a = wd_type_to_string(ns->cols[c].type), *b = wd_type_to_string(os->cols[k].type);
        if (a && b && !strcmp(a, b)) col_of[c] = (int)k;
        free(a);
        free(b);
        break;
      }
  }
  return col_of;
}

wd_error_t *wd_rebuild_open(wd_store_t *st, wd_state_t *state, const wd_table_t *table, bool changelog,
                            wd_rebuild_t **out) {
  *out = NULL;
  wd_error_t *err = NULL;
  size_t dlen = 0;
  char *def = meta_text(st, WD_REBUILD_OLD_DEF_KEY, &dlen, &err);
  if (err || !def) return err;
  char *fp = NULL, *base = NULL;
  wd_rebuild_t *rb = calloc(1, sizeof(*rb));
  if (!rb) {
    err = wd_error_nomem();
    goto fail;
  }
  rb->st = st;
  rb->state = state;
  rb->ns = wd_table_schema(table);
  rb->changelog = changelog;
  rb->switching = -1;
  if ((err = wd_definition_table(def, dlen, &rb->old_t))) goto fail;
  rb->os = wd_table_schema(rb->old_t);
  /* the marks hold the fingerprint the rebuild was armed for (a compatible change since keeps it) */
  if (!(fp = meta_text(st, WD_REBUILD_FP_KEY, &rb->fplen, &err)) && !err)
    fp = meta_text(st, WD_DEFINITION_FP_KEY, &rb->fplen, &err);
  if (!fp || rb->fplen >= sizeof(rb->fp)) {
    if (!err) err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the state's definition fingerprint is missing");
    goto fail;
  }
  memcpy(rb->fp, fp, rb->fplen);
  if ((base = meta_text(st, WD_REBUILD_OLD_BASE_KEY, NULL, &err))) rb->old_base = (size_t)strtoull(base, NULL, 10);
  if (err) goto fail;
  snprintf(rb->old_fp, sizeof(rb->old_fp), "%016" PRIx64, wd_definition_fingerprint(def, dlen));
  char *ch = meta_text(st, WD_REBUILD_CHAINED_KEY, NULL, &err);
  rb->chained = ch != NULL;
  free(ch);
  if (err) goto fail;
  if (!changelog && !(rb->old_dir = meta_text(st, WD_REBUILD_OLD_STATE_KEY, NULL, &err))) {
    if (!err) err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the armed rebuild names no state before the change");
    goto fail;
  }
  if (!(rb->col_of = projection(rb->ns, rb->os))) {
    err = wd_error_nomem();
    goto fail;
  }
  char *defs = meta_text(st, WD_REBUILD_DEFS_KEY, NULL, &err);
  if (err) goto fail;
  if (defs && !(rb->defs = json_loads(defs, 0, NULL))) {
    free(defs);
    err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the armed rebuild's earlier definitions (%s) do not parse",
                       WD_REBUILD_DEFS_KEY);
    goto fail;
  }
  free(defs);
  if (changelog) { /* per-partition: a key's task is its partition; a changed key changes the layout */
    bool same = rb->ns->npk == rb->os->npk;
    for (size_t k = 0; same && k < rb->ns->npk; k++) same = rb->col_of[rb->ns->pk[k]] == rb->os->pk[k];
    if (!same) {
      err = wd_error_new(WD_ERR_CONFIG, C_STATE_DEFINITION,
                         "the primary key changed: under per-partition tasks its rows would move to other tasks, "
                         "which a rebuild in place cannot do; use state.on-incompatible-change: fail and build the "
                         "table anew (a new group.id and state directory, or `widen replay`)");
      goto fail;
    }
  }
  wd_fault_from_env(&rb->fault);
  wd_log(WD_LOG_INFO, "rebuild",
         "the table definition changed incompatibly: every task this process owns is rebuilt "
         "from the sources' earliest offsets before it produces output, and emits only its difference (old rows "
         "from %s)",
         changelog ? "the state changelog topic" : rb->old_dir);
  free(def);
  free(fp);
  free(base);
  *out = rb;
  return NULL;
fail:
  free(def);
  free(fp);
  free(base);
  wd_rebuild_destroy(rb);
  return err;
}

void wd_rebuild_destroy(wd_rebuild_t *rb) {
  if (!rb) return;
  for (size_t i = 0; i < rb->npg; i++) wd_buf_free(&rb->pg[i].cursor);
  free(rb->pg);
  free(rb->col_of);
  for (size_t i = 0; i < rb->nviews; i++) {
    free(rb->views[i].col_of);
    wd_table_destroy(rb->views[i].t);
  }
  free(rb->views);
  json_decref(rb->defs);
  free(rb->old_dir);
  wd_store_close(rb->old_st);
  wd_table_destroy(rb->old_t);
  free(rb);
}

/* ---- keys ------------------------------------------------------------------------------------- */

static void prefix(uint8_t p[WD_STATE_PREFIX_LEN], uint8_t ns, uint32_t task) {
  p[0] = ns;
  p[1] = (uint8_t)(task >> 24);
  p[2] = (uint8_t)(task >> 16);
  p[3] = (uint8_t)(task >> 8);
  p[4] = (uint8_t)task;
}

bool wd_rebuild_task_current(void *ctx, uint32_t task) {
  wd_rebuild_t *rb = ctx;
  uint8_t key[WD_STATE_PREFIX_LEN];
  prefix(key, NS_MARK, task);
  const uint8_t *kp = key;
  size_t kl = sizeof(key), vl = 0;
  uint8_t *val = NULL;
  wd_error_t *err = wd_store_multi_get(rb->st, 1, &kp, &kl, &val, &vl);
  if (err) {
    wd_log(WD_LOG_WARN, "rebuild", "reading the mark of task %" PRIu32 ": %s; the task is rebuilt", task, err->message);
    wd_error_destroy(err);
    return false;
  }
  bool yes = val && vl == rb->fplen && !memcmp(val, rb->fp, vl);
  free(val);
  return yes;
}

static progress_t *progress(wd_rebuild_t *rb, uint32_t task) {
  for (size_t i = 0; i < rb->npg; i++)
    if (rb->pg[i].task == task) return &rb->pg[i];
  if (rb->npg == rb->cap_pg) {
    size_t cap = rb->cap_pg ? rb->cap_pg * 2 : 8;
    progress_t *p = realloc(rb->pg, cap * sizeof(*p));
    if (!p) return NULL;
    rb->pg = p;
    rb->cap_pg = cap;
  }
  progress_t *p = &rb->pg[rb->npg++];
  memset(p, 0, sizeof(*p));
  p->task = task;
  return p;
}

/* ---- a sorted reader over one key range, in chunks (bounded memory) ------------------------------ */

typedef struct {
  wd_store_t *st;
  uint8_t pfx[WD_STATE_PREFIX_LEN];
  wd_buf_t from; /* where the next chunk starts (empty: the range's start) */
  bool end; /* no chunk after this one */
  wd_buf_t data; /* the chunk's keys and values back to back */
  size_t ko[CHUNK], kl[CHUNK], vo[CHUNK], vl[CHUNK];
  size_t n, at;
  bool nomem;
} reader_t;

static int reader_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  reader_t *r = ctx;
  if (r->n == CHUNK) return 1; /* more after this chunk */
  r->ko[r->n] = r->data.len;
  r->kl[r->n] = klen;
  if (wd_buf_append(&r->data, key, klen)) goto nomem;
  r->vo[r->n] = r->data.len;
  r->vl[r->n] = vlen;
  if (vlen && wd_buf_append(&r->data, val, vlen)) goto nomem;
  r->n++;
  return 0;
nomem:
  r->nomem = true;
  return 1;
}

/* Whether the reader has an entry (the next chunk read when the last one is used up). */
static wd_error_t *reader_peek(reader_t *r, bool *valid) {
  if (r->at == r->n && !r->end) {
    wd_buf_reset(&r->data);
    r->n = r->at = 0;
    wd_error_t *err = wd_store_scan_prefix_from(r->st, r->pfx, sizeof(r->pfx), r->from.len ? r->from.data : NULL,
                                                r->from.len, reader_cb, r);
    if (!err && r->nomem) err = wd_error_nomem();
    if (err) return err;
    r->end = r->n < CHUNK;
    if (r->n) { /* the next chunk starts just after this one's last key */
      wd_buf_reset(&r->from);
      if (wd_buf_append(&r->from, r->data.data + r->ko[r->n - 1], r->kl[r->n - 1]) || wd_buf_putc(&r->from, 0))
        return wd_error_nomem();
    }
  }
  *valid = r->at < r->n;
  return NULL;
}

static const uint8_t *rkey(const reader_t *r, size_t *len) {
  *len = r->kl[r->at];
  return r->data.data + r->ko[r->at];
}

static const uint8_t *rval(const reader_t *r, size_t *len) {
  *len = r->vl[r->at];
  return r->data.data + r->vo[r->at];
}

static void reader_free(reader_t *r) {
  wd_buf_free(&r->from);
  wd_buf_free(&r->data);
}

/* ---- STAGE: the old rows, projected, under their new key ---------------------------------------- */

/* The old row projected onto the new schema by column name; NULL on no memory. */
static wd_row_t *project(const wd_rebuild_t *rb, const view_t *vw, const wd_row_t *r) {
  wd_row_t *o = wd_row_new(rb->ns);
  if (!o) return NULL;
  for (size_t c = 0; c < rb->ns->ncols; c++)
    if (vw->col_of[c] >= 0 && wd_value_copy(rb->ns->cols[c].type, &o->v[c], &r->v[vw->col_of[c]])) {
      wd_row_destroy(rb->ns, o);
      return NULL;
    }
  return o;
}

/* Single task: the state before the change, checked at the group's committed offsets once. */
static wd_error_t *old_store(wd_rebuild_t *rb, wd_commit_t *c, wd_task_t *task, wd_store_t **out) {
  *out = NULL;
  if (rb->changelog) {
    *out = rb->st; /* restored into the task's range of the pipeline's store */
    return NULL;
  }
  wd_error_t *err = NULL;
  if (!rb->old_st && (err = wd_store_open_rocksdb(rb->old_dir, NULL, &rb->old_st)))
    return wd_error_wrap(err, "E_REBUILD: opening the state before the change in %s", rb->old_dir);
  for (size_t k = 0; k < task->nparts; k++) {
    int64_t have = -1, g = wd_commit_group_offset(c, task->parts[k].topic, task->parts[k].partition);
    if ((err = wd_store_get_offset(rb->old_st, task->parts[k].topic, task->parts[k].partition, &have))) return err;
    if (have != g && !(g < 0 && have <= 0))
      return wd_error_new(WD_ERR_IO, E_REBUILD,
                          "the state before the change (%s) is at offset %" PRId64 " of %s[%d], the group's committed "
                          "offset is %" PRId64 ": its rows are not the table the output shows, so no difference can "
                          "be computed from them; put it back as state.dir and run the old definition to the group's "
                          "position first (or build the table anew with `widen replay`)",
                          rb->old_dir, have, task->parts[k].topic, task->parts[k].partition, g);
  }
  *out = rb->old_st;
  return NULL;
}

/* The definition task's old rows were built with, in *out (borrowed from rb): per-partition, a task
 * whose restored mark names an earlier rebuild's definition (meta WD_REBUILD_DEFS_KEY) has that
 * one's rows; a task with no mark, the old definition's (the first one left, kept by every later
 * arming). Errors: E_REBUILD naming the task when its rows are of a definition this state does not
 * know (a state armed before the earlier definitions were kept: a second change before the first
 * rebuild switched the task); E_STATE_CORRUPT, the table config's, E_STORE_READ, E_NOMEM. */
static wd_error_t *old_view(wd_rebuild_t *rb, uint32_t task, view_t *dflt, const view_t **out) {
  *dflt = (view_t){.t = NULL, .os = rb->os, .base = rb->old_base, .col_of = rb->col_of};
  *out = dflt;
  if (!rb->changelog) return NULL;
  uint8_t key[WD_STATE_PREFIX_LEN];
  prefix(key, NS_MARK, task);
  const uint8_t *kp = key;
  size_t kl = sizeof(key), vl = 0;
  uint8_t *val = NULL;
  wd_error_t *err = wd_store_multi_get(rb->st, 1, &kp, &kl, &val, &vl);
  if (err) return err;
  char fp[32] = "";
  bool marked = val != NULL;
  if (marked && vl < sizeof(fp)) memcpy(fp, val, vl);
  free(val);
  if (marked) {
    for (size_t i = 0; i < rb->nviews; i++)
      if (!strcmp(rb->views[i].fp, fp)) {
        *out = &rb->views[i];
        return NULL;
      }
  }
  json_t *d = marked ? json_object_get(rb->defs, fp) : NULL;
  const char *text = json_string_value(json_object_get(d, "definition"));
  if (!text) {
    bool ok = marked ? !strcmp(fp, rb->old_fp) : !rb->chained || rb->defs;
    if (!ok)
      return wd_error_new(WD_ERR_CONFIG, E_REBUILD,
                          "task %" PRIu32 ": its rows in the state changelog topic are of %s%s, not of the definition "
                          "this rebuild starts from (%s): the definition changed again before an earlier rebuild had "
                          "switched every task; start the group with that earlier definition until every task is "
                          "switched (each logs \"emitted the difference\"), or build the table anew",
                          task,
                          marked ? "the definition with fingerprint " : "the definition before the earlier rebuild", fp,
                          rb->old_fp);
    return NULL; /* the old definition's rows */
  }
  view_t *nv = realloc(rb->views, (rb->nviews + 1) * sizeof(*nv));
  if (!nv) return wd_error_nomem();
  rb->views = nv;
  view_t *v = &rb->views[rb->nviews];
  *v = (view_t){0};
  snprintf(v->fp, sizeof(v->fp), "%s", fp);
  v->base = (size_t)json_integer_value(json_object_get(d, "base"));
  if ((err = wd_definition_table(text, strlen(text), &v->t))) return err;
  v->os = wd_table_schema(v->t);
  if (!(v->col_of = projection(rb->ns, v->os))) {
    wd_table_destroy(v->t);
    return wd_error_nomem();
  }
  rb->nviews++;
  wd_log(WD_LOG_INFO, "rebuild",
         "task %" PRIu32 ": its old rows are an earlier rebuild's (mark %s): read with that "
         "definition",
         task, fp);
  *out = v;
  return NULL;
}

static wd_error_t *stage_slice(wd_rebuild_t *rb, wd_commit_t *c, wd_task_t *task, double until) {
  progress_t *pg = progress(rb, task->id);
  if (!pg) return wd_error_nomem();
  wd_error_t *err = NULL;
  wd_store_batch_t *b = wd_store_batch_new();
  reader_t r = {0};
  wd_buf_t key = {0}, val = {0};
  wd_row_t *row = NULL, *np = NULL;
  view_t dflt;
  const view_t *vw = NULL;
  if (!b) return wd_error_nomem();
  uint8_t ob[WD_STATE_PREFIX_LEN], oe[WD_STATE_PREFIX_LEN];
  prefix(ob, NS_OLD, task->id);
  prefix(oe, NS_OLD, task->id + 1);
  if (!pg->staging || pg->round != task->round) { /* a new start: what an earlier attempt staged goes */
    pg->staging = true;
    pg->round = task->round;
    pg->staged = 0;
    wd_buf_reset(&pg->cursor);
    if (wd_store_batch_delete_range(b, ob, sizeof(ob), oe, sizeof(oe))) goto nomem;
    if ((err = wd_store_write(rb->st, b))) goto done;
    wd_store_batch_clear(b);
    wd_log(WD_LOG_INFO, "rebuild",
           "task %" PRIu32 ": staging its old rows (read with the old definition, projected "
           "onto the new columns)",
           task->id);
  }
  if ((err = old_store(rb, c, task, &r.st))) goto done;
  if ((err = old_view(rb, task->id, &dflt, &vw))) goto done;
  prefix(r.pfx, WD_STATE_ROW_NS, task->id);
  if (pg->cursor.len && wd_buf_append(&r.from, pg->cursor.data, pg->cursor.len)) goto nomem;
  bool valid = true, chunk_end = false;
  while (!err && valid) {
    if ((err = reader_peek(&r, &valid)) || !valid) break;
    size_t kl, vl;
    const uint8_t *k = rkey(&r, &kl), *v = rval(&r, &vl);
    bool tomb = false;
    if ((err = wd_row_decode_base(vw->os, vw->base, v, vl, &row, &tomb))) break; /* E_STATE_CORRUPT */
    /* ordering tombstones are staged too (no rows of the old table; their changelog entries go
     * at the switch) */
    if (!(np = project(rb, vw, row))) goto nomem;
    wd_buf_reset(&key);
    wd_buf_reset(&val);
    if (wd_buf_append(&key, ob, sizeof(ob)) || wd_row_key_encode(rb->ns, np, &key) ||
        wd_row_encode(rb->ns, np, tomb, 0, &val) || wd_store_batch_put(b, key.data, key.len, val.data, val.len))
      goto nomem;
    pg->staged += !tomb;
    wd_row_destroy(rb->ns, np);
    np = NULL;
    wd_row_destroy(vw->os, row);
    row = NULL;
    r.at++;
    chunk_end = r.at == r.n;
    wd_buf_reset(&pg->cursor); /* resume after this key */
    if (wd_buf_append(&pg->cursor, k, kl) || wd_buf_putc(&pg->cursor, 0)) goto nomem;
    if (chunk_end) {
      if ((err = wd_store_write(rb->st, b))) break;
      wd_store_batch_clear(b);
      if (wd_mono_s() >= until) break; /* the rest in the next slice */
    }
  }
  if (err) goto done;
  if ((err = wd_store_write(rb->st, b))) goto done;
  wd_store_batch_clear(b);
  if (valid) goto done; /* not at the end yet */
  /* staged: per-partition, the restored old rows go (the task's range is rebuilt from the sources) */
  if (rb->changelog) {
    if ((err = wd_state_drop_task(rb->state, task->id, b)) || (err = wd_store_write_sync(rb->st, b))) goto done;
  }
  wd_log(WD_LOG_INFO, "rebuild", "task %" PRIu32 ": %" PRIu64 " old rows staged", task->id, pg->staged);
  pg->staging = false;
  fault(rb, "rebuild-after-stage");
  err = wd_commit_rebuild_sources(c, task->id);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  wd_row_destroy(rb->ns, np);
  if (row) wd_row_destroy(vw->os, row);
  wd_buf_free(&key);
  wd_buf_free(&val);
  reader_free(&r);
  wd_store_batch_destroy(b);
  return err;
}

/* ---- DIFF: the switch ------------------------------------------------------------------------- */

typedef struct {
  size_t old_rows, new_rows, deletes, inserts, updates, keys;
} counts_t;

/* The difference and the task's new entries, read side by side from the staged old rows and the
 * rebuilt ones, sent through io. */
static wd_error_t *emit_switch(wd_rebuild_t *rb, wd_commit_t *c, uint32_t task, const wd_rebuild_io_t *io,
                               counts_t *n) {
  wd_error_t *err = NULL;
  reader_t o = {0}, w = {0};
  wd_row_t *orow = NULL, *nrow = NULL;
  wd_buf_t rk = {0};
  o.st = w.st = rb->st;
  prefix(o.pfx, NS_OLD, task);
  prefix(w.pfx, WD_STATE_ROW_NS, task);
  for (;;) {
    bool ov = false, wv = false;
    if ((err = reader_peek(&o, &ov)) || (err = reader_peek(&w, &wv))) break;
    if (!ov && !wv) break;
    if (wd_commit_batch_invalid(c)) break; /* a rebalance aborted the switch */
    size_t okl = 0, wkl = 0, ovl = 0, wvl = 0;
    const uint8_t *ok = ov ? rkey(&o, &okl) : NULL, *wk = wv ? rkey(&w, &wkl) : NULL;
    const uint8_t *oval = ov ? rval(&o, &ovl) : NULL, *wval = wv ? rval(&w, &wvl) : NULL;
    /* compare the keys after their prefixes (both ranges hold new-encoded keys) */
    int cmp;
    if (!ov) cmp = 1;
    else if (!wv) cmp = -1;
    else {
      size_t a = okl - WD_STATE_PREFIX_LEN, b = wkl - WD_STATE_PREFIX_LEN, m = a < b ? a : b;
      cmp = memcmp(ok + WD_STATE_PREFIX_LEN, wk + WD_STATE_PREFIX_LEN, m);
      if (!cmp) cmp = (a > b) - (a < b);
    }
    bool otomb = false, wtomb = false;
    if (cmp <= 0 && (err = wd_row_decode(rb->ns, oval, ovl, &orow, &otomb))) break;
    if (cmp >= 0 && (err = wd_row_decode(rb->ns, wval, wvl, &nrow, &wtomb))) break;
    if (cmp >= 0 && io->state && (err = io->state(io->ctx, task, wk, wkl, wval, wvl))) break; /* every new entry */
    bool has_old = cmp <= 0 && !otomb, has_new = cmp >= 0 && !wtomb;
    n->old_rows += has_old;
    n->new_rows += has_new;
    if (cmp < 0 && io->state) { /* a key with no new entry: its old entry in the changelog goes */
      wd_buf_reset(&rk);
      if (wd_buf_append(&rk, w.pfx, WD_STATE_PREFIX_LEN) ||
          wd_buf_append(&rk, ok + WD_STATE_PREFIX_LEN, okl - WD_STATE_PREFIX_LEN))
        err = wd_error_nomem();
      else err = io->state(io->ctx, task, rk.data, rk.len, NULL, 0);
      if (err) break;
    }
    if (has_old && !has_new) {
      orow->kind = WD_DELETE;
      err = io->changes(io->ctx, &orow, 1);
      n->deletes++;
    } else if (!has_old && has_new) {
      nrow->kind = WD_INSERT;
      err = io->changes(io->ctx, &nrow, 1);
      n->inserts++;
    } else if (has_old && has_new && !wd_row_same(rb->ns, orow, nrow)) {
      orow->kind = WD_UPDATE_BEFORE;
      nrow->kind = WD_UPDATE_AFTER;
      wd_row_t *pair[2] = {orow, nrow};
      err = io->changes(io->ctx, pair, 2);
      n->updates++;
    }
    wd_row_destroy(rb->ns, orow);
    wd_row_destroy(rb->ns, nrow);
    orow = nrow = NULL;
    if (err) break;
    if (cmp <= 0) o.at++;
    if (cmp >= 0) w.at++;
    /* between chunks the group is served (partitions paused): a long switch keeps the membership,
     * and a rebalance meanwhile aborts it (the batch in hand) */
    if (++n->keys % (4 * CHUNK) == 0) wd_commit_wait(c, 1);
  }
  if (!err && io->state && !wd_commit_batch_invalid(c)) { /* the mark, with the task's new entries */
    uint8_t mk[WD_STATE_PREFIX_LEN];
    prefix(mk, NS_MARK, task);
    err = io->state(io->ctx, task, mk, sizeof(mk), (const uint8_t *)rb->fp, rb->fplen);
  }
  wd_row_destroy(rb->ns, orow);
  wd_row_destroy(rb->ns, nrow);
  wd_buf_free(&rk);
  reader_free(&o);
  reader_free(&w);
  return err;
}

static wd_error_t *switch_task(wd_rebuild_t *rb, wd_commit_t *c, wd_task_t *task, const wd_rebuild_io_t *io) {
  bool aborted = false;
  uint32_t id = task->id;
  wd_error_t *err = io->complete(io->ctx, &aborted); /* the open commit (other tasks' work) first */
  if (err || wd_commit_pending(c)) return err;
  counts_t n = {0};
  double t0 = wd_mono_s();
  rb->switching = id;
  wd_commit_batch_begin(c); /* a rebalance meanwhile aborts the switch (the batch in hand) */
  if (!(err = wd_commit_begin(c))) err = emit_switch(rb, c, id, io, &n);
  bool invalid = wd_commit_batch_invalid(c);
  wd_commit_batch_end(c);
  if (invalid) { /* aborted by the rebalance (a send that waited gave up with it) */
    wd_error_destroy(err);
    err = NULL;
  }
  if (!err && !invalid) fault(rb, "rebuild-during-switch");
  if (!err && !invalid) err = io->complete(io->ctx, &aborted);
  rb->switching = -1;
  if (err) return err;
  if (invalid || aborted) {
    wd_log(WD_LOG_INFO, "rebuild", "task %" PRIu32 ": its switch was aborted (%s); it is done again", id,
           invalid ? "a rebalance" : "an abortable error");
    return NULL;
  }
  if ((err = wd_commit_rebuild_done(c, id))) return err;
  wd_log(WD_LOG_INFO, "rebuild",
         "task %" PRIu32 ": old table %zu rows, rebuilt table %zu rows: emitted the difference: "
         "%zu -D, %zu +I, %zu -U/+U in commit %" PRIu64 " (%.2f s); producing output from here on",
         id, n.old_rows, n.new_rows, n.deletes, n.inserts, n.updates, wd_commit_number(c), wd_mono_s() - t0);
  return NULL;
}

/* ---- the poll loop's step ----------------------------------------------------------------------- */

bool wd_rebuild_busy(const wd_rebuild_t *rb, wd_commit_t *c) {
  if (!rb) return false;
  wd_tasks_t *t = wd_commit_tasks(c);
  for (size_t i = 0; i < wd_tasks_count(t); i++) {
    wd_task_t *task = wd_tasks_at(t, i);
    if (task->state == WD_TASK_RESTORING && (task->rebuild == WD_REBUILD_STAGE || task->rebuild == WD_REBUILD_DIFF))
      return true;
  }
  return false;
}

wd_error_t *wd_rebuild_step(wd_rebuild_t *rb, wd_commit_t *c, const wd_rebuild_io_t *io, volatile const int *stop,
                            int max_ms) {
  wd_error_t *err = NULL;
  double until = wd_mono_s() + max_ms / 1000.0;
  wd_tasks_t *t = wd_commit_tasks(c);
  for (size_t i = 0; i < wd_tasks_count(t) && !err; i++) {
    wd_task_t *task = wd_tasks_at(t, i);
    if (task->state != WD_TASK_RESTORING) continue;
    if (task->rebuild == WD_REBUILD_STAGE) {
      err = stage_slice(rb, c, task, until);
    } else if (task->rebuild == WD_REBUILD_SOURCES) {
      fault(rb, "rebuild-during-sources");
    } else if (task->rebuild == WD_REBUILD_DIFF && !(stop && *stop)) {
      err = switch_task(rb, c, task, io);
    }
    if (wd_mono_s() >= until) break;
  }
  return err;
}

/* ---- the switch commit's hooks ---------------------------------------------------------------- */

bool wd_rebuild_switching(const wd_rebuild_t *rb) { return rb && rb->switching >= 0; }

int wd_rebuild_before_finalize(wd_rebuild_t *rb, wd_store_batch_t *b) {
  if (!rb || rb->switching < 0) return 0;
  uint32_t task = (uint32_t)rb->switching;
  uint8_t ob[WD_STATE_PREFIX_LEN], oe[WD_STATE_PREFIX_LEN], mk[WD_STATE_PREFIX_LEN];
  prefix(ob, NS_OLD, task);
  prefix(oe, NS_OLD, task + 1);
  prefix(mk, NS_MARK, task);
  if (wd_store_batch_delete_range(b, ob, sizeof(ob), oe, sizeof(oe)) ||
      wd_store_batch_put(b, mk, sizeof(mk), (const uint8_t *)rb->fp, rb->fplen))
    return -1;
  /* a single task switched: the rebuild is over (the next start runs without it); per-partition
   * tasks keep it, since another process's tasks may come here unswitched */
  return !rb->changelog && wd_store_batch_delete_meta(b, WD_REBUILD_OLD_DEF_KEY) ? -1 : 0;
}

void wd_rebuild_before_write(wd_rebuild_t *rb) {
  if (rb && rb->switching >= 0) fault(rb, "rebuild-after-commit");
}

wd_error_t *wd_rebuild_marker(const wd_kafka_conf_t *kconf, const char *txn_id, const char *topic, wd_commit_t *commit,
                              wd_consumer_t **out) {
  wd_kafka_conf_t mconf = {0};
  char *group = NULL;
  if (asprintf(&group, "%s.rebuild", txn_id) < 0) return wd_error_nomem();
  wd_error_t *err = wd_kafka_conf_copy(&mconf, kconf);
  if (!err) err = wd_kafka_conf_set_group(&mconf, group);
  if (!err) err = wd_consumer_new(&mconf, &topic, 1, NULL, NULL, out);
  wd_kafka_conf_clear(&mconf);
  free(group);
  if (!err) wd_commit_set_marker(commit, *out, topic);
  return err;
}
