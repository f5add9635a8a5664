/*
 * tests/integration/test_pipeline.c — `widen run` on the real Kafka broker (WIDEN_TEST_BROKERS,
 * started by scripts/kafka in .ci/run), black box: the test produces Debezium events, runs the
 * widen binary (WIDEN_BIN) as a separate process, reads the output and dead-letter topics back
 * and opens the state store after widen exited.
 *
 * The reference is `widen simulate` (wd_simulate_run) over the records in the order widen applied
 * them (`widen run --trace`): the output topic, per key in order, and the final state must equal
 * what it computes. For the three-stream table with one sequence group per stream the final rows
 * must also not depend on that order. A restart by SIGTERM loses and repeats nothing; a kill -9
 * loses nothing. Every kind of bad input lands in the dead-letter topic with its reason.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <math.h>
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
#include "app/cli/simulate.h"
#include "changelog/changelog.h"
#include "common/json.h"
#include "ingest/consumer.h"
#include "join/state.h"
#include "sink/producer.h"
#include "tests/support/integration.h"
#include "tests/support/json_same.h"

extern char **environ;

/* The source tree, from this file's path (tests/integration/test_pipeline.c). */
static void source_path(char *out, size_t n, const char *rel) {
  const char *f = __FILE__;
  const char *end = strstr(f, "tests/integration/");
  cr_assert_not_null(end);
  snprintf(out, n, "%.*s%s", (int)(end - f), f, rel);
}

typedef struct {
  char dir[256];
  char prefix[96];
  char cfg[320];
  char trace[320];
  char state[320];
} env_t;

/* A fresh directory and topic prefix; the config is `yaml` with "shop." replaced by the prefix,
 * "STATE_DIR" by the state directory and "GROUP" by a unique group id. */
static void env_init(env_t *e, const char *name, char *yaml) {
  snprintf(e->dir, sizeof(e->dir), "/tmp/widen-it-%s-XXXXXX", name);
  cr_assert_not_null(mkdtemp(e->dir));
  snprintf(e->prefix, sizeof(e->prefix), "wdtest.%d%ld.%s.", (int)getpid(), (long)time(NULL) % 100000, name);
  snprintf(e->cfg, sizeof(e->cfg), "%s/widen.yaml", e->dir);
  snprintf(e->trace, sizeof(e->trace), "%s/trace.jsonl", e->dir);
  snprintf(e->state, sizeof(e->state), "%s/state", e->dir);
  char group[200];
  snprintf(group, sizeof(group), "%sgroup", e->prefix);
  yaml = wd_it_replace(yaml, "shop.", e->prefix);
  yaml = wd_it_replace(yaml, "STATE_DIR", e->state);
  yaml = wd_it_replace(yaml, "GROUP", group);
  FILE *f = fopen(e->cfg, "w");
  cr_assert_not_null(f);
  fputs(yaml, f);
  fclose(f);
  free(yaml);
}

static void env_done(env_t *e) {
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e->dir);
}

/* The demo pipeline (three streams, a sequence group each) with static group membership and
 * small batches, so restarts rejoin at once and a kill lands mid-stream. */
static char *demo_yaml(const char *instance, bool order_independent) {
  char path[512];
  source_path(path, sizeof(path), "configs/demo.yaml");
  char *y = wd_it_read_file(path);
  char props[300];
  snprintf(props, sizeof(props),
           "  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n    group.instance.id: %s\n", instance);
  y = wd_it_replace(y, "  group.id: widen-demo\n", props);
  y = wd_it_replace(y, "./state/demo", "STATE_DIR");
  y = wd_it_replace(y, "batch-size: 1000", "batch-size: 100");
  /* remove-record-on-sequence-group couples the groups (spec §14): without it the final rows do
   * not depend on how the streams interleave */
  if (order_independent)
    y = wd_it_replace(y, "    partial-update.remove-record-on-sequence-group: order_version\n", "");
  return y;
}

static pid_t spawn_widen(const env_t *e, const char *const *extra) {
  const char *argv[16] = {wd_it_widen_bin(), "run", "--config", e->cfg, "--quiet", "--trace", e->trace};
  size_t n = 7;
  for (size_t i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
  argv[n] = NULL;
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
  const char *extra[] = {"--max-idle-ms", "2500", NULL};
  int rc = wait_exit(spawn_widen(e, extra));
  cr_assert_eq(rc, 0, "widen run exited with %d", rc);
}

static wd_producer_t *producer(void) {
  wd_kafka_conf_t kc = {0};
  wd_producer_t *p = NULL;
  cr_assert_null(wd_kafka_conf_set_brokers(&kc, wd_it_brokers()));
  wd_error_t *err = wd_producer_new(&kc, &p);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_kafka_conf_clear(&kc);
  return p;
}

/* Produces the generated workload (records from index skip on); when produced is not NULL it
 * receives a new object: order_id text -> number of records produced for that key (the input as
 * produced, for the no-loss, no-repeat check). */
static void produce_generated_counted(const env_t *e, uint64_t keys, uint64_t records, uint64_t seed, uint64_t skip,
                                      json_t **produced);
static void produce_generated(const env_t *e, uint64_t keys, uint64_t records, uint64_t seed, uint64_t skip) {
  produce_generated_counted(e, keys, records, seed, skip, NULL);
}
static void produce_generated_counted(const env_t *e, uint64_t keys, uint64_t records, uint64_t seed, uint64_t skip,
                                      json_t **produced) {
  if (produced) *produced = json_object();
  wd_producer_t *p = producer();
  wd_gen_t *g = NULL;
  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = keys;
  go.records = records;
  go.topic_prefix = e->prefix;
  go.delete_ratio = 0.03;
  cr_assert_null(wd_gen_new(&go, &g));
  wd_gen_msg_t m;
  for (uint64_t i = 0; wd_gen_next(g, &m); i++) {
    if (i < skip) continue;
    cr_assert_null(wd_producer_send(p, m.topic, m.key, m.key_len, m.value, m.value_len, NULL, 0));
    if (produced) {
      json_t *k = json_loadb(m.key, m.key_len, 0, NULL);
      char ks[32];
      snprintf(ks, sizeof(ks), "%lld", (long long)json_integer_value(json_object_get(k, "order_id")));
      json_decref(k);
      json_int_t c = json_integer_value(json_object_get(*produced, ks));
      json_object_set_new(*produced, ks, json_integer(c + 1));
    }
  }
  wd_error_t *err = wd_producer_wait_acked(p, 60000);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_gen_destroy(g);
  wd_producer_destroy(p);
}

static void produce_lines(const char *topic, const char *const *keys, const char *const *values, size_t n) {
  wd_producer_t *p = producer();
  for (size_t i = 0; i < n; i++)
    cr_assert_null(wd_producer_send(p, topic, keys[i], keys[i] ? strlen(keys[i]) : 0, values[i],
                                    values[i] ? strlen(values[i]) : 0, NULL, 0));
  cr_assert_null(wd_producer_wait_acked(p, 60000));
  wd_producer_destroy(p);
}

/* The table of the env's config as a simulate case without input. */
static json_t *case_of(const env_t *e) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(e->cfg, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  json_t *cs = json_object(), *schema = json_array(), *pk = json_array(), *opts = json_object();
  size_t n = 0, npk = 0, nopt = 0;
  const char *const *names = wd_config_column_names(cfg, &n);
  const char *const *types = wd_config_column_types(cfg, &n);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(schema, json_pack("{s:s,s:s}", "name", names[i], "type", types[i]));
  const char *const *pkn = wd_config_primary_key(cfg, &npk);
  for (size_t i = 0; i < npk; i++) json_array_append_new(pk, json_string(pkn[i]));
  const wd_option_t *o = wd_config_table_options(cfg, &nopt);
  for (size_t i = 0; i < nopt; i++) json_object_set_new(opts, o[i].key, json_string(o[i].value));
  json_object_set_new(cs, "schema", schema);
  json_object_set_new(cs, "primary_key", pk);
  json_object_set_new(cs, "options", opts);
  wd_config_destroy(cfg);
  return cs;
}

/* Runs simulate over the trace (the records in the order widen applied them). */
static json_t *simulate_trace(const env_t *e) {
  json_t *cs = case_of(e), *input = json_array();
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

/* The final rows in widen's state directory, sorted by the (single, integer) key. */
static int add_row(void *ctx, const wd_row_t *row) {
  void **c = ctx;
  json_array_append_new(c[0], wd_row_to_json(c[1], row));
  return 0;
}
static int by_key(const void *a, const void *b) {
  json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  const char *k = "order_id";
  if (!json_object_get(x, k)) k = "id";
  json_int_t p = json_integer_value(json_object_get(x, k)), q = json_integer_value(json_object_get(y, k));
  return p < q ? -1 : p > q;
}
static json_t *state_rows(const env_t *e) {
  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  cr_assert_null(wd_config_load(e->cfg, &cfg));
  cr_assert_null(wd_config_build_table(cfg, &t));
  wd_error_t *err = wd_store_open_rocksdb(e->state, NULL, &st);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_state_t *s = wd_state_new(t, st, 0);
  json_t *rows = json_array();
  void *ctx[2] = {rows, (void *)wd_table_schema(t)};
  cr_assert_null(wd_state_scan_rows(s, add_row, ctx));
  size_t n = json_array_size(rows);
  json_t **v = malloc((n + 1) * sizeof(*v));
  for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(rows, i));
  qsort(v, n, sizeof(*v), by_key);
  json_t *sorted = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(sorted, v[i]);
  free(v);
  json_decref(rows);
  wd_state_destroy(s);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  return sorted;
}

/* Groups changelog entries ({"op","row"} or tail's {"op","key","row"}) by the key column's
 * value into an object: key text -> array of [op, row]. */
static json_t *by_key_seq(json_t *cl, const char *keycol) {
  json_t *m = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(cl, i, e) {
    char k[64];
    snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(json_object_get(e, "row"), keycol)));
    json_t *seq = json_object_get(m, k);
    if (!seq) {
      seq = json_array();
      json_object_set_new(m, k, seq);
    }
    json_array_append_new(seq, json_pack("[OO]", json_object_get(e, "op"), json_object_get(e, "row")));
  }
  return m;
}

static void assert_json_eq(json_t *a, json_t *b, const char *what) {
  if (!wd_test_json_same(a, b)) {
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    cr_assert_fail("%s differ:\n got  %.1500s\n want %.1500s", what, x, y);
  }
}

/* The records widen applied (its trace over every run of e) are the input as produced: per key,
 * as many source messages as were produced, none repeated, none lost. (Comparing with simulate
 * over the trace alone cannot see a repeat: a repeated record would be in both.) */
static void assert_trace_is_input(const env_t *e, json_t *produced) {
  json_t *applied = json_object();
  FILE *f = fopen(e->trace, "r");
  cr_assert_not_null(f, "no trace at %s", e->trace);
  char *line = NULL;
  size_t cap = 0;
  json_int_t last_msg = -1;
  size_t messages = 0;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, 0, NULL);
    cr_assert_not_null(j);
    json_int_t msg = json_integer_value(json_object_get(j, "message"));
    if (msg != last_msg) { /* a source message's records are consecutive lines with its number */
      last_msg = msg;
      messages++;
      char ks[32];
      snprintf(ks, sizeof(ks), "%lld",
               (long long)json_integer_value(json_object_get(json_object_get(j, "row"), "order_id")));
      json_object_set_new(applied, ks, json_integer(json_integer_value(json_object_get(applied, ks)) + 1));
    }
    json_decref(j);
  }
  free(line);
  fclose(f);
  size_t want = 0;
  const char *k;
  json_t *v;
  json_object_foreach(produced, k, v) want += (size_t)json_integer_value(v);
  cr_assert_eq(messages, want, "widen applied %zu source messages for %zu produced (repeated or lost records)",
               messages, want);
  assert_json_eq(applied, produced, "source messages applied per key vs produced per key");
  json_decref(applied);
}

/* Checks the output topic and the state against simulate over the trace. */
static void check_against_simulate(const env_t *e, const char *out_topic, const char *keycol) {
  json_t *sim = simulate_trace(e);
  cr_assert(json_is_null(json_object_get(sim, "error")), "simulate reported an error");
  json_t *rows = state_rows(e);
  assert_json_eq(rows, json_object_get(sim, "rows"), "final state rows vs simulate");
  json_t *out = wd_it_read_changelog(out_topic);
  json_t *got = by_key_seq(out, keycol), *want = by_key_seq(json_object_get(sim, "changelog"), keycol);
  assert_json_eq(got, want, "output changelog per key vs simulate");
  cr_log_info("%zu rows, %zu changelog records checked", json_array_size(rows), json_array_size(out));
  json_decref(got);
  json_decref(want);
  json_decref(out);
  json_decref(rows);
  json_decref(sim);
}

/* Three streams, sequence groups, ~20% late, deletes: output and state equal simulate over the
 * apply order; the final rows equal simulate over a different interleaving (streams one after
 * another). */
Test(pipeline, three_streams_equal_simulate, .timeout = 280) {
  env_t e;
  env_init(&e, "three", demo_yaml("it-three", true));
  json_t *produced = NULL;
  produce_generated_counted(&e, 60, 1500, 11, 0, &produced);
  run_to_idle(&e);
  char out_topic[200];
  snprintf(out_topic, sizeof(out_topic), "%sorders_wide", e.prefix);
  assert_trace_is_input(&e, produced);
  json_decref(produced);
  check_against_simulate(&e, out_topic, "order_id");

  /* order independence: the trace reordered stream by stream gives the same final rows */
  json_t *sim = simulate_trace(&e), *cs = case_of(&e), *input = json_array();
  FILE *f = fopen(e.trace, "r");
  char *line = NULL;
  size_t cap = 0;
  json_t *lines = json_array();
  while (getline(&line, &cap, f) > 0) json_array_append_new(lines, json_loads(line, 0, NULL));
  free(line);
  fclose(f);
  static const char *const seqcol[] = {"order_version", "pay_version", "ship_version"};
  for (int s = 2; s >= 0; s--) {
    size_t i;
    json_t *r;
    json_array_foreach(lines, i, r) {
      json_t *v = json_object_get(json_object_get(r, "row"), seqcol[s]);
      if (v && !json_is_null(v)) json_array_append(input, r);
    }
  }
  json_object_set_new(cs, "input", input);
  json_t *reordered = NULL;
  cr_assert_eq(wd_simulate_run(cs, "memory", 1, &reordered), 0);
  assert_json_eq(json_object_get(reordered, "rows"), json_object_get(sim, "rows"),
                 "final rows for another interleaving of the streams");
  json_decref(reordered);
  json_decref(cs);
  json_decref(lines);
  json_decref(sim);
  env_done(&e);
}

/* SIGTERM mid-stream, then a restart: nothing lost, nothing repeated: the records applied over
 * both runs are the input as produced, once each, and the output per key equals simulate over
 * that apply order. */
Test(pipeline, sigterm_restart_loses_and_repeats_nothing, .timeout = 280) {
  env_t e;
  env_init(&e, "term", demo_yaml("it-term", false));
  json_t *produced = NULL;
  produce_generated_counted(&e, 80, 4000, 12, 0, &produced);
  pid_t pid = spawn_widen(&e, NULL);
  /* wait until widen has applied something, then stop it */
  for (int i = 0; i < 300; i++) {
    FILE *f = fopen(e.trace, "r");
    long size = 0;
    if (f) {
      fseek(f, 0, SEEK_END);
      size = ftell(f);
      fclose(f);
    }
    if (size > 20000) break;
    usleep(20000);
  }
  kill(pid, SIGTERM);
  cr_assert_eq(wait_exit(pid), 0, "widen did not exit 0 on SIGTERM");
  run_to_idle(&e);
  char out_topic[200];
  snprintf(out_topic, sizeof(out_topic), "%sorders_wide", e.prefix);
  assert_trace_is_input(&e, produced);
  check_against_simulate(&e, out_topic, "order_id");
  json_decref(produced);
  env_done(&e);
}

/* kill -9 mid-stream, then a restart: the final state is right (equal to a clean replay of the
 * topics, whose trace simulate confirms) and the output's last record per key is the final row. */
Test(pipeline, kill9_restart_loses_nothing, .timeout = 280) {
  env_t e;
  env_init(&e, "kill", demo_yaml("it-kill", true));
  produce_generated(&e, 80, 4000, 13, 0);
  pid_t pid = spawn_widen(&e, NULL);
  for (int i = 0; i < 300; i++) {
    FILE *f = fopen(e.trace, "r");
    long size = 0;
    if (f) {
      fseek(f, 0, SEEK_END);
      size = ftell(f);
      fclose(f);
    }
    if (size > 20000) break;
    usleep(20000);
  }
  kill(pid, SIGKILL);
  wait_exit(pid);
  run_to_idle(&e);
  json_t *rows = state_rows(&e);

  /* a clean rebuild with widen replay into a fresh state directory */
  char fresh[300], trace2[300];
  snprintf(fresh, sizeof(fresh), "%s/replayed", e.dir);
  snprintf(trace2, sizeof(trace2), "%s/trace-replay.jsonl", e.dir);
  const char *argv[] = {wd_it_widen_bin(), "replay", "--config", e.cfg,     "--from", "beginning",
                        "--state-dir",     fresh,    "--quiet",  "--trace", trace2,   NULL};
  pid_t rp;
  cr_assert_eq(posix_spawn(&rp, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
  cr_assert_eq(wait_exit(rp), 0, "widen replay failed");
  env_t r = e;
  snprintf(r.state, sizeof(r.state), "%s", fresh);
  snprintf(r.trace, sizeof(r.trace), "%s", trace2);
  json_t *replayed = state_rows(&r);
  assert_json_eq(rows, replayed, "state after kill -9 + restart vs a clean replay");
  json_t *sim = simulate_trace(&r);
  assert_json_eq(replayed, json_object_get(sim, "rows"), "replayed state vs simulate");

  /* the output's last record per key is the final row (or a delete when the key is gone) */
  char out_topic[200];
  snprintf(out_topic, sizeof(out_topic), "%sorders_wide", e.prefix);
  json_t *outlist = wd_it_read_changelog(out_topic);
  json_t *out = by_key_seq(outlist, "order_id");
  json_decref(outlist);
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    char k[32];
    snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(row, "order_id")));
    json_t *seq = json_object_get(out, k);
    cr_assert_not_null(seq, "key %s has no output", k);
    json_t *last = json_array_get(seq, json_array_size(seq) - 1);
    cr_assert_str_neq(json_string_value(json_array_get(last, 0)), "-D");
    assert_json_eq(json_array_get(last, 1), row, "last output record of a key vs its final row");
  }
  json_decref(out);
  json_decref(sim);
  json_decref(replayed);
  json_decref(rows);
  env_done(&e);
}

/* ---- delete policies and bad input, on the products table of ../shared/data ------------- */

static const char *const PRODUCTS_YAML =
    "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: products\n  schema:\n    - {name: id, type: INT NOT NULL}\n    - {name: name, type: STRING}\n"
    "    - {name: description, type: STRING}\n    - {name: weight, type: FLOAT}\n  primary-key: [id]\n  options:\n"
    "    changelog-producer: lookup\nOPTIONS"
    "sources:\n  - name: products\n    topic: shop.products\n    format: debezium-json\n"
    "    columns: {id: id, name: name, description: description, weight: weight}\n"
    "sink:\n  topic: shop.products_wide\n  format: debezium-json\n  dead-letter-topic: shop.dlq\n"
    "state:\n  dir: STATE_DIR\npipeline:\n  batch-size: 5\n  batch-timeout-ms: 50\n";

static char *products_yaml(const char *options) {
  char *y = strdup(PRODUCTS_YAML);
  return wd_it_replace(y, "OPTIONS", options);
}

/* Sends the 16 Debezium MySQL events of ../shared/data (products 101-111: inserts, updates, one
 * delete) and returns how many there were. */
static size_t produce_products(const env_t *e) {
  char path[600], topic[200];
  const char *shared = getenv("WIDEN_SHARED");
  cr_assert_not_null(shared);
  snprintf(path, sizeof(path), "%s/data/flink-json/debezium-data-schema-exclude.txt", shared);
  snprintf(topic, sizeof(topic), "%sproducts", e->prefix);
  char *text = wd_it_read_file(path);
  const char *keys[64], *vals[64];
  size_t n = 0;
  char *save = NULL;
  char keybuf[64][32];
  for (char *line = strtok_r(text, "\n", &save); line && n < 64; line = strtok_r(NULL, "\n", &save)) {
    /* keyed as Debezium keys them, so every change of a product is in one partition, in order */
    json_t *ev = json_loads(line, 0, NULL);
    cr_assert_not_null(ev);
    json_t *img = json_object_get(ev, "after");
    if (!json_is_object(img)) img = json_object_get(ev, "before");
    snprintf(keybuf[n], sizeof(keybuf[n]), "{\"id\":%lld}", (long long)json_integer_value(json_object_get(img, "id")));
    json_decref(ev);
    keys[n] = keybuf[n];
    vals[n++] = line;
  }
  produce_lines(topic, keys, vals, n);
  free(text);
  return n;
}

static void run_policy(const char *name, const char *options, size_t want_rows, bool has_111) {
  env_t e;
  env_init(&e, name, products_yaml(options));
  cr_assert_eq(produce_products(&e), 16);
  run_to_idle(&e);
  char out_topic[200];
  snprintf(out_topic, sizeof(out_topic), "%sproducts_wide", e.prefix);
  check_against_simulate(&e, out_topic, "id");
  json_t *rows = state_rows(&e);
  cr_expect_eq(json_array_size(rows), want_rows, "%s: %zu rows", name, json_array_size(rows));
  json_t *last = json_array_get(rows, json_array_size(rows) - 1);
  cr_expect_eq(json_integer_value(json_object_get(last, "id")) == 111, has_111, "%s: row 111", name);
  json_decref(rows);
  env_done(&e);
}

Test(pipeline, delete_policy_deduplicate, .timeout = 120) { run_policy("dedup", "", 10, false); }
Test(pipeline, delete_policy_partial_update_ignore_delete, .timeout = 120) {
  run_policy("pu-ignore", "    merge-engine: partial-update\n    ignore-delete: true\n", 11, true);
}
Test(pipeline, delete_policy_partial_update_remove_record_on_delete, .timeout = 120) {
  run_policy("pu-remove", "    merge-engine: partial-update\n    partial-update.remove-record-on-delete: true\n", 10,
             false);
}
Test(pipeline, delete_policy_aggregation_remove_record_on_delete, .timeout = 120) {
  run_policy("agg-remove",
             "    merge-engine: aggregation\n    fields.weight.aggregate-function: sum\n"
             "    aggregation.remove-record-on-delete: true\n",
             10, false);
}

/* Reads the dead-letter topic with librdkafka directly: value bytes and headers. */
static json_t *read_dead_letters(const char *topic) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", topic, errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof(errstr));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(rk);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(tp, topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, tp);
  rd_kafka_topic_partition_list_destroy(tp);
  json_t *out = json_array();
  for (int idle = 0; idle < 16;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) {
      idle++;
      continue;
    }
    if (!m->err) {
      idle = 0;
      json_t *j = json_object();
      json_object_set_new(j, "value", json_stringn(m->payload ? m->payload : "", m->len));
      rd_kafka_headers_t *h = NULL;
      if (!rd_kafka_message_headers(m, &h)) {
        const char *name;
        const void *val;
        size_t len;
        for (size_t i = 0; !rd_kafka_header_get_all(h, i, &name, &val, &len); i++)
          json_object_set_new(j, name, json_stringn(val, len));
      }
      json_array_append_new(out, j);
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

/* Every kind of bad input lands in the dead-letter topic, unchanged, with its reason; the
 * pipeline goes on. */
Test(pipeline, bad_input_goes_to_dead_letter_topic, .timeout = 150) {
  env_t e;
  env_init(&e, "bad", products_yaml("    merge-engine: partial-update\n"));
  cr_assert_eq(produce_products(&e), 16); /* partial-update without a delete policy: -D rejected, -U left out */
  char topic[200];
  snprintf(topic, sizeof(topic), "%sproducts", e.prefix);
  const char *keys[] = {NULL, NULL, NULL, NULL};
  const char *vals[] = {"this is not json", "{\"before\":null,\"after\":{\"name\":\"no key\"},\"op\":\"c\"}",
                        "{\"before\":null,\"after\":{\"id\":500,\"weight\":\"heavy\"},\"op\":\"c\"}",
                        "{\"before\":null,\"after\":{\"id\":501,\"name\":\"fine\"},\"op\":\"c\"}"};
  produce_lines(topic, keys, vals, 4);
  /* a valid update whose changelog message (before + after, 1.2 MB) is over the producer's
   * message.max.bytes: dead-lettered, the pipeline goes on */
  char *big1 = malloc(700000), *big2 = malloc(700000);
  char *fill = malloc(600001);
  memset(fill, 'a', 600000);
  fill[600000] = 0;
  snprintf(big1, 700000, "{\"before\":null,\"after\":{\"id\":600,\"description\":\"%s\"},\"op\":\"c\"}", fill);
  memset(fill, 'b', 600000);
  snprintf(big2, 700000, "{\"before\":null,\"after\":{\"id\":600,\"description\":\"%s\"},\"op\":\"u\"}", fill);
  const char *bkeys[] = {"{\"id\":600}", "{\"id\":600}"};
  const char *bvals[] = {big1, big2};
  produce_lines(topic, bkeys, bvals, 2);
  free(fill);
  free(big1);
  free(big2);
  run_to_idle(&e);
  snprintf(topic, sizeof(topic), "%sdlq", e.prefix);
  json_t *dl = read_dead_letters(topic);
  /* 1 delete rejected by the engine (the 4 updates apply their +U without the -U), 3
   * bad records, 1 output too large */
  cr_assert_eq(json_array_size(dl), 5, "dead letters: %zu", json_array_size(dl));
  int ids[5] = {0};
  static const char *const want[] = {"E_PU_DELETE_NOT_ACCEPTED", "E_DECODE", "E_NO_KEY", "E_TYPE",
                                     "E_OUTPUT_TOO_LARGE"};
  size_t i;
  json_t *d;
  json_array_foreach(dl, i, d) {
    const char *id = json_string_value(json_object_get(d, "widen.error.id"));
    cr_assert_not_null(id);
    for (int k = 0; k < 5; k++) ids[k] += !strcmp(id, want[k]);
    cr_expect(strstr(json_string_value(json_object_get(d, "widen.error.message")), id) != NULL);
    cr_expect_str_eq(json_string_value(json_object_get(d, "widen.source.partition")) ? "ok" : "", "ok");
    cr_expect(json_string_value(json_object_get(d, "widen.source.topic")) != NULL);
    cr_expect(json_string_value(json_object_get(d, "widen.source.offset")) != NULL);
    if (!strcmp(id, "E_DECODE")) cr_expect_str_eq(json_string_value(json_object_get(d, "value")), "this is not json");
  }
  cr_expect_eq(ids[0], 1);
  cr_expect_eq(ids[1], 1);
  cr_expect_eq(ids[2], 1);
  cr_expect_eq(ids[3], 1);
  cr_expect_eq(ids[4], 1);
  /* the pipeline went on: the 11 inserts, id 501 and id 600 are rows */
  json_t *rows = state_rows(&e);
  cr_expect_eq(json_array_size(rows), 13);
  json_decref(rows);
  json_decref(dl);
  env_done(&e);
}

/* A rejected record larger than the producer's message.max.bytes (its source topic took it) is
 * dead-lettered cut to fit, the reason saying so, and the pipeline goes on: sent whole, the dead
 * letter failed the commit at every try and `widen run` stopped with E_SINK_PRODUCE. */
Test(pipeline, dead_letter_over_message_max_bytes_is_cut_to_fit, .timeout = 150) {
  env_t e;
  char *y = products_yaml("    merge-engine: deduplicate\n");
  y = wd_it_replace(y, "  dead-letter-topic: shop.dlq\n",
                    "  dead-letter-topic: shop.dlq\n  properties:\n    message.max.bytes: 4000\n");
  env_init(&e, "bigdlq", y);
  char topic[200];
  snprintf(topic, sizeof(topic), "%sproducts", e.prefix);
  char *big = malloc(20001);
  memset(big, 'x', 20000);
  big[20000] = 0;
  const char *keys[] = {"{\"id\":1}", "{\"id\":2}", "{\"id\":3}"};
  const char *vals[] = {"{\"before\":null,\"after\":{\"id\":1,\"name\":\"before\"},\"op\":\"c\"}", big,
                        "{\"before\":null,\"after\":{\"id\":3,\"name\":\"after\"},\"op\":\"c\"}"};
  produce_lines(topic, keys, vals, 3);
  run_to_idle(&e);
  snprintf(topic, sizeof(topic), "%sdlq", e.prefix);
  json_t *dl = read_dead_letters(topic);
  cr_assert_eq(json_array_size(dl), 1, "dead letters: %zu", json_array_size(dl));
  json_t *d = json_array_get(dl, 0);
  cr_expect_str_eq(json_string_value(json_object_get(d, "widen.error.id")), "E_DECODE");
  const char *msg = json_string_value(json_object_get(d, "widen.error.message"));
  cr_assert_not_null(msg);
  cr_expect(strstr(msg, "dead letter cut to fit message.max.bytes 4000") && strstr(msg, "of 20000 bytes)"), "%s", msg);
  const char *v = json_string_value(json_object_get(d, "value"));
  size_t vlen = strlen(v);
  cr_expect(vlen > 1000 && vlen < 4000, "the value cut to %zu bytes", vlen);
  cr_expect(!strncmp(v, big, vlen), "the value's first bytes");
  free(big);
  json_decref(dl);
  /* the pipeline went on: ids 1 and 3 are rows */
  json_t *rows = state_rows(&e);
  cr_expect_eq(json_array_size(rows), 2);
  json_decref(rows);
  env_done(&e);
}

/* Creates topic (one partition) with the topic config max.message.bytes = max_bytes. */
static void create_topic_max_bytes(const char *topic, const char *max_bytes) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", wd_it_brokers(), errstr, sizeof errstr), RD_KAFKA_CONF_OK);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  cr_assert_not_null(rk, "%s", errstr);
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, errstr, sizeof errstr);
  cr_assert_not_null(nt, "%s", errstr);
  cr_assert_eq(rd_kafka_NewTopic_set_config(nt, "max.message.bytes", max_bytes), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  cr_assert_not_null(ev);
  size_t cnt = 0;
  const rd_kafka_topic_result_t **tr =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
  cr_assert_eq(cnt, 1);
  cr_assert_eq(rd_kafka_topic_result_error(tr[0]), RD_KAFKA_RESP_ERR_NO_ERROR, "%s",
               rd_kafka_topic_result_error_string(tr[0]));
  rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

/* The sink topic's max.message.bytes (3000) is below the producer's message.max.bytes (1 MB): the
 * broker refuses the 5 kB changelog message of one record. That record is dead-lettered
 * (E_OUTPUT_TOO_LARGE) and the pipeline goes on; before, the broker's refusal aborted the
 * transaction and every retry sent the message again: widen run never got past it. */
static void run_topic_max(const char *name, const char *pipeline_options) {
  env_t e;
  char *y = products_yaml("    merge-engine: deduplicate\n");
  y = wd_it_replace(y, "pipeline:\n", pipeline_options);
  env_init(&e, name, y);
  char topic[200];
  snprintf(topic, sizeof(topic), "%sproducts_wide", e.prefix);
  create_topic_max_bytes(topic, "3000");
  snprintf(topic, sizeof(topic), "%sproducts", e.prefix);
  char *big = malloc(6000), fill[5001];
  memset(fill, 'd', 5000);
  fill[5000] = 0;
  snprintf(big, 6000, "{\"before\":null,\"after\":{\"id\":2,\"description\":\"%s\"},\"op\":\"c\"}", fill);
  const char *keys[] = {"{\"id\":1}", "{\"id\":2}", "{\"id\":3}"};
  const char *vals[] = {"{\"before\":null,\"after\":{\"id\":1,\"name\":\"before\"},\"op\":\"c\"}", big,
                        "{\"before\":null,\"after\":{\"id\":3,\"name\":\"after\"},\"op\":\"c\"}"};
  produce_lines(topic, keys, vals, 3);
  free(big);
  const char *extra[] = {"--max-idle-ms", "2500", NULL};
  pid_t pid = spawn_widen(&e, extra);
  int status = 0, waited = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 && waited < 60000) {
    usleep(100 * 1000);
    waited += 100;
  }
  if (waited >= 60000) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    cr_assert_fail("widen run did not get past the record the broker refuses for its size (60 s)");
  }
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "widen run: status %d", status);
  snprintf(topic, sizeof(topic), "%sdlq", e.prefix);
  json_t *dl = read_dead_letters(topic);
  cr_assert_eq(json_array_size(dl), 1, "dead letters: %zu", json_array_size(dl));
  json_t *d = json_array_get(dl, 0);
  cr_expect_str_eq(json_string_value(json_object_get(d, "widen.error.id")), "E_OUTPUT_TOO_LARGE");
  cr_expect_str_eq(json_string_value(json_object_get(d, "widen.source.offset")) ? "ok" : "", "ok");
  json_decref(dl);
  snprintf(topic, sizeof(topic), "%sproducts_wide", e.prefix);
  json_t *out = wd_it_read_changelog(topic);
  cr_expect_eq(json_array_size(out), 2, "the changelog holds ids 1 and 3: %zu records", json_array_size(out));
  json_decref(out);
  json_t *rows = state_rows(&e); /* the state has the change of id 2 (E_OUTPUT_TOO_LARGE) */
  cr_expect_eq(json_array_size(rows), 3);
  json_decref(rows);
  env_done(&e);
}

Test(pipeline, output_over_the_topics_max_message_bytes_is_dead_lettered, .timeout = 150) {
  run_topic_max("topicmax", "pipeline:\n");
}

/* The same at-least-once: the broker's refusal failed the delivery and stopped widen run (and
 * every restart); the topic's max.message.bytes is now read before the first send to it. */
Test(pipeline, output_over_the_topics_max_message_bytes_at_least_once, .timeout = 150) {
  run_topic_max("topicmaxal", "pipeline:\n  processing-guarantee: at-least-once\n");
}

/* ---- chained pipelines and sources without before images --------------------------------- */

/* The lines of shared/<rel> that are JSON objects, into lines[] (at most max; the text is owned
 * by *text, which the caller frees). */
static size_t shared_lines(const char *rel, char **text, const char **lines, size_t max) {
  char path[600];
  const char *shared = getenv("WIDEN_SHARED");
  cr_assert_not_null(shared);
  snprintf(path, sizeof(path), "%s/%s", shared, rel);
  *text = wd_it_read_file(path);
  size_t n = 0;
  char *save = NULL;
  for (char *line = strtok_r(*text, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save))
    if (line[0] == '{') lines[n++] = line;
  return n;
}

/* A DECIMAL or number in a state row's JSON as thousandths. */
static long long milli(json_t *v) {
  double d = json_is_string(v) ? strtod(json_string_value(v), NULL) : json_number_value(v);
  return llround(d * 1000.0);
}

static const char *const WIDE_YAML =
    "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: products\n  schema:\n    - {name: id, type: INT NOT NULL}\n    - {name: name, type: STRING}\n"
    "    - {name: description, type: STRING}\n    - {name: weight, type: FLOAT}\n  primary-key: [id]\n  options:\n"
    "    changelog-producer: lookup\n"
    "sources:\n  - name: canal\n    topic: shop.canal\n    format: canal-json\n"
    "    columns: {id: id, name: name, description: description, weight: weight}\n"
    "sink:\n  topic: shop.products_wide\n  format: changelog-json\n  dead-letter-topic: shop.dlq\n"
    "state:\n  dir: STATE_DIR\npipeline:\n  batch-size: 3\n  batch-timeout-ms: 50\n";

/* Pipeline 2 reads pipeline 1's changelog (UPSTREAM. is pipeline 1's topic prefix). */
static const char *const AGG_YAML =
    "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: by_name\n  schema:\n    - {name: name, type: STRING NOT NULL}\n"
    "    - {name: total, type: \"DECIMAL(10,3)\"}\n  primary-key: [name]\n  options:\n"
    "    merge-engine: aggregation\n    fields.total.aggregate-function: sum\n"
    "sources:\n  - name: wide\n    topic: UPSTREAM.products_wide\n    format: changelog-json\n"
    "    columns: {name: name, total: weight}\n"
    "sink:\n  topic: shop.by_name\n  format: debezium-json\n  dead-letter-topic: shop.dlq\n"
    "state:\n  dir: STATE_DIR\npipeline:\n  batch-size: 4\n  batch-timeout-ms: 50\n";

/* Canal (real file: inserts, updates with partial old images, multi-row messages, a DDL message,
 * deletes) -> wide table -> its changelog-json -> an aggregation table keyed by name (sum of
 * weight). The retractions of the wide table's updates and deletes flow through: the sums equal
 * those of the wide table's final rows, and names whose products were all deleted sum to 0. */
Test(pipeline, chained_wide_then_aggregation, .timeout = 200) {
  env_t e1, e2;
  env_init(&e1, "chain1", strdup(WIDE_YAML));
  char upstream[120];
  snprintf(upstream, sizeof(upstream), "%.*s", (int)strlen(e1.prefix) - 1, e1.prefix);
  env_init(&e2, "chain2", wd_it_replace(strdup(AGG_YAML), "UPSTREAM", upstream));
  char *text;
  const char *lines[32], *keys[32];
  size_t n = shared_lines("data/flink-json/canal-data.txt", &text, lines, 32);
  cr_assert_eq(n, 11);
  for (size_t i = 0; i < n; i++) keys[i] = "inventory.products2"; /* Canal partitions by table: one order */
  char topic[200];
  snprintf(topic, sizeof(topic), "%scanal", e1.prefix);
  produce_lines(topic, keys, lines, n);
  free(text);
  run_to_idle(&e1);
  run_to_idle(&e2);

  /* the wide table: 101 and 104-110 remain (102, 103, 111 deleted) */
  json_t *wide = state_rows(&e1);
  cr_assert_eq(json_array_size(wide), 8, "%zu wide rows", json_array_size(wide));
  json_t *want = json_object();
  size_t i;
  json_t *r;
  json_array_foreach(wide, i, r) {
    const char *name = json_string_value(json_object_get(r, "name"));
    json_t *cur = json_object_get(want, name);
    long long sum = (cur ? json_integer_value(cur) : 0) + milli(json_object_get(r, "weight"));
    json_object_set_new(want, name, json_integer(sum));
  }
  json_object_set_new(want, "car battery", json_integer(0)); /* 102: 8.1 -> 5.17, deleted */
  json_object_set_new(want, "12-pack drill bits", json_integer(0)); /* 103: deleted */
  json_t *agg = state_rows(&e2);
  cr_expect_eq(json_array_size(agg), json_object_size(want), "%zu aggregated rows", json_array_size(agg));
  json_array_foreach(agg, i, r) {
    const char *name = json_string_value(json_object_get(r, "name"));
    json_t *w = json_object_get(want, name);
    cr_expect_not_null(w, "unexpected name %s", name);
    if (w) cr_expect_eq(milli(json_object_get(r, "total")), json_integer_value(w), "%s", name);
  }
  /* two values worked out by hand from the file: hammer 104+105+106, scooter 101 after 3.14 -> 5.17
   * (111's 5.18 -> 5.17 retracted by its delete) */
  cr_expect_eq(json_integer_value(json_object_get(want, "hammer")), 2625);
  cr_expect_eq(json_integer_value(json_object_get(want, "scooter")), 5170);
  json_decref(want);
  json_decref(wide);
  json_decref(agg);
  env_done(&e1);
  env_done(&e2);
}

/* Canal (real file) into partial-update without sequence groups, ignore-delete
 * or partial-update.remove-record-on-delete. `widen config check` says OK with a warning naming
 * the consequence and the options; `run` warns the same. Each update's +U applies without its -U
 * (left out, counted as ignored -U, as Paimon's Flink sink does for a primary-key table); only the
 * two DELETE messages are dead-lettered (E_PU_DELETE_NOT_ACCEPTED), so 102, 103 and 111 stay. */
Test(pipeline, canal_into_partial_update_without_delete_policy, .timeout = 150) {
  env_t e;
  env_init(&e, "canalpu",
           wd_it_replace(strdup(WIDE_YAML), "    changelog-producer: lookup\n",
                         "    merge-engine: partial-update\n    changelog-producer: lookup\n"));
  char cmd[800];
  snprintf(cmd, sizeof(cmd), "'%s' config check '%s' 2>&1", wd_it_widen_bin(), e.cfg);
  FILE *pc = popen(cmd, "r");
  cr_assert_not_null(pc);
  char check[8192];
  size_t cn = fread(check, 1, sizeof(check) - 1, pc);
  check[cn] = 0;
  cr_assert_eq(pclose(pc), 0, "config check: %s", check);
  static const char *const says[] = {"warning   table 'products' is partial-update without sequence groups",
                                     "source 'canal' sends them",
                                     "E_PU_DELETE_NOT_ACCEPTED",
                                     "the -U half of each update is left out",
                                     "ignore-delete: true",
                                     "partial-update.remove-record-on-delete: true",
                                     "sequence-group"};
  for (size_t k = 0; k < sizeof(says) / sizeof(*says); k++)
    cr_expect(strstr(check, says[k]) != NULL, "config check does not say '%s':\n%s", says[k], check);
  char *text;
  const char *lines[32], *keys[32];
  size_t n = shared_lines("data/flink-json/canal-data.txt", &text, lines, 32);
  cr_assert_eq(n, 11);
  for (size_t i = 0; i < n; i++) keys[i] = "inventory.products2";
  char topic[200];
  snprintf(topic, sizeof(topic), "%scanal", e.prefix);
  produce_lines(topic, keys, lines, n);
  free(text);
  run_to_idle(&e);
  snprintf(topic, sizeof(topic), "%sdlq", e.prefix);
  json_t *dl = read_dead_letters(topic);
  size_t i;
  json_t *d;
  cr_expect_eq(json_array_size(dl), 2, "dead letters: %zu (want the 2 DELETE messages)", json_array_size(dl));
  json_array_foreach(dl, i, d) {
    cr_expect_str_eq(json_string_value(json_object_get(d, "widen.error.id")), "E_PU_DELETE_NOT_ACCEPTED");
    cr_expect(strstr(json_string_value(json_object_get(d, "value")), "\"type\":\"DELETE\"") != NULL);
  }
  json_decref(dl);
  /* every +U applied: the updated weights; the deleted rows stay (their deletes were rejected) */
  json_t *rows = state_rows(&e);
  cr_assert_eq(json_array_size(rows), 11, "%zu rows", json_array_size(rows));
  static const long long want[][2] = {{101, 5170}, {102, 5170}, {103, 800},   {104, 750}, {105, 875}, {106, 1000},
                                      {107, 5100}, {108, 100},  {109, 22200}, {110, 500}, {111, 5170}};
  json_t *r;
  json_array_foreach(rows, i, r) {
    cr_expect_eq(json_integer_value(json_object_get(r, "id")), want[i][0]);
    cr_expect_eq(milli(json_object_get(r, "weight")), want[i][1], "weight of %lld", want[i][0]);
  }
  json_decref(rows);
  env_done(&e);
}

static const char *const REPLICA_YAML =
    "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: weights\n  schema:\n    - {name: id, type: INT NOT NULL}\n"
    "    - {name: total, type: \"DECIMAL(10,3)\"}\n  primary-key: [id]\n  options:\n"
    "    merge-engine: aggregation\n    fields.total.aggregate-function: sum\n"
    "sources:\n  - name: pg\n    topic: shop.pg\n    format: debezium-json\n"
    "    columns: {id: $key.id, total: weight}\n"
    "sink:\n  topic: shop.weights\n  format: debezium-json\n  dead-letter-topic: shop.dlq\n"
    "state:\n  dir: STATE_DIR\npipeline:\n  batch-size: 4\n  batch-timeout-ms: 50\n";

/* Postgres REPLICA IDENTITY DEFAULT (real file): updates without before images and a delete
 * with neither image (its key in the Kafka key). The before images come from the stored row, so
 * the retraction-based sum ends at each product's last weight (not old + new) and the delete
 * retracts 111 to 0; the changelog's -U rows are full rows. */
Test(pipeline, sources_without_before_images, .timeout = 150) {
  env_t e;
  env_init(&e, "replica", strdup(REPLICA_YAML));
  char *text;
  const char *lines[32], *keys[32];
  char keybuf[32][32];
  size_t n = shared_lines("data/flink-json/debezium-postgres-data-replica-identity.txt", &text, lines, 32);
  cr_assert_eq(n, 16);
  for (size_t i = 0; i < n; i++) {
    json_t *ev = json_loads(lines[i], 0, NULL);
    json_t *img = json_object_get(ev, "after");
    long long id = json_is_object(img) ? (long long)json_integer_value(json_object_get(img, "id")) : 111;
    snprintf(keybuf[i], sizeof(keybuf[i]), "{\"id\":%lld}", id);
    keys[i] = keybuf[i];
    json_decref(ev);
  }
  char topic[200];
  snprintf(topic, sizeof(topic), "%spg", e.prefix);
  produce_lines(topic, keys, lines, n);
  free(text);
  run_to_idle(&e);
  static const long long want[][2] = {{101, 3140}, {102, 8100}, {103, 800},   {104, 750}, {105, 875}, {106, 1000},
                                      {107, 5100}, {108, 100},  {109, 22200}, {110, 500}, {111, 0}};
  json_t *rows = state_rows(&e);
  cr_assert_eq(json_array_size(rows), 11, "%zu rows", json_array_size(rows));
  for (size_t i = 0; i < 11; i++) {
    json_t *r = json_array_get(rows, i);
    cr_expect_eq(json_integer_value(json_object_get(r, "id")), want[i][0]);
    cr_expect_eq(milli(json_object_get(r, "total")), want[i][1], "id %lld", want[i][0]);
  }
  json_decref(rows);
  /* every update in the changelog has a full before row */
  char out[200];
  snprintf(out, sizeof(out), "%sweights", e.prefix);
  json_t *cl = wd_it_read_changelog(out);
  size_t i, nu = 0;
  json_t *l;
  json_array_foreach(cl, i, l) {
    if (strcmp(json_string_value(json_object_get(l, "op")), "-U") != 0) continue;
    nu++;
    cr_expect(!json_is_null(json_object_get(json_object_get(l, "row"), "total")), "a -U without its values");
  }
  cr_expect_eq(nu, 5, "4 updates and the delete (an aggregation row is retracted, not removed)");
  json_decref(cl);
  env_done(&e);
}

static const char *const NOSEQ_YAML =
    "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: GROUP\n  properties:\n    session.timeout.ms: 6000\n"
    "table:\n  name: items\n  schema:\n    - {name: id, type: INT NOT NULL}\n    - {name: v, type: BIGINT}\n"
    "    - {name: note, type: STRING}\n  primary-key: [id]\n  options:\n    sequence.field: v\n"
    "sources:\n  - name: pg\n    topic: shop.pg\n    format: debezium-json\n"
    "    columns: {id: $key.id, v: v, note: note}\nOPTIONS"
    "sink:\n  topic: shop.items\n  format: debezium-json\n  dead-letter-topic: shop.dlq\n"
    "state:\n  dir: STATE_DIR\npipeline:\n  batch-size: 1\n  batch-timeout-ms: 50\n";

/* A delete that carries only the key (Postgres REPLICA IDENTITY DEFAULT) has no sequence field:
 * delete-without-sequence decides — apply (default: the sequence field from the stored row, the
 * delete applies), dead-letter (E_DELETE_NO_SEQUENCE), ignore (the row stays). */
static void run_noseq(const char *name, const char *option, size_t want_rows, size_t want_dlq) {
  env_t e;
  env_init(&e, name, wd_it_replace(strdup(NOSEQ_YAML), "OPTIONS", option));
  const char *keys[] = {"{\"id\":1}", "{\"id\":2}", "{\"id\":1}"};
  const char *vals[] = {"{\"op\":\"c\",\"before\":null,\"after\":{\"id\":1,\"v\":3,\"note\":\"a\"}}",
                        "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":2,\"v\":1,\"note\":\"b\"}}",
                        "{\"op\":\"d\",\"before\":null,\"after\":null}"};
  char topic[200];
  snprintf(topic, sizeof(topic), "%spg", e.prefix);
  produce_lines(topic, keys, vals, 3);
  run_to_idle(&e);
  json_t *rows = state_rows(&e);
  cr_expect_eq(json_array_size(rows), want_rows, "%s: %zu rows", name, json_array_size(rows));
  json_decref(rows);
  snprintf(topic, sizeof(topic), "%sdlq", e.prefix);
  json_t *dl = read_dead_letters(topic);
  cr_expect_eq(json_array_size(dl), want_dlq, "%s: %zu dead letters", name, json_array_size(dl));
  if (want_dlq)
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(dl, 0), "widen.error.id")),
                     "E_DELETE_NO_SEQUENCE");
  json_decref(dl);
  env_done(&e);
}

Test(pipeline, delete_without_sequence_apply, .timeout = 120) { run_noseq("noseq-apply", "", 1, 0); }
Test(pipeline, delete_without_sequence_dead_letter, .timeout = 120) {
  run_noseq("noseq-dlq", "    options: {delete-without-sequence: dead-letter}\n", 2, 1);
}
Test(pipeline, delete_without_sequence_ignore, .timeout = 120) {
  run_noseq("noseq-ignore", "    options: {delete-without-sequence: ignore}\n", 2, 0);
}
