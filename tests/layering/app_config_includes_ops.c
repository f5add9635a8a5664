/* tests/layering: an app/config source that includes a header of app/ops (an arrow back up);
 * must not compile. */
#include "app/config/config.h"
#include "app/ops/metrics.h"
