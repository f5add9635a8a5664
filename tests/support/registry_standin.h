/*
 * tests/support/registry_standin.h — a STAND-IN for a Confluent-compatible schema registry, for
 * tests only. It is not a schema registry: it implements the endpoints widen uses and those a
 * test needs to look at what was registered, with the Confluent API's documented answers
 * (checked by tests/unit/test_registry_standin.c):
 *   GET  /schemas/ids/{id}             -> 200 {"schema": "..."} | 404 error_code 40403
 *   POST /subjects/{subject}/versions  body {"schema": "..."} -> 200 {"id": N} | 422 error_code
 *                                      42201 when the schema is not an Avro schema (avro-c)
 *   GET  /subjects                     -> 200 ["subject", ...]
 *   GET  /subjects/{subject}/versions  -> 200 [1, 2, ...] | 404 error_code 40401
 *   GET  /subjects/{subject}/versions/{version|latest}
 *                                      -> 200 {"subject","id","version","schema"} | 404 40401
 *                                         (subject) / 40402 (version) | 422 42202 (not a version)
 * (the same schema text gets the same id, in any subject; registering a schema a subject already
 * has gives no new version), with optional HTTP basic auth (401 when the credentials differ), and
 * fault injection: the next N requests answered 503. No compatibility checks, no deletes, memory
 * only. libmicrohttpd on 127.0.0.1, an ephemeral port (port 0 + MHD_DAEMON_INFO_BIND_PORT), its own
 * thread.
 */
#ifndef WD_REGISTRY_STANDIN_H
#define WD_REGISTRY_STANDIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct wd_standin wd_standin_t;

/* Starts a stand-in; user may be NULL (no auth). NULL when it cannot start. */
wd_standin_t *wd_standin_start(const char *user, const char *password);
void wd_standin_stop(wd_standin_t *s); /* accepts NULL */
/* "http://127.0.0.1:PORT" (static storage inside s). */
const char *wd_standin_url(const wd_standin_t *s);
/* Stores schema json under id (for fixtures written with a given id). */
void wd_standin_put(wd_standin_t *s, int32_t id, const char *json);
/* The next n requests are answered 503 Service Unavailable. */
void wd_standin_fail_next(wd_standin_t *s, int n);
/* GET /schemas/ids/<id> is answered 503 until called again with another id (0: none), the other
 * ids as usual: an outage that only the records of one writer schema meet. */
void wd_standin_fail_id(wd_standin_t *s, int32_t id);
/* How many requests the failing id was refused so far. */
int wd_standin_failed_id(wd_standin_t *s);
/* Requests served so far (503s included), and the subject last registered (or ""). */
int wd_standin_requests(wd_standin_t *s);
/* The schema text registered under subject (latest), copied into out; 0 or -1 when none. */
int wd_standin_subject_schema(wd_standin_t *s, const char *subject, char *out, size_t cap);

#endif
