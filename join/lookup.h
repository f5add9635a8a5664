/*
 * join/lookup.h — joins on other keys: lookup (dimension) sources, chains of them, INNER and LEFT
 * per source, late arrivals in any order and retractions. A layer between the decoded change
 * records and wd_message_apply (join/merge.h); pure like the engine (no Kafka, no RocksDB, no
 * clock): it reads and writes through join/state.h and join/store.h only.
 *
 * ---- What it computes ---------------------------------------------------------------------
 *
 * Main sources carry the wide table's primary key and go through the merge engine exactly as
 * without this layer (same records, same entries). A lookup source L has its own key: its
 * records are rows of L's own schema, the "lookup schema" [on_1..on_k, c_1..c_m, _seq]:
 *   on_i   named and typed like the wide column `on[i]`; L's primary key (filled from L's `key:`
 *          fields, so payment.id arrives as payment_id);
 *   c_j    the wide columns L fills, typed like them;
 *   _seq   BIGINT, only when L has a sequence field.
 * L's rows are kept by that key with the deduplicate merge engine (latest version by `_seq`, or
 * by arrival without one; a delete removes the row; with `_seq` an ordering tombstone keeps a late
 * older version out, spec D7). Invariant, after every message: for every stored wide row W,
 *   W.c_j == L[W.on].c_j   when the lookup row with key W.on exists (every on_i of W non-NULL),
 *   W.c_j == NULL          otherwise,
 * and W is visible (emitted, listed by wd_join_rows_sorted) iff W is a row of the merge engine,
 * every required main source's latest record for W is an insert or update (not a delete), and
 * every required lookup has a row for W.on. A chain is a lookup whose `on` column another lookup
 * fills (invoice.payment_id -> payment.reconciliation_id -> reconciliation): lookups are resolved
 * in dependency order, so a change upstream re-points the rows downstream.
 *
 * ---- How (the delta join by key, no join state beyond one row per source key) ---------------
 *
 * Three namespaces in the state column family besides the wide rows' (WD_STATE_ROW_NS, join/state.h),
 * behind one function (lk_key in lookup.c); a wide row is named by "tk", its task (4 bytes) and key:
 *   'L' L key           L's row: a wd_state_t of its own over the lookup schema (the engine's
 *                       entry encoding, join/row_codec.h) under namespace 'L', task = L's number;
 *   0xF2 L onkey tk     the index: one empty entry per wide row W referencing L's key onkey
 *                       (onkey self-delimiting), read by a prefix scan (wd_store_scan_prefix);
 *   0xF3 tk             per wide row: which main sources are present and which lookups matched
 *                       (bitmasks), i.e. whether W is visible.
 * wd_state_drop_task drops a task's wide rows but not these entries: flags of a row that is not
 * there are ignored, and index entries pointing at it are skipped (or, once the row is back with
 * another on value, refresh it to what it is: an identical -U/+U pair).
 * Every entry is written in the wide state's store batch: the layer registers wd_state hooks, so
 * wd_state_snapshot/flush add the lookups' rows, the index and the flags to the same RocksDB write
 * as the wide rows and the input offsets. Changes not yet in the store are kept in an overlay (by
 * snapshot, dropped once written) that reads and prefix scans consult first.
 *
 * A main message: wd_message_apply over a capturing wd_state_ops_t (the engine computes the new
 * entries; its own changelog is discarded); then for each touched wide key, "refresh": fill the
 * lookup columns from the lookup rows (dependency order), move the index entries whose on value
 * changed, update the flags, and emit the diff of the visible rows before and after (+I when it
 * becomes visible, -D when it stops, -U/+U otherwise unless changelog-producer.row-deduplicate
 * finds them equal), then put the entry and the flags.
 * A lookup message: wd_message_apply over L's rows (its changelog says which L keys changed);
 * for each changed key, every wide row in the index under it is refreshed the same way, so each
 * referencing row emits its own -U/+U (or +I/-D when its visibility changes), in one message.
 *
 * ---- Ownership, threads ------------------------------------------------------------------------
 *
 * A wd_join_t borrows the table, the wide state and the store (all must outlive it) and owns its
 * lookups' tables, states and schemas. One thread at a time (the state's thread).
 */
#ifndef WD_LOOKUP_H
#define WD_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>

#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

#define WD_JOIN_MAX_SOURCES 64

typedef struct wd_join wd_join_t;

/* A new join layer for table t (borrowed), to which sources are then added. Errors: E_NOMEM. */
wd_error_t *wd_join_new(const wd_table_t *t, wd_join_t **out);
/* Releases j (unsetting the wide state's hooks, so destroy j before the wide state); accepts NULL. */
void wd_join_destroy(wd_join_t *j);

/* Declares a main source (keyed by the wide primary key): name (copied), mapped[c] for each wide
 * column it fills (copied), required (INNER: rows without it are not visible). *id receives the
 * source's id for wd_join_apply. Errors: WD_ERR_CONFIG "C_JOIN_TOO_MANY_SOURCES"; E_NOMEM. */
wd_error_t *wd_join_add_main(wd_join_t *j, const char *name, const bool *mapped, bool required, int *id);

/* Declares a lookup source: name (copied); on[0..non) the wide columns it is joined on (L.key =
 * W.on, in order); cols[0..ncols) the wide columns it fills; has_seq: it has a sequence field
 * (column _seq of its schema); required (INNER). Builds the lookup schema described above; get it
 * with wd_join_source_schema to build the source's decoder. *id receives the source's id.
 * Errors (WD_ERR_CONFIG, naming the source): C_LOOKUP_ON_UNKNOWN / C_LOOKUP_COLUMN_UNKNOWN (not a
 * wide column), C_LOOKUP_COLUMN_KEY (a wide primary-key column, or one of its own on columns),
 * C_LOOKUP_COLUMN_NOT_NULL (a NOT NULL column: it is NULL while nothing matches), C_LOOKUP_NO_ON,
 * C_JOIN_TOO_MANY_SOURCES; E_NOMEM. */
wd_error_t *wd_join_add_lookup(wd_join_t *j, const char *name, const char *const *on, size_t non,
                               const char *const *cols, size_t ncols, bool has_seq, bool required, int *id);

/* The schema the records of source id are rows of: the wide schema for a main source, the
 * lookup schema for a lookup (borrowed from j). NULL for an unknown id. */
const wd_schema_t *wd_join_source_schema(const wd_join_t *j, int id);
bool wd_join_is_lookup(const wd_join_t *j, int id);

/* Checks the declared sources together (errors below); wd_join_start does it when not done. */
wd_error_t *wd_join_check(wd_join_t *j);

/* Checks the declared sources together and binds j to the wide state of t and the store under
 * it (borrowed; they must outlive j), once, after every add: the lookups' row states are created
 * on st and j's hooks set on wide (when wd_join_active). Errors
 * (WD_ERR_CONFIG, each naming the sources): C_LOOKUP_ON_UNFILLED (an on column no source fills),
 * C_LOOKUP_COLUMN_SHARED (a column a lookup fills is filled by another source as well),
 * C_LOOKUP_COLUMN_ORDERING (a sequence field or sequence-group column), C_LOOKUP_CYCLE (lookups
 * whose on columns depend on each other in a cycle; the message lists them); E_NOMEM. */
wd_error_t *wd_join_start(wd_join_t *j, wd_state_t *wide, wd_store_t *st);

/* Whether the layer changes anything: some lookup or some required source was declared. When
 * false, wd_join_apply is wd_message_apply over the wide state and the rows are the state's. */
bool wd_join_active(const wd_join_t *j);

/* Applies the n records (rows of wd_join_source_schema(j, id), borrowed) of one message of source
 * id, appending the wide table's changelog rows to out (see above). On a record error nothing is
 * applied or appended and err->index is the failing record's index. stats may be NULL.
 * Errors: those of wd_message_apply; E_STORE_READ, E_STATE_CORRUPT, E_NOMEM;
 * WD_ERR_INTERNAL "E_INTERNAL" for an unknown id. */
wd_error_t *wd_join_apply(wd_join_t *j, int id, wd_row_t *const *recs, size_t n, wd_changelog_t *out,
                          wd_merge_stats_t *stats);

/* The visible wide rows (flush the state first), sorted by primary key, as wd_state_rows_sorted
 * (release them with wd_state_rows_free on the wide state). Errors: those of
 * wd_state_rows_sorted, E_STORE_READ, E_STATE_CORRUPT. */
wd_error_t *wd_join_rows_sorted(wd_join_t *j, wd_row_t ***rows, size_t *n);

/* Sets the task (join/state.h wd_state_set_task) of the next main messages' rows; the index and
 * the flags name every wide row with its task, so a lookup change refreshes rows of any task. */
void wd_join_set_task(wd_join_t *j, uint32_t task);

/* ---- Scale-out (app/runtime/global_table.h, docs/lookups-scale-out.md) ---------------------------------
 * With per-partition tasks every process holds the whole lookup tables (read outside the group)
 * but only its own tasks' wide rows. The lookup rows ('L') and the index (0xF2) belong to no task:
 * wd_join_global_key says which store keys they are, so that the state changelog topic (which
 * restores one task) leaves them out. The flags (0xF3 + task + key) are a task's and go with it. */

/* Sets the filter of lookup fan-out: a lookup change refreshes a wide row of task t only when
 * owned(ctx, t) (the process's current assignment); rows of other tasks stay as they are in the
 * local store (stale: another process owns them; reconciled when they come back). An index entry
 * of an owned row whose on value is no longer the entry's (left by a dropped and restored task)
 * is deleted instead of refreshing the row. owned NULL (the default): every task. ctx borrowed. */
void wd_join_set_owner(wd_join_t *j, bool (*owned)(void *ctx, uint32_t task), void *ctx);

/* Whether key (a "state" store key) is one of the layer's entries that belong to no task: a lookup
 * row or an index entry. */
bool wd_join_global_key(const uint8_t *key, size_t klen);

/* Reconciles task `task` after it was assigned (restored from the state changelog topic or
 * resumed from local state): every stored wide row of the task gets its lookup columns recomputed
 * from this process's current lookup rows (as `refresh` does for a lookup change), its index
 * entries written (the index is not in the state changelog topic) and its flags updated; rows that
 * differ are appended to out: -U (the stored row, which is what the task's previous owner emitted
 * last) and +U (the recomputed one); +I when an INNER lookup now matches a row that was not
 * visible, -D when one stops matching; nothing for rows that are equal. Call it before the task's
 * first record is applied, in the commit whose transaction carries out. *rows (may be NULL): the
 * rows examined. Errors: E_STORE_READ, E_STATE_CORRUPT, E_NOMEM. No-op when !wd_join_active. */
wd_error_t *wd_join_reconcile_task(wd_join_t *j, uint32_t task, wd_changelog_t *out, size_t *rows);

/* Counters: wide rows refreshed because a lookup row changed (fan-out). */
uint64_t wd_join_fanout_rows(const wd_join_t *j);

#endif
