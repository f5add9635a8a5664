/* tests/layering: an app/ops source that includes a header of app/runtime (an arrow back up);
 * must not compile. */
#include "app/ops/history.h"
#include "app/runtime/commit.h"
