/*
 * app/runtime/batch.c — one poll batch through the table (see batch.h for the order).
 */
#include "app/runtime/batch.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "ingest/format.h"
#include "ingest/source.h"
#include "sink/producer.h"

/* One decoded Kafka record of the batch. */
typedef struct {
  size_t first, count; /* its change records: recs[first .. first+count) */
  wd_error_t *err; /* decode or merge rejection: goes to the dead-letter topic */
  bool applied;
  bool tombstone; /* a Kafka tombstone (null value), skipped */
  bool skipped; /* replay --from: older than the point in time */
  bool lookup; /* a lookup source's message: its records are the lookups' batch rows first .. first+count */
  bool forwarded; /* a repartitioned source's record: its change records went to its repartition topic */
  bool held; /* not taken (its task is restoring other partitions): read again */
  int src; /* index of its source (the sources' array), -1 when none */
  const struct wd_topic_ent *te; /* its topic in the topic index, NULL when none */
} wd_bmsg_t;

struct wd_batch {
  wd_batch_conf_t c; /* the borrowed collaborators */
  const wd_schema_t *schema; /* the table's */
  bool pu_no_retract; /* the table rejects every retraction: -U records are left out */
  /* the decoders: per source format (ingest/format.h index) its state */
  void **fmt_state;
  size_t nfmt;
  char **dec_warn; /* per source: its decimal-encoding warning, said at its first record without an
                      envelope schema (a schema'd source's schema decides: no warning), NULL after */
  /* the scratch, per batch */
  wd_kmsg_t *msgs; /* [c.max] */
  wd_bmsg_t *bm; /* [c.max] */
  bool *restoring; /* [c.max]: per message, it only rebuilds state (no output) */
  wd_row_t **recs; /* the batch's change records */
  size_t nrecs, cap_recs;
  size_t *key_off; /* per rec: its key in keys; [nrecs] is the end */
  uint32_t *rec_task; /* per rec: its task */
  wd_buf_t keys; /* encoded keys, back to back */
  wd_changes_t changes; /* one record's change records, as decoded */
  wd_changelog_t cl; /* the batch's changelog */
  size_t *cl_src; /* per changelog row: index of its source message in the batch */
  size_t cap_cl_src;
  wd_merge_stats_t ms; /* the batch's merge stats */
  uint64_t changes0; /* changes_out when the batch began */
  wd_ratelog_t rlog; /* dead letters: logged per (source, error id, field), rate-limited */
  uint64_t trace_msg; /* --trace: the number of the next message traced */
};

static int push_rec(wd_batch_t *bt, wd_row_t *row) {
  if (bt->nrecs == bt->cap_recs) {
    size_t cap = bt->cap_recs ? bt->cap_recs * 2 : 1024;
    wd_row_t **r = realloc(bt->recs, cap * sizeof(*r));
    size_t *o = realloc(bt->key_off, (cap + 1) * sizeof(*o));
    uint32_t *t = realloc(bt->rec_task, cap * sizeof(*t));
    if (r) bt->recs = r;
    if (o) bt->key_off = o;
    if (t) bt->rec_task = t;
    if (!r || !o || !t) return -1;
    bt->cap_recs = cap;
  }
  bt->recs[bt->nrecs++] = row;
  return 0;
}

/* Logs a dead letter's reason: the first of each (source, error id, field) at once, then at most
 * one line per such key every 10 s with the number not logged (common/ratelog.h). */
static void log_once(wd_batch_t *bt, const wd_kmsg_t *m, const wd_bmsg_t *b) {
  const wd_error_t *err = b->err;
  const wd_source_t *src = b->src >= 0 ? bt->c.sources[b->src] : NULL;
  char field[128];
  bt->rlog.interval = 10.0;
  wd_ratelog_note(&bt->rlog, wd_mono_s(), WD_LOG_WARN, "pipeline", src ? src->name : m->topic, err->id,
                  wd_ratelog_field_of(err->message, field, sizeof(field)), err->message);
}

static wd_error_t *trace_message(wd_batch_t *bt, const wd_bmsg_t *b) {
  for (size_t i = b->first; i < b->first + b->count; i++) {
    json_t *j = json_object();
    const wd_row_t *row = b->lookup ? wd_lookups_row(bt->c.lk, i) : bt->recs[i];
    json_object_set_new(j, "op", json_string(wd_row_kind_str(row->kind)));
    json_object_set_new(j, "row", wd_row_to_json(b->lookup ? wd_lookups_row_schema(bt->c.lk, i) : bt->schema, row));
    json_object_set_new(j, "message", json_integer((json_int_t)bt->trace_msg));
    if (wd_lookups_active(bt->c.lk) && b->src >= 0) /* the case format's "source" (tests/cases) */
      json_object_set_new(j, "source", json_string(bt->c.sources[b->src]->name));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) return wd_error_nomem();
    wd_buf_t *tb = wd_hist_gather_trace(bt->c.hg); /* the open commit's */
    int rc = wd_buf_append(tb, s, strlen(s)) || wd_buf_putc(tb, '\n');
    free(s);
    if (rc) return wd_error_nomem();
  }
  bt->trace_msg++;
  return NULL;
}

static wd_error_t *deletes_without_sequence(wd_batch_t *bt, const wd_source_t *src) {
  for (size_t k = 0; k < bt->changes.count; k++) {
    wd_row_t *r = bt->changes.rows[k];
    if (r->kind != WD_DELETE) continue;
    bool noseq = false; /* a sequence field this source maps is NULL */
    for (size_t m = 0; m < src->ncols; m++) {
      int c = src->cols[m].col;
      if (wd_table_is_sequence_column(bt->c.table, c) && r->v[c].is_null) noseq = true;
    }
    if (!noseq) continue;
    bt->c.st->deletes_without_sequence++;
    switch (src->delete_without_sequence) {
    case WD_DELETE_NO_SEQ_APPLY:
      for (size_t m = 0; m < src->ncols; m++) {
        int c = src->cols[m].col;
        if (wd_table_is_sequence_column(bt->c.table, c) && r->v[c].is_null && wd_row_set_absent(r, (size_t)c))
          return wd_error_nomem();
      }
      break;
    case WD_DELETE_NO_SEQ_DEAD_LETTER:
      return wd_error_new(WD_ERR_RECORD, E_DELETE_NO_SEQUENCE,
                          "source '%s': a delete without its sequence field (the record carries only the key); "
                          "rejected by delete-without-sequence: dead-letter (apply takes it from the stored row)",
                          src->name);
    case WD_DELETE_NO_SEQ_IGNORE: {
      wd_row_t *t = wd_changes_take(&bt->changes, k);
      wd_row_destroy(bt->schema, t);
      memmove(bt->changes.rows + k, bt->changes.rows + k + 1, (bt->changes.count - k - 1) * sizeof(*bt->changes.rows));
      bt->changes.rows[--bt->changes.count] = NULL;
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
 * changelog-producer input): the -U records of bt->changes are left out and counted as ignored
 * -U, so that the +U applies instead of the whole message being dead-lettered for its -U. A
 * delete is still rejected (E_PU_DELETE_NOT_ACCEPTED); the start-up warning says so. */
static wd_error_t *drop_update_before(wd_batch_t *bt) {
  size_t k = 0;
  for (size_t i = 0; i < bt->changes.count; i++) {
    wd_row_t *r = bt->changes.rows[i];
    if (r->kind == WD_UPDATE_BEFORE) {
      wd_row_destroy(bt->schema, wd_changes_take(&bt->changes, i));
      bt->c.st->ignored_update_before++;
      continue;
    }
    bt->changes.rows[i] = NULL;
    bt->changes.rows[k++] = r;
  }
  bt->changes.count = k;
  return NULL;
}

/* A record of src without an envelope schema: its decimal-encoding warning (if any) is said now, once. */
static void schemaless_noted(wd_batch_t *bt, const wd_source_t *src) {
  for (size_t i = 0; bt->dec_warn && i < bt->c.nsources; i++)
    if (bt->c.sources[i] == src && bt->dec_warn[i]) {
      wd_log(WD_LOG_WARN, "pipeline", "%s (its records carry no envelope schema)", bt->dec_warn[i]);
      free(bt->dec_warn[i]);
      bt->dec_warn[i] = NULL;
    }
}

/* Decodes one record with its source's format (ingest/format.h). A retriable error (the schema
 * registry did not answer) is logged and retried with backoff until it succeeds or the pipeline
 * is stopped: a record is never dead-lettered for it. */
static wd_error_t *decode_record(wd_batch_t *bt, const wd_source_t *src, const wd_schema_t *schema,
                                 wd_changes_t *changes, const wd_kafka_meta_t *meta, const wd_kmsg_t *m) {
  const wd_format_t *f = wd_format_of(src->format);
  void *state = (size_t)src->format < bt->nfmt ? bt->fmt_state[src->format] : NULL;
  for (unsigned attempt = 0;; attempt++) {
    wd_error_t *err = f->decode(state, src, schema, meta, m->value, m->value_len, changes);
    /* a lookup's rows (join/lookup.h) are ordered by its own table, not by the wide one */
    if (!err && (changes->flags & WD_CHANGES_SCHEMALESS)) schemaless_noted(bt, src);
    if (!err)
      return changes == &bt->changes && wd_table_has_ordering(bt->c.table) ? deletes_without_sequence(bt, src) : NULL;
    if (!err->retriable || *bt->c.stop) return err;
    long ms = wd_registry_backoff_ms(attempt);
    wd_log(WD_LOG_WARN, "pipeline", "%s[%d]@%" PRId64 ": %s; retrying in %ld ms", m->topic, m->partition, m->offset,
           err->message, ms);
    /* wait serving the consumer (paused), so that the group does not evict this process */
    for (long left = ms; left > 0 && !*bt->c.stop && !wd_commit_batch_invalid(bt->c.commit); left -= 100) {
      wd_commit_wait(bt->c.commit, left > 100 ? 100 : (int)left);
      if (bt->c.waiting) bt->c.waiting(bt->c.waiting_ctx); /* the loop's work: /livez and /status go on */
    }
    if (wd_commit_batch_invalid(bt->c.commit)) return err; /* the batch is abandoned */
    wd_error_destroy(err);
  }
}

/* ---- joins on other keys (join/lookup.h): decoding a lookup message, applying a message ---- */

static bool is_lookup(const wd_batch_t *bt, int si) { return wd_lookups_is_lookup(bt->c.lk, si); }

/* Decodes a lookup source's record into rows of its lookup schema, kept in the lookups' batch (a
 * decode error goes to b->err, as for main sources). */
static wd_error_t *decode_lookup(wd_batch_t *bt, int si, const wd_kafka_meta_t *meta, const wd_kmsg_t *m,
                                 wd_bmsg_t *b) {
  wd_changes_t *ch = wd_lookups_changes(bt->c.lk, si);
  b->lookup = true;
  b->count = 0;
  wd_error_t *derr = decode_record(bt, bt->c.sources[si], wd_lookups_schema(bt->c.lk, si), ch, meta, m);
  if (derr) {
    if (derr->cls != WD_ERR_DECODE && derr->cls != WD_ERR_RECORD) return derr;
    b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
    return NULL;
  }
  if (ch->flags & WD_CHANGES_TOMBSTONE) {
    bt->c.st->skipped_tombstones++;
    return NULL;
  }
  wd_error_t *err = wd_lookups_take(bt->c.lk, si, &b->first, &b->count);
  if (err) return err;
  bt->c.st->changes_in += b->count;
  return NULL;
}

/* Applies message b through the join layer (main or lookup source), or straight through the merge
 * engine when the config has no lookup and no required source. */
static wd_error_t *apply_message(wd_batch_t *bt, const wd_bmsg_t *b, size_t first, size_t count, wd_merge_stats_t *ms) {
  return wd_lookups_apply(bt->c.lk, b->src, b->lookup, bt->recs, first, count, bt->c.table, wd_state_ops(), bt->c.state,
                          &bt->cl, ms);
}

/* Decodes a record of the repartition topic of source si into change records of task
 * m->partition; bytes that are not a repartition record go to the dead-letter topic. */
static wd_error_t *decode_repartitioned(wd_batch_t *bt, int si, const wd_kmsg_t *m, wd_bmsg_t *b) {
  wd_repartition_rec_t one, *rec = &one;
  wd_error_t *derr = wd_repartition_decode(bt->schema, m->value, m->value_len, rec);
  if (derr) {
    if (derr->cls != WD_ERR_DECODE) return derr;
    b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
    return NULL;
  }
  for (size_t k = 0; k < rec->n; k++) {
    if (push_rec(bt, rec->rows[k])) {
      wd_repartition_rec_free(bt->schema, rec);
      return wd_error_nomem();
    }
    rec->rows[k] = NULL; /* the batch owns it now */
    bt->rec_task[bt->nrecs - 1] = (uint32_t)m->partition;
    bt->key_off[bt->nrecs - 1] = bt->keys.len;
    if (wd_row_key_encode(bt->schema, bt->recs[bt->nrecs - 1], &bt->keys)) {
      wd_repartition_rec_free(bt->schema, rec);
      return wd_error_nomem();
    }
  }
  wd_repartition_rec_free(bt->schema, rec);
  bt->key_off[bt->nrecs] = bt->keys.len;
  b->src = si;
  b->count = bt->nrecs - b->first;
  /* every change record must belong to this partition's task: a record placed by another
   * partition count (or by hand) would put its key in a second task */
  for (size_t r = b->first; r < bt->nrecs; r++) {
    int32_t want = wd_repart_home(bt->c.rp, (size_t)si, bt->schema, bt->recs[r]);
    if (want < 0) return wd_error_nomem();
    if (want == m->partition) continue;
    b->err = wd_error_new(WD_ERR_DECODE, E_REPARTITION_RECORD,
                          "%s[%d]@%" PRId64 ": a change record's key belongs to partition %d of %d, not to this one "
                          "(written with another partition count, or not by widen)",
                          m->topic, m->partition, m->offset, want, wd_repart_partitions(bt->c.rp));
    b->count = 0; /* its rows stay in the batch (released with it) but are applied nowhere */
    break;
  }
  return NULL;
}

/* A record of a co-partitioned source whose change records have more than one wide key (a
 * key-changing update: -D or -U of the old key, +I or +U of the new one): the old key's row is in
 * the task of the partition the old key's own records are in, which this topic's keying does not
 * tell, so the record cannot be applied in its own partition's task (the old row would stay). */
static wd_error_t *key_change_error(wd_batch_t *bt, int si, const wd_kmsg_t *m) {
  return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEYING,
                      "source '%s' (%s[%d]@%" PRId64 "): a key-changing update (its change records have more than "
                      "one primary key) in a co-partitioned source: the old key's row belongs to the task of the "
                      "partition the old key's own records are in, not to this record's; set `repartition: true` on "
                      "this source (its change records then go through a repartition topic, each by its own key)",
                      bt->c.sources[si]->name, m->topic, m->partition, m->offset);
}

/* Checks that the change records just decoded from m (source si, read directly with per-partition
 * tasks) are in their wide key's partition, wd_repart_home. *home: -1 when they are (or the record
 * has none); else their home partition (a replay, or `repartition: auto` in a live run: the caller
 * forwards the record there through the source's repartition topic), or -2 for a record read
 * again while its task restores (forwarded when first read: nothing to do). Errors: C_SOURCE_KEYING
 * for a source that says `repartition: false` (wd_repart_misplaced_error) or for a record whose
 * change records have several keys (key_change_error), E_NOMEM. */
static wd_error_t *direct_home(wd_batch_t *bt, int si, const wd_kmsg_t *m, const wd_kafka_meta_t *meta, bool restoring,
                               int32_t *home) {
  *home = -1;
  int32_t first = -1;
  for (size_t k = 0; k < bt->changes.count; k++) {
    int32_t h = wd_repart_home(bt->c.rp, (size_t)si, bt->schema, bt->changes.rows[k]);
    if (h < 0) return wd_error_nomem();
    if (k == 0) first = h;
    if (h != first) return key_change_error(bt, si, m); /* two keys: placed by neither */
  }
  if (first < 0 || first == m->partition) return NULL;
  if (!bt->c.st->misplaced && wd_repart_forwarding(bt->c.rp) && !restoring &&
      wd_repart_fallback(bt->c.rp, (size_t)si)) {
    size_t kl = 0;
    const char *kb = wd_repart_canonical_key(bt->c.rp, &kl);
    wd_log(WD_LOG_WARN, "pipeline",
           "source '%s' (%s[%d]@%" PRId64 "): a record outside its wide key's partition "
           "(%d, murmur2 of widen's key bytes %.*s): its Kafka key is not widen's key bytes (e.g. Kafka Connect's "
           "JsonConverter with schemas.enable=true); such records go through repartition topic %s "
           "(`repartition: auto`)",
           bt->c.sources[si]->name, m->topic, m->partition, m->offset, first, (int)kl, kb,
           wd_repart_topic(bt->c.rp, (size_t)si));
  }
  if (!wd_repart_forwarding(bt->c.rp)) *home = first;
  else if (restoring) *home = -2;
  else if (wd_repart_fallback(bt->c.rp, (size_t)si)) *home = first;
  else return wd_repart_misplaced_error(bt->c.rp, bt->c.sources[si], meta, first);
  return NULL;
}

static wd_error_t *abandoned_error(void) {
  return wd_error_new(WD_ERR_KAFKA, E_BATCH_ABANDONED, "a rebalance came while the batch was in hand");
}

/* Takes the change records just decoded into bt->changes (message b of task `task`, source si of
 * topic kind `kind`; home as direct_home) into the batch: each keyed, given its task. */
static wd_error_t *take_changes(wd_batch_t *bt, wd_bmsg_t *b, const wd_kmsg_t *m, int si, wd_topic_kind_t kind,
                                int32_t home) {
  uint32_t task = bt->c.per_partition ? (uint32_t)m->partition : 0;
  for (size_t k = 0; k < bt->changes.count; k++) {
    wd_row_t *row = wd_changes_take(&bt->changes, k);
    if (!row || push_rec(bt, row)) {
      wd_row_destroy(bt->schema, row);
      return wd_error_nomem();
    }
    size_t at = bt->keys.len;
    bt->key_off[bt->nrecs - 1] = at;
    if (wd_row_key_encode(bt->schema, row, &bt->keys)) return wd_error_nomem();
    /* a repartitioned source read here (replay): its task is where the repartition topic puts it */
    bt->rec_task[bt->nrecs - 1] =
        home >= 0 ? (uint32_t)wd_repart_home(bt->c.rp, (size_t)si, bt->schema, row)
        : kind == WD_TOPIC_RAW
            ? (uint32_t)wd_producer_partition_of(bt->keys.data + at, bt->keys.len - at, wd_repart_partitions(bt->c.rp))
            : task;
    if (kind == WD_TOPIC_DIRECT && bt->c.per_partition && k > 0 &&
        (bt->keys.len - at != bt->key_off[b->first + 1] - bt->key_off[b->first] ||
         memcmp(bt->keys.data + at, bt->keys.data + bt->key_off[b->first], bt->keys.len - at)))
      return key_change_error(bt, si, m);
  }
  bt->key_off[bt->nrecs] = bt->keys.len;
  b->count = bt->nrecs - b->first;
  return NULL;
}

/* The change records of message b (source si, read from a source topic), decoded into bt->changes,
 * after the checks on them: forwarded to the repartition topic, or taken into the batch. */
static wd_error_t *route_changes(wd_batch_t *bt, size_t i, wd_bmsg_t *b, const wd_kafka_meta_t *meta, int si,
                                 wd_topic_kind_t kind) {
  wd_error_t *err = NULL;
  const wd_kmsg_t *m = &bt->msgs[i];
  const wd_source_t *src = bt->c.sources[si];
  if (bt->changes.null_key_halves && !bt->restoring[i]) {
    if (!bt->c.st->null_key_halves)
      wd_log(WD_LOG_WARN, "pipeline",
             "source '%s' (%s[%d]@%" PRId64 "): update halves and deletes with a NULL "
             "primary key are left out (NULL -> K is +I, K -> NULL is -D); counted as `null-key halves`",
             src->name, m->topic, m->partition, m->offset);
    bt->c.st->null_key_halves += bt->changes.null_key_halves;
  }
  if (bt->changes.flags & WD_CHANGES_ROW_UNKNOWN) { /* no records were made of it */
    if (!bt->restoring[i]) bt->c.st->key_only_before++;
    if (wd_table_ignores_deletes(bt->c.table)) {
      if (!bt->restoring[i]) bt->c.st->dropped++;
      return NULL;
    }
    char key[160] = "";
    for (size_t k = 0, at = 0; k < bt->schema->npk && at + 1 < sizeof(key); k++)
      at +=
          (size_t)snprintf(key + at, sizeof(key) - at, "%s%s", k ? ", " : "", bt->schema->cols[bt->schema->pk[k]].name);
    b->err =
        wd_error_new(WD_ERR_RECORD, E_NO_KEY,
                     "%s[%d]@%" PRId64 ": source '%s': a delete whose before image holds only the table's key, its "
                     "other fields Debezium's defaults for NOT NULL columns (PostgreSQL's REPLICA IDENTITY "
                     "DEFAULT): the wide table's key (%s) is not in it, so the row the delete leaves is unknown. "
                     "Declare the source's own primary-key (docs/source-keys.md) or set REPLICA IDENTITY FULL on "
                     "the table",
                     m->topic, m->partition, m->offset, src->name, key);
    return NULL;
  }
  if ((bt->changes.flags & WD_CHANGES_KEY_ONLY_BEFORE) && !bt->restoring[i]) {
    if (!bt->c.st->key_only_before)
      wd_log(WD_LOG_WARN, "pipeline",
             "source '%s' (%s[%d]@%" PRId64 "): PostgreSQL's REPLICA IDENTITY DEFAULT: %s. A source keyed by another "
             "column than the wide key needs its own primary-key for its deletes and moves (docs/source-keys.md), or "
             "the table REPLICA IDENTITY FULL; counted as `key-only before images`",
             src->name, m->topic, m->partition, m->offset,
             bt->changes.op == 'd' ? "a delete whose before image holds only the table's key and Debezium's defaults "
                                     "for its NOT NULL columns; those columns are taken from the stored row"
                                   : "an update without a before image, of a source whose wide key is not its Kafka "
                                     "key: a move to another wide key leaves the old row as it was");
    bt->c.st->key_only_before++;
  }
  if (bt->pu_no_retract && (err = drop_update_before(bt))) return err;
  if (!bt->changes.count) return NULL; /* every half had a NULL key: nothing to apply */
  /* a co-partitioned source's record must be in its wide key's partition (murmur2 of widen's key
   * bytes): else forwarded to it (`repartition: auto`), or the pipeline stops (app/runtime/repartition.h) */
  int32_t home = -1;
  if (kind == WD_TOPIC_DIRECT && bt->c.per_partition && !is_lookup(bt, si) &&
      (err = direct_home(bt, si, m, meta, bt->restoring[i], &home)))
    return err;
  if (home == -2) return NULL; /* restoring: forwarded when first read */
  if (home >= 0 && !wd_repart_forwarding(bt->c.rp)) { /* a replay: its task is the key's home */
    kind = WD_TOPIC_RAW;
  } else if (home >= 0) {
    kind = WD_TOPIC_RAW;
    bt->c.st->misplaced++;
  }
  if (kind == WD_TOPIC_RAW && wd_repart_forwarding(bt->c.rp)) { /* to the repartition topic, no state */
    /* (a source with its own primary key re-read to rebuild its rows: forwarded when first read) */
    if (!bt->restoring[i] &&
        (err = wd_repart_forward(bt->c.rp, (size_t)si, bt->schema, src->name, meta, bt->changes.rows, bt->changes.count,
                                 bt->c.coll, &bt->c.st->repartitioned)))
      return err;
    b->forwarded = true;
    return NULL;
  }
  return take_changes(bt, b, m, si, kind, home);
}

/* 1. Message i through the gate and its decoder into the batch (a record's own error into its
 * b->err: a dead letter). */
static wd_error_t *decode_message(wd_batch_t *bt, size_t i) {
  wd_error_t *err = NULL;
  wd_kmsg_t *m = &bt->msgs[i];
  wd_bmsg_t *b = &bt->bm[i];
  memset(b, 0, sizeof(*b));
  b->first = bt->nrecs;
  b->te = wd_topic_index_find(bt->c.tix, m->topic); /* one lookup per record, O(1) */
  b->src = b->te ? b->te->si : -1;
  wd_gate_t gate = wd_commit_gate(bt->c.commit, m->topic, m->partition, m->offset);
  bt->restoring[i] = gate == WD_GATE_RESTORE;
  if (gate == WD_GATE_HOLD) { /* read again once every partition of its task caught up */
    b->held = true;
    return NULL;
  }
  const wd_source_t *src = b->te ? bt->c.sources[b->src] : NULL;
  if (wd_replay_skips(bt->c.replay, m)) { /* older than --from, or a rebuild stops where the old state stood */
    b->skipped = true;
    return NULL;
  }
  if (!src) return NULL; /* cannot happen: we subscribe to the sources' topics only */
  wd_kafka_meta_t meta = {m->topic, m->partition, m->offset, m->timestamp, m->key, m->key_len};
  int si = b->src;
  wd_topic_kind_t kind = b->te->kind;
  if (kind == WD_TOPIC_REPARTITION) return decode_repartitioned(bt, si, m, b); /* change records of task m->partition */
  /* a co-partitioned source's first record here: its Kafka key must be the wide key, else its
   * records would be merged in the wrong task (app/runtime/repartition.h) */
  if (kind == WD_TOPIC_DIRECT && bt->c.per_partition && !is_lookup(bt, si) &&
      (err = wd_repart_check_key(bt->c.rp, (size_t)si, src, bt->schema, &meta)))
    return err;
  if (is_lookup(bt, si)) {
    err = decode_lookup(bt, si, &meta, m, b);
    if (wd_commit_batch_invalid(bt->c.commit)) {
      wd_error_destroy(err);
      return abandoned_error();
    }
    return err;
  }
  wd_error_t *derr =
      wd_lookups_has_key(bt->c.lk, si) /* its own primary key: through its stored rows */
          ? decode_record(bt, src, wd_lookups_key_schema(bt->c.lk, si), wd_lookups_key_changes(bt->c.lk, si), &meta, m)
          : decode_record(bt, src, bt->schema, &bt->changes, &meta, m);
  if (!derr && wd_lookups_has_key(bt->c.lk, si))
    derr = wd_lookups_normalise(bt->c.lk, si, bt->c.per_partition ? (uint32_t)m->partition : 0, &bt->changes);
  if (wd_commit_batch_invalid(bt->c.commit)) {
    wd_error_destroy(derr);
    return abandoned_error();
  }
  if (derr) {
    if (derr->cls != WD_ERR_DECODE && derr->cls != WD_ERR_RECORD) return derr;
    b->err = wd_error_wrap(derr, "%s[%d]@%" PRId64, m->topic, m->partition, m->offset);
    return NULL;
  }
  if (bt->changes.flags & WD_CHANGES_TOMBSTONE) {
    b->tombstone = true;
    return NULL;
  }
  return route_changes(bt, i, b, &meta, si, kind);
}

/* 2. One multi-get of the batch's keys. */
static wd_error_t *read_state(wd_batch_t *bt) {
  if (!bt->nrecs) return NULL;
  const uint8_t **kp = malloc(bt->nrecs * sizeof(*kp));
  size_t *kl = malloc(bt->nrecs * sizeof(*kl));
  if (!kp || !kl) {
    free(kp);
    free(kl);
    return wd_error_nomem();
  }
  bt->key_off[bt->nrecs] = bt->keys.len;
  for (size_t i = 0; i < bt->nrecs; i++) {
    kp[i] = bt->keys.data + bt->key_off[i];
    kl[i] = (i + 1 < bt->nrecs ? bt->key_off[i + 1] : bt->keys.len) - bt->key_off[i];
  }
  wd_error_t *err = wd_state_prefetch_tasks(bt->c.state, bt->nrecs, bt->rec_task, kp, kl);
  free(kp);
  free(kl);
  return err;
}

/* 3. Merges message i's change records (in runs of one task: several only for a repartitioned
 * source read in a replay, whose records of one message may belong to several tasks); its
 * changelog rows are noted as its own. A record's rejection goes to b->err. */
static wd_error_t *merge_message(wd_batch_t *bt, size_t i) {
  wd_bmsg_t *b = &bt->bm[i];
  if (b->err || b->count == 0) return NULL;
  size_t cl_before = bt->cl.n;
  wd_error_t *merr = NULL;
  for (size_t r = b->first, e; r < b->first + b->count && !merr; r = e) {
    e = r + 1;
    if (!b->lookup)
      while (e < b->first + b->count && bt->rec_task[e] == bt->rec_task[r]) e++;
    else e = b->first + b->count;
    if (!b->lookup) wd_state_set_task(bt->c.state, bt->rec_task[r]);
    if (!b->lookup) wd_lookups_set_task(bt->c.lk, bt->rec_task[r]);
    merr = apply_message(bt, b, r, e - r, &bt->ms);
  }
  if (merr) {
    if (merr->cls != WD_ERR_RECORD) return merr;
    b->err = wd_error_wrap(merr, "%s[%d]@%" PRId64 " record %d", bt->msgs[i].topic, bt->msgs[i].partition,
                           bt->msgs[i].offset, merr->index);
    return NULL;
  }
  b->applied = true;
  if (bt->cl.n > bt->cap_cl_src) {
    size_t cap = bt->cl.n * 2;
    size_t *c = realloc(bt->cl_src, cap * sizeof(*c));
    if (!c) return wd_error_nomem();
    bt->cl_src = c;
    bt->cap_cl_src = cap;
  }
  for (size_t j = cl_before; j < bt->cl.n; j++) bt->cl_src[j] = i; /* which message each row came from */
  return bt->c.trace ? trace_message(bt, b) : NULL;
}

/* An output too large for the producer dead-letters the message that caused it (emit.h). */
static void too_large(void *ctx, size_t msg, wd_error_t *reason) {
  wd_batch_t *bt = ctx;
  if (!bt->bm[msg].err) bt->bm[msg].err = reason;
  else wd_error_destroy(reason);
}

/* 4. The changelog (rows, per row its message, per message its flag "only rebuilds state") and
 * the dead letters, into the open commit. */
static wd_error_t *emit(wd_batch_t *bt, size_t n) {
  wd_emit_rows_t rows = {bt->cl.rows, bt->cl.n, bt->cl_src, bt->restoring, bt->msgs, too_large, bt};
  wd_error_t *err = bt->c.emit ? bt->c.emit(bt->c.emit_ctx, &rows) : wd_emit_changelog(bt->c.emitter, &rows);
  for (size_t i = 0; !err && i < n; i++) {
    wd_bmsg_t *b = &bt->bm[i];
    if (!b->err) continue;
    if (bt->restoring[i]) continue; /* rebuilding state: its dead letter was sent when it was first read */
    log_once(bt, &bt->msgs[i], b);
    if (bt->c.no_output) continue; /* replay --no-output: counted, not sent again */
    err = wd_collector_dead_letter(bt->c.coll, bt->c.dlq_topic, &bt->msgs[i], b->err->id, b->err->message);
  }
  return err;
}

/* 5. The records belong to the open commit now: per partition of the batch, its offsets gathered
 * once, then handed to the coordinator (the input offsets, or a lookup topic's positions of this
 * process), the global table and the history record. */
static wd_error_t *note_inputs(wd_batch_t *bt, size_t n) {
  for (size_t i = 0; i < n; i++) {
    wd_kmsg_t *m = &bt->msgs[i];
    if (!bt->bm[i].te) continue;
    if (bt->bm[i].skipped && wd_replay_past_stop(bt->c.replay, m)) continue; /* read again after the rebuild */
    if (bt->bm[i].held) continue; /* not taken (read again when its task runs) */
    if (wd_topic_index_take(bt->c.tix, bt->bm[i].te, m->partition, m->offset)) return wd_error_nomem();
  }
  size_t nbtp = 0;
  const wd_batch_tp_t *btp = wd_topic_index_batch(bt->c.tix, &nbtp);
  for (size_t k = 0; k < nbtp; k++) {
    const wd_batch_tp_t *t = &btp[k];
    const char *topic = t->te->name;
    if (t->te->global && bt->c.gt) { /* a lookup topic: positions of this process */
      if (wd_commit_note_global(bt->c.commit, topic, t->partition, t->max, t->count) ||
          wd_gtable_taken(bt->c.gt, topic, t->partition, t->last))
        return wd_error_nomem();
    } else if (wd_commit_note_input(bt->c.commit, topic, t->partition, t->max, t->count)) return wd_error_nomem();
    if (wd_hist_gather_note(bt->c.hg, topic, t->partition, t->min, t->max + 1)) return wd_error_nomem();
  }
  return NULL;
}

/* The counters, once the batch is taken; a record skipped (replay --from, or past a rebuild's stop)
 * is not "in", nor one held for its task (read again when the task runs). Then the open commit's
 * counts, and the batch's merge stats for the metrics. */
static void count(wd_batch_t *bt, size_t n) {
  wd_pipeline_stats_t *st = bt->c.st;
  uint64_t nskipped = 0, ndead = 0, nrestored = 0;
  for (size_t i = 0; i < n; i++) {
    wd_bmsg_t *b = &bt->bm[i];
    nskipped += b->skipped || b->held;
    st->changes_in += b->count;
    st->skipped_tombstones += b->tombstone;
    st->skipped_before_from += b->skipped && !wd_replay_past_stop(bt->c.replay, &bt->msgs[i]);
    ndead += b->err && !bt->restoring[i];
    nrestored += bt->restoring[i];
  }
  st->records_in += n - nskipped;
  st->batches++;
  st->dead_lettered += ndead;
  st->restored += nrestored;
  uint64_t nout = st->changes_out > bt->changes0 ? st->changes_out - bt->changes0 : 0; /* an abort lowers it */
  wd_hist_gather_count(bt->c.hg, n - nskipped, nout, ndead, nrestored);
  wd_run_metrics_merged(bt->c.rm, &bt->ms); /* for the metrics, once the batch is taken */
  st->ignored_update_before += bt->ms.ignored_update_before;
  st->tombstones += bt->ms.tombstones;
  st->dropped += bt->ms.dropped;
}

/* The batch in the order of batch.h; E_BATCH_ABANDONED when a rebalance came meanwhile. */
static wd_error_t *process(wd_batch_t *bt, size_t n) {
  wd_error_t *err = NULL;
  bt->changes0 = bt->c.st->changes_out;
  bt->nrecs = 0;
  bt->ms = (wd_merge_stats_t){0};
  wd_topic_index_batch_begin(bt->c.tix); /* the topic pointers of the last batch's messages may be gone */
  wd_buf_reset(&bt->keys);
  wd_changelog_reset(bt->c.table, &bt->cl);
  for (size_t i = 0; i < n; i++)
    if ((err = decode_message(bt, i))) return err;
  if ((err = read_state(bt))) return err;
  for (size_t i = 0; i < n; i++) /* in delivery order */
    if ((err = merge_message(bt, i))) return err;
  if ((err = emit(bt, n)) || (err = note_inputs(bt, n))) return err;
  if (!wd_commit_batch_invalid(bt->c.commit)) count(bt, n); /* an abandoned batch is read again */
  wd_state_set_now(bt->c.state, (uint64_t)wd_wall_ms());
  return NULL;
}

void wd_batch_release(wd_batch_t *bt, size_t n) {
  for (size_t i = 0; i < n; i++) {
    wd_error_destroy(bt->bm[i].err);
    bt->bm[i].err = NULL;
  }
  for (size_t i = 0; i < bt->nrecs; i++) wd_row_destroy(bt->schema, bt->recs[i]);
  bt->nrecs = 0;
  wd_lookups_batch_done(bt->c.lk);
  wd_kmsg_release(bt->msgs, n);
}

/* The batch's counts to the metrics (once it was taken, before the release). */
static void metrics(wd_batch_t *bt, size_t n) {
  if (!bt->c.rm) return;
  for (size_t i = 0; i < n; i++)
    if (bt->bm[i].te) wd_run_metrics_record(bt->c.rm, bt->bm[i].src);
  for (size_t i = 0; i < bt->cl.n; i++) wd_run_metrics_change(bt->c.rm, bt->cl.rows[i]->kind);
  for (size_t i = 0; i < n; i++) {
    if (bt->bm[i].err && !bt->restoring[i])
      wd_run_metrics_dead_letter_at(bt->c.rm, bt->bm[i].err->id, bt->msgs[i].topic, bt->msgs[i].partition,
                                    bt->msgs[i].offset, bt->bm[i].err->message);
    if (bt->bm[i].tombstone && !bt->restoring[i]) wd_run_metrics_skipped_tombstone(bt->c.rm);
  }
  wd_run_metrics_batch_done(bt->c.rm);
}

wd_error_t *wd_batch_run(wd_batch_t *bt, size_t n, bool *abandoned) {
  wd_commit_batch_begin(bt->c.commit);
  wd_error_t *err = process(bt, n);
  *abandoned = wd_commit_batch_invalid(bt->c.commit);
  if (!err && !*abandoned) metrics(bt, n);
  wd_commit_batch_end(bt->c.commit);
  wd_batch_release(bt, n);
  return err;
}

wd_kmsg_t *wd_batch_msgs(wd_batch_t *bt) { return bt->msgs; }
const wd_ratelog_t *wd_batch_dead_letters(const wd_batch_t *bt) { return &bt->rlog; }

wd_error_t *wd_batch_new(const wd_batch_conf_t *conf, wd_batch_t **out) {
  *out = NULL;
  wd_batch_t *bt = calloc(1, sizeof(*bt));
  if (!bt) return wd_error_nomem();
  bt->c = *conf;
  bt->schema = wd_table_schema(conf->table);
  bt->pu_no_retract = wd_table_rejects_retractions(conf->table);
  wd_changes_init(&bt->changes);
  size_t max = conf->max ? conf->max : 1;
  bt->msgs = calloc(max, sizeof(*bt->msgs));
  bt->bm = calloc(max, sizeof(*bt->bm));
  bt->restoring = calloc(max, sizeof(*bt->restoring));
  wd_formats(&bt->nfmt);
  bt->fmt_state = calloc(bt->nfmt ? bt->nfmt : 1, sizeof(*bt->fmt_state));
  bt->dec_warn = calloc(conf->nsources ? conf->nsources : 1, sizeof(*bt->dec_warn));
  if (!bt->msgs || !bt->bm || !bt->restoring || !bt->fmt_state || !bt->dec_warn) {
    wd_batch_destroy(bt);
    return wd_error_nomem();
  }
  wd_format_env_t env = {conf->registry};
  for (size_t i = 0; i < conf->nsources; i++) {
    const wd_source_t *src = conf->sources[i];
    const wd_format_t *f = wd_format_of(src->format);
    bt->dec_warn[i] = wd_format_decimal_warning(src, bt->schema); /* said at its first schemaless record */
    if (!f->open || bt->fmt_state[src->format]) continue;
    wd_error_t *err = f->open(&env, &bt->fmt_state[src->format]);
    if (err) {
      wd_batch_destroy(bt);
      return err;
    }
  }
  *out = bt;
  return NULL;
}

void wd_batch_destroy(wd_batch_t *bt) {
  if (!bt) return;
  for (size_t i = 0; i < bt->nrecs; i++) wd_row_destroy(bt->schema, bt->recs[i]);
  wd_changelog_free(bt->c.table, &bt->cl);
  wd_changes_free(&bt->changes);
  for (size_t i = 0; bt->fmt_state && i < bt->nfmt; i++) {
    const wd_format_t *f = wd_format_of((wd_source_format_t)i);
    if (bt->fmt_state[i] && f->close) f->close(bt->fmt_state[i]);
  }
  free(bt->fmt_state);
  wd_lookups_batch_done(bt->c.lk);
  for (size_t i = 0; bt->dec_warn && i < bt->c.nsources; i++) free(bt->dec_warn[i]);
  free(bt->dec_warn);
  free(bt->msgs);
  free(bt->bm);
  free(bt->restoring);
  free(bt->recs);
  free(bt->key_off);
  free(bt->rec_task);
  free(bt->cl_src);
  wd_buf_free(&bt->keys);
  wd_ratelog_free(&bt->rlog);
  free(bt);
}
