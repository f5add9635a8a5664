/*
 * join/merge.h — the merge engine: Apache Paimon's primary-key merge semantics
 * (../shared/spec/merge-semantics.md, "the spec"), one record at a time, as a pure library.
 *
 * A wd_table_t is a validated table definition: schema, primary key and Paimon options
 * (`merge-engine`, `sequence.field`, `fields.<f>.sequence-group`, `fields.<f>.aggregate-function`,
 * `ignore-delete`, ...), checked once at start (spec §3, §11.1). The engine then takes a key's
 * stored entry (a row, an ordering tombstone of spec D7, or nothing) and one change record, and
 * computes the key's new entry (spec §1.2). wd_message_apply() applies all records of one source
 * message and computes the changelog diff once per key (spec §10, §10.1).
 *
 * No Kafka, no RocksDB, no clock: storage is reached through wd_state_ops_t, so the same code runs
 * in `widen simulate`, the daemon's pipeline (RocksDB + write-back cache) and tests (memory).
 */
#ifndef WD_MERGE_H
#define WD_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/types.h"
#include "join/agg.h"

typedef enum wd_merge_engine {
  WD_ENGINE_DEDUPLICATE = 0,
  WD_ENGINE_PARTIAL_UPDATE,
  WD_ENGINE_AGGREGATION,
  WD_ENGINE_FIRST_ROW
} wd_merge_engine_t;

typedef struct wd_table wd_table_t;

/* One table option, Paimon's key and value as strings (borrowed). */
typedef struct wd_option {
  const char *key;
  const char *value;
} wd_option_t;

/* Validates schema + options (spec §3, §11.1) into a table definition. On success takes ownership
 * of schema (also on failure: it is destroyed) and *out is a new table owned by the caller.
 * Errors: WD_ERR_CONFIG with the spec's id first in the message (C_UNKNOWN_OPTION,
 * C_BAD_OPTION_VALUE, C_SEQ_FIELD_UNKNOWN, C_SEQ_GROUP_DUPLICATE_FIELD, C_AGG_TYPE, ...); the
 * message names the option and says what to change. */
wd_error_t *wd_table_new(wd_schema_t *schema, size_t nopts, const wd_option_t *opts, wd_table_t **out);
void wd_table_destroy(wd_table_t *t);
const wd_schema_t *wd_table_schema(const wd_table_t *t);
wd_merge_engine_t wd_table_engine(const wd_table_t *t);
/* Whether the table has ordering (sequence.field or a sequence group, spec §1.1) and therefore
 * keeps ordering tombstones (D7). */
bool wd_table_has_ordering(const wd_table_t *t);
/* Whether the table rejects every retraction (-U/-D) with E_PU_DELETE_NOT_ACCEPTED (spec §7.1):
 * partial-update without sequence groups, ignore-delete and
 * partial-update.remove-record-on-delete. */
bool wd_table_rejects_retractions(const wd_table_t *t);
/* Whether the table has `ignore-delete: true` (every retraction is dropped; docs/merge-semantics.md). */
bool wd_table_ignores_deletes(const wd_table_t *t);
/* The number of sequence groups, and the name of group g (< that number): its sequence fields'
 * column names joined by ',' (the <f> of `fields.<f>.sequence-group`), borrowed from the schema
 * and written to buf[0..n) (truncated; always terminated). */
size_t wd_table_seq_groups(const wd_table_t *t);
void wd_table_seq_group_name(const wd_table_t *t, size_t g, char *buf, size_t n);

/* Whether column col is a sequence field: one of sequence.field, or the sequence field of a
 * sequence group (spec §4, §7.2). False for a column out of range. */
bool wd_table_is_sequence_column(const wd_table_t *t, int col);

/* Checks the columns one source fills (mapped[c] for each schema column) against the sequence
 * groups (spec §7.2): a source that fills protected fields of a group but none of the group's
 * sequence fields would have every value of that group dropped (an all-NULL group sequence skips
 * the group), so it is refused. who names the source in the message.
 * Errors: WD_ERR_CONFIG "C_SOURCE_GROUP_NO_SEQUENCE" naming the group, the fields and what to map. */
wd_error_t *wd_table_check_source_columns(const wd_table_t *t, const bool *mapped, const char *who);

/* What the store holds for one key. */
typedef enum { WD_ENTRY_ABSENT = 0, WD_ENTRY_ROW, WD_ENTRY_TOMBSTONE } wd_entry_state_t;

typedef struct wd_entry {
  wd_entry_state_t state;
  /* ROW: the stored row; its kind is +I, or for first-row the kind of the creating record.
   * TOMBSTONE: key and ordering columns (all else NULL); kind -D or -U: the kind that made it (D7).
   * ABSENT: NULL. Owned by the entry unless borrowed. */
  wd_row_t *row;
  /* set by wd_state_ops_t.get when row is lent by the state: read it, never change or free it.
   * Read only for entries that get filled (zeroed before); an entry the caller builds is owned. */
  bool borrowed;
} wd_entry_t;

/* Frees row, state = ABSENT, borrowed = false. For an owned entry. */
void wd_entry_clear(const wd_table_t *t, wd_entry_t *e);
/* For an entry filled by wd_state_ops_t.get: forgets a borrowed row, frees an owned one
 * (wd_entry_clear). */
void wd_entry_release(const wd_table_t *t, wd_entry_t *e);

/* Counters the engine reports per applied record (summed by the caller). */
typedef struct wd_merge_stats {
  uint64_t dropped; /* removed by the row-kind filter or first-row duplicates */
  uint64_t ignored_update_before; /* -U ignored by partial-update.remove-record-on-delete (§7.1) */
  uint64_t tombstones; /* removals that left (or replaced) an ordering tombstone */
  /* records ignored as older (for monitoring): per sequence group g (< WD_MERGE_STATS_GROUPS; the
   * last slot counts the groups beyond), add records whose group sequence was older than the
   * stored one, so the group's fields kept the stored values (§7.2); and records that
   * sequence.field ordered before the stored row (§4) */
#define WD_MERGE_STATS_GROUPS 32
  uint64_t older_in_group[WD_MERGE_STATS_GROUPS];
  uint64_t older_by_sequence_field;
} wd_merge_stats_t;

/* Applies one change record rec (borrowed; its kind is the row kind) to the key's entry e
 * (in/out; the entry's key must equal rec's key), per spec §1.2 and the engine sections §5-§9.
 * The new row is built once, in one allocation for the row and its text values (wd_row_pack);
 * the old one is freed (e is owned, as wd_entry_clear frees it).
 * On error e is unchanged. Errors: WD_ERR_RECORD with E_PU_DELETE_NOT_ACCEPTED,
 * E_FIRST_ROW_RETRACT, E_AGG_NO_RETRACT, E_ARITH_OVERFLOW, E_NESTED_KEY_NULL, E_NOT_NULL;
 * E_NOMEM. *dropped (may be NULL) is set when the record was dropped at the entrance. */
wd_error_t *wd_merge_apply(const wd_table_t *t, wd_entry_t *e, const wd_row_t *rec, bool *dropped,
                           wd_merge_stats_t *stats);

/* ---- messages and the changelog (spec §10, §10.1) ---------------------------------------- */

/* A list of emitted changelog rows, each a full row with its row kind. Owned; reusable. The rows
 * wd_message_apply appends are views (wd_row_view) of the entries before and after the message:
 * they share the stored rows instead of copying them, keep them alive until the changelog is
 * reset, and are read-only. */
typedef struct wd_changelog {
  wd_row_t **rows;
  size_t n;
  size_t cap;
  wd_buf_t keys; /* wd_message_apply's scratch (a message's keys), reused from message to message */
} wd_changelog_t;
void wd_changelog_reset(const wd_table_t *t, wd_changelog_t *cl); /* frees the rows, keeps capacity */
void wd_changelog_free(const wd_table_t *t, wd_changelog_t *cl); /* the rows and the key scratch */

/* How a message reaches stored entries. get fills *e (zeroed by the caller) with the key's entry:
 * either a copy the caller owns, or the implementation's own entry, borrowed (it sets
 * e->borrowed; join/state.h says how long the row stays valid): the caller neither changes nor
 * frees a borrowed row (wd_entry_release). put hands the key's new entry over (takes e->row,
 * which the caller owns; e is left ABSENT); the row may be shared with the changelog
 * (wd_row_share): whoever keeps it does not change its values while the changelog holds it. Both
 * return NULL or an error (WD_ERR_IO/E_NOMEM), which aborts the message. */
typedef struct wd_state_ops {
  wd_error_t *(*get)(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e);
  wd_error_t *(*put)(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e);
} wd_state_ops_t;

/* Applies the n records of one source message in order (spec §10.1): each record as
 * wd_merge_apply does (a record with absent columns, wd_row_t.absent, first has them completed
 * from the key's current entry: the stored row as earlier records of the message left it —
 * values of a row, ordering columns of a tombstone, nothing when the key has no entry; an -U that
 * carries only its key is skipped unless the table retracts values: aggregation, or
 * partial-update with sequence groups, without ignore-delete/ignore-update-before), then for every key touched, in order of first touch, compares the key's
 * entry before and after the message and appends +I / -U,+U / -D / nothing to out (honouring
 * changelog-producer.row-deduplicate and its ignore-fields). Only when every record succeeds are
 * the new entries put; on a record error nothing is put or appended and the error's index is the
 * failing record's index. When a put fails (E_NOMEM, WD_ERR_IO) the keys put before it are put
 * back to their entries before the message, so a failed message leaves the entries as they were
 * (if putting one back fails too, the error says so and is fatal). stats may be NULL. */
wd_error_t *wd_message_apply(const wd_table_t *t, const wd_state_ops_t *ops, void *ctx, wd_row_t *const *recs, size_t n,
                             wd_changelog_t *out, wd_merge_stats_t *stats);

#endif
