/*
 * app/cli/generate.h — a seeded, realistic multi-stream CDC workload in Debezium JSON, for
 * `widen produce --generate`, the benchmarks and tests. Pure: it returns messages (topic, key,
 * value) in memory and never touches Kafka, the clock or global state.
 *
 * Streams (each a topic, prefix + name; the key is {"order_id":N} as Debezium writes a key):
 *   orders     order_id, customer, amount (DECIMAL(10,2) as a string), currency, order_ts,
 *              order_version, address
 *   payments   order_id, pay_amount (DECIMAL(10,2) string), pay_method, pay_ts, pay_status,
 *              pay_version, pay_ref
 *   shipments  order_id, carrier, ship_ts, ship_status, ship_version, tracking, ship_address
 * Every row image is about 200 bytes. *_version is the per-stream sequence of the key (1, 2, 3,
 * ... in change order, also across a delete and re-create) and *_ts the change's event time in
 * ms, which is also source.ts_ms.
 *
 * Each step picks a stream and a key (order_id 1..keys) uniformly. The first change of a
 * (stream, key) is a create (op "c", before null), later ones updates (op "u", with the previous
 * image as before). About delete_ratio of the records delete a present row (op "d", after null;
 * the next change of that key re-creates it). About late_ratio of the records arrive late: a
 * step then makes two consecutive changes of one key, emits the second at once and the first
 * 0..10 records later, so its version is lower than one already emitted for its (stream, key).
 * Nothing overtakes a delete: late changes of a key are emitted before its delete. The shares
 * hold whatever keys and records are (a delete looks for a present row among a few random keys,
 * so with very sparse keys slightly fewer deletes come out).
 *
 * Key-changing updates (only when key_change_ratio > 0; the default output is unchanged): about
 * key_change_ratio of the records move a present row of a stream to an order_id that stream
 * has no row for: op "u" with the old row (old order_id, its last version) as before and the new
 * row (new order_id, the new key's next version) as after; the message key is the new key, as
 * Debezium keys an update. For the old key this counts as a delete (its version moves on, its
 * late changes are emitted before the move, its next change re-creates it); for the new key as
 * a create. Both keys are looked for among a few random keys, so when nearly every key already has
 * a row in the stream fewer key changes come out (use keys well above records / 3 for the full
 * share). widen's decoder turns such a message into -D of the old key and +I of the new one.
 * The message goes to the new key's partition, so the old key's changes span two partitions:
 * consumers that need one total order per key read such a workload from single-partition
 * topics.
 *
 * Message envelope (schemas.enable=false):
 *   {"before":{...}|null,"after":{...}|null,"source":{"version":"2.5.0.Final","connector":"mysql",
 *    "name":"widen-gen","ts_ms":T,"snapshot":"false","db":"shop","table":"<stream>",
 *    "server_id":1,"file":"mysql-bin.000001","pos":P,"row":0},"op":"c|u|d","ts_ms":T+lag,
 *    "transaction":null}
 */
#ifndef WD_GENERATE_H
#define WD_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct wd_gen wd_gen_t;

/* Generator options. Zero values take the defaults in brackets. */
typedef struct wd_gen_opts {
  uint64_t seed; /* PRNG seed (0 is a valid seed) */
  uint64_t keys; /* distinct order_id values 1..keys [1000] */
  uint64_t records; /* records over all streams [10000] */
  const char *const *streams; /* subset of "orders", "payments", "shipments" in any order;
                                   NULL = all three */
  size_t nstreams;
  const char *topic_prefix; /* topic = prefix + stream name [""] */
  double late_ratio; /* share of records emitted late [0.20]; < 0 means 0 */
  double delete_ratio; /* share of records that are deletes [0.01]; < 0 means 0 */
  double key_change_ratio; /* share of records that are key-changing updates [0]; <= 0 means
                                   none (and the output is that of a generator without them) */
  int64_t start_ms; /* event time of the first record [1700000000000] */
} wd_gen_opts_t;

/* One generated message. Pointers are owned by the generator and valid until the next
 * wd_gen_next() or wd_gen_destroy(). */
typedef struct wd_gen_msg {
  const char *topic; /* prefix + stream */
  const char *stream; /* "orders", "payments", "shipments" */
  int stream_index; /* position of the stream in opts->streams (or in the default list) */
  const char *key; /* {"order_id":N} */
  size_t key_len;
  const char *value; /* the Debezium JSON event */
  size_t value_len;
  uint64_t order_id;
  uint64_t from_order_id; /* a key-changing update: the before image's order_id; else 0 */
  int64_t version; /* the per-stream sequence of this change (of order_id) */
  char op; /* 'c', 'u' or 'd' */
  bool late; /* emitted after a higher version of the same (stream, key) */
  int64_t ts_ms; /* event time (source.ts_ms) */
} wd_gen_msg_t;

/* Creates a generator (opts borrowed for the call; strings copied). *out is owned by the caller
 * (wd_gen_destroy). Errors (WD_ERR_CONFIG "C_GENERATE"): an unknown or repeated stream name,
 * ratios above 0.9 (late) / 0.5 (delete) / 0.5 (key change), or delete + key change above 0.5.
 * E_NOMEM (memory is 16 bytes per stream and key). */
wd_error_t *wd_gen_new(const wd_gen_opts_t *opts, wd_gen_t **out);

/* Produces the next message into *msg. Returns true, or false when opts->records messages have
 * been produced (or on allocation failure, see wd_gen_failed). */
bool wd_gen_next(wd_gen_t *g, wd_gen_msg_t *msg);

/* True when wd_gen_next stopped early because memory ran out. */
bool wd_gen_failed(const wd_gen_t *g);

/* Releases g; accepts NULL. */
void wd_gen_destroy(wd_gen_t *g);

/* Names of the built-in streams, NULL-terminated: "orders", "payments", "shipments". */
extern const char *const wd_gen_stream_names[];

#endif
