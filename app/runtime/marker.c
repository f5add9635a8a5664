/*
 * app/runtime/marker.c — the prepared marker's codec (app/runtime/marker.h).
 */
#include "app/runtime/marker.h"

#include <stdlib.h>
#include <string.h>

static int put_be(wd_buf_t *out, uint64_t v, int bytes) {
  uint8_t x[8];
  for (int i = 0; i < bytes; i++) x[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
  return wd_buf_append(out, x, (size_t)bytes);
}

static int get_be(const uint8_t *d, size_t len, size_t *at, int bytes, uint64_t *v) {
  if (len - *at < (size_t)bytes) return -1;
  *v = 0;
  for (int i = 0; i < bytes; i++) *v = (*v << 8) | d[*at + (size_t)i];
  *at += (size_t)bytes;
  return 0;
}

int wd_marker_encode(uint64_t number, const char *txn_id, const wd_tp_offset_t *t, const int64_t *from, size_t nt,
                     const wd_store_batch_t *fb, wd_buf_t *out) {
  const char *tid = txn_id ? txn_id : "";
  size_t idl = strlen(tid);
  if (wd_buf_append(out, WD_MARKER_MAGIC, 4) || put_be(out, number, 8) || put_be(out, idl, 2) ||
      wd_buf_append(out, tid, idl) || put_be(out, nt, 4))
    return -1;
  for (size_t i = 0; i < nt; i++) {
    size_t tl = strlen(t[i].topic);
    if (put_be(out, tl, 2) || wd_buf_append(out, t[i].topic, tl) || put_be(out, (uint32_t)t[i].partition, 4) ||
        put_be(out, (uint64_t)t[i].offset, 8) || put_be(out, (uint64_t)from[i], 8))
      return -1;
  }
  size_t at = out->len;
  if (put_be(out, 0, 8) || wd_store_batch_encode(fb, out)) return -1;
  uint64_t blen = out->len - at - 8;
  for (int i = 0; i < 8; i++) out->data[at + (size_t)i] = (uint8_t)(blen >> (8 * (7 - i)));
  return 0;
}

void wd_marker_free(wd_marker_t *pr) {
  free(pr->t);
  free(pr->from);
  free(pr->topics);
  free(pr->txn_id);
  memset(pr, 0, sizeof(*pr));
}

int wd_marker_decode(const uint8_t *d, size_t len, wd_marker_t *pr) {
  size_t at = 4;
  uint64_t v = 0, nt = 0;
  memset(pr, 0, sizeof(*pr));
  if (len < 4) return -1;
  if (memcmp(d, WD_MARKER_MAGIC, 4) == 0) pr->v2 = true;
  else if (memcmp(d, WD_PREPARED_MAGIC, 4) != 0) return -1;
  if (get_be(d, len, &at, 8, &pr->number)) return -1;
  if (pr->v2) {
    if (get_be(d, len, &at, 2, &v) || len - at < v || !(pr->txn_id = malloc(v + 1))) goto bad;
    memcpy(pr->txn_id, d + at, v);
    pr->txn_id[v] = 0;
    at += v;
  }
  if (get_be(d, len, &at, 4, &nt) || nt > len) goto bad;
  pr->t = calloc(nt ? nt : 1, sizeof(*pr->t));
  pr->from = calloc(nt ? nt : 1, sizeof(*pr->from));
  pr->topics = malloc(len + 1); /* every topic name fits in the record */
  if (!pr->t || !pr->from || !pr->topics) goto bad;
  size_t toff = 0;
  for (size_t i = 0; i < nt; i++) {
    if (get_be(d, len, &at, 2, &v) || len - at < v) goto bad;
    memcpy(pr->topics + toff, d + at, v);
    pr->topics[toff + v] = 0;
    pr->t[i].topic = pr->topics + toff;
    toff += v + 1;
    at += v;
    if (get_be(d, len, &at, 4, &v)) goto bad;
    pr->t[i].partition = (int32_t)(uint32_t)v;
    if (get_be(d, len, &at, 8, &v)) goto bad;
    pr->t[i].offset = (int64_t)v;
    if (pr->v2) {
      if (get_be(d, len, &at, 8, &v)) goto bad;
      pr->from[i] = (int64_t)v;
    }
  }
  pr->nt = nt;
  if (get_be(d, len, &at, 8, &v) || len - at != v) goto bad;
  pr->batch = d + at;
  pr->blen = v;
  return 0;
bad:
  wd_marker_free(pr);
  return -1;
}
