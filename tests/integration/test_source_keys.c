/*
 * tests/integration/test_source_keys.c — a source keyed by its own id (payments(payment_id pk,
 * order_id) into orders_wide keyed by order_id) as Postgres and Debezium send it by default
 * (REPLICA IDENTITY DEFAULT: an update has `before: null`, a delete's before image holds only
 * payment_id), and as an upsert topic (Kafka key {"payment_id":N}, the value the row, a tombstone
 * deleting it), on the real broker (WIDEN_TEST_BROKERS) with `widen run`.
 *
 * The workload inserts payments, updates them in place, moves them to other orders
 * (UPDATE payments SET order_id = ...) and deletes them, while orders change too; every final
 * wide row must be the join of the final source tables (an order's customer, and the columns of
 * the one payment that points at it now, NULL when none), in the state and in the output read
 * read_committed (folded per key, and explainable: every -U/-D is the row emitted last). Without
 * the source's `primary-key` (today's main: the option does not exist) a key-only delete has no
 * wide key and is dropped, and a moved payment stays in its old order for ever.
 * Runs: one task (kills at two crash points, the state directory lost), per-partition tasks (a kill,
 * the state restored from the changelog topic, two members, a kill with standby copies), and the
 * refusals.
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

#include "app/config/config.h"
#include "changelog/changelog.h"
#include "common/json.h"
#include "join/state.h"
#include "sink/producer.h"
#include "tests/support/integration.h"
#include "tests/support/json_same.h"

extern char **environ;

static const char *const YAML =
    "kafka:\n"
    "  bootstrap.servers: BROKERS\n"
    "  group.id: PREFIXgroup\n"
    "  properties:\n"
    "    session.timeout.ms: 6000\n"
    "    group.instance.id: PREFIXINSTANCE\n"
    "table:\n"
    "  name: orders_wide\n"
    "  schema:\n"
    "    - {name: order_id, type: BIGINT NOT NULL}\n"
    "    - {name: customer, type: STRING}\n"
    "    - {name: order_ver, type: BIGINT}\n"
    "    - {name: payment_id, type: BIGINT}\n"
    "    - {name: method, type: STRING}\n"
    "    - {name: amount, type: BIGINT}\n"
    "    - {name: payment_ver, type: BIGINT}\n"
    "  primary-key: [order_id]\n"
    "  options:\n"
    "    merge-engine: partial-update\n"
    "    fields.order_ver.sequence-group: customer\n"
    "    fields.payment_ver.sequence-group: payment_id,method,amount\n"
    "sources:\n"
    "  - name: orders\n"
    "    topic: PREFIXorders\n"
    "    columns: {order_id: order_id, customer: customer, order_ver: $.source.ts_ms}\n"
    "  - name: payments\n"
    "    topic: PREFIXpayments\n"
    "    format: PAYFORMAT\n"
    "    primary-key: [payment_id]\n"
    "    columns: {order_id: order_id, payment_id: payment_id, method: method, amount: amount, payment_ver: PAYVER}\n"
    "sink:\n"
    "  topic: PREFIXout\n"
    "state:\n"
    "  dir: STATE\n"
    "pipeline:\n"
    "  batch-size: 40\n"
    "  commit-max-records: 120\n"
    "  processing-guarantee: exactly-once\n"
    "  tasks: TASKS\n";

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
  char state[320];
  char out[200];
  bool upsert;
} env_t;

static int orders_partitions = 2; /* a test sets it */
/* A test of the per-commit protocol's own steps (the prepared state batch) sets it: the config
 * then says state.flush-interval-ms: 0, so that it tests them whatever the option's default. */
static bool per_commit = false;

static void env_init(env_t *e, const char *name, bool upsert, const char *tasks) {
  memset(e, 0, sizeof(*e));
  e->upsert = upsert;
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-sk-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.sk%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  snprintf(e->out, sizeof(e->out), "%sout", e->prefix);
  char *y = strdup(YAML);
  if (per_commit) y = wd_it_replace(y, "  dir: STATE\n", "  dir: STATE\n  flush-interval-ms: 0\n");
  y = wd_it_replace(y, "INSTANCE", "instance");
  y = wd_it_replace(y, "PREFIX", e->prefix);
  y = wd_it_replace(y, "BROKERS", wd_it_brokers());
  y = wd_it_replace(y, "STATE", e->state);
  y = wd_it_replace(y, "TASKS", tasks);
  y = wd_it_replace(y, "PAYFORMAT", upsert ? "upsert-json" : "debezium-json");
  y = wd_it_replace(y, "PAYVER", upsert ? "ts" : "$.source.ts_ms");
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fputs(y, f);
  fclose(f);
  free(y);
  char t[200];
  snprintf(t, sizeof(t), "%sorders", e->prefix);
  wd_it_create_topic(t, orders_partitions);
  snprintf(t, sizeof(t), "%spayments", e->prefix);
  wd_it_create_topic(t, 3);
}

static void env_done(env_t *e) {
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e->dir);
}

/* `widen run` until idle for 2 s, or killed by the fault hook (WIDEN_FAULT, may be NULL); returns
 * its exit status, 128 + signal when killed; its stderr into log when not NULL. */
static int run_widen(const env_t *e, const char *fault, const char *log) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", e->cfg, "--quiet", "--max-idle-ms", "2000", NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  if (fault) setenv("WIDEN_FAULT", fault, 1);
  else unsetenv("WIDEN_FAULT");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (log) posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  unsetenv("WIDEN_FAULT");
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- the workload and its model ------------------------------------------------------------------ */

#define NORDERS 80
#define NPAY 60
typedef struct {
  bool exists;
  long long order_id, amount;
  char method[16];
  long long ts;
} pay_t;
typedef struct {
  bool touched;
  char customer[24];
  bool has_customer;
  int payment; /* index of the payment in it now, or -1 */
} ord_t;
typedef struct {
  uint64_t rng;
  long long ts;
  pay_t pay[NPAY];
  ord_t ord[NORDERS + 1];
  wd_producer_t *p;
  const env_t *e;
  unsigned deletes, moves, updates;
} wl_t;

static uint64_t rnd(wl_t *w, uint64_t n) {
  w->rng = w->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (w->rng >> 33) % n;
}

static void send_rec(wl_t *w, const char *stream, const char *key, const char *value) {
  char topic[200];
  snprintf(topic, sizeof(topic), "%s%s", w->e->prefix, stream);
  cr_assert_null(wd_producer_send(w->p, topic, key, strlen(key), value, value ? strlen(value) : 0, NULL, 0));
}

static void pay_json(const wl_t *w, int i, char *out, size_t n) {
  const pay_t *p = &w->pay[i];
  snprintf(out, n, "{\"payment_id\":%d,\"order_id\":%lld,\"method\":\"%s\",\"amount\":%lld%s}", 100000 + i, p->order_id,
           p->method, p->amount, w->e->upsert ? ",\"ts\":TS" : "");
  if (w->e->upsert) {
    char ts[32];
    snprintf(ts, sizeof(ts), "%lld", p->ts);
    char *s = wd_it_replace(strdup(out), "TS", ts);
    snprintf(out, n, "%s", s);
    free(s);
  }
}

/* A free order (no payment in it), or -1. */
static int free_order(wl_t *w) {
  for (int tries = 0; tries < 50; tries++) {
    int o = 1 + (int)rnd(w, NORDERS);
    if (w->ord[o].payment < 0) return o;
  }
  return -1;
}

static void step(wl_t *w) {
  char key[64], val[512], img[256];
  long long ts = ++w->ts;
  if (rnd(w, 10) < 3) { /* an order: keyed by the wide key, full images */
    int o = 1 + (int)rnd(w, NORDERS);
    ord_t *d = &w->ord[o];
    char before[96] = "null";
    if (d->has_customer) snprintf(before, sizeof(before), "{\"order_id\":%d,\"customer\":\"%s\"}", o, d->customer);
    bool was = d->has_customer;
    snprintf(d->customer, sizeof(d->customer), "c%llu", (unsigned long long)rnd(w, 1000));
    d->has_customer = d->touched = true;
    snprintf(key, sizeof(key), "{\"order_id\":%d}", o);
    snprintf(
        val, sizeof(val),
        "{\"op\":\"%s\",\"before\":%s,\"after\":{\"order_id\":%d,\"customer\":\"%s\"},\"source\":{\"ts_ms\":%lld}}",
        was ? "u" : "c", before, o, d->customer, ts);
    send_rec(w, "orders", key, val);
    return;
  }
  int i = (int)rnd(w, NPAY);
  pay_t *p = &w->pay[i];
  snprintf(key, sizeof(key), "{\"payment_id\":%d}", 100000 + i);
  if (!p->exists) { /* insert into a free order */
    int o = free_order(w);
    if (o < 0) return;
    p->exists = true;
    p->order_id = o;
    p->amount = (long long)rnd(w, 10000);
    snprintf(p->method, sizeof(p->method), "m%llu", (unsigned long long)rnd(w, 5));
    p->ts = ts;
    w->ord[o].payment = i;
    w->ord[o].touched = true;
    pay_json(w, i, img, sizeof(img));
    if (w->e->upsert) send_rec(w, "payments", key, img);
    else {
      snprintf(val, sizeof(val), "{\"op\":\"c\",\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":%lld}}", img, ts);
      send_rec(w, "payments", key, val);
    }
    return;
  }
  uint64_t what = rnd(w, 10);
  if (what < 2) { /* delete: the before image holds the key only */
    w->ord[p->order_id].payment = -1;
    p->exists = false;
    w->deletes++;
    if (w->e->upsert) send_rec(w, "payments", key, NULL);
    else {
      snprintf(val, sizeof(val),
               "{\"op\":\"d\",\"before\":{\"payment_id\":%d},\"after\":null,\"source\":{\"ts_ms\":%lld}}", 100000 + i,
               ts);
      send_rec(w, "payments", key, val);
    }
    return;
  }
  if (what < 5) { /* a move to a free order */
    int o = free_order(w);
    if (o < 0) return;
    w->ord[p->order_id].payment = -1;
    p->order_id = o;
    w->ord[o].payment = i;
    w->ord[o].touched = true;
    w->moves++;
  } else { /* an update in place */
    p->amount = (long long)rnd(w, 10000);
    w->updates++;
  }
  p->ts = ts;
  pay_json(w, i, img, sizeof(img));
  if (w->e->upsert) send_rec(w, "payments", key, img);
  else {
    snprintf(val, sizeof(val), "{\"op\":\"u\",\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":%lld}}", img, ts);
    send_rec(w, "payments", key, val);
  }
}

static void wl_init(wl_t *w, const env_t *e, uint64_t seed) {
  memset(w, 0, sizeof(*w));
  w->rng = seed;
  w->ts = 1000000;
  w->e = e;
  for (int o = 0; o <= NORDERS; o++) w->ord[o].payment = -1;
}

static void produce(wl_t *w, int steps) {
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &w->p));
  wd_kafka_conf_clear(&kc);
  for (int s = 0; s < steps; s++) step(w);
  wd_error_t *err = wd_producer_wait_acked(w->p, 60000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_producer_destroy(w->p);
  w->p = NULL;
}

/* The expected wide rows: every order some record touched, in key order. */
static json_t *expected(const wl_t *w) {
  json_t *rows = json_array();
  for (int o = 1; o <= NORDERS; o++) {
    const ord_t *d = &w->ord[o];
    if (!d->touched) continue;
    json_t *r = json_object();
    json_object_set_new(r, "order_id", json_integer(o));
    json_object_set_new(r, "customer", d->has_customer ? json_string(d->customer) : json_null());
    if (d->payment >= 0) {
      const pay_t *p = &w->pay[d->payment];
      json_object_set_new(r, "payment_id", json_integer(100000 + d->payment));
      json_object_set_new(r, "method", json_string(p->method));
      json_object_set_new(r, "amount", json_integer(p->amount));
    } else {
      json_object_set_new(r, "payment_id", json_null());
      json_object_set_new(r, "method", json_null());
      json_object_set_new(r, "amount", json_null());
    }
    json_array_append_new(rows, r);
  }
  return rows;
}

/* Drops the sequence columns (they are bookkeeping, not part of the join). */
static json_t *strip(json_t *row) {
  json_t *r = json_deep_copy(row);
  json_object_del(r, "order_ver");
  json_object_del(r, "payment_ver");
  return r;
}

static int add_row(void *ctx, const wd_row_t *row) {
  json_t *rows = ((void **)ctx)[0];
  const wd_schema_t *schema = ((void **)ctx)[1];
  json_t *j = wd_row_to_json(schema, row);
  json_array_append_new(rows, strip(j));
  json_decref(j);
  return 0;
}

static json_t *state_rows(const env_t *e) {
  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  cr_assert_null(wd_config_load(e->cfg, &cfg));
  cr_assert_null(wd_config_build_table(cfg, &t));
  cr_assert_null(wd_store_open_rocksdb(e->state, NULL, &st));
  wd_state_t *s = wd_state_new(t, st, 0);
  json_t *rows = json_array();
  void *ctx[2] = {rows, (void *)wd_table_schema(t)};
  cr_assert_null(wd_state_scan_rows(s, add_row, ctx));
  wd_state_destroy(s);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  /* per-partition tasks: the store is in task order; sort by order_id */
  size_t n = json_array_size(rows);
  for (size_t a = 0; a < n; a++)
    for (size_t b = a + 1; b < n; b++) {
      json_t *x = json_array_get(rows, a), *y = json_array_get(rows, b);
      if (json_integer_value(json_object_get(x, "order_id")) > json_integer_value(json_object_get(y, "order_id"))) {
        json_incref(x);
        json_array_set(rows, a, y);
        json_array_set_new(rows, b, x);
      }
    }
  return rows;
}

/* The output read read_committed, replayed per key: every -U/-D must retract the row emitted last
 * for its key (nothing lost, nothing repeated), +I only for an absent key; returns the final rows
 * in key order. */
static json_t *replayed_output(const env_t *e) {
  json_t *lines = wd_it_read_changelog(e->out), *cur = json_object(), *j;
  size_t i;
  size_t bad = 0;
  json_array_foreach(lines, i, j) {
    const char *op = json_string_value(json_object_get(j, "op"));
    json_t *row = strip(json_object_get(j, "row"));
    char k[32];
    snprintf(k, sizeof(k), "%08lld", (long long)json_integer_value(json_object_get(row, "order_id")));
    json_t *have = json_object_get(cur, k);
    if (!strcmp(op, "+I") || !strcmp(op, "+U")) {
      if ((!strcmp(op, "+I") && have) && bad++ < 5) fprintf(stderr, "key %s: +I of a present key\n", k);
      json_object_set(cur, k, row);
    } else {
      if ((!have || !wd_test_json_same(have, row)) && bad++ < 5) {
        char *a = have ? json_dumps(have, JSON_COMPACT) : strdup("(none)"), *b = json_dumps(row, JSON_COMPACT);
        fprintf(stderr, "key %s: %s of %s, but the last row emitted is %s\n", k, op, b, a);
        free(a);
        free(b);
      }
      json_object_del(cur, k);
    }
    json_decref(row);
  }
  cr_assert_eq(bad, 0, "%zu changes of the output cannot be explained", bad);
  json_t *rows = json_array();
  const char *key;
  json_t *v;
  /* jansson keeps insertion order: sort by the zero-padded key */
  size_t n = json_object_size(cur), at = 0;
  const char **keys = calloc(n + 1, sizeof(*keys));
  json_object_foreach(cur, key, v) keys[at++] = key;
  for (size_t a = 0; a < n; a++)
    for (size_t b = a + 1; b < n; b++)
      if (strcmp(keys[a], keys[b]) > 0) {
        const char *t = keys[a];
        keys[a] = keys[b];
        keys[b] = t;
      }
  for (size_t a = 0; a < n; a++) json_array_append(rows, json_object_get(cur, keys[a]));
  free(keys);
  json_decref(cur);
  json_decref(lines);
  return rows;
}

static void assert_rows(json_t *want, json_t *got, const char *what) {
  size_t bad = 0;
  if (json_array_size(want) != json_array_size(got))
    fprintf(stderr, "%s: %zu rows, expected %zu\n", what, json_array_size(got), json_array_size(want));
  for (size_t i = 0; i < json_array_size(want) && i < json_array_size(got); i++)
    if (!wd_test_json_same(json_array_get(want, i), json_array_get(got, i)) && bad++ < 5) {
      char *a = json_dumps(json_array_get(want, i), JSON_COMPACT | JSON_SORT_KEYS);
      char *b = json_dumps(json_array_get(got, i), JSON_COMPACT | JSON_SORT_KEYS);
      fprintf(stderr, "%s: expected %s\n   got %s\n", what, a, b);
      free(a);
      free(b);
    }
  cr_assert(bad == 0 && json_array_size(want) == json_array_size(got), "%s: %zu of %zu rows differ from the join", what,
            bad, json_array_size(want));
}

/* Produces the workload in two parts, runs widen after each (the first run killed by the fault
 * hook when fault is set), and checks the state and the output against the join. */
static void run_case_tasks(const char *name, bool upsert, const char *fault, bool lose_state, const char *tasks) {
  env_t e;
  env_init(&e, name, upsert, tasks);
  wl_t w;
  wl_init(&w, &e, 7 + (upsert ? 1 : 0));
  char log[400];
  snprintf(log, sizeof(log), "%s/run1.log", e.dir);
  produce(&w, 1500);
  int rc = run_widen(&e, fault, log);
  if (fault) cr_assert_eq(rc, 128 + SIGKILL, "the fault hook %s did not fire (exit %d)", fault, rc);
  else cr_assert_eq(rc, 0, "widen exited with %d (log %s)", rc, log);
  if (lose_state) { /* the state directory lost between the runs: rebuilt from the sources */
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e.state);
    cr_assert_eq(system(cmd), 0);
  }
  produce(&w, 1000);
  snprintf(log, sizeof(log), "%s/run2.log", e.dir);
  rc = run_widen(&e, NULL, log);
  cr_assert_eq(rc, 0, "widen exited with %d (log %s)", rc, log);
  cr_assert_gt(w.deletes, 20);
  cr_assert_gt(w.moves, 50);
  cr_assert_gt(w.updates, 50);
  json_t *want = expected(&w), *st = state_rows(&e), *out = replayed_output(&e);
  cr_assert_gt(json_array_size(want), 60);
  assert_rows(want, st, "state");
  assert_rows(want, out, "output read read_committed");
  json_decref(want);
  json_decref(st);
  json_decref(out);
  env_done(&e);
}

static void run_case_lose(const char *name, bool upsert, const char *fault, bool lose_state) {
  run_case_tasks(name, upsert, fault, lose_state, "single");
}

static void run_case(const char *name, bool upsert, const char *fault) { run_case_lose(name, upsert, fault, false); }

Test(source_keys, debezium_default_replica_identity_gives_the_join, .timeout = 200) { run_case("dbz", false, NULL); }

Test(source_keys, upsert_topic_gives_the_join, .timeout = 200) { run_case("ups", true, NULL); }

/* kill -9 in the middle of a transaction (after the state batch was written, before the commit):
 * the restart takes it back (source rows too) and redoes it; nothing lost, nothing repeated. */
Test(source_keys, a_kill_after_prepare_keeps_it_exactly_once, .timeout = 200) {
  per_commit = true;
  run_case("kill", false, "after-prepare:3");
}

Test(source_keys, during_produce_kill_keeps_it_exactly_once, .timeout = 200) {
  run_case("killp", true, "during-produce:5");
}

/* The state directory lost after a run: the restart re-reads the sources up to the group's offsets
 * (without output) and rebuilds the source rows with the wide rows, then goes on. */
Test(source_keys, lost_state_rebuilds_the_source_rows, .timeout = 200) { run_case_lose("lost", false, NULL, true); }

/* Per-partition tasks: the payments topic (3 partitions, keyed by payment_id) is the input of the
 * tasks, whose state keeps the source rows; the derived records go through its repartition topic
 * to the tasks of their order ids (orders through its own). A kill after a prepare, a restart, and
 * then the state directory lost (restored from the state changelog topic). */
Test(source_keys, per_partition_tasks_give_the_join, .timeout = 300) {
  orders_partitions = 3;
  run_case_tasks("pp", false, "after-prepare:3", false, "per-partition");
}

Test(source_keys, per_partition_lost_state_is_restored, .timeout = 300) {
  orders_partitions = 3;
  run_case_tasks("pplost", true, NULL, true, "per-partition");
}

/* Another member m of e's group: the same config with its own state directory and instance id. */
static void env_member(const env_t *e, env_t *m, const char *name) {
  *m = *e;
  snprintf(m->dir, sizeof(m->dir), "/tmp/widen-sk-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(m->dir));
  snprintf(m->cfg, sizeof(m->cfg), "%s/widen.yaml", m->dir);
  snprintf(m->state, sizeof(m->state), "%s/state", m->dir);
  char *y = wd_it_read_file(e->cfg);
  cr_assert_not_null(y);
  y = wd_it_replace(y, "instance\n", "member2\n");
  y = wd_it_replace(y, e->state, m->state);
  FILE *f = fopen(m->cfg, "w");
  cr_assert_not_null(f);
  fputs(y, f);
  fclose(f);
  free(y);
}

static const char *idle_ms = "4000"; /* a test sets it */

static pid_t spawn_widen_fault(const env_t *e, const char *log, const char *fault) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", e->cfg, "--quiet", "--max-idle-ms", idle_ms, NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  if (fault) setenv("WIDEN_FAULT", fault, 1);
  else unsetenv("WIDEN_FAULT");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  unsetenv("WIDEN_FAULT");
  return pid;
}

static pid_t spawn_widen(const env_t *e, const char *log) { return spawn_widen_fault(e, log, NULL); }

static void append(const env_t *e, const char *line) {
  FILE *f = fopen(e->cfg, "a");
  cr_assert_not_null(f);
  fputs(line, f);
  fclose(f);
}

/* Two members with standby copies (num-standby-replicas: 1) run together; then member 1 alone is
 * killed (SIGKILL at its first prepare) and member 2 takes its tasks over from its copies of their
 * state (source rows included) and finishes alone; the output read read_committed equals the join. */
Test(source_keys, per_partition_standby_takes_over_after_a_kill, .timeout = 300) {
  orders_partitions = 3;
  env_t e, m;
  env_init(&e, "ppsb", false, "per-partition");
  append(&e, "  num-standby-replicas: 1\n");
  env_member(&e, &m, "ppsbm");
  wl_t w;
  wl_init(&w, &e, 13);
  produce(&w, 1500);
  char la[400], lb[400];
  snprintf(la, sizeof(la), "%s/a.log", e.dir);
  snprintf(lb, sizeof(lb), "%s/b.log", m.dir);
  pid_t a = spawn_widen(&e, la), b = spawn_widen(&m, lb);
  int st = 0;
  cr_assert_eq(waitpid(a, &st, 0), a);
  cr_assert_eq(waitpid(b, &st, 0), b);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 2 failed (log %s)", lb);
  produce(&w, 1000);
  /* member 1 alone takes the tasks (member 2's session is over) and is killed at its first prepare */
  a = spawn_widen_fault(&e, la, "after-prepare:1");
  cr_assert_eq(waitpid(a, &st, 0), a);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "member 1 was not killed by the fault hook (log %s)", la);
  /* member 2 alone, long enough for the group to give it the dead member's tasks (its session
   * times out after 6 s): from its standby copies of them (kept while both ran) */
  idle_ms = "12000";
  snprintf(lb, sizeof(lb), "%s/b2.log", m.dir);
  b = spawn_widen(&m, lb);
  cr_assert_eq(waitpid(b, &st, 0), b);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 2 failed (log %s)", lb);
  json_t *want = expected(&w), *out = replayed_output(&e);
  assert_rows(want, out, "output after a kill with standbys, read read_committed");
  json_decref(want);
  json_decref(out);
  env_done(&m);
  env_done(&e);
}

/* Two members share the tasks (the payments partitions and the tasks move between them as they
 * join and leave); the output read read_committed equals the join. */
Test(source_keys, per_partition_two_members_give_the_join, .timeout = 300) {
  orders_partitions = 3;
  env_t e, m;
  env_init(&e, "pp2", false, "per-partition");
  env_member(&e, &m, "pp2m");
  wl_t w;
  wl_init(&w, &e, 11);
  produce(&w, 1500);
  char la[400], lb[400];
  snprintf(la, sizeof(la), "%s/a.log", e.dir);
  snprintf(lb, sizeof(lb), "%s/b.log", m.dir);
  pid_t a = spawn_widen(&e, la), b = spawn_widen(&m, lb);
  int st = 0;
  cr_assert_eq(waitpid(a, &st, 0), a);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 1 failed (log %s)", la);
  cr_assert_eq(waitpid(b, &st, 0), b);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 2 failed (log %s)", lb);
  produce(&w, 1000);
  b = spawn_widen(&m, lb); /* the second part: member 2 alone first, then both */
  (void)wd_it_wait_log(lb, "assigned", 30000); /* member 2 holds every task, then shares them */
  a = spawn_widen(&e, la);
  cr_assert_eq(waitpid(a, &st, 0), a);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 1 failed (log %s)", la);
  cr_assert_eq(waitpid(b, &st, 0), b);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 2 failed (log %s)", lb);
  /* whatever a member left when it went idle (a task still held while the group rebalanced under
   * load), member 2 alone finishes it, after the other's static membership times out */
  idle_ms = "12000";
  b = spawn_widen(&m, lb);
  cr_assert_eq(waitpid(b, &st, 0), b);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member 2 failed (log %s)", lb);
  json_t *want = expected(&w), *out = replayed_output(&e);
  assert_rows(want, out, "output of two members read read_committed");
  json_decref(want);
  json_decref(out);
  env_done(&m);
  env_done(&e);
}

/* A source with its own primary key whose partition count is not the table's is refused at start
 * with what to change. */
Test(source_keys, per_partition_other_partition_count_is_refused, .timeout = 60) {
  orders_partitions = 2;
  env_t e;
  env_init(&e, "ppn", false, "per-partition");
  char log[400];
  snprintf(log, sizeof(log), "%s/run.log", e.dir);
  int rc = run_widen(&e, NULL, log);
  cr_assert_neq(rc, 0);
  char *text = wd_it_read_file(log);
  cr_assert(text && strstr(text, "C_SOURCE_KEY_PER_PARTITION") && strstr(text, "give the topic 2 partitions"), "%s",
            text ? text : "(no log)");
  free(text);
  env_done(&e);
}

/* ---- PostgreSQL's defaults without the source's own primary key ------------------------------ */

/* The records of a real Debezium 3.6.1 on PostgreSQL with every default
 * (tests/fixtures/debezium/postgres-replica-identity-default.jsonl: deletes whose before image
 * holds the key and Debezium's defaults for the NOT NULL columns, updates without before images,
 * a TOAST placeholder) through a table whose sources declare no primary-key: orders (keyed by the
 * wide key) come out right, deleted ones gone and the unchanged TOAST value kept; a payment's
 * delete cannot name its order (Debezium wrote order_id 0) and is dead-lettered with E_NO_KEY, or
 * dropped under ignore-delete, never applied to order 0 or left without a word. */
static void pg_defaults_case(const char *name, bool ignore_delete) {
  env_t e;
  memset(&e, 0, sizeof(e));
  snprintf(e.dir, sizeof(e.dir), "/tmp/widen-sk-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e.dir));
  snprintf(e.prefix, sizeof(e.prefix), "wdtest.sk%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e.cfg, sizeof(e.cfg), "%s/widen.yaml", e.dir);
  snprintf(e.state, sizeof(e.state), "%s/state", e.dir);
  snprintf(e.out, sizeof(e.out), "%sout", e.prefix);
  FILE *f = fopen(e.cfg, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "kafka:\n  bootstrap.servers: %s\n  group.id: %sgroup\n"
          "table:\n  name: orders_wide\n  schema:\n"
          "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
          "    - {name: amount, type: \"DECIMAL(12,2)\"}\n    - {name: note, type: STRING}\n"
          "    - {name: order_version, type: BIGINT}\n    - {name: method, type: STRING}\n"
          "    - {name: paid, type: \"DECIMAL(12,2)\"}\n    - {name: payment_version, type: BIGINT}\n"
          "  primary-key: [order_id]\n  options:\n    merge-engine: partial-update\n"
          "    fields.order_version.sequence-group: customer,amount,note\n"
          "    fields.payment_version.sequence-group: method,paid\n%s"
          "sources:\n"
          "  - {name: orders, topic: %sorders, columns: {order_id: order_id, customer: customer, amount: amount, "
          "note: note, order_version: order_version}}\n"
          "  - {name: payments, topic: %spayments, columns: {order_id: order_id, method: method, paid: paid, "
          "payment_version: payment_version}}\n"
          "sink:\n  topic: %sout\nstate:\n  dir: %s\n",
          wd_it_brokers(), e.prefix,
          ignore_delete ? "    ignore-delete: true\n"
                        : "    partial-update.remove-record-on-sequence-group: order_version\n",
          e.prefix, e.prefix, e.prefix, e.state);
  fclose(f);
  char t[200];
  snprintf(t, sizeof(t), "%sorders", e.prefix);
  wd_it_create_topic(t, 4);
  snprintf(t, sizeof(t), "%spayments", e.prefix);
  wd_it_create_topic(t, 4);
  /* the fixture's records, each to its topic (keyed as Debezium keyed them) */
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  FILE *fx = fopen(WD_SOURCE_DIR "/tests/fixtures/debezium/postgres-replica-identity-default.jsonl", "r");
  cr_assert_not_null(fx);
  char *line = NULL;
  size_t cap = 0;
  int sent = 0;
  while (getline(&line, &cap, fx) > 0) {
    json_t *r = json_loads(line, 0, NULL);
    cr_assert_not_null(r);
    const char *topic = json_string_value(json_object_get(r, "topic")),
               *k = json_string_value(json_object_get(r, "key"));
    const char *v = json_string_value(json_object_get(r, "value"));
    snprintf(t, sizeof(t), "%s%s", e.prefix, strrchr(topic, '.') + 1);
    cr_assert_null(wd_producer_send(p, t, k, strlen(k), v, v ? strlen(v) : 0, NULL, 0));
    sent++;
    json_decref(r);
  }
  free(line);
  fclose(fx);
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);
  cr_assert_eq(sent, 23);
  char log[320];
  snprintf(log, sizeof(log), "%s/run.log", e.dir);
  cr_assert_eq(run_widen(&e, NULL, log), 0);
  char *text = wd_it_read_file(log);
  if (ignore_delete) {
    cr_expect(strstr(text, ", 0 dead-lettered") != NULL, "ignore-delete drops them:\n%s", text);
  } else {
    cr_expect(strstr(text, ", 3 dead-lettered") != NULL, "the 3 payment deletes are dead letters:\n%s", text);
    cr_expect(strstr(text, "E_NO_KEY") && strstr(text, "REPLICA IDENTITY DEFAULT") && strstr(text, "primary-key"), "%s",
              text);
  }
  cr_expect(strstr(text, "WARN  [pipeline] source '") && strstr(text, "PostgreSQL's REPLICA IDENTITY DEFAULT: "),
            "warned of once:\n%s", text);
  cr_expect(strstr(text, "; 7 records with only the key in their before image") != NULL,
            "2 deletes of orders (one of them order 4 moving to 5), 3 of payments, 2 updates of payments:\n%s", text);
  free(text);
  /* the table as a consumer folds it */
  json_t *lines = wd_it_read_changelog(e.out), *rows = json_object(), *j;
  size_t i;
  json_array_foreach(lines, i, j) {
    const char *op = json_string_value(json_object_get(j, "op"));
    json_t *row = json_object_get(j, "row");
    char k[32];
    snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(row, "order_id")));
    if (!strcmp(op, "+I") || !strcmp(op, "+U")) json_object_set(rows, k, row);
    else json_object_del(rows, k);
  }
  cr_expect_null(json_object_get(rows, "0"), "nothing was applied to order 0");
  if (!ignore_delete) {
    /* order 1's own columns are gone (its payment, whose delete was dead-lettered, may have
     * brought the row back with the payment's columns, as the topics interleave) */
    json_t *o1 = json_object_get(rows, "1");
    cr_expect(!o1 || json_is_null(json_object_get(o1, "customer")), "order 1 was deleted");
    cr_expect_null(json_object_get(rows, "4"), "order 4 became order 5");
  }
  json_t *o2 = json_object_get(rows, "2"), *o5 = json_object_get(rows, "5");
  cr_assert_not_null(o2);
  cr_assert_not_null(o5);
  const char *note = json_string_value(json_object_get(o2, "note"));
  cr_expect(note && strlen(note) == 32000, "order 2 keeps the TOAST note its last update did not carry: %s",
            note ? "other text" : "NULL");
  cr_expect_str_eq(json_string_value(json_object_get(o2, "amount")), "10.00");
  cr_expect_str_eq(json_string_value(json_object_get(o5, "customer")), "Dee");
  json_decref(rows);
  json_decref(lines);
  env_done(&e);
}

Test(source_keys, postgres_defaults_without_primary_key_are_said_not_stored, .timeout = 120) {
  pg_defaults_case("pgdef", false);
}

Test(source_keys, postgres_defaults_ignore_delete_drops_the_unknown_rows, .timeout = 120) {
  pg_defaults_case("pgign", true);
}
