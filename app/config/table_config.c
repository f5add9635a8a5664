#include "app/config/table_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#include "ingest/source.h"

wd_error_t *wd_table_config_build(size_t ncols, const char *const *names, const char *const *types, size_t npk,
                                  const char *const *pk, size_t nopts, const wd_option_t *opts, wd_table_t **out) {
  wd_schema_t *schema = NULL;
  wd_error_t *err = wd_schema_new(ncols, names, types, npk, pk, &schema);
  if (err) return err;
  return wd_table_new(schema, nopts, opts, out); /* takes schema */
}

wd_error_t *wd_table_config_from_json(const json_t *schema, const json_t *primary_key, const json_t *options,
                                      wd_table_t **out) {
  wd_error_t *err = NULL;
  size_t ncols = json_array_size(schema), npk = json_array_size(primary_key);
  size_t nopts = json_is_object(options) ? json_object_size(options) : 0;
  const char **names = calloc(ncols + 1, sizeof(char *));
  const char **types = calloc(ncols + 1, sizeof(char *));
  const char **pk = calloc(npk + 1, sizeof(char *));
  wd_option_t *opts = calloc(nopts + 1, sizeof(*opts));
  if (!names || !types || !pk || !opts) {
    err = wd_error_nomem();
    goto done;
  }
  if (!json_is_array(schema) || !json_is_array(primary_key) ||
      (options && !json_is_null(options) && !json_is_object(options))) {
    err = wd_error_new(WD_ERR_CONFIG, C_BAD_CONFIG, "schema and primary_key must be arrays, options an object");
    goto done;
  }
  for (size_t i = 0; i < ncols; i++) {
    json_t *col = json_array_get(schema, i);
    names[i] = json_string_value(json_object_get(col, "name"));
    types[i] = json_string_value(json_object_get(col, "type"));
    if (!names[i] || !types[i]) {
      err = wd_error_new(WD_ERR_CONFIG, C_BAD_CONFIG, "schema entry %zu needs string 'name' and 'type'", i);
      goto done;
    }
  }
  for (size_t i = 0; i < npk; i++) {
    pk[i] = json_string_value(json_array_get(primary_key, i));
    if (!pk[i]) {
      err = wd_error_new(WD_ERR_CONFIG, C_PRIMARY_KEY, "primary_key entry %zu is not a column name", i);
      goto done;
    }
  }
  size_t i = 0;
  const char *key;
  json_t *val;
  if (nopts) {
    json_object_foreach((json_t *)options, key, val) {
      opts[i].key = key;
      opts[i].value = json_string_value(val);
      if (!opts[i].value) {
        err = wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE, "option '%s' must be a string", key);
        goto done;
      }
      i++;
    }
  }
  err = wd_table_config_build(ncols, names, types, npk, pk, nopts, opts, out);
done:
  free(names);
  free(types);
  free(pk);
  free(opts);
  return err;
}

wd_error_t *wd_table_config_check_source(const wd_table_t *t, const struct wd_source *src) {
  const wd_schema_t *s = wd_table_schema(t);
  bool *mapped = calloc(s->ncols ? s->ncols : 1, sizeof(bool));
  if (!mapped) return wd_error_nomem();
  for (size_t i = 0; i < src->ncols; i++)
    if (src->cols[i].col >= 0 && (size_t)src->cols[i].col < s->ncols) mapped[src->cols[i].col] = true;
  char who[300];
  snprintf(who, sizeof(who), "source '%s'", src->name);
  wd_error_t *err = wd_table_check_source_columns(t, mapped, who);
  free(mapped);
  return err;
}

char *wd_table_config_retraction_warning(const wd_table_t *t, const char *table, size_t nsources,
                                         const char *const *names) {
  if (!nsources || !wd_table_rejects_retractions(t)) return NULL;
  wd_buf_t b = {0};
  int rc = wd_buf_printf(&b,
                         "table '%s' is partial-update without sequence groups, ignore-delete or "
                         "partial-update.remove-record-on-delete, so it cannot take retractions, and source%s ",
                         table, nsources > 1 ? "s" : "");
  for (size_t i = 0; i < nsources && !rc; i++) rc = wd_buf_printf(&b, "%s'%s'", i ? ", " : "", names[i]);
  if (!rc)
    rc = wd_buf_printf(&b,
                       " send%s them: every delete (and the -D of a key-changing update, with its +I) is "
                       "dead-lettered with E_PU_DELETE_NOT_ACCEPTED; the -U half of each update is left out (counted "
                       "as ignored -U) so that its +U applies, as Paimon's Flink sink does for a primary-key table. "
                       "To take deletes set one of: ignore-delete: true (drop them), "
                       "partial-update.remove-record-on-delete: true (a delete removes the whole row), or a "
                       "fields.<version>.sequence-group per source (its delete clears only its own columns)",
                       nsources > 1 ? "" : "s");
  if (rc || wd_buf_putc(&b, 0)) {
    wd_buf_free(&b);
    return NULL;
  }
  return (char *)b.data;
}
