/*
 * app/config/interleaving.c — options that make results depend on the interleaving of streams (see
 * interleaving.h).
 */
#include "app/config/interleaving.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  char **v;
  int n, cap;
  int oom;
} wlist_t;

static void add(wlist_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(wlist_t *w, const char *fmt, ...) {
  if (w->oom) return;
  if (w->n + 1 >= w->cap) {
    int cap = w->cap ? w->cap * 2 : 8;
    char **v = realloc(w->v, (size_t)cap * sizeof(*v));
    if (!v) {
      w->oom = 1;
      return;
    }
    w->v = v;
    w->cap = cap;
  }
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) {
    w->oom = 1;
    s = NULL;
  }
  va_end(ap);
  if (!s) return;
  w->v[w->n++] = s;
  w->v[w->n] = NULL;
}

static const wd_config_pair_t *opt(const wd_config_t *cfg, const char *key) {
  for (size_t i = 0; i < cfg->table.options.n; i++)
    if (!strcmp(cfg->table.options.v[i].key, key)) return &cfg->table.options.v[i];
  return NULL;
}

static int is_true(const wd_config_pair_t *p) { return p && p->value && !strcasecmp(p->value, "true"); }

static int is_pk(const wd_config_t *cfg, const char *col) {
  for (size_t i = 0; i < cfg->table.primary_key.n; i++)
    if (!strcmp(cfg->table.primary_key.v[i], col)) return 1;
  return 0;
}

/* How many sources fill column col, and the first two of them. */
static size_t writers(const wd_config_t *cfg, const char *col, const char **a, const char **b) {
  size_t n = 0;
  for (size_t i = 0; i < cfg->sources.n; i++)
    for (size_t k = 0; k < cfg->sources.v[i].columns.n; k++)
      if (!strcmp(cfg->sources.v[i].columns.v[k].key, col)) {
        if (n == 0) *a = cfg->sources.v[i].name;
        if (n == 1) *b = cfg->sources.v[i].name;
        n++;
        break;
      }
  return n;
}

/* Whether col belongs to a sequence group (fields.<seq>.sequence-group lists it, or is it). */
static int in_group(const wd_config_t *cfg, const char *col) {
  for (size_t i = 0; i < cfg->table.options.n; i++) {
    const char *k = cfg->table.options.v[i].key, *v = cfg->table.options.v[i].value;
    size_t kl = strlen(k);
    if (strncmp(k, "fields.", 7) || kl < 22 || strcmp(k + kl - 15, ".sequence-group")) continue;
    if (kl - 22 == strlen(col) && !strncmp(k + 7, col, kl - 22)) return 1;
    char *list = strdup(v ? v : "");
    if (!list) return 0;
    int found = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && !found; t = strtok_r(NULL, ",", &save)) {
      while (*t == ' ') t++;
      size_t tl = strlen(t);
      while (tl && t[tl - 1] == ' ') t[--tl] = 0;
      found = !strcmp(t, col);
    }
    free(list);
    if (found) return 1;
  }
  return 0;
}

/* Aggregate functions whose result depends on the order of their inputs. */
static int order_sensitive(const char *fn) {
  static const char *const F[] = {"last_value", "last_non_null_value", "first_value",           "first_non_null_value",
                                  "listagg",    "nested_update",       "nested_partial_update", "merge_map",
                                  NULL};
  for (int i = 0; F[i]; i++)
    if (fn && !strcmp(fn, F[i])) return 1;
  return 0;
}

int wd_interleaving_warnings(const wd_config_t *cfg, char ***out) {
  wlist_t w = {0};
  *out = NULL;
  size_t nmain = 0; /* lookup sources are joined by their own key, never merged into the row */
  for (size_t i = 0; i < cfg->sources.n; i++) nmain += !cfg->sources.v[i].lookup;
  if (nmain < 2) return 0;
  const wd_config_pair_t *engine = opt(cfg, "merge-engine");
  const char *e = engine && engine->value ? engine->value : "deduplicate";
  const wd_config_pair_t *p;
  int line = cfg->table.options.line;
  if (!strcmp(e, "partial-update")) {
    if ((p = opt(cfg, "partial-update.remove-record-on-sequence-group")) && p->value && *p->value)
      add(&w,
          "%s:%d: partial-update.remove-record-on-sequence-group: %s couples the streams: a "
          "delete of that group removes the whole row, so the other streams' columns are wiped only if their "
          "records arrived before it",
          cfg->path, p->line, p->value);
    if (is_true(p = opt(cfg, "partial-update.remove-record-on-delete")))
      add(&w,
          "%s:%d: partial-update.remove-record-on-delete: true couples the streams: a delete "
          "from any source removes the whole row, so which other columns survive depends on whether their "
          "records arrived before or after it",
          cfg->path, p->line);
  } else if (!strcmp(e, "aggregation")) {
    if (is_true(p = opt(cfg, "aggregation.remove-record-on-delete")))
      add(&w,
          "%s:%d: aggregation.remove-record-on-delete: true couples the streams: a delete "
          "from any source removes the whole row, so the aggregates of the others depend on whether their "
          "records arrived before or after it",
          cfg->path, p->line);
  } else if (!strcmp(e, "deduplicate") || !strcmp(e, "first-row")) {
    add(&w,
        "%s:%d: merge-engine %s with %zu sources: each record replaces (%s) the whole row, so "
        "which source's row is kept depends on how the topics interleave%s; use partial-update with one "
        "sequence group per stream for a table whose result does not",
        cfg->path, engine ? engine->line : line, e, nmain,
        !strcmp(e, "first-row") ? "or, first-row, is ignored after the first" : "or not",
        !strcmp(e, "deduplicate") && opt(cfg, "sequence.field") ? " when sequence.field values tie" : "");
  }
  /* columns filled by more than one source: the arrival order picks the value, unless a
   * sequence group orders them (partial-update) or the function is order-insensitive */
  for (size_t c = 0; c < cfg->table.schema.n; c++) {
    const char *col = cfg->table.schema.names[c], *a = NULL, *b = NULL;
    if (is_pk(cfg, col) || writers(cfg, col, &a, &b) < 2) continue;
    if (!strcmp(e, "partial-update") && !in_group(cfg, col))
      add(&w,
          "column '%s' is filled by sources '%s' and '%s' without a sequence group: the last to arrive wins, "
          "so its value depends on how the topics interleave (give it a fields.<seq>.sequence-group)",
          col, a, b);
    if (!strcmp(e, "aggregation")) {
      char key[300];
      snprintf(key, sizeof(key), "fields.%s.aggregate-function", col);
      p = opt(cfg, key);
      const wd_config_pair_t *d = opt(cfg, "fields.default-aggregate-function");
      const char *fn = p ? p->value : d ? d->value : "last_non_null_value";
      if (order_sensitive(fn))
        add(&w,
            "column '%s' is filled by sources '%s' and '%s' with the order-sensitive aggregate function %s: "
            "its value depends on how the topics interleave",
            col, a, b, fn);
    }
  }
  if (w.oom) {
    wd_interleaving_free(w.v);
    return -1;
  }
  *out = w.v;
  return w.n;
}

void wd_interleaving_free(char **warnings) {
  if (!warnings) return;
  for (char **p = warnings; *p; p++) free(*p);
  free(warnings);
}

void wd_interleaving_doc(FILE *f) {
  fprintf(f, "\n## Options that make the result depend on the interleaving of streams\n\n"
             "Within one partition widen always applies records in their order; across topics (the streams of one\n"
             "table) the interleaving differs between a live run, a `widen replay` and another process. A table\n"
             "gives the same rows for any interleaving only when every stream's columns are ordered by that stream\n"
             "alone: partial-update with one sequence group per stream (`fields.<seq>.sequence-group`), or\n"
             "order-insensitive aggregate functions. These settings, with two or more sources, make the rows depend\n"
             "on the interleaving; `widen config check` and `widen run` warn about each (spec section 14):\n\n"
             "| setting | why the interleaving matters |\n|---|---|\n"
             "| `partial-update.remove-record-on-sequence-group` | a delete of that group removes the whole row: the "
             "other streams' columns are wiped only if they arrived before it |\n"
             "| `partial-update.remove-record-on-delete: true` | a delete from any source removes the whole row |\n"
             "| `aggregation.remove-record-on-delete: true` | a delete from any source removes the whole row |\n"
             "| `merge-engine: deduplicate` or `first-row` | every record replaces (or, first-row, is dropped after) "
             "the whole row: which source's row is kept depends on the arrival order |\n"
             "| a column filled by two sources, partial-update, not in a sequence group | the last to arrive wins |\n"
             "| a column filled by two sources, aggregation with `last_value`, `last_non_null_value`, "
             "`first_value`, `first_non_null_value`, `listagg`, `merge_map`, `nested_update`, "
             "`nested_partial_update` | the function depends on the order of its inputs |\n");
}
