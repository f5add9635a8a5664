/*
 * app/runtime/lookups.c — the join layer as `widen run`'s loop uses it (see lookups.h).
 */
#include "app/runtime/lookups.h"

#include <stdlib.h>
#include <string.h>

#include "app/config/join_config.h"
#include "common/log.h"

struct wd_lookups {
  wd_join_t *join;
  int *ids; /* per source: its id in the join */
  wd_changes_t *changes; /* per source (lookups only): the decoder's target */
  size_t nsources;
  wd_row_t **recs; /* the batch's lookup rows */
  const wd_schema_t **schemas; /* ... and the schema of each */
  size_t n, cap;
  /* sources with their own primary key (join/srckey.h) */
  wd_srckey_t *sk;
  int *skids; /* per source: its id in sk, or -1 */
  const wd_schema_t *ws; /* the wide schema */
  wd_changes_t *out; /* wd_lookups_normalise's target while it runs */
};

/* Rebuilds every source with its own `primary-key` against its source schema (join/srckey.h). */
static wd_error_t *build_srckeys(wd_lookups_t *lk, const wd_config_t *cfg, const wd_table_t *t, wd_source_t **sources) {
  const wd_schema_t *ws = wd_table_schema(t);
  wd_error_t *err = wd_srckey_new(t, &lk->sk);
  bool *mapped = calloc(ws->ncols + 1, sizeof(bool));
  if (!err && !mapped) err = wd_error_nomem();
  for (size_t i = 0; !err && i < cfg->sources.n; i++) {
    const wd_config_source_t *cs = &cfg->sources.v[i];
    lk->skids[i] = -1;
    if (cs->lookup || !cs->primary_key.n) continue;
    memset(mapped, 0, ws->ncols * sizeof(bool));
    for (size_t k = 0; k < sources[i]->ncols; k++) mapped[sources[i]->cols[k].col] = true;
    char **names = calloc(cs->primary_key.n + 1, sizeof(*names));
    for (size_t k = 0; names && k < cs->primary_key.n; k++) {
      char buf[320];
      wd_config_source_key_name(cs, k, buf, sizeof(buf));
      if (!(names[k] = strdup(buf))) break;
    }
    if (!names || (cs->primary_key.n && !names[cs->primary_key.n - 1])) err = wd_error_nomem();
    if (!err) {
      err = wd_srckey_add(lk->sk, cs->name, (const char *const *)names, cs->primary_key.n, mapped, &lk->skids[i]);
      if (err) err = wd_error_wrap(err, "%s:%d", cfg->path, cs->line);
    }
    for (size_t k = 0; names && k < cs->primary_key.n; k++) free(names[k]);
    free(names);
    if (err) break;
    wd_source_destroy(sources[i]);
    sources[i] = NULL;
    const wd_schema_t *ss = wd_srckey_schema(lk->sk, lk->skids[i]);
    if ((err = wd_config_build_source(cfg, i, ss, &sources[i]))) break;
    for (size_t k = 0; k < sources[i]->ncols; k++)
      wd_srckey_set_event_col(lk->sk, lk->skids[i], sources[i]->cols[k].col, sources[i]->cols[k].kind != WD_MAP_IMAGE);
    wd_log(WD_LOG_INFO, "pipeline",
           "source '%s': kept by its own primary key (%zu field%s); deletes, updates and "
           "moves derived from its stored rows",
           cs->name, cs->primary_key.n, cs->primary_key.n == 1 ? "" : "s");
  }
  free(mapped);
  return err;
}

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
  lk->ws = wd_table_schema(t);
  wd_error_t *err = wd_config_build_join(cfg, t, sources, lk->ids, &lk->join);
  if (!err && !(lk->skids = calloc(cfg->sources.n + 1, sizeof(int)))) err = wd_error_nomem();
  if (!err) err = build_srckeys(lk, cfg, t, sources);
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
  /* the decode buffers' rows are of the schemas the join and the source-key layer own */
  for (size_t i = 0; lk->changes && i < lk->nsources; i++) wd_changes_free(&lk->changes[i]);
  wd_join_destroy(lk->join);
  wd_srckey_destroy(lk->sk);
  free(lk->skids);
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

/* ---- sources with their own primary key ------------------------------------------------------ */

wd_srckey_t *wd_lookups_srckey(const wd_lookups_t *lk) { return lk->sk; }

bool wd_lookups_has_key(const wd_lookups_t *lk, int si) {
  return si >= 0 && (size_t)si < lk->nsources && lk->skids && lk->skids[si] >= 0;
}

wd_changes_t *wd_lookups_key_changes(wd_lookups_t *lk, int si) { return &lk->changes[si]; }

const wd_schema_t *wd_lookups_key_schema(const wd_lookups_t *lk, int si) {
  return wd_srckey_schema(lk->sk, lk->skids[si]);
}

static wd_row_t *add_change(void *ctx, wd_row_kind_t kind) {
  wd_lookups_t *lk = ctx;
  return wd_changes_add(lk->out, lk->ws, kind);
}

wd_error_t *wd_lookups_normalise(wd_lookups_t *lk, int si, uint32_t task, wd_changes_t *out) {
  wd_changes_t *in = &lk->changes[si];
  wd_srckey_set_task(lk->sk, task);
  wd_changes_reset(out);
  /* a key-only before image is what a source's own primary key is for: nothing to warn of */
  out->flags = in->flags & ~WD_CHANGES_KEY_ONLY_BEFORE;
  out->op = in->op;
  out->ts_ms = in->ts_ms;
  out->null_key_halves = in->null_key_halves;
  if (in->flags & WD_CHANGES_TOMBSTONE || !in->count) return NULL;
  lk->out = out;
  unsigned nk = 0;
  wd_error_t *err = wd_srckey_apply(lk->sk, lk->skids[si], in->rows, in->count, add_change, lk, &nk);
  lk->out = NULL;
  out->null_key_halves += nk;
  if (err) wd_changes_reset(out);
  return err;
}

wd_error_t *wd_lookups_check_partitions(const wd_lookups_t *lk, const wd_config_t *cfg,
                                        const wd_repartition_input_t *in, size_t n, int32_t partitions) {
  for (size_t i = 0; i < n && i < cfg->sources.n; i++) {
    if (!wd_lookups_has_key(lk, (int)i)) continue;
    const wd_config_source_t *cs = &cfg->sources.v[i];
    if (cs->repartition == WD_CONFIG_REPARTITION_FALSE)
      return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEY_PER_PARTITION,
                          "%s:%d: source '%s' has its own `primary-key` and says `repartition: false`; its derived "
                          "records always go through its repartition topic under per-partition tasks: remove "
                          "`repartition: false`",
                          cfg->path, cs->line, cs->name);
    for (size_t k = 0; k < in[i].ntopics; k++)
      if (in[i].counts[k] != partitions)
        return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEY_PER_PARTITION,
                            "%s:%d: source '%s' has its own `primary-key`: its partition i is the input of task i "
                            "(whose state keeps its source rows), but topic %s has %d partitions and the table %d; "
                            "give the topic %d partitions, or set pipeline.partitions: %d (or pipeline.tasks: single)",
                            cfg->path, cs->line, cs->name, in[i].topics[k], in[i].counts[k], (int)partitions,
                            (int)partitions, in[i].counts[k]);
  }
  return NULL;
}

bool wd_lookups_global(const wd_lookups_t *lk, size_t nsources, bool per_partition, bool replay) {
  bool any = false;
  for (size_t i = 0; i < nsources; i++) any = any || wd_lookups_is_lookup(lk, (int)i);
  if (per_partition && !replay) return any;
  if (wd_lookups_active(lk) && !replay && any)
    wd_log(WD_LOG_INFO, "pipeline",
           "lookup sources are read through the consumer group: run one process for "
           "this table (docs/lookups.md)");
  return false;
}
