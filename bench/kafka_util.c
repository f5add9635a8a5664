/*
 * bench/kafka_util.c — librdkafka helpers shared by the end-to-end benchmarks (see kafka_util.h).
 */
#include "bench/kafka_util.h"

#include "bench/bench_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

const char *bench_brokers;
const char *bench_prog = "bench";
double bench_last_user_s, bench_last_sys_s;
long bench_last_ctxsw;

void bench_die(const char *fmt, const char *arg) {
  fprintf(stderr, "%s: ", bench_prog);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

rd_kafka_conf_t *bench_base_conf(void) {
  char errstr[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  if (rd_kafka_conf_set(c, "bootstrap.servers", bench_brokers, errstr, sizeof errstr)) bench_die("%s", errstr);
  return c;
}

void bench_conf_set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char errstr[512];
  if (rd_kafka_conf_set(c, k, v, errstr, sizeof errstr)) bench_die("%s", errstr);
}

rd_kafka_t *bench_new_producer(void) {
  char errstr[512];
  rd_kafka_conf_t *c = bench_base_conf();
  bench_conf_set(c, "enable.idempotence", "true");
  bench_conf_set(c, "acks", "all");
  bench_conf_set(c, "linger.ms", "5");
  bench_conf_set(c, "partitioner", "murmur2_random");
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
  if (!rk) bench_die("producer: %s", errstr);
  return rk;
}

void bench_create_topics(const char *prefix, const char *const *names, int n) {
  char errstr[512];
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, bench_base_conf(), errstr, sizeof errstr);
  if (!rk) bench_die("admin: %s", errstr);
  rd_kafka_NewTopic_t *nt[8];
  char full[8][256];
  for (int i = 0; i < n; i++) {
    snprintf(full[i], sizeof full[i], "%s%s", prefix, names[i]);
    nt[i] = rd_kafka_NewTopic_new(full[i], 4, 1, errstr, sizeof errstr);
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, nt, (size_t)n, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  if (!ev) bench_die("CreateTopics: %s", "timeout");
  const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
  size_t cnt = 0;
  const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
  for (size_t i = 0; i < cnt; i++)
    if (rd_kafka_topic_result_error(tr[i])) bench_die("CreateTopics: %s", rd_kafka_topic_result_error_string(tr[i]));
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  for (int i = 0; i < n; i++) rd_kafka_NewTopic_destroy(nt[i]);
  rd_kafka_destroy(rk);
  usleep(500000); /* metadata propagation */
}

pid_t bench_start_widen(const char *widen, const char *config, const char *log) {
  pid_t pid = fork();
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    setenv("WIDEN_BROKERS", bench_brokers, 1);
    execl(widen, widen, "run", "--config", config, "--max-idle-ms", "1500", "--quiet", (char *)NULL);
    _exit(127);
  }
  return pid;
}

double bench_wait_widen(pid_t pid) {
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) bench_die("wait4: %s", strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "%s: widen exited with status %d\n", bench_prog, status);
  bench_last_user_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  bench_last_sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  bench_last_ctxsw = ru.ru_nvcsw + ru.ru_nivcsw;
  return bench_last_user_s + bench_last_sys_s;
}

/* An assign-mode consumer of all partitions (0..3) of topics[0..n) from the beginning. */
rd_kafka_t *bench_new_consumer(const char *const *topics, int n) {
  char errstr[512];
  rd_kafka_conf_t *c = bench_base_conf();
  bench_conf_set(c, "group.id", "widen-bench-reader");
  bench_conf_set(c, "enable.auto.commit", "false");
  bench_conf_set(c, "enable.partition.eof", "false");
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
  if (!rk) bench_die("consumer: %s", errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n * 4);
  for (int i = 0; i < n; i++)
    for (int p = 0; p < 4; p++) rd_kafka_topic_partition_list_add(l, topics[i], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  return rk;
}

/* Sum of the high watermarks of topic's 4 partitions. */
int64_t bench_topic_end(rd_kafka_t *rk, const char *topic) {
  int64_t total = 0;
  for (int p = 0; p < 4; p++) {
    int64_t lo = 0, hi = 0;
    if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000)) bench_die("watermarks of %s", topic);
    total += hi;
  }
  return total;
}

rd_kafka_t *bench_new_reader(const char *topic) {
  char errstr[512];
  rd_kafka_conf_t *c = bench_base_conf();
  bench_conf_set(c, "group.id", "widen-bench-reader");
  bench_conf_set(c, "enable.auto.commit", "false");
  bench_conf_set(c, "enable.partition.eof", "true");
  bench_conf_set(c, "isolation.level", "read_committed");
  bench_conf_set(c, "fetch.wait.max.ms", "10"); /* a follower sees a commit within ~10 ms */
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
  if (!rk) bench_die("consumer: %s", errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
  for (int p = 0; p < 4; p++) rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  return rk;
}

rd_kafka_message_t *bench_reader_next(rd_kafka_t *rk, bool at_end[4], double deadline) {
  while (!(at_end[0] && at_end[1] && at_end[2] && at_end[3]) && wd_mono_s() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) continue;
    if (m->partition < 0 || m->partition >= 4) {
      rd_kafka_message_destroy(m);
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_end[m->partition] = true;
      rd_kafka_message_destroy(m);
      continue;
    }
    if (m->err) {
      rd_kafka_message_destroy(m);
      continue;
    }
    at_end[m->partition] = false;
    return m;
  }
  return NULL;
}
