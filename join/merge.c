/*
 * join/merge.c — the merge engines (spec §1.2, §5-§8) and the per-message changelog (§10).
 *
 * One record at a time: the key's stored entry S (row or tombstone) and the record r form a merge
 * list of one or two records, ordered by sequence.field (§4); the engine's merge function runs
 * over it from an empty working row; the result is a row or a removal (plus, in a table with
 * ordering, the removal row kept as a tombstone, D7).
 */
#include <stdlib.h>
#include <string.h>

#include "join/merge_int.h"

/* One record of a merge list. */
typedef struct {
  const wd_row_t *row;
  wd_row_kind_t kind; /* a stored row enters as +I, a tombstone as its kind (-D or -U) */
  bool tombstone;
} wd_mrec_t;

/* The merge state of §7: working row, flags. The working row W borrows its values from the
 * records it merges (the stored row and the change record, both alive for the whole merge) and
 * owns only what the aggregate functions compute; the new entry's row is W packed once at the end
 * (wd_row_pack: one allocation for the row and its text values). */
typedef struct {
  wd_row_t *w;
  bool insert_seen;
  bool removal; /* the last applied record requested whole-row removal */
  bool started; /* a record has been applied (the first one initialises W) */
  bool *seen; /* per column, aggregate "first in this merge" flags */
} wd_mstate_t;

void wd_entry_clear(const wd_table_t *t, wd_entry_t *e) {
  wd_row_destroy(t->schema, e->row);
  e->row = NULL;
  e->state = WD_ENTRY_ABSENT;
  e->borrowed = false;
}

void wd_entry_release(const wd_table_t *t, wd_entry_t *e) {
  if (e->borrowed) e->row = NULL;
  wd_entry_clear(t, e);
}

/* A working row W on the caller's stack for up to WD_WORK_SMALL columns (allocated beyond). Its
 * values are borrowed (borrowed[c]: a shallow copy of a value of a record being merged, which
 * outlives the merge) or owned (what an aggregate function computed). Every change of W goes
 * through set_value / null_value / own_value / work_reset; work_clear frees what W owns. The
 * work row is the first member, so a wd_row_t * of W leads back to it. */
#define WD_WORK_SMALL 64
typedef struct {
  wd_row_t row;
  bool *borrowed;
  bool owns; /* some column may be owned (own_value ran): work_reset has values to free */
  wd_value_t small[WD_WORK_SMALL];
  bool bsmall[WD_WORK_SMALL];
} wd_work_t;

static const wd_value_t WD_NULL_VALUE = {.is_null = true};

static wd_row_t *work_init(const wd_schema_t *s, wd_work_t *wk) {
  memset(&wk->row, 0, sizeof(wk->row));
  wk->row.n = s->ncols;
  if (s->ncols <= WD_WORK_SMALL) {
    wk->row.v = wk->small;
    wk->borrowed = wk->bsmall;
  } else {
    wk->row.v = calloc(s->ncols, sizeof(wd_value_t));
    wk->borrowed = calloc(s->ncols, sizeof(bool));
    if (!wk->row.v || !wk->borrowed) {
      free(wk->row.v);
      free(wk->borrowed);
      wk->row.v = NULL;
      return NULL;
    }
  }
  /* a NULL value owns nothing: every column starts as "borrowed" (nothing to free) */
  for (size_t c = 0; c < s->ncols; c++) wk->row.v[c] = WD_NULL_VALUE;
  memset(wk->borrowed, 1, s->ncols * sizeof(bool));
  wk->owns = false;
  return &wk->row;
}

/* Forgets or frees W's column c (NULL afterwards). */
static inline void work_forget(const wd_schema_t *s, wd_work_t *wk, size_t c) {
  if (!wk->borrowed[c]) {
    wd_value_clear(s->cols[c].type, &wk->row.v[c]);
    wk->borrowed[c] = true;
  }
  wk->row.v[c] = WD_NULL_VALUE;
}

static void work_reset(const wd_schema_t *s, wd_work_t *wk) {
  if (wk->owns) {
    for (size_t c = 0; c < s->ncols; c++)
      if (!wk->borrowed[c]) wd_value_clear(s->cols[c].type, &wk->row.v[c]);
    memset(wk->borrowed, 1, s->ncols * sizeof(bool));
    wk->owns = false;
  }
  for (size_t c = 0; c < s->ncols; c++) wk->row.v[c] = WD_NULL_VALUE;
}

static void work_clear(const wd_schema_t *s, wd_work_t *wk) {
  if (!wk->row.v) return;
  if (wk->owns) /* what W owns; its values are not looked at again */
    for (size_t c = 0; c < s->ncols; c++)
      if (!wk->borrowed[c]) wd_value_clear(s->cols[c].type, &wk->row.v[c]);
  if (wk->row.v != wk->small) {
    free(wk->row.v);
    free(wk->borrowed);
  }
  wk->row.v = NULL;
}

static bool is_retract(wd_row_kind_t k) { return k == WD_UPDATE_BEFORE || k == WD_DELETE; }

/* Compares the sequence.field tuples of a and b (§4): NULL oldest in both sort orders;
 * descending flips non-NULL comparisons. >0 when a is newer. */
static int seq_cmp(const wd_table_t *t, const wd_row_t *a, const wd_row_t *b) {
  for (size_t k = 0; k < t->nseq_fields; k++) {
    int c = t->seq_fields[k];
    const wd_value_t *x = &a->v[c], *y = &b->v[c];
    if (x->is_null || y->is_null) {
      if (x->is_null && y->is_null) continue;
      return x->is_null ? -1 : 1;
    }
    int r = wd_value_cmp(t->schema->cols[c].type, x, y);
    if (r) return t->seq_descending ? -r : r;
  }
  return 0;
}

/* Compares a group's sequence tuple in rows a and b: ascending, NULL smallest (§7.2). */
static int group_cmp(const wd_table_t *t, const wd_seq_group_t *g, const wd_row_t *a, const wd_row_t *b) {
  for (size_t k = 0; k < g->nseq; k++) {
    int c = g->seq[k];
    int r = wd_value_cmp(t->schema->cols[c].type, &a->v[c], &b->v[c]);
    if (r) return r;
  }
  return 0;
}

static bool group_empty(const wd_seq_group_t *g, const wd_row_t *r) {
  for (size_t k = 0; k < g->nseq; k++)
    if (!r->v[g->seq[k]].is_null) return false;
  return true;
}

/* W's column c = v, borrowed (no copy: v outlives the merge). Returns 0 (an int for the callers'
 * error paths, which the copying version had). w is a work row (wd_work_t). */
static inline int set_value(const wd_table_t *t, wd_row_t *w, int c, const wd_value_t *v) {
  wd_work_t *wk = (wd_work_t *)w;
  if (&w->v[c] == v) return 0;
  if (!wk->borrowed[c]) {
    wd_value_clear(t->schema->cols[c].type, &w->v[c]);
    wk->borrowed[c] = true;
  }
  w->v[c] = *v;
  return 0;
}

/* Makes W's column c its own (a copy of a borrowed value) before an aggregate function changes it
 * in place. 0, or -1 on no memory. */
static int own_value(const wd_table_t *t, wd_row_t *w, int c) {
  wd_work_t *wk = (wd_work_t *)w;
  if (!wk->borrowed[c]) return 0;
  wd_value_t tmp;
  if (wd_value_copy(t->schema->cols[c].type, &tmp, &w->v[c])) return -1;
  w->v[c] = tmp;
  wk->borrowed[c] = false;
  wk->owns = true;
  return 0;
}

static void null_value(const wd_table_t *t, wd_row_t *w, int c) { work_forget(t->schema, (wd_work_t *)w, (size_t)c); }

/* W takes only the key and ordering columns of a retraction (§7, D8). */
static int take_ordering(const wd_table_t *t, wd_row_t *w, const wd_row_t *r) {
  for (size_t k = 0; k < t->nordering; k++)
    if (set_value(t, w, t->ordering[k], &r->v[t->ordering[k]])) return -1;
  return 0;
}

static int take_key(const wd_table_t *t, wd_row_t *w, const wd_row_t *r) {
  for (size_t k = 0; k < t->schema->npk; k++)
    if (set_value(t, w, t->schema->pk[k], &r->v[t->schema->pk[k]])) return -1;
  return 0;
}

/* Empties the working row and the aggregates' "first in this merge" flags (D1). */
static void reset_working(const wd_table_t *t, wd_mstate_t *m) {
  work_reset(t->schema, (wd_work_t *)m->w);
  memset(m->seen, 0, t->schema->ncols * sizeof(bool));
}

/* ---- partial-update (§7) -------------------------------------------------------------- */

static wd_error_t *pu_add(const wd_table_t *t, wd_mstate_t *m, const wd_mrec_t *x, wd_merge_stats_t *stats) {
  wd_row_t *w = m->w;
  const wd_row_t *r = x->row;
  wd_error_t *err = NULL;
  if (take_key(t, w, r)) return wd_error_nomem();
  for (size_t g = 0; g < t->ngroups; g++) {
    const wd_seq_group_t *gr = &t->groups[g];
    if (group_empty(gr, r)) continue; /* §7.2 rule 1 */
    bool newer = group_cmp(t, gr, r, w) >= 0;
    if (!newer && stats) stats->older_in_group[g < WD_MERGE_STATS_GROUPS ? g : WD_MERGE_STATS_GROUPS - 1]++;
    for (size_t k = 0; k < gr->nfields; k++) {
      int c = gr->fields[k];
      const wd_agg_spec_t *a = &t->agg[c];
      if (a->fn != WD_AGG_NONE) {
        if (own_value(t, w, c)) return wd_error_nomem();
        err = newer ? wd_agg_add(a, &w->v[c], &r->v[c], &m->seen[c])
                    : wd_agg_add_older(a, &w->v[c], &r->v[c], &m->seen[c]);
        if (err) return err;
      } else if (newer && set_value(t, w, c, &r->v[c])) {
        return wd_error_nomem();
      }
    }
    if (newer)
      for (size_t k = 0; k < gr->nseq; k++)
        if (set_value(t, w, gr->seq[k], &r->v[gr->seq[k]])) return wd_error_nomem();
  }
  /* ungrouped fields: non-NULL replaces (last_non_null_value is the same thing) */
  for (size_t k = 0; k < t->nungrouped; k++) {
    int c = t->ungrouped[k];
    if (!r->v[c].is_null && set_value(t, w, c, &r->v[c])) return wd_error_nomem();
  }
  m->insert_seen = true;
  m->removal = false;
  return NULL;
}

static wd_error_t *pu_retract(const wd_table_t *t, wd_mstate_t *m, const wd_mrec_t *x, wd_merge_stats_t *stats) {
  wd_row_t *w = m->w;
  const wd_row_t *r = x->row;
  wd_error_t *err = NULL;
  m->removal = false; /* only a record that requests removal leaves it requested */
  if (t->ngroups == 0) {
    if (!t->pu_remove_on_delete)
      return wd_error_new(WD_ERR_RECORD, E_PU_DELETE_NOT_ACCEPTED,
                          "partial-update table received a %s record; to accept retractions configure "
                          "'ignore-delete', 'partial-update.remove-record-on-delete', or sequence groups with "
                          "optional 'partial-update.remove-record-on-sequence-group'",
                          wd_row_kind_str(x->kind));
    if (x->kind == WD_DELETE) m->removal = true;
    else if (!x->tombstone && stats) stats->ignored_update_before++;
    return NULL;
  }
  /* §7.3: with groups, retractions are always accepted. First, whether this -D removes the row
   * (partial-update.remove-record-on-sequence-group): a removal is decided by the record as a
   * whole, before any group is touched, so neither the order of the groups nor another group's
   * retraction (an aggregate that cannot retract, say) can change it. */
  if (x->kind == WD_DELETE)
    for (size_t g = 0; g < t->ngroups; g++) {
      const wd_seq_group_t *gr = &t->groups[g];
      if (gr->remove_on_delete && !group_empty(gr, r) && group_cmp(t, gr, r, w) >= 0) {
        /* The removal row is the -D as it came in (D7): W keeps its key and ordering columns
         * only, every other group's work so far (a tombstone's or an earlier record's) is dropped
         * and aggregates start empty (D1, D8). A record after it in merge order is merged with
         * W exactly as with the tombstone this removal would leave. */
        reset_working(t, m);
        if (take_ordering(t, w, r)) return wd_error_nomem();
        m->removal = true;
        m->insert_seen = false;
        return NULL;
      }
    }
  for (size_t g = 0; g < t->ngroups; g++) {
    const wd_seq_group_t *gr = &t->groups[g];
    if (group_empty(gr, r)) continue;
    bool newer = group_cmp(t, gr, r, w) >= 0;
    for (size_t k = 0; k < gr->nfields; k++) {
      int c = gr->fields[k];
      const wd_agg_spec_t *a = &t->agg[c];
      if (a->fn != WD_AGG_NONE) {
        if (own_value(t, w, c)) return wd_error_nomem();
        if ((err = wd_agg_retract(a, &w->v[c], &r->v[c]))) return err;
      } else if (newer) {
        null_value(t, w, c);
      }
    }
    if (newer)
      for (size_t k = 0; k < gr->nseq; k++)
        if (set_value(t, w, gr->seq[k], &r->v[gr->seq[k]])) return wd_error_nomem();
  }
  return NULL;
}

/* ---- aggregation (§8) ----------------------------------------------------------------- */

static wd_error_t *agg_apply(const wd_table_t *t, wd_mstate_t *m, const wd_mrec_t *x) {
  const wd_schema_t *s = t->schema;
  wd_row_t *w = m->w;
  const wd_row_t *r = x->row;
  wd_error_t *err = NULL;
  if (is_retract(x->kind) && x->kind == WD_DELETE && t->agg_remove_on_delete) {
    reset_working(t, m); /* D1: the next record starts from an empty accumulator */
    if (take_key(t, w, r)) return wd_error_nomem();
    m->removal = true;
    return NULL;
  }
  if (take_key(t, w, r)) return wd_error_nomem();
  for (size_t c = 0; c < s->ncols; c++) {
    const wd_agg_spec_t *a = &t->agg[c];
    if (a->fn == WD_AGG_NONE) continue;
    if (own_value(t, w, (int)c)) return wd_error_nomem();
    if (is_retract(x->kind)) err = wd_agg_retract(a, &w->v[c], &r->v[c]);
    else err = wd_agg_add(a, &w->v[c], &r->v[c], &m->seen[c]);
    if (err) return err;
  }
  m->insert_seen = true; /* §8.3: an aggregation row is never removed but by the policy */
  m->removal = false;
  return NULL;
}

/* ---- the record step (§1.2) ----------------------------------------------------------- */

static wd_error_t *check_not_null(const wd_table_t *t, const wd_row_t *r) {
  for (size_t c = 0; c < t->schema->ncols; c++)
    if (t->schema->cols[c].type->not_null && r->v[c].is_null)
      return wd_error_new(WD_ERR_RECORD, E_NOT_NULL, "column '%s' is NOT NULL but the %s record carries NULL",
                          t->schema->cols[c].name, wd_row_kind_str(r->kind));
  return NULL;
}

/* Builds the tombstone row (key + ordering columns of src, D7) with the given kind. */
static wd_row_t *make_tombstone(const wd_table_t *t, const wd_row_t *src, wd_row_kind_t kind) {
  wd_work_t wk;
  wd_row_t *w = work_init(t->schema, &wk);
  wd_row_t *tb = w && !take_ordering(t, w, src) ? wd_row_pack(t->schema, w) : NULL;
  work_clear(t->schema, &wk);
  if (tb) tb->kind = kind;
  return tb;
}

/* One record step (wd_merge_apply): reads e (not changed) and, when the record changes the entry,
 * sets *changed and *out to the key's new entry (owned, e's row not referenced). */
static wd_error_t *merge_step(const wd_table_t *t, const wd_entry_t *e, const wd_row_t *rec, bool *dropped,
                              wd_merge_stats_t *stats, wd_entry_t *out, bool *changed) {
  const wd_schema_t *s = t->schema;
  wd_error_t *err = NULL;
  wd_mstate_t m = {0};
  wd_work_t wk;
  bool seen_small[64]; /* the aggregate flags without an allocation for up to 64 columns */
  wk.row.v = NULL;
  *changed = false;
  memset(out, 0, sizeof(*out));
  if (dropped) *dropped = false;

  /* 1. row-kind filter */
  if ((t->ignore_delete && is_retract(rec->kind)) || (t->ignore_update_before && rec->kind == WD_UPDATE_BEFORE)) {
    if (dropped) *dropped = true;
    if (stats) stats->dropped++;
    return NULL;
  }

  /* 2. first-row (§6) */
  if (t->engine == WD_ENGINE_FIRST_ROW) {
    if (is_retract(rec->kind))
      return wd_error_new(WD_ERR_RECORD, E_FIRST_ROW_RETRACT,
                          "first-row table received a %s record; first-row accepts only inserts (set "
                          "'ignore-delete' to drop retractions)",
                          wd_row_kind_str(rec->kind));
    if (e->state == WD_ENTRY_ROW) {
      if (dropped) *dropped = true;
      if (stats) stats->dropped++;
      return NULL;
    }
    if ((err = check_not_null(t, rec))) return err;
    wd_row_t *row = wd_row_pack(s, rec);
    if (!row) return wd_error_nomem();
    out->state = WD_ENTRY_ROW;
    out->row = row;
    *changed = true;
    return NULL;
  }
  if (t->engine == WD_ENGINE_DEDUPLICATE && wd_row_kind_is_add(rec->kind) && (err = check_not_null(t, rec))) return err;

  /* 3. order: the stored row / tombstone goes first unless sequence.field makes it newer */
  wd_mrec_t list[2];
  size_t n = 0;
  wd_mrec_t rr = {rec, rec->kind, false};
  if (e->state != WD_ENTRY_ABSENT) {
    wd_mrec_t sr = {e->row, e->state == WD_ENTRY_ROW ? WD_INSERT : e->row->kind, e->state == WD_ENTRY_TOMBSTONE};
    bool after = t->nseq_fields > 0 && seq_cmp(t, e->row, rec) > 0;
    if (after && stats) stats->older_by_sequence_field++;
    if (after) {
      list[n++] = rr;
      list[n++] = sr;
    } else {
      list[n++] = sr;
      list[n++] = rr;
    }
  } else {
    list[n++] = rr;
  }

  /* 4. merge */
  wd_row_t *result = NULL; /* the new row, or NULL for a removal */
  const wd_row_t *removal_src = NULL;
  bool any_delete = false;
  for (size_t i = 0; i < n; i++) any_delete |= list[i].kind == WD_DELETE;

  if (t->engine == WD_ENGINE_DEDUPLICATE) {
    /* §5: the last record in merge order, as a whole row */
    const wd_mrec_t *last = &list[n - 1];
    if (is_retract(last->kind)) {
      removal_src = last->row;
    } else {
      if (!(result = wd_row_pack(s, last->row))) return wd_error_nomem();
    }
  } else {
    m.w = work_init(s, &wk);
    if (s->ncols <= 64) {
      memset(seen_small, 0, sizeof(seen_small));
      m.seen = seen_small;
    } else {
      m.seen = calloc(s->ncols, sizeof(bool));
    }
    if (!m.w || !m.seen) {
      err = wd_error_nomem();
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      const wd_mrec_t *x = &list[i];
      if (t->engine == WD_ENGINE_PARTIAL_UPDATE) {
        if (is_retract(x->kind)) {
          if (!m.started && take_ordering(t, m.w, x->row)) {
            err = wd_error_nomem();
            goto done;
          }
          err = pu_retract(t, &m, x, stats);
        } else {
          err = pu_add(t, &m, x, x->row == rec ? stats : NULL); /* only the incoming record counts */
        }
      } else {
        err = agg_apply(t, &m, x);
      }
      if (err) goto done;
      m.started = true;
    }
    if (m.removal || !m.insert_seen) {
      /* D7 removal row: the last record if it requested removal, else W (key + ordering) */
      removal_src = m.removal ? list[n - 1].row : m.w;
    } else if (!(result = wd_row_pack(s, m.w))) { /* the new row, built once */
      err = wd_error_nomem();
      goto done;
    }
  }

  /* 5-6. new entry */
  if (result) {
    result->kind = WD_INSERT;
    out->state = WD_ENTRY_ROW;
    out->row = result;
  } else if (t->has_ordering) {
    wd_row_t *tb = make_tombstone(t, removal_src, any_delete ? WD_DELETE : WD_UPDATE_BEFORE);
    if (!tb) {
      err = wd_error_nomem();
      goto done;
    }
    out->state = WD_ENTRY_TOMBSTONE;
    out->row = tb;
    if (stats) stats->tombstones++;
  }
  *changed = true;
done:
  work_clear(s, &wk);
  if (m.seen != seen_small) free(m.seen);
  return err;
}

wd_error_t *wd_merge_apply(const wd_table_t *t, wd_entry_t *e, const wd_row_t *rec, bool *dropped,
                           wd_merge_stats_t *stats) {
  wd_entry_t ne;
  bool changed = false;
  wd_error_t *err = merge_step(t, e, rec, dropped, stats, &ne, &changed);
  if (err || !changed) return err;
  wd_entry_clear(t, e);
  *e = ne;
  return NULL;
}

/* ---- messages (§10.1) ----------------------------------------------------------------- */

void wd_changelog_reset(const wd_table_t *t, wd_changelog_t *cl) {
  for (size_t i = 0; i < cl->n; i++) wd_row_destroy(t->schema, cl->rows[i]);
  cl->n = 0;
}

void wd_changelog_free(const wd_table_t *t, wd_changelog_t *cl) {
  wd_changelog_reset(t, cl);
  free(cl->rows);
  cl->rows = NULL;
  cl->cap = 0;
  wd_buf_free(&cl->keys);
}

/* Appends a view of row with kind (wd_row_view: it shares row, no copy); 0 or -1 on no memory. */
static int cl_push(wd_changelog_t *cl, wd_row_t *row, wd_row_kind_t kind) {
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? cl->cap * 2 : 16;
    wd_row_t **rows = realloc(cl->rows, cap * sizeof(*rows));
    if (!rows) return -1;
    cl->rows = rows;
    cl->cap = cap;
  }
  wd_row_t *view = wd_row_view(row, kind);
  if (!view) return -1;
  cl->rows[cl->n++] = view;
  return 0;
}

/* Appends *row (moved: *row becomes NULL) with kind; 0 or -1 on no memory (*row unchanged). */
static int cl_push_move(wd_changelog_t *cl, wd_row_t **row, wd_row_kind_t kind) {
  if ((*row)->shares || (*row)->base) return cl_push(cl, *row, kind); /* shared: its kind is not ours to set */
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? cl->cap * 2 : 16;
    wd_row_t **rows = realloc(cl->rows, cap * sizeof(*rows));
    if (!rows) return -1;
    cl->rows = rows;
    cl->cap = cap;
  }
  (*row)->kind = kind;
  cl->rows[cl->n++] = *row;
  *row = NULL;
  return 0;
}

/* rec with its absent columns (wd_row_t.absent) filled from the key's current entry e (a row,
 * or a tombstone's ordering columns); NULL on no memory. The new row borrows every value from rec
 * and e (valid while both are; no copy) and has no absent flags; with an absent entry the absent
 * columns stay NULL. */
static wd_row_t *complete_from_entry(const wd_table_t *t, const wd_entry_t *e, const wd_row_t *rec) {
  wd_row_t *r = wd_row_new(t->schema);
  if (!r) return NULL;
  r->kind = rec->kind;
  bool from_e = e->state != WD_ENTRY_ABSENT && e->row;
  for (size_t c = 0; c < t->schema->ncols; c++)
    if (!rec->absent[c]) r->v[c] = rec->v[c];
    else if (from_e) r->v[c] = e->row->v[c];
  return r;
}

/* Frees a row of complete_from_entry (its values are not its own). */
static void forget_completed(const wd_table_t *t, wd_row_t *r) {
  if (!r) return;
  for (size_t c = 0; c < r->n; c++) {
    memset(&r->v[c], 0, sizeof(wd_value_t));
    r->v[c].is_null = true;
  }
  wd_row_destroy(t->schema, r);
}

/* Whether rec is an -U that carries only its key (an update whose source sent no before image:
 * every other value absent or NULL), and the table has no use for it: only aggregation and
 * partial-update with sequence groups retract values; for the other engines the +U that follows
 * in the message gives the same result alone, and a synthetic -U must not be refused
 * (E_PU_DELETE_NOT_ACCEPTED, E_FIRST_ROW_RETRACT) or counted as dropped. */
static bool skip_key_only_update_before(const wd_table_t *t, const wd_row_t *rec) {
  if (rec->kind != WD_UPDATE_BEFORE || !rec->absent) return false;
  bool retracts = !t->ignore_delete && !t->ignore_update_before &&
                  (t->engine == WD_ENGINE_AGGREGATION || (t->engine == WD_ENGINE_PARTIAL_UPDATE && t->ngroups > 0));
  if (retracts) return false;
  for (size_t c = 0; c < t->schema->ncols; c++)
    if (!wd_schema_is_pk(t->schema, (int)c) && !rec->absent[c] && !rec->v[c].is_null) return false;
  return true;
}

/* One key touched by a message: its key bytes, entry before and working entry. before is
 * borrowed from the state when the ops lend it; cur starts as an alias of before (borrowed, no
 * copy) and owns each new entry the merge builds. */
typedef struct {
  size_t koff, klen; /* the key bytes in the message's key buffer */
  wd_entry_t before;
  wd_entry_t cur;
  bool touched;
  bool retracted; /* a retraction (-U/-D) of the key came earlier in the message, before any add */
  bool added; /* an add (+I/+U) of the key came earlier in the message */
} wd_touched_t;

wd_error_t *wd_message_apply(const wd_table_t *t, const wd_state_ops_t *ops, void *ctx, wd_row_t *const *recs, size_t n,
                             wd_changelog_t *out, wd_merge_stats_t *stats) {
  const wd_schema_t *s = t->schema;
  wd_error_t *err = NULL;
  wd_touched_t small[4];
  wd_touched_t *keys = n <= 4 ? small : calloc(n, sizeof(*keys));
  size_t nkeys = 0;
  size_t cl_start = out->n;
  wd_merge_stats_t local = {0};
  wd_entry_t *undo = NULL; /* entries before the message, to put back (several keys only) */
  if (!keys) return wd_error_nomem();
  memset(keys, 0, (n <= 4 ? 4 : n) * sizeof(*keys));
  /* the message's keys, back to back, in the changelog's scratch (taken out while in use: a
   * message applied from within this one's ops gets a buffer of its own) */
  wd_buf_t kb = out->keys;
  out->keys = (wd_buf_t){0};
  kb.len = 0;

  for (size_t i = 0; i < n; i++) {
    size_t koff = kb.len;
    if (wd_row_key_encode(s, recs[i], &kb)) {
      err = wd_error_nomem();
      goto done;
    }
    size_t klen = kb.len - koff;
    size_t k = 0;
    while (k < nkeys && !(keys[k].klen == klen && memcmp(kb.data + keys[k].koff, kb.data + koff, klen) == 0)) k++;
    if (k < nkeys) {
      kb.len = koff; /* seen: its bytes are there already */
    } else {
      keys[k].koff = koff;
      keys[k].klen = klen;
      nkeys++;
      if ((err = ops->get(ctx, kb.data + koff, klen, &keys[k].before))) goto done;
      keys[k].cur = keys[k].before;
      keys[k].cur.borrowed = true; /* an alias of before until the merge builds a new entry */
    }
    bool dropped = false, changed = false;
    if (skip_key_only_update_before(t, recs[i])) continue;
    /* absent columns are the row's as the message's earlier records left it, except an add
     * record's after a retraction of its key in the message (an update's -U, key-only when the
     * source sent no before image, then its +U without a column the change did not carry:
     * Debezium's TOAST placeholder): the row's before the message, not the retracted one */
    bool from_before = keys[k].retracted && wd_row_kind_is_add(recs[i]->kind);
    wd_row_t *filled =
        recs[i]->absent ? complete_from_entry(t, from_before ? &keys[k].before : &keys[k].cur, recs[i]) : NULL;
    /* only a retraction of the row as it was before the message (no add of the key before it) */
    if (!wd_row_kind_is_add(recs[i]->kind) && !keys[k].added) keys[k].retracted = true;
    if (wd_row_kind_is_add(recs[i]->kind)) keys[k].added = true;
    if (recs[i]->absent && !filled) {
      err = wd_error_nomem();
      goto done;
    }
    wd_entry_t ne;
    err = merge_step(t, &keys[k].cur, filled ? filled : recs[i], &dropped, &local, &ne, &changed);
    forget_completed(t, filled);
    if (err) {
      err->index = (int)i;
      goto done;
    }
    if (changed) {
      wd_entry_release(t, &keys[k].cur);
      keys[k].cur = ne;
    }
    keys[k].touched |= !dropped; /* dropped records touch no key (§10.1) */
  }

  /* A message that touches several keys (an update changing the primary key) keeps a copy of
   * their entries before it, so that a failed put of a later key can put the earlier ones back
   * (merge.h: a failed message puts nothing). One key needs none: its put is all or nothing. */
  size_t ntouched = 0;
  for (size_t k = 0; k < nkeys; k++) ntouched += keys[k].touched;
  if (ntouched > 1) {
    if (!(undo = calloc(nkeys, sizeof(*undo)))) {
      err = wd_error_nomem();
      goto done;
    }
    for (size_t k = 0; k < nkeys; k++) {
      if (!keys[k].touched || keys[k].before.state == WD_ENTRY_ABSENT) continue;
      undo[k].state = keys[k].before.state;
      if (keys[k].before.row) undo[k].row = wd_row_share(keys[k].before.row); /* kept alive, not copied */
    }
  }
  /* diff per key, in order of first touch (§10 table). The changelog refers to the rows before
   * and after (views sharing them, no copies): a borrowed before row is shared (the state keeps it
   * alive as long as the changelog does), an owned one moves in (freed at the end otherwise); the
   * after row is shared with the entry put. */
  for (size_t k = 0; k < nkeys; k++) {
    if (!keys[k].touched) continue;
    wd_entry_t *b = &keys[k].before;
    const wd_entry_t *a = &keys[k].cur;
    bool b_row = b->state == WD_ENTRY_ROW, a_row = a->state == WD_ENTRY_ROW;
    int rc = 0;
    if (!b_row && a_row) {
      rc = cl_push(out, a->row, t->engine == WD_ENGINE_FIRST_ROW ? a->row->kind : WD_INSERT);
    } else if (b_row && !a_row) {
      rc = b->borrowed ? cl_push(out, b->row, WD_DELETE) : cl_push_move(out, &b->row, WD_DELETE);
    } else if (b_row && a_row) {
      if (!(t->row_dedup && wd_row_eq(s, b->row, a->row, t->row_dedup_ignore)))
        rc = (b->borrowed ? cl_push(out, b->row, WD_UPDATE_BEFORE) : cl_push_move(out, &b->row, WD_UPDATE_BEFORE)) ||
             cl_push(out, a->row, WD_UPDATE_AFTER);
    }
    if (rc) {
      err = wd_error_nomem();
      goto done;
    }
  }
  for (size_t k = 0; k < nkeys; k++) {
    if (!keys[k].touched) continue;
    if (keys[k].cur.borrowed) { /* cannot happen (a record that touches a key builds its entry): own it */
      if (keys[k].cur.row) wd_row_share(keys[k].cur.row);
      keys[k].cur.borrowed = false;
    }
    if ((err = ops->put(ctx, kb.data + keys[k].koff, keys[k].klen, &keys[k].cur))) {
      for (size_t j = 0; j < k && undo; j++) { /* put the earlier keys' entries back */
        if (!keys[j].touched) continue;
        wd_error_t *e2 = ops->put(ctx, kb.data + keys[j].koff, keys[j].klen, &undo[j]);
        if (e2) {
          err = wd_error_wrap(err, "putting back the entry of an earlier key of the message failed too (%s)",
                              e2->message);
          if (err != wd_error_nomem()) err->fatal = true; /* the state may now hold half of the message */
          wd_error_destroy(e2);
        }
      }
      goto done;
    }
  }
  if (stats) {
    stats->dropped += local.dropped;
    stats->ignored_update_before += local.ignored_update_before;
    stats->tombstones += local.tombstones;
    /* only the slots of the table's groups are counted in (the last one holds those beyond) */
    for (size_t g = 0; g < WD_MERGE_STATS_GROUPS && g < t->ngroups; g++)
      stats->older_in_group[g] += local.older_in_group[g];
    stats->older_by_sequence_field += local.older_by_sequence_field;
  }
done:
  if (err) {
    while (out->n > cl_start) wd_row_destroy(s, out->rows[--out->n]);
  }
  for (size_t k = 0; k < nkeys; k++) {
    wd_entry_release(t, &keys[k].before);
    wd_entry_release(t, &keys[k].cur);
    if (undo) wd_entry_clear(t, &undo[k]);
  }
  free(undo);
  if (keys != small) free(keys);
  kb.len = 0;
  if (!out->keys.data) out->keys = kb; /* kept for the next message */
  else wd_buf_free(&kb);
  return err;
}
