/*
 * tests/fuzz/fuzz_simulate.c — the conformance-case reader of `widen simulate` (app/cli/simulate.c:
 * the case JSON of ../shared/cases/README.md through table loading, the merge engine and the
 * keyed state on the memory store); fuzz.h. The input is the case file's bytes. Seeds:
 * ../shared/cases and tests/cases.
 */
#include <jansson.h>

#include "app/cli/simulate.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_simulate(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *cs = json_loadb((const char *)data, size, 0, &jerr);
  if (!cs) return 0; /* not JSON: `widen simulate` stops at jansson's message */
  json_t *result = NULL;
  /* batch 1 and 3: the state flushed after every message, and across messages */
  for (long batch = 1; batch <= 3; batch += 2) {
    int rc = wd_simulate_run(cs, "memory", batch, &result);
    /* 1: the case was refused with a message on stderr (an "input" that is not an array, an
     * unknown source) and there is no result; 0 and 2: a result with rows (2: a config error) */
    if (rc == 1 ? result != NULL : !result || !json_is_array(json_object_get(result, "rows")))
      wd_fuzz_fail("simulate", "a result that does not match the return code");
    json_decref(result);
    result = NULL;
  }
  json_decref(cs);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_simulate(data, size); }
#endif
