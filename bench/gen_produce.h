/*
 * bench/gen_produce.h — the generated workload of `widen produce --generate` (app/cli/generate.h)
 * produced to prefix+{orders,payments,shipments}, shared by bench/e2e and bench/vs_peer.
 * Benchmark code: every failure prints "<bench_prog>: ..." and exits.
 */
#ifndef WD_BENCH_GEN_PRODUCE_H
#define WD_BENCH_GEN_PRODUCE_H

#include <stddef.h>
#include <stdint.h>

/* Source records of a produce phase: key (order_id), send time (wall ms, the record's timestamp)
 * and the time its delivery report came (wall ms: the record is in the topic; 0 when it failed), per
 * record; the arrays are malloc'ed by bench_produce_generated and freed by the caller. The second
 * time leaves out the generator's own producer (its linger.ms, the produce request) from a
 * latency. */
typedef struct {
  uint64_t *key;
  int64_t *ts;
  int64_t *acked;
  size_t n;
} sent_t;

/* Produces `records` generated records to prefix+stream at `rate` records/s (0 = unlimited);
 * records each one's key and send time in *sent when given. Returns wall seconds. */
double bench_produce_generated(const char *prefix, uint64_t keys, uint64_t records, uint64_t seed, double rate,
                               sent_t *sent);

#endif
