/*
 * join/table_options.h — the reference of the table options (Paimon's names, spec §3) that
 * wd_table_new (join/merge.h) accepts, read from the same table that drives their parsing
 * (join/merge_spec.c), for `widen config doc` (configs/OPTIONS.md).
 */
#ifndef WD_TABLE_OPTIONS_H
#define WD_TABLE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* One option's reference entry; every string is static and not NULL. */
typedef struct wd_table_option_doc {
  const char *key; /* "merge-engine", "fields.<f>.aggregate-function" */
  const char *values; /* the accepted values, '|'-separated ("none|input|lookup|full-compaction",
                              "true|false"), or "" when the description says what is accepted */
  const char *def; /* the default, as text ("deduplicate", "false", "none") */
  const char *applies; /* where it applies ("all", "partial-update", "listagg", ...) */
  const char *description; /* what it does */
} wd_table_option_doc_t;

/* Fills *out with the i-th option (table keys first, then the per-field keys, both in the
 * order of spec §3's checks) and returns true, or returns false when i is past the last. */
bool wd_table_option_doc(size_t i, wd_table_option_doc_t *out);

#endif
