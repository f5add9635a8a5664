/*
 * common/wire.h — the Confluent wire format's 5-byte header in front of every Avro key and value
 * that goes through a schema registry: magic byte 0, then the schema id as a big-endian int32
 * (Confluent's "Wire format" in the Schema Registry documentation). Read by the Debezium Avro
 * decoder (ingest/), written by the Avro changelog encoder (changelog/) and the tests' and the
 * benchmarks' producers. Header-only (static inline); pure.
 */
#ifndef WD_WIRE_H
#define WD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WD_WIRE_HEADER 5

/* Reads the header of p[0..n) (p may be NULL): returns 0 and sets *id, or -1 when n < 5 or the
 * magic byte is not 0. */
static inline int wd_wire_parse(const void *p, size_t n, int32_t *id) {
  const uint8_t *b = p;
  if (!b || n < WD_WIRE_HEADER || b[0] != 0) return -1;
  *id = (int32_t)(((uint32_t)b[1] << 24) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 8) | (uint32_t)b[4]);
  return 0;
}

/* Writes the header for schema id into out[0..5). */
static inline void wd_wire_header(int32_t id, uint8_t out[WD_WIRE_HEADER]) {
  uint32_t u = (uint32_t)id;
  out[0] = 0;
  out[1] = (uint8_t)(u >> 24);
  out[2] = (uint8_t)(u >> 16);
  out[3] = (uint8_t)(u >> 8);
  out[4] = (uint8_t)u;
}

#endif
