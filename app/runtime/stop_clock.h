/*
 * app/runtime/stop_clock.h — how long the runtime's waits may go on once a stop is requested
 * (docs/runtime.md "Stop"), and the bounded retry of transient Kafka errors. Shared by the commit
 * coordinator (its owner) and the task manager (borrowed).
 *
 * A stop request is the pipeline's flag (set from a signal handler): once set, a wait gives up when
 * transaction.timeout.ms has passed since the first wait that saw it (past it the broker aborts
 * the open transaction by itself, so waiting longer for a broker that is away gains nothing), or
 * at once when it is >= 2 (a second signal). Thread: the pipeline's.
 */
#ifndef WD_STOP_CLOCK_H
#define WD_STOP_CLOCK_H

#include <stdbool.h>

#include "common/error.h"

typedef struct wd_stop_clock {
  volatile const int *stop; /* the pipeline's stop request (borrowed; may be NULL) */
  double deadline; /* monotonic s: a stop gives up waiting past it (0: not stopping yet) */
  int txn_timeout_ms; /* transaction.timeout.ms (<= 0: 10 s) */
} wd_stop_clock_t;

/* Whether a stop has used up its time; false when not stopping. The first call that sees the
 * request starts its clock. */
bool wd_stop_expired(wd_stop_clock_t *sc);

/* ms left before a stop gives up (a long operation's timeout), at most cap_ms, at least 100;
 * cap_ms when not stopping. */
int wd_stop_budget_ms(wd_stop_clock_t *sc, int cap_ms);

/* A transient Kafka error around a broker restart (a request that timed out, a leader or
 * coordinator that moved: err->retriable): whether to try again — not stopping, and the first such
 * failure (*since, monotonic s; 0 = none yet) less than bound_s ago. The first is logged at WARN
 * as "<what>: <message>; retrying for up to N s". */
bool wd_stop_retry_transient(wd_stop_clock_t *sc, double *since, double bound_s, const char *what,
                             const wd_error_t *err);

/* "E_STOPPED: stopped while <what> (<cause>)": the last commit was not made. Takes cause (may be
 * NULL). */
wd_error_t *wd_stopped_error(wd_error_t *cause, const char *what);

#endif
