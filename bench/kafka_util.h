/*
 * bench/kafka_util.h — librdkafka helpers shared by the end-to-end benchmarks (bench/e2e,
 * bench/e2e_avro): clients on bench_brokers, topic creation, widen as a child process.
 * Benchmark code: every failure prints "<bench_prog>: ..." and exits.
 */
#ifndef WD_BENCH_KAFKA_UTIL_H
#define WD_BENCH_KAFKA_UTIL_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

extern const char *bench_brokers; /* bootstrap servers; set before any other call */
extern const char *bench_prog; /* the program's name in messages */

/* Prints "<bench_prog>: " fmt (with one string argument) and exits 1. */
void bench_die(const char *fmt, const char *arg);
/* A client conf on bench_brokers; bench_conf_set sets one property (exits on a bad one). */
rd_kafka_conf_t *bench_base_conf(void);
void bench_conf_set(rd_kafka_conf_t *c, const char *k, const char *v);
/* An idempotent acks=all producer, linger 5 ms, murmur2 (as widen's sink). */
rd_kafka_t *bench_new_producer(void);
/* Creates prefix+names[i] (i < n <= 8) with 4 partitions each, then waits 0.5 s for metadata. */
void bench_create_topics(const char *prefix, const char *const *names, int n);
/* Starts `widen run --config config --max-idle-ms 1500 --quiet` (stderr to log, WIDEN_BROKERS set)
 * and returns its pid; bench_wait_widen waits for it and returns its CPU seconds (user + system). */
pid_t bench_start_widen(const char *widen, const char *config, const char *log);
double bench_wait_widen(pid_t pid);
/* The user and system CPU seconds and the context switches (voluntary + involuntary) of the last
 * process bench_wait_widen reaped. */
extern double bench_last_user_s, bench_last_sys_s;
extern long bench_last_ctxsw;
/* An assign-mode consumer of all partitions (0..3) of topics[0..n) from the beginning. */
rd_kafka_t *bench_new_consumer(const char *const *topics, int n);
/* Sum of the high watermarks of topic's 4 partitions. */
int64_t bench_topic_end(rd_kafka_t *rk, const char *topic);
/* A read_committed assign-mode consumer of topic's 4 partitions from the beginning, with partition
 * EOF events and short fetch waits (fetch.wait.max.ms 10: it may follow a topic live); bench_reader_next returns its next message (the caller destroys it), or NULL once
 * every partition reported its end (the last stable offset: transaction markers take offsets, so
 * the high watermark is no message count under exactly-once) or at deadline (wd_mono_s() s).
 * at_end: per partition, all false at first. */
rd_kafka_t *bench_new_reader(const char *topic);
rd_kafka_message_t *bench_reader_next(rd_kafka_t *rk, bool at_end[4], double deadline);

#endif
