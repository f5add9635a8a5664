/*
 * tests/unit/test_merge_order.c — the merge engine's results do not depend on the order in which
 * table options (or a config's sources) are written:
 *  - the two scenarios of the side-by-side run against Apache Paimon
 *    (partial-update.remove-record-on-sequence-group with a second group), in both option orders
 *    and both arrival orders, with their expected rows;
 *  - a property test: seeded random tables (partial-update with several sequence groups,
 *    aggregate functions inside groups, remove-record-on-sequence-group, remove-record-on-delete,
 *    aggregation, deduplicate, first-row) and random record sequences, each run with the table's
 *    options in K random permutations, must give identical final rows, changelog and record
 *    errors;
 *  - the same through the pipeline's YAML config: table options and sources permuted in the file,
 *    loaded with wd_config_load / wd_config_build_table / wd_config_build_source, records applied
 *    with wd_message_apply, identical entries and changelog.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "app/cli/simulate.h"
#include "app/config/table_config.h"
#include "common/buf.h"
#include "ingest/source.h"
#include "join/merge.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static json_t *parse(const char *text) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  cr_assert_not_null(j, "bad test JSON: %s", jerr.text);
  return j;
}

/* Runs case cs through `widen simulate`'s code path (memory store, one message at a time). */
static json_t *simulate(json_t *cs, int *rc) {
  json_t *out = NULL;
  *rc = wd_simulate_run(cs, "memory", 1, &out);
  cr_assert_neq(*rc, 1, "simulate failed");
  cr_assert_not_null(out);
  return out;
}

/* A copy of case cs whose options object holds the same pairs in the order perm[0..n). */
static json_t *with_option_order(const json_t *cs, const size_t *perm, size_t n) {
  json_t *c = json_deep_copy(cs);
  json_t *opts = json_object_get(cs, "options");
  const char **keys = calloc(n ? n : 1, sizeof(*keys));
  size_t i = 0;
  const char *key;
  json_t *val;
  json_object_foreach(opts, key, val) keys[i++] = key;
  cr_assert_eq(i, n);
  json_t *o = json_object();
  for (i = 0; i < n; i++) json_object_set(o, keys[perm[i]], json_object_get(opts, keys[perm[i]]));
  json_object_set_new(c, "options", o);
  free(keys);
  return c;
}

static void shuffle(size_t *a, size_t n, unsigned *seed) {
  for (size_t i = 0; i < n; i++) a[i] = i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)rand_r(seed) % i;
    size_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

/* The rows of out as compact JSON (caller frees), for messages. */
static char *dump(const json_t *j) { return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS); }

/* ---- the two scenarios of the side-by-side run against Paimon ---------------------------- */

#define S1_SCHEMA                                                                                                      \
  "\"schema\":[{\"name\":\"k\",\"type\":\"INT\"},{\"name\":\"s\",\"type\":\"INT\"},{\"name\":\"g1\",\"type\":"         \
  "\"INT\"},{\"name\":\"x\",\"type\":\"STRING\"},{\"name\":\"g2\",\"type\":\"INT\"},{\"name\":\"ts\",\"type\":"        \
  "\"INT\"}],\"primary_key\":[\"k\"]"
#define S1_INS "{\"op\":\"+I\",\"row\":{\"k\":1,\"s\":10,\"g1\":2,\"x\":\"a\",\"g2\":2,\"ts\":5}}"
#define S1_DEL "{\"op\":\"-D\",\"row\":{\"k\":1,\"s\":3,\"g1\":1,\"g2\":3,\"ts\":1}}"

/* Scenario 1: a late removing -D (older by sequence.field) contributes only its key and ordering
 * columns; the sum in group g1 is not retracted. Four option orders x two arrival orders. */
Test(merge_order, late_removing_delete_keeps_other_group) {
  static const char *const OPTS[] = {
      "\"merge-engine\":\"partial-update\",\"sequence.field\":\"ts\",\"fields.g1.sequence-group\":\"s\","
      "\"fields.s.aggregate-function\":\"sum\",\"fields.g2.sequence-group\":\"x\","
      "\"partial-update.remove-record-on-sequence-group\":\"g2\"",
      "\"fields.g2.sequence-group\":\"x\",\"partial-update.remove-record-on-sequence-group\":\"g2\","
      "\"merge-engine\":\"partial-update\",\"sequence.field\":\"ts\",\"fields.g1.sequence-group\":\"s\","
      "\"fields.s.aggregate-function\":\"sum\"",
  };
  static const char *const INPUT[] = {"[" S1_INS "," S1_DEL "]", "[" S1_DEL "," S1_INS "]"};
  json_t *want = parse("[{\"k\":1,\"s\":10,\"g1\":2,\"x\":null,\"g2\":3,\"ts\":5}]");
  for (size_t o = 0; o < 2; o++)
    for (size_t in = 0; in < 2; in++) {
      char text[2048];
      snprintf(text, sizeof(text), "{" S1_SCHEMA ",\"options\":{%s},\"input\":%s}", OPTS[o], INPUT[in]);
      json_t *cs = parse(text);
      int rc;
      json_t *out = simulate(cs, &rc);
      cr_expect(json_is_null(json_object_get(out, "error")), "options %zu input %zu: error", o, in);
      char *got = dump(json_object_get(out, "rows"));
      cr_expect(json_equal(json_object_get(out, "rows"), want), "options %zu input %zu: rows %s", o, in, got);
      free(got);
      json_decref(out);
      json_decref(cs);
    }
  json_decref(want);
}

/* Scenario 2: the removing -D removes the row whatever the bool_or group (which cannot retract)
 * would do, in both option orders. */
Test(merge_order, removing_delete_skips_other_group_retraction) {
  static const char *const OPTS[] = {
      "\"merge-engine\":\"partial-update\",\"fields.g2.sequence-group\":\"p2\",\"fields.p2.aggregate-function\":"
      "\"bool_or\",\"fields.g1.sequence-group\":\"p1\",\"partial-update.remove-record-on-sequence-group\":\"g1\"",
      "\"merge-engine\":\"partial-update\",\"fields.g1.sequence-group\":\"p1\","
      "\"partial-update.remove-record-on-sequence-group\":\"g1\",\"fields.g2.sequence-group\":\"p2\","
      "\"fields.p2.aggregate-function\":\"bool_or\"",
  };
  for (size_t o = 0; o < 2; o++) {
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"schema\":[{\"name\":\"k\",\"type\":\"INT\"},{\"name\":\"p1\",\"type\":\"INT\"},{\"name\":\"g1\","
             "\"type\":\"INT\"},{\"name\":\"p2\",\"type\":\"BOOLEAN\"},{\"name\":\"g2\",\"type\":\"INT\"}],"
             "\"primary_key\":[\"k\"],\"options\":{%s},\"input\":["
             "{\"op\":\"+I\",\"row\":{\"k\":1,\"p1\":1,\"g1\":1,\"p2\":true,\"g2\":1}},"
             "{\"op\":\"-D\",\"row\":{\"k\":1,\"p1\":1,\"g1\":2,\"p2\":true,\"g2\":2}}]}",
             OPTS[o]);
    json_t *cs = parse(text);
    int rc;
    json_t *out = simulate(cs, &rc);
    char *e = dump(json_object_get(out, "error"));
    cr_expect(json_is_null(json_object_get(out, "error")), "options %zu: error %s", o, e);
    free(e);
    cr_expect_eq(json_array_size(json_object_get(out, "rows")), 0, "options %zu: the row must be removed", o);
    json_t *cl = json_object_get(out, "changelog");
    cr_expect_eq(json_array_size(cl), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(cl, 1), "op")), "-D");
    json_decref(out);
    json_decref(cs);
  }
}

/* A column that is a sequence field of two groups, or a sequence field of one group and protected
 * by another, would be written by whichever group the engine walks last: refused. */
Test(merge_order, column_shared_by_two_groups_refused) {
  static const char *const OPTS[] = {
      "\"fields.g.sequence-group\":\"a\",\"fields.g,h.sequence-group\":\"b\"",
      "\"fields.g.sequence-group\":\"a\",\"fields.h.sequence-group\":\"g\"",
      "\"fields.h.sequence-group\":\"g\",\"fields.g.sequence-group\":\"a\"",
      "\"fields.g.sequence-group\":\"g\"",
  };
  for (size_t o = 0; o < sizeof(OPTS) / sizeof(*OPTS); o++) {
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"schema\":[{\"name\":\"k\",\"type\":\"INT\"},{\"name\":\"a\",\"type\":\"INT\"},{\"name\":\"b\","
             "\"type\":\"INT\"},{\"name\":\"g\",\"type\":\"INT\"},{\"name\":\"h\",\"type\":\"INT\"}],"
             "\"primary_key\":[\"k\"],\"options\":{\"merge-engine\":\"partial-update\",%s}}",
             OPTS[o]);
    json_t *j = parse(text);
    wd_table_t *t = NULL;
    wd_error_t *err = wd_table_config_from_json(json_object_get(j, "schema"), json_object_get(j, "primary_key"),
                                                json_object_get(j, "options"), &t);
    cr_expect(err && strstr(err->message, "C_SEQ_GROUP_DUPLICATE_FIELD"), "options %zu: %s", o,
              err ? err->message : "accepted");
    wd_error_destroy(err);
    wd_table_destroy(t);
    json_decref(j);
  }
}

/* ---- random tables ----------------------------------------------------------------------- */

/* Column roles of a generated table, for the record generator. */
enum { R_KEY, R_SEQ, R_TS, R_DATA };

typedef struct {
  json_t *cs; /* {schema, primary_key, options} */
  int ncols;
  char names[24][16];
  char types[24][16];
  int role[24];
} gen_table_t;

static int add_col(gen_table_t *g, const char *name, const char *type, int role) {
  int c = g->ncols++;
  snprintf(g->names[c], sizeof(g->names[c]), "%s", name);
  snprintf(g->types[c], sizeof(g->types[c]), "%s", type);
  g->role[c] = role;
  return c;
}

static void opt(json_t *o, const char *k, const char *v) { json_object_set_new(o, k, json_string(v)); }

static const char *const INT_FNS[] = {
    "sum", "product", "max", "min", "last_value", "last_non_null_value", "first_value", "first_non_null_value"};
#define NINT_FNS (sizeof(INT_FNS) / sizeof(*INT_FNS))

/* An aggregate function for a data column of type ty (or NULL for none), maybe ignore-retract. */
static void maybe_fn(json_t *o, const char *col, const char *ty, unsigned *seed, int pct) {
  if ((int)(rand_r(seed) % 100) >= pct) return;
  char k[64];
  snprintf(k, sizeof(k), "fields.%s.aggregate-function", col);
  if (!strcmp(ty, "INT")) opt(o, k, INT_FNS[rand_r(seed) % NINT_FNS]);
  else if (!strcmp(ty, "BOOLEAN")) opt(o, k, rand_r(seed) % 2 ? "bool_or" : "bool_and");
  else opt(o, k, "listagg");
  if (rand_r(seed) % 3 == 0) {
    snprintf(k, sizeof(k), "fields.%s.ignore-retract", col);
    opt(o, k, "true");
  }
}

static const char *data_type(unsigned *seed) {
  int r = (int)(rand_r(seed) % 6);
  return r < 4 ? "INT" : r == 4 ? "BOOLEAN" : "STRING";
}

/* Shuffles the value columns (all but the key, column 0) of g, so that schema order and the
 * order in which groups are named differ. */
static void shuffle_cols(gen_table_t *g, unsigned *seed) {
  for (int i = g->ncols - 1; i > 1; i--) {
    int j = 1 + (int)(rand_r(seed) % (unsigned)i);
    char n[16], t[16];
    int r = g->role[i];
    memcpy(n, g->names[i], 16);
    memcpy(t, g->types[i], 16);
    memcpy(g->names[i], g->names[j], 16);
    memcpy(g->types[i], g->types[j], 16);
    g->role[i] = g->role[j];
    memcpy(g->names[j], n, 16);
    memcpy(g->types[j], t, 16);
    g->role[j] = r;
  }
}

/* A random valid table of one of the engines (variant picks the family). */
static void gen_table(gen_table_t *g, unsigned *seed, int variant) {
  memset(g, 0, sizeof(*g));
  json_t *o = json_object();
  add_col(g, "k", "INT", R_KEY);
  bool ts = rand_r(seed) % 2;
  switch (variant) {
  case 0:
  case 1:
  case 2: { /* partial-update with sequence groups */
    opt(o, "merge-engine", "partial-update");
    int ngroups = 1 + (int)(rand_r(seed) % 3);
    char removers[128] = "";
    for (int gi = 0; gi < ngroups; gi++) {
      char seqs[64], fields[128] = "", name[16];
      snprintf(name, sizeof(name), "g%d", gi);
      add_col(g, name, "INT", R_SEQ);
      snprintf(seqs, sizeof(seqs), "%s", name);
      if (rand_r(seed) % 5 == 0) {
        snprintf(name, sizeof(name), "g%db", gi);
        add_col(g, name, "INT", R_SEQ);
        snprintf(seqs + strlen(seqs), sizeof(seqs) - strlen(seqs), ",%s", name);
      }
      if (rand_r(seed) % 2) {
        if (*removers) strcat(removers, ",");
        strcat(removers, name);
      }
      int nf = 1 + (int)(rand_r(seed) % 2);
      for (int f = 0; f < nf; f++) {
        const char *ty = data_type(seed);
        snprintf(name, sizeof(name), "p%d%c", gi, 'a' + f);
        add_col(g, name, ty, R_DATA);
        if (*fields) strcat(fields, ",");
        strcat(fields, name);
        maybe_fn(o, name, ty, seed, 50);
      }
      char key[96];
      snprintf(key, sizeof(key), "fields.%s.sequence-group", seqs);
      opt(o, key, fields);
    }
    if (*removers) opt(o, "partial-update.remove-record-on-sequence-group", removers);
    int nu = (int)(rand_r(seed) % 3);
    for (int u = 0; u < nu; u++) {
      char name[16];
      snprintf(name, sizeof(name), "u%d", u);
      add_col(g, name, data_type(seed), R_DATA);
      if (rand_r(seed) % 3 == 0) {
        char key[64];
        snprintf(key, sizeof(key), "fields.%s.aggregate-function", name);
        opt(o, key, "last_non_null_value");
      }
    }
    if (rand_r(seed) % 4 == 0) opt(o, "fields.default-aggregate-function", "last_non_null_value");
    break;
  }
  case 3: { /* partial-update without groups */
    opt(o, "merge-engine", "partial-update");
    int nd = 2 + (int)(rand_r(seed) % 3);
    for (int d = 0; d < nd; d++) {
      char name[16];
      snprintf(name, sizeof(name), "v%d", d);
      add_col(g, name, data_type(seed), R_DATA);
    }
    int p = (int)(rand_r(seed) % 3);
    if (p == 0) opt(o, "partial-update.remove-record-on-delete", "true");
    if (p == 1) opt(o, "ignore-delete", "true");
    if (rand_r(seed) % 3 == 0) opt(o, "ignore-update-before", "true");
    break;
  }
  case 4: { /* aggregation */
    opt(o, "merge-engine", "aggregation");
    bool rod = rand_r(seed) % 2;
    if (rod) opt(o, "aggregation.remove-record-on-delete", "true");
    int nd = 2 + (int)(rand_r(seed) % 4);
    for (int d = 0; d < nd; d++) {
      char name[16];
      snprintf(name, sizeof(name), "v%d", d);
      const char *ty = data_type(seed);
      add_col(g, name, ty, R_DATA);
      maybe_fn(o, name, ty, seed, 80);
      if (rod) { /* ignore-retract conflicts with aggregation.remove-record-on-delete */
        char key[64];
        snprintf(key, sizeof(key), "fields.%s.ignore-retract", name);
        json_object_del(o, key);
      }
    }
    if (rand_r(seed) % 3 == 0) opt(o, "fields.default-aggregate-function", "last_non_null_value");
    break;
  }
  default: { /* deduplicate or first-row */
    bool first = rand_r(seed) % 3 == 0;
    opt(o, "merge-engine", first ? "first-row" : "deduplicate");
    int nd = 1 + (int)(rand_r(seed) % 3);
    for (int d = 0; d < nd; d++) {
      char name[16];
      snprintf(name, sizeof(name), "v%d", d);
      add_col(g, name, data_type(seed), R_DATA);
    }
    if (first) {
      ts = false;
      opt(o, "ignore-delete", "true");
    } else if (rand_r(seed) % 3 == 0) {
      opt(o, "ignore-delete", "true");
    }
    if (!first && ts && rand_r(seed) % 3 == 0) opt(o, "sequence.field.sort-order", "descending");
    break;
  }
  }
  if (ts) {
    add_col(g, "ts", "INT", R_TS);
    opt(o, "sequence.field", "ts");
  }
  if (rand_r(seed) % 3 == 0) opt(o, "changelog-producer.row-deduplicate", "true");
  shuffle_cols(g, seed);
  json_t *schema = json_array();
  for (int c = 0; c < g->ncols; c++) {
    json_t *col = json_object();
    json_object_set_new(col, "name", json_string(g->names[c]));
    json_object_set_new(col, "type", json_string(g->types[c]));
    json_array_append_new(schema, col);
  }
  g->cs = json_object();
  json_object_set_new(g->cs, "schema", schema);
  json_object_set_new(g->cs, "primary_key", json_pack("[s]", "k"));
  json_object_set_new(g->cs, "options", o);
}

static json_t *gen_value(const gen_table_t *g, int c, unsigned *seed) {
  if (g->role[c] == R_KEY) return json_integer(rand_r(seed) % 3);
  if (rand_r(seed) % 4 == 0) return json_null();
  if (g->role[c] == R_SEQ) return json_integer(rand_r(seed) % 5);
  if (g->role[c] == R_TS) return json_integer(rand_r(seed) % 6);
  if (!strcmp(g->types[c], "BOOLEAN")) return json_boolean(rand_r(seed) % 2);
  if (!strcmp(g->types[c], "STRING")) {
    static const char *const S[] = {"a", "b", "c", "d"};
    return json_string(S[rand_r(seed) % 4]);
  }
  return json_integer((int)(rand_r(seed) % 26) - 5);
}

/* nrec random records for g; some consecutive pairs form one message (a -U/+U update). */
static json_t *gen_input(const gen_table_t *g, unsigned *seed, int nrec) {
  static const char *const KINDS[] = {"+I", "+I", "+I", "+U", "+U", "-U", "-D", "-D"};
  json_t *input = json_array();
  int msg = 0;
  for (int i = 0; i < nrec; i++) {
    bool pair = i + 1 < nrec && rand_r(seed) % 6 == 0;
    json_t *row = json_object();
    for (int c = 0; c < g->ncols; c++) json_object_set_new(row, g->names[c], gen_value(g, c, seed));
    json_t *rec = json_object();
    json_object_set_new(rec, "op", json_string(pair ? "-U" : KINDS[rand_r(seed) % 8]));
    json_object_set_new(rec, "row", row);
    if (pair) {
      json_object_set_new(rec, "message", json_integer(msg));
      json_array_append_new(input, rec);
      json_t *after = json_deep_copy(row);
      for (int c = 1; c < g->ncols; c++)
        if (rand_r(seed) % 2) json_object_set_new(after, g->names[c], gen_value(g, c, seed));
      rec = json_object();
      json_object_set_new(rec, "op", json_string("+U"));
      json_object_set_new(rec, "row", after);
      json_object_set_new(rec, "message", json_integer(msg++));
      i++;
    }
    json_array_append_new(input, rec);
  }
  return input;
}

#define PERMS 6
#define NTABLES 1200

/* Random tables x random inputs x PERMS option orders: identical rows, changelog and error. */
Test(merge_order, option_order_does_not_matter, .timeout = 900) {
  unsigned seed = 16016;
  int tables = 0, records_rejected = 0, removals = 0;
  for (int iter = 0; iter < NTABLES; iter++) {
    gen_table_t g;
    gen_table(&g, &seed, iter % 6);
    json_object_set_new(g.cs, "input", gen_input(&g, &seed, 12 + (int)(rand_r(&seed) % 30)));
    size_t n = json_object_size(json_object_get(g.cs, "options"));
    json_t *first = NULL;
    char *first_opts = NULL;
    for (int p = 0; p < PERMS; p++) {
      size_t perm[32];
      cr_assert_leq(n, 32);
      shuffle(perm, n, &seed);
      if (p == 0)
        for (size_t i = 0; i < n; i++) perm[i] = i;
      json_t *cs = with_option_order(g.cs, perm, n);
      int rc;
      json_t *out = simulate(cs, &rc);
      char *opts = dump(json_object_get(cs, "options"));
      if (rc == 2) cr_assert_fail("iter %d: generated table refused: %s\n%s", iter, dump(out), opts);
      if (!first) {
        first = out;
        first_opts = opts;
        if (!json_is_null(json_object_get(out, "error"))) records_rejected++;
        json_t *cl = json_object_get(out, "changelog");
        for (size_t i = 0; i < json_array_size(cl); i++)
          removals += !strcmp(json_string_value(json_object_get(json_array_get(cl, i), "op")), "-D");
      } else {
        bool same = json_equal(json_object_get(first, "rows"), json_object_get(out, "rows")) &&
                    json_equal(json_object_get(first, "changelog"), json_object_get(out, "changelog")) &&
                    json_equal(json_object_get(first, "error"), json_object_get(out, "error"));
        if (!same) {
          char *in = dump(json_object_get(g.cs, "input")), *schema = dump(json_object_get(g.cs, "schema"));
          char *a = dump(first), *b = dump(out);
          cr_assert_fail(
              "iter %d: results depend on option order\nschema %s\ninput %s\noptions %s\n-> %s\noptions %s\n-> %s",
              iter, schema, in, first_opts, a, opts, b);
        }
        free(opts);
        json_decref(out);
      }
      json_decref(cs);
    }
    free(first_opts);
    json_decref(first);
    json_decref(g.cs);
    tables++;
  }
  cr_expect_eq(tables, NTABLES);
  fprintf(stderr, "merge_order: %d tables x %d option orders; %d runs with a rejected record, %d removals\n", tables,
          PERMS, records_rejected, removals);
  /* the generator reaches the paths that matter: rejected records and removals */
  cr_expect_gt(records_rejected, 50, "only %d runs with a rejected record", records_rejected);
  cr_expect_gt(removals, 200, "only %d removals", removals);
}

/* ---- the same through the pipeline's YAML config, sources permuted too --------------------- */

/* A keyed memory store for wd_message_apply: entries in insertion order, looked up linearly. */
typedef struct {
  wd_buf_t *keys;
  wd_entry_t *entries;
  size_t n, cap;
  const wd_table_t *t;
} mem_store_t;

static wd_error_t *mem_get(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  mem_store_t *m = ctx;
  e->state = WD_ENTRY_ABSENT;
  e->row = NULL;
  for (size_t i = 0; i < m->n; i++)
    if (m->keys[i].len == klen && memcmp(m->keys[i].data, key, klen) == 0) {
      if (m->entries[i].state == WD_ENTRY_ABSENT) return NULL;
      e->state = m->entries[i].state;
      e->row = wd_row_copy(wd_table_schema(m->t), m->entries[i].row);
      return e->row ? NULL : wd_error_nomem();
    }
  return NULL;
}

static wd_error_t *mem_put(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  mem_store_t *m = ctx;
  size_t i = 0;
  while (i < m->n && !(m->keys[i].len == klen && memcmp(m->keys[i].data, key, klen) == 0)) i++;
  if (i == m->n) {
    if (m->n == m->cap) {
      m->cap = m->cap ? m->cap * 2 : 16;
      m->keys = realloc(m->keys, m->cap * sizeof(*m->keys));
      m->entries = realloc(m->entries, m->cap * sizeof(*m->entries));
      cr_assert(m->keys && m->entries);
    }
    memset(&m->keys[i], 0, sizeof(m->keys[i]));
    cr_assert_eq(wd_buf_append(&m->keys[i], key, klen), 0);
    m->entries[i].state = WD_ENTRY_ABSENT;
    m->entries[i].row = NULL;
    m->n++;
  }
  wd_entry_clear(m->t, &m->entries[i]);
  m->entries[i] = *e;
  e->state = WD_ENTRY_ABSENT;
  e->row = NULL;
  return NULL;
}

static void mem_free(mem_store_t *m) {
  for (size_t i = 0; i < m->n; i++) {
    wd_buf_free(&m->keys[i]);
    wd_entry_clear(m->t, &m->entries[i]);
  }
  free(m->keys);
  free(m->entries);
}

/* Appends "<kind> v1|v2|...;" for row to out. */
static void row_text(const wd_schema_t *s, const char *kind, const wd_row_t *row, wd_buf_t *out) {
  cr_assert_eq(wd_buf_append(out, kind, strlen(kind)), 0);
  for (size_t c = 0; c < s->ncols; c++) {
    wd_buf_putc(out, c ? '|' : ' ');
    if (row->v[c].is_null) wd_buf_append(out, "null", 4);
    else cr_assert_eq(wd_value_format(s->cols[c].type, &row->v[c], out), 0);
  }
  wd_buf_putc(out, '\n');
}

/* One table option or source of the generated config, as YAML text. */
typedef struct {
  char text[512];
} yaml_item_t;

#define NSRC 3
static const char *const SRC_YAML[NSRC] = {
    "  - name: orders\n    topic: shop.orders\n    format: debezium-json\n    columns:\n      order_id:\n"
    "      customer:\n      amount:\n      currency:\n      ordered_at: order_ts\n      order_version:\n",
    "  - name: payments\n    topic: shop.payments\n    format: debezium-json\n    columns:\n      order_id:\n"
    "      paid_amount: pay_amount\n      pay_method:\n      pay_status:\n      paid_at: pay_ts\n      pay_version:\n",
    "  - name: shipments\n    topic: shop.shipments\n    format: debezium-json\n    columns:\n      order_id:\n"
    "      carrier:\n      ship_status:\n      shipped_at: ship_ts\n      ship_version:\n",
};

/* Random table options for the three shop streams (configs/demo.yaml's table): partial-update
 * with a group per stream and aggregates inside groups, or aggregation, or deduplicate; *cross
 * says whether the orders source also fills the payments group's sequence. */
static size_t gen_shop_options(yaml_item_t *o, unsigned *seed, bool *cross) {
  size_t n = 0;
  int engine = (int)(rand_r(seed) % 4);
  *cross = rand_r(seed) % 2;
#define O(...) snprintf(o[n++].text, sizeof(o[0].text), __VA_ARGS__)
  if (engine <= 1) {
    O("merge-engine: partial-update");
    O("fields.order_version.sequence-group: customer,amount,currency,ordered_at");
    O("fields.pay_version.sequence-group: paid_amount,pay_method,pay_status,paid_at");
    O("fields.ship_version.sequence-group: carrier,ship_status,shipped_at");
    static const char *const V[] = {"order_version", "pay_version", "ship_version"};
    char rm[64] = "";
    for (int i = 0; i < 3; i++)
      if (rand_r(seed) % 2) snprintf(rm + strlen(rm), sizeof(rm) - strlen(rm), "%s%s", *rm ? "," : "", V[i]);
    if (*rm) O("partial-update.remove-record-on-sequence-group: %s", rm);
    static const char *const DEC_FNS[] = {"sum", "max", "min", "last_value", "first_value", "first_non_null_value"};
    if (rand_r(seed) % 2) O("fields.amount.aggregate-function: %s", DEC_FNS[rand_r(seed) % 6]);
    if (rand_r(seed) % 2 || *cross) O("fields.paid_amount.aggregate-function: %s", DEC_FNS[rand_r(seed) % 6]);
    if (rand_r(seed) % 2) O("fields.shipped_at.aggregate-function: max");
    if (rand_r(seed) % 2) O("fields.carrier.aggregate-function: listagg");
    if (rand_r(seed) % 3 == 0) O("fields.paid_amount.ignore-retract: true");
    if (rand_r(seed) % 3 == 0) O("fields.shipped_at.ignore-retract: true");
  } else if (engine == 2) {
    O("merge-engine: aggregation");
    O("fields.default-aggregate-function: last_non_null_value");
    O("fields.amount.aggregate-function: sum");
    O("fields.paid_amount.aggregate-function: %s", rand_r(seed) % 2 ? "sum" : "max");
    O("fields.paid_amount.ignore-retract: true");
    O("fields.shipped_at.aggregate-function: max");
    O("fields.shipped_at.ignore-retract: true");
    O("fields.order_version.aggregate-function: max");
    O("fields.order_version.ignore-retract: true");
  } else {
    O("merge-engine: deduplicate");
    if (rand_r(seed) % 2) O("sequence.field: order_version,pay_version");
    if (rand_r(seed) % 2) O("ignore-delete: true");
  }
  O("changelog-producer: lookup");
  if (rand_r(seed) % 2) O("changelog-producer.row-deduplicate: true");
#undef O
  return n;
}

/* Writes the config with options and sources in the given orders to path. */
static void write_shop_yaml(const char *path, const yaml_item_t *opts, const size_t *operm, size_t nopts,
                            const size_t *sperm, bool cross) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: g\n"
        "table:\n  name: orders_wide\n  schema:\n"
        "    - {name: order_id, type: BIGINT NOT NULL}\n    - {name: customer, type: STRING}\n"
        "    - {name: amount, type: \"DECIMAL(10,2)\"}\n    - {name: currency, type: STRING}\n"
        "    - {name: ordered_at, type: TIMESTAMP(3)}\n    - {name: order_version, type: BIGINT}\n"
        "    - {name: paid_amount, type: \"DECIMAL(10,2)\"}\n    - {name: pay_method, type: STRING}\n"
        "    - {name: pay_status, type: STRING}\n    - {name: paid_at, type: TIMESTAMP(3)}\n"
        "    - {name: pay_version, type: BIGINT}\n    - {name: carrier, type: STRING}\n"
        "    - {name: ship_status, type: STRING}\n    - {name: shipped_at, type: TIMESTAMP(3)}\n"
        "    - {name: ship_version, type: BIGINT}\n"
        "  primary-key: [order_id]\n  options:\n",
        f);
  for (size_t i = 0; i < nopts; i++) fprintf(f, "    %s\n", opts[operm[i]].text);
  fputs("sources:\n", f);
  for (size_t i = 0; i < NSRC; i++) {
    fputs(SRC_YAML[sperm[i]], f);
    /* cross: the orders stream also advances the payments group (its records then carry two
     * groups' sequences, so a removing -D of one group meets the other group's retraction) */
    if (cross && sperm[i] == 0) fputs("      pay_version: order_version\n", f);
  }
  fputs("sink:\n  topic: out\nstate:\n  dir: /tmp/wd-state-unused\n", f);
  fclose(f);
}

/* Loads path and runs the generated workload (seed) through the config's table and sources, one
 * Kafka message at a time; returns the changelog, the record errors and the final entries as text
 * (caller frees). */
static char *run_shop(const char *path, uint64_t seed) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  cr_assert_null(err, "config: %s", err ? err->message : "");
  wd_table_t *t = NULL;
  err = wd_config_build_table(cfg, &t);
  cr_assert_null(err, "table: %s", err ? err->message : "");
  const wd_schema_t *s = wd_table_schema(t);
  wd_source_t *src[NSRC];
  for (size_t i = 0; i < NSRC; i++) {
    err = wd_config_build_source(cfg, i, s, &src[i]);
    cr_assert_null(err, "source: %s", err ? err->message : "");
    err = wd_table_config_check_source(t, src[i]);
    cr_assert_null(err, "source check: %s", err ? err->message : "");
  }
  wd_gen_opts_t go = {
      .seed = seed, .keys = 6, .records = 120, .topic_prefix = "shop.", .late_ratio = 0.3, .delete_ratio = 0.15};
  wd_gen_t *gen = NULL;
  cr_assert_null(wd_gen_new(&go, &gen));
  mem_store_t store = {.t = t};
  wd_state_ops_t ops = {mem_get, mem_put};
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_changelog_t cl = {0};
  wd_buf_t out = {0};
  wd_gen_msg_t msg;
  int64_t offset = 0;
  while (wd_gen_next(gen, &msg)) {
    wd_source_t *by = NULL;
    for (size_t i = 0; i < NSRC && !by; i++)
      if (!strcmp(src[i]->topics[0], msg.topic)) by = src[i];
    cr_assert_not_null(by, "no source for %s", msg.topic);
    wd_kafka_meta_t meta = {msg.topic, 0, offset++, -1, msg.key, msg.key_len};
    err = wd_decode_debezium_json(by, s, &meta, msg.value, msg.value_len, &ch);
    if (!err) err = wd_message_apply(t, &ops, &store, ch.rows, ch.count, &cl, NULL);
    if (err) {
      char line[160];
      snprintf(line, sizeof(line), "error at %lld: %.40s\n", (long long)offset - 1, err->message);
      wd_buf_append(&out, line, strlen(line));
      wd_error_destroy(err);
    }
  }
  cr_assert(!wd_gen_failed(gen));
  for (size_t i = 0; i < cl.n; i++) row_text(s, wd_row_kind_str(cl.rows[i]->kind), cl.rows[i], &out);
  /* final entries by key (the store keeps insertion order, which follows the records) */
  for (size_t i = 0; i < store.n; i++)
    if (store.entries[i].state != WD_ENTRY_ABSENT)
      row_text(s, store.entries[i].state == WD_ENTRY_ROW ? "row" : "tombstone", store.entries[i].row, &out);
  wd_buf_putc(&out, 0);
  char *text = strdup((const char *)out.data);
  wd_buf_free(&out);
  wd_changelog_free(t, &cl);
  wd_changes_free(&ch);
  mem_free(&store);
  wd_gen_destroy(gen);
  for (size_t i = 0; i < NSRC; i++) wd_source_destroy(src[i]);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  return text;
}

/* Random shop configs, each written with its table options and its sources in K random orders
 * and run over the same generated Debezium workload: identical changelog, errors and entries. */
Test(merge_order, yaml_option_and_source_order_does_not_matter, .timeout = 900) {
  char dir[] = "/tmp/wd_test_merge_order_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof(path), "%s/pipeline.yaml", dir);
  unsigned seed = 1616;
  size_t total = 0;
  for (int iter = 0; iter < 60; iter++) {
    yaml_item_t opts[24];
    bool cross;
    size_t nopts = gen_shop_options(opts, &seed, &cross);
    char *first = NULL;
    for (int p = 0; p < 4; p++) {
      size_t operm[24], sperm[NSRC];
      shuffle(operm, nopts, &seed);
      shuffle(sperm, NSRC, &seed);
      write_shop_yaml(path, opts, operm, nopts, sperm, cross);
      char *text = run_shop(path, (uint64_t)iter);
      if (!first) {
        first = text;
        total += strlen(text);
        cr_assert_gt(strlen(text), 0);
      } else {
        cr_assert_str_eq(text, first, "iter %d order %d: results depend on the order of options or sources", iter, p);
        free(text);
      }
    }
    free(first);
  }
  cr_expect_gt(total, 10000);
  unlink(path);
  rmdir(dir);
}
