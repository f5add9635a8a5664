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

void wd_commit_pacer_init(wd_commit_pacer_t *pc, int64_t max_ms, int64_t min_ms, bool adaptive) {
  *pc = (wd_commit_pacer_t){.in = {.max_ms = max_ms, .min_ms = min_ms, .adaptive = adaptive}, .interval = max_ms};
}

void wd_commit_pacer_batch(wd_commit_pacer_t *pc, double now, size_t n, bool full, double busy_s) {
  pc->in.backlog = full;
  pc->win_busy += busy_s;
  pc->win_records += n;
  if (pc->win_t0 <= 0) pc->win_t0 = now;
  double w = now - pc->win_t0;
  if (w < 0.2) return;
  double rate = (double)pc->win_records / w;
  pc->in.rate = pc->in.rate > 0 ? 0.5 * pc->in.rate + 0.5 * rate : rate;
  if (pc->win_records) {
    double us = pc->win_busy * 1e6 / (double)pc->win_records;
    pc->in.record_us = pc->in.record_us > 0 ? 0.5 * pc->in.record_us + 0.5 * us : us;
  }
  pc->win_t0 = now;
  pc->win_busy = 0;
  pc->win_records = 0;
}

void wd_commit_pacer_commit(wd_commit_pacer_t *pc, double ms) {
  pc->in.commit_ms = pc->in.commit_ms > 0 ? 0.7 * pc->in.commit_ms + 0.3 * ms : ms;
}

void wd_commit_pacer_backlog(wd_commit_pacer_t *pc, bool backlog) { pc->in.backlog = backlog; }

int64_t wd_commit_pacer_interval(wd_commit_pacer_t *pc) { return pc->interval = wd_commit_pace_interval_ms(&pc->in); }
