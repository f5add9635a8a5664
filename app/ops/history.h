/*
 * app/ops/history.h — the commit history: one record per commit, kept in the state store's "meta"
 * column family next to the rows and offsets it describes, so that history and state are durable
 * together (the record goes into the commit's own state write batch).
 *
 * Layout in "meta": "history/<number, 20 decimal digits>" -> the record as one JSON object
 *   {"number":N,"time_ms":T,"mode":"incremental|rebuild|restore",
 *    "in":[{"topic":..,"partition":..,"from":..,"to":..}],   input offsets [from, to) per partition
 *    "out":[{"topic":..,"partition":..,"from":..,"to":..}],  changelog offsets [from, to) per
 *                                                           output partition (delivery reports)
 *    "records_in":..,"changes_out":..,"dead_letters":..,"duration_ms":..}
 * "history/last" -> the last number (decimal text) and "history/first" -> the oldest number kept
 * (decimal text; written by wd_history_add_retained). Numbers start at 1 and increase by one per
 * commit. Retention (wd_history_retention_t: state.history-retention, state.history-max-bytes,
 * state.history-size): the oldest records are deleted in the batch of the commit that makes them
 * too old, too many or the history too big, so what is kept is always numbers first..last.
 * Incremental table engines keep such a refresh history (mode, input range, rows, duration);
 * `widen status` prints it and `widen changes` reads the output ranges it names.
 *
 * Thread: the functions touch only their arguments (one thread per store, store.h).
 */
#ifndef WD_HISTORY_H
#define WD_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/error.h"
#include "join/store.h"

/* Offsets [from, to) of one partition. */
typedef struct wd_commit_range {
  const char *topic;
  int32_t partition;
  int64_t from, to;
} wd_commit_range_t;

/* One commit (all borrowed by wd_history_add). out: per output-topic partition, the offsets of the
 * changelog messages of that commit, [first, last+1), from delivery reports. */
typedef struct wd_commit_info {
  uint64_t number; /* 1, 2, ... */
  int64_t time_ms; /* wall clock, ms since the epoch, when the commit was made */
  const char *mode; /* "incremental", "rebuild" or "restore" */
  const wd_commit_range_t *in;
  size_t nin;
  const wd_commit_range_t *out;
  size_t nout;
  uint64_t records_in, changes_out, dead_letters;
  double duration_ms; /* from the batch's first processing step to its commit; stored and printed rounded to 0.1 ms */
} wd_commit_info_t;

/* The meta name of the last number. */
#define WD_HISTORY_LAST_KEY "history/last"

/* Adds the record of ci (borrowed) to b, the commit's state write batch, together with
 * "history/last" and, when keep > 0 and ci->number > keep, the deletion of record
 * ci->number - keep (so at most keep records stay; keep 0 keeps all). Returns 0, or -1 on no
 * memory or a NULL argument (b is then unchanged but for ops already added: discard b). */
int wd_history_add(wd_store_batch_t *b, const wd_commit_info_t *ci, size_t keep);

/* The last commit number in the store (0 when it has no history). Errors: "E_STORE_READ",
 * WD_ERR_IO "E_STATE_CORRUPT" when the stored value is not a number. */
wd_error_t *wd_history_last(wd_store_t *st, uint64_t *number);

/* A record read back: info's strings and arrays are owned by the entry. */
typedef struct wd_history_entry {
  wd_commit_info_t info;
  char *mode;
  wd_commit_range_t *in, *out; /* topics owned too */
} wd_history_entry_t;

/* How much history is kept (state.history-*): a record is dropped once it is older than max_age_ms
 * (by its time_ms, against the newest record's), once the records' JSON bytes together exceed
 * max_bytes (oldest first), or once more than keep records are kept. 0 in a field: no limit of that
 * kind. The newest record is always kept. */
typedef struct wd_history_retention {
  int64_t max_age_ms;
  uint64_t max_bytes;
  size_t keep;
} wd_history_retention_t;

/* The kept records' numbers, times and sizes, in memory (about 24 bytes a record), so that
 * retention needs no reads in the commit path. Owned by its creator (wd_history_kept_free). */
typedef struct wd_history_kept wd_history_kept_t;

/* Indexes the history already in st (first..last: one read per record; about 1 s for 400 000
 * records). *out owned by the caller. Errors: "E_STORE_READ", "E_STATE_CORRUPT" (a record without
 * time_ms), E_NOMEM. */
wd_error_t *wd_history_kept_load(wd_store_t *st, wd_history_kept_t **out);
void wd_history_kept_free(wd_history_kept_t *k); /* accepts NULL */
/* Records kept and their JSON bytes together, as of the last wd_history_add_retained. */
void wd_history_kept_stats(const wd_history_kept_t *k, uint64_t *records, uint64_t *bytes);

/* Adds the record of ci to b as wd_history_add does (without its count limit), then deletes in b
 * the oldest records r says to drop (k tells which, and is updated: a record put again under the
 * same number replaces its entry) and sets "history/first". Returns 0, or -1 on no memory or a
 * NULL argument (discard b). When b is then discarded, k may name as dropped records that stay in
 * the store: they are below "history/first", never read, and deleted by no later commit. */
int wd_history_add_retained(wd_store_batch_t *b, const wd_commit_info_t *ci, const wd_history_retention_t *r,
                            wd_history_kept_t *k);

/* What the history holds: first..last (0..0 when none) and their commit times (ms since the
 * epoch; 0 when none). For callers that must say when a requested range reaches outside it.
 * Errors: as wd_history_first and wd_history_get. */
wd_error_t *wd_history_kept_range(wd_store_t *st, uint64_t *first, int64_t *first_time_ms, uint64_t *last,
                                  int64_t *last_time_ms);

/* Reads record `number`: *out a new entry (wd_history_entry_free), or NULL when the store has no
 * such record (never written, or dropped by keep). Errors: "E_STORE_READ", "E_STATE_CORRUPT"
 * (the record is not the JSON above), E_NOMEM. */
wd_error_t *wd_history_get(wd_store_t *st, uint64_t number, wd_history_entry_t **out);
void wd_history_entry_free(wd_history_entry_t *e);

/* The oldest number still kept: "history/first" when set (and its record there), else walking back
 * from the last (histories written before "history/first" existed): 0 when there is no history. */
wd_error_t *wd_history_first(wd_store_t *st, uint64_t *number);

/* Appends ci as the record's JSON object (compact, no newline) to out. 0, or -1 on no memory. */
int wd_history_to_json(const wd_commit_info_t *ci, wd_buf_t *out);

#endif
