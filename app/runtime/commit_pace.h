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
#include <stdint.h>

/* The share of the pipeline's idle time that commits may take while it is caught up. */
#define WD_COMMIT_PACE_IDLE_SHARE 0.8

typedef struct {
  int64_t max_ms;    /* pipeline.commit-interval-ms: the bound, and the interval when behind */
  int64_t min_ms;    /* pipeline.commit-interval-min-ms: the floor */
  bool adaptive;     /* exactly-once (false: at-least-once, the interval is max_ms) */
  bool backlog;      /* the last poll returned a full batch: records were waiting */
  double rate;       /* input records per second, recent (0 when unknown) */
  double record_us;  /* the pipeline thread's processing time per record, microseconds, recent */
  double commit_ms;  /* a commit's duration (wall), milliseconds, recent (0 when none yet) */
} wd_commit_pace_t;

/* The commit interval in milliseconds for the inputs in (borrowed) by the rule above: max_ms when
 * !adaptive, backlog, min_ms >= max_ms, or the pipeline is busy all the time (u >= 1); else
 * D * (1 / (WD_COMMIT_PACE_IDLE_SHARE * (1 - u)) - 1) rounded up, clamped to [min_ms, max_ms],
 * with u = rate * record_us / 1e6 (negative inputs count as 0). Pure: no clock, no state. */
int64_t wd_commit_pace_interval_ms(const wd_commit_pace_t *in);

#endif
