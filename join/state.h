/*
 * join/state.h — the keyed state: the merge engine's entries kept in a wd_store_t (RocksDB or
 * memory) behind a write-back cache of decoded entries.
 *
 * Per batch of source messages (the pipeline's poll batch; `simulate` uses one message):
 *   wd_state_prefetch()   one multi-get of the batch's distinct keys not already cached;
 *   wd_message_apply(t, wd_state_ops(), st, ...) per message: reads and writes the cache only;
 *   wd_state_flush()      one store write batch holding every entry the batch changed, plus the
 *                         input offsets the caller adds to it (so rows and offsets are durable
 *                         together); then trims the cache to its budget (clean entries only).
 * Entries are encoded with join/row_codec.h; tombstones carry the wall-clock ms the caller gives.
 *
 * Ownership: the state borrows the table and the store (both must outlive it).
 * Thread-safety: one thread at a time.
 */
#ifndef WD_STATE_H
#define WD_STATE_H

#include "join/merge.h"
#include "join/store.h"

typedef struct wd_state wd_state_t;

/* max_cached: entries kept decoded in memory after a flush (0 = 100000). NULL on no memory. */
wd_state_t *wd_state_new(const wd_table_t *t, wd_store_t *st, size_t max_cached);
void wd_state_destroy(wd_state_t *s);

/* Sets the cache's memory budget in bytes (0: entries only). The size of an entry is estimated
 * from its stored size; clean entries are evicted when the estimate or the entry count exceeds
 * its budget. */
void wd_state_set_memory_budget(wd_state_t *s, size_t bytes);
/* The cache's estimated memory use in bytes. */
size_t wd_state_cached_bytes(const wd_state_t *s);

/* The callbacks for wd_message_apply (ctx = the wd_state_t *).
 *   get: lends the cached entry (e->borrowed set; no copy), reading the store on a miss. The row
 *        is valid until the next put of that key, or until the cache may evict it: the next
 *        wd_state_written / wd_state_flush / wd_state_drop_clean / wd_state_discard /
 *        wd_state_drop_task (the end of the batch at the latest); the caller must not change it.
 *        A caller that keeps it longer takes a share (wd_row_share) or a copy (wd_row_copy).
 *   put: takes the new entry's row (no copy); the replaced row is released, and stays alive as
 *        long as a changelog row still shares it (wd_row_view). Cached rows are never
 *        changed in place.
 * Rows decoded from the store and the rows the merge builds are packed (wd_row_pack): the row,
 * its values and its text in one allocation. */
const wd_state_ops_t *wd_state_ops(void);

/* Reads the n keys (encoded primary keys, in the current task) not yet cached with one multi-get.
 * Errors: E_STORE_READ, E_STATE_CORRUPT (an entry that does not decode), E_NOMEM. */
wd_error_t *wd_state_prefetch(wd_state_t *s, size_t n, const uint8_t *const *keys, const size_t *klens);

/* Key layout in the store's "state" family (docs/exactly-once.md): WD_STATE_ROW_NS, the task
 * (source partition) as 4 bytes big-endian, then the encoded primary key. One task's rows are one
 * key range. Other namespace bytes are free for other kinds of entries. */
#define WD_STATE_ROW_NS 'R'
#define WD_STATE_PREFIX_LEN 5

/* Sets the task whose rows the state ops (get/put, from wd_message_apply) and wd_state_prefetch
 * address from now on (default 0; `simulate` uses 0). */
void wd_state_set_task(wd_state_t *s, uint32_t task);

/* As wd_state_prefetch, key i in task tasks[i] (tasks NULL: the current task). */
wd_error_t *wd_state_prefetch_tasks(wd_state_t *s, size_t n, const uint32_t *tasks, const uint8_t *const *keys,
                                    const size_t *klens);

/* Drops every dirty (uncommitted) entry from the cache: after an aborted commit the next read
 * of those keys gets the committed entry from the store. Clean entries stay. */
void wd_state_discard(wd_state_t *s);

/* Forgets task `task`: its cached entries are dropped and a deletion of its whole key range (under
 * the state's namespace, wd_state_set_namespace) is added to b, with the hooks' drop_task first (the caller writes b, with the task's offsets removed, in one write). Errors:
 * E_INTERNAL when the task has uncommitted entries; E_NOMEM. */
wd_error_t *wd_state_drop_task(wd_state_t *s, uint32_t task, wd_store_batch_t *b);

/* The undo image (join/store.h wd_store_batch_prior; docs/exactly-once.md): when on, each
 * snapshot records with every entry it adds to b the entry the key had in the store before
 * (re-encoded from the row read before the merge, a tombstone with its own time, so the same
 * bytes unless the schema got columns appended since), so a commit can be written before its
 * outcome is known and taken back. A key put without being read has no prior
 * (wd_store_undo_image reads it). Off by default (the commit coordinator turns it on under
 * exactly-once); changed only between snapshots (ignored while entries are dirty). */
void wd_state_set_undo(wd_state_t *s, bool on);

/* Sets the wall-clock ms written into new tombstones (for state.tombstone-retention). */
void wd_state_set_now(wd_state_t *s, uint64_t now_ms);

/* Adds every dirty entry to batch b (puts, or deletes for absent keys), then writes b to the
 * store (b may already hold offsets; it is cleared afterwards). Errors: E_STORE_WRITE, E_NOMEM;
 * on error the dirty entries stay dirty. */
wd_error_t *wd_state_flush(wd_state_t *s, wd_store_batch_t *b);

/* Pipelined form of wd_state_flush, for overlapping a batch's acknowledgement wait with the next
 * batch's work: wd_state_snapshot adds every dirty entry to b (encoded now, so later changes of
 * the cache do not reach b), marks them clean and returns the snapshot's number in *snap; the
 * caller writes b with wd_store_write when the batch's output is acknowledged (snapshots in
 * order) and then calls wd_state_written(snap). Entries whose latest bytes are in a snapshot not
 * yet written are never evicted, so reads keep seeing them. Errors: E_NOMEM. */
wd_error_t *wd_state_snapshot(wd_state_t *s, wd_store_batch_t *b, uint64_t *snap);
void wd_state_written(wd_state_t *s, uint64_t snap);

/* Drops every clean cached entry (dirty ones stay until flushed): after a consumer-group
 * rebalance another process may own some keys now, so their cached rows may go stale. Entries
 * of snapshots not yet written stay. */
void wd_state_drop_clean(wd_state_t *s);

/* Key lookups of wd_state_prefetch (and of reads that miss the cache) since wd_state_new: found
 * in the cache (*hits) or read from the store (*misses), for the cache hit rate. */
void wd_state_cache_counts(const wd_state_t *s, uint64_t *hits, uint64_t *misses);
/* Other layers' entries in the same store batch (join/lookup.h): hooks called by the state at
 * the points where its own entries move, so that they are written in the same RocksDB write as
 * the wide rows and the offsets without the callers knowing of them.
 *   snapshot: from wd_state_snapshot (and so wd_state_flush) after the state's own entries were
 *             added to b, with the snapshot's number; an error fails the snapshot.
 *   written:  from wd_state_written with the number of the last snapshot now in the store.
 *   drop_clean: from wd_state_drop_clean.  discard: from wd_state_discard.
 * Any may be NULL. ctx is borrowed (it must outlive the state or be unset with hooks NULL). */
typedef struct wd_state_hooks {
  wd_error_t *(*snapshot)(void *ctx, wd_store_batch_t *b, uint64_t snap);
  void (*written)(void *ctx, uint64_t snap);
  void (*drop_clean)(void *ctx);
  void (*discard)(void *ctx);
  /* from wd_state_drop_task, before the state adds its own range deletion to b: the layer drops
   * its own entries of task `task` into b as well */
  wd_error_t *(*drop_task)(void *ctx, uint32_t task, wd_store_batch_t *b);
} wd_state_hooks_t;
void wd_state_set_hooks(wd_state_t *s, const wd_state_hooks_t *hooks, void *ctx);
/* A second set of hooks, for a second layer beside the one of wd_state_set_hooks (join/srckey.h:
 * the sources' own rows), called after the first set at the same points. hooks NULL unsets it.
 * 0, or -1 when a second set is already there. */
int wd_state_add_hooks(wd_state_t *s, const wd_state_hooks_t *hooks, void *ctx);

/* Sets the namespace byte of this state's keys (default WD_STATE_ROW_NS): another layer keeping
 * its own entries in a wd_state (join/lookup.h: lookup rows under 'L', the task being the lookup)
 * uses another byte, so that wd_state_scan_rows and wd_state_drop_task of the wide state never see
 * them. Set it before the first use. */
void wd_state_set_namespace(wd_state_t *s, uint8_t ns);

/* Sets the column count of the rows first written (0: the schema's): a state over another
 * schema than the wide table's (join/srckey.h) does not take the wide table's count that
 * wd_state_new reads from the store's meta. Set it before the first use. */
void wd_state_set_base_ncols(wd_state_t *s, size_t n);

/* Number of dirty entries and of cached entries. */
size_t wd_state_dirty(const wd_state_t *s);
size_t wd_state_cached(const wd_state_t *s);

/* Checks that the store belongs to this table: its schema (columns, types, primary key) is
 * recorded in the store on first use and compared on every later open, since the stored-row
 * encoding depends on it. dir (may be NULL) names the directory in the message.
 * Errors: WD_ERR_CONFIG "C_STATE_SCHEMA" when it differs; E_STORE_READ/E_STORE_WRITE. */
wd_error_t *wd_state_check_table(wd_state_t *s, const char *dir);

/* Calls cb for every stored row (tombstones skipped), reading the store after a flush.
 * row is borrowed for the call. */
typedef int (*wd_state_row_cb)(void *ctx, const wd_row_t *row);
wd_error_t *wd_state_scan_rows(wd_state_t *s, wd_state_row_cb cb, void *ctx);

/* A filter of the row scans (wd_state_scan_rows, wd_state_rows_sorted): the rows of a task for
 * which keep(ctx, task) is false are left out and counted (wd_state_left_out, reset here). keep
 * NULL: every row. For listing tools (`widen rows` leaves out the tasks another member moved on). */
void wd_state_set_task_filter(wd_state_t *s, bool (*keep)(void *ctx, uint32_t task), void *ctx);
uint64_t wd_state_left_out(const wd_state_t *s);

/* Every stored row (tombstones skipped), read from the store (flush first), sorted by primary key
 * (wd_value_cmp per key column): *rows is a new array of *n new rows, released with
 * wd_state_rows_free. Errors: those of wd_state_scan_rows, E_NOMEM. */
wd_error_t *wd_state_rows_sorted(wd_state_t *s, wd_row_t ***rows, size_t *n);
void wd_state_rows_free(wd_state_t *s, wd_row_t **rows, size_t n);

#endif
