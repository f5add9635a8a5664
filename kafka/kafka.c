/*
 * kafka/kafka.c — librdkafka configuration builder, log bridge and error mapping shared by the
 * consumer and the producer (see kafka.h).
 */
#include "kafka/kafka.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/text.h"
#include "common/clock.h"

/* The last X.509 verification error OpenSSL reported to wd_kafka_cert_verify_cb (0: none), so that
 * an "SSL handshake failed: certificate verify failed" can say which check failed (librdkafka's
 * text is the same for an untrusted CA and a hostname mismatch). Written from broker threads. */
static atomic_int wd_kafka_x509_error;

/* X509_V_ERR_* codes (OpenSSL's x509_vfy.h, stable since 1.0/1.1) widen explains; librdkafka gives
 * the numbers, widen does not link OpenSSL itself. */
#define WD_X509_CERT_NOT_YET_VALID 9
#define WD_X509_CERT_HAS_EXPIRED 10
#define WD_X509_DEPTH_ZERO_SELF_SIGNED 18
#define WD_X509_SELF_SIGNED_IN_CHAIN 19
#define WD_X509_UNABLE_TO_GET_ISSUER_LOCALLY 20
#define WD_X509_UNABLE_TO_VERIFY_LEAF 21
#define WD_X509_HOSTNAME_MISMATCH 62
#define WD_X509_IP_ADDRESS_MISMATCH 64

/* librdkafka's ssl.certificate.verify_cb: keeps OpenSSL's own verdict (fails when it failed) and
 * notes the first failing check for wd_kafka_on_error. */
static int wd_kafka_cert_verify_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id, int *x509_error,
                                   int depth, const char *buf, size_t size, char *errstr, size_t errstr_size,
                                   void *opaque) {
  (void)rk, (void)broker_id, (void)buf, (void)size, (void)opaque;
  if (*x509_error == 0) return 1;
  atomic_store(&wd_kafka_x509_error, *x509_error);
  snprintf(errstr, errstr_size, "X.509 error %d at depth %d for broker %s", *x509_error, depth, broker_name);
  return 0;
}

/* Set while wd_kafka_check_connect serves callbacks on this thread: security errors are then
 * reported once by it (as the returned error) rather than logged. */
static _Thread_local rd_kafka_t *wd_kafka_checking;
static _Thread_local int wd_kafka_check_err; /* first error seen during the check */
static _Thread_local char wd_kafka_check_reason[512]; /* its reason */
/* The client whose check failed: its later errors (served while it is destroyed) are not logged. */
static _Thread_local rd_kafka_t *wd_kafka_failed;

/* librdkafka log callback: runs on librdkafka's internal threads; wd_log_write is thread-safe. */
static void wd_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  wd_log_level_t lvl;
  if (level <= 4) lvl = WD_LOG_WARN;
  else if (level == 5) lvl = WD_LOG_INFO;
  else lvl = WD_LOG_DEBUG;
  /* Connection failures are reported once through the error callback (wd_kafka_on_error). */
  if (fac && strcmp(fac, "FAIL") == 0) lvl = WD_LOG_DEBUG;
  /* A failed certificate check is reported by the error callback (wd_kafka_on_error). */
  if (fac && strcmp(fac, "SSLCERTVRFY") == 0) lvl = WD_LOG_DEBUG;
  /* On a broker's first start the idempotent producer's PID request fails while the broker is
   * still creating its internal topics; librdkafka retries on its own and reports a real failure
   * through the error callback, so this transient warning is only debug output. */
  if (buf && strstr(buf, "Failed to acquire idempotence PID") && strstr(buf, "retrying")) lvl = WD_LOG_DEBUG;
  /* After a kill, init_transactions waits while the broker aborts the dead incarnation's open
   * transaction (CONCURRENT_TRANSACTIONS); librdkafka retries on its own: say it once, plainly. */
  if (buf && strstr(buf, "Failed to acquire transactional PID") && strstr(buf, "retrying")) {
    static atomic_int told_previous, told_coordinator; /* librdkafka logs from its own threads */
    if (strstr(buf, "concurrent operation") || strstr(buf, "CONCURRENT_TRANSACTIONS")) {
      /* only an earlier incarnation's open transaction gives CONCURRENT_TRANSACTIONS here */
      if (atomic_fetch_add(&told_previous, 1) == 0)
        wd_log(WD_LOG_INFO, "rdkafka",
               "waiting for the broker to finish the previous run's open transaction "
               "(aborting it fences that run's output)");
    } else if (atomic_fetch_add(&told_coordinator, 1) == 0) {
      /* a broker's first transactions (its transaction state topic being created) or a coordinator
       * that moves: not a previous run */
      wd_log(WD_LOG_INFO, "rdkafka", "waiting for the broker's transaction coordinator");
    }
    lvl = WD_LOG_DEBUG;
  }
  wd_log(lvl, "rdkafka", "%s %s: %s", rk ? rd_kafka_name(rk) : "-", fac ? fac : "-", buf);
}

static bool wd_kafka_kv_has(const wd_kafka_kv_t *kv, const char *name) {
  for (; kv && kv->name; kv++)
    if (strcmp(kv->name, name) == 0) return true;
  return false;
}

/* librdkafka's property names (its own table, rd_kafka_conf_properties_show), as a new array of
 * *n new strings (free each and the array), or NULL. */
char **wd_kafka_property_names(size_t *n) {
  char *text = NULL;
  size_t len = 0, cap = 0;
  char **names = NULL;
  *n = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  rd_kafka_conf_properties_show(f);
  fclose(f);
  for (char *l = text; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (*l >= 'a' && *l <= 'z' && strstr(l, " | ")) {
      size_t k = strcspn(l, " |");
      if (*n == cap) {
        size_t nc = cap ? cap * 2 : 256;
        char **g = realloc(names, nc * sizeof(*g));
        if (!g) break;
        names = g;
        cap = nc;
      }
      if (!(names[*n] = strndup(l, k))) break;
      (*n)++;
    }
    l = nl ? nl + 1 : NULL;
  }
  free(text);
  return names;
}

/* An unknown property's error: its name and the closest known one, never its value (a typo of a
 * secret's name, sasl.pasword, is as secret as the right one). */
wd_error_t *wd_kafka_unknown_property(const char *name) {
  size_t n = 0;
  char **names = wd_kafka_property_names(&n);
  const char *near = names ? wd_closest(name, (const char *const *)names, n) : NULL;
  wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "unknown Kafka property '%s'%s%s%s", name,
                                 near ? "; did you mean '" : " (librdkafka's CONFIGURATION.md lists them)",
                                 near ? near : "", near ? "'?" : "");
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return err;
}

static wd_error_t *wd_kafka_conf_set1(rd_kafka_conf_t *rconf, const char *name, const char *value) {
  char errstr[512];
  rd_kafka_conf_res_t res = rd_kafka_conf_set(rconf, name, value, errstr, sizeof(errstr));
  if (res == RD_KAFKA_CONF_UNKNOWN) return wd_kafka_unknown_property(name);
  if (res != RD_KAFKA_CONF_OK)
    return wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' = '%s': %s", name,
                        wd_conf_shown(name, value), errstr);
  return NULL;
}

wd_error_t *wd_kafka_conf_build(const wd_kafka_conf_t *conf, const wd_kafka_kv_t *defaults, const wd_kafka_kv_t *fixed,
                                rd_kafka_conf_t **out) {
  wd_error_t *err = NULL;
  rd_kafka_conf_t *rconf = NULL;
  *out = NULL;
  if (!conf->brokers || !*conf->brokers) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                       "Kafka property 'bootstrap.servers': no brokers given (host:port[,host:port...])");
    goto cleanup;
  }
  if (!(rconf = rd_kafka_conf_new())) {
    err = wd_error_nomem();
    goto cleanup;
  }
  rd_kafka_conf_set_log_cb(rconf, wd_kafka_log_cb);
  /* fails only in a librdkafka without SSL, where no TLS connection can be made anyway */
  (void)rd_kafka_conf_set_ssl_cert_verify_cb(rconf, wd_kafka_cert_verify_cb);
  if ((err = wd_kafka_conf_set1(rconf, "bootstrap.servers", conf->brokers))) goto cleanup;
  if (conf->group_id && (err = wd_kafka_conf_set1(rconf, "group.id", conf->group_id))) goto cleanup;
  if ((err = wd_kafka_conf_set1(rconf, "log.connection.close", "false"))) goto cleanup;
  for (const wd_kafka_kv_t *kv = defaults; kv && kv->name; kv++)
    if ((err = wd_kafka_conf_set1(rconf, kv->name, kv->value))) goto cleanup;
  for (size_t i = 0; i < conf->nprops; i++) {
    const wd_kafka_prop_t *prop = &conf->props[i];
    if (strcmp(prop->name, "bootstrap.servers") == 0 || strcmp(prop->name, "metadata.broker.list") == 0 ||
        strcmp(prop->name, "group.id") == 0) {
      err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                         "Kafka property '%s' cannot be passed through: use the %s setting", prop->name,
                         strcmp(prop->name, "group.id") == 0 ? "group" : "brokers");
      goto cleanup;
    }
    if (wd_kafka_kv_has(fixed, prop->name)) {
      err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' is managed by widen and cannot be set",
                         prop->name);
      goto cleanup;
    }
    if ((err = wd_kafka_conf_set1(rconf, prop->name, prop->value))) goto cleanup;
  }
  for (const wd_kafka_kv_t *kv = fixed; kv && kv->name; kv++)
    if ((err = wd_kafka_conf_set1(rconf, kv->name, kv->value))) goto cleanup;
  *out = rconf;
  rconf = NULL;
cleanup:
  if (rconf) rd_kafka_conf_destroy(rconf);
  return err;
}

static bool wd_kafka_err_retriable(rd_kafka_resp_err_t err) {
  switch (err) {
  case RD_KAFKA_RESP_ERR__TRANSPORT:
  case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
  case RD_KAFKA_RESP_ERR__RESOLVE:
  case RD_KAFKA_RESP_ERR__TIMED_OUT:
  case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
  case RD_KAFKA_RESP_ERR__QUEUE_FULL:
  case RD_KAFKA_RESP_ERR__WAIT_COORD:
  case RD_KAFKA_RESP_ERR__IN_PROGRESS:
  case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
  case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
  case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
  case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
  case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
  case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
  case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
  case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
  case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
  case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART: return true;
  default: return false;
  }
}

_Static_assert(WD_KAFKA_ERR_MSG_SIZE_TOO_LARGE == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, "code mismatch");
_Static_assert(WD_KAFKA_ERR_TIMED_OUT == RD_KAFKA_RESP_ERR__TIMED_OUT, "code mismatch");

static bool wd_kafka_err_fenced(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

wd_error_t *wd_kafka_error_obj_make(rd_kafka_t *rk, rd_kafka_error_t *rerr, wd_eid_t eid, const char *fmt, ...) {
  char text[512], fatal_str[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  rd_kafka_resp_err_t code = rerr ? rd_kafka_error_code(rerr) : RD_KAFKA_RESP_ERR__FAIL;
  rd_kafka_resp_err_t orig = RD_KAFKA_RESP_ERR_NO_ERROR;
  bool fatal = rerr && rd_kafka_error_is_fatal(rerr);
  if (fatal && rk) orig = rd_kafka_fatal_error(rk, fatal_str, sizeof(fatal_str));
  wd_error_t *e = wd_error_make(WD_ERR_KAFKA, eid, "%s: %s (%s)%s%s", text, rerr ? rd_kafka_error_name(rerr) : "?",
                                rerr ? rd_kafka_error_string(rerr) : "unknown error", orig ? "; fatal: " : "",
                                orig ? fatal_str : "");
  if (e != wd_error_nomem()) {
    e->code = (int)code;
    e->retriable = rerr && rd_kafka_error_is_retriable(rerr);
    e->fatal = fatal;
    e->txn_requires_abort = rerr && rd_kafka_error_txn_requires_abort(rerr);
    e->fenced = wd_kafka_err_fenced(code) || (orig && wd_kafka_err_fenced(orig));
  }
  if (rerr) rd_kafka_error_destroy(rerr);
  return e;
}

void wd_group_meta_destroy(wd_group_meta_t *gm) {
  if (!gm) return;
  if (gm->cgmd) rd_kafka_consumer_group_metadata_destroy(gm->cgmd);
  free(gm);
}

wd_error_t *wd_kafka_error_make(rd_kafka_t *rk, rd_kafka_resp_err_t err, wd_eid_t eid, const char *fmt, ...) {
  char text[512], fatal_str[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (err == RD_KAFKA_RESP_ERR__FATAL && rk) {
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, fatal_str, sizeof(fatal_str));
    if (orig) {
      wd_error_t *e =
          wd_error_make(WD_ERR_KAFKA, eid, "%s: fatal client error %s: %s", text, rd_kafka_err2name(orig), fatal_str);
      if (e != wd_error_nomem()) {
        e->fatal = true;
        e->retriable = false;
        e->code = (int)orig;
        e->fenced = wd_kafka_err_fenced(orig);
      }
      return e;
    }
  }
  wd_error_t *e = wd_error_make(WD_ERR_KAFKA, eid, "%s: %s (%s)", text, rd_kafka_err2name(err), rd_kafka_err2str(err));
  if (e != wd_error_nomem()) {
    e->retriable = wd_kafka_err_retriable(err);
    e->fatal = err == RD_KAFKA_RESP_ERR__FATAL;
    e->code = (int)err;
    e->fenced = wd_kafka_err_fenced(err);
  }
  return e;
}

/* What a connection error says, for "cannot reach WHERE (WHY); retrying": WHERE is the broker
 * librdkafka names at the start of reason ("host:port/id: ..."), else bootstrap.servers; WHY is
 * the cause in a few words (connection refused, host name not resolved, ...), else librdkafka's
 * text for err. */
static void wd_kafka_unreachable_text(rd_kafka_t *rk, int err, const char *reason, char *where, size_t wn, char *why,
                                      size_t yn) {
  const char *slash = reason ? strchr(reason, '/') : NULL;
  const char *colon = reason ? strstr(reason, ": ") : NULL;
  size_t len = slash ? (size_t)(slash - reason) : 0;
  if (slash && colon && slash < colon && len > 0 && len < wn && memchr(reason, ':', len) && !memchr(reason, ' ', len)) {
    memcpy(where, reason, len);
    where[len] = 0;
  } else {
    size_t n = wn;
    const rd_kafka_conf_t *c = rd_kafka_conf(rk);
    if (!c || rd_kafka_conf_get(c, "bootstrap.servers", where, &n) != RD_KAFKA_CONF_OK)
      snprintf(where, wn, "the broker");
  }
  static const struct {
    const char *has, *say;
  } causes[] = {{"Connection refused", "connection refused"},
                {"resolve", "host name not resolved"},
                {"timed out", "connection timed out"},
                {"No route to host", "no route to host"},
                {"Network is unreachable", "network unreachable"},
                {"brokers are down", "all brokers down"},
                {"SSL", "TLS handshake failed"},
                {"SASL", "authentication failed"},
                {"Disconnected", "disconnected"}};
  for (size_t i = 0; i < sizeof(causes) / sizeof(*causes); i++)
    if (reason && strstr(reason, causes[i].has)) {
      snprintf(why, yn, "%s", causes[i].say);
      return;
    }
  snprintf(why, yn, "%s", rd_kafka_err2str((rd_kafka_resp_err_t)err));
}

static bool wd_kafka_is_connection_error(int err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
         err == RD_KAFKA_RESP_ERR__RESOLVE || err == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

static bool wd_kafka_is_security_error(int err) {
  return err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
         err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED || err == RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE ||
         err == RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM;
}

/* The property value named, or "" (into buf). */
static const char *wd_kafka_conf_str(rd_kafka_t *rk, const char *name, char *buf, size_t size) {
  const rd_kafka_conf_t *c = rd_kafka_conf(rk);
  size_t n = size;
  if (!c || rd_kafka_conf_get(c, name, buf, &n) != RD_KAFKA_CONF_OK) buf[0] = 0;
  return buf;
}

/* One message saying what failed and what to change, for a security error err (see
 * wd_kafka_is_security_error) with librdkafka's reason. */
static wd_error_t *wd_kafka_security_error(rd_kafka_t *rk, int err, const char *reason) {
  char brokers[256], mech[64], user[128], ca[256], ident[32];
  wd_kafka_conf_str(rk, "bootstrap.servers", brokers, sizeof(brokers));
  wd_error_t *e;
  if (err != RD_KAFKA_RESP_ERR__SSL) {
    wd_kafka_conf_str(rk, "sasl.mechanisms", mech, sizeof(mech));
    wd_kafka_conf_str(rk, "sasl.username", user, sizeof(user));
    e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_AUTH,
                     "Kafka authentication failed: broker %s refused SASL %s user '%s': check sasl.username and "
                     "sasl.password in kafka.properties (broker said: %s)",
                     brokers, mech, user, reason);
  } else if (strstr(reason, "certificate verify failed")) {
    int x = atomic_load(&wd_kafka_x509_error);
    wd_kafka_conf_str(rk, "ssl.ca.location", ca, sizeof(ca));
    wd_kafka_conf_str(rk, "ssl.endpoint.identification.algorithm", ident, sizeof(ident));
    if (x == WD_X509_HOSTNAME_MISMATCH || x == WD_X509_IP_ADDRESS_MISMATCH)
      e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_TLS_HOSTNAME,
                       "Kafka TLS hostname mismatch: the certificate of broker %s is not issued for the name it was "
                       "reached by (ssl.endpoint.identification.algorithm=%s): connect with a name or address the "
                       "certificate lists in bootstrap.servers (the broker's advertised listeners too)",
                       brokers, ident[0] ? ident : "https");
    else if (x == WD_X509_CERT_HAS_EXPIRED || x == WD_X509_CERT_NOT_YET_VALID)
      e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_TLS_CERT,
                       "Kafka TLS certificate verify failed: the certificate of broker %s has %s", brokers,
                       x == WD_X509_CERT_HAS_EXPIRED ? "expired" : "a start date in the future (check the clock)");
    else
      e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_TLS_CERT,
                       "Kafka TLS certificate verify failed: the certificate of broker %s is not signed by a trusted "
                       "CA (X.509 error %d%s): set ssl.ca.location to the CA that signed it (now: %s)",
                       brokers, x,
                       x == WD_X509_UNABLE_TO_GET_ISSUER_LOCALLY || x == WD_X509_SELF_SIGNED_IN_CHAIN ||
                               x == WD_X509_DEPTH_ZERO_SELF_SIGNED || x == WD_X509_UNABLE_TO_VERIFY_LEAF
                           ? ", issuer unknown"
                           : "",
                       ca[0] ? ca : "the system's CA store");
  } else {
    e = wd_error_new(WD_ERR_KAFKA, E_KAFKA_TLS,
                     "Kafka TLS handshake with broker %s failed (is it a TLS listener? security.protocol, "
                     "ssl.* in kafka.properties): %s",
                     brokers, reason);
  }
  if (e != wd_error_nomem()) {
    e->code = err;
    e->fatal = true;
  }
  return e;
}

wd_error_t *wd_kafka_check_connect(rd_kafka_t *rk, int timeout_ms, const char *module, bool *waiting) {
  wd_error_t *err = NULL;
  int64_t deadline = wd_mono_ms() + timeout_ms, settle = 0;
  wd_kafka_checking = rk;
  wd_kafka_failed = NULL;
  wd_kafka_check_err = 0;
  wd_kafka_check_reason[0] = 0;
  for (;;) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t merr = rd_kafka_metadata(rk, 0, NULL, &md, 200);
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_poll(rk, 0); /* serves the error callback (the client's own) */
    int64_t now = wd_mono_ms();
    if (wd_kafka_check_err && wd_kafka_is_security_error(wd_kafka_check_err)) {
      err = wd_kafka_security_error(rk, wd_kafka_check_err, wd_kafka_check_reason);
      wd_kafka_failed = rk;
      break;
    }
    if (!merr || now >= deadline) break;
    /* "all brokers down" comes with (sometimes before) the failed handshake's own error: a
     * moment longer for it; then unreachable for another reason (the client keeps retrying) */
    if (wd_kafka_check_err && !settle) settle = now + 1000;
    if (settle && now >= settle) break;
  }
  wd_kafka_checking = NULL;
  /* the connection error held back during the check, logged as the client logs it */
  if (!err && wd_kafka_check_err) wd_kafka_on_error(rk, wd_kafka_check_err, wd_kafka_check_reason, module, waiting);
  return err;
}

bool wd_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, const char *module, bool *waiting) {
  char fatal_str[512];
  if (wd_kafka_failed == rk) return true;
  if (wd_kafka_checking == rk) { /* reported by wd_kafka_check_connect */
    if (!wd_kafka_check_err || (wd_kafka_is_security_error(err) && !wd_kafka_is_security_error(wd_kafka_check_err))) {
      wd_kafka_check_err = err;
      snprintf(wd_kafka_check_reason, sizeof(wd_kafka_check_reason), "%s", reason ? reason : "");
    }
    return false;
  }
  if (wd_kafka_is_security_error(err)) {
    /* once at ERROR until a broker answers again (wd_kafka_broker_ok clears *waiting), then DEBUG */
    wd_error_t *e = wd_kafka_security_error(rk, err, reason ? reason : "");
    wd_log(*waiting ? WD_LOG_DEBUG : WD_LOG_ERROR, module, "%s", e->message);
    wd_error_destroy(e);
    *waiting = true;
    return false; /* librdkafka keeps retrying: credentials or certificates may be fixed meanwhile */
  }
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, fatal_str, sizeof(fatal_str));
    wd_log(WD_LOG_ERROR, module, "%s: fatal Kafka client error %s: %s", rd_kafka_name(rk), rd_kafka_err2name(orig),
           orig ? fatal_str : reason);
    return true;
  }
  if (wd_kafka_is_connection_error(err)) {
    if (!*waiting) {
      char where[512], why[160];
      wd_kafka_unreachable_text(rk, err, reason, where, sizeof(where), why, sizeof(why));
      wd_log(WD_LOG_WARN, module, "cannot reach %s (%s); retrying", where, why);
      wd_log(WD_LOG_DEBUG, module, "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
      *waiting = true;
    } else {
      wd_log(WD_LOG_DEBUG, module, "still cannot reach the broker (%s: %s)",
             rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    }
    return false;
  }
  if (reason && strstr(reason, "Invalid response size")) {
    /* librdkafka advises raising receive.message.max.bytes; the usual cause is another server at
     * the address (a database, an HTTP port) or a TLS listener read as plaintext. Said once per
     * process at WARN (librdkafka retries the connection); the reachability state is left as it is */
    static bool said;
    char where[512], why[160];
    wd_kafka_unreachable_text(rk, err, reason, where, sizeof(where), why, sizeof(why));
    wd_log(said ? WD_LOG_DEBUG : WD_LOG_WARN, module,
           "%s does not answer in Kafka's protocol, or with more than receive.message.max.bytes: is it a Kafka "
           "broker's address (kafka.bootstrap.servers), and does security.protocol match its listener? "
           "(librdkafka: %s); retrying",
           where, reason);
    said = true;
    return false;
  }
  wd_log(WD_LOG_WARN, module, "%s: Kafka client error %s: %s", rd_kafka_name(rk),
         rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
  return false;
}

void wd_kafka_broker_ok(const char *module, bool *waiting) {
  if (*waiting) wd_log(WD_LOG_INFO, module, "broker reachable again");
  *waiting = false;
}
