/*
 * app/runtime/stop_clock.c — the stop budget and transient retries (app/runtime/stop_clock.h).
 */
#include "app/runtime/stop_clock.h"

#include "common/clock.h"
#include "common/log.h"

bool wd_stop_expired(wd_stop_clock_t *sc) {
  if (!sc->stop || !*sc->stop) return false;
  if (*sc->stop >= 2) return true;
  double now = wd_mono_s();
  if (sc->deadline == 0) sc->deadline = now + (sc->txn_timeout_ms > 0 ? sc->txn_timeout_ms : 10000) / 1000.0;
  return now >= sc->deadline;
}

int wd_stop_budget_ms(wd_stop_clock_t *sc, int cap_ms) {
  if (!sc->stop || !*sc->stop) return cap_ms;
  (void)wd_stop_expired(sc);
  double left = (sc->deadline - wd_mono_s()) * 1000.0;
  if (left < 100) return 100;
  return left < cap_ms ? (int)left : cap_ms;
}

bool wd_stop_retry_transient(wd_stop_clock_t *sc, double *since, double bound_s, const char *what,
                             const wd_error_t *err) {
  if (!err || !err->retriable || wd_stop_expired(sc)) return false;
  double now = wd_mono_s();
  if (*since == 0) {
    *since = now;
    wd_log(WD_LOG_WARN, "commit", "%s: %s; retrying for up to %.0f s", what, err->message, bound_s);
  }
  return now - *since < bound_s;
}

wd_error_t *wd_stopped_error(wd_error_t *cause, const char *what) {
  wd_error_t *e = wd_error_new(WD_ERR_KAFKA, E_STOPPED,
                               "stopped while %s (%s): the last commit was not made; its "
                               "records are read again on restart",
                               what, cause ? cause->message : "stop requested");
  wd_error_destroy(cause);
  return e;
}
