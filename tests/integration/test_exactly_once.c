/*
 * tests/integration/test_exactly_once.c — the crash points of docs/exactly-once.md, each hit
 * deterministically by the fault hook (WIDEN_FAULT=<point>:<n> kills `widen run` with SIGKILL the
 * n-th time it reaches the point), on the real Kafka broker (WIDEN_TEST_BROKERS).
 *
 * The table has one source topic: every change of a key is in one partition, so the changelog of
 * each key depends only on that partition's order and a run with crashes must give, per key,
 * exactly the changelog of a clean run (read read_committed): nothing lost, nothing repeated,
 * nothing else. The final state must equal the clean run's too.
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

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "changelog/changelog.h"
#include "common/json.h"
#include "ingest/consumer.h"
#include "join/state.h"
#include "sink/producer.h"
#include "tests/support/integration.h"
#include "tests/support/json_same.h"

extern char **environ;

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
  char state[320];
  char out[200];
} env_t;

/* One orders stream into a partial-update table (the generator's orders columns), small commits
 * so that a run has many, static membership so that a restarted process rejoins at once. */
static const char *const YAML = "kafka:\n"
                                "  bootstrap.servers: BROKERS\n"
                                "  group.id: PREFIXgroup\n"
                                "  properties:\n"
                                "    session.timeout.ms: 6000\n"
                                "    group.instance.id: PREFIXINSTANCE\n"
                                "EXTRA_PROPS"
                                "table:\n"
                                "  name: orders_t\n"
                                "  schema:\n"
                                "    - {name: order_id, type: BIGINT NOT NULL}\n"
                                "    - {name: customer, type: STRING}\n"
                                "    - {name: amount, type: \"DECIMAL(10,2)\"}\n"
                                "    - {name: currency, type: STRING}\n"
                                "    - {name: order_version, type: BIGINT}\n"
                                "  primary-key: [order_id]\n"
                                "  options:\n"
                                "    merge-engine: partial-update\n"
                                "    fields.order_version.sequence-group: customer,amount,currency\n"
                                "    partial-update.remove-record-on-sequence-group: order_version\n"
                                "sources:\n"
                                "  - name: orders\n"
                                "    topic: PREFIXorders\n"
                                "    format: debezium-json\n"
                                "    columns: [order_id, customer, amount, currency, order_version]\n"
                                "sink:\n"
                                "  topic: PREFIXout\n"
                                "state:\n"
                                "  dir: STATE\n"
                                "pipeline:\n"
                                "  batch-size: 50\n"
                                "  commit-max-records: 150\n"
                                "  processing-guarantee: GUARANTEE\n"
                                "  tasks: TASKS\n";

/* Writes e's config: e->prefix, e->state and the member's instance id set. */
static const char *extra_props = "";

static const char *yaml_template = YAML; /* the repartition suite sets YAML3 */

/* The tests of the per-commit protocol's own steps (the prepared marker, the undo image) set it:
 * the config then says state.flush-interval-ms: 0, so that they test those steps whatever the
 * option's default (the deferred flush skips them: docs/exactly-once.md "Deferred state flush"). */
static bool per_commit = false;

static void write_config(const env_t *e, const char *instance, const char *guarantee, const char *tasks) {
  char *y = strdup(yaml_template);
  if (per_commit) y = wd_it_replace(y, "  dir: STATE\n", "  dir: STATE\n  flush-interval-ms: 0\n");
  y = wd_it_replace(y, "EXTRA_PROPS", extra_props);
  y = wd_it_replace(y, "INSTANCE", instance);
  y = wd_it_replace(y, "PREFIX", e->prefix);
  y = wd_it_replace(y, "BROKERS", wd_it_brokers());
  y = wd_it_replace(y, "STATE", e->state);
  y = wd_it_replace(y, "GUARANTEE", guarantee);
  y = wd_it_replace(y, "TASKS", tasks);
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fputs(y, f);
  fclose(f);
  free(y);
}

static void env_init_tasks(env_t *e, const char *name, const char *guarantee, const char *tasks) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-eo-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.eo%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  snprintf(e->out, sizeof(e->out), "%sout", e->prefix);
  write_config(e, "instance", guarantee, tasks);
}

static void env_init(env_t *e, const char *name, const char *guarantee) {
  env_init_tasks(e, name, guarantee, "single");
}

/* Another member m of base's group (same topics and group, its own state directory and
 * group.instance.id `name`). */
/* Appends line to e's config (its last section is `pipeline:`, so "  key: value" sets a pipeline option). */
static void env_append(const env_t *e, const char *line) {
  FILE *f = fopen(e->cfg, "a");
  cr_assert_not_null(f);
  fputs(line, f);
  fclose(f);
}

static void env_member(const env_t *base, env_t *m, const char *name, const char *guarantee, const char *tasks) {
  *m = *base;
  snprintf(m->dir, sizeof(m->dir), "/tmp/widen-eo-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(m->dir));
  snprintf(m->cfg, sizeof(m->cfg), "%s/widen.yaml", m->dir);
  snprintf(m->state, sizeof(m->state), "%s/state", m->dir);
  write_config(m, name, guarantee, tasks);
}

static void env_done(env_t *e) {
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e->dir);
}

/* Starts `widen run`, stopping after idle_ms without input; fault (WIDEN_FAULT) may be NULL; its
 * stderr goes to the file log (truncated) when log is not NULL. */
static pid_t spawn_widen_log(const env_t *e, const char *fault, const char *idle_ms, const char *log) {
  const char *argv[] = {wd_it_widen_bin(), "run", "--config", e->cfg, "--quiet", "--max-idle-ms", idle_ms, NULL};
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
  return pid;
}

static pid_t spawn_widen(const env_t *e, const char *fault, const char *idle_ms) {
  return spawn_widen_log(e, fault, idle_ms, NULL);
}

static int wait_exit(pid_t pid) {
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs `widen run` until it is idle for 2 s (or the fault hook kills it); returns its exit status
 * (128 + signal when killed). fault may be NULL. */
static int run_widen(const env_t *e, const char *fault) {
  pid_t pid = spawn_widen(e, fault, "2000");
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The share of key-changing updates produce_orders generates (0: none; a test sets it). */
static double key_change_ratio = 0;

/* Produces the generator's orders stream (records [skip, records) of seed) to both envs' topics. */
static void produce_orders(const env_t *const *envs, size_t nenvs, uint64_t records, uint64_t seed, uint64_t skip) {
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  const char *streams[] = {"orders"};
  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = 150;
  go.records = records;
  go.streams = streams;
  go.nstreams = 1;
  go.delete_ratio = 0.04;
  go.key_change_ratio = key_change_ratio;
  wd_gen_t *g = NULL;
  cr_assert_null(wd_gen_new(&go, &g));
  wd_gen_msg_t m;
  char topic[200];
  for (uint64_t i = 0; wd_gen_next(g, &m); i++) {
    if (i < skip) continue;
    for (size_t k = 0; k < nenvs; k++) {
      snprintf(topic, sizeof(topic), "%sorders", envs[k]->prefix);
      cr_assert_null(wd_producer_send(p, topic, m.key, m.key_len, m.value, m.value_len, NULL, 0));
    }
  }
  wd_error_t *err = wd_producer_wait_acked(p, 60000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_gen_destroy(g);
  wd_producer_destroy(p);
}

/* The output topic read read_committed (librdkafka consumer, assign mode), as an object
 * key -> array of {"op","row"} in order. */
static json_t *changelog_by_key(const char *topic, size_t *total) {
  json_t *lines = wd_it_read_changelog(topic), *out = json_object(), *j;
  size_t i;
  *total = json_array_size(lines);
  json_array_foreach(lines, i, j) {
    char *key = json_dumps(json_object_get(j, "key"), JSON_COMPACT | JSON_SORT_KEYS);
    json_t *seq = json_object_get(out, key);
    if (!seq) json_object_set_new(out, key, seq = json_array());
    json_array_append_new(seq,
                          json_pack("{s:O,s:O}", "op", json_object_get(j, "op"), "row", json_object_get(j, "row")));
    free(key);
  }
  json_decref(lines);
  return out;
}

static int add_row(void *ctx, const wd_row_t *row) {
  json_t *rows = ((void **)ctx)[0];
  const wd_schema_t *schema = ((void **)ctx)[1];
  json_array_append_new(rows, wd_row_to_json(schema, row));
  return 0;
}

/* The env's final rows (state store opened after widen exited), as a JSON array in key order. */
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
  return rows;
}

/* Compares the per-key changelogs of a run with crashes to the clean run's; every difference is
 * reported with its key. */
static void assert_same_changelog(json_t *clean, json_t *got, size_t nclean, size_t ngot) {
  const char *key;
  json_t *seq;
  size_t bad = 0;
  json_object_foreach(clean, key, seq) {
    json_t *g = json_object_get(got, key);
    if (!g || !wd_test_json_same(seq, g)) {
      if (bad++ < 5) {
        char *a = json_dumps(seq, JSON_COMPACT), *b = g ? json_dumps(g, JSON_COMPACT) : strdup("(none)");
        fprintf(stderr, "key %s: clean %s\n  with crashes %s\n", key, a, b);
        free(a);
        free(b);
      }
    }
  }
  json_object_foreach(got, key, seq) {
    if (!json_object_get(clean, key) && bad++ < 5) fprintf(stderr, "key %s only in the run with crashes\n", key);
  }
  cr_assert_eq(bad, 0, "%zu keys differ from the clean run (%zu changes clean, %zu with crashes)", bad, nclean, ngot);
  cr_assert_eq(nclean, ngot);
}

/* A clean run and a run killed at `point` (the n-th time), restarted, over the same input that
 * is produced in two parts (the second while the first run is gone): same changelog per key,
 * read read_committed, and the same final rows. */
static void crash_point(const char *point, int n) {
  per_commit = !strcmp(point, "after-prepare");
  env_t clean, crash;
  char name[64];
  snprintf(name, sizeof(name), "c%.20s", point);
  env_init(&clean, "clean", "exactly-once");
  env_init(&crash, name, "exactly-once");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 2000, 42, 0);
  char fault[64];
  snprintf(fault, sizeof(fault), "%s:%d", point, n);
  int rc = run_widen(&crash, fault);
  cr_assert_eq(rc, 128 + SIGKILL, "the fault hook at %s did not fire (exit %d)", fault, rc);
  produce_orders(both, 2, 3000, 42, 2000);
  rc = run_widen(&crash, NULL);
  cr_assert_eq(rc, 0, "the restart after %s exited with %d", fault, rc);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(crash.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert_gt(json_array_size(ra), 50);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

/* A fatal producer error that is not fencing at `point` (WIDEN_FAULT=fatal-<point>:<n>: the producer
 * raises INVALID_TXN_STATE there, as a transaction coordinator answers after a broker restart): widen
 * does not stop; it re-creates the producer (same transactional.id), resolves the open commit (taken
 * back when its commit was not reached, by the group's offsets when it was), rewinds and redoes. The
 * output read read_committed equals a clean run's per key (nothing lost or repeated), and so do the
 * final rows, after a second run over more input. */
static void fatal_point(const char *point, int n) {
  per_commit = !strcmp(point, "after-prepare");
  env_t clean, fat;
  char name[64];
  snprintf(name, sizeof(name), "f%.20s", point);
  env_init(&clean, "fclean", "exactly-once");
  env_init(&fat, name, "exactly-once");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, fat.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &fat};
  produce_orders(both, 2, 2000, 43, 0);
  char fault[64], log[400];
  snprintf(fault, sizeof(fault), "fatal-%s:%d", point, n);
  snprintf(log, sizeof(log), "%s/fatal.log", fat.dir);
  int rc = wait_exit(spawn_widen_log(&fat, fault, "2000", log));
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f);
  static char buf[1 << 20];
  size_t len = fread(buf, 1, sizeof(buf) - 1, f);
  buf[len] = 0;
  fclose(f);
  cr_assert_eq(rc, 0,
               "widen stopped (exit %d) on a fatal producer error at %s instead of re-creating the "
               "producer:\n%s",
               rc, fault, len > 3000 ? buf + len - 3000 : buf);
  cr_assert_not_null(strstr(buf, "fault hook: the producer raises a fatal error"),
                     "the fault hook at %s did not "
                     "fire:\n%s",
                     fault, len > 3000 ? buf + len - 3000 : buf);
  cr_assert_not_null(strstr(buf, "re-creating it"), "no re-creation logged:\n%s", len > 3000 ? buf + len - 3000 : buf);
  /* the open commit was taken back: before its commit at once; after it, once the group's offsets
   * said its transaction did not commit (the new producer's init aborted it) */
  const char *resolved = strcmp(point, "during-commit") ? "aborting commit" : "the transaction did not commit";
  /* (after-commit, after-finalize: the commit was made; the next one meets the fatal producer) */
  if (strcmp(point, "after-commit") && strcmp(point, "after-finalize"))
    cr_assert_not_null(strstr(buf, resolved), "no \"%s\" logged:\n%s", resolved, len > 3000 ? buf + len - 3000 : buf);
  produce_orders(both, 2, 3000, 43, 2000);
  cr_assert_eq(run_widen(&fat, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(fat.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&fat);
  cr_assert_gt(json_array_size(ra), 50);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&fat);
}

Test(exactly_once, fatal_during_produce_recreates_the_producer, .timeout = 200) { fatal_point("during-produce", 4); }
Test(exactly_once, fatal_after_prepare_recreates_the_producer, .timeout = 200) { fatal_point("after-prepare", 4); }
Test(exactly_once, fatal_during_commit_recreates_the_producer, .timeout = 200) { fatal_point("during-commit", 4); }
Test(exactly_once, fatal_before_begin_recreates_the_producer, .timeout = 200) { fatal_point("before-begin", 4); }
Test(exactly_once, fatal_after_commit_recreates_the_producer, .timeout = 200) { fatal_point("after-commit", 4); }
Test(exactly_once, fatal_after_finalize_recreates_the_producer, .timeout = 200) { fatal_point("after-finalize", 4); }

/* A producer that stays fatal (WIDEN_FAULT=fatal-during-produce:2+: every commit from the 2nd on) is
 * re-created WD_RECREATE_MAX (5) times, then widen stops with E_PRODUCER_FATAL naming the cause
 * (exit 1), as before this bound existed; a run after it finishes the input and the output read
 * read_committed equals a clean run's. */
Test(exactly_once, a_producer_that_stays_fatal_stops_at_the_bound, .timeout = 200) {
  env_t clean, fat;
  env_init(&clean, "bclean", "exactly-once");
  env_init(&fat, "bfatal", "exactly-once");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, fat.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &fat};
  produce_orders(both, 2, 2000, 44, 0);
  char log[400];
  snprintf(log, sizeof(log), "%s/fatal.log", fat.dir);
  int rc = wait_exit(spawn_widen_log(&fat, "fatal-during-produce:2+", "2000", log));
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f);
  static char buf[1 << 20];
  size_t len = fread(buf, 1, sizeof(buf) - 1, f);
  buf[len] = 0;
  fclose(f);
  const char *tail = len > 3000 ? buf + len - 3000 : buf;
  cr_assert_eq(rc, 1, "a producer fatal at every commit: exit %d, not 1:\n%s", rc, tail);
  cr_assert_not_null(strstr(buf, "re-creation 5 within 300 s"), "not re-created 5 times:\n%s", tail);
  cr_assert_null(strstr(buf, "re-creation 6 within"), "re-created past the bound:\n%s", tail);
  cr_assert_not_null(strstr(buf, "E_PRODUCER_FATAL: the producer failed fatally again"), "no bound message:\n%s", tail);
  cr_assert_not_null(strstr(buf, "INVALID_TXN_STATE"), "the cause is not named:\n%s", tail);
  produce_orders(both, 2, 3000, 44, 2000);
  cr_assert_eq(run_widen(&fat, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(fat.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  assert_same_changelog(a, b, nc, ng);
  json_decref(a);
  json_decref(b);
  env_done(&clean);
  env_done(&fat);
}

Test(exactly_once, crash_before_begin, .timeout = 200) { crash_point("before-begin", 4); }
Test(exactly_once, crash_during_produce, .timeout = 200) { crash_point("during-produce", 4); }
Test(exactly_once, crash_after_prepare, .timeout = 200) { crash_point("after-prepare", 4); }
Test(exactly_once, crash_during_commit, .timeout = 200) { crash_point("during-commit", 4); }
Test(exactly_once, crash_after_commit, .timeout = 200) { crash_point("after-commit", 4); }
Test(exactly_once, crash_after_finalize, .timeout = 200) { crash_point("after-finalize", 4); }

/* The length of meta value name in e's state store (widen not running), 0 when absent. */
static size_t meta_len(const env_t *e, const char *name) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_rocksdb(e->state, NULL, &st));
  uint8_t *v = NULL;
  size_t vlen = 0;
  wd_error_t *err = wd_store_get_meta(st, name, &v, &vlen);
  cr_assert_null(err, "%s", err ? err->message : "");
  free(v);
  wd_store_close(st);
  return vlen;
}

/* The prepared marker does not grow with the commit (its rows are written once, in the
 * state family, and their prior entries are the undo image's): a process killed after preparing
 * its first commit of 20 records and one killed after preparing a first commit of 1500 records
 * (one source partition) leave markers of about the same size (the partitions decide it), while their undo
 * images differ by the rows; both restarts then recover without a wipe. */
/* A commit left prepared by an exactly-once run (its rows written, its offsets not) and a restart
 * under at-least-once: the rows are taken back (undo image) and the records read again, so the
 * final rows are the clean run's. */
Test(exactly_once, at_least_once_restart_takes_a_prepared_commit_back, .timeout = 200) {
  per_commit = true;
  env_t clean, crash;
  env_init(&clean, "aclean", "exactly-once");
  env_init(&crash, "aprep", "exactly-once");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 2000, 11, 0);
  cr_assert_eq(run_widen(&crash, "after-prepare:3"), 128 + SIGKILL);
  cr_assert_gt(meta_len(&crash, "commit/undo"), 0, "no commit left prepared");
  write_config(&crash, "instance", "at-least-once", "single");
  cr_assert_eq(run_widen(&crash, NULL), 0);
  cr_assert_eq(meta_len(&crash, "commit/prepared"), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert_gt(json_array_size(ra), 50);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

Test(exactly_once, prepared_marker_size_does_not_depend_on_the_commit, .timeout = 200) {
  per_commit = true;
  env_t small, large;
  env_init(&small, "msmall", "exactly-once");
  env_init(&large, "mlarge", "exactly-once");
  /* one commit of exactly commit-max-records records: no interval ends it earlier */
  for (int i = 0; i < 2; i++) {
    const env_t *e = i ? &large : &small;
    char *y = wd_it_read_file(e->cfg);
    y = wd_it_replace(y, "commit-max-records: 150", i ? "commit-max-records: 1500" : "commit-max-records: 20");
    if (!i) y = wd_it_replace(y, "batch-size: 50", "batch-size: 10");
    FILE *f = fopen(e->cfg, "w");
    cr_assert_not_null(f);
    fputs(y, f);
    fclose(f);
    free(y);
    env_append(e, "  commit-interval-ms: 600000\n");
    /* one partition: the marker's size goes with the partitions of the commit, so both have one */
    wd_it_create_topic(strcat(strcpy((char[200]){0}, e->prefix), "orders"), 1);
  }
  const env_t *both[] = {&small, &large};
  produce_orders(both, 2, 2000, 7, 0);
  cr_assert_eq(run_widen(&small, "after-prepare:1"), 128 + SIGKILL);
  cr_assert_eq(run_widen(&large, "after-prepare:1"), 128 + SIGKILL);
  size_t ms = meta_len(&small, "commit/prepared"), ml = meta_len(&large, "commit/prepared");
  size_t us = meta_len(&small, "commit/undo"), ul = meta_len(&large, "commit/undo");
  fprintf(stderr, "prepared marker %zu / %zu bytes, undo image %zu / %zu bytes (20 / 1500 records)\n", ms, ml, us, ul);
  cr_assert_gt(ms, 0, "no marker after prepare");
  cr_assert_gt(us, 0, "no undo image after prepare");
  cr_assert_gt(ul, 4 * us, "the large commit changes more rows: its undo image is larger (%zu vs %zu)", ul, us);
  cr_assert_lt(ml, 1024, "the marker of a commit of 1500 records is %zu bytes", ml);
  cr_assert_leq(ml > ms ? ml - ms : ms - ml, 32, "marker sizes %zu and %zu differ by more than a few digits", ms, ml);
  /* both recover (the transaction was aborted: the undo image is applied) and finish the input */
  cr_assert_eq(run_widen(&small, NULL), 0);
  cr_assert_eq(run_widen(&large, NULL), 0);
  cr_assert_eq(meta_len(&small, "commit/prepared"), 0);
  cr_assert_eq(meta_len(&large, "commit/undo"), 0);
  json_t *ra = state_rows(&small), *rb = state_rows(&large);
  cr_assert(wd_test_json_same(ra, rb), "the same input gives other rows");
  json_decref(ra);
  json_decref(rb);
  env_done(&small);
  env_done(&large);
}

/* Losing the state directory: the restarted process rebuilds its state without output up to the
 * group's committed offsets (single task: from the sources; per-partition tasks: from the state
 * changelog topic), so downstream sees nothing twice, and the rebuilt rows equal the lost ones. */
static void lost_state(const char *tasks) {
  env_t clean, lost;
  env_init_tasks(&clean, "clean", "exactly-once", tasks);
  env_init_tasks(&lost, "lost", "exactly-once", tasks);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, lost.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &lost};
  produce_orders(both, 2, 2000, 7, 0);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  json_t *before = state_rows(&lost);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lost.state);
  cr_assert_eq(system(cmd), 0);
  if (!strcmp(tasks, "per-partition")) {
    /* restored from the changelog alone (no new input): the same rows as before the loss */
    cr_assert_eq(run_widen(&lost, NULL), 0);
    json_t *after = state_rows(&lost);
    cr_assert_gt(json_array_size(before), 50);
    cr_assert(wd_test_json_same(before, after), "the rows restored from the changelog differ from the lost ones");
    json_decref(after);
  }
  json_decref(before);
  produce_orders(both, 2, 3000, 7, 2000);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(lost.out, &ng);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&lost);
  cr_assert(wd_test_json_same(ra, rb), "the rebuilt rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&lost);
}

Test(exactly_once, lost_state_is_rebuilt_from_the_sources, .timeout = 200) { lost_state("single"); }
Test(scale_out, lost_state_is_restored_from_the_changelog, .timeout = 200) { lost_state("per-partition"); }

/* The same kill under at-least-once repeats output: the output of the commit was acknowledged,
 * its state not written (the guarantee's difference, and proof that the comparison above can
 * see repeats). */
Test(exactly_once, at_least_once_repeats_after_a_kill, .timeout = 200) {
  env_t clean, crash;
  env_init(&clean, "aclean", "at-least-once");
  env_init(&crash, "acrash", "at-least-once");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 3000, 9, 0);
  cr_assert_eq(run_widen(&crash, "after-commit:4"), 128 + SIGKILL);
  cr_assert_eq(run_widen(&crash, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(crash.out, &ng);
  cr_assert_gt(ng, nc, "at-least-once after a kill between acknowledgement and state write repeats output (%zu vs %zu)",
               ng, nc);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

/* ---- scale-out: partitions moving between members -------------------------------------------- */

/* Two members A and B with their own state directories take turns in one group (the stale-state
 * scenario): A runs, B runs on, A runs again with its stale local state. A's tasks are behind the
 * group's committed offsets, so it rebuilds them without output: per key the changelog equals a
 * clean single run's (nothing repeated, no old version re-emitted) and the last output record of
 * every key is its current row. */
static void members_take_turns(const char *tasks) {
  env_t clean, a, b;
  env_init_tasks(&clean, "tclean", "exactly-once", tasks);
  env_init_tasks(&a, "turnA", "exactly-once", tasks);
  env_member(&a, &b, "turnB", "exactly-once", tasks);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 4);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 4);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1500, 11, 0);
  cr_assert_eq(run_widen(&a, NULL), 0);
  produce_orders(both, 2, 3000, 11, 1500);
  cr_assert_eq(run_widen(&b, NULL), 0);
  produce_orders(both, 2, 4500, 11, 3000);
  cr_assert_eq(run_widen(&a, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&a);
  cr_assert(wd_test_json_same(ra, rb), "A's final rows differ from the clean run's");
  json_decref(x);
  json_decref(y);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

Test(scale_out, members_take_turns_single_task, .timeout = 240) { members_take_turns("single"); }
Test(scale_out, members_take_turns_per_partition, .timeout = 240) { members_take_turns("per-partition"); }

/* Two live members share the partitions while input flows; one is killed with SIGKILL (its
 * partitions move to the other after session.timeout.ms), then restarted. Read read_committed,
 * the output has, per key, exactly the changelog of a clean single run. */
Test(scale_out, live_members_with_a_kill, .timeout = 280) {
  env_t clean, a, b;
  env_init_tasks(&clean, "lclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "liveA", "exactly-once", "per-partition");
  env_member(&a, &b, "liveB", "exactly-once", "per-partition");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 4);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 4);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1000, 13, 0);
  char log_a[400], log_b[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "12000", log_a), pb = spawn_widen_log(&b, NULL, "12000", log_b);
  /* both joined: each moved a task to RUNNING (app/runtime/tasks.c), so the partitions are shared */
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  for (uint64_t at = 1000; at < 4000; at += 500) {
    produce_orders(both, 2, at + 500, 13, at);
    usleep(400 * 1000);
  }
  /* the member killed owned tasks */
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 0), "B, killed now, owned no task");
  cr_assert_eq(kill(pb, SIGKILL), 0);
  cr_assert_eq(wait_exit(pb), 128 + SIGKILL);
  produce_orders(both, 2, 5000, 13, 4000);
  pb = spawn_widen(&b, NULL, "12000");
  produce_orders(both, 2, 6000, 13, 5000);
  cr_assert_eq(wait_exit(pa), 0);
  cr_assert_eq(wait_exit(pb), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_decref(x);
  json_decref(y);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* A second process with the same transactional.id fences the first: the first stops with a
 * message that says so and a non-zero exit, and the output still has every change once. */
Test(exactly_once, fenced_producer_stops_with_a_message, .timeout = 200) {
  env_t clean, a, b;
  char props[200];
  env_init(&clean, "fclean", "exactly-once");
  snprintf(props, sizeof(props), "    transactional.id: %sshared-txn\n", clean.prefix);
  extra_props = props;
  env_init(&a, "fenceA", "exactly-once");
  env_member(&a, &b, "fenceB", "exactly-once", "single");
  extra_props = "";
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 2);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 2);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1000, 21, 0);
  char log[400];
  snprintf(log, sizeof(log), "%s/a.log", a.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "15000", log);
  usleep(5000 * 1000);
  pid_t pb = spawn_widen(&b, NULL, "6000"); /* same transactional.id: fences A */
  for (uint64_t at = 1000; at < 3000; at += 250) {
    produce_orders(both, 2, at + 250, 21, at);
    usleep(300 * 1000);
  }
  int rca = wait_exit(pa);
  cr_assert_eq(wait_exit(pb), 0);
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f);
  char buf[65536];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = 0;
  fclose(f);
  cr_assert_eq(rca, 1, "the fenced process exited with %d:\n%s", rca, buf);
  cr_assert_not_null(strstr(buf, "fenced: another widen process"), "no fencing message:\n%s", buf);
  cr_assert_eq(run_widen(&b, NULL), 0); /* whatever is left */
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_decref(x);
  json_decref(y);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* ---- scale-out with repartition topics ------------------------------------------------------ */

/* Three streams into the demo's interleaving-independent partial-update table (one sequence
 * group per stream): orders co-partitioned (6 partitions, keyed by order_id), payments with 3
 * partitions (repartitioned: auto), shipments with 6 partitions but keyed by a shipment id
 * (repartition: true). */
static const char *const YAML3 = "kafka:\n"
                                 "  bootstrap.servers: BROKERS\n"
                                 "  group.id: PREFIXgroup\n"
                                 "  properties:\n"
                                 "    session.timeout.ms: 6000\n"
                                 "    group.instance.id: PREFIXINSTANCE\n"
                                 "table:\n"
                                 "  name: wide\n"
                                 "  schema:\n"
                                 "    - {name: order_id, type: BIGINT NOT NULL}\n"
                                 "    - {name: customer, type: STRING}\n"
                                 "    - {name: amount, type: \"DECIMAL(10,2)\"}\n"
                                 "    - {name: order_version, type: BIGINT}\n"
                                 "    - {name: pay_status, type: STRING}\n"
                                 "    - {name: pay_version, type: BIGINT}\n"
                                 "    - {name: ship_status, type: STRING}\n"
                                 "    - {name: ship_version, type: BIGINT}\n"
                                 "  primary-key: [order_id]\n"
                                 "  options:\n"
                                 "    merge-engine: partial-update\n"
                                 "    fields.order_version.sequence-group: customer,amount\n"
                                 "    fields.pay_version.sequence-group: pay_status\n"
                                 "    fields.ship_version.sequence-group: ship_status\n"
                                 "    changelog-producer: lookup\n"
                                 "    changelog-producer.row-deduplicate: true\n"
                                 "sources:\n"
                                 "  - name: orders\n"
                                 "    topic: PREFIXorders\n"
                                 "    columns: [order_id, customer, amount, order_version]\n"
                                 "  - name: payments\n"
                                 "    topic: PREFIXpayments\n"
                                 "    columns: [order_id, pay_status, pay_version]\n"
                                 "  - name: shipments\n"
                                 "    topic: PREFIXshipments\n"
                                 "    repartition: REPARTITION\n"
                                 "    columns: [order_id, ship_status, ship_version]\n"
                                 "sink:\n"
                                 "  topic: PREFIXout\n"
                                 "state:\n"
                                 "  dir: STATE\n"
                                 "pipeline:\n"
                                 "  batch-size: 50\n"
                                 "  commit-max-records: 150\n"
                                 "  processing-guarantee: GUARANTEE\n"
                                 "  tasks: TASKS\n";

static void env3g(env_t *e, const char *name, const char *repartition, const char *guarantee) {
  const char *saved = yaml_template;
  char *y = wd_it_replace(strdup(YAML3), "REPARTITION", repartition);
  yaml_template = y;
  env_init_tasks(e, name, guarantee, "per-partition");
  yaml_template = saved;
  free(y);
}

static void env3(env_t *e, const char *name, const char *repartition) { env3g(e, name, repartition, "exactly-once"); }

static void member3(const env_t *base, env_t *m, const char *name) {
  const char *saved = yaml_template;
  char *y = wd_it_replace(strdup(YAML3), "REPARTITION", "true");
  yaml_template = y;
  env_member(base, m, name, "exactly-once", "per-partition");
  yaml_template = saved;
  free(y);
}

static void create_topics3(const env_t *e, int payment_partitions) {
  char t[200];
  snprintf(t, sizeof(t), "%sorders", e->prefix);
  wd_it_create_topic(t, 6);
  snprintf(t, sizeof(t), "%spayments", e->prefix);
  wd_it_create_topic(t, payment_partitions);
  snprintf(t, sizeof(t), "%sshipments", e->prefix);
  wd_it_create_topic(t, 6);
}

/* Records [skip, records) of the generator's three streams (seed) to each env's topics;
 * shipments keyed by {"shipment_id": 7 * order_id + 3} (one order's shipments stay in one
 * partition, but not in its order's partition). */
static const char *produce3_only = NULL; /* when set: only this stream's records are produced */
/* when set: every key is written as Kafka Connect's JsonConverter writes it with schemas.enable=true
 * (Debezium's default): {"schema":{...,"name":"srv.shop.<stream>.Key"},"payload":{...}}, and every
 * value as {"schema":{...},"payload":<the event>} */
static bool produce3_envelope = false;

static void produce3(const env_t *const *envs, size_t nenvs, uint64_t records, uint64_t seed, uint64_t skip) {
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = 200;
  go.records = records;
  go.delete_ratio = 0.02;
  wd_gen_t *g = NULL;
  cr_assert_null(wd_gen_new(&go, &g));
  wd_gen_msg_t m;
  char topic[200], key[64];
  for (uint64_t i = 0; wd_gen_next(g, &m); i++) {
    if (i < skip) continue;
    if (produce3_only && strcmp(m.stream, produce3_only)) continue;
    const char *k = m.key;
    size_t klen = m.key_len;
    if (!strcmp(m.stream, "shipments")) {
      long long id = 0;
      cr_assert_eq(sscanf(m.key, "{\"order_id\":%lld}", &id), 1, "%.*s", (int)m.key_len, m.key);
      klen = (size_t)snprintf(key, sizeof(key), "{\"shipment_id\":%lld}", 7 * id + 3);
      k = key;
    }
    char env_key[400];
    if (produce3_envelope) {
      long long id = 0;
      cr_assert_eq(sscanf(m.key, "{\"order_id\":%lld}", &id), 1, "%.*s", (int)m.key_len, m.key);
      klen = (size_t)snprintf(env_key, sizeof(env_key),
                              "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,"
                              "\"field\":\"order_id\"}],\"optional\":false,\"name\":\"srv.shop.%s.Key\"},"
                              "\"payload\":{\"order_id\":%lld}}",
                              m.stream, id);
      k = env_key;
    }
    char *env_val = NULL;
    const char *val = m.value;
    size_t vlen = m.value_len;
    if (produce3_envelope) { /* the value in JsonConverter's envelope too (a schema without field types) */
      cr_assert(asprintf(&env_val,
                         "{\"schema\":{\"type\":\"struct\",\"fields\":[],\"optional\":false,"
                         "\"name\":\"srv.shop.%s.Envelope\"},\"payload\":%.*s}",
                         m.stream, (int)m.value_len, m.value) > 0);
      val = env_val;
      vlen = strlen(env_val);
    }
    for (size_t e = 0; e < nenvs; e++) {
      snprintf(topic, sizeof(topic), "%s%s", envs[e]->prefix, m.stream);
      cr_assert_null(wd_producer_send(p, topic, k, klen, val, vlen, NULL, 0));
    }
    free(env_val);
  }
  wd_error_t *err = wd_producer_wait_acked(p, 60000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_gen_destroy(g);
  wd_producer_destroy(p);
}

/* Per key, the changelog must be one a consumer can explain (+I of an absent key, -U equal to
 * the current row followed by +U, -D of the current row), and each stream's version column
 * must never go back in the rows emitted (a repeated or reordered change would); the rows it
 * ends at are returned (key -> row) for comparison with the final table. */
static json_t *replay_checked(json_t *by_key) {
  static const char *const versions[] = {"order_version", "pay_version", "ship_version"};
  json_t *final = json_object(), *seq;
  const char *key;
  size_t bad = 0;
  json_object_foreach(by_key, key, seq) {
    json_t *cur = NULL, *ch;
    bool pending_after = false;
    long long last[3] = {0, 0, 0};
    size_t i;
    json_array_foreach(seq, i, ch) {
      const char *op = json_string_value(json_object_get(ch, "op"));
      json_t *row = json_object_get(ch, "row");
      const char *why = NULL;
      if (!strcmp(op, "+I")) {
        if (cur || pending_after) why = "+I of a present key";
        cur = row;
      } else if (!strcmp(op, "-U")) {
        if (!cur || !wd_test_json_same(cur, row)) why = "-U that is not the current row";
        pending_after = true;
        cur = NULL;
      } else if (!strcmp(op, "+U")) {
        if (!pending_after) why = "+U without its -U";
        pending_after = false;
        cur = row;
      } else if (!strcmp(op, "-D")) {
        if (!cur || !wd_test_json_same(cur, row)) why = "-D that is not the current row";
        cur = NULL;
      }
      for (int v = 0; v < 3 && !why && row && op[0] == '+'; v++) {
        json_t *x = json_object_get(row, versions[v]);
        if (json_is_integer(x)) {
          if (json_integer_value(x) < last[v]) why = "a stream's version went back";
          last[v] = json_integer_value(x);
        }
      }
      if (why && bad++ < 5) {
        char *s = json_dumps(seq, JSON_COMPACT);
        fprintf(stderr, "key %s change %zu: %s\n  %s\n", key, i, why, s);
        free(s);
      }
    }
    if (cur) json_object_set(final, key, cur);
  }
  cr_assert_eq(bad, 0, "%zu changes a consumer cannot explain", bad);
  return final;
}

/* The final rows of a state as key -> row (the keys as the changelog's are written). */
static json_t *rows_by_key(json_t *rows) {
  json_t *out = json_object(), *r;
  size_t i;
  json_array_foreach(rows, i, r) {
    json_t *k = json_pack("{s:O}", "order_id", json_object_get(r, "order_id"));
    char *ks = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
    json_object_set(out, ks, r);
    free(ks);
    json_decref(k);
  }
  return out;
}

/* A static member restarted within session.timeout.ms gets its previous assignment back without
 * a rebalance. When one of its source topics did not exist before the kill (it was left out, with a
 * warning) and was created while the process was down, that assignment has none of its partitions:
 * the consumer must notice and rejoin the group so that the new topic is assigned and read. The
 * shipments topic is created and filled between a SIGKILL and a quick restart; the restarted run
 * (stopping after 10 s without input) must end at the table of a clean run over the three topics. */
Test(scale_out, a_topic_created_while_a_static_member_was_down_is_read, .timeout = 240) {
  env_t late, clean;
  const char *saved = yaml_template;
  char *y = wd_it_replace(strdup(YAML3), "REPARTITION", "auto");
  /* a session long enough that the restart below always comes within it */
  y = wd_it_replace(y, "session.timeout.ms: 6000", "session.timeout.ms: 30000");
  yaml_template = y;
  env_init_tasks(&late, "late", "exactly-once", "single");
  env_init_tasks(&clean, "clean", "exactly-once", "single");
  yaml_template = saved;
  free(y);
  char t[200];
  snprintf(t, sizeof(t), "%sorders", late.prefix);
  wd_it_create_topic(t, 6);
  snprintf(t, sizeof(t), "%spayments", late.prefix);
  wd_it_create_topic(t, 3);
  create_topics3(&clean, 3);
  const env_t *both[] = {&late, &clean};
  produce3_only = "orders";
  produce3(both, 2, 1500, 61, 0);
  produce3_only = "payments";
  produce3(both, 2, 1500, 61, 0);
  produce3_only = "shipments";
  produce3(both + 1, 1, 1500, 61, 0);
  produce3_only = NULL;
  cr_assert_eq(run_widen(&clean, NULL), 0);

  char log1[400], log2[400];
  snprintf(log1, sizeof(log1), "%s/first.log", late.dir);
  snprintf(log2, sizeof(log2), "%s/second.log", late.dir);
  pid_t p1 = spawn_widen_log(&late, NULL, "600000", log1);
  cr_assert(wd_it_wait_log(log1, "shipments does not exist yet", 60000), "no warning of the missing topic");
  cr_assert(wd_it_wait_log(log1, "assigned 9 partition(s)", 60000),
            "the first run was not assigned orders and payments");
  cr_assert_eq(kill(p1, SIGKILL), 0);
  cr_assert_eq(wait_exit(p1), 128 + SIGKILL);

  snprintf(t, sizeof(t), "%sshipments", late.prefix);
  wd_it_create_topic(t, 6);
  produce3_only = "shipments";
  produce3(both, 1, 1500, 61, 0);
  produce3_only = NULL;
  pid_t p2 = spawn_widen_log(&late, NULL, "10000", log2);
  int rc = wait_exit(p2);
  char cmd[900];
  snprintf(cmd, sizeof(cmd), "grep -E 'static membership|assigned|revoked|rejoin|exists' '%s' '%s' >&2", log1, log2);
  if (system(cmd) != 0) fprintf(stderr, "(no assignment lines in the logs)\n");
  cr_assert_eq(rc, 0);

  json_t *want_rows = state_rows(&clean), *got_rows = state_rows(&late);
  json_t *want = rows_by_key(want_rows), *got = rows_by_key(got_rows);
  size_t with_ship = 0, missing = 0;
  const char *key;
  json_t *row;
  json_object_foreach(want, key, row) {
    if (!json_is_null(json_object_get(row, "ship_status"))) with_ship++;
    json_t *g = json_object_get(got, key);
    if (!g || !wd_test_json_same(row, g)) {
      if (missing++ < 3) {
        char *a = json_dumps(row, JSON_COMPACT), *b = g ? json_dumps(g, JSON_COMPACT) : NULL;
        fprintf(stderr, "key %s: want %s got %s\n", key, a, b ? b : "(none)");
        free(a);
        free(b);
      }
    }
  }
  cr_assert_gt(with_ship, 0, "the clean run has no shipment columns");
  cr_assert_eq(missing, 0, "%zu of %zu rows differ from the clean run's (shipments not read?)", missing,
               json_object_size(want));
  cr_assert_eq(json_object_size(got), json_object_size(want));
  json_decref(want);
  json_decref(got);
  json_decref(want_rows);
  json_decref(got_rows);
  env_done(&late);
  env_done(&clean);
}

/* The other side of the test above: with more members than a topic has partitions, a member
 * legitimately holds none of that topic (another member does, as the group's description shows),
 * and no rejoin is forced for it. Two live members, payments with one partition. */
Test(scale_out, a_topic_held_by_another_member_forces_no_rejoin, .timeout = 240) {
  env_t a, b;
  env3(&a, "holdA", "true");
  member3(&a, &b, "holdB");
  create_topics3(&a, 1);
  const env_t *one[] = {&a};
  produce3(one, 1, 1000, 67, 0);
  char log_a[400], log_b[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "8000", log_a);
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  pid_t pb = spawn_widen_log(&b, NULL, "8000", log_b);
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  produce3(one, 1, 1500, 67, 1000);
  int ra = wait_exit(pa), rb = wait_exit(pb);
  char cmd[900];
  snprintf(cmd, sizeof(cmd), "grep -E 'assigned [0-9]+ partition|rejoin' '%s' '%s' | cut -c1-300 >&2", log_a, log_b);
  if (system(cmd) != 0) fprintf(stderr, "(no assignment lines in the logs)\n");
  cr_assert_eq(ra, 0);
  cr_assert_eq(rb, 0);
  cr_assert_not(wd_it_wait_log(log_a, "rejoining group", 0), "A forced a rejoin");
  cr_assert_not(wd_it_wait_log(log_b, "rejoining group", 0), "B forced a rejoin");
  env_done(&a);
  env_done(&b);
}

/* Scale-out with repartition topics: three members in one group over three sources with 6 partitions, two of
 * them through repartition topics; while input flows one member is killed (SIGKILL), one is added
 * and one restarted. Read read_committed, every key's changelog is explainable with no stream
 * version going back, and it ends at the final table of a single-process run over the same input. */
Test(repartition, three_members_kill_add_restart, .timeout = 400) {
  env_t clean, a, b, c, d;
  env3(&clean, "rclean", "true");
  env3(&a, "rA", "true");
  member3(&a, &b, "rB");
  member3(&a, &c, "rC");
  member3(&a, &d, "rD");
  create_topics3(&clean, 3);
  create_topics3(&a, 3);
  const env_t *both[] = {&clean, &a};
  produce3(both, 2, 1500, 77, 0);
  char log_a[400], log_b[400], log_c[400], log_d[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  snprintf(log_c, sizeof(log_c), "%s/c.log", c.dir);
  snprintf(log_d, sizeof(log_d), "%s/d.log", d.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "15000", log_a), pb = spawn_widen_log(&b, NULL, "15000", log_b),
        pc = spawn_widen_log(&c, NULL, "15000", log_c);
  /* all three joined: each moved a task to RUNNING (app/runtime/tasks.c) */
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  cr_assert(wd_it_wait_log(log_c, "-> RUNNING", 60000), "C took no task within 60 s");
  for (uint64_t at = 1500; at < 3000; at += 300) {
    produce3(both, 2, at + 300, 77, at);
    usleep(300 * 1000);
  }
  cr_assert_eq(kill(pc, SIGKILL), 0); /* C owned tasks (above) */
  cr_assert_eq(wait_exit(pc), 128 + SIGKILL);
  produce3(both, 2, 3750, 77, 3000);
  pid_t pd = spawn_widen_log(&d, NULL, "15000", log_d);
  produce3(both, 2, 4500, 77, 3750);
  /* D joined and took tasks before A stops */
  cr_assert(wd_it_wait_log(log_d, "-> RUNNING", 60000), "D took no task within 60 s");
  cr_assert_eq(kill(pa, SIGTERM), 0);
  cr_assert_eq(wait_exit(pa), 0);
  pa = spawn_widen(&a, NULL, "15000");
  for (uint64_t at = 4500; at < 6000; at += 300) {
    produce3(both, 2, at + 300, 77, at);
    usleep(300 * 1000);
  }
  cr_assert_eq(wait_exit(pa), 0);
  cr_assert_eq(wait_exit(pb), 0);
  cr_assert_eq(wait_exit(pd), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  cr_assert_gt(nc, 1000, "the single run emitted only %zu changes", nc);
  json_t *fx = replay_checked(x), *fy = replay_checked(y);
  json_t *rows = state_rows(&clean), *want = rows_by_key(rows);
  cr_assert_gt(json_object_size(want), 150);
  cr_assert(wd_test_json_same(fx, want), "the single run's changelog does not end at its table");
  const char *k;
  json_t *v;
  size_t bad = 0;
  json_object_foreach(want, k, v) {
    json_t *g = json_object_get(fy, k);
    if ((!g || !wd_test_json_same(g, v)) && bad++ < 5) {
      char *s1 = json_dumps(v, JSON_COMPACT), *s2 = g ? json_dumps(g, JSON_COMPACT) : strdup("(none)");
      fprintf(stderr, "key %s: table %s\n  output ends at %s\n", k, s1, s2);
      free(s1);
      free(s2);
    }
  }
  cr_assert_eq(bad, 0, "%zu keys end elsewhere than the single run's table", bad);
  cr_assert_eq(json_object_size(fy), json_object_size(want));
  json_decref(x);
  json_decref(y);
  json_decref(fx);
  json_decref(fy);
  json_decref(rows);
  json_decref(want);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
  env_done(&c);
  env_done(&d);
}

/* A source whose Kafka key is not the wide key, forced to be read directly (`repartition: false`
 * with the table's partition count), stops widen at its first record with C_SOURCE_KEYING naming the
 * source, the record and the fix. */
Test(repartition, a_source_keyed_otherwise_is_refused, .timeout = 120) {
  env_t e;
  env3(&e, "rkey", "false");
  create_topics3(&e, 6); /* every source co-partitioned by count */
  const env_t *one[] = {&e};
  produce3(one, 1, 300, 5, 0);
  char log[400];
  snprintf(log, sizeof(log), "%s/run.log", e.dir);
  pid_t pid = spawn_widen_log(&e, NULL, "3000", log);
  int rc = wait_exit(pid);
  char *text = wd_it_read_file(log);
  cr_assert_neq(rc, 0, "widen accepted a source keyed by shipment_id:\n%s", text);
  cr_assert(strstr(text, "C_SOURCE_KEYING") && strstr(text, "source 'shipments'") && strstr(text, "shipment_id") &&
                strstr(text, "repartition: true"),
            "%s", text);
  free(text);
  env_done(&e);
}

/* Standby replicas: two live members with `num-standby-replicas: 1` each keep a warm copy of the
 * other's tasks; B is killed with SIGKILL and A takes B's tasks over by catching its copies up
 * (logged "caught up (standby copy)") instead of restoring them from the beginning. Read
 * read_committed, the output has per key exactly the changelog of a clean single run, and the
 * table A ends with equals the clean run's. */
Test(scale_out, standby_copies_take_over_after_a_kill, .timeout = 280) {
  env_t clean, a, b;
  extra_props = "";
  env_init_tasks(&clean, "sclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "standA", "exactly-once", "per-partition");
  env_member(&a, &b, "standB", "exactly-once", "per-partition");
  for (env_t *e = &a; e; e = e == &a ? &b : NULL) env_append(e, "  num-standby-replicas: 1\n"); /* both keep copies */
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 4);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 4);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1000, 17, 0);
  char log[400], log_b[400];
  snprintf(log, sizeof(log), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "14000", log);
  pid_t pb = spawn_widen_log(&b, NULL, "14000", log_b);
  /* both joined (each moved a task to RUNNING: the tasks are shared), each copies the other's */
  cr_assert(wd_it_wait_log(log, "-> RUNNING", 60000), "A took no task within 60 s");
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  for (uint64_t at = 1000; at < 4000; at += 500) {
    produce_orders(both, 2, at + 500, 17, at);
    usleep(500 * 1000);
  }
  usleep(2000 * 1000); /* A's copies of B's tasks catch up */
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 0), "B, killed now, owned no task");
  cr_assert_eq(kill(pb, SIGKILL), 0);
  cr_assert_eq(wait_exit(pb), 128 + SIGKILL);
  produce_orders(both, 2, 5000, 17, 4000);
  int rca = wait_exit(pa);
  char *text = wd_it_read_file(log);
  cr_assert_eq(rca, 0, "%s", text);
  cr_assert(strstr(text, "caught up (standby copy)"), "A did not take B's tasks over from its standby copies:\n%s",
            text);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&a);
  cr_assert(wd_test_json_same(ra, rb), "A's table after the take-over differs from the clean run's");
  free(text);
  json_decref(x);
  json_decref(y);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* A member with standby replicas that owned every task, stopped and started again: before the
 * group's assignment arrives its standby consumer must not copy changelog records into the rows
 * of tasks it owned (they are newer than any standby position; a task given back with offsets
 * equal to the group's is used as it is, so a copy half done when the assignment came left older
 * rows behind). Alone in the group it gets every task back: its standby applies nothing, no task
 * is restored, and the table equals a clean single run's. */
Test(scale_out, standby_leaves_the_tasks_it_owned_alone_at_a_restart, .timeout = 200) {
  env_t clean, a;
  extra_props = "";
  env_init_tasks(&clean, "sbclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "sbown", "exactly-once", "per-partition");
  env_append(&a, "  num-standby-replicas: 1\n");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 4);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 4);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1500, 23, 0);
  /* owns all 4 tasks; its commits fill the changelog; killed, so that the group still counts the
   * dead member until session.timeout.ms (6 s) and the restart's assignment comes only then: its
   * standby consumer is polled all that time */
  pid_t p0 = spawn_widen(&a, NULL, "30000");
  usleep(6000 * 1000);
  cr_assert_eq(kill(p0, SIGKILL), 0);
  cr_assert_eq(wait_exit(p0), 128 + SIGKILL);
  produce_orders(both, 2, 3000, 23, 1500);
  /* another group.instance.id: the group waits for the dead one's session timeout before it
   * assigns anything, while the restarted process polls its standby consumer */
  char *cfg = wd_it_read_file(a.cfg);
  cr_assert_not_null(cfg);
  char *cfg2 = cfg;
  char *idl = strstr(cfg2, "group.instance.id: ");
  cr_assert_not_null(idl);
  char *eol = strchr(idl, '\n');
  cr_assert_not_null(eol);
  FILE *cf = fopen(a.cfg, "w");
  cr_assert_not_null(cf);
  fprintf(cf, "%.*s-restarted%s", (int)(eol - cfg2), cfg2, eol);
  fclose(cf);
  free(cfg2);
  char log[400];
  snprintf(log, sizeof(log), "%s/restart.log", a.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "12000", log);
  int rca = wait_exit(pa);
  char *text = wd_it_read_file(log);
  cr_assert_eq(rca, 0, "%s", text);
  const char *up = strstr(text, "standby copies are up to date");
  if (up) {
    const char *paren = strstr(up, "(");
    cr_assert(paren && !strncmp(paren, "(0 records applied)", 19),
              "the restarted member copied changelog records into the tasks it owned:\n%s", text);
  }
  cr_assert_null(strstr(text, "caught up (standby copy)"), "%s", text);
  cr_assert_null(strstr(text, "restored"), "a task was restored although its offsets were the group's:\n%s", text);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  json_t *ra = state_rows(&clean), *rb = state_rows(&a);
  cr_assert_gt(json_array_size(ra), 100);
  cr_assert(wd_test_json_same(ra, rb), "the restarted member's table differs from the clean run's");
  free(text);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&a);
}

/* At-least-once through repartition topics, stopped and restarted with input in between (the
 * forwarded partitions start where the last run stopped, the repartition topics created at the
 * first start are assigned at once): the final table equals an exactly-once single run's. */
Test(repartition, at_least_once_restarts_end_at_the_same_table, .timeout = 200) {
  env_t clean, e;
  env3(&clean, "aclean3", "true");
  env3g(&e, "alos3", "true", "at-least-once");
  create_topics3(&clean, 3);
  create_topics3(&e, 3);
  const env_t *both[] = {&clean, &e};
  produce3(both, 2, 1500, 31, 0);
  cr_assert_eq(run_widen(&e, NULL), 0);
  produce3(both, 2, 3000, 31, 1500);
  cr_assert_eq(run_widen(&e, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  json_t *ra = state_rows(&clean), *rb = state_rows(&e);
  cr_assert_gt(json_array_size(ra), 150);
  cr_assert(wd_test_json_same(ra, rb), "the at-least-once table differs from the exactly-once run's");
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&e);
}

/* A key-changing update (one record: -D of the old key, +I of the new one, keyed by the new key)
 * cannot be placed by a co-partitioned source: the old key's row lives in the task of the
 * partition the old key's own records are in, which is not this record's partition. widen stops
 * with C_SOURCE_KEYING naming the record and the fix (before, the -D went to the new key's task
 * and the old row stayed); with `repartition: true` each change record goes to its own key's
 * task, and three tasks give per key the changelog and the table of a single-task run. */
Test(repartition, a_key_change_in_a_co_partitioned_source, .timeout = 200) {
  env_t clean, co, rp;
  key_change_ratio = 0.05;
  env_init(&clean, "kclean", "exactly-once");
  env_init_tasks(&co, "kco", "exactly-once", "per-partition");
  const char *saved = yaml_template;
  char *yrp =
      wd_it_replace(strdup(YAML), "    format: debezium-json\n", "    format: debezium-json\n    repartition: true\n");
  yaml_template = yrp;
  env_init_tasks(&rp, "krp", "exactly-once", "per-partition");
  yaml_template = saved;
  free(yrp);
  env_append(&rp, "  partitions: 3\n"); /* 3 tasks over a 1-partition source */
  /* one partition for the single run and the repartitioned one, so that each key's records (its
   * key changes included) have one order in both (across partitions the order is anyone's) */
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 1);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, co.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, rp.prefix), "orders"), 1);
  const env_t *all[] = {&clean, &co, &rp};
  produce_orders(all, 3, 2500, 31, 0);
  key_change_ratio = 0;
  cr_assert_eq(run_widen(&clean, NULL), 0);
  char log[400];
  snprintf(log, sizeof(log), "%s/run.log", co.dir);
  pid_t pid = spawn_widen_log(&co, NULL, "2000", log);
  int rc = wait_exit(pid);
  char *text = wd_it_read_file(log);
  cr_assert_neq(rc, 0, "a key-changing update in a co-partitioned source was accepted:\n%s", text);
  cr_assert(strstr(text, "C_SOURCE_KEYING") && strstr(text, "source 'orders'") && strstr(text, "key-changing") &&
                strstr(text, "repartition: true"),
            "%s", text);
  free(text);
  cr_assert_eq(run_widen(&rp, NULL), 0);
  json_t *sa = state_rows(&clean), *sb = state_rows(&rp), *ra = rows_by_key(sa), *rb = rows_by_key(sb);
  cr_assert_gt(json_object_size(ra), 50);
  cr_assert_eq(json_array_size(sb), json_object_size(rb), "a key is in more than one task");
  cr_assert(wd_test_json_same(ra, rb), "the repartitioned run's table differs from the single-task run's");
  json_decref(sa);
  json_decref(sb);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(rp.out, &ng);
  cr_assert_gt(nc, 1000);
  assert_same_changelog(x, y, nc, ng);
  json_decref(x);
  json_decref(y);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&co);
  env_done(&rp);
}

/* Members with standby replicas started together on a new group: the first to start creates the
 * state changelog topic, and each one's standby consumer (assign mode) must find its partitions
 * although the broker's metadata shows a new topic only some milliseconds after CreateTopics
 * answers (before, both members stopped with E_KAFKA_UNKNOWN_TOPIC "has no partitions"). */
Test(scale_out, standby_members_start_together, .timeout = 200) {
  env_t a, b, c;
  env_init_tasks(&a, "togA", "exactly-once", "per-partition");
  env_member(&a, &b, "togB", "exactly-once", "per-partition");
  env_member(&a, &c, "togC", "exactly-once", "per-partition");
  for (env_t *e = &a; e; e = e == &a ? &b : e == &b ? &c : NULL) env_append(e, "  num-standby-replicas: 1\n");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 3);
  const env_t *one[] = {&a};
  produce_orders(one, 1, 600, 19, 0);
  pid_t pa = spawn_widen(&a, NULL, "6000"), pb = spawn_widen(&b, NULL, "6000"), pc = spawn_widen(&c, NULL, "6000");
  int ra = wait_exit(pa), rb = wait_exit(pb), rc = wait_exit(pc);
  cr_assert(ra == 0 && rb == 0 && rc == 0, "members started together exited with %d, %d, %d", ra, rb, rc);
  size_t n = 0;
  json_t *x = changelog_by_key(a.out, &n);
  cr_assert_gt(n, 300);
  json_decref(x);
  env_done(&a);
  env_done(&b);
  env_done(&c);
}

/* Runs `widen run` on e with its stderr in <e.dir>/<name>.log; returns the exit status and the
 * log's text in *text (caller frees). */
static int run_logged(const env_t *e, const char *name, char **text) {
  char log[400];
  snprintf(log, sizeof(log), "%s/%s.log", e->dir, name);
  pid_t pid = spawn_widen_log(e, NULL, "2000", log);
  int rc = wait_exit(pid);
  *text = wd_it_read_file(log);
  return rc;
}

/* Gives topic `partitions` partitions (the admin API's CreatePartitions). */
static void grow_topic(const char *topic, int partitions) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk, "%s", errstr);
  rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)partitions, errstr, sizeof(errstr));
  cr_assert_not_null(np, "%s", errstr);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  cr_assert_not_null(ev, "CreatePartitions timed out");
  size_t n = 0;
  const rd_kafka_topic_result_t **tr =
      rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &n);
  cr_assert(n == 1 && rd_kafka_topic_result_error(tr[0]) == RD_KAFKA_RESP_ERR_NO_ERROR, "growing %s", topic);
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewPartitions_destroy(np);
  rd_kafka_destroy(rk);
}

/* The state's rows are split into tasks by a layout (N, and which sources go through repartition
 * topics): a source topic that gains partitions with pipeline.partitions kept makes every source
 * go through a repartition topic, whose tasks hold other keys; so does switching pipeline.tasks.
 * Before, such a start resumed the old rows as the new tasks (keys in two tasks, +I of present
 * keys downstream); now it stops with C_TASKS_LAYOUT naming both layouts and what to do. */
Test(repartition, a_changed_task_layout_is_refused, .timeout = 200) {
  env_t e;
  env_init_tasks(&e, "layout", "exactly-once", "per-partition");
  env_append(&e, "  partitions: 3\n");
  char topic[200];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  wd_it_create_topic(topic, 3);
  const env_t *one[] = {&e};
  produce_orders(one, 1, 600, 23, 0);
  char *text = NULL;
  int rc = run_logged(&e, "first", &text);
  cr_assert_eq(rc, 0, "%s", text);
  free(text);
  grow_topic(topic, 4);
  produce_orders(one, 1, 900, 23, 600);
  rc = run_logged(&e, "grown", &text);
  cr_assert_neq(rc, 0, "a start with another task layout was accepted:\n%s", text);
  cr_assert(strstr(text, "C_TASKS_LAYOUT") && strstr(text, "\"per-partition 3; orders direct\"") &&
                strstr(text, "\"per-partition 3; orders repartitioned\""),
            "%s", text);
  free(text);
  write_config(&e, "instance", "exactly-once", "single");
  rc = run_logged(&e, "single", &text);
  cr_assert_neq(rc, 0, "a start with pipeline.tasks switched was accepted:\n%s", text);
  cr_assert(strstr(text, "C_TASKS_LAYOUT") && strstr(text, "\"single\""), "%s", text);
  free(text);
  env_done(&e);
}

/* Counts the records of every partition of topic (assign mode, from the beginning,
 * read_committed); the first one of partition `part` (if any, and when key is not NULL) is copied
 * into *key, *klen and *val, *vlen (malloc'd, caller frees). */
static size_t count_records(const char *topic, int32_t part, char **key, size_t *klen, char **val, size_t *vlen) {
  wd_consumer_t *c = wd_it_consumer(topic);
  static wd_kmsg_t msgs[500];
  size_t got = 0;
  for (int idle = 0; idle < 4;) {
    size_t n = 0;
    cr_assert_null(wd_consumer_poll_batch(c, 500, 500, msgs, &n));
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n && key; i++)
      if (msgs[i].partition == part && !*key) {
        *key = malloc(msgs[i].key_len + 1);
        *val = malloc(msgs[i].value_len + 1);
        memcpy(*key, msgs[i].key, *klen = msgs[i].key_len);
        memcpy(*val, msgs[i].value, *vlen = msgs[i].value_len);
      }
    got += n;
    wd_kmsg_release(msgs, n); /* before the consumer goes: it waits for its messages */
  }
  wd_consumer_destroy(c);
  return got;
}

/* A well-formed repartition record in a partition its key does not belong to (written with
 * another partition count, or copied by hand) goes to the dead-letter topic: applied there it
 * would put its key in a second task (before, it was applied: the key was in two tasks). */
Test(repartition, a_misplaced_repartition_record_is_dead_lettered, .timeout = 200) {
  env_t e;
  const char *saved = yaml_template;
  char *yrp =
      wd_it_replace(strdup(YAML), "    format: debezium-json\n", "    format: debezium-json\n    repartition: true\n");
  yaml_template = yrp;
  env_init_tasks(&e, "misplaced", "exactly-once", "per-partition");
  yaml_template = saved;
  free(yrp);
  char topic[200], rpt[300], dlq[220];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  snprintf(rpt, sizeof(rpt), "%sgroup-orders_t-orders-repartition", e.prefix);
  snprintf(dlq, sizeof(dlq), "%s.dlq", e.out);
  wd_it_create_topic(topic, 3);
  const env_t *one[] = {&e};
  produce_orders(one, 1, 600, 29, 0);
  char *text = NULL;
  cr_assert_eq(run_logged(&e, "first", &text), 0, "%s", text);
  free(text);
  char *key = NULL, *val = NULL;
  size_t klen = 0, vlen = 0;
  cr_assert_gt(count_records(rpt, 0, &key, &klen, &val, &vlen), 0);
  cr_assert_not_null(key, "no record in partition 0 of %s", rpt);
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  cr_assert_null(wd_producer_send_to(p, rpt, 1, key, klen, val, vlen)); /* its key belongs to partition 0 */
  wd_error_t *err = wd_producer_wait_acked(p, 30000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_producer_destroy(p);
  free(key);
  free(val);
  produce_orders(one, 1, 900, 29, 600);
  cr_assert_eq(run_logged(&e, "second", &text), 0, "%s", text);
  free(text);
  size_t n = count_records(dlq, -1, NULL, NULL, NULL, NULL);
  cr_assert_eq(n, 1, "%zu dead letters, want the misplaced record", n);
  json_t *rows = state_rows(&e), *by_key = rows_by_key(rows);
  cr_assert_eq(json_array_size(rows), json_object_size(by_key), "a key is in more than one task");
  json_decref(rows);
  json_decref(by_key);
  env_done(&e);
}

/* ---- output only once all of a task's partitions caught up -------------------------------- */

/* An env of the three-stream table (YAML3) with `tasks` (single: every source co-partitioned as
 * it is, repartition auto; per-partition: shipments through its repartition topic). */
static void env3t(env_t *e, const char *name, const char *tasks) {
  const char *saved = yaml_template;
  char *y = wd_it_replace(strdup(YAML3), "REPARTITION", strcmp(tasks, "single") ? "true" : "auto");
  yaml_template = y;
  env_init_tasks(e, name, "exactly-once", tasks);
  yaml_template = saved;
  free(y);
}

/* Compares the key -> row map an output ends at with a clean run's final table. */
static void assert_ends_at(json_t *ends, const env_t *clean) {
  json_t *rows = state_rows(clean), *want = rows_by_key(rows);
  cr_assert_gt(json_object_size(want), 150);
  const char *k;
  json_t *v;
  size_t bad = 0;
  json_object_foreach(want, k, v) {
    json_t *g = json_object_get(ends, k);
    if ((!g || !wd_test_json_same(g, v)) && bad++ < 5) {
      char *s1 = json_dumps(v, JSON_COMPACT), *s2 = g ? json_dumps(g, JSON_COMPACT) : strdup("(none)");
      fprintf(stderr, "key %s: table %s\n  output ends at %s\n", k, s1, s2);
      free(s1);
      free(s2);
    }
  }
  cr_assert_eq(bad, 0, "%zu keys end elsewhere than the clean run's table", bad);
  cr_assert_eq(json_object_size(ends), json_object_size(want));
  json_decref(rows);
  json_decref(want);
}

/* A lost state directory with three streams: the restarted process rebuilds (single
 * task: from the sources; per-partition: from the state changelog topic) while new input of every
 * stream waits behind the group's offsets. Every key's read_committed changelog is explainable
 * (a row emitted before another stream's records up to the group's offset were applied shows as
 * a -U that is not the current row) and the output ends at the clean run's table. */
static void lost_state3(const char *tasks) {
  env_t clean, lost;
  env3t(&clean, "l3clean", tasks);
  env3t(&lost, "l3lost", tasks);
  create_topics3(&clean, 3);
  create_topics3(&lost, 3);
  const env_t *both[] = {&clean, &lost};
  produce3(both, 2, 3000, 91, 0);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lost.state);
  cr_assert_eq(system(cmd), 0);
  produce3(both, 2, 6000, 91, 3000);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(lost.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  json_t *fx = replay_checked(x), *fy = replay_checked(y);
  assert_ends_at(fx, &clean);
  assert_ends_at(fy, &clean);
  json_decref(x);
  json_decref(y);
  json_decref(fx);
  json_decref(fy);
  env_done(&clean);
  env_done(&lost);
}

Test(exactly_once, lost_state_of_three_streams_single_task, .timeout = 300) { lost_state3("single"); }
Test(scale_out, lost_state_of_three_streams_per_partition, .timeout = 300) { lost_state3("per-partition"); }

/* A zombie: member A is stopped (SIGSTOP) past its session timeout (6 s) and its
 * transaction timeout (10 s) while input flows; B of the same group takes its tasks over; then A
 * continues (SIGCONT), finds itself fenced or out of the group, and stops or rejoins. Read
 * read_committed, every key's changelog is explainable with no stream version going back, and it
 * ends at the clean run's table. */
static void zombie(const char *tasks) {
  env_t clean, a, b;
  env3t(&clean, "zclean", tasks);
  env3t(&a, "zA", tasks);
  const char *saved = yaml_template;
  char *y = wd_it_replace(strdup(YAML3), "REPARTITION", strcmp(tasks, "single") ? "true" : "auto");
  yaml_template = y;
  env_member(&a, &b, "zB", "exactly-once", tasks);
  yaml_template = saved;
  free(y);
  create_topics3(&clean, 3);
  create_topics3(&a, 3);
  const env_t *both[] = {&clean, &a};
  produce3(both, 2, 1500, 55, 0);
  char log_a[400], log_b[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "20000", log_a);
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  pid_t pb = spawn_widen_log(&b, NULL, "20000", log_b);
  /* both joined: B moved a task to RUNNING, given up by A in the rebalance */
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  uint64_t at = 1500;
  for (; at < 2400; at += 150) {
    produce3(both, 2, at + 150, 55, at);
    usleep(200 * 1000);
  }
  cr_assert_eq(kill(pa, SIGSTOP), 0);
  for (int i = 0; i < 14; i++, at += 150) { /* 14 x 1.5 s = 21 s > session and transaction timeouts */
    produce3(both, 2, at + 150, 55, at);
    usleep(1500 * 1000);
  }
  cr_assert_eq(kill(pa, SIGCONT), 0);
  for (; at < 6000; at += 150) {
    produce3(both, 2, at + 150, 55, at);
    usleep(200 * 1000);
  }
  int ra = wait_exit(pa), rb = wait_exit(pb);
  cr_assert_eq(rb, 0, "member B exited with %d", rb);
  fprintf(stderr, "zombie: member A exited with %d\n", ra);
  if (ra != 0) cr_assert_eq(run_widen(&a, NULL), 0); /* whatever A left is taken up again */
  cr_assert_eq(run_widen(&b, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *yy = changelog_by_key(a.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  json_t *fx = replay_checked(x), *fy = replay_checked(yy);
  assert_ends_at(fy, &clean);
  json_decref(x);
  json_decref(yy);
  json_decref(fx);
  json_decref(fy);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

Test(repartition, a_stopped_member_past_its_timeouts_per_partition, .timeout = 400) { zombie("per-partition"); }

/* Waits (up to 60 s) until the file log holds text; true when it does. */
static bool wait_log(const char *log, const char *text) {
  for (int i = 0; i < 6000; i++) {
    char *t = wd_it_read_file(log);
    bool yes = t && strstr(t, text);
    free(t);
    if (yes) return true;
    usleep(10 * 1000);
  }
  return false;
}

/* A signal while the lost state of per-partition tasks is restored from the state changelog topic
 * (the restore runs in the poll loop): the next start restores again and the table and
 * the output equal a clean run's. */
static void signal_during_restore(int sig) {
  env_t clean, lost;
  extra_props = "";
  env_init_tasks(&clean, "rsclean", "exactly-once", "per-partition");
  env_init_tasks(&lost, "rslost", "exactly-once", "per-partition");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 2);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, lost.prefix), "orders"), 2);
  const env_t *both[] = {&clean, &lost};
  produce_orders(both, 2, 8000, 31, 0);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lost.state);
  cr_assert_eq(system(cmd), 0);
  char log[400];
  snprintf(log, sizeof(log), "%s/restore.log", lost.dir);
  pid_t pid = spawn_widen_log(&lost, NULL, "20000", log);
  cr_assert(wait_log(log, "restoring 2 task(s)"), "no restore");
  cr_assert_eq(kill(pid, sig), 0);
  int rc = wait_exit(pid);
  char *text = wd_it_read_file(log);
  fprintf(stderr, "signal %d during the restore: rc %d; %s\n", sig, rc,
          strstr(text, "task(s) restored from") ? "the restore had ended" : "the restore was cut short");
  cr_assert(rc == 0 || rc == 3 || rc == 128 + SIGKILL, "rc %d:\n%s", rc, text);
  free(text);
  produce_orders(both, 2, 9000, 31, 8000);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(lost.out, &ng);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&lost);
  cr_assert(wd_test_json_same(ra, rb), "the restored rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&lost);
}

Test(scale_out, kill_during_restore, .timeout = 200) { signal_during_restore(SIGKILL); }
Test(scale_out, sigterm_during_restore, .timeout = 200) { signal_during_restore(SIGTERM); }

/* The single task's gate with idle partitions: the state directory is lost and the new
 * input comes on one stream only, so every partition of the other two streams is idle at the
 * group's offset (no record after it to see). The task must still count them as caught up and
 * run: the output per key is explainable and ends at the clean run's table. */
Test(exactly_once, lost_state_with_idle_streams_single_task, .timeout = 200) {
  env_t clean, lost;
  env3t(&clean, "idclean", "single");
  env3t(&lost, "idlost", "single");
  create_topics3(&clean, 3);
  create_topics3(&lost, 3);
  const env_t *both[] = {&clean, &lost};
  produce3(both, 2, 3000, 97, 0);
  cr_assert_eq(run_widen(&lost, NULL), 0);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lost.state);
  cr_assert_eq(system(cmd), 0);
  produce3_only = "orders";
  produce3(both, 2, 6000, 97, 3000);
  produce3_only = NULL;
  cr_assert_eq(run_widen(&lost, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(lost.out, &ng);
  json_t *fx = replay_checked(x), *fy = replay_checked(y);
  assert_ends_at(fx, &clean);
  assert_ends_at(fy, &clean);
  json_decref(x);
  json_decref(y);
  json_decref(fx);
  json_decref(fy);
  env_done(&clean);
  env_done(&lost);
}

/* A second member joins while the first restores its lost state from the state changelog topic
 * (the restore runs in the poll loop; a rebalance stops it and the next assignment plans
 * it again). The first member is stopped (SIGSTOP) at its restore's first slice until the second
 * has joined (4 s, below session.timeout.ms; heartbeats every 300 ms), so the rebalance comes in
 * the middle of the restore (the log says whether it did; it did in every run seen). Both then take their tasks (the
 * second one restores too) and process more input: each key's output equals a clean run's. */
Test(scale_out, a_member_joins_during_a_restore, .timeout = 200) {
  env_t clean, a, b;
  extra_props = "    heartbeat.interval.ms: 300\n"; /* the rebalance is seen soon after SIGCONT */
  env_init_tasks(&clean, "rjclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "rjA", "exactly-once", "per-partition");
  env_member(&a, &b, "rjB", "exactly-once", "per-partition");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 2);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 2);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 8000, 37, 0);
  cr_assert_eq(run_widen(&a, NULL), 0);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", a.state);
  cr_assert_eq(system(cmd), 0);
  char log[400], logb[400];
  snprintf(log, sizeof(log), "%s/a.log", a.dir);
  snprintf(logb, sizeof(logb), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "15000", log);
  cr_assert(wait_log(log, "restoring 2 task(s)"), "no restore");
  cr_assert_eq(kill(pa, SIGSTOP), 0);
  pid_t pb = spawn_widen_log(&b, NULL, "15000", logb);
  cr_assert(wait_log(logb, "subscribed"), "B did not start");
  usleep(4000 * 1000);
  cr_assert_eq(kill(pa, SIGCONT), 0);
  produce_orders(both, 2, 10000, 37, 8000);
  int rca = wait_exit(pa), rcb = wait_exit(pb);
  char *ta = wd_it_read_file(log), *tb = wd_it_read_file(logb);
  fprintf(stderr, "A: %s\n",
          strstr(ta, "the rebalance stops the restore") ? "the rebalance stopped its restore"
                                                        : "its restore was not stopped");
  cr_assert_eq(rca, 0, "%s", ta);
  cr_assert_eq(rcb, 0, "%s", tb);
  free(ta);
  free(tb);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_decref(x);
  json_decref(y);
  extra_props = "";
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* Standby copies and a restore cut short: A (standby replicas on) restores both tasks
 * from the beginning of the state changelog topic; B joins in the middle (A stopped at the
 * restore's first slice), so A's restore stops and B takes task 1. From then on A keeps a standby
 * copy of task 1 in the rows its cut-short restore left; B processes input of task 1, then stops,
 * and A takes task 1 back from that copy. A's table and each key's output must equal a clean
 * run's. */
Test(scale_out, standby_copy_after_a_restore_cut_short, .timeout = 240) {
  env_t clean, a, b;
  extra_props = "    heartbeat.interval.ms: 300\n";
  env_init_tasks(&clean, "scclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "scA", "exactly-once", "per-partition");
  env_member(&a, &b, "scB", "exactly-once", "per-partition");
  for (env_t *e = &a; e; e = e == &a ? &b : NULL) env_append(e, "  num-standby-replicas: 1\n");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 2);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 2);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 8000, 41, 0);
  cr_assert_eq(run_widen(&a, NULL), 0);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", a.state);
  cr_assert_eq(system(cmd), 0);
  char log[400], logb[400];
  snprintf(log, sizeof(log), "%s/a.log", a.dir);
  snprintf(logb, sizeof(logb), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "15000", log);
  cr_assert(wait_log(log, "restoring 2 task(s)"), "no restore");
  cr_assert_eq(kill(pa, SIGSTOP), 0);
  pid_t pb = spawn_widen_log(&b, NULL, "30000", logb);
  cr_assert(wait_log(logb, "subscribed"), "B did not start");
  usleep(4000 * 1000);
  cr_assert_eq(kill(pa, SIGCONT), 0);
  usleep(2000 * 1000);
  produce_orders(both, 2, 9000, 41, 8000);
  usleep(2000 * 1000);
  cr_assert_eq(kill(pb, SIGTERM), 0);
  int rcb = wait_exit(pb);
  usleep(7000 * 1000); /* B's session (6 s) times out: A takes task 1 back */
  produce_orders(both, 2, 10000, 41, 9000);
  int rca = wait_exit(pa);
  char *ta = wd_it_read_file(log), *tb = wd_it_read_file(logb);
  fprintf(stderr, "A: %s; %s\n",
          strstr(ta, "the rebalance stops the restore") ? "the rebalance stopped its restore"
                                                        : "its restore was not stopped",
          strstr(ta, "caught up (standby copy)") ? "a task caught up from its standby copy" : "no standby catch-up");
  cr_assert_eq(rca, 0, "%s", ta);
  cr_assert_eq(rcb, 0, "%s", tb);
  free(ta);
  free(tb);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  json_t *ra = state_rows(&clean), *rb = state_rows(&a);
  size_t nra = json_array_size(ra), nrb = json_array_size(rb);
  bool same_rows = wd_test_json_same(ra, rb);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  cr_assert(same_rows, "A's table differs from the clean run's (%zu rows, clean %zu)", nrb, nra);
  json_decref(x);
  json_decref(y);
  json_decref(ra);
  json_decref(rb);
  extra_props = "";
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* The crash points with per-partition tasks (a state changelog topic in the transaction, rows
 * written once at prepare with an undo image): the restart resolves the prepared commit
 * without restoring any task (docs/exactly-once.md "Crash points"), and each key's output and the
 * table equal a clean run's. */
static void crash_point_pp(const char *point, int n) {
  env_t clean, crash;
  char name[64];
  snprintf(name, sizeof(name), "p%.20s", point);
  extra_props = "";
  env_init_tasks(&clean, "ppclean", "exactly-once", "per-partition");
  env_init_tasks(&crash, name, "exactly-once", "per-partition");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 2000, 43, 0);
  char fault[64];
  snprintf(fault, sizeof(fault), "%s:%d", point, n);
  int rc = run_widen(&crash, fault);
  cr_assert_eq(rc, 128 + SIGKILL, "the fault hook at %s did not fire (exit %d)", fault, rc);
  produce_orders(both, 2, 3000, 43, 2000);
  char *text = NULL;
  rc = run_logged(&crash, "restart", &text);
  cr_assert_eq(rc, 0, "the restart after %s exited with %d:\n%s", fault, rc, text);
  cr_assert_null(strstr(text, "restoring"), "the restart after %s restored a task:\n%s", fault, text);
  free(text);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(crash.out, &ng);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

Test(scale_out, crash_after_prepare_per_partition, .timeout = 200) { crash_point_pp("after-prepare", 4); }
Test(scale_out, crash_during_commit_per_partition, .timeout = 200) { crash_point_pp("during-commit", 4); }
Test(scale_out, crash_after_commit_per_partition, .timeout = 200) { crash_point_pp("after-commit", 4); }

/* A transaction of another producer that carries the group's offsets and stays open (a member
 * killed for good, whose transaction.timeout.ms is long): a read_committed OffsetFetch answers
 * UNSTABLE_OFFSET_COMMIT until the broker aborts it, so an assignment's decision waits in the poll
 * loop. It must wait as long as such a transaction can stay open (the transaction timeout the
 * members are configured with, here 90 s), not give up after 60 s: it once stopped with
 * "E_RECOVER: cannot read the consumer group's committed offsets" while the transaction (70 s)
 * was still open. */
Test(exactly_once, an_open_transaction_holding_the_group_offsets_is_waited_for, .timeout = 300) {
  env_t clean, e;
  extra_props = "    transaction.timeout.ms: 90000\n";
  env_init(&clean, "pclean", "exactly-once");
  env_init(&e, "pend", "exactly-once");
  extra_props = "";
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, e.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &e};
  produce_orders(both, 2, 1500, 44, 0);
  cr_assert_eq(run_widen(&e, NULL), 0);
  produce_orders(both, 2, 2500, 44, 1500);
  /* the open transaction: the group's offsets sent, never committed (aborted by the broker after
   * its 70 s) */
  char errstr[512], group[200], topic[200];
  snprintf(group, sizeof(group), "%sgroup", e.prefix);
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  cr_assert_eq(rd_kafka_conf_set(conf, "transactional.id", group, errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  cr_assert_eq(rd_kafka_conf_set(conf, "transaction.timeout.ms", "70000", errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk, "%s", errstr);
  cr_assert_null(rd_kafka_init_transactions(rk, 30000));
  cr_assert_null(rd_kafka_begin_transaction(rk));
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(3);
  for (int p = 0; p < 3; p++) rd_kafka_topic_partition_list_add(l, topic, p)->offset = 0;
  rd_kafka_consumer_group_metadata_t *gm = rd_kafka_consumer_group_metadata_new(group);
  cr_assert_null(rd_kafka_send_offsets_to_transaction(rk, l, gm, 30000));
  rd_kafka_consumer_group_metadata_destroy(gm);
  rd_kafka_topic_partition_list_destroy(l);
  char log[400];
  snprintf(log, sizeof(log), "%s/pending.log", e.dir);
  int rc = wait_exit(spawn_widen_log(&e, NULL, "3000", log));
  char *text = wd_it_read_file(log);
  size_t len = strlen(text);
  cr_assert_eq(rc, 0, "widen gave up while the transaction holding the group's offsets was open (exit %d):\n%s", rc,
               len > 3000 ? text + len - 3000 : text);
  cr_assert_not_null(strstr(text, "reading the group's committed offsets"), "the decision never waited:\n%s",
                     len > 3000 ? text + len - 3000 : text);
  free(text);
  rd_kafka_destroy(rk);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  json_t *ra = state_rows(&clean), *rb = state_rows(&e);
  cr_assert_gt(json_array_size(ra), 50);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&e);
}

/* Two members, per-partition tasks, and the group's committed offset of one partition held by an
 * open transaction (20 s) of another producer: A is assigned every partition and waits for the
 * decision, B joins (a rebalance while pending), A is killed and restarted with its
 * group.instance.id (pending again), B leaves when idle (another rebalance), A decides. librdkafka
 * started the held partition, assigned at "committed", at its beginning, and A applied its records
 * again (243 records read twice, repeated changes downstream), because widen assigned again only
 * the partitions whose decided offset differed from the group's: now every decided partition is
 * assigned again at its offset. Per key the output equals a clean run's. */
Test(scale_out, a_rebalance_while_an_open_transaction_holds_the_group_offsets, .timeout = 300) {
  env_t clean, a, b;
  env_init_tasks(&clean, "hclean", "exactly-once", "per-partition");
  env_init_tasks(&a, "holdA", "exactly-once", "per-partition");
  env_member(&a, &b, "holdB", "exactly-once", "per-partition");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 4);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, a.prefix), "orders"), 4);
  const env_t *both[] = {&clean, &a};
  produce_orders(both, 2, 1500, 12, 0);
  cr_assert_eq(run_widen(&a, NULL), 0);
  produce_orders(both, 2, 3000, 12, 1500);
  char errstr[512], group[200], topic[200];
  snprintf(group, sizeof(group), "%sgroup", a.prefix);
  snprintf(topic, sizeof(topic), "%sorders", a.prefix);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  cr_assert_eq(rd_kafka_conf_set(conf, "transactional.id", group, errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  cr_assert_eq(rd_kafka_conf_set(conf, "transaction.timeout.ms", "25000", errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk, "%s", errstr);
  cr_assert_null(rd_kafka_init_transactions(rk, 30000));
  cr_assert_null(rd_kafka_begin_transaction(rk));
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  /* partition 2: one of A's (the range assignor orders the members by group.instance.id, and
   * A's "instance" comes after B's "holdB") */
  rd_kafka_topic_partition_list_add(l, topic, 2)->offset = 0;
  rd_kafka_consumer_group_metadata_t *gm = rd_kafka_consumer_group_metadata_new(group);
  cr_assert_null(rd_kafka_send_offsets_to_transaction(rk, l, gm, 30000));
  rd_kafka_consumer_group_metadata_destroy(gm);
  rd_kafka_topic_partition_list_destroy(l);
  char log_a[400], log_a2[400], log_b[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_a2, sizeof(log_a2), "%s/a2.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "8000", log_a);
  cr_assert(wd_it_wait_log(log_a, "assigned", 30000), "A was assigned nothing within 30 s");
  usleep(2000 * 1000);
  pid_t pb = spawn_widen_log(&b, NULL, "8000", log_b);
  usleep(4000 * 1000);
  cr_assert_eq(kill(pa, SIGKILL), 0);
  cr_assert_eq(wait_exit(pa), 128 + SIGKILL);
  pa = spawn_widen_log(&a, NULL, "8000", log_a2);
  int ra = wait_exit(pa), rb = wait_exit(pb);
  cr_assert_eq(ra, 0, "A exited with %d", ra);
  cr_assert_eq(rb, 0, "B exited with %d", rb);
  rd_kafka_destroy(rk);
  char *text = wd_it_read_file(log_a2);
  cr_assert_not_null(strstr(text, "reading the group's committed offsets"), "A's decision never waited:\n%s", text);
  cr_assert_not_null(strstr(text, "revoked"), "no rebalance while A waited:\n%s", text);
  free(text);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  assert_same_changelog(x, y, nc, ng);
  json_decref(x);
  json_decref(y);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* Kafka Connect's JsonConverter with schemas.enable=true (its default) writes each key as
 * {"schema":{...,"name":"srv.shop.<table>.Key"},"payload":{"order_id":7}}, and Connect partitions by
 * murmur2 of those bytes: the three topics have the same partition count and the wide key's field in
 * their keys, but one order's records are in different partitions of each. With `repartition: auto`
 * one member with 6 tasks must still give every key the changelog a consumer can explain and end
 * at the table of a single-task run (before: each task built its own partial row, `+I of a present
 * key`). The source's records outside their key's partition go through its repartition topic. */
Test(repartition, connect_envelope_keys_are_not_co_partitioned, .timeout = 200) {
  env_t clean, e;
  env3t(&clean, "cvclean", "single");
  env3(&e, "cvauto", "auto");
  create_topics3(&clean, 6);
  create_topics3(&e, 6);
  const env_t *both[] = {&clean, &e};
  produce3_envelope = true;
  produce3(both, 2, 3000, 47, 0);
  produce3_envelope = false;
  char log[400];
  snprintf(log, sizeof(log), "%s/run.log", e.dir);
  pid_t pid = spawn_widen_log(&e, NULL, "3000", log);
  cr_assert_eq(wait_exit(pid), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(e.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  json_t *fx = replay_checked(x), *fy = replay_checked(y);
  assert_ends_at(fx, &clean);
  assert_ends_at(fy, &clean);
  json_t *ra0 = state_rows(&clean), *rb0 = state_rows(&e), *ra = rows_by_key(ra0), *rb = rows_by_key(rb0);
  json_decref(ra0);
  json_decref(rb0);
  cr_assert_gt(json_object_size(ra), 150);
  cr_assert(wd_test_json_same(ra, rb), "the per-partition table differs from the single task's");
  char *text = wd_it_read_file(log);
  cr_assert(strstr(text, "go through repartition topic"), "no misplaced record was noticed:\n%s", text);
  /* the values carry their envelope schema: no decimal-encoding warning (it decides) */
  cr_assert(!strstr(text, "decimal-encoding is auto"), "a schema'd source warned:\n%s", text);
  free(text);
  json_decref(ra);
  json_decref(rb);
  json_decref(x);
  json_decref(y);
  json_decref(fx);
  json_decref(fy);
  env_done(&clean);
  env_done(&e);
}

/* The same keys with `repartition: false` on shipments: the first shipments record outside its
 * key's partition stops widen with C_SOURCE_KEYING naming the record (topic, partition, offset),
 * its key and the fix; nothing of it is applied. */
Test(repartition, connect_envelope_keys_with_repartition_false_stop, .timeout = 120) {
  env_t e;
  env3(&e, "cvfalse", "false");
  create_topics3(&e, 6);
  const env_t *one[] = {&e};
  produce3_envelope = true;
  produce3_only = "shipments";
  produce3(one, 1, 600, 47, 0);
  produce3_only = NULL;
  produce3_envelope = false;
  char log[400];
  snprintf(log, sizeof(log), "%s/run.log", e.dir);
  pid_t pid = spawn_widen_log(&e, NULL, "3000", log);
  int rc = wait_exit(pid);
  char *text = wd_it_read_file(log);
  char at[200];
  snprintf(at, sizeof(at), "source 'shipments' (%sshipments[", e.prefix);
  cr_assert_neq(rc, 0, "widen accepted misplaced records:\n%s", text);
  cr_assert(strstr(text, "C_SOURCE_KEYING") && strstr(text, at) && strstr(text, "srv.shop.shipments.Key") &&
                strstr(text, "{\"order_id\":") && strstr(text, "repartition: auto"),
            "%s", text);
  free(text);
  env_done(&e);
}

/* The same Connect-envelope keys with two live members (3 tasks each) while input flows, member B
 * killed (SIGKILL) and started again: the records outside their key's partition are forwarded by
 * whichever member owns their source partition to the member owning their key's task, in the
 * commit that consumes them. Read read_committed, every key's changelog is explainable and ends at
 * the table of a single-task run. */
Test(repartition, connect_envelope_keys_two_members_and_a_kill, .timeout = 300) {
  env_t clean, a, b;
  env3t(&clean, "cv2clean", "single");
  env3(&a, "cv2A", "auto");
  {
    const char *saved = yaml_template;
    char *y = wd_it_replace(strdup(YAML3), "REPARTITION", "auto");
    yaml_template = y;
    env_member(&a, &b, "cv2B", "exactly-once", "per-partition");
    yaml_template = saved;
    free(y);
  }
  create_topics3(&clean, 6);
  create_topics3(&a, 6);
  const env_t *both[] = {&clean, &a};
  produce3_envelope = true;
  produce3(both, 2, 1200, 53, 0);
  char log_a[400], log_b[400];
  snprintf(log_a, sizeof(log_a), "%s/a.log", a.dir);
  snprintf(log_b, sizeof(log_b), "%s/b.log", b.dir);
  pid_t pa = spawn_widen_log(&a, NULL, "12000", log_a), pb = spawn_widen_log(&b, NULL, "12000", log_b);
  cr_assert(wd_it_wait_log(log_a, "-> RUNNING", 60000), "A took no task within 60 s");
  cr_assert(wd_it_wait_log(log_b, "-> RUNNING", 60000), "B took no task within 60 s");
  for (uint64_t at = 1200; at < 2400; at += 300) {
    produce3(both, 2, at + 300, 53, at);
    usleep(300 * 1000);
  }
  cr_assert_eq(kill(pb, SIGKILL), 0);
  cr_assert_eq(wait_exit(pb), 128 + SIGKILL);
  produce3(both, 2, 3000, 53, 2400);
  pb = spawn_widen_log(&b, NULL, "12000", log_b);
  for (uint64_t at = 3000; at < 4200; at += 300) {
    produce3(both, 2, at + 300, 53, at);
    usleep(300 * 1000);
  }
  produce3_envelope = false;
  cr_assert_eq(wait_exit(pa), 0);
  cr_assert_eq(wait_exit(pb), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *x = changelog_by_key(clean.out, &nc), *y = changelog_by_key(a.out, &ng);
  cr_assert_gt(nc, 1000, "the single run emitted only %zu changes", nc);
  json_t *fx = replay_checked(x), *fy = replay_checked(y);
  assert_ends_at(fx, &clean);
  assert_ends_at(fy, &clean);
  json_decref(x);
  json_decref(y);
  json_decref(fx);
  json_decref(fy);
  env_done(&clean);
  env_done(&a);
  env_done(&b);
}

/* ---- the deferred state flush (state.flush-interval-ms, docs/exactly-once.md) ------------------ */

/* Turns the deferred state flush on in e's config: committed rows kept in memory up to `ms` and
 * max_bytes (small: a flush every few commits of 150 records). */
static void env_defer(const env_t *e, const char *ms, const char *max_bytes) {
  char *y = wd_it_read_file(e->cfg);
  cr_assert_not_null(y);
  char from[400], to[600];
  snprintf(from, sizeof(from), "  dir: %s\n", e->state);
  snprintf(to, sizeof(to), "  dir: %s\n  flush-interval-ms: %s\n  flush-max-bytes: %s\n", e->state, ms, max_bytes);
  cr_assert_not_null(strstr(y, from));
  y = wd_it_replace(y, from, to);
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fputs(y, f);
  fclose(f);
  free(y);
}

/* The output of `widen <args>` on e's config (stdout; stderr dropped) and its exit status. */
static char *widen_cmd(const env_t *e, int *rc, const char *args) {
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "WIDEN_BROKERS='%s' '%s' %s --config '%s' 2>/dev/null", wd_it_brokers(), wd_it_widen_bin(),
           args, e->cfg);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  size_t len = 0, cap = 4096;
  char *out = malloc(cap);
  cr_assert_not_null(out);
  for (size_t got; (got = fread(out + len, 1, cap - len - 1, p)) > 0;) {
    len += got;
    if (cap - len < 2048) cr_assert_not_null(out = realloc(out, cap *= 2));
  }
  out[len] = 0;
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return out;
}

/* `widen changes` over e's whole commit history: the net change from an empty table (lines sorted
 * by key), which is the final rows as +I lines when every commit that produced output has its
 * record (its output ranges) in the history. */
static char *all_changes(const env_t *e) {
  int rc;
  char *out = widen_cmd(e, &rc, "changes --from 1 --to 1000000000");
  cr_assert_eq(rc, 0, "widen changes: exit %d", rc);
  return out;
}

/* A clean run without the deferred flush, and a run with it killed at `point` (the n-th time) and
 * restarted, over the same input produced in two parts: the same changelog per key (read
 * read_committed: nothing lost, nothing repeated) and the same final rows; `widen status` of the
 * killed process's directory calls every partition owned. `history_kept`: every commit with output
 * has its record with its output ranges, so `widen changes` over the whole history gives the clean
 * run's. `replayed`: the restart
 * must have found its store behind the group and read the records in between again without output
 * (not a lost state rebuilt from the beginning). */
static void crash_point_deferred(const char *point, int n, bool replayed, bool history_kept) {
  env_t clean, crash;
  char name[64];
  snprintf(name, sizeof(name), "d%.20s", point);
  extra_props = "";
  env_init(&clean, "dclean", "exactly-once");
  env_init(&crash, name, "exactly-once");
  env_defer(&crash, "60000", "10000");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 2000, 44, 0);
  char fault[64];
  snprintf(fault, sizeof(fault), "%s:%d", point, n);
  int rc = run_widen(&crash, fault);
  cr_assert_eq(rc, 128 + SIGKILL, "the fault hook at %s did not fire (exit %d)", fault, rc);
  {
    /* the killed process's partitions are still this directory's: its commits reached the group's
     * offsets (its history says so, the record of a commit being written before its transaction
     * commits), its store is behind them (or at them) */
    char *status = widen_cmd(&crash, &rc, "status --last 1");
    cr_assert_eq(rc, 0, "widen status: exit %d\n%s", rc, status);
    cr_assert_null(strstr(status, " no "), "status after %s calls a partition not owned:\n%s", fault, status);
    if (replayed)
      cr_assert_not_null(strstr(status, "* "), "status after %s shows no unflushed commits:\n%s", fault, status);
    free(status);
  }
  produce_orders(both, 2, 3000, 44, 2000);
  char *text = NULL;
  rc = run_logged(&crash, "restart", &text);
  cr_assert_eq(rc, 0, "the restart after %s exited with %d:\n%s", fault, rc, text);
  cr_assert_null(strstr(text, "rebuilt from the beginning"), "the restart after %s rebuilt the state:\n%s", fault,
                 text);
  if (replayed)
    cr_assert_not_null(strstr(text, "read again without output"), "the restart after %s replayed nothing:\n%s", fault,
                       text);
  free(text);
  /* stopped cleanly, everything flushed: a start without new input replays nothing */
  rc = run_logged(&crash, "again", &text);
  cr_assert_eq(rc, 0);
  cr_assert_null(strstr(text, "read again without output"), "a clean stop left the store behind:\n%s", text);
  cr_assert_null(strstr(text, "rebuilt from the beginning"), "a clean stop left no state:\n%s", text);
  free(text);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(crash.out, &ng);
  cr_assert_gt(nc, 1000, "the clean run emitted only %zu changes", nc);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert_gt(json_array_size(ra), 50);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  /* the commit history kept the records of the commits the crash lost from memory (but for a kill
   * between a transaction's commit and its record's write, which loses that one record: the
   * per-commit protocol keeps one without its output ranges there) */
  if (history_kept) {
    char *ca = all_changes(&clean), *cb = all_changes(&crash);
    cr_assert_gt(strlen(ca), 1000);
    cr_assert_str_eq(cb, ca, "widen changes over the whole history differs from the clean run's after %s", fault);
    free(ca);
    free(cb);
  }
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

/* after a transaction committed, before its rows were kept (the store is at the last flush) */
Test(deferred_flush, crash_after_commit, .timeout = 200) { crash_point_deferred("after-commit", 7, true, false); }
/* with several committed commits kept in memory, right before their flush */
Test(deferred_flush, crash_before_flush, .timeout = 200) { crash_point_deferred("before-flush", 2, true, true); }
/* right after a flush (the store at the group's offsets, or just behind a commit that committed
 * in the background meanwhile) */
Test(deferred_flush, crash_after_flush, .timeout = 200) { crash_point_deferred("after-flush", 2, false, true); }
/* while a transaction's commit is on its way (its outcome decided by the broker) */
Test(deferred_flush, crash_during_commit, .timeout = 200) { crash_point_deferred("during-commit", 7, false, false); }
/* before any flush: nothing in the store, so the task is rebuilt as a lost one */
Test(deferred_flush, crash_before_the_first_flush, .timeout = 200) {
  env_t clean, crash;
  extra_props = "";
  env_init(&clean, "dclean0", "exactly-once");
  env_init(&crash, "dfirst", "exactly-once");
  env_defer(&crash, "60000", "67108864");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, clean.prefix), "orders"), 3);
  wd_it_create_topic(strcat(strcpy((char[200]){0}, crash.prefix), "orders"), 3);
  const env_t *both[] = {&clean, &crash};
  produce_orders(both, 2, 2000, 45, 0);
  cr_assert_eq(run_widen(&crash, "after-commit:5"), 128 + SIGKILL);
  produce_orders(both, 2, 3000, 45, 2000);
  cr_assert_eq(run_widen(&crash, NULL), 0);
  cr_assert_eq(run_widen(&clean, NULL), 0);
  size_t nc = 0, ng = 0;
  json_t *a = changelog_by_key(clean.out, &nc), *b = changelog_by_key(crash.out, &ng);
  assert_same_changelog(a, b, nc, ng);
  json_t *ra = state_rows(&clean), *rb = state_rows(&crash);
  cr_assert(wd_test_json_same(ra, rb), "final rows differ from the clean run's");
  json_decref(a);
  json_decref(b);
  json_decref(ra);
  json_decref(rb);
  env_done(&clean);
  env_done(&crash);
}

/* `widen status` of e: per source partition (at most 8) the offset stored with the state and the
 * group's committed offset (-1 for "-"; a trailing '*' or parentheses dropped). Returns how many. */
static int status_offsets(const env_t *e, int64_t *stored, int64_t *committed) {
  int rc, n = 0;
  char *out = widen_cmd(e, &rc, "status --last 1");
  cr_assert_eq(rc, 0, "widen status: exit %d\n%s", rc, out);
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && n < 8; l = strtok_r(NULL, "\n", &save)) {
    char name[300], owned[16], st[32], co[32];
    if (!strstr(l, "orders[") || sscanf(l, "%299s %15s %31s %31s", name, owned, st, co) != 4) continue;
    stored[n] = st[0] == '-' ? -1 : strtoll(st[0] == '(' ? st + 1 : st, NULL, 10);
    committed[n] = co[0] == '-' ? -1 : strtoll(co, NULL, 10);
    n++;
  }
  free(out);
  return n;
}

/* A restart that read [S, G) again without output writes that replay to the store as soon as it
 * caught up, not an interval later: `widen status` of the live process soon shows every partition
 * stored at or past the offsets the killed run had committed, so a process killed again right
 * after would not read them again (a crash loop shorter than the interval does not replay more and
 * more). The interval is 10 minutes: only the catch-up can have written them. */
Test(deferred_flush, a_replay_is_written_once_caught_up, .timeout = 200) {
  env_t e;
  extra_props = "";
  env_init(&e, "dloop", "exactly-once");
  env_defer(&e, "600000", "67108864");
  wd_it_create_topic(strcat(strcpy((char[200]){0}, e.prefix), "orders"), 3);
  const env_t *one[] = {&e};
  produce_orders(one, 1, 2000, 46, 0);
  cr_assert_eq(run_widen(&e, "after-commit:6"), 128 + SIGKILL);
  int64_t s0[8], g0[8], s1[8], g1[8];
  int n = status_offsets(&e, s0, g0);
  cr_assert_eq(n, 3);
  int behind = 0;
  for (int i = 0; i < n; i++) behind += s0[i] < g0[i];
  cr_assert_gt(behind, 0, "the killed run's store is not behind its commits");
  produce_orders(one, 1, 3000, 46, 2000);
  char log[400];
  snprintf(log, sizeof(log), "%s/loop.log", e.dir);
  pid_t pid = spawn_widen_log(&e, NULL, "60000", log);
  cr_assert(wd_it_wait_log(log, "read again without output", 60000), "the restart replayed nothing");
  cr_assert(wd_it_wait_log(log, "-> RUNNING", 60000), "the restart did not catch up within 60 s");
  bool written = false;
  for (int t = 0; t < 60 && !written; t++) {
    usleep(500 * 1000);
    cr_assert_eq(status_offsets(&e, s1, g1), n);
    written = true;
    for (int i = 0; i < n; i++) written = written && s1[i] >= g0[i];
  }
  kill(pid, SIGKILL);
  wait_exit(pid);
  for (int i = 0; i < n; i++)
    cr_assert_geq(s1[i], g0[i], "partition %d: stored %lld 30 s after the catch-up, the replay's end %lld", i,
                  (long long)s1[i], (long long)g0[i]);
  env_done(&e);
}

/* ---- the run summary after an aborted commit -------------------------------------------- */

/* A commit aborted and redone (WIDEN_FAULT=fatal-during-produce:4: the producer turns fatal in
 * the 4th commit, which is taken back, its records read again) is counted once in the run's
 * summary: its records in, messages out and dead letters equal what the input, output and
 * dead-letter topics hold (read read_committed). */
Test(exactly_once, summary_counts_an_aborted_commit_once, .timeout = 200) {
  env_t e;
  env_init(&e, "summary", "exactly-once");
  char topic[200], dlq[220];
  snprintf(topic, sizeof(topic), "%sorders", e.prefix);
  snprintf(dlq, sizeof(dlq), "%s.dlq", e.out);
  wd_it_create_topic(topic, 3);
  const env_t *one[] = {&e};
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  cr_assert_null(wd_producer_new(&kc, &p));
  wd_kafka_conf_clear(&kc);
  for (int k = 0; k < 20; k++) { /* a record that is not JSON after every 100: dead letters in every commit */
    produce_orders(one, 1, (uint64_t)k * 100 + 100, 47, (uint64_t)k * 100);
    char key[32];
    int klen = snprintf(key, sizeof(key), "{\"order_id\":%d}", 100000 + k);
    cr_assert_null(wd_producer_send(p, topic, key, (size_t)klen, "not json", 8, NULL, 0));
    wd_error_t *err = wd_producer_wait_acked(p, 30000);
    cr_assert_null(err, "%s", err ? err->message : "");
  }
  wd_producer_destroy(p);
  char log[400];
  snprintf(log, sizeof(log), "%s/summary.log", e.dir);
  int rc = wait_exit(spawn_widen_log(&e, "fatal-during-produce:4", "2000", log));
  char *text = wd_it_read_file(log);
  cr_assert_not_null(text);
  size_t len = strlen(text);
  const char *tail = len > 3000 ? text + len - 3000 : text;
  cr_assert_eq(rc, 0, "widen exited with %d:\n%s", rc, tail);
  cr_assert_not_null(strstr(text, "aborting commit"), "no commit was aborted:\n%s", tail);
  const char *s = strstr(text, "widen: summary: ");
  cr_assert_not_null(s, "no summary:\n%s", tail);
  unsigned long long in = 0, msgs = 0, dead = 0;
  const char *m = strstr(s, " messages, "), *r = NULL;
  cr_assert_not_null(m, "%s", s);
  for (r = m; r > s && r[-1] != ' '; r--) {}
  cr_assert_eq(sscanf(s, "widen: summary: %llu Kafka records in", &in), 1, "%s", s);
  cr_assert_eq(sscanf(r, "%llu messages, %llu dead-lettered", &msgs, &dead), 2, "%s", s);
  size_t nin = count_records(topic, -1, NULL, NULL, NULL, NULL);
  size_t nout = count_records(e.out, -1, NULL, NULL, NULL, NULL);
  size_t ndead = count_records(dlq, -1, NULL, NULL, NULL, NULL);
  cr_assert_eq(nin, 2020);
  cr_assert_eq(ndead, 20);
  cr_assert_eq(dead, ndead, "the summary says %llu dead-lettered, the dead-letter topic holds %zu:\n%s", dead, ndead,
               s);
  cr_assert_eq(in, nin, "the summary says %llu records in, the input topic holds %zu:\n%s", in, nin, s);
  cr_assert_eq(msgs, nout, "the summary says %llu messages out, the output topic holds %zu:\n%s", msgs, nout, s);
  free(text);
  env_done(&e);
}
