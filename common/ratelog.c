/*
 * common/ratelog.c — the rate-limited error logger (see ratelog.h).
 */
#include "common/ratelog.h"

#include <stdlib.h>
#include <string.h>

static int same(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static char *dup0(const char *s) { return strdup(s ? s : ""); }

static wd_ratelog_entry_t *find_or_add(wd_ratelog_t *rl, const char *source, const char *id, const char *field,
                                       int *is_new) {
  *is_new = 0;
  for (size_t i = 0; i < rl->n; i++)
    if (same(rl->v[i].source, source) && same(rl->v[i].id, id) && same(rl->v[i].field, field)) return &rl->v[i];
  size_t max = rl->max_keys ? rl->max_keys : 1024;
  if (rl->n >= max) { /* too many distinct keys: the rest share the last entry's id slot */
    for (size_t i = 0; i < rl->n; i++)
      if (same(rl->v[i].id, id) && same(rl->v[i].source, "*")) return &rl->v[i];
    source = "*";
    field = "*";
    if (rl->n >= max + 64) return NULL;
  }
  if (rl->n == rl->cap) {
    size_t cap = rl->cap ? rl->cap * 2 : 16;
    wd_ratelog_entry_t *v = realloc(rl->v, cap * sizeof(*v));
    if (!v) return NULL;
    rl->v = v;
    rl->cap = cap;
  }
  wd_ratelog_entry_t *e = &rl->v[rl->n];
  memset(e, 0, sizeof(*e));
  e->source = dup0(source);
  e->id = dup0(id);
  e->field = dup0(field);
  if (!e->source || !e->id || !e->field) {
    free(e->source);
    free(e->id);
    free(e->field);
    return NULL;
  }
  rl->n++;
  *is_new = 1;
  return e;
}

int wd_ratelog_note(wd_ratelog_t *rl, double now, wd_log_level_t level, const char *module, const char *source,
                    const char *id, const char *field, const char *message) {
  int is_new = 0;
  rl->total++;
  wd_ratelog_entry_t *e = find_or_add(rl, source, id, field, &is_new);
  if (!e) {
    wd_log(level, module, "%s", message);
    return 1;
  }
  e->count++;
  if (!is_new && now - e->last < rl->interval) {
    e->unlogged++;
    return 0;
  }
  if (is_new && rl->interval > 0)
    wd_log(level, module, "%s (more of these: one line every %.0f s at most)", message, rl->interval);
  else if (e->unlogged)
    wd_log(level, module, "%s (%llu more of these since the last line, not logged)", message,
           (unsigned long long)e->unlogged);
  else wd_log(level, module, "%s", message);
  e->unlogged = 0;
  e->last = now;
  return 1;
}

int wd_ratelog_put_counts(const wd_ratelog_t *rl, wd_buf_t *out) {
  /* distinct ids with their sums, sorted by count (few ids: quadratic is fine) */
  const char *ids[64];
  uint64_t sums[64];
  size_t nid = 0;
  for (size_t i = 0; i < rl->n; i++) {
    size_t k = 0;
    while (k < nid && strcmp(ids[k], rl->v[i].id)) k++;
    if (k == nid) {
      if (nid == 64) continue;
      ids[nid] = rl->v[i].id;
      sums[nid++] = 0;
    }
    sums[k] += rl->v[i].count;
  }
  for (size_t i = 1; i < nid; i++)
    for (size_t j = i; j > 0 && sums[j] > sums[j - 1]; j--) {
      const char *t = ids[j];
      ids[j] = ids[j - 1];
      ids[j - 1] = t;
      uint64_t u = sums[j];
      sums[j] = sums[j - 1];
      sums[j - 1] = u;
    }
  for (size_t i = 0; i < nid; i++)
    if (wd_buf_printf(out, "%s%s %llu", i ? ", " : "", ids[i][0] ? ids[i] : "other", (unsigned long long)sums[i]))
      return -1;
  return 0;
}

const char *wd_ratelog_field_of(const char *message, char *buf, size_t size) {
  if (!size) return buf;
  buf[0] = 0;
  const char *p = message ? strstr(message, "column '") : NULL;
  if (!p) return buf;
  p += strlen("column '");
  const char *q = strchr(p, '\'');
  if (!q) return buf;
  size_t n = (size_t)(q - p);
  if (n >= size) n = size - 1;
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

void wd_ratelog_free(wd_ratelog_t *rl) {
  for (size_t i = 0; i < rl->n; i++) {
    free(rl->v[i].source);
    free(rl->v[i].id);
    free(rl->v[i].field);
  }
  free(rl->v);
  rl->v = NULL;
  rl->n = rl->cap = 0;
  rl->total = 0;
}
