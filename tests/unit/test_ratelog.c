/*
 * tests/unit/test_ratelog.c — common/ratelog.h: one line per (source, error id, field) at once,
 * then at most one per interval with the count not logged; counts by id.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>

#include "common/ratelog.h"

Test(ratelog, each_key_is_logged_at_once_repeats_are_rate_limited) {
  wd_ratelog_t rl = {.interval = 10.0};
  /* the first of each key is logged, even when another key floods */
  cr_assert_eq(wd_ratelog_note(&rl, 0.0, WD_LOG_DEBUG, "t", "orders", "E_TYPE", "amount", "m1"), 1);
  for (int i = 0; i < 50; i++)
    cr_assert_eq(wd_ratelog_note(&rl, 1.0, WD_LOG_DEBUG, "t", "orders", "E_TYPE", "amount", "m1"), 0);
  cr_assert_eq(wd_ratelog_note(&rl, 1.0, WD_LOG_DEBUG, "t", "orders", "E_TYPE", "currency", "m2"), 1);
  cr_assert_eq(wd_ratelog_note(&rl, 1.0, WD_LOG_DEBUG, "t", "payments", "E_TYPE", "amount", "m3"), 1);
  cr_assert_eq(wd_ratelog_note(&rl, 1.0, WD_LOG_DEBUG, "t", "orders", "E_DECODE", NULL, "m4"), 1);
  cr_assert_eq(rl.n, 4);
  cr_assert_eq(rl.v[0].unlogged, 50);
  /* after the interval the key is logged again and its unlogged count restarts */
  cr_assert_eq(wd_ratelog_note(&rl, 10.5, WD_LOG_DEBUG, "t", "orders", "E_TYPE", "amount", "m1"), 1);
  cr_assert_eq(rl.v[0].unlogged, 0);
  cr_assert_eq(rl.v[0].count, 52);
  cr_assert_eq(rl.total, 55);
  wd_buf_t b = {0};
  cr_assert_eq(wd_ratelog_put_counts(&rl, &b), 0);
  wd_buf_putc(&b, 0);
  cr_assert_str_eq((char *)b.data, "E_TYPE 54, E_DECODE 1");
  wd_buf_free(&b);
  wd_ratelog_free(&rl);
  cr_assert_eq(rl.n, 0);
}

Test(ratelog, field_of_a_message) {
  char f[16];
  cr_assert_str_eq(wd_ratelog_field_of("E_TYPE: source 'o': field amount -> column 'amount' DECIMAL", f, sizeof(f)),
                   "amount");
  cr_assert_str_eq(wd_ratelog_field_of("E_DECODE: not JSON", f, sizeof(f)), "");
  cr_assert_str_eq(wd_ratelog_field_of("column 'a_very_long_column_name'", f, 8), "a_very_");
  cr_assert_str_eq(wd_ratelog_field_of(NULL, f, sizeof(f)), "");
}

/* The first line of a key says briefly that repeats are rate-limited (new-user walkthrough: the
 * note made every dead-letter WARN line ~290 characters long). */
Test(ratelog, first_line_has_a_short_note, .init = cr_redirect_stderr) {
  wd_ratelog_t rl = {.interval = 10.0};
  cr_assert_eq(wd_ratelog_note(&rl, 0.0, WD_LOG_WARN, "t", "orders", "E_TYPE", "amount", "bad amount"), 1);
  fflush(stderr);
  char buf[512] = "";
  FILE *f = cr_get_redirected_stderr();
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = 0;
  cr_assert(strstr(buf, "bad amount (more of these: one line every 10 s at most)\n"), "%s", buf);
  wd_ratelog_free(&rl);
}
