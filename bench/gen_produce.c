/*
 * bench/gen_produce.c — see gen_produce.h.
 */
#include "bench/gen_produce.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "app/cli/generate.h"
#include "bench/kafka_util.h"
#include "common/clock.h"

/* The delivery report of a record whose index + 1 is its opaque: when it was acknowledged. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  sent_t *sent = opaque;
  size_t i = (size_t)(uintptr_t)m->_private;
  if (sent && i >= 1 && i <= sent->n) sent->acked[i - 1] = m->err ? 0 : wd_wall_ms();
}

/* bench_new_producer's producer, with delivery reports into *sent (may be NULL). */
static rd_kafka_t *new_producer(sent_t *sent) {
  char errstr[512];
  rd_kafka_conf_t *c = bench_base_conf();
  bench_conf_set(c, "enable.idempotence", "true");
  bench_conf_set(c, "acks", "all");
  bench_conf_set(c, "linger.ms", "5");
  bench_conf_set(c, "partitioner", "murmur2_random");
  rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  rd_kafka_conf_set_opaque(c, sent);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
  if (!rk) bench_die("producer: %s", errstr);
  return rk;
}

double bench_produce_generated(const char *prefix, uint64_t keys, uint64_t records, uint64_t seed, double rate,
                               sent_t *sent) {
  static const char *const streams[3] = {"orders", "payments", "shipments"};
  rd_kafka_t *rk = new_producer(sent);
  wd_gen_opts_t go = {0};
  go.keys = keys;
  go.records = records;
  go.seed = seed;
  go.topic_prefix = prefix;
  wd_gen_t *gen = NULL;
  if (wd_gen_new(&go, &gen)) bench_die("%s", "generator");
  rd_kafka_topic_t *rkt[3];
  for (int i = 0; i < 3; i++) {
    char t[256];
    snprintf(t, sizeof t, "%s%s", prefix, streams[i]);
    rkt[i] = rd_kafka_topic_new(rk, t, NULL);
  }
  if (sent) {
    sent->key = malloc(records * sizeof(uint64_t));
    sent->ts = malloc(records * sizeof(int64_t));
    sent->acked = calloc(records ? records : 1, sizeof(int64_t));
    sent->n = 0;
  }
  double t0 = wd_mono_s();
  wd_gen_msg_t m;
  uint64_t n = 0;
  while (wd_gen_next(gen, &m)) {
    if (rate > 0) {
      double due = t0 + (double)n / rate, now = wd_mono_s();
      if (due > now) usleep((useconds_t)((due - now) * 1e6));
    }
    int64_t ts = wd_wall_ms();
    if (sent) {
      sent->key[sent->n] = m.order_id;
      sent->ts[sent->n++] = ts;
    }
    for (;;) {
      rd_kafka_resp_err_t e =
          rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt[m.stream_index]), RD_KAFKA_V_KEY(m.key, m.key_len),
                            RD_KAFKA_V_VALUE((void *)m.value, m.value_len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_OPAQUE((void *)(uintptr_t)(n + 1)), RD_KAFKA_V_END);
      if (!e) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) bench_die("produce: %s", rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
    n++;
    rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, 120000)) bench_die("%s", "flush timed out");
  double secs = wd_mono_s() - t0;
  for (int i = 0; i < 3; i++) rd_kafka_topic_destroy(rkt[i]);
  rd_kafka_destroy(rk);
  wd_gen_destroy(gen);
  return secs;
}
