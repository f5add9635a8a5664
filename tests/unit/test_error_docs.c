/*
 * tests/unit/test_error_docs.c — every error id of common/error_ids.h is documented for users
 * (common/error_docs.h: what it means, what to do), and docs/operations.md carries exactly what
 * `widen config doc --errors` prints (wd_error_docs_write) between its markers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error_docs.h"

#define WD_ID_TEXT(id, retriable) #id,
static const char *const IDS[] = {WD_ERROR_IDS(WD_ID_TEXT)};

Test(error_docs, every_id_documented) {
  size_t missing = 0;
  for (size_t i = 0; i < sizeof(IDS) / sizeof(IDS[0]); i++) {
    const wd_error_doc_t *d = wd_error_doc(IDS[i]);
    if (!d || !*d->meaning || !*d->action || strchr(d->meaning, '|') || strchr(d->action, '|')) {
      cr_log_error("%s: no entry in common/error_docs.c (what it means, what to do; no '|')", IDS[i]);
      missing++;
    }
  }
  cr_expect_eq(missing, 0, "%zu error ids of common/error_ids.h are not documented in common/error_docs.c", missing);
  cr_expect_null(wd_error_doc("E_NOT_AN_ID"));
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

Test(error_docs, operations_md_is_current) {
  char path[1024];
  const char *src = __FILE__, *end = strstr(src, "tests/unit/");
  cr_assert_not_null(end);
  snprintf(path, sizeof(path), "%.*sdocs/operations.md", (int)(end - src), src);
  char *doc = slurp(path);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(wd_error_docs_write(m), 0);
  fclose(m);
  const char *b = strstr(doc, "<!-- BEGIN error ids"), *e = strstr(doc, "<!-- END error ids -->");
  cr_assert(b && e && e > b, "docs/operations.md lacks the error id markers");
  b = strchr(b, '\n') + 1;
  size_t have = (size_t)(e - b);
  cr_expect(have == len && !memcmp(b, buf, len),
            "docs/operations.md's error ids are out of date: put the output of `widen config doc --errors` between "
            "its markers (scripts/gen-docs does it)");
  cr_expect(strstr(buf, "| `E_DECODE` | no |") != NULL);
  cr_expect(strstr(buf, "| `E_REGISTRY` | yes |") != NULL);
  free(buf);
  free(doc);
}
