/*
 * tests/integration/test_ops.c — on the real broker (WIDEN_TEST_BROKERS) with the widen
 * binary (WIDEN_BIN): the Prometheus endpoint scraped with curl and `widen status` while
 * `widen run` runs; `widen changes` over commit ranges against a replay of the changelog topic;
 * the automatic rebuild after a changed sequence group, whose emitted difference applied to the
 * old table gives the rebuilt one (and a fresh replay's).
 */
#include <criterion/criterion.h>
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
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "tests/support/integration.h"

extern char **environ;

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
  char state[320];
  int port;
} env_t;

static char *slurp(FILE *f) {
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

/* Runs a shell command, returns its stdout (malloc'd) and sets *rc to its exit status. */
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

/* The demo pipeline (three streams, a sequence group each) with a changelog-json sink, small
 * batches, and extra YAML appended (sections of their own). */
static void env_init(env_t *e, const char *name, const char *extra_state, const char *ship_group) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-ops-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "ops%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  e->port = 20000 + (int)(getpid() % 20000);
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fprintf(
      f,
      "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: %sgroup\n  properties:\n    session.timeout.ms: 6000\n"
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
      "    changelog-producer: lookup\n"
      "sources:\n"
      "  - {name: orders, topic: %sorders, options: {timestamp-unit: millis}, columns: {order_id: , customer: , "
      "amount: , currency: , ordered_at: order_ts,"
      " order_version: }}\n"
      "  - {name: payments, topic: %spayments, options: {timestamp-unit: millis}, columns: {order_id: , paid_amount: "
      "pay_amount, pay_method: ,"
      " pay_status: , paid_at: pay_ts, pay_version: }}\n"
      "  - {name: shipments, topic: %sshipments, options: {timestamp-unit: millis}, columns: {order_id: , carrier: , "
      "ship_status: ,"
      " shipped_at: ship_ts, ship_version: }}\n"
      "sink:\n  topic: %sorders_wide\n  format: changelog-json\n"
      "state:\n  dir: %s\n%s"
      "pipeline:\n  batch-size: 40\n  batch-timeout-ms: 50\n  commit-max-records: 40\n"
      "metrics:\n  listen: 127.0.0.1:%d\n",
      e->prefix, ship_group, e->prefix, e->prefix, e->prefix, e->prefix, e->state, extra_state, e->port);
  fclose(f);
}

static void env_done(env_t *e) {
  int rc;
  free(sh(&rc, "rm -rf '%s'", e->dir));
}

static void produce(const env_t *e, int keys, int records, int seed) {
  int rc;
  char *out = sh(&rc, "'%s' produce --generate --topic-prefix %s --keys %d --records %d --seed %d 2>&1",
                 wd_it_widen_bin(), e->prefix, keys, records, seed);
  cr_assert_eq(rc, 0, "produce failed: %s", out);
  free(out);
}

static pid_t spawn_run(const env_t *e, const char *idle_ms) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", e->cfg, "--quiet", "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  return pid;
}

static int wait_exit(pid_t pid) {
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void run_to_idle(const env_t *e) {
  int rc = wait_exit(spawn_run(e, "2500"));
  cr_assert_eq(rc, 0, "widen run exited with %d", rc);
}

/* The sum of every sample of metric `name` (all label sets) in an exposition; -1 when absent. */
static double metric_sum(const char *text, const char *name, const char *label_has) {
  double sum = -1;
  size_t nl = strlen(name);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, name, nl) || (l[nl] != ' ' && l[nl] != '{')) continue;
    const char *end = strchr(l, '\n');
    const char *sp = l + nl;
    if (*sp == '{') {
      const char *close = strchr(sp, '}');
      if (label_has && !(close && memmem(sp, (size_t)(close - sp), label_has, strlen(label_has)))) continue;
      sp = close + 1;
    } else if (label_has) {
      continue;
    }
    (void)end;
    sum = (sum < 0 ? 0 : sum) + strtod(sp, NULL);
  }
  return sum;
}

/* The commit history as printed by `widen status --no-kafka`: a JSON array of the records. */
static json_t *history(const env_t *e) {
  int rc;
  char *out = sh(&rc, "'%s' status --config '%s' --no-kafka --last 100000 2>/dev/null", wd_it_widen_bin(), e->cfg);
  cr_assert_eq(rc, 0, "widen status failed: %s", out);
  json_t *a = json_array();
  for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
    nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (*l == '{') json_array_append_new(a, json_loads(l, 0, NULL));
  }
  free(out);
  return a;
}

/* Every record of the changelog topic: {"partition","offset","op","row"} in partition/offset order. */
static json_t *changelog(const env_t *e) {
  char topic[200];
  snprintf(topic, sizeof(topic), "%sorders_wide", e->prefix);
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

/* Whether changelog record r lies in one of commit c's output ranges. */
static bool in_commit(const json_t *r, const json_t *c) {
  size_t i;
  json_t *o;
  json_int_t p = json_integer_value(json_object_get(r, "partition")),
             off = json_integer_value(json_object_get(r, "offset"));
  json_array_foreach(json_object_get(c, "out"), i, o) {
    if (json_integer_value(json_object_get(o, "partition")) == p &&
        off >= json_integer_value(json_object_get(o, "from")) && off < json_integer_value(json_object_get(o, "to")))
      return true;
  }
  return false;
}

static void key_of(const json_t *row, char *k, size_t n) {
  snprintf(k, n, "%lld", (long long)json_integer_value(json_object_get(row, "order_id")));
}

/* Applies the changelog records of the commits numbered [lo, hi] to table t (key -> row). */
static void apply(json_t *t, const json_t *cl, const json_t *hist, json_int_t lo, json_int_t hi) {
  size_t i, k;
  json_t *r, *c;
  json_array_foreach(cl, i, r) {
    bool take = false;
    json_array_foreach(hist, k, c) {
      json_int_t n = json_integer_value(json_object_get(c, "number"));
      if (n >= lo && n <= hi && in_commit(r, c)) take = true;
    }
    if (!take) continue;
    char key[32];
    key_of(json_object_get(r, "row"), key, sizeof(key));
    const char *op = json_string_value(json_object_get(r, "op"));
    if (!strcmp(op, "+I") || !strcmp(op, "+U")) json_object_set(t, key, json_object_get(r, "row"));
    if (!strcmp(op, "-D")) json_object_del(t, key);
  }
}

static int line_cmp(const void *a, const void *b) {
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  json_int_t p = json_integer_value(json_object_get(json_object_get(x, "row"), "order_id"));
  json_int_t q = json_integer_value(json_object_get(json_object_get(y, "row"), "order_id"));
  if (p != q) return p < q ? -1 : 1;
  return strcmp(json_string_value(json_object_get(x, "op")), json_string_value(json_object_get(y, "op"))) < 0 ? 1 : -1;
}

/* Sorts an array of {"op","row"} lines by key, -U before +U. */
static json_t *sorted(json_t *a) {
  size_t n = json_array_size(a);
  json_t **v = calloc(n + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(a, i));
  qsort(v, n, sizeof(*v), line_cmp);
  json_t *o = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(o, v[i]);
  free(v);
  json_decref(a);
  return o;
}

/* The net change from table a to table b as {"op","row"} lines. */
static json_t *net(json_t *a, json_t *b) {
  json_t *out = json_array();
  const char *k;
  json_t *v;
  json_object_foreach(a, k, v) {
    json_t *w = json_object_get(b, k);
    if (!w) json_array_append_new(out, json_pack("{s:s,s:O}", "op", "-D", "row", v));
    else if (!json_equal(v, w)) {
      json_array_append_new(out, json_pack("{s:s,s:O}", "op", "-U", "row", v));
      json_array_append_new(out, json_pack("{s:s,s:O}", "op", "+U", "row", w));
    }
  }
  json_object_foreach(b, k, v) if (!json_object_get(a, k))
      json_array_append_new(out, json_pack("{s:s,s:O}", "op", "+I", "row", v));
  return sorted(out);
}

/* `widen changes` output as sorted {"op","row"} lines. */
static json_t *changes(const env_t *e, const char *from, const char *to) {
  int rc;
  char *out = sh(&rc, "'%s' changes --config '%s' --from %s --to %s 2>/dev/null", wd_it_widen_bin(), e->cfg, from, to);
  cr_assert_eq(rc, 0, "widen changes --from %s --to %s failed", from, to);
  json_t *a = json_array();
  for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
    nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (!*l) continue;
    json_t *j = json_loads(l, 0, NULL);
    cr_assert_not_null(j, "bad line %s", l);
    json_array_append_new(a, json_pack("{s:O,s:O}", "op", json_object_get(j, "op"), "row", json_object_get(j, "row")));
    json_decref(j);
  }
  free(out);
  return sorted(a);
}

/* `widen rows` as key -> row. */
static json_t *rows(const env_t *e, const char *dir) {
  int rc;
  char *out = sh(&rc, "'%s' rows --config '%s' --state-dir '%s' 2>/dev/null", wd_it_widen_bin(), e->cfg, dir);
  cr_assert_eq(rc, 0, "widen rows failed");
  json_t *t = json_object();
  for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
    nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (!*l) continue;
    json_t *j = json_loads(l, 0, NULL);
    char key[32];
    key_of(j, key, sizeof(key));
    json_object_set_new(t, key, j);
  }
  free(out);
  return t;
}

static void assert_same(json_t *got, json_t *want, const char *what) {
  if (!json_equal(got, want)) {
    char *x = json_dumps(got, JSON_COMPACT), *y = json_dumps(want, JSON_COMPACT);
    cr_assert_fail("%s differ:\n got  %.1200s\n want %.1200s", what, x, y);
  }
}

Test(ops, metrics_scrape_and_status_during_run, .timeout = 240) {
  env_t e;
  env_init(&e, "metrics", "", "carrier,ship_status,shipped_at");
  produce(&e, 40, 600, 11);
  pid_t pid = spawn_run(&e, "60000");
  char *text = NULL;
  int rc = 1;
  for (int i = 0; i < 120; i++) { /* until every record went through */
    free(text);
    text = sh(&rc, "curl -sf http://127.0.0.1:%d/metrics", e.port);
    if (rc == 0 && metric_sum(text, "widen_records_in_total", NULL) == 600 &&
        metric_sum(text, "widen_consumer_lag", NULL) == 0)
      break;
    usleep(500 * 1000);
  }
  cr_assert_eq(rc, 0, "curl could not scrape http://127.0.0.1:%d/metrics", e.port);
  cr_assert(strstr(text, "# TYPE widen_records_in_total counter"), "%s", text);
  cr_expect_eq(metric_sum(text, "widen_records_in_total", NULL), 600);
  cr_expect_eq(metric_sum(text, "widen_records_in_total", "source=\"orders\"") +
                   metric_sum(text, "widen_records_in_total", "source=\"payments\"") +
                   metric_sum(text, "widen_records_in_total", "source=\"shipments\""),
               600);
  cr_expect_gt(metric_sum(text, "widen_changes_out_total", "row_kind=\"+I\""), 0);
  cr_expect_eq(metric_sum(text, "widen_changes_out_total", "row_kind=\"-U\""),
               metric_sum(text, "widen_changes_out_total", "row_kind=\"+U\""));
  cr_expect_gt(metric_sum(text, "widen_records_ignored_older_total", "sequence_group=\"ship_version\""), 0,
               "the generator sends late shipments");
  cr_expect_eq(metric_sum(text, "widen_consumer_lag", NULL), 0);
  cr_expect_gt(metric_sum(text, "widen_consumer_lag", "partition=\"0\""), -1);
  double commits = metric_sum(text, "widen_commits_total", NULL);
  cr_expect_gt(commits, 0);
  cr_expect_eq(metric_sum(text, "widen_commit_duration_seconds_count", NULL), commits);
  cr_expect_eq(metric_sum(text, "widen_commit_duration_seconds_bucket", "le=\"+Inf\""), commits);
  cr_expect_gt(metric_sum(text, "widen_state_size_bytes", NULL), 0);
  cr_expect_gt(metric_sum(text, "widen_state_disk_free_bytes", NULL), 0);
  cr_expect_gt(metric_sum(text, "widen_state_cache_hits_total", NULL) +
                   metric_sum(text, "widen_state_cache_misses_total", NULL),
               0);
  cr_expect_eq(metric_sum(text, "widen_restore_progress_ratio", NULL), 1);
  /* a wrong path is a 404 */
  free(sh(&rc, "curl -sf -o /dev/null http://127.0.0.1:%d/other", e.port));
  cr_expect_neq(rc, 0);
  free(text);

  /* widen status while widen run holds the state: the history is written with each commit (also
   * with the deferred state flush, whose rows trail it), read until it has every commit */
  json_int_t in = 0, n = 0;
  int64_t deadline = wd_mono_ms() + 30000;
  for (;;) {
    char *st = sh(&rc, "'%s' status --config '%s' 2>&1", wd_it_widen_bin(), e.cfg);
    cr_assert_eq(rc, 0, "widen status during the run failed: %s", st);
    cr_expect(strstr(st, "lag: 0 (group"), "%s", st);
    /* fewer commits than the default --last 20, which was not given: no note about --last */
    cr_expect(!strstr(st, "--last"), "a note about --last that was not given: %s", st);
    json_int_t last = 0;
    in = n = 0;
    for (char *l = st, *nl; l && *l; l = nl ? nl + 1 : NULL) {
      nl = strchr(l, '\n');
      if (nl) *nl = 0;
      if (*l != '{') continue;
      json_t *j = json_loads(l, 0, NULL);
      cr_assert_not_null(j, "%s", l);
      cr_expect_str_eq(json_string_value(json_object_get(j, "mode")), "incremental");
      cr_expect_eq(json_integer_value(json_object_get(j, "number")), last + 1, "numbers follow each other");
      last = json_integer_value(json_object_get(j, "number"));
      in += json_integer_value(json_object_get(j, "records_in"));
      cr_expect_gt(json_array_size(json_object_get(j, "in")), 0);
      n++;
      json_decref(j);
    }
    free(st);
    if (in == 600 || wd_mono_ms() >= deadline) break;
    usleep(500 * 1000);
  }
  cr_expect_eq(in, 600, "the history's records_in add up to the input");
  cr_expect_eq((double)n, commits, "one history record per commit");
  kill(pid, SIGTERM);
  cr_expect_eq(wait_exit(pid), 0);
  env_done(&e);
}

Test(ops, changes_over_ranges_equal_changelog_replay, .timeout = 240) {
  env_t e;
  env_init(&e, "changes", "", "carrier,ship_status,shipped_at");
  produce(&e, 30, 500, 5);
  run_to_idle(&e);
  json_t *hist = history(&e), *cl = changelog(&e);
  json_int_t n = (json_int_t)json_array_size(hist);
  cr_assert_gt(n, 4, "want several commits, got %lld", (long long)n);
  /* the history's output ranges cover the changelog exactly */
  size_t i, k;
  json_t *r, *c;
  json_array_foreach(cl, i, r) {
    int owners = 0;
    json_array_foreach(hist, k, c) owners += in_commit(r, c);
    cr_assert_eq(owners, 1, "changelog record %zu is in %d commits' ranges", i, owners);
  }
  json_int_t ranges[][2] = {{1, n}, {1, 1}, {2, 4}, {n / 2, n}, {n, n}, {3, 3}, {n / 3, 2 * n / 3}};
  for (size_t q = 0; q < sizeof(ranges) / sizeof(*ranges); q++) {
    json_int_t a = ranges[q][0], b = ranges[q][1];
    json_t *before = json_object(), *after = json_object();
    apply(before, cl, hist, 1, a - 1);
    apply(after, cl, hist, 1, b);
    json_t *want = net(before, after);
    char fa[32], fb[32];
    snprintf(fa, sizeof(fa), "%lld", (long long)a);
    snprintf(fb, sizeof(fb), "%lld", (long long)b);
    json_t *got = changes(&e, fa, fb);
    char what[64];
    snprintf(what, sizeof(what), "changes %lld..%lld", (long long)a, (long long)b);
    assert_same(got, want, what);
    if (a == 1 && b == n) cr_expect_eq(json_array_size(got), json_object_size(after), "all +I from an empty table");
    json_decref(got);
    json_decref(want);
    json_decref(before);
    json_decref(after);
  }
  /* A after B is a usage error, a range past the history C_HISTORY_RANGE (never
   * nothing with rc 0, which reads as "no change") */
  int rc;
  char *msg = sh(&rc, "'%s' changes --config '%s' --from 4 --to 2 2>&1", wd_it_widen_bin(), e.cfg);
  cr_expect_eq(rc, 1, "--from 4 --to 2: rc %d, %s", rc, msg);
  cr_expect(strstr(msg, "--from 4 is after --to 2") != NULL, "%s", msg);
  free(msg);
  msg = sh(&rc, "'%s' changes --config '%s' --from %lld --to %lld 2>&1", wd_it_widen_bin(), e.cfg, (long long)n + 1,
           (long long)n + 3);
  cr_expect_eq(rc, 1, "past the history: rc %d, %s", rc, msg);
  cr_expect(strstr(msg, "C_HISTORY_RANGE") && strstr(msg, "past the history"), "%s", msg);
  free(msg);
  /* timestamps: everything up to now is the whole table */
  char now[32];
  snprintf(now, sizeof(now), "%lld", (long long)time(NULL) * 1000 + 1000);
  char nn[32];
  snprintf(nn, sizeof(nn), "%lld", (long long)n);
  json_t *all_t = changes(&e, "0", now), *all_n = changes(&e, "1", "1000000"), *all = changes(&e, "1", nn);
  cr_expect_gt(json_array_size(all_t), 0);
  assert_same(all_t, all, "changes over all commits by time");
  assert_same(all_n, all, "changes up to a commit after the last");
  json_decref(all);
  json_decref(all_t);
  json_decref(all_n);
  json_decref(hist);
  json_decref(cl);
  env_done(&e);
}

/* A point in time before the oldest commit kept is refused as commit numbers before it are
 * (C_HISTORY_RANGE, exit 1), not answered from the history's start with exit 0; from the oldest
 * commit's own time on the answer is given. A history that still holds commit 1 answers any
 * earlier time (nothing is missing). */
Test(ops, changes_by_time_before_the_history_is_refused, .timeout = 240) {
  env_t e;
  env_init(&e, "chtime", "  history-size: 3\n", "carrier,ship_status,shipped_at");
  produce(&e, 30, 400, 6);
  run_to_idle(&e);
  json_t *hist = history(&e);
  cr_assert_eq(json_array_size(hist), 3, "history-size 3 keeps 3 commits, got %zu", json_array_size(hist));
  json_t *oldest = json_array_get(hist, 0);
  json_int_t first = json_integer_value(json_object_get(oldest, "number"));
  json_int_t t0 = json_integer_value(json_object_get(oldest, "time_ms"));
  cr_assert_gt(first, 1, "older commits were dropped");
  int rc;
  char now[32], from[32];
  snprintf(now, sizeof(now), "%lld", (long long)time(NULL) * 1000 + 1000);
  char *msg = sh(&rc, "'%s' changes --config '%s' --from 2020-01-01 --to %s 2>&1", wd_it_widen_bin(), e.cfg, now);
  cr_expect_eq(rc, 1, "--from 2020-01-01 before the history: rc %d, %s", rc, msg);
  cr_expect(strstr(msg, "C_HISTORY_RANGE") && strstr(msg, "is before the history"), "%s", msg);
  free(msg);
  snprintf(from, sizeof(from), "%lld", (long long)t0 - 1);
  msg = sh(&rc, "'%s' changes --config '%s' --from %s --to %s 2>&1", wd_it_widen_bin(), e.cfg, from, now);
  cr_expect_eq(rc, 1, "--from one ms before the oldest commit: rc %d, %s", rc, msg);
  free(msg);
  snprintf(from, sizeof(from), "%lld", (long long)t0);
  json_t *by_time = changes(&e, from, now);
  char fa[32], fb[32];
  snprintf(fa, sizeof(fa), "%lld", (long long)first);
  snprintf(fb, sizeof(fb), "%lld", (long long)json_integer_value(json_object_get(json_array_get(hist, 2), "number")));
  json_t *by_number = changes(&e, fa, fb);
  assert_same(by_time, by_number, "changes from the oldest commit's time = over the commits kept");
  /* no broker where the output topic is read back: an answer within the metadata bound (10 s
   * and a connect check), naming the topic and asking for the broker, not a minute's retries */
  time_t t_start = time(NULL);
  msg = sh(&rc, "WIDEN_BROKERS=127.0.0.1:1 '%s' changes --config '%s' --from %s --to %s 2>&1", wd_it_widen_bin(), e.cfg,
           fa, fb);
  double took = difftime(time(NULL), t_start);
  cr_expect_eq(rc, 1, "no broker: rc %d, %s", rc, msg);
  cr_expect(strstr(msg, "E_KAFKA_METADATA") && strstr(msg, "is the broker up?") && strstr(msg, "127.0.0.1:1"), "%s",
            msg);
  cr_expect_lt(took, 40.0, "no broker: widen changes gave up after %.0f s (the retries for a pipeline are 60 s)", took);
  free(msg);
  json_decref(by_time);
  json_decref(by_number);
  json_decref(hist);
  env_done(&e);
}

Test(ops, rebuild_after_changed_sequence_group_emits_the_difference, .timeout = 280) {
  env_t e;
  env_init(&e, "rebuild", "", "carrier,ship_status,shipped_at");
  produce(&e, 30, 600, 9);
  run_to_idle(&e);
  json_t *old_rows = rows(&e, e.state);
  cr_assert_gt(json_object_size(old_rows), 0);
  json_t *cl_before = changelog(&e);

  /* shipped_at leaves the shipments' sequence group: the stored rows depend on it */
  env_t e2 = e;
  snprintf(e2.cfg, sizeof(e2.cfg), "%s/widen2.yaml", e.dir);
  int rc;
  free(sh(&rc,
          "sed -e 's/ship_version.sequence-group: carrier,ship_status,shipped_at/ship_version.sequence-group: "
          "carrier,ship_status/' '%s' > '%s'",
          e.cfg, e2.cfg));
  /* fail (the default) names the item */
  char *err = sh(&rc, "'%s' run --config '%s' --quiet --max-idle-ms 500 2>&1", wd_it_widen_bin(), e2.cfg);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(err, "C_STATE_DEFINITION") && strstr(err, "table option fields.ship_version.sequence-group"), "%s",
            err);
  free(err);
  /* a compatible change alone (the status interval) goes on */
  env_t e3 = e;
  snprintf(e3.cfg, sizeof(e3.cfg), "%s/widen3.yaml", e.dir);
  free(sh(&rc, "sed -e 's/  batch-timeout-ms: 50/  batch-timeout-ms: 50\\n  status-interval-s: 9/' '%s' > '%s'", e.cfg,
          e3.cfg));
  err = sh(&rc, "'%s' run --config '%s' --quiet --max-idle-ms 500 2>&1", wd_it_widen_bin(), e3.cfg);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "compatible definition change: pipeline.status-interval-s: 5 -> 9"), "%s", err);
  free(err);
  /* rebuild */
  free(sh(&rc, "sed -i -e 's#^state:#state:\\n  on-incompatible-change: rebuild#' '%s'", e2.cfg));
  free(sh(&rc, "sed -i -e 's/  batch-timeout-ms: 50/  batch-timeout-ms: 50\\n  status-interval-s: 1/' '%s'", e2.cfg));
  err = sh(&rc, "'%s' run --config '%s' --max-idle-ms 3500 2>&1", wd_it_widen_bin(), e2.cfg);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "emitted the difference"), "%s", err);
  /* once the task logged RESTORING -> RUNNING, no status line says it is restoring */
  const char *running = strstr(err, "RESTORING -> RUNNING");
  cr_assert_not_null(running, "%s", err);
  int lines_after = 0;
  for (const char *l = strstr(running, "widen: in "); l; l = strstr(l + 1, "widen: in ")) {
    const char *eol = strchr(l, '\n');
    size_t len = eol ? (size_t)(eol - l) : strlen(l);
    lines_after++;
    cr_expect(strstr(l, "| restoring") == NULL || (eol && strstr(l, "| restoring") > eol),
              "a status line after RESTORING -> RUNNING: %.*s", (int)len, l);
  }
  cr_expect_gt(lines_after, 0, "status lines after the rebuild: %s", err);
  free(err);
  json_t *new_rows = rows(&e2, e.state);
  /* a fresh replay with the new definition gives the same table */
  char fresh[400];
  snprintf(fresh, sizeof(fresh), "%s/fresh", e.dir);
  free(sh(&rc, "'%s' replay --config '%s' --from earliest --state-dir '%s' --no-output --quiet 2>/dev/null",
          wd_it_widen_bin(), e2.cfg, fresh));
  cr_assert_eq(rc, 0);
  json_t *fresh_rows = rows(&e2, fresh);
  assert_same(new_rows, fresh_rows, "rebuilt state vs fresh replay");
  cr_expect(!json_equal(new_rows, old_rows), "the changed sequence group changes some rows");
  /* the output after the old changelog is the difference only; applied to the old table it gives
   * the rebuilt one */
  json_t *cl_after = changelog(&e), *table = json_deep_copy(old_rows);
  size_t i;
  json_t *r;
  size_t emitted = 0;
  json_array_foreach(cl_after, i, r) {
    bool old = false;
    size_t k;
    json_t *o;
    json_array_foreach(cl_before, k, o) old |=
        json_equal(json_object_get(o, "partition"), json_object_get(r, "partition")) &&
        json_equal(json_object_get(o, "offset"), json_object_get(r, "offset"));
    if (old) continue;
    emitted++;
    char key[32];
    key_of(json_object_get(r, "row"), key, sizeof(key));
    const char *op = json_string_value(json_object_get(r, "op"));
    if (!strcmp(op, "+I") || !strcmp(op, "+U")) json_object_set(table, key, json_object_get(r, "row"));
    if (!strcmp(op, "-D")) json_object_del(table, key);
  }
  assert_same(table, new_rows, "old table + emitted difference vs rebuilt table");
  json_t *want = net(old_rows, new_rows);
  cr_expect_eq(emitted, json_array_size(want), "only the difference is emitted (%zu records)", emitted);
  /* the history shows the rebuild, and `changes` over it is that difference */
  json_t *hist = history(&e2);
  json_t *lastc = json_array_get(hist, json_array_size(hist) - 1);
  cr_expect_str_eq(json_string_value(json_object_get(lastc, "mode")), "rebuild");
  char num[32];
  snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(json_object_get(lastc, "number")));
  json_t *got = changes(&e2, num, num);
  assert_same(got, want, "changes over the rebuild commit");
  json_decref(got);
  json_decref(want);
  json_decref(hist);
  json_decref(table);
  json_decref(cl_after);
  json_decref(fresh_rows);
  json_decref(new_rows);
  json_decref(cl_before);
  json_decref(old_rows);
  env_done(&e);
}

/* `widen replay --from TIMESTAMP` counts as "in" only the records at or after the
 * timestamp, and the older ones as skipped (it said 5015 in where 15 were after it). */
Test(ops, replay_from_timestamp_counts_only_later_records_in, .timeout = 180) {
  env_t e;
  env_init(&e, "replayfrom", "", "carrier,ship_status,shipped_at");
  produce(&e, 20, 300, 3);
  usleep(1500 * 1000); /* the producer's CreateTime of the first 300 is before t */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long long t = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  usleep(500 * 1000);
  produce(&e, 20, 40, 4);
  char fresh[400];
  snprintf(fresh, sizeof(fresh), "%s/fresh", e.dir);
  int rc;
  char *out = sh(&rc, "'%s' replay --config '%s' --from %lld --state-dir '%s' --quiet 2>&1", wd_it_widen_bin(), e.cfg,
                 t, fresh);
  cr_assert_eq(rc, 0, "%s", out);
  unsigned long long in = 0, skipped = 0;
  const char *s = strstr(out, "widen: summary: ");
  cr_assert_not_null(s, "%s", out);
  cr_assert_eq(sscanf(s, "widen: summary: %llu Kafka records in", &in), 1, "%s", s);
  const char *k = strstr(s, " records older than --from skipped");
  cr_assert_not_null(k, "%s", s);
  while (k > s && k[-1] >= '0' && k[-1] <= '9') k--;
  skipped = strtoull(k, NULL, 10);
  fprintf(stderr, "replay --from: %llu in, %llu skipped\n", in, skipped);
  cr_expect_eq(in, 40, "records in: %llu (want the 40 after the timestamp)\n%s", in, s);
  cr_expect_eq(skipped, 300, "records skipped: %llu\n%s", skipped, s);
  free(out);
  env_done(&e);
}

/* `widen rows` reads the state of a running widen (a secondary instance, as
 * status does) and gives the rows it has after it stops; `widen status` prints durations rounded
 * (one decimal at most); `widen produce` logs at most 5 null-key lines, says that the rest are
 * only counted, and its total is the number of null-keyed records the topic holds. */
Test(ops, rows_while_running_status_durations_and_produce_null_keys, .timeout = 240) {
  env_t e;
  env_init(&e, "rowsrun", "", "carrier,ship_status,shipped_at");
  produce(&e, 30, 300, 9);
  pid_t pid = spawn_run(&e, "60000");
  int rc = 1;
  char *during = NULL, *status = NULL;
  for (int i = 0; i < 240; i++) {
    /* until every record went through (the history's records_in) and its rows are written (the
     * deferred state flush: no partition's stored offset marked '*', which the footnote explains) */
    usleep(250 * 1000);
    free(status);
    status = sh(&rc, "'%s' status --config '%s' --last 1000 2>&1", wd_it_widen_bin(), e.cfg);
    long long in = 0;
    for (const char *q = status; rc == 0 && (q = strstr(q, "\"records_in\":")); q++) in += atoll(q + 13);
    if (in < 300 || strstr(status, "\n*: ")) continue;
    /* the rows alone (stdout), as after the stop: stderr has the notes (e.g. WIDEN_BROKERS) */
    during = sh(&rc, "'%s' rows --config '%s' 2>/dev/null", wd_it_widen_bin(), e.cfg);
    break;
  }
  cr_assert_not_null(during, "the run did not take the 300 records: %s", status);
  cr_expect_eq(rc, 0, "widen rows while widen run runs: %s", during);
  kill(pid, SIGTERM);
  cr_expect_eq(wait_exit(pid), 0);
  char *after = sh(&rc, "'%s' rows --config '%s' 2>/dev/null", wd_it_widen_bin(), e.cfg);
  cr_assert_eq(rc, 0);
  cr_expect(strlen(after) > 100, "%s", after);
  cr_expect_str_eq(during, after, "rows read while running differ from the rows after the stop");
  /* durations: "duration_ms":568.5, never 568.54642199999716 */
  int durations = 0;
  for (const char *q = status; (q = strstr(q, "\"duration_ms\":")); q++, durations++) {
    const char *v = q + 14, *end = v + strspn(v, "0123456789.");
    const char *dot = memchr(v, '.', (size_t)(end - v));
    cr_expect(!dot || end - dot <= 2, "duration not rounded: %.*s", (int)(end - v + 14), q);
  }
  cr_expect_gt(durations, 0, "%s", status);
  free(during);
  free(after);
  free(status);

  /* produce: 8 of 10 lines without a key */
  char path[400], topic[200];
  snprintf(path, sizeof(path), "%s/nk.jsonl", e.dir);
  snprintf(topic, sizeof(topic), "%snullkeys", e.prefix);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("not json\n[1,2]\n{\"op\":\"c\",\"after\":{\"name\":\"x\"}}\n{\"op\":\"c\",\"after\":{\"id\":null}}\n"
        "{\"op\":\"d\",\"before\":null,\"after\":null}\n{\"key\":null,\"value\":{\"op\":\"c\",\"after\":{\"id\":5}}}\n"
        "{\"op\":\"c\",\"after\":{\"id\":7}}\n{\"schema\":null,\"payload\":{\"op\":\"c\",\"after\":{\"name\":\"y\"}}}\n"
        "{\"op\":\"u\",\"before\":{\"id\":3},\"after\":{\"id\":3}}\n\"just a string\"\n",
        f);
  fclose(f);
  char *out = sh(&rc, "'%s' produce --topic %s --file '%s' 2>&1", wd_it_widen_bin(), topic, path);
  cr_assert_eq(rc, 0, "%s", out);
  int warned = 0;
  for (const char *q = out; (q = strstr(q, ": sent with a null key (a null key spreads")); q++) warned++;
  cr_expect_eq(warned, 5, "%s", out);
  cr_expect(strstr(out, "further lines with a null key are counted, not logged") != NULL, "%s", out);
  cr_expect(strstr(out, "widen produce: 8 of 10 lines sent with a null key") != NULL, "%s", out);
  free(out);
  wd_consumer_t *c = wd_it_consumer(topic);
  wd_kmsg_t msgs[50];
  int got = 0, nullkeys = 0;
  for (int round = 0; round < 60 && got < 10; round++) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 50, 500, msgs, &n));
    for (size_t i = 0; i < n; i++) nullkeys += msgs[i].key == NULL;
    got += (int)n;
    wd_kmsg_release(msgs, n);
  }
  wd_consumer_destroy(c);
  cr_expect_eq(got, 10);
  cr_expect_eq(nullkeys, 8, "records with a null key in %s: %d", topic, nullkeys);
  env_done(&e);
}
