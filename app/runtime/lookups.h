/*
 * app/runtime/lookups.h — the join layer as `widen run`'s loop uses it (this state
 * left struct wd_pipeline): the join on other keys built from the configuration (join/lookup.h),
 * each source's id in it, the decode buffers of the lookup sources and the rows of the lookup
 * messages of the batch in hand.
 *
 * A message of a lookup source is decoded into rows of its lookup schema (not the wide table's):
 * wd_lookups_changes gives the decoder's target, wd_lookups_take moves its rows into the batch,
 * where they stay (wd_lookups_row) until wd_lookups_batch_done. wd_lookups_apply applies one
 * message's records, main or lookup, through the join layer (or straight through the merge engine,
 * join/merge.h wd_message_apply, when the configuration has no lookup and no required source).
 *
 * Ownership: the object owns the join, the ids, the decode buffers and the batch's rows; the
 * sources built by wd_lookups_new are the caller's (see there). Thread: the pipeline's.
 */
#ifndef WD_LOOKUPS_H
#define WD_LOOKUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/config/config.h"
#include "common/error.h"
#include "ingest/source.h"
#include "join/lookup.h"
#include "join/srckey.h"
#include "app/runtime/repartition.h"
#include "join/merge.h"

typedef struct wd_lookups wd_lookups_t;

/* Builds the join layer of cfg for table t (borrowed, must outlive the object) and every source
 * into sources[0..cfg->sources.n) (an array the caller provides; each built source is owned by the
 * caller, wd_source_destroy, also after an error: unbuilt ones are NULL), as
 * app/config/join_config.h wd_config_build_join. *out owned by the caller (wd_lookups_destroy);
 * the join is not started (wd_lookups_join, then join/lookup.h wd_join_start).
 * Errors: those of wd_config_build_join; E_NOMEM. */
wd_error_t *wd_lookups_new(const wd_config_t *cfg, wd_table_t *t, wd_source_t **sources, wd_lookups_t **out);
/* Whether the lookup sources' topics are a global table (app/runtime/global_table.h), read whole
 * by this process outside the group: with per-partition tasks in a live run (not a replay) when
 * one of the nsources sources is a lookup. When they are read through the group instead (a single
 * task) in a live run, says so at INFO (run one process for the table, docs/lookups.md). */
bool wd_lookups_global(const wd_lookups_t *lk, size_t nsources, bool per_partition, bool replay);

/* Frees the object, its join, buffers and batch rows (accepts NULL). Call it before the state the
 * join hooks into is destroyed. */
void wd_lookups_destroy(wd_lookups_t *lk);

/* The join layer (borrowed from the object), for wd_join_start, wd_join_set_owner,
 * wd_join_reconcile_task. */
wd_join_t *wd_lookups_join(const wd_lookups_t *lk);
/* Whether the layer changes anything (join/lookup.h wd_join_active). */
bool wd_lookups_active(const wd_lookups_t *lk);
/* Whether source si (index into cfg->sources; -1: none) is a lookup source. */
bool wd_lookups_is_lookup(const wd_lookups_t *lk, int si);

/* The lookup source si's decode buffer and schema: decode its message into it (ingest/). */
wd_changes_t *wd_lookups_changes(wd_lookups_t *lk, int si);
const wd_schema_t *wd_lookups_schema(const wd_lookups_t *lk, int si);
/* Moves the rows decoded into wd_lookups_changes(lk, si) into the batch; *first receives the
 * batch index of the first, *count how many. Errors: E_NOMEM (the rows moved so far stay in the
 * batch and are freed by wd_lookups_batch_done). */
wd_error_t *wd_lookups_take(wd_lookups_t *lk, int si, size_t *first, size_t *count);
/* Row i of the batch (from wd_lookups_take) and its schema; borrowed until wd_lookups_batch_done. */
const wd_row_t *wd_lookups_row(const wd_lookups_t *lk, size_t i);
const wd_schema_t *wd_lookups_row_schema(const wd_lookups_t *lk, size_t i);
/* Frees the batch's rows. */
void wd_lookups_batch_done(wd_lookups_t *lk);

/* The task of the next main messages' rows (join/lookup.h wd_join_set_task). */
void wd_lookups_set_task(wd_lookups_t *lk, uint32_t task);

/* Applies one message of source si: count records from first, of the batch's lookup rows when
 * lookup, else main_recs[first..first+count) (rows of the wide schema), appending the wide
 * table's changelog to out (join/lookup.h wd_join_apply; when !wd_lookups_active or si < 0,
 * join/merge.h wd_message_apply on state with ops). stats may be NULL. Errors: those of
 * wd_join_apply and wd_message_apply. */
wd_error_t *wd_lookups_apply(wd_lookups_t *lk, int si, bool lookup, wd_row_t *const *main_recs, size_t first,
                             size_t count, const wd_table_t *t, const wd_state_ops_t *ops, void *state,
                             wd_changelog_t *out, wd_merge_stats_t *stats);

/* ---- sources with their own primary key (join/srckey.h, docs/source-keys.md) --------------------
 * wd_lookups_new builds them against their source schema; their messages are decoded into
 * wd_lookups_key_changes (rows of wd_lookups_key_schema), then wd_lookups_normalise turns them
 * into change records of the wide table in out (reset first; the decode's flags, op and ts_ms
 * copied) through the source rows. */
/* The layer (borrowed; for wd_srckey_start and wd_srckey_set_task). */
wd_srckey_t *wd_lookups_srckey(const wd_lookups_t *lk);
/* Whether source si has its own primary key. */
bool wd_lookups_has_key(const wd_lookups_t *lk, int si);
wd_changes_t *wd_lookups_key_changes(wd_lookups_t *lk, int si);
const wd_schema_t *wd_lookups_key_schema(const wd_lookups_t *lk, int si);
/* task: the task of the source's rows (per-partition: the partition the record was read from,
 * whose task owns the source rows; else 0). Errors: those of join/srckey.h wd_srckey_apply (out
 * is then empty). */
wd_error_t *wd_lookups_normalise(wd_lookups_t *lk, int si, uint32_t task, wd_changes_t *out);
/* With per-partition tasks (docs/source-keys.md): a source with its own primary key is the input
 * of the tasks (its partition i is task i's, whose state keeps its source rows) and forwards its
 * derived records through its repartition topic, so each of its topics must have the table's
 * partition count and the source must not say `repartition: false`. in[0..n): the plan's inputs
 * (app/runtime/repartition.h). Errors: WD_ERR_CONFIG "C_SOURCE_KEY_PER_PARTITION" naming the
 * source, the topic, both counts and what to change. */
wd_error_t *wd_lookups_check_partitions(const wd_lookups_t *lk, const wd_config_t *cfg,
                                        const wd_repartition_input_t *in, size_t n, int32_t partitions);

#endif
