/*
 * app/ops/history_gather.c — what the open commit took, for its history record (see
 * history_gather.h).
 */
#include "app/ops/history_gather.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* One commit's gathering. */
struct wd_hist_open {
  wd_commit_range_t *in; /* input offsets [from, to) per partition */
  size_t nin, cap;
  uint64_t records_in, changes_out, dead_letters, restored;
  double t0; /* first note of the commit (monotonic s) */
  double last_duration_s;
};

struct wd_hist_gather {
  const char *sink_topic;
  size_t keep;
  wd_history_retention_t ret; /* with kept: wd_hist_gather_retain */
  wd_history_kept_t *kept;
  struct wd_hist_open hc, hs; /* hc: the open commit's; hs: the commit being completed */
  wd_buf_t trace_hc, trace_hs; /* their trace lines */
};

wd_hist_gather_t *wd_hist_gather_new(const char *sink_topic, size_t keep) {
  wd_hist_gather_t *g = calloc(1, sizeof(*g));
  if (!g) return NULL;
  g->sink_topic = sink_topic;
  g->keep = keep;
  return g;
}

wd_error_t *wd_hist_gather_retain(wd_hist_gather_t *g, const wd_history_retention_t *r, wd_store_t *st) {
  wd_history_kept_t *k = NULL;
  wd_error_t *err = wd_history_kept_load(st, &k);
  if (err) return err;
  wd_history_kept_free(g->kept);
  g->kept = k;
  g->ret = *r;
  return NULL;
}

void wd_hist_gather_destroy(wd_hist_gather_t *g) {
  if (!g) return;
  wd_history_kept_free(g->kept);
  free(g->hc.in);
  free(g->hs.in);
  wd_buf_free(&g->trace_hc);
  wd_buf_free(&g->trace_hs);
  free(g);
}

int wd_hist_gather_note(wd_hist_gather_t *g, const char *topic, int32_t partition, int64_t from, int64_t to) {
  struct wd_hist_open *h = &g->hc;
  if (!h->nin && !h->records_in) h->t0 = wd_mono_s();
  for (size_t i = 0; i < h->nin; i++)
    if (h->in[i].partition == partition && h->in[i].topic == topic) {
      if (from < h->in[i].from) h->in[i].from = from;
      if (to > h->in[i].to) h->in[i].to = to;
      return 0;
    }
  if (h->nin == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 16;
    wd_commit_range_t *r = realloc(h->in, cap * sizeof(*r));
    if (!r) return -1;
    h->in = r;
    h->cap = cap;
  }
  h->in[h->nin++] = (wd_commit_range_t){topic, partition, from, to};
  return 0;
}

void wd_hist_gather_count(wd_hist_gather_t *g, uint64_t records_in, uint64_t changes_out, uint64_t dead_letters,
                          uint64_t restored) {
  g->hc.records_in += records_in;
  g->hc.changes_out += changes_out;
  g->hc.dead_letters += dead_letters;
  g->hc.restored += restored;
}

wd_buf_t *wd_hist_gather_trace(wd_hist_gather_t *g) { return &g->trace_hc; }

static void hist_clear(struct wd_hist_open *h) {
  h->nin = 0;
  h->records_in = h->changes_out = h->dead_letters = h->restored = 0;
  h->t0 = 0;
}

void wd_hist_gather_snapshot(wd_hist_gather_t *g) {
  struct wd_hist_open t = g->hs;
  g->hs = g->hc;
  g->hc = t;
  hist_clear(&g->hc);
  wd_buf_t tb = g->trace_hs;
  g->trace_hs = g->trace_hc;
  g->trace_hc = tb;
  wd_buf_reset(&g->trace_hc);
}

int wd_hist_gather_put(wd_hist_gather_t *g, uint64_t number, wd_store_batch_t *b, bool rebuild,
                       const wd_producer_range_t *out, size_t nout) {
  wd_commit_range_t *o = calloc(nout ? nout : 1, sizeof(*o));
  if (!o) return -1;
  size_t no = 0;
  for (size_t i = 0; i < nout; i++) /* the changelog's partitions only (not the dead-letter topic's) */
    if (!strcmp(out[i].topic, g->sink_topic))
      o[no++] = (wd_commit_range_t){out[i].topic, out[i].partition, out[i].first, out[i].end};
  struct wd_hist_open *h = &g->hs;
  h->last_duration_s = h->t0 > 0 ? wd_mono_s() - h->t0 : 0;
  const char *mode = rebuild ? "rebuild" : h->records_in && h->restored == h->records_in ? "restore" : "incremental";
  wd_commit_info_t ci = {number,
                         wd_wall_ms(),
                         mode,
                         h->in,
                         h->nin,
                         o,
                         no,
                         h->records_in,
                         h->changes_out,
                         h->dead_letters,
                         h->last_duration_s * 1000.0};
  int rc = g->kept ? wd_history_add_retained(b, &ci, &g->ret, g->kept) : wd_history_add(b, &ci, g->keep);
  free(o);
  return rc;
}

double wd_hist_gather_duration_s(const wd_hist_gather_t *g) { return g->hs.last_duration_s; }

void wd_hist_gather_committed(wd_hist_gather_t *g, FILE *trace) {
  hist_clear(&g->hs);
  if (trace && g->trace_hs.len) fwrite(g->trace_hs.data, 1, g->trace_hs.len, trace);
  wd_buf_reset(&g->trace_hs);
}

void wd_hist_gather_aborted(wd_hist_gather_t *g) {
  hist_clear(&g->hc);
  hist_clear(&g->hs);
  wd_buf_reset(&g->trace_hc);
  wd_buf_reset(&g->trace_hs);
}
