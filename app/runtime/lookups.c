/*
 * app/runtime/lookups.c — the join layer as `widen run`'s loop uses it (see lookups.h).
 */
#include "app/runtime/lookups.h"

#include <stdlib.h>

#include "app/config/join_config.h"

struct wd_lookups {
  wd_join_t *join;
  int *ids;               /* per source: its id in the join */
  wd_changes_t *changes;  /* per source (lookups only): the decoder's target */
  size_t nsources;
  wd_row_t **recs;        /* the batch's lookup rows */
  const wd_schema_t **schemas; /* ... and the schema of each */
  size_t n, cap;
};

wd_error_t *wd_lookups_new(const wd_config_t *cfg, wd_table_t *t, wd_source_t **sources, wd_lookups_t **out) {
  *out = NULL;
  wd_lookups_t *lk = calloc(1, sizeof(*lk));
  if (!lk) return wd_error_nomem();
  lk->nsources = cfg->sources.n;
  lk->ids = calloc(cfg->sources.n + 1, sizeof(*lk->ids));
  lk->changes = calloc(cfg->sources.n + 1, sizeof(*lk->changes));
  if (!lk->ids || !lk->changes) {
    wd_lookups_destroy(lk);
    return wd_error_nomem();
  }
  for (size_t i = 0; i < cfg->sources.n; i++) wd_changes_init(&lk->changes[i]);
  wd_error_t *err = wd_config_build_join(cfg, t, sources, lk->ids, &lk->join);
  if (err) {
    wd_lookups_destroy(lk);
    return err;
  }
  *out = lk;
  return NULL;
}

void wd_lookups_destroy(wd_lookups_t *lk) {
  if (!lk) return;
  wd_lookups_batch_done(lk);
  wd_join_destroy(lk->join);
  for (size_t i = 0; lk->changes && i < lk->nsources; i++) wd_changes_free(&lk->changes[i]);
  free(lk->changes);
  free(lk->ids);
  free(lk->recs);
  free(lk->schemas);
  free(lk);
}

wd_join_t *wd_lookups_join(const wd_lookups_t *lk) { return lk->join; }

bool wd_lookups_active(const wd_lookups_t *lk) { return lk->join && wd_join_active(lk->join); }

bool wd_lookups_is_lookup(const wd_lookups_t *lk, int si) {
  return si >= 0 && (size_t)si < lk->nsources && lk->join && wd_join_is_lookup(lk->join, lk->ids[si]);
}

wd_changes_t *wd_lookups_changes(wd_lookups_t *lk, int si) { return &lk->changes[si]; }

const wd_schema_t *wd_lookups_schema(const wd_lookups_t *lk, int si) {
  return wd_join_source_schema(lk->join, lk->ids[si]);
}

wd_error_t *wd_lookups_take(wd_lookups_t *lk, int si, size_t *first, size_t *count) {
  const wd_schema_t *schema = wd_lookups_schema(lk, si);
  wd_changes_t *ch = &lk->changes[si];
  *first = lk->n;
  *count = 0;
  for (size_t k = 0; k < ch->count; k++) {
    if (lk->n == lk->cap) {
      size_t cap = lk->cap ? lk->cap * 2 : 256;
      wd_row_t **r = realloc(lk->recs, cap * sizeof(*r));
      if (r) lk->recs = r;
      const wd_schema_t **sc = realloc(lk->schemas, cap * sizeof(*sc));
      if (sc) lk->schemas = sc;
      if (!r || !sc) return wd_error_nomem();
      lk->cap = cap;
    }
    wd_row_t *row = wd_changes_take(ch, k);
    if (!row) return wd_error_nomem();
    lk->schemas[lk->n] = schema;
    lk->recs[lk->n++] = row;
    (*count)++;
  }
  return NULL;
}

const wd_row_t *wd_lookups_row(const wd_lookups_t *lk, size_t i) { return lk->recs[i]; }

const wd_schema_t *wd_lookups_row_schema(const wd_lookups_t *lk, size_t i) { return lk->schemas[i]; }

void wd_lookups_batch_done(wd_lookups_t *lk) {
  for (size_t i = 0; i < lk->n; i++) wd_row_destroy(lk->schemas[i], lk->recs[i]);
  lk->n = 0;
}

void wd_lookups_set_task(wd_lookups_t *lk, uint32_t task) {
  if (lk->join) wd_join_set_task(lk->join, task);
}

wd_error_t *wd_lookups_apply(wd_lookups_t *lk, int si, bool lookup, wd_row_t *const *main_recs, size_t first,
                             size_t count, const wd_table_t *t, const wd_state_ops_t *ops, void *state,
                             wd_changelog_t *out, wd_merge_stats_t *stats) {
  if (!wd_lookups_active(lk) || si < 0) return wd_message_apply(t, ops, state, main_recs + first, count, out, stats);
  wd_row_t *const *recs = lookup ? lk->recs + first : main_recs + first;
  return wd_join_apply(lk->join, lk->ids[si], recs, count, out, stats);
}
