/*
 * tests/unit/test_batch.c — app/runtime/batch.h: poll batches driven through the unit over a real
 * (in-memory) store, with the changelog's output caught by the emit hook. Checked: the changelog
 * rows of a batch (kinds and full rows, as the merge over the stored rows makes them), which
 * message each row came from and its flag "only rebuilds state", an undecodable record and a
 * record the merge rejects (a delete into a partial-update table) dead-lettered without rows, the
 * state written by one batch read by the next (a partial update keeps the stored columns), the
 * -U a table without retractions leaves out, the counters, and a message whose output the emitter
 * rejects as too large dead-lettered. The collector (dead letters) runs on
 * librdkafka's mock cluster; the data path through a real broker is tests/integration.
 */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/runtime/batch.h"
#include "changelog/sink_format.h"
#include "common/json.h"
#include "common/log.h"

#define ok(e)                                                                                                          \
  do {                                                                                                                 \
    wd_error_t *err_ = (e);                                                                                            \
    cr_assert_null(err_, "%s", err_ ? err_->message : "");                                                             \
  } while (0)

static const char *const yaml = "kafka:\n"
                                "  bootstrap.servers: 127.0.0.1:1\n"
                                "  group.id: test-batch\n"
                                "table:\n"
                                "  name: wide\n"
                                "  schema:\n"
                                "    - {name: id, type: BIGINT NOT NULL}\n"
                                "    - {name: name, type: STRING}\n"
                                "    - {name: qty, type: INT}\n"
                                "  primary-key: [id]\n"
                                "  options:\n"
                                "    merge-engine: partial-update\n"
                                "sink:\n"
                                "  topic: wide-out\n"
                                "  dead-letter-topic: wide-dlq\n"
                                "state:\n"
                                "  dir: /tmp/test-batch-unused\n"
                                "sources:\n"
                                "  - name: items\n"
                                "    topic: items\n"
                                "    columns:\n"
                                "      id:\n"
                                "      name:\n"
                                "      qty:\n";

/* What the emit hook saw: per row its kind, its row as JSON, its message and that message's flag. */
typedef struct {
  char rows[16][160];
  size_t msg[16];
  bool quiet[16];
  size_t n;
  int calls;
  long reject; /* >= 0: the hook rejects this message's output as too large */
} seen_t;

typedef struct {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc;
  wd_config_t *cfg;
  wd_table_t *table;
  wd_source_t **sources;
  wd_lookups_t *lk;
  wd_store_t *store;
  wd_state_t *state;
  wd_collector_t *coll;
  wd_commit_t *commit;
  wd_repart_t *rp;
  wd_topic_index_t *tix;
  wd_hist_gather_t *hg;
  wd_replay_t replay;
  wd_pipeline_stats_t st;
  volatile sig_atomic_t stop;
  wd_batch_t *bt;
  wd_emitter_t emitter;
  seen_t seen;
  char path[64];
} fix_t;

static wd_error_t *catch_emit(void *ctx, const wd_emit_rows_t *r) {
  fix_t *f = ctx;
  f->seen.calls++;
  const wd_schema_t *sc = wd_table_schema(f->table);
  for (size_t i = 0; i < r->n && f->seen.n < 16; i++) {
    json_t *j = wd_row_to_json(sc, r->rows[i]);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    size_t k = f->seen.n++;
    snprintf(f->seen.rows[k], sizeof(f->seen.rows[k]), "%s %s", wd_row_kind_str(r->rows[i]->kind), s);
    free(s);
    json_decref(j);
    f->seen.msg[k] = r->msg ? r->msg[i] : 0;
    f->seen.quiet[k] = r->quiet && r->quiet[f->seen.msg[k]];
  }
  if (f->seen.reject >= 0 && r->too_large)
    r->too_large(r->ctx, (size_t)f->seen.reject,
                 wd_error_new(WD_ERR_RECORD, E_OUTPUT_TOO_LARGE, "message %ld: too large", f->seen.reject));
  return NULL;
}

/* real: the changelog goes through a real emitter (debezium-json values, JSON keys) to the
 * collector, whose producer takes messages of at most max_bytes (0: librdkafka's default). */
static void fix_open_with(fix_t *f, bool real, const char *max_bytes) {
  memset(f, 0, sizeof(*f));
  f->seen.reject = -1;
  snprintf(f->path, sizeof(f->path), "/tmp/test_batch_%d.yaml", (int)getpid());
  FILE *y = fopen(f->path, "w");
  cr_assert_not_null(y);
  fputs(yaml, y);
  fclose(y);
  ok(wd_config_load(f->path, &f->cfg));
  ok(wd_config_build_table(f->cfg, &f->table));
  cr_assert_not_null(f->sources = calloc(f->cfg->sources.n, sizeof(*f->sources)));
  ok(wd_lookups_new(f->cfg, f->table, f->sources, &f->lk));
  ok(wd_store_open_memory(&f->store));
  cr_assert_not_null(f->state = wd_state_new(f->table, f->store, 0));
  /* the collector on the mock cluster (the dead letters) */
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  cr_assert_not_null(f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)), "%s", errstr);
  cr_assert_not_null(f->mc = rd_kafka_mock_cluster_new(f->rk, 1));
  wd_kafka_conf_t kc = {0};
  ok(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(f->mc)));
  ok(wd_kafka_conf_set(&kc, "log_level", "0"));
  if (max_bytes) ok(wd_kafka_conf_set(&kc, "message.max.bytes", max_bytes));
  ok(wd_collector_new(&kc, &f->coll));
  wd_kafka_conf_clear(&kc);
  static const char *const topics[] = {"items"};
  wd_commit_conf_t cc = {.interval_ms = 60000, .txn_timeout_ms = 60000, .topics = topics, .ntopics = 1};
  ok(wd_commit_new(&cc, f->coll, NULL, f->state, f->store, &f->commit));
  cr_assert_not_null(f->rp = wd_repart_new(f->cfg->sources.n));
  wd_topic_ent_t ent = {f->sources[0]->topics[0], WD_TOPIC_DIRECT, 0, false};
  cr_assert_not_null(f->tix = wd_topic_index_new(&ent, 1));
  cr_assert_not_null(f->hg = wd_hist_gather_new("wide-out", 4));
  wd_replay_init(&f->replay, false, -1, NULL);
  wd_emitter_init(&f->emitter, &(wd_emitter_conf_t){wd_table_schema(f->table), "wide", "wide-out",
                                                    wd_sink_format_at(WD_CONFIG_SINK_DEBEZIUM_JSON),
                                                    wd_key_format_at(WD_CONFIG_KEY_JSON), NULL, f->coll, false,
                                                    &f->st.changes_out, &f->st.messages_out});
  wd_batch_conf_t bc = {.table = f->table,
                        .sources = f->sources,
                        .nsources = f->cfg->sources.n,
                        .state = f->state,
                        .commit = f->commit,
                        .coll = f->coll,
                        .lk = f->lk,
                        .rp = f->rp,
                        .tix = f->tix,
                        .hg = f->hg,
                        .replay = &f->replay,
                        .emitter = &f->emitter,
                        .emit = real ? NULL : catch_emit,
                        .emit_ctx = f,
                        .dlq_topic = "wide-dlq",
                        .max = 8,
                        .stop = &f->stop,
                        .st = &f->st};
  ok(wd_batch_new(&bc, &f->bt));
}

static void fix_open(fix_t *f) { fix_open_with(f, false, NULL); }

static void fix_close(fix_t *f) {
  wd_batch_destroy(f->bt);
  wd_emitter_free(&f->emitter);
  wd_replay_free(&f->replay);
  wd_hist_gather_destroy(f->hg);
  wd_topic_index_destroy(f->tix);
  wd_repart_destroy(f->rp);
  wd_commit_destroy(f->commit);
  wd_collector_destroy(f->coll);
  wd_lookups_destroy(f->lk);
  wd_state_destroy(f->state);
  wd_store_close(f->store);
  for (size_t i = 0; i < f->cfg->sources.n; i++) wd_source_destroy(f->sources[i]);
  free(f->sources);
  wd_table_destroy(f->table);
  wd_config_destroy(f->cfg);
  rd_kafka_mock_cluster_destroy(f->mc);
  rd_kafka_destroy(f->rk);
  unlink(f->path);
}

/* Record i of the batch: a Debezium JSON value at (items, 0, offset). */
static void put(fix_t *f, size_t i, int64_t offset, const char *value) {
  wd_kmsg_t *m = &wd_batch_msgs(f->bt)[i];
  *m = (wd_kmsg_t){.topic = "items",
                   .partition = 0,
                   .offset = offset,
                   .timestamp = 1000 + offset,
                   .value = value,
                   .value_len = strlen(value)};
}

static void run(fix_t *f, size_t n) {
  memset(&f->seen.rows, 0, sizeof(f->seen.rows));
  f->seen.n = 0;
  bool abandoned = true;
  ok(wd_batch_run(f->bt, n, &abandoned));
  cr_assert_not(abandoned);
}

static void before(void) { wd_log_set_level(WD_LOG_ERROR); }

Test(batch, a_batch_emits_the_changelog_rows_of_its_messages_with_their_flags_and_dead_letters_the_bad_one,
     .init = before) {
  fix_t f;
  fix_open(&f);
  put(&f, 0, 10, "{\"before\":null,\"after\":{\"id\":1,\"name\":\"apple\",\"qty\":3},\"op\":\"c\"}");
  put(&f, 1, 11, "{\"before\":null,\"after\":{\"id\":2,\"name\":\"pear\",\"qty\":1},\"op\":\"c\"}");
  put(&f, 2, 12, "{not json");
  put(&f, 3, 13,
      "{\"before\":{\"id\":1,\"name\":\"apple\",\"qty\":3},\"after\":{\"id\":1,\"name\":\"apple\",\"qty\":5},"
      "\"op\":\"u\"}");
  run(&f, 4);
  cr_assert_eq(f.seen.calls, 1, "one emit per batch");
  cr_assert_eq(f.seen.n, 4, "rows: %zu", f.seen.n);
  cr_assert_str_eq(f.seen.rows[0], "+I {\"id\":1,\"name\":\"apple\",\"qty\":3}");
  cr_assert_str_eq(f.seen.rows[1], "+I {\"id\":2,\"name\":\"pear\",\"qty\":1}");
  cr_assert_str_eq(f.seen.rows[2], "-U {\"id\":1,\"name\":\"apple\",\"qty\":3}");
  cr_assert_str_eq(f.seen.rows[3], "+U {\"id\":1,\"name\":\"apple\",\"qty\":5}");
  size_t want_msg[] = {0, 1, 3, 3}; /* message 2 was dead-lettered: no row */
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(f.seen.msg[i], want_msg[i], "row %zu came from message %zu", i, f.seen.msg[i]);
    cr_assert_not(f.seen.quiet[i], "row %zu: its message runs (not only rebuilding state)", i);
  }
  cr_assert_eq(f.st.records_in, 4);
  /* a partial-update table without sequence groups takes no retraction: the update's -U is left
   * out (counted), its +U merged; the changelog still carries -U/+U of the stored row */
  cr_assert_eq(f.st.changes_in, 3, "changes in: %llu", (unsigned long long)f.st.changes_in);
  cr_assert_eq(f.st.ignored_update_before, 1);
  cr_assert_eq(f.st.dead_lettered, 1);
  cr_assert_eq(f.st.batches, 1);
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_DEAD_LETTER), 1, "the undecodable record went to the DLQ");
  /* the open commit holds the batch's inputs: the partition's last offset */
  cr_assert(wd_commit_pending(f.commit));

  /* the next batch merges over what this one left in the state */
  put(&f, 0, 14, "{\"before\":{\"id\":2,\"name\":\"pear\",\"qty\":1},\"after\":null,\"op\":\"d\"}");
  put(&f, 1, 15, "{\"before\":null,\"after\":{\"id\":1,\"qty\":6},\"op\":\"c\"}");
  run(&f, 2);
  /* a partial-update table rejects the delete (a merge rejection: dead-lettered, no row) */
  cr_assert_eq(f.seen.n, 2, "rows %zu", f.seen.n);
  cr_assert_str_eq(f.seen.rows[0], "-U {\"id\":1,\"name\":\"apple\",\"qty\":5}");
  cr_assert_str_eq(f.seen.rows[1], "+U {\"id\":1,\"name\":\"apple\",\"qty\":6}",
                   "a partial update keeps the stored name");
  cr_assert_eq(f.seen.msg[0], 1);
  cr_assert_eq(f.seen.msg[1], 1);
  cr_assert_eq(f.st.dead_lettered, 2);
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_DEAD_LETTER), 2);
  cr_assert_eq(f.st.records_in, 6);
  cr_assert_eq(f.st.batches, 2);
  fix_close(&f);
}

Test(batch, an_output_the_emitter_rejects_as_too_large_dead_letters_its_message, .init = before) {
  fix_t f;
  fix_open(&f);
  f.seen.reject = 1;
  put(&f, 0, 20, "{\"before\":null,\"after\":{\"id\":7,\"name\":\"plum\",\"qty\":2},\"op\":\"c\"}");
  put(&f, 1, 21, "{\"before\":null,\"after\":{\"id\":8,\"name\":\"fig\",\"qty\":9},\"op\":\"c\"}");
  run(&f, 2);
  cr_assert_eq(f.seen.n, 2);
  cr_assert_eq(f.seen.msg[1], 1);
  cr_assert_eq(f.st.dead_lettered, 1, "the message whose output was too large");
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_DEAD_LETTER), 1);
  fix_close(&f);
}

/* The real emitter: one Debezium JSON message per change (an update's -U/+U in one), keyed by
 * primary key; an output over the producer's message.max.bytes dead-letters the (small) record that
 * caused it, the rows after it go on, and the state keeps the change. */
Test(batch, the_emitter_sends_the_changelog_and_dead_letters_a_record_whose_output_is_too_large, .init = before) {
  fix_t f;
  fix_open_with(&f, true, "3000");
  char big[1700], value[2000];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  snprintf(value, sizeof(value), "{\"before\":null,\"after\":{\"id\":1,\"name\":\"%s\",\"qty\":1},\"op\":\"c\"}", big);
  put(&f, 0, 30, value); /* ~1.7 kB in and out */
  put(&f, 1, 31, "{\"before\":null,\"after\":{\"id\":2,\"name\":\"fig\",\"qty\":9},\"op\":\"c\"}");
  run(&f, 2);
  cr_assert_eq(f.st.changes_out, 2);
  cr_assert_eq(f.st.messages_out, 2);
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_CHANGELOG), 2);
  cr_assert_eq(f.st.dead_lettered, 0);
  /* a small update of the big row: its output carries the row twice (before and after), ~3.4 kB */
  put(&f, 0, 32, "{\"before\":null,\"after\":{\"id\":1,\"qty\":2},\"op\":\"u\"}");
  put(&f, 1, 33, "{\"before\":null,\"after\":{\"id\":3,\"name\":\"kiwi\",\"qty\":4},\"op\":\"c\"}");
  run(&f, 2);
  cr_assert_eq(f.st.dead_lettered, 1, "the update whose output is too large");
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_DEAD_LETTER), 1);
  cr_assert_eq(wd_collector_count(f.coll, WD_OUT_CHANGELOG), 3, "the next record's change is sent");
  cr_assert_eq(f.st.messages_out, 3);
  cr_assert_eq(f.st.changes_in, 4);
  fix_close(&f);
}

/* A replay with --from: records older than the point in time are skipped (not "in", no rows,
 * counted), the later ones taken. */
Test(batch, a_replay_from_a_point_in_time_skips_the_older_records, .init = before) {
  fix_t f;
  fix_open(&f);
  wd_replay_init(&f.replay, true, 1012, NULL); /* the records' timestamps are 1000 + offset */
  put(&f, 0, 10, "{\"before\":null,\"after\":{\"id\":1,\"name\":\"a\",\"qty\":1},\"op\":\"c\"}");
  put(&f, 1, 11, "{\"before\":null,\"after\":{\"id\":2,\"name\":\"b\",\"qty\":1},\"op\":\"c\"}");
  put(&f, 2, 12, "{\"before\":null,\"after\":{\"id\":3,\"name\":\"c\",\"qty\":1},\"op\":\"c\"}");
  put(&f, 3, 13, "{\"before\":null,\"after\":{\"id\":4,\"name\":\"d\",\"qty\":1},\"op\":\"c\"}");
  run(&f, 4);
  cr_assert_eq(f.seen.n, 2, "rows %zu", f.seen.n);
  cr_assert_str_eq(f.seen.rows[0], "+I {\"id\":3,\"name\":\"c\",\"qty\":1}");
  cr_assert_eq(f.seen.msg[0], 2);
  cr_assert_eq(f.seen.msg[1], 3);
  cr_assert_eq(f.st.records_in, 2);
  cr_assert_eq(f.st.skipped_before_from, 2);
  fix_close(&f);
}
