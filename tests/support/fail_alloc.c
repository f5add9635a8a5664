/*
 * tests/support/fail_alloc.c — the allocation wrappers of fail_alloc.h (GNU ld --wrap).
 */
#include "tests/support/fail_alloc.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

static bool armed, hit;
static size_t fail_at, count;

void wd_fail_alloc_at(size_t n) {
  armed = true;
  hit = false;
  fail_at = n;
  count = 0;
}

bool wd_fail_alloc_off(void) {
  armed = false;
  return hit;
}

size_t wd_fail_alloc_count(void) { return count; }

/* Whether this allocation is the one to fail. */
static bool fail_now(void) {
  if (!armed) return false;
  if (count++ != fail_at) return false;
  hit = true;
  if (getenv("WD_FAIL_ALLOC_BACKTRACE")) { /* where the failing allocation is made, for debugging */
    void *frames[24];
    backtrace_symbols_fd(frames, backtrace(frames, 24), 2);
  }
  return true;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) {
  if (n == 0 || !fail_now()) return __real_realloc(p, n);
  return NULL; /* p stays valid, as realloc leaves it on failure */
}
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }
int __wrap_vasprintf(char **out, const char *fmt, va_list ap) {
  if (fail_now()) {
    *out = NULL;
    return -1;
  }
  return __real_vasprintf(out, fmt, ap);
}
int __wrap_asprintf(char **out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = __wrap_vasprintf(out, fmt, ap);
  va_end(ap);
  return rc;
}
