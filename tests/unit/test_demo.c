/*
 * tests/unit/test_demo.c — `widen demo` (the README's first command, on librdkafka's in-process
 * mock cluster) shows its own evidence: the input events with the late ones marked and the change
 * they did not make, deletes as deletes, the bad record as a type error with its dead letter, and
 * the same output on every run.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The standard output of `widen demo` (a new string). */
static char *demo_output(void) {
  const char *bin = getenv("WIDEN_BIN");
  cr_assert_not_null(bin, "WIDEN_BIN is not set (ctest sets it)");
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "'%s' demo 2>/dev/null", bin);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  cr_assert_eq(pclose(p), 0, "widen demo failed:\n%s", buf);
  return buf;
}

Test(demo, shows_its_evidence_and_is_the_same_every_run, .timeout = 240) {
  char *a = demo_output();
  /* the input events, one at a time, each followed by what it caused */
  cr_assert(strstr(a, "#01 "), "%s", a);
  cr_assert(strstr(a, "      LATE: v"), "late events are marked: %s", a);
  cr_assert(strstr(a, "so it changes nothing\n      -> no change\n"), "a late event's (absent) change: %s", a);
  cr_assert(strstr(a, "DELETE v"), "deletes are shown as deletes: %s", a);
  cr_assert(strstr(a, "(the delete clears this stream's columns; the row stays)"), "%s", a);
  cr_assert(strstr(a, "TYPE ERROR: pay_amount \"12.3x\""), "the bad record is a type error: %s", a);
  cr_assert(strstr(a, "-> dead-lettered to shop.orders_wide.dlq: shop.payments["), "%s", a);
  cr_assert(strstr(a, "E_TYPE: source 'payments'"), "%s", a);
  cr_assert(strstr(a, "-- the final wide rows (state store):\n  {\"order_id\":1,"), "%s", a);
  /* The header's event count is the number of events listed (#01..#NN) */
  unsigned head = 0, listed = 0;
  const char *h = strstr(a, "== widen demo: ");
  cr_assert_not_null(h, "%s", a);
  cr_assert_eq(sscanf(h, "== widen demo: %*u orders, %u Debezium events", &head), 1, "%s", h);
  for (const char *q = a; (q = strstr(q, "\n#")); q++) listed++;
  cr_expect_eq(head, listed, "the header says %u events, the demo lists %u", head, listed);
  cr_expect(strstr(a, "-- the 21 input events") != NULL && head == 21, "%s", a);
  /* applied in the order shown: the same output again */
  char *b = demo_output();
  cr_assert_str_eq(a, b, "two runs of widen demo differ");
  free(a);
  free(b);
}
