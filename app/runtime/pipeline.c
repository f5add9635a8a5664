/*
 * app/runtime/pipeline.c — the main job's loop (see pipeline.h for the per-batch order).
 */
#include "app/runtime/pipeline.h"
#include "app/runtime/global_table.h"
#include "app/runtime/lookups.h"
#include "common/clock.h"
#include "app/config/join_config.h"
#include "app/config/table_config.h"
#include "app/runtime/commit.h"
#include "app/runtime/commit_pace.h"
#include "app/ops/history_gather.h"
#include "app/runtime/rebuild.h"
#include "app/ops/run_metrics.h"
#include "app/runtime/status_report.h"
#include "app/runtime/repartition.h"
#include "app/runtime/standby.h"
#include "app/runtime/collector.h"
#include "app/runtime/topic_index.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "changelog/avro.h"
#include "changelog/changelog.h"
#include "changelog/sink_format.h"
#include "common/json.h"
#include "common/log.h"
#include "common/ratelog.h"
#include "ingest/consumer.h"
#include "ingest/format.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"
#include "join/state.h"
#include "sink/producer.h"
#include "sink/topics.h"

/* One decoded Kafka record of the batch. */
typedef struct {
  size_t first, count; /* its change records: p->recs[first .. first+count) */
  wd_error_t *err; /* decode or merge rejection: goes to the dead-letter topic */
  bool applied;
  bool tombstone; /* a Kafka tombstone (null value), skipped */
  bool skipped; /* replay --from: older than the point in time */
  bool lookup; /* a lookup source's message: its records are the lookups' batch rows first .. first+count */
  bool forwarded; /* a repartitioned source's record: its change records went to its repartition topic */
  bool held; /* not taken (its task is restoring other partitions): read again */
  int src; /* index of its source (cfg->sources), -1 when none */
  const struct wd_topic_ent *te; /* its topic in the pipeline's topic index, NULL when none */
} wd_bmsg_t;

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
  wd_kafka_conf_t kconf;
  const wd_sink_format_t *sink_fmt; /* the changelog's value format (changelog/sink_format.h) */
  const wd_key_format_t *key_fmt; /* its key format */
  wd_registry_t *registry; /* schema registry (Avro sources, sink or key), else NULL */
  void **fmt_state; /* per source format (ingest/format.h index): its decoder state */
  size_t nfmt;
  wd_avro_sink_t *avro_out; /* avro sink format or Avro keys */
  /* per batch */
  wd_kmsg_t *msgs;
  wd_bmsg_t *bm;
  wd_row_t **recs;
  size_t nrecs, cap_recs;
  wd_changes_t changes;
  wd_changelog_t cl;
  wd_buf_t keys; /* encoded keys, back to back */
  size_t *key_off; /* per rec */
  wd_buf_t kbuf, vbuf;
  wd_commit_t *commit; /* the commit coordinator (app/runtime/commit.h) */
  bool exactly_once;
  bool *restoring; /* per message of the batch: it only rebuilds state (no output) */
  char **dec_warn; /* per source: its decimal-encoding warning, said at its first record without an
                           envelope schema (a schema'd source's schema decides: no warning), NULL after */
  uint32_t *rec_task; /* per change record of the batch: its task */
  size_t cap_rec_task;
  /* replay */
  wd_tp_offset_t *end;
  size_t nend;
  /* stats */
  wd_pipeline_stats_t st;
  wd_ratelog_t rlog; /* dead letters: logged per (source, error id, field), rate-limited */
  FILE *trace;
  uint64_t trace_msg;
  volatile sig_atomic_t stop;
  volatile sig_atomic_t settled; /* no commit open (wd_pipeline_settled) */
  unsigned stop_grace_s; /* wd_pipeline_stop_grace_s */
  double busy_start, busy_end; /* first input, last batch completed (monotonic s) */
  size_t *cl_src; /* per changelog row: index of its source message in the batch */
  size_t cap_cl_src;
  bool assigned; /* partitions were assigned since the last co-partitioning check */
  bool closing; /* wd_pipeline_destroy closes the consumer: its revocation is no rebalance */
  bool pu_no_retract; /* the table rejects every retraction: -U records are left out */
  const char **topics; /* every source topic (the sources' copies), for the consumer and the coordinator */
  char *txn_id; /* the producer's transactional.id (exactly-once), owned */
  wd_kafka_conf_t pconf; /* the producer's configuration (kept to re-create it), owned */
  wd_kafka_conf_t rconf; /* the restore consumer's (brokers and properties, no group), owned */
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
  char *pos_group; /* the per-process group of the commit marker, owned */
  /* the rebuild on an incompatible definition (app/runtime/rebuild.h), or NULL */
  wd_rebuild_t *rb;
  wd_consumer_t *rb_marker; /* in group "<transactional.id>.rebuild" (never subscribed): the commit marker */
  char *rb_group;
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

static const wd_source_t *source_of(const wd_pipeline_t *p, const char *topic);
static bool past_stop(const wd_pipeline_t *p, const wd_kmsg_t *m);

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
  /* a rebuild's switch commit deletes the staged rows and writes the task's mark */
  return hist_add(p, number, b, false) || wd_rebuild_before_finalize(p->rb, b) ? -1 : 0;
}

static int hist_before_write(void *ctx, uint64_t number, wd_store_batch_t *b) {
  wd_pipeline_t *p = ctx;
  wd_rebuild_before_write(p->rb); /* its fault hook (tests) */
  return hist_add(p, number, b, true);
}

/* ---- the rebuild's output (app/runtime/rebuild.h wd_rebuild_io_t) -------------------
 * The one place where the rebuild's records enter the open commit's transaction, through the record
 * collector (app/runtime/collector.h) as every other output: the difference in the sink's
 * formats, encoded as emit_changelog encodes the changelog, and the task's state entries to
 * the state changelog topic. */
static wd_error_t *encode_key(wd_pipeline_t *p, const wd_sink_ctx_t *c, const wd_row_t *row);

/* A rebalance aborted the switch in hand (wd_commit_batch_invalid): nothing more of it may be
 * sent, or it would go into the next commit's transaction. */
static wd_error_t *switch_abandoned(wd_pipeline_t *p) {
  return wd_commit_batch_invalid(p->commit)
             ? wd_error_new(WD_ERR_KAFKA, E_BATCH_ABANDONED, "a rebalance came while the switch was in hand")
             : NULL;
}

static wd_error_t *rebuild_changes(void *ctx, wd_row_t *const *rows, size_t n) {
  wd_pipeline_t *p = ctx;
  wd_error_t *aerr = switch_abandoned(p);
  if (aerr) return aerr;
  wd_sink_ctx_t sc = {p->schema, p->cfg->table.name, wd_wall_ms(), p->avro_out};
  for (size_t i = 0; i < n;) {
    const wd_row_t *keyrow = NULL;
    size_t at = i;
    wd_buf_reset(&p->kbuf);
    wd_buf_reset(&p->vbuf);
    wd_error_t *err = p->sink_fmt->encode(&sc, rows, n, &i, &keyrow, &p->vbuf);
    if (!err) err = encode_key(p, &sc, keyrow);
    if (!err) err = wd_commit_begin(p->commit);
    if (!err)
      err = wd_collector_send(p->coll, WD_OUT_CHANGELOG, p->cfg->sink.topic, -1, p->kbuf.data, p->kbuf.len,
                              p->vbuf.data, p->vbuf.len);
    if (!err && i == at) /* every format takes at least one row */
      err =
          wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "sink format %s took no row of the difference", p->sink_fmt->name);
    if (err) return err;
    p->st.changes_out += i - at;
    wd_hist_gather_count(p->hg, 0, i - at, 0, 0);
    p->st.messages_out++;
  }
  return NULL;
}

static wd_error_t *rebuild_state(void *ctx, uint32_t task, const uint8_t *key, size_t klen, const uint8_t *val,
                                 size_t vlen) {
  wd_pipeline_t *p = ctx;
  wd_error_t *err = switch_abandoned(p);
  if (!err) err = wd_commit_begin(p->commit);
  if (!err)
    err = wd_collector_send(p->coll, WD_OUT_STATE_CHANGELOG, p->changelog_topic, (int32_t)task, key, klen, val,
                            val ? vlen : 0);
  return err;
}

static wd_error_t *rebuild_complete(void *ctx, bool *aborted) {
  wd_pipeline_t *p = ctx;
  return wd_commit_run(p->commit, &p->stop, aborted);
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

/* After process_batch, before release_batch: the batch's counts. */
static void metrics_batch(wd_pipeline_t *p, size_t n) {
  if (!p->rm) return;
  for (size_t i = 0; i < n; i++)
    if (p->bm[i].te) wd_run_metrics_record(p->rm, p->bm[i].src);
  for (size_t i = 0; i < p->cl.n; i++) wd_run_metrics_change(p->rm, p->cl.rows[i]->kind);
  for (size_t i = 0; i < n; i++) {
    if (p->bm[i].err && !p->restoring[i])
      wd_run_metrics_dead_letter_at(p->rm, p->bm[i].err->id, p->msgs[i].topic, p->msgs[i].partition, p->msgs[i].offset,
                                    p->bm[i].err->message);
    if (p->bm[i].tombstone && !p->restoring[i]) wd_run_metrics_skipped_tombstone(p->rm);
  }
  wd_run_metrics_batch_done(p->rm);
}

/* At most once a second from the loop: lag, state size, cache, restore progress. */
static void metrics_tick(wd_pipeline_t *p, double now, bool force) {
  if (!wd_run_metrics_tick_due(p->rm, now, force)) return;
  wd_run_tick_t t = {.restore = -1};
  wd_tp_offset_t *lags = NULL;
  wd_error_destroy(wd_consumer_lags(p->cons, &lags, &t.nlags));
  t.lags = lags;
  t.assigned = wd_consumer_assigned_count(p->cons);
  t.state_bytes = wd_store_disk_bytes(p->store);
  wd_state_cache_counts(p->state, &t.cache_hits, &t.cache_misses);
  t.cache_entries = wd_state_cached(p->state);
  if (p->opts.replay && p->nend) {
    double want = 0, have = 0;
    for (size_t i = 0; i < p->nend; i++) {
      int64_t next = -1;
      wd_error_destroy(wd_store_get_offset(p->store, p->end[i].topic, p->end[i].partition, &next));
      want += (double)(p->end[i].offset > 0 ? p->end[i].offset : 0);
      have += (double)(next < 0 ? 0 : next > p->end[i].offset ? p->end[i].offset : next);
    }
    t.restore = want > 0 ? have / want : 1.0;
  }
  wd_run_metrics_tick(p->rm, &t);
  wd_status_inputs_t si = {p->commit,
                           p->cons,
                           p->store,
                           &p->st,
                           p->cfg->table.name,
                           p->cfg->sink.topic,
                           p->cfg->kafka.group_id,
                           p->txn_id,
                           p->exactly_once,
                           p->pace.interval,
                           wd_commit_initialising(p->commit),
                           wd_commit_changelog_restoring(p->commit),
                           p->rb && wd_rebuild_busy(p->rb, p->commit),
                           p->stop != 0,
                           lags,
                           t.nlags};
  wd_status_report(&si, p->rm); /* the probes' and /status's snapshot */
  free(lags);
}

/* Commit hooks: the trace of a commit is written when the commit is final, dropped on abort. */
static void on_committed(void *ctx, uint64_t number) {
  wd_pipeline_t *p = ctx;
  wd_run_metrics_commit_made(p->rm, number, wd_hist_gather_duration_s(p->hg));
  /* the open commit may hold the next one's batches already */
  wd_hist_gather_committed(p->hg, p->trace);
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
  if (p->gt) { /* what the commit took of the lookup topics is read again (its reconciles are redone:
               * the coordinator moved the running tasks back to RECONCILING) */
    wd_error_t *err = wd_gtable_rewind(p->gt, true);
    if (err) {
      wd_log(WD_LOG_ERROR, "pipeline", "rewinding the lookup topics after an abort: %s", err->message);
      wd_error_destroy(err);
    }
  }
}

/* The kind of topic, its source's index (*si) and the pipeline's own copy of its name (*canon,
 * valid for the pipeline's life, unlike a message's). */
static wd_topic_kind_t topic_kind(const wd_pipeline_t *p, const char *topic, int *si, const char **canon) {
  for (size_t i = 0; i < p->nsources; i++) {
    for (size_t t = 0; t < p->sources[i]->ntopics; t++)
      if (strcmp(p->sources[i]->topics[t], topic) == 0) {
        *si = (int)i;
        *canon = p->sources[i]->topics[t];
        return wd_repart_on(p->rp, i) ? WD_TOPIC_RAW : WD_TOPIC_DIRECT;
      }
    const char *rt = wd_repart_topic(p->rp, i);
    if (rt && !strcmp(rt, topic)) {
      *si = (int)i;
      *canon = rt;
      return WD_TOPIC_REPARTITION;
    }
  }
  *si = -1;
  *canon = NULL;
  return WD_TOPIC_NONE;
}

static const wd_source_t *source_of(const wd_pipeline_t *p, const char *topic) {
  int si;
  const char *canon;
  return topic_kind(p, topic, &si, &canon) ? p->sources[si] : NULL;
}

/* ---- the topic index ---------------------------------------------------- */

/* Builds the index of every topic the pipeline reads (the sources' topics, their repartition
 * topics), once they are known (after plan_repartition, with p->gtopics set). 0, or -1 on no
 * memory. */
static int topic_index_build(wd_pipeline_t *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->nsources; i++) n += p->sources[i]->ntopics + (wd_repart_topic(p->rp, i) ? 1 : 0);
  wd_topic_ent_t *ents = calloc(n ? n : 1, sizeof(*ents));
  if (!ents) return -1;
  size_t k = 0;
  for (size_t i = 0; i < p->nsources; i++)
    for (size_t t = 0; t <= p->sources[i]->ntopics; t++) {
      const char *name = t < p->sources[i]->ntopics ? p->sources[i]->topics[t] : wd_repart_topic(p->rp, i);
      if (!name) continue;
      int si = -1;
      const char *canon = NULL;
      wd_topic_kind_t kind = topic_kind(p, name, &si, &canon); /* the first source naming it wins, as before */
      bool global = false;
      for (size_t g = 0; p->gtopics && p->gtopics[g] && !global; g++) global = p->gtopics[g] == canon;
      ents[k++] = (wd_topic_ent_t){canon, kind, si, global};
    }
  p->tix = wd_topic_index_new(ents, k); /* of the same name, the first is kept */
  free(ents);
  return p->tix ? 0 : -1;
}

static int push_rec(wd_pipeline_t *p, wd_row_t *row) {
  if (p->nrecs == p->cap_recs) {
    size_t cap = p->cap_recs ? p->cap_recs * 2 : 1024;
    wd_row_t **r = realloc(p->recs, cap * sizeof(*r));
    size_t *o = realloc(p->key_off, (cap + 1) * sizeof(*o));
    uint32_t *t = realloc(p->rec_task, cap * sizeof(*t));
    if (r) p->recs = r;
    if (o) p->key_off = o;
    if (t) p->rec_task = t;
    if (!r || !o || !t) return -1;
    p->cap_recs = cap;
  }
  p->recs[p->nrecs++] = row;
  return 0;
}

/* Logs a dead letter's reason: the first of each (source, error id, field) at once, then at most
 * one line per such key every 10 s with the number not logged (common/ratelog.h). */
static void log_once(wd_pipeline_t *p, const wd_kmsg_t *m, const wd_error_t *err) {
  const wd_source_t *src = source_of(p, m->topic);
  char field[128];
  p->rlog.interval = 10.0;
  wd_ratelog_note(&p->rlog, wd_mono_s(), WD_LOG_WARN, "pipeline", src ? src->name : m->topic, err->id,
                  wd_ratelog_field_of(err->message, field, sizeof(field)), err->message);
}

static wd_error_t *trace_message(wd_pipeline_t *p, const wd_bmsg_t *b) {
  for (size_t i = b->first; i < b->first + b->count; i++) {
    json_t *j = json_object();
    const wd_row_t *row = b->lookup ? wd_lookups_row(p->lk, i) : p->recs[i];
    json_object_set_new(j, "op", json_string(wd_row_kind_str(row->kind)));
    json_object_set_new(j, "row", wd_row_to_json(b->lookup ? wd_lookups_row_schema(p->lk, i) : p->schema, row));
    json_object_set_new(j, "message", json_integer((json_int_t)p->trace_msg));
    if (wd_lookups_active(p->lk) && b->src >= 0) /* the case format's "source" (tests/cases) */
      json_object_set_new(j, "source", json_string(p->sources[b->src]->name));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) return wd_error_nomem();
    wd_buf_t *tb = wd_hist_gather_trace(p->hg); /* the open commit's */
    int rc = wd_buf_append(tb, s, strlen(s)) || wd_buf_putc(tb, '\n');
    free(s);
    if (rc) return wd_error_nomem();
  }
  p->trace_msg++;
  return NULL;
}

/* The output key of row in the sink's key format (changelog/sink_format.h). */
static wd_error_t *encode_key(wd_pipeline_t *p, const wd_sink_ctx_t *c, const wd_row_t *row) {
  return p->key_fmt->encode(c, row, &p->kbuf);
}

/* Where the rows given to emit_changelog came from. All members may be NULL: the rows are then
 * one message's (a task's reconcile), sent, and an output over message.max.bytes is only logged. */
typedef struct {
  const size_t *src; /* per row: the index of its source message (a message's rows are contiguous) */
  const bool *quiet; /* per source message: it only rebuilds state (nothing is sent) */
  const wd_kmsg_t *msgs; /* per source message: named in the log of an output too large */
  wd_bmsg_t *bm; /* per source message: an output too large dead-letters it (bm[src].err) */
} wd_emit_from_t;

/* Produces the changelog rows rows[0..n), keyed by primary key, into the open commit through the
 * collector (or counts them only: --no-output, a message that only rebuilds state). An output
 * over the producer's message.max.bytes never stalls the pipeline: its source message is
 * dead-lettered with the reason (from->bm) or, for rows of no message, logged. Errors: the
 * collector's (abortable ones included: the caller aborts), the encoders'. */
static wd_error_t *emit_changelog(wd_pipeline_t *p, wd_row_t *const *rows, size_t n, const wd_emit_from_t *from) {
  wd_error_t *err = NULL;
  const char *topic = p->cfg->sink.topic;
  const char *tname = p->cfg->table.name;
  int64_t ts = wd_wall_ms();
  wd_sink_ctx_t sc = {p->schema, tname, ts, p->avro_out};
  for (size_t i = 0; i < n;) {
    const wd_row_t *keyrow = NULL;
    size_t src = from->src ? from->src[i] : 0;
    bool quiet = from->quiet && from->quiet[src];
    if (p->opts.no_output || quiet) {
      /* nothing is sent: skip the rows of this source message (they are contiguous) unencoded */
      size_t at = i;
      while (i < n && (from->src ? from->src[i] : 0) == src) i++;
      if (!quiet) p->st.changes_out += i - at;
      continue;
    }
    wd_buf_reset(&p->kbuf);
    wd_buf_reset(&p->vbuf);
    size_t at = i;
    err = p->sink_fmt->encode(&sc, rows, n, &i, &keyrow, &p->vbuf);
    p->st.changes_out += i - at;
    if (!err) err = encode_key(p, &sc, keyrow);
    if (!err)
      err =
          wd_collector_send(p->coll, WD_OUT_CHANGELOG, topic, -1, p->kbuf.data, p->kbuf.len, p->vbuf.data, p->vbuf.len);
    if (err && wd_error_is(err, WD_EID_E_SINK_PRODUCE) && err->code == WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE) {
      /* an output that can never be delivered must not stall the pipeline: the source message
       * that caused it goes to the dead-letter topic with the reason (the state keeps the change) */
      static const wd_kmsg_t none = {.topic = "(reconcile)"};
      const wd_kmsg_t *m = from->msgs ? &from->msgs[src] : &none; /* the rows encoded are this message's */
      wd_log(WD_LOG_ERROR, "pipeline",
             "%s[%d]@%" PRId64 ": its %zu-byte changelog message is over the producer's "
             "message.max.bytes; %s (raise message.max.bytes under sink.properties and the topic's "
             "max.message.bytes)",
             m->topic, m->partition, m->offset, p->vbuf.len, from->bm ? "dead-lettered" : "not sent");
      if (from->bm && !from->bm[src].err)
        from->bm[src].err = wd_error_new(WD_ERR_RECORD, E_OUTPUT_TOO_LARGE,
                                         "%s[%d]@%" PRId64 ": the changelog message it caused is %zu bytes, over the "
                                         "producer's message.max.bytes (%s); the table state has the change",
                                         m->topic, m->partition, m->offset, p->vbuf.len, err->message);
      wd_error_destroy(err);
      err = NULL;
      continue;
    }
    if (err) return err;
    p->st.messages_out++;
  }
  return NULL;
}

/* Sleeps ms milliseconds (in slices, returning early when the pipeline is stopped). */
static void sleep_ms(wd_pipeline_t *p, long ms) {
  while (ms > 0 && !p->stop && !(p->opts.start_stop && *p->opts.start_stop)) {
    long slice = ms > 100 ? 100 : ms;
    wd_sleep_ms(slice);
    ms -= slice;
  }
}

/* The -D records of p->changes whose sequence field (sequence.field or a group's) is NULL or
 * absent — a delete that carries only the key — are counted and handled by the source's
 * delete-without-sequence: apply (the sequence field is marked absent, so the merge takes it
 * from the stored row and the delete applies), dead-letter (E_DELETE_NO_SEQUENCE), ignore (the
 * record is left out: the merge would order it oldest and drop it). */
static wd_error_t *deletes_without_sequence(wd_pipeline_t *p, const wd_source_t *src) {
  for (size_t k = 0; k < p->changes.count; k++) {
    wd_row_t *r = p->changes.rows[k];
    if (r->kind != WD_DELETE) continue;
    bool noseq = false; /* a sequence field this source maps is NULL */
    for (size_t m = 0; m < src->ncols; m++) {
      int c = src->cols[m].col;
      if (wd_table_is_sequence_column(p->table, c) && r->v[c].is_null) noseq = true;
    }
    if (!noseq) continue;
    p->st.deletes_without_sequence++;
    switch (src->delete_without_sequence) {
    case WD_DELETE_NO_SEQ_APPLY:
      for (size_t m = 0; m < src->ncols; m++) {
        int c = src->cols[m].col;
        if (wd_table_is_sequence_column(p->table, c) && r->v[c].is_null && wd_row_set_absent(r, (size_t)c))
          return wd_error_nomem();
      }
      break;
    case WD_DELETE_NO_SEQ_DEAD_LETTER:
      return wd_error_new(WD_ERR_RECORD, E_DELETE_NO_SEQUENCE,
                          "source '%s': a delete without its sequence field (the record carries only the key); "
                          "rejected by delete-without-sequence: dead-letter (apply takes it from the stored row)",
                          src->name);
    case WD_DELETE_NO_SEQ_IGNORE: {
      wd_row_t *t = wd_changes_take(&p->changes, k);
      wd_row_destroy(p->schema, t);
      memmove(p->changes.rows + k, p->changes.rows + k + 1, (p->changes.count - k - 1) * sizeof(*p->changes.rows));
      p->changes.rows[--p->changes.count] = NULL;
      k--;
      break;
    }
    }
  }
  return NULL;
}

/* A table that rejects every retraction (wd_table_rejects_retractions) takes the +U of
 * an update without its -U, as Paimon's Flink sink does for a primary-key table (it asks the
 * planner for no UPDATE_BEFORE unless the table can retract: sequence groups, aggregation,
 * changelog-producer input): the -U records of p->changes are left out and counted as ignored
 * -U, so that the +U applies instead of the whole message being dead-lettered for its -U. A
 * delete is still rejected (E_PU_DELETE_NOT_ACCEPTED); the start-up warning says so. */
static wd_error_t *drop_update_before(wd_pipeline_t *p) {
  size_t k = 0;
  for (size_t i = 0; i < p->changes.count; i++) {
    wd_row_t *r = p->changes.rows[i];
    if (r->kind == WD_UPDATE_BEFORE) {
      wd_row_destroy(p->schema, wd_changes_take(&p->changes, i));
      p->st.ignored_update_before++;
      continue;
    }
    p->changes.rows[i] = NULL;
    p->changes.rows[k++] = r;
  }
  p->changes.count = k;
  return NULL;
}

/* A record of src without an envelope schema: its decimal-encoding warning (if any) is said now, once. */
static void schemaless_noted(wd_pipeline_t *p, const wd_source_t *src) {
  for (size_t i = 0; p->dec_warn && i < p->nsources; i++)
    if (p->sources[i] == src && p->dec_warn[i]) {
      wd_log(WD_LOG_WARN, "pipeline", "%s (its records carry no envelope schema)", p->dec_warn[i]);
      free(p->dec_warn[i]);
      p->dec_warn[i] = NULL;
    }
}

/* Decodes one record with its source's format (ingest/format.h). A retriable error (the schema
 * registry did not answer) is logged and retried with backoff until it succeeds or the pipeline
 * is stopped: a record is never dead-lettered for it. */
static wd_error_t *decode_record(wd_pipeline_t *p, const wd_source_t *src, const wd_schema_t *schema,
                                 wd_changes_t *changes, const wd_kafka_meta_t *meta, const wd_kmsg_t *m) {
  const wd_format_t *f = wd_format_of(src->format);
  void *state = (size_t)src->format < p->nfmt ? p->fmt_state[src->format] : NULL;
  for (unsigned attempt = 0;; attempt++) {
    wd_error_t *err = f->decode(state, src, schema, meta, m->value, m->value_len, changes);
    /* a lookup's rows (join/lookup.h) are ordered by its own table, not by the wide one */
    if (!err && (changes->flags & WD_CHANGES_SCHEMALESS)) schemaless_noted(p, src);
    if (!err)
      return changes == &p->changes && wd_table_has_ordering(p->table) ? deletes_without_sequence(p, src) : NULL;
    if (!err->retriable || p->stop) return err;
    long ms = wd_registry_backoff_ms(attempt);
    wd_log(WD_LOG_WARN, "pipeline", "%s[%d]@%" PRId64 ": %s; retrying in %ld ms", m->topic, m->partition, m->offset,
           err->message, ms);
    /* wait serving the consumer (paused), so that the group does not evict this process */
    for (long left = ms; left > 0 && !p->stop && !wd_commit_batch_invalid(p->commit); left -= 100) {
      wd_commit_wait(p->commit, left > 100 ? 100 : (int)left);
      metrics_tick(p, wd_mono_s(), false); /* the wait is the loop's work: /livez and /status go on */
    }
    if (wd_commit_batch_invalid(p->commit)) return err; /* the batch is abandoned */
    wd_error_destroy(err);
  }
}

/* ---- joins on other keys (join/lookup.h): decoding a lookup message, applying a message ---- */

static bool is_lookup(const wd_pipeline_t *p, int si) { return wd_lookups_is_lookup(p->lk, si); }

/* Decodes a lookup source's record into rows of its lookup schema, kept in the lookups' batch (a
 * decode error goes to b->err, as for main sources). */
static wd_error_t *decode_lookup(wd_pipeline_t *p, int si, const wd_kafka_meta_t *meta, const wd_kmsg_t *m,
                                 wd_bmsg_t *b) {
  wd_changes_t *ch = wd_lookups_changes(p->lk, si);
  b->lookup = true;
  b->count = 0;
  wd_error_t *derr = decode_record(p, p->sources[si], wd_lookups_schema(p->lk, si), ch, meta, m);
  if (derr) {
    if (derr->cls != WD_ERR_DECODE && derr->cls != WD_ERR_RECORD) return derr;
    b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
    return NULL;
  }
  if (ch->flags & WD_CHANGES_TOMBSTONE) {
    p->st.skipped_tombstones++;
    return NULL;
  }
  wd_error_t *err = wd_lookups_take(p->lk, si, &b->first, &b->count);
  if (err) return err;
  p->st.changes_in += b->count;
  return NULL;
}

/* Applies message b through the join layer (main or lookup source), or straight through the merge
 * engine when the config has no lookup and no required source. */
static wd_error_t *apply_message(wd_pipeline_t *p, const wd_bmsg_t *b, size_t first, size_t count,
                                 wd_merge_stats_t *ms) {
  return wd_lookups_apply(p->lk, b->src, b->lookup, p->recs, first, count, p->table, wd_state_ops(), p->state, &p->cl,
                          ms);
}

static void release_lookup_recs(wd_pipeline_t *p) { wd_lookups_batch_done(p->lk); }

/* ---- repartition topics (app/runtime/repartition.h) ---------------------------------------- */

/* Decodes a record of the repartition topic of source si into change records of task
 * m->partition; bytes that are not a repartition record go to the dead-letter topic. */
static wd_error_t *decode_repartitioned(wd_pipeline_t *p, int si, const wd_kmsg_t *m, wd_bmsg_t *b) {
  wd_repartition_rec_t one, *rec = &one;
  wd_error_t *derr = wd_repartition_decode(p->schema, m->value, m->value_len, rec);
  if (derr) {
    if (derr->cls != WD_ERR_DECODE) return derr;
    b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
    return NULL;
  }
  for (size_t k = 0; k < rec->n; k++) {
    if (push_rec(p, rec->rows[k])) {
      wd_repartition_rec_free(p->schema, rec);
      return wd_error_nomem();
    }
    rec->rows[k] = NULL; /* the batch owns it now */
    p->rec_task[p->nrecs - 1] = (uint32_t)m->partition;
    p->key_off[p->nrecs - 1] = p->keys.len;
    if (wd_row_key_encode(p->schema, p->recs[p->nrecs - 1], &p->keys)) {
      wd_repartition_rec_free(p->schema, rec);
      return wd_error_nomem();
    }
  }
  wd_repartition_rec_free(p->schema, rec);
  p->key_off[p->nrecs] = p->keys.len;
  b->src = si;
  b->count = p->nrecs - b->first;
  /* every change record must belong to this partition's task: a record placed by another
   * partition count (or by hand) would put its key in a second task */
  for (size_t r = b->first; r < p->nrecs; r++) {
    int32_t want = wd_repart_home(p->rp, (size_t)si, p->schema, p->recs[r]);
    if (want < 0) return wd_error_nomem();
    if (want == m->partition) continue;
    b->err = wd_error_new(WD_ERR_DECODE, E_REPARTITION_RECORD,
                          "%s[%d]@%" PRId64 ": a change record's key belongs to partition %d of %d, not to this one "
                          "(written with another partition count, or not by widen)",
                          m->topic, m->partition, m->offset, want, wd_repart_partitions(p->rp));
    b->count = 0; /* its rows stay in the batch (released with it) but are applied nowhere */
    break;
  }
  return NULL;
}

/* A record of a co-partitioned source whose change records have more than one wide key (a
 * key-changing update: -D or -U of the old key, +I or +U of the new one): the old key's row is in
 * the task of the partition the old key's own records are in, which this topic's keying does not
 * tell, so the record cannot be applied in its own partition's task (the old row would stay). */
static wd_error_t *key_change_error(wd_pipeline_t *p, int si, const wd_kmsg_t *m) {
  return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEYING,
                      "source '%s' (%s[%d]@%" PRId64 "): a key-changing update (its change records have more than "
                      "one primary key) in a co-partitioned source: the old key's row belongs to the task of the "
                      "partition the old key's own records are in, not to this record's; set `repartition: true` on "
                      "this source (its change records then go through a repartition topic, each by its own key)",
                      p->sources[si]->name, m->topic, m->partition, m->offset);
}

/* Checks that the change records just decoded from m (source si, read directly with per-partition
 * tasks) are in their wide key's partition, wd_repart_home. *home: -1 when they are (or the record
 * has none); else their home partition (a replay, or `repartition: auto` in a live run: the caller
 * forwards the record there through the source's repartition topic), or -2 for a record read
 * again while its task restores (forwarded when first read: nothing to do). Errors: C_SOURCE_KEYING
 * for a source that says `repartition: false` (wd_repart_misplaced_error) or for a record whose
 * change records have several keys (key_change_error), E_NOMEM. */
static wd_error_t *direct_home(wd_pipeline_t *p, int si, const wd_kmsg_t *m, const wd_kafka_meta_t *meta,
                               bool restoring, int32_t *home) {
  *home = -1;
  int32_t first = -1;
  for (size_t k = 0; k < p->changes.count; k++) {
    int32_t h = wd_repart_home(p->rp, (size_t)si, p->schema, p->changes.rows[k]);
    if (h < 0) return wd_error_nomem();
    if (k == 0) first = h;
    if (h != first) return key_change_error(p, si, m); /* two keys: placed by neither */
  }
  if (first < 0 || first == m->partition) return NULL;
  if (!p->st.misplaced && wd_repart_forwarding(p->rp) && !restoring && wd_repart_fallback(p->rp, (size_t)si)) {
    size_t kl = 0;
    const char *kb = wd_repart_canonical_key(p->rp, &kl);
    wd_log(WD_LOG_WARN, "pipeline",
           "source '%s' (%s[%d]@%" PRId64 "): a record outside its wide key's partition "
           "(%d, murmur2 of widen's key bytes %.*s): its Kafka key is not widen's key bytes (e.g. Kafka Connect's "
           "JsonConverter with schemas.enable=true); such records go through repartition topic %s "
           "(`repartition: auto`)",
           p->sources[si]->name, m->topic, m->partition, m->offset, first, (int)kl, kb,
           wd_repart_topic(p->rp, (size_t)si));
  }
  if (!wd_repart_forwarding(p->rp)) *home = first;
  else if (restoring) *home = -2;
  else if (wd_repart_fallback(p->rp, (size_t)si)) *home = first;
  else return wd_repart_misplaced_error(p->rp, p->sources[si], meta, first);
  return NULL;
}

/* Processes one poll batch msgs[0..n) in the order of pipeline.h, inside the open commit.
 * Returns E_BATCH_ABANDONED (retriable) when a rebalance or an abort came while the batch was in
 * hand: nothing of it was noted, and its records are read again. */
static wd_error_t *process_batch(wd_pipeline_t *p, size_t n) {
  wd_error_t *err = NULL;
  uint64_t changes0 = p->st.changes_out;
  p->nrecs = 0;
  wd_topic_index_batch_begin(p->tix); /* the topic pointers of the last batch's messages may be gone */
  wd_buf_reset(&p->keys);
  wd_changelog_reset(p->table, &p->cl);
  /* 1. decode */
  for (size_t i = 0; i < n; i++) {
    wd_kmsg_t *m = &p->msgs[i];
    wd_bmsg_t *b = &p->bm[i];
    memset(b, 0, sizeof(*b));
    b->first = p->nrecs;
    b->te = wd_topic_index_find(p->tix, m->topic); /* one lookup per record, O(1) */
    b->src = b->te ? b->te->si : -1;
    wd_gate_t gate = wd_commit_gate(p->commit, m->topic, m->partition, m->offset);
    p->restoring[i] = gate == WD_GATE_RESTORE;
    if (gate == WD_GATE_HOLD) { /* read again once every partition of its task caught up */
      b->held = true;
      continue;
    }
    const wd_source_t *src = b->te ? p->sources[b->src] : NULL;
    if ((p->opts.replay && p->opts.from_ms >= 0 && m->timestamp >= 0 && m->timestamp < p->opts.from_ms) ||
        past_stop(p, m)) { /* a rebuild stops where the old state stood */
      b->skipped = true;
      continue;
    }
    if (!src) continue; /* cannot happen: we subscribe to the sources' topics only */
    wd_kafka_meta_t meta = {m->topic, m->partition, m->offset, m->timestamp, m->key, m->key_len};
    int si = b->src;
    wd_topic_kind_t kind = b->te->kind;
    if (kind == WD_TOPIC_REPARTITION) { /* change records of task m->partition */
      if ((err = decode_repartitioned(p, si, m, b))) return err;
      continue;
    }
    /* a co-partitioned source's first record here: its Kafka key must be the wide key, else its
     * records would be merged in the wrong task (app/runtime/repartition.h) */
    if (kind == WD_TOPIC_DIRECT && p->per_partition && !is_lookup(p, si) &&
        (err = wd_repart_check_key(p->rp, (size_t)si, src, p->schema, &meta)))
      return err;
    if (is_lookup(p, b->src)) {
      err = decode_lookup(p, b->src, &meta, m, b);
      if (wd_commit_batch_invalid(p->commit)) {
        wd_error_destroy(err);
        return wd_error_new(WD_ERR_KAFKA, E_BATCH_ABANDONED, "a rebalance came while the batch was in hand");
      }
      if (err) return err;
      continue;
    }
    wd_error_t *derr =
        wd_lookups_has_key(p->lk, si) /* its own primary key: through its stored rows */
            ? decode_record(p, src, wd_lookups_key_schema(p->lk, si), wd_lookups_key_changes(p->lk, si), &meta, m)
            : decode_record(p, src, p->schema, &p->changes, &meta, m);
    if (!derr && wd_lookups_has_key(p->lk, si))
      derr = wd_lookups_normalise(p->lk, si, p->per_partition ? (uint32_t)m->partition : 0, &p->changes);
    if (wd_commit_batch_invalid(p->commit)) {
      wd_error_destroy(derr);
      return wd_error_new(WD_ERR_KAFKA, E_BATCH_ABANDONED, "a rebalance came while the batch was in hand");
    }
    if (derr) {
      if (derr->cls != WD_ERR_DECODE && derr->cls != WD_ERR_RECORD) return derr;
      b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
      continue;
    }
    if (p->changes.flags & WD_CHANGES_TOMBSTONE) {
      b->tombstone = true;
      continue;
    }
    if (p->changes.null_key_halves && !p->restoring[i]) {
      if (!p->st.null_key_halves)
        wd_log(WD_LOG_WARN, "pipeline",
               "source '%s' (%s[%d]@%" PRId64 "): update halves and deletes with a NULL "
               "primary key are left out (NULL -> K is +I, K -> NULL is -D); counted as `null-key halves`",
               src->name, m->topic, m->partition, m->offset);
      p->st.null_key_halves += p->changes.null_key_halves;
    }
    if (p->pu_no_retract && (err = drop_update_before(p))) return err;
    if (!p->changes.count) continue; /* every half had a NULL key: nothing to apply */
    /* a co-partitioned source's record must be in its wide key's partition (murmur2 of widen's key
     * bytes): else forwarded to it (`repartition: auto`), or the pipeline stops (app/runtime/repartition.h) */
    int32_t home = -1;
    if (kind == WD_TOPIC_DIRECT && p->per_partition && !is_lookup(p, si) &&
        (err = direct_home(p, si, m, &meta, p->restoring[i], &home)))
      return err;
    if (home == -2) continue; /* restoring: forwarded when first read */
    if (home >= 0 && !wd_repart_forwarding(p->rp)) { /* a replay: its task is the key's home */
      kind = WD_TOPIC_RAW;
    } else if (home >= 0) {
      kind = WD_TOPIC_RAW;
      p->st.misplaced++;
    }
    if (kind == WD_TOPIC_RAW && wd_repart_forwarding(p->rp)) { /* to the repartition topic, no state */
      /* (a source with its own primary key re-read to rebuild its rows: forwarded when first read) */
      if (!p->restoring[i] && (err = wd_repart_forward(p->rp, (size_t)si, p->schema, src->name, &meta, p->changes.rows,
                                                       p->changes.count, p->coll, &p->st.repartitioned)))
        return err;
      b->forwarded = true;
      continue;
    }
    uint32_t task = p->per_partition ? (uint32_t)m->partition : 0;
    for (size_t k = 0; k < p->changes.count; k++) {
      wd_row_t *row = wd_changes_take(&p->changes, k);
      if (!row || push_rec(p, row)) {
        wd_row_destroy(p->schema, row);
        return wd_error_nomem();
      }
      size_t at = p->keys.len;
      p->key_off[p->nrecs - 1] = at;
      if (wd_row_key_encode(p->schema, row, &p->keys)) return wd_error_nomem();
      /* a repartitioned source read here (replay): its task is where the repartition topic puts it */
      p->rec_task[p->nrecs - 1] =
          home >= 0 ? (uint32_t)wd_repart_home(p->rp, (size_t)si, p->schema, row)
          : kind == WD_TOPIC_RAW
              ? (uint32_t)wd_producer_partition_of(p->keys.data + at, p->keys.len - at, wd_repart_partitions(p->rp))
              : task;
      if (kind == WD_TOPIC_DIRECT && p->per_partition && k > 0 &&
          (p->keys.len - at != p->key_off[b->first + 1] - p->key_off[b->first] ||
           memcmp(p->keys.data + at, p->keys.data + p->key_off[b->first], p->keys.len - at)))
        return key_change_error(p, si, m);
    }
    p->key_off[p->nrecs] = p->keys.len;
    b->count = p->nrecs - b->first;
  }
  /* 2. one multi-get of the batch's keys */
  if (p->nrecs) {
    const uint8_t **kp = malloc(p->nrecs * sizeof(*kp));
    size_t *kl = malloc(p->nrecs * sizeof(*kl));
    if (!kp || !kl) {
      free(kp);
      free(kl);
      return wd_error_nomem();
    }
    p->key_off[p->nrecs] = p->keys.len;
    for (size_t i = 0; i < p->nrecs; i++) {
      kp[i] = p->keys.data + p->key_off[i];
      kl[i] = (i + 1 < p->nrecs ? p->key_off[i + 1] : p->keys.len) - p->key_off[i];
    }
    err = wd_state_prefetch_tasks(p->state, p->nrecs, p->rec_task, kp, kl);
    free(kp);
    free(kl);
    if (err) return err;
  }
  /* 3. apply, message by message, in delivery order */
  wd_merge_stats_t ms = {0};
  for (size_t i = 0; i < n; i++) {
    wd_bmsg_t *b = &p->bm[i];
    if (b->err || b->count == 0) continue;
    size_t cl_before = p->cl.n;
    wd_error_t *merr = NULL;
    /* the message's change records in runs of one task (several only for a repartitioned
     * source read in a replay, whose records of one message may belong to several tasks) */
    for (size_t r = b->first, e; r < b->first + b->count && !merr; r = e) {
      e = r + 1;
      if (!b->lookup)
        while (e < b->first + b->count && p->rec_task[e] == p->rec_task[r]) e++;
      else e = b->first + b->count;
      if (!b->lookup) wd_state_set_task(p->state, p->rec_task[r]);
      if (!b->lookup) wd_lookups_set_task(p->lk, p->rec_task[r]);
      merr = apply_message(p, b, r, e - r, &ms);
    }
    if (merr) {
      if (merr->cls != WD_ERR_RECORD) return merr;
      b->err = wd_error_wrap(merr, "%s[%d]@%" PRId64 " record %d", p->msgs[i].topic, p->msgs[i].partition,
                             p->msgs[i].offset, merr->index);
      continue;
    }
    b->applied = true;
    if (p->cl.n > p->cap_cl_src) {
      size_t cap = p->cl.n * 2;
      size_t *c = realloc(p->cl_src, cap * sizeof(*c));
      if (!c) return wd_error_nomem();
      p->cl_src = c;
      p->cap_cl_src = cap;
    }
    for (size_t j = cl_before; j < p->cl.n; j++) p->cl_src[j] = i; /* which message each row came from */
    if (p->trace && (err = trace_message(p, b))) return err;
  }
  /* 4. produce the changelog and the dead letters into the open commit */
  wd_emit_from_t from = {p->cl_src, p->restoring, p->msgs, p->bm};
  if ((err = emit_changelog(p, p->cl.rows, p->cl.n, &from))) return err;
  for (size_t i = 0; i < n; i++) {
    wd_bmsg_t *b = &p->bm[i];
    if (!b->err) continue;
    if (p->restoring[i]) continue; /* rebuilding state: its dead letter was sent when it was first read */
    log_once(p, &p->msgs[i], b->err);
    if (p->opts.no_output) continue; /* replay --no-output: counted, not sent again */
    err = wd_collector_dead_letter(p->coll, p->cfg->sink.dead_letter_topic, &p->msgs[i], b->err->id, b->err->message);
    if (err) return err;
  }
  /* 5. the records belong to the open commit now: per partition of the batch, its offsets
   * gathered once, then handed to the coordinator (the input offsets, or a
   * lookup topic's positions of this process), the global table and the history record */
  for (size_t i = 0; i < n; i++) {
    wd_kmsg_t *m = &p->msgs[i];
    if (!p->bm[i].te) continue;
    if (past_stop(p, m)) continue; /* not taken (read again after the rebuild) */
    if (p->bm[i].held) continue; /* not taken (read again when its task runs) */
    if (wd_topic_index_take(p->tix, p->bm[i].te, m->partition, m->offset)) return wd_error_nomem();
  }
  size_t nbtp = 0;
  const wd_batch_tp_t *btp = wd_topic_index_batch(p->tix, &nbtp);
  for (size_t k = 0; k < nbtp; k++) {
    const wd_batch_tp_t *t = &btp[k];
    const char *topic = t->te->name;
    if (t->te->global && p->gt) { /* a lookup topic: positions of this process */
      if (wd_commit_note_global(p->commit, topic, t->partition, t->max, t->count) ||
          wd_gtable_taken(p->gt, topic, t->partition, t->last))
        return wd_error_nomem();
    } else if (wd_commit_note_input(p->commit, topic, t->partition, t->max, t->count)) return wd_error_nomem();
    if (wd_hist_gather_note(p->hg, topic, t->partition, t->min, t->max + 1)) return wd_error_nomem();
  }
  /* counters, once the batch is taken; a record skipped (replay --from, or past a rebuild's stop)
   * is not "in", nor one held for its task (read again when the task runs) */
  uint64_t nskipped = 0;
  for (size_t i = 0; i < n; i++) nskipped += p->bm[i].skipped || p->bm[i].held;
  p->st.records_in += n - nskipped;
  p->st.batches++;
  for (size_t i = 0; i < n; i++) {
    wd_bmsg_t *b = &p->bm[i];
    p->st.changes_in += b->count;
    p->st.skipped_tombstones += b->tombstone;
    p->st.skipped_before_from += b->skipped && !past_stop(p, &p->msgs[i]);
    p->st.dead_lettered += b->err && !p->restoring[i];
    p->st.restored += p->restoring[i];
  }
  /* the open commit's counts, and the batch's merge stats for the metrics */
  uint64_t ndead = 0, nrestored = 0;
  for (size_t i = 0; i < n; i++) {
    ndead += p->bm[i].err && !p->restoring[i];
    nrestored += p->restoring[i];
  }
  wd_hist_gather_count(p->hg, n - nskipped, p->st.changes_out - changes0, ndead, nrestored);
  wd_run_metrics_merged(p->rm, &ms); /* for the metrics, once the batch is taken */
  p->st.ignored_update_before += ms.ignored_update_before;
  p->st.tombstones += ms.tombstones;
  p->st.dropped += ms.dropped;
  wd_state_set_now(p->state, (uint64_t)wd_wall_ms());
  return NULL;
}

static void release_batch(wd_pipeline_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    wd_error_destroy(p->bm[i].err);
    p->bm[i].err = NULL;
  }
  for (size_t i = 0; i < p->nrecs; i++) wd_row_destroy(p->schema, p->recs[i]);
  p->nrecs = 0;
  release_lookup_recs(p);
  wd_kmsg_release(p->msgs, n);
}

/* Whether a task of this process restores its state now (not: ever did; the status line's tail). */
static bool restoring_now(wd_pipeline_t *p) {
  return wd_tasks_in_state(wd_commit_tasks(p->commit), WD_TASK_RESTORING) > 0 ||
         wd_commit_changelog_restoring(p->commit);
}

static void status_line(wd_pipeline_t *p, double rate) {
  wd_buf_t by_id = {0}; /* the dead letters by error id */
  if (p->st.dead_lettered && (wd_buf_printf(&by_id, " (") || wd_ratelog_put_counts(&p->rlog, &by_id) ||
                              wd_buf_putc(&by_id, ')') || wd_buf_putc(&by_id, 0)))
    wd_buf_reset(&by_id);
  /* no "lag 0" while the process holds no partitions, but why it holds none */
  const char *idle = p->cons ? wd_consumer_idle_reason(p->cons) : NULL;
  char lag[160], nk[48] = "";
  if (p->st.null_key_halves) snprintf(nk, sizeof(nk), " | null-key halves %" PRIu64, p->st.null_key_halves);
  char ival[48] = ""; /* the adaptive commit interval in force */
  if (p->exactly_once) snprintf(ival, sizeof(ival), ", interval %lld ms)", (long long)p->pace.interval);
  if (idle) snprintf(lag, sizeof(lag), "no partitions (%s)", idle);
  else snprintf(lag, sizeof(lag), "lag %" PRId64, p->st.lag);
  fprintf(stderr,
          "widen: in %" PRIu64 " records (%.0f/s) | out %" PRIu64 " changes | dead-lettered %" PRIu64
          "%s | ignored -U %" PRIu64 " | ordering tombstones %" PRIu64 " | deletes without sequence %" PRIu64
          "%s | %s | commits %" PRIu64 "%s%s%s\n",
          p->st.records_in, rate, p->st.changes_out, p->st.dead_lettered, by_id.len ? (char *)by_id.data : "",
          p->st.ignored_update_before, p->st.tombstones, p->st.deletes_without_sequence, nk, lag, p->st.commits,
          p->exactly_once ? " (exactly-once" : " (at-least-once)", ival, restoring_now(p) ? " | restoring" : "");
  wd_buf_free(&by_id);
}

void wd_pipeline_print_summary(const wd_pipeline_t *p, FILE *f, double seconds) {
  double busy = p->busy_end > p->busy_start ? p->busy_end - p->busy_start : 0.0;
  fprintf(f,
          "widen: summary: %" PRIu64 " Kafka records in (%" PRIu64 " change records after decoding: an update is -U "
          "and +U), %" PRIu64 " changelog rows out (+I/-U/+U/-D) in %" PRIu64 " messages, %" PRIu64
          " dead-lettered, %" PRIu64 " Kafka tombstones skipped, %" PRIu64 " -U ignored, %" PRIu64
          " dropped by ignore-delete/first-row, %" PRIu64 " ordering tombstones, %" PRIu64 " commits (%s) of %" PRIu64
          " batches; %.2f s in all, %.0f records/s while input flowed",
          p->st.records_in, p->st.changes_in, p->st.changes_out, p->st.messages_out, p->st.dead_lettered,
          p->st.skipped_tombstones, p->st.ignored_update_before, p->st.dropped, p->st.tombstones, p->st.commits,
          p->exactly_once ? "exactly-once" : "at-least-once", p->st.batches, seconds,
          busy > 0 ? (double)p->st.records_in / busy : 0.0);
  if (p->st.aborted_commits) fprintf(f, "; %" PRIu64 " commits aborted and redone", p->st.aborted_commits);
  if (p->commit && wd_commit_overlapped(p->commit))
    fprintf(f, "; %" PRIu64 " commits completed while the next batches were merged", wd_commit_overlapped(p->commit));
  if (p->st.restored) fprintf(f, "; %" PRIu64 " records merged without output to rebuild state", p->st.restored);
  if (p->standby)
    fprintf(f, "; %" PRIu64 " state changelog records applied to standby copies", wd_standby_applied(p->standby));
  if (p->st.repartitioned) fprintf(f, "; %" PRIu64 " records forwarded to repartition topics", p->st.repartitioned);
  if (p->st.misplaced) fprintf(f, " (%" PRIu64 " source records outside their wide key's partition)", p->st.misplaced);
  if (p->st.deletes_without_sequence)
    fprintf(f, "; %" PRIu64 " deletes without sequence field", p->st.deletes_without_sequence);
  if (p->st.null_key_halves)
    fprintf(f, "; %" PRIu64 " null-key halves left out (a NULL key holds no row)", p->st.null_key_halves);
  if (p->opts.replay && p->opts.from_ms >= 0)
    fprintf(f, "; %" PRIu64 " records older than --from skipped", p->st.skipped_before_from);
  fprintf(f, "\n");
}

/* Replay: whether every partition reached the end offset seen at start. */
/* A partition is done when the state holds its records up to the end offset, or the consumer's
 * position has passed it with nothing pending (transaction markers and deleted records occupy
 * offsets that no record brings). */
/* whether m lies at or past its partition's stop offset (replay with stop_at_state). */
static bool past_stop(const wd_pipeline_t *p, const wd_kmsg_t *m) {
  if (!p->opts.stop_at_state) return false;
  for (size_t i = 0; i < p->nend; i++)
    if (p->end[i].partition == m->partition && !strcmp(p->end[i].topic, m->topic)) return m->offset >= p->end[i].offset;
  return true;
}

/* the stop offsets from the offsets stored in opts.stop_at_state (0: nothing to read). */
static wd_error_t *stop_offsets(wd_pipeline_t *p) {
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(p->opts.stop_at_state, NULL, &st);
  for (size_t i = 0; !err && i < p->nend; i++) {
    int64_t next = -1;
    err = wd_store_get_offset(st, p->end[i].topic, p->end[i].partition, &next);
    if (!err) p->end[i].offset = next > 0 && next < p->end[i].offset ? next : next > 0 ? p->end[i].offset : 0;
  }
  wd_store_close(st);
  return err;
}

static bool replay_done(wd_pipeline_t *p) {
  wd_tp_offset_t *pos = NULL;
  size_t npos = 0;
  bool done = true;
  wd_error_t *perr = wd_commit_pending(p->commit) ? NULL : wd_consumer_assignment(p->cons, &pos, &npos);
  wd_error_destroy(perr);
  for (size_t i = 0; i < p->nend && done; i++) {
    int64_t next = -1;
    wd_error_t *err = wd_store_get_offset(p->store, p->end[i].topic, p->end[i].partition, &next);
    wd_error_destroy(err);
    if (p->end[i].offset <= 0 || next >= p->end[i].offset) continue;
    bool passed = false;
    for (size_t k = 0; k < npos && !passed; k++)
      passed = pos[k].partition == p->end[i].partition && !strcmp(pos[k].topic, p->end[i].topic) &&
               pos[k].offset >= p->end[i].offset;
    done = passed;
  }
  free(pos);
  return done;
}

/* Partitions 0..63 of a bitmask as a readable list ("0-3", "0, 2, 5-7") into buf. */
static void partition_list(uint64_t mask, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < 64 && len < n; i++) {
    if (!(mask >> i & 1)) continue;
    int j = i;
    while (j + 1 < 64 && (mask >> (j + 1) & 1)) j++;
    int k = j > i ? snprintf(buf + len, n - len, "%s%d-%d", len ? ", " : "", i, j)
                  : snprintf(buf + len, n - len, "%s%d", len ? ", " : "", i);
    if (k < 0) break;
    len += (size_t)k;
    i = j;
  }
  if (!buf[0]) snprintf(buf, n, "none");
}

/* Warns when the assignment is not co-partitioned across the source topics (docs/guarantees.md "Scaling out"):
 * every source topic should have the same partition numbers assigned to this process, or the
 * changes of one key may be merged by two processes into two stores. */
static void check_copartitioning(wd_pipeline_t *p) {
  wd_tp_offset_t *a = NULL;
  size_t n = 0;
  wd_error_t *err = wd_consumer_assignment(p->cons, &a, &n);
  if (err || n == 0) {
    wd_error_destroy(err);
    free(a);
    return;
  }
  /* a bitmask of partitions 0..63 per topic (more partitions are not checked), over the topics
   * of the tasks (a repartitioned source's own topics are only forwarded: any assignment works) */
  size_t ntask = 0;
  const char *const *task_topics = wd_repart_task_topics(p->rp, &ntask);
  const char *first = ntask ? task_topics[0] : a[0].topic;
  uint64_t ref = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i].topic == first || !strcmp(a[i].topic, first))
      if (a[i].partition >= 0 && a[i].partition < 64) ref |= UINT64_C(1) << a[i].partition;
  for (size_t t = 0; t < p->nsources; t++)
    for (size_t k = 0; k < p->sources[t]->ntopics + 1 && !(p->gtopics && is_lookup(p, (int)t)); k++) {
      const char *topic = k < p->sources[t]->ntopics ? p->sources[t]->topics[k] : wd_repart_topic(p->rp, t);
      if (!topic || (wd_repart_on(p->rp, t) && k < p->sources[t]->ntopics)) continue;
      uint64_t mask = 0;
      for (size_t i = 0; i < n; i++)
        if (!strcmp(a[i].topic, topic) && a[i].partition >= 0 && a[i].partition < 64)
          mask |= UINT64_C(1) << a[i].partition;
      /* a topic with none assigned (either one) may not exist yet (logged by the consumer; checked again at the
       * assignment that includes it) */
      if (mask != ref && mask != 0 && ref != 0) {
        static bool told; /* once per process */
        char have[200], want[200];
        partition_list(mask, have, sizeof(have));
        partition_list(ref, want, sizeof(want));
        if (!told)
          wd_log(WD_LOG_WARN, "pipeline",
                 "source topics not co-partitioned: this process has partitions %s of %s but %s of %s; with "
                 "several processes in the group a key's changes may be merged by two of them (docs/guarantees.md "
                 "\"Scaling out\")",
                 have, topic, want, first);
        told = true;
        free(a);
        return;
      }
    }
  free(a);
}

/* ---- lookups under per-partition tasks (app/runtime/global_table.h) ----------------- */

/* Reconciles every RECONCILING task of the task table (join/lookup.h wd_join_reconcile_task)
 * before its first record, which waits held meanwhile: its rows' lookup columns recomputed from
 * this process's lookup tables, the differences produced into the open commit
 * (docs/lookups-scale-out.md); then it is RUNNING. */
static wd_error_t *reconcile_tasks(wd_pipeline_t *p) {
  uint32_t task;
  wd_error_t *err = NULL;
  while (!err && wd_commit_next_reconcile(p->commit, &task)) {
    size_t rows = 0;
    wd_changelog_reset(p->table, &p->cl);
    if ((err = wd_join_reconcile_task(wd_lookups_join(p->lk), task, &p->cl, &rows))) break;
    const wd_emit_from_t from = {0}; /* rows of no message: sent; one too large is logged */
    if (p->cl.n) err = emit_changelog(p, p->cl.rows, p->cl.n, &from);
    if (err) break;
    wd_log(WD_LOG_INFO, "pipeline", "task %u reconciled with this process's lookup tables: %zu rows, %zu changes", task,
           rows, p->cl.n);
    wd_changelog_reset(p->table, &p->cl);
    err = wd_commit_reconciled(p->commit, task);
  }
  return err;
}

/* Takes the records of the lookup topics already fetched, as one batch of the open commit.
 * *n: how many. A batch abandoned by a rebalance is read again (the global consumer rewound). */
static wd_error_t *global_batch(wd_pipeline_t *p, size_t *n) {
  *n = 0;
  wd_error_t *err = reconcile_tasks(p);
  if (!err) err = wd_gtable_poll(p->gt, (size_t)p->cfg->pipeline.batch_size, p->msgs, n);
  if (err || !*n) return err;
  wd_commit_batch_begin(p->commit);
  err = process_batch(p, *n);
  bool abandoned = wd_commit_batch_invalid(p->commit);
  if (!err && !abandoned) metrics_batch(p, *n);
  wd_commit_batch_end(p->commit);
  release_batch(p, *n);
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
    wd_rebuild_io_t io = {p, rebuild_changes, p->changelog_topic ? rebuild_state : NULL, rebuild_complete};
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
    release_batch(p, l->n);
    return TURN_STOP;
  }
  l->now = wd_mono_s();
  if (p->assigned) {
    p->assigned = false;
    if (!p->opts.replay) check_copartitioning(p);
  }
  if (p->gt && (*err = reconcile_tasks(p))) { /* tasks assigned in this poll */
    release_batch(p, l->n);
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

/* The batch in hand: processed (process_batch) between wd_commit_batch_begin and _end, released. A
 * rebalance or an abort meanwhile abandons it (its records are read again by their owner). */
static turn_t process_records(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  if (!l->n) return TURN_ON;
  l->last_input = l->now;
  if (p->busy_start == 0) p->busy_start = l->now;
  wd_commit_batch_begin(p->commit);
  wd_collector_batch_mark(p->coll); /* whether the batch sent anything (a half-sent batch, below) */
  *err = process_batch(p, l->n);
  bool abandoned = wd_commit_batch_invalid(p->commit);
  if (!*err && !abandoned) metrics_batch(p, l->n);
  wd_commit_batch_end(p->commit);
  release_batch(p, l->n);
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
    status_line(p, (double)(p->st.records_in - l->last_in) / (l->now - l->last_status));
    l->last_status = l->now;
    l->last_in = p->st.records_in;
  }
  return TURN_ON;
}

/* One turn: between polls, poll, process, after the batch, commit, report. */
static turn_t run_once(wd_pipeline_t *p, loop_t *l, wd_error_t **err) {
  turn_t t;
  if ((*err = wd_commit_take_error(p->commit))) return TURN_STOP;
  if (p->opts.replay && !wd_commit_pending(p->commit) && replay_done(p)) return TURN_STOP;
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
  if (p->opts.replay && (err = wd_consumer_end_offsets(p->cons, 30000, &p->end, &p->nend))) return err;
  if (p->opts.replay && p->opts.stop_at_state && (err = stop_offsets(p))) return err;
  if (p->gt && !p->opts.replay && (err = preload_lookups(p))) return err; /* before the group join */
  while (!p->stop)
    if (run_once(p, &l, &err) == TURN_STOP) break;
  p->settled = 0;
  if (!err) err = complete_commit(p); /* stopping: the open commit is completed */
  if (!err) err = wd_commit_flush(p->commit); /* and the rows kept for the deferred state flush written */
  p->settled = !err && !wd_commit_pending(p->commit);
  if (err && err->fenced)
    err = wd_error_wrap(err,
                        "fenced: another widen process with transactional.id %s (or a newer member of group "
                        "%s) took over; this one stops without committing its open work (the other one "
                        "processes it)",
                        p->txn_id ? p->txn_id : "?", p->cfg->kafka.group_id);
  p->st.lag = wd_consumer_lag(p->cons);
  metrics_tick(p, wd_mono_s(), true); /* the final values */
  if (p->opts.replay && !err) wd_run_metrics_restore_done(p->rm);
  return err;
}

/* Registers schema_json under subject, retrying with backoff (logged) while the registry does not
 * answer, for at most about a minute. */
static wd_error_t *register_schema(wd_pipeline_t *p, const char *subject, const char *schema_json, int32_t *id) {
  long waited = 0;
  for (unsigned attempt = 0;; attempt++) {
    wd_error_t *err = wd_registry_register(p->registry, subject, schema_json, id);
    if (!err || !err->retriable || waited >= 60000) return err;
    if (p->opts.start_stop && *p->opts.start_stop) { /* stopped during the start: say what it waited for */
      wd_error_t *serr = wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                                      "stopped during the start while the schema registry "
                                      "did not answer (%s); nothing was consumed or produced",
                                      err->message);
      wd_error_destroy(err);
      return serr;
    }
    long ms = wd_registry_backoff_ms(attempt);
    wd_log(WD_LOG_WARN, "pipeline", "%s; retrying in %ld ms", err->message, ms);
    wd_error_destroy(err);
    sleep_ms(p, ms);
    waited += ms;
  }
}

/* The schema registry client, the Avro decoder, and the Avro sink with its schemas registered
 * (under <topic>-value, and <topic>-key for Avro keys), when the config has a registry. */
static wd_error_t *setup_avro(wd_pipeline_t *p) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  if (!cfg->schema_registry.url) return NULL;
  wd_registry_conf_t rc = {cfg->schema_registry.url, cfg->schema_registry.username, cfg->schema_registry.password,
                           (long)cfg->schema_registry.timeout_ms};
  if ((err = wd_registry_new(&rc, &p->registry))) return err;
  bool value = cfg->sink.format == WD_CONFIG_SINK_AVRO, key = cfg->sink.key_format == WD_CONFIG_KEY_AVRO;
  if (!value && !key) return NULL;
  if ((err = wd_avro_sink_new(p->schema, cfg->table.name, &p->avro_out))) return err;
  int32_t vid = 0, kid = 0;
  char subject[600];
  if (value) {
    snprintf(subject, sizeof(subject), "%s-value", cfg->sink.topic);
    if ((err = register_schema(p, subject, wd_avro_sink_value_schema(p->avro_out), &vid))) return err;
  }
  if (key) {
    snprintf(subject, sizeof(subject), "%s-key", cfg->sink.topic);
    if ((err = register_schema(p, subject, wd_avro_sink_key_schema(p->avro_out), &kid))) return err;
  }
  wd_avro_sink_set_ids(p->avro_out, vid, kid);
  return NULL;
}

/* librdkafka properties that only a consumer takes: kafka.properties go to both clients, and
 * the producer would warn about these at every start. */
static bool consumer_only(const char *name) {
  static const char *const names[] = {"session.timeout.ms",
                                      "heartbeat.interval.ms",
                                      "group.instance.id",
                                      "max.poll.interval.ms",
                                      "auto.offset.reset",
                                      "partition.assignment.strategy",
                                      "fetch.min.bytes",
                                      "fetch.max.bytes",
                                      "fetch.wait.max.ms",
                                      "max.partition.fetch.bytes",
                                      "isolation.level",
                                      "enable.partition.eof",
                                      "auto.commit.interval.ms",
                                      "queued.min.messages",
                                      "queued.max.messages.kbytes",
                                      "check.crcs",
                                      "fetch.error.backoff.ms",
                                      "coordinator.query.interval.ms",
                                      "group.protocol.type",
                                      "offset.store.method",
                                      "allow.auto.create.topics"};
  for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
    if (strcmp(name, names[i]) == 0) return true;
  return false;
}

/* librdkafka properties that only the producer takes (kept from the consumer's configuration). */
static bool producer_only(const char *name) {
  return !strcmp(name, "transactional.id") || !strcmp(name, "transaction.timeout.ms");
}

/* The instance id generated once and kept in the state directory (meta "instance/id"): 16 hex
 * digits into inst (n >= 17). Errors: E_STORE_*, E_NOMEM. */
static wd_error_t *stored_instance_id(wd_pipeline_t *p, char *inst, size_t n) {
  wd_error_t *err = NULL;
  uint8_t *val = NULL;
  size_t vlen = 0;
  inst[0] = 0;
  if ((err = wd_store_get_meta(p->store, "instance/id", &val, &vlen))) return err;
  if (val && vlen < n) {
    memcpy(inst, val, vlen);
    inst[vlen] = 0;
  }
  free(val);
  if (inst[0]) return NULL;
  uint64_t r = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&r, sizeof(r), 1, f) != 1) r = (uint64_t)(uint64_t)wd_wall_ms() ^ ((uint64_t)getpid() << 32);
  if (f) fclose(f);
  snprintf(inst, n, "%016" PRIx64, r);
  wd_store_batch_t *b = wd_store_batch_new();
  if (!b || wd_store_batch_set_meta(b, "instance/id", (const uint8_t *)inst, strlen(inst))) {
    wd_store_batch_destroy(b);
    return wd_error_nomem();
  }
  err = wd_store_write_sync(p->store, b);
  wd_store_batch_destroy(b);
  return err;
}

/* The producer's transactional.id under exactly-once (docs/exactly-once.md): kafka.properties'
 * or sink.properties' own, else widen-<group>-<instance> with the group.instance.id, or an id
 * generated once and kept in the state directory (meta "instance/id"), so that a restarted
 * process fences its earlier incarnation. Also reads transaction.timeout.ms. */
static wd_error_t *transactional_id(wd_pipeline_t *p, wd_kafka_conf_t *pconf, int *txn_timeout_ms) {
  wd_error_t *err = NULL;
  const char *tt = wd_kafka_conf_get(pconf, "transaction.timeout.ms");
  if (tt) {
    *txn_timeout_ms = atoi(tt);
  } else {
    /* 10 s, as Kafka Streams under exactly-once (librdkafka's default is 60 s): the open
     * transaction of a process killed for good (not restarted with its transactional.id) holds
     * every read_committed reader of the partitions it wrote to (the other members' repartition
     * topics and changelog restores, downstream consumers) until the broker aborts it */
    *txn_timeout_ms = 10000;
    if ((err = wd_kafka_conf_set(pconf, "transaction.timeout.ms", "10000"))) return err;
  }
  const char *tid = wd_kafka_conf_get(pconf, "transactional.id");
  if (tid) return (p->txn_id = strdup(tid)) ? NULL : wd_error_nomem();
  char inst[64] = "";
  const char *gi = wd_kafka_conf_get(&p->kconf, "group.instance.id");
  if (gi) snprintf(inst, sizeof(inst), "%s", gi);
  else if ((err = stored_instance_id(p, inst, sizeof(inst)))) return err;
  if (asprintf(&p->txn_id, "widen-%s-%s", p->cfg->kafka.group_id ? p->cfg->kafka.group_id : "nogroup", inst) < 0) {
    p->txn_id = NULL;
    return wd_error_nomem();
  }
  return wd_kafka_conf_set(pconf, "transactional.id", p->txn_id);
}

/* Creates an internal topic of the table (N partitions) when missing; refuses one that exists
 * with another partition count (C_INTERNAL_TOPIC_PARTITIONS). */
static wd_error_t *ensure_internal_topic(wd_pipeline_t *p, const char *topic, const char *const *cfgs,
                                         const char *what) {
  int have = 0, np = wd_repart_partitions(p->rp);
  wd_error_t *err = wd_collector_partition_count(p->coll, topic, 30000, &have);
  if (err) return err;
  if (have && have != np)
    return wd_error_new(WD_ERR_CONFIG, C_INTERNAL_TOPIC_PARTITIONS,
                        "%s %s has %d partitions but the table has %d (one per task): set pipeline.partitions: %d "
                        "(the count the table was built with); another count needs the table built anew (stop every "
                        "process of group %s, delete their state directories and the group's internal topics, and "
                        "start with a new group.id), since every task's rows would hold other keys",
                        what, topic, have, np, have, p->cfg->kafka.group_id);
  if (have) return NULL;
  if ((err = wd_collector_ensure_topic(p->coll, topic, np, cfgs, 30000))) return err;
  /* until the broker's metadata lists it: a group that assigns before would leave it out until the
   * next metadata refresh (minutes) */
  for (int i = 0; i < 100 && !err && have != np; i++) {
    if (i) sleep_ms(p, 100);
    err = wd_collector_partition_count(p->coll, topic, 5000, &have);
  }
  return err;
}

/* the table's partition count and which sources go through a repartition topic
 * (app/runtime/repartition.h), said at start; in a live run the repartition topics are created. */
static wd_error_t *plan_repartition(wd_pipeline_t *p) {
  wd_error_t *err = NULL;
  size_t n = p->nsources;
  wd_repartition_input_t *in = calloc(n ? n : 1, sizeof(*in));
  int **counts = calloc(n ? n : 1, sizeof(*counts));
  char *why = NULL;
  if (!in || !counts) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < n && !err; i++) {
    const wd_source_t *src = p->sources[i];
    if (!(counts[i] = calloc(src->ntopics ? src->ntopics : 1, sizeof(int)))) {
      err = wd_error_nomem();
      break;
    }
    for (size_t k = 0; k < src->ntopics && !err; k++)
      err = wd_collector_partition_count(p->coll, src->topics[k], 30000, &counts[i][k]);
    /* a source with its own primary key always forwards its derived records (docs/source-keys.md) */
    int mode = wd_lookups_has_key(p->lk, (int)i) ? WD_CONFIG_REPARTITION_TRUE : p->cfg->sources.v[i].repartition;
    in[i] = (wd_repartition_input_t){
        src->name, mode, is_lookup(p, (int)i), src->ntopics, (const char *const *)src->topics, counts[i]};
  }
  if (err || (err = wd_repart_plan(p->rp, in, p->cfg->pipeline.partitions, !p->opts.replay, p->cfg->kafka.group_id,
                                   p->cfg->table.name, &why)))
    goto done;
  if ((err = wd_lookups_check_partitions(p->lk, p->cfg, in, n, wd_repart_partitions(p->rp)))) goto done;
  size_t nrp = 0;
  for (size_t i = 0; i < n; i++) nrp += wd_repart_on(p->rp, i);
  wd_log(WD_LOG_INFO, "pipeline", "per-partition tasks: the table has %d partitions (tasks)%s",
         wd_repart_partitions(p->rp), nrp ? "" : "; every source is co-partitioned");
  for (char *line = why, *nl; line && *line; line = nl + 1) {
    if (!(nl = strchr(line, '\n'))) break;
    *nl = 0;
    wd_log(WD_LOG_INFO, "pipeline", "%s", line);
  }
  for (size_t i = 0; i < n && !err; i++) { /* a live run: the repartition topics are created */
    const char *topic = wd_repart_topic(p->rp, i);
    if (!topic) continue;
    err = ensure_internal_topic(p, topic, NULL, "repartition topic");
    if (!err && wd_repart_on(p->rp, i))
      wd_log(WD_LOG_INFO, "pipeline", "source '%s': forwarded through repartition topic %s", p->sources[i]->name,
             topic);
    else if (!err)
      wd_log(WD_LOG_INFO, "pipeline",
             "source '%s': read directly; a record outside its wide key's partition "
             "(murmur2 of widen's key bytes) goes through repartition topic %s",
             p->sources[i]->name, topic);
  }
done:
  for (size_t i = 0; counts && i < n; i++) free(counts[i]);
  free(counts);
  free(in);
  free(why);
  return err;
}

/* The task layout the state's rows are split by (meta "tasks/layout"): "single", or
 * "per-partition N; <source> direct|repartitioned; ..." for the main sources. Rows, stored offsets
 * and the state changelog topic are laid out by it: a task of another layout (another N, a source
 * read directly instead of through its repartition topic, or the other way round) holds other
 * keys, and resuming it would keep keys in two tasks. A state without one (new, or made before
 * this check) gets the current one; another one stops the start with C_TASKS_LAYOUT. */
static wd_error_t *check_layout(wd_pipeline_t *p, const char *dir) {
  static const char *const key = "tasks/layout";
  wd_buf_t now = {0};
  wd_error_t *err = NULL;
  uint8_t *was = NULL;
  size_t wlen = 0;
  if (!p->per_partition) {
    if (wd_buf_printf(&now, "single")) goto nomem;
  } else {
    if (wd_buf_printf(&now, "per-partition %d", wd_repart_partitions(p->rp))) goto nomem;
    for (size_t i = 0; i < p->nsources; i++)
      if (!is_lookup(p, (int)i) &&
          wd_buf_printf(&now, "; %s %s", p->sources[i]->name, wd_repart_on(p->rp, i) ? "repartitioned" : "direct"))
        goto nomem;
  }
  if ((err = wd_store_get_meta(p->store, key, &was, &wlen))) goto done;
  if (!was) {
    wd_store_batch_t *b = wd_store_batch_new();
    if (!b || wd_store_batch_set_meta(b, key, now.data, now.len)) {
      wd_store_batch_destroy(b);
      goto nomem;
    }
    err = wd_store_write_sync(p->store, b);
    wd_store_batch_destroy(b);
    goto done;
  }
  if (wlen == now.len && !memcmp(was, now.data, wlen)) goto done;
  err = wd_error_new(WD_ERR_CONFIG, C_TASKS_LAYOUT,
                     "the state in %s was split into tasks as \"%.*s\", this start would split it as \"%.*s\" (a "
                     "source topic's partition count, pipeline.partitions, pipeline.tasks or a repartition setting "
                     "changed): its rows, and the state changelog topic, hold other keys per task than the new "
                     "layout puts there. Restore the old layout (e.g. pipeline.partitions, or `repartition: true` "
                     "where a source went through a repartition topic), or build the table anew for the new one: "
                     "stop every process of group %s, delete their state directories and the group's internal "
                     "topics (-changelog, -repartition), and start with a new group.id (downstream then receives the "
                     "table again from the beginning)",
                     dir, (int)wlen, (const char *)was, (int)now.len, (const char *)now.data, p->cfg->kafka.group_id);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  free(was);
  wd_buf_free(&now);
  return err;
}

static wd_error_t *ensure_changelog(wd_pipeline_t *p) {
  static const char *const cfgs[] = {"cleanup.policy", "compact", NULL};
  return ensure_internal_topic(p, p->changelog_topic, cfgs, "the state changelog topic");
}

/* ---- start-up: the steps of wd_pipeline_new, in order ---------------------------------------------
 * Each step fills its part of p and returns an error; on one, wd_pipeline_new destroys p, which
 * frees whatever the steps made. */

/* The table, the sources (and the lookups' join layer), the sink's formats; *ntopics: the sources'
 * topics in all. */
static wd_error_t *open_table_and_sources(wd_pipeline_t *p, size_t *ntopics) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  wd_changes_init(&p->changes);
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
  return setup_avro(p);
}

/* The decoder state of each source format in use (ingest/format.h), and start-up warnings. */
static wd_error_t *open_formats(wd_pipeline_t *p) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  wd_formats(&p->nfmt);
  if (!(p->fmt_state = calloc(p->nfmt, sizeof(*p->fmt_state)))) return wd_error_nomem();
  wd_format_env_t env = {p->registry};
  for (size_t i = 0; i < p->nsources; i++) {
    const wd_source_t *src = p->sources[i];
    const wd_format_t *f = wd_format_of(src->format);
    if (!p->dec_warn && !(p->dec_warn = calloc(p->nsources, sizeof(*p->dec_warn)))) return wd_error_nomem();
    p->dec_warn[i] = wd_format_decimal_warning(src, p->schema); /* said at its first schemaless record */
    if (!f->open || p->fmt_state[src->format]) continue;
    if ((err = f->open(&env, &p->fmt_state[src->format]))) return err;
  }
  const char **names = calloc(cfg->sources.n + 1, sizeof(*names));
  if (!names) return wd_error_nomem();
  size_t nn = 0;
  for (size_t i = 0; i < cfg->sources.n; i++)
    if (!cfg->sources.v[i].lookup) names[nn++] = cfg->sources.v[i].name;
  char *warn = wd_table_config_retraction_warning(p->table, cfg->table.name, nn, names);
  free(names);
  if (warn) wd_log(WD_LOG_WARN, "pipeline", "%s", warn);
  free(warn);
  p->pu_no_retract = wd_table_rejects_retractions(p->table);
  return NULL;
}

/* The state directory dir: the store, the state over it (checked against the table), the metrics,
 * the history gatherer, the join layer's start; which lookup topics are a global table. */
static wd_error_t *open_state(wd_pipeline_t *p, const char *dir, size_t ntopics) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  wd_store_options_t so = {0};
  so.tombstone_retention_ms = cfg->state.tombstone_retention_ms;
  so.min_free_bytes = (uint64_t)cfg->state.min_free_bytes; /* the disk guard: E_STATE_DISK_FULL */
  if ((err = wd_store_open_rocksdb(dir, &so, &p->store))) return err;
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
  bool global = false;
  for (size_t i = 0; i < p->nsources && cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION && !p->opts.replay; i++)
    global = global || is_lookup(p, (int)i);
  if (global && !(p->gtopics = calloc(ntopics + 1, sizeof(char *)))) return wd_error_nomem();
  if (wd_lookups_active(p->lk) && !p->opts.replay && !global)
    for (size_t i = 0; i < p->nsources; i++)
      if (is_lookup(p, (int)i)) {
        wd_log(WD_LOG_INFO, "pipeline",
               "lookup sources are read through the consumer group: run one process for "
               "this table (docs/lookups.md)");
        break;
      }
  return NULL;
}

/* The batch's arrays (pipeline.batch-size) and the trace file. */
static wd_error_t *open_batch(wd_pipeline_t *p) {
  size_t max = (size_t)p->cfg->pipeline.batch_size;
  p->msgs = calloc(max, sizeof(*p->msgs));
  p->bm = calloc(max, sizeof(*p->bm));
  p->restoring = calloc(max, sizeof(*p->restoring));
  if (!p->msgs || !p->bm || !p->restoring) return wd_error_nomem();
  if (p->opts.trace_path && !(p->trace = fopen(p->opts.trace_path, "a")))
    return wd_error_new(WD_ERR_IO, E_TRACE, "cannot open trace file %s", p->opts.trace_path);
  if (p->trace) setvbuf(p->trace, NULL, _IOLBF, 0);
  return NULL;
}

/* The Kafka clients' configurations (consumer, producer), the output topics made, static
 * membership, the transactional.id (*txn_timeout_ms: its transaction.timeout.ms), the collector. */
static wd_error_t *open_kafka(wd_pipeline_t *p, int *txn_timeout_ms) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  p->exactly_once = cfg->pipeline.processing_guarantee == WD_CONFIG_EXACTLY_ONCE && !p->opts.replay;
  p->per_partition = cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION;
  if ((err = wd_kafka_conf_set_brokers(&p->kconf, cfg->kafka.bootstrap_servers))) return err;
  for (size_t i = 0; i < cfg->kafka.properties.n; i++)
    if (!producer_only(cfg->kafka.properties.v[i].key) &&
        (err = wd_kafka_conf_set(&p->kconf, cfg->kafka.properties.v[i].key, cfg->kafka.properties.v[i].value)))
      return err;
  if ((err = wd_kafka_conf_set_brokers(&p->pconf, cfg->kafka.bootstrap_servers))) return err;
  for (size_t i = 0; i < cfg->kafka.properties.n && !err; i++)
    if (!consumer_only(cfg->kafka.properties.v[i].key))
      err = wd_kafka_conf_set(&p->pconf, cfg->kafka.properties.v[i].key, cfg->kafka.properties.v[i].value);
  for (size_t i = 0; i < cfg->sink.properties.n && !err; i++)
    err = wd_kafka_conf_set(&p->pconf, cfg->sink.properties.v[i].key, cfg->sink.properties.v[i].value);
  if (!err && !p->opts.no_output) { /* so that a consumer can read them before their first record */
    const char *out_topics[] = {cfg->sink.topic, cfg->sink.dead_letter_topic};
    wd_sink_create_topics(&p->pconf, out_topics, 2, 10000);
  }
  /* static membership by default (KIP-345), with the state directory's instance id */
  if (!err && !p->opts.replay && cfg->kafka.static_membership && !wd_kafka_conf_get(&p->kconf, "group.instance.id")) {
    char inst[64];
    if (!(err = stored_instance_id(p, inst, sizeof(inst))))
      err = wd_kafka_conf_set(&p->kconf, "group.instance.id", inst);
    if (!err)
      wd_log(WD_LOG_INFO, "pipeline",
             "static membership: group.instance.id %s (kept in %s; a restart within "
             "session.timeout.ms takes the partitions back without a rebalance)",
             inst, cfg->state.dir);
  }
  *txn_timeout_ms = 60000; /* librdkafka's default transaction.timeout.ms */
  if (!err && p->exactly_once) err = transactional_id(p, &p->pconf, txn_timeout_ms);
  p->stop_grace_s = (unsigned)(*txn_timeout_ms > 0 ? *txn_timeout_ms : 60000) / 1000u + 5u;
  p->settled = 1;
  if (!err) err = wd_collector_new(&p->pconf, &p->coll);
  if (err) return err;
  if (!p->opts.replay && (err = wd_kafka_conf_set_group(&p->kconf, cfg->kafka.group_id))) return err;
  return NULL;
}

/* The topics: the repartition plan and the state's layout (dir), the group's topics (*nt of them)
 * and the global table's (*ngt), the topic index, the commit pace; per-partition tasks under
 * exactly-once in a group: the state changelog topic and the restore consumer's configuration. */
static wd_error_t *plan_topics(wd_pipeline_t *p, const char *dir, size_t ntopics, size_t *nt, size_t *ngt) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  if (!(p->rp = wd_repart_new(p->nsources))) return wd_error_nomem();
  if (p->per_partition && (err = plan_repartition(p))) return err;
  if ((err = check_layout(p, dir))) return err; /* the rows are split by it */
  if (!(p->topics = calloc(ntopics + p->nsources + 1, sizeof(char *)))) return wd_error_nomem();
  *nt = *ngt = 0;
  for (size_t i = 0; i < p->nsources; i++) {
    if (p->gtopics && is_lookup(p, (int)i)) { /* a global table's, not the group's */
      for (size_t t = 0; t < p->sources[i]->ntopics; t++) p->gtopics[(*ngt)++] = p->sources[i]->topics[t];
      continue;
    }
    bool raw = wd_repart_on(p->rp, i) && wd_repart_forwarding(p->rp);
    for (size_t t = 0; t < p->sources[i]->ntopics; t++) {
      p->topics[(*nt)++] = p->sources[i]->topics[t];
      /* a source with its own primary key is a task's input (its rows are task state), forwarded */
      if (wd_repart_add_topic(p->rp, p->sources[i]->topics[t], raw && !wd_lookups_has_key(p->lk, (int)i)))
        return wd_error_nomem();
    }
    if ((raw || wd_repart_fallback(p->rp, i)) && /* `auto` read directly: its repartition topic too */
        wd_repart_add_topic(p->rp, p->topics[(*nt)++] = wd_repart_topic(p->rp, i), false))
      return wd_error_nomem();
  }
  if (topic_index_build(p)) return wd_error_nomem();
  wd_commit_pacer_init(&p->pace, cfg->pipeline.commit_interval_ms, cfg->pipeline.commit_interval_min_ms,
                       p->exactly_once);
  /* per-partition tasks in a group, exactly-once: the state changelog topic, and the restore
   * consumer's config (at-least-once trusts the local state: no changelog) */
  if (p->per_partition && !p->opts.replay && p->exactly_once) {
    if (cfg->state.changelog_topic) p->changelog_topic = strdup(cfg->state.changelog_topic);
    else if (asprintf(&p->changelog_topic, "%s-%s-changelog", cfg->kafka.group_id, cfg->table.name) < 0)
      p->changelog_topic = NULL;
    if (!p->changelog_topic) return wd_error_nomem();
    if ((err = wd_kafka_conf_set_brokers(&p->rconf, cfg->kafka.bootstrap_servers))) return err;
    for (size_t i = 0; i < cfg->kafka.properties.n; i++) {
      const char *k = cfg->kafka.properties.v[i].key;
      if (producer_only(k) || !strcmp(k, "group.instance.id")) continue;
      if ((err = wd_kafka_conf_set(&p->rconf, k, cfg->kafka.properties.v[i].value))) return err;
    }
  }
  return NULL;
}

/* The commit coordinator (before the consumer: its callbacks, in assign mode already inside
 * wd_consumer_new, go to it), with the standby copies and a rebuild armed on an incompatible
 * definition (app/ops/fingerprint.h) and its commit marker. */
static wd_error_t *open_coordinator(wd_pipeline_t *p, const char *dir, int txn_timeout_ms) {
  const wd_config_t *cfg = p->cfg;
  wd_error_t *err = NULL;
  const char *reset = wd_kafka_conf_get(&p->kconf, "auto.offset.reset");
  size_t ntask = 0, nstateless = 0;
  const char *const *task_topics = wd_repart_task_topics(p->rp, &ntask);
  const char *const *stateless = wd_repart_stateless_topics(p->rp, &nstateless);
  wd_commit_conf_t cc = {
      .exactly_once = p->exactly_once,
      .group = !p->opts.replay,
      .per_partition = p->per_partition,
      .interval_ms = cfg->pipeline.commit_interval_ms,
      .max_records = (uint64_t)cfg->pipeline.commit_max_records,
      .txn_timeout_ms = txn_timeout_ms,
      .replay_from_stored = true,
      .latest_when_empty = reset && (!strcmp(reset, "latest") || !strcmp(reset, "end") || !strcmp(reset, "largest")),
      .topics = task_topics,
      .ntopics = ntask,
      .stateless_topics = stateless,
      .nstateless = nstateless,
      .changelog_topic = p->changelog_topic,
      .txn_id = p->txn_id,
      .restore_conf = &p->rconf,
      .hooks = {p, hist_before_finalize, on_committed, on_aborted, hist_before_write}, /* history */
  };
  if (p->changelog_topic && (err = ensure_changelog(p))) return err;
  if (p->changelog_topic && cfg->pipeline.num_standby_replicas > 0) {
    if ((err = wd_standby_new(&p->rconf, p->changelog_topic, (uint32_t)wd_repart_partitions(p->rp), p->store, p->state,
                              task_topics, ntask, &p->standby)))
      return err;
    cc.standby = p->standby;
    wd_log(WD_LOG_INFO, "pipeline",
           "standby replicas: this process keeps warm copies of the tasks it does not own "
           "(from %s)",
           p->changelog_topic);
  }
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
  if (p->rb) { /* the switch commits carry no input offsets: resolved by this process's commit marker */
    wd_kafka_conf_t mconf = {0};
    const char *mtopic = p->changelog_topic ? p->changelog_topic : cfg->sink.topic;
    if (asprintf(&p->rb_group, "%s.rebuild", p->txn_id) < 0) {
      p->rb_group = NULL;
      return wd_error_nomem();
    }
    err = wd_kafka_conf_copy(&mconf, &p->kconf);
    if (!err) err = wd_kafka_conf_set_group(&mconf, p->rb_group);
    if (!err) err = wd_consumer_new(&mconf, &mtopic, 1, NULL, NULL, &p->rb_marker);
    wd_kafka_conf_clear(&mconf);
    if (err) return err;
    wd_commit_set_marker(p->commit, p->rb_marker, mtopic);
  }
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
  if (p->rm && !wd_kafka_conf_get(&p->kconf, "statistics.interval.ms"))
    err = wd_kafka_conf_set(&p->kconf, "statistics.interval.ms", "5000");
  if (!err) err = wd_consumer_new(&p->kconf, p->topics, nt, on_assign, p, &p->cons);
  if (err) return err;
  wd_commit_set_consumer(p->commit, p->cons);
  wd_consumer_set_revoke_cb(p->cons, on_revoke);
  wd_consumer_set_assign_all_cb(p->cons, on_assign_all);
  if (p->gtopics) {
    if (p->exactly_once && asprintf(&p->pos_group, "%s.lookups", p->txn_id) < 0) {
      p->pos_group = NULL;
      return wd_error_nomem();
    }
    if ((err = wd_gtable_new(&p->kconf, p->gtopics, ngt, p->store, p->pos_group, &p->gt))) return err;
    if (p->exactly_once) wd_commit_set_global(p->commit, wd_gtable_group_consumer(p->gt), p->changelog_topic);
    wd_join_set_owner(wd_lookups_join(p->lk), wd_commit_task_owned, p->commit); /* the task table's owned tasks */
    wd_commit_set_reconcile(p->commit, true); /* each task reconciled before its first record */
  }
  return NULL;
}

wd_error_t *wd_pipeline_new(const wd_config_t *cfg, const wd_pipeline_opts_t *opts, wd_pipeline_t **out) {
  wd_error_t *err = NULL;
  *out = NULL;
  wd_pipeline_t *p = calloc(1, sizeof(*p));
  if (!p) return wd_error_nomem();
  p->cfg = cfg;
  if (opts) p->opts = *opts;
  const char *dir = p->opts.state_dir ? p->opts.state_dir : cfg->state.dir;
  size_t ntopics = 0, nt = 0, ngt = 0;
  int txn_timeout_ms = 0;
  if ((err = open_table_and_sources(p, &ntopics)) || (err = open_formats(p)) || (err = open_state(p, dir, ntopics)) ||
      (err = open_batch(p)) || (err = open_kafka(p, &txn_timeout_ms)) ||
      (err = plan_topics(p, dir, ntopics, &nt, &ngt)) || (err = open_coordinator(p, dir, txn_timeout_ms)) ||
      (err = open_consumers(p, nt, ngt)))
    goto fail;
  /* recovery: fence an earlier incarnation, resolve a commit it left prepared */
  if ((err = wd_commit_recover(p->commit, &p->stop))) goto fail;
  if (p->gt && (err = wd_gtable_start(p->gt))) goto fail; /* at the positions recovery left */
  if (p->exactly_once)
    wd_log(WD_LOG_INFO, "pipeline",
           "exactly-once: transactional.id %s; consumers of %s must read with "
           "isolation.level=read_committed",
           p->txn_id, cfg->sink.topic);
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
  free(p->rb_group);
  free(p->gtopics);
  free(p->pos_group);
  wd_topic_index_destroy(p->tix);
  wd_run_metrics_destroy(p->rm); /* stops the server thread first */
  wd_collector_destroy(p->coll); /* flushes its producer first */
  wd_kafka_conf_clear(&p->kconf);
  wd_kafka_conf_clear(&p->pconf);
  wd_kafka_conf_clear(&p->rconf);
  free(p->changelog_topic);
  if (p->table) {
    for (size_t i = 0; i < p->nrecs; i++) wd_row_destroy(p->schema, p->recs[i]);
    wd_changelog_free(p->table, &p->cl);
  }
  wd_changes_free(&p->changes);
  for (size_t i = 0; p->fmt_state && i < p->nfmt; i++) {
    const wd_format_t *f = wd_format_of((wd_source_format_t)i);
    if (p->fmt_state[i] && f->close) f->close(p->fmt_state[i]);
  }
  free(p->fmt_state);
  release_lookup_recs(p);
  wd_lookups_destroy(p->lk); /* before the state its join hooks into */
  wd_avro_sink_destroy(p->avro_out);
  wd_registry_destroy(p->registry);
  wd_commit_destroy(p->commit);
  wd_hist_gather_destroy(p->hg); /* after the coordinator, whose hooks write into it */
  wd_standby_destroy(p->standby);
  wd_state_destroy(p->state);
  free(p->topics);
  wd_repart_destroy(p->rp);
  free(p->txn_id);
  free(p->restoring);
  for (size_t i = 0; p->dec_warn && i < p->nsources; i++) free(p->dec_warn[i]);
  free(p->dec_warn);
  free(p->rec_task);
  free(p->cl_src);
  wd_store_close(p->store);
  for (size_t i = 0; i < p->nsources; i++) wd_source_destroy(p->sources[i]);
  free(p->sources);
  wd_table_destroy(p->table);
  free(p->msgs);
  free(p->bm);
  free(p->end);
  free(p->recs);
  free(p->key_off);
  wd_buf_free(&p->keys);
  wd_buf_free(&p->kbuf);
  wd_buf_free(&p->vbuf);
  if (p->trace) fclose(p->trace);
  wd_ratelog_free(&p->rlog);
  free(p);
}
