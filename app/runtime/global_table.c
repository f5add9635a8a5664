/*
 * app/runtime/global_table.c — lookup topics read whole by every process (see global_table.h).
 */
#include "app/runtime/global_table.h"

#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wd_gtable {
  wd_kafka_conf_t conf; /* brokers and properties, no group (the global consumer's) */
  const char *const *topics;
  size_t ntopics;
  wd_store_t *store;
  wd_consumer_t *gcons; /* the position group's (never subscribed) */
  wd_consumer_t *cons; /* the global consumer (assign mode) */
  wd_tp_offset_t *pos; /* next offset taken per partition (topics: the borrowed ones) */
  size_t npos, cap_pos;
  uint64_t records;
};

static const char *canon(const wd_gtable_t *gt, const char *topic) {
  for (size_t i = 0; i < gt->ntopics; i++)
    if (!strcmp(gt->topics[i], topic)) return gt->topics[i];
  return NULL;
}

wd_error_t *wd_gtable_new(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, wd_store_t *store,
                          const char *pos_group, wd_gtable_t **out) {
  *out = NULL;
  wd_gtable_t *gt = calloc(1, sizeof(*gt));
  if (!gt) return wd_error_nomem();
  gt->topics = topics;
  gt->ntopics = n;
  gt->store = store;
  wd_kafka_conf_t gconf = {0};
  wd_error_t *err = wd_kafka_conf_copy(&gt->conf, conf);
  if (!err) err = wd_kafka_conf_set_group(&gt->conf, NULL);
  if (!err) err = wd_kafka_conf_copy(&gconf, &gt->conf);
  if (!err) err = wd_kafka_conf_set_group(&gconf, pos_group);
  /* in group mode the subscription starts with the first poll: this one is never polled */
  if (!err && pos_group) err = wd_consumer_new(&gconf, topics, n, NULL, NULL, &gt->gcons);
  wd_kafka_conf_clear(&gconf);
  if (err) {
    wd_gtable_destroy(gt);
    return err;
  }
  *out = gt;
  return NULL;
}

void wd_gtable_destroy(wd_gtable_t *gt) {
  if (!gt) return;
  wd_consumer_destroy(gt->cons);
  wd_consumer_destroy(gt->gcons);
  wd_kafka_conf_clear(&gt->conf);
  free(gt->pos);
  free(gt);
}

wd_consumer_t *wd_gtable_group_consumer(wd_gtable_t *gt) { return gt->gcons; }

static wd_tp_offset_t *find_pos(wd_gtable_t *gt, const char *topic, int32_t partition) {
  for (size_t i = 0; i < gt->npos; i++)
    if (gt->pos[i].partition == partition && !strcmp(gt->pos[i].topic, topic)) return &gt->pos[i];
  return NULL;
}

static int set_pos(wd_gtable_t *gt, const char *topic, int32_t partition, int64_t next) {
  wd_tp_offset_t *p = find_pos(gt, topic, partition);
  if (!p) {
    const char *t = canon(gt, topic);
    if (!t) return 0;
    if (gt->npos == gt->cap_pos) {
      size_t cap = gt->cap_pos ? gt->cap_pos * 2 : 16;
      wd_tp_offset_t *v = realloc(gt->pos, cap * sizeof(*v));
      if (!v) return -1;
      gt->pos = v;
      gt->cap_pos = cap;
    }
    p = &gt->pos[gt->npos++];
    p->topic = t;
    p->partition = partition;
  }
  p->offset = next;
  return 0;
}

/* The global consumer's starting offsets: the stored positions (the state holds the lookup rows
 * up to them), else the beginning. */
static int64_t on_assign(void *ctx, const char *topic, int32_t partition) {
  wd_gtable_t *gt = ctx;
  int64_t next = -1;
  wd_error_t *err = wd_store_get_offset(gt->store, topic, partition, &next);
  if (err) next = -1; /* unreadable: from the beginning (the rows are rebuilt, the same) */
  wd_error_destroy(err);
  (void)set_pos(gt, topic, partition, next); /* on no memory: a rewind leaves it where it is */
  return next >= 0 ? next : WD_OFFSET_BEGINNING;
}

wd_error_t *wd_gtable_start(wd_gtable_t *gt) {
  return wd_consumer_new(&gt->conf, gt->topics, gt->ntopics, on_assign, gt, &gt->cons);
}

wd_error_t *wd_gtable_poll(wd_gtable_t *gt, size_t max, wd_kmsg_t *msgs, size_t *n) {
  *n = 0;
  if (!gt->cons) return NULL;
  wd_error_t *err = wd_consumer_poll_batch(gt->cons, max, 0, msgs, n);
  if (!err) gt->records += *n;
  return err;
}

int wd_gtable_taken(wd_gtable_t *gt, const char *topic, int32_t partition, int64_t offset) {
  return set_pos(gt, topic, partition, offset + 1);
}

wd_error_t *wd_gtable_rewind(wd_gtable_t *gt, bool to_stored) {
  if (!gt->cons || !gt->npos) return NULL;
  for (size_t i = 0; to_stored && i < gt->npos; i++) {
    int64_t next = -1;
    wd_error_t *err = wd_store_get_offset(gt->store, gt->pos[i].topic, gt->pos[i].partition, &next);
    if (err) return err;
    gt->pos[i].offset = next; /* -1: the beginning (wd_consumer_seek) */
  }
  return wd_consumer_seek(gt->cons, gt->pos, gt->npos);
}

uint64_t wd_gtable_records(const wd_gtable_t *gt) { return gt->records; }

wd_error_t *wd_gtable_end_offsets(wd_gtable_t *gt, wd_tp_offset_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  return gt->cons ? wd_consumer_end_offsets(gt->cons, 30000, out, n) : NULL;
}

bool wd_gtable_reached(wd_gtable_t *gt, const wd_tp_offset_t *ends, size_t n) {
  if (!gt->cons) return true;
  wd_tp_offset_t *pos = NULL;
  size_t npos = 0;
  wd_error_t *err = wd_consumer_assignment(gt->cons, &pos, &npos);
  bool done = !err;
  wd_error_destroy(err);
  for (size_t e = 0; e < n && done; e++) {
    if (ends[e].offset <= 0) continue;
    /* the offset taken next (stored at the assignment, moved by every record taken): a partition
     * assigned at its end fetches nothing, so librdkafka reports no position for it, and every
     * start with idle lookup topics waited 60 s (found by tests/chaos/multi and by
     * lookup_scale_out/lookup_only_commit_killed_after_commit) */
    const wd_tp_offset_t *taken = find_pos(gt, ends[e].topic, ends[e].partition);
    bool reached = taken && taken->offset >= ends[e].offset;
    for (size_t k = 0; k < npos && !reached; k++)
      reached = pos[k].partition == ends[e].partition && !strcmp(pos[k].topic, ends[e].topic) &&
                pos[k].offset >= ends[e].offset;
    done = reached;
  }
  free(pos);
  return done;
}

wd_error_t *wd_gtable_open(const wd_kafka_conf_t *conf, const char *const *topics, size_t n, wd_store_t *store,
                           const char *txn_id, wd_commit_t *commit, wd_join_t *join, const char *changelog_topic,
                           wd_gtable_t **out) {
  char *pos_group = NULL;
  if (txn_id && asprintf(&pos_group, "%s.lookups", txn_id) < 0) return wd_error_nomem();
  wd_error_t *err = wd_gtable_new(conf, topics, n, store, pos_group, out);
  free(pos_group);
  if (err) return err;
  if (txn_id) wd_commit_set_global(commit, wd_gtable_group_consumer(*out), changelog_topic);
  wd_join_set_owner(join, wd_commit_task_owned, commit); /* the task table's owned tasks */
  wd_commit_set_reconcile(commit, true); /* each task reconciled before its first record */
  return NULL;
}

wd_error_t *wd_gtable_reconcile(wd_commit_t *commit, wd_join_t *join, wd_table_t *table, wd_emitter_t *emitter) {
  uint32_t task;
  wd_error_t *err = NULL;
  wd_changelog_t cl = {0}; /* the task's differences */
  while (!err && wd_commit_next_reconcile(commit, &task)) {
    size_t rows = 0;
    wd_changelog_reset(table, &cl);
    if ((err = wd_join_reconcile_task(join, task, &cl, &rows))) break;
    const wd_emit_rows_t out = {.rows = cl.rows, .n = cl.n}; /* rows of no message */
    if (cl.n && (err = wd_emit_changelog(emitter, &out))) break;
    wd_log(WD_LOG_INFO, "pipeline", "task %u reconciled with this process's lookup tables: %zu rows, %zu changes", task,
           rows, cl.n);
    err = wd_commit_reconciled(commit, task);
  }
  wd_changelog_free(table, &cl);
  return err;
}
