/*
 * app/runtime/commit.h — the commit coordinator: owns each commit of `widen run` from begin to end, under
 * exactly-once (a Kafka transaction carrying the changelog, the dead letters and the input
 * offsets, plus a prepared/finalized RocksDB state) or at-least-once (acknowledged output, then
 * the state with its offsets). The protocol, its crash points and the recovery are in
 * docs/exactly-once.md; this header is its API.
 *
 * A commit spans many poll batches. The pipeline, per batch:
 *   wd_commit_batch_begin()                       the batch is in hand (a rebalance now aborts);
 *   (its output goes through the record collector, app/runtime/collector.h, which begins the transaction
 *    with the first record and calls the coordinator's opening hook)
 *   wd_commit_gate(topic, partition, off)         whether a record runs, only rebuilds state, or waits;
 *   wd_commit_note_input(topic, partition, off, n) per partition of each batch: its last offset taken (applied or dead-lettered);
 *   wd_commit_batch_end()
 * and then, when wd_commit_due() says so (pipeline.commit-interval-ms, pipeline.commit-max-records)
 * or when it stops or is idle, wd_commit_run(). Rebalances reach the coordinator through
 * wd_commit_on_assign_all / wd_commit_on_assign / wd_commit_on_revoke, which the pipeline's consumer
 * callbacks forward.
 *
 * Tasks: the unit of state is a task, partition i of every source topic (per-partition mode) or
 * one task for all partitions (single mode, the default: any keying of the sources works in one
 * process). Each task's rows are one key range of the state (join/state.h), so a task whose local
 * state does not match the group's committed offsets is dropped and restored.
 *
 * Errors returned by the functions below keep librdkafka's classification (common/error.h):
 * `fenced` and `fatal` errors stop the pipeline; `txn_requires_abort` ones are handled inside
 * (abort, discard, rewind: *aborted is set) and not returned; retriable waits are served inside.
 *
 * Ownership: the coordinator borrows the record collector (app/runtime/collector.h: the one path into the
 * producer and the transaction; it owns the producer and re-creates it when a commit's outcome
 * stays unknown), the consumer, state, store and topic names (they must outlive it). It sets the
 * collector's opening hook (the commit opens with its first output; fault point before-begin). Thread: the pipeline's thread; the on_* functions run inside the consumer's
 * callbacks on that thread.
 */
#ifndef WD_COMMIT_H
#define WD_COMMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/collector.h"
#include "app/runtime/tasks.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "join/state.h"
#include "join/store.h"
#include "sink/producer.h"

typedef struct wd_commit wd_commit_t;

typedef struct wd_commit_hooks {
  void *ctx;
  /* Before the finalize write of commit `number`: may add entries (commit history) to b, which
   * is written atomically with the commit's state. May be NULL. Returns 0, or -1 on no memory. */
  int (*before_finalize)(void *ctx, uint64_t number, wd_store_batch_t *b);
  /* After commit `number` is final (its output visible, its state written). May be NULL. */
  void (*committed)(void *ctx, uint64_t number);
  /* After the open commit was aborted (its output discarded, its state dropped, the consumer
   * rewound): whatever the pipeline buffered for it goes too. May be NULL. */
  void (*aborted)(void *ctx);
  /* Once commit `number`'s output is complete (acknowledged, or its transaction committed), just
   * before the finalize write of b: may add (or replace) entries of b, e.g. the commit history
   * record with the output offsets from the delivery reports. A commit that recovery
   * applies after a crash keeps what before_finalize added. May be NULL. 0, or -1 on no memory. */
  int (*before_write)(void *ctx, uint64_t number, wd_store_batch_t *b);
  /* Per-partition tasks: whether a state entry of the commit's batch belongs to no task and is
   * left out of the state changelog topic (join/lookup.h wd_join_global_key: lookup rows and the
   * index, which every process keeps for itself). May be NULL (every entry is a task's). */
  bool (*changelog_skip)(const uint8_t *key, size_t klen);
  /* Rebuild mode (app/runtime/rebuild.h): whether the local rows of `task` are in the table's current
   * definition (the task's switch mark). A task whose rows are not is never taken as being at the
   * group's offsets: it is restored (per-partition: its old rows from the state changelog topic)
   * and rebuilt (wd_task_t.rebuild). NULL: every task's rows are current (no rebuild). */
  bool (*task_current)(void *ctx, uint32_t task);
} wd_commit_hooks_t;

typedef struct wd_commit_conf {
  bool exactly_once; /* pipeline.processing-guarantee */
  bool group; /* the consumer is in a group (false: replay; no group commits) */
  bool per_partition; /* one task per source partition (else one task for all) */
  int64_t interval_ms; /* pipeline.commit-interval-ms */
  uint64_t max_records; /* pipeline.commit-max-records */
  int txn_timeout_ms; /* transaction.timeout.ms: how long a commit's outcome may stay unknown */
  bool replay_from_stored; /* assign mode: start at the stored offsets, else at the beginning */
  bool latest_when_empty; /* auto.offset.reset=latest: a partition with no state starts at the end */
  const char *const *topics; /* the topics of the tasks (borrowed): co-partitioned source topics and
                              * repartition topics (app/runtime/repartition.h) */
  size_t ntopics;
  /* the stateless topics (borrowed): source topics whose records are only forwarded to a
   * repartition topic. Their partitions belong to no task: each starts at the group's committed
   * offset (never at an offset kept in this process's state) and never makes a task restore. */
  const char *const *stateless_topics;
  size_t nstateless;
  /* per-partition tasks: the compacted state changelog topic (partition i = task i; one record per
   * row change of a commit: the stored entry, or a tombstone), written in the commit (under
   * exactly-once in its transaction), from which a task without matching local state is restored.
   * NULL: no changelog (tasks are rebuilt from the sources instead). */
  const char *changelog_topic;
  /* the producer's transactional.id under exactly-once (borrowed, may be NULL): kept in the prepared
   * marker, so that recovery can say which transaction a commit left prepared belongs to */
  const char *txn_id;
  const wd_kafka_conf_t *restore_conf; /* brokers and client properties of the restore consumer */
  /* standby replicas (app/runtime/standby.h), borrowed, or NULL: told which tasks are owned here; a task
   * assigned here is caught up from its copy's position instead of restored from the beginning */
  struct wd_standby *standby;
  /* the deferred state flush (state.flush-interval-ms, docs/exactly-once.md "Deferred state
   * flush"): > 0 under exactly-once keeps the rows and finalize entries of committed commits in
   * memory and writes them in one write at most this many ms after the first, or once they reach
   * flush_max_bytes, at a rebalance, an abort and a stop; 0: each commit writes its own. The caller
   * sets it only where it is safe (wd_commit_flush_deferrable) */
  int64_t flush_interval_ms;
  uint64_t flush_max_bytes;
  wd_commit_hooks_t hooks;
} wd_commit_conf_t;

/* Whether the deferred state flush is safe for this run, and if not why (a static string in *why):
 * it needs exactly-once with a group, no state changelog topic (a task behind the group is then
 * restored from it in full, not replayed), no lookup sources (their changes move rows without
 * offsets), no rebuild and no table option that makes rows depend on the sources' interleaving
 * (a replay may interleave them otherwise). */
bool wd_commit_flush_deferrable(bool exactly_once, bool group, bool changelog, bool lookups, bool rebuild,
                                bool interleaving_dependent, const char **why);

/* Sets cc's flush_interval_ms and flush_max_bytes from cfg's state.flush-interval-ms and
 * state.flush-max-bytes where wd_commit_flush_deferrable says it is safe (cc->exactly_once, group,
 * a state changelog topic, lookup sources, a rebuild; the interleaving warnings of cfg,
 * app/config/interleaving.h), else leaves them 0 and logs why each commit writes its rows. Errors:
 * E_NOMEM. */
struct wd_config;
wd_error_t *wd_commit_conf_flush(wd_commit_conf_t *cc, const struct wd_config *cfg, bool group, bool changelog,
                                 bool lookups, bool rebuild);

/* The deferred state flush: writes the committed commits' rows and finalize entries kept in memory
 * (one coalesced write: a key once, in key order) and lets the state cache evict them. Nothing to do
 * without the deferred flush or with nothing kept. Fault points before-flush and after-flush.
 * Errors: E_STORE_WRITE, E_STATE_DISK_FULL, E_NOMEM (what is kept stays kept). */
wd_error_t *wd_commit_flush(wd_commit_t *c);
/* wd_commit_flush when its time bound (flush_interval_ms since the first commit kept) or its byte
 * bound is reached, or a task caught up after a replay without output since the last call (then
 * also once the commit open now is finalized: the replay is written at once); for the poll loop
 * when it is idle, and after each commit. Errors: wd_commit_flush's. */
wd_error_t *wd_commit_flush_due(wd_commit_t *c);

/* Creates the coordinator (conf copied). Reads the fault hook WIDEN_FAULT=<point>[:<n>] from the
 * environment (docs/exactly-once.md: before-begin, during-produce, after-prepare, during-commit,
 * after-commit, after-finalize; with the deferred state flush also before-flush and after-flush): the n-th time (default 1) a point is reached the process kills
 * itself with SIGKILL; WIDEN_FAULT=fatal-<point>[:<n>] makes the producer raise a fatal error
 * (INVALID_TXN_STATE, not fencing) there instead (wd_collector_inject_fatal); a "+" after n
 * (fatal-<point>:<n>+) does so every time from the n-th on. WIDEN_COMMIT_OVERLAP=0 makes wd_commit_run_async wait for every commit as
 * wd_commit_run (no overlap; for interleaved before/after benchmarks).
 * *out owned by the caller (wd_commit_destroy). Errors: E_NOMEM. */
wd_error_t *wd_commit_new(const wd_commit_conf_t *conf, wd_collector_t *coll, wd_consumer_t *cons, wd_state_t *state,
                          wd_store_t *store, wd_commit_t **out);
void wd_commit_destroy(wd_commit_t *c);
/* Sets the consumer (which may be created after the coordinator, since its callbacks need the
 * coordinator: cons may be NULL in wd_commit_new). */
void wd_commit_set_consumer(wd_commit_t *c, wd_consumer_t *cons);

/* At start, before the first poll: under exactly-once initialises the transactions (fencing an
 * earlier incarnation; retried while the broker does not answer, for up to 2 minutes or until
 * *stop is set) and resolves a prepared commit left by a crash (apply when the group committed
 * its offsets, else discard). Errors: fenced / fatal transaction errors, E_STORE_*, "E_RECOVER"
 * when the group's offsets cannot be read. */
wd_error_t *wd_commit_recover(wd_commit_t *c, volatile const int *stop);

/* The consumer callbacks (forward them from the pipeline's). They only record
 * (docs/runtime.md "Callbacks only record"): on_assign_all reads each partition's stored offset
 * (local) and makes its task CREATED. Under a consumer group with exactly-once, or with partitions
 * only forwarded to a repartition topic, the decision needs the group's committed offsets: it
 * returns true (the consumer assigns every partition held, consumer.h) and wd_commit_init_step
 * decides in the poll loop; otherwise it decides at once from the stored offsets and returns
 * false. on_assign returns the starting offset of one partition (consumer.h's contract; for a
 * held partition the offset it waits at). on_revoke completes or aborts the open commit and
 * suspends (revoked) or closes (lost) the tasks. Errors (a store read error, no memory) are kept
 * and returned by the next wd_commit_take_error. */
bool wd_commit_on_assign_all(wd_commit_t *c, const wd_tp_offset_t *parts, size_t n);
int64_t wd_commit_on_assign(wd_commit_t *c, const char *topic, int32_t partition);
void wd_commit_on_revoke(wd_commit_t *c, bool lost);

/* Whether an assignment is recorded and not yet decided (its partitions held). */
bool wd_commit_initialising(const wd_commit_t *c);
/* Decides the recorded assignment in the poll loop (Kafka Streams' task initialisation): reads the
 * group's committed offsets (one request per call, at most 5 s or the stop budget; a retriable
 * failure returns NULL with the assignment still pending, tried again at the next call, for up to
 * 60 s, or transaction.timeout.ms + 15 s when longer, from the first failure), then per task: at the group's offsets -> RUNNING (RECONCILING
 * with wd_commit_set_reconcile); not -> its rows dropped and RESTORING (restored from the state
 * changelog topic by wd_commit_restore_step, or rebuilt from the sources' beginning); a changed
 * definition -> rebuilt (app/runtime/rebuild.h). Every partition is assigned again at its decided
 * offset (wd_consumer_reassign), then released.
 * A rebalance between calls replaces the pending assignment. Errors: "E_RECOVER" (the group's
 * offsets unreadable for that bound), "E_STOPPED" (stopping while the broker does not answer),
 * E_STORE_*, E_NOMEM, "E_TASK_TRANSITION", "E_KAFKA" (a seek refused). */
wd_error_t *wd_commit_init_step(wd_commit_t *c);

/* Lookups under per-partition tasks (docs/lookups-scale-out.md): every task, once caught up, is
 * RECONCILING before RUNNING; its records are held until the pipeline has recomputed its rows'
 * lookup columns (wd_commit_next_reconcile, then wd_commit_reconciled). An aborted commit moves
 * every RUNNING task back to RECONCILING (its reconcile was taken back with the commit). Set it
 * before the first poll. */
void wd_commit_set_reconcile(wd_commit_t *c, bool on);
/* The next RECONCILING task into *task: true, or false when there is none (or while restores from
 * the state changelog topic are running: they rewrite rows of the tasks they restore). */
bool wd_commit_next_reconcile(wd_commit_t *c, uint32_t *task);
/* The task's reconcile is in the open commit: RECONCILING -> RUNNING; its held partitions are
 * released after the batch (wd_commit_after_batch). Errors: "E_TASK_TRANSITION" (not RECONCILING). */
wd_error_t *wd_commit_reconciled(wd_commit_t *c, uint32_t task);
/* Whether the task is owned by this process now (CREATED, RESTORING, RECONCILING or RUNNING: the
 * task table, wd_tasks_active): the owner filter of join/lookup.h wd_join_set_owner (ctx: the
 * wd_commit_t). */
bool wd_commit_task_owned(void *ctx, uint32_t task);

/* A batch is in hand (its records polled) / done. A rebalance while a batch is in hand aborts
 * the open commit (the batch's work cannot be split). */
void wd_commit_batch_begin(wd_commit_t *c);
void wd_commit_batch_end(wd_commit_t *c);
/* Whether the batch in hand was invalidated (a rebalance or an abort since batch_begin): the
 * pipeline then drops it unprocessed. */
bool wd_commit_batch_invalid(const wd_commit_t *c);

/* Opens the commit and begins its transaction through the collector if it is not begun yet
 * (exactly-once); only opens otherwise. The collector does this itself with a commit's first
 * record. Errors: E_TXN_BEGIN (fatal/fenced). */
wd_error_t *wd_commit_begin(wd_commit_t *c);

/* The gate of a record (docs/runtime.md): whether the record at offset of (topic,
 * partition) is applied with output (WD_GATE_RUN), applied without output because its task is
 * RESTORING below the group's committed offset (WD_GATE_RESTORE), or not taken at all
 * (WD_GATE_HOLD: its partition reached the group's offset while another partition of its task has
 * not; the record and every later one of the partition in this batch are left, and read again when
 * the task runs). A task produces output only once all its partitions reached the group's offsets.
 * Call in delivery order, once per record; then wd_commit_after_batch after the batch. */
wd_gate_t wd_commit_gate(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset);

/* After each poll (with or without records): a RESTORING task's partition whose consumer position
 * reached its restore end counts as caught up; held partitions are moved back to their first held
 * record and paused (task still RESTORING) or resumed (task RUNNING). Errors: "E_KAFKA" from the
 * seek or pause (the pipeline stops: positions would be unknown), E_NOMEM. */
wd_error_t *wd_commit_after_batch(wd_commit_t *c);

/* Whether some task of the assignment is still being restored from the state changelog topic. */
bool wd_commit_changelog_restoring(const wd_commit_t *c);

/* One slice of the changelog restores of the current assignment (docs/runtime.md
 * "Restoration in the poll loop"): polls the restore consumer for up to max_ms, writes what it read
 * to the store, and finishes each task whose changelog partition reached its end offset (its
 * offsets := the group's, then RUNNING). A no-op when nothing is being restored. The pipeline
 * calls it in its poll loop; a rebalance stops the restore (wd_commit_on_revoke) and the next
 * assignment starts it again. Errors: "E_KAFKA" (the restore consumer), "E_RESTORE" (no progress
 * for 60 s), store write errors, E_NOMEM. */
wd_error_t *wd_commit_restore_step(wd_commit_t *c, int max_ms);

/* Records that the open commit includes (topic, partition) up to offset (taken: applied or
 * dead-lettered), and `records` more records taken: called once per partition of a batch, with
 * the last offset of the batch's records of it (one upsert per partition and batch, not
 * one per record). topic must stay valid for the coordinator's life (the sources' copy). 0, or -1
 * on no memory. */
int wd_commit_note_input(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset, uint64_t records);

/* Whether the open commit should be completed now (interval passed or record bound reached). */
bool wd_commit_due(const wd_commit_t *c);
/* The interval wd_commit_due uses from now on, in milliseconds (negative: 0); it starts as
 * conf.interval_ms. The pipeline sets it before each wd_commit_due from its adaptive rule
 * (app/runtime/commit_pace.h). */
void wd_commit_set_interval(wd_commit_t *c, int64_t ms);
/* Whether a commit is open (anything noted since the last one). */
bool wd_commit_pending(const wd_commit_t *c);

/* The pipeline's stop request (borrowed; read, never written; may be set from a signal
 * handler): once it is set, every wait of the coordinator (acknowledgements, send_offsets,
 * commit_transaction, abort_transaction, recovery) gives up when transaction.timeout.ms has passed
 * since the first wait that saw it, or at once when it is >= 2 (a second signal), returning
 * "E_STOPPED" (docs/runtime.md "Stop"). */
void wd_commit_set_stop(wd_commit_t *c, volatile const int *stop);
/* Whether the stop request has used up its time (see wd_commit_set_stop); false when not stopping.
 * The first call that sees the request starts its clock. */
bool wd_commit_stop_expired(wd_commit_t *c);

/* Completes the open commit (docs/exactly-once.md steps 1-5); a no-op when none is open.
 * Waits (acknowledgements, a broker that is away) pause the partitions and serve the consumer.
 * *aborted (may be NULL) is set when the commit was aborted instead (abortable error): its output
 * is discarded, its state dropped, the consumer rewound; the pipeline goes on. So too after a fatal
 * producer error that is not fencing (the collector's WD_COLLECT_RECREATE): the producer is
 * re-created (bounded: wd_collector_recreate) and the commit resolved as one whose outcome is
 * unknown when its commit_transaction was called (finalized if the group's offsets say it
 * committed), else aborted.
 * stop: while set, waits give up after a last try (the commit is then left to recovery) and
 * "E_STOPPED" is returned. Errors: fenced, fatal (E_PRODUCER_FATAL past the re-creations' bound),
 * E_STORE_WRITE, E_SINK_DELIVERY (at-least-once),
 * E_STOPPED. */
wd_error_t *wd_commit_run(wd_commit_t *c, volatile const int *stop, bool *aborted);

/* As wd_commit_run, but the pipeline need not wait for the transaction's commit
 * (docs/exactly-once.md "A commit that does not block the pipeline"): under exactly-once in a group,
 * commit_transaction runs on the collector's helper thread (wd_collector_commit_start) and, while it
 * runs (wd_commit_committing), the call returns; the records taken meanwhile belong to the next commit
 * (their inputs noted apart, their output held by the collector) and each later call (wd_commit_due
 * says true meanwhile) looks again; once the transaction committed the commit is finalized, the
 * next one becomes the open commit and its held output is sent in its transaction, and the call
 * returns with it open. Past 2 s, 200,000 held records or pipeline.commit-max-records records of
 * the next commit it waits as wd_commit_run. An abort while
 * a commit is committing (wd_commit_abort, a lost partition) first completes that commit (it may
 * have committed), then aborts what was taken after it. Errors: as wd_commit_run. */
wd_error_t *wd_commit_run_async(wd_commit_t *c, volatile const int *stop, bool *aborted);

/* Whether a commit's transaction is committing in the background (wd_commit_run_async). */
bool wd_commit_committing(const wd_commit_t *c);
/* Commits finalized after their transaction committed in the background (the next batches merged
 * meanwhile). */
uint64_t wd_commit_overlapped(const wd_commit_t *c);

/* Aborts the open commit (as after an abortable error). Errors: fatal ones of abort_transaction. */
wd_error_t *wd_commit_abort(wd_commit_t *c, const char *why);

/* Aborts the open commit for cause (borrowed), an error of the collector's class WD_COLLECT_ABORT
 * or WD_COLLECT_RECREATE (app/runtime/collector.h): for RECREATE (a fatal producer error that is
 * not fencing, before the commit's commit_transaction) the producer is re-created first
 * (wd_collector_recreate, bounded) unless resolving a commit that was committing did so already;
 * then as wd_commit_abort (the output discarded, the state taken back, the consumer rewound to the
 * committed offsets). Errors: as wd_commit_abort, and wd_collector_recreate's ("E_PRODUCER_FATAL":
 * stop with it). */
wd_error_t *wd_commit_abort_for(wd_commit_t *c, const wd_error_t *cause);

/* A wait inside a batch (schema registry retries): pauses the partitions and serves the consumer
 * for about ms milliseconds (outside consumer callbacks; inside them it only sleeps). */
void wd_commit_wait(wd_commit_t *c, int ms);

/* Scale-out with lookups (app/runtime/global_table.h, docs/lookups-scale-out.md): inputs read outside the
 * group (the lookup topics, read whole by every process) whose positions are this process's own.
 *
 * wd_commit_set_global: group_cons is a consumer in a group of this process alone (borrowed; never
 * subscribed: used for its committed offsets and group metadata), marker_topic an existing topic
 * (borrowed). From then on every exactly-once commit whose transaction carries output is prepared
 * (also without input offsets, e.g. only lookup changes or a reconcile) and sends, besides the
 * group's input offsets, the offset (marker_topic, 0) = its commit number to group_cons's group in
 * the same transaction; recovery (wd_commit_recover, and an outcome that stays unknown) takes a
 * prepared commit as committed when that marker equals its number. Call before wd_commit_recover.
 *
 * wd_commit_note_global: as wd_commit_note_input for a global input (topic valid for the
 * coordinator's life): its next offset is written with the commit's state (meta offset/<topic>/
 * <partition>, read back by the global consumer at start) and never sent to the group. 0, or -1
 * on no memory. */
void wd_commit_set_global(wd_commit_t *c, wd_consumer_t *group_cons, const char *marker_topic);
int wd_commit_note_global(wd_commit_t *c, const char *topic, int32_t partition, int64_t offset, uint64_t records);

/* Rebuild mode (app/runtime/rebuild.h, docs/runtime.md "Rebuild as a runtime mode"): the commit marker
 * without the lookups' other rules. cons is a consumer in a group of this process alone (borrowed;
 * never subscribed), marker_topic an existing topic (borrowed): every exactly-once commit with
 * output is prepared, and one without input offsets to send (a rebuild's switch) sends the offset
 * (marker_topic, 0) = its commit number to that group in its transaction, so that recovery
 * resolves it like any other (the others are resolved by the group's offsets). Call before
 * wd_commit_recover. */
void wd_commit_set_marker(wd_commit_t *c, wd_consumer_t *cons, const char *marker_topic);

/* The task table (borrowed; valid for the coordinator's life): the rebuild reads its tasks'
 * phases (wd_task_t.rebuild) and partitions. */
wd_tasks_t *wd_commit_tasks(wd_commit_t *c);

/* The group's committed offset of an assigned partition when it was assigned (-1: none, or not
 * assigned). */
int64_t wd_commit_group_offset(const wd_commit_t *c, const char *topic, int32_t partition);

/* Rebuild: the task's old rows are staged; its rows are now rebuilt from the sources' beginning up
 * to the group's committed offsets, without output (WD_REBUILD_SOURCES; the gate's RESTORE): its
 * partitions are moved to the beginning and released. A task none of whose partitions the group
 * ever committed goes to WD_REBUILD_DIFF at once. Errors: "E_KAFKA" (the seek), E_NOMEM. */
wd_error_t *wd_commit_rebuild_sources(wd_commit_t *c, uint32_t task);

/* Rebuild: the task's switch commit is made: it is RUNNING, its held partitions are released after
 * the next batch. Errors: E_TASK_TRANSITION. */
wd_error_t *wd_commit_rebuild_done(wd_commit_t *c, uint32_t task);

/* Changelog records restored into the state by this process so far. */
uint64_t wd_commit_restored_records(const wd_commit_t *c);

/* The number of the last finalized commit (0 before the first). */
uint64_t wd_commit_number(const wd_commit_t *c);

/* The first fatal error seen inside a consumer callback (where it cannot be returned), or NULL;
 * the caller takes it over. Also an illegal phase move (E_COMMIT_PHASE, a bug) and the task
 * manager's kept errors (app/runtime/task_manager.h). */
wd_error_t *wd_commit_take_error(wd_commit_t *c);

/* The commit's phase machine (commit.c's top comment): whether a commit may move from phase `from`
 * to phase `to` (IDLE 0, OPEN 1, SNAPPED 2, PREPARED 3, OFFSETS_SENT 4, COMMITTED 5), and a phase's
 * name ("?" out of range). For tests and logs. */
bool wd_commit_phase_legal(int from, int to);
const char *wd_commit_phase_name(int phase);

#endif
