/*
 * tests/unit/test_hardening.c — regressions found by trying to break widen (adversarial run):
 *  - deeply nested JSON is refused as E_DECODE quickly (jsmn is quadratic in the depth);
 *  - schemaless DECIMAL strings that are not decimal text are type errors, not silently decoded
 *    base64 bytes ("NaN" once became 137.31), unless decimal-encoding says base64;
 *  - a state directory remembers its table's schema and refuses another (C_STATE_SCHEMA);
 *  - a state directory's missing parents are created.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ingest/source.h"
#include "join/merge.h"
#include "join/state.h"

static wd_schema_t *schema_of(const char *dec_type) {
  const char *names[] = {"id", "d", "note"};
  const char *types[] = {"INT NOT NULL", dec_type, "STRING"};
  const char *pk[] = {"id"};
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(3, names, types, 1, pk, &s);
  cr_assert_null(err, "%s", err ? err->message : "");
  return s;
}

static wd_source_t *source_of(const wd_schema_t *s) {
  wd_source_t *src = NULL;
  cr_assert_null(wd_source_new("t", WD_FMT_DEBEZIUM_JSON, &src));
  cr_assert_null(wd_source_add_topic(src, "t"));
  for (size_t i = 0; i < s->ncols; i++) cr_assert_null(wd_source_add_column(src, s, s->cols[i].name, NULL));
  return src;
}

/* Decodes an after image {"id":1,"d":<dec>} and returns the error id ("" when decoded) and the
 * value as text in out. */
static void decode_decimal(wd_source_t *src, const wd_schema_t *s, const char *dec_json, char *id, char *out) {
  char value[256];
  snprintf(value, sizeof(value), "{\"before\":null,\"after\":{\"id\":1,\"d\":%s},\"op\":\"c\"}", dec_json);
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_error_t *err = wd_decode_debezium_json(src, s, NULL, value, strlen(value), &ch);
  id[0] = out[0] = 0;
  if (err) {
    strcpy(id, err->id);
    wd_error_destroy(err);
  } else {
    cr_assert_eq(ch.count, 1);
    wd_buf_t b = {0};
    cr_assert_eq(wd_value_format(s->cols[1].type, &ch.rows[0]->v[1], &b), 0);
    snprintf(out, 64, "%s", b.len ? (char *)b.data : "");
    wd_buf_free(&b);
  }
  wd_changes_free(&ch);
}

Test(hardening, deep_json_nesting_is_refused_quickly) {
  wd_schema_t *s = schema_of("DECIMAL(10,2)");
  wd_source_t *src = source_of(s);
  size_t depth = 200000;
  char *v = malloc(depth * 2 + 200);
  int n = sprintf(v, "{\"before\":null,\"after\":{\"id\":1,\"x\":");
  memset(v + n, '[', depth);
  memset(v + n + depth, ']', depth);
  strcpy(v + n + 2 * depth, "},\"op\":\"c\"}");
  wd_changes_t ch;
  wd_changes_init(&ch);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  wd_error_t *err = wd_decode_debezium_json(src, s, NULL, v, strlen(v), &ch);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_DECODE");
  cr_expect(strstr(err->message, "nested deeper") != NULL, "%s", err->message);
  wd_error_destroy(err);
  /* moderate nesting in an unmapped field still decodes */
  const char *ok = "{\"before\":null,\"after\":{\"id\":2,\"x\":[[[[{\"a\":[1,[2]]}]]]]},\"op\":\"c\"}";
  err = wd_decode_debezium_json(src, s, NULL, ok, strlen(ok), &ch);
  cr_expect_null(err, "%s", err ? err->message : "");
  wd_error_destroy(err);
  cr_expect_eq(ch.count, 1);
  wd_changes_free(&ch);
  free(v);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

Test(hardening, schemaless_decimal_strings) {
  wd_schema_t *s = schema_of("DECIMAL(10,2)");
  wd_source_t *src = source_of(s);
  char id[64], out[64];
  decode_decimal(src, s, "\"NaN\"", id, out);
  cr_expect_str_eq(id, "E_TYPE", "NaN gave %s / %s", id, out);
  decode_decimal(src, s, "\"\"", id, out);
  cr_expect_str_eq(id, "E_TYPE", "empty string gave %s / %s", id, out);
  decode_decimal(src, s, "\"Infinity\"", id, out);
  cr_expect_str_eq(id, "E_TYPE", "Infinity gave %s / %s", id, out);
  decode_decimal(src, s, "\"+5\"", id, out);
  cr_expect_str_eq(out, "5.00", "+5 gave %s / %s", id, out);
  decode_decimal(src, s, "\"12.30\"", id, out);
  cr_expect_str_eq(out, "12.30");
  decode_decimal(src, s, "\"BM4=\"", id, out); /* Debezium precise: 1230 unscaled, scale 2 */
  cr_expect_str_eq(out, "12.30", "base64 gave %s / %s", id, out);
  /* decimal-encoding: text refuses bytes; base64 reads even digit-only strings as bytes */
  cr_assert_null(wd_source_set_option(src, "decimal-encoding", "text"));
  decode_decimal(src, s, "\"BM4=\"", id, out);
  cr_expect_str_eq(id, "E_TYPE");
  cr_assert_null(wd_source_set_option(src, "decimal-encoding", "base64"));
  decode_decimal(src, s, "\"AAAA\"", id, out);
  cr_expect_str_eq(out, "0.00", "AAAA as bytes gave %s / %s", id, out);
  wd_error_t *err = wd_source_set_option(src, "decimal-encoding", "hex");
  cr_expect(err && !strcmp(err->id, "C_BAD_OPTION_VALUE"));
  wd_error_destroy(err);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

static wd_table_t *table_of(const char *dec_type) {
  wd_table_t *t = NULL;
  wd_error_t *err = wd_table_new(schema_of(dec_type), 0, NULL, &t);
  cr_assert_null(err);
  return t;
}

Test(hardening, state_remembers_its_schema) {
  char dir[] = "/tmp/widen-hardening-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char sdir[300];
  snprintf(sdir, sizeof(sdir), "%s/a/b/state", dir); /* parents created */
  wd_table_t *t1 = table_of("DECIMAL(10,2)"), *t2 = table_of("DECIMAL(12,2)");
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(sdir, NULL, &st);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_state_t *s = wd_state_new(t1, st, 0);
  cr_assert_null(wd_state_check_table(s, sdir));
  cr_assert_null(wd_state_check_table(s, sdir)); /* the same table again */
  wd_state_destroy(s);
  s = wd_state_new(t2, st, 0);
  err = wd_state_check_table(s, sdir);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_STATE_SCHEMA");
  cr_expect(strstr(err->message, "DECIMAL(12,2)") && strstr(err->message, "DECIMAL(10,2)"), "%s", err->message);
  /* the differing column is named */
  cr_expect(strstr(err->message, "column 'd' is DECIMAL(10,2) in the state, DECIMAL(12,2) in this config"), "%s",
            err->message);
  wd_error_destroy(err);
  wd_state_destroy(s);
  wd_store_close(st);
  wd_table_destroy(t1);
  wd_table_destroy(t2);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* A source that fills a group's fields but not its sequence field would have them all dropped:
 * refused at start (newcomer run: `config check` used to say OK). */
Test(hardening, source_must_fill_the_group_sequence) {
  const char *names[] = {"k", "a", "ga", "b", "gb"};
  const char *types[] = {"INT", "INT", "INT", "INT", "INT"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(5, names, types, 1, pk, &s));
  wd_option_t opts[] = {
      {"merge-engine", "partial-update"}, {"fields.ga.sequence-group", "a"}, {"fields.gb.sequence-group", "b"}};
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_new(s, 3, opts, &t));
  bool ok[] = {true, true, true, false, false}; /* k, a, ga */
  bool bad[] = {true, true, true, true, false}; /* also b without gb */
  bool none[] = {true, false, false, false, true}; /* a sequence without fields is fine */
  cr_expect_null(wd_table_check_source_columns(t, ok, "source 'x'"));
  cr_expect_null(wd_table_check_source_columns(t, none, "source 'x'"));
  wd_error_t *err = wd_table_check_source_columns(t, bad, "source 'x'");
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_SOURCE_GROUP_NO_SEQUENCE");
  cr_expect(strstr(err->message, "'b'") && strstr(err->message, "'gb'"), "%s", err->message);
  wd_error_destroy(err);
  wd_table_destroy(t);
}

/* The decoded-row cache keeps to its memory budget, and rows evicted from it are read back from the
 * store unchanged (a budget of 64 KiB with 2,000 rows of ~300 bytes forces evictions). */
Test(hardening, state_cache_memory_budget) {
  const char *names[] = {"k", "v"};
  const char *types[] = {"INT", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &sc));
  wd_option_t opts[] = {{"merge-engine", "partial-update"}};
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_new(sc, 1, opts, &t));
  const wd_schema_t *s = wd_table_schema(t);
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_state_t *state = wd_state_new(t, st, 1000000);
  wd_state_set_memory_budget(state, 64 * 1024);
  wd_store_batch_t *b = wd_store_batch_new();
  wd_changelog_t cl = {0};
  char text[320];
  for (int round = 0; round < 2; round++) {
    for (int k = 0; k < 2000; k++) {
      wd_row_t *r = wd_row_new(s);
      r->v[0].is_null = false;
      r->v[0].i = k;
      snprintf(text, sizeof(text), "%d-%d-%0280d", round, k, k);
      cr_assert_eq(wd_value_set_bytes(&r->v[1], text, strlen(text)), 0);
      cr_assert_null(wd_message_apply(t, wd_state_ops(), state, &r, 1, &cl, NULL));
      wd_row_destroy(s, r);
      if (k % 100 == 99) {
        cr_assert_null(wd_state_flush(state, b));
        cr_expect_leq(wd_state_cached_bytes(state), 64 * 1024, "cache %zu bytes", wd_state_cached_bytes(state));
      }
    }
  }
  /* the second round updated every row: 2000 +I then 2000 -U/+U pairs, each -U the first value */
  cr_assert_eq(cl.n, 6000);
  snprintf(text, sizeof(text), "0-%d-%0280d", 1234, 1234);
  bool found = false;
  for (size_t i = 2000; i < cl.n; i++)
    if (cl.rows[i]->kind == WD_UPDATE_BEFORE && cl.rows[i]->v[0].i == 1234) found = !strcmp(cl.rows[i]->v[1].s.p, text);
  cr_expect(found, "the -U of key 1234 is its first-round value, read back after eviction");
  wd_changelog_free(t, &cl);
  wd_store_batch_destroy(b);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
}

/* The state lends its cached rows (no copy) and the changelog shares them: an update's -U is the
 * row the cache held before it, its +U the row the cache holds after it, and both stay readable
 * after the cache dropped them. */
Test(hardening, state_lends_rows_and_changelog_shares_them) {
  const char *names[] = {"k", "v"};
  const char *types[] = {"INT", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &sc));
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_new(sc, 0, NULL, &t));
  const wd_schema_t *s = wd_table_schema(t);
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_state_t *state = wd_state_new(t, st, 10);
  wd_store_batch_t *b = wd_store_batch_new();
  wd_changelog_t cl = {0};
  const wd_state_ops_t *ops = wd_state_ops();
  uint8_t key[64];
  const wd_value_t *lent[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    wd_row_t *r = wd_row_new(s);
    r->v[0].is_null = false;
    r->v[0].i = 7;
    cr_assert_eq(wd_value_set_bytes(&r->v[1], i ? "second" : "first", i ? 6 : 5), 0);
    cr_assert_null(wd_message_apply(t, ops, state, &r, 1, &cl, NULL));
    wd_row_destroy(s, r);
    wd_buf_t kb = {0};
    wd_row_t *probe = wd_row_new(s);
    probe->v[0].is_null = false;
    probe->v[0].i = 7;
    cr_assert_eq(wd_row_key_encode(s, probe, &kb), 0);
    wd_row_destroy(s, probe);
    cr_assert_lt(kb.len, sizeof(key));
    memcpy(key, kb.data, kb.len);
    wd_entry_t e = {0};
    cr_assert_null(ops->get(state, key, kb.len, &e));
    cr_assert(e.borrowed, "the state lends its entry");
    cr_assert_eq(e.state, WD_ENTRY_ROW);
    lent[i] = e.row->v;
    wd_entry_release(t, &e);
    wd_buf_free(&kb);
  }
  /* +I first, then -U first / +U second */
  cr_assert_eq(cl.n, 3);
  cr_assert_eq(cl.rows[0]->kind, WD_INSERT);
  cr_assert_eq(cl.rows[1]->kind, WD_UPDATE_BEFORE);
  cr_assert_eq(cl.rows[2]->kind, WD_UPDATE_AFTER);
  cr_assert_eq(cl.rows[0]->v, lent[0], "the +I shares the row the cache held");
  cr_assert_eq(cl.rows[1]->v, lent[0], "the -U is the row the cache held before the update");
  cr_assert_eq(cl.rows[2]->v, lent[1], "the +U is the row the cache holds after it");
  /* the cache lets go of its rows; the changelog's stay valid */
  cr_assert_null(wd_state_flush(state, b));
  wd_state_drop_clean(state);
  cr_assert_eq(wd_state_cached(state), 0);
  cr_assert_str_eq(cl.rows[1]->v[1].s.p, "first");
  cr_assert_str_eq(cl.rows[2]->v[1].s.p, "second");
  wd_changelog_free(t, &cl);
  wd_store_batch_destroy(b);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
}

/* The state keeps the entry of its last get at hand for the put that follows: a put after that
 * entry was dropped (drop_clean, a trim, a discard) finds or makes the key's entry anew (ASan
 * reports a use after free otherwise), and a put of another key than the last get's finds its own
 * entry. */
Test(hardening, state_put_after_the_last_got_entry_went) {
  const char *names[] = {"k", "v"};
  const char *types[] = {"INT", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &sc));
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_new(sc, 0, NULL, &t));
  const wd_schema_t *s = wd_table_schema(t);
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_state_t *state = wd_state_new(t, st, 10);
  wd_store_batch_t *b = wd_store_batch_new();
  const wd_state_ops_t *ops = wd_state_ops();
  wd_buf_t ka = {0}, kb = {0};
  wd_row_t *ra = wd_row_new(s), *rb = wd_row_new(s);
  ra->v[0].is_null = rb->v[0].is_null = false;
  ra->v[0].i = 1;
  rb->v[0].i = 2;
  cr_assert_eq(wd_row_key_encode(s, ra, &ka), 0);
  cr_assert_eq(wd_row_key_encode(s, rb, &kb), 0);
  for (int round = 0; round < 3; round++) {
    wd_entry_t e = {0};
    cr_assert_null(ops->get(state, ka.data, ka.len, &e));
    wd_entry_release(t, &e);
    if (round == 0) wd_state_drop_clean(state); /* the entry just got goes */
    if (round == 1) wd_state_discard(state);
    if (round == 2) { /* the last get is b's: a's put must find a's entry */
      cr_assert_null(ops->get(state, kb.data, kb.len, &e));
      wd_entry_release(t, &e);
    }
    wd_row_t *r = wd_row_new(s);
    r->v[0] = ra->v[0];
    char text[8];
    snprintf(text, sizeof(text), "v%d", round);
    cr_assert_eq(wd_value_set_bytes(&r->v[1], text, strlen(text)), 0);
    wd_entry_t ne = {.state = WD_ENTRY_ROW, .row = r};
    cr_assert_null(ops->put(state, ka.data, ka.len, &ne));
    cr_assert_eq(wd_state_dirty(state), 1, "round %d: one key dirty", round);
    cr_assert_null(wd_state_flush(state, b));
    wd_state_drop_clean(state);
    cr_assert_null(ops->get(state, ka.data, ka.len, &e)); /* read back from the store */
    cr_assert_eq(e.state, WD_ENTRY_ROW);
    cr_assert_str_eq(e.row->v[1].s.p, text);
    wd_entry_release(t, &e);
    cr_assert_null(ops->get(state, kb.data, kb.len, &e));
    cr_assert_eq(e.state, WD_ENTRY_ABSENT, "b was never put");
    wd_entry_release(t, &e);
  }
  wd_row_destroy(s, ra);
  wd_row_destroy(s, rb);
  wd_buf_free(&ka);
  wd_buf_free(&kb);
  wd_store_batch_destroy(b);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
}
