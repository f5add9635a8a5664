/*
 * app/runtime/pipeline.c — the main job: its start-up steps and its loop (see pipeline.h).
 */
#include "app/runtime/pipeline.h"
#include "app/runtime/global_table.h"
#include "app/runtime/lookups.h"
#include "common/clock.h"
#include "app/config/table_config.h"
#include "app/runtime/commit.h"
#include "app/runtime/commit_pace.h"
#include "app/ops/history_gather.h"
#include "app/runtime/rebuild.h"
#include "app/runtime/rebuild_output.h"
#include "app/ops/run_metrics.h"
#include "app/runtime/status_report.h"
#include "app/runtime/repartition.h"
#include "app/runtime/standby.h"
#include "app/runtime/collector.h"
#include "app/runtime/batch.h"
#include "app/runtime/clients.h"
#include "app/runtime/emit.h"
#include "app/runtime/replay.h"
#include "app/runtime/repart_setup.h"
#include "app/runtime/topic_index.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"
#include "changelog/sink_format.h"
#include "common/log.h"
#include "ingest/consumer.h"
#include "ingest/source.h"
#include "join/state.h"
#include "sink/topics.h"

struct wd_pipeline {
  const wd_config_t *cfg;
  wd_pipeline_opts_t opts;
  wd_table_t *table;
  const wd_schema_t *schema;
  wd_source_t **sources;
  size_t nsources;
  wd_store_t *store;
  wd_state_t *state;
  wd_collector_t *coll; /* the record collector (app/runtime/collector.h): owns the producer */
  wd_consumer_t *cons;
  wd_clients_t kc; /* the Kafka clients' configurations and the transactional.id (app/runtime/clients.h) */
  const wd_sink_format_t *sink_fmt; /* the changelog's value format (changelog/sink_format.h) */
  const wd_key_format_t *key_fmt; /* its key format */
  wd_registry_t *registry; /* schema registry (Avro sources, sink or key), else NULL */
  wd_avro_sink_t *avro_out; /* avro sink format or Avro keys */
  wd_emitter_t emit; /* the changelog's output (app/runtime/emit.h) */
  wd_batch_t *batch; /* a poll batch through the table, with its scratch (app/runtime/batch.h) */
  wd_kmsg_t *msgs; /* the batch's messages (wd_batch_msgs) */
  wd_commit_t *commit; /* the commit coordinator (app/runtime/commit.h) */
  bool exactly_once;
  wd_replay_t replay; /* a replay's bookkeeping (app/runtime/replay.h) */
  /* stats */
  wd_pipeline_stats_t st;
  /* the totals at the last commit's snapshot, and at the last commit made: an abort sets st's
   * totals back to st_made (the records it re-reads are counted once) */
  wd_pipeline_stats_t st_snap, st_made;
  FILE *trace;
  volatile sig_atomic_t stop;
  volatile sig_atomic_t settled; /* no commit open (wd_pipeline_settled) */
  unsigned stop_grace_s; /* wd_pipeline_stop_grace_s */
  double busy_start, busy_end; /* first input, last batch completed (monotonic s) */
  bool assigned; /* partitions were assigned since the last co-partitioning check */
  bool closing; /* wd_pipeline_destroy closes the consumer: its revocation is no rebalance */
  const char **topics; /* every source topic (the sources' copies), for the consumer and the coordinator */
  char *changelog_topic; /* per-partition tasks: the state changelog topic, owned; else NULL */
  bool per_partition; /* one task per source partition */
  /* ---- the open commit's history record and trace lines (app/ops/history_gather.h),
   * and the metrics ---- */
  wd_hist_gather_t *hg;
  wd_run_metrics_t *rm; /* the metrics (app/ops/run_metrics.h), NULL when metrics.listen is not set */
  wd_standby_t *standby; /* warm copies of the tasks not owned here (app/runtime/standby.h), or NULL */
  /* sources not keyed by the wide key go through repartition topics (app/runtime/repartition.h):
   * the plan, the task and stateless topics, the forwarding (a single task: nothing repartitioned) */
  wd_repart_t *rp;
  wd_lookups_t *lk; /* the join layer on other keys and the batch's lookup rows (app/runtime/lookups.h) */
  /* lookups under per-partition tasks (app/runtime/global_table.h): the lookup topics
   * read whole by this process, outside the group; NULL otherwise */
  wd_gtable_t *gt;
  const char **gtopics; /* the lookup topics (the sources' copies) */
  /* the rebuild on an incompatible definition (app/runtime/rebuild.h), or NULL */
  wd_rebuild_t *rb;
  wd_consumer_t *rb_marker; /* in group "<transactional.id>.rebuild" (never subscribed): the commit marker */
  /* the topic index, and per batch its topics seen and its partitions
   * (app/runtime/topic_index.h) */
  wd_topic_index_t *tix;
  wd_commit_pacer_t pace; /* the adaptive commit interval's inputs, measured by the loop (app/runtime/commit_pace.h) */
};

unsigned wd_pipeline_stop_grace_s(const wd_pipeline_t *p) { return p->stop_grace_s; }
bool wd_pipeline_settled(const wd_pipeline_t *p) { return p->settled != 0; }

void wd_pipeline_stop(wd_pipeline_t *p) { p->stop = p->stop < 2 ? p->stop + 1 : 2; }

void wd_pipeline_get_stats(const wd_pipeline_t *p, wd_pipeline_stats_t *stats) { *stats = p->st; }

/* The consumer's callbacks go to the commit coordinator, which decides per task where each
 * partition starts (docs/exactly-once.md, "Recovery") and completes the open commit before
 * partitions are given up. */
static bool on_assign_all(void *ctx, const wd_tp_offset_t *parts, size_t n) {
  wd_pipeline_t *p = ctx;
  p->assigned = true; /* the loop checks the new assignment's co-partitioning */
  wd_run_metrics_rebalance(p->rm);
  /* the tasks are recorded (CREATED) and, when the group's offsets decide, initialised in the
   * loop (wd_commit_init_step), their partitions held until then */
  return wd_commit_on_assign_all(p->commit, parts, n);
}

static int64_t on_assign(void *ctx, const char *topic, int32_t partition) {
  wd_pipeline_t *p = ctx;
  return wd_commit_on_assign(p->commit, topic, partition);
}

static void on_revoke(void *ctx, const wd_tp_offset_t *parts, size_t n, bool lost) {
  wd_pipeline_t *p = ctx;
  (void)parts;
  if (!p->closing) /* at close the loop has completed its commits and printed the summary */
    wd_log(WD_LOG_INFO, "pipeline", "%zu partition(s) %s: completing the open commit first", n,
           lost ? "lost" : "revoked");
  wd_commit_on_revoke(p->commit, lost);
  wd_state_drop_clean(p->state); /* the keys may belong to another process now */
}

/* ---- the commit history record (app/ops/history.h) ------------------------------------
 * The pipeline reports what the open commit took (input ranges, counts) to its gatherer
 * (app/ops/history_gather.h); the coordinator's hooks write the record into the commit's state
 * batch: before_finalize when the state is snapshotted (so a prepared commit that recovery
 * applies has its record), before_write once the output is complete (acknowledged / transaction
 * committed), with the output offsets from the delivery reports and the duration; the later put
 * replaces the earlier. */
static int hist_add(wd_pipeline_t *p, uint64_t number, wd_store_batch_t *b, bool final) {
  const wd_producer_range_t *pr = NULL;
  size_t npr = final ? wd_collector_ranges(p->coll, &pr) : 0;
  return wd_hist_gather_put(p->hg, number, b, p->opts.replay || wd_rebuild_switching(p->rb), pr, npr);
}

/* At the commit's snapshot: what was noted so far is this commit's; what is taken from now on
 * belongs to the next one, whose batches may be merged while this one commits. */
static int hist_before_finalize(void *ctx, uint64_t number, wd_store_batch_t *b) {
  wd_pipeline_t *p = ctx;
  wd_hist_gather_snapshot(p->hg);
  p->st_snap = p->st;
  /* a rebuild's switch commit deletes the staged rows and writes the task's mark */
  return hist_add(p, number, b, false) || wd_rebuild_before_finalize(p->rb, b) ? -1 : 0;
}

static int hist_before_write(void *ctx, uint64_t number, wd_store_batch_t *b) {
  wd_pipeline_t *p = ctx;
  wd_rebuild_before_write(p->rb); /* its fault hook (tests) */
  return hist_add(p, number, b, true);
}

static bool rebuild_task_current(void *ctx, uint32_t task) {
  wd_pipeline_t *p = ctx;
  return wd_rebuild_task_current(p->rb, task);
}

/* ---- Prometheus metrics (app/ops/run_metrics.h). The pipeline only reports what it
 * did; the unit counts, the server thread renders. ---- */
static wd_error_t *metrics_setup(wd_pipeline_t *p) {
  wd_run_metrics_conf_t c = {p->cfg->metrics.listen, p->opts.replay, p->table, (const wd_source_t *const *)p->sources,
                             p->nsources};
  return wd_run_metrics_new(&c, &p->rm);
}

/* At most once a second from the loop: lag, state size, cache, restore progress. */
static void metrics_tick(wd_pipeline_t *p, double now, bool force) {
  if (!wd_run_metrics_tick_due(p->rm, now, force)) return;
  wd_status_inputs_t si = {p->commit,
                           p->cons,
                           p->store,
                           &p->st,
                           p->cfg->table.name,
                           p->cfg->sink.topic,
                           p->cfg->kafka.group_id,
                           p->kc.txn_id,
                           p->exactly_once,
                           p->pace.interval,
                           wd_commit_initialising(p->commit),
                           wd_commit_changelog_restoring(p->commit),
                           p->rb && wd_rebuild_busy(p->rb, p->commit),
                           p->stop != 0,
                           NULL,
                           0};
  wd_status_tick(&si, p->state, wd_replay_progress(&p->replay, p->store), p->rm);
}

/* Commit hooks: the trace of a commit is written when the commit is final, dropped on abort. */
static void on_committed(void *ctx, uint64_t number) {
  wd_pipeline_t *p = ctx;
  wd_run_metrics_commit_made(p->rm, number, wd_hist_gather_duration_s(p->hg));
  /* the open commit may hold the next one's batches already */
  wd_hist_gather_committed(p->hg, p->trace);
  p->st_made = p->st_snap;
  wd_collector_ranges_reset(p->coll);
  p->busy_end = wd_mono_s();
  p->st.commits++;
}

static void on_aborted(void *ctx) {
  wd_pipeline_t *p = ctx;
  /* its output was discarded (and the next one's, taken meanwhile) */
  wd_hist_gather_aborted(p->hg);
  wd_collector_ranges_reset(p->coll);
  p->st.aborted_commits++;
  if (p->exactly_once) wd_status_totals_rollback(&p->st, &p->st_made); /* its output is not in the topics */
  if (p->gt) { /* what the commit took of the lookup topics is read again (its reconciles are redone:
               * the coordinator moved the running tasks back to RECONCILING) */
    wd_error_t *err = wd_gtable_rewind(p->gt, true);
    if (err) {
      wd_log(WD_LOG_ERROR, "pipeline", "rewinding the lookup topics after an abort: %s", err->message);
      wd_error_destroy(err);
    }
  }
}

/* What the repartition module's steps read of the pipeline (app/runtime/repart_setup.h). */
static wd_repart_env_t repart_env(const wd_pipeline_t *p) {
  return (wd_repart_env_t){p->cfg,     p->sources,       p->nsources,    p->lk,
                           p->rp,      p->coll,          p->store,       p->cons,
                           p->gtopics, p->per_partition, p->opts.replay, p->opts.start_stop};
}

/* Sleeps ms milliseconds (in slices, returning early when the pipeline is stopped). */
static void sleep_ms(wd_pipeline_t *p, long ms) {
  while (ms > 0 && !p->stop && !(p->opts.start_stop && *p->opts.start_stop)) {
    long slice = ms > 100 ? 100 : ms;
    wd_sleep_ms(slice);
    ms -= slice;
  }
}

/* Whether a task of this process restores its state now (not: ever did; the status line's tail). */
static bool restoring_now(wd_pipeline_t *p) {
  return wd_tasks_in_state(wd_commit_tasks(p->commit), WD_TASK_RESTORING) > 0 ||
         wd_commit_changelog_restoring(p->commit);
}

static void status_line(wd_pipeline_t *p, double rate) {
  wd_status_line_t in = {&p->st,
                         rate,
                         wd_batch_dead_letters(p->batch),
                         p->cons ? wd_consumer_idle_reason(p->cons) : NULL,
                         p->exactly_once,
                         p->pace.interval,
                         p->pace.in.min_ms,
                         p->pace.in.max_ms,
                         restoring_now(p)};
  wd_status_line(stderr, &in);
}

void wd_pipeline_print_summary(const wd_pipeline_t *p, FILE *f, double seconds) {
  wd_status_summary_t in = {&p->st,
                            p->exactly_once,
                            p->busy_end > p->busy_start ? p->busy_end - p->busy_start : 0.0,
                            p->commit ? wd_commit_overlapped(p->commit) : 0,
                            p->standby != NULL,
                            p->standby ? wd_standby_applied(p->standby) : 0,
                            p->opts.replay && p->opts.from_ms >= 0};
  wd_status_summary(f, &in, seconds);
}

/* ---- lookups under per-partition tasks (app/runtime/global_table.h) ----------------- */

/* Takes the records of the lookup topics already fetched, as one batch of the open commit.
 * *n: how many. A batch abandoned by a rebalance is read again (the global consumer rewound). */
static wd_error_t *global_batch(wd_pipeline_t *p, size_t *n) {
  *n = 0;
  wd_error_t *err = wd_gtable_reconcile(p->commit, wd_lookups_join(p->lk), p->table, &p->emit);
  if (!err) err = wd_gtable_poll(p->gt, (size_t)p->cfg->pipeline.batch_size, p->msgs, n);
  if (err || !*n) return err;
  bool abandoned = false;
  err = wd_batch_run(p->batch, *n, &abandoned);
  if (abandoned || wd_error_is(err, WD_EID_E_BATCH_ABANDONED)) {
    wd_error_destroy(err);
    return wd_gtable_rewind(p->gt, false); /* an abort meanwhile rewound it to the stored positions */
  }
  return err;
}

static wd_error_t *complete_commit(wd_pipeline_t *p);
static bool commit_due(wd_pipeline_t *p);

/* The one dispatch of the pipeline on an abortable error (app/runtime/collector.h wd_collector_classify:
 * WD_COLLECT_ABORT, from a send, a decode's wait or a commit; or WD_COLLECT_RECREATE, a fatal
 * producer error that is not fencing: the producer is re-created first): the open commit is
 * aborted, its output discarded and its records read again; *err becomes the abort's own error
 * (NULL: go on). Returns false (err untouched) for any other error. */
static bool aborted_for(wd_pipeline_t *p, wd_error_t **err) {
  wd_collect_class_t k = wd_collector_classify(*err);
  if (k != WD_COLLECT_ABORT && k != WD_COLLECT_RECREATE) return false;
  wd_error_t *aerr = wd_commit_abort_for(p->commit, *err);
  wd_error_destroy(*err);
  *err = aerr;
  return true;
}

/* The producer's wait while its queue is full (sink/producer.h wd_producer_set_wait): the group is
 * served meanwhile (partitions paused), and the send gives up when a stop has used its time or
 * the batch in hand was abandoned by a rebalance. */
static int producer_wait(void *ctx, int ms) {
  wd_pipeline_t *p = ctx;
  wd_commit_wait(p->commit, ms);
  return wd_commit_stop_expired(p->commit) || wd_commit_batch_invalid(p->commit);
}

/* Before the group is joined: the lookup topics are read up to their end offsets of now, so that
 * the tasks this process is given are reconciled against whole lookup tables (a process still
 * loading them would emit -D of INNER rows whose lookup row it has not read yet, and +I when it
 * does). Nothing is owned yet, so nothing is emitted; the positions are committed as usual. */
static wd_error_t *preload_lookups(wd_pipeline_t *p) {
  wd_tp_offset_t *ends = NULL;
  size_t nends = 0;
  wd_error_t *err = wd_gtable_end_offsets(p->gt, &ends, &nends);
  if (err) return err;
  double t0 = wd_mono_s(), last = t0;
  uint64_t r0 = wd_gtable_records(p->gt);
  wd_commit_pacer_backlog(&p->pace, true); /* a backlog up to the end offsets: the configured interval */
  while (!err && !p->stop && !wd_gtable_reached(p->gt, ends, nends)) {
    size_t n = 0;
    err = global_batch(p, &n);
    if (aborted_for(p, &err)) continue;
    if (!err && commit_due(p)) err = complete_commit(p);
    if (n) last = wd_mono_s();
    else sleep_ms(p, 5);
    if (!err && wd_mono_s() - last > 60.0) {
      wd_log(WD_LOG_WARN, "pipeline",
             "the lookup topics gave nothing for 60 s before their end offsets: joining "
             "the group with the lookup tables as they are");
      break;
    }
  }
  if (!err) err = complete_commit(p);
  wd_commit_pacer_backlog(&p->pace, false);
  free(ends);
  if (!err)
    wd_log(WD_LOG_INFO, "pipeline",
           "lookup tables read to their end before joining the group: %" PRIu64 " records in %.2f s",
           wd_gtable_records(p->gt) - r0, wd_mono_s() - t0);
  return err;
}

/* ---- when the open commit is due ---------------------------------------------
 * The pipeline's one decision of when to commit: the interval from the adaptive rule of
 * app/runtime/commit_pace.h over the inputs its pacer measured, then the coordinator's due check (interval
 * passed since the commit opened, or pipeline.commit-max-records reached). */
static bool commit_due(wd_pipeline_t *p) {
  wd_commit_set_interval(p->commit, wd_commit_pacer_interval(&p->pace));
  return wd_commit_due(p->commit);
}

/* Completes the open commit; an aborted one is counted and the pipeline goes on. */
static wd_error_t *complete_commit(wd_pipeline_t *p) {
  bool aborted = false;
  return wd_commit_run(p->commit, &p->stop, &aborted);
}

/* As complete_commit, but while input flows the transaction's commit goes on in the background and
 * the next batches are merged meanwhile, their output held. */
static wd_error_t *complete_commit_async(wd_pipeline_t *p) {
  bool aborted = false;
  return wd_commit_run_async(p->commit, &p->stop, &aborted);
}

/* ---- the loop: one turn at a time (Kafka Streams' StreamThread.runOnce) ------------------------- */

/* What the turns of the loop carry from one to the next. */
typedef struct loop {
  size_t max; /* pipeline.batch-size */
  int timeout; /* pipeline.batch-timeout-ms */
  double last_status; /* the last status line (monotonic s) */
  double last_input; /* the last input or work: --max-idle-ms counts from it */
  uint64_t last_in; /* records_in at the last status line */
  /* this turn */
  bool restoring, rebuilding; /* a changelog restore / a rebuild step ran before the poll */
  double now; /* right after the poll */
  size_t n; /* records taken (the group's, then the lookup topics') */
  bool full; /* the poll returned a full batch */
} loop_t;

/* How a turn ends: go on to its next step, start the next turn (what was polled is read again or
 * was handled), or leave the loop (*err says why; NULL: a normal end). */
typedef enum { TURN_ON = 0, TURN_AGAIN, TURN_STOP } turn_t;

/* An error of a step: an abort (abortable, or a fatal producer that was re-created) starts the
 * next turn, anything else leaves the loop. */
static turn_t turn_after(wd_pipeline_t *p, wd_error_t **err) {
  if (aborted_for(p, err)) return *err ? TURN_STOP : TURN_AGAIN;
  return *err ? TURN_STOP : TURN_ON;
}

/* Between polls: the work the task manager and the rebuild do in slices while the group is served
 * and the other tasks run: an assignment's initialisation, the changelog restores, a rebuild's
 * stage and switch. */
static turn_t between_polls(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  bool initialising = wd_commit_initialising(p->commit);
  if (initialising && (*err = wd_commit_init_step(p->commit))) return TURN_STOP;
  if (initialising) l->last_input = wd_mono_s();
  l->restoring = wd_commit_changelog_restoring(p->commit);
  if (l->restoring && (*err = wd_commit_restore_step(p->commit, 200))) return TURN_STOP;
  if (l->restoring) l->last_input = wd_mono_s(); /* a restore is work: --max-idle-ms counts after it */
  l->rebuilding = p->rb && wd_rebuild_busy(p->rb, p->commit);
  if (l->rebuilding) {
    wd_rebuild_output_t out = {p->commit, p->coll, &p->emit, p->hg, p->changelog_topic, &p->stop};
    wd_rebuild_io_t io = wd_rebuild_output_io(&out);
    *err = wd_rebuild_step(p->rb, p->commit, &io, &p->stop, 200);
    turn_t t = turn_after(p, err);
    if (t != TURN_ON) return t;
    l->last_input = wd_mono_s();
  }
  return TURN_ON;
}

/* The poll: records into p->msgs[0..l->n), waiting no longer than the open commit's interval (not
 * at all while restoring or rebuilding); then what the callbacks left: an error, a new assignment
 * to check, tasks to reconcile. */
static turn_t poll_records(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  l->n = 0;
  int interval = (int)p->pace.interval;
  int wait = wd_commit_pending(p->commit) && interval < l->timeout ? interval : l->timeout;
  if (l->restoring || l->rebuilding) wait = 0;
  if (wd_commit_initialising(p->commit) && wait > 200) wait = 200; /* its next try soon */
  if (wd_commit_committing(p->commit) && wait > 5) wait = 5; /* no input soon: the commit is waited for */
  if ((*err = wd_consumer_poll_available(p->cons, l->max, wait, p->msgs, &l->n))) return TURN_STOP;
  if ((*err = wd_commit_take_error(p->commit))) {
    wd_batch_release(p->batch, l->n);
    return TURN_STOP;
  }
  l->now = wd_mono_s();
  if (p->assigned) {
    p->assigned = false;
    if (!p->opts.replay) {
      wd_repart_env_t e = repart_env(p);
      wd_repart_check_copartitioning(&e);
    }
  }
  if (p->gt && (*err = wd_gtable_reconcile(p->commit, wd_lookups_join(p->lk), p->table,
                                           &p->emit))) { /* tasks assigned in this poll */
    wd_batch_release(p->batch, l->n);
    return aborted_for(p, err) && !*err ? TURN_AGAIN : TURN_STOP; /* aborted: the batch is read again */
  }
  l->full = l->n == l->max;
  return TURN_ON;
}

/* A stop while the batch waited on something that comes back (the schema registry, a full producer
 * queue): nothing of it was merged or noted, so it is read again on restart. If nothing of it was
 * sent either, the open commit, with the batches before it, is completed as on any stop; if some
 * of its output was (records forwarded to a repartition topic while decoding, changes before the
 * record that waited), that output must not be committed without the batch's source offsets: the
 * open commit is aborted and all of it is read again. Takes *err; always leaves the loop. */
static turn_t stop_with_batch_left(wd_pipeline_t *p, wd_error_t **err) {
  if (wd_collector_batch_sent(p->coll)) {
    wd_log(WD_LOG_INFO, "pipeline",
           "stopping: the batch in hand was half sent (%s); the open commit is aborted "
           "and its records are read again on restart",
           (*err)->message);
    wd_error_t *aerr = wd_commit_abort(p->commit, "stopping with the batch in hand half sent");
    wd_error_destroy(*err);
    *err = aerr ? aerr
                : wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                               "stopped with the batch in hand half sent: the "
                               "last commit was aborted; its records are read again on restart");
    if (!aerr) (*err)->retriable = true;
    return TURN_STOP;
  }
  wd_log(WD_LOG_INFO, "pipeline", "stopping: the batch in hand is left for the restart (%s)", (*err)->message);
  wd_error_destroy(*err);
  *err = NULL;
  return TURN_STOP;
}

/* The batch in hand: processed (wd_batch_run) between wd_commit_batch_begin and _end, released. A
 * rebalance or an abort meanwhile abandons it (its records are read again by their owner). */
static turn_t process_records(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  if (!l->n) return TURN_ON;
  l->last_input = l->now;
  if (p->busy_start == 0) p->busy_start = l->now;
  wd_collector_batch_mark(p->coll); /* whether the batch sent anything (a half-sent batch, below) */
  bool abandoned = false;
  *err = wd_batch_run(p->batch, l->n, &abandoned);
  l->last_input = wd_mono_s(); /* a batch that waited long (a registry outage) is not idle time */
  if (*err && (abandoned || wd_error_is(*err, WD_EID_E_BATCH_ABANDONED))) {
    /* a rebalance (or an abort) while the batch was in hand: the open commit was completed or
     * aborted in the callback; the batch's records are read again by their owner */
    wd_log(WD_LOG_INFO, "pipeline", "the batch in hand was abandoned (%s); its records are read again",
           (*err)->message);
    wd_error_destroy(*err);
    *err = NULL;
    return TURN_AGAIN;
  }
  if (aborted_for(p, err)) return *err ? TURN_STOP : TURN_AGAIN;
  if (*err && p->stop && (*err)->retriable) return stop_with_batch_left(p, err);
  return *err ? TURN_STOP : TURN_ON;
}

/* After the batch: the pace's measures, the task manager's releases (restores caught up, holds),
 * and the lookup topics' records as one more batch of the open commit (neither during a restore
 * nor while an assignment is initialised: its CREATED tasks count as owned, and rows a lookup
 * change touched before the decision drops them would be uncommitted rows of a task being
 * dropped). */
static turn_t after_records(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  double t1 = wd_mono_s();
  wd_commit_pacer_batch(&p->pace, t1, l->n, l->full, l->n ? t1 - l->now : 0.0);
  if ((*err = wd_commit_after_batch(p->commit))) return TURN_STOP;
  if (p->gt && !wd_commit_changelog_restoring(p->commit) && !wd_commit_initialising(p->commit)) {
    size_t ng = 0;
    *err = global_batch(p, &ng);
    turn_t t = turn_after(p, err);
    if (t != TURN_ON) return t;
    if (ng) {
      l->last_input = wd_mono_s();
      if (p->busy_start == 0) p->busy_start = l->now;
      l->n += ng;
    }
  }
  return TURN_ON;
}

/* The open commit when due: in the background while input flows, waited for otherwise (and when
 * idle with a commit open); idle past --max-idle-ms ends the loop. */
static turn_t maybe_commit(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  bool due = commit_due(p);
  if (l->n && due) { /* input flows: the commit need not stop it */
    if ((*err = complete_commit_async(p))) return TURN_STOP;
  } else if (due || (!l->n && wd_commit_pending(p->commit))) {
    double c0 = wd_mono_s();
    if ((*err = complete_commit(p))) return TURN_STOP;
    wd_commit_pacer_commit(&p->pace, (wd_mono_s() - c0) * 1000.0);
  } else if (!l->n) {
    if ((*err = wd_commit_flush_due(p->commit))) return TURN_STOP; /* state.flush-interval-ms when idle */
    wd_collector_poll(p->coll);
    /* before the first input, allow 10 s more for the group join */
    uint64_t gin = p->gt ? wd_gtable_records(p->gt) : 0; /* the lookup topics' do not count */
    uint64_t group_in = p->st.records_in > gin ? p->st.records_in - gin : 0;
    double idle_ms = (double)p->opts.max_idle_ms + (group_in ? 0.0 : 10000.0);
    if (p->opts.max_idle_ms > 0 && (l->now - l->last_input) * 1000.0 >= idle_ms) return TURN_STOP;
  }
  return TURN_ON;
}

/* The end of a turn: settled or not, the standby copies, the metrics, a status line every interval
 * (idle or not; docs/guarantees.md). */
static turn_t report(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  p->settled = !wd_commit_pending(p->commit);
  if (p->standby && (*err = wd_standby_poll(p->standby, 5000, NULL))) return TURN_STOP;
  metrics_tick(p, l->now, false);
  if (!p->opts.quiet && p->cfg->pipeline.status_interval_s > 0 &&
      l->now - l->last_status >= (double)p->cfg->pipeline.status_interval_s) {
    p->st.lag = wd_consumer_lag(p->cons);
    uint64_t din = p->st.records_in > l->last_in ? p->st.records_in - l->last_in : 0; /* an abort lowers it */
    status_line(p, (double)din / (l->now - l->last_status));
    l->last_status = l->now;
    l->last_in = p->st.records_in;
  }
  return TURN_ON;
}

/* One turn: between polls, poll, process, after the batch, commit, report. */
static turn_t run_once(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  turn_t t;
  if ((*err = wd_commit_take_error(p->commit))) return TURN_STOP;
  if (!wd_commit_pending(p->commit) && wd_replay_done(&p->replay, p->cons, p->store, false)) return TURN_STOP;
  if ((t = between_polls(p, l, err)) != TURN_ON) return t;
  if ((t = poll_records(p, l, err)) != TURN_ON) return t;
  if ((t = process_records(p, l, err)) != TURN_ON) return t;
  if ((t = after_records(p, l, err)) != TURN_ON) return t;
  if ((t = maybe_commit(p, l, err)) != TURN_ON) return t;
  return report(p, l, err);
}

wd_error_t *wd_pipeline_run(wd_pipeline_t *p) {
  wd_error_t *err = NULL;
  double start = wd_mono_s();
  loop_t l = {.max = (size_t)p->cfg->pipeline.batch_size,
              .timeout = (int)p->cfg->pipeline.batch_timeout_ms,
              .last_status = start,
              .last_input = start,
              .now = start};
  if ((err = wd_replay_start(&p->replay, p->cons))) return err;
  if (p->gt && !p->opts.replay && (err = preload_lookups(p))) return err; /* before the group join */
  while (!p->stop)
    if (run_once(p, &l, &err) == TURN_STOP) break;
  p->settled = 0;
  /* stopping: the rows kept for the deferred state flush written first (their transactions
   * committed; completing the open commit may outlast the stop's bound with the broker away) */
  if (!err) err = wd_commit_flush(p->commit);
  if (!err) err = complete_commit(p); /* the open commit is completed */
  {
    /* and the rows kept for the deferred state flush written, also when the open commit could not
     * complete (the broker away): the kept commits' transactions committed, so the store may move
     * to them whatever happened to the open one */
    wd_error_t *ferr = wd_commit_flush(p->commit);
    if (!err) err = ferr;
    else if (ferr) {
      wd_log(WD_LOG_WARN, "pipeline",
             "writing the committed rows kept for the state flush: %s (the next start reads "
             "them again without output)",
             ferr->message);
      wd_error_destroy(ferr);
    }
  }
  p->settled = !err && !wd_commit_pending(p->commit);
  if (err && err->fenced)
    err = wd_error_wrap(err,
                        "fenced: another widen process with transactional.id %s (or a newer member of group "
                        "%s) took over; this one stops without committing its open work (the other one "
                        "processes it)",
                        p->kc.txn_id ? p->kc.txn_id : "?", p->cfg->kafka.group_id);
  p->st.lag = wd_consumer_lag(p->cons);
  metrics_tick(p, wd_mono_s(), true); /* the final values */
  if (p->opts.replay && !err) wd_run_metrics_restore_done(p->rm);
  return err;
}

static wd_error_t *ensure_changelog(wd_pipeline_t *p) {
  static const char *const cfgs[] = {"cleanup.policy", "compact", NULL};
  wd_repart_env_t e = repart_env(p);
  return wd_repart_ensure_topic(&e, p->changelog_topic, cfgs, "the state changelog topic");
}

/* ---- start-up: the steps of wd_pipeline_new, in order ---------------------------------------------
 * Each step fills its part of p and returns an error; on one, wd_pipeline_new destroys p, which
 * frees whatever the steps made. */

/* The table, the sources (and the lookups' join layer), the sink's formats; *ntopics: the sources'
 * topics in all. */
static wd_error_t *open_table_and_sources(wd_pipeline_t *p, size_t *ntopics) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  if ((err = wd_config_build_table(cfg, &p->table))) return err;
  p->schema = wd_table_schema(p->table);
  p->sources = calloc(cfg->sources.n ? cfg->sources.n : 1, sizeof(*p->sources));
  if (!p->sources) return wd_error_nomem();
  *ntopics = 0;
  err = wd_lookups_new(cfg, p->table, p->sources, &p->lk);
  p->nsources = cfg->sources.n; /* the built ones are non-NULL */
  if (err) return err;
  for (size_t i = 0; i < cfg->sources.n; i++) *ntopics += p->sources[i]->ntopics;
  p->sink_fmt = wd_sink_format_at((int)cfg->sink.format);
  p->key_fmt = wd_key_format_at((int)cfg->sink.key_format);
  if (cfg->sink.schemas_enable && p->sink_fmt && p->key_fmt) { /* Kafka Connect's envelope (config checked) */
    p->sink_fmt = wd_sink_format_with_schemas(p->sink_fmt);
    p->key_fmt = wd_key_format_with_schemas(p->key_fmt);
  }
  if (!p->sink_fmt || !p->key_fmt)
    return wd_error_new(WD_ERR_INTERNAL, NONE, "sink format %d / key format %d not in the registry",
                        (int)cfg->sink.format, (int)cfg->sink.key_format);
  return wd_emit_setup_avro(cfg, p->schema, p->opts.start_stop, &p->registry, &p->avro_out);
}

/* The start-up warning of a table that rejects retractions (the batch leaves their -U out). */
static wd_error_t *warn_retractions(wd_pipeline_t *p) {
  const wd_config_t *cfg = p->cfg;
  const char **names = calloc(cfg->sources.n + 1, sizeof(*names));
  if (!names) return wd_error_nomem();
  size_t nn = 0;
  for (size_t i = 0; i < cfg->sources.n; i++)
    if (!cfg->sources.v[i].lookup) names[nn++] = cfg->sources.v[i].name;
  char *warn = wd_table_config_retraction_warning(p->table, cfg->table.name, nn, names);
  free(names);
  if (warn) wd_log(WD_LOG_WARN, "pipeline", "%s", warn);
  free(warn);
  return NULL;
}

void wd_pipeline_store_options(const wd_config_t *cfg, wd_store_options_t *so) {
  memset(so, 0, sizeof(*so));
  so->tombstone_retention_ms = cfg->state.tombstone_retention_ms;
  so->min_free_bytes = (uint64_t)cfg->state.min_free_bytes; /* the disk guard: E_STATE_DISK_FULL */
}

/* The state directory dir: the store, the state over it (checked against the table), the metrics,
 * the history gatherer, the join layer's start; which lookup topics are a global table. */
static wd_error_t *open_state(wd_pipeline_t *p, const char *dir, size_t ntopics) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  wd_store_options_t so;
  wd_pipeline_store_options(cfg, &so);
  if (!p->store && (err = wd_store_open_rocksdb(dir, &so, &p->store))) return err; /* else handed over */
  if (!(p->state = wd_state_new(p->table, p->store, (size_t)cfg->state.cache_entries))) return wd_error_nomem();
  wd_state_set_memory_budget(p->state, (size_t)cfg->state.cache_memory_mb << 20);
  if ((err = wd_state_check_table(p->state, dir))) return err;
  if ((err = metrics_setup(p))) return err;
  if (!(p->hg = wd_hist_gather_new(cfg->sink.topic, (size_t)cfg->state.history_size))) return wd_error_nomem();
  if ((err = wd_hist_gather_retain(p->hg,
                                   &(wd_history_retention_t){cfg->state.history_retention_ms,
                                                             (uint64_t)cfg->state.history_max_bytes,
                                                             (size_t)cfg->state.history_size},
                                   p->store)))
    return err;
  if ((err = wd_join_start(wd_lookups_join(p->lk), p->state, p->store))) return err;
  if ((err = wd_srckey_start(wd_lookups_srckey(p->lk), p->state, p->store))) return err;
  /* with per-partition tasks in a group the lookup topics are a global table
   * (app/runtime/global_table.h), read whole by this process outside the group */
  bool global =
      wd_lookups_global(p->lk, p->nsources, cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION, p->opts.replay);
  if (global && !(p->gtopics = calloc(ntopics + 1, sizeof(char *)))) return wd_error_nomem();
  return NULL;
}

/* The trace file (--trace). */
static wd_error_t *open_trace(wd_pipeline_t *p) {
  if (p->opts.trace_path && !(p->trace = fopen(p->opts.trace_path, "a")))
    return wd_error_new(WD_ERR_IO, E_TRACE, "cannot open trace file %s", p->opts.trace_path);
  if (p->trace) setvbuf(p->trace, NULL, _IOLBF, 0);
  return NULL;
}

/* The Kafka clients' configurations (consumer, producer), the output topics made, static
 * membership, the transactional.id (app/runtime/clients.h), the stop's grace, the collector. */
static wd_error_t *open_kafka(wd_pipeline_t *p) {
  const wd_config_t *cfg = p->cfg;
  p->exactly_once = cfg->pipeline.processing_guarantee == WD_CONFIG_EXACTLY_ONCE && !p->opts.replay;
  p->per_partition = cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION;
  wd_error_t *err = wd_clients_configure(&p->kc, cfg, p->store, p->opts.replay, p->exactly_once, p->opts.no_output);
  int tt = p->kc.txn_timeout_ms;
  p->stop_grace_s = (unsigned)(tt > 0 ? tt : 60000) / 1000u + 5u;
  p->settled = 1;
  return err ? err : wd_collector_new(&p->kc.pconf, &p->coll);
}

/* The topics: the repartition plan and the state's layout (dir), the group's topics (*nt of them)
 * and the global table's (*ngt), the topic index, the commit pace; per-partition tasks under
 * exactly-once in a group: the state changelog topic and the restore consumer's configuration. */
static wd_error_t *plan_topics(wd_pipeline_t *p, const char *dir, size_t ntopics, size_t *nt, size_t *ngt) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  if (!(p->rp = wd_repart_new(p->nsources))) return wd_error_nomem();
  wd_repart_env_t e = repart_env(p);
  if (p->per_partition && (err = wd_repart_setup(&e))) return err;
  if ((err = wd_repart_check_layout(&e, dir))) return err; /* the rows are split by it */
  if (!(p->topics = calloc(ntopics + p->nsources + 1, sizeof(char *)))) return wd_error_nomem();
  if (wd_repart_group_topics(&e, p->topics, nt, p->gtopics, ngt)) return wd_error_nomem();
  e.gtopics = p->gtopics;
  if (!(p->tix = wd_repart_topic_index(&e))) return wd_error_nomem();
  wd_commit_pacer_init(&p->pace, cfg->pipeline.commit_interval_ms, cfg->pipeline.commit_interval_min_ms,
                       p->exactly_once);
  /* per-partition tasks in a group, exactly-once: the state changelog topic, and the restore
   * consumer's config (at-least-once trusts the local state: no changelog) */
  if (p->per_partition && !p->opts.replay && p->exactly_once) {
    if (cfg->state.changelog_topic) p->changelog_topic = strdup(cfg->state.changelog_topic);
    else if (asprintf(&p->changelog_topic, "%s-%s-changelog", cfg->kafka.group_id, cfg->table.name) < 0)
      p->changelog_topic = NULL;
    if (!p->changelog_topic) return wd_error_nomem();
    if ((err = wd_clients_restore_conf(&p->kc, cfg))) return err;
  }
  return NULL;
}

/* The commit coordinator (before the consumer: its callbacks, in assign mode already inside
 * wd_consumer_new, go to it), with the standby copies and a rebuild armed on an incompatible
 * definition (app/ops/fingerprint.h) and its commit marker. */
static wd_error_t *open_coordinator(wd_pipeline_t *p, const char *dir) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  const char *reset = wd_kafka_conf_get(&p->kc.kconf, "auto.offset.reset");
  size_t ntask = 0, nstateless = 0;
  const char *const *task_topics = wd_repart_task_topics(p->rp, &ntask);
  const char *const *stateless = wd_repart_stateless_topics(p->rp, &nstateless);
  wd_commit_conf_t cc = {
      .exactly_once = p->exactly_once,
      .group = !p->opts.replay,
      .per_partition = p->per_partition,
      .interval_ms = cfg->pipeline.commit_interval_ms,
      .max_records = (uint64_t)cfg->pipeline.commit_max_records,
      .txn_timeout_ms = p->kc.txn_timeout_ms,
      .replay_from_stored = true,
      .latest_when_empty = reset && (!strcmp(reset, "latest") || !strcmp(reset, "end") || !strcmp(reset, "largest")),
      .topics = task_topics,
      .ntopics = ntask,
      .stateless_topics = stateless,
      .nstateless = nstateless,
      .changelog_topic = p->changelog_topic,
      .txn_id = p->kc.txn_id,
      .restore_conf = &p->kc.rconf,
      .hooks = {p, hist_before_finalize, on_committed, on_aborted, hist_before_write}, /* history */
  };
  if (p->changelog_topic && (err = ensure_changelog(p))) return err;
  if (p->changelog_topic && (err = wd_standby_open(&p->kc.rconf, p->changelog_topic, cfg->pipeline.num_standby_replicas,
                                                   (uint32_t)wd_repart_partitions(p->rp), p->store, p->state,
                                                   task_topics, ntask, &p->standby)))
    return err;
  cc.standby = p->standby;
  if (p->gtopics) cc.hooks.changelog_skip = wd_join_global_key; /* lookup rows and index: no task's */
  /* a rebuild armed on an incompatible definition (app/ops/fingerprint.h) */
  if (!p->opts.replay && (err = wd_rebuild_open(p->store, p->state, p->table, p->changelog_topic != NULL, &p->rb)))
    return err;
  if (p->rb && (p->gtopics || !p->exactly_once || (p->per_partition && !p->changelog_topic)))
    return wd_error_new(WD_ERR_CONFIG, C_STATE_DEFINITION,
                        "state.on-incompatible-change: rebuild needs exactly-once and, with lookup sources, a single "
                        "task; set state.dir back to %s.before-rebuild and use fail and `widen replay`",
                        dir);
  if (p->rb) cc.hooks.task_current = rebuild_task_current;
  if ((err = wd_commit_conf_flush(&cc, cfg, !p->opts.replay, p->changelog_topic != NULL, wd_lookups_active(p->lk),
                                  p->rb != NULL)))
    return err;
  if ((err = wd_commit_new(&cc, p->coll, NULL, p->state, p->store, &p->commit))) return err;
  if (p->rb &&
      (err = wd_rebuild_marker(&p->kc.kconf, p->kc.txn_id, p->changelog_topic ? p->changelog_topic : cfg->sink.topic,
                               p->commit, &p->rb_marker)))
    return err;
  wd_commit_set_stop(p->commit, &p->stop); /* every wait is bounded once stopping */
  wd_collector_set_wait(p->coll, producer_wait, p); /* a full producer queue serves the group */
  return NULL;
}

/* The group consumer of topics[0..nt) (its callbacks to the coordinator) and, with lookups under
 * per-partition tasks, the global table of the lookup topics gtopics[0..ngt) with its commit
 * marker in a group of this process. */
static wd_error_t *open_consumers(wd_pipeline_t *p, size_t nt, size_t ngt) {
  wd_error_t *err = NULL;
  /* the metrics take librdkafka's statistics of the pipeline's consumer (a property of its own wins) */
  if (p->rm && !wd_kafka_conf_get(&p->kc.kconf, "statistics.interval.ms"))
    err = wd_kafka_conf_set(&p->kc.kconf, "statistics.interval.ms", "5000");
  if (!err) err = wd_consumer_new(&p->kc.kconf, p->topics, nt, on_assign, p, &p->cons);
  if (err) return err;
  wd_commit_set_consumer(p->commit, p->cons);
  wd_consumer_set_revoke_cb(p->cons, on_revoke);
  wd_consumer_set_assign_all_cb(p->cons, on_assign_all);
  if (!p->gtopics) return NULL;
  return wd_gtable_open(&p->kc.kconf, p->gtopics, ngt, p->store, p->exactly_once ? p->kc.txn_id : NULL, p->commit,
                        wd_lookups_join(p->lk), p->changelog_topic, &p->gt);
}

/* A poll batch of the consumer's records through the table (app/runtime/batch.h), with the changelog's
 * output (app/runtime/emit.h) and the replay's bookkeeping (app/runtime/replay.h). */
static void decode_waiting(void *ctx) { metrics_tick(ctx, wd_mono_s(), false); }

static wd_error_t *open_batch(wd_pipeline_t *p) {
  const wd_config_t *cfg = p->cfg;
  wd_replay_init(&p->replay, p->opts.replay, p->opts.from_ms, p->opts.stop_at_state);
  wd_emitter_init(&p->emit, &(wd_emitter_conf_t){p->schema, cfg->table.name, cfg->sink.topic, p->sink_fmt, p->key_fmt,
                                                 p->avro_out, p->coll, p->opts.no_output, &p->st.changes_out,
                                                 &p->st.messages_out});
  wd_batch_conf_t bc = {.table = p->table,
                        .sources = p->sources,
                        .nsources = p->nsources,
                        .state = p->state,
                        .commit = p->commit,
                        .coll = p->coll,
                        .lk = p->lk,
                        .rp = p->rp,
                        .tix = p->tix,
                        .gt = p->gt,
                        .hg = p->hg,
                        .rm = p->rm,
                        .registry = p->registry,
                        .replay = &p->replay,
                        .emitter = &p->emit,
                        .dlq_topic = cfg->sink.dead_letter_topic,
                        .max = (size_t)cfg->pipeline.batch_size,
                        .per_partition = p->per_partition,
                        .no_output = p->opts.no_output,
                        .trace = p->trace,
                        .stop = &p->stop,
                        .waiting = decode_waiting,
                        .waiting_ctx = p,
                        .st = &p->st};
  wd_error_t *err = wd_batch_new(&bc, &p->batch);
  if (!err) p->msgs = wd_batch_msgs(p->batch);
  return err;
}

wd_error_t *wd_pipeline_new(const wd_config_t *cfg, const wd_pipeline_opts_t *opts, wd_pipeline_t **out) {
  wd_error_t *err = NULL;
  *out = NULL;
  wd_pipeline_t *p = calloc(1, sizeof(*p));
  if (!p) {
    if (opts) wd_store_close(opts->store); /* taken over on every path */
    return wd_error_nomem();
  }
  p->cfg = cfg;
  if (opts) p->opts = *opts;
  p->store = p->opts.store; /* an opened store handed over: ours from here on (closed by destroy) */
  p->opts.store = NULL;
  const char *dir = p->opts.state_dir ? p->opts.state_dir : cfg->state.dir;
  size_t ntopics = 0, nt = 0, ngt = 0;
  if ((err = open_table_and_sources(p, &ntopics)) || /* table, sources, lookups, sink formats, registry */
      (err = warn_retractions(p)) || /* a table that rejects retractions: said once */
      (err = open_state(p, dir, ntopics)) || /* store, state, metrics, history, join layer */
      (err = open_trace(p)) || /* --trace */
      (err = open_kafka(p)) || /* the clients' configurations, transactional.id, collector */
      (err = plan_topics(p, dir, ntopics, &nt, &ngt)) || /* repartition plan, layout, topics, pace */
      (err = open_coordinator(p, dir)) || /* commit coordinator, standby copies, rebuild */
      (err = open_consumers(p, nt, ngt)) || /* group consumer, global table */
      (err = open_batch(p)) || /* the batch, the emitter, the replay */
      (err = wd_commit_recover(p->commit, &p->stop)) || /* fence, resolve a prepared commit */
      (p->gt && (err = wd_gtable_start(p->gt)))) /* at the positions recovery left */
    goto fail;
  if (p->exactly_once)
    wd_log(WD_LOG_INFO, "pipeline",
           "exactly-once: transactional.id %s; consumers of %s must read with "
           "isolation.level=read_committed",
           p->kc.txn_id, cfg->sink.topic);
  *out = p;
  return NULL;
fail:
  wd_pipeline_destroy(p);
  return err;
}

void wd_pipeline_destroy(wd_pipeline_t *p) {
  if (!p) return;
  if (p->cons) {
    p->closing = true;
    wd_error_t *err = wd_consumer_close(p->cons);
    if (err) wd_log(WD_LOG_WARN, "pipeline", "closing the consumer: %s", err->message);
    wd_error_destroy(err);
    wd_consumer_destroy(p->cons);
  }
  wd_gtable_destroy(p->gt);
  wd_rebuild_destroy(p->rb);
  if (p->rb_marker) wd_consumer_destroy(p->rb_marker);
  free(p->gtopics);
  wd_topic_index_destroy(p->tix);
  wd_run_metrics_destroy(p->rm); /* stops the server thread first */
  wd_collector_destroy(p->coll); /* flushes its producer first */
  wd_clients_clear(&p->kc);
  free(p->changelog_topic);
  wd_batch_destroy(p->batch); /* before the lookups whose batch rows it releases */
  wd_emitter_free(&p->emit);
  wd_replay_free(&p->replay);
  wd_lookups_destroy(p->lk); /* before the state its join hooks into */
  wd_avro_sink_destroy(p->avro_out);
  wd_registry_destroy(p->registry);
  wd_commit_destroy(p->commit);
  wd_hist_gather_destroy(p->hg); /* after the coordinator, whose hooks write into it */
  wd_standby_destroy(p->standby);
  wd_state_destroy(p->state);
  free(p->topics);
  wd_repart_destroy(p->rp);
  wd_store_close(p->store);
  for (size_t i = 0; i < p->nsources; i++) wd_source_destroy(p->sources[i]);
  free(p->sources);
  wd_table_destroy(p->table);
  if (p->trace) fclose(p->trace);
  free(p);
}
