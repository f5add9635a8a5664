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

/* The merge state of §7: working row, flags. */
typedef struct {
  wd_row_t *w;
  bool insert_seen;
  bool removal;     /* the last applied record requested whole-row removal */
  bool started;     /* a record has been applied (the first one initialises W) */
  bool *seen;       /* per column, aggregate "first in this merge" flags */
} wd_mstate_t;

void wd_entry_clear(const wd_table_t *t, wd_entry_t *e) {
  wd_row_destroy(t->schema, e->row);
  e->row = NULL;
  e->state = WD_ENTRY_ABSENT;
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

static int set_value(const wd_table_t *t, wd_row_t *w, int c, const wd_value_t *v) {
  const wd_type_t *ty = t->schema->cols[c].type;
  wd_value_clear(ty, &w->v[c]);
  return wd_value_copy(ty, &w->v[c], v);
}

static void null_value(const wd_table_t *t, wd_row_t *w, int c) { wd_value_clear(t->schema->cols[c].type, &w->v[c]); }

/* W takes only the key and ordering columns of a retraction (§7, D8). */
static int take_ordering(const wd_table_t *t, wd_row_t *w, const wd_row_t *r) {
  for (size_t c = 0; c < t->schema->ncols; c++)
    if (t->ordering_col[c] && set_value(t, w, (int)c, &r->v[c])) return -1;
  return 0;
}

static int take_key(const wd_table_t *t, wd_row_t *w, const wd_row_t *r) {
  for (size_t k = 0; k < t->schema->npk; k++)
    if (set_value(t, w, t->schema->pk[k], &r->v[t->schema->pk[k]])) return -1;
  return 0;
}

/* Empties the working row and the aggregates' "first in this merge" flags (D1). */
static void reset_working(const wd_table_t *t, wd_mstate_t *m) {
  wd_row_clear(t->schema, m->w);
  memset(m->seen, 0, t->schema->ncols * sizeof(bool));
}

/* ---- partial-update (§7) -------------------------------------------------------------- */

static wd_error_t *pu_add(const wd_table_t *t, wd_mstate_t *m, const wd_mrec_t *x, wd_merge_stats_t *stats) {
  const wd_schema_t *s = t->schema;
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
        err = newer ? wd_agg_add(a, &w->v[c], &r->v[c], &m->seen[c]) : wd_agg_add_older(a, &w->v[c], &r->v[c], &m->seen[c]);
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
  for (size_t c = 0; c < s->ncols; c++) {
    if (t->group_of[c] >= 0 || t->seq_group_of[c] >= 0 || wd_schema_is_pk(s, (int)c)) continue;
    if (!r->v[c].is_null && set_value(t, w, (int)c, &r->v[c])) return wd_error_nomem();
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
      return wd_error_new(WD_ERR_RECORD, "E_PU_DELETE_NOT_ACCEPTED",
                          "partial-update table received a %s record; to accept retractions configure "
                          "'ignore-delete', 'partial-update.remove-record-on-delete', or sequence groups with "
                          "optional 'partial-update.remove-record-on-sequence-group'",
                          wd_row_kind_str(x->kind));
    if (x->kind == WD_DELETE)
      m->removal = true;
    else if (!x->tombstone && stats)
      stats->ignored_update_before++;
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
    if (is_retract(x->kind))
      err = wd_agg_retract(a, &w->v[c], &r->v[c]);
    else
      err = wd_agg_add(a, &w->v[c], &r->v[c], &m->seen[c]);
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
      return wd_error_new(WD_ERR_RECORD, "E_NOT_NULL", "column '%s' is NOT NULL but the %s record carries NULL",
                          t->schema->cols[c].name, wd_row_kind_str(r->kind));
  return NULL;
}

/* Builds the tombstone row (key + ordering columns of src, D7) with the given kind. */
static wd_row_t *make_tombstone(const wd_table_t *t, const wd_row_t *src, wd_row_kind_t kind) {
  wd_row_t *tb = wd_row_new(t->schema);
  if (!tb) return NULL;
  if (take_ordering(t, tb, src)) {
    wd_row_destroy(t->schema, tb);
    return NULL;
  }
  tb->kind = kind;
  return tb;
}

wd_error_t *wd_merge_apply(const wd_table_t *t, wd_entry_t *e, const wd_row_t *rec, bool *dropped,
                           wd_merge_stats_t *stats) {
  const wd_schema_t *s = t->schema;
  wd_error_t *err = NULL;
  wd_mstate_t m = {0};
  bool seen_small[64]; /* the aggregate flags without an allocation for up to 64 columns */
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
      return wd_error_new(WD_ERR_RECORD, "E_FIRST_ROW_RETRACT",
                          "first-row table received a %s record; first-row accepts only inserts (set "
                          "'ignore-delete' to drop retractions)",
                          wd_row_kind_str(rec->kind));
    if (e->state == WD_ENTRY_ROW) {
      if (dropped) *dropped = true;
      if (stats) stats->dropped++;
      return NULL;
    }
    if ((err = check_not_null(t, rec))) return err;
    wd_row_t *row = wd_row_copy(s, rec);
    if (!row) return wd_error_nomem();
    wd_entry_clear(t, e);
    e->state = WD_ENTRY_ROW;
    e->row = row;
    return NULL;
  }
  if (t->engine == WD_ENGINE_DEDUPLICATE && wd_row_kind_is_add(rec->kind) && (err = check_not_null(t, rec)))
    return err;

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
  wd_row_t *result = NULL;      /* the new row, or NULL for a removal */
  const wd_row_t *removal_src = NULL;
  bool any_delete = false;
  for (size_t i = 0; i < n; i++) any_delete |= list[i].kind == WD_DELETE;

  if (t->engine == WD_ENGINE_DEDUPLICATE) {
    /* §5: the last record in merge order, as a whole row */
    const wd_mrec_t *last = &list[n - 1];
    if (is_retract(last->kind)) {
      removal_src = last->row;
    } else {
      if (!(result = wd_row_copy(s, last->row))) return wd_error_nomem();
    }
  } else {
    m.w = wd_row_new(s);
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
    } else {
      result = m.w;
      m.w = NULL;
      result->kind = WD_INSERT;
    }
  }

  /* 5-6. new entry */
  if (result) {
    result->kind = WD_INSERT;
    wd_entry_clear(t, e);
    e->state = WD_ENTRY_ROW;
    e->row = result;
  } else if (t->has_ordering) {
    wd_row_t *tb = make_tombstone(t, removal_src, any_delete ? WD_DELETE : WD_UPDATE_BEFORE);
    if (!tb) {
      err = wd_error_nomem();
      goto done;
    }
    wd_entry_clear(t, e);
    e->state = WD_ENTRY_TOMBSTONE;
    e->row = tb;
    if (stats) stats->tombstones++;
  } else {
    wd_entry_clear(t, e);
  }
done:
  wd_row_destroy(s, m.w);
  if (m.seen != seen_small) free(m.seen);
  return err;
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
}

/* Appends a copy of row with kind; 0 or -1 on no memory. */
static int cl_push(const wd_table_t *t, wd_changelog_t *cl, const wd_row_t *row, wd_row_kind_t kind) {
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? cl->cap * 2 : 16;
    wd_row_t **rows = realloc(cl->rows, cap * sizeof(*rows));
    if (!rows) return -1;
    cl->rows = rows;
    cl->cap = cap;
  }
  wd_row_t *copy = wd_row_copy(t->schema, row);
  if (!copy) return -1;
  copy->kind = kind;
  cl->rows[cl->n++] = copy;
  return 0;
}

/* Appends *row (moved: *row becomes NULL) with kind; 0 or -1 on no memory (*row unchanged). */
static int cl_push_move(wd_changelog_t *cl, wd_row_t **row, wd_row_kind_t kind) {
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

/* A copy of rec whose absent columns (wd_row_t.absent) are filled from the key's current entry
 * e (a row, or a tombstone's ordering columns); NULL on no memory. The copy has no absent
 * flags; with an absent entry the absent columns stay NULL. */
static wd_row_t *complete_from_entry(const wd_table_t *t, const wd_entry_t *e, const wd_row_t *rec) {
  wd_row_t *r = wd_row_copy(t->schema, rec);
  if (!r || e->state == WD_ENTRY_ABSENT || !e->row) return r;
  for (size_t c = 0; c < t->schema->ncols; c++)
    if (rec->absent[c] && set_value(t, r, (int)c, &e->row->v[c])) {
      wd_row_destroy(t->schema, r);
      return NULL;
    }
  return r;
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

/* One key touched by a message: its key bytes, entry before and working entry. */
typedef struct {
  wd_buf_t key;
  wd_entry_t before;
  wd_entry_t cur;
  bool touched;
} wd_touched_t;

wd_error_t *wd_message_apply(const wd_table_t *t, const wd_state_ops_t *ops, void *ctx, wd_row_t *const *recs,
                             size_t n, wd_changelog_t *out, wd_merge_stats_t *stats) {
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
  wd_buf_t kb = {0};

  for (size_t i = 0; i < n; i++) {
    wd_buf_reset(&kb);
    if (wd_row_key_encode(s, recs[i], &kb)) {
      err = wd_error_nomem();
      goto done;
    }
    size_t k = 0;
    while (k < nkeys && !(keys[k].key.len == kb.len && memcmp(keys[k].key.data, kb.data, kb.len) == 0)) k++;
    if (k == nkeys) {
      if (wd_buf_append(&keys[k].key, kb.data, kb.len)) {
        err = wd_error_nomem();
        goto done;
      }
      nkeys++;
      if ((err = ops->get(ctx, kb.data, kb.len, &keys[k].before))) goto done;
      if (keys[k].before.state != WD_ENTRY_ABSENT) {
        keys[k].cur.state = keys[k].before.state;
        if (!(keys[k].cur.row = wd_row_copy(s, keys[k].before.row))) {
          err = wd_error_nomem();
          goto done;
        }
      }
    }
    bool dropped = false;
    if (skip_key_only_update_before(t, recs[i])) continue;
    wd_row_t *filled = recs[i]->absent ? complete_from_entry(t, &keys[k].cur, recs[i]) : NULL;
    if (recs[i]->absent && !filled) {
      err = wd_error_nomem();
      goto done;
    }
    err = wd_merge_apply(t, &keys[k].cur, filled ? filled : recs[i], &dropped, &local);
    wd_row_destroy(s, filled);
    if (err) {
      err->index = (int)i;
      goto done;
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
      if (keys[k].before.row && !(undo[k].row = wd_row_copy(s, keys[k].before.row))) {
        err = wd_error_nomem();
        goto done;
      }
    }
  }
  /* diff per key, in order of first touch (§10 table) */
  for (size_t k = 0; k < nkeys; k++) {
    if (!keys[k].touched) continue;
    wd_entry_t *b = &keys[k].before; /* its row moves into the changelog (freed at the end otherwise) */
    const wd_entry_t *a = &keys[k].cur;
    bool b_row = b->state == WD_ENTRY_ROW, a_row = a->state == WD_ENTRY_ROW;
    int rc = 0;
    if (!b_row && a_row) {
      rc = cl_push(t, out, a->row, t->engine == WD_ENGINE_FIRST_ROW ? a->row->kind : WD_INSERT);
    } else if (b_row && !a_row) {
      rc = cl_push_move(out, &b->row, WD_DELETE);
    } else if (b_row && a_row) {
      if (!(t->row_dedup && wd_row_eq(s, b->row, a->row, t->row_dedup_ignore)))
        rc = cl_push_move(out, &b->row, WD_UPDATE_BEFORE) || cl_push(t, out, a->row, WD_UPDATE_AFTER);
    }
    if (rc) {
      err = wd_error_nomem();
      goto done;
    }
  }
  for (size_t k = 0; k < nkeys; k++)
    if (keys[k].touched && (err = ops->put(ctx, keys[k].key.data, keys[k].key.len, &keys[k].cur))) {
      for (size_t j = 0; j < k && undo; j++) { /* put the earlier keys' entries back */
        if (!keys[j].touched) continue;
        wd_error_t *e2 = ops->put(ctx, keys[j].key.data, keys[j].key.len, &undo[j]);
        if (e2) {
          err = wd_error_wrap(err, "putting back the entry of an earlier key of the message failed too (%s)",
                              e2->message);
          if (err != wd_error_nomem()) err->fatal = true; /* the state may now hold half of the message */
          wd_error_destroy(e2);
        }
      }
      goto done;
    }
  if (stats) {
    stats->dropped += local.dropped;
    stats->ignored_update_before += local.ignored_update_before;
    stats->tombstones += local.tombstones;
    for (size_t g = 0; g < WD_MERGE_STATS_GROUPS; g++) stats->older_in_group[g] += local.older_in_group[g];
    stats->older_by_sequence_field += local.older_by_sequence_field;
  }
done:
  if (err) {
    while (out->n > cl_start) wd_row_destroy(s, out->rows[--out->n]);
  }
  for (size_t k = 0; k < nkeys; k++) {
    wd_buf_free(&keys[k].key);
    wd_entry_clear(t, &keys[k].before);
    wd_entry_clear(t, &keys[k].cur);
    if (undo) wd_entry_clear(t, &undo[k]);
  }
  free(undo);
  if (keys != small) free(keys);
  wd_buf_free(&kb);
  return err;
}
