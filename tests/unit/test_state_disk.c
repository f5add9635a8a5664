/*
 * tests/unit/test_state_disk.c — the state directory's guards without Kafka: the disk guard of the
 * RocksDB store (wd_store_options_t.min_free_bytes: a write below the minimum is E_STATE_DISK_FULL
 * and applies nothing; the measure for the metrics and readiness), and a corrupt directory at start
 * (wd_state_dir_check: E_STATE_CORRUPT naming the file, or moved aside with
 * state.on-corruption: rebuild), and the start's checks handing their opened store on so that a
 * start opens the state once (wd_state_dir_check_open, wd_definition_prepare_open). The end-to-end
 * runs are tests/integration/state_disk.sh.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/config/config.h"
#include "app/ops/fingerprint.h"
#include "app/ops/state_dir.h"
#include "app/runtime/pipeline.h"
#include "join/store.h"

static char *tmpdir(void) {
  char *d = strdup("/tmp/widen-test-disk-XXXXXX");
  cr_assert_not_null(mkdtemp(d));
  return d;
}

static void rm_rf(const char *d) {
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'.corrupt-*", d, d);
  cr_assert_eq(system(cmd), 0);
}

static wd_error_t *put_meta(wd_store_t *st, const char *name, const char *val) {
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_meta(b, name, (const uint8_t *)val, strlen(val)), 0);
  wd_error_t *err = wd_store_write(st, b);
  wd_store_batch_destroy(b);
  return err;
}

static char *get_meta(wd_store_t *st, const char *name) {
  uint8_t *v = NULL;
  size_t n = 0;
  cr_assert_null(wd_store_get_meta(st, name, &v, &n));
  if (!v) return NULL;
  char *s = strndup((const char *)v, n);
  free(v);
  return s;
}

Test(disk_guard, a_write_below_the_minimum_is_refused_and_applies_nothing) {
  char *d = tmpdir();
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/state", d);
  int64_t free_now = wd_store_disk_measure(d);
  cr_assert_gt(free_now, 0);
  /* a minimum above what the filesystem has: every write refused */
  wd_store_options_t so = {.tombstone_retention_ms = -1, .min_free_bytes = (uint64_t)free_now * 4};
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_rocksdb(dir, &so, &st));
  cr_expect(wd_store_disk_short());
  cr_expect_gt(wd_store_disk_free_bytes(), 0);
  wd_error_t *err = put_meta(st, "k", "v");
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_STATE_DISK_FULL");
  cr_expect(strstr(err->message, dir) != NULL, "names the directory: %s", err->message);
  cr_expect(strstr(err->message, "bytes free") && strstr(err->message, "state.min-free-bytes"), "%s", err->message);
  wd_error_destroy(err);
  cr_expect_null(get_meta(st, "k"), "nothing applied");
  wd_store_close(st);
  /* a minimum the filesystem has: the write goes through, not short */
  so.min_free_bytes = 1;
  cr_assert_null(wd_store_open_rocksdb(dir, &so, &st));
  cr_assert_null(put_meta(st, "k", "v"));
  char *v = get_meta(st, "k");
  cr_expect_str_eq(v, "v");
  free(v);
  cr_expect_not(wd_store_disk_short());
  wd_store_close(st);
  rm_rf(d);
  free(d);
}

/* A store with a CURRENT naming a missing MANIFEST. */
static void make_corrupt(const char *dir) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_rocksdb(dir, NULL, &st));
  cr_assert_null(put_meta(st, "k", "v"));
  wd_store_close(st);
  char path[400];
  snprintf(path, sizeof(path), "%s/CURRENT", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("MANIFEST-999999\n", f);
  fclose(f);
}

Test(corruption, refused_with_the_file_or_moved_aside) {
  char *d = tmpdir();
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/state", d);
  make_corrupt(dir);
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &st);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_STATE_CORRUPT", "%s", err->message);
  cr_expect(strstr(err->message, "MANIFEST-999999, which its CURRENT file names, is missing"), "%s", err->message);
  cr_expect(strstr(err->message, "state.on-corruption: rebuild"), "%s", err->message);
  wd_error_destroy(err);
  /* (a secondary instance cannot tell a missing MANIFEST from a live primary switching to a new
   * one: "Try again"; `widen rows` opens the directory as the primary when it is free) */

  wd_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.state.dir = dir;
  cfg.state.on_corruption = WD_CONFIG_CORRUPTION_FAIL;
  cr_assert_not_null(err = wd_state_dir_check(&cfg, NULL));
  cr_expect_str_eq(err->id, "E_STATE_CORRUPT");
  wd_error_destroy(err);
  struct stat sb;
  cr_expect_eq(stat(dir, &sb), 0, "fail leaves the directory");

  cfg.state.on_corruption = WD_CONFIG_CORRUPTION_REBUILD;
  cr_assert_null(wd_state_dir_check(&cfg, NULL));
  cr_expect_neq(stat(dir, &sb), 0, "rebuild moved it");
  DIR *dd = opendir(d);
  bool aside = false;
  for (struct dirent *e; (e = readdir(dd));) aside |= !strncmp(e->d_name, "state.corrupt-", 14);
  closedir(dd);
  cr_expect(aside, "moved to state.corrupt-<time>");
  /* a fresh directory opens */
  cr_assert_null(wd_state_dir_check(&cfg, NULL));
  cr_assert_null(wd_store_open_rocksdb(dir, NULL, &st));
  cr_expect_null(get_meta(st, "k"));
  wd_store_close(st);
  /* a sound directory is left alone */
  cr_assert_null(wd_state_dir_check(&cfg, dir));
  cr_expect_eq(stat(dir, &sb), 0);
  rm_rf(d);
  free(d);
}

/* ---- the start opens the state once ---- */

static wd_config_t *load_config(const char *dir) {
  char path[320], text[1200];
  snprintf(path, sizeof(path), "%s.yaml", dir);
  snprintf(text, sizeof(text),
           "kafka:\n  bootstrap.servers: 127.0.0.1:1\n  group.id: test-open-once\n"
           "table:\n  name: wide\n  schema:\n    - {name: id, type: BIGINT NOT NULL}\n"
           "    - {name: qty, type: INT}\n  primary-key: [id]\n"
           "sink:\n  topic: wide-out\n  dead-letter-topic: wide-dlq\n"
           "state:\n  dir: %s\n  min-free-bytes: 1\n"
           "sources:\n  - name: items\n    topic: items\n    columns:\n      id:\n      qty:\n",
           dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  unlink(path);
  return cfg;
}

/* the directory is held by an open handle: a second open is refused as locked */
static bool held(const char *dir) {
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &st);
  if (!err) {
    wd_store_close(st);
    return false;
  }
  bool locked = !strcmp(err->id, "E_STORE_LOCKED");
  wd_error_destroy(err);
  return locked;
}

Test(start_open, the_checks_hand_one_opened_store_on) {
  char *d = tmpdir();
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/state", d);
  wd_config_t *cfg = load_config(dir);
  wd_store_options_t so;
  wd_pipeline_store_options(cfg, &so);
  cr_expect_eq(so.min_free_bytes, 1, "the pipeline's options: state.min-free-bytes");
  cr_expect_eq(so.tombstone_retention_ms, cfg->state.tombstone_retention_ms);

  /* a first start: no directory yet, so the corruption check opens nothing; the definition check
   * creates the state, records the definition and keeps the store open for the pipeline */
  wd_store_t *st = (wd_store_t *)1;
  cr_assert_null(wd_state_dir_check_open(cfg, NULL, &so, &st));
  cr_expect_null(st, "no directory: nothing opened");
  wd_error_t *err = wd_definition_prepare_open(cfg, NULL, &so, NULL, &st);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_not_null(st, "the opened store is handed on");
  cr_expect(held(dir), "the handed store is open");
  char *def = get_meta(st, "table/definition");
  cr_expect_not_null(def, "the definition was recorded through it");
  free(def);
  wd_store_close(st);
  cr_expect_not(held(dir));

  /* a restart: the corruption check opens it, and the definition check uses that same handle */
  st = NULL;
  cr_assert_null(wd_state_dir_check_open(cfg, NULL, &so, &st));
  cr_assert_not_null(st, "a sound directory's store is kept open");
  wd_store_t *first = st;
  cr_assert_null(wd_definition_prepare_open(cfg, NULL, &so, NULL, &st));
  cr_expect_eq(st, first, "the same handle: the state is opened once");
  cr_expect(held(dir));
  wd_store_close(st);

  /* the old calls still close what they open */
  cr_assert_null(wd_state_dir_check(cfg, NULL));
  cr_assert_null(wd_definition_prepare(cfg, NULL, NULL));
  cr_expect_not(held(dir), "wd_state_dir_check and wd_definition_prepare leave nothing open");

  /* another definition in the state (state.on-incompatible-change: fail): the error, and the
   * store handed in is closed (the caller's pointer cleared) */
  st = NULL;
  cr_assert_null(wd_state_dir_check_open(cfg, NULL, &so, &st));
  cr_assert_not_null(st);
  cr_assert_null(put_meta(st, "table/definition", "{\"not\":\"this table\"}"));
  err = wd_definition_prepare_open(cfg, NULL, &so, NULL, &st);
  cr_expect_not_null(err, "another table's definition in the state");
  cr_expect_null(st, "on an error the store is closed, the pointer cleared");
  cr_expect_not(held(dir), "and closed");
  wd_error_destroy(err);
  wd_config_destroy(cfg);
  rm_rf(d);
  free(d);
}
