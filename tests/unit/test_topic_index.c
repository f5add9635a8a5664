/*
 * tests/unit/test_topic_index.c — the pipeline's topic index (app/runtime/topic_index.h): entries
 * found by name (the first of a name kept), the per-batch memory of topic pointers, and the
 * batch's partitions gathered once each (count, smallest, largest and last offset).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "app/runtime/topic_index.h"

Test(topic_index, find_by_name_first_kept) {
  wd_topic_ent_t ents[40];
  char names[40][16];
  for (int i = 0; i < 38; i++) {
    snprintf(names[i], sizeof(names[i]), "topic-%d", i);
    ents[i] = (wd_topic_ent_t){names[i], WD_TOPIC_DIRECT, i, false};
  }
  ents[38] = (wd_topic_ent_t){"topic-5", WD_TOPIC_RAW, 99, true}; /* a second entry of a name */
  ents[39] = (wd_topic_ent_t){"g-w-s-repartition", WD_TOPIC_REPARTITION, 3, false};
  wd_topic_index_t *ix = wd_topic_index_new(ents, 40);
  cr_assert_not_null(ix);
  cr_expect_eq(wd_topic_index_size(ix), 39);
  for (int i = 0; i < 38; i++) {
    char other[16]; /* another pointer to the same name */
    snprintf(other, sizeof(other), "topic-%d", i);
    const wd_topic_ent_t *te = wd_topic_index_find(ix, other);
    cr_assert_not_null(te, "%s", other);
    cr_expect_eq(te->si, i);
    cr_expect_eq(te->kind, WD_TOPIC_DIRECT, "the first entry of a name is kept");
    cr_expect_str_eq(te->name, names[i]);
    wd_topic_index_batch_begin(ix);
  }
  const wd_topic_ent_t *rp = wd_topic_index_find(ix, "g-w-s-repartition");
  cr_assert_not_null(rp);
  cr_expect_eq(rp->kind, WD_TOPIC_REPARTITION);
  cr_expect_null(wd_topic_index_find(ix, "unknown"));
  cr_expect_null(wd_topic_index_find(ix, ""));
  wd_topic_index_destroy(ix);
  wd_topic_index_destroy(NULL);
  ix = wd_topic_index_new(NULL, 0); /* no topics */
  cr_assert_not_null(ix);
  cr_expect_null(wd_topic_index_find(ix, "a"));
  wd_topic_index_destroy(ix);
}

/* Within a batch a topic pointer seen is not looked up again (its answer is remembered, an
 * unknown one too); a new batch looks again. */
Test(topic_index, pointers_remembered_per_batch) {
  wd_topic_ent_t ents[] = {{"a", WD_TOPIC_DIRECT, 0, false}};
  wd_topic_index_t *ix = wd_topic_index_new(ents, 1);
  char buf[8] = "a";
  cr_assert_not_null(wd_topic_index_find(ix, buf));
  strcpy(buf, "b"); /* the same pointer, in this batch, is the same topic */
  cr_expect_not_null(wd_topic_index_find(ix, buf));
  wd_topic_index_batch_begin(ix);
  cr_expect_null(wd_topic_index_find(ix, buf));
  strcpy(buf, "a");
  cr_expect_null(wd_topic_index_find(ix, buf), "remembered as unknown in this batch");
  wd_topic_index_batch_begin(ix);
  cr_expect_not_null(wd_topic_index_find(ix, buf));
  wd_topic_index_destroy(ix);
}

Test(topic_index, batch_partitions) {
  wd_topic_ent_t ents[] = {{"a", WD_TOPIC_DIRECT, 0, false}, {"b", WD_TOPIC_DIRECT, 1, true}};
  wd_topic_index_t *ix = wd_topic_index_new(ents, 2);
  const wd_topic_ent_t *a = wd_topic_index_find(ix, "a"), *b = wd_topic_index_find(ix, "b");
  size_t n = 99;
  wd_topic_index_batch(ix, &n);
  cr_expect_eq(n, 0);
  /* a[0]: 7, 5, 9 (last 9... then 6); b[0]; a[1]; then a[0] again */
  cr_assert_eq(wd_topic_index_take(ix, a, 0, 7), 0);
  cr_assert_eq(wd_topic_index_take(ix, a, 0, 5), 0);
  cr_assert_eq(wd_topic_index_take(ix, a, 0, 9), 0);
  cr_assert_eq(wd_topic_index_take(ix, b, 0, 100), 0);
  cr_assert_eq(wd_topic_index_take(ix, a, 1, 3), 0);
  cr_assert_eq(wd_topic_index_take(ix, a, 0, 6), 0);
  const wd_batch_tp_t *t = wd_topic_index_batch(ix, &n);
  cr_assert_eq(n, 3);
  cr_expect_eq(t[0].te, a);
  cr_expect_eq(t[0].partition, 0);
  cr_expect_eq(t[0].count, 4);
  cr_expect_eq(t[0].min, 5);
  cr_expect_eq(t[0].max, 9);
  cr_expect_eq(t[0].last, 6, "the last in delivery order");
  cr_expect_eq(t[1].te, b);
  cr_expect(t[1].te->global);
  cr_expect_eq(t[1].min, 100);
  cr_expect_eq(t[1].max, 100);
  cr_expect_eq(t[1].count, 1);
  cr_expect_eq(t[2].partition, 1);
  /* many partitions: the list grows */
  for (int32_t p = 2; p < 50; p++) cr_assert_eq(wd_topic_index_take(ix, a, p, p * 10), 0);
  t = wd_topic_index_batch(ix, &n);
  cr_assert_eq(n, 51);
  cr_expect_eq(t[50].partition, 49);
  cr_expect_eq(t[50].last, 490);
  wd_topic_index_batch_begin(ix);
  wd_topic_index_batch(ix, &n);
  cr_expect_eq(n, 0, "a new batch starts with no partitions");
  wd_topic_index_destroy(ix);
}
