/*
 * tests/unit/test_error_ids.c — common/error_ids.h is the one list of error ids:
 * every id the product's sources use (a string literal "C_..." or "E_...") is listed, so that
 * wd_error_new() gives it its enum and its retriable bit; the enum and the text map both ways; and
 * retriable comes from the id, not from the class.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static const char *const DIRS[] = {"app/cli", "app/config", "app/ops",   "app/runtime", "ingest",
                                   "join",    "sink",       "changelog", "common",      "kafka"};

/* Every "C_X" / "E_X" literal (upper case, digits, '_') of one file not in the list: counted and
 * printed. */
static size_t scan_file(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  size_t bad = 0;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    for (char *q = line; (q = strchr(q, '"')); q++) {
      if (!((q[1] == 'C' || q[1] == 'E') && q[2] == '_')) continue;
      size_t n = 3;
      while ((q[n] >= 'A' && q[n] <= 'Z') || (q[n] >= '0' && q[n] <= '9') || q[n] == '_') n++;
      if (q[n] != '"' || n < 4) continue;
      char id[64];
      snprintf(id, sizeof(id), "%.*s", (int)(n - 1), q + 1);
      if (wd_error_eid(id) == WD_EID_UNLISTED) {
        fprintf(stderr, "%s: error id %s is not in common/error_ids.h\n", path, id);
        bad++;
      }
      q += n;
    }
  }
  fclose(f);
  return bad;
}

Test(error_ids, every_id_the_sources_use_is_listed) {
  size_t bad = 0, files = 0;
  for (size_t d = 0; d < sizeof(DIRS) / sizeof(DIRS[0]); d++) {
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/%s", WD_SOURCE_DIR, DIRS[d]);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "%s", dir);
    struct dirent *e;
    while ((e = readdir(dp))) {
      size_t len = strlen(e->d_name);
      if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h"))) continue;
      /* the users' documentation of the ids (it raises none; it may document ids ahead of their use) */
      if (!strcmp(DIRS[d], "common") && !strcmp(e->d_name, "error_docs.c")) continue;
      char path[2048];
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      bad += scan_file(path);
      files++;
    }
    closedir(dp);
  }
  cr_assert_gt(files, 50);
  cr_assert_eq(bad, 0, "%zu uses of unlisted error ids", bad);
}

Test(error_ids, text_and_enum_map_both_ways) {
  cr_assert_eq(wd_error_eid("E_STOPPED"), WD_EID_E_STOPPED);
  cr_assert_eq(wd_error_eid("C_PRIMARY_KEY"), WD_EID_C_PRIMARY_KEY);
  cr_assert_eq(wd_error_eid(""), WD_EID_NONE);
  cr_assert_eq(wd_error_eid(NULL), WD_EID_NONE);
  cr_assert_eq(wd_error_eid("E_NO_SUCH_ID_ANYWHERE"), WD_EID_UNLISTED);
  wd_error_t *e = wd_error_new(WD_ERR_RECORD, E_STORE_WRITE, "x");
  cr_assert(wd_error_is(e, WD_EID_E_STORE_WRITE));
  cr_assert_not(wd_error_is(e, WD_EID_E_STOPPED));
  cr_assert_not(wd_error_is(NULL, WD_EID_E_STOPPED));
  wd_error_destroy(e);
  cr_assert(wd_error_is(wd_error_nomem(), WD_EID_E_NOMEM));
}

/* retriable follows the id: the same class gives both answers, and an IO error of the store is not
 * retriable (waiting does not repair a disk), where the class used to say it was. */
Test(error_ids, retriable_is_per_id_not_per_class) {
  wd_error_t *a = wd_error_new(WD_ERR_KAFKA, E_STOPPED, "a");
  wd_error_t *b = wd_error_new(WD_ERR_KAFKA, E_RESTORE, "b");
  wd_error_t *c = wd_error_new(WD_ERR_IO, E_STORE_READ, "c");
  wd_error_t *d = wd_error_new(WD_ERR_IO, E_REGISTRY, "d");
  /* an id that is not listed does not compile (wd_error_new(WD_ERR_KAFKA, E_NOT_LISTED_X, "u")); an
   * enum out of the list's range makes an error without id */
  wd_error_t *u = wd_error_make(WD_ERR_KAFKA, WD_EID_UNLISTED, "u");
  cr_assert(a->retriable);
  cr_assert_not(b->retriable);
  cr_assert_not(c->retriable);
  cr_assert(d->retriable);
  cr_assert_not(u->retriable);
  cr_assert_eq(u->eid, WD_EID_NONE);
  cr_assert_str_eq(u->id, "");
  cr_assert_str_eq(wd_error_id_text(WD_EID_E_STOPPED), "E_STOPPED");
  wd_error_destroy(a);
  wd_error_destroy(b);
  wd_error_destroy(c);
  wd_error_destroy(d);
  wd_error_destroy(u);
}
