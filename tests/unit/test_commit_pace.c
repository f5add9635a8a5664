/*
 * tests/unit/test_commit_pace.c — app/runtime/commit_pace.h: the adaptive commit interval,
 * a pure function of the rate, the backlog, the processing time per record and a commit's duration.
 * The values are the benchmark machine's: ~15 us of processing a record, ~15 ms a commit, the
 * default bound of 100 ms and floor of 10 ms.
 */
#include <criterion/criterion.h>

#include "app/runtime/commit_pace.h"

static wd_commit_pace_t at(double rate) {
  return (wd_commit_pace_t){
      .max_ms = 100, .min_ms = 10, .adaptive = true, .backlog = false, .rate = rate, .record_us = 15, .commit_ms = 15};
}

Test(commit_pace, caught_up_at_10k_per_second_commits_at_the_floor) {
  /* u = 10000 * 15 us = 0.15: 15 * (1 / (0.8 * 0.85) - 1) = 7.06 ms, below the floor */
  wd_commit_pace_t in = at(10000);
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 10);
  in.min_ms = 0;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 8, "7.06 ms rounded up");
  in.min_ms = 5;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 8);
}

Test(commit_pace, the_interval_grows_with_the_rate) {
  wd_commit_pace_t in = at(30000); /* u = 0.45: 15 * (1 / 0.44 - 1) = 19.09 */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 20);
  in = at(40000); /* u = 0.6: 15 * (1 / 0.32 - 1) = 31.875 */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 32);
  in = at(60000); /* u = 0.9: 15 * (1 / 0.08 - 1) = 172.5, bounded by commit-interval-ms */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  in = at(70000); /* u = 1.05: busy all the time */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  /* never shorter at a higher rate, always within [min, max] */
  int64_t last = 0;
  for (double rate = 0; rate <= 80000; rate += 250) {
    in = at(rate);
    int64_t ms = wd_commit_pace_interval_ms(&in);
    cr_assert(ms >= last, "%.0f records/s: %lld ms after %lld ms", rate, (long long)ms, (long long)last);
    cr_assert(ms >= 10 && ms <= 100, "%.0f records/s: %lld ms", rate, (long long)ms);
    last = ms;
  }
}

Test(commit_pace, a_longer_commit_lengthens_the_interval) {
  wd_commit_pace_t in = at(30000);
  in.commit_ms = 30; /* 30 * 1.2727 = 38.18 */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 39);
  in.commit_ms = 0; /* no commit measured yet: the floor */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 10);
}

Test(commit_pace, a_backlog_commits_at_the_configured_interval) {
  wd_commit_pace_t in = at(10000);
  in.backlog = true;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  in.max_ms = 1000;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 1000);
  in.backlog = false; /* caught up again: the same interval as before */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 10);
}

Test(commit_pace, at_least_once_and_a_fixed_interval_keep_the_configured_one) {
  wd_commit_pace_t in = at(10000);
  in.adaptive = false; /* at-least-once: the output is visible as it is produced */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  in = at(10000);
  in.min_ms = 100; /* commit-interval-min-ms = commit-interval-ms: Kafka Streams' fixed commit.interval.ms */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  in.min_ms = 500; /* a floor above the bound: the bound */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 100);
  in = at(10000);
  in.max_ms = 0; /* commit-interval-ms 0: after every batch */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 0);
}

Test(commit_pace, unknown_or_negative_inputs_count_as_zero) {
  wd_commit_pace_t in = at(-5);
  in.record_us = -1;
  in.commit_ms = -3;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 10);
  in = at(0); /* idle: 15 * (1 / 0.8 - 1) = 3.75, below the floor */
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 10);
  in.min_ms = -7;
  cr_assert_eq(wd_commit_pace_interval_ms(&in), 4);
}

/* The pacer measures the rule's inputs: the rate and the processing time per record over windows
 * of at least 200 ms (the past weighs half at each window), a commit's duration (0.7 the past), a
 * full poll as a backlog. */
Test(commit_pace, the_pacer_measures_over_windows_of_200_ms) {
  wd_commit_pacer_t pc;
  wd_commit_pacer_init(&pc, 100, 10, true);
  cr_assert_eq(pc.interval, 100);
  wd_commit_pacer_batch(&pc, 10.0, 50, false, 0.001); /* opens the window */
  wd_commit_pacer_batch(&pc, 10.1, 50, false, 0.001); /* 0.1 s: the window stays open */
  cr_assert_eq(pc.in.rate, 0);
  wd_commit_pacer_batch(&pc, 10.25, 100, false, 0.002); /* 0.25 s, 200 records: 800/s, 20 us each */
  cr_assert_float_eq(pc.in.rate, 800.0, 1e-6);
  cr_assert_float_eq(pc.in.record_us, 20.0, 1e-6);
  cr_assert_eq(pc.win_records, 0);
  wd_commit_pacer_batch(&pc, 10.65, 1200, false, 0.012); /* 0.4 s: 3000/s, 10 us: halfway to each */
  cr_assert_float_eq(pc.in.rate, 1900.0, 1e-6);
  cr_assert_float_eq(pc.in.record_us, 15.0, 1e-6);
  wd_commit_pacer_commit(&pc, 10.0);
  wd_commit_pacer_commit(&pc, 20.0);
  cr_assert_float_eq(pc.in.commit_ms, 13.0, 1e-9);
  /* u = 1900 * 15e-6 = 0.0285: 13 * (1 / (0.8 * 0.9715) - 1) = 3.7..., below the floor */
  cr_assert_eq(wd_commit_pacer_interval(&pc), 10);
  cr_assert_eq(pc.interval, 10);
  wd_commit_pacer_batch(&pc, 10.7, 500, true, 0.0); /* a full poll: behind (the window stays open) */
  cr_assert_eq(wd_commit_pacer_interval(&pc), 100);
  wd_commit_pacer_backlog(&pc, false);
  cr_assert_eq(wd_commit_pacer_interval(&pc), 10);
}
