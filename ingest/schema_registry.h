/*
 * ingest/schema_registry.h — a client of a Confluent-compatible schema registry (libcurl).
 *
 * This module owns the HTTP conversation with the registry and the process-wide cache of writer
 * schemas by id. It uses exactly two endpoints:
 *   GET  {url}/schemas/ids/{id}               -> {"schema": "<schema JSON as a string>", ...}
 *   POST {url}/subjects/{subject}/versions    body {"schema": "<schema JSON>"} -> {"id": N}
 * with HTTP basic auth when a username is configured, and Accept/Content-Type
 * application/vnd.schemaregistry.v1+json.
 *
 * Also here: the Confluent wire format's 5-byte header (magic byte 0, a 4-byte big-endian schema
 * id) and the backoff schedule callers use when the registry does not answer.
 *
 * Errors the calls return (all wd_error_t, the caller owns them):
 *   WD_ERR_IO "E_REGISTRY" retriable = true: the registry did not answer (connect/timeout), or
 *     answered 5xx / 408 / 429, or with a body that is not the JSON expected. The caller waits
 *     (wd_registry_backoff_ms) and tries again: a record is never dropped for this.
 *   WD_ERR_DECODE "E_SCHEMA_NOT_FOUND": GET answered 404 (no schema with this id).
 *   WD_ERR_CONFIG "C_REGISTRY_AUTH": 401/403 (credentials refused), not retriable.
 *   WD_ERR_CONFIG "C_REGISTRY_REJECTED": POST answered another 4xx (e.g. 409 incompatible,
 *     422 invalid schema); the message carries the registry's own text.
 *   E_NOMEM.
 *
 * Thread: one thread uses a registry handle (libcurl easy handle inside).
 */
#ifndef WD_SCHEMA_REGISTRY_H
#define WD_SCHEMA_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/wire.h" /* the wire format's header: wd_wire_parse, wd_wire_header */

/* Settings; every string is borrowed for the duration of wd_registry_new (which copies). */
typedef struct wd_registry_conf {
  const char *url; /* "http://host:8081" (a trailing '/' is ignored; credentials in it, http://user:pw@host,
                           are used for basic auth when username is not set, and never printed); required */
  const char *username; /* basic auth user, NULL for none */
  const char *password; /* basic auth password, NULL is "" */
  long timeout_ms; /* per request; <= 0 means 10000 */
} wd_registry_conf_t;

typedef struct wd_registry wd_registry_t;

/* Creates a client. *out is owned by the caller (wd_registry_destroy).
 * Errors: WD_ERR_CONFIG "C_REGISTRY_URL" when url is NULL/empty or not http(s)://; E_NOMEM. */
wd_error_t *wd_registry_new(const wd_registry_conf_t *conf, wd_registry_t **out);

/* Releases reg and its cache; accepts NULL. */
void wd_registry_destroy(wd_registry_t *reg);

/* The writer schema with this id: *json is the schema's JSON text exactly as the registry gave
 * it (logicalType and other attributes kept), borrowed from the cache for the life of reg.
 * The first call for an id asks the registry (one attempt, no retry); later calls are served
 * from the cache. Errors: E_REGISTRY (retriable), E_SCHEMA_NOT_FOUND, C_REGISTRY_AUTH, E_NOMEM. */
wd_error_t *wd_registry_get_schema(wd_registry_t *reg, int32_t id, const char **json);

/* Registers schema_json (borrowed) under subject (borrowed) and sets *id to the id the registry
 * gives it (an existing id when the same schema is already registered). One attempt.
 * Errors: E_REGISTRY (retriable), C_REGISTRY_AUTH, C_REGISTRY_REJECTED, E_NOMEM. */
wd_error_t *wd_registry_register(wd_registry_t *reg, const char *subject, const char *schema_json, int32_t *id);

/* Milliseconds to wait before retry number attempt (0-based): 100 ms doubling up to 10 s. */
long wd_registry_backoff_ms(unsigned attempt);

/* Counters since wd_registry_new: HTTP requests made and cache hits of wd_registry_get_schema. */
void wd_registry_stats(const wd_registry_t *reg, uint64_t *requests, uint64_t *cache_hits);

#endif
