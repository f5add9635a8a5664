/*
 * tests/unit/test_fuzz_regressions.c — the fuzz harnesses of tests/fuzz (fuzz.h) in the normal
 * build (gcc, ASan+UBSan in build-san/): each harness on every input kept under
 * tests/fuzz/regressions/<harness>/ (findings of the fuzzer, each fixed in its decoder: a
 * regression aborts the test with the sanitizer's report) and on its seeds (tests/fuzz/seeds.list).
 * The libFuzzer builds of the same harnesses run from tests/fuzz/run.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "../support/shared.h"

typedef int (*harness_fn)(const uint8_t *, size_t);

static char *slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_not_null(s);
  cr_assert_eq(fread(s, 1, (size_t)n, fp), (size_t)n, "cannot read %s", path);
  fclose(fp);
  *len = (size_t)n;
  return s;
}

/* Runs h on every file matching pattern (whole file, or each '{' line when lines); the count. */
static size_t run_glob(harness_fn h, const char *pattern, bool lines) {
  glob_t g;
  size_t n = 0;
  if (glob(pattern, 0, NULL, &g) != 0) return 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    size_t len;
    char *data = slurp(g.gl_pathv[i], &len);
    if (!lines) {
      h((const uint8_t *)data, len);
      n++;
    } else {
      for (char *p = data, *end = data + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (l && p[0] == '{') {
          h((const uint8_t *)p, l);
          n++;
        }
        p += l + 1;
      }
    }
    free(data);
  }
  globfree(&g);
  return n;
}

/* The seeds of harness `name` from tests/fuzz/seeds.list; the number of inputs run. */
static size_t run_seeds(const char *name, harness_fn h) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/fuzz/seeds.list", WD_SOURCE_DIR);
  FILE *fp = fopen(path, "r");
  cr_assert_not_null(fp, "cannot open %s", path);
  char line[1024];
  size_t n = 0;
  while (fgets(line, sizeof(line), fp)) {
    char hn[64], how[16], pat[512];
    if (line[0] == '#' || sscanf(line, "%63s %15s %511s", hn, how, pat) != 3 || strcmp(hn, name)) continue;
    char full[1200];
    if (!strncmp(pat, "../shared/", 10)) snprintf(full, sizeof(full), "%s/%s", wd_test_shared_dir(), pat + 10);
    else snprintf(full, sizeof(full), "%s/%s", WD_SOURCE_DIR, pat);
    n += run_glob(h, full, !strcmp(how, "lines"));
  }
  fclose(fp);
  return n;
}

static void check(const char *name, harness_fn h) {
  char pat[1024];
  snprintf(pat, sizeof(pat), "%s/tests/fuzz/regressions/%s/*", WD_SOURCE_DIR, name);
  size_t nreg = run_glob(h, pat, false);
  size_t nseed = run_seeds(name, h);
  /* the empty input and a lone byte: the smallest cases every parser must refuse cleanly */
  h((const uint8_t *)"", 0);
  h((const uint8_t *)"{", 1);
  cr_log_info("%s: %zu regression inputs, %zu seeds", name, nreg, nseed);
  cr_expect_gt(nseed, 0, "%s: no seeds found (tests/fuzz/seeds.list)", name);
}

Test(fuzz_regressions, debezium_json) { check("debezium_json", wd_fuzz_debezium_json); }
Test(fuzz_regressions, debezium_json_key) { check("debezium_json_key", wd_fuzz_debezium_json_key); }
Test(fuzz_regressions, json_fast) { check("json_fast", wd_fuzz_json_fast); }
Test(fuzz_regressions, debezium_avro) { check("debezium_avro", wd_fuzz_debezium_avro); }
Test(fuzz_regressions, canal_json) { check("canal_json", wd_fuzz_canal_json); }
Test(fuzz_regressions, maxwell_json) { check("maxwell_json", wd_fuzz_maxwell_json); }
Test(fuzz_regressions, ogg_json) { check("ogg_json", wd_fuzz_ogg_json); }
Test(fuzz_regressions, changelog_json) { check("changelog_json", wd_fuzz_changelog_json); }
Test(fuzz_regressions, config) { check("config", wd_fuzz_config); }
Test(fuzz_regressions, simulate) { check("simulate", wd_fuzz_simulate); }
Test(fuzz_regressions, marker) { check("marker", wd_fuzz_marker); }
Test(fuzz_regressions, stored_row) { check("stored_row", wd_fuzz_stored_row); }
