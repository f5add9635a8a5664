/*
 * common/error.h — the error object of widen.
 *
 * Every fallible function returns a wd_error_t * (NULL on success), as librdkafka's
 * rd_kafka_error_t does. The message always starts with the stable error id when there is one
 * (spec §11: "C_..." for configuration, "E_..." for records; widen's own ids such as "E_DECODE"),
 * so users and scripts can match errors by id. Code dispatches on the class, the id and the bits
 * below (retriable, fatal, txn_requires_abort, fenced, code), never on the message text.
 *
 * Ownership: the caller owns a returned error and releases it with wd_error_destroy().
 */
#ifndef WD_ERROR_H
#define WD_ERROR_H

#include <stdarg.h>
#include <stdbool.h>

#include "common/error_ids.h"

typedef enum wd_err_class {
  WD_ERR_CONFIG = 1, /* a table/pipeline definition is refused (spec §11.1) */
  WD_ERR_RECORD, /* one record (and its message) is rejected (spec §11.2) */
  WD_ERR_DECODE, /* input bytes could not be decoded */
  WD_ERR_IO, /* file system, RocksDB */
  WD_ERR_KAFKA, /* broker/client errors */
  WD_ERR_NOMEM, /* allocation failed */
  WD_ERR_INTERNAL /* a bug: an invariant did not hold */
} wd_err_class_t;

typedef struct wd_error {
  wd_err_class_t cls;
  char id[48]; /* stable id, e.g. "E_ARITH_OVERFLOW"; "" when none */
  wd_eid_t eid; /* the id as an enum (common/error_ids.h): what code compares */
  char *message; /* "ID: text" (or just text when id is ""), owned */
  int index; /* for record errors inside a message: index of the failing record, else -1 */
  bool retriable; /* waiting and trying again may succeed (broker away, registry down, timeout) */
  bool fatal; /* the client or process cannot go on: stop with the message, exit non-zero */
  /* Kafka errors (WD_ERR_KAFKA) also carry, from librdkafka's rd_kafka_error_t: */
  int code; /* librdkafka's rd_kafka_resp_err_t (0 when none); compare with the
                              WD_KAFKA_ERR_* names of common/kafka_conf.h, never with the text */
  bool txn_requires_abort; /* the open transaction must be aborted; then the work can be redone */
  bool fenced; /* another producer instance (same transactional.id, or a newer group
                              generation) took over: this one must stop */
} wd_error_t;

/* Creates an error of class cls with the stable id eid (WD_EID_NONE: an error without id) and a
 * printf-style text; err->id is the id's text and err->retriable comes from the id's entry in
 * common/error_ids.h.
 * Never returns NULL: on allocation failure a static out-of-memory error is returned, which
 * wd_error_destroy() recognises and does not free. */
wd_error_t *wd_error_make(wd_err_class_t cls, wd_eid_t eid, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
wd_error_t *wd_error_makev(wd_err_class_t cls, wd_eid_t eid, const char *fmt, va_list ap);

/* wd_error_new(cls, ID, fmt, ...): wd_error_make with the id written as a bare name of
 * common/error_ids.h (E_TYPE, C_PRIMARY_KEY, NONE): an id that is not listed there does not compile. */
#define wd_error_new(cls, ID, ...) wd_error_make((cls), WD_EID_##ID, __VA_ARGS__)

/* The text of a listed id ("E_STOPPED" for WD_EID_E_STOPPED); "" for WD_EID_NONE or an id out of range. */
const char *wd_error_id_text(wd_eid_t eid);

/* err's message without its leading "ID: " (the text to build another message of the same id
 * on), borrowed from err; the whole message when it has no id. */
const char *wd_error_text(const wd_error_t *err);

/* Returns a new error whose message is "prefix: <err's message>" keeping err's id and class;
 * takes ownership of err. */
wd_error_t *wd_error_wrap(wd_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The shared out-of-memory error (static; destroy is a no-op on it). */
wd_error_t *wd_error_nomem(void);

/* The enum of a stable id's text ("E_STOPPED" -> WD_EID_E_STOPPED); WD_EID_NONE for NULL or "",
 * WD_EID_UNLISTED for an id not in common/error_ids.h. */
wd_eid_t wd_error_eid(const char *id);

/* Whether err (may be NULL: false) has the id eid. */
static inline bool wd_error_is(const wd_error_t *err, wd_eid_t eid) { return err && err->eid == eid; }

/* Releases err; accepts NULL. */
void wd_error_destroy(wd_error_t *err);

/* Whether err asks for the open transaction to be aborted and the work redone (docs/runtime.md
 * "Errors by class"): txn_requires_abort, and neither fenced nor fatal. false for NULL. The one
 * predicate for it: the coordinator, the collector and the pipeline ask this, not the bits. */
static inline bool wd_error_abortable(const wd_error_t *err) {
  return err && err->txn_requires_abort && !err->fenced && !err->fatal;
}

#endif
