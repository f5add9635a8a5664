/*
 * app/runtime/pipeline.h — the main job: Kafka source topics -> decode -> merge engine over the keyed
 * state (RocksDB) -> full-row changelog to the output topic, dead-letter topic for bad input.
 *
 * The loop (wd_pipeline_run), one turn at a time as Kafka Streams' StreamThread.runOnce: the work
 * between polls (an assignment's initialisation, the state changelog's restore, a rebuild's step),
 * poll, process the batch (app/runtime/batch.h: decode, key, one state read, merge, the changelog
 * emitted through app/runtime/emit.h, dead letters, the inputs noted in the open commit), the
 * lookup topics' records (app/runtime/global_table.h), commit when due (the interval of
 * app/runtime/commit_pace.h; the protocol is the commit coordinator's, app/runtime/commit.h,
 * docs/exactly-once.md), report (the metrics, the status line: app/runtime/status_report.h).
 * Every pipeline.commit-interval-ms (or pipeline.commit-max-records records, a rebalance, a stop)
 * the open commit completes: under exactly-once it prepares the state batch, sends the input
 * offsets to the transaction and commits it, then finalizes the state; under at-least-once it waits
 * for the acknowledgements and writes the state with its offsets. Rows changed several times in a
 * commit are written once. With lookup sources and per-partition tasks the lookup topics are read
 * outside the group by app/runtime/global_table.h between the group's polls, in the same commits;
 * each newly assigned task is reconciled with this process's lookup tables before its first record
 * (docs/lookups-scale-out.md). Start-up (wd_pipeline_new) is a list of steps, each in the module it
 * wires; docs/runtime.md is the guide.
 *
 * Thread: one thread runs a pipeline; wd_pipeline_stop() may be called from a signal handler.
 */
#ifndef WD_PIPELINE_H
#define WD_PIPELINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "app/config/config.h"
#include "join/store.h"

typedef struct wd_pipeline wd_pipeline_t;

typedef struct wd_pipeline_opts {
  const char *state_dir; /* overrides cfg->state.dir when set (replay) */
  bool no_output; /* do not produce the changelog (replay --no-output) */
  bool replay; /* assign all partitions without a group; stop at the end offsets seen
                              at start; start from `from_ms` (-1: earliest); at-least-once */
  int64_t from_ms;
  bool quiet; /* no periodic status line */
  const char *trace_path; /* when set: every applied source message is appended as JSON lines
                              {"op","row","message"} in apply order (the input of a
                              `widen simulate` case), for tests and debugging */
  int64_t max_idle_ms; /* > 0: stop after this long without input (tests, demo) */
  const char *stop_at_state; /* replay: stop each partition at the offset stored in this state
                                directory (closed; the old state of an automatic rebuild)
                                instead of the end offsets; later records are not taken */
  const volatile sig_atomic_t *start_stop; /* when set and non-zero during wd_pipeline_new: a stop
                                came (a signal); its waits (the schema registry's registration)
                                end with E_STOPPED instead of waiting on (borrowed) */
  wd_store_t *store; /* when set: the state directory's store, already opened by the start's checks
                        with wd_pipeline_store_options (wd_definition_prepare_open), so that it is
                        opened once; wd_pipeline_new takes it over (closes it on every path) */
} wd_pipeline_opts_t;

/* The store options the pipeline opens its state directory with (state.tombstone-retention-ms,
 * state.min-free-bytes): for a caller that opens the store before wd_pipeline_new and hands it
 * over in wd_pipeline_opts_t.store. */
void wd_pipeline_store_options(const wd_config_t *cfg, wd_store_options_t *so);

/* Counters, also printed in the status line and the summary. */
typedef struct wd_pipeline_stats {
  uint64_t records_in; /* Kafka records consumed */
  uint64_t changes_in; /* change records decoded from them */
  uint64_t changes_out; /* changelog rows emitted */
  uint64_t messages_out; /* output Kafka messages */
  uint64_t dead_lettered;
  uint64_t skipped_tombstones; /* Kafka tombstones (null values) of the sources, skipped */
  uint64_t ignored_update_before;
  uint64_t tombstones; /* ordering tombstones written (spec D7) */
  uint64_t dropped; /* records dropped by ignore-delete / first-row */
  uint64_t batches;
  uint64_t skipped_before_from; /* replay --from: records older than the point in time */
  uint64_t restored; /* records merged without output while a task was rebuilt */
  uint64_t repartitioned; /* records produced to repartition topics (one per wide key of a source record) */
  uint64_t misplaced; /* records of sources read directly found outside their wide key's partition */
  uint64_t aborted_commits; /* commits aborted (abortable errors, rebalances mid-batch) */
  uint64_t commits; /* commits completed */
  uint64_t deletes_without_sequence; /* -D records whose sequence field was NULL or absent (key-only
                                        deletes), handled by the source's delete-without-sequence */
  uint64_t null_key_halves; /* halves of updates/deletes whose primary key is NULL, left out
                                (ingest/format.h: a NULL key holds no row) */
  uint64_t key_only_before; /* records of PostgreSQL's REPLICA IDENTITY DEFAULT without the row in their
                                before image (ingest/source.h WD_CHANGES_KEY_ONLY_BEFORE) */
  int64_t lag;
} wd_pipeline_stats_t;

/* Builds the pipeline from cfg (borrowed; must outlive the pipeline): table, sources, store,
 * producer and consumer. Errors: the config's C_... errors (table, sources), E_STORE_OPEN /
 * E_STORE_LOCKED, Kafka client errors. */
wd_error_t *wd_pipeline_new(const wd_config_t *cfg, const wd_pipeline_opts_t *opts, wd_pipeline_t **out);

/* Runs until wd_pipeline_stop(), the replay end, max_idle_ms, or a fatal error. On stop it
 * finishes the batch in hand and completes the open commit. Abortable transaction errors abort
 * the commit and go on (counted in stats.aborted_commits).
 * Errors: fenced (another instance took over: its message says so), fatal Kafka errors,
 * E_TXN_UNKNOWN, E_SINK_DELIVERY (at-least-once), store errors, E_STOPPED. */
wd_error_t *wd_pipeline_run(wd_pipeline_t *p);

/* Seconds a stop may take before the process leaves anyway (docs/runtime.md "Stop"):
 * transaction.timeout.ms, the bound of every wait once stopping, plus 5 s to close the clients
 * (librdkafka's send_offsets_to_transaction does not keep its timeout while the coordinator is
 * away: confluentinc/librdkafka#5456). Async-signal-safe. */
unsigned wd_pipeline_stop_grace_s(const wd_pipeline_t *p);

/* Whether no commit is open: every commit taken was made (or aborted, its records left to be read
 * again). Async-signal-safe: the exit code of a stop that ran out of time. */
bool wd_pipeline_settled(const wd_pipeline_t *p);

/* Asks the running pipeline to stop after the current batch (async-signal-safe). */
void wd_pipeline_stop(wd_pipeline_t *p);

void wd_pipeline_get_stats(const wd_pipeline_t *p, wd_pipeline_stats_t *stats);
void wd_pipeline_print_summary(const wd_pipeline_t *p, FILE *f, double seconds);

/* Closes the consumer (leaving the group), flushes the producer, closes the store. Accepts NULL. */
void wd_pipeline_destroy(wd_pipeline_t *p);

#endif
