/*
 * tests/unit/test_lookup_scale.c — lookups under scale-out (join/lookup.h wd_join_set_owner,
 * wd_join_reconcile_task, wd_join_global_key; docs/lookups-scale-out.md) without Kafka: two
 * "processes" X and Y, each with its own store, state and join layer over the invoice workload
 * (tests/support/invoice_workload.h). Both read every lookup event, each at its own random pace
 * (a global table); the invoices are split into two tasks (invoice id % 2), each applied only by
 * its current owner. At random points a task moves: its rows and flags (the keys that are not
 * wd_join_global_key, as the state changelog topic carries them) are copied from the old owner's
 * store into the new owner's (after dropping its own copy of the task), and the new owner
 * reconciles the task. The output of both processes, in the order it was emitted, replayed per
 * key must show no change a consumer cannot explain and end equal to SQLite's join of the final
 * source tables.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/table_config.h"
#include "common/json.h"
#include "join/lookup.h"
#include "join/state.h"
#include "join/store.h"
#include "tests/support/invoice_workload.h"

enum { NTASK = 2 };

typedef struct {
  wd_store_t *st;
  wd_state_t *state;
  wd_join_t *j;
  int ids[WL_TABLES];
  bool owned[NTASK];
  size_t lk_next; /* the next lookup event this process applies */
} proc_t;

static bool owned(void *ctx, uint32_t task) {
  const proc_t *p = ctx;
  return task < NTASK && p->owned[task];
}

static wd_table_t *invoice_table(void) {
  json_t *schema = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]",
                             "name", "invoice_id", "type", "BIGINT NOT NULL", "name", "payment_id", "type", "BIGINT",
                             "name", "customer_id", "type", "BIGINT", "name", "amount", "type", "BIGINT", "name",
                             "reconciliation_id", "type", "BIGINT", "name", "pay_status", "type", "STRING", "name",
                             "recon_status", "type", "STRING", "name", "customer_name", "type", "STRING");
  json_t *pk = json_pack("[s]", "invoice_id"), *opts = json_pack("{s:s}", "merge-engine", "deduplicate");
  wd_table_t *t = NULL;
  wd_error_t *err = wd_table_config_from_json(schema, pk, opts, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  json_decref(schema);
  json_decref(pk);
  json_decref(opts);
  return t;
}

static void proc_init(proc_t *p, const wd_table_t *t) {
  memset(p, 0, sizeof(*p));
  cr_assert_null(wd_store_open_memory(&p->st));
  cr_assert_not_null(p->state = wd_state_new(t, p->st, 0));
  cr_assert_null(wd_join_new(t, &p->j));
  const wd_schema_t *s = wd_table_schema(t);
  bool mapped[8] = {0};
  for (int c = 0; c < 4; c++)
    mapped[wd_schema_find(s, (const char *[]){"invoice_id", "payment_id", "customer_id", "amount"}[c])] = true;
  cr_assert_null(wd_join_add_main(p->j, "invoice", mapped, true, &p->ids[WL_INVOICE]));
  const char *pon[] = {"payment_id"}, *pcols[] = {"reconciliation_id", "pay_status"};
  cr_assert_null(wd_join_add_lookup(p->j, "payment", pon, 1, pcols, 2, true, true, &p->ids[WL_PAYMENT]));
  const char *ron[] = {"reconciliation_id"}, *rcols[] = {"recon_status"};
  cr_assert_null(wd_join_add_lookup(p->j, "reconciliation", ron, 1, rcols, 1, false, false, &p->ids[WL_RECON]));
  const char *con[] = {"customer_id"}, *ccols[] = {"customer_name"};
  cr_assert_null(wd_join_add_lookup(p->j, "customer", con, 1, ccols, 1, false, false, &p->ids[WL_CUSTOMER]));
  cr_assert_null(wd_join_start(p->j, p->state, p->st));
  wd_join_set_owner(p->j, owned, p);
}

static void proc_free(proc_t *p) {
  wd_join_destroy(p->j);
  wd_state_destroy(p->state);
  wd_store_close(p->st);
}

/* An event's image as a row of the source's schema (the lookups' field names: on column, columns). */
static json_t *image(int table, json_t *img, int64_t lsn) {
  json_t *id = json_object_get(img, "id");
  switch (table) {
  case WL_INVOICE:
    return json_pack("{s:O,s:O,s:O,s:O}", "invoice_id", id, "payment_id", json_object_get(img, "payment_id"),
                     "customer_id", json_object_get(img, "customer_id"), "amount", json_object_get(img, "amount"));
  case WL_PAYMENT:
    return json_pack("{s:O,s:O,s:O,s:I}", "payment_id", id, "reconciliation_id",
                     json_object_get(img, "reconciliation_id"), "pay_status", json_object_get(img, "status"), "_seq",
                     (json_int_t)lsn);
  case WL_RECON: return json_pack("{s:O,s:O}", "reconciliation_id", id, "recon_status", json_object_get(img, "status"));
  default: return json_pack("{s:O,s:O}", "customer_id", id, "customer_name", json_object_get(img, "name"));
  }
}

/* Applies event e in process p (one message: -U/+U of an update together), appending what it
 * emits to out as {"op","row"}; the state is flushed after it (as a commit would). */
static void apply(proc_t *p, const wd_table_t *t, const wl_event_t *e, uint32_t task, json_t *out) {
  const wd_schema_t *rs = wd_join_source_schema(p->j, p->ids[e->table]);
  wd_row_t *recs[2];
  size_t n = 0;
  json_t *imgs[2] = {e->op != 'c' ? e->before : NULL, e->op != 'd' ? e->after : NULL};
  wd_row_kind_t kinds[2] = {e->op == 'u' ? WD_UPDATE_BEFORE : WD_DELETE, e->op == 'u' ? WD_UPDATE_AFTER : WD_INSERT};
  for (int k = 0; k < 2; k++) {
    if (!imgs[k]) continue;
    json_t *j = image(e->table, imgs[k], e->lsn);
    recs[n] = wd_row_new(rs);
    wd_error_t *err = wd_row_from_json(rs, j, recs[n]);
    cr_assert_null(err, "%s", err ? err->message : "");
    recs[n++]->kind = kinds[k];
    json_decref(j);
  }
  if (e->table == WL_INVOICE) {
    wd_state_set_task(p->state, task);
    wd_join_set_task(p->j, task);
  }
  wd_changelog_t cl = {0};
  wd_error_t *err = wd_join_apply(p->j, p->ids[e->table], recs, n, &cl, NULL);
  cr_assert_null(err, "%s", err ? err->message : "");
  for (size_t i = 0; i < n; i++) wd_row_destroy(rs, recs[i]);
  for (size_t i = 0; i < cl.n; i++)
    json_array_append_new(out, json_pack("{s:s,s:o}", "op", wd_row_kind_str(cl.rows[i]->kind), "row",
                                         wd_row_to_json(wd_table_schema(t), cl.rows[i])));
  wd_changelog_free(t, &cl);
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_null(wd_state_flush(p->state, b));
  wd_store_batch_destroy(b);
}

typedef struct {
  wd_store_batch_t *b;
  uint32_t task;
  size_t copied;
} copy_t;

/* The keys of one task as the state changelog topic carries them: not a global key, and the task
 * in bytes 1..4 (the wide rows 'R' and the flags). */
static int copy_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  copy_t *c = ctx;
  if (wd_join_global_key(key, klen) || klen < 5) return 0;
  uint32_t task = ((uint32_t)key[1] << 24) | ((uint32_t)key[2] << 16) | ((uint32_t)key[3] << 8) | key[4];
  if (task != c->task || (key[0] != WD_STATE_ROW_NS && key[0] != 0xF3)) return 0;
  cr_assert_eq(wd_store_batch_put(c->b, key, klen, val, vlen), 0);
  c->copied++;
  return 0;
}

/* Moves task from p to q: q drops its copy of the task, gets p's rows and flags, reconciles. */
static size_t move_task(proc_t *p, proc_t *q, const wd_table_t *t, uint32_t task, json_t *out) {
  p->owned[task] = false;
  wd_state_drop_clean(p->state); /* a rebalance: the cache may be another's now */
  wd_state_drop_clean(q->state);
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_null(wd_state_drop_task(q->state, task, b));
  cr_assert_null(wd_store_write(q->st, b));
  wd_store_batch_clear(b);
  copy_t c = {b, task, 0};
  cr_assert_null(wd_store_scan(p->st, copy_cb, &c));
  cr_assert_null(wd_store_write(q->st, b));
  q->owned[task] = true;
  wd_changelog_t cl = {0};
  size_t rows = 0;
  wd_error_t *err = wd_join_reconcile_task(q->j, task, &cl, &rows);
  cr_assert_null(err, "%s", err ? err->message : "");
  for (size_t i = 0; i < cl.n; i++)
    json_array_append_new(out, json_pack("{s:s,s:o}", "op", wd_row_kind_str(cl.rows[i]->kind), "row",
                                         wd_row_to_json(wd_table_schema(t), cl.rows[i])));
  size_t changes = cl.n;
  wd_changelog_free(t, &cl);
  wd_store_batch_clear(b);
  cr_assert_null(wd_state_flush(q->state, b));
  wd_store_batch_destroy(b);
  return changes;
}

static uint64_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* One random run; returns the reconcile changes it saw (so that the suite knows reconcile did
 * something). */
static size_t run(uint64_t seed) {
  wl_workload_t w;
  wl_generate(&w, 500, 24, seed);
  wd_table_t *t = invoice_table();
  proc_t ps[2];
  proc_init(&ps[0], t);
  proc_init(&ps[1], t);
  int owner[NTASK] = {0, 1};
  ps[0].owned[0] = ps[1].owned[1] = true;
  /* the lookup events in order (both processes read them all), the invoice events per task */
  size_t *lk = calloc(w.n, sizeof(*lk)), nlk = 0, *mv[NTASK], nm[NTASK] = {0}, next[NTASK] = {0};
  for (int k = 0; k < NTASK; k++) mv[k] = calloc(w.n, sizeof(size_t));
  for (size_t i = 0; i < w.n; i++) {
    if (w.ev[i].table != WL_INVOICE) {
      lk[nlk++] = i;
      continue;
    }
    json_t *img = w.ev[i].after ? w.ev[i].after : w.ev[i].before;
    uint32_t task = (uint32_t)(json_integer_value(json_object_get(img, "id")) % NTASK);
    mv[task][nm[task]++] = i;
  }
  json_t *out = json_array();
  uint64_t s = seed * 977 + 3;
  size_t reconciled = 0;
  for (;;) {
    bool left = ps[0].lk_next < nlk || ps[1].lk_next < nlk || next[0] < nm[0] || next[1] < nm[1];
    if (!left) break;
    int r = (int)(rnd(&s) % 100);
    if (r < 4) { /* a task moves to the other process */
      uint32_t task = (uint32_t)(rnd(&s) % NTASK);
      int from = owner[task], to = 1 - from;
      reconciled += move_task(&ps[from], &ps[to], t, task, out);
      owner[task] = to;
    } else if (r < 52) { /* a process reads a lookup event (X and Y at their own pace) */
      proc_t *p = &ps[rnd(&s) % 2];
      if (p->lk_next < nlk) apply(p, t, &w.ev[lk[p->lk_next++]], 0, out);
    } else { /* an invoice event of a task, by its owner */
      uint32_t task = (uint32_t)(rnd(&s) % NTASK);
      if (next[task] < nm[task]) apply(&ps[owner[task]], t, &w.ev[mv[task][next[task]++]], task, out);
    }
  }
  json_t *want = wl_sql_join(&w, true), *replayed = NULL;
  char *why = wl_replay(out, "invoice_id", &replayed);
  cr_assert_null(why, "seed %llu: output: %s", (unsigned long long)seed, why);
  cr_assert(wl_rows_equal(replayed, want, &why), "seed %llu: replayed output vs SQL join: %s", (unsigned long long)seed,
            why);
  json_decref(replayed);
  json_decref(want);
  json_decref(out);
  for (int k = 0; k < NTASK; k++) free(mv[k]);
  free(lk);
  proc_free(&ps[0]);
  proc_free(&ps[1]);
  wd_table_destroy(t);
  wl_free(&w);
  return reconciled;
}

Test(lookup_scale, tasks_moving_between_two_global_tables_give_the_sql_join, .timeout = 240) {
  size_t reconciled = 0;
  for (uint64_t seed = 1; seed <= 30; seed++) reconciled += run(seed);
  cr_assert_gt(reconciled, 0, "no reconcile emitted anything: the workload does not test it");
}

/* The keys of no task: lookup rows and index entries; the wide rows and flags are a task's. */
Test(lookup_scale, global_keys) {
  const uint8_t lrow[] = {'L', 0, 0, 0, 1, 7}, idx[] = {0xF2, 0, 7, 0, 0, 0, 0, 3}, row[] = {'R', 0, 0, 0, 2, 9},
                flags[] = {0xF3, 0, 0, 0, 2, 9};
  cr_assert(wd_join_global_key(lrow, sizeof(lrow)));
  cr_assert(wd_join_global_key(idx, sizeof(idx)));
  cr_assert_not(wd_join_global_key(row, sizeof(row)));
  cr_assert_not(wd_join_global_key(flags, sizeof(flags)));
  cr_assert_not(wd_join_global_key(row, 0));
}
