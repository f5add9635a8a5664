/*
 * app/runtime/repart_setup.c — the repartition module's start-up steps (see repart_setup.h).
 */
#include "app/runtime/repart_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

/* Sleeps 100 ms, unless a stop came during the start. */
static void sleep_100ms(const wd_repart_env_t *e) {
  if (!(e->start_stop && *e->start_stop)) wd_sleep_ms(100);
}

/* The kind of topic, its source's index (*si) and the pipeline's own copy of its name (*canon,
 * valid for the pipeline's life, unlike a message's). */
static wd_topic_kind_t topic_kind(const wd_repart_env_t *e, const char *topic, int *si, const char **canon) {
  for (size_t i = 0; i < e->nsources; i++) {
    for (size_t t = 0; t < e->sources[i]->ntopics; t++)
      if (strcmp(e->sources[i]->topics[t], topic) == 0) {
        *si = (int)i;
        *canon = e->sources[i]->topics[t];
        return wd_repart_on(e->rp, i) ? WD_TOPIC_RAW : WD_TOPIC_DIRECT;
      }
    const char *rt = wd_repart_topic(e->rp, i);
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

/* Builds the index of every topic the pipeline reads (the sources' topics, their repartition
 * topics), once they are known (after wd_repart_setup, with e->gtopics set). NULL on no memory. */
wd_topic_index_t *wd_repart_topic_index(const wd_repart_env_t *e) {
  size_t n = 0;
  for (size_t i = 0; i < e->nsources; i++) n += e->sources[i]->ntopics + (wd_repart_topic(e->rp, i) ? 1 : 0);
  wd_topic_ent_t *ents = calloc(n ? n : 1, sizeof(*ents));
  if (!ents) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < e->nsources; i++)
    for (size_t t = 0; t <= e->sources[i]->ntopics; t++) {
      const char *name = t < e->sources[i]->ntopics ? e->sources[i]->topics[t] : wd_repart_topic(e->rp, i);
      if (!name) continue;
      int si = -1;
      const char *canon = NULL;
      wd_topic_kind_t kind = topic_kind(e, name, &si, &canon); /* the first source naming it wins, as before */
      bool global = false;
      for (size_t g = 0; e->gtopics && e->gtopics[g] && !global; g++) global = e->gtopics[g] == canon;
      ents[k++] = (wd_topic_ent_t){canon, kind, si, global};
    }
  wd_topic_index_t *tix = wd_topic_index_new(ents, k); /* of the same name, the first is kept */
  free(ents);
  return tix;
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
void wd_repart_check_copartitioning(const wd_repart_env_t *e) {
  wd_tp_offset_t *a = NULL;
  size_t n = 0;
  wd_error_t *err = wd_consumer_assignment(e->cons, &a, &n);
  if (err || n == 0) {
    wd_error_destroy(err);
    free(a);
    return;
  }
  /* a bitmask of partitions 0..63 per topic (more partitions are not checked), over the topics
   * of the tasks (a repartitioned source's own topics are only forwarded: any assignment works) */
  size_t ntask = 0;
  const char *const *task_topics = wd_repart_task_topics(e->rp, &ntask);
  const char *first = ntask ? task_topics[0] : a[0].topic;
  uint64_t ref = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i].topic == first || !strcmp(a[i].topic, first))
      if (a[i].partition >= 0 && a[i].partition < 64) ref |= UINT64_C(1) << a[i].partition;
  for (size_t t = 0; t < e->nsources; t++)
    for (size_t k = 0; k < e->sources[t]->ntopics + 1 && !(e->gtopics && wd_lookups_is_lookup(e->lk, (int)t)); k++) {
      const char *topic = k < e->sources[t]->ntopics ? e->sources[t]->topics[k] : wd_repart_topic(e->rp, t);
      if (!topic || (wd_repart_on(e->rp, t) && k < e->sources[t]->ntopics)) continue;
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

/* Creates an internal topic of the table (N partitions) when missing; refuses one that exists
 * with another partition count (C_INTERNAL_TOPIC_PARTITIONS). */
wd_error_t *wd_repart_ensure_topic(const wd_repart_env_t *e, const char *topic, const char *const *cfgs,
                                   const char *what) {
  int have = 0, np = wd_repart_partitions(e->rp);
  wd_error_t *err = wd_collector_partition_count(e->coll, topic, 30000, &have);
  if (err) return err;
  if (have && have != np)
    return wd_error_new(WD_ERR_CONFIG, C_INTERNAL_TOPIC_PARTITIONS,
                        "%s %s has %d partitions but the table has %d (one per task): set pipeline.partitions: %d "
                        "(the count the table was built with); another count needs the table built anew (stop every "
                        "process of group %s, delete their state directories and the group's internal topics, and "
                        "start with a new group.id), since every task's rows would hold other keys",
                        what, topic, have, np, have, e->cfg->kafka.group_id);
  if (have) return NULL;
  if ((err = wd_collector_ensure_topic(e->coll, topic, np, cfgs, 30000))) return err;
  /* until the broker's metadata lists it: a group that assigns before would leave it out until the
   * next metadata refresh (minutes) */
  for (int i = 0; i < 100 && !err && have != np; i++) {
    if (i) sleep_100ms(e);
    err = wd_collector_partition_count(e->coll, topic, 5000, &have);
  }
  return err;
}

/* the table's partition count and which sources go through a repartition topic
 * (app/runtime/repartition.h), said at start; in a live run the repartition topics are created. */
wd_error_t *wd_repart_setup(const wd_repart_env_t *e) {
  wd_error_t *err = NULL;
  size_t n = e->nsources;
  wd_repartition_input_t *in = calloc(n ? n : 1, sizeof(*in));
  int **counts = calloc(n ? n : 1, sizeof(*counts));
  char *why = NULL;
  if (!in || !counts) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < n && !err; i++) {
    const wd_source_t *src = e->sources[i];
    if (!(counts[i] = calloc(src->ntopics ? src->ntopics : 1, sizeof(int)))) {
      err = wd_error_nomem();
      break;
    }
    for (size_t k = 0; k < src->ntopics && !err; k++)
      err = wd_collector_partition_count(e->coll, src->topics[k], 30000, &counts[i][k]);
    /* a source with its own primary key always forwards its derived records (docs/source-keys.md) */
    int mode = wd_lookups_has_key(e->lk, (int)i) ? WD_CONFIG_REPARTITION_TRUE : e->cfg->sources.v[i].repartition;
    in[i] = (wd_repartition_input_t){
        src->name, mode, wd_lookups_is_lookup(e->lk, (int)i), src->ntopics, (const char *const *)src->topics,
        counts[i]};
  }
  if (err || (err = wd_repart_plan(e->rp, in, e->cfg->pipeline.partitions, !e->replay, e->cfg->kafka.group_id,
                                   e->cfg->table.name, &why)))
    goto done;
  if ((err = wd_lookups_check_partitions(e->lk, e->cfg, in, n, wd_repart_partitions(e->rp)))) goto done;
  size_t nrp = 0;
  for (size_t i = 0; i < n; i++) nrp += wd_repart_on(e->rp, i);
  wd_log(WD_LOG_INFO, "pipeline", "per-partition tasks: the table has %d partitions (tasks)%s",
         wd_repart_partitions(e->rp), nrp ? "" : "; every source is co-partitioned");
  for (char *line = why, *nl; line && *line; line = nl + 1) {
    if (!(nl = strchr(line, '\n'))) break;
    *nl = 0;
    wd_log(WD_LOG_INFO, "pipeline", "%s", line);
  }
  for (size_t i = 0; i < n && !err; i++) { /* a live run: the repartition topics are created */
    const char *topic = wd_repart_topic(e->rp, i);
    if (!topic) continue;
    err = wd_repart_ensure_topic(e, topic, NULL, "repartition topic");
    if (!err && wd_repart_on(e->rp, i))
      wd_log(WD_LOG_INFO, "pipeline", "source '%s': forwarded through repartition topic %s", e->sources[i]->name,
             topic);
    else if (!err)
      wd_log(WD_LOG_INFO, "pipeline",
             "source '%s': read directly; a record outside its wide key's partition "
             "(murmur2 of widen's key bytes) goes through repartition topic %s",
             e->sources[i]->name, topic);
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
wd_error_t *wd_repart_check_layout(const wd_repart_env_t *e, const char *dir) {
  static const char *const key = "tasks/layout";
  wd_buf_t now = {0};
  wd_error_t *err = NULL;
  uint8_t *was = NULL;
  size_t wlen = 0;
  if (!e->per_partition) {
    if (wd_buf_printf(&now, "single")) goto nomem;
  } else {
    if (wd_buf_printf(&now, "per-partition %d", wd_repart_partitions(e->rp))) goto nomem;
    for (size_t i = 0; i < e->nsources; i++)
      if (!wd_lookups_is_lookup(e->lk, (int)i) &&
          wd_buf_printf(&now, "; %s %s", e->sources[i]->name, wd_repart_on(e->rp, i) ? "repartitioned" : "direct"))
        goto nomem;
  }
  if ((err = wd_store_get_meta(e->store, key, &was, &wlen))) goto done;
  if (!was) {
    wd_store_batch_t *b = wd_store_batch_new();
    if (!b || wd_store_batch_set_meta(b, key, now.data, now.len)) {
      wd_store_batch_destroy(b);
      goto nomem;
    }
    err = wd_store_write_sync(e->store, b);
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
                     dir, (int)wlen, (const char *)was, (int)now.len, (const char *)now.data, e->cfg->kafka.group_id);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  free(was);
  wd_buf_free(&now);
  return err;
}

int wd_repart_group_topics(const wd_repart_env_t *e, const char **topics, size_t *nt, const char **gtopics,
                           size_t *ngt) {
  *nt = *ngt = 0;
  for (size_t i = 0; i < e->nsources; i++) {
    if (gtopics && wd_lookups_is_lookup(e->lk, (int)i)) { /* a global table's, not the group's */
      for (size_t t = 0; t < e->sources[i]->ntopics; t++) gtopics[(*ngt)++] = e->sources[i]->topics[t];
      continue;
    }
    bool raw = wd_repart_on(e->rp, i) && wd_repart_forwarding(e->rp);
    for (size_t t = 0; t < e->sources[i]->ntopics; t++) {
      topics[(*nt)++] = e->sources[i]->topics[t];
      /* a source with its own primary key is a task's input (its rows are task state), forwarded */
      if (wd_repart_add_topic(e->rp, e->sources[i]->topics[t], raw && !wd_lookups_has_key(e->lk, (int)i))) return -1;
    }
    if ((raw || wd_repart_fallback(e->rp, i)) && /* `auto` read directly: its repartition topic too */
        wd_repart_add_topic(e->rp, topics[(*nt)++] = wd_repart_topic(e->rp, i), false))
      return -1;
  }
  return 0;
}
