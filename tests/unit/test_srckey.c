/*
 * tests/unit/test_srckey.c — sources with their own primary key (join/srckey.h): Debezium JSON
 * records as Postgres sends them with its default REPLICA IDENTITY (a delete's before image holds
 * only payment_id, an update has no before image) decoded by the real decoder into the source
 * schema, normalised through the stored source rows, and merged into orders_wide (keyed by
 * order_id) by the merge engine over the state and the in-memory store. Without the layer the
 * key-only delete has no wide key and is left out, and a move leaves the old order with the
 * payment's columns for ever; with it every final wide row is the join of the final source rows.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/format.h"
#include "ingest/source.h"
#include "join/srckey.h"
#include "join/state.h"

typedef struct {
  wd_table_t *t;
  const wd_schema_t *ws;
  wd_store_t *st;
  wd_state_t *wide;
  wd_srckey_t *sk;
  int id;
  wd_source_t *src;
  wd_changes_t dec, out;
  wd_changelog_t cl;
  wd_store_batch_t *b;
} fx_t;

static void fx_open(fx_t *f, wd_store_t *st) {
  memset(f, 0, sizeof(*f));
  const char *names[] = {"order_id", "customer", "pay_method", "amount", "payment_ver"};
  const char *types[] = {"BIGINT NOT NULL", "STRING", "STRING", "BIGINT", "BIGINT"};
  const char *pk[] = {"order_id"};
  wd_schema_t *schema = NULL;
  cr_assert_null(wd_schema_new(5, names, types, 1, pk, &schema));
  wd_option_t opts[] = {{"merge-engine", "partial-update"}, {"fields.payment_ver.sequence-group", "pay_method,amount"}};
  cr_assert_null(wd_table_new(schema, 2, opts, &f->t));
  f->ws = wd_table_schema(f->t);
  f->st = st;
  if (!f->st) cr_assert_null(wd_store_open_memory(&f->st));
  f->wide = wd_state_new(f->t, f->st, 0);
  cr_assert_not_null(f->wide);
  cr_assert_null(wd_srckey_new(f->t, &f->sk));
  bool mapped[5] = {true, false, true, true, true};
  const char *key[] = {"primary-key.payment_id"};
  cr_assert_null(wd_srckey_add(f->sk, "payments", key, 1, mapped, &f->id));
  const wd_schema_t *ss = wd_srckey_schema(f->sk, f->id);
  cr_assert_null(wd_source_new("payments", WD_FMT_DEBEZIUM_JSON, &f->src));
  cr_assert_null(wd_source_add_topic(f->src, "shop.payments"));
  cr_assert_null(wd_source_add_column(f->src, ss, "primary-key.payment_id", "payment_id"));
  cr_assert_null(wd_source_add_column(f->src, ss, "order_id", "order_id"));
  cr_assert_null(wd_source_add_column(f->src, ss, "pay_method", "method"));
  cr_assert_null(wd_source_add_column(f->src, ss, "amount", "amount"));
  cr_assert_null(wd_source_add_column(f->src, ss, "payment_ver", "$.source.ts_ms"));
  cr_assert_null(wd_source_check(f->src, ss));
  for (size_t k = 0; k < f->src->ncols; k++)
    wd_srckey_set_event_col(f->sk, f->id, f->src->cols[k].col, f->src->cols[k].kind != WD_MAP_IMAGE);
  cr_assert_null(wd_srckey_start(f->sk, f->wide, f->st));
  wd_changes_init(&f->dec);
  wd_changes_init(&f->out);
  f->b = wd_store_batch_new();
}

static void fx_close(fx_t *f, bool keep_store) {
  wd_changes_free(&f->dec);
  wd_changes_free(&f->out);
  wd_changelog_free(f->t, &f->cl);
  wd_store_batch_destroy(f->b);
  wd_source_destroy(f->src);
  wd_srckey_destroy(f->sk);
  wd_state_destroy(f->wide);
  if (!keep_store) wd_store_close(f->st);
  wd_table_destroy(f->t);
}

static wd_row_t *add_cb(void *ctx, wd_row_kind_t kind) {
  fx_t *f = ctx;
  return wd_changes_add(&f->out, f->ws, kind);
}

/* Decodes one Debezium JSON value, derives the wide change records ("+I(586) -D(725)" into
 * kinds, when not NULL), merges them and flushes the state (source rows included). */
static void feed(fx_t *f, const char *value, char *kinds, size_t kn) {
  const wd_format_t *fmt = wd_format_of(WD_FMT_DEBEZIUM_JSON);
  wd_error_t *err = fmt->decode(NULL, f->src, wd_srckey_schema(f->sk, f->id), NULL, value, strlen(value), &f->dec);
  cr_assert_null(err, "decode: %s", err ? err->message : "");
  wd_changes_reset(&f->out);
  unsigned nk = 0;
  err = wd_srckey_apply(f->sk, f->id, f->dec.rows, f->dec.count, add_cb, f, &nk);
  cr_assert_null(err, "srckey: %s", err ? err->message : "");
  if (kinds) {
    kinds[0] = 0;
    for (size_t i = 0; i < f->out.count; i++) {
      const wd_row_t *r = f->out.rows[i];
      char one[48];
      snprintf(one, sizeof(one), "%s%s(%lld)", i ? " " : "", wd_row_kind_str(r->kind),
               r->v[0].is_null ? -1LL : (long long)r->v[0].i);
      strncat(kinds, one, kn - strlen(kinds) - 1);
    }
  }
  wd_changelog_reset(f->t, &f->cl);
  err = wd_message_apply(f->t, wd_state_ops(), f->wide, f->out.rows, f->out.count, &f->cl, NULL);
  cr_assert_null(err, "merge: %s", err ? err->message : "");
  err = wd_state_flush(f->wide, f->b);
  cr_assert_null(err, "flush: %s", err ? err->message : "");
}

/* The wide rows as "order_id:pay_method:amount;" (NULL as -), sorted by order_id. */
static void rows_text(fx_t *f, char *out, size_t n) {
  wd_row_t **rows = NULL;
  size_t nrows = 0;
  cr_assert_null(wd_state_rows_sorted(f->wide, &rows, &nrows));
  out[0] = 0;
  for (size_t i = 0; i < nrows; i++) {
    const wd_row_t *r = rows[i];
    char one[96];
    snprintf(one, sizeof(one), "%lld:%.*s:%s;", (long long)r->v[0].i, r->v[2].is_null ? 1 : (int)r->v[2].s.n,
             r->v[2].is_null ? "-" : r->v[2].s.p, r->v[3].is_null ? "-" : "x");
    if (!r->v[3].is_null) snprintf(strrchr(one, 'x'), 24, "%lld;", (long long)r->v[3].i);
    strncat(out, one, n - strlen(out) - 1);
  }
  wd_state_rows_free(f->wide, rows, nrows);
}

#define INS(pid, oid, m, amt, ts)                                                                                      \
  "{\"op\":\"c\",\"before\":null,\"after\":{\"payment_id\":" #pid ",\"order_id\":" #oid ",\"method\":\"" m             \
  "\",\"amount\":" #amt "},\"source\":{\"ts_ms\":" #ts "}}"
#define UPD(pid, oid, m, amt, ts)                                                                                      \
  "{\"op\":\"u\",\"before\":null,\"after\":{\"payment_id\":" #pid ",\"order_id\":" #oid ",\"method\":\"" m             \
  "\",\"amount\":" #amt "},\"source\":{\"ts_ms\":" #ts "}}"
#define DEL(pid, ts) "{\"op\":\"d\",\"before\":{\"payment_id\":" #pid "},\"after\":null,\"source\":{\"ts_ms\":" #ts "}}"

Test(srckey, update_without_before_is_diffed_against_the_stored_row) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256], rows[512];
  feed(&f, INS(100426, 586, "card", 10, 1000), k, sizeof(k));
  cr_assert_str_eq(k, "+I(586)");
  feed(&f, UPD(100426, 586, "cash", 12, 2000), k, sizeof(k));
  cr_assert_str_eq(k, "-U(586) +U(586)"); /* the before image comes from the stored source row */
  /* the -U carries the stored values and the update's own sequence (an event column) */
  rows_text(&f, rows, sizeof(rows));
  cr_assert_str_eq(rows, "586:cash:12;");
  fx_close(&f, false);
}

Test(srckey, a_move_clears_the_old_wide_row_and_fills_the_new_one) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256], rows[512];
  feed(&f, INS(100426, 586, "card", 10, 1000), k, sizeof(k));
  feed(&f, INS(100427, 725, "cash", 5, 1001), k, sizeof(k));
  /* UPDATE payments SET order_id = 725 WHERE payment_id = 100426, before: null */
  feed(&f, UPD(100426, 725, "card", 10, 2000), k, sizeof(k));
  cr_assert_str_eq(k, "-D(586) +I(725)");
  rows_text(&f, rows, sizeof(rows));
  /* 586 keeps no payment column; 725 got 100426's (the later of the two payments) */
  cr_assert_str_eq(rows, "586:-:-;725:card:10;");
  fx_close(&f, false);
}

Test(srckey, a_key_only_delete_retracts_from_the_wide_row_it_was_in) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256], rows[512];
  feed(&f, INS(100426, 586, "card", 10, 1000), k, sizeof(k));
  feed(&f, INS(100427, 725, "cash", 5, 1001), k, sizeof(k));
  feed(&f, DEL(100426, 3000), k, sizeof(k)); /* before: {"payment_id":100426} only */
  cr_assert_str_eq(k, "-D(586)");
  rows_text(&f, rows, sizeof(rows));
  cr_assert_str_eq(rows, "586:-:-;725:cash:5;");
  /* a delete of a key never seen (or already deleted) derives nothing */
  feed(&f, DEL(100426, 3001), k, sizeof(k));
  cr_assert_str_eq(k, "");
  fx_close(&f, false);
}

Test(srckey, the_source_rows_are_in_the_store_with_the_wide_rows) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256], rows[512];
  feed(&f, INS(100426, 586, "card", 10, 1000), k, sizeof(k));
  wd_store_t *st = f.st;
  fx_close(&f, true); /* a restart: new layer and states over the same store */
  fx_open(&f, st);
  feed(&f, UPD(100426, 725, "card", 10, 2000), k, sizeof(k));
  cr_assert_str_eq(k, "-D(586) +I(725)", "the stored source row was lost: %s", k);
  feed(&f, DEL(100426, 3000), k, sizeof(k));
  cr_assert_str_eq(k, "-D(725)");
  rows_text(&f, rows, sizeof(rows));
  cr_assert_str_eq(rows, "586:-:-;725:-:-;");
  fx_close(&f, false);
}

Test(srckey, an_aborted_batch_forgets_its_source_rows) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256];
  feed(&f, INS(100426, 586, "card", 10, 1000), k, sizeof(k));
  /* a move applied but not committed: discarded with the wide state's dirty rows */
  const wd_format_t *fmt = wd_format_of(WD_FMT_DEBEZIUM_JSON);
  const char *v = UPD(100426, 725, "card", 10, 2000);
  cr_assert_null(fmt->decode(NULL, f.src, wd_srckey_schema(f.sk, f.id), NULL, v, strlen(v), &f.dec));
  wd_changes_reset(&f.out);
  cr_assert_null(wd_srckey_apply(f.sk, f.id, f.dec.rows, f.dec.count, add_cb, &f, NULL));
  wd_state_discard(f.wide);
  feed(&f, DEL(100426, 3000), k, sizeof(k));
  cr_assert_str_eq(k, "-D(586)", "the discarded move was kept: %s", k);
  fx_close(&f, false);
}

Test(srckey, config_errors) {
  wd_schema_t *schema = NULL;
  const char *names[] = {"order_id", "x"};
  const char *types[] = {"BIGINT NOT NULL", "STRING"};
  const char *pk[] = {"order_id"};
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &schema));
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_new(schema, 0, NULL, &t));
  wd_srckey_t *sk = NULL;
  cr_assert_null(wd_srckey_new(t, &sk));
  int id = -1;
  bool no_key[2] = {false, true}, all[2] = {true, true};
  const char *key[] = {"primary-key.id"};
  wd_error_t *err = wd_srckey_add(sk, "s", key, 1, no_key, &id);
  cr_assert(wd_error_is(err, WD_EID_C_SOURCE_NO_KEY));
  wd_error_destroy(err);
  err = wd_srckey_add(sk, "s", key, 0, all, &id);
  cr_assert(wd_error_is(err, WD_EID_C_SOURCE_KEY_EMPTY));
  wd_error_destroy(err);
  cr_assert_null(wd_srckey_add(sk, "s", key, 1, all, &id));
  cr_assert_eq(id, 0);
  cr_assert_eq(wd_srckey_schema(sk, 0)->ncols, 3);
  wd_srckey_destroy(sk);
  wd_table_destroy(t);
}

/* The upsert-json format: the value is the row (+I), a null value deletes the Kafka key's row (-D
 * with the key's fields, the others absent), a null key and value is nothing, a key that is not a
 * JSON object on a tombstone is E_DECODE; then through the source rows: an upsert of a stored key
 * is an update, a move, and a tombstone retracts from the wide row. */
Test(srckey, upsert_json_records) {
  fx_t f;
  fx_open(&f, NULL);
  wd_source_t *src = NULL;
  const wd_schema_t *ss = wd_srckey_schema(f.sk, f.id);
  cr_assert_null(wd_source_new("payments", 6, &src));
  cr_assert_str_eq(wd_format_of(6)->name, "upsert-json");
  cr_assert_null(wd_source_add_topic(src, "p"));
  cr_assert_null(wd_source_add_column(src, ss, "primary-key.payment_id", "payment_id"));
  cr_assert_null(wd_source_add_column(src, ss, "order_id", "order_id"));
  cr_assert_null(wd_source_add_column(src, ss, "pay_method", "method"));
  cr_assert_null(wd_source_add_column(src, ss, "amount", "amount"));
  cr_assert_null(wd_source_add_column(src, ss, "payment_ver", "ts"));
  cr_assert_null(wd_source_check(src, ss));
  wd_source_destroy(f.src);
  f.src = src;
  const wd_format_t *fmt = wd_format_of(6);
  const char *key = "{\"schema\":{\"type\":\"struct\"},\"payload\":{\"payment_id\":100426}}";
  wd_kafka_meta_t meta = {"p", 0, 1, -1, key, strlen(key)};
  const char *v1 = "{\"payment_id\":100426,\"order_id\":586,\"method\":\"card\",\"amount\":10,\"ts\":1000}";
  cr_assert_null(fmt->decode(NULL, src, ss, &meta, v1, strlen(v1), &f.dec));
  cr_assert_eq(f.dec.count, 1);
  cr_assert_eq(f.dec.rows[0]->kind, WD_INSERT);
  cr_assert_null(fmt->decode(NULL, src, ss, &meta, NULL, 0, &f.dec)); /* a tombstone */
  cr_assert_eq(f.dec.count, 1);
  cr_assert_eq(f.dec.flags & WD_CHANGES_TOMBSTONE, 0);
  const wd_row_t *d = f.dec.rows[0];
  cr_assert_eq(d->kind, WD_DELETE);
  cr_assert_eq(d->v[0].s.n, 6);
  cr_assert(!memcmp(d->v[0].s.p, "100426", 6));
  cr_assert(d->absent && d->absent[1], "order_id is not in the key: absent");
  wd_kafka_meta_t nokey = {"p", 0, 2, -1, NULL, 0};
  cr_assert_null(fmt->decode(NULL, src, ss, &nokey, "null", 4, &f.dec));
  cr_assert_eq(f.dec.count, 0);
  cr_assert(f.dec.flags & WD_CHANGES_TOMBSTONE);
  wd_kafka_meta_t scalar = {"p", 0, 3, -1, "100426", 6};
  wd_error_t *err = fmt->decode(NULL, src, ss, &scalar, NULL, 0, &f.dec);
  cr_assert(wd_error_is(err, WD_EID_E_DECODE), "%s", err ? err->message : "no error");
  wd_error_destroy(err);

  /* through the source rows into the wide table */
  char k[256], rows[512];
  struct {
    const char *value;
    const char *want;
  } steps[] = {
      {v1, "+I(586)"},
      {"{\"payment_id\":100426,\"order_id\":586,\"method\":\"cash\",\"amount\":11,\"ts\":2000}", "-U(586) +U(586)"},
      {"{\"payment_id\":100426,\"order_id\":725,\"method\":\"cash\",\"amount\":11,\"ts\":3000}", "-D(586) +I(725)"},
      {NULL, "-D(725)"},
  };
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    const char *v = steps[i].value;
    cr_assert_null(fmt->decode(NULL, src, ss, &meta, v, v ? strlen(v) : 0, &f.dec));
    wd_changes_reset(&f.out);
    cr_assert_null(wd_srckey_apply(f.sk, f.id, f.dec.rows, f.dec.count, add_cb, &f, NULL));
    k[0] = 0;
    for (size_t r = 0; r < f.out.count; r++)
      snprintf(k + strlen(k), sizeof(k) - strlen(k), "%s%s(%lld)", r ? " " : "", wd_row_kind_str(f.out.rows[r]->kind),
               (long long)f.out.rows[r]->v[0].i);
    cr_assert_str_eq(k, steps[i].want, "step %zu", i);
    wd_changelog_reset(f.t, &f.cl);
    cr_assert_null(wd_message_apply(f.t, wd_state_ops(), f.wide, f.out.rows, f.out.count, &f.cl, NULL));
    cr_assert_null(wd_state_flush(f.wide, f.b));
  }
  rows_text(&f, rows, sizeof(rows));
  cr_assert_str_eq(rows, "586:-:-;725:-:-;");
  fx_close(&f, false);
}

/* A dropped task (restored from the state changelog topic, rebuilt from the sources) drops its
 * source rows with its wide rows; other tasks' source rows stay. */
Test(srckey, a_dropped_task_drops_its_source_rows) {
  fx_t f;
  fx_open(&f, NULL);
  char k[256];
  wd_state_set_task(f.wide, 1);
  wd_srckey_set_task(f.sk, 1);
  feed(&f, INS(100427, 725, "cash", 5, 1000), k, sizeof(k));
  wd_state_set_task(f.wide, 0);
  wd_srckey_set_task(f.sk, 0);
  feed(&f, INS(100426, 586, "card", 10, 1001), k, sizeof(k));
  cr_assert_null(wd_state_drop_task(f.wide, 0, f.b));
  cr_assert_null(wd_store_write(f.st, f.b));
  wd_store_batch_clear(f.b);
  feed(&f, DEL(100426, 3000), k, sizeof(k));
  cr_assert_str_eq(k, "", "task 0's source row survived the drop: %s", k);
  wd_state_set_task(f.wide, 1);
  wd_srckey_set_task(f.sk, 1);
  feed(&f, DEL(100427, 3001), k, sizeof(k));
  cr_assert_str_eq(k, "-D(725)", "task 1's source row was dropped with task 0: %s", k);
  fx_close(&f, false);
}
