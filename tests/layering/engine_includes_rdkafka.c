/* tests/layering: a join/ engine source that includes librdkafka; must not compile. */
#include <librdkafka/rdkafka.h>

#include "join/merge.h"
