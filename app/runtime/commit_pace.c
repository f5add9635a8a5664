/*
 * app/runtime/commit_pace.c — the adaptive commit interval (see commit_pace.h for the rule).
 */
#include "app/runtime/commit_pace.h"

int64_t wd_commit_pace_interval_ms(const wd_commit_pace_t *in) {
  int64_t max = in->max_ms > 0 ? in->max_ms : 0, min = in->min_ms > 0 ? in->min_ms : 0;
  if (!in->adaptive || in->backlog || min >= max) return max;
  double rate = in->rate > 0 ? in->rate : 0, rec = in->record_us > 0 ? in->record_us : 0;
  double busy = rate * rec / 1e6; /* the processing share of the wall time */
  if (busy >= 1.0) return max;
  double d = in->commit_ms > 0 ? in->commit_ms : 0;
  double want = d * (1.0 / (WD_COMMIT_PACE_IDLE_SHARE * (1.0 - busy)) - 1.0);
  if (!(want < (double)max)) return max; /* also NaN */
  int64_t ms = (int64_t)want;
  if ((double)ms < want) ms++; /* rounded up */
  return ms < min ? min : ms > max ? max : ms;
}
