/*
 * app/runtime/marker.h — the prepared marker of an exactly-once commit, encoded and decoded (a pure
 * unit: bytes in, bytes out; no store, no Kafka). The protocol that writes and reads it is in
 * app/runtime/commit.c and docs/exactly-once.md.
 *
 * The marker (meta WD_PREPARED_KEY, written at prepare with the commit's rows and their undo image
 * under WD_UNDO_KEY) says which commit is prepared and how recovery decides whether its
 * transaction committed. Two formats are read:
 *
 *   WDP2 (written): magic "WDP2", number (8 bytes, big-endian), transactional.id (2-byte length +
 *        bytes), nt (4), per target partition: topic (2-byte length + bytes), partition (4),
 *        target offset T (8), stored offset S it moves from (8); then the finalize batch (8-byte
 *        length + join/store.h wd_store_batch_encode bytes: the offsets, the number, the history).
 *        Its size depends on the partitions of the commit, never on its rows.
 *   WDP1 (earlier versions, still recovered): the same without the transactional.id and the S
 *        offsets; its batch is the commit's whole state batch.
 */
#ifndef WD_MARKER_H
#define WD_MARKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/kafka_conf.h"
#include "join/store.h"

#define WD_PREPARED_KEY "commit/prepared"
#define WD_NUMBER_KEY "commit/number"
#define WD_UNDO_KEY "commit/undo"
#define WD_PREPARED_MAGIC "WDP1" /* the whole state batch (earlier versions; still recovered) */
#define WD_MARKER_MAGIC "WDP2" /* the small marker of "write once with an undo image" */

/* A decoded marker. Owned by the caller (wd_marker_free); batch points into the decoded bytes. */
typedef struct wd_marker {
  bool v2; /* a WDP2 marker (else the WDP1 record) */
  uint64_t number; /* the commit's number */
  char *txn_id; /* v2: the transactional.id that prepared it (NUL-terminated); v1: NULL */
  wd_tp_offset_t *t; /* the target offsets T; topics point into `topics` */
  int64_t *from; /* v2: the stored offsets S of the targets (v1: zeros) */
  size_t nt;
  char *topics;
  const uint8_t *batch; /* v1: the state batch; v2: the finalize batch (borrowed from the input) */
  size_t blen;
} wd_marker_t;

/* Appends the WDP2 marker of commit `number` to out: txn_id (NULL: ""), the targets t[0..nt) with
 * the stored offsets from[0..nt), and the finalize batch fb (encoded). 0, or -1 on no memory (out
 * then holds a partial marker: reset it). */
int wd_marker_encode(uint64_t number, const char *txn_id, const wd_tp_offset_t *t, const int64_t *from, size_t nt,
                     const wd_store_batch_t *fb, wd_buf_t *out);

/* Decodes d[0..len) (a WDP1 or WDP2 marker) into *m (zeroed first). 0, or -1 when the bytes are
 * not a whole marker (wrong magic, truncated, lengths past the end, trailing bytes) or on no
 * memory; *m then holds nothing to free. Any input is safe (tests/fuzz/fuzz_marker.c). */
int wd_marker_decode(const uint8_t *d, size_t len, wd_marker_t *m);

/* Frees what wd_marker_decode allocated and zeroes *m. */
void wd_marker_free(wd_marker_t *m);

#endif
