/*
 * tests/unit/test_config.c — app/config/config.c: loading the pipeline YAML into structs, defaults, the
 * WIDEN_BROKERS override, every error class with its exact file:line, table and source errors
 * surfacing through wd_config_build_table / wd_config_build_source, durations, and the generated
 * configs/OPTIONS.md being in sync with the option table.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "ingest/format.h"
#include "ingest/source.h"
#include "app/config/join_config.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* The repository root, from this file's path (…/tests/unit/test_config.c). */
static const char *repo_root(void) {
  static char root[4096];
  if (!root[0]) {
    snprintf(root, sizeof(root), "%s", __FILE__);
    char *cut = strstr(root, "tests/unit/test_config.c");
    cr_assert_not_null(cut, "__FILE__ is %s", __FILE__);
    if (cut == root) snprintf(root, sizeof(root), ".");
    else cut[-1] = 0; /* drop the '/' before tests/ */
  }
  return root;
}

static char tmp_dir[64];
static char tmp_path[128];

static void make_tmp(void) {
  snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/wd_test_config_XXXXXX");
  cr_assert_not_null(mkdtemp(tmp_dir));
  snprintf(tmp_path, sizeof(tmp_path), "%s/pipeline.yaml", tmp_dir);
}

static void remove_tmp(void) {
  unlink(tmp_path);
  rmdir(tmp_dir);
}

TestSuite(config, .init = make_tmp, .fini = remove_tmp);

/* Writes text to the temporary YAML file and returns its path. */
static const char *write_yaml(const char *text) {
  FILE *f = fopen(tmp_path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return tmp_path;
}

/* A small valid pipeline; tests replace single lines of it (numbers in the comments). */
static const char *const MINIMAL[] = {
    "kafka:", /* 1 */
    "  bootstrap.servers: 127.0.0.1:9092", /* 2 */
    "  group.id: g", /* 3 */
    "table:", /* 4 */
    "  name: t", /* 5 */
    "  schema:", /* 6 */
    "    - {name: id, type: BIGINT NOT NULL}", /* 7 */
    "    - {name: a, type: STRING}", /* 8 */
    "    - {name: v, type: BIGINT}", /* 9 */
    "  primary-key: [id]", /* 10 */
    "  options:", /* 11 */
    "    merge-engine: partial-update", /* 12 */
    "    fields.v.sequence-group: a", /* 13 */
    "sources:", /* 14 */
    "  - name: s", /* 15 */
    "    topic: in", /* 16 */
    "    columns: {id: id, a: a, v: $.source.ts_ms}", /* 17 */
    "sink:", /* 18 */
    "  topic: out", /* 19 */
    "state:", /* 20 */
    "  dir: /tmp/wd-state", /* 21 */
    NULL,
};

/* MINIMAL with lines from..to (1-based) replaced by text (which may hold several lines, or be NULL
 * to drop them). Returns a static buffer. */
static const char *minimal_range(int from, int to, const char *text) {
  static char buf[8192];
  buf[0] = 0;
  for (int i = 0; MINIMAL[i]; i++) {
    int line = i + 1;
    if (line >= from && line <= to) {
      if (line == from && text) {
        strcat(buf, text);
        strcat(buf, "\n");
      }
      continue;
    }
    strcat(buf, MINIMAL[i]);
    strcat(buf, "\n");
  }
  return buf;
}

/* MINIMAL with line `line` replaced by text (NULL: dropped); line 0 changes nothing. */
static const char *minimal_with(int line, const char *text) { return minimal_range(line, line, text); }

/* Loads yaml, expecting success; returns the config. */
static wd_config_t *load_ok(const char *yaml) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(write_yaml(yaml), &cfg);
  cr_assert_null(err, "load: %s", err ? err->message : "");
  cr_assert_not_null(cfg);
  return cfg;
}

/* Asserts that err has class CONFIG, id `id`, a message "<id>: <tmp_path>:<line>:..." and contains
 * `part`; destroys err. */
static void assert_error_at(wd_error_t *err, const char *id, int line, const char *part) {
  cr_assert_not_null(err, "expected %s at line %d", id, line);
  char prefix[256];
  snprintf(prefix, sizeof(prefix), "%s: %s:%d:", id, tmp_path, line);
  cr_assert_eq(err->cls, WD_ERR_CONFIG, "%s", err->message);
  cr_assert_str_eq(err->id, id, "%s", err->message);
  cr_assert(strncmp(err->message, prefix, strlen(prefix)) == 0, "message '%s' should start with '%s'", err->message,
            prefix);
  if (part) cr_assert(strstr(err->message, part) != NULL, "message '%s' should contain '%s'", err->message, part);
  wd_error_destroy(err);
}

/* Loads yaml expecting a C_CONFIG error at line with part in its message. */
static void load_fails(const char *yaml, int line, const char *part) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(write_yaml(yaml), &cfg);
  cr_assert_null(cfg);
  assert_error_at(err, "C_CONFIG", line, part);
}

/* Loads yaml (which must load) and builds its table, expecting error id at line. */
static void build_fails(const char *yaml, const char *id, int line, const char *part) {
  wd_config_t *cfg = load_ok(yaml);
  wd_table_t *t = NULL;
  wd_error_t *err = wd_config_build_table(cfg, &t);
  cr_assert_null(t);
  assert_error_at(err, id, line, part);
  wd_config_destroy(cfg);
}

/* ---- the shipped configs -------------------------------------------------------------------- */

Test(config, every_shipped_config_loads_and_builds) {
  char dir[4200];
  snprintf(dir, sizeof(dir), "%s/configs", repo_root());
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "opendir %s", dir);
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0) continue;
    char path[4500];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    wd_config_t *cfg = NULL;
    wd_error_t *err = wd_config_load(path, &cfg);
    cr_assert_null(err, "%s: %s", path, err ? err->message : "");
    wd_table_t *t = NULL;
    err = wd_config_build_table(cfg, &t);
    cr_assert_null(err, "%s: %s", path, err ? err->message : "");
    /* every source against its schema (a lookup's: its key, named like `on`, and _seq first) */
    wd_source_t *srcs[64] = {0};
    int ids[64];
    wd_join_t *join = NULL;
    cr_assert_lt(cfg->sources.n, 64);
    err = wd_config_build_join(cfg, t, srcs, ids, &join);
    cr_assert_null(err, "%s: %s", path, err ? err->message : "");
    for (size_t i = 0; i < cfg->sources.n; i++) {
      const wd_config_source_t *cs = &cfg->sources.v[i];
      cr_assert_str_eq(srcs[i]->name, cs->name);
      cr_assert_eq(srcs[i]->ncols, cs->columns.n + (cs->lookup ? cs->on.n + (cs->sequence ? 1 : 0) : 0));
      cr_assert_eq(wd_join_is_lookup(join, ids[i]), cs->lookup != 0);
      wd_source_destroy(srcs[i]);
    }
    wd_join_destroy(join);
    wd_table_destroy(t);
    wd_config_destroy(cfg);
    count++;
  }
  closedir(d);
  cr_assert_geq(count, 4, "example.yaml and at least three pipelines");
}

Test(config, example_values_in_file_order) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/configs/example.yaml", repo_root());
  unsetenv("WIDEN_BROKERS");
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");

  cr_assert_str_eq(cfg->path, path);
  cr_assert_str_eq(cfg->kafka.bootstrap_servers, "127.0.0.1:9092");
  cr_assert_not(cfg->brokers_from_env);
  cr_assert_str_eq(cfg->kafka.group_id, "widen-orders");
  cr_assert_eq(cfg->kafka.properties.n, 3);
  cr_assert_str_eq(cfg->kafka.properties.v[0].key, "client.id");
  cr_assert_str_eq(cfg->kafka.properties.v[0].value, "widen-1");
  cr_assert_str_eq(cfg->kafka.properties.v[1].key, "security.protocol");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->kafka.properties, "session.timeout.ms"), "45000");
  cr_assert_null(wd_config_pairs_get(&cfg->kafka.properties, "nope"));

  cr_assert_str_eq(cfg->table.name, "orders_wide");
  static const char *const NAMES[] = {"order_id", "customer",       "amount",     "order_ver",
                                      "paid_at",  "payment_method", "payment_ver"};
  static const char *const TYPES[] = {"BIGINT NOT NULL", "STRING", "DECIMAL(12,2)", "BIGINT",
                                      "TIMESTAMP(3)",    "STRING", "BIGINT"};
  size_t n = 0, nt = 0;
  const char *const *names = wd_config_column_names(cfg, &n);
  const char *const *types = wd_config_column_types(cfg, &nt);
  cr_assert_eq(n, 7);
  cr_assert_eq(nt, 7);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(names[i], NAMES[i]);
    cr_assert_str_eq(types[i], TYPES[i]);
    cr_assert(i == 0 || cfg->table.schema.lines[i] == cfg->table.schema.lines[i - 1] + 1, "one column a line");
  }
  const char *const *pk = wd_config_primary_key(cfg, &n);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(pk[0], "order_id");

  static const char *const OPT_KEYS[] = {
      "merge-engine", "fields.order_ver.sequence-group", "fields.payment_ver.sequence-group",
      "partial-update.remove-record-on-sequence-group", "changelog-producer.row-deduplicate"};
  static const char *const OPT_VALS[] = {"partial-update", "customer,amount", "paid_at,payment_method", "order_ver",
                                         "true"};
  const wd_option_t *opts = wd_config_table_options(cfg, &n);
  cr_assert_eq(n, 5);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(opts[i].key, OPT_KEYS[i]);
    cr_assert_str_eq(opts[i].value, OPT_VALS[i]);
    cr_assert_gt(cfg->table.options.v[i].line, cfg->table.options.line);
  }

  cr_assert_eq(cfg->sources.n, 2);
  const wd_config_source_t *s0 = &cfg->sources.v[0], *s1 = &cfg->sources.v[1];
  cr_assert_str_eq(s0->name, "orders");
  cr_assert_eq(s0->topics.n, 1);
  cr_assert_str_eq(s0->topics.v[0], "shop.orders");
  cr_assert_eq(s0->format, WD_FMT_DEBEZIUM_JSON);
  static const char *const COLS[][2] = {
      {"order_id", "id"}, {"customer", "customer_name"}, {"amount", "amount"}, {"order_ver", "$.source.ts_ms"}};
  cr_assert_eq(s0->columns.n, 4);
  for (size_t i = 0; i < 4; i++) {
    cr_assert_str_eq(s0->columns.v[i].key, COLS[i][0]);
    cr_assert_str_eq(s0->columns.v[i].value, COLS[i][1]);
  }
  cr_assert_eq(s0->options.n, 0);
  cr_assert_str_eq(s1->name, "payments");
  cr_assert_eq(s1->topics.n, 1);
  cr_assert_str_eq(s1->topics.v[0], "shop.payments");
  cr_assert_eq(s1->columns.n, 4);
  cr_assert_str_eq(s1->columns.v[2].key, "payment_method");
  cr_assert_str_eq(s1->columns.v[2].value, "method");
  cr_assert_str_eq(wd_config_pairs_get(&s1->options, "timestamp-unit"), "millis");

  cr_assert_str_eq(cfg->sink.topic, "orders_wide.changelog");
  cr_assert_eq(cfg->sink.format, WD_CONFIG_SINK_DEBEZIUM_JSON);
  cr_assert_eq(cfg->sink.key_format, WD_CONFIG_KEY_JSON);
  cr_assert_str_eq(cfg->sink.dead_letter_topic, "orders_wide.dlq");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->sink.properties, "compression.type"), "zstd");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->sink.properties, "linger.ms"), "5");

  cr_assert_str_eq(cfg->state.dir, "./state/orders_wide");
  cr_assert_eq(cfg->state.tombstone_retention_ms, 7LL * 24 * 3600 * 1000);
  cr_assert_eq(cfg->state.cache_entries, 100000);
  cr_assert_eq(cfg->pipeline.batch_size, 1000);
  cr_assert_eq(cfg->pipeline.batch_timeout_ms, 100);
  cr_assert_eq(cfg->pipeline.status_interval_s, 5);

  wd_table_t *t = NULL;
  err = wd_config_build_table(cfg, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(wd_table_engine(t), WD_ENGINE_PARTIAL_UPDATE);
  cr_assert(wd_table_has_ordering(t));
  cr_assert_eq(wd_table_schema(t)->ncols, 7);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
}

Test(config, dedup_products_matches_the_shared_data_table) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/configs/dedup-products.yaml", repo_root());
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_eq(cfg->sources.n, 1);
  cr_assert_str_eq(cfg->sources.v[0].columns.v[0].key, "id");
  cr_assert_str_eq(cfg->sources.v[0].columns.v[0].value, "id"); /* `id:` maps the field of the same name */
  cr_assert_str_eq(cfg->sources.v[0].columns.v[4].value, "$.ts_ms");
  cr_assert_eq(cfg->sink.format, WD_CONFIG_SINK_CHANGELOG_JSON);
  cr_assert_str_eq(cfg->sink.dead_letter_topic, "products.changelog.dlq");
  wd_config_destroy(cfg);
}

/* ---- defaults, shapes, environment ------------------------------------------------------------ */

Test(config, defaults_of_optional_keys) {
  unsetenv("WIDEN_BROKERS");
  wd_config_t *cfg = load_ok(minimal_with(0, NULL));
  cr_assert_eq(cfg->line, 1);
  cr_assert_eq(cfg->kafka.line, 1);
  cr_assert_eq(cfg->table.line, 4);
  cr_assert_eq(cfg->table.options.line, 11);
  cr_assert_eq(cfg->table.options.v[1].line, 13);
  cr_assert_eq(cfg->sources.v[0].line, 15);
  cr_assert_eq(cfg->sources.v[0].format, WD_FMT_DEBEZIUM_JSON);
  cr_assert_eq(cfg->kafka.properties.n, 0);
  cr_assert_eq(cfg->sink.format, WD_CONFIG_SINK_DEBEZIUM_JSON);
  cr_assert_eq(cfg->sink.key_format, WD_CONFIG_KEY_JSON);
  cr_assert_str_eq(cfg->sink.dead_letter_topic, "out.dlq");
  cr_assert_eq(cfg->state.tombstone_retention_ms, -1);
  cr_assert_eq(cfg->state.cache_entries, 100000);
  cr_assert_eq(cfg->pipeline.line, 0);
  cr_assert_eq(cfg->pipeline.batch_size, 1000);
  cr_assert_eq(cfg->pipeline.batch_timeout_ms, 100);
  cr_assert_eq(cfg->pipeline.status_interval_s, 5);
  wd_config_destroy(cfg);
}

Test(config, alternative_shapes) {
  /* one-name primary key, `topics` list, columns as a list of names, option values as numbers,
   * booleans and lists, empty optional values keep their defaults */
  const char *yaml =
      "kafka: {bootstrap.servers: b:1, group.id: g, properties: {fetch.min.bytes: 1, check.crcs: true}}\n"
      "table:\n"
      "  name: t\n"
      "  schema: [{name: id, type: INT}, {name: a, type: \"DECIMAL(6,2)\"}]\n"
      "  primary-key: id\n"
      "  options: {sequence.field: [a], ignore-delete: false}\n"
      "sources:\n"
      "  - {name: s, topics: [x, y], columns: [id, a], options: {time-unit: micros}}\n"
      "sink: {topic: out, format: changelog-json, key-format: string, dead-letter-topic: dead}\n"
      "state: {dir: d, tombstone-retention: 1500, cache-entries: 0}\n"
      "pipeline:\n"
      "  batch-size:\n";
  wd_config_t *cfg = load_ok(yaml);
  cr_assert_str_eq(wd_config_pairs_get(&cfg->kafka.properties, "fetch.min.bytes"), "1");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->kafka.properties, "check.crcs"), "true");
  cr_assert_eq(cfg->table.primary_key.n, 1);
  cr_assert_str_eq(cfg->table.primary_key.v[0], "id");
  cr_assert_str_eq(cfg->table.schema.types[1], "DECIMAL(6,2)");
  size_t n = 0;
  const wd_option_t *opts = wd_config_table_options(cfg, &n);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(opts[0].value, "a");
  cr_assert_str_eq(opts[1].value, "false");
  cr_assert_eq(cfg->sources.v[0].topics.n, 2);
  cr_assert_str_eq(cfg->sources.v[0].topics.v[1], "y");
  cr_assert_str_eq(cfg->sources.v[0].columns.v[1].key, "a");
  cr_assert_str_eq(cfg->sources.v[0].columns.v[1].value, "a");
  cr_assert_eq(cfg->sink.format, WD_CONFIG_SINK_CHANGELOG_JSON);
  cr_assert_eq(cfg->sink.key_format, WD_CONFIG_KEY_STRING);
  cr_assert_str_eq(cfg->sink.dead_letter_topic, "dead");
  cr_assert_eq(cfg->state.tombstone_retention_ms, 1500);
  cr_assert_eq(cfg->state.cache_entries, 0);
  cr_assert_eq(cfg->pipeline.batch_size, 1000);
  wd_table_t *t = NULL;
  wd_error_t *err = wd_config_build_table(cfg, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_table_destroy(t);
  wd_config_destroy(cfg);
}

Test(config, widen_brokers_overrides_bootstrap_servers) {
  setenv("WIDEN_BROKERS", "kafka-1:19092,kafka-2:19092", 1);
  wd_config_t *cfg = load_ok(minimal_with(0, NULL));
  cr_assert_str_eq(cfg->kafka.bootstrap_servers, "kafka-1:19092,kafka-2:19092");
  cr_assert(cfg->brokers_from_env);
  wd_config_destroy(cfg);
  /* with the variable set the key may be left out */
  cfg = load_ok(minimal_with(2, NULL));
  cr_assert_str_eq(cfg->kafka.bootstrap_servers, "kafka-1:19092,kafka-2:19092");
  wd_config_destroy(cfg);
  /* an empty variable does not count */
  setenv("WIDEN_BROKERS", "", 1);
  load_fails(minimal_with(2, NULL), 1, "missing required key 'bootstrap.servers' in 'kafka'");
  unsetenv("WIDEN_BROKERS");
}

/* ---- errors with file:line ------------------------------------------------------------------- */

Test(config, unknown_key_suggests_the_closest) {
  unsetenv("WIDEN_BROKERS");
  load_fails(minimal_with(2, "  bootstrap.server: 127.0.0.1:9092"), 2,
             "unknown key 'bootstrap.server' in 'kafka'; did you mean 'bootstrap.servers'?");
  load_fails(minimal_with(18, "snk:"), 18, "unknown key 'snk' at the top level; did you mean 'sink'?");
  load_fails(minimal_with(16, "    topic: in\n    formt: debezium-json"), 17,
             "unknown key 'formt' in 'sources[0]'; did you mean 'format'?");
  /* nothing close: the known keys, and where librdkafka properties go */
  load_fails(minimal_with(3, "  group.id: g\n  linger.ms: 5"), 4,
             "use one of: bootstrap.servers, group.id, properties, static-membership (librdkafka properties go under "
             "'kafka.properties')");
  load_fails(minimal_with(16, "    topic: in\n    options: {timestamp-units: millis}"), 17,
             "unknown key 'timestamp-units' in 'sources[0].options'; did you mean 'timestamp-unit'?");
  load_fails(minimal_with(8, "    - {name: a, typ: STRING}"), 8,
             "unknown key 'typ' in 'table.schema[1]'; did you mean "
             "'type'?");
}

Test(config, missing_required_key_points_at_the_enclosing_mapping) {
  unsetenv("WIDEN_BROKERS");
  load_fails(minimal_with(3, NULL), 1, "missing required key 'group.id' in 'kafka'; add 'group.id: ...'");
  load_fails(minimal_with(21, "  cache-entries: 5"), 20, "missing required key 'dir' in 'state'");
  load_fails(minimal_with(15, "  - format: debezium-json"), 15, "missing required key 'name' in 'sources[0]'");
  load_fails(minimal_with(16, NULL), 15, "missing required key 'topics' in 'sources[0]'");
  load_fails(minimal_with(8, "    - {name: a}"), 8, "missing required key 'type' in 'table.schema[1]'");
  /* a missing section: the line of the top-level mapping */
  const char *no_state = "kafka: {bootstrap.servers: b, group.id: g}\n"
                         "table: {name: t, schema: [{name: id, type: INT}], primary-key: [id]}\n"
                         "sources: [{name: s, topic: in, columns: [id]}]\n"
                         "sink: {topic: out}\n";
  load_fails(no_state, 1, "missing required section 'state'; add a 'state:' section");
  /* a required key with an empty value: the key's line */
  load_fails(minimal_with(5, "  name:"), 5, "'table.name' has no value");
  /* required lists that are empty */
  load_fails(minimal_with(10, "  primary-key: []"), 10, "'table.primary-key' is an empty list");
  load_fails(minimal_with(17, "    columns: {}"), 17, "'sources[0].columns' is empty");
}

Test(config, wrong_type) {
  unsetenv("WIDEN_BROKERS");
  load_fails(minimal_with(10, "  primary-key: {id: 1}"), 10, "'table.primary-key' must be a list, not a mapping");
  load_fails(minimal_with(1, "kafka: 127.0.0.1:9092\nx:"), 1, "'kafka' must be a mapping, not a single value");
  load_fails(minimal_range(6, 9, "  schema: {name: id}"), 6, "'table.schema' must be a list, not a mapping");
  load_fails(minimal_range(6, 9, "  schema: BIGINT"), 6, "'table.schema' must be a list, not a single value");
  load_fails(minimal_with(7, "    - id"), 7, "'table.schema[0]' must be a mapping, not a single value");
  load_fails(minimal_range(11, 13, "  options: [a, b]"), 11, "'table.options' must be a mapping, not a list");
  load_fails(minimal_with(12, "    merge-engine: {a: b}"), 12,
             "'table.options.merge-engine' must be a single value, "
             "not a mapping");
  load_fails(minimal_with(19, "  topic: [out]"), 19, "'sink.topic' must be a single value, not a list");
  load_fails(minimal_range(14, 17, "sources: {name: s}"), 14, "'sources' must be a list, not a mapping");
  load_fails(minimal_with(21, "  dir: d\n  cache-entries: many"), 22,
             "'state.cache-entries' must be an integer, not 'many'; write a whole number from 0 to 1000000000");
  load_fails(minimal_with(21, "  dir: d\n  cache-entries: [1]"), 22,
             "'state.cache-entries' must be an integer, not "
             "a list");
  load_fails(minimal_with(21, "  dir: d\npipeline:\n  batch-size: 0"), 23,
             "'pipeline.batch-size' is 0, outside its range; use a value from 1 to 1000000");
  load_fails(minimal_with(19, "  topic: out\n  format: protobuf"), 20,
             "'sink.format' is 'protobuf', which is not one of its values; use one of: debezium-json, changelog-json, "
             "avro");
  load_fails(minimal_with(16, "    topic: in\n    format: debezium-jsn"), 17, "did you mean 'debezium-json'?");
  load_fails(minimal_with(16, "    topic: in\n    options: {time-unit: hours}"), 17,
             "'sources[0].options.time-unit' is 'hours', which is not one of its values; use one of: auto, millis, "
             "micros, nanos");
}

Test(config, bad_duration) {
  unsetenv("WIDEN_BROKERS");
  load_fails(minimal_with(21, "  dir: d\n  tombstone-retention: 7w"), 22,
             "'state.tombstone-retention' is not a duration: '7w'; write a number with a unit ms, s, m, h or d");
  load_fails(minimal_with(21, "  dir: d\n  tombstone-retention: -5s"), 22, "is not a duration: '-5s'");
  load_fails(minimal_with(21, "  dir: d\n  tombstone-retention: 99999999999999999d"), 22, "is not a duration");
  load_fails(minimal_with(21, "  dir: d\n  tombstone-retention: {a: 1}"), 22, "must be a duration, not a mapping");
}

Test(config, yaml_syntax_error_with_line_and_column) {
  unsetenv("WIDEN_BROKERS");
  /* an unclosed flow sequence: libyaml stops at the next line's ':' */
  load_fails(minimal_with(10, "  primary-key: [id"), 11, "YAML syntax error");
  /* a mis-indented key */
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(write_yaml(minimal_with(3, "   group.id: g")), &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  char want[256];
  snprintf(want, sizeof(want), "C_CONFIG: %s:3:", tmp_path);
  cr_assert(strncmp(err->message, want, strlen(want)) == 0, "%s", err->message);
  cr_assert(strstr(err->message, "YAML syntax error: ") != NULL, "%s", err->message);
  wd_error_destroy(err);
  /* a tab, with line and column */
  load_fails(minimal_with(3, "\tgroup.id: g"), 3, ":3:1: YAML syntax error: found ");
  load_fails(minimal_with(3, "\tgroup.id: g"), 3, "never tabs");
  /* an unterminated quote reaches the end of the file */
  load_fails(minimal_with(21, "  dir: \"/tmp/x"), 22, "unexpected end of stream");
}

Test(config, other_file_level_errors) {
  unsetenv("WIDEN_BROKERS");
  load_fails("", 1, "the file is empty");
  load_fails("# only a comment\n", 1, "the file is empty");
  load_fails("- a\n- b\n", 1, "the file must be a mapping of sections");
  load_fails("kafka: {bootstrap.servers: b, group.id: g}\n---\nx: 1\n", 2, "more than one YAML document");
  load_fails(minimal_with(21, "  dir: a\n  dir: b"), 22, "duplicate key 'dir' (first at line 21)");
  load_fails(minimal_with(13, "    fields.v.sequence-group: a\n    merge-engine: x"), 14,
             "duplicate key 'merge-engine' in 'table.options' (first at line 12)");
  load_fails(minimal_with(16, "    topic: in\n    topics: [x]"), 17,
             "'topics' and 'topic' are two names for one "
             "setting");
  load_fails(minimal_with(9, "    - {name: a, type: INT}"), 9, "column 'a' is defined twice (also at line 8)");
  load_fails(minimal_with(8, "    - {name: a, type: DECIMAL(12,2)}"), 8,
             "quote the type, e.g. type: \"DECIMAL(12,2)\"");
  /* references between sections */
  load_fails(minimal_with(10, "  primary-key: [ide]"), 10,
             "primary-key column 'ide' is not in table.schema; did you "
             "mean 'id'?");
  load_fails(minimal_with(17, "    columns:\n      id: id\n      aa: x"), 19,
             "source 's' maps column 'aa', which is not in table.schema; did you mean 'a'?");
  load_fails(minimal_with(19, "  topic: in"), 16, "topic 'in' is both read by source 's' and written by the sink");
  load_fails(minimal_with(17, "    columns: [id]\n  - {name: s, topic: in2, columns: [id]}"), 18,
             "source name 's' is used twice (also at line 15)");
  load_fails(minimal_with(17, "    columns: [id]\n  - {name: s2, topic: in, columns: [id]}"), 18,
             "topic 'in' is read by sources 's' and 's2'");
  load_fails(minimal_with(3, "  group.id: g\n  properties: {group.id: h}"), 4,
             "'group.id' is set in kafka.properties; set it as kafka.group.id instead");
  load_fails(minimal_with(19, "  topic: out\n  dead-letter-topic: out"), 18,
             "sink.dead-letter-topic is the same topic as sink.topic");
}

Test(config, unreadable_file) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load("/nonexistent/widen.yaml", &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_CONFIG");
  cr_assert(strstr(err->message, "C_CONFIG: /nonexistent/widen.yaml: can not open the config file") == err->message,
            "%s", err->message);
  wd_error_destroy(err);
}

/* ---- table and source errors through the builders ------------------------------------------------ */

Test(config, table_errors_keep_their_id_and_get_the_line) {
  unsetenv("WIDEN_BROKERS");
  /* the sequence group names a missing field: the line of that option */
  build_fails(minimal_with(13, "    fields.v.sequence-group: a,b"), "C_SEQ_GROUP_UNKNOWN_FIELD", 13,
              "field 'b' can not be found in table schema");
  build_fails(minimal_with(13, "    fields.v.sequence-group: a\n    merge-engin: partial-update"), "C_UNKNOWN_OPTION",
              14, "unknown table option 'merge-engin'");
  build_fails(minimal_with(12, "    merge-engine: partial"), "C_BAD_OPTION_VALUE", 12, "merge-engine");
  /* a type that does not parse: the column's line */
  build_fails(minimal_with(9, "    - {name: v, type: BIGNIT}"), "C_BAD_TYPE", 9, "column 'v'");
  build_fails(minimal_with(8, "    - {name: a, type: \"DECIMAL(40,2)\"}"), "C_DECIMAL_PRECISION", 8, "column 'a'");
}

Test(config, table_error_without_a_named_option_uses_the_options_line) {
  unsetenv("WIDEN_BROKERS");
  wd_config_t *cfg = load_ok(minimal_with(0, NULL));
  cr_assert_eq(cfg->table.options.line, 11);
  wd_config_destroy(cfg);
  /* a group on a key column is refused; the message names the option key */
  build_fails(minimal_with(13, "    fields.v.sequence-group: id"), "C_SEQ_GROUP_CONTAINS_PK", 13, "'id'");
}

Test(config, source_errors_keep_their_id_and_get_the_line) {
  unsetenv("WIDEN_BROKERS");
  wd_config_t *cfg = load_ok(minimal_with(17, "    columns:\n      id: id\n      v: $nope.x"));
  wd_table_t *t = NULL;
  wd_error_t *err = wd_config_build_table(cfg, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_source_t *src = NULL;
  err = wd_config_build_source(cfg, 0, wd_table_schema(t), &src);
  cr_assert_null(src);
  assert_error_at(err, "C_BAD_MAPPING", 19, "$nope.x");
  wd_table_destroy(t);
  wd_config_destroy(cfg);

  /* the primary key is not mapped: the line of the columns mapping */
  cfg = load_ok(minimal_with(17, "    columns:\n      a: a"));
  err = wd_config_build_table(cfg, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  err = wd_config_build_source(cfg, 0, wd_table_schema(t), &src);
  cr_assert_null(src);
  assert_error_at(err, "C_SOURCE_NO_KEY", 17, "id");
  wd_table_destroy(t);
  wd_config_destroy(cfg);
}

/* ---- durations, option table, generated doc ------------------------------------------------------ */

Test(config, durations) {
  static const struct {
    const char *text;
    int64_t ms;
  } OK[] = {{"0", 0},       {"250", 250},      {"500ms", 500},    {"30s", 30000},
            {"5m", 300000}, {"12h", 43200000}, {"7d", 604800000}, {"106751991167d", 106751991167LL * 86400000}};
  for (size_t i = 0; i < sizeof(OK) / sizeof(*OK); i++) {
    int64_t ms = -7;
    cr_assert_eq(wd_config_parse_duration(OK[i].text, &ms), 0, "%s", OK[i].text);
    cr_assert_eq(ms, OK[i].ms, "%s", OK[i].text);
  }
  static const char *const BAD[] = {
      "", "s", "-1", "+1", "1.5s", "5 s", "5S", "5sec", "1w", "10000000000000000000", "106751991168d", "ms5"};
  for (size_t i = 0; i < sizeof(BAD) / sizeof(*BAD); i++) {
    int64_t ms = -7;
    cr_assert_eq(wd_config_parse_duration(BAD[i], &ms), -1, "'%s'", BAD[i]);
    cr_assert_eq(ms, -7);
  }
  int64_t ms = 0;
  cr_assert_eq(wd_config_parse_duration(NULL, &ms), -1);
}

/* Every option row is complete; enum values of sources[].format are ingest's format names in
 * the order of wd_source_format_t. */
static void check_section(const wd_config_section_t *sec) {
  cr_assert_not_null(sec->description);
  for (const wd_config_option_t *o = sec->options; o->name; o++) {
    cr_assert_not_null(o->description, "%s", o->name);
    cr_assert(strchr(o->description, '|') == NULL, "'|' breaks the doc table: %s", o->name);
    if (o->type == WD_CONFIG_ENUM) cr_assert_not_null(o->values, "%s", o->name);
    if (o->type == WD_CONFIG_SECTION || o->type == WD_CONFIG_SECTION_LIST) check_section(o->sub);
  }
}

Test(config, option_table_is_complete) {
  const wd_config_section_t *root = wd_config_root();
  check_section(root);
  const wd_config_option_t *fmt = NULL;
  for (const wd_config_option_t *o = root->options; o->name; o++)
    if (!strcmp(o->name, "sources"))
      for (const wd_config_option_t *s = o->sub->options; s->name; s++)
        if (!strcmp(s->name, "format")) fmt = s;
  cr_assert_not_null(fmt);
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", fmt->values);
  int i = 0;
  for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save), i++) {
    wd_source_format_t f;
    wd_error_t *err = wd_source_format_parse(tok, &f);
    cr_assert_null(err, "%s", err ? err->message : "");
    cr_assert_eq((int)f, i, "%s", tok);
  }
  /* every registered format is listed (a format added to ingest/format.c needs its name here) */
  size_t nfmt = 0;
  wd_formats(&nfmt);
  cr_assert_eq((size_t)i, nfmt, "sources[].format lists %d of the %zu registered formats", i, nfmt);
}

Test(config, options_md_is_generated_from_the_table) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  cr_assert_not_null(mem);
  cr_assert_eq(wd_config_write_doc(mem), 0);
  fclose(mem);
  char path[4200];
  snprintf(path, sizeof(path), "%s/configs/OPTIONS.md", repo_root());
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  char *file = calloc(1, len + 2);
  size_t got = fread(file, 1, len + 1, f);
  fclose(f);
  cr_assert(got == len && memcmp(file, text, len) == 0,
            "configs/OPTIONS.md is out of date: run `build/widen config doc > configs/OPTIONS.md`");
  /* every option of the table appears in it */
  cr_assert(strstr(text, "`kafka.bootstrap.servers`") && strstr(text, "`sources[].columns`") &&
            strstr(text, "`state.tombstone-retention`") && strstr(text, "`pipeline.status-interval-s`") &&
            strstr(text, "`timestamp-unit`") && strstr(text, "WIDEN_BROKERS"));
  free(file);
  free(text);
}

/* Every independent mistake of a file is reported in one run, the first one first. */
Test(config, every_error_of_a_file_is_reported) {
  wd_config_t *cfg = NULL;
  const char *yaml = minimal_range(3, 3, "  group.idd: g");
  static char buf[8192];
  snprintf(buf, sizeof(buf), "%s", yaml);
  char *p = strstr(buf, "  topic: out");
  cr_assert_not_null(p);
  memcpy(p, "  tpic: out ", 12); /* line 19 */
  wd_error_t *err = wd_config_load(write_yaml(buf), &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  cr_assert(strstr(err->message, ":3: unknown key 'group.idd' in 'kafka'; did you mean 'group.id'?"), "%s",
            err->message);
  cr_assert(strstr(err->message, "more errors in this file"), "%s", err->message);
  cr_assert(strstr(err->message, ":19: unknown key 'tpic' in 'sink'; did you mean 'topic'?"), "%s", err->message);
  wd_error_destroy(err);
}

/* Whether text has "<name>:" as a key: at a line start, after spaces, '#', '{', '-' + space or ', '. */
static bool has_key(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    if (p[n] != ':') continue;
    char before = p == text ? '\n' : p[-1];
    if (before == '\n' || before == ' ' || before == '#' || before == '{') return true;
  }
  return false;
}

/* Appends to *missing the options of sec (and its subsections) that example has no "<name>:" for. */
static void missing_in_example(const wd_config_section_t *sec, const char *path, const char *example, char *missing,
                               size_t n) {
  for (const wd_config_option_t *o = sec->options; o->name; o++) {
    char opath[256];
    snprintf(opath, sizeof(opath), "%s%s%s", path, *path ? "." : "", o->name);
    if (!has_key(example, o->name)) snprintf(missing + strlen(missing), n - strlen(missing), " %s", opath);
    if (o->type == WD_CONFIG_SECTION || o->type == WD_CONFIG_SECTION_LIST)
      missing_in_example(o->sub, opath, example, missing, n);
  }
}

/* Configs/example.yaml, which the README says comments every option, names every
 * option of the option table (set or commented out), so that it cannot drift again. */
Test(config, example_yaml_names_every_option_of_the_table) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/configs/example.yaml", repo_root());
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  static char text[1 << 17];
  size_t got = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[got] = 0;
  static char missing[8192];
  missing[0] = 0;
  missing_in_example(wd_config_root(), "", text, missing, sizeof(missing));
  for (const wd_source_option_t *o = wd_source_options; o->name; o++) /* sources[].options */
    if (!has_key(text, o->name))
      snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " sources[].options.%s", o->name);
  cr_assert(missing[0] == 0,
            "configs/example.yaml lacks these options of app/config/config.c's table (add each, commented "
            "out with its default when it is not set):%s",
            missing);
}

/* Librdkafka properties are validated at load (`widen config check` and `run`
 * alike, no broker needed): an unknown name with librdkafka's closest property, a value librdkafka
 * refuses, a property widen sets itself; every one with its line, not only the first. */
Test(config, kafka_properties_are_checked_as_the_clients_take_them) {
  wd_config_t *cfg = NULL;
  const char *yaml = minimal_range(3, 3,
                                   "  group.id: g\n  properties:\n    sesion.timeout.ms: 6000\n"
                                   "    session.timeout.ms: six\n    client.id: fine\n"
                                   "    enable.auto.commit: true"); /* lines 5..8 */
  static char buf[8192];
  snprintf(buf, sizeof(buf), "%s", yaml);
  char *p = strstr(buf, "  topic: out\n");
  cr_assert_not_null(p);
  /* sink.properties (the producer's): its linger.ms is line 26 */
  static char buf2[8192];
  snprintf(buf2, sizeof(buf2), "%.*s  topic: out\n  properties:\n    linger.ms: soon\n%s", (int)(p - buf), buf,
           p + strlen("  topic: out\n"));
  wd_error_t *err = wd_config_load(write_yaml(buf2), &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  char want[512];
  snprintf(want, sizeof(want),
           "C_KAFKA_PROPERTY: %s:5: kafka.properties: unknown Kafka property 'sesion.timeout.ms'; did you mean "
           "'session.timeout.ms'?",
           tmp_path);
  cr_assert(!strncmp(err->message, want, strlen(want)), "%s", err->message);
  snprintf(want, sizeof(want), "%s:6: kafka.properties: Kafka property 'session.timeout.ms' = 'six': Invalid value",
           tmp_path);
  cr_assert(strstr(err->message, want), "%s", err->message);
  snprintf(want, sizeof(want), "%s:8: kafka.properties: Kafka property 'enable.auto.commit' is managed by widen",
           tmp_path);
  cr_assert(strstr(err->message, want), "%s", err->message);
  snprintf(want, sizeof(want), "%s:26: sink.properties: Kafka property 'linger.ms' = 'soon'", tmp_path);
  cr_assert(strstr(err->message, want), "%s", err->message);
  cr_assert(strstr(err->message, "and 3 more errors in this file"), "%s", err->message);
  cr_assert_null(strstr(err->message, "client.id"), "%s", err->message);
  wd_error_destroy(err);
  /* the same properties, all valid, load */
  wd_config_destroy(load_ok(minimal_range(3, 3,
                                          "  group.id: g\n  properties:\n    session.timeout.ms: 6000\n"
                                          "    client.id: fine")));
}

/* A file property (ssl.ca.location, ...) is opened by librdkafka only when a client is created:
 * `config check` said OK and `run` stopped with "ssl.ca.location failed" (new-user walkthrough).
 * A file that cannot be read is now refused at load with its line; a readable one and `probe` load. */
Test(config, kafka_file_properties_must_name_a_readable_file) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(
      write_yaml(minimal_range(3, 3, "  group.id: g\n  properties:\n    ssl.ca.location: /nonexistent/ca.pem")), &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  char want[512];
  snprintf(want, sizeof(want),
           "C_KAFKA_PROPERTY: %s:5: kafka.properties: Kafka property 'ssl.ca.location' = '/nonexistent/ca.pem': "
           "cannot read it (No such file or directory)",
           tmp_path);
  cr_assert_str_eq(err->message, want);
  wd_error_destroy(err);
  char ok[600];
  snprintf(ok, sizeof(ok), "  group.id: g\n  properties:\n    ssl.ca.location: %s/README.md", WD_SOURCE_DIR);
  wd_config_destroy(load_ok(minimal_range(3, 3, ok)));
  wd_config_destroy(load_ok(minimal_range(3, 3, "  group.id: g\n  properties:\n    ssl.ca.location: probe")));
}

/* A misspelt sequence-group field gets a did-you-mean; an unknown type lists the types. */
Test(config, group_field_typo_and_unknown_type_say_what_is_meant) {
  build_fails(minimal_with(13, "    fields.v.sequence-group: aa"), "C_SEQ_GROUP_UNKNOWN_FIELD", 13,
              "field 'aa' can not be found in table schema; did you mean 'a'?");
  build_fails(minimal_with(8, "    - {name: a, type: STRNG}"), "C_BAD_TYPE", 8,
              "the types are BOOLEAN, TINYINT, SMALLINT, INT, BIGINT");
}

/* Lookup sources (join/lookup.h): key:/on: only with lookup: true, one key path per on column,
 * and the join's refusals carry the file and the sources' line. */
Test(config, lookup_source_options) {
  wd_config_t *cfg = NULL;
  const char *not_lookup = "  - name: s\n    topic: in\n    columns: {id: id, a: a, v: $.source.ts_ms}\n"
                           "  - name: d\n    topic: dim\n    key: id\n    columns: {a: x}";
  assert_error_at(wd_config_load(write_yaml(minimal_range(15, 17, not_lookup)), &cfg), "C_CONFIG", 20,
                  "only lookup sources take");
  /* on without as many key paths */
  const char *two =
      "  - name: s\n    topic: in\n    columns: {id: id, v: $.source.ts_ms}\n"
      "  - name: d\n    topic: dim\n    lookup: true\n    on: [v]\n    key: [id, x]\n    columns: {a: name}";
  assert_error_at(wd_config_load(write_yaml(minimal_range(15, 17, two)), &cfg), "C_CONFIG", 21, "as many `key:` paths");
  /* a valid lookup: its source is built against the lookup schema [v, a] */
  const char *ok = "sources:\n  - name: s\n    topic: in\n    columns: {id: id, v: $.source.ts_ms}\n"
                   "  - name: d\n    topic: dim\n    lookup: true\n    on: v\n    key: id\n    required: true\n    "
                   "columns: {a: name}";
  cfg = load_ok(minimal_range(13, 17, ok)); /* no sequence group: a is filled by the lookup */
  wd_table_t *t = NULL;
  cr_assert_null(wd_config_build_table(cfg, &t));
  wd_source_t *srcs[2] = {0};
  int ids[2];
  wd_join_t *j = NULL;
  wd_error_t *err = wd_config_build_join(cfg, t, srcs, ids, &j);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert(wd_join_is_lookup(j, ids[1]) && !wd_join_is_lookup(j, ids[0]));
  const wd_schema_t *ls = wd_join_source_schema(j, ids[1]);
  cr_assert_eq(ls->ncols, 2);
  cr_assert_str_eq(ls->cols[0].name, "v");
  cr_assert_str_eq(ls->cols[1].name, "a");
  cr_assert_eq(srcs[1]->ncols, 2);
  wd_join_destroy(j);
  wd_source_destroy(srcs[0]);
  wd_source_destroy(srcs[1]);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
}

/* Lookups with per-partition tasks are accepted (the lookup topics are a
 * global table, app/runtime/global_table.h); the lookup keeps its lookup schema. */
Test(config, lookup_source_with_per_partition_tasks_accepted) {
  const char *y = "sources:\n  - name: s\n    topic: in\n    columns: {id: id, v: $.source.ts_ms}\n"
                  "  - name: d\n    topic: dim\n    lookup: true\n    on: v\n    key: id\n    columns: {a: name}";
  char buf[8192];
  snprintf(buf, sizeof(buf), "%spipeline:\n  tasks: per-partition\n", minimal_range(13, 17, y));
  wd_config_t *cfg = load_ok(buf);
  wd_table_t *t = NULL;
  cr_assert_null(wd_config_build_table(cfg, &t));
  wd_source_t *srcs[2] = {0};
  int ids[2];
  wd_join_t *j = NULL;
  wd_error_t *err = wd_config_build_join(cfg, t, srcs, ids, &j);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert(wd_join_is_lookup(j, ids[1]) && !wd_join_is_lookup(j, ids[0]));
  cr_assert_eq(wd_join_source_schema(j, ids[1])->ncols, 2);
  wd_join_destroy(j);
  wd_source_destroy(srcs[0]);
  wd_source_destroy(srcs[1]);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
}

/* state.on-incompatible-change: rebuild under at-least-once is refused at load (the state section's
 * line), not at the later start that finds the definition changed. */
Test(config, rebuild_on_incompatible_change_needs_exactly_once) {
  unsetenv("WIDEN_BROKERS");
  load_fails(minimal_with(21, "  dir: d\n  on-incompatible-change: rebuild\npipeline:\n  processing-guarantee: "
                              "at-least-once"),
             20,
             "'state.on-incompatible-change: rebuild' runs under 'pipeline.processing-guarantee: exactly-once' only");
  wd_config_destroy(load_ok(minimal_with(21, "  dir: d\n  on-incompatible-change: rebuild")));
}

/* sink.schemas-enable: Kafka Connect's envelope of debezium-json with json or string keys only */
Test(config, sink_schemas_enable) {
  wd_config_t *cfg = load_ok(minimal_with(0, NULL));
  cr_expect_eq(cfg->sink.schemas_enable, 0);
  wd_config_destroy(cfg);
  cfg = load_ok(minimal_with(19, "  topic: out\n  schemas-enable: true\n  key-format: string"));
  cr_expect_eq(cfg->sink.schemas_enable, 1);
  wd_config_destroy(cfg);
  load_fails(minimal_with(19, "  topic: out\n  format: changelog-json\n  schemas-enable: true"), 18,
             "needs `format: debezium-json`");
  load_fails(minimal_with(19, "  topic: out\n  key-format: avro\n  schemas-enable: true"), 18,
             "needs `format: debezium-json`");
}

/* A file with four independent mistakes names all four in one run: the table's merge-engine value
 * (checked when the table is built) as well as the keys' and values' mistakes, not only once
 * the others are fixed. */
Test(config, four_mistakes_are_named_in_one_run) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd),
           "sed -e 's/merge-engine: partial-update/merge-engine: partial-updat/' -e 's/^  batch-size:/  bach-size:/' "
           "-e '/^sink:/,/format:/s/format: debezium-json/format: debezium-jsn/' -e 's/^  batch-timeout-ms: 100/  "
           "batch-timeout-ms: "
           "soon/' '%s/configs/demo.yaml' > '%s'",
           WD_SOURCE_DIR, write_yaml("x: 1\n"));
  cr_assert_eq(system(cmd), 0);
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(tmp_path, &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  const char *want[] = {"'sink.format' is 'debezium-jsn'", "unknown key 'bach-size'", "batch-timeout-ms",
                        "option 'merge-engine' = 'partial-updat'", "and 3 more errors in this file"};
  for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
    cr_expect(strstr(err->message, want[i]) != NULL, "no \"%s\" in:\n%s", want[i], err->message);
  wd_error_destroy(err);
}

/* A source's own primary key (docs/source-keys.md): loaded as a list of mapping paths; refused on
 * a lookup, required by upsert-json, each naming its line and the fix; accepted with per-partition
 * tasks. */
Test(config, source_primary_key) {
  wd_config_t *cfg = load_ok(minimal_with(16, "    topic: in\n    primary-key: [payment_id, $key.region]"));
  cr_assert_eq(cfg->sources.v[0].primary_key.n, 2);
  cr_assert_str_eq(cfg->sources.v[0].primary_key.v[1], "$key.region");
  char name[64];
  wd_config_source_key_name(&cfg->sources.v[0], 0, name, sizeof(name));
  cr_assert_str_eq(name, "primary-key.payment_id");
  wd_config_destroy(cfg);
  cfg = NULL;
  wd_error_t *err = wd_config_load(write_yaml(minimal_with(16, "    topic: in\n    format: upsert-json")), &cfg);
  assert_error_at(err, "C_SOURCE_KEY_REQUIRED", 15, "add `primary-key:");
  err = wd_config_load(write_yaml(minimal_with(21, "  dir: /tmp/wd-state\npipeline:\n  tasks: per-partition")), &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_config_destroy(cfg);
  cfg = NULL;
  char yaml[8192]; /* per-partition tasks: partition counts are checked at start (test_source_keys) */
  snprintf(yaml, sizeof(yaml), "%s", minimal_with(16, "    topic: in\n    primary-key: [pid]"));
  strcat(yaml, "pipeline:\n  tasks: per-partition\n");
  cfg = load_ok(yaml);
  wd_config_destroy(cfg);
  cfg = NULL;
  err = wd_config_load(write_yaml(minimal_with(17, "    columns: {a: a}\n    lookup: true\n    key: [id]\n    on: [v]\n"
                                                   "    primary-key: [id]")),
                       &cfg);
  assert_error_at(err, "C_SOURCE_KEY_LOOKUP", 21, "remove `primary-key:`");
  cr_assert_null(cfg);
}
