/*
 * tests/integration/test_status.c — the probes and the status document of `widen run` on the real
 * broker (app/ops/status.h, app/runtime/status_report.h; docs/operations.md "Probes and the status
 * page"): /livez and /readyz answer, /status's numbers are those of the input (records, dead letters
 * by reason with the record's topic and offset, every partition caught up with its committed offset
 * at the end), the metrics have their new series; and a Kafka error of a pipeline whose brokers
 * came from WIDEN_BROKERS says so.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "tests/support/integration.h"

extern char **environ;

static char *slurp(FILE *f) {
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

/* stdout (and stderr when the command says 2>&1) of a shell command; *rc its exit status. */
static char *sh(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh(int *rc, const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  char *out = slurp(p);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return out;
}

/* GET http://127.0.0.1:port/path: the body; *code the HTTP status (0: no answer). */
static char *get(int port, const char *path, int *code) {
  int rc;
  char *out = sh(&rc, "curl -s -m 5 -w '\\n%%{http_code}' http://127.0.0.1:%d%s", port, path);
  char *nl = strrchr(out, '\n');
  *code = nl ? atoi(nl + 1) : 0;
  if (nl) *nl = 0;
  return out;
}

typedef struct {
  char dir[128], prefix[64], cfg[200], log[200];
  int port;
} env_t;

static void env_init(env_t *e, const char *name) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-status-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.st%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->log, sizeof(e->log), "%s/run.log", e->dir);
  e->port = 21000 + (int)(getpid() % 20000);
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fprintf(
      f,
      "kafka:\n  bootstrap.servers: %s\n  group.id: %sgroup\n  properties:\n    session.timeout.ms: 6000\n"
      "table:\n  name: t_wide\n  schema:\n    - {name: id, type: BIGINT NOT NULL}\n    - {name: a, type: STRING}\n"
      "    - {name: b, type: STRING}\n  primary-key: [id]\n  options:\n    merge-engine: partial-update\n"
      "sources:\n  - {name: sa, topic: %sa, columns: {id: , a: }}\n  - {name: sb, topic: %sb, columns: {id: , b: }}\n"
      "sink:\n  topic: %sout\n"
      "state:\n  dir: %s/state\n"
      "pipeline:\n  status-interval-s: 1\n"
      "metrics:\n  listen: 127.0.0.1:%d\n",
      wd_it_brokers(), e->prefix, e->prefix, e->prefix, e->prefix, e->dir, e->port);
  fclose(f);
}

/* Debezium JSON change events, one a line, to topic (key {"id":N}). */
static void produce_lines(const env_t *e, const char *topic, const char *lines) {
  char path[256];
  snprintf(path, sizeof(path), "%s/in.jsonl", e->dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(lines, f);
  fclose(f);
  int rc;
  char *out = sh(&rc, "'%s' produce --brokers %s --topic %s%s --file '%s' 2>&1", wd_it_widen_bin(), wd_it_brokers(),
                 e->prefix, topic, path);
  cr_assert_eq(rc, 0, "produce: %s", out);
  free(out);
}

static pid_t spawn_run(const env_t *e) {
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "exec '%s' run --config '%s' > '%s' 2>&1", wd_it_widen_bin(), e->cfg, e->log);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  pid_t pid;
  unsetenv("WIDEN_BROKERS");
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  return pid;
}

static json_int_t jint(json_t *o, const char *path) {
  char buf[200];
  snprintf(buf, sizeof(buf), "%s", path);
  json_t *v = o;
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
    v = json_object_get(v, k);
  cr_assert(json_is_integer(v), "%s is not an integer", path);
  return json_integer_value(v);
}

/* Waits until /status satisfies ok(j), at most timeout_s; returns the last document. */
static json_t *wait_status(int port, bool (*ok)(json_t *, void *), void *ctx, int timeout_s, const char *what) {
  int64_t deadline = wd_mono_ms() + timeout_s * 1000;
  for (;;) {
    int code;
    char *body = get(port, "/status", &code);
    json_t *j = code == 200 ? json_loads(body, 0, NULL) : NULL;
    if (j && ok(j, ctx)) {
      free(body);
      return j;
    }
    cr_assert_lt(wd_mono_ms(), deadline, "waited %d s for %s; /status: %d %s", timeout_s, what, code, body);
    free(body);
    json_decref(j);
    usleep(200 * 1000);
  }
}

static bool took_all(json_t *j, void *ctx) {
  json_t *t = json_object_get(json_object_get(j, "pipeline"), "totals");
  json_int_t want = *(json_int_t *)ctx;
  if (json_integer_value(json_object_get(t, "records_in")) != want || !json_is_true(json_object_get(j, "ready")) ||
      json_integer_value(json_object_get(json_object_get(j, "pipeline"), "lag")) != 0)
    return false;
  /* records taken are not yet records committed: wait until the commits hold them all too */
  json_int_t committed = 0;
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(j, "commits"), i, c) committed +=
      json_integer_value(json_object_get(c, "records_in"));
  if (committed != want) return false;
  json_t *pt;
  json_array_foreach(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "partitions"), i, pt) {
    if (json_integer_value(json_object_get(pt, "committed")) != json_integer_value(json_object_get(pt, "end")))
      return false;
  }
  return true;
}

Test(status, probes_status_and_metrics_follow_the_pipeline, .timeout = 240) {
  env_t e;
  env_init(&e, "probes");
  char topic[160];
  snprintf(topic, sizeof(topic), "%sa", e.prefix);
  wd_it_create_topic(topic, 2);
  snprintf(topic, sizeof(topic), "%sb", e.prefix);
  wd_it_create_topic(topic, 2);
  /* 20 rows from a, 10 from b, and one record of b that is no JSON: a dead letter */
  wd_buf_t in = {0};
  for (int i = 1; i <= 20; i++)
    wd_buf_printf(&in, "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":%d,\"a\":\"x%d\"}}\n", i, i);
  wd_buf_putc(&in, 0);
  produce_lines(&e, "a", (char *)in.data);
  wd_buf_reset(&in);
  for (int i = 1; i <= 10; i++)
    wd_buf_printf(&in, "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":%d,\"b\":\"y%d\"}}\n", i, i);
  wd_buf_printf(&in, "{\"id\":99} not json at all\n");
  wd_buf_putc(&in, 0);
  produce_lines(&e, "b", (char *)in.data);
  wd_buf_free(&in);

  pid_t pid = spawn_run(&e);
  /* /livez answers 200 as soon as the listener is up; before the assignment /readyz says why not */
  int code = 0;
  char *body = NULL;
  for (int i = 0; i < 300 && code != 200; i++) {
    free(body);
    body = get(e.port, "/livez", &code);
    if (code != 200) usleep(100 * 1000);
  }
  cr_assert_eq(code, 200, "/livez: %d %s", code, body);
  cr_expect(strstr(body, "ok: the pipeline loop turned") != NULL, "%s", body);
  free(body);
  json_int_t want = 31;
  json_t *st = wait_status(e.port, took_all, &want, 90, "31 records taken, caught up and ready");
  body = get(e.port, "/readyz", &code);
  cr_expect_eq(code, 200, "/readyz once caught up: %d %s", code, body);
  free(body);
  /* the numbers */
  cr_expect_eq(jint(st, "pipeline.totals.records_in"), 31);
  cr_expect_eq(jint(st, "pipeline.totals.dead_letters"), 1);
  cr_expect_eq(jint(st, "pipeline.assigned_partitions"), 4);
  json_t *tasks = json_object_get(st, "tasks");
  cr_assert_eq(json_array_size(tasks), 1, "one task (pipeline.tasks single)");
  json_t *t0 = json_array_get(tasks, 0);
  cr_expect_str_eq(json_string_value(json_object_get(t0, "state")), "RUNNING");
  json_t *parts = json_object_get(t0, "partitions");
  cr_assert_eq(json_array_size(parts), 4);
  json_int_t ends = 0;
  size_t i;
  json_t *pt;
  json_array_foreach(parts, i, pt) {
    cr_expect_eq(jint(pt, "lag"), 0);
    cr_expect_eq(jint(pt, "committed"), jint(pt, "end"), "partition %zu: committed = end once caught up", i);
    cr_expect_eq(jint(pt, "position"), jint(pt, "end"));
    ends += jint(pt, "end");
  }
  cr_expect_eq(ends, 31, "the end offsets add up to the records produced");
  json_t *dl = json_object_get(st, "dead_letters");
  cr_expect_eq(jint(dl, "total"), 1);
  json_t *by = json_object_get(dl, "by_reason");
  cr_assert_eq(json_object_size(by), 1, "one reason");
  const char *reason = json_object_iter_key(json_object_iter(by));
  cr_expect_eq(json_integer_value(json_object_get(by, reason)), 1);
  json_t *ex = json_array_get(json_object_get(dl, "latest"), 0);
  cr_assert_not_null(ex);
  cr_expect_str_eq(json_string_value(json_object_get(ex, "error_id")), reason);
  char tb[160];
  snprintf(tb, sizeof(tb), "%sb", e.prefix);
  cr_expect_str_eq(json_string_value(json_object_get(ex, "topic")), tb);
  cr_expect_gt(strlen(json_string_value(json_object_get(ex, "message"))), 0);
  json_int_t in_commits = 0;
  json_t *c;
  json_array_foreach(json_object_get(st, "commits"), i, c) in_commits += jint(c, "records_in");
  cr_expect_eq(in_commits, 31, "the commits took the 31 records (the dead letter too)");
  cr_expect_gt(jint(st, "process.pid"), 1);
  json_decref(st);

  /* the metrics: new series */
  body = get(e.port, "/metrics", &code);
  cr_assert_eq(code, 200);
  const char *series[] = {"widen_task_state{task=\"0\",state=\"RUNNING\"} 1",
                          "widen_tasks{state=\"RESTORING\"} 0",
                          "widen_rebalances_total 1",
                          "widen_restores_total 0",
                          "widen_kafka_tombstones_skipped_total 0",
                          "widen_build_info{version=",
                          "process_open_fds ",
                          "process_resident_memory_bytes ",
                          "widen_consumer_lag_sum 0",
                          "widen_last_commit_timestamp_seconds 1"};
  for (size_t k = 0; k < sizeof(series) / sizeof(*series); k++)
    cr_expect(strstr(body, series[k]) != NULL, "no %s in /metrics:\n%s", series[k], body);
  free(body);
  /* librdkafka's statistics come every 5 s */
  bool rtt = false;
  for (int k = 0; k < 80 && !rtt; k++) {
    body = get(e.port, "/metrics", &code);
    rtt = strstr(body, "widen_kafka_broker_rtt_seconds{broker=") != NULL &&
          strstr(body, "widen_kafka_consumer_lag{topic=") != NULL;
    free(body);
    if (!rtt) usleep(250 * 1000);
  }
  cr_expect(rtt, "no librdkafka statistics in /metrics after 20 s");
  /* the page is served */
  body = get(e.port, "/", &code);
  cr_expect_eq(code, 200);
  cr_expect(strstr(body, "<html") != NULL, "%.200s", body);
  free(body);
  kill(pid, SIGTERM);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run exited %d", status);
  int rc;
  free(sh(&rc, "rm -rf '%s'", e.dir));
}

/* A Kafka error of a pipeline whose brokers came from WIDEN_BROKERS names it and the file's value it
 * replaced (a secured config pointed at a plaintext listener: a TLS handshake error), and the
 * replacement itself is warned about at the start. */
Test(status, a_tls_error_says_the_brokers_came_from_widen_brokers, .timeout = 120) {
  env_t e;
  env_init(&e, "tls");
  int rc;
  free(sh(&rc,
          "sed -i -e 's/^  bootstrap.servers: .*/  bootstrap.servers: broker.example:9093/' -e "
          "'s/^    session.timeout.ms: 6000/    session.timeout.ms: 6000\\n    security.protocol: SSL/' '%s'",
          e.cfg));
  char *out =
      sh(&rc, "WIDEN_BROKERS=%s timeout 60 '%s' run --config '%s' 2>&1", wd_it_brokers(), wd_it_widen_bin(), e.cfg);
  cr_expect_neq(rc, 0, "%s", out);
  cr_expect(strstr(out, "E_KAFKA_TLS") != NULL, "%s", out);
  char want[400];
  snprintf(want, sizeof(want),
           "(the brokers %s came from the environment variable WIDEN_BROKERS, not from %s's "
           "kafka.bootstrap.servers 'broker.example:9093')",
           wd_it_brokers(), e.cfg);
  cr_expect(strstr(out, want) != NULL, "no \"%s\" in:\n%s", want, out);
  cr_expect(strstr(out, "kafka.bootstrap.servers 'broker.example:9093' is replaced by the environment variable "
                        "WIDEN_BROKERS") != NULL,
            "%s", out);
  free(out);
  free(sh(&rc, "rm -rf '%s'", e.dir));
}

/* A stop while the start waits for the schema registry (an Avro sink registers its schema at the
 * start; the registry does not answer) ends the wait: E_STOPPED naming the registry, exit 3, in
 * seconds; not "the broker does not answer" and exit 0 after 15 s. */
Test(status, a_stop_during_a_registry_outage_at_the_start_names_the_registry, .timeout = 120) {
  env_t e;
  env_init(&e, "regstop");
  int rc;
  /* a port nobody listens on: every registration is refused (retriable) */
  free(sh(&rc,
          "sed -i -e 's/^sink:/schema-registry:\\n  url: http:\\/\\/127.0.0.1:9\\nsink:/' -e "
          "'s/^  topic: \\(.*out\\)$/  topic: \\1\\n  format: avro/' '%s'",
          e.cfg));
  char *cfg = wd_it_read_file(e.cfg);
  cr_assert(strstr(cfg, "format: avro") && strstr(cfg, "schema-registry:"), "%s", cfg);
  free(cfg);
  pid_t pid = spawn_run(&e);
  cr_assert(wd_it_wait_log(e.log, "retrying in", 60000), "no registry retry logged:\n%s", wd_it_read_file(e.log));
  int64_t t0 = wd_mono_ms();
  kill(pid, SIGTERM);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  int64_t took = wd_mono_ms() - t0;
  char *log = wd_it_read_file(e.log);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "exit status %d, want 3:\n%s", status, log);
  cr_expect_lt(took, 10000, "the stop took %lld ms", (long long)took);
  cr_expect(strstr(log, "E_STOPPED: stopped during the start while the schema registry did not answer") != NULL, "%s",
            log);
  cr_expect(strstr(log, "broker does not answer") == NULL, "%s", log);
  free(log);
  free(sh(&rc, "rm -rf '%s'", e.dir));
}
