/*
 * app/config/join_config.h — the sources of a config as the join layer sees them (join/lookup.h): main
 * sources keyed by the wide primary key, lookup sources (`lookup: true`, `key:`, `on:`,
 * `sequence:`), INNER/LEFT (`required:`). One path for `widen run`, `widen replay` and
 * `widen rows`.
 */
#ifndef WD_JOIN_CONFIG_H
#define WD_JOIN_CONFIG_H

#include "app/config/config.h"
#include "ingest/source.h"
#include "join/lookup.h"

/* Builds the join layer of cfg for table t (borrowed; the table of wd_config_build_table) and every
 * source: sources[i] (an array of cfg->sources.n the caller provides; each built source is owned by
 * the caller, wd_source_destroy, also after an error: unbuilt ones are NULL) is built against t's
 * schema, or for a lookup against its lookup schema (so its decoder yields lookup rows), and
 * ids[i] is its id in *out (a new join owned by the caller, not yet started: wd_join_start).
 * Errors: those of wd_config_build_source and wd_table_config_check_source; the C_LOOKUP_... ids of
 * wd_join_add_lookup and wd_join_check (the sources checked together), each with "<file>:<line>: "
 * after the id;
 * E_NOMEM. */
wd_error_t *wd_config_build_join(const wd_config_t *cfg, const wd_table_t *t, wd_source_t **sources, int *ids,
                                 wd_join_t **out);

/* Checks cfg's table definition as `widen config check` does: the table (wd_config_build_table) and
 * every source and the join built, then freed. `widen run` and `widen replay` call it before they
 * open the state directory, so that a mistake in the file is reported as such (with its line)
 * rather than as a definition that differs from the stored one, a locked directory or a new empty
 * one. Returns NULL when the definition builds. Errors: those of wd_config_build_table and
 * wd_config_build_join; E_NOMEM. */
wd_error_t *wd_config_check_definition(const wd_config_t *cfg);

#endif
