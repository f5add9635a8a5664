/*
 * tests/unit/test_lookup.c — joins on other keys (join/lookup.h) through wd_simulate_run, the code
 * path of `widen simulate` (table loading, join layer, merge engine, state, store): random
 * workloads over invoice / payment / reconciliation / customer (tests/support/invoice_workload.h:
 * random order across the four streams, key changes, deletes) must give the SQL join of the final
 * source tables (SQLite), and replaying the emitted changelog per key must give the same table with
 * no change a consumer cannot explain. The hand-written cases are in tests/cases/lookup.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli/simulate.h"
#include "join/lookup.h"
#include "join/state.h"
#include "app/config/table_config.h"
#include "tests/support/invoice_workload.h"

/* The invoice_wide table and its four sources in the case format of tests/cases/README.md. */
static json_t *invoice_case(bool pay_inner, bool seq) {
  return json_pack(
      "{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}],s:[s],s:{s:s},"
      "s:[{s:s,s:[s,s,s,s],s:b},{s:s,s:b,s:[s],s:[s,s],s:b,s:b},{s:s,s:b,s:[s],s:[s]},{s:s,s:b,s:[s],s:[s]}]}",
      "schema", "name", "invoice_id", "type", "BIGINT NOT NULL", "name", "payment_id", "type", "BIGINT", "name",
      "customer_id", "type", "BIGINT", "name", "amount", "type", "BIGINT", "name", "reconciliation_id", "type",
      "BIGINT", "name", "pay_status", "type", "STRING", "name", "recon_status", "type", "STRING", "name",
      "customer_name", "type", "STRING", "primary_key", "invoice_id", "options", "merge-engine", "deduplicate",
      "sources", "name", "invoice", "columns", "invoice_id", "payment_id", "customer_id", "amount", "required", 1,
      "name", "payment", "lookup", 1, "on", "payment_id", "columns", "reconciliation_id", "pay_status", "required",
      pay_inner, "sequence", seq, "name", "reconciliation", "lookup", 1, "on", "reconciliation_id", "columns",
      "recon_status", "name", "customer", "lookup", 1, "on", "customer_id", "columns", "customer_name");
}

/* A source row image as the lookup's (or the wide table's) row of the case format. */
static json_t *case_row(int table, json_t *img, int64_t lsn, bool seq) {
  if (!img) return NULL;
  json_t *id = json_object_get(img, "id");
  switch (table) {
  case WL_INVOICE:
    return json_pack("{s:O,s:O,s:O,s:O}", "invoice_id", id, "payment_id", json_object_get(img, "payment_id"),
                     "customer_id", json_object_get(img, "customer_id"), "amount", json_object_get(img, "amount"));
  case WL_PAYMENT: {
    json_t *r = json_pack("{s:O,s:O,s:O}", "payment_id", id, "reconciliation_id",
                          json_object_get(img, "reconciliation_id"), "pay_status", json_object_get(img, "status"));
    if (seq) json_object_set_new(r, "_seq", json_integer(lsn));
    return r;
  }
  case WL_RECON: return json_pack("{s:O,s:O}", "reconciliation_id", id, "recon_status", json_object_get(img, "status"));
  default: return json_pack("{s:O,s:O}", "customer_id", id, "customer_name", json_object_get(img, "name"));
  }
}

/* The workload as case input: c -> +I(after); u -> -U(before), +U(after) in one message; d -> -D. */
static json_t *case_input(const wl_workload_t *w, bool seq) {
  json_t *in = json_array();
  for (size_t i = 0; i < w->n; i++) {
    const wl_event_t *e = &w->ev[i];
    const char *src = wl_table_names[e->table];
    if (e->op != 'c')
      json_array_append_new(in, json_pack("{s:s,s:s,s:o,s:i}", "source", src, "op", e->op == 'u' ? "-U" : "-D", "row",
                                          case_row(e->table, e->before, e->lsn, seq), "message", (int)i));
    if (e->op != 'd')
      json_array_append_new(in, json_pack("{s:s,s:s,s:o,s:i}", "source", src, "op", e->op == 'u' ? "+U" : "+I", "row",
                                          case_row(e->table, e->after, e->lsn, seq), "message", (int)i));
  }
  return in;
}

static void run_workload(uint64_t seed, size_t nev, int keys, bool pay_inner, const char *store, long batch) {
  wl_workload_t w;
  wl_generate(&w, nev, keys, seed);
  bool seq = seed % 2 == 0;
  json_t *cs = invoice_case(pay_inner, seq);
  cr_assert_not_null(cs);
  json_object_set_new(cs, "input", case_input(&w, seq));
  json_t *out = NULL;
  int rc = wd_simulate_run(cs, store, batch, &out);
  cr_assert_eq(rc, 0, "seed %llu: simulate failed", (unsigned long long)seed);
  json_t *err = json_object_get(out, "error");
  cr_assert(json_is_null(err), "seed %llu: %s", (unsigned long long)seed, json_dumps(err, 0));
  json_t *want = wl_sql_join(&w, pay_inner);
  cr_assert_not_null(want, "the SQLite reference failed");
  char *why = NULL;
  cr_assert(wl_rows_equal(json_object_get(out, "rows"), want, &why), "seed %llu (%s, batch %ld): rows vs SQL: %s",
            (unsigned long long)seed, pay_inner ? "INNER" : "LEFT", batch, why);
  json_t *replayed = NULL;
  why = wl_replay(json_object_get(out, "changelog"), "invoice_id", &replayed);
  cr_assert_null(why, "seed %llu: changelog: %s", (unsigned long long)seed, why);
  cr_assert(wl_rows_equal(replayed, want, &why), "seed %llu: replayed changelog vs SQL: %s", (unsigned long long)seed,
            why);
  /* the workload is not trivial: rows appear, and lookups keep changing them */
  cr_assert_gt(json_array_size(json_object_get(out, "changelog")), nev / 4);
  json_decref(replayed);
  json_decref(want);
  json_decref(out);
  json_decref(cs);
  wl_free(&w);
}

Test(lookup, random_workloads_inner_equal_sql_join, .timeout = 240) {
  for (uint64_t seed = 1; seed <= 24; seed++) run_workload(seed, 300, 24, true, "memory", 1);
}

Test(lookup, random_workloads_left_equal_sql_join, .timeout = 240) {
  for (uint64_t seed = 101; seed <= 124; seed++) run_workload(seed, 300, 24, false, "memory", 1);
}

/* through RocksDB with the state flushed every few messages, so reads come from the store and the
 * overlay of unwritten index changes */
Test(lookup, random_workloads_through_rocksdb_in_batches, .timeout = 240) {
  for (uint64_t seed = 201; seed <= 206; seed++) run_workload(seed, 400, 30, seed % 2, "rocksdb", 1 + (long)seed % 7);
}

/* A fan-out: one lookup row referenced by many wide rows; one change of it updates every one. */
Test(lookup, one_payment_change_updates_every_referencing_invoice) {
  json_t *cs = invoice_case(true, false), *in = json_array();
  for (int i = 1; i <= 500; i++)
    json_array_append_new(in, json_pack("{s:s,s:s,s:{s:i,s:i,s:n,s:i}}", "source", "invoice", "op", "+I", "row",
                                        "invoice_id", i, "payment_id", 7, "customer_id", "amount", i));
  json_array_append_new(in, json_pack("{s:s,s:s,s:{s:i,s:s}}", "source", "payment", "op", "+I", "row", "payment_id", 7,
                                      "pay_status", "paid"));
  json_array_append_new(in, json_pack("{s:s,s:s,s:{s:i,s:s},s:i}", "source", "payment", "op", "-U", "row", "payment_id",
                                      7, "pay_status", "paid", "message", 1));
  json_array_append_new(in, json_pack("{s:s,s:s,s:{s:i,s:s},s:i}", "source", "payment", "op", "+U", "row", "payment_id",
                                      7, "pay_status", "refunded", "message", 1));
  json_object_set_new(cs, "input", in);
  json_t *out = NULL;
  cr_assert_eq(wd_simulate_run(cs, "rocksdb", 64, &out), 0);
  json_t *cl = json_object_get(out, "changelog"), *rows = json_object_get(out, "rows");
  cr_assert_eq(json_array_size(cl), 1500); /* 500 +I when the payment arrives, then 500 -U/+U */
  cr_assert_eq(json_array_size(rows), 500);
  for (size_t i = 0; i < 500; i++) {
    json_t *r = json_array_get(rows, i);
    cr_assert_str_eq(json_string_value(json_object_get(r, "pay_status")), "refunded");
    cr_assert_eq(json_integer_value(json_object_get(r, "amount")), (json_int_t)i + 1);
  }
  json_decref(out);
  json_decref(cs);
}

/* The configuration errors name the sources. */
Test(lookup, column_filled_twice_refused) {
  wd_table_t *t = NULL;
  const char *names[] = {"k", "a", "b"}, *types[] = {"INT NOT NULL", "INT", "STRING"}, *pk[] = {"k"};
  cr_assert_null(wd_table_config_build(3, names, types, 1, pk, 0, NULL, &t));
  wd_join_t *j = NULL;
  cr_assert_null(wd_join_new(t, &j));
  bool mapped[3] = {true, true, true};
  int id = -1;
  cr_assert_null(wd_join_add_main(j, "main", mapped, false, &id));
  const char *on[] = {"a"}, *cols[] = {"b"};
  cr_assert_null(wd_join_add_lookup(j, "dim", on, 1, cols, 1, false, false, &id));
  wd_error_t *err = wd_join_check(j);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_LOOKUP_COLUMN_SHARED");
  cr_assert(strstr(err->message, "'dim'") && strstr(err->message, "'main'"), "%s", err->message);
  wd_error_destroy(err);
  const char *bad_cols[] = {"k"};
  err = wd_join_add_lookup(j, "dim2", on, 1, bad_cols, 1, false, false, &id);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_LOOKUP_COLUMN_KEY");
  wd_error_destroy(err);
  wd_join_destroy(j);
  wd_table_destroy(t);
}
