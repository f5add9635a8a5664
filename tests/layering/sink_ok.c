/* tests/layering: the control for sink/: the Kafka client library and its own headers. */
#include <librdkafka/rdkafka.h>

#include "kafka/kafka.h"
#include "sink/producer.h"

int wd_layering_probe_sink_ok(void) { return RD_KAFKA_VERSION > 0; }
