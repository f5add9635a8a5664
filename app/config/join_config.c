/*
 * app/config/join_config.c — the join layer from the config's sources (see join_config.h).
 */
#include "app/config/join_config.h"

#include <stdlib.h>
#include <string.h>

#include "app/config/table_config.h"

/* err with "<file>:<line>: " inserted after its id. */
static wd_error_t *at(wd_error_t *err, const char *file, int line) {
  if (!err || err->cls == WD_ERR_NOMEM || err->cls == WD_ERR_INTERNAL || !file) return err;
  const char *text = err->message;
  size_t idn = strlen(err->id);
  if (idn && !strncmp(text, err->id, idn) && !strncmp(text + idn, ": ", 2)) text += idn + 2;
  wd_error_t *e2 = wd_error_make(err->cls, idn ? err->eid : WD_EID_NONE, "%s:%d: %s", file, line, text);
  if (e2 == wd_error_nomem()) return err;
  wd_error_destroy(err);
  return e2;
}

wd_error_t *wd_config_build_join(const wd_config_t *cfg, const wd_table_t *t, wd_source_t **sources, int *ids,
                                 wd_join_t **out) {
  const wd_schema_t *schema = wd_table_schema(t);
  wd_join_t *j = NULL;
  wd_error_t *err = wd_join_new(t, &j);
  bool *mapped = calloc(schema->ncols + 1, sizeof(bool));
  *out = NULL;
  for (size_t i = 0; i < cfg->sources.n; i++) sources[i] = NULL;
  if (!err && !mapped) err = wd_error_nomem();
  for (size_t i = 0; !err && i < cfg->sources.n; i++) {
    const wd_config_source_t *cs = &cfg->sources.v[i];
    if (cs->lookup) {
      const char **cols = calloc(cs->columns.n + 1, sizeof(*cols));
      if (!cols) {
        err = wd_error_nomem();
        break;
      }
      for (size_t k = 0; k < cs->columns.n; k++) cols[k] = cs->columns.v[k].key;
      err = wd_join_add_lookup(j, cs->name, (const char *const *)cs->on.v, cs->on.n, cols, cs->columns.n,
                               cs->sequence != NULL, cs->required != 0, &ids[i]);
      free(cols);
      if (err) {
        err = at(err, cfg->path, cs->line);
        break;
      }
      err = wd_config_build_source(cfg, i, wd_join_source_schema(j, ids[i]), &sources[i]);
      continue;
    }
    if ((err = wd_config_build_source(cfg, i, schema, &sources[i]))) break;
    if ((err = wd_table_config_check_source(t, sources[i]))) break;
    memset(mapped, 0, schema->ncols * sizeof(bool));
    for (size_t k = 0; k < sources[i]->ncols; k++) mapped[sources[i]->cols[k].col] = true;
    if ((err = wd_join_add_main(j, cs->name, mapped, cs->required != 0, &ids[i]))) err = at(err, cfg->path, cs->line);
  }
  if (!err) {
    err = wd_join_check(j);
    if (err) err = at(err, cfg->path, cfg->sources.line);
  }
  free(mapped);
  if (err) {
    wd_join_destroy(j);
    return err;
  }
  *out = j;
  return NULL;
}

wd_error_t *wd_config_check_definition(const wd_config_t *cfg) {
  wd_table_t *t = NULL;
  wd_error_t *err = wd_config_build_table(cfg, &t);
  if (err) return err;
  wd_source_t **srcs = calloc(cfg->sources.n + 1, sizeof(*srcs));
  int *ids = calloc(cfg->sources.n + 1, sizeof(*ids));
  wd_join_t *join = NULL;
  err = srcs && ids ? wd_config_build_join(cfg, t, srcs, ids, &join) : wd_error_nomem();
  wd_join_destroy(join);
  for (size_t i = 0; srcs && i < cfg->sources.n; i++) wd_source_destroy(srcs[i]);
  free(srcs);
  free(ids);
  wd_table_destroy(t);
  return err;
}
