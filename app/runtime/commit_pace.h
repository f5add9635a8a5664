/*
 * app/runtime/commit_pace.h — when the open commit is due: the adaptive commit interval.
 *
 * Under exactly-once the output of a commit becomes visible to read_committed consumers only when
 * its transaction commits, so the commit interval is the visible latency's floor; but every
 * commit has a fixed cost (four transaction round trips, a RocksDB write, ~1.5-2 ms of CPU on the
 * benchmark machine) that a long interval spreads over more records. The interval therefore
 * follows the load:
 *
 *   - behind (a backlog: the last poll returned a full batch, `pipeline.batch-size`, so more
 *     records were waiting), or at-least-once (its output is visible as it is produced; the
 *     interval only bounds what a crash repeats): the configured `pipeline.commit-interval-ms`,
 *     for throughput: as Kafka Streams' fixed `commit.interval.ms`;
 *   - caught up (the poll drained what was fetched): as short as the pipeline's idle time allows.
 *     A commit holds the pipeline for its duration D; at a processing share u of the wall time
 *     (input rate x processing time per record), commits may take at most WD_COMMIT_PACE_IDLE_SHARE
 *     of the remaining 1 - u. With commits every interval I taking D each, their share is
 *     D / (I + D), so
 *
 *         I = D * (1 / (WD_COMMIT_PACE_IDLE_SHARE * (1 - u)) - 1)
 *
 *     bounded below by `pipeline.commit-interval-min-ms` and above by `pipeline.commit-interval-ms`.
 *     At a low rate (u near 0) this is about D/4: commits follow one another (visible latency about
 *     twice a commit's duration); as the rate rises the interval grows, and it reaches the bound
 *     before the pipeline runs out of idle time, so the commits never make it fall behind.
 *
 * A commit-interval-min-ms equal to (or above) commit-interval-ms fixes the interval (Kafka
 * Streams' behaviour). Setting commit-interval-ms itself is unchanged: the longest a commit stays
 * open. docs/exactly-once.md "What a commit is" describes it for users.
 */
#ifndef WD_APP_COMMIT_PACE_H
#define WD_APP_COMMIT_PACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The share of the pipeline's idle time that commits may take while it is caught up. */
#define WD_COMMIT_PACE_IDLE_SHARE 0.8

typedef struct {
  int64_t max_ms; /* pipeline.commit-interval-ms: the bound, and the interval when behind */
  int64_t min_ms; /* pipeline.commit-interval-min-ms: the floor */
  bool adaptive; /* exactly-once (false: at-least-once, the interval is max_ms) */
  bool backlog; /* the last poll returned a full batch: records were waiting */
  double rate; /* input records per second, recent (0 when unknown) */
  double record_us; /* the pipeline thread's processing time per record, microseconds, recent */
  double commit_ms; /* a commit's duration (wall), milliseconds, recent (0 when none yet) */
} wd_commit_pace_t;

/* The commit interval in milliseconds for the inputs in (borrowed) by the rule above: max_ms when
 * !adaptive, backlog, min_ms >= max_ms, or the pipeline is busy all the time (u >= 1); else
 * D * (1 / (WD_COMMIT_PACE_IDLE_SHARE * (1 - u)) - 1) rounded up, clamped to [min_ms, max_ms],
 * with u = rate * record_us / 1e6 (negative inputs count as 0). Pure: no clock, no state. */
int64_t wd_commit_pace_interval_ms(const wd_commit_pace_t *in);

/* The pacer: the rule's inputs measured by the loop, beside the rule. The loop reports each poll
 * (wd_commit_pacer_batch) and each commit it waited for (wd_commit_pacer_commit); the rate and the
 * processing time per record are measured over windows of at least 200 ms and smoothed (the past
 * weighs half at each window), a commit's duration likewise (0.7 the past). Plain data: the
 * pipeline holds one. No clock of its own: the caller passes the monotonic time. */
typedef struct {
  wd_commit_pace_t in; /* the rule's inputs */
  int64_t interval; /* the interval in force, ms (the last wd_commit_pacer_interval) */
  double win_t0; /* the window's start (monotonic s; 0: none yet) */
  double win_busy; /* ... seconds spent processing batches in it */
  uint64_t win_records; /* ... records taken in it */
} wd_commit_pacer_t;

/* A pacer at max_ms (pipeline.commit-interval-ms) with the floor min_ms; adaptive under
 * exactly-once. */
void wd_commit_pacer_init(wd_commit_pacer_t *pc, int64_t max_ms, int64_t min_ms, bool adaptive);
/* After each poll at monotonic time now: n records taken, full when the poll returned a whole
 * batch (a backlog), busy_s seconds spent processing them; closes the window every 200 ms. */
void wd_commit_pacer_batch(wd_commit_pacer_t *pc, double now, size_t n, bool full, double busy_s);
/* A commit the loop waited for took ms milliseconds. */
void wd_commit_pacer_commit(wd_commit_pacer_t *pc, double ms);
/* Whether records are waiting (a backlog: the configured interval) regardless of the last poll. */
void wd_commit_pacer_backlog(wd_commit_pacer_t *pc, bool backlog);
/* The interval now (wd_commit_pace_interval_ms of the measured inputs), kept in pc->interval. */
int64_t wd_commit_pacer_interval(wd_commit_pacer_t *pc);

#endif
