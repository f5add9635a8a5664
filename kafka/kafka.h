/*
 * kafka/kafka.h — what the consumer (ingest/consumer.c) and the producer (sink/producer.c)
 * share about librdkafka: building an rd_kafka_conf_t from a wd_kafka_conf_t with errors that
 * name the bad property, the bridge of librdkafka's logs into wd_log, the handling of client
 * errors ("cannot reach HOST:PORT (connection refused); retrying" logged once) and the mapping of librdkafka error codes to
 * wd_error_t.
 *
 * The Kafka client library (wd_kafka) that ingest/ and sink/ share; only they (and kafka/)
 * may include this header (it includes librdkafka; the build gives no other library its path).
 */
#ifndef WD_KAFKA_H
#define WD_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>

#include "common/error.h"
#include "common/kafka_conf.h"

/* A fixed property name/value pair (static strings). Arrays of them end with {NULL, NULL}. */
typedef struct wd_kafka_kv {
  const char *name;
  const char *value;
} wd_kafka_kv_t;

/* Builds a new librdkafka configuration from conf (borrowed):
 *   1. bootstrap.servers = conf->brokers, group.id = conf->group_id when not NULL,
 *      log.connection.close = false, and the log callback that bridges librdkafka's logs
 *      into wd_log (module "rdkafka"; syslog levels 0-3 -> WARN (the client reports real
 *      failures through its error callback), 4 -> WARN, 5 -> INFO, 6-7 -> DEBUG; connection
 *      failures (facility FAIL) -> DEBUG since the error callback reports them once);
 *   2. defaults (may be NULL): widen's defaults that conf->props may override;
 *   3. conf->props in order;
 *   4. fixed (may be NULL): properties widen relies on, which conf->props may not name.
 * On success *out is owned by the caller: hand it to rd_kafka_new() or release it with
 * rd_kafka_conf_destroy().
 * Errors (WD_ERR_CONFIG "C_KAFKA_PROPERTY", *out NULL; the message names the property):
 *   brokers missing or empty; a property librdkafka does not know or whose value it refuses
 *   (librdkafka's own reason is quoted); bootstrap.servers or group.id given as a property
 *   (use the brokers / group settings); a property in fixed. E_NOMEM. */
wd_error_t *wd_kafka_conf_build(const wd_kafka_conf_t *conf, const wd_kafka_kv_t *defaults, const wd_kafka_kv_t *fixed,
                                rd_kafka_conf_t **out);

/* A new WD_ERR_KAFKA error with the id eid (e.g. WD_EID_E_KAFKA) whose text is the printf-style text followed
 * by ": <librdkafka's error name and description>". retriable is set for librdkafka's
 * retriable/transient codes, fatal for fatal ones (checks rd_kafka_fatal_error when rk is
 * given and err is RD_KAFKA_RESP_ERR__FATAL). Never returns NULL. */
wd_error_t *wd_kafka_error_make(rd_kafka_t *rk, rd_kafka_resp_err_t err, wd_eid_t eid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* wd_kafka_error(rk, err, ID, fmt, ...): the id as a bare name of common/error_ids.h (E_KAFKA). */
#define wd_kafka_error(rk, err, ID, ...) wd_kafka_error_make((rk), (err), WD_EID_##ID, __VA_ARGS__)

/* A new WD_ERR_KAFKA error with id from a librdkafka error object (the transactional API's
 * results): text as wd_kafka_error's; code = rd_kafka_error_code, retriable, fatal and
 * txn_requires_abort from librdkafka's own classification; fenced for __FENCED,
 * PRODUCER_FENCED, INVALID_PRODUCER_EPOCH and a fatal error caused by one of them. Takes
 * ownership of rerr (destroyed). Never returns NULL. */
wd_error_t *wd_kafka_error_obj_make(rd_kafka_t *rk, rd_kafka_error_t *rerr, wd_eid_t eid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* wd_kafka_error_obj(rk, rerr, ID, fmt, ...): the id as a bare name of common/error_ids.h. */
#define wd_kafka_error_obj(rk, rerr, ID, ...) wd_kafka_error_obj_make((rk), (rerr), WD_EID_##ID, __VA_ARGS__)

/* wd_group_meta_t (common/kafka_conf.h) wraps librdkafka's consumer group metadata. */
struct wd_group_meta {
  rd_kafka_consumer_group_metadata_t *cgmd; /* owned */
};

/* The shared error callback logic for one client. module is the wd_log module ("ingest",
 * "sink"); *waiting is the client's "a broker is unreachable" flag: connection errors are
 * logged once at WARN as "cannot reach <host:port> (<cause in a few words: connection refused,
 * host name not resolved, ...>); retrying" (the broker librdkafka names, else bootstrap.servers;
 * librdkafka's own text at DEBUG) and then at DEBUG until
 * wd_kafka_broker_ok() clears the flag. Other errors are logged at WARN (ERROR for fatal ones).
 * Returns true when err is fatal (the caller records it and stops using the client).
 * Thread: the thread that polls rk (librdkafka calls error callbacks from rd_kafka_poll /
 * rd_kafka_consumer_poll). */
bool wd_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, const char *module, bool *waiting);

/* Start-up check of a new client rk (before rd_kafka_poll_set_consumer for a consumer): asks
 * the brokers for metadata and serves rk's error callback (which must call wd_kafka_on_error)
 * until a broker answers, an error is reported (then up to 1 s more for a security error),
 * or timeout_ms (ms) pass. A connection error is logged (wd_kafka_on_error with module and
 * waiting, as the client's error callback would) after the check. Returns NULL then,
 * except for a security error, which stops start-up with one message naming the cause instead
 * of a later timeout (e.g. init_transactions'): WD_ERR_KAFKA, fatal, code = librdkafka's, id
 *   E_KAFKA_AUTH          SASL authentication failed (__AUTHENTICATION, SASL_AUTHENTICATION_FAILED,
 *                         ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM): check sasl.username/password;
 *   E_KAFKA_TLS_HOSTNAME  the broker's certificate is not for the name it was reached by
 *                         (OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH / IP_ADDRESS_MISMATCH, seen by
 *                         the ssl.certificate.verify_cb every wd_kafka_conf_build sets);
 *   E_KAFKA_TLS_CERT      certificate verify failed otherwise (untrusted CA: set ssl.ca.location; expired);
 *   E_KAFKA_TLS           any other TLS handshake failure (__SSL), librdkafka's reason quoted.
 * The message names the brokers and the user, never a password. Thread: the caller's (it
 * polls rk). Security errors seen later (after the check) are logged by wd_kafka_on_error with
 * the same text, at ERROR once until a broker answers again, and the client keeps retrying. */
/* librdkafka's property names (its own table, rd_kafka_conf_properties_show), as a new array of *n
 * new strings (free each and the array), or NULL on no memory. */
char **wd_kafka_property_names(size_t *n);

/* The error for a property librdkafka does not know: WD_ERR_CONFIG "C_KAFKA_PROPERTY" "unknown Kafka
 * property 'NAME'; did you mean 'NEAR'?" (the closest known name, common/text.h wd_closest). Never
 * names the value: a misspelled secret (sasl.pasword) is as secret as the right name. */
wd_error_t *wd_kafka_unknown_property(const char *name);

wd_error_t *wd_kafka_check_connect(rd_kafka_t *rk, int timeout_ms, const char *module, bool *waiting);

/* Clears *waiting and logs "broker reachable again" at INFO when it was set. */
void wd_kafka_broker_ok(const char *module, bool *waiting);

#endif
