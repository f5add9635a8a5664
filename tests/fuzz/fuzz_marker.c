/*
 * tests/fuzz/fuzz_marker.c — the prepared marker's decoder (app/runtime/marker.h) on any bytes: the
 * state directory a crashed process left is read back at start (app/runtime/recovery.c), so a
 * marker that does not decode must be refused cleanly; fuzz.h. A marker that decodes must be
 * whole: its targets' topics inside the input, its batch exactly the input's tail, and the WDP2
 * form re-encodes (wd_marker_encode) to the same bytes. Seeds: markers written by
 * wd_marker_encode (tests/fuzz/seeds/marker).
 */
#include <stdlib.h>
#include <string.h>

#include "app/runtime/marker.h"
#include "common/buf.h"
#include "join/store.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_marker(const uint8_t *data, size_t size) {
  wd_marker_t m;
  if (wd_marker_decode(data, size, &m)) {
    if (m.t || m.from || m.topics || m.txn_id || m.nt) wd_fuzz_fail("marker", "a refused marker left memory behind");
    return 0;
  }
  if (!m.batch || m.batch < data || m.batch + m.blen != data + size)
    wd_fuzz_fail("marker", "its batch is not the tail");
  for (size_t i = 0; i < m.nt; i++)
    if (!m.t[i].topic) wd_fuzz_fail("marker", "a target without a topic");
  if (m.v2) {
    if (!m.txn_id) wd_fuzz_fail("marker", "a WDP2 marker without a transactional.id");
    wd_store_batch_t *fb = wd_store_batch_new();
    wd_buf_t out = {0};
    /* re-encoded with an empty batch, everything before the batch length is the input's bytes;
     * only a NUL inside the transactional.id or a topic name (cut there when decoded) makes it
     * shorter */
    wd_buf_t empty = {0};
    if (fb && !wd_marker_encode(m.number, m.txn_id, m.t, m.from, m.nt, fb, &out) &&
        !wd_store_batch_encode(fb, &empty)) {
      size_t head = (size_t)(m.batch - data) - 8; /* the input's bytes before its batch length */
      size_t ehead = out.len - 8 - empty.len;
      if (ehead > head || (ehead == head && memcmp(out.data, data, head) != 0))
        wd_fuzz_fail("marker", "a decoded WDP2 marker does not encode to the same bytes");
    }
    wd_buf_free(&empty);
    wd_buf_free(&out);
    wd_store_batch_destroy(fb);
  }
  wd_marker_free(&m);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_marker(data, size); }
#endif
