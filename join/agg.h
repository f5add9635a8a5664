/*
 * join/agg.h — Paimon's aggregate functions (spec §9) over widen values.
 *
 * Pure functions over wd_value_t: no Kafka, no RocksDB. The merge engine (join/merge.c) calls
 * them per column: wd_agg_add for add records (+I/+U), wd_agg_retract for retractions (-U/-D),
 * and wd_agg_add_older for partial-update records whose group sequence is older (spec §7.4).
 *
 * Per-merge state: `seen` points to one bool per column that the engine sets false at the start
 * of every merge; first_value / first_non_null_value use it ("first in this merge", spec §9.2,
 * Paimon's `initialized` flag).
 */
#ifndef WD_AGG_H
#define WD_AGG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/types.h"

typedef enum wd_agg_fn {
  WD_AGG_NONE = 0,
  WD_AGG_SUM,
  WD_AGG_PRODUCT,
  WD_AGG_MAX,
  WD_AGG_MIN,
  WD_AGG_LAST_VALUE,
  WD_AGG_LAST_NON_NULL_VALUE,
  WD_AGG_FIRST_VALUE,
  WD_AGG_FIRST_NON_NULL_VALUE,
  WD_AGG_LISTAGG,
  WD_AGG_BOOL_AND,
  WD_AGG_BOOL_OR,
  WD_AGG_COLLECT,
  WD_AGG_MERGE_MAP,
  WD_AGG_MERGE_MAP_WITH_KEYTIME,
  WD_AGG_NESTED_UPDATE,
  WD_AGG_NESTED_PARTIAL_UPDATE,
  WD_AGG_RBM32
} wd_agg_fn_t;

typedef enum { WD_NESTED_NULL_MERGE = 0, WD_NESTED_NULL_IGNORE, WD_NESTED_NULL_ERROR } wd_nested_null_t;

/* Everything a column's function needs; filled by join/merge_spec.c from the table options. */
typedef struct wd_agg_spec {
  wd_agg_fn_t fn;
  const wd_type_t *type; /* the column's type (borrowed from the schema) */
  const char *column; /* the column's name (borrowed), for messages */
  bool ignore_retract; /* fields.<f>.ignore-retract */
  bool distinct; /* fields.<f>.distinct (collect, listagg) */
  char *delimiter; /* fields.<f>.list-agg-delimiter, default ","; owned by the spec */
  int *nested_key; /* ROW field indexes of fields.<f>.nested-key; owned; NULL if none */
  size_t n_nested_key;
  int *nested_seq; /* ROW field indexes of fields.<f>.nested-sequence-field; owned */
  size_t n_nested_seq;
  wd_nested_null_t nested_null; /* fields.<f>.nested-key-null-strategy */
  int64_t count_limit; /* fields.<f>.count-limit, default 2147483647 */
  int ts_field; /* merge_map_with_keytime: ROW field index of the ts field */
} wd_agg_spec_t;

/* Maps a function name (spec §9.1; `first_not_null_value` is an alias) to its id.
 * Errors: WD_ERR_CONFIG "C_AGG_UNSUPPORTED" for hll_sketch, theta_sketch, rbm64 ("<name> is not
 * supported yet"); "C_AGG_UNKNOWN_FUNCTION" for anything else unknown (count included), the
 * message naming the column and the name, with Paimon's "Could not find any factory for
 * identifier" fragment. */
wd_error_t *wd_agg_lookup(const char *name, const char *column, wd_agg_fn_t *fn);
const char *wd_agg_name(wd_agg_fn_t fn);

/* Checks the column type against the function (spec §9.1 column types; listagg needs unbounded
 * STRING; merge_map_with_keytime MAP<K, ROW<...>=2 fields> with a STRING ts field; nested
 * functions ARRAY<ROW>). Errors: WD_ERR_CONFIG "C_AGG_TYPE" naming column, function and type. */
wd_error_t *wd_agg_check_type(const wd_agg_spec_t *spec);

/* Whether retract is supported (sum, product, collect, merge_map, nested_update, last_value,
 * last_non_null_value). */
bool wd_agg_can_retract(wd_agg_fn_t fn);

/* acc = agg(acc, in) (spec §9). acc is updated in place (owned by the caller), in is borrowed.
 * Errors (acc unchanged): WD_ERR_RECORD "E_ARITH_OVERFLOW" (sum/product integer or DECIMAL
 * precision overflow), "E_NESTED_KEY_NULL" (nested-key-null-strategy=error). */
wd_error_t *wd_agg_add(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool *seen);

/* Partial-update, record older than the group's sequence (spec §7.4): acc = agg(in, acc) with the
 * per-function exceptions listed there (collect appends unless ignore_retract; merge_map and the
 * nested functions keep stored entries on shared keys; listagg prepends). Same errors. */
wd_error_t *wd_agg_add_older(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in, bool *seen);

/* acc = retract(acc, in). With ignore_retract acc is unchanged. Errors: "E_AGG_NO_RETRACT"
 * (function without retraction; the message names the function and suggests
 * 'fields.<column>.ignore-retract'='true'), "E_ARITH_OVERFLOW" (overflow, division by zero,
 * non-terminating DECIMAL quotient). */
wd_error_t *wd_agg_retract(const wd_agg_spec_t *spec, wd_value_t *acc, const wd_value_t *in);

/* Frees what spec owns (delimiter, nested arrays), not spec itself. */
void wd_agg_spec_clear(wd_agg_spec_t *spec);

#endif
