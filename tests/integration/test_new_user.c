/*
 * tests/integration/test_new_user.c — on the real broker (WIDEN_TEST_BROKERS) with the
 * widen binary (WIDEN_BIN): what a new user hit in round 2.
 *   late_topics: `widen run` and `widen tail` started before their topics exist pick them up
 *     when they are created (librdkafka alone would see a new topic of a subscription at its next
 *     metadata refresh, 5 minutes; tail died with E_KAFKA_UNKNOWN_TOPIC);
 *   unreachable_broker: `widen run` against a port nothing listens on says "cannot reach".
 * Waits are bounded by the tests' timeouts (never a speed assertion).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/integration.h"

extern char **environ;

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
} env_t;

static void env_init(env_t *e, const char *name) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-nu-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.nu%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
}

static void env_done(env_t *e) {
  char cmd[400];
  /* the widen processes' stderr went to files: their sanitizer reports too (the build-san tests) */
  snprintf(cmd, sizeof(cmd), "grep -lE 'Sanitizer|runtime error' '%s'/*.err >/dev/null 2>&1", e->dir);
  cr_assert_neq(system(cmd), 0, "a sanitizer report in a widen process's stderr under %s", e->dir);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  cr_assert_eq(system(cmd), 0);
}

/* A two-source partial-update table (orders + payments by order_id) with a changelog-json sink,
 * written to path; state in <dir>/state-<member>; extra is appended to kafka.properties (may be
 * ""), more to the kafka section (may be ""). */
static void write_config_at(const env_t *e, const char *path, const char *member, int session_ms, const char *extra,
                            const char *more) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: %sgroup\n%s  properties:\n"
          "    session.timeout.ms: %d\n%s"
          "table:\n  name: orders_wide\n  schema:\n"
          "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
          "    - {name: pay_status, type: STRING}\n"
          "  primary-key: [order_id]\n  options:\n    merge-engine: partial-update\n"
          "sources:\n"
          "  - {name: orders, topic: %sorders, columns: {order_id: id, customer: }}\n"
          "  - {name: payments, topic: %spayments, columns: {order_id: , pay_status: status}}\n"
          "sink:\n  topic: %sorders_wide\n  format: changelog-json\n"
          "state:\n  dir: %s/state-%s\n"
          "pipeline:\n  batch-timeout-ms: 50\n",
          e->prefix, more, session_ms, extra, e->prefix, e->prefix, e->prefix, e->dir, member);
  fclose(f);
}

static void write_config(const env_t *e, const char *group_suffix, const char *extra) {
  (void)group_suffix;
  write_config_at(e, e->cfg, "a", 6000, extra, "");
}

/* Starts argv with stdout and stderr to files (NULL: /dev/null); the child is killed when the
 * test's process ends (a failed assertion leaves no widen running). */
static pid_t spawn_to(const char *const *argv, const char *out, const char *err) {
  pid_t parent = getpid();
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int fo = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(127);
    execve(argv[0], (char *const *)argv, environ);
    _exit(127);
  }
  return pid;
}

/* Waits up to ms for pid to exit: its exit status (128 + signal), or -1 when it still runs. */
static int wait_exit_ms(pid_t pid, int ms) {
  int64_t deadline = wd_mono_ms() + ms;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    cr_assert_neq(r, -1);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (wd_mono_ms() >= deadline) return -1;
    usleep(50 * 1000);
  }
}

static int stop(pid_t pid) {
  kill(pid, SIGTERM);
  int rc = wait_exit_ms(pid, 60000);
  if (rc < 0) {
    kill(pid, SIGKILL);
    rc = wait_exit_ms(pid, 10000);
  }
  return rc;
}

/* Whether the file at path contains needle (after waiting up to ms for it to). */
static bool file_has(const char *path, const char *needle, int ms) {
  int64_t deadline = wd_mono_ms() + ms;
  for (;;) {
    bool has = false;
    if (access(path, R_OK) == 0) { /* the child may not have opened it yet */
      char *s = wd_it_read_file(path);
      has = strstr(s, needle) != NULL;
      free(s);
    }
    if (has || wd_mono_ms() >= deadline) return has;
    usleep(100 * 1000);
  }
}

static int count_of(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static char *sh_out(int *rc, const char *cmd);

static void produce_line(const env_t *e, const char *topic, const char *line) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "echo '%s' | '%s' produce --topic %s%s --file - >/dev/null 2>&1", line, wd_it_widen_bin(),
           e->prefix, topic);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Run and tail start before any topic exists. The orders topic is created
 * first; once its row is out (the group formed on it alone), the payments topic is created:
 * its record must reach the table while run keeps running (before the fix: at librdkafka's next
 * metadata refresh, 5 minutes later). tail, started before its topic existed, prints the lines. */
Test(late_topics, run_and_tail_pick_up_topics_created_after_they_start, .timeout = 180) {
  env_t e;
  env_init(&e, "late");
  int port = 21000 + (int)((getpid() + 7) % 20000);
  char metrics[80];
  snprintf(metrics, sizeof(metrics), "metrics:\n  listen: 127.0.0.1:%d\n", port);
  write_config(&e, "", metrics);
  char sink[200], tail_out[300], tail_err[300], run_err[300];
  snprintf(sink, sizeof(sink), "%sorders_wide", e.prefix);
  snprintf(tail_out, sizeof(tail_out), "%s/tail.out", e.dir);
  snprintf(tail_err, sizeof(tail_err), "%s/tail.err", e.dir);
  snprintf(run_err, sizeof(run_err), "%s/run.err", e.dir);
  const char *tail_argv[] = {wd_it_widen_bin(), "tail", "--topic", sink, "--from", "beginning", "--max", "3", NULL};
  pid_t tail = spawn_to(tail_argv, tail_out, tail_err);
  char want[300];
  snprintf(want, sizeof(want), "topic %s does not exist yet; waiting", sink);
  cr_assert(file_has(tail_err, want, 30000), "tail did not say it waits for %s", sink);
  cr_assert_eq(wait_exit_ms(tail, 0), -1, "tail exited instead of waiting for its topic");

  const char *run_argv[] = {wd_it_widen_bin(), "run", "--config", e.cfg, "--quiet", NULL};
  pid_t run = spawn_to(run_argv, NULL, run_err);
  snprintf(want, sizeof(want), "topic %spayments does not exist yet; waiting", e.prefix);
  cr_assert(file_has(run_err, want, 60000), "run did not say it waits for the payments topic");

  char topic[200];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  wd_it_create_topic(topic, 2);
  produce_line(&e, "orders", "{\"op\":\"c\",\"after\":{\"id\":1,\"customer\":\"Ann\"}}");
  cr_assert(file_has(tail_out, "\"+I\"", 90000), "the orders row did not come out");
  /* one topic of the table missing (a misspelt topic name looks the same): /status says which */
  char want_missing[300], curl[200];
  snprintf(want_missing, sizeof(want_missing), "\"missing_topic\":\"%spayments\"", e.prefix);
  snprintf(curl, sizeof(curl), "curl -s -m 5 http://127.0.0.1:%d/status", port);
  char *status = NULL;
  for (int k = 0; k < 40; k++) { /* the status snapshot is published every second or so */
    int crc;
    free(status);
    status = sh_out(&crc, curl);
    if (strstr(status, want_missing)) break;
    usleep(250 * 1000);
  }
  cr_expect(strstr(status, want_missing) != NULL, "/status with payments missing: %s", status);
  free(status);

  snprintf(topic, sizeof(topic), "%spayments", e.prefix);
  wd_it_create_topic(topic, 2);
  produce_line(&e, "payments", "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"paid\"}}");
  /* bounded by the test's timeout, far below librdkafka's 5-minute refresh */
  int trc = wait_exit_ms(tail, 120000);
  cr_assert_eq(trc, 0, "tail did not print the update within 120 s (rc %d)", trc);
  char *out = wd_it_read_file(tail_out);
  cr_assert(strstr(out, "\"+U\"") && strstr(out, "\"pay_status\":\"paid\""), "tail printed: %s", out);
  free(out);
  cr_assert_eq(stop(run), 0);
  char *err = wd_it_read_file(run_err);
  cr_assert_eq(count_of(err, want), 1, "the missing topic is logged once: %s", err);
  snprintf(want, sizeof(want), "topic %spayments exists now", e.prefix);
  cr_assert_eq(count_of(err, want), 1, "%s", err);
  /* a SIGTERM is no rebalance: nothing after the summary says "revoked ... completing the open
   * commit first" (the new-user walkthrough read it as a commit left open at exit) */
  const char *summary = strstr(err, "widen: summary:");
  cr_assert_not_null(summary, "%s", err);
  cr_assert_null(strstr(summary, "revoked"), "%s", err);
  free(err);
  env_done(&e);
}

/* A loopback port nothing listens on (bound once by the kernel's choice, then closed). */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(s, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0};
  socklen_t len = sizeof(a);
  cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
  cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
  close(s);
  return ntohs(a.sin_port);
}

/* Run against a port nothing listens on says "cannot reach HOST:PORT
 * (connection refused); retrying" (as tail does), not E_TXN_INIT ... _TIMED_OUT every 30 s. */
Test(unreachable_broker, run_says_cannot_reach_host_port, .timeout = 180) {
  env_t e;
  env_init(&e, "unreach");
  write_config(&e, "", "");
  char brokers[64], err_path[300], want[160];
  snprintf(brokers, sizeof(brokers), "127.0.0.1:%d", free_port());
  setenv("WIDEN_BROKERS", brokers, 1);
  snprintf(err_path, sizeof(err_path), "%s/run.err", e.dir);
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", e.cfg, "--quiet", NULL};
  pid_t run = spawn_to(argv, NULL, err_path);
  snprintf(want, sizeof(want), "cannot reach %s (connection refused); retrying", brokers);
  cr_assert(file_has(err_path, want, 60000), "no '%s' in 60 s", want);
  /* the transactional producer's first init_transactions times out after 30 s: past it, the retry
   * is said by the producer's own "cannot reach", not by E_TXN_INIT */
  cr_assert(!file_has(err_path, "E_TXN_INIT", 40000), "E_TXN_INIT was printed");
  stop(run);
  char *err = wd_it_read_file(err_path);
  cr_assert_null(strstr(err, "brokers are down"), "%s", err);
  free(err);
  /* tail waits for the broker as well (before: E_KAFKA_METADATA ... _TRANSPORT, exit 1, after
   * 10 s, right after saying "retrying") */
  snprintf(err_path, sizeof(err_path), "%s/tail.err", e.dir);
  const char *tail_argv[] = {wd_it_widen_bin(), "tail", "--topic", "wdtest.unreach.t", NULL};
  pid_t tail = spawn_to(tail_argv, NULL, err_path);
  cr_assert(file_has(err_path, want, 30000), "tail: no '%s' in 30 s", want);
  cr_assert_eq(wait_exit_ms(tail, 15000), -1, "tail gave up on the broker");
  cr_assert_eq(stop(tail), 0);
  err = wd_it_read_file(err_path);
  cr_assert_null(strstr(err, "E_KAFKA_METADATA"), "%s", err);
  free(err);
  env_done(&e);
}

/* The number of partitions of the last "assigned N partition(s)" line in the file, -1 if none. */
static int last_assigned(const char *path) {
  if (access(path, R_OK) != 0) return -1;
  char *s = wd_it_read_file(path);
  int n = -1;
  for (const char *p = strstr(s, "assigned "); p; p = strstr(p + 1, "assigned ")) {
    int k;
    if (sscanf(p, "assigned %d partition(s)", &k) == 1) n = k;
  }
  free(s);
  return n;
}

static int count_in(const char *path, const char *needle) {
  char *s = wd_it_read_file(path);
  int n = count_of(s, needle);
  free(s);
  return n;
}

/* Waits up to ms until the file's last assignment has partitions: their count. */
static int wait_assigned(const char *path, int ms) {
  int64_t deadline = wd_mono_ms() + ms;
  int n;
  while ((n = last_assigned(path)) <= 0 && wd_mono_ms() < deadline) usleep(100 * 1000);
  return n;
}

/* Static membership by default. Two members share the group; one is killed
 * with -9 and restarted: it takes its partitions back without a rebalance, so the other member
 * is neither revoked nor reassigned (before: the healthy member was revoked until the dead
 * member's session expired, ~33 s). session.timeout.ms 30 s: the restart is well within it. */
Test(static_membership, restart_after_kill_does_not_revoke_the_other_member, .timeout = 240) {
  env_t e;
  env_init(&e, "static");
  char topic[200], cfg_a[320], cfg_b[320], err_a[320], err_b[320], err_b2[320];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  wd_it_create_topic(topic, 4);
  snprintf(topic, sizeof(topic), "%spayments", e.prefix);
  wd_it_create_topic(topic, 4);
  snprintf(cfg_a, sizeof(cfg_a), "%s/a.yaml", e.dir);
  snprintf(cfg_b, sizeof(cfg_b), "%s/b.yaml", e.dir);
  snprintf(err_a, sizeof(err_a), "%s/a.err", e.dir);
  snprintf(err_b, sizeof(err_b), "%s/b.err", e.dir);
  snprintf(err_b2, sizeof(err_b2), "%s/b2.err", e.dir);
  write_config_at(&e, cfg_a, "a", 30000, "", "");
  write_config_at(&e, cfg_b, "b", 30000, "", "");
  const char *argv_a[] = {wd_it_widen_bin(), "run", "--config", cfg_a, "--quiet", NULL};
  const char *argv_b[] = {wd_it_widen_bin(), "run", "--config", cfg_b, "--quiet", NULL};
  pid_t a = spawn_to(argv_a, NULL, err_a);
  cr_assert_eq(wait_assigned(err_a, 90000), 8, "member a alone should hold all 8 partitions");
  pid_t b = spawn_to(argv_b, NULL, err_b);
  cr_assert_eq(wait_assigned(err_b, 120000), 4, "member b should get 4 of the 8 partitions");
  cr_assert_eq(wait_assigned(err_a, 30000), 4);
  int64_t settle = wd_mono_ms() + 60000;
  while (last_assigned(err_a) != 4 && wd_mono_ms() < settle) usleep(100 * 1000);
  cr_assert(file_has(err_a, "static membership: group.instance.id ", 0));
  sleep(2); /* both settled in one generation */
  int revoked_a = count_in(err_a, "[ingest] revoked "), assigned_a = count_in(err_a, "[ingest] assigned ");

  kill(b, SIGKILL);
  cr_assert_eq(wait_exit_ms(b, 10000), 128 + SIGKILL);
  int64_t t0 = wd_mono_ms();
  b = spawn_to(argv_b, NULL, err_b2);
  cr_assert_eq(wait_assigned(err_b2, 60000), 4, "the restarted member should take its 4 partitions back");
  int64_t took = wd_mono_ms() - t0;
  sleep(3); /* a rebalance of a would show in its log by now */
  cr_assert_eq(count_in(err_a, "[ingest] revoked "), revoked_a, "member a was revoked by the restart of b");
  cr_assert_eq(count_in(err_a, "[ingest] assigned "), assigned_a, "member a was reassigned by the restart of b");
  cr_log_info("restart after kill -9: the member had its partitions back %lld ms after its start, member a untouched",
              (long long)took);
  cr_assert_eq(stop(b), 0);
  cr_assert_eq(stop(a), 0);
  env_done(&e);
}

/* The output of a shell command (malloc'd); *rc its exit status. */
static char *sh_out(int *rc, const char *cmd) {
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return (char *)b.data;
}

static char *scrape(int port) {
  char cmd[128];
  int rc;
  snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%d/metrics", port);
  char *text = sh_out(&rc, cmd);
  cr_assert_eq(rc, 0, "curl could not scrape port %d", port);
  return text;
}

/* The number of widen_consumer_lag series in a scrape. */
static int lag_series(int port) {
  char *t = scrape(port);
  int n = count_of(t, "\nwiden_consumer_lag{");
  free(t);
  return n;
}

/* The last status line ("widen: in ...") of a stderr file, or "" (malloc'd). */
static char *last_status(const char *path) {
  char *s = wd_it_read_file(path);
  char *last = NULL;
  for (char *p = strstr(s, "widen: in "); p; p = strstr(p + 1, "widen: in ")) last = p;
  char *out = strdup(last ? last : "");
  char *nl = strchr(out, '\n');
  if (nl) *nl = 0;
  free(s);
  return out;
}

static void produce_orders(const env_t *e, int from, int to) {
  char path[320], cmd[900];
  snprintf(path, sizeof(path), "%s/orders.jsonl", e->dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  for (int i = from; i <= to; i++) fprintf(f, "{\"op\":\"c\",\"after\":{\"id\":%d,\"customer\":\"c%d\"}}\n", i, i);
  fclose(f);
  snprintf(cmd, sizeof(cmd), "'%s' produce --topic %sorders --file '%s' >/dev/null 2>&1", wd_it_widen_bin(), e->prefix,
           path);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Monitoring during and after a rebalance. Two members, topics of one partition
 * each: member b (whose group.instance.id sorts first, so the range assignor gives it every
 * partition) joins after a held them all. Member a then holds none: its status line says so and
 * why instead of "lag 0", its metrics drop the lag gauges of the revoked partitions and say 0
 * partitions, and once b moved the partitions on, `widen status` of a's directory says a no longer
 * owns them (its old stored offset in parentheses), b's says it does; no -1 anywhere. */
Test(rebalance_monitoring, member_without_partitions_says_so, .timeout = 240) {
  env_t e;
  env_init(&e, "mon");
  char topic[200], cfg_a[320], cfg_b[320], err_a[320], err_b[320], more_a[200], more_b[200], cmd[900];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  wd_it_create_topic(topic, 1);
  snprintf(topic, sizeof(topic), "%spayments", e.prefix);
  wd_it_create_topic(topic, 1);
  produce_orders(&e, 1, 20);
  produce_line(&e, "payments", "{\"op\":\"c\",\"after\":{\"order_id\":1,\"status\":\"paid\"}}");
  int pa = free_port(), pb = free_port();
  snprintf(cfg_a, sizeof(cfg_a), "%s/a.yaml", e.dir);
  snprintf(cfg_b, sizeof(cfg_b), "%s/b.yaml", e.dir);
  snprintf(err_a, sizeof(err_a), "%s/a.err", e.dir);
  snprintf(err_b, sizeof(err_b), "%s/b.err", e.dir);
  snprintf(more_a, sizeof(more_a), "    group.instance.id: zz-a-%d\n", (int)getpid());
  snprintf(more_b, sizeof(more_b), "    group.instance.id: aa-b-%d\n", (int)getpid());
  write_config_at(&e, cfg_a, "a", 6000, more_a, "");
  write_config_at(&e, cfg_b, "b", 6000, more_b, "");
  FILE *f = fopen(cfg_a, "a");
  fprintf(f, "  status-interval-s: 1\nmetrics:\n  listen: 127.0.0.1:%d\n", pa);
  fclose(f);
  f = fopen(cfg_b, "a");
  fprintf(f, "  status-interval-s: 1\nmetrics:\n  listen: 127.0.0.1:%d\n", pb);
  fclose(f);
  const char *argv_a[] = {wd_it_widen_bin(), "run", "--config", cfg_a, NULL};
  const char *argv_b[] = {wd_it_widen_bin(), "run", "--config", cfg_b, NULL};
  pid_t a = spawn_to(argv_a, NULL, err_a);
  cr_assert_eq(wait_assigned(err_a, 90000), 2, "member a alone should hold both partitions");
  int64_t deadline = wd_mono_ms() + 30000;
  while (lag_series(pa) != 2 && wd_mono_ms() < deadline) usleep(200 * 1000);
  char *m0 = scrape(pa);
  cr_assert_eq(count_of(m0, "\nwiden_consumer_lag{"), 2, "a's lag gauges of its two partitions:\n%s", m0);
  free(m0);

  pid_t b = spawn_to(argv_b, NULL, err_b);
  cr_assert_eq(wait_assigned(err_b, 90000), 2, "member b should get both partitions (its instance id sorts first)");
  deadline = wd_mono_ms() + 30000;
  while (last_assigned(err_a) != 0 && wd_mono_ms() < deadline) usleep(100 * 1000);
  cr_assert_eq(last_assigned(err_a), 0, "member a should hold none");
  sleep(3); /* a metrics tick and status lines since */
  char *m = scrape(pa);
  cr_assert_eq(count_of(m, "\nwiden_consumer_lag{"), 0, "a still exports the lag of revoked partitions:\n%s", m);
  cr_assert(strstr(m, "\nwiden_assigned_partitions 0\n"), "%s", m);
  free(m);
  m = scrape(pb);
  cr_assert(strstr(m, "\nwiden_assigned_partitions 2\n"), "%s", m);
  cr_assert_eq(count_of(m, "\nwiden_consumer_lag{"), 2, "%s", m);
  free(m);
  char *line = last_status(err_a);
  cr_assert(strstr(line, "| no partitions (all partitions are assigned to other members) |"), "a's status: %s", line);
  cr_assert_null(strstr(line, "lag 0"), "%s", line);
  free(line);
  line = last_status(err_b);
  cr_assert(strstr(line, "| lag "), "b's status: %s", line);
  free(line);

  /* b moves the partitions on: a's directory no longer owns them */
  produce_orders(&e, 21, 40);
  char *st = NULL;
  int rc = 0;
  deadline = wd_mono_ms() + 60000;
  snprintf(cmd, sizeof(cmd), "'%s' status --config '%s' 2>&1", wd_it_widen_bin(), cfg_a);
  for (;;) {
    free(st);
    st = sh_out(&rc, cmd);
    if ((rc == 0 && strstr(st, "orders[0]") && strstr(strstr(st, "orders[0]"), " no ")) || wd_mono_ms() >= deadline)
      break;
    usleep(500 * 1000);
  }
  cr_assert_eq(rc, 0, "%s", st);
  const char *row = strstr(st, "orders[0]");
  cr_assert(row && !strncmp(strchr(row, ' ') + strspn(strchr(row, ' '), " "), "no ", 3) && strstr(row, "(20)"),
            "a's status should say it no longer owns orders[0] (old position 20):\n%s", st);
  cr_assert_null(strstr(st, " -1 "), "%s", st);
  free(st);
  st = NULL;
  /* b's store holds its positions once it flushed its state (state.flush-interval-ms) */
  snprintf(cmd, sizeof(cmd), "'%s' status --config '%s' 2>&1", wd_it_widen_bin(), cfg_b);
  deadline = wd_mono_ms() + 30000;
  for (;;) {
    free(st);
    st = sh_out(&rc, cmd);
    row = rc == 0 ? strstr(st, "orders[0]") : NULL;
    if ((row && !strncmp(strchr(row, ' ') + strspn(strchr(row, ' '), " "), "yes ", 4)) || wd_mono_ms() >= deadline)
      break;
    usleep(500 * 1000);
  }
  cr_assert_eq(rc, 0, "%s", st);
  row = strstr(st, "orders[0]");
  cr_assert(row && !strncmp(strchr(row, ' ') + strspn(strchr(row, ' '), " "), "yes ", 4), "%s", st);
  cr_assert_null(strstr(st, " -1 "), "%s", st);
  free(st);
  cr_assert_eq(stop(b), 0);
  cr_assert_eq(stop(a), 0);
  env_done(&e);
}
