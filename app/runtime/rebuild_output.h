/*
 * app/runtime/rebuild_output.h — where a rebuild's records go (app/runtime/rebuild.h
 * wd_rebuild_io_t): the one place where they enter the open commit's transaction, through the
 * record collector (app/runtime/collector.h) as every other output: the difference in the sink's
 * formats, encoded as the changelog is (app/runtime/emit.h wd_emit_encode, counted in the
 * emitter's counters and the commit's history record), and the task's state entries to the state
 * changelog topic. A rebalance that aborted the switch in hand (wd_commit_batch_invalid) stops
 * both with E_BATCH_ABANDONED: nothing more of it may be sent, or it would go into the next
 * commit's transaction.
 *
 * Ownership: everything in wd_rebuild_output_t is borrowed and must outlive the io made from it.
 * Thread: the pipeline's.
 */
#ifndef WD_APP_REBUILD_OUTPUT_H
#define WD_APP_REBUILD_OUTPUT_H

#include "app/ops/history_gather.h"
#include "app/runtime/collector.h"
#include "app/runtime/commit.h"
#include "app/runtime/emit.h"
#include "app/runtime/rebuild.h"

typedef struct wd_rebuild_output {
  wd_commit_t *commit; /* the open commit (begun before each send), completed by io.complete */
  wd_collector_t *coll;
  wd_emitter_t *emit; /* the sink's formats and topic, the counters */
  wd_hist_gather_t *hg; /* the commit's history record: the changes out */
  const char *changelog_topic; /* the state changelog topic, or NULL (io.state is then NULL) */
  volatile const int *stop; /* the pipeline's stop, for the commits it completes */
} wd_rebuild_output_t;

/* The io of out (borrowed for the io's life). */
wd_rebuild_io_t wd_rebuild_output_io(wd_rebuild_output_t *out);

#endif
