/* tests/layering: an app/runtime source that includes a header of app/cli (an arrow back up);
 * must not compile. */
#include "app/cli/commands.h"
#include "app/runtime/pipeline.h"
