/*
 * join/srckey.h — sources with their own primary key (the source option `primary-key`): the
 * changelog normalisation of Flink's ChangelogNormalize / upsert sources, before the merge engine.
 *
 * ---- Why --------------------------------------------------------------------------------------
 *
 * A source keyed by its own id (payments(payment_id pk, order_id) filling orders_wide keyed by
 * order_id) needs full before images to retract what it put into a wide row: which wide row a
 * payment was in and which values it had there. Debezium sends them only with Postgres
 * `REPLICA IDENTITY FULL` (MySQL `binlog_row_image=FULL`); by default a delete's before image
 * holds only the source's key (payment_id, no order_id: the wide key is unknown) and an update
 * has no before image (a move of the payment to another order cannot say where it was). An
 * upsert topic (Kafka key + value, a null value deleting the key) never has before images.
 *
 * ---- What it computes -----------------------------------------------------------------------
 *
 * For each such source S the layer keeps S's last row per S's primary key (the "source row"),
 * over S's own schema [k_1..k_n, c_1..c_m]: k_i its key columns (STRING: the key field's value as
 * text, join/srckey.c), c_j the wide columns S fills (wide primary key included), typed like them.
 * The rows are kept with the deduplicate merge engine (the latest record of a key wins; a delete
 * removes it), so each source message yields the source rows' changelog with full images:
 *   +I(new), -U(old)/+U(new), -D(old), where old is the stored source row.
 * That changelog becomes change records of the wide table, each holding S's columns only:
 *   +I(new)                  -> +I(new) into the wide row new's wide key names;
 *   -U(old), +U(new), same wide key        -> -U(old), +U(new);
 *   -U(old), +U(new), the wide key changed -> -D(old) from the old wide row, +I(new) into the new one
 *                                             (a "move", as the decoders turn a key change);
 *   -D(old)                  -> -D(old) from the wide row old was in.
 * So a key-only delete, an update without before image and a move reach the merge engine as
 * they would with full before images, and the table's delete policy (sequence groups,
 * partial-update.remove-record-on-delete, ignore-delete, ...) decides what they do there. A half
 * whose wide key is NULL (the source row is in no wide row) is left out and counted.
 * Columns S maps from the event instead of the row image (`$.source.ts_ms`, `$kafka.offset`: the
 * caller says which, event_cols) take the incoming message's values in a retraction built from a
 * stored row, as a full before image would carry them (the sequence of a delete is the delete's).
 *
 * ---- Where the rows are ---------------------------------------------------------------------
 *
 * Each source's rows are a wd_state_t (join/state.h) of its own under namespace byte
 * WD_SRCKEY_NS_FIRST + source id, in the wide state's store and task (key: namespace, task, the
 * encoded source key): the layer registers wd_state hooks on the wide state (wd_state_add_hooks),
 * so every snapshot/flush of the wide state writes the source rows in the same RocksDB write as
 * the wide rows and the input offsets, a discard (aborted commit) drops their uncommitted
 * changes, and a dropped task drops them too. They are task state: the state changelog topic
 * carries them (partition = task, bytes 1-4 of the key), restores and standbys write them back.
 * The task is the caller's (wd_srckey_set_task): with per-partition tasks the partition of the
 * source's own topic the record came from, while the derived records go to the tasks of their wide
 * keys (app/runtime: through the source's repartition topic; docs/source-keys.md).
 *
 * Ownership: a wd_srckey_t borrows the wide table (and, once started, the wide state and the
 * store); it owns its sources' tables, schemas and states. One thread at a time.
 */
#ifndef WD_SRCKEY_H
#define WD_SRCKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

#define WD_SRCKEY_NS_FIRST 0xE0 /* namespace byte of source id 0; id i uses 0xE0 + i */
#define WD_SRCKEY_MAX_SOURCES 16

typedef struct wd_srckey wd_srckey_t;

/* A new layer for wide table t (borrowed). Errors: E_NOMEM. */
wd_error_t *wd_srckey_new(const wd_table_t *t, wd_srckey_t **out);
/* Releases sk (unsetting its hooks on the wide state: destroy it before the wide state); accepts NULL. */
void wd_srckey_destroy(wd_srckey_t *sk);

/* Declares a source with its own primary key: name (copied, for messages); key[0..nkey) the names
 * of its key columns (copied; they must not be wide column names the source fills); mapped[c]
 * for each wide column it fills (copied; every wide primary-key column must be among them).
 * *id receives its id. Errors (WD_ERR_CONFIG, naming the source): C_SOURCE_KEY_EMPTY (nkey 0),
 * C_SOURCE_NO_KEY (a wide primary-key column not mapped), C_JOIN_TOO_MANY_SOURCES (more than
 * WD_SRCKEY_MAX_SOURCES); E_NOMEM. */
wd_error_t *wd_srckey_add(wd_srckey_t *sk, const char *name, const char *const *key, size_t nkey, const bool *mapped,
                          int *id);
/* The schema records of source id are decoded into: [key columns (STRING), the wide columns it
 * fills, in wide order] (borrowed from sk); NULL for an unknown id. */
const wd_schema_t *wd_srckey_schema(const wd_srckey_t *sk, int id);
/* Marks column col of source id's schema as read from the event, not the row image (see above). */
void wd_srckey_set_event_col(wd_srckey_t *sk, int id, int col, bool event);
/* Number of sources declared. */
size_t wd_srckey_count(const wd_srckey_t *sk);

/* Binds sk to the wide state and its store (borrowed; both must outlive sk), once: creates the
 * sources' row states and adds sk's hooks to wide. Errors: E_NOMEM; E_INTERNAL when wide has a
 * second set of hooks already. */
wd_error_t *wd_srckey_start(wd_srckey_t *sk, wd_state_t *wide, wd_store_t *st);

/* Sets the task the next messages' source rows belong to (join/state.h wd_state_set_task). */
void wd_srckey_set_task(wd_srckey_t *sk, uint32_t task);

/* Appends a new change record of the wide table with row kind kind to the caller's list and
 * returns it all NULL (for the caller to own), or NULL on no memory. */
typedef wd_row_t *(*wd_srckey_add_cb)(void *ctx, wd_row_kind_t kind);

/* Applies the n records (rows of wd_srckey_schema(sk, id), borrowed; their kinds as decoded:
 * absent before-image columns allowed) of one message of source id to its source rows, and
 * hands the wide table's change records derived from them (above) to add, in order. *null_key
 * (may be NULL) is increased by the halves left out for a NULL wide key. On an error the source
 * rows may hold part of the message (the caller abandons the batch or dead-letters the record:
 * the records of one message are applied together or not at all as far as the caller keeps
 * wd_state_discard for errors). Errors: those of wd_message_apply (WD_ERR_RECORD with err->index);
 * E_STORE_READ, E_STATE_CORRUPT, E_NOMEM; E_INTERNAL for an unknown id or before start. */
wd_error_t *wd_srckey_apply(wd_srckey_t *sk, int id, wd_row_t *const *recs, size_t n, wd_srckey_add_cb add, void *ctx,
                            unsigned *null_key);

/* Source rows read from the store or the cache since start, and derived records handed out. */
void wd_srckey_counts(const wd_srckey_t *sk, uint64_t *messages, uint64_t *derived);

#endif
