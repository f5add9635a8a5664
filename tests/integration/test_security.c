/*
 * tests/integration/test_security.c — on the real broker's SASL_SSL listener
 * (scripts/kafka start --sasl-ssl: TLS with a certificate for IP 127.0.0.1 signed by
 * <tls dir>/ca.pem, SCRAM-SHA-512 user widen): `widen produce`, `widen run` (exactly-once),
 * `widen tail` and `widen status` with the right credentials work; a wrong password, an untrusted
 * CA and a wrong hostname each stop every one of them within seconds with one message naming
 * the cause; the password, given through ${env:...} / ${file:...}, appears in no output, no
 * state file, no metrics scrape and no commit history.
 *
 * Environment (scripts/test and .ci/run set them when they start the broker):
 *   WIDEN_TEST_SASL_BROKERS   the SASL_SSL listener, 127.0.0.1:<port>
 *   WIDEN_TEST_TLS_DIR        the broker's tls directory (ca.pem, other-ca.pem)
 *   WIDEN_TEST_SASL_PASSWORD  the SCRAM password (default widen-secret, scripts/kafka's)
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "tests/support/integration.h"

extern char **environ;

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
  char state[320];
  char pwfile[320];
  char brokers[128];
  char tls[512];
  int port;
} env_t;

static const char *sasl_brokers(void) {
  const char *b = getenv("WIDEN_TEST_SASL_BROKERS");
  cr_assert(b && *b, "WIDEN_TEST_SASL_BROKERS is not set: start the broker with scripts/kafka start --sasl-ssl "
                     "and export WIDEN_TEST_SASL_BROKERS and WIDEN_TEST_TLS_DIR (scripts/test does)");
  return b;
}

static const char *tls_dir(void) {
  const char *d = getenv("WIDEN_TEST_TLS_DIR");
  cr_assert(d && *d, "WIDEN_TEST_TLS_DIR is not set (scripts/kafka's <dir>/tls)");
  return d;
}

static const char *password(void) {
  const char *p = getenv("WIDEN_TEST_SASL_PASSWORD");
  return p && *p ? p : "widen-secret";
}

static char *slurp_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) wd_buf_append(&b, chunk, n);
  fclose(f);
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

/* Runs a shell command with stdout and stderr into e->dir/out and e->dir/err; returns the exit
 * status, *out and *err (malloc'd) and the seconds it took in *secs. */
static int sh(const env_t *e, char **out, char **err, double *secs, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int sh(const env_t *e, char **out, char **err, double *secs, const char *fmt, ...) {
  char cmd[4096], full[4800], po[300], pe[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  snprintf(po, sizeof(po), "%s/out", e->dir);
  snprintf(pe, sizeof(pe), "%s/err", e->dir);
  snprintf(full, sizeof(full), "( %s ) >'%s' 2>'%s'", cmd, po, pe);
  double t0 = wd_mono_s();
  int st = system(full);
  if (secs) *secs = wd_mono_s() - t0;
  *out = slurp_file(po);
  *err = slurp_file(pe);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A one-source pipeline on the SASL_SSL listener; the password comes from the environment
 * (${env:WIDEN_IT_SASL_PW}) and the CA path from a file (${file:...}) to show both providers. */
static void env_init(env_t *e, const char *name, const char *brokers, const char *ca, const char *pw) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-sec-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.sec%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  snprintf(e->pwfile, sizeof(e->pwfile), "%s/ca-path", e->dir);
  snprintf(e->brokers, sizeof(e->brokers), "%s", brokers);
  snprintf(e->tls, sizeof(e->tls), "%s/%s", tls_dir(), ca);
  e->port = 20000 + (int)(getpid() % 20000);
  setenv("WIDEN_IT_SASL_PW", pw, 1);
  unsetenv("WIDEN_BROKERS");
  FILE *f = fopen(e->pwfile, "w");
  cr_assert_not_null(f);
  fprintf(f, "%s\n", e->tls);
  fclose(f);
  f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "kafka:\n  bootstrap.servers: %s\n  group.id: %sgroup\n  properties:\n"
          "    security.protocol: SASL_SSL\n    sasl.mechanism: SCRAM-SHA-512\n    sasl.username: widen\n"
          "    sasl.password: ${env:WIDEN_IT_SASL_PW}\n    ssl.ca.location: ${file:%s}\n"
          "    session.timeout.ms: 6000\n"
          "table:\n  name: orders_wide\n  schema:\n"
          "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
          "    - {name: order_version, type: BIGINT}\n"
          "  primary-key: [order_id]\n  options:\n    merge-engine: partial-update\n"
          "    fields.order_version.sequence-group: customer\n"
          "sources:\n  - {name: orders, topic: %sorders, columns: {order_id: , customer: , order_version: }}\n"
          "sink:\n  topic: %swide\n  format: changelog-json\n"
          "state:\n  dir: %s\n"
          "pipeline:\n  commit-max-records: 20\n"
          "metrics:\n  listen: 127.0.0.1:%d\n",
          brokers, e->prefix, e->pwfile, e->prefix, e->prefix, e->state, e->port);
  fclose(f);
}

static void env_done(env_t *e) {
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  cr_assert_eq(system(cmd), 0);
}

/* The -X options of `widen produce` / `widen tail` for e (the password through ${env:...}). */
static void client_opts(const env_t *e, char *buf, size_t n) {
  snprintf(buf, n,
           "-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=widen "
           "-X 'sasl.password=${env:WIDEN_IT_SASL_PW}' -X 'ssl.ca.location=%s'",
           e->tls);
}

static size_t count(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* The password is in none of the texts. */
static void assert_no_password(const char *what, const char *text) {
  cr_assert_null(strstr(text, password()), "the password is printed in %s:\n%s", what, text);
}

Test(security, right_credentials_work_and_the_password_is_never_printed, .timeout = 300) {
  env_t e;
  env_init(&e, "ok", sasl_brokers(), "ca.pem", password());
  char x[1024], *out, *err;
  client_opts(&e, x, sizeof(x));
  double secs;

  /* produce 60 records over SASL_SSL */
  int rc = sh(&e, &out, &err, &secs,
              "'%s' produce --generate --brokers %s --streams orders --topic-prefix %s "
              "--keys 20 --records 60 %s",
              wd_it_widen_bin(), e.brokers, e.prefix, x);
  cr_assert_eq(rc, 0, "produce: %s%s", out, err);
  cr_assert(strstr(out, "acknowledged 60, failed 0"), "produce: %s", out);
  assert_no_password("produce's output", out);
  assert_no_password("produce's log", err);
  free(out), free(err);

  /* widen config check */
  rc = sh(&e, &out, &err, NULL, "'%s' config check '%s'", wd_it_widen_bin(), e.cfg);
  cr_assert_eq(rc, 0, "config check: %s%s", out, err);
  assert_no_password("config check", out);
  assert_no_password("config check", err);
  free(out), free(err);

  /* widen run (exactly-once, the default) while the metrics endpoint is scraped */
  char runlog[300];
  snprintf(runlog, sizeof(runlog), "%s/run.log", e.dir);
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "exec '%s' run --config '%s' --max-idle-ms 3000 >'%s' 2>&1", wd_it_widen_bin(), e.cfg,
           runlog);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  char *metrics = NULL;
  for (int i = 0; i < 100 && !metrics; i++) {
    rc = sh(&e, &out, &err, NULL, "curl -sf http://127.0.0.1:%d/metrics", e.port);
    if (rc == 0 && strstr(out, "widen_")) {
      metrics = out;
      free(err);
    } else {
      free(out), free(err);
      usleep(100 * 1000);
    }
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  char *log = slurp_file(runlog);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed:\n%s", log);
  cr_assert(strstr(log, "exactly-once"), "not exactly-once:\n%s", log);
  cr_assert(strstr(log, "60 Kafka records in"), "widen run did not read the 60 records:\n%s", log);
  cr_assert_not_null(metrics, "no metrics scraped from 127.0.0.1:%d", e.port);
  assert_no_password("run's log", log);
  assert_no_password("the metrics endpoint", metrics);
  free(log), free(metrics);

  /* widen tail (read_committed by default) over SASL_SSL: the wide table's changes */
  rc = sh(&e, &out, &err, NULL, "'%s' tail --brokers %s --topic %swide --timeout-ms 3000 %s", wd_it_widen_bin(),
          e.brokers, e.prefix, x);
  cr_assert_eq(rc, 0, "tail: %s%s", out, err);
  cr_assert_geq(count(out, "\"op\":\"+I\""), 1, "tail printed no +I line:\n%s%s", out, err);
  cr_assert_leq(count(out, "\"op\":\"+I\""), 20, "more +I lines than keys:\n%s", out);
  assert_no_password("tail's output", out);
  assert_no_password("tail's log", err);
  free(out), free(err);

  /* widen status: the commit history and the group's lag through SASL_SSL */
  rc = sh(&e, &out, &err, NULL, "'%s' status --config '%s' --last 1000", wd_it_widen_bin(), e.cfg);
  cr_assert_eq(rc, 0, "status: %s%s", out, err);
  cr_assert(strstr(out, "lag: 0"), "status shows no lag 0:\n%s", out);
  cr_assert(strstr(out, "\"records_in\""), "status shows no commit:\n%s", out);
  assert_no_password("status", out);
  assert_no_password("status's log", err);
  free(out), free(err);

  /* a refused property whose name says secret: its value is not in the message */
  rc = sh(&e, &out, &err, NULL, "'%s' tail --brokers %s --topic %swide --timeout-ms 100 -X 'no.such.secret=%s'",
          wd_it_widen_bin(), e.brokers, e.prefix, password());
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err, "no.such.secret"), "the refused property is not named:\n%s", err);
  assert_no_password("a refused property's message", err);
  free(out), free(err);

  /* no file of the state directory (RocksDB's files, its LOG, the history, the definition) */
  rc = sh(&e, &out, &err, NULL, "grep -rlaF -- '%s' '%s' || true", password(), e.state);
  cr_assert_eq(rc, 0);
  cr_assert_str_empty(out, "the password is in state files:\n%s", out);
  free(out), free(err);
  rc = sh(&e, &out, &err, NULL, "ls '%s' | wc -l", e.state);
  cr_assert_gt(atoi(out), 3, "the state directory is nearly empty: the grep above proved nothing");
  free(out), free(err);
  env_done(&e);
}

/* Every command on a refused connection: exit non-zero within 15 s, the error id once, no
 * timeout message. */
static void refused(const char *name, const char *brokers, const char *ca, const char *pw, const char *id,
                    const char *cause) {
  env_t e;
  env_init(&e, name, brokers, ca, pw);
  char x[1024], *out, *err;
  client_opts(&e, x, sizeof(x));
  double secs;
  const char *cmds[4];
  char c0[2048], c1[2048], c2[2048], c3[2048];
  snprintf(c0, sizeof(c0), "'%s' run --config '%s' --max-idle-ms 3000", wd_it_widen_bin(), e.cfg);
  snprintf(c1, sizeof(c1), "'%s' status --config '%s'", wd_it_widen_bin(), e.cfg); /* the state run made */
  snprintf(c2, sizeof(c2), "'%s' tail --brokers %s --topic %swide --timeout-ms 3000 %s", wd_it_widen_bin(), brokers,
           e.prefix, x);
  snprintf(c3, sizeof(c3), "'%s' produce --generate --brokers %s --streams orders --topic-prefix %s --records 5 %s",
           wd_it_widen_bin(), brokers, e.prefix, x);
  cmds[0] = c0, cmds[1] = c1, cmds[2] = c2, cmds[3] = c3;
  for (int i = 0; i < 4; i++) {
    int rc = sh(&e, &out, &err, &secs, "%s", cmds[i]);
    cr_assert_neq(rc, 0, "%s: succeeded against %s:\n%s%s", cmds[i], name, out, err);
    cr_assert_lt(secs, 15.0, "%s: took %.1f s to fail", cmds[i], secs);
    cr_assert_eq(count(err, id), 1, "%s: not one %s message:\n%s", cmds[i], id, err);
    cr_assert(strstr(err, cause), "%s: the message does not say '%s':\n%s", cmds[i], cause, err);
    cr_assert_null(strstr(err, "imed out"), "%s: a timeout is reported:\n%s", cmds[i], err);
    cr_assert_null(strstr(err, "WARN"), "%s: more than the one message:\n%s", cmds[i], err);
    cr_assert_null(strstr(err, "ERROR"), "%s: more than the one message:\n%s", cmds[i], err);
    assert_no_password(cmds[i], err);
    assert_no_password(cmds[i], out);
    free(out), free(err);
  }
  env_done(&e);
}

Test(security, a_wrong_password_stops_start_up_with_authentication_failed, .timeout = 120) {
  refused("pw", sasl_brokers(), "ca.pem", "not-the-password", "E_KAFKA_AUTH", "authentication failed");
}

Test(security, an_untrusted_ca_stops_start_up_with_certificate_verify_failed, .timeout = 120) {
  refused("ca", sasl_brokers(), "other-ca.pem", password(), "E_KAFKA_TLS_CERT", "certificate verify failed");
}

Test(security, a_wrong_hostname_stops_start_up_with_hostname_mismatch, .timeout = 120) {
  /* the broker's certificate names IP 127.0.0.1 only: reached as localhost, https identification fails */
  const char *b = sasl_brokers();
  const char *colon = strrchr(b, ':');
  cr_assert_not_null(colon);
  char host[128];
  snprintf(host, sizeof(host), "localhost%s", colon);
  refused("host", host, "ca.pem", password(), "E_KAFKA_TLS_HOSTNAME", "hostname mismatch");
}

/* ---- least exposure, on the PLAINTEXT broker --------------------------------------------------- */

/* Sends one record with exactly these key and value bytes to topic (librdkafka, acks=all). */
static void send_raw(const char *topic, const void *key, size_t klen, const void *val, size_t vlen) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof errstr), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  cr_assert_not_null(rk, "%s", errstr);
  cr_assert_eq(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY((void *)key, klen),
                                 RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_END),
               RD_KAFKA_RESP_ERR_NO_ERROR);
  cr_assert_eq(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

/* Whether an HTTP GET of url answers (curl exit 0). */
static bool http_ok(const env_t *e, const char *url) {
  char *out, *err;
  int rc = sh(e, &out, &err, NULL, "curl -sf --max-time 3 '%s'", url);
  free(out), free(err);
  return rc == 0;
}

Test(exposure, state_is_owner_only_metrics_on_loopback_and_dead_letters_carry_the_records_own_bytes, .timeout = 300) {
  env_t e;
  snprintf(e.dir, sizeof(e.dir), "/tmp/widen-exp-XXXXXX");
  cr_assert_not_null(mkdtemp(e.dir));
  snprintf(e.prefix, sizeof(e.prefix), "wdtest.exp%d%ld.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(e.cfg, sizeof(e.cfg), "%s/widen.yaml", e.dir);
  snprintf(e.state, sizeof(e.state), "%s/sub/state", e.dir); /* parents created too */
  e.port = 20000 + (int)((getpid() + 7) % 20000);
  setenv("WIDEN_IT_ENV_MARKER", "env-marker-4711", 1);
  unsetenv("WIDEN_BROKERS");
  FILE *f = fopen(e.cfg, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "kafka:\n  bootstrap.servers: %s\n  group.id: %sgroup\n  properties:\n    session.timeout.ms: 6000\n"
          "table:\n  name: t\n  schema:\n"
          "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
          "    - {name: order_version, type: BIGINT}\n"
          "  primary-key: [order_id]\n  options:\n    merge-engine: partial-update\n"
          "    fields.order_version.sequence-group: customer\n"
          "sources:\n  - {name: orders, topic: %sorders, columns: {order_id: , customer: , order_version: }}\n"
          "sink:\n  topic: %swide\n  format: changelog-json\n"
          "state:\n  dir: %s\n"
          "metrics:\n  listen: %d\n", /* a port alone: 127.0.0.1 only */
          wd_it_brokers(), e.prefix, e.prefix, e.prefix, e.state, e.port);
  fclose(f);

  char topic[200], dlq[200];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  snprintf(dlq, sizeof(dlq), "%swide.dlq", e.prefix);
  wd_it_create_topic(topic, 1);
  static const unsigned char key[] = {0x00, 0xff, 'k', 0x01, 0x7f};
  static const unsigned char val[] = {'{', 'n', 'o', 't', ' ', 0xfe, 0x00, 'j', 's', 'o', 'n'};
  send_raw(topic, key, sizeof(key), val, sizeof(val));
  const char *good = "{\"before\":null,\"after\":{\"order_id\":1,\"customer\":\"a\",\"order_version\":1},\"op\":\"c\"}";
  send_raw(topic, "{\"order_id\":1}", 14, good, strlen(good));

  char cmd[2048], runlog[300];
  snprintf(runlog, sizeof(runlog), "%s/run.log", e.dir);
  snprintf(cmd, sizeof(cmd), "exec '%s' run --config '%s' --max-idle-ms 3000 >'%s' 2>&1", wd_it_widen_bin(), e.cfg,
           runlog);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  char loop[100], other[100];
  snprintf(loop, sizeof(loop), "http://127.0.0.1:%d/metrics", e.port);
  snprintf(other, sizeof(other), "http://127.0.0.2:%d/metrics", e.port); /* loopback too, another address */
  bool served = false;
  for (int i = 0; i < 100 && !served; i++) {
    served = http_ok(&e, loop);
    if (!served) usleep(100 * 1000);
  }
  bool elsewhere = served && http_ok(&e, other);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  char *log = slurp_file(runlog);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run failed:\n%s", log);
  cr_assert(served, "metrics not served on 127.0.0.1:%d:\n%s", e.port, log);
  cr_assert_not(elsewhere, "metrics.listen '%d' is served on 127.0.0.2 too (not bound to 127.0.0.1 only)", e.port);
  cr_assert(strstr(log, "1 dead-lettered"), "the bad record was not dead-lettered:\n%s", log);
  free(log);

  /* the state directory 0700, every file and directory in it owner-only */
  struct stat sb;
  cr_assert_eq(stat(e.state, &sb), 0);
  cr_assert_eq(sb.st_mode & 0777, 0700, "state directory mode %o", (unsigned)(sb.st_mode & 0777));
  char *out, *err;
  cr_assert_eq(sh(&e, &out, &err, NULL, "find '%s' -perm /077", e.state), 0);
  cr_assert_str_empty(out, "state files readable by others:\n%s", out);
  free(out), free(err);
  cr_assert_eq(sh(&e, &out, &err, NULL, "find '%s' -type f | wc -l", e.state), 0);
  cr_assert_gt(atoi(out), 3, "the state directory is nearly empty");
  free(out), free(err);

  /* the dead letter: the record's own key and value bytes, widen's five headers and nothing else */
  wd_consumer_t *c = wd_it_consumer(dlq);
  static wd_kmsg_t msgs[16];
  size_t n = 0;
  for (int i = 0; i < 40 && n == 0; i++) cr_assert_null(wd_consumer_poll_batch(c, 16, 250, msgs, &n));
  cr_assert_eq(n, 1, "dead letters: %zu", n);
  cr_assert_eq(msgs[0].key_len, sizeof(key));
  cr_assert_eq(memcmp(msgs[0].key, key, sizeof(key)), 0, "the dead letter's key is not the record's");
  cr_assert_eq(msgs[0].value_len, sizeof(val));
  cr_assert_eq(memcmp(msgs[0].value, val, sizeof(val)), 0, "the dead letter's value is not the record's");
  rd_kafka_headers_t *hdrs = NULL;
  cr_assert_eq(rd_kafka_message_headers(msgs[0].rkm, &hdrs), RD_KAFKA_RESP_ERR_NO_ERROR);
  static const char *const expect[] = {"widen.error.id", "widen.error.message", "widen.source.topic",
                                       "widen.source.partition", "widen.source.offset"};
  cr_assert_eq(rd_kafka_header_cnt(hdrs), 5);
  char host[256] = "";
  gethostname(host, sizeof(host));
  for (size_t i = 0; i < 5; i++) {
    const char *name;
    const void *hv;
    size_t hl;
    cr_assert_eq(rd_kafka_header_get_all(hdrs, i, &name, &hv, &hl), RD_KAFKA_RESP_ERR_NO_ERROR);
    cr_assert_str_eq(name, expect[i]);
    char *text = strndup(hv, hl);
    cr_assert_null(strstr(text, "env-marker-4711"), "header %s: %s", name, text);
    cr_assert_null(strstr(text, e.dir), "header %s names a local path: %s", name, text);
    cr_assert(!host[0] || !strstr(text, host), "header %s names the host: %s", name, text);
    if (i == 2) cr_assert_str_eq(text, topic);
    if (i == 4) cr_assert_str_eq(text, "0");
    free(text);
  }
  wd_kmsg_release(msgs, n);
  wd_consumer_destroy(c);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e.dir);
  cr_assert_eq(system(cmd), 0);
}
