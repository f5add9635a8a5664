/*
 * tests/unit/test_merge_order.c — the merge engine's results do not depend on the order in which
 * table options (or a config's sources) are written (issue 16):
 *  - the two scenarios of issue 16 (partial-update.remove-record-on-sequence-group with a second
 *    group), in both option orders and both arrival orders, with their expected rows;
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

#include "app/config.h"
#include "app/simulate.h"
#include "app/table_config.h"
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

/* ---- the two scenarios of issue 16 --------------------------------------------------------- */

#define S1_SCHEMA                                                                                                  \
  "\"schema\":[{\"name\":\"k\",\"type\":\"INT\"},{\"name\":\"s\",\"type\":\"INT\"},{\"name\":\"g1\",\"type\":"   \
  "\"INT\"},{\"name\":\"x\",\"type\":\"STRING\"},{\"name\":\"g2\",\"type\":\"INT\"},{\"name\":\"ts\",\"type\":"  \
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
  json_t *cs;          /* {schema, primary_key, options} */
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

static const char *const INT_FNS[] = {"sum",        "product",     "max",           "min",
                                      "last_value", "last_non_null_value", "first_value", "first_non_null_value"};
#define NINT_FNS (sizeof(INT_FNS) / sizeof(*INT_FNS))

/* An aggregate function for a data column of type ty (or NULL for none), maybe ignore-retract. */
static void maybe_fn(json_t *o, const char *col, const char *ty, unsigned *seed, int pct) {
  if ((int)(rand_r(seed) % 100) >= pct) return;
  char k[64];
  snprintf(k, sizeof(k), "fields.%s.aggregate-function", col);
  if (!strcmp(ty, "INT"))
    opt(o, k, INT_FNS[rand_r(seed) % NINT_FNS]);
  else if (!strcmp(ty, "BOOLEAN"))
    opt(o, k, rand_r(seed) % 2 ? "bool_or" : "bool_and");
  else
    opt(o, k, "listagg");
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
    case 0: case 1: case 2: { /* partial-update with sequence groups */
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
          cr_assert_fail("iter %d: results depend on option order\nschema %s\ninput %s\noptions %s\n-> %s\noptions %s\n-> %s",
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
