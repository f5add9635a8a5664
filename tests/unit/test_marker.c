/*
 * tests/unit/test_marker.c — app/runtime/marker.h, the prepared marker's codec: a WDP2 marker
 * round-trips (number, transactional.id, targets with their stored offsets, the finalize batch);
 * a WDP1 record of earlier versions decodes; every truncation, a trailing byte, a wrong magic and
 * lengths past the end are refused with nothing left to free. The decoder also runs on its seeds
 * and on arbitrary bytes in tests/fuzz/fuzz_marker.c.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/marker.h"
#include "common/buf.h"
#include "join/store.h"

static void encode_sample(wd_buf_t *out) {
  wd_store_batch_t *fb = wd_store_batch_new();
  cr_assert_not_null(fb);
  cr_assert_eq(wd_store_batch_set_offset(fb, "orders", 3, 41), 0);
  cr_assert_eq(wd_store_batch_set_meta(fb, WD_NUMBER_KEY, (const uint8_t *)"7", 1), 0);
  const wd_tp_offset_t t[] = {{"orders", 3, 41}, {"customers", 0, 9000000000LL}};
  const int64_t from[] = {12, -1};
  cr_assert_eq(wd_marker_encode(7, "widen-a", t, from, 2, fb, out), 0);
  wd_store_batch_destroy(fb);
}

Test(marker, a_wdp2_marker_round_trips) {
  wd_buf_t out = {0};
  encode_sample(&out);
  cr_assert_eq(memcmp(out.data, WD_MARKER_MAGIC, 4), 0);
  wd_marker_t m;
  cr_assert_eq(wd_marker_decode(out.data, out.len, &m), 0);
  cr_assert(m.v2);
  cr_assert_eq(m.number, 7);
  cr_assert_str_eq(m.txn_id, "widen-a");
  cr_assert_eq(m.nt, 2);
  cr_assert_str_eq(m.t[0].topic, "orders");
  cr_assert_eq(m.t[0].partition, 3);
  cr_assert_eq(m.t[0].offset, 41);
  cr_assert_eq(m.from[0], 12);
  cr_assert_str_eq(m.t[1].topic, "customers");
  cr_assert_eq(m.t[1].offset, 9000000000LL);
  cr_assert_eq(m.from[1], -1);
  /* the finalize batch decodes back into a batch with its two entries */
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_decode(b, m.batch, m.blen), 0);
  cr_assert_eq(wd_store_batch_count(b), 2);
  cr_assert_eq(m.batch + m.blen, out.data + out.len);
  wd_store_batch_destroy(b);
  wd_marker_free(&m);
  cr_assert_null(m.t);
  wd_buf_free(&out);
}

Test(marker, no_transactional_id_is_an_empty_one) {
  wd_store_batch_t *fb = wd_store_batch_new();
  wd_buf_t out = {0};
  cr_assert_eq(wd_marker_encode(1, NULL, NULL, NULL, 0, fb, &out), 0);
  wd_marker_t m;
  cr_assert_eq(wd_marker_decode(out.data, out.len, &m), 0);
  cr_assert_str_eq(m.txn_id, "");
  cr_assert_eq(m.nt, 0);
  cr_assert_eq(m.number, 1);
  wd_marker_free(&m);
  wd_buf_free(&out);
  wd_store_batch_destroy(fb);
}

/* WDP1, as earlier versions wrote it: magic, number, nt, per target (topic, partition, offset),
 * then the whole state batch. */
Test(marker, a_wdp1_record_of_earlier_versions_decodes) {
  static const uint8_t rec[] = {'W', 'D', 'P', '1', 0, 0, 0, 0,  0,   0,   0,  5, /* number 5 */
                                0,   0,   0,   1, /* one target */
                                0,   2,   'o', 'x', 0, 0, 0, 2, /* "ox"[2] */
                                0,   0,   0,   0,   0, 0, 0, 99, /* offset 99 */
                                0,   0,   0,   0,   0, 0, 0, 3,  'a', 'b', 'c'}; /* a 3-byte batch */
  wd_marker_t m;
  cr_assert_eq(wd_marker_decode(rec, sizeof(rec), &m), 0);
  cr_assert_not(m.v2);
  cr_assert_eq(m.number, 5);
  cr_assert_null(m.txn_id);
  cr_assert_eq(m.nt, 1);
  cr_assert_str_eq(m.t[0].topic, "ox");
  cr_assert_eq(m.t[0].partition, 2);
  cr_assert_eq(m.t[0].offset, 99);
  cr_assert_eq(m.blen, 3);
  cr_assert_eq(memcmp(m.batch, "abc", 3), 0);
  wd_marker_free(&m);
}

Test(marker, every_truncation_and_a_trailing_byte_are_refused) {
  wd_buf_t out = {0};
  encode_sample(&out);
  for (size_t len = 0; len < out.len; len++) {
    wd_marker_t m;
    cr_assert_neq(wd_marker_decode(out.data, len, &m), 0, "a marker cut at %zu of %zu bytes decoded", len, out.len);
    cr_assert(m.t == NULL && m.from == NULL && m.topics == NULL && m.txn_id == NULL);
  }
  cr_assert_eq(wd_buf_append(&out, "x", 1), 0);
  wd_marker_t m;
  cr_assert_neq(wd_marker_decode(out.data, out.len, &m), 0);
  wd_buf_free(&out);
}

Test(marker, a_wrong_magic_and_lengths_past_the_end_are_refused) {
  wd_buf_t out = {0};
  encode_sample(&out);
  wd_marker_t m;
  out.data[3] = '3'; /* WDP3 */
  cr_assert_neq(wd_marker_decode(out.data, out.len, &m), 0);
  out.data[3] = '2';
  out.data[12] = 0xff; /* the transactional.id's length: 0xff07 bytes */
  cr_assert_neq(wd_marker_decode(out.data, out.len, &m), 0);
  out.data[12] = 0;
  cr_assert_eq(wd_marker_decode(out.data, out.len, &m), 0);
  wd_marker_free(&m);
  out.data[4 + 8 + 2 + 7] = 0x7f; /* the number of targets: far more than the bytes */
  cr_assert_neq(wd_marker_decode(out.data, out.len, &m), 0);
  wd_buf_free(&out);
}
