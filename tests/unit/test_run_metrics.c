/*
 * tests/unit/test_run_metrics.c — the metrics of a running pipeline (app/ops/run_metrics.h): what
 * the loop reports (a batch taken, a commit made, a tick) becomes the widen_* series, read back
 * from the registry's text exposition.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "app/config/table_config.h"
#include "app/ops/run_metrics.h"
#include "app/ops/status.h"
#include "ingest/kafka_stats.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

static char *render(wd_run_metrics_t *m, wd_buf_t *out) {
  wd_buf_reset(out);
  cr_assert_eq(wd_metrics_render(wd_run_metrics_registry(m), out), 0);
  cr_assert_eq(wd_buf_putc(out, 0), 0);
  return (char *)out->data;
}

#define HAS(text, line) cr_expect_not_null(strstr(text, line), "no `%s` in:\n%s", line, text)
#define HASNT(text, line) cr_expect_null(strstr(text, line), "`%s` in:\n%s", line, text)

static wd_table_t *table_with_group(void) {
  const char *names[] = {"id", "a", "v"}, *types[] = {"INT NOT NULL", "STRING", "BIGINT"}, *pk[] = {"id"};
  wd_option_t opts[] = {{"merge-engine", "partial-update"}, {"fields.v.sequence-group", "a"}};
  wd_table_t *t = NULL;
  wd_error_t *err = wd_table_config_build(3, names, types, 1, pk, 2, opts, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  return t;
}

Test(run_metrics, off_is_null_and_every_call_a_no_op) {
  wd_run_metrics_conf_t c = {NULL, false, NULL, NULL, 0};
  wd_run_metrics_t *m = (wd_run_metrics_t *)1;
  cr_assert_null(wd_run_metrics_new(&c, &m));
  cr_assert_null(m);
  wd_merge_stats_t ms = {0};
  wd_run_metrics_merged(NULL, &ms);
  wd_run_metrics_record(NULL, 0);
  wd_run_metrics_change(NULL, WD_INSERT);
  wd_run_metrics_dead_letter(NULL, "E_X");
  wd_run_metrics_batch_done(NULL);
  wd_run_metrics_commit_done(NULL, 1.0);
  cr_expect_not(wd_run_metrics_tick_due(NULL, 100.0, true));
  wd_run_metrics_tick(NULL, &(wd_run_tick_t){0});
  wd_run_metrics_restore_done(NULL);
  wd_run_metrics_commit_made(NULL, 3, 1.0);
  wd_run_metrics_dead_letter_at(NULL, "E_X", "t", 0, 1, "m");
  wd_run_metrics_skipped_tombstone(NULL);
  wd_run_metrics_rebalance(NULL);
  wd_run_metrics_tasks(NULL, 0, NULL, NULL, NULL, 0, 0);
  wd_run_metrics_kafka(NULL, NULL);
  cr_expect_null(wd_run_metrics_status_members(NULL));
  cr_expect_null(wd_run_metrics_status(NULL));
  cr_expect_null(wd_run_metrics_registry(NULL));
  wd_run_metrics_destroy(NULL);
}

Test(run_metrics, batch_commit_and_tick) {
  wd_table_t *t = table_with_group();
  wd_source_t s0 = {.name = "orders"}, s1 = {.name = "payments"};
  const wd_source_t *srcs[] = {&s0, &s1};
  wd_run_metrics_conf_t c = {"127.0.0.1:0", true, t, srcs, 2};
  wd_run_metrics_t *m = NULL;
  wd_error_t *err = wd_run_metrics_new(&c, &m);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_not_null(m);
  wd_buf_t out = {0};
  HAS(render(m, &out), "widen_restore_progress_ratio 0\n"); /* a replay starts at 0 */

  /* a batch: 3 records of orders, 1 of payments, one of no source; 2 +I, a -U/+U pair; a dead letter */
  wd_merge_stats_t ms = {0};
  ms.older_in_group[0] = 2;
  ms.older_by_sequence_field = 1;
  ms.tombstones = 4;
  wd_run_metrics_merged(m, &ms);
  for (int i = 0; i < 3; i++) wd_run_metrics_record(m, 0);
  wd_run_metrics_record(m, 1);
  wd_run_metrics_record(m, -1); /* ignored */
  wd_run_metrics_record(m, 2); /* ignored: past the sources */
  wd_run_metrics_change(m, WD_INSERT);
  wd_run_metrics_change(m, WD_INSERT);
  wd_run_metrics_change(m, WD_UPDATE_BEFORE);
  wd_run_metrics_change(m, WD_UPDATE_AFTER);
  wd_run_metrics_dead_letter(m, "E_JSON");
  wd_run_metrics_batch_done(m);
  char *x = render(m, &out);
  HAS(x, "widen_records_in_total{source=\"orders\"} 3\n");
  HAS(x, "widen_records_in_total{source=\"payments\"} 1\n");
  HAS(x, "widen_changes_out_total{row_kind=\"+I\"} 2\n");
  HAS(x, "widen_changes_out_total{row_kind=\"-U\"} 1\n");
  HAS(x, "widen_changes_out_total{row_kind=\"+U\"} 1\n");
  HAS(x, "widen_changes_out_total{row_kind=\"-D\"} 0\n"); /* present from the start */
  HAS(x, "widen_dead_letters_total{error_id=\"E_JSON\"} 1\n");
  HAS(x, "widen_records_ignored_older_total{sequence_group=\"v\"} 2\n");
  HAS(x, "widen_records_ignored_older_total{sequence_group=\"sequence.field\"} 1\n");
  HAS(x, "widen_ordering_tombstones_written_total 4\n");

  /* a second batch adds to the counts; the merge stats of the first are not counted again */
  wd_run_metrics_record(m, 0);
  wd_run_metrics_batch_done(m);
  x = render(m, &out);
  HAS(x, "widen_records_in_total{source=\"orders\"} 4\n");
  HAS(x, "widen_changes_out_total{row_kind=\"+I\"} 2\n");
  HAS(x, "widen_ordering_tombstones_written_total 4\n");
  HAS(x, "widen_records_ignored_older_total{sequence_group=\"v\"} 2\n");

  /* commits */
  wd_run_metrics_commit_done(m, 0.02);
  wd_run_metrics_commit_done(m, 3.0);
  x = render(m, &out);
  HAS(x, "widen_commits_total 2\n");
  HAS(x, "widen_commit_duration_seconds_bucket{le=\"0.025\"} 1\n");
  HAS(x, "widen_commit_duration_seconds_bucket{le=\"5\"} 2\n");
  HAS(x, "widen_commit_duration_seconds_count 2\n");

  /* ticks: at most one a second unless forced */
  cr_expect(wd_run_metrics_tick_due(m, 100.0, false));
  cr_expect_not(wd_run_metrics_tick_due(m, 100.5, false));
  cr_expect(wd_run_metrics_tick_due(m, 100.5, true));
  cr_expect(wd_run_metrics_tick_due(m, 101.5, false));
  wd_tp_offset_t lags[] = {{"orders", 0, 5}, {"orders", 3, 0}};
  wd_run_tick_t tk = {lags, 2, 2, 4096, 10, 3, 7, 0.25};
  wd_run_metrics_tick(m, &tk);
  x = render(m, &out);
  HAS(x, "widen_consumer_lag{topic=\"orders\",partition=\"0\"} 5\n");
  HAS(x, "widen_consumer_lag{topic=\"orders\",partition=\"3\"} 0\n");
  HAS(x, "widen_assigned_partitions 2\n");
  HAS(x, "widen_state_size_bytes 4096\n");
  HAS(x, "widen_state_cache_hits_total 10\n");
  HAS(x, "widen_state_cache_misses_total 3\n");
  HAS(x, "widen_state_cache_entries 7\n");
  HAS(x, "widen_restore_progress_ratio 0.25\n");
  /* the next tick: the cache counters grow by the difference; a revoked partition's lag goes; an
   * unmeasured restore progress keeps its value */
  wd_run_tick_t tk2 = {lags + 1, 1, 1, 8192, 25, 4, 9, -1};
  wd_run_metrics_tick(m, &tk2);
  x = render(m, &out);
  HASNT(x, "partition=\"0\"");
  HAS(x, "widen_consumer_lag{topic=\"orders\",partition=\"3\"} 0\n");
  HAS(x, "widen_state_cache_hits_total 25\n");
  HAS(x, "widen_state_cache_misses_total 4\n");
  HAS(x, "widen_restore_progress_ratio 0.25\n");
  wd_run_metrics_restore_done(m);
  HAS(render(m, &out), "widen_restore_progress_ratio 1\n");
  wd_buf_free(&out);
  wd_run_metrics_destroy(m);
  wd_table_destroy(t);
}

Test(run_metrics, listen_errors) {
  wd_run_metrics_conf_t c = {"nonsense", false, NULL, NULL, 0};
  wd_run_metrics_t *m = (wd_run_metrics_t *)1;
  wd_error_t *err = wd_run_metrics_new(&c, &m);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_METRICS_LISTEN");
  cr_expect_null(m);
  wd_error_destroy(err);
  /* a replay goes on without the server */
  c.replay = true;
  cr_assert_null(wd_run_metrics_new(&c, &m));
  cr_assert_not_null(m);
  wd_buf_t out = {0};
  HAS(render(m, &out), "widen_restore_progress_ratio 0\n");
  wd_buf_free(&out);
  wd_run_metrics_destroy(m);
}

/* Every series an alert reads exists from the start, at 0 (an absent series is no 0 for an alert):
 * before any record, commit or tick. */
Test(run_metrics, series_are_present_from_the_start) {
  wd_table_t *t = table_with_group();
  wd_source_t s0 = {.name = "orders"}, s1 = {.name = "payments"};
  const wd_source_t *srcs[] = {&s0, &s1};
  wd_run_metrics_conf_t c = {"127.0.0.1:0", false, t, srcs, 2};
  wd_run_metrics_t *m = NULL;
  wd_error_t *err = wd_run_metrics_new(&c, &m);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_buf_t out = {0};
  char *x = render(m, &out);
  const char *zero[] = {"widen_records_in_total{source=\"orders\"} 0\n",
                        "widen_records_in_total{source=\"payments\"} 0\n",
                        "widen_changes_out_total{row_kind=\"+I\"} 0\n",
                        "widen_changes_out_total{row_kind=\"-D\"} 0\n",
                        "widen_commits_total 0\n",
                        "widen_consumer_lag_sum 0\n",
                        "widen_assigned_partitions 0\n",
                        "widen_rebalances_total 0\n",
                        "widen_restores_total 0\n",
                        "widen_kafka_tombstones_skipped_total 0\n",
                        "widen_last_commit_timestamp_seconds 0\n",
                        "widen_tasks{state=\"RUNNING\"} 0\n",
                        "widen_tasks{state=\"RESTORING\"} 0\n",
                        "widen_ordering_tombstones_written_total 0\n",
                        "widen_commit_duration_seconds_count 0\n",
                        "widen_state_cache_hits_total 0\n",
                        "widen_kafka_fetch_queue_messages 0\n"};
  for (size_t i = 0; i < sizeof(zero) / sizeof(*zero); i++) HAS(x, zero[i]);
  HAS(x, "widen_build_info{version=\"");
  HAS(x, "process_open_fds ");
  HAS(x, "process_resident_memory_bytes ");
  HAS(x, "process_cpu_seconds_total ");
  HAS(x, "process_start_time_seconds ");
  wd_buf_free(&out);
  wd_run_metrics_destroy(m);
  wd_table_destroy(t);
}

/* The task states, rebalances, skipped tombstones, the last commit's time, and librdkafka's
 * statistics become series; the status members hold the last commits (records and rows since the
 * previous one), the dead letters by reason with the latest example first. */
Test(run_metrics, tasks_kafka_statistics_and_status_members) {
  wd_table_t *t = table_with_group();
  wd_source_t s0 = {.name = "orders"};
  const wd_source_t *srcs[] = {&s0};
  wd_run_metrics_conf_t c = {"127.0.0.1:0", false, t, srcs, 1};
  wd_run_metrics_t *m = NULL;
  cr_assert_null(wd_run_metrics_new(&c, &m));
  const char *names[] = {"CREATED", "RESTORING", "RECONCILING", "RUNNING", "SUSPENDED", "STANDBY", "CLOSED"};
  uint32_t ids[] = {0, 1, 2, 3};
  int states[] = {3, 1, 6, 3};
  wd_run_metrics_tasks(m, 4, ids, states, names, 7, 2);
  wd_run_metrics_rebalance(m);
  wd_run_metrics_skipped_tombstone(m);
  for (int i = 0; i < 5; i++) wd_run_metrics_record(m, 0);
  wd_run_metrics_change(m, WD_INSERT);
  wd_run_metrics_dead_letter_at(m, "E_DECODE", "orders", 1, 41, "orders[1]@41: E_DECODE: invalid JSON");
  wd_run_metrics_dead_letter_at(m, "E_DECODE", "orders", 2, 7, "orders[2]@7: E_DECODE: invalid JSON");
  wd_run_metrics_dead_letter_at(m, "E_KEY", "orders", 0, 3, "no key");
  wd_run_metrics_batch_done(m);
  wd_run_metrics_commit_made(m, 17, 0.05);
  wd_run_metrics_record(m, 0);
  wd_run_metrics_batch_done(m);
  wd_run_metrics_commit_made(m, 18, 0.5);
  static const char stats[] =
      "{\"ts\":5000000,\"replyq\":3,\"msg_cnt\":0,\"brokers\":{"
      "\"127.0.0.1:9092/bootstrap\":{\"name\":\"127.0.0.1:9092/"
      "bootstrap\",\"nodeid\":-1,\"rtt\":{\"avg\":0,\"p99\":0}},"
      "\"127.0.0.1:9092/1\":{\"name\":\"127.0.0.1:9092/1\",\"nodeid\":1,\"outbuf_msg_cnt\":2,\"waitresp_msg_cnt\":5,"
      "\"rtt\":{\"avg\":1500,\"p99\":25000}}},"
      "\"topics\":{\"orders\":{\"partitions\":{\"0\":{\"partition\":0,\"consumer_lag\":12,\"fetchq_cnt\":4},"
      "\"1\":{\"partition\":1,\"consumer_lag\":-1,\"ls_offset\":90,\"hi_offset\":95,\"app_offset\":80,\"fetchq_cnt\":1}"
      ","
      "\"-1\":{\"partition\":-1,\"consumer_lag\":-1,\"fetchq_cnt\":0}}}}}";
  wd_kafka_stats_t ks = {0};
  cr_assert_eq(wd_kafka_stats_parse(stats, sizeof(stats) - 1, &ks), 0);
  cr_expect_eq(ks.nbrokers, 1, "the bootstrap entry is left out");
  cr_expect_eq(ks.nparts, 2, "partition -1 is left out");
  cr_expect_eq(ks.parts[1].consumer_lag, 10, "no committed offset: ls_offset - app_offset");
  wd_run_metrics_kafka(m, &ks);
  wd_kafka_stats_clear(&ks);
  cr_expect_eq(wd_kafka_stats_parse("[1]", 3, &ks), -1);
  wd_buf_t out = {0};
  char *x = render(m, &out);
  HAS(x, "widen_task_state{task=\"0\",state=\"RUNNING\"} 1\n");
  HAS(x, "widen_task_state{task=\"1\",state=\"RESTORING\"} 1\n");
  HASNT(x, "task=\"2\"");
  HAS(x, "widen_tasks{state=\"RUNNING\"} 2\n");
  HAS(x, "widen_tasks{state=\"RESTORING\"} 1\n");
  HASNT(x, "widen_tasks{state=\"CLOSED\"}");
  HAS(x, "widen_restores_total 2\n");
  HAS(x, "widen_rebalances_total 1\n");
  HAS(x, "widen_kafka_tombstones_skipped_total 1\n");
  HAS(x, "widen_dead_letters_total{error_id=\"E_DECODE\"} 2\n");
  HAS(x, "widen_kafka_broker_rtt_seconds{broker=\"127.0.0.1:9092/1\",quantile=\"avg\"} 0.0015\n");
  HAS(x, "widen_kafka_broker_rtt_seconds{broker=\"127.0.0.1:9092/1\",quantile=\"0.99\"} 0.025");
  HAS(x, "widen_kafka_broker_queue_messages{broker=\"127.0.0.1:9092/1\",queue=\"waitresp\"} 5\n");
  HAS(x, "widen_kafka_consumer_lag{topic=\"orders\",partition=\"0\"} 12\n");
  HAS(x, "widen_kafka_consumer_lag{topic=\"orders\",partition=\"1\"} 10\n");
  HAS(x, "widen_kafka_fetch_queue_messages 5\n");
  HAS(x, "widen_kafka_reply_queue 3\n");
  HASNT(x, "widen_last_commit_timestamp_seconds 0\n");
  char *mem = wd_run_metrics_status_members(m);
  cr_assert_not_null(mem);
  char *doc = NULL;
  cr_assert_gt(asprintf(&doc, "{%s}", mem), 0);
  json_error_t je;
  json_t *j = json_loads(doc, 0, &je);
  cr_assert_not_null(j, "%s: %s", je.text, doc);
  json_t *commits = json_object_get(j, "commits");
  cr_assert_eq(json_array_size(commits), 2);
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(commits, 0), "number")), 17);
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(commits, 0), "records_in")), 5);
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(commits, 0), "changes_out")), 1);
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(commits, 1), "records_in")), 1);
  json_t *dl = json_object_get(j, "dead_letters");
  cr_expect_eq(json_integer_value(json_object_get(dl, "total")), 3);
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(dl, "by_reason"), "E_DECODE")), 2);
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(dl, "by_reason"), "E_KEY")), 1);
  json_t *latest = json_array_get(json_object_get(dl, "latest"), 0);
  cr_expect_str_eq(json_string_value(json_object_get(latest, "error_id")), "E_KEY");
  cr_expect_eq(json_integer_value(json_object_get(latest, "offset")), 3);
  cr_expect_not_null(json_object_get(j, "rates"));
  cr_expect_not_null(json_object_get(json_object_get(j, "process"), "version"));
  json_decref(j);
  free(doc);
  free(mem);
  wd_buf_free(&out);
  wd_run_metrics_destroy(m);
  wd_table_destroy(t);
}

/* GET http://ADDR/path with curl: the status code, the body into *body (malloc'd). */
static int http_get(const char *addr, const char *path, char **body) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "curl -s -m 5 -w '\\n%%{http_code}' http://%s%s", addr, path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  pclose(p);
  char *s = (char *)b.data, *nl = strrchr(s, '\n');
  int code = nl ? atoi(nl + 1) : 0;
  if (nl) *nl = 0;
  *body = s;
  return code;
}

static volatile int publishing;

static void *publisher(void *arg) {
  wd_status_t *st = arg;
  char doc[256];
  for (int i = 0; publishing; i++) {
    snprintf(doc, sizeof(doc), "{\"pipeline\":{\"n\":%d},\"tasks\":[%s]}", i, i % 2 ? "{\"id\":0}" : "");
    cr_assert_eq(wd_status_publish(st, doc, i % 3 != 0, "task 0 is \"RESTORING\""), 0);
    wd_status_beat(st);
  }
  return NULL;
}

/* The probes and /status on the metrics listener: not ready ("starting") before the first
 * snapshot, live from the start; ready as published; /status a valid JSON document while another
 * thread publishes snapshots as fast as it can (the server reads only the published copy). */
Test(run_metrics, probes_and_status_on_the_listener) {
  wd_table_t *t = table_with_group();
  wd_run_metrics_conf_t c = {"127.0.0.1:0", false, t, NULL, 0};
  wd_run_metrics_t *m = NULL;
  cr_assert_null(wd_run_metrics_new(&c, &m));
  const char *addr = wd_metrics_address(wd_run_metrics_registry(m));
  wd_status_t *st = wd_run_metrics_status(m);
  cr_assert_not_null(st);
  char *body = NULL;
  cr_expect_eq(http_get(addr, "/livez", &body), 200, "%s", body);
  free(body);
  cr_expect_eq(http_get(addr, "/readyz", &body), 503, "%s", body);
  cr_expect(strstr(body, "not ready: starting") != NULL, "%s", body);
  free(body);
  cr_expect_eq(http_get(addr, "/status", &body), 200);
  json_t *j = json_loads(body, 0, NULL);
  cr_expect(j && json_is_false(json_object_get(j, "ready")), "%s", body);
  json_decref(j);
  free(body);
  cr_assert_eq(
      wd_status_publish(st, "{\"pipeline\":{\"phase\":\"running\"},\"tasks\":[]}", false, "task 3 is RESTORING"), 0);
  cr_expect_eq(http_get(addr, "/readyz", &body), 503);
  cr_expect(strstr(body, "not ready: task 3 is RESTORING") != NULL, "%s", body);
  free(body);
  cr_assert_eq(wd_status_publish(st, "{\"pipeline\":{\"phase\":\"running\"},\"tasks\":[]}", true, NULL), 0);
  cr_expect_eq(http_get(addr, "/readyz", &body), 200, "%s", body);
  free(body);
  cr_expect_eq(http_get(addr, "/", &body), 200);
  cr_expect(strstr(body, "<html") && strstr(body, "/status"), "%.300s", body);
  free(body);
  cr_expect_eq(http_get(addr, "/nothing", &body), 404);
  free(body);
  /* publishing while the server answers */
  publishing = 1;
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, publisher, st), 0);
  for (int i = 0; i < 40; i++) {
    cr_assert_eq(http_get(addr, "/status", &body), 200);
    json_error_t je;
    j = json_loads(body, 0, &je);
    cr_assert_not_null(j, "/status while publishing: %s: %s", je.text, body);
    cr_expect_not_null(json_object_get(j, "pipeline"), "%s", body);
    json_decref(j);
    free(body);
  }
  publishing = 0;
  pthread_join(th, NULL);
  wd_run_metrics_destroy(m);
  wd_table_destroy(t);
}
