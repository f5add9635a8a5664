/*
 * tests/unit/test_history_retention.c — the commit history kept by time and size
 * (app/ops/history.h: wd_history_add_retained, wd_history_kept_load, wd_history_kept_range,
 * "history/first"), on an in-memory store and on RocksDB (reopened: the index is rebuilt from
 * what is stored).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/ops/history.h"
#include "app/ops/history_gather.h"

#define T0 1700000000000LL

/* Commit number at time t (ms), through the retained add; returns the record's JSON size. */
static size_t add(wd_store_t *st, wd_history_kept_t *k, const wd_history_retention_t *r, uint64_t number, int64_t t) {
  wd_commit_range_t in[1] = {{"src", 0, (int64_t)number * 10, (int64_t)number * 10 + 10}};
  wd_commit_range_t out[1] = {{"out", 0, (int64_t)number, (int64_t)number + 1}};
  wd_commit_info_t ci = {number, t, "incremental", in, 1, out, 1, 10, 1, 0, 1.5};
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_history_add_retained(b, &ci, r, k), 0);
  cr_assert_null(wd_store_write(st, b));
  wd_store_batch_destroy(b);
  wd_buf_t j = {0};
  cr_assert_eq(wd_history_to_json(&ci, &j), 0);
  size_t n = j.len;
  wd_buf_free(&j);
  return n;
}

static bool present(wd_store_t *st, uint64_t n) {
  wd_history_entry_t *e = NULL;
  cr_assert_null(wd_history_get(st, n, &e));
  bool p = e != NULL;
  wd_history_entry_free(e);
  return p;
}

/* One commit a second for 2 hours, retention 1 h: the history keeps the last hour (3601
 * commits: those not older than 1 h before the newest), reports it, and a count would not. */
Test(history_retention, by_time) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_history_kept_t *k = NULL;
  cr_assert_null(wd_history_kept_load(st, &k));
  wd_history_retention_t r = {.max_age_ms = 3600 * 1000};
  for (uint64_t n = 1; n <= 7200; n++) add(st, k, &r, n, T0 + (int64_t)n * 1000);
  uint64_t first = 0, last = 0;
  int64_t fms = 0, lms = 0;
  cr_assert_null(wd_history_kept_range(st, &first, &fms, &last, &lms));
  cr_expect_eq(last, 7200);
  cr_expect_eq(first, 3600, "first %" PRIu64, first);
  cr_expect_eq(lms - fms, 3600 * 1000);
  cr_expect(!present(st, 3599) && present(st, 3600) && !present(st, 1));
  uint64_t recs = 0, bytes = 0;
  wd_history_kept_stats(k, &recs, &bytes);
  cr_expect_eq(recs, 3601);
  wd_history_kept_free(k);
  wd_store_close(st);
}

/* Size bound: the records' bytes together never exceed max_bytes; the oldest go first. */
Test(history_retention, by_bytes) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_history_kept_t *k = NULL;
  cr_assert_null(wd_history_kept_load(st, &k));
  wd_history_retention_t r = {.max_age_ms = 24LL * 3600 * 1000, .max_bytes = 20000};
  size_t one = 0;
  for (uint64_t n = 1; n <= 1000; n++) one = add(st, k, &r, n, T0 + (int64_t)n);
  uint64_t recs = 0, bytes = 0;
  wd_history_kept_stats(k, &recs, &bytes);
  cr_expect_leq(bytes, 20000);
  cr_expect_gt(bytes + one + 16, 20000, "more was dropped than needed: %" PRIu64 " bytes kept", bytes);
  uint64_t first = 0, last = 0;
  cr_assert_null(wd_history_first(st, &first));
  cr_assert_null(wd_history_last(st, &last));
  cr_expect_eq(last - first + 1, recs);
  cr_expect(present(st, first) && !present(st, first - 1));
  wd_history_kept_free(k);
  wd_store_close(st);
}

/* A reopened RocksDB store: the index is rebuilt from the stored records, and the next commits
 * go on dropping by age; a commit put twice (its second put) counts once. */
Test(history_retention, reopened_and_put_twice) {
  char dir[] = "/tmp/widen-histret-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  wd_store_options_t so = {0};
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_rocksdb(dir, &so, &st));
  wd_history_kept_t *k = NULL;
  cr_assert_null(wd_history_kept_load(st, &k));
  wd_history_retention_t r = {.max_age_ms = 100 * 1000};
  for (uint64_t n = 1; n <= 150; n++) {
    add(st, k, &r, n, T0 + (int64_t)n * 1000);
    add(st, k, &r, n, T0 + (int64_t)n * 1000); /* the commit's second put */
  }
  uint64_t recs = 0, bytes = 0;
  wd_history_kept_stats(k, &recs, &bytes);
  cr_expect_eq(recs, 101);
  wd_history_kept_free(k);
  wd_store_close(st);
  st = NULL;
  cr_assert_null(wd_store_open_rocksdb(dir, &so, &st));
  cr_assert_null(wd_history_kept_load(st, &k));
  uint64_t recs2 = 0, bytes2 = 0;
  wd_history_kept_stats(k, &recs2, &bytes2);
  cr_expect_eq(recs2, 101);
  cr_expect_eq(bytes2, bytes);
  for (uint64_t n = 151; n <= 170; n++) add(st, k, &r, n, T0 + (int64_t)n * 1000);
  uint64_t first = 0, last = 0;
  int64_t fms = 0, lms = 0;
  cr_assert_null(wd_history_kept_range(st, &first, &fms, &last, &lms));
  cr_expect_eq(first, 70);
  cr_expect_eq(last, 170);
  cr_expect_eq(fms, T0 + 70 * 1000);
  wd_history_kept_free(k);
  wd_store_close(st);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* The gatherer with a retention: its puts drop by age (what the pipeline uses). */
Test(history_retention, gatherer) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_hist_gather_t *g = wd_hist_gather_new("wide", 0);
  cr_assert_not_null(g);
  wd_history_retention_t r = {.max_bytes = 1};
  cr_assert_null(wd_hist_gather_retain(g, &r, st));
  for (uint64_t n = 1; n <= 5; n++) {
    cr_assert_eq(wd_hist_gather_note(g, "src", 0, (int64_t)n, (int64_t)n + 1), 0);
    wd_hist_gather_snapshot(g);
    wd_store_batch_t *b = wd_store_batch_new();
    cr_assert_eq(wd_hist_gather_put(g, n, b, false, NULL, 0), 0);
    cr_assert_null(wd_store_write(st, b));
    wd_store_batch_destroy(b);
    wd_hist_gather_committed(g, NULL);
  }
  uint64_t first = 0, last = 0;
  cr_assert_null(wd_history_first(st, &first));
  cr_assert_null(wd_history_last(st, &last));
  cr_expect_eq(first, 5, "a 1-byte bound keeps only the newest record");
  cr_expect_eq(last, 5);
  wd_hist_gather_destroy(g);
  wd_store_close(st);
}
