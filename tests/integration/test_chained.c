/*
 * tests/integration/test_chained.c — on the real broker (WIDEN_TEST_BROKERS)
 * with the widen binary (WIDEN_BIN): the README walkthrough's wide table (configs/demo.yaml fed by
 * `widen produce --generate`, with deletes and order_id key changes, plus hand-written orders
 * events that move a row's currency NULL -> value -> other value -> NULL) chained into a second
 * widen with `merge-engine: aggregation`, key `currency`, `sum(amount)`, reading the first
 * table's changelog topic (debezium-json). The second table must hold exactly
 * `SELECT currency, SUM(amount) ... GROUP BY currency` over `widen rows` of the first (SQLite),
 * and 0 for a currency with no row left. Each half of an update message stands on its own: a
 * half whose key (currency) is NULL is left out (ingest/format.h).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "changelog/changelog.h"
#include "common/buf.h"
#include "tests/support/integration.h"

extern char **environ;

static void source_path(char *out, size_t n, const char *rel) {
  const char *f = __FILE__;
  const char *end = strstr(f, "tests/integration/");
  cr_assert_not_null(end);
  snprintf(out, n, "%.*s%s", (int)(end - f), f, rel);
}

static char *slurp(FILE *f) {
  wd_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) wd_buf_append(&b, chunk, n);
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

/* Runs a shell command with WIDEN_BROKERS set, returns its stdout (malloc'd), *rc its status. */
static char *sh(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh(int *rc, const char *fmt, ...) {
  char cmd[4096];
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

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static void run_to_idle(const char *cfg) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", cfg, "--quiet", "--max-idle-ms", "2500", NULL};
  setenv("WIDEN_BROKERS", wd_it_brokers(), 1);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run --config %s failed (status %d)", cfg, status);
}

/* A DECIMAL value of `widen rows` (text or number) in cents. */
static long long cents(const json_t *v) {
  if (json_is_string(v)) return llround(strtod(json_string_value(v), NULL) * 100.0);
  cr_assert(json_is_number(v), "not a decimal value");
  return llround(json_number_value(v) * 100.0);
}

/* `widen rows` of cfg as an array of rows. */
static json_t *rows(const char *cfg) {
  int rc;
  char *out = sh(&rc, "'%s' rows --config '%s' 2>/dev/null", wd_it_widen_bin(), cfg);
  cr_assert_eq(rc, 0, "widen rows --config %s failed", cfg);
  json_t *a = json_array();
  for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
    nl = strchr(l, '\n');
    if (nl) *nl = 0;
    if (!*l) continue;
    json_t *j = json_loads(l, 0, NULL);
    cr_assert_not_null(j, "bad rows line %s", l);
    json_array_append_new(a, j);
  }
  free(out);
  return a;
}

/* An orders row image of the demo's orders stream. */
static void order(wd_buf_t *b, int id, const char *cur, const char *amount, int version) {
  wd_buf_printf(b,
                "{\"order_id\":%d,\"customer\":\"hand-%d\",\"amount\":\"%s\",\"currency\":\"%s\","
                "\"order_ts\":1700000000000,\"order_version\":%d}",
                id, id, amount, cur, version);
}

static void event(wd_buf_t *b, const char *op, int id, const char *bcur, const char *bamt, int bver, const char *acur,
                  const char *aamt, int aver) {
  wd_buf_printf(b, "{\"op\":\"%s\",\"before\":", op);
  if (bcur) order(b, id, bcur, bamt, bver);
  else wd_buf_printf(b, "null");
  wd_buf_printf(b, ",\"after\":");
  if (acur) order(b, id, acur, aamt, aver);
  else wd_buf_printf(b, "null");
  wd_buf_printf(b, "}\n");
}

Test(chained, aggregation_over_the_walkthrough_table_gives_the_sql_sums, .timeout = 400) {
  char dir[256], prefix[96], cfg_a[320], cfg_b[320], path[512], hand[320];
  snprintf(dir, sizeof(dir), "/tmp/widen-chained-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(prefix, sizeof(prefix), "wdtest.%d%ld.chain.", (int)getpid(), (long)time(NULL) % 100000);
  snprintf(cfg_a, sizeof(cfg_a), "%s/a.yaml", dir);
  snprintf(cfg_b, sizeof(cfg_b), "%s/b.yaml", dir);
  snprintf(hand, sizeof(hand), "%s/hand.jsonl", dir);

  /* A: the walkthrough's table, as configs/demo.yaml has it (topics and state moved) */
  source_path(path, sizeof(path), "configs/demo.yaml");
  char *y = wd_it_read_file(path);
  char group[200], state[400];
  snprintf(group, sizeof(group), "  group.id: %sa\n", prefix);
  y = wd_it_replace(y, "  group.id: widen-demo\n", group);
  y = wd_it_replace(y, "shop.", prefix);
  snprintf(state, sizeof(state), "%s/state-a", dir);
  y = wd_it_replace(y, "./state/demo", state);
  write_file(cfg_a, y);
  free(y);

  /* B: sum(amount) per currency over A's changelog topic */
  wd_buf_t b = {0};
  wd_buf_printf(&b,
                "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: %sb\n"
                "table:\n  name: revenue\n  schema:\n"
                "    - {name: currency, type: STRING NOT NULL}\n    - {name: amount, type: \"DECIMAL(18,2)\"}\n"
                "  primary-key: [currency]\n  options:\n    merge-engine: aggregation\n"
                "    fields.amount.aggregate-function: sum\n    changelog-producer: lookup\n"
                "sources:\n  - {name: wide, topic: %sorders_wide, format: debezium-json,"
                " columns: {currency: , amount: }}\n"
                "sink:\n  topic: %srevenue\n  format: changelog-json\n  dead-letter-topic: %srevenue.dlq\n"
                "state:\n  dir: %s/state-b\n",
                prefix, prefix, prefix, prefix, dir);
  wd_buf_putc(&b, 0);
  write_file(cfg_b, (char *)b.data);
  wd_buf_reset(&b);

  /* the generated workload, with deletes and order_id key changes */
  int rc;
  char *out = sh(&rc,
                 "'%s' produce --generate --topic-prefix %s --keys 100 --records 2000 --seed 23 "
                 "--delete-ratio 0.05 --key-change-ratio 0.05 2>&1",
                 wd_it_widen_bin(), prefix);
  cr_assert_eq(rc, 0, "produce failed: %s", out);
  free(out);
  /* hand-written orders events: a row's currency NULL -> XAA -> XBB -> XAA -> NULL (a delete of
   * the orders stream clears its columns), another XBB -> XAA that stays */
  event(&b, "c", 100001, NULL, NULL, 0, "XAA", "10.00", 1);
  event(&b, "u", 100001, "XAA", "10.00", 1, "XBB", "12.50", 2);
  event(&b, "u", 100001, "XBB", "12.50", 2, "XAA", "7.25", 3);
  event(&b, "d", 100001, "XAA", "7.25", 3, NULL, NULL, 0);
  event(&b, "c", 100002, NULL, NULL, 0, "XBB", "3.00", 1);
  event(&b, "u", 100002, "XBB", "3.00", 1, "XAA", "4.00", 2);
  wd_buf_putc(&b, 0);
  write_file(hand, (char *)b.data);
  out = sh(&rc, "'%s' produce --topic %sorders --file '%s' --key-field order_id 2>&1", wd_it_widen_bin(), prefix, hand);
  cr_assert_eq(rc, 0, "produce failed: %s", out);
  free(out);

  run_to_idle(cfg_a);
  run_to_idle(cfg_b);

  /* what A's changelog holds: update pairs by the direction of their currency, deletes */
  char topic[200];
  snprintf(topic, sizeof(topic), "%sorders_wide", prefix);
  json_t *cl = wd_it_read_changelog(topic);
  int null_to_v = 0, v_to_null = 0, v_to_other = 0, deletes = 0, null_inserts = 0;
  for (size_t i = 0; i < json_array_size(cl); i++) {
    json_t *r = json_array_get(cl, i);
    const char *op = json_string_value(json_object_get(r, "op"));
    const json_t *cur = json_object_get(json_object_get(r, "row"), "currency");
    if (!strcmp(op, "-D")) deletes++;
    if (!strcmp(op, "+I") && json_is_null(cur)) null_inserts++;
    if (strcmp(op, "-U") || i + 1 == json_array_size(cl)) continue;
    const json_t *next = json_object_get(json_object_get(json_array_get(cl, i + 1), "row"), "currency");
    if (json_is_null(cur) && !json_is_null(next)) null_to_v++;
    if (!json_is_null(cur) && json_is_null(next)) v_to_null++;
    if (!json_is_null(cur) && !json_is_null(next) && !json_equal(cur, next)) v_to_other++;
  }
  fprintf(stderr,
          "chained: A's changelog: %zu rows; update pairs NULL->value %d, value->NULL %d, value->other %d; "
          "-D %d; +I with NULL currency %d\n",
          json_array_size(cl), null_to_v, v_to_null, v_to_other, deletes, null_inserts);
  cr_expect_gt(null_to_v, 0);
  cr_expect_gt(v_to_null, 0);
  cr_expect_gt(v_to_other, 0);
  json_decref(cl);

  /* the SQL sums over A's rows */
  sqlite3 *db = NULL;
  cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(db, "CREATE TABLE wide(currency TEXT, cents INTEGER)", NULL, NULL, NULL), SQLITE_OK);
  json_t *ra = rows(cfg_a);
  sqlite3_stmt *ins = NULL;
  cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO wide VALUES(?, ?)", -1, &ins, NULL), SQLITE_OK);
  size_t with_currency = 0;
  for (size_t i = 0; i < json_array_size(ra); i++) {
    const json_t *r = json_array_get(ra, i);
    const json_t *cur = json_object_get(r, "currency"), *amt = json_object_get(r, "amount");
    if (json_is_string(cur)) {
      sqlite3_bind_text(ins, 1, json_string_value(cur), -1, SQLITE_TRANSIENT);
      with_currency++;
    } else {
      sqlite3_bind_null(ins, 1);
    }
    if (json_is_null(amt) || !amt) sqlite3_bind_null(ins, 2);
    else sqlite3_bind_int64(ins, 2, cents(amt));
    cr_assert_eq(sqlite3_step(ins), SQLITE_DONE);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  cr_assert_gt(with_currency, 50, "only %zu of A's rows have a currency", with_currency);
  json_t *want = json_object();
  sqlite3_stmt *q = NULL;
  cr_assert_eq(sqlite3_prepare_v2(db,
                                  "SELECT currency, SUM(cents) FROM wide WHERE currency IS NOT NULL "
                                  "GROUP BY currency",
                                  -1, &q, NULL),
               SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW)
    json_object_set_new(want, (const char *)sqlite3_column_text(q, 0), json_integer(sqlite3_column_int64(q, 1)));
  sqlite3_finalize(q);
  sqlite3_close(db);
  json_decref(ra);
  cr_expect(json_is_integer(json_object_get(want, "XAA")), "the hand-written row 100002 (XAA 4.00) is in A");

  /* B's rows: the same sums; a currency with no row left sums to 0 */
  json_t *rb = rows(cfg_b);
  json_t *got = json_object();
  for (size_t i = 0; i < json_array_size(rb); i++) {
    const json_t *r = json_array_get(rb, i);
    const char *cur = json_string_value(json_object_get(r, "currency"));
    cr_assert_not_null(cur);
    const json_t *amt = json_object_get(r, "amount");
    long long c = amt && !json_is_null(amt) ? cents(amt) : 0;
    if (c != 0 || json_object_get(want, cur)) json_object_set_new(got, cur, json_integer(c));
  }
  json_decref(rb);
  char *x = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS), *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
  fprintf(stderr, "chained: sums in cents: aggregation %s, SQL %s\n", x, w);
  cr_expect(json_equal(got, want), "sum(amount) per currency:\n got  %s\n want %s", x, w);
  free(x);
  free(w);
  json_decref(got);
  json_decref(want);
  wd_buf_free(&b);
  free(sh(&rc, "rm -rf '%s'", dir));
}
