/*
 * app/ops/history_gather.h — what the open commit took, gathered for its history record
 * (app/ops/history.h; out of the pipeline's struct).
 *
 * The pipeline reports each batch taken into the open commit (its input ranges per partition,
 * its counts) and the trace lines of what it applied; at the commit's snapshot what was gathered
 * becomes the completing commit's and the next commit gathers afresh (the next
 * commit's batches may be merged while the completing one commits). The commit coordinator's
 * hooks (app/runtime/commit.h) then put the record into the commit's state batch: once when the
 * state is snapshotted (so that a prepared commit that recovery applies has its record), once
 * when the output is complete, with the output offsets from the delivery reports and the
 * duration; the later put replaces the earlier (same number). A commit made or aborted ends it.
 *
 *   open commit:       note / count / trace   (any number of batches)
 *   snapshot:          open -> completing; open empty
 *   put (twice):       the completing commit's record into its state batch
 *   committed:         its trace lines written, completing emptied
 *   aborted:           both emptied (their output was discarded; their records are read again)
 *
 * Thread: one thread (the pipeline's) calls all of these. Ownership: the gatherer owns its
 * ranges and trace buffers; topic names are borrowed (they must outlive the gatherer: the
 * pipeline's own copies).
 */
#ifndef WD_HISTORY_GATHER_H
#define WD_HISTORY_GATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app/ops/history.h"
#include "common/buf.h"
#include "join/store.h"
#include "sink/producer.h"

typedef struct wd_hist_gather wd_hist_gather_t;

/* A new, empty gatherer. sink_topic (borrowed, outlives it): the changelog topic, the only one
 * whose output ranges go into the record (not the dead-letter topic's nor internal topics').
 * keep: state.history-size (records kept; 0 all, wd_history_add). NULL on no memory. */
wd_hist_gather_t *wd_hist_gather_new(const char *sink_topic, size_t keep);
void wd_hist_gather_destroy(wd_hist_gather_t *g); /* accepts NULL */

/* From now on the records are kept by r (copied; app/ops/history.h wd_history_add_retained)
 * instead of keep: the history already in st (borrowed for the call) is indexed first.
 * Errors: as wd_history_kept_load. */
wd_error_t *wd_hist_gather_retain(wd_hist_gather_t *g, const wd_history_retention_t *r, wd_store_t *st);

/* The open commit took the records [from, to) of (topic, partition) (topic borrowed, compared by
 * pointer: one copy per topic); merged with what it took of that partition before. The first
 * note of a commit (before any count) starts its clock. 0, or -1 on no memory (nothing noted). */
int wd_hist_gather_note(wd_hist_gather_t *g, const char *topic, int32_t partition, int64_t from, int64_t to);

/* Adds to the open commit's counts: records taken, changelog rows emitted, records
 * dead-lettered, records merged only to rebuild state (restored). */
void wd_hist_gather_count(wd_hist_gather_t *g, uint64_t records_in, uint64_t changes_out, uint64_t dead_letters,
                          uint64_t restored);

/* The open commit's trace lines (borrowed from g): the pipeline appends to it; written when the
 * commit is made, dropped when it is aborted. */
wd_buf_t *wd_hist_gather_trace(wd_hist_gather_t *g);

/* At the commit's snapshot: what the open commit gathered becomes the completing commit's (what
 * an earlier completing commit held is dropped); the open commit starts empty. */
void wd_hist_gather_snapshot(wd_hist_gather_t *g);

/* Puts the completing commit's record, number `number` (app/ops/history.h wd_history_add with
 * the gatherer's keep), into b: time now, mode "rebuild" when rebuild, else "restore" when every
 * record it took only rebuilt state, else "incremental"; its input ranges and counts; out[0..nout)
 * (borrowed; the collector's delivery ranges, NULL/0 before the output is complete) filtered to
 * the sink topic; the duration from its first note to now (kept: wd_hist_gather_duration_s).
 * 0, or -1 on no memory (discard b, as wd_history_add says). */
int wd_hist_gather_put(wd_hist_gather_t *g, uint64_t number, wd_store_batch_t *b, bool rebuild,
                       const wd_producer_range_t *out, size_t nout);

/* The completing commit's duration in seconds as of its last put (0 when it noted nothing). */
double wd_hist_gather_duration_s(const wd_hist_gather_t *g);

/* The completing commit was made: its trace lines are appended to trace (when not NULL), then it
 * is emptied. The open commit is kept (it may hold the next one's batches already). */
void wd_hist_gather_committed(wd_hist_gather_t *g, FILE *trace);

/* The commit was aborted: the open and the completing commit are emptied, their trace lines
 * dropped. */
void wd_hist_gather_aborted(wd_hist_gather_t *g);

#endif
