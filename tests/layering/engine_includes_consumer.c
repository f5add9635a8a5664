/* tests/layering: a join/ engine source that includes the Kafka consumer; must not compile. */
#include "ingest/consumer.h"
#include "join/merge.h"
