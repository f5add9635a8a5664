/*
 * app/cli/produce_avro.h — `widen produce --format debezium-avro`: Debezium JSON change events
 * re-encoded as Kafka Connect's AvroConverter writes them, through a schema registry, so that
 * a user can try a debezium-avro source end to end.
 *
 * Per topic, the Avro schemas are inferred from the first message that has a row image:
 *   value: record Envelope (namespace <topic>) {before, after: ["null", Value]; every other
 *          member of the event (source, op, ts_ms, transaction, ...) inferred from its JSON}
 *   key:   record Key {the members of the JSON key}
 * JSON types map to Avro as: integer -> long, real -> double, string -> string, true/false ->
 * boolean, object -> a record of its members, array -> an array of its first element's type
 * (string when empty); every field is a union ["null", T] with default null (a null or missing
 * member is null; a member first seen as null is a string). The schemas are registered under
 * <topic>-value and <topic>-key (Confluent's TopicNameStrategy); each message is written in the
 * Confluent wire format (magic 0, the 4-byte schema id, the Avro binary encoding).
 * A later message whose members do not fit the inferred schema (a member the first message did
 * not have, a number where the schema has a record, ...) is an error naming the member; a scalar
 * where the schema has a string is written as its JSON text. widen's debezium-avro decoder reads
 * strings into every column type, so the events decode to the rows their JSON form gives.
 */
#ifndef WD_PRODUCE_AVRO_H
#define WD_PRODUCE_AVRO_H

#include <stddef.h>

#include "common/error.h"

typedef struct wd_produce_avro wd_produce_avro_t;

/* A converter registering through the Confluent-compatible registry at url (e.g.
 * http://127.0.0.1:8081, or Apicurio's http://host:port/apis/ccompat/v7; credentials in the URL
 * are used for basic auth). *out is owned by the caller (wd_produce_avro_destroy).
 * Errors: C_REGISTRY_URL (not an http(s) URL), E_NOMEM. */
wd_error_t *wd_produce_avro_new(const char *url, wd_produce_avro_t **out);

/* Releases pa; accepts NULL. */
void wd_produce_avro_destroy(wd_produce_avro_t *pa);

/* Encodes one message of topic: key (JSON text or NULL) and value (a Debezium JSON event, the
 * {"schema","payload"} form accepted, or NULL for a tombstone) into *key_out / *value_out (new
 * buffers owned by the caller, NULL when the input was NULL). The first message of a topic
 * registers its schemas (a value of NULL before any event is an error: no schema to infer).
 * Errors: WD_ERR_DATA "E_PRODUCE_AVRO" (not a JSON object, a member that does not fit the
 * schema: the message names it), E_REGISTRY / C_REGISTRY_AUTH / C_REGISTRY_REJECTED from the
 * registry (one attempt), E_NOMEM. */
wd_error_t *wd_produce_avro_encode(wd_produce_avro_t *pa, const char *topic, const char *key, size_t key_len,
                                   const char *value, size_t value_len, char **key_out, size_t *key_out_len,
                                   char **value_out, size_t *value_out_len);

#endif
