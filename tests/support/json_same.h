/*
 * tests/support/json_same.h — JSON equality as ../shared/tools/check-cases.py compares values:
 * exact, except that numbers that are not both integers compare with a relative 1e-6 (FLOAT
 * columns: the encoder writes the shortest binary32 text, simulate the binary32's double).
 * Shared by the conformance test and the pipeline integration tests.
 */
#ifndef WD_TEST_JSON_SAME_H
#define WD_TEST_JSON_SAME_H

#include <jansson.h>
#include <stdbool.h>

/* Whether a and b (borrowed) are the same value; objects by key set, arrays in order. */
bool wd_test_json_same(json_t *a, json_t *b);

#endif
