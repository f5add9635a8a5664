/*
 * ingest/consumer.c — the pipeline's Kafka consumer (see consumer.h): group mode with an eager
 * rebalance callback that seeks every assigned partition to the offset the pipeline gives, or
 * assign mode over all partitions without a group join.
 */
#include "ingest/consumer.h"
#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/text.h"
#include "kafka/kafka.h"

#define WD_METADATA_TIMEOUT_MS 10000
/* How long an assign-mode consumer's start asks for its topics' partitions while the broker gives
 * retriable answers (a broker restarting: _TRANSPORT, _TIMED_OUT, leaders moving), as a Java
 * client's default.api.timeout.ms (60 s); the connection check before it keeps its 10 s. */
#define WD_METADATA_RETRY_MS 60000

struct wd_consumer {
  rd_kafka_t *rk;
  char **topics; /* owned copies, in the order given */
  size_t ntopics;
  bool group_mode;
  int64_t reset_offset; /* assign mode: what WD_OFFSET_STORED means (librdkafka offset) */
  wd_consumer_assign_cb on_assign;
  wd_consumer_revoke_cb on_revoke;
  wd_consumer_assign_all_cb on_assign_all;
  void *ctx;
  bool closed;
  bool waiting; /* a broker is unreachable (logged once) */
  bool fatal; /* a fatal client error was reported */
  int last_err; /* last message error logged at WARN (repeats go to DEBUG) */
  wd_kmsg_t *batch; /* the batch being filled by wd_consumer_poll_batch, or NULL */
  size_t *batch_n;
  int64_t lag; /* cached wd_consumer_lag result */
  int64_t lag_at_ms; /* when it was computed (monotonic ms), 0 = never */
  uint64_t generation; /* assignments + revocations seen */
  bool paused; /* wd_consumer_pause(true) in force */
  char *group_id; /* group mode: the group (owned) */
  bool subscribed; /* group mode: the subscription started (first poll) */
  /* records that wd_consumer_serve received while paused (fetched before the pause took
   * effect): held in order and returned first by the next wd_consumer_poll_batch */
  rd_kafka_message_t **held;
  size_t nheld, cap_held;
  /* partitions held by wd_consumer_hold_partition (paused until released, also across
   * wd_consumer_pause(false)); cleared by every rebalance */
  rd_kafka_topic_partition_list_t *holds;
  /* topics that do not exist (yet): logged once; while any is missing, the cluster's metadata is
   * requested every WD_MISSING_CHECK_MS (librdkafka alone would see a new topic only at its next
   * topic.metadata.refresh.interval.ms, 5 min) */
  bool *missing; /* [ntopics] */
  size_t nmissing;
  int64_t missing_check_at_ms; /* next check (monotonic ms) */
  bool wait_for_topics; /* assign mode: missing topics are waited for (WD_CONSUMER_WAIT_FOR_TOPICS) */
  bool one_try; /* assign mode: metadata retried for WD_METADATA_TIMEOUT_MS only (WD_CONSUMER_ONE_TRY) */
  int nassigned; /* partitions held now (rebalance callbacks) */
  /* group mode: after an assignment, the next poll compares the assigned topics with the
   * subscribed topics that exist (wd_consumer_check_assignment) */
  bool verify_assignment;
  bool *rejoined; /* [ntopics] a rejoin was forced for the topic (at most once each) */
  int last_event; /* 0 none yet, 1 an assignment, 2 a revocation */
  wd_kafka_stats_t stats; /* librdkafka's last statistics (statistics.interval.ms), stats.at_ms 0 before */
};

#define WD_MISSING_CHECK_MS 1000

/* The consumer's own copy of a topic name (stable until destroy), or NULL. */
static const char *wd_consumer_topic(const wd_consumer_t *c, const char *name) {
  for (size_t i = 0; i < c->ntopics; i++)
    if (strcmp(c->topics[i], name) == 0) return c->topics[i];
  return NULL;
}

static size_t wd_topic_index(const wd_consumer_t *c, const char *topic) {
  for (size_t i = 0; i < c->ntopics; i++)
    if (c->topics[i] == topic) return i;
  return c->ntopics;
}

/* Maps a starting offset from on_assign to librdkafka's offset for rd_kafka_assign. */
static int64_t wd_consumer_start_offset(const wd_consumer_t *c, int64_t off, const char *topic, int32_t partition) {
  if (off >= 0) return off;
  switch (off) {
  case WD_OFFSET_BEGINNING: return RD_KAFKA_OFFSET_BEGINNING;
  case WD_OFFSET_END: return RD_KAFKA_OFFSET_END;
  case WD_OFFSET_STORED: break;
  default:
    wd_log(WD_LOG_WARN, "ingest",
           "on_assign gave invalid offset %" PRId64 " for %s [%" PRId32 "]: using the stored one", off, topic,
           partition);
    break;
  }
  return c->group_mode ? RD_KAFKA_OFFSET_INVALID : c->reset_offset;
}

static void wd_consumer_describe_offset(int64_t off, char *buf, size_t n) {
  if (off == RD_KAFKA_OFFSET_INVALID) snprintf(buf, n, "committed");
  else if (off == RD_KAFKA_OFFSET_BEGINNING) snprintf(buf, n, "beginning");
  else if (off == RD_KAFKA_OFFSET_END) snprintf(buf, n, "end");
  else snprintf(buf, n, "%" PRId64, off);
}

/* Notes topic [partition] as held (held: paused until released, also across wd_consumer_pause)
 * or as released. Returns false when out of memory (the hold is not noted). */
static bool wd_consumer_note_hold(wd_consumer_t *c, const char *topic, int32_t partition, bool held) {
  if (!held) {
    if (c->holds) rd_kafka_topic_partition_list_del(c->holds, topic, partition);
    return true;
  }
  if (!c->holds && !(c->holds = rd_kafka_topic_partition_list_new(8))) return false;
  if (!rd_kafka_topic_partition_list_find(c->holds, topic, partition))
    rd_kafka_topic_partition_list_add(c->holds, topic, partition);
  return true;
}

/* Pauses (pause) or resumes the partitions of list before they are assigned. librdkafka keeps an
 * application's pause of a partition across assignments, and setting it before the assignment is
 * the only race-free time: a pause or resume is an operation on the partition with a new version
 * barrier, and one issued by this thread while librdkafka's main thread starts the partition's
 * fetcher for the assignment can take a newer barrier than the start yet reach the partition
 * first; the start is then discarded as outdated and the partition stays assigned but never
 * fetched (every seek answers _STATE). Seen in CI after wd_consumer_reassign paused and released
 * partitions right after rd_kafka_assign (rebuild/second_change_while_a_per_partition_rebuild_
 * is_unfinished). Clears the per-partition errors; returns true when some partition was not known
 * to librdkafka yet (it is paused or resumed after the assignment instead). */
static bool wd_consumer_set_pause_state(wd_consumer_t *c, rd_kafka_topic_partition_list_t *list, bool pause) {
  if (pause) rd_kafka_pause_partitions(c->rk, list);
  else rd_kafka_resume_partitions(c->rk, list);
  bool late = false;
  for (int i = 0; i < list->cnt; i++) {
    if (list->elems[i].err) late = true;
    list->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  return late;
}

/* Sets every partition's starting offset through on_assign and assigns them (incremental: adds
 * them to the current assignment, assign mode). Poll thread. */
static rd_kafka_resp_err_t wd_consumer_assign_parts(wd_consumer_t *c, rd_kafka_topic_partition_list_t *parts,
                                                    bool incremental) {
  char summary[512];
  size_t len = 0;
  summary[0] = 0;
  if (c->holds) { /* a rebalance clears the holds (wd_consumer_hold_partition) */
    rd_kafka_topic_partition_list_destroy(c->holds);
    c->holds = NULL;
  }
  bool hold = false; /* every partition assigned paused until released (on_assign_all) */
  if (c->on_assign_all && parts->cnt > 0) {
    wd_tp_offset_t *arr = calloc((size_t)parts->cnt, sizeof(*arr));
    if (arr) {
      for (int i = 0; i < parts->cnt; i++) {
        const char *t = wd_consumer_topic(c, parts->elems[i].topic);
        arr[i].topic = t ? t : parts->elems[i].topic;
        arr[i].partition = parts->elems[i].partition;
        arr[i].offset = -1;
      }
      hold = c->on_assign_all(c->ctx, arr, (size_t)parts->cnt);
      free(arr);
    } else {
      wd_log(WD_LOG_ERROR, "ingest", "out of memory in the assign callback: on_assign_all not called");
    }
  }
  for (int i = 0; i < parts->cnt; i++) {
    rd_kafka_topic_partition_t *tp = &parts->elems[i];
    int64_t off = c->on_assign ? c->on_assign(c->ctx, tp->topic, tp->partition) : WD_OFFSET_STORED;
    tp->offset = wd_consumer_start_offset(c, off, tp->topic, tp->partition);
    char where[32];
    wd_consumer_describe_offset(tp->offset, where, sizeof(where));
    wd_log(WD_LOG_DEBUG, "ingest", "assigned %s [%" PRId32 "] starting at %s", tp->topic, tp->partition, where);
    if (len < sizeof(summary) - 1) {
      int k = snprintf(summary + len, sizeof(summary) - len, "%s%s[%" PRId32 "]@%s", i ? ", " : "", tp->topic,
                       tp->partition, where);
      len = k < 0 ? sizeof(summary) - 1 : len + (size_t)k;
      if (len >= sizeof(summary) - 1) memcpy(summary + sizeof(summary) - 5, "...", 4);
    }
  }
  wd_log(WD_LOG_INFO, "ingest", "assigned %d partition(s): %s", parts->cnt, summary);
  /* the pause state is set before the assignment, not after it (wd_consumer_set_pause_state) */
  bool late = wd_consumer_set_pause_state(c, parts, hold);
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (incremental) {
    rd_kafka_error_t *e = rd_kafka_incremental_assign(c->rk, parts);
    if (e) {
      err = rd_kafka_error_code(e);
      rd_kafka_error_destroy(e);
    }
  } else {
    err = rd_kafka_assign(c->rk, parts);
  }
  if (err) {
    wd_log(WD_LOG_ERROR, "ingest", "assign of %d partitions failed: %s", parts->cnt, rd_kafka_err2str(err));
  } else if (hold) { /* held until the caller releases each partition (outside this callback) */
    for (int i = 0; i < parts->cnt; i++) /* out of memory: not noted; each is still released by the caller */
      if (!wd_consumer_note_hold(c, parts->elems[i].topic, parts->elems[i].partition, true)) break;
    if (late) rd_kafka_pause_partitions(c->rk, parts); /* a partition librdkafka did not know before */
    wd_log(WD_LOG_DEBUG, "ingest", "the %d assigned partition(s) wait paused until their tasks are initialised",
           parts->cnt);
  } else if (late) {
    rd_kafka_resume_partitions(c->rk, parts); /* a new assignment starts fetching */
  }
  c->paused = false;
  c->lag_at_ms = 0;
  c->generation++;
  if (!err) c->nassigned = incremental ? c->nassigned + parts->cnt : parts->cnt;
  if (!err && c->group_mode && !incremental) c->verify_assignment = true;
  c->last_event = 1;
  return err;
}

/* Drops the held records (wd_consumer_serve) of the revoked partitions. */
static void wd_consumer_drop_held(wd_consumer_t *c, const rd_kafka_topic_partition_list_t *parts) {
  size_t keep = 0;
  for (size_t i = 0; i < c->nheld; i++) {
    rd_kafka_message_t *m = c->held[i];
    if (!parts || rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(m->rkt), m->partition)) {
      rd_kafka_message_destroy(m);
      continue;
    }
    c->held[keep++] = m;
  }
  c->nheld = keep;
}

/* Drops the messages of the revoked partitions from the batch being filled. */
static void wd_consumer_drop_revoked(wd_consumer_t *c, const rd_kafka_topic_partition_list_t *parts) {
  wd_consumer_drop_held(c, parts);
  if (c->holds) { /* a rebalance clears the holds (wd_consumer_hold_partition) */
    rd_kafka_topic_partition_list_destroy(c->holds);
    c->holds = NULL;
  }
  if (!c->batch) return;
  size_t keep = 0, dropped = 0;
  for (size_t i = 0; i < *c->batch_n; i++) {
    wd_kmsg_t *m = &c->batch[i];
    if (rd_kafka_topic_partition_list_find(parts, m->topic, m->partition)) {
      wd_kmsg_release(m, 1);
      dropped++;
      continue;
    }
    if (keep != i) c->batch[keep] = *m;
    keep++;
  }
  *c->batch_n = keep;
  if (dropped) wd_log(WD_LOG_DEBUG, "ingest", "dropped %zu polled messages of revoked partitions", dropped);
}

static void wd_consumer_revoke_parts(wd_consumer_t *c, rd_kafka_topic_partition_list_t *parts) {
  bool lost = rd_kafka_assignment_lost(c->rk) != 0;
  wd_tp_offset_t *arr = NULL;
  if (c->closed) /* wd_consumer_close: the process stops, no rebalance to report */
    wd_log(WD_LOG_DEBUG, "ingest", "released %d partitions at close", parts->cnt);
  else wd_log(lost ? WD_LOG_WARN : WD_LOG_INFO, "ingest", "%s %d partitions", lost ? "lost" : "revoked", parts->cnt);
  wd_consumer_drop_revoked(c, parts);
  if (c->on_revoke) {
    rd_kafka_position(c->rk, parts);
    arr = calloc(parts->cnt ? (size_t)parts->cnt : 1, sizeof(*arr));
    if (!arr) {
      wd_log(WD_LOG_ERROR, "ingest", "out of memory in the revoke callback: on_revoke gets no partitions");
      c->on_revoke(c->ctx, NULL, 0, lost);
    } else {
      for (int i = 0; i < parts->cnt; i++) {
        const char *t = wd_consumer_topic(c, parts->elems[i].topic);
        arr[i].topic = t ? t : parts->elems[i].topic;
        arr[i].partition = parts->elems[i].partition;
        arr[i].offset = parts->elems[i].offset >= 0 ? parts->elems[i].offset : -1;
      }
      c->on_revoke(c->ctx, arr, (size_t)parts->cnt, lost);
    }
  }
  rd_kafka_resp_err_t err = rd_kafka_assign(c->rk, NULL);
  if (err) wd_log(WD_LOG_ERROR, "ingest", "unassign failed: %s", rd_kafka_err2str(err));
  c->lag_at_ms = 0;
  c->generation++;
  c->nassigned = 0;
  c->last_event = 2;
  free(arr);
}

/* librdkafka's rebalance callback (eager protocol). Runs on the poll thread. */
static void wd_consumer_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                                     void *opaque) {
  wd_consumer_t *c = opaque;
  (void)rk;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    wd_consumer_assign_parts(c, parts, false);
  } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    wd_consumer_revoke_parts(c, parts);
  } else {
    wd_log(WD_LOG_ERROR, "ingest", "rebalance error: %s", rd_kafka_err2str(err));
    rd_kafka_assign(c->rk, NULL);
  }
}

/* librdkafka's statistics (statistics.interval.ms > 0): served by the polls, on the consumer's thread. */
static int wd_consumer_stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
  (void)rk;
  wd_consumer_t *c = opaque;
  if (wd_kafka_stats_parse(json, len, &c->stats))
    wd_log(WD_LOG_DEBUG, "ingest", "librdkafka's statistics could not be read (%zu bytes)", len);
  return 0; /* librdkafka frees json */
}

const wd_kafka_stats_t *wd_consumer_stats(const wd_consumer_t *c) { return c->stats.at_ms ? &c->stats : NULL; }

static void wd_consumer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  wd_consumer_t *c = opaque;
  if (wd_kafka_on_error(rk, err, reason, "ingest", &c->waiting)) c->fatal = true;
}

/* Marks topic i as missing (logged once) or present again. */
static void wd_consumer_set_missing(wd_consumer_t *c, size_t i, bool missing) {
  if (!c->missing || c->missing[i] == missing) return;
  c->missing[i] = missing;
  if (missing) {
    c->nmissing++;
    c->missing_check_at_ms = wd_mono_ms() + WD_MISSING_CHECK_MS;
    wd_log(WD_LOG_WARN, "ingest", "topic %s does not exist yet; waiting", c->topics[i]);
  } else {
    c->nmissing--;
    wd_log(WD_LOG_INFO, "ingest", "topic %s exists now", c->topics[i]);
  }
}

/* Fills list with every partition of every topic (offset RD_KAFKA_OFFSET_INVALID), from one
 * metadata request per topic; retries topics without partitions (leader election) for up to
 * timeout_ms. skip_missing: a topic that does not exist is marked missing (wd_consumer_set_missing)
 * and left out instead of failing with E_KAFKA_UNKNOWN_TOPIC. */
static wd_error_t *wd_consumer_partitions_of(wd_consumer_t *c, int timeout_ms, bool skip_missing,
                                             rd_kafka_topic_partition_list_t *list) {
  wd_error_t *err = NULL;
  rd_kafka_topic_t *rkt = NULL;
  const struct rd_kafka_metadata *md = NULL;
  int64_t deadline = wd_mono_ms() + timeout_ms;
  for (size_t i = 0; i < c->ntopics; i++) {
    if (!(rkt = rd_kafka_topic_new(c->rk, c->topics[i], NULL))) {
      err = wd_kafka_error(c->rk, rd_kafka_last_error(), E_KAFKA, "topic handle for '%s'", c->topics[i]);
      goto cleanup;
    }
    for (;;) {
      int64_t left = deadline - wd_mono_ms();
      /* one request waits at most WD_METADATA_TIMEOUT_MS: a longer timeout_ms is spent in retries
       * (a broker away makes a request time out; the loop below asks again, or waits for the
       * topic as a missing one) */
      int64_t wait = left > WD_METADATA_TIMEOUT_MS ? WD_METADATA_TIMEOUT_MS : left;
      rd_kafka_resp_err_t rerr = rd_kafka_metadata(c->rk, 0, rkt, &md, (int)(wait > 1000 ? wait : 1000));
      if (rerr && skip_missing &&
          (rerr == RD_KAFKA_RESP_ERR__TRANSPORT || rerr == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
           rerr == RD_KAFKA_RESP_ERR__TIMED_OUT) &&
          c->missing && !c->missing[i]) {
        /* no broker answers (the log bridge says "cannot reach HOST:PORT ...; retrying"): the
         * topic is waited for as a missing one (wd_consumer_check_missing), not given up on */
        c->missing[i] = true;
        c->nmissing++;
        c->missing_check_at_ms = wd_mono_ms() + WD_MISSING_CHECK_MS;
        wd_log(WD_LOG_DEBUG, "ingest", "metadata of topic %s: no broker answers; waiting", c->topics[i]);
        break;
      }
      if (rerr) {
        err = wd_kafka_error(c->rk, rerr, E_KAFKA_METADATA, "metadata of topic '%s'", c->topics[i]);
        if (err->retriable && wd_mono_ms() < deadline) { /* a broker restarting: asked again */
          wd_log(WD_LOG_DEBUG, "ingest", "%s; retrying", err->message);
          wd_error_destroy(err);
          err = NULL;
          usleep(200 * 1000);
          continue;
        }
        goto cleanup;
      }
      const struct rd_kafka_metadata_topic *mt = md->topic_cnt == 1 ? &md->topics[0] : NULL;
      if (mt && mt->partition_cnt > 0) {
        for (int p = 0; p < mt->partition_cnt; p++)
          rd_kafka_topic_partition_list_add(list, c->topics[i], mt->partitions[p].id)->offset = RD_KAFKA_OFFSET_INVALID;
        break;
      }
      rd_kafka_resp_err_t terr = mt ? mt->err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      if (skip_missing && terr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        wd_consumer_set_missing(c, i, true);
        break;
      }
      if (terr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || terr == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
          wd_mono_ms() >= deadline) {
        err = wd_kafka_error_make(c->rk, terr,
                                  terr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ? WD_EID_E_KAFKA_UNKNOWN_TOPIC
                                                                                  : WD_EID_E_KAFKA_METADATA,
                                  "topic '%s' has no partitions", c->topics[i]);
        goto cleanup;
      }
      rd_kafka_metadata_destroy(md);
      md = NULL;
      usleep(200 * 1000);
    }
    rd_kafka_metadata_destroy(md);
    md = NULL;
    rd_kafka_topic_destroy(rkt);
    rkt = NULL;
  }
cleanup:
  if (md) rd_kafka_metadata_destroy(md);
  if (rkt) rd_kafka_topic_destroy(rkt);
  return err;
}

static wd_error_t *wd_consumer_partitions(wd_consumer_t *c, int timeout_ms, rd_kafka_topic_partition_list_t *list) {
  return wd_consumer_partitions_of(c, timeout_ms, false, list);
}

wd_error_t *wd_consumer_new(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                            wd_consumer_assign_cb on_assign, void *ctx, wd_consumer_t **out) {
  return wd_consumer_new_ex(conf, topics, ntopics, on_assign, ctx, 0, out);
}

wd_error_t *wd_consumer_new_ex(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                               wd_consumer_assign_cb on_assign, void *ctx, unsigned flags, wd_consumer_t **out) {
  static const wd_kafka_kv_t defaults[] = {{"auto.offset.reset", "earliest"},
                                           {"isolation.level", "read_committed"},
                                           {"reconnect.backoff.max.ms", "1000"},
                                           {NULL, NULL}};
  static const wd_kafka_kv_t fixed[] = {
      {"enable.auto.commit", "false"}, {"enable.auto.offset.store", "false"}, {NULL, NULL}};
  wd_error_t *err = NULL;
  wd_consumer_t *c = NULL;
  rd_kafka_conf_t *rconf = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  char errstr[512];
  *out = NULL;

  if (ntopics == 0) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_TOPIC, "a consumer needs at least one topic");
    goto cleanup;
  }
  const char *strategy = wd_kafka_conf_get(conf, "partition.assignment.strategy");
  if (strategy && strstr(strategy, "cooperative")) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                       "Kafka property 'partition.assignment.strategy' = '%s': the cooperative protocol is not "
                       "supported (use range or roundrobin)",
                       strategy);
    goto cleanup;
  }
  if (!(c = calloc(1, sizeof(*c))) || !(c->topics = calloc(ntopics, sizeof(*c->topics))) ||
      !(c->missing = calloc(ntopics, sizeof(*c->missing))) || !(c->rejoined = calloc(ntopics, sizeof(*c->rejoined)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < ntopics; i++) {
    if (!topics[i] || !*topics[i]) {
      err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_TOPIC, "topic %zu of the consumer has an empty name", i);
      goto cleanup;
    }
    if (!(c->topics[i] = strdup(topics[i]))) {
      err = wd_error_nomem();
      goto cleanup;
    }
    c->ntopics++;
  }
  c->group_mode = conf->group_id != NULL;
  c->wait_for_topics = (flags & WD_CONSUMER_WAIT_FOR_TOPICS) != 0;
  c->one_try = (flags & WD_CONSUMER_ONE_TRY) != 0;
  c->on_assign = on_assign;
  c->ctx = ctx;
  const char *reset = wd_kafka_conf_get(conf, "auto.offset.reset");
  c->reset_offset =
      (reset && (!strcasecmp(reset, "latest") || !strcasecmp(reset, "largest") || !strcasecmp(reset, "end")))
          ? RD_KAFKA_OFFSET_END
          : RD_KAFKA_OFFSET_BEGINNING;

  if ((err = wd_kafka_conf_build(conf, defaults, fixed, &rconf))) goto cleanup;
  if (!c->group_mode) {
    /* librdkafka 2.0.2's consumer_poll needs a group even for assign(): a private one, never
     * joined nor committed to. */
    char gid[96];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(gid, sizeof(gid), "widen-assign-%ld-%lld%09ld", (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
    if (rd_kafka_conf_set(rconf, "group.id", gid, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      err = wd_error_new(WD_ERR_INTERNAL, NONE, "group.id: %s", errstr);
      goto cleanup;
    }
  } else {
    rd_kafka_conf_set_rebalance_cb(rconf, wd_consumer_rebalance_cb);
  }
  rd_kafka_conf_set_error_cb(rconf, wd_consumer_error_cb);
  rd_kafka_conf_set_stats_cb(rconf, wd_consumer_stats_cb);
  rd_kafka_conf_set_opaque(rconf, c);
  if (!(c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, rconf, errstr, sizeof(errstr)))) {
    err = wd_error_new(WD_ERR_KAFKA, E_KAFKA, "cannot create the Kafka consumer: %s", errstr);
    goto cleanup;
  }
  rconf = NULL; /* owned by c->rk now */
  if ((err = wd_kafka_check_connect(c->rk, WD_METADATA_TIMEOUT_MS, "ingest", &c->waiting))) goto cleanup;
  rd_kafka_poll_set_consumer(c->rk);

  if (!(list = rd_kafka_topic_partition_list_new((int)ntopics))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if (c->group_mode) {
    /* the subscription (and so the group join) starts with the first poll: until then requests to
     * the group coordinator (wd_consumer_committed during recovery) do not queue behind a
     * JoinGroup that waits for a dead member's session to expire */
    if (!(c->group_id = strdup(conf->group_id))) {
      err = wd_error_nomem();
      goto cleanup;
    }
  } else {
    if ((err = wd_consumer_partitions_of(c, c->one_try ? WD_METADATA_TIMEOUT_MS : WD_METADATA_RETRY_MS,
                                         c->wait_for_topics, list)))
      goto cleanup;
    if (list->cnt && wd_consumer_assign_parts(c, list, false)) {
      err = wd_error_new(WD_ERR_KAFKA, E_KAFKA, "assign of %d partitions failed", list->cnt);
      goto cleanup;
    }
  }
  *out = c;
  c = NULL;
cleanup:
  if (list) rd_kafka_topic_partition_list_destroy(list);
  if (rconf) rd_kafka_conf_destroy(rconf);
  wd_consumer_destroy(c);
  return err;
}

void wd_consumer_set_revoke_cb(wd_consumer_t *c, wd_consumer_revoke_cb on_revoke) { c->on_revoke = on_revoke; }

void wd_consumer_set_assign_all_cb(wd_consumer_t *c, wd_consumer_assign_all_cb on_assign_all) {
  c->on_assign_all = on_assign_all;
}

void wd_kmsg_release(wd_kmsg_t *msgs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (msgs[i].rkm) rd_kafka_message_destroy(msgs[i].rkm);
    memset(&msgs[i], 0, sizeof(msgs[i]));
  }
}

int wd_kmsg_header(const wd_kmsg_t *m, size_t i, const char **name, const void **value, size_t *len) {
  rd_kafka_headers_t *h = NULL;
  if (!m->rkm || rd_kafka_message_headers(m->rkm, &h) || !h) return -1;
  return rd_kafka_header_get_all(h, i, name, value, len) ? -1 : 0;
}

/* Fills m from rkm, which m then owns (released by wd_kmsg_release). */
static void wd_kmsg_wrap(wd_kmsg_t *m, rd_kafka_message_t *rkm) {
  m->topic = rd_kafka_topic_name(rkm->rkt);
  m->partition = rkm->partition;
  m->offset = rkm->offset;
  m->timestamp = rd_kafka_message_timestamp(rkm, NULL);
  m->key = rkm->key;
  m->key_len = rkm->key_len;
  m->value = rkm->payload;
  m->value_len = rkm->len;
  m->rkm = rkm;
}

/* Group mode: starts the subscription once (the first poll). */
static wd_error_t *wd_consumer_subscribe(wd_consumer_t *c) {
  if (!c->group_mode || c->subscribed) return NULL;
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)c->ntopics);
  if (!list) return wd_error_nomem();
  for (size_t i = 0; i < c->ntopics; i++) rd_kafka_topic_partition_list_add(list, c->topics[i], RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t rerr = rd_kafka_subscribe(c->rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (rerr) return wd_kafka_error(c->rk, rerr, E_KAFKA, "subscribe to %zu topics", c->ntopics);
  c->subscribed = true;
  wd_log(WD_LOG_INFO, "ingest", "subscribed to %zu topics in group '%s'", c->ntopics, c->group_id);
  return NULL;
}

/* While a topic is missing: every WD_MISSING_CHECK_MS one metadata request for the whole
 * cluster. In group mode, librdkafka's group re-checks its subscription against the answer (a
 * request for all topics updates the group: rd_kafka_metadata) and rejoins with a topic that
 * appeared; in assign mode the new topic's partitions are added to the assignment. */
static void wd_consumer_check_missing(wd_consumer_t *c) {
  if (!c->nmissing || c->closed || wd_mono_ms() < c->missing_check_at_ms) return;
  c->missing_check_at_ms = wd_mono_ms() + WD_MISSING_CHECK_MS;
  const struct rd_kafka_metadata *md = NULL;
  if (rd_kafka_metadata(c->rk, 1, NULL, &md, 2000) || !md) return;
  rd_kafka_topic_partition_list_t *add = c->group_mode ? NULL : rd_kafka_topic_partition_list_new(8);
  for (size_t i = 0; i < c->ntopics; i++) {
    if (!c->missing[i]) continue;
    for (int t = 0; t < md->topic_cnt; t++) {
      const struct rd_kafka_metadata_topic *mt = &md->topics[t];
      if (strcmp(mt->topic, c->topics[i]) || mt->err || mt->partition_cnt <= 0) continue;
      wd_consumer_set_missing(c, i, false);
      for (int p = 0; add && p < mt->partition_cnt; p++)
        rd_kafka_topic_partition_list_add(add, c->topics[i], mt->partitions[p].id)->offset = RD_KAFKA_OFFSET_INVALID;
      break;
    }
  }
  rd_kafka_metadata_destroy(md);
  if (add && add->cnt) wd_consumer_assign_parts(c, add, true);
  if (add) rd_kafka_topic_partition_list_destroy(add);
}

/* Whether a member's assignment in the group's description (Kafka's ConsumerProtocolAssignment:
 * int16 version, int32 topic count, per topic an int16-length name and an int32 count of int32
 * partitions, then user data) has a partition of topic. A truncated buffer answers false. */
static bool wd_member_assignment_has(const unsigned char *b, int size, const char *topic) {
  size_t n = size > 0 ? (size_t)size : 0, at = 2, tlen = strlen(topic);
  if (n < 6) return false;
  uint32_t ntopics = (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3];
  at += 4;
  for (uint32_t t = 0; t < ntopics; t++) {
    if (n - at < 2) return false;
    size_t len = (size_t)b[at] << 8 | b[at + 1];
    at += 2;
    if (n - at < len + 4) return false;
    bool same = len == tlen && !memcmp(b + at, topic, len);
    at += len;
    uint32_t nparts = (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3];
    at += 4;
    if (same && nparts > 0) return true;
    if ((n - at) / 4 < nparts) return false;
    at += (size_t)nparts * 4;
  }
  return false;
}

/* Group mode, once after each assignment (outside the rebalance callback): a subscribed topic
 * that exists but has no partition in this member's assignment. A static member (KIP-345,
 * group.instance.id) that rejoins within session.timeout.ms gets its previous assignment back
 * without a rebalance, and its librdkafka does not rejoin for a topic that exists at its first
 * metadata answer: a topic created while the process was down is then never assigned (the
 * group's leader reassigns only when it sees the subscribed topics' metadata change; a rejoin
 * with the same member id and subscription rebalances nothing unless that member is the leader).
 * The consumer then leaves the group and joins it again: rd_kafka_unsubscribe revokes the
 * assignment and sends LeaveGroup once it is unassigned (a static member leaves on an
 * unsubscribe, only not on close), the broker rebalances the group, and the next poll subscribes
 * again (librdkafka applies that subscription after the leave) as a new member, which the new
 * assignment, made with the new topic, includes (rd_kafka_enforce_rebalance is not in librdkafka
 * 2.0.2). Another member may legitimately hold every partition of a topic (more members than
 * partitions): the group's description (DescribeGroups, rd_kafka_list_groups) tells, and a group
 * in the middle of a rebalance is left to it (its next assignment is checked again). A rejoin is
 * forced at most once per topic; after it a topic still missing from the group's assignment is
 * logged as a warning. */
static void wd_consumer_check_assignment(wd_consumer_t *c) {
  if (!c->verify_assignment || c->closed || !c->subscribed) return;
  c->verify_assignment = false;
  rd_kafka_topic_partition_list_t *assigned = NULL;
  const struct rd_kafka_metadata *md = NULL;
  const struct rd_kafka_group_list *group = NULL;
  rd_kafka_resp_err_t rerr = rd_kafka_assignment(c->rk, &assigned);
  if (!rerr) rerr = rd_kafka_metadata(c->rk, 1, NULL, &md, 5000);
  if (rerr || !md) {
    wd_log(WD_LOG_DEBUG, "ingest", "assignment not compared with the subscription: %s", rd_kafka_err2str(rerr));
    goto cleanup;
  }
  bool rejoin = false;
  for (size_t i = 0; i < c->ntopics; i++) {
    bool exists = false, held = false;
    for (int t = 0; t < md->topic_cnt && !exists; t++) {
      const struct rd_kafka_metadata_topic *mt = &md->topics[t];
      exists = !strcmp(mt->topic, c->topics[i]) && !mt->err && mt->partition_cnt > 0;
    }
    for (int k = 0; k < assigned->cnt && !held; k++) held = !strcmp(assigned->elems[k].topic, c->topics[i]);
    if (!exists || held) continue;
    if (!group) { /* asked once, for the first topic not held here */
      rerr = rd_kafka_list_groups(c->rk, c->group_id, &group, 5000);
      if (rerr || !group || group->group_cnt != 1) {
        wd_log(WD_LOG_DEBUG, "ingest", "group '%s' not described (%s): this member's assignment alone is compared",
               c->group_id, rd_kafka_err2str(rerr));
      } else if (strcmp(group->groups[0].state, "Stable")) {
        wd_log(WD_LOG_DEBUG, "ingest", "group '%s' is %s: its next assignment is compared", c->group_id,
               group->groups[0].state);
        c->verify_assignment = false;
        goto cleanup;
      }
    }
    if (group && !rerr && group->group_cnt == 1) {
      const struct rd_kafka_group_info *gi = &group->groups[0];
      for (int m = 0; m < gi->member_cnt && !held; m++)
        held = wd_member_assignment_has(gi->members[m].member_assignment, gi->members[m].member_assignment_size,
                                        c->topics[i]);
      if (held) continue;
    }
    if (c->rejoined[i]) {
      wd_log(WD_LOG_WARN, "ingest", "topic %s: still no partition assigned in group '%s' after a rejoin", c->topics[i],
             c->group_id);
      continue;
    }
    wd_log(WD_LOG_WARN, "ingest",
           "topic %s exists but has no partition in this member's assignment (a static member rejoining within "
           "session.timeout.ms keeps its previous assignment, made before the topic existed); rejoining group '%s'",
           c->topics[i], c->group_id);
    c->rejoined[i] = true;
    rejoin = true;
  }
  if (rejoin) {
    rd_kafka_resp_err_t uerr = rd_kafka_unsubscribe(c->rk); /* revokes, then leaves the group */
    if (uerr) wd_log(WD_LOG_ERROR, "ingest", "leaving group '%s' failed: %s", c->group_id, rd_kafka_err2str(uerr));
    else c->subscribed = false; /* the next poll subscribes again */
  }
cleanup:
  if (group) rd_kafka_group_list_destroy(group);
  if (md) rd_kafka_metadata_destroy(md);
  if (assigned) rd_kafka_topic_partition_list_destroy(assigned);
}

/* A consumer error that waiting does not cure. */
static bool wd_consumer_err_permanent(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED || err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
         err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET || err == RD_KAFKA_RESP_ERR__FATAL ||
         err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED || err == RD_KAFKA_RESP_ERR__AUTHENTICATION;
}

/* The body of both polls: available = return as soon as the fetched queue is empty once a
 * message is in hand (wd_consumer_poll_available), else wait for max or the deadline. */
static wd_error_t *poll_batch(wd_consumer_t *c, size_t max, int timeout_ms, bool available, wd_kmsg_t *msgs,
                              size_t *n) {
  wd_error_t *err = NULL;
  rd_kafka_message_t *rkm = NULL;
  int64_t deadline = wd_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  *n = 0;
  if ((err = wd_consumer_subscribe(c))) {
    *n = 0;
    return err;
  }
  c->batch = msgs;
  c->batch_n = n;
  size_t from_held = 0;
  while (*n < max && from_held < c->nheld) wd_kmsg_wrap(&msgs[(*n)++], c->held[from_held++]);
  if (from_held) {
    memmove(c->held, c->held + from_held, (c->nheld - from_held) * sizeof(*c->held));
    c->nheld -= from_held;
  }
  while (*n < max) {
    if (c->fatal) {
      err = wd_kafka_error(c->rk, RD_KAFKA_RESP_ERR__FATAL, E_KAFKA_FATAL, "consumer");
      goto cleanup;
    }
    wd_consumer_check_missing(c);
    wd_consumer_check_assignment(c);
    int64_t left = deadline - wd_mono_ms();
    bool have = available && *n > 0; /* take what is fetched, wait for nothing more */
    rkm = rd_kafka_consumer_poll(c->rk, left > 0 && !have ? (int)left : 0);
    if (!rkm) {
      if (left <= 0 || have) break;
      continue;
    }
    if (rkm->err) {
      const char *topic = rkm->rkt ? rd_kafka_topic_name(rkm->rkt) : NULL;
      if (rkm->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        wd_log(WD_LOG_DEBUG, "ingest", "end of %s [%" PRId32 "] at offset %" PRId64, topic ? topic : "?",
               rkm->partition, rkm->offset);
      } else if (wd_consumer_err_permanent(rkm->err)) {
        err = wd_kafka_error_make(c->rk, rkm->err,
                                  rkm->err == RD_KAFKA_RESP_ERR__FATAL ? WD_EID_E_KAFKA_FATAL : WD_EID_E_KAFKA,
                                  "consumer error on %s [%" PRId32 "]: %s", topic ? topic : "-", rkm->partition,
                                  rd_kafka_message_errstr(rkm));
        goto cleanup;
      } else if (rkm->err == RD_KAFKA_RESP_ERR__TRANSPORT || rkm->err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
                 rkm->err == RD_KAFKA_RESP_ERR__RESOLVE) {
        wd_kafka_on_error(c->rk, rkm->err, rd_kafka_message_errstr(rkm), "ingest", &c->waiting);
      } else if (rkm->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && topic &&
                 wd_consumer_topic(c, topic)) { /* a subscribed topic that does not exist (yet) */
        wd_consumer_set_missing(c, wd_topic_index(c, wd_consumer_topic(c, topic)), true);
      } else {
        wd_log(c->last_err == rkm->err ? WD_LOG_DEBUG : WD_LOG_WARN, "ingest", "consumer error on %s [%" PRId32 "]: %s",
               topic ? topic : "-", rkm->partition, rd_kafka_message_errstr(rkm));
        c->last_err = rkm->err;
      }
      rd_kafka_message_destroy(rkm);
      rkm = NULL;
      continue;
    }
    wd_kafka_broker_ok("ingest", &c->waiting);
    c->last_err = 0;
    wd_kmsg_wrap(&msgs[(*n)++], rkm);
    rkm = NULL;
  }
cleanup:
  if (rkm) rd_kafka_message_destroy(rkm);
  if (err) {
    wd_kmsg_release(msgs, *n);
    *n = 0;
  }
  c->batch = NULL;
  c->batch_n = NULL;
  return err;
}

wd_error_t *wd_consumer_poll_batch(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n) {
  return poll_batch(c, max, timeout_ms, false, msgs, n);
}

wd_error_t *wd_consumer_poll_available(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n) {
  return poll_batch(c, max, timeout_ms, true, msgs, n);
}

wd_error_t *wd_consumer_commit(wd_consumer_t *c, const wd_tp_offset_t *offsets, size_t n) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  if (n == 0) goto cleanup;
  if (!c->group_mode) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_GROUP, "cannot commit offsets: the consumer has no group");
    goto cleanup;
  }
  if (!(list = rd_kafka_topic_partition_list_new((int)n))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < n; i++)
    rd_kafka_topic_partition_list_add(list, offsets[i].topic, offsets[i].partition)->offset = offsets[i].offset;
  rd_kafka_resp_err_t rerr = rd_kafka_commit(c->rk, list, 0);
  if (rerr && rerr != RD_KAFKA_RESP_ERR__NO_OFFSET) {
    err = wd_kafka_error(c->rk, rerr, E_KAFKA_COMMIT, "commit of %zu offsets", n);
    goto cleanup;
  }
  for (int i = 0; i < list->cnt; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    if (tp->err) {
      err = wd_kafka_error(c->rk, tp->err, E_KAFKA_COMMIT, "commit of %s [%" PRId32 "] at %" PRId64, tp->topic,
                           tp->partition, tp->offset);
      goto cleanup;
    }
  }
cleanup:
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_committed(wd_consumer_t *c, wd_tp_offset_t *offsets, size_t n, int timeout_ms) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  if (n == 0) goto cleanup;
  if (!c->group_mode) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_GROUP, "cannot read committed offsets: the consumer has no group");
    goto cleanup;
  }
  if (!(list = rd_kafka_topic_partition_list_new((int)n))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < n; i++) rd_kafka_topic_partition_list_add(list, offsets[i].topic, offsets[i].partition);
  int64_t deadline = wd_mono_ms() + timeout_ms;
  for (;;) {
    int64_t left = deadline - wd_mono_ms();
    rd_kafka_resp_err_t rerr = rd_kafka_committed(c->rk, list, (int)(left > 100 ? left : 100));
    if (!rerr) break;
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "reading %zu committed offsets", n);
    /* NOT_COORDINATOR and friends answer at once while the group's coordinator moves (a broker
     * restart): asked again until timeout_ms has passed, not given up on the first answer */
    if (!err->retriable || wd_mono_ms() + 200 >= deadline) goto cleanup;
    wd_log(WD_LOG_DEBUG, "ingest", "%s; retrying", err->message);
    wd_error_destroy(err);
    err = NULL;
    usleep(200 * 1000);
  }
  for (size_t i = 0; i < n; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    if (tp->err) {
      err = wd_kafka_error(c->rk, tp->err, E_KAFKA, "committed offset of %s [%" PRId32 "]", tp->topic, tp->partition);
      goto cleanup;
    }
    offsets[i].offset = tp->offset >= 0 ? tp->offset : -1;
  }
cleanup:
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

int64_t wd_consumer_lag(wd_consumer_t *c) {
  rd_kafka_topic_partition_list_t *list = NULL;
  int64_t now = wd_mono_ms();
  if (c->lag_at_ms && now - c->lag_at_ms < 1000) return c->lag;
  int64_t lag = 0;
  if (rd_kafka_assignment(c->rk, &list) || !list) goto cleanup;
  rd_kafka_position(c->rk, list);
  for (int i = 0; i < list->cnt; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    int64_t lo = -1, hi = -1;
    if (tp->offset < 0) continue;
    if (rd_kafka_get_watermark_offsets(c->rk, tp->topic, tp->partition, &lo, &hi) || hi < 0) continue;
    if (hi > tp->offset) lag += hi - tp->offset;
  }
  c->lag = lag;
  c->lag_at_ms = now;
cleanup:
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return lag;
}

wd_error_t *wd_consumer_lags(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n) {
  rd_kafka_topic_partition_list_t *list = NULL;
  *out = NULL;
  *n = 0;
  if (rd_kafka_assignment(c->rk, &list) || !list) return wd_error_new(WD_ERR_KAFKA, E_KAFKA, "reading the assignment");
  rd_kafka_position(c->rk, list);
  wd_tp_offset_t *arr = calloc(list->cnt ? (size_t)list->cnt : 1, sizeof(*arr));
  if (!arr) {
    rd_kafka_topic_partition_list_destroy(list);
    return wd_error_nomem();
  }
  size_t k = 0;
  for (int i = 0; i < list->cnt; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    const char *topic = wd_consumer_topic(c, tp->topic);
    int64_t lo = -1, hi = -1;
    if (!topic || tp->offset < 0) continue;
    if (rd_kafka_get_watermark_offsets(c->rk, tp->topic, tp->partition, &lo, &hi) || hi < 0) continue;
    arr[k++] = (wd_tp_offset_t){topic, tp->partition, hi > tp->offset ? hi - tp->offset : 0};
  }
  rd_kafka_topic_partition_list_destroy(list);
  *out = arr;
  *n = k;
  return NULL;
}

/* Whether a sorts before b: by the topic's position in c's list, then by partition. */
static bool wd_tp_before(const wd_consumer_t *c, const wd_tp_offset_t *a, const wd_tp_offset_t *b) {
  size_t ia = wd_topic_index(c, a->topic), ib = wd_topic_index(c, b->topic);
  return ia != ib ? ia < ib : a->partition < b->partition;
}

wd_error_t *wd_consumer_end_offsets(wd_consumer_t *c, int timeout_ms, wd_tp_offset_t **out, size_t *n) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  wd_tp_offset_t *arr = NULL;
  *out = NULL;
  *n = 0;
  if (!(list = rd_kafka_topic_partition_list_new(16))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if ((err = wd_consumer_partitions(c, timeout_ms, list))) goto cleanup;
  int64_t deadline = wd_mono_ms() + timeout_ms;
  for (;;) {
    for (int i = 0; i < list->cnt; i++) list->elems[i].offset = RD_KAFKA_OFFSET_END; /* ListOffsets "latest" */
    int64_t left = deadline - wd_mono_ms();
    rd_kafka_resp_err_t rerr = rd_kafka_offsets_for_times(c->rk, list, (int)(left > 100 ? left : 100));
    if (!rerr) break;
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "end offsets of %d partitions", list->cnt);
    /* NOT_LEADER_FOR_PARTITION while leaders move (a broker restart): asked again until
     * timeout_ms has passed */
    if (!err->retriable || wd_mono_ms() + 200 >= deadline) goto cleanup;
    wd_log(WD_LOG_DEBUG, "ingest", "%s; retrying", err->message);
    wd_error_destroy(err);
    err = NULL;
    usleep(200 * 1000);
  }
  if (!(arr = calloc(list->cnt ? (size_t)list->cnt : 1, sizeof(*arr)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (int i = 0; i < list->cnt; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    if (tp->err) {
      err = wd_kafka_error(c->rk, tp->err, E_KAFKA, "end offset of %s [%" PRId32 "]", tp->topic, tp->partition);
      goto cleanup;
    }
    arr[i].topic = wd_consumer_topic(c, tp->topic);
    arr[i].partition = tp->partition;
    arr[i].offset = tp->offset;
  }
  /* insertion sort by (topic as given, partition): lists are small */
  for (int i = 1; i < list->cnt; i++) {
    wd_tp_offset_t x = arr[i];
    int j = i - 1;
    while (j >= 0 && wd_tp_before(c, &x, &arr[j])) {
      arr[j + 1] = arr[j];
      j--;
    }
    arr[j + 1] = x;
  }
  *out = arr;
  *n = (size_t)list->cnt;
  arr = NULL;
cleanup:
  free(arr);
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_assignment(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  wd_tp_offset_t *arr = NULL;
  *out = NULL;
  *n = 0;
  rd_kafka_resp_err_t rerr = rd_kafka_assignment(c->rk, &list);
  if (rerr) {
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "reading the assignment");
    goto cleanup;
  }
  rd_kafka_position(c->rk, list);
  if (!(arr = calloc(list->cnt ? (size_t)list->cnt : 1, sizeof(*arr)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  size_t k = 0;
  for (int i = 0; i < list->cnt; i++) {
    const char *t = wd_consumer_topic(c, list->elems[i].topic);
    if (!t) continue;
    arr[k].topic = t;
    arr[k].partition = list->elems[i].partition;
    arr[k].offset = list->elems[i].offset >= 0 ? list->elems[i].offset : -1;
    k++;
  }
  *out = arr;
  *n = k;
  arr = NULL;
cleanup:
  free(arr);
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_close(wd_consumer_t *c) {
  if (c->closed || !c->rk) return NULL;
  c->closed = true;
  rd_kafka_resp_err_t rerr = rd_kafka_consumer_close(c->rk);
  if (rerr) return wd_kafka_error(c->rk, rerr, E_KAFKA, "closing the consumer");
  return NULL;
}

void wd_consumer_destroy(wd_consumer_t *c) {
  if (!c) return;
  if (c->rk) {
    wd_error_t *err = wd_consumer_close(c);
    if (err) wd_log(WD_LOG_WARN, "ingest", "%s", err->message);
    wd_error_destroy(err);
    rd_kafka_destroy(c->rk);
  }
  wd_consumer_drop_held(c, NULL);
  free(c->held);
  if (c->holds) rd_kafka_topic_partition_list_destroy(c->holds);
  free(c->group_id);
  for (size_t i = 0; i < c->ntopics; i++) free(c->topics[i]);
  free(c->topics);
  free(c->missing);
  free(c->rejoined);
  wd_kafka_stats_clear(&c->stats);
  free(c);
}

wd_error_t *wd_consumer_group_metadata(wd_consumer_t *c, wd_group_meta_t **out) {
  *out = NULL;
  if (!c->group_mode) return wd_error_new(WD_ERR_CONFIG, C_KAFKA_GROUP, "no group metadata: the consumer has no group");
  wd_group_meta_t *gm = calloc(1, sizeof(*gm));
  if (!gm) return wd_error_nomem();
  if (!(gm->cgmd = rd_kafka_consumer_group_metadata(c->rk))) {
    free(gm);
    return wd_error_nomem();
  }
  *out = gm;
  return NULL;
}

/* rd_kafka_seek_partitions over list, asked again (from the offsets wanted, kept aside) while it
 * answers with a retriable error (a seek times out while a partition's leader is unknown in a
 * broker restart) for up to WD_SEEK_RETRY_MS in all. NULL, or "E_KAFKA" naming the partition. */
#define WD_SEEK_RETRY_MS 30000
static wd_error_t *wd_consumer_seek_list(wd_consumer_t *c, rd_kafka_topic_partition_list_t *list) {
  int64_t deadline = wd_mono_ms() + WD_SEEK_RETRY_MS;
  int64_t *want = malloc((list->cnt ? (size_t)list->cnt : 1) * sizeof(*want));
  if (!want) return wd_error_nomem();
  for (int i = 0; i < list->cnt; i++) want[i] = list->elems[i].offset;
  wd_error_t *err = NULL;
  for (;;) {
    rd_kafka_error_t *rerr = rd_kafka_seek_partitions(c->rk, list, 10000);
    if (rerr) {
      bool timed_out = rd_kafka_error_code(rerr) == RD_KAFKA_RESP_ERR__TIMED_OUT;
      err = wd_kafka_error_obj(c->rk, rerr, E_KAFKA, "seeking %d partition(s)", list->cnt);
      if (timed_out && err != wd_error_nomem()) err->retriable = true;
    } else {
      for (int i = 0; i < list->cnt && !err; i++)
        if (list->elems[i].err) {
          err = wd_kafka_error(c->rk, list->elems[i].err, E_KAFKA, "seeking %s [%" PRId32 "] to %" PRId64,
                               list->elems[i].topic, list->elems[i].partition, want[i]);
          /* _STATE: the partition's (re)assignment has not started its fetcher yet (just assigned
           * again, wd_consumer_reassign): asked again once it has */
          if (list->elems[i].err == RD_KAFKA_RESP_ERR__STATE && err != wd_error_nomem()) err->retriable = true;
        }
    }
    if (!err || !err->retriable || err->fatal || wd_mono_ms() >= deadline) break;
    wd_log(WD_LOG_WARN, "ingest", "%s; retrying", err->message);
    wd_error_destroy(err);
    err = NULL;
    for (int i = 0; i < list->cnt; i++) {
      list->elems[i].offset = want[i];
      list->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    usleep(200 * 1000);
  }
  free(want);
  return err;
}

wd_error_t *wd_consumer_seek(wd_consumer_t *c, const wd_tp_offset_t *offsets, size_t n) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  if (n == 0) goto cleanup;
  if (!(list = rd_kafka_topic_partition_list_new((int)n))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < n; i++)
    rd_kafka_topic_partition_list_add(list, offsets[i].topic, offsets[i].partition)->offset =
        offsets[i].offset >= 0 ? offsets[i].offset : RD_KAFKA_OFFSET_BEGINNING;
  wd_consumer_drop_held(c, list); /* records fetched beyond the new positions are read again */
  err = wd_consumer_seek_list(c, list);
cleanup:
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_pause(wd_consumer_t *c, bool pause) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  if (c->paused == pause) return NULL;
  rd_kafka_resp_err_t rerr = rd_kafka_assignment(c->rk, &list);
  if (!rerr && !pause && c->holds) /* held partitions stay paused until released */
    for (int i = 0; i < c->holds->cnt; i++)
      rd_kafka_topic_partition_list_del(list, c->holds->elems[i].topic, c->holds->elems[i].partition);
  if (!rerr) rerr = pause ? rd_kafka_pause_partitions(c->rk, list) : rd_kafka_resume_partitions(c->rk, list);
  if (rerr) err = wd_kafka_error(c->rk, rerr, E_KAFKA, "%s the assigned partitions", pause ? "pausing" : "resuming");
  else c->paused = pause;
  if (list) rd_kafka_topic_partition_list_destroy(list);
  return err;
}

void wd_consumer_serve(wd_consumer_t *c, int timeout_ms) {
  wd_error_t *serr = wd_consumer_subscribe(c);
  if (serr) {
    wd_log(WD_LOG_ERROR, "ingest", "%s", serr->message);
    wd_error_destroy(serr);
  }
  wd_consumer_check_missing(c);
  wd_consumer_check_assignment(c);
  rd_kafka_message_t *rkm = rd_kafka_consumer_poll(c->rk, timeout_ms);
  if (!rkm) return;
  if (!rkm->err && rkm->rkt) {
    /* fetched before the pause took effect: kept, in order, for the next poll_batch */
    if (c->nheld == c->cap_held) {
      size_t cap = c->cap_held ? c->cap_held * 2 : 64;
      rd_kafka_message_t **h = realloc(c->held, cap * sizeof(*h));
      if (!h) {
        /* cannot keep it: read it again from its offset instead */
        rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
        if (list) {
          rd_kafka_topic_partition_list_add(list, rd_kafka_topic_name(rkm->rkt), rkm->partition)->offset = rkm->offset;
          rd_kafka_error_t *rerr = rd_kafka_seek_partitions(c->rk, list, 5000);
          if (rerr) rd_kafka_error_destroy(rerr);
          rd_kafka_topic_partition_list_destroy(list);
        }
        rd_kafka_message_destroy(rkm);
        return;
      }
      c->held = h;
      c->cap_held = cap;
    }
    c->held[c->nheld++] = rkm;
    return;
  }
  const char *etopic = rkm->rkt ? wd_consumer_topic(c, rd_kafka_topic_name(rkm->rkt)) : NULL;
  if (rkm->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && etopic)
    wd_consumer_set_missing(c, wd_topic_index(c, etopic), true);
  else if (rkm->err && rkm->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
    wd_log(WD_LOG_DEBUG, "ingest", "while paused: %s", rd_kafka_message_errstr(rkm));
  rd_kafka_message_destroy(rkm);
}

uint64_t wd_consumer_generation(const wd_consumer_t *c) { return c->generation; }

/* Seeks one partition (offset >= 0) after dropping its held records; pauses or resumes it. */
static wd_error_t *wd_consumer_hold_one(wd_consumer_t *c, const char *topic, int32_t partition, int64_t offset,
                                        bool pause) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
  if (!list) return wd_error_nomem();
  rd_kafka_topic_partition_list_add(list, topic, partition)->offset = offset;
  rd_kafka_resp_err_t rerr = pause ? rd_kafka_pause_partitions(c->rk, list) : RD_KAFKA_RESP_ERR_NO_ERROR;
  if (rerr) {
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "pausing %s [%" PRId32 "]", topic, partition);
    goto done;
  }
  if (offset >= 0 || offset == WD_OFFSET_BEGINNING || offset == WD_OFFSET_END) {
    if (offset < 0)
      list->elems[0].offset = offset == WD_OFFSET_BEGINNING ? RD_KAFKA_OFFSET_BEGINNING : RD_KAFKA_OFFSET_END;
    wd_consumer_drop_held(c, list);
    if ((err = wd_consumer_seek_list(c, list))) goto done;
  }
  if (!pause && !c->paused && (rerr = rd_kafka_resume_partitions(c->rk, list)))
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "resuming %s [%" PRId32 "]", topic, partition);
done:
  rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_reassign(wd_consumer_t *c, const wd_tp_offset_t *parts, size_t n, bool release) {
  wd_error_t *err = NULL;
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(n ? (int)n : 1);
  if (!list) return wd_error_nomem();
  char summary[512];
  size_t len = 0;
  summary[0] = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t off = wd_consumer_start_offset(c, parts[i].offset, parts[i].topic, parts[i].partition);
    rd_kafka_topic_partition_list_add(list, parts[i].topic, parts[i].partition)->offset = off;
    char where[32];
    wd_consumer_describe_offset(off, where, sizeof(where));
    if (len < sizeof(summary) - 1) {
      int k = snprintf(summary + len, sizeof(summary) - len, "%s%s[%" PRId32 "]@%s", i ? ", " : "", parts[i].topic,
                       parts[i].partition, where);
      len = k < 0 ? sizeof(summary) - 1 : len + (size_t)k;
      if (len >= sizeof(summary) - 1) memcpy(summary + sizeof(summary) - 5, "...", 4);
    }
  }
  wd_consumer_drop_held(c, list); /* nothing fetched of them is kept */
  /* held or released before the assignment, never right after it (wd_consumer_set_pause_state) */
  bool pause = !release || c->paused;
  bool late = wd_consumer_set_pause_state(c, list, pause);
  for (int i = 0; i < list->cnt; i++)
    if (!wd_consumer_note_hold(c, list->elems[i].topic, list->elems[i].partition, !release)) {
      rd_kafka_topic_partition_list_destroy(list);
      return wd_error_nomem();
    }
  /* the same partitions, assigned again at the decided offsets: librdkafka stops their fetchers
   * and starts them from there, in the order of its own assignment operations (a seek right after
   * an assignment can be overtaken by the assignment's start) */
  rd_kafka_resp_err_t rerr = rd_kafka_assign(c->rk, list);
  if (rerr) {
    err = wd_kafka_error(c->rk, rerr, E_KAFKA, "assigning %zu partition(s) again at their decided offsets", n);
  } else {
    if (late) /* only for a partition librdkafka did not know before the assignment */
      wd_consumer_set_pause_state(c, list, pause);
    wd_log(WD_LOG_INFO, "ingest", "the %zu assigned partition(s) start at: %s%s", n, summary, release ? "" : " (held)");
  }
  rd_kafka_topic_partition_list_destroy(list);
  return err;
}

wd_error_t *wd_consumer_hold_partition(wd_consumer_t *c, const char *topic, int32_t partition, int64_t offset) {
  if (!wd_consumer_note_hold(c, topic, partition, true)) return wd_error_nomem();
  return wd_consumer_hold_one(c, topic, partition, offset, true);
}

wd_error_t *wd_consumer_release_partition(wd_consumer_t *c, const char *topic, int32_t partition, int64_t offset) {
  wd_consumer_note_hold(c, topic, partition, false);
  return wd_consumer_hold_one(c, topic, partition, offset, false);
}

int64_t wd_consumer_position(wd_consumer_t *c, const char *topic, int32_t partition) {
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
  if (!list) return -1;
  rd_kafka_topic_partition_list_add(list, topic, partition);
  int64_t off = -1;
  if (!rd_kafka_position(c->rk, list) && !list->elems[0].err && list->elems[0].offset >= 0) off = list->elems[0].offset;
  rd_kafka_topic_partition_list_destroy(list);
  return off;
}
wd_error_t *wd_kafka_property_check(const char *name, const char *value, unsigned clients) {
  static const char *const consumer_fixed[] = {"enable.auto.commit", "enable.auto.offset.store", NULL};
  static const char *const producer_fixed[] = {"enable.idempotence", "acks", "partitioner", NULL};
  char errstr[512];
  if (!strcmp(name, "bootstrap.servers") || !strcmp(name, "metadata.broker.list") || !strcmp(name, "group.id"))
    return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                        "Kafka property '%s' cannot be passed through: use the %s setting", name,
                        strcmp(name, "group.id") == 0 ? "group" : "brokers");
  for (int c = 0; c < 2; c++) {
    if (!(clients & (c ? WD_KAFKA_PRODUCER_PROPERTY : WD_KAFKA_CONSUMER_PROPERTY))) continue;
    for (const char *const *f = c ? producer_fixed : consumer_fixed; *f; f++)
      if (!strcmp(*f, name))
        return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                            "Kafka property '%s' is managed by widen and cannot be set", name);
  }
  if ((clients & WD_KAFKA_CONSUMER_PROPERTY) && !strcmp(name, "partition.assignment.strategy") &&
      strstr(value, "cooperative"))
    return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                        "Kafka property 'partition.assignment.strategy' = '%s': the cooperative protocol is not "
                        "supported (use range or roundrobin)",
                        value);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (!conf) return wd_error_nomem();
  rd_kafka_conf_res_t res = rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr));
  rd_kafka_conf_destroy(conf);
  if (res == RD_KAFKA_CONF_OK) {
    /* A file property (ssl.*.location, sasl.kerberos.keytab) is only opened when the client is
     * created (rd_kafka_new), so a missing file would pass here and stop `run`: check it now. */
    size_t nl = strlen(name), ll = strlen(".location");
    bool is_file = (nl > ll && !strcmp(name + nl - ll, ".location")) || !strcmp(name, "sasl.kerberos.keytab");
    if (is_file && *value && strcmp(value, "probe") && access(value, R_OK) != 0)
      return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' = '%s': cannot read it (%s)", name,
                          value, strerror(errno));
    return NULL;
  }
  if (res == RD_KAFKA_CONF_UNKNOWN) return wd_kafka_unknown_property(name);
  return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' = '%s': %s", name,
                      wd_conf_shown(name, value), errstr);
}

const char *wd_consumer_idle_reason(const wd_consumer_t *c) {
  if (c->nassigned > 0) return NULL;
  if (c->nmissing == c->ntopics) return "its topics do not exist yet";
  if (c->last_event == 0) return "waiting for the group's assignment";
  if (c->last_event == 2) return "rebalancing: waiting for the new assignment";
  return "all partitions are assigned to other members";
}

const char *wd_consumer_missing_topic(const wd_consumer_t *c) {
  for (size_t i = 0; c->missing && c->nmissing && i < c->ntopics; i++)
    if (c->missing[i]) return c->topics[i];
  return NULL;
}

int wd_consumer_assigned_count(const wd_consumer_t *c) { return c->nassigned; }
