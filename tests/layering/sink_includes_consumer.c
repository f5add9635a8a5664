/* tests/layering: a sink/ source that includes the consumer of ingest/; must not compile (sink
 * and ingest share only the Kafka client library, kafka/kafka.h). */
#include "ingest/consumer.h"
#include "sink/producer.h"
