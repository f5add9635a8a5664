/*
 * tests/unit/test_history_gather.c — what the open commit took, gathered for its history record
 * (app/ops/history_gather.h): notes merged per partition, the snapshot handing them to the
 * completing commit while the next one gathers, the record put into a state batch and read back
 * (app/ops/history.h), and the ends of a commit (made: trace written; aborted: all dropped).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/ops/history_gather.h"

static wd_history_entry_t *put_and_read(wd_hist_gather_t *g, wd_store_t *st, uint64_t number, bool rebuild,
                                        const wd_producer_range_t *out, size_t nout) {
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_not_null(b);
  cr_assert_eq(wd_hist_gather_put(g, number, b, rebuild, out, nout), 0);
  cr_assert_null(wd_store_write(st, b));
  wd_store_batch_destroy(b);
  wd_history_entry_t *e = NULL;
  cr_assert_null(wd_history_get(st, number, &e));
  cr_assert_not_null(e);
  return e;
}

Test(history_gather, notes_snapshot_and_put) {
  static const char *const t_orders = "orders", *const t_items = "items", *const sink = "wide";
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_hist_gather_t *g = wd_hist_gather_new(sink, 0);
  cr_assert_not_null(g);
  /* the open commit: two batches of orders[0] (merged into one range), one of items[2] */
  cr_assert_eq(wd_hist_gather_note(g, t_orders, 0, 10, 20), 0);
  wd_hist_gather_count(g, 10, 12, 1, 0);
  cr_assert_eq(wd_hist_gather_note(g, t_orders, 0, 20, 25), 0);
  cr_assert_eq(wd_hist_gather_note(g, t_items, 2, 7, 8), 0);
  wd_hist_gather_count(g, 6, 3, 0, 0);
  cr_assert_eq(wd_buf_append(wd_hist_gather_trace(g), "a\n", 2), 0);
  wd_hist_gather_snapshot(g);
  /* the next commit's batch, taken while this one completes */
  cr_assert_eq(wd_hist_gather_note(g, t_orders, 0, 25, 30), 0);
  wd_hist_gather_count(g, 5, 5, 0, 0);
  cr_assert_eq(wd_buf_append(wd_hist_gather_trace(g), "b\n", 2), 0);

  /* the put at the snapshot: no output yet */
  wd_history_entry_t *e = put_and_read(g, st, 1, false, NULL, 0);
  cr_expect_str_eq(e->info.mode, "incremental");
  cr_assert_eq(e->info.nin, 2);
  cr_expect_str_eq(e->info.in[0].topic, "orders");
  cr_expect_eq(e->info.in[0].from, 10);
  cr_expect_eq(e->info.in[0].to, 25, "the later batch of the next commit is not this one's");
  cr_expect_str_eq(e->info.in[1].topic, "items");
  cr_expect_eq(e->info.in[1].partition, 2);
  cr_expect_eq(e->info.nout, 0);
  cr_expect_eq(e->info.records_in, 16);
  cr_expect_eq(e->info.changes_out, 15);
  cr_expect_eq(e->info.dead_letters, 1);
  wd_history_entry_free(e);

  /* the put once the output is complete: the sink topic's delivery ranges only */
  wd_producer_range_t out[] = {{"wide", 1, 100, 115}, {"wide.dlq", 0, 3, 4}, {"x-changelog", 0, 0, 9}};
  e = put_and_read(g, st, 1, false, out, 3);
  cr_assert_eq(e->info.nout, 1);
  cr_expect_str_eq(e->info.out[0].topic, "wide");
  cr_expect_eq(e->info.out[0].partition, 1);
  cr_expect_eq(e->info.out[0].from, 100);
  cr_expect_eq(e->info.out[0].to, 115);
  cr_expect_geq(e->info.duration_ms, 0);
  cr_expect_geq(wd_hist_gather_duration_s(g), 0);
  wd_history_entry_free(e);

  /* made: its trace lines are written, the next commit's stay */
  char buf[64] = {0};
  FILE *f = fmemopen(buf, sizeof(buf), "w");
  cr_assert_not_null(f);
  wd_hist_gather_committed(g, f);
  fclose(f);
  cr_expect_str_eq(buf, "a\n");
  cr_expect_eq(wd_hist_gather_trace(g)->len, 2);

  /* the next commit: every record taken only rebuilt state: "restore"; rebuild wins over it */
  wd_hist_gather_count(g, 0, 0, 0, 5);
  wd_hist_gather_snapshot(g);
  e = put_and_read(g, st, 2, false, NULL, 0);
  cr_expect_str_eq(e->info.mode, "restore");
  cr_assert_eq(e->info.nin, 1);
  cr_expect_eq(e->info.in[0].from, 25);
  cr_expect_eq(e->info.in[0].to, 30);
  cr_expect_eq(e->info.records_in, 5);
  wd_history_entry_free(e);
  e = put_and_read(g, st, 2, true, NULL, 0);
  cr_expect_str_eq(e->info.mode, "rebuild");
  wd_history_entry_free(e);

  /* aborted: both commits' gathering and trace lines are dropped */
  cr_assert_eq(wd_hist_gather_note(g, t_items, 0, 1, 2), 0);
  wd_hist_gather_count(g, 1, 1, 0, 0);
  cr_assert_eq(wd_buf_append(wd_hist_gather_trace(g), "c\n", 2), 0);
  wd_hist_gather_aborted(g);
  cr_expect_eq(wd_hist_gather_trace(g)->len, 0);
  memset(buf, 0, sizeof(buf));
  f = fmemopen(buf, sizeof(buf), "w");
  wd_hist_gather_committed(g, f);
  fclose(f);
  cr_expect_str_eq(buf, "", "the aborted commit's trace is not written");
  wd_hist_gather_snapshot(g);
  e = put_and_read(g, st, 3, false, NULL, 0);
  cr_expect_eq(e->info.nin, 0);
  cr_expect_eq(e->info.records_in, 0);
  cr_expect_eq(e->info.duration_ms, 0, "nothing noted: no clock");
  wd_history_entry_free(e);
  wd_hist_gather_destroy(g);
  wd_hist_gather_destroy(NULL);
  wd_store_close(st);
}

/* keep: the gatherer's state.history-size reaches wd_history_add */
Test(history_gather, keep) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_hist_gather_t *g = wd_hist_gather_new("wide", 2);
  for (uint64_t n = 1; n <= 4; n++) {
    wd_hist_gather_snapshot(g);
    wd_history_entry_free(put_and_read(g, st, n, false, NULL, 0));
  }
  uint64_t first = 0;
  cr_assert_null(wd_history_first(st, &first));
  cr_expect_eq(first, 3);
  wd_hist_gather_destroy(g);
  wd_store_close(st);
}
