/*
 * tests/unit/test_undo.c — the undo image of an exactly-once commit (docs/exactly-once.md, "write
 * once with an undo image"; join/store.h wd_store_batch_prior / wd_store_undo_image; join/state.h
 * wd_state_set_undo), on RocksDB and on the memory store:
 *   - prepare (the commit's rows + its undo image + a marker, one write), then the undo applied
 *     (abort): the store is byte for byte what it was before the commit;
 *   - prepare, then finalize (offsets, marker and image deleted): the store is byte for byte what
 *     writing the commit's batch directly gives;
 *   - ops without a recorded prior (the lookup layer's blind writes) are read from the store.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void mk_tmp(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/widen-undo-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void) { nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void ok(wd_error_t *err) { cr_assert_null(err, "%s", err ? err->message : ""); }

static wd_store_t *open_store(bool rocksdb, const char *sub) {
  wd_store_t *st = NULL;
  if (!rocksdb) {
    ok(wd_store_open_memory(&st));
    return st;
  }
  char dir[128];
  snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
  ok(wd_store_open_rocksdb(dir, NULL, &st));
  return st;
}

/* The whole "state" family as text: key bytes -> value bytes (hex), in key order. */
static int dump_cb(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  wd_buf_t *out = ctx;
  for (size_t i = 0; i < klen; i++) wd_buf_printf(out, "%02x", key[i]);
  wd_buf_printf(out, "=");
  for (size_t i = 0; i < vlen; i++) wd_buf_printf(out, "%02x", val[i]);
  wd_buf_printf(out, "\n");
  return 0;
}

static char *dump(wd_store_t *st) {
  wd_buf_t out = {0};
  ok(wd_store_scan(st, dump_cb, &out));
  /* and the meta entries the protocol touches */
  const char *names[] = {"commit/prepared", "commit/undo", "commit/number"};
  for (size_t i = 0; i < 3; i++) {
    uint8_t *v = NULL;
    size_t vlen = 0;
    ok(wd_store_get_meta(st, names[i], &v, &vlen));
    wd_buf_printf(&out, "%s:%s%zu\n", names[i], v ? "" : "absent ", vlen);
    free(v);
  }
  int64_t off = -1;
  ok(wd_store_get_offset(st, "t", 0, &off));
  wd_buf_printf(&out, "offset t/0: %lld\n", (long long)off);
  wd_buf_putc(&out, 0);
  return (char *)out.data;
}

typedef struct {
  wd_table_t *t;
  wd_state_t *s;
  wd_store_t *st;
} fix_t;

static void fix_open(fix_t *f, bool rocksdb, const char *sub, bool undo) {
  const char *names[] = {"k", "v", "n"};
  const char *types[] = {"INT", "STRING", "BIGINT"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  ok(wd_schema_new(3, names, types, 1, pk, &sc));
  ok(wd_table_new(sc, 0, NULL, &f->t));
  f->st = open_store(rocksdb, sub);
  cr_assert_not_null(f->s = wd_state_new(f->t, f->st, 0));
  wd_state_set_undo(f->s, undo);
  wd_state_set_now(f->s, 1700000000000ull);
}

static void fix_close(fix_t *f) {
  wd_state_destroy(f->s);
  wd_store_close(f->st);
  wd_table_destroy(f->t);
}

/* Merges one change of key k (value v, or a delete) into the state, as the pipeline does: the
 * key prefetched, then the message applied. */
static void change(fix_t *f, int k, const char *v, bool del) {
  const wd_schema_t *s = wd_table_schema(f->t);
  wd_row_t *r = wd_row_new(s);
  r->kind = del ? WD_DELETE : WD_INSERT;
  r->v[0].is_null = false;
  r->v[0].i = k;
  if (v) cr_assert_eq(wd_value_set_bytes(&r->v[1], v, strlen(v)), 0);
  r->v[2].is_null = false;
  r->v[2].i = k * 1000;
  wd_buf_t kb = {0};
  cr_assert_eq(wd_row_key_encode(s, r, &kb), 0);
  const uint8_t *kp = kb.data;
  size_t kl = kb.len;
  ok(wd_state_prefetch(f->s, 1, &kp, &kl));
  wd_changelog_t cl = {0};
  ok(wd_message_apply(f->t, wd_state_ops(), f->s, &r, 1, &cl, NULL));
  wd_changelog_free(f->t, &cl);
  wd_row_destroy(s, r);
  wd_buf_free(&kb);
}

/* Commit 1: keys 1..40, stored directly (offset 100). */
static void base_commit(fix_t *f) {
  for (int k = 1; k <= 40; k++) change(f, k, "first", false);
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_offset(b, "t", 0, 100), 0);
  ok(wd_state_flush(f->s, b));
  wd_store_batch_destroy(b);
}

/* Commit 2's changes: updates of 1..15, deletes of 16..25, new keys 41..50. */
static void second_changes(fix_t *f) {
  for (int k = 1; k <= 15; k++) change(f, k, k % 2 ? "second, a longer value than before" : "2", false);
  for (int k = 16; k <= 25; k++) change(f, k, NULL, true);
  for (int k = 41; k <= 50; k++) change(f, k, "new", false);
  change(f, 3, "changed twice in one commit", false); /* one entry, one prior */
}

/* The prepare write of the protocol: the rows, the undo image, a marker. Returns the image. */
static void prepare(fix_t *f, wd_store_batch_t *rows, wd_buf_t *image) {
  uint64_t snap = 0;
  ok(wd_state_snapshot(f->s, rows, &snap));
  ok(wd_store_undo_image(f->st, rows, image));
  wd_store_batch_t *pb = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_meta(pb, "commit/undo", image->data, image->len), 0);
  cr_assert_eq(wd_store_batch_set_meta(pb, "commit/prepared", (const uint8_t *)"marker", 6), 0);
  ok(wd_store_write_both(f->st, rows, pb, false));
  wd_store_batch_destroy(pb);
  wd_state_written(f->s, snap);
}

static void abort_restores_the_store(bool rocksdb) {
  fix_t f;
  fix_open(&f, rocksdb, "a", true);
  base_commit(&f);
  char *before = dump(f.st);
  second_changes(&f);
  wd_store_batch_t *rows = wd_store_batch_new();
  wd_buf_t image = {0};
  prepare(&f, rows, &image);
  char *prepared = dump(f.st);
  cr_assert_str_neq(prepared, before, "the prepare wrote the rows");
  /* abort: the image, the marker and the image's key gone, in one write */
  wd_store_batch_t *u = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_decode(u, image.data, image.len), 0);
  cr_assert_eq(wd_store_batch_count(u), 35, "one op per changed key (25 + 10 new)");
  cr_assert_eq(wd_store_batch_delete_meta(u, "commit/prepared"), 0);
  cr_assert_eq(wd_store_batch_delete_meta(u, "commit/undo"), 0);
  ok(wd_store_write(f.st, u));
  char *after = dump(f.st);
  cr_assert_str_eq(after, before, "the store after the undo differs from the store before the commit");
  /* and the state reads the restored rows after dropping what it cached */
  wd_state_drop_clean(f.s);
  second_changes(&f);
  wd_store_batch_t *again = wd_store_batch_new();
  uint64_t snap = 0;
  ok(wd_state_snapshot(f.s, again, &snap));
  cr_assert_eq(wd_store_batch_count(again), wd_store_batch_count(rows), "the redone commit has the same rows");
  free(before);
  free(prepared);
  free(after);
  wd_buf_free(&image);
  wd_store_batch_destroy(rows);
  wd_store_batch_destroy(u);
  wd_store_batch_destroy(again);
  fix_close(&f);
}

Test(undo, abort_restores_the_store_rocksdb, .init = mk_tmp, .fini = rm_tmp) { abort_restores_the_store(true); }
Test(undo, abort_restores_the_store_memory) { abort_restores_the_store(false); }

static void finalize_equals_a_direct_write(bool rocksdb) {
  fix_t a, d; /* a: prepare + finalize; d: the commit's batch written directly (no undo image) */
  fix_open(&a, rocksdb, "a", true);
  fix_open(&d, rocksdb, "d", false);
  base_commit(&a);
  base_commit(&d);
  second_changes(&a);
  second_changes(&d);
  wd_store_batch_t *rows = wd_store_batch_new();
  wd_buf_t image = {0};
  prepare(&a, rows, &image);
  wd_store_batch_t *fin = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_offset(fin, "t", 0, 200), 0);
  cr_assert_eq(wd_store_batch_set_meta(fin, "commit/number", (const uint8_t *)"2", 1), 0);
  cr_assert_eq(wd_store_batch_delete_meta(fin, "commit/prepared"), 0);
  cr_assert_eq(wd_store_batch_delete_meta(fin, "commit/undo"), 0);
  ok(wd_store_write(a.st, fin));
  wd_store_batch_t *direct = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_offset(direct, "t", 0, 200), 0);
  cr_assert_eq(wd_store_batch_set_meta(direct, "commit/number", (const uint8_t *)"2", 1), 0);
  ok(wd_state_flush(d.s, direct));
  char *x = dump(a.st), *y = dump(d.st);
  cr_assert_str_eq(x, y, "prepare + finalize differs from the direct write");
  free(x);
  free(y);
  wd_buf_free(&image);
  wd_store_batch_destroy(rows);
  wd_store_batch_destroy(fin);
  wd_store_batch_destroy(direct);
  fix_close(&a);
  fix_close(&d);
}

Test(undo, finalize_equals_a_direct_write_rocksdb, .init = mk_tmp, .fini = rm_tmp) {
  finalize_equals_a_direct_write(true);
}
Test(undo, finalize_equals_a_direct_write_memory) { finalize_equals_a_direct_write(false); }

/* Ops added without a prior (join/lookup.c's index entries are written blind): the image reads
 * their entries from the store (before the batch is written); a key absent there is deleted. */
static void ops_without_prior_are_read(bool rocksdb) {
  wd_store_t *st = open_store(rocksdb, "p");
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_put(b, (const uint8_t *)"\xf2k1", 3, (const uint8_t *)"old1", 4), 0);
  cr_assert_eq(wd_store_batch_put(b, (const uint8_t *)"\xf2k2", 3, (const uint8_t *)"old2", 4), 0);
  ok(wd_store_write(st, b));
  char *before = dump(st);
  wd_store_batch_clear(b);
  cr_assert_eq(wd_store_batch_put(b, (const uint8_t *)"\xf2k1", 3, (const uint8_t *)"new1", 4), 0); /* no prior */
  cr_assert_eq(wd_store_batch_delete(b, (const uint8_t *)"\xf2k2", 3), 0); /* no prior */
  cr_assert_eq(wd_store_batch_put(b, (const uint8_t *)"\xf2k3", 3, (const uint8_t *)"new3", 4), 0);
  cr_assert_eq(wd_store_batch_prior(b, NULL, 0), 0); /* recorded: absent */
  cr_assert_eq(wd_store_batch_prior(b, NULL, 0), -1, "one prior per op");
  cr_assert_eq(wd_store_batch_put(b, (const uint8_t *)"\xf2k4", 3, (const uint8_t *)"new4", 4),
               0); /* no prior: absent */
  wd_buf_t image = {0};
  ok(wd_store_undo_image(st, b, &image));
  ok(wd_store_write(st, b));
  wd_store_batch_t *u = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_decode(u, image.data, image.len), 0);
  cr_assert_eq(wd_store_batch_count(u), 4);
  ok(wd_store_write(st, u));
  char *after = dump(st);
  cr_assert_str_eq(after, before);
  /* a range deletion cannot be taken back */
  wd_store_batch_clear(b);
  cr_assert_eq(wd_store_batch_delete_range(b, (const uint8_t *)"R", 1, (const uint8_t *)"S", 1), 0);
  wd_buf_reset(&image);
  wd_error_t *err = wd_store_undo_image(st, b, &image);
  cr_assert_not_null(err);
  wd_error_destroy(err);
  free(before);
  free(after);
  wd_buf_free(&image);
  wd_store_batch_destroy(b);
  wd_store_batch_destroy(u);
  wd_store_close(st);
}

Test(undo, ops_without_prior_are_read_rocksdb, .init = mk_tmp, .fini = rm_tmp) { ops_without_prior_are_read(true); }
Test(undo, ops_without_prior_are_read_memory) { ops_without_prior_are_read(false); }
