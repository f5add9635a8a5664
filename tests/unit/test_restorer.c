/*
 * tests/unit/test_restorer.c — app/runtime/restorer.h driven by a fake changelog consumer
 * (wd_restore_io_t) and an in-memory store: each task's records up to its partition's end offset
 * are written (puts and tombstones), the task is reported restored once (with its record count
 * and where it started), a task whose standby copy is at the end already is reported without a
 * record, a report refused by the owner is repeated at the next step, and a transient failure of
 * the end offsets' request is retried at the next step.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/restorer.h"
#include "join/store.h"

#define ok(e)                                                                                                          \
  do {                                                                                                                 \
    wd_error_t *err_ = (e);                                                                                            \
    cr_assert_null(err_, "%s", err_ ? err_->message : "");                                                             \
  } while (0)

/* The fake changelog: partition p holds recs[p][0..n[p]); its end offset is n[p]. */
static struct {
  const char *keys[2][4];
  const char *vals[2][4]; /* NULL: a tombstone */
  size_t n[2];
  size_t pos[2]; /* the consumer's position per partition */
  int64_t from[2]; /* where on_assign started each partition */
  int end_fail; /* end_offsets fails (retriable) this many times */
  int opened, closed;
  int reports;
  uint32_t reported[4];
  uint64_t records[4];
  int64_t from_reported[4];
  bool refuse_next; /* the owner refuses the next report */
} fk;

static int dummy;

static wd_error_t *f_open(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                          wd_consumer_assign_cb on_assign, void *ctx, wd_consumer_t **out) {
  (void)conf;
  cr_assert_eq(ntopics, 1);
  cr_assert_str_eq(topics[0], "wd-changelog");
  for (int32_t p = 0; p < 2; p++) {
    fk.from[p] = on_assign(ctx, topics[0], p);
    fk.pos[p] = fk.from[p] >= 0 ? (size_t)fk.from[p] : 0;
  }
  fk.opened++;
  *out = (wd_consumer_t *)&dummy;
  return NULL;
}

static wd_error_t *f_end_offsets(wd_consumer_t *c, int timeout_ms, wd_tp_offset_t **out, size_t *n) {
  (void)c;
  (void)timeout_ms;
  if (fk.end_fail > 0) {
    fk.end_fail--;
    wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_KAFKA, "leader not available");
    e->retriable = true;
    return e;
  }
  *out = calloc(2, sizeof(**out));
  for (int32_t p = 0; p < 2; p++) (*out)[p] = (wd_tp_offset_t){"wd-changelog", p, (int64_t)fk.n[p]};
  *n = 2;
  return NULL;
}

/* at most 2 records per poll, partition 0 first */
static wd_error_t *f_poll(wd_consumer_t *c, size_t max, int timeout_ms, wd_kmsg_t *msgs, size_t *n) {
  (void)c;
  (void)timeout_ms;
  *n = 0;
  for (int32_t p = 0; p < 2 && *n < 2 && *n < max; p++)
    while (fk.pos[p] < fk.n[p] && fk.from[p] != WD_OFFSET_END && *n < 2) {
      size_t i = fk.pos[p]++;
      msgs[*n] = (wd_kmsg_t){.topic = "wd-changelog",
                             .partition = p,
                             .offset = (int64_t)i,
                             .key = fk.keys[p][i],
                             .key_len = strlen(fk.keys[p][i]),
                             .value = fk.vals[p][i],
                             .value_len = fk.vals[p][i] ? strlen(fk.vals[p][i]) : 0};
      (*n)++;
    }
  return NULL;
}

static void f_release(wd_kmsg_t *msgs, size_t n) { memset(msgs, 0, n * sizeof(*msgs)); }

static wd_error_t *f_positions(wd_consumer_t *c, wd_tp_offset_t **out, size_t *n) {
  (void)c;
  *out = calloc(2, sizeof(**out));
  for (int32_t p = 0; p < 2; p++) (*out)[p] = (wd_tp_offset_t){"wd-changelog", p, (int64_t)fk.pos[p]};
  *n = 2;
  return NULL;
}

static void f_close(wd_consumer_t *c) {
  (void)c;
  fk.closed++;
}

static wd_error_t *restored(void *ctx, uint32_t task, int64_t from, uint64_t records, double seconds) {
  (void)ctx;
  cr_assert_geq(seconds, 0);
  if (fk.refuse_next) {
    fk.refuse_next = false;
    return wd_error_new(WD_ERR_IO, E_STORE_WRITE, "refused once");
  }
  fk.reported[fk.reports] = task;
  fk.records[fk.reports] = records;
  fk.from_reported[fk.reports++] = from;
  return NULL;
}

static wd_restorer_conf_t conf(wd_store_t *st, wd_stop_clock_t *sc) {
  wd_restorer_conf_t rc = {.changelog_topic = "wd-changelog",
                           .store = st,
                           .stop = sc,
                           .restored = restored,
                           .io = {f_open, f_end_offsets, f_poll, f_release, f_positions, f_close}};
  return rc;
}

static void have(wd_store_t *st, const char *key, const char *val) {
  uint8_t *v = NULL;
  size_t vlen = 0;
  const uint8_t *k = (const uint8_t *)key;
  size_t klen = strlen(key);
  ok(wd_store_multi_get(st, 1, &k, &klen, &v, &vlen));
  if (!val) {
    cr_assert_null(v, "%s is still there", key);
    return;
  }
  cr_assert_not_null(v, "%s is missing", key);
  cr_assert_eq(vlen, strlen(val));
  cr_assert_eq(memcmp(v, val, vlen), 0);
  free(v);
}

Test(restorer, each_task_is_written_up_to_its_end_and_reported_once) {
  memset(&fk, 0, sizeof(fk));
  fk.n[0] = 3;
  fk.keys[0][0] = "k1", fk.vals[0][0] = "v1";
  fk.keys[0][1] = "k2", fk.vals[0][1] = "v2";
  fk.keys[0][2] = "k1", fk.vals[0][2] = NULL; /* a tombstone */
  fk.n[1] = 1;
  fk.keys[1][0] = "k9", fk.vals[1][0] = "v9";
  wd_store_t *st = NULL;
  ok(wd_store_open_memory(&st));
  wd_stop_clock_t sc = {0};
  wd_restorer_conf_t rc = conf(st, &sc);
  uint32_t *tasks = calloc(2, sizeof(*tasks));
  int64_t *from = calloc(2, sizeof(*from));
  tasks[0] = 0;
  tasks[1] = 1;
  wd_restorer_t *r = NULL;
  ok(wd_restorer_new(&rc, tasks, from, 2, 0, &r));
  cr_assert_eq(wd_restorer_left(r), 2);
  bool done = false;
  for (int step = 0; step < 10 && !done; step++) ok(wd_restorer_step(r, 20, &done));
  cr_assert(done);
  cr_assert_eq(fk.opened, 1);
  cr_assert_eq(fk.from[0], WD_OFFSET_BEGINNING);
  cr_assert_eq(fk.reports, 2);
  cr_assert_eq(fk.reported[0], 0);
  cr_assert_eq(fk.records[0], 3);
  cr_assert_eq(fk.reported[1], 1);
  cr_assert_eq(fk.records[1], 1);
  cr_assert_eq(wd_restorer_left(r), 0);
  have(st, "k1", NULL);
  have(st, "k2", "v2");
  have(st, "k9", "v9");
  wd_restorer_destroy(r);
  cr_assert_eq(fk.closed, 1);
  wd_store_close(st);
}

Test(restorer, a_standby_copy_at_the_end_is_reported_without_records) {
  memset(&fk, 0, sizeof(fk));
  fk.n[0] = 2;
  fk.keys[0][0] = "k1", fk.vals[0][0] = "v1";
  fk.keys[0][1] = "k2", fk.vals[0][1] = "v2";
  wd_store_t *st = NULL;
  ok(wd_store_open_memory(&st));
  wd_stop_clock_t sc = {0};
  wd_restorer_conf_t rc = conf(st, &sc);
  uint32_t *tasks = calloc(1, sizeof(*tasks));
  int64_t *from = calloc(1, sizeof(*from));
  from[0] = 2; /* the standby copy is at the changelog's end */
  wd_restorer_t *r = NULL;
  ok(wd_restorer_new(&rc, tasks, from, 1, 1, &r));
  bool done = false;
  ok(wd_restorer_step(r, 20, &done));
  cr_assert(done);
  cr_assert_eq(fk.from[0], 2);
  cr_assert_eq(fk.reports, 1);
  cr_assert_eq(fk.records[0], 0);
  cr_assert_eq(fk.from_reported[0], 2);
  have(st, "k1", NULL); /* nothing read again */
  wd_restorer_destroy(r);
  wd_store_close(st);
}

Test(restorer, a_refused_report_and_a_transient_failure_are_tried_again) {
  memset(&fk, 0, sizeof(fk));
  fk.n[0] = 1;
  fk.keys[0][0] = "k1", fk.vals[0][0] = "v1";
  fk.end_fail = 2;
  fk.refuse_next = true;
  wd_store_t *st = NULL;
  ok(wd_store_open_memory(&st));
  wd_stop_clock_t sc = {0};
  wd_restorer_conf_t rc = conf(st, &sc);
  uint32_t *tasks = calloc(1, sizeof(*tasks));
  int64_t *from = calloc(1, sizeof(*from));
  wd_restorer_t *r = NULL;
  ok(wd_restorer_new(&rc, tasks, from, 1, 0, &r));
  bool done = false;
  ok(wd_restorer_step(r, 20, &done)); /* end offsets fail: asked again next time */
  ok(wd_restorer_step(r, 20, &done));
  cr_assert_not(done);
  cr_assert_eq(fk.opened, 2);
  cr_assert_eq(fk.closed, 2);
  wd_error_t *err = wd_restorer_step(r, 20, &done); /* the owner refuses the report */
  cr_assert_not_null(err);
  wd_error_destroy(err);
  cr_assert_not(done);
  cr_assert_eq(wd_restorer_left(r), 1);
  ok(wd_restorer_step(r, 20, &done));
  cr_assert(done);
  cr_assert_eq(fk.reports, 1);
  cr_assert_eq(fk.records[0], 1);
  have(st, "k1", "v1");
  wd_restorer_destroy(r);
  wd_store_close(st);
}
