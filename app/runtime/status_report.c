/*
 * app/runtime/status_report.c — the status line, the summary and the status snapshot (see
 * status_report.h).
 */
#include "app/runtime/status_report.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/ops/state_dir.h"
#include "app/runtime/tasks.h"
#include "common/log.h"

static int64_t lag_of(const wd_status_inputs_t *in, const char *topic, int32_t partition) {
  for (size_t i = 0; i < in->nlags; i++)
    if (in->lags[i].partition == partition && !strcmp(in->lags[i].topic, topic)) return in->lags[i].offset;
  return -1;
}

static const char *rebuild_name(wd_task_rebuild_t r) {
  switch (r) {
  case WD_REBUILD_STAGE: return "STAGE";
  case WD_REBUILD_SOURCES: return "SOURCES";
  case WD_REBUILD_DIFF: return "DIFF";
  default: return NULL;
  }
}

void wd_status_report(const wd_status_inputs_t *in, wd_run_metrics_t *rm) {
  wd_status_t *status = wd_run_metrics_status(rm);
  if (!status) return;
  wd_tasks_t *tasks = in->commit ? wd_commit_tasks(in->commit) : NULL;
  size_t nt = tasks ? wd_tasks_count(tasks) : 0;
  char why[400] = "";
  const char *idle = in->cons ? wd_consumer_idle_reason(in->cons) : NULL;
  if (in->stopping) snprintf(why, sizeof(why), "stopping");
  else if (in->initialising) snprintf(why, sizeof(why), "initialising an assignment");
  else if (in->restoring) snprintf(why, sizeof(why), "restoring tasks from the state changelog topic");
  else if (in->rebuilding) snprintf(why, sizeof(why), "rebuilding the state after a table definition change");
  else if (wd_state_disk_short())
    snprintf(why, sizeof(why), "the state directory's disk is short: %lld bytes free, below state.min-free-bytes",
             (long long)wd_state_disk_free_bytes());
  else if (idle && strcmp(idle, "all partitions are assigned to other members"))
    snprintf(why, sizeof(why), "no partitions: %s", idle);

  /* the metrics: task states, restores, librdkafka's statistics */
  uint32_t *ids = calloc(nt + 1, sizeof(*ids));
  int *states = calloc(nt + 1, sizeof(*states));
  const char *names[WD_TASK_NSTATES];
  for (int s = 0; s < WD_TASK_NSTATES; s++) names[s] = wd_task_state_name((wd_task_state_t)s);
  uint64_t restores = 0;
  json_t *root = json_object(), *jt = json_array();
  for (size_t i = 0; i < nt; i++) {
    wd_task_t *t = wd_tasks_at(tasks, i);
    restores += t->restores;
    if (ids && states) ids[i] = t->id, states[i] = (int)t->state;
    if (t->state == WD_TASK_CLOSED) continue;
    bool owned = wd_tasks_active(tasks, t->id);
    if (!why[0] && owned && t->state != WD_TASK_RUNNING)
      snprintf(why, sizeof(why), "task %" PRIu32 " is %s", t->id, wd_task_state_name(t->state));
    json_t *parts = json_array();
    for (size_t k = 0; owned && parts && k < t->nparts; k++) {
      const wd_task_part_t *tp = &t->parts[k];
      int64_t pos = in->cons ? wd_consumer_position(in->cons, tp->topic, tp->partition) : -1, committed = -1;
      if (in->store) {
        wd_error_t *err = wd_store_get_offset(in->store, tp->topic, tp->partition, &committed);
        if (err) committed = -1;
        wd_error_destroy(err);
      }
      int64_t lag = lag_of(in, tp->topic, tp->partition);
      if (!why[0] && lag > WD_STATUS_READY_LAG)
        snprintf(why, sizeof(why), "task %" PRIu32 ": %s[%d] is %" PRId64 " records behind (bound %d)", t->id,
                 tp->topic, (int)tp->partition, lag, WD_STATUS_READY_LAG);
      json_array_append_new(parts,
                            json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:b}", "topic", tp->topic, "partition",
                                      (int)tp->partition, "position", (json_int_t)pos, "committed",
                                      (json_int_t)committed, "end", (json_int_t)(lag >= 0 && pos >= 0 ? pos + lag : -1),
                                      "lag", (json_int_t)lag, "held", tp->held_at >= 0));
    }
    const char *rb = rebuild_name(t->rebuild);
    json_array_append_new(jt, json_pack("{s:I,s:s,s:b,s:I,s:i,s:s?,s:o}", "id", (json_int_t)t->id, "state",
                                        wd_task_state_name(t->state), "owned", owned, "since_ms",
                                        (json_int_t)t->moved_at_ms, "restores", (int)t->restores, "rebuild", rb,
                                        "partitions", parts ? parts : json_array()));
  }
  if (ids && states) wd_run_metrics_tasks(rm, nt, ids, states, names, WD_TASK_NSTATES, restores);
  free(ids);
  free(states);
  if (in->cons) wd_run_metrics_kafka(rm, wd_consumer_stats(in->cons));

  const wd_pipeline_stats_t *st = in->st;
  int64_t lag_sum = 0;
  for (size_t i = 0; i < in->nlags; i++) lag_sum += in->lags[i].offset;
  json_t *pl =
      json_pack("{s:s?,s:s?,s:s?,s:s?,s:s,s:I,s:s,s:i,s:s?,s:s?,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "table",
                in->table, "sink_topic", in->sink_topic, "group", in->group, "transactional_id", in->transactional_id,
                "delivery", in->exactly_once ? "exactly-once" : "at-least-once", "commit_interval_ms",
                (json_int_t)in->commit_interval_ms, "phase", in->stopping ? "stopping" : "running",
                "assigned_partitions", in->cons ? wd_consumer_assigned_count(in->cons) : 0, "idle_reason", idle,
                /* a topic it reads that does not exist (a misspelt source topic, or one Debezium
                 * creates with a table's first change): not a readiness matter, said here */
                "missing_topic", in->cons ? wd_consumer_missing_topic(in->cons) : NULL, "lag", (json_int_t)lag_sum,
                "totals", "records_in", (json_int_t)(st ? st->records_in : 0), "changes_out",
                (json_int_t)(st ? st->changes_out : 0), "dead_letters", (json_int_t)(st ? st->dead_lettered : 0),
                "skipped_tombstones", (json_int_t)(st ? st->skipped_tombstones : 0), "commits",
                (json_int_t)(st ? st->commits : 0), "aborted_commits", (json_int_t)(st ? st->aborted_commits : 0),
                "restored_records", (json_int_t)(st ? st->restored : 0), "restores", (json_int_t)restores);
  char *text = NULL, *members = wd_run_metrics_status_members(rm);
  if (root && jt && pl && members) {
    json_object_set_new(root, "pipeline", pl);
    pl = NULL;
    json_object_set_new(root, "tasks", jt);
    jt = NULL;
    char *head = json_dumps(root, JSON_COMPACT); /* {"pipeline":..,"tasks":..} + "," + members + "}" */
    size_t hl = head ? strlen(head) : 0, ml = strlen(members);
    if (head && hl >= 2 && (text = malloc(hl + ml + 2))) {
      memcpy(text, head, hl - 1);
      text[hl - 1] = ',';
      memcpy(text + hl, members, ml);
      text[hl + ml] = '}';
      text[hl + ml + 1] = 0;
    }
    free(head);
  }
  if (!text || wd_status_publish(status, text, !why[0], why))
    wd_log(WD_LOG_DEBUG, "pipeline", "the status snapshot could not be made (no memory)");
  free(text);
  free(members);
  json_decref(pl);
  json_decref(jt);
  json_decref(root);
}

void wd_status_line(FILE *f, const wd_status_line_t *in) {
  const wd_pipeline_stats_t *st = in->st;
  wd_buf_t by_id = {0}; /* the dead letters by error id */
  if (st->dead_lettered && in->dead_letters &&
      (wd_buf_printf(&by_id, " (") || wd_ratelog_put_counts(in->dead_letters, &by_id) || wd_buf_putc(&by_id, ')') ||
       wd_buf_putc(&by_id, 0)))
    wd_buf_reset(&by_id);
  /* no "lag 0" while the process holds no partitions, but why it holds none */
  char lag[160], nk[48] = "";
  if (st->null_key_halves) snprintf(nk, sizeof(nk), " | null-key halves %" PRIu64, st->null_key_halves);
  char ko[48] = "";
  if (st->key_only_before) snprintf(ko, sizeof(ko), " | key-only before images %" PRIu64, st->key_only_before);
  char ival[96] = ""; /* the adaptive commit interval in force, and its bounds */
  if (in->exactly_once && in->interval_max_ms > in->interval_min_ms)
    snprintf(ival, sizeof(ival), ", interval %lld ms, adaptive %lld..%lld)", (long long)in->interval_ms,
             (long long)in->interval_min_ms, (long long)in->interval_max_ms);
  else if (in->exactly_once) snprintf(ival, sizeof(ival), ", interval %lld ms)", (long long)in->interval_ms);
  if (in->idle) snprintf(lag, sizeof(lag), "no partitions (%s)", in->idle);
  else snprintf(lag, sizeof(lag), "lag %" PRId64, st->lag);
  fprintf(f,
          "widen: in %" PRIu64 " records (%.0f/s) | out %" PRIu64 " changes | dead-lettered %" PRIu64
          "%s | ignored -U %" PRIu64 " | ordering tombstones %" PRIu64 " | deletes without sequence %" PRIu64
          "%s%s | %s | commits %" PRIu64 "%s%s%s\n",
          st->records_in, in->rate, st->changes_out, st->dead_lettered, by_id.len ? (char *)by_id.data : "",
          st->ignored_update_before, st->tombstones, st->deletes_without_sequence, nk, ko, lag, st->commits,
          in->exactly_once ? " (exactly-once" : " (at-least-once)", ival, in->restoring ? " | restoring" : "");
  wd_buf_free(&by_id);
}

void wd_status_summary(FILE *f, const wd_status_summary_t *in, double seconds) {
  const wd_pipeline_stats_t *st = in->st;
  double busy = in->busy_s;
  fprintf(f,
          "widen: summary: %" PRIu64 " Kafka records in (%" PRIu64 " change records after decoding: an update is -U "
          "and +U), %" PRIu64 " changelog rows out (+I/-U/+U/-D) in %" PRIu64 " messages, %" PRIu64
          " dead-lettered, %" PRIu64 " Kafka tombstones skipped, %" PRIu64 " -U ignored, %" PRIu64
          " dropped by ignore-delete/first-row, %" PRIu64 " ordering tombstones, %" PRIu64 " commits (%s) of %" PRIu64
          " batches; %.2f s in all, %.0f records/s while input flowed",
          st->records_in, st->changes_in, st->changes_out, st->messages_out, st->dead_lettered, st->skipped_tombstones,
          st->ignored_update_before, st->dropped, st->tombstones, st->commits,
          in->exactly_once ? "exactly-once" : "at-least-once", st->batches, seconds,
          busy > 0 ? (double)st->records_in / busy : 0.0);
  if (st->aborted_commits) fprintf(f, "; %" PRIu64 " commits aborted and redone", st->aborted_commits);
  if (in->overlapped) fprintf(f, "; %" PRIu64 " commits completed while the next batches were merged", in->overlapped);
  if (st->restored) fprintf(f, "; %" PRIu64 " records merged without output to rebuild state", st->restored);
  if (in->standby) fprintf(f, "; %" PRIu64 " state changelog records applied to standby copies", in->standby_applied);
  if (st->repartitioned) fprintf(f, "; %" PRIu64 " records forwarded to repartition topics", st->repartitioned);
  if (st->misplaced) fprintf(f, " (%" PRIu64 " source records outside their wide key's partition)", st->misplaced);
  if (st->deletes_without_sequence)
    fprintf(f, "; %" PRIu64 " deletes without sequence field", st->deletes_without_sequence);
  if (st->null_key_halves)
    fprintf(f, "; %" PRIu64 " null-key halves left out (a NULL key holds no row)", st->null_key_halves);
  if (st->key_only_before)
    fprintf(f, "; %" PRIu64 " records with only the key in their before image (REPLICA IDENTITY DEFAULT)",
            st->key_only_before);
  if (in->from) fprintf(f, "; %" PRIu64 " records older than --from skipped", st->skipped_before_from);
  fprintf(f, "\n");
}

void wd_status_tick(wd_status_inputs_t *in, wd_state_t *state, double restore, wd_run_metrics_t *rm) {
  wd_run_tick_t t = {0};
  wd_tp_offset_t *lags = NULL;
  wd_error_destroy(wd_consumer_lags(in->cons, &lags, &t.nlags));
  t.lags = lags;
  t.assigned = wd_consumer_assigned_count(in->cons);
  t.state_bytes = wd_store_disk_bytes(in->store);
  wd_state_cache_counts(state, &t.cache_hits, &t.cache_misses);
  t.cache_entries = wd_state_cached(state);
  t.restore = restore;
  wd_run_metrics_tick(rm, &t);
  in->lags = lags;
  in->nlags = t.nlags;
  wd_status_report(in, rm); /* the probes' and /status's snapshot */
  in->lags = NULL;
  in->nlags = 0;
  free(lags);
}

void wd_status_totals_rollback(wd_pipeline_stats_t *st, const wd_pipeline_stats_t *base) {
  st->records_in = base->records_in;
  st->changes_in = base->changes_in;
  st->changes_out = base->changes_out;
  st->messages_out = base->messages_out;
  st->dead_lettered = base->dead_lettered;
  st->skipped_tombstones = base->skipped_tombstones;
  st->ignored_update_before = base->ignored_update_before;
  st->tombstones = base->tombstones;
  st->dropped = base->dropped;
  st->skipped_before_from = base->skipped_before_from;
  st->restored = base->restored;
  st->deletes_without_sequence = base->deletes_without_sequence;
  st->null_key_halves = base->null_key_halves;
  st->key_only_before = base->key_only_before;
}
