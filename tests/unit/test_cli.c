/*
 * tests/unit/test_cli.c — the command line's messages: an unknown option gets a
 * did-you-mean in every subcommand, a missing value names the option, and replay/status/changes
 * say that --config is missing instead of printing only their usage, and `widen run` reports a
 * mistake in its file before it opens the state directory. Runs the widen binary (WIDEN_BIN); no
 * broker.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* stdout+stderr of `widen args` (a new string) and its exit status. */
static char *widen(int *rc, const char *args) {
  const char *bin = getenv("WIDEN_BIN");
  cr_assert_not_null(bin, "WIDEN_BIN is not set (ctest sets it)");
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", bin, args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 14, len = 0, n;
  char *buf = malloc(cap);
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return buf;
}

static void expect_says(const char *args, int want_rc, const char *want) {
  int rc;
  char *out = widen(&rc, args);
  cr_expect_eq(rc, want_rc, "widen %s: exit %d, want %d\n%s", args, rc, want_rc, out);
  cr_expect(strstr(out, want) != NULL, "widen %s does not say \"%s\":\n%s", args, want, out);
  free(out);
}

Test(cli, unknown_options_get_a_did_you_mean_in_every_subcommand) {
  expect_says("run --confg x.yaml", 1, "widen run: unknown option '--confg'; did you mean '--config'?");
  expect_says("replay --state-dri d", 1, "widen replay: unknown option '--state-dri'; did you mean '--state-dir'?");
  expect_says("rows --cofnig x", 1, "widen rows: unknown option '--cofnig'; did you mean '--config'?");
  expect_says("status --lst 3", 1, "widen status: unknown option '--lst'; did you mean '--last'?");
  expect_says("changes --ffrom 1", 1, "widen changes: unknown option '--ffrom'; did you mean '--from'?");
  expect_says("produce --recods 5", 1, "widen produce: unknown option '--recods'; did you mean '--records'?");
  expect_says("tail --topik t", 1, "widen tail: unknown option '--topik'; did you mean '--topic'?");
  expect_says("demo --verbsoe", 1, "widen demo: unknown option '--verbsoe'; did you mean '--verbose'?");
  expect_says("simulate --cas x", 1, "widen simulate: unknown option '--cas'");
  /* nothing close: the help is named; a missing value names the option */
  expect_says("run --zzzzzzzz", 1, "widen run: unknown option '--zzzzzzzz' (widen run --help lists the options)");
  expect_says("run --config", 1, "widen run: option '--config' needs a value");
}

Test(cli, a_missing_config_is_said_not_just_usage) {
  expect_says("replay --from beginning --state-dir /tmp/x", 1, "widen replay: --config FILE is required");
  expect_says("replay --config x.yaml", 1, "widen replay: --from beginning|TIMESTAMP is required");
  expect_says("status", 1, "widen status: --config FILE is required");
  /* the file alone, as `widen run FILE` and `widen rows FILE` take it */
  expect_says("status /nonexistent/x.yaml", 1, "widen status: C_CONFIG: /nonexistent/x.yaml: can not open");
  expect_says("changes --from 1 --to 2", 1, "widen changes: --config FILE is required");
  expect_says("changes --config x.yaml", 1, "widen changes: --from A and --to B are required");
}

/* A misspelled secret on the command line (-X sasl.pasword=...) is refused with a did-you-mean and
 * its value is never printed, in tail and in produce, as a typo in a config file is; nor is the
 * value of a secret that librdkafka refuses. */
Test(cli, a_misspelled_secret_property_is_masked) {
  const char *runs[] = {"tail --topic t --brokers 127.0.0.1:1 -X sasl.pasword=hunter2",
                        "produce --brokers 127.0.0.1:1 --topic t --file /dev/null -X sasl.pasword=hunter2",
                        "tail --topic t --brokers 127.0.0.1:1 -X sasl.mechanism=hunter2 -X sasl.password=hunter2 "
                        "-X security.protocol=nonsense",
                        "tail --topic t --brokers 127.0.0.1:1 -X sasl.password:hunter2",
                        "produce --brokers 127.0.0.1:1 --topic t --file /dev/null -X =hunter2"};
  for (size_t i = 0; i < sizeof(runs) / sizeof(*runs); i++) {
    int rc;
    char *out = widen(&rc, runs[i]);
    cr_expect_eq(rc, 1, "widen %s: exit %d\n%s", runs[i], rc, out);
    cr_expect(strstr(out, "hunter2") == NULL, "widen %s prints the value:\n%s", runs[i], out);
    if (i < 2)
      cr_expect(strstr(out, "unknown Kafka property 'sasl.pasword'; did you mean 'sasl.password'?") != NULL,
                "widen %s:\n%s", runs[i], out);
    free(out);
  }
}

/* configs/demo.yaml with its state directory at dir/state, and with `typo` in place of the
 * pay_version sequence group's pay_method when typo is not NULL, written to dir/name. */
static void demo_config(const char *dir, const char *name, const char *typo) {
  FILE *in = fopen(WD_SOURCE_DIR "/configs/demo.yaml", "r");
  cr_assert_not_null(in);
  char path[300], line[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *out = fopen(path, "w");
  cr_assert_not_null(out);
  bool replaced = !typo;
  while (fgets(line, sizeof(line), in)) {
    char *at = strstr(line, "./state/demo");
    char *pm = typo ? strstr(line, "paid_amount,pay_method,") : NULL;
    if (at) fprintf(out, "%.*s%s/state%s", (int)(at - line), line, dir, at + strlen("./state/demo"));
    else if (pm) {
      fprintf(out, "%.*spaid_amount,%s,%s", (int)(pm - line), line, typo, pm + strlen("paid_amount,pay_method,"));
      replaced = true;
    } else fputs(line, out);
  }
  fclose(in);
  fclose(out);
  cr_assert(replaced, "configs/demo.yaml has no pay_version group with pay_method");
}

/* A mistake in the file (a sequence group naming an unknown column) is reported as `widen config
 * check` reports it, with its line and a did-you-mean, whatever the state directory: a new one is
 * not created, one locked by a running process does not hide it behind E_STORE_LOCKED, and one
 * holding another definition does not turn it into C_STATE_DEFINITION's advice to rebuild. */
Test(cli, a_mistake_in_the_file_is_reported_before_the_state_directory_is_opened, .timeout = 120) {
  char dir[] = "/tmp/widen-cli-XXXXXX", args[600], state[300];
  cr_assert_not_null(mkdtemp(dir));
  demo_config(dir, "good.yaml", NULL);
  demo_config(dir, "bad.yaml", "pay_methd");
  snprintf(state, sizeof(state), "%s/state", dir);
  const char *want = "C_SEQ_GROUP_UNKNOWN_FIELD: ";
  const char *hint = "field 'pay_methd' can not be found in table schema; did you mean 'pay_method'?";
  snprintf(args, sizeof(args), "run --config %s/bad.yaml", dir);
  struct stat sb;
  /* a new directory */
  expect_says(args, 2, want);
  expect_says(args, 2, hint);
  cr_expect(stat(state, &sb) != 0, "widen run created %s for a file it refuses", state);
  /* a directory in use: the good file's run holds it (the broker it waits for is not there) */
  char cmd[700];
  snprintf(cmd, sizeof(cmd), "exec env WIDEN_BROKERS=127.0.0.1:1 '%s' run --config %s/good.yaml >%s/good.log 2>&1",
           getenv("WIDEN_BIN"), dir, dir);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  /* past the state's definition, it waits for the broker ("cannot reach 127.0.0.1:1") */
  char glog[320], *seen = NULL;
  snprintf(glog, sizeof(glog), "%s/good.log", dir);
  for (int i = 0; i < 600; i++, usleep(100 * 1000)) {
    FILE *f = fopen(glog, "r");
    char line[2048];
    while (f && !seen && fgets(line, sizeof(line), f))
      if (strstr(line, "cannot reach 127.0.0.1:1")) seen = glog;
    if (f) fclose(f);
    if (seen) break;
  }
  cr_assert_not_null(seen, "the good file's run did not get to the broker (log %s)", glog);
  int rc;
  char *out = widen(&rc, args);
  cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
  cr_expect(strstr(out, hint) != NULL && strstr(out, "E_STORE_LOCKED") == NULL,
            "a locked directory hides the mistake:\n%s", out);
  free(out);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  /* the directory holds the good file's definition now, unlocked */
  out = widen(&rc, args);
  cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
  cr_expect(strstr(out, hint) != NULL && strstr(out, "C_STATE_DEFINITION") == NULL,
            "another stored definition hides the mistake:\n%s", out);
  free(out);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* kafka.bootstrap.servers naming another server (here one that answers as PostgreSQL does, an
 * 'E' error packet, which librdkafka reads as a 1.1 GB response and advises to raise
 * receive.message.max.bytes): the log says the address does not speak Kafka's protocol. */
Test(cli, a_server_that_is_not_kafka_is_named_as_such, .timeout = 120) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(ls, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0};
  socklen_t al = sizeof(a);
  cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
  cr_assert_eq(listen(ls, 16), 0);
  cr_assert_eq(getsockname(ls, (struct sockaddr *)&a, &al), 0);
  int port = ntohs(a.sin_port);
  pid_t srv = fork();
  cr_assert_geq(srv, 0);
  if (srv == 0) { /* answers every connection with PostgreSQL's error packet, then closes it */
    static const char pg[] = "E\0\0\0\x50SFATAL\0VFATAL\0C0A000\0Munsupported frontend protocol\0\0";
    for (;;) {
      int c = accept(ls, NULL, NULL);
      if (c < 0) _exit(0);
      char buf[256];
      (void)!read(c, buf, sizeof(buf));
      (void)!write(c, pg, sizeof(pg) - 1);
      close(c);
    }
  }
  close(ls);
  char dir[] = "/tmp/widen-cli-XXXXXX", cmd[700], log[320];
  cr_assert_not_null(mkdtemp(dir));
  demo_config(dir, "demo.yaml", NULL);
  snprintf(log, sizeof(log), "%s/run.log", dir);
  snprintf(cmd, sizeof(cmd), "exec env WIDEN_BROKERS=127.0.0.1:%d '%s' run --config %s/demo.yaml >%s 2>&1", port,
           getenv("WIDEN_BIN"), dir, log);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  char want[200], line[2048];
  snprintf(want, sizeof(want),
           "127.0.0.1:%d does not answer in Kafka's protocol, or with more than receive.message.max.bytes: is it",
           port);
  bool seen = false;
  for (int i = 0; i < 600 && !seen; i++, usleep(100 * 1000)) {
    FILE *f = fopen(log, "r");
    while (f && !seen && fgets(line, sizeof(line), f)) seen = strstr(line, want) != NULL;
    if (f) fclose(f);
  }
  kill(pid, SIGKILL);
  kill(srv, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  waitpid(srv, &st, 0);
  cr_expect(seen, "no '%s' in %s", want, log);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}
