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
  wd_run_metrics_record(m, 2);  /* ignored: past the sources */
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
  HASNT(x, "row_kind=\"-D\"");
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
