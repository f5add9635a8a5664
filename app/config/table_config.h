/*
 * app/config/table_config.h — builds the wide table (schema + primary key + Paimon options) from a
 * config, the one path shared by `widen run` (YAML) and `widen simulate` (case JSON), so the
 * conformance cases exercise the daemon's own table loading.
 */
#ifndef WD_TABLE_CONFIG_H
#define WD_TABLE_CONFIG_H

#include <jansson.h>

#include "join/merge.h"

/* Parallel arrays of column names and type strings, primary-key names and options (all
 * borrowed). Errors: every C_... of wd_schema_new and wd_table_new. */
wd_error_t *wd_table_config_build(size_t ncols, const char *const *names, const char *const *types, size_t npk,
                                  const char *const *pk, size_t nopts, const wd_option_t *opts, wd_table_t **out);

/* The same from the JSON shape of a conformance case: "schema": [{name, type}], "primary_key":
 * [names], "options": {key: value}. Errors: C_BAD_CONFIG for a wrong JSON shape, and the above. */
wd_error_t *wd_table_config_from_json(const json_t *schema, const json_t *primary_key, const json_t *options,
                                      wd_table_t **out);

/* The sequence-group check of wd_table_check_source_columns for source src (borrowed), built
 * against t's schema: refuses a source that fills a group's fields but not its sequence field
 * (C_SOURCE_GROUP_NO_SEQUENCE). Row-image and envelope mappings count as filling a column. */
struct wd_source;
wd_error_t *wd_table_config_check_source(const wd_table_t *t, const struct wd_source *src);

/* The start-up warning (`widen run`, `widen config check`) of a table that rejects
 * every retraction (wd_table_rejects_retractions: partial-update without sequence groups,
 * ignore-delete or partial-update.remove-record-on-delete) fed by nsources CDC sources (every
 * source format sends updates and deletes), whose names are names[0..nsources) (borrowed): it
 * names the consequence (deletes dead-lettered with E_PU_DELETE_NOT_ACCEPTED; the -U of each
 * update left out so that its +U applies, app/runtime/pipeline.c) and the options to set. NULL when
 * there is nothing to warn about (or no memory); else malloc'd, the caller frees. */
char *wd_table_config_retraction_warning(const wd_table_t *t, const char *table, size_t nsources,
                                         const char *const *names);

#endif
