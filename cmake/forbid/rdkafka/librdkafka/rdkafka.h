/* cmake/forbid/rdkafka/librdkafka/rdkafka.h — stands in front of the real librdkafka header on the
 * include path of every library except wd_kafka, wd_ingest and wd_sink, so that including librdkafka
 * anywhere else fails the build (see CMakeLists.txt, wd_forbid; checked by tests/layering). */
#error "widen layering: only kafka/, ingest/ and sink/ may include librdkafka; use ingest/consumer.h or sink/producer.h"
