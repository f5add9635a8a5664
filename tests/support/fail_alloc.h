/*
 * tests/support/fail_alloc.h — allocation-failure injection for the tests that link it with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=vasprintf,
 * --wrap=asprintf (tests/CMakeLists.txt, WD_FAIL_ALLOC_WRAP): widen's own code (its static
 * libraries and the test) allocates through these wrappers; shared libraries (jansson, avro-c,
 * RocksDB) are not affected. Not thread-safe: one test thread.
 */
#ifndef WD_FAIL_ALLOC_H
#define WD_FAIL_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* Arms the injector: the allocation number n (0 = the next one) made after this call fails
 * (returns NULL, or -1 for asprintf/vasprintf); every other one succeeds. */
void wd_fail_alloc_at(size_t n);
/* Disarms it; returns whether the armed allocation was reached (and failed). */
bool wd_fail_alloc_off(void);
/* Allocations counted since the last wd_fail_alloc_at. */
size_t wd_fail_alloc_count(void);

#endif
