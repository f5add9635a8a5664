/*
 * tests/integration/test_rebuild.c — the rebuild on an incompatible table definition as a runtime
 * mode (app/runtime/rebuild.h), on the real broker (WIDEN_TEST_BROKERS) with the widen
 * binary (WIDEN_BIN).
 *
 * The demo's three streams into a partial-update table with a sequence group per stream, per-partition
 * tasks; the change: shipped_at leaves the shipments' sequence group (the stored rows depend on it).
 * The table downstream sees before the change is the fold of the output read read_committed; after
 * the rebuild, the output since then, folded onto it, must give the table of a clean replay of the
 * new definition, and hold exactly the difference (nothing twice, nothing else).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "changelog/changelog.h"
#include "common/buf.h"
#include "ingest/consumer.h"
#include "tests/support/integration.h"

extern char **environ;

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320]; /* the old definition */
  char cfg_new[320]; /* the new one, rebuild on */
  char state[320];
} env_t;

static char *slurp(FILE *f) {
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

static char *sh(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh(int *rc, const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  char *out = slurp(p);
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return out;
}

/* Member `member` of the test's group: its own state directory and group.instance.id (static
 * membership with a session of 20 s: a member restarted within it gets its tasks back without a
 * rebalance, so the members of the new definition own the tasks they owned before); tasks
 * "per-partition" or "single". base (may be NULL) gives the prefix (the same topics and group). */
static void env_init(env_t *e, const env_t *base, const char *name, const char *member, const char *tasks) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-rb-%s-XXXXXX", member);
  cr_assert_not_null(mkdtemp(e->dir));
  if (base) snprintf(e->prefix, sizeof(e->prefix), "%s", base->prefix);
  else snprintf(e->prefix, sizeof(e->prefix), "wdtest.rb%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->cfg_new, sizeof(e->cfg_new), "%s/widen-new.yaml", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  for (int v = 0; v < 2; v++) {
    FILE *f = fopen(v ? e->cfg_new : e->cfg, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "kafka:\n  bootstrap.servers: %s\n  group.id: %sgroup\n  properties:\n    session.timeout.ms: 20000\n"
            "    group.instance.id: %s%s\n"
            "table:\n  name: orders_wide\n  schema:\n"
            "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
            "    - {name: amount, type: \"DECIMAL(10,2)\"}\n    - {name: currency, type: STRING}\n"
            "    - {name: ordered_at, type: TIMESTAMP(3)}\n    - {name: order_version, type: BIGINT}\n"
            "    - {name: paid_amount, type: \"DECIMAL(10,2)\"}\n    - {name: pay_method, type: STRING}\n"
            "    - {name: pay_status, type: STRING}\n    - {name: paid_at, type: TIMESTAMP(3)}\n"
            "    - {name: pay_version, type: BIGINT}\n    - {name: carrier, type: STRING}\n"
            "    - {name: ship_status, type: STRING}\n    - {name: shipped_at, type: TIMESTAMP(3)}\n"
            "    - {name: ship_version, type: BIGINT}\n"
            "  primary-key: [order_id]\n  options:\n    merge-engine: partial-update\n"
            "    fields.order_version.sequence-group: customer,amount,currency,ordered_at\n"
            "    fields.pay_version.sequence-group: paid_amount,pay_method,pay_status,paid_at\n"
            "    fields.ship_version.sequence-group: %s\n"
            "sources:\n"
            "  - {name: orders, topic: %sorders, options: {timestamp-unit: millis}, columns: {order_id: , customer: , "
            "amount: , currency: ,"
            " ordered_at: order_ts, order_version: }}\n"
            "  - {name: payments, topic: %spayments, options: {timestamp-unit: millis}, columns: {order_id: , "
            "paid_amount: pay_amount, pay_method: ,"
            " pay_status: , paid_at: pay_ts, pay_version: }}\n"
            "  - {name: shipments, topic: %sshipments, options: {timestamp-unit: millis}, columns: {order_id: , "
            "carrier: , ship_status: ,"
            " shipped_at: ship_ts, ship_version: }}\n"
            "sink:\n  topic: %sout\n  format: changelog-json\n"
            "state:\n  dir: %s\n%s"
            "pipeline:\n  batch-size: 40\n  batch-timeout-ms: 50\n  commit-max-records: 40\n  tasks: %s\n%s",
            wd_it_brokers(), e->prefix, e->prefix, member, v ? "carrier,ship_status" : "carrier,ship_status,shipped_at",
            e->prefix, e->prefix, e->prefix, e->prefix, e->state, v ? "  on-incompatible-change: rebuild\n" : "", tasks,
            strcmp(tasks, "single") ? "  num-standby-replicas: 1\n" : "");
    fclose(f);
  }
}

static void env_done(env_t *e) {
  int rc;
  free(sh(&rc, "rm -rf '%s'", e->dir));
}

static void create_topics(const env_t *e) {
  const char *names[] = {"orders", "payments", "shipments"};
  char t[200];
  for (int i = 0; i < 3; i++) {
    snprintf(t, sizeof(t), "%s%s", e->prefix, names[i]);
    wd_it_create_topic(t, 4);
  }
}

static void produce(const env_t *e, int keys, int records, int seed) {
  int rc;
  char *out = sh(&rc, "'%s' produce --generate --topic-prefix %s --keys %d --records %d --seed %d 2>&1",
                 wd_it_widen_bin(), e->prefix, keys, records, seed);
  cr_assert_eq(rc, 0, "produce failed: %s", out);
  free(out);
}

/* Starts `widen run` on cfg with stderr to log, stopping after idle_ms without input; fault
 * (WIDEN_FAULT) may be NULL. */
static pid_t spawn_run(const char *cfg, const char *log, const char *idle_ms, const char *fault) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", cfg, "--quiet", "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  if (fault) setenv("WIDEN_FAULT", fault, 1);
  else unsetenv("WIDEN_FAULT");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  unsetenv("WIDEN_FAULT");
  return pid;
}

static int wait_exit(pid_t pid) {
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Every record of the output topic read read_committed: {"partition","offset","op","row"}. */
static json_t *output(const env_t *e) {
  char topic[200];
  snprintf(topic, sizeof(topic), "%sout", e->prefix);
  wd_consumer_t *c = wd_it_consumer(topic);
  json_t *out = json_array();
  wd_buf_t b = {0};
  static wd_kmsg_t msgs[500];
  int idle = 0;
  while (idle < 4) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 500, 500, msgs, &n));
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n; i++) {
      wd_buf_reset(&b);
      cr_assert_null(wd_changelog_decode_tail(WD_CHANGELOG_JSON, msgs[i].key, msgs[i].key_len, msgs[i].value,
                                              msgs[i].value_len, &b, NULL));
      wd_buf_putc(&b, 0);
      json_t *j = json_loads((const char *)b.data, JSON_DISABLE_EOF_CHECK, NULL);
      cr_assert_not_null(j);
      json_object_set_new(j, "partition", json_integer(msgs[i].partition));
      json_object_set_new(j, "offset", json_integer(msgs[i].offset));
      json_object_del(j, "key");
      json_array_append_new(out, j);
    }
    wd_kmsg_release(msgs, n);
  }
  wd_buf_free(&b);
  wd_consumer_destroy(c);
  return out;
}

/* A log without sanitizer reports (the build-san binary's, whose processes write to log files). */
static void assert_clean_log(const char *text, const char *who) {
  cr_expect(!strstr(text, "Sanitizer") && !strstr(text, "runtime error"), "%s reports a sanitizer error:\n%s", who,
            text);
}

static void key_of(const json_t *row, char *k, size_t n) {
  snprintf(k, n, "%lld", (long long)json_integer_value(json_object_get(row, "order_id")));
}

static void tp_of(const json_t *r, char *k, size_t n) {
  snprintf(k, n, "%lld@%lld", (long long)json_integer_value(json_object_get(r, "partition")),
           (long long)json_integer_value(json_object_get(r, "offset")));
}

/* Applies one changelog record to table t (key -> row). */
static void apply(json_t *t, const json_t *r) {
  char key[32];
  key_of(json_object_get(r, "row"), key, sizeof(key));
  const char *op = json_string_value(json_object_get(r, "op"));
  if (!strcmp(op, "+I") || !strcmp(op, "+U")) json_object_set(t, key, json_object_get(r, "row"));
  if (!strcmp(op, "-D")) json_object_del(t, key);
}

/* `widen rows` of the state in dir as key -> row. */
static json_t *rows(const char *cfg, const char *dir) {
  int rc;
  char *out = sh(&rc, "'%s' rows --config '%s' --state-dir '%s' 2>/dev/null", wd_it_widen_bin(), cfg, dir);
  cr_assert_eq(rc, 0, "widen rows failed");
  json_t *t = json_object();
  for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
    nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (!*l) continue;
    json_t *j = json_loads(l, 0, NULL);
    cr_assert_not_null(j, "%s", l);
    char key[32];
    key_of(j, key, sizeof(key));
    json_object_set_new(t, key, j);
  }
  free(out);
  return t;
}

/* The table of a clean replay of the new definition over every input record. */
static json_t *clean_table(const env_t *e) {
  char fresh[400];
  snprintf(fresh, sizeof(fresh), "%s/fresh", e->dir);
  int rc;
  free(sh(&rc, "'%s' replay --config '%s' --from earliest --state-dir '%s' --no-output --quiet 2>/dev/null",
          wd_it_widen_bin(), e->cfg_new, fresh));
  cr_assert_eq(rc, 0, "the clean replay failed");
  return rows(e->cfg_new, fresh);
}

static void assert_same(json_t *got, json_t *want, const char *what) {
  if (json_equal(got, want)) return;
  const char *k;
  json_t *v;
  size_t bad = 0;
  json_object_foreach(want, k, v) {
    json_t *g = json_object_get(got, k);
    if ((!g || !json_equal(g, v)) && bad++ < 5) {
      char *x = g ? json_dumps(g, JSON_COMPACT) : strdup("(none)"), *y = json_dumps(v, JSON_COMPACT);
      fprintf(stderr, "%s: key %s\n  got  %s\n  want %s\n", what, k, x, y);
      free(x);
      free(y);
    }
  }
  json_object_foreach(got, k, v) if (!json_object_get(want, k) && bad++ < 10)
      fprintf(stderr, "%s: extra key %s\n", what, k);
  cr_assert_fail("%s differ (%zu of %zu keys, want %zu)", what, bad, json_object_size(got), json_object_size(want));
}

/* The number of changelog records that turn table a into table b (-D, +I, or -U and +U). */
static size_t diff_size(json_t *a, json_t *b) {
  size_t n = 0;
  const char *k;
  json_t *v;
  json_object_foreach(a, k, v) {
    json_t *w = json_object_get(b, k);
    n += !w ? 1 : !json_equal(v, w) ? 2 : 0;
  }
  json_object_foreach(b, k, v) n += !json_object_get(a, k);
  return n;
}

/* The output records not in `before` (a set of "partition@offset"), checked: applied to the old
 * table they give want, they are exactly the difference (as many records as it has, no key twice:
 * nothing repeated). */
static void assert_difference(json_t *old, json_t *before, json_t *after, json_t *want) {
  json_t *table = json_deep_copy(old), *seen = json_object();
  size_t i, emitted = 0;
  json_t *r;
  json_array_foreach(after, i, r) {
    char tp[48], key[32];
    tp_of(r, tp, sizeof(tp));
    if (json_object_get(before, tp)) continue;
    emitted++;
    apply(table, r);
    const char *op = json_string_value(json_object_get(r, "op"));
    key_of(json_object_get(r, "row"), key, sizeof(key));
    char seen_key[48];
    snprintf(seen_key, sizeof(seen_key), "%s%s", key, op);
    cr_expect_null(json_object_get(seen, seen_key), "key %s has %s twice in the difference", key, op);
    json_object_set_new(seen, seen_key, json_true());
  }
  assert_same(table, want, "old table + emitted difference vs the clean replay of the new definition");
  size_t want_n = diff_size(old, want);
  cr_assert_gt(want_n, 0, "the change of definition changes no row (the test proves nothing)");
  cr_assert_eq(emitted, want_n, "emitted %zu records after the change, the difference has %zu", emitted, want_n);
  json_decref(table);
  json_decref(seen);
}

/* The table downstream sees (the fold of the output) and the set of its records' positions. */
static json_t *fold(json_t *cl, json_t **positions) {
  json_t *t = json_object();
  *positions = json_object();
  size_t i;
  json_t *r;
  json_array_foreach(cl, i, r) {
    char tp[48];
    tp_of(r, tp, sizeof(tp));
    json_object_set_new(*positions, tp, json_true());
    apply(t, r);
  }
  return t;
}

/* The tasks whose difference a log says it emitted ("task N: old table ... emitted the difference"),
 * added to count[N]. */
static void count_switches(const char *log, int *count, int n) {
  char *text = wd_it_read_file(log);
  for (const char *p = text; (p = strstr(p, "[rebuild] task ")); p++) {
    int t = -1, end = 0;
    if (sscanf(p, "[rebuild] task %d: old table%n", &t, &end) == 1 && end > 0 && t >= 0 && t < n) count[t]++;
  }
  free(text);
}

/* Two members with a standby copy each rebuild together: each emits the difference of its own
 * tasks, once; the standby copies (which a rebuild before took for old rows: a -D per copied row,
 * and each member emitted the whole difference) are never read as old rows. */
Test(rebuild, two_processes_with_standbys_emit_each_difference_once, .timeout = 300) {
  env_t a, b;
  env_init(&a, NULL, "two", "memberA", "per-partition");
  env_init(&b, &a, "two", "memberB", "per-partition");
  create_topics(&a);
  produce(&a, 60, 1200, 9);
  char la[400], lb[400];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  snprintf(lb, sizeof(lb), "%s/b.log", b.dir);
  /* the old definition: both members build their tasks and copies */
  pid_t pa = spawn_run(a.cfg, la, "5000", NULL), pb = spawn_run(b.cfg, lb, "5000", NULL);
  int ra = wait_exit(pa), rb = wait_exit(pb);
  cr_assert(ra == 0 && rb == 0, "the old run exited with %d, %d", ra, rb);
  json_t *before_pos = NULL, *cl_before = output(&a), *old = fold(cl_before, &before_pos);
  cr_assert_gt(json_object_size(old), 30);
  /* the new definition: both rebuild */
  pa = spawn_run(a.cfg_new, la, "6000", NULL);
  pb = spawn_run(b.cfg_new, lb, "6000", NULL);
  ra = wait_exit(pa);
  rb = wait_exit(pb);
  char *ta = wd_it_read_file(la), *tb = wd_it_read_file(lb);
  cr_assert(ra == 0 && rb == 0, "the rebuild runs exited with %d, %d:\n--- A\n%s\n--- B\n%s", ra, rb, ta, tb);
  int count[4] = {0}, ca[4] = {0}, cb[4] = {0};
  count_switches(la, ca, 4);
  count_switches(lb, cb, 4);
  int na = 0, nb = 0;
  for (int t = 0; t < 4; t++) {
    count[t] = ca[t] + cb[t];
    na += ca[t];
    nb += cb[t];
    cr_expect_eq(count[t], 1, "task %d's difference was emitted %d times", t, count[t]);
  }
  cr_expect(na > 0 && nb > 0, "the tasks were not shared (A switched %d, B %d)", na, nb);
  cr_expect(strstr(ta, "standby replicas") && strstr(tb, "standby replicas"), "standby copies were not on");
  assert_clean_log(ta, "member A");
  assert_clean_log(tb, "member B");
  free(ta);
  free(tb);
  json_t *cl_after = output(&a), *want = clean_table(&a);
  assert_difference(old, before_pos, cl_after, want);
  json_decref(want);
  json_decref(cl_after);
  json_decref(old);
  json_decref(cl_before);
  json_decref(before_pos);
  env_done(&a);
  env_done(&b);
}

/* SIGKILLs during the rebuild (WIDEN_FAULT): once the first switch's transaction is committed but
 * not finalized (recovery must finalize it: the task is not rebuilt again), in the middle of a
 * switch (its transaction open: its records are aborted), and at a commit of the rebuild from the
 * sources; then a clean run. Read read_committed, the output holds the difference once and ends at
 * the rebuilt table. */
static void kill_during_rebuild(const char *tasks, int keys, int records, const char *const *faults, size_t nfaults) {
  env_t a;
  env_init(&a, NULL, strcmp(tasks, "single") ? "killpp" : "killst", "memberA", tasks);
  create_topics(&a);
  produce(&a, keys, records, 13);
  char la[400];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  json_t *before_pos = NULL, *cl_before = output(&a), *old = fold(cl_before, &before_pos);
  for (size_t i = 0; i < nfaults; i++) {
    int rc = wait_exit(spawn_run(a.cfg_new, la, "3000", faults[i]));
    char *t = wd_it_read_file(la);
    cr_assert_eq(rc, 128 + SIGKILL, "the run with WIDEN_FAULT=%s exited with %d:\n%s", faults[i], rc, t);
    free(t);
  }
  int rc = wait_exit(spawn_run(a.cfg_new, la, "3000", NULL));
  char *t = wd_it_read_file(la);
  cr_assert_eq(rc, 0, "the last run exited with %d:\n%s", rc, t);
  cr_expect(strstr(t, "recovered commit"), "no commit was left to recovery:\n%s", t);
  assert_clean_log(t, "widen");
  if (getenv("WD_SHOW")) fprintf(stderr, "%s", t);
  free(t);
  json_t *cl_after = output(&a), *want = clean_table(&a);
  assert_difference(old, before_pos, cl_after, want);
  json_t *now = rows(a.cfg_new, a.state);
  assert_same(now, want, "the state after the rebuild vs the clean replay");
  json_decref(now);
  json_decref(want);
  json_decref(cl_after);
  json_decref(old);
  json_decref(cl_before);
  json_decref(before_pos);
  env_done(&a);
}

Test(rebuild, kill_during_the_rebuild_repeats_nothing_per_partition, .timeout = 300) {
  const char *faults[] = {"rebuild-after-commit", "rebuild-during-switch", "after-finalize:2"};
  kill_during_rebuild("per-partition", 60, 1200, faults, 3);
}

Test(rebuild, kill_during_the_rebuild_repeats_nothing_single_task, .timeout = 300) {
  const char *faults[] = {"after-finalize:3", "rebuild-during-switch", "rebuild-after-commit"};
  /* 1500 keys: the readers of the stage and of the switch go over several chunks (512 entries) */
  kill_during_rebuild("single", 1500, 4000, faults, 3);
}

/* The output since `before` applied record by record onto the old table, each change checked to be
 * explainable (an -U or -D of the current row, a +I of an absent key: a repeated record breaks it),
 * the end equal to want. Input may arrive during the rebuild, so the records are the difference
 * and the changes of that input mixed; their count is not checked, their consistency is. */
static void assert_consistent(json_t *old, json_t *before, json_t *after, json_t *want) {
  json_t *table = json_deep_copy(old);
  size_t i, bad = 0, emitted = 0;
  json_t *r;
  json_array_foreach(after, i, r) {
    char tp[48], key[32];
    tp_of(r, tp, sizeof(tp));
    if (json_object_get(before, tp)) continue;
    emitted++;
    const char *op = json_string_value(json_object_get(r, "op"));
    json_t *row = json_object_get(r, "row");
    key_of(row, key, sizeof(key));
    json_t *cur = json_object_get(table, key);
    bool ok = !strcmp(op, "+I") ? cur == NULL : !strcmp(op, "+U") ? true : cur && json_equal(cur, row);
    if (!ok && bad++ < 5) {
      char *x = cur ? json_dumps(cur, JSON_COMPACT) : strdup("(none)"), *y = json_dumps(row, JSON_COMPACT);
      fprintf(stderr, "output %s: %s of key %s does not follow the table\n  table %s\n  record %s\n", tp, op, key, x,
              y);
      free(x);
      free(y);
    }
    apply(table, r);
  }
  cr_expect_eq(bad, 0, "%zu of %zu records after the change do not follow the table (repeated or lost)", bad, emitted);
  assert_same(table, want, "old table + output after the change vs the clean replay of the new definition");
  json_decref(table);
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The adversarial rebuild: two members with standby copies rebuild
 * while input arrives; random members are SIGKILLed at random moments during and right after the
 * rebuild and restarted at once (WD_REBUILD_KILLS times, default 3; WD_REBUILD_SEED for the
 * moments); optionally (third) a second incompatible change is started before the first rebuild
 * finished. Then both run to the end of the input: read read_committed, the output after the
 * change follows the table record by record and ends at a clean replay of the last definition. */
static void attack(const char *name, const char *tasks, bool third) {
  if (!getenv("WD_REBUILD_ATTACK"))
    cr_skip_test("the rebuild attack runs from tests/chaos/rebuild_attack (WD_REBUILD_ATTACK=1; minutes)");
  env_t a, b;
  env_init(&a, NULL, name, "memberA", tasks);
  env_init(&b, &a, name, "memberB", tasks);
  create_topics(&a);
  int records = env_int("WD_REBUILD_RECORDS", 1600), keys = records / 20 > 80 ? records / 20 : 80;
  produce(&a, keys, records, 21);
  char la[400], lb[400];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  snprintf(lb, sizeof(lb), "%s/b.log", b.dir);
  pid_t pid[2] = {spawn_run(a.cfg, la, "4000", NULL), spawn_run(b.cfg, lb, "4000", NULL)};
  int ra = wait_exit(pid[0]), rb = wait_exit(pid[1]);
  cr_assert(ra == 0 && rb == 0, "the old run exited with %d, %d", ra, rb);
  json_t *before_pos = NULL, *cl_before = output(&a), *old = fold(cl_before, &before_pos);
  cr_assert_gt(json_object_size(old), 30);
  if (third) { /* the second change: ship_status leaves the shipments' sequence group too */
    const env_t *es[2] = {&a, &b};
    for (int m = 0; m < 2; m++) {
      char cfg3[400];
      snprintf(cfg3, sizeof(cfg3), "%s/widen-3.yaml", es[m]->dir);
      char *t = wd_it_read_file(es[m]->cfg_new);
      t = wd_it_replace(t, "sequence-group: carrier,ship_status\n", "sequence-group: carrier\n");
      FILE *f = fopen(cfg3, "w");
      cr_assert_not_null(f);
      fputs(t, f);
      fclose(f);
      free(t);
    }
  }
  char cfg3a[400], cfg3b[400];
  snprintf(cfg3a, sizeof(cfg3a), "%s/widen-3.yaml", a.dir);
  snprintf(cfg3b, sizeof(cfg3b), "%s/widen-3.yaml", b.dir);
  const char *cfgs[2] = {a.cfg_new, b.cfg_new}, *logs[2] = {la, lb};
  unsigned seed = (unsigned)env_int("WD_REBUILD_SEED", (int)time(NULL));
  int kills = env_int("WD_REBUILD_KILLS", 3);
  fprintf(stderr, "rebuild attack %s: seed %u, %d kills\n", name, seed, kills);
  srand(seed);
  pid[0] = spawn_run(cfgs[0], la, "60000", NULL);
  pid[1] = spawn_run(cfgs[1], lb, "60000", NULL);
  produce(&a, keys, records / 4, 22); /* input during the rebuild */
  if (getenv("WD_REBUILD_LEAVE")) {
    /* a member leaves during the rebuild (SIGTERM, back after the session timeout of 20 s: the
     * other takes its tasks over in a rebalance) and joins again (a rebalance gives them back) */
    sleep_ms(500 + rand() % 2000);
    int m = rand() % 2;
    kill(pid[m], SIGTERM);
    int rc = wait_exit(pid[m]);
    cr_assert_eq(rc, 0, "member %d exited with %d on SIGTERM during the rebuild:\n%s", m, rc, wd_it_read_file(logs[m]));
    sleep_ms(24000);
    pid[m] = spawn_run(cfgs[m], logs[m], "60000", NULL);
  }
  for (int k = 0; k < kills; k++) {
    sleep_ms(200 + rand() % 3500);
    int m = rand() % 2;
    kill(pid[m], SIGKILL);
    int rc = wait_exit(pid[m]);
    cr_assert_eq(rc, 128 + SIGKILL, "member %d exited by itself with %d before its kill:\n%s", m, rc,
                 wd_it_read_file(logs[m]));
    if (third && k == kills / 2) {
      /* the second change reaches both members now. A state with a commit left prepared by the
       * SIGKILL refuses a changed definition (C_STATE_DEFINITION: recovery first), so the killed
       * member runs once more with the first change and both are stopped by SIGTERM (in the
       * middle of the rebuild) before the second */
      pid[m] = spawn_run(cfgs[m], logs[m], "60000", NULL);
      sleep_ms(2500);
      for (int x = 0; x < 2; x++) {
        kill(pid[x], SIGTERM);
        int rx = wait_exit(pid[x]);
        cr_assert_eq(rx, 0, "member %d exited with %d on SIGTERM during the rebuild:\n%s", x, rx,
                     wd_it_read_file(logs[x]));
      }
      cfgs[0] = cfg3a;
      cfgs[1] = cfg3b;
      pid[1 - m] = spawn_run(cfgs[1 - m], logs[1 - m], "60000", NULL);
    }
    pid[m] = spawn_run(cfgs[m], logs[m], "60000", NULL);
    if (k == 0) produce(&a, keys, records / 5, 23);
  }
  /* the end: each member stopped (SIGTERM) and run again to the end of the input */
  for (int m = 0; m < 2; m++) {
    sleep_ms(1500);
    kill(pid[m], SIGTERM);
    int rc = wait_exit(pid[m]);
    cr_expect_eq(rc, 0, "member %d exited with %d on SIGTERM:\n%s", m, rc, wd_it_read_file(logs[m]));
  }
  pid[0] = spawn_run(cfgs[0], la, "8000", NULL);
  pid[1] = spawn_run(cfgs[1], lb, "8000", NULL);
  ra = wait_exit(pid[0]);
  rb = wait_exit(pid[1]);
  char *ta = wd_it_read_file(la), *tb = wd_it_read_file(lb);
  cr_assert(ra == 0 && rb == 0, "the last runs exited with %d, %d:\n--- A\n%s\n--- B\n%s", ra, rb, ta, tb);
  assert_clean_log(ta, "member A");
  assert_clean_log(tb, "member B");
  if (getenv("WD_SHOW")) fprintf(stderr, "--- A\n%s\n--- B\n%s\n", ta, tb);
  free(ta);
  free(tb);
  env_t last = a;
  snprintf(last.cfg_new, sizeof(last.cfg_new), "%s", cfgs[0]);
  json_t *cl_after = output(&a), *want = clean_table(&last);
  assert_consistent(old, before_pos, cl_after, want);
  json_decref(want);
  json_decref(cl_after);
  json_decref(old);
  json_decref(cl_before);
  json_decref(before_pos);
  env_done(&a);
  env_done(&b);
}

Test(rebuild, random_kills_of_two_members_during_the_rebuild_with_input, .timeout = 600) {
  attack("atk", "per-partition", false);
}

Test(rebuild, second_change_before_the_first_rebuild_finished, .timeout = 600) {
  attack("atk3", "per-partition", true);
}

/* A copy of cfg with `from` replaced by `to`, written as dir/name (path in out). */
static void variant(const char *cfg, const char *dir, const char *name, const char *from, const char *to, char *out,
                    size_t n) {
  snprintf(out, n, "%s/%s", dir, name);
  char *t = wd_it_read_file(cfg);
  cr_assert_not_null(strstr(t, from), "%s has no %s", cfg, from);
  t = wd_it_replace(t, from, to);
  FILE *f = fopen(out, "w");
  cr_assert_not_null(f);
  fputs(t, f);
  fclose(f);
  free(t);
}

/* After a finished rebuild under per-partition tasks, a compatible change (a nullable column
 * appended) must neither rebuild again nor emit anything: the rebuild is over. */
Test(rebuild, compatible_change_after_a_finished_rebuild_rebuilds_nothing, .timeout = 300) {
  env_t a;
  env_init(&a, NULL, "compat", "memberA", "per-partition");
  create_topics(&a);
  produce(&a, 60, 1000, 31);
  char la[400], cfg4[400];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  cr_assert_eq(wait_exit(spawn_run(a.cfg_new, la, "3000", NULL)), 0);
  json_t *pos = NULL, *cl = output(&a), *t = fold(cl, &pos);
  size_t n_before = json_array_size(cl);
  variant(a.cfg_new, a.dir, "widen-4.yaml", "    - {name: ship_version, type: BIGINT}\n",
          "    - {name: ship_version, type: BIGINT}\n    - {name: note, type: STRING}\n", cfg4, sizeof(cfg4));
  FILE *f = fopen(la, "w");
  fclose(f);
  cr_assert_eq(wait_exit(spawn_run(cfg4, la, "3000", NULL)), 0);
  char *text = wd_it_read_file(la);
  cr_expect(!strstr(text, "[rebuild] task"), "a compatible change after a finished rebuild rebuilt tasks again:\n%s",
            text);
  free(text);
  json_t *cl2 = output(&a);
  cr_expect_eq(json_array_size(cl2), n_before, "the compatible change emitted %zu records",
               json_array_size(cl2) - n_before);
  json_decref(cl2);
  json_decref(cl);
  json_decref(t);
  json_decref(pos);
  env_done(&a);
}

/* A second incompatible change while the first rebuild is unfinished (killed at a commit of its
 * rebuild from the sources): the rows downstream are still the first definition's, so the second
 * rebuild must take those as its old rows: the output follows the table and ends at a clean
 * replay of the last definition. */
static void second_change_unfinished(const char *tasks) {
  env_t a;
  env_init(&a, NULL, strcmp(tasks, "single") ? "twicepp" : "twicest", "memberA", tasks);
  create_topics(&a);
  produce(&a, 60, 1200, 41);
  char la[400], cfg3[320];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  json_t *pos = NULL, *cl = output(&a), *old = fold(cl, &pos);
  int rc = wait_exit(spawn_run(a.cfg_new, la, "3000", "after-finalize:2"));
  cr_assert_eq(rc, 128 + SIGKILL, "the first rebuild was not killed (%d)", rc);
  /* the second change: ship_status leaves the shipments' sequence group too */
  variant(a.cfg_new, a.dir, "widen-3.yaml", "sequence-group: carrier,ship_status\n", "sequence-group: carrier\n", cfg3,
          sizeof(cfg3));
  rc = wait_exit(spawn_run(cfg3, la, "3000", NULL));
  char *t = wd_it_read_file(la);
  cr_assert_eq(rc, 0, "the second rebuild exited with %d:\n%s", rc, t);
  assert_clean_log(t, "widen");
  if (getenv("WD_SHOW")) fprintf(stderr, "%s", t);
  free(t);
  env_t last = a;
  snprintf(last.cfg_new, sizeof(last.cfg_new), "%s", cfg3);
  json_t *after = output(&a), *want = clean_table(&last);
  assert_consistent(old, pos, after, want);
  json_t *now = rows(cfg3, a.state);
  assert_same(now, want, "the state after the second rebuild vs the clean replay");
  json_decref(now);
  json_decref(want);
  json_decref(after);
  json_decref(old);
  json_decref(cl);
  json_decref(pos);
  env_done(&a);
}

Test(rebuild, second_change_while_a_single_task_rebuild_is_unfinished, .timeout = 300) {
  second_change_unfinished("single");
}

Test(rebuild, second_change_while_a_per_partition_rebuild_is_unfinished, .timeout = 300) {
  second_change_unfinished("per-partition");
}

/* Per-partition tasks, two changes of the stored rows' columns in a row: the first (currency
 * dropped) killed before its switches, the second (shipped_at leaves the sequence group too) over
 * it. The unswitched tasks' old rows in the state changelog topic are the first definition's, and
 * must be read with it. */
Test(rebuild, second_change_of_the_columns_while_a_per_partition_rebuild_is_unfinished, .timeout = 300) {
  env_t a;
  env_init(&a, NULL, "twicecol", "memberA", "per-partition");
  create_topics(&a);
  produce(&a, 60, 1200, 43);
  char la[400], c2a[320], c2b[320], c2[320], c3[320];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  json_t *pos = NULL, *cl = output(&a), *old = fold(cl, &pos);
  /* the first change: drops currency (rebuild on) */
  variant(a.cfg, a.dir, "c2a.yaml", "    - {name: currency, type: STRING}\n", "", c2a, sizeof(c2a));
  variant(c2a, a.dir, "c2b.yaml", " currency: ,", "", c2b, sizeof(c2b));
  variant(c2b, a.dir, "c2.yaml", "customer,amount,currency,ordered_at", "customer,amount,ordered_at", c2, sizeof(c2));
  variant(c2, a.dir, "c2.yaml", "pipeline:\n", "  on-incompatible-change: rebuild\npipeline:\n", c2, sizeof(c2));
  /* killed at its first switch (committed, not finalized), then, recovered (that task's mark and
   * new rows in the state changelog topic), at the next one (its transaction open): one task
   * switched, the others not */
  const char *faults[] = {"rebuild-after-commit", "rebuild-during-switch"};
  for (int i = 0; i < 2; i++) {
    int rc = wait_exit(spawn_run(c2, la, "3000", faults[i]));
    cr_assert_eq(rc, 128 + SIGKILL, "the first rebuild was not killed at %s (%d)", faults[i], rc);
  }
  variant(c2, a.dir, "c3.yaml", "sequence-group: carrier,ship_status,shipped_at\n",
          "sequence-group: carrier,ship_status\n", c3, sizeof(c3));
  int rc = wait_exit(spawn_run(c3, la, "3000", NULL));
  char *t = wd_it_read_file(la);
  cr_assert_eq(rc, 0, "the second rebuild exited with %d:\n%s", rc, t);
  cr_expect(strstr(t, "its old rows are an earlier rebuild's"), "no task was switched by the first rebuild:\n%s", t);
  assert_clean_log(t, "widen");
  if (getenv("WD_SHOW")) fprintf(stderr, "%s", t);
  free(t);
  env_t last = a;
  snprintf(last.cfg_new, sizeof(last.cfg_new), "%s", c3);
  /* the old table seen with the last columns: currency gone */
  const char *k;
  json_t *v;
  json_object_foreach(old, k, v) json_object_del(v, "currency");
  json_t *after = output(&a), *want = clean_table(&last);
  assert_consistent(old, pos, after, want);
  json_decref(want);
  json_decref(after);
  json_decref(old);
  json_decref(cl);
  json_decref(pos);
  env_done(&a);
}

/* SIGTERM at moments of the start of a rebuild (the definition check and its arming, the
 * pipeline's clients, the restore): a clean stop every time (rc 0, or 3 when a commit was open;
 * the default action killed the process before its handlers were installed: 143), and the
 * rebuild, finished by a last run, emits the difference once. */
Test(rebuild, sigterm_during_the_start_of_a_rebuild_stops_cleanly, .timeout = 300) {
  env_t a;
  env_init(&a, NULL, "term", "memberA", "per-partition");
  create_topics(&a);
  produce(&a, 60, 1200, 51);
  char la[400];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  json_t *pos = NULL, *cl = output(&a), *old = fold(cl, &pos);
  const int delays[] = {150, 400, 900, 1500};
  for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
    pid_t pid = spawn_run(a.cfg_new, la, "3000", NULL);
    sleep_ms(delays[i]);
    kill(pid, SIGTERM);
    int rc = wait_exit(pid);
    char *t = wd_it_read_file(la);
    cr_assert(rc == 0 || rc == 3, "SIGTERM %d ms after the start: rc %d:\n%s", delays[i], rc, t);
    free(t);
  }
  cr_assert_eq(wait_exit(spawn_run(a.cfg_new, la, "3000", NULL)), 0);
  char *t = wd_it_read_file(la);
  assert_clean_log(t, "widen");
  free(t);
  json_t *after = output(&a), *want = clean_table(&a);
  assert_difference(old, pos, after, want);
  json_decref(want);
  json_decref(after);
  json_decref(old);
  json_decref(cl);
  json_decref(pos);
  env_done(&a);
}

/* A second incompatible change while the first rebuild has switched no task yet (killed in its first
 * switch): the tasks' rows in the state changelog topic are still of the definition before the
 * first change; the second rebuild reads them with that one (kept as its old definition), never
 * with the first change's: the output follows the table and ends at a clean replay of the last
 * definition. (It was refused with E_REBUILD before the earlier definitions were kept.) */
Test(rebuild, a_second_change_before_the_first_switched_goes_on, .timeout = 200) {
  env_t a;
  env_init(&a, NULL, "chain", "memberA", "per-partition");
  create_topics(&a);
  produce(&a, 40, 600, 5);
  char la[400], cfg3[320];
  snprintf(la, sizeof(la), "%s/a.log", a.dir);
  snprintf(cfg3, sizeof(cfg3), "%s/widen-3.yaml", a.dir);
  cr_assert_eq(wait_exit(spawn_run(a.cfg, la, "3000", NULL)), 0);
  json_t *pos = NULL, *cl = output(&a), *old = fold(cl, &pos);
  cr_assert_eq(wait_exit(spawn_run(a.cfg_new, la, "3000", "rebuild-during-switch")), 128 + SIGKILL);
  int rc;
  free(sh(&rc,
          "sed -e 's/pay_version.sequence-group: paid_amount,pay_method,pay_status,paid_at/pay_version.sequence-group: "
          "paid_amount,pay_method,pay_status/' '%s' > '%s'",
          a.cfg_new, cfg3));
  cr_assert_eq(rc, 0);
  rc = wait_exit(spawn_run(cfg3, la, "3000", NULL));
  char *t = wd_it_read_file(la);
  cr_assert_eq(rc, 0, "the second rebuild exited with %d:\n%s", rc, t);
  assert_clean_log(t, "widen");
  free(t);
  env_t last = a;
  snprintf(last.cfg_new, sizeof(last.cfg_new), "%s", cfg3);
  json_t *after = output(&a), *want = clean_table(&last);
  assert_consistent(old, pos, after, want);
  json_decref(want);
  json_decref(after);
  json_decref(old);
  json_decref(cl);
  json_decref(pos);
  env_done(&a);
}
