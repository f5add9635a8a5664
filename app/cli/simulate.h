/*
 * app/cli/simulate.h — a conformance case run in-process (used by `widen simulate`, the Criterion
 * conformance test and the property test).
 */
#ifndef WD_SIMULATE_H
#define WD_SIMULATE_H

#include <jansson.h>

/* Runs case cs (borrowed; the JSON of ../shared/cases/README.md) through wd_table_config_from_json,
 * wd_message_apply and wd_state over a store of kind store_kind ("rocksdb": a temporary directory,
 * removed at the end; "memory"), flushing the state every `batch` messages. *result receives a new
 * JSON object {"rows", "changelog", "error"} (caller decrefs), or NULL on an internal failure
 * (printed on stderr). Returns 0, 2 when the configuration was refused, 1 on internal failure. */
int wd_simulate_run(const json_t *cs, const char *store_kind, long batch, json_t **result);

#endif
