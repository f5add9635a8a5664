/*
 * tests/conformance/test_conformance.c — runs every case file under $WIDEN_SHARED/cases (the
 * shared contract) and under $WIDEN_REPO_CASES (the repository's own regression cases,
 * tests/cases, same format) — new files are picked up without code changes — through
 * wd_simulate_run, the code path of `widen simulate`, and compares with the case's expectations
 * exactly as ../shared/tools/check-cases.py does. Shared cases listed in expected-failures.txt
 * must fail (and the test fails when one of them starts passing, so the list stays true); the
 * repository's own cases must all pass.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli/simulate.h"
#include "tests/support/json_same.h"
#include "../support/shared.h"

static char **files;
static size_t nfiles;

static int add_file(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  size_t n = strlen(path);
  if (type == FTW_F && n > 5 && strcmp(path + n - 5, ".json") == 0) {
    files = realloc(files, (nfiles + 1) * sizeof(*files));
    files[nfiles++] = strdup(path);
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int row_eq(json_t *got, json_t *want, json_t *schema) {
  for (size_t i = 0; i < json_array_size(schema); i++) {
    const char *c = json_string_value(json_object_get(json_array_get(schema, i), "name"));
    json_t *g = json_object_get(got, c);
    json_t *w = json_object_get(want, c);
    if (!g) return 0;
    if (!w) w = json_null();
    if (!wd_test_json_same(g, w)) return 0;
  }
  return 1;
}

/* Returns NULL when the case passes, else a malloc'd reason. */
static char *check(const char *path) {
  json_error_t jerr;
  json_t *cs = json_load_file(path, 0, &jerr), *out = NULL;
  char *why = NULL;
  if (!cs) {
    if (asprintf(&why, "case does not load: %s", jerr.text) < 0) why = NULL;
    return why;
  }
  int rc = wd_simulate_run(cs, "rocksdb", 1, &out);
  json_t *schema = json_object_get(cs, "schema");
  json_t *want_err = json_object_get(cs, "expect_error");
  json_t *got_err = out ? json_object_get(out, "error") : NULL;
  if (!out) {
    why = strdup("no result (internal failure)");
    goto done;
  }
  if (want_err && !json_is_null(want_err)) {
    const char *stage = json_string_value(json_object_get(want_err, "stage"));
    const char *about = json_string_value(json_object_get(want_err, "about"));
    if (!got_err || json_is_null(got_err) || strcmp(json_string_value(json_object_get(got_err, "stage")), stage)) {
      char *g = got_err ? json_dumps(got_err, JSON_COMPACT) : NULL;
      if (asprintf(&why, "expected a %s error (%s), got %s", stage, about, g ? g : "none") < 0) why = NULL;
      free(g);
      goto done;
    }
    char id[64] = {0};
    sscanf(about, "%63[A-Z0-9_]", id);
    const char *msg = json_string_value(json_object_get(got_err, "message"));
    if (id[0] && (!msg || !strstr(msg, id))) {
      if (asprintf(&why, "error message lacks the stable id %s: %s", id, msg ? msg : "") < 0) why = NULL;
      goto done;
    }
    if (!strcmp(stage, "config")) {
      if (rc == 0) why = strdup("config error but exit code 0");
      goto done;
    }
    long idx = (long)json_integer_value(json_object_get(got_err, "index"));
    if (idx != (long)json_array_size(json_object_get(cs, "input")) - 1) {
      if (asprintf(&why, "record error at index %ld, expected the last", idx) < 0) why = NULL;
      goto done;
    }
  } else if (got_err && !json_is_null(got_err)) {
    char *g = json_dumps(got_err, JSON_COMPACT);
    if (asprintf(&why, "unexpected error: %s", g) < 0) why = NULL;
    free(g);
    goto done;
  }
  json_t *rows = json_object_get(out, "rows"), *want_rows = json_object_get(cs, "expect_rows");
  int ok = json_array_size(rows) == json_array_size(want_rows);
  for (size_t i = 0; ok && i < json_array_size(rows); i++)
    ok = row_eq(json_array_get(rows, i), json_array_get(want_rows, i), schema);
  if (!ok) {
    char *g = json_dumps(rows, JSON_COMPACT), *w = json_dumps(want_rows, JSON_COMPACT);
    if (asprintf(&why, "rows differ: got %.400s want %.400s", g, w) < 0) why = NULL;
    free(g);
    free(w);
    goto done;
  }
  json_t *want_cl = json_object_get(cs, "expect_changelog");
  if (want_cl) {
    json_t *cl = json_object_get(out, "changelog");
    ok = json_array_size(cl) == json_array_size(want_cl);
    for (size_t i = 0; ok && i < json_array_size(cl); i++) {
      json_t *a = json_array_get(cl, i), *b = json_array_get(want_cl, i);
      ok = json_equal(json_object_get(a, "op"), json_object_get(b, "op")) &&
           row_eq(json_object_get(a, "row"), json_object_get(b, "row"), schema);
    }
    if (!ok) {
      char *g = json_dumps(cl, JSON_COMPACT), *w = json_dumps(want_cl, JSON_COMPACT);
      if (asprintf(&why, "changelog differs: got %.600s want %.600s", g, w) < 0) why = NULL;
      free(g);
      free(w);
    }
  }
done:
  json_decref(out);
  json_decref(cs);
  return why;
}

/* Whether rel ("engine/file.json") is listed in expected-failures.txt. */
static int expected_failure(const char *rel) {
  const char *p = getenv("WIDEN_EXPECTED_FAILURES");
  FILE *f = p ? fopen(p, "r") : NULL;
  if (!f) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof(line), f)) {
    if (line[0] == '#') continue;
    char name[512];
    if (sscanf(line, "%511s", name) == 1 && strcmp(name, rel) == 0) found = 1;
  }
  fclose(f);
  return found;
}

/* Runs every case under root; with_xfail: honour expected-failures.txt. */
static void run_all(const char *root, int with_xfail) {
  nfiles = 0;
  cr_assert_eq(nftw(root, add_file, 16, FTW_PHYS), 0, "cannot read %s (set WIDEN_SHARED)", root);
  qsort(files, nfiles, sizeof(*files), cmp_str);
  cr_assert_gt(nfiles, 0, "no case files under %s", root);
  size_t passed = 0, failed = 0, xfail = 0, xpass = 0;
  for (size_t i = 0; i < nfiles; i++) {
    /* rel = "<engine folder>/<file>.json" */
    const char *base = strrchr(files[i], '/');
    const char *dir = base;
    while (dir > files[i] && dir[-1] != '/') dir--;
    const char *rel = dir;
    char *why = check(files[i]);
    int xf = with_xfail && expected_failure(rel);
    if (!why && !xf) {
      passed++;
    } else if (why && xf) {
      xfail++;
      cr_log_info("expected failure %s: %s", rel, why);
    } else if (!why && xf) {
      xpass++;
      cr_log_error("%s is listed in expected-failures.txt but passes: remove it from the list", rel);
    } else {
      failed++;
      cr_log_error("FAIL %s: %s", rel, why);
    }
    free(why);
    free(files[i]);
  }
  free(files);
  files = NULL;
  fprintf(stderr,
          "conformance %s: %zu case files: %zu passed, %zu failed, %zu expected failures, %zu unexpected passes\n",
          root, passed + failed + xfail + xpass, passed, failed, xfail, xpass);
  cr_expect_eq(failed, 0, "%zu case(s) failed", failed);
  cr_expect_eq(xpass, 0, "%zu expected failure(s) passed", xpass);
}

Test(conformance, every_case_file, .timeout = 900) {
  char root[4096];
  snprintf(root, sizeof(root), "%s/cases", wd_test_shared_dir());
  run_all(root, 1);
}

/* The repository's own regression cases (tests/cases): every one must pass. */
Test(conformance, repository_cases, .timeout = 300) {
  const char *root = getenv("WIDEN_REPO_CASES");
  cr_assert_not_null(root, "set WIDEN_REPO_CASES to the repository's tests/cases");
  run_all(root, 0);
}
