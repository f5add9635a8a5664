/* tests/layering: an app/ source that includes librdkafka; must not compile. */
#include <librdkafka/rdkafka.h>

#include "app/runtime/pipeline.h"
