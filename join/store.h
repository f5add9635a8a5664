/*
 * join/store.h — the keyed state store: one entry (stored-row encoding, join/row_codec.h) per
 * primary key, plus the input offsets that the entries reflect. Behind a function-pointer table
 * (like Redis' rio) so tests and `--store memory` can use the in-memory store; the daemon uses
 * RocksDB (store_rocksdb.c, the only file that includes RocksDB).
 *
 * RocksDB layout: column family "state" (key bytes -> entry bytes), column family "meta"
 * ("offset/<topic>/<partition>" -> decimal next offset; other bookkeeping). A write batch makes
 * rows, tombstones and offsets durable together (one atomic RocksDB write).
 *
 * Thread-safety: one thread uses a store at a time.
 */
#ifndef WD_STORE_H
#define WD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

typedef struct wd_store wd_store_t;
typedef struct wd_store_batch wd_store_batch_t;

typedef struct wd_store_options {
  size_t block_cache_bytes; /* RocksDB LRU block cache; 0 = 64 MiB */
  int64_t tombstone_retention_ms; /* < 0: keep tombstones forever (default); else a compaction
                                     filter drops tombstones older than this (entry bytes 2-9) */
  bool sync; /* fsync each write batch (default false: WAL without fsync) */
  uint64_t min_free_bytes; /* the disk guard: 0 off; else every write first measures the free
                                   bytes of dir's filesystem (statvfs) and fails with
                                   E_STATE_DISK_FULL below this (state.min-free-bytes) */
} wd_store_options_t;

/* The disk guard's last measure (any thread): the free bytes of the filesystem of the RocksDB
 * store last opened with min_free_bytes > 0, measured at its open and before each of its writes
 * (-1 before any), and whether they were below its min_free_bytes ("state disk short": the
 * metrics' gauge and readiness false while short). */
int64_t wd_store_disk_free_bytes(void);
bool wd_store_disk_short(void);
/* Measures the guarded store's filesystem again now (the first store opened with min_free_bytes
 * > 0 in this process), updating what the two above return; its free bytes, or -1. Any thread. */
int64_t wd_store_disk_refresh(void);
/* The free bytes an unprivileged writer has on dir's filesystem now (statvfs f_bavail *
 * f_frsize), or -1 when it cannot be measured. */
int64_t wd_store_disk_measure(const char *dir);

/* Opens (creating if needed) a RocksDB store in dir. opts may be NULL for defaults.
 * Errors: WD_ERR_IO "E_STORE_OPEN" with RocksDB's text; "E_STORE_LOCKED" when another process
 * holds the directory (the message names the directory and says to stop that process). */
wd_error_t *wd_store_open_rocksdb(const char *dir, const wd_store_options_t *opts, wd_store_t **out);
/* Opens the RocksDB store in dir read-only, without its lock, as a RocksDB secondary instance
 * caught up with the running primary at the call (for `widen status` while `widen run` runs):
 * reads see the primary's data as of the catch-up; writes (wd_store_write, wd_store_compact) fail
 * with "E_STORE_WRITE". Errors: WD_ERR_IO "E_STORE_OPEN" (no such directory, no store in it, or
 * RocksDB's text); E_NOMEM. */
wd_error_t *wd_store_open_rocksdb_secondary(const char *dir, wd_store_t **out);
/* An in-memory store (a hash map); never fails but for memory. */
wd_error_t *wd_store_open_memory(wd_store_t **out);
/* Closes and frees; accepts NULL. */
void wd_store_close(wd_store_t *st);

/* Looks up n keys at once. For each i, vals[i] receives a malloc'd copy of the entry (caller
 * frees with free()) and vlens[i] its length, or NULL/0 when absent. Errors: WD_ERR_IO
 * "E_STORE_READ" (all vals are then NULL). */
wd_error_t *wd_store_multi_get(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                               uint8_t **vals, size_t *vlens);

/* Called by wd_store_multi_get_each for key i: its entry val[0..vlen) (NULL/0 when absent),
 * borrowed for the call only (RocksDB's pinned block, no copy). Returns NULL, or an error that
 * stops the lookups and is returned by wd_store_multi_get_each. */
typedef wd_error_t *(*wd_store_value_cb)(void *ctx, size_t i, const uint8_t *val, size_t vlen);
/* As wd_store_multi_get, but each entry is handed to cb where it lies instead of being copied
 * (for a decoder: join/state.c). cb is called once per key, in key order, after all were read.
 * Errors: those of wd_store_multi_get (then cb is not called), or cb's. */
wd_error_t *wd_store_multi_get_each(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                    wd_store_value_cb cb, void *ctx);

/* A batch of writes applied atomically by wd_store_write. */
wd_store_batch_t *wd_store_batch_new(void); /* NULL on no memory */
void wd_store_batch_destroy(wd_store_batch_t *b);
void wd_store_batch_clear(wd_store_batch_t *b);
/* Each copies its arguments; returns 0 or -1 on no memory. */
int wd_store_batch_put(wd_store_batch_t *b, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
int wd_store_batch_delete(wd_store_batch_t *b, const uint8_t *key, size_t klen);
/* Records that everything before next_offset of (topic, partition) is reflected by this batch. */
int wd_store_batch_set_offset(wd_store_batch_t *b, const char *topic, int32_t partition, int64_t next_offset);

/* Records bookkeeping value val[0..vlen) under name (copied) in "meta" (names starting with
 * "offset/" are the offsets' and refused). 0, or -1 on no memory or bad arguments. */
int wd_store_batch_set_meta(wd_store_batch_t *b, const char *name, const uint8_t *val, size_t vlen);
/* Reads the meta value of name: *val malloc'd (caller frees) or NULL when absent. Errors:
 * "E_STORE_READ". */
wd_error_t *wd_store_get_meta(wd_store_t *st, const char *name, uint8_t **val, size_t *vlen);

/* Removes meta value name (not an offset). 0, or -1 on no memory or bad arguments. */
int wd_store_batch_delete_meta(wd_store_batch_t *b, const char *name);
/* Removes the stored offset of (topic, partition). 0, or -1 on no memory or bad arguments. */
int wd_store_batch_delete_offset(wd_store_batch_t *b, const char *topic, int32_t partition);
/* Removes the stored offsets of every partition of topic. 0, or -1. */
int wd_store_batch_delete_offsets(wd_store_batch_t *b, const char *topic);
/* Removes every "state" key k with begin <= k < end (bytewise order): one task's rows. begin is at
 * most WD_STORE_RANGE_BEGIN_MAX bytes (a task's prefix, join/state.h): the RocksDB backend gives
 * the memtable insert hints per prefix of the state keys' first WD_STORE_RANGE_BEGIN_MAX + 1 bytes,
 * and in RocksDB 7.8 a range deletion whose begin key is in that domain shares the hints with the
 * row keys and corrupts the memtable (facebook/rocksdb#5118, fixed in 9.x by #12558); a shorter begin
 * key never takes a hint. 0, or -1 on no memory or a longer begin key. */
#define WD_STORE_RANGE_BEGIN_MAX 5
int wd_store_batch_delete_range(wd_store_batch_t *b, const uint8_t *begin, size_t blen, const uint8_t *end,
                                size_t elen);
/* Number of ops in b. */
size_t wd_store_batch_count(const wd_store_batch_t *b);
/* Bytes of b's keys and values together (0 for NULL). */
size_t wd_store_batch_size(const wd_store_batch_t *b);

/* Appends every op of src to dst, in order (copied; src's undo image is not). 0, or -1 on no
 * memory or a NULL batch (dst then holds some of them). */
int wd_store_batch_append(wd_store_batch_t *dst, const wd_store_batch_t *src);
/* The deferred state flush (docs/exactly-once.md "Deferred state flush"): the committed commits'
 * batches written as one.
 * Appends to out what writing runs[0..n) in order would leave, in fewer ops: every "state" key once,
 * with its last put or delete (a later run's op wins, and a later op within a run), in bytewise
 * key order; then every other op of the runs, run by run, in order. Cost: the runs' state ops
 * cut into segments of increasing keys (a commit's rows are one), merged pairwise. With a range
 * deletion of "state" in any run, every op is appended as it is (its order matters). The runs are
 * not changed. 0, or -1 on no memory or NULL arguments (out then holds part of it). */
int wd_store_batch_merge(wd_store_batch_t *out, wd_store_batch_t *const *runs, size_t n);

/* Calls cb for every "state" put and delete of b, in order (val NULL for a delete); stops when cb
 * returns non-zero and returns that. Range deletes and meta ops are not visited. */
typedef int (*wd_store_batch_cb)(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
int wd_store_batch_foreach_state(const wd_store_batch_t *b, wd_store_batch_cb cb, void *ctx);

/* Serialises b's ops (in order) to out (appended): the commit coordinator keeps a prepared
 * commit's batch in meta until it knows the commit's outcome (docs/exactly-once.md). The format
 * is private to the store: a 4-byte op count, then per op a kind byte, a 4-byte key length, the
 * key, a 4-byte value length, the value (big-endian). 0, or -1 on no memory. */
int wd_store_batch_encode(const wd_store_batch_t *b, wd_buf_t *out);
/* Appends the ops of data[0..len) (from wd_store_batch_encode) to b. 0, or -1 on no memory or
 * malformed or truncated data (b then holds the ops before the bad one). */
int wd_store_batch_decode(wd_store_batch_t *b, const uint8_t *data, size_t len);

/* The undo image (docs/exactly-once.md, "write once with an undo image"): a commit's state ops are
 * written before its transaction's outcome is known, together with the ops that restore every key
 * they change, so that recovery can take them back.
 *
 * wd_store_batch_prior: records val[0..vlen) (copied; val NULL: the key was absent) as the entry
 * the key of b's last op (a "state" put or delete) had in the store before b, for the undo image
 * (join/state.c records it from the row it loaded and merged, so no read is needed). 0, or -1 on
 * no memory, when the last op is not a state put/delete, or when it has a prior already.
 *
 * wd_store_undo_image: appends to out the undo image of b's state puts and deletes in
 * wd_store_batch_encode's format (wd_store_batch_decode reads it back into a batch that, written,
 * restores each key to its prior entry or deletes it): the priors recorded, and for the ops
 * without one the entry read from st now (one multi-get; call it before b is written). Errors:
 * E_STORE_READ, E_NOMEM, E_INTERNAL when b holds a range deletion of "state". */
int wd_store_batch_prior(wd_store_batch_t *b, const uint8_t *val, size_t vlen);
wd_error_t *wd_store_undo_image(wd_store_t *st, const wd_store_batch_t *b, wd_buf_t *out);

/* Applies b atomically. Errors: WD_ERR_IO "E_STORE_WRITE"; "E_STATE_DISK_FULL" from the disk
 * guard (wd_store_options_t.min_free_bytes; nothing applied). */
wd_error_t *wd_store_write(wd_store_t *st, wd_store_batch_t *b);
/* The same, and durable before it returns (RocksDB: the WAL is fsync'ed), whatever
 * wd_store_options_t.sync says: for the prepared record of a commit. */
wd_error_t *wd_store_write_sync(wd_store_t *st, wd_store_batch_t *b);
/* Applies first's ops, then second's, as one atomic write (RocksDB: one write batch), fsync'ed
 * when sync (else as wd_store_write). Neither batch is changed. Errors: "E_STORE_WRITE". */
wd_error_t *wd_store_write_both(wd_store_t *st, const wd_store_batch_t *first, const wd_store_batch_t *second,
                                bool sync);

/* The next offset stored for (topic, partition), or -1 in *next_offset when none. */
wd_error_t *wd_store_get_offset(wd_store_t *st, const char *topic, int32_t partition, int64_t *next_offset);

/* Calls cb for every entry in key order (RocksDB) or unspecified order (memory) until cb returns
 * non-zero. The bytes are valid only during the call. */
typedef int (*wd_store_scan_cb)(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
wd_error_t *wd_store_scan(wd_store_t *st, wd_store_scan_cb cb, void *ctx);

/* Calls cb for every entry whose key starts with prefix[0..plen), in key order, until cb returns
 * non-zero (RocksDB: one iterator seek, then next while the prefix matches, filling the block
 * cache since these scans are on the hot path of join/lookup.c's fan-out; memory: a pass over
 * every entry, then sorted). cb must not write to the store. Errors: WD_ERR_IO "E_STORE_READ";
 * E_NOMEM (memory store). */
wd_error_t *wd_store_scan_prefix(wd_store_t *st, const uint8_t *prefix, size_t plen, wd_store_scan_cb cb, void *ctx);

/* As wd_store_scan_prefix, starting at the first key >= from[0..flen) (from NULL: the prefix's
 * first key): a caller reads a key range in chunks of bounded size (stop in cb, then go on from
 * the last key seen with a 0 byte appended), e.g. two ranges side by side in key order
 * (app/runtime/rebuild.c). Errors: as wd_store_scan_prefix. */
wd_error_t *wd_store_scan_prefix_from(wd_store_t *st, const uint8_t *prefix, size_t plen, const uint8_t *from,
                                      size_t flen, wd_store_scan_cb cb, void *ctx);

/* Approximate bytes on disk (RocksDB: SST + WAL); 0 for memory. */
uint64_t wd_store_disk_bytes(wd_store_t *st);

/* Compacts the whole store now (RocksDB: a manual compaction of "state" and "meta" down to the
 * bottommost level, which runs the tombstone-retention filter; memory: nothing). Blocks until
 * done, so it is for tests and operator commands, not the hot path. Same thread rules as the
 * rest of the store. Errors: WD_ERR_IO "E_STORE_WRITE" when RocksDB reports a background error. */
wd_error_t *wd_store_compact(wd_store_t *st);

#endif
