/*
 * tests/integration/test_lookup_pipeline.c — joins on other keys through `widen run` on the real
 * broker (WIDEN_TEST_BROKERS): the invoice / payment / reconciliation / customer workload of
 * tests/support/invoice_workload.h as Debezium JSON on four topics (each keyed by its own id, read
 * in whatever interleaving the consumer gets), the config of configs/invoice-wide.yaml (payment
 * INNER with a sequence field, a chain to reconciliation, customer LEFT). The output topic
 * replayed per key, and `widen rows`, must equal SQLite's join of the final source tables; and
 * the output per key must equal `widen simulate` over the records in the order widen applied them
 * (`--trace`). A restart in the middle (SIGTERM) must not change the result. Suite lookup_scale_out:
 * the same workload with two processes in one group (per-partition tasks, lookups as a global
 * table), one of them SIGKILLed and restarted.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/cli/simulate.h"
#include "changelog/changelog.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"
#include "sink/producer.h"
#include "tests/support/invoice_workload.h"
#include "tests/support/integration.h"
#include "tests/support/json_same.h"

extern char **environ;

typedef struct {
  char dir[256], prefix[96], cfg[320], trace[320], state[320];
} env_t;

/* configs/invoice-wide.yaml with this test's topics, group and state directory (amount as BIGINT,
 * so SQLite's integers compare as they are). */
static void env_init(env_t *e, const char *name) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-it-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.it%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->trace, sizeof(e->trace), "%s/trace.jsonl", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  char path[512], group[200];
  const char *f = __FILE__;
  snprintf(path, sizeof(path), "%.*sconfigs/invoice-wide.yaml", (int)(strstr(f, "tests/integration/") - f), f);
  snprintf(group, sizeof(group), "  group.id: %sgroup\n", e->prefix);
  char *y = wd_it_read_file(path);
  y = wd_it_replace(y, "billing.", e->prefix);
  y = wd_it_replace(y, "./state/invoice", e->state);
  y = wd_it_replace(y, "  group.id: widen-invoice\n", group);
  y = wd_it_replace(y, "\"DECIMAL(12,2)\"", "BIGINT");
  y = wd_it_replace(y, "batch-size: 1000", "batch-size: 50");
  FILE *o = fopen(e->cfg, "w");
  cr_assert_not_null(o);
  fputs(y, o);
  fclose(o);
  free(y);
}

static void env_done(env_t *e) {
  if (getenv("WIDEN_TEST_KEEP")) return; /* debugging: the directory stays */
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e->dir);
}

/* Produces events [from, to) of the tables in the bit mask `tables` (bit WL_INVOICE, ...) as
 * Debezium JSON, each to <prefix><table>, keyed {"id":N}, with source.lsn (the payment lookup's
 * sequence field). */
static void produce_tables(const env_t *e, const wl_workload_t *w, size_t from, size_t to, unsigned tables) {
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  for (size_t i = from; i < to; i++) {
    const wl_event_t *ev = &w->ev[i];
    if (!(tables & (1u << ev->table))) continue;
    char topic[200], op[2] = {ev->op, 0};
    snprintf(topic, sizeof(topic), "%s%s", e->prefix, wl_table_names[ev->table]);
    json_t *img = ev->after ? ev->after : ev->before;
    json_t *k = json_pack("{s:O}", "id", json_object_get(img, "id"));
    char *key = json_dumps(k, JSON_COMPACT);
    json_decref(k);
    json_t *v = json_pack("{s:O,s:O,s:s,s:{s:I}}", "before", ev->before ? ev->before : json_null(), "after",
                          ev->after ? ev->after : json_null(), "op", op, "source", "lsn", (json_int_t)ev->lsn);
    char *val = json_dumps(v, JSON_COMPACT);
    cr_assert_null(wd_producer_send(p, topic, key, strlen(key), val, strlen(val), NULL, 0));
    free(key);
    free(val);
    json_decref(v);
  }
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);
}

static void produce_events(const env_t *e, const wl_workload_t *w, size_t from, size_t to) {
  produce_tables(e, w, from, to, ~0u);
}

static pid_t spawn_widen_cfg(const char *cfg, const char *trace, const char *idle_ms) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config",      cfg,     "--quiet",
                        "--trace",         trace, "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  return pid;
}

static pid_t spawn_widen(const env_t *e, const char *idle_ms) { return spawn_widen_cfg(e->cfg, e->trace, idle_ms); }

static int wait_exit(pid_t pid) {
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `widen rows --config` (the visible rows, one JSON object a line, sorted by key). */
static json_t *widen_rows_cfg(const env_t *e, const char *cfg) {
  char cmd[1200], out[400];
  snprintf(out, sizeof(out), "%s/rows.jsonl", e->dir);
  snprintf(cmd, sizeof(cmd), "'%s' rows --config '%s' > '%s'", wd_it_widen_bin(), cfg, out);
  cr_assert_eq(system(cmd), 0, "widen rows failed");
  FILE *f = fopen(out, "r");
  json_t *rows = json_array();
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, 0, NULL);
    cr_assert_not_null(j, "bad rows line %s", line);
    json_array_append_new(rows, j);
  }
  free(line);
  fclose(f);
  return rows;
}

static json_t *widen_rows(const env_t *e) { return widen_rows_cfg(e, e->cfg); }

/* widen simulate over the trace, with the config's table and sources in the case format. */
static json_t *simulate_trace(const env_t *e) {
  json_t *cs = json_loads(
      "{\"schema\":[{\"name\":\"invoice_id\",\"type\":\"BIGINT NOT "
      "NULL\"},{\"name\":\"payment_id\",\"type\":\"BIGINT\"},"
      "{\"name\":\"customer_id\",\"type\":\"BIGINT\"},{\"name\":\"amount\",\"type\":\"BIGINT\"},"
      "{\"name\":\"reconciliation_id\",\"type\":\"BIGINT\"},{\"name\":\"pay_status\",\"type\":\"STRING\"},"
      "{\"name\":\"recon_status\",\"type\":\"STRING\"},{\"name\":\"customer_name\",\"type\":\"STRING\"}],"
      "\"primary_key\":[\"invoice_id\"],\"options\":{\"merge-engine\":\"deduplicate\"},\"sources\":["
      "{\"name\":\"invoice\",\"columns\":[\"invoice_id\",\"payment_id\",\"customer_id\",\"amount\"],\"required\":true},"
      "{\"name\":\"payment\",\"lookup\":true,\"on\":[\"payment_id\"],\"columns\":[\"reconciliation_id\",\"pay_status\"]"
      ","
      "\"sequence\":true,\"required\":true},"
      "{\"name\":\"reconciliation\",\"lookup\":true,\"on\":[\"reconciliation_id\"],\"columns\":[\"recon_status\"]},"
      "{\"name\":\"customer\",\"lookup\":true,\"on\":[\"customer_id\"],\"columns\":[\"customer_name\"]}]}",
      0, NULL);
  cr_assert_not_null(cs);
  json_t *input = json_array();
  FILE *f = fopen(e->trace, "r");
  cr_assert_not_null(f, "no trace at %s", e->trace);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, 0, NULL);
    cr_assert_not_null(j);
    json_array_append_new(input, j);
  }
  free(line);
  fclose(f);
  json_object_set_new(cs, "input", input);
  json_t *out = NULL;
  cr_assert_eq(wd_simulate_run(cs, "memory", 1, &out), 0);
  json_decref(cs);
  return out;
}

/* changelog entries grouped per key: key -> [[op, row], ...] */
static json_t *by_key_seq(json_t *cl) {
  json_t *m = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(cl, i, e) {
    char k[64];
    snprintf(k, sizeof(k), "%lld",
             (long long)json_integer_value(json_object_get(json_object_get(e, "row"), "invoice_id")));
    json_t *seq = json_object_get(m, k);
    if (!seq) {
      seq = json_array();
      json_object_set_new(m, k, seq);
    }
    json_array_append_new(seq, json_pack("[OO]", json_object_get(e, "op"), json_object_get(e, "row")));
  }
  return m;
}

static void check_all(const env_t *e, const wl_workload_t *w) {
  json_t *want = wl_sql_join(w, true);
  cr_assert_not_null(want);
  char out_topic[200], *why = NULL;
  snprintf(out_topic, sizeof(out_topic), "%sinvoice_wide", e->prefix);
  json_t *cl = wd_it_read_changelog(out_topic), *replayed = NULL;
  why = wl_replay(cl, "invoice_id", &replayed);
  cr_assert_null(why, "output topic: %s", why);
  cr_assert(wl_rows_equal(replayed, want, &why), "output topic replayed vs SQL join: %s", why);
  json_t *rows = widen_rows(e);
  cr_assert(wl_rows_equal(rows, want, &why), "widen rows vs SQL join: %s", why);
  json_t *sim = simulate_trace(e);
  cr_assert(json_is_null(json_object_get(sim, "error")), "simulate reported an error");
  json_t *got = by_key_seq(cl), *exp = by_key_seq(json_object_get(sim, "changelog"));
  cr_assert(wd_test_json_same(got, exp), "output changelog per key differs from simulate over the trace");
  cr_assert_gt(json_array_size(want), 3, "the workload leaves too few rows to mean anything");
  cr_log_info("%zu rows, %zu changelog records checked", json_array_size(want), json_array_size(cl));
  json_decref(got);
  json_decref(exp);
  json_decref(sim);
  json_decref(rows);
  json_decref(replayed);
  json_decref(cl);
  json_decref(want);
}

Test(lookup_pipeline, invoice_join_equals_sql, .timeout = 200) {
  env_t e;
  env_init(&e, "lk");
  wl_workload_t w;
  wl_generate(&w, 1500, 60, 11);
  produce_events(&e, &w, 0, w.n);
  int rc = wait_exit(spawn_widen(&e, "2500"));
  cr_assert_eq(rc, 0, "widen run exited with %d", rc);
  check_all(&e, &w);
  wl_free(&w);
  env_done(&e);
}

/* Half the events, a run stopped by SIGTERM, the rest, a second run: the lookups' rows, the index
 * and the flags are in the state with the offsets, so the result is the same. */
Test(lookup_pipeline, restart_keeps_lookup_state, .timeout = 200) {
  env_t e;
  env_init(&e, "lkr");
  wl_workload_t w;
  wl_generate(&w, 1200, 50, 12);
  produce_events(&e, &w, 0, w.n / 2);
  pid_t pid = spawn_widen(&e, "60000");
  sleep(6);
  kill(pid, SIGTERM);
  cr_assert_eq(wait_exit(pid), 0);
  produce_events(&e, &w, w.n / 2, w.n);
  cr_assert_eq(wait_exit(spawn_widen(&e, "2500")), 0);
  check_all(&e, &w);
  wl_free(&w);
  env_done(&e);
}

/* ---- lookups under exactly-once and scale-out ---------------------------------------------
 * Two `widen run` processes in one group with per-partition tasks (invoice: 4 partitions) while
 * the lookup topics have 3 and 2 partitions: each process reads the lookup topics whole (a global
 * table, app/runtime/global_table.h) and owns some invoice tasks. Input flows while one process is
 * SIGKILLed (its tasks move to the other, restored from the state changelog topic and reconciled
 * with the other's lookup tables), restarted (tasks move back), and the two stop one after the
 * other (the last takes every task). The output topic read read_committed, replayed per key, must
 * show no change a consumer cannot explain and end equal to SQLite's join of the final tables. */

/* A member's config: e's topics and group, per-partition tasks, small commits, a short session
 * timeout (a killed member's tasks move after 6 s), its own state directory <dir>/state-<name>. */
static void member_config(const env_t *e, const char *name, char *cfg, size_t cap) {
  char state[400], props[400];
  snprintf(cfg, cap, "%s/widen-%s.yaml", e->dir, name);
  snprintf(state, sizeof(state), "%s/state-%s", e->dir, name);
  snprintf(props, sizeof(props), "  group.id: %sgroup\n  properties:\n    session.timeout.ms: 6000\n", e->prefix);
  char *y = wd_it_read_file(e->cfg);
  char group[200];
  snprintf(group, sizeof(group), "  group.id: %sgroup\n", e->prefix);
  y = wd_it_replace(y, group, props);
  y = wd_it_replace(y, e->state, state);
  y = wd_it_replace(y, "batch-size: 50", "batch-size: 50\n  commit-max-records: 120\n  tasks: per-partition");
  FILE *o = fopen(cfg, "w");
  cr_assert_not_null(o);
  fputs(y, o);
  fclose(o);
  free(y);
}

/* `widen run` of cfg with its stderr in log (appended). */
static pid_t spawn_member(const char *cfg, const char *log, const char *idle_ms) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", cfg, "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

/* Produces events [from, to) of `tables` in chunks of `chunk`, pausing ms between them. */
static void produce_slowly(const env_t *e, const wl_workload_t *w, size_t from, size_t to, size_t chunk, int ms,
                           unsigned tables) {
  for (size_t at = from; at < to; at += chunk) {
    produce_tables(e, w, at, at + chunk < to ? at + chunk : to, tables);
    usleep((useconds_t)ms * 1000);
  }
}

static bool log_has(const char *log, const char *what) {
  char *s = wd_it_read_file(log);
  bool yes = strstr(s, what) != NULL;
  free(s);
  return yes;
}

Test(lookup_scale_out, two_members_with_a_kill_equal_sql, .timeout = 240) {
  env_t e;
  env_init(&e, "lkso");
  static const char *const tables[] = {"invoice", "payment", "reconciliation", "customer"};
  static const int parts[] = {4, 3, 2, 2};
  for (int t = 0; t < 4; t++) {
    char topic[200];
    snprintf(topic, sizeof(topic), "%s%s", e.prefix, tables[t]);
    wd_it_create_topic(topic, parts[t]);
  }
  char cfg_a[400], cfg_b[400], log_a[400], log_b[400];
  member_config(&e, "a", cfg_a, sizeof(cfg_a));
  member_config(&e, "b", cfg_b, sizeof(cfg_b));
  snprintf(log_a, sizeof(log_a), "%s/a.log", e.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", e.dir);
  wl_workload_t w;
  wl_generate(&w, 2400, 80, 21);
  size_t q = w.n / 4;
  produce_events(&e, &w, 0, q);
  pid_t pa = spawn_member(cfg_a, log_a, "9000"), pb = spawn_member(cfg_b, log_b, "9000");
  /* both joined: each moved a task to RUNNING (app/runtime/tasks.c), so the tasks are shared */
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  produce_slowly(&e, &w, q, 2 * q, 100, 250, ~0u);
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 0), "A, killed now, owned no task");
  cr_assert_eq(kill(pa, SIGKILL), 0);
  cr_assert_eq(wait_exit(pa), 128 + SIGKILL);
  produce_slowly(&e, &w, 2 * q, 3 * q, 100, 300, ~0u); /* B takes A's tasks after the session timeout */
  usleep(4000 * 1000);
  pa = spawn_member(cfg_a, log_a, "9000"); /* A again, with its local state: tasks move back */
  /* the last quarter: the invoices, then (once the tasks have moved back) the lookup tables' own
   * changes, which reach the moved rows only through the index their new owner rebuilt (the final
   * tables, and so the SQL join, do not depend on how the tables interleave) */
  unsigned lookups = (1u << WL_PAYMENT) | (1u << WL_RECON) | (1u << WL_CUSTOMER);
  produce_slowly(&e, &w, 3 * q, w.n, 100, 250, 1u << WL_INVOICE);
  usleep(2000 * 1000);
  produce_slowly(&e, &w, 3 * q, w.n, 100, 250, lookups);
  int ra = wait_exit(pa), rb = wait_exit(pb);
  cr_assert_eq(ra, 0, "member A exited with %d", ra);
  cr_assert_eq(rb, 0, "member B exited with %d", rb);
  /* the scenario happened: tasks were restored from the state changelog topic and reconciled */
  cr_assert(log_has(log_a, "restored from") || log_has(log_b, "restored from"), "no task was restored");
  cr_assert(log_has(log_a, "reconciled") && log_has(log_b, "reconciled"), "a member reconciled no task");
  json_t *want = wl_sql_join(&w, true);
  char out_topic[200], *why = NULL;
  snprintf(out_topic, sizeof(out_topic), "%sinvoice_wide", e.prefix);
  json_t *cl = wd_it_read_changelog(out_topic), *replayed = NULL;
  why = wl_replay(cl, "invoice_id", &replayed);
  cr_assert_null(why, "output topic: %s", why);
  cr_assert(wl_rows_equal(replayed, want, &why), "output topic replayed vs SQL join: %s", why);
  cr_assert_gt(json_array_size(want), 10, "the workload leaves too few rows to mean anything");
  cr_log_info("%zu rows, %zu changelog records checked", json_array_size(want), json_array_size(cl));
  json_decref(replayed);
  json_decref(cl);
  json_decref(want);
  wl_free(&w);
  env_done(&e);
}

/* A commit that carries only lookup changes (their -U/+U, no input offsets in the transaction)
 * killed after its transaction committed (WIDEN_FAULT=after-commit:1, before the state is final;
 * during-commit takes the same path when the broker completes the transaction):
 * recovery must find it committed by the per-process marker (app/runtime/commit.h wd_commit_set_global)
 * and apply its state, or the restart would emit those changes again from rows they already
 * changed (a -U that is not the current row). */
static void lookup_only_commit_killed(const char *fault) {
  env_t e;
  env_init(&e, "lkck");
  static const char *const tables[] = {"invoice", "payment", "reconciliation", "customer"};
  for (int t = 0; t < 4; t++) {
    char topic[200];
    snprintf(topic, sizeof(topic), "%s%s", e.prefix, tables[t]);
    wd_it_create_topic(topic, t ? 2 : 3);
  }
  char cfg[400], log[400];
  member_config(&e, "one", cfg, sizeof(cfg));
  snprintf(log, sizeof(log), "%s/one.log", e.dir);
  wl_workload_t w;
  wl_generate(&w, 1200, 50, 31);
  unsigned lookups = (1u << WL_PAYMENT) | (1u << WL_RECON) | (1u << WL_CUSTOMER);
  produce_tables(&e, &w, 0, w.n, 1u << WL_INVOICE);
  produce_tables(&e, &w, 0, w.n / 2, lookups);
  int rc = wait_exit(spawn_member(cfg, log, "2500"));
  cr_assert_eq(rc, 0, "first run exited with %d", rc);
  produce_tables(&e, &w, w.n / 2, w.n, lookups);
  setenv("WIDEN_FAULT", fault, 1);
  rc = wait_exit(spawn_member(cfg, log, "2500"));
  unsetenv("WIDEN_FAULT");
  cr_assert_eq(rc, 128 + SIGKILL, "the fault hook did not kill the run (%d)", rc);
  rc = wait_exit(spawn_member(cfg, log, "9000")); /* the killed member's session expires first */
  cr_assert_eq(rc, 0, "the run after the kill exited with %d", rc);
  cr_assert(log_has(log, "recovered commit"), "no prepared commit was left to recover");
  json_t *want = wl_sql_join(&w, true);
  char out_topic[200], *why = NULL;
  snprintf(out_topic, sizeof(out_topic), "%sinvoice_wide", e.prefix);
  json_t *cl = wd_it_read_changelog(out_topic), *replayed = NULL;
  why = wl_replay(cl, "invoice_id", &replayed);
  cr_assert_null(why, "output topic after %s: %s", fault, why);
  cr_assert(wl_rows_equal(replayed, want, &why), "output topic replayed vs SQL join: %s", why);
  cr_assert_gt(json_array_size(want), 5, "the workload leaves too few rows to mean anything");
  json_decref(replayed);
  json_decref(cl);
  json_decref(want);
  wl_free(&w);
  env_done(&e);
}

Test(lookup_scale_out, lookup_only_commit_killed_after_commit, .timeout = 120) {
  lookup_only_commit_killed("after-commit:1");
}

/* A start whose stored lookup positions are already the lookup topics' ends (nothing new since the
 * last run) joins the group at once: the global consumer has no position before its first record,
 * so the preload once waited its 60 s for records that never came (found by tests/chaos/multi:
 * every restart with idle lookup topics). */
Test(lookup_scale_out, a_start_with_idle_lookup_topics_joins_at_once, .timeout = 120) {
  env_t e;
  env_init(&e, "lkidle");
  static const char *const tables[] = {"invoice", "payment", "reconciliation", "customer"};
  for (int t = 0; t < 4; t++) {
    char topic[200];
    snprintf(topic, sizeof(topic), "%s%s", e.prefix, tables[t]);
    wd_it_create_topic(topic, 2);
  }
  char cfg[400], log[400];
  member_config(&e, "one", cfg, sizeof(cfg));
  snprintf(log, sizeof(log), "%s/one.log", e.dir);
  wl_workload_t w;
  wl_generate(&w, 400, 30, 41);
  produce_tables(&e, &w, 0, w.n, ~0u);
  int rc = wait_exit(spawn_member(cfg, log, "2500"));
  cr_assert_eq(rc, 0, "first run exited with %d", rc);
  cr_assert(log_has(log, "lookup tables read to their end before joining the group"), "no preload in the first run");
  unlink(log);
  rc = wait_exit(spawn_member(cfg, log, "2500")); /* nothing new in any topic */
  cr_assert_eq(rc, 0, "second run exited with %d", rc);
  cr_assert(log_has(log, "lookup tables read to their end before joining the group: 0 records"),
            "the second run did not preload from its stored positions");
  cr_assert(!log_has(log, "gave nothing for 60 s"), "the second run waited for lookup records that never came");
  wl_free(&w);
  env_done(&e);
}

/* The same lookup-only commit killed after prepare (its rows and lookup index entries
 * are written at prepare with an undo image; the transaction is aborted, so the image takes them
 * back) and during commit (the broker decides): the output replays to the SQL join. */
Test(lookup_scale_out, lookup_only_commit_killed_after_prepare, .timeout = 120) {
  lookup_only_commit_killed("after-prepare:1");
}

Test(lookup_scale_out, lookup_only_commit_killed_during_commit, .timeout = 120) {
  lookup_only_commit_killed("during-commit:1");
}

/* Lookup changes that arrive while an assignment is being initialised (its tasks CREATED, the
 * decision waiting for the group's committed offsets in the poll loop): A's local state is behind
 * the group's offsets (B ran meanwhile), so A's tasks are dropped and restored at the decision.
 * The lookup records fetched before it once changed those rows first (a CREATED task counted as
 * owned), and the drop then stopped widen: "E_INTERNAL: dropping task N with uncommitted rows"
 * (found by tests/chaos/multi, a member restarted while the lookup topics moved). */
Test(lookup_scale_out, lookup_changes_during_an_assignment_being_initialised, .timeout = 200) {
  env_t e;
  env_init(&e, "lkinit");
  static const char *const tables[] = {"invoice", "payment", "reconciliation", "customer"};
  for (int t = 0; t < 4; t++) {
    char topic[200];
    snprintf(topic, sizeof(topic), "%s%s", e.prefix, tables[t]);
    wd_it_create_topic(topic, t ? 2 : 4);
  }
  char cfg_a[400], cfg_b[400], log_a[400], log_b[400];
  member_config(&e, "a", cfg_a, sizeof(cfg_a));
  member_config(&e, "b", cfg_b, sizeof(cfg_b));
  snprintf(log_a, sizeof(log_a), "%s/a.log", e.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", e.dir);
  wl_workload_t w;
  wl_generate(&w, 2000, 60, 51);
  unsigned lookups = (1u << WL_PAYMENT) | (1u << WL_RECON) | (1u << WL_CUSTOMER);
  size_t h = w.n / 2;
  produce_tables(&e, &w, 0, h, ~0u);
  int rc = wait_exit(spawn_member(cfg_a, log_a, "2500"));
  cr_assert_eq(rc, 0, "A's first run exited with %d", rc);
  produce_tables(&e, &w, h, w.n, 1u << WL_INVOICE);
  rc = wait_exit(spawn_member(cfg_b, log_b, "2500")); /* the group's offsets move past A's state */
  cr_assert_eq(rc, 0, "B's run exited with %d", rc);
  /* A again, its state behind the group's offsets, while the lookup tables change */
  pid_t pa = spawn_member(cfg_a, log_a, "6000");
  produce_slowly(&e, &w, h, w.n, 10, 150, lookups); /* for about 10 s: over the join */
  rc = wait_exit(pa);
  cr_assert_eq(rc, 0, "A's second run exited with %d:\n%s", rc, wd_it_read_file(log_a));
  cr_assert(log_has(log_a, "restored from"), "A restored no task: the scenario did not happen");
  json_t *want = wl_sql_join(&w, true);
  char out_topic[200], *why = NULL;
  snprintf(out_topic, sizeof(out_topic), "%sinvoice_wide", e.prefix);
  json_t *cl = wd_it_read_changelog(out_topic), *replayed = NULL;
  why = wl_replay(cl, "invoice_id", &replayed);
  cr_assert_null(why, "output topic: %s", why);
  cr_assert(wl_rows_equal(replayed, want, &why), "output topic replayed vs SQL join: %s", why);
  cr_assert_gt(json_array_size(want), 10, "the workload leaves too few rows to mean anything");
  json_decref(replayed);
  json_decref(cl);
  json_decref(want);
  wl_free(&w);
  env_done(&e);
}
