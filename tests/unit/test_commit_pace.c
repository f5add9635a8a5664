/*
 * tests/unit/test_commit_pace.c — app/runtime/commit_pace.h: the adaptive commit interval (issue 22 point 2),
 * a pure function of the rate, the backlog, the processing time per record and a commit's duration.
 * The values are the benchmark machine's: ~15 us of processing a record, ~15 ms a commit, the
 * default bound of 100 ms and floor of 10 ms.
 */
#include <criterion/criterion.h>

#include "app/runtime/commit_pace.h"

static wd_commit_pace_t at(double rate) {
  return (wd_commit_pace_t){.max_ms = 100, .min_ms = 10, .adaptive = true, .backlog = false, .rate = rate,
                            .record_us = 15, .commit_ms = 15};
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
