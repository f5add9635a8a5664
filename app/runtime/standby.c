/*
 * app/runtime/standby.c — standby replicas (see standby.h).
 */
#include "app/runtime/standby.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "ingest/consumer.h"

struct wd_standby {
  wd_consumer_t *cons;
  wd_store_t *store;
  wd_state_t *state;
  uint32_t ntasks;
  const wd_tasks_t *tasks; /* borrowed (wd_standby_set_tasks): which tasks are owned here */
  int64_t *pos; /* per task: next offset of the copy, -1: none */
  wd_kmsg_t *msgs;
  size_t cap;
  wd_store_batch_t *b;
  uint64_t applied;
  bool seen; /* a record was read (positions are known from then on) */
  bool warm; /* the copies reached the changelog's end once (logged then) */
  bool ready; /* the group's assignment is known (wd_standby_set_ready): copies are kept */
  const char *const *task_topics; /* borrowed: the topics whose partition t is task t */
  size_t ntask_topics;
  char *topic; /* owned */
};

static void meta_name(char *buf, size_t n, uint32_t t) { snprintf(buf, n, "standby/%" PRIu32, t); }

static int64_t stored_position(wd_store_t *st, uint32_t t) {
  char name[32];
  uint8_t *val = NULL;
  size_t len = 0;
  meta_name(name, sizeof(name), t);
  wd_error_t *err = wd_store_get_meta(st, name, &val, &len);
  int64_t pos = -1;
  if (!err && val && len == 8) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | val[i];
    pos = (int64_t)v;
  }
  wd_error_destroy(err);
  free(val);
  return pos;
}

static int64_t on_assign(void *ctx, const char *topic, int32_t partition) {
  (void)topic;
  wd_standby_t *sb = ctx;
  if (partition < 0 || (uint32_t)partition >= sb->ntasks) return WD_OFFSET_END;
  int64_t p = sb->pos[partition];
  return p >= 0 ? p : WD_OFFSET_BEGINNING;
}

wd_error_t *wd_standby_new(const wd_kafka_conf_t *conf, const char *topic, uint32_t tasks, wd_store_t *store,
                           wd_state_t *state, const char *const *task_topics, size_t ntask_topics, wd_standby_t **out) {
  *out = NULL;
  wd_error_t *err = NULL;
  wd_standby_t *sb = calloc(1, sizeof(*sb));
  if (!sb || !(sb->pos = calloc(tasks ? tasks : 1, sizeof(*sb->pos))) || !(sb->b = wd_store_batch_new())) {
    err = wd_error_nomem();
    goto fail;
  }
  sb->store = store;
  sb->state = state;
  sb->task_topics = task_topics;
  sb->ntask_topics = ntask_topics;
  if (!(sb->topic = strdup(topic))) {
    err = wd_error_nomem();
    goto fail;
  }
  sb->ntasks = tasks;
  for (uint32_t t = 0; t < tasks; t++) sb->pos[t] = stored_position(store, t);
  const char *topics[] = {topic};
  if ((err = wd_consumer_new(conf, topics, 1, on_assign, sb, &sb->cons))) goto fail;
  *out = sb;
  return NULL;
fail:
  wd_standby_destroy(sb);
  return err;
}

void wd_standby_destroy(wd_standby_t *sb) {
  if (!sb) return;
  if (sb->cons) wd_consumer_destroy(sb->cons);
  free(sb->pos);
  free(sb->msgs);
  free(sb->topic);
  wd_store_batch_destroy(sb->b);
  free(sb);
}

void wd_standby_set_tasks(wd_standby_t *sb, const wd_tasks_t *tasks) {
  if (sb) sb->tasks = tasks;
}

void wd_standby_set_ready(wd_standby_t *sb) {
  if (sb) sb->ready = true;
}

int64_t wd_standby_position(const wd_standby_t *sb, uint32_t t) { return sb && t < sb->ntasks ? sb->pos[t] : -1; }

uint64_t wd_standby_applied(const wd_standby_t *sb) { return sb ? sb->applied : 0; }

wd_error_t *wd_standby_forget(wd_standby_t *sb, uint32_t t) {
  if (!sb || t >= sb->ntasks) return NULL;
  char name[32];
  meta_name(name, sizeof(name), t);
  sb->pos[t] = -1;
  wd_store_batch_t *b = wd_store_batch_new();
  if (!b || wd_store_batch_delete_meta(b, name)) {
    wd_store_batch_destroy(b);
    return wd_error_nomem();
  }
  wd_error_t *err = wd_store_write(sb->store, b);
  wd_store_batch_destroy(b);
  wd_tp_offset_t to = {sb->topic, (int32_t)t, -1}; /* -1: the beginning */
  if (!err) err = wd_consumer_seek(sb->cons, &to, 1);
  return err;
}

wd_error_t *wd_standby_poll(wd_standby_t *sb, size_t max, size_t *applied) {
  if (applied) *applied = 0;
  if (max > sb->cap) {
    wd_kmsg_t *m = realloc(sb->msgs, max * sizeof(*m));
    if (!m) return wd_error_nomem();
    memset(m + sb->cap, 0, (max - sb->cap) * sizeof(*m));
    sb->msgs = m;
    sb->cap = max;
  }
  if (!sb->ready) return NULL; /* wd_standby_set_ready: not before the group's assignment */
  size_t n = 0, done = 0;
  wd_error_t *err = wd_consumer_poll_batch(sb->cons, max, 0, sb->msgs, &n);
  if (err) return err;
  if (!n) {
    /* once the copies reach the changelog's end, say so (operators and bench/scale.py wait for it) */
    if (!sb->warm && sb->seen && wd_consumer_lag(sb->cons) == 0) {
      wd_log(WD_LOG_INFO, "standby", "standby copies are up to date with %s (%" PRIu64 " records applied)", sb->topic,
             sb->applied);
      sb->warm = true; /* said once: later the copies follow the changelog as it grows */
    }
    return NULL;
  }
  sb->seen = true;
  wd_store_batch_clear(sb->b);
  bool *touched = calloc(sb->ntasks ? sb->ntasks : 1, sizeof(*touched));
  if (!touched) {
    wd_kmsg_release(sb->msgs, n);
    return wd_error_nomem();
  }
  for (size_t i = 0; i < n && !err; i++) {
    const wd_kmsg_t *m = &sb->msgs[i];
    if (m->partition < 0 || (uint32_t)m->partition >= sb->ntasks) continue;
    uint32_t t = (uint32_t)m->partition;
    if (wd_tasks_active(sb->tasks, t)) continue; /* this process's own writes */
    int rc = m->value ? wd_store_batch_put(sb->b, m->key, m->key_len, m->value, m->value_len)
                      : wd_store_batch_delete(sb->b, m->key, m->key_len);
    if (rc) err = wd_error_nomem();
    sb->pos[t] = m->offset + 1;
    touched[t] = true;
    done++;
  }
  for (uint32_t t = 0; t < sb->ntasks && !err; t++) {
    if (!touched[t]) continue;
    char name[32];
    uint8_t v[8];
    for (int i = 0; i < 8; i++) v[i] = (uint8_t)((uint64_t)sb->pos[t] >> (56 - 8 * i));
    meta_name(name, sizeof(name), t);
    if (wd_store_batch_set_meta(sb->b, name, v, sizeof(v))) err = wd_error_nomem();
    /* the task's rows are a copy at this changelog position from now on, not the state at the
     * task's source offsets: those go in the same write, so that a later assignment of the task
     * catches it up from the copy's position instead of trusting offsets the rows no longer match
     * (the rows of a task this process owned before are overwritten here with older records
     * first) */
    for (size_t i = 0; i < sb->ntask_topics && !err; i++)
      if (wd_store_batch_delete_offset(sb->b, sb->task_topics[i], (int32_t)t)) err = wd_error_nomem();
  }
  free(touched);
  wd_kmsg_release(sb->msgs, n);
  if (!err && done) err = wd_store_write(sb->store, sb->b);
  wd_store_batch_clear(sb->b);
  if (!err) {
    sb->applied += done;
    if (applied) *applied = done;
  }
  return err;
}

wd_error_t *wd_standby_open(const wd_kafka_conf_t *conf, const char *topic, int64_t replicas, uint32_t tasks,
                            wd_store_t *store, wd_state_t *state, const char *const *task_topics, size_t ntask_topics,
                            wd_standby_t **out) {
  *out = NULL;
  if (replicas <= 0) return NULL;
  wd_error_t *err = wd_standby_new(conf, topic, tasks, store, state, task_topics, ntask_topics, out);
  if (!err)
    wd_log(WD_LOG_INFO, "pipeline",
           "standby replicas: this process keeps warm copies of the tasks it does not own "
           "(from %s)",
           topic);
  return err;
}
