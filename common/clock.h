/*
 * common/clock.h — the clocks widen reads and its one sleep. Header-only (static inline); any
 * thread. POSIX clock_gettime(2) and nanosleep(2).
 *
 * Wall time (CLOCK_REALTIME) is what is written down: commit records, tombstone stamps, state
 * "now", log lines. Monotonic time (CLOCK_MONOTONIC) measures intervals: timeouts, rates, the
 * time a phase took; it does not jump when the system clock is set.
 */
#ifndef WD_CLOCK_H
#define WD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds since 1970-01-01T00:00Z (wall clock). */
static inline int64_t wd_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic milliseconds since an unspecified start (for intervals only). */
static inline int64_t wd_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic seconds, with nanosecond resolution, since an unspecified start. */
static inline double wd_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps ms milliseconds (nothing for ms <= 0); a signal may end the sleep early. */
static inline void wd_sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

#endif
