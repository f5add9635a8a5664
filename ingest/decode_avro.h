/*
 * ingest/decode_avro.h — the debezium-avro decoder: Debezium change events written by Kafka
 * Connect's AvroConverter through a schema registry, in the Confluent wire format (magic byte 0,
 * a 4-byte big-endian schema id, then the Avro binary encoding of the value with that writer
 * schema).
 *
 * This module owns the decoder object: the writer schemas it has parsed (per schema id, for the
 * process's life, on top of the registry's own cache of their JSON), its scratch for reading the
 * binary encoding (and avro-c's generic values, when that path is selected), and the conversion
 * of Avro values into wide-table values. It produces exactly
 * the records wd_decode_debezium_json produces for the same event (source.h: op c/r -> +I,
 * u -> -U/+U (or -D/+I when the key changed, +U alone without before), d -> -D), with the same
 * column mapping: row-image fields by name (nested records with `a.b`, array elements with
 * digits, map entries by key), `$.` paths in the envelope record (`$.source.ts_ms`,
 * `$.source.lsn`, `$.ts_ms`), `$key.` paths in the Kafka key (itself Avro in the wire format,
 * decoded with its own writer schema) and `$kafka.*` metadata.
 *
 * Avro values into column types (a union is first resolved to its branch; its null branch, or a
 * field that the writer schema does not have, gives NULL — so a writer schema that adds a
 * nullable field or drops a field the source does not map still decodes):
 *   boolean                 BOOLEAN, text ("true"/"false")
 *   int, long               integers (range-checked), BOOLEAN (0/1), FLOAT/DOUBLE, DECIMAL,
 *                           text; DATE when the schema says logicalType date or connect.name
 *                           io.debezium.time.Date / org.apache.kafka.connect.data.Date (days);
 *                           TIME/TIMESTAMP[_LTZ] in the unit of the logical type (time-millis,
 *                           time-micros, timestamp-millis, timestamp-micros, local-timestamp-*)
 *                           or of the Debezium connect.name (Time/Timestamp ms, MicroTime/
 *                           MicroTimestamp µs, NanoTime/NanoTimestamp ns, Date days), else the
 *                           path suffix _ms/_us/_ns of a `$.` path, else the source options
 *                           time-unit / timestamp-unit (as the JSON decoder does).
 *   float, double           FLOAT/DOUBLE, DECIMAL (from the shortest round-trip text), text.
 *   bytes, fixed            BYTES; DECIMAL when logicalType decimal (scale from the writer
 *                           schema's "scale") or connect.name org.apache.kafka.connect.data.Decimal
 *                           (scale from connect.parameters.scale), exact, HALF_UP to the column's
 *                           scale; integers and FLOAT/DOUBLE from such decimals; text as decimal
 *                           text, or base64 for plain bytes.
 *   string, enum            text; every scalar type from its text (ISO dates, times, timestamps
 *                           with zones (io.debezium.time.ZonedTimestamp), decimals, numbers);
 *                           ARRAY/MAP/ROW from JSON text (io.debezium.data.Json).
 *   array                   ARRAY<T> element by element.
 *   map                     MAP<K,V>: keys from their text, values converted.
 *   record                  ROW<...> by field name (fields the record lacks are NULL);
 *                           io.debezium.data.VariableScaleDecimal {scale, value} into DECIMAL.
 */
#ifndef WD_DECODE_AVRO_H
#define WD_DECODE_AVRO_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/types.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"

typedef struct wd_avro_decoder wd_avro_decoder_t;

/* Creates a decoder that fetches writer schemas through reg (borrowed: it must outlive the
 * decoder). *out is owned by the caller (wd_avro_decoder_destroy). Errors: E_NOMEM. */
wd_error_t *wd_avro_decoder_new(wd_registry_t *reg, wd_avro_decoder_t **out);

/* Releases dec and its parsed schemas; accepts NULL. */
void wd_avro_decoder_destroy(wd_avro_decoder_t *dec);

/* Selects how dec reads the Avro binary encoding. false (the default): directly, with the
 * writer schema's node tree (parsed once per schema id): the record is checked end to end
 * (lengths, union discriminants, varints, block counts; nothing allocated), then only the values
 * the source maps are located and converted. true: avro-c's generic value of the whole record
 * (avro_value_read), the reference the tests compare the direct path with. Both give the same
 * records and the same errors for the same bytes. */
void wd_avro_decoder_set_generic(wd_avro_decoder_t *dec, bool generic);

/* Decodes one Kafka record value of a debezium-avro source into out (reset first), with the
 * same contract as wd_decode_debezium_json (source.h): src, schema and meta borrowed; a NULL or
 * empty value is a tombstone (flag WD_CHANGES_TOMBSTONE, no records).
 * Thread: the thread that owns dec.
 * Errors (out is empty after an error; err->index as for the JSON decoder):
 *   WD_ERR_IO "E_REGISTRY" retriable: the registry did not answer while fetching a writer
 *     schema not seen before. Nothing was decoded: wait (wd_registry_backoff_ms) and call again
 *     with the same record; never dead-letter it for this.
 *   WD_ERR_CONFIG "C_REGISTRY_AUTH": the registry refused the credentials (stop the pipeline).
 *   WD_ERR_DECODE "E_DECODE": not the wire format (fewer than 5 bytes, magic byte not 0), bytes
 *     that do not read with the writer schema, a writer schema that avro-c refuses or that is not
 *     a record, no or unknown op (t, m), op c/r/u without after, an Avro key that does not
 *     decode (for `$key.` mappings); "E_SCHEMA_NOT_FOUND": the registry has no such schema id.
 *   WD_ERR_RECORD "E_NO_KEY": a primary-key column missing or NULL (names column and image).
 *   WD_ERR_RECORD "E_TYPE": a value that cannot convert to its column's type; the message names
 *     the source, the field, its Avro type in the writer schema, the column and its SQL type.
 *   WD_ERR_INTERNAL when out is bound to another schema or src is not debezium-avro; E_NOMEM. */
wd_error_t *wd_decode_debezium_avro(wd_avro_decoder_t *dec, const wd_source_t *src, const wd_schema_t *schema,
                                    const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out);

#endif
