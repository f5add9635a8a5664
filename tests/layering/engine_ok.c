/* tests/layering: the control: a join/ engine source with the includes it may use compiles, so
 * the failures of the other probes come from the layering, not from the probe set-up. */
#include "common/types.h"
#include "join/merge.h"
#include "join/state.h"

int wd_layering_probe_ok(void) { return 0; }
