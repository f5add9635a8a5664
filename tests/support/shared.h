/*
 * tests/support/shared.h — where the project's shared folder is (conformance cases, real CDC
 * data, the spec): $WIDEN_SHARED when set and not empty (ctest sets it), else ../shared next to
 * the source tree (WD_SOURCE_DIR, which tests/CMakeLists.txt defines for the unit tests), else
 * ../shared from the working directory. Header-only; included as "../support/shared.h" so that
 * the unit tests that link only their own library (and not wd_test_support) can use it.
 */
#ifndef WD_TEST_SHARED_H
#define WD_TEST_SHARED_H

#include <stdlib.h>

/* The shared folder's path (static storage or the environment's; not to be freed). */
static inline const char *wd_test_shared_dir(void) {
  const char *s = getenv("WIDEN_SHARED");
  if (s && *s) return s;
#ifdef WD_SOURCE_DIR
  return WD_SOURCE_DIR "/../shared";
#else
  return "../shared";
#endif
}

#endif
