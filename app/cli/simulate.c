/*
 * app/cli/simulate.c — `widen simulate CASE.json`: runs a conformance case (../shared/cases/README.md)
 * through the daemon's table loading, merge engine, keyed state and store (RocksDB in a temporary
 * directory by default; `--store memory`), and prints {"rows": [...], "changelog": [...],
 * "error": ...} on standard output. Exit 0, or 2 when the configuration is refused.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli/commands.h"
#include "app/config/config.h"
#include "app/cli/simulate.h"
#include "app/config/table_config.h"
#include "app/cli/cli.h"
#include "common/json.h"
#include "join/lookup.h"
#include "join/state.h"

static json_t *error_json(const char *stage, const wd_error_t *err, long index) {
  json_t *e = json_object();
  json_object_set_new(e, "stage", json_string(stage));
  if (index >= 0) json_object_set_new(e, "index", json_integer(index));
  json_object_set_new(e, "message", json_string(err->message));
  return e;
}

/* Strings of a JSON array (or one string) into names[0..*n) (borrowed from j); -1 when not. */
static int json_names(const json_t *j, const char **names, size_t max, size_t *n) {
  *n = 0;
  if (json_is_string(j)) {
    names[(*n)++] = json_string_value(j);
    return 0;
  }
  if (!json_is_array(j) || json_array_size(j) > max) return -1;
  for (size_t i = 0; i < json_array_size(j); i++) {
    if (!json_is_string(json_array_get(j, i))) return -1;
    names[(*n)++] = json_string_value(json_array_get(j, i));
  }
  return 0;
}

/* The case's "sources" (this repository's extension of the case format, tests/cases/README.md):
 * [{"name", "columns": [wide columns], "required", "lookup", "on": [wide columns], "sequence"}],
 * declared into the join layer in order; ids[i] is source i's id. A main source without
 * "columns" fills every column no lookup fills. */
static wd_error_t *declare_sources(wd_join_t *jn, const wd_schema_t *schema, const json_t *srcs, int *ids,
                                   wd_state_t *state, wd_store_t *st) {
  size_t ns = json_array_size(srcs);
  const char *names[256];
  bool *lookup_col = calloc(schema->ncols + 1, sizeof(bool));
  bool *mapped = calloc(schema->ncols + 1, sizeof(bool));
  wd_error_t *err = NULL;
  if (!lookup_col || !mapped) {
    err = wd_error_nomem();
    goto done;
  }
  for (int pass = 0; pass < 2 && !err; pass++)
    for (size_t i = 0; i < ns && !err; i++) {
      const json_t *js = json_array_get(srcs, i);
      const char *name = json_string_value(json_object_get(js, "name"));
      bool lk = json_is_true(json_object_get(js, "lookup")), req = json_is_true(json_object_get(js, "required"));
      const char *on[16];
      size_t ncols = 0, non = 0;
      if (!name || json_names(json_object_get(js, "columns"), names, 256, &ncols) ||
          (lk && json_names(json_object_get(js, "on"), on, 16, &non))) {
        err = wd_error_new(WD_ERR_CONFIG, C_CONFIG,
                           "sources[%zu]: needs \"name\", \"columns\" (and \"on\" for a "
                           "lookup) as strings or lists of strings",
                           i);
        break;
      }
      if (pass == 0) { /* the columns lookups fill, for main sources without "columns" */
        for (size_t c = 0; lk && c < ncols; c++) {
          int k = wd_schema_find(schema, names[c]);
          if (k >= 0) lookup_col[k] = true;
        }
        continue;
      }
      if (lk) {
        err = wd_join_add_lookup(jn, name, on, non, names, ncols, json_is_true(json_object_get(js, "sequence")), req,
                                 &ids[i]);
        continue;
      }
      bool has_cols = json_object_get(js, "columns") != NULL;
      for (size_t c = 0; c < schema->ncols; c++) mapped[c] = !has_cols && !lookup_col[c];
      for (size_t c = 0; c < ncols; c++) {
        int k = wd_schema_find(schema, names[c]);
        if (k < 0) {
          err = wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_COLUMN, "source '%s': '%s' is not a column", name, names[c]);
          break;
        }
        mapped[k] = true;
      }
      if (!err) err = wd_join_add_main(jn, name, mapped, req, &ids[i]);
    }
  if (!err) err = wd_join_start(jn, state, st);
done:
  free(lookup_col);
  free(mapped);
  return err;
}

static void usage(FILE *f) {
  fprintf(f, "usage: widen simulate [--store rocksdb|memory] [--batch N] CASE.json\n"
             "       widen simulate [--store rocksdb|memory] [--batch N] --config PIPELINE.yaml TRACE.jsonl\n"
             "\n"
             "Runs a conformance case (table, input records, see ../shared/cases/README.md) through widen's\n"
             "table loading, merge engine, keyed state and store, and prints one JSON object:\n"
             "With --config, the case is the pipeline config's table and the input is TRACE.jsonl, one\n"
             "{\"op\",\"row\",\"message\"} per line as `widen run --trace` writes it.\n"
             "  {\"rows\": [...], \"changelog\": [...], \"error\": null | {stage, index, message}}\n"
             "Options:\n"
             "  --store rocksdb   the daemon's RocksDB store in a temporary directory (default)\n"
             "  --store memory    the in-memory store\n"
             "  --batch N         flush the state to the store every N messages (default 1)\n"
             "Exit status: 0, 2 when the table configuration is refused, 1 on other errors.\n");
}

int wd_simulate_run(const json_t *cs, const char *store_kind, long batch, json_t **result) {
  int rc = 1;
  json_t *out = json_object(), *changelog = json_array();
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  wd_state_t *state = NULL;
  wd_store_batch_t *b = NULL;
  wd_join_t *jn = NULL;
  const wd_schema_t *recs_schema = NULL; /* the schema of recs[0..nrecs) */
  int *ids = NULL;
  wd_error_t *err = NULL, *first_rec_err = NULL;
  long first_rec_index = -1;
  wd_changelog_t cl = {0};
  wd_row_t **recs = NULL;
  size_t nrecs = 0;
  wd_row_t **rows = NULL;
  size_t nrows = 0;
  char dir[] = "/tmp/widen-simulate-XXXXXX";
  *result = NULL;
  bool made_dir = false;

  if ((err = wd_table_config_from_json(json_object_get(cs, "schema"), json_object_get(cs, "primary_key"),
                                       json_object_get(cs, "options"), &t))) {
    json_object_set_new(out, "error", error_json("config", err, -1));
    json_object_set_new(out, "rows", json_array());
    json_object_set_new(out, "changelog", json_array());
    rc = 2;
    goto print;
  }
  const wd_schema_t *schema = wd_table_schema(t);
  if (strcmp(store_kind, "memory") == 0) {
    err = wd_store_open_memory(&st);
  } else {
    if (!mkdtemp(dir)) {
      perror("widen simulate: mkdtemp");
      goto done;
    }
    made_dir = true;
    err = wd_store_open_rocksdb(dir, NULL, &st);
  }
  if (err) goto fail;
  if (!(state = wd_state_new(t, st, 0)) || !(b = wd_store_batch_new())) {
    err = wd_error_nomem();
    goto fail;
  }

  /* the join layer: main sources and lookups of the case's "sources" (none: one main source) */
  json_t *srcs = json_object_get(cs, "sources");
  size_t nsrcs = json_array_size(srcs);
  if ((err = wd_join_new(t, &jn))) goto fail;
  if (!(ids = calloc(nsrcs + 1, sizeof(*ids)))) {
    err = wd_error_nomem();
    goto fail;
  }
  if (nsrcs) {
    if ((err = declare_sources(jn, schema, srcs, ids, state, st))) {
      if (err->cls != WD_ERR_CONFIG) goto fail;
      json_object_set_new(out, "error", error_json("config", err, -1));
      json_object_set_new(out, "rows", json_array());
      json_object_set_new(out, "changelog", json_array());
      rc = 2;
      goto print;
    }
  } else {
    bool *all = calloc(schema->ncols + 1, sizeof(bool));
    if (!all) {
      err = wd_error_nomem();
      goto fail;
    }
    for (size_t c = 0; c < schema->ncols; c++) all[c] = true;
    err = wd_join_add_main(jn, "input", all, false, &ids[0]);
    free(all);
    if (err || (err = wd_join_start(jn, state, st))) goto fail;
  }

  json_t *input = json_object_get(cs, "input");
  if (input && !json_is_array(input)) {
    fprintf(stderr, "widen simulate: \"input\" must be an array of {op, row[, message]}\n");
    goto done;
  }
  size_t ninput = json_array_size(input);
  recs = calloc(ninput + 1, sizeof(*recs));
  if (!recs) {
    err = wd_error_nomem();
    goto fail;
  }
  long messages = 0;
  for (size_t i = 0; i < ninput;) {
    /* one message: consecutive entries with the same "message" value (spec §10.1) */
    json_t *mv = json_object_get(json_array_get(input, i), "message");
    const char *sname = json_string_value(json_object_get(json_array_get(input, i), "source"));
    size_t j = i + 1;
    if (mv && !json_is_null(mv))
      while (j < ninput && json_equal(json_object_get(json_array_get(input, j), "message"), mv)) j++;
    wd_error_t *rerr = NULL;
    long bad = -1;
    int sid = ids[0];
    for (size_t q = 0; q < nsrcs; q++)
      if (sname && !strcmp(sname, json_string_value(json_object_get(json_array_get(srcs, q), "name")) ?: ""))
        sid = ids[q];
    if (sname && nsrcs && sid == ids[0] &&
        strcmp(sname, json_string_value(json_object_get(json_array_get(srcs, 0), "name")) ?: "")) {
      fprintf(stderr, "widen simulate: input %zu: unknown source '%s'\n", i, sname);
      goto done;
    }
    const wd_schema_t *rschema = wd_join_source_schema(jn, sid);
    recs_schema = rschema;
    nrecs = 0;
    for (size_t k = i; k < j && !rerr; k++) {
      json_t *in = json_array_get(input, k);
      wd_row_t *row = wd_row_new(rschema);
      if (!row) {
        err = wd_error_nomem();
        goto fail;
      }
      recs[nrecs++] = row;
      const char *op = json_string_value(json_object_get(in, "op"));
      if (!op || wd_row_kind_parse(op, &row->kind)) {
        rerr = wd_error_new(WD_ERR_RECORD, E_DECODE, "input %zu: op must be +I, -U, +U or -D", k);
        bad = (long)k;
      } else if ((rerr = wd_row_from_json(rschema, json_object_get(in, "row"), row))) {
        rerr = wd_error_wrap(rerr, "input %zu", k);
        row->kind = WD_INSERT;
        bad = (long)k;
      }
    }
    if (!rerr) {
      rerr = wd_join_apply(jn, sid, recs, nrecs, &cl, NULL);
      if (rerr) bad = (long)i + (rerr->index >= 0 ? rerr->index : 0);
    }
    for (size_t k = 0; k < nrecs; k++) wd_row_destroy(rschema, recs[k]);
    nrecs = 0;
    if (rerr) {
      if (rerr->cls != WD_ERR_RECORD && rerr->cls != WD_ERR_DECODE) {
        err = rerr;
        goto fail;
      }
      if (!first_rec_err) {
        first_rec_err = rerr;
        first_rec_index = bad;
      } else {
        wd_error_destroy(rerr);
      }
    }
    if (++messages % batch == 0 && (err = wd_state_flush(state, b))) goto fail;
    i = j;
  }
  if ((err = wd_state_flush(state, b))) goto fail;
  for (size_t i = 0; i < cl.n; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "op", json_string(wd_row_kind_str(cl.rows[i]->kind)));
    json_object_set_new(e, "row", wd_row_to_json(schema, cl.rows[i]));
    json_array_append_new(changelog, e);
  }
  /* final rows: read back from the store, sorted by primary key (the visible ones, with lookups) */
  wd_join_destroy(jn);
  jn = NULL;
  wd_state_destroy(state);
  state = wd_state_new(t, st, 0);
  if (!state) {
    err = wd_error_nomem();
    goto fail;
  }
  if ((err = wd_join_new(t, &jn))) goto fail;
  if ((err = nsrcs ? declare_sources(jn, schema, srcs, ids, state, st) : wd_join_start(jn, state, st))) goto fail;
  if ((err = wd_join_rows_sorted(jn, &rows, &nrows))) goto fail;
  json_t *jrows = json_array();
  for (size_t i = 0; i < nrows; i++) json_array_append_new(jrows, wd_row_to_json(schema, rows[i]));
  json_object_set_new(out, "rows", jrows);
  json_object_set(out, "changelog", changelog);
  json_object_set_new(out, "error", first_rec_err ? error_json("record", first_rec_err, first_rec_index) : json_null());
  rc = 0;
print:
  *result = out;
  out = NULL;
  goto done;
fail:
  fprintf(stderr, "widen simulate: %s\n", err ? err->message : "failed");
  rc = 1;
done:
  if (state) wd_state_rows_free(state, rows, nrows);
  for (size_t k = 0; k < nrecs; k++)
    wd_row_destroy(recs_schema ? recs_schema : t ? wd_table_schema(t) : NULL, recs[k]); /* a failed message */
  wd_join_destroy(jn);
  free(ids);
  free(recs);
  if (t) wd_changelog_free(t, &cl);
  wd_error_destroy(err);
  wd_error_destroy(first_rec_err);
  wd_store_batch_destroy(b);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
  if (made_dir) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "widen simulate: could not remove %s\n", dir);
  }
  json_decref(out);
  json_decref(changelog);
  return rc;
}

/* A case from a pipeline config's table (schema, primary key, options) and a trace file of
 * `widen run --trace` (JSON lines {op, row, message}) as its input; NULL with the reason on stderr. */
static json_t *case_of_trace(const char *config, const char *trace) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(config, &cfg);
  if (err) {
    fprintf(stderr, "widen simulate: %s\n", err->message);
    wd_error_destroy(err);
    return NULL;
  }
  json_t *cs = json_object(), *schema = json_array(), *pk = json_array(), *opts = json_object(), *input = json_array();
  json_object_set_new(cs, "schema", schema);
  json_object_set_new(cs, "primary_key", pk);
  json_object_set_new(cs, "options", opts);
  json_object_set_new(cs, "input", input);
  for (size_t i = 0; i < cfg->table.schema.n; i++)
    json_array_append_new(
        schema, json_pack("{s:s,s:s}", "name", cfg->table.schema.names[i], "type", cfg->table.schema.types[i]));
  for (size_t i = 0; i < cfg->table.primary_key.n; i++)
    json_array_append_new(pk, json_string(cfg->table.primary_key.v[i]));
  for (size_t i = 0; i < cfg->table.options.n; i++)
    json_object_set_new(opts, cfg->table.options.v[i].key, json_string(cfg->table.options.v[i].value));
  wd_config_destroy(cfg);
  FILE *f = fopen(trace, "r");
  if (!f) {
    fprintf(stderr, "widen simulate: %s: cannot open the trace\n", trace);
    json_decref(cs);
    return NULL;
  }
  char *line = NULL;
  size_t cap = 0;
  long lineno = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (len <= 1) continue;
    json_error_t jerr;
    json_t *j = json_loadb(line, (size_t)len, 0, &jerr);
    if (!json_is_object(j) || !json_object_get(j, "op") || !json_object_get(j, "row")) {
      fprintf(stderr, "widen simulate: %s:%ld: not a trace line {\"op\",\"row\",\"message\"}%s%s\n", trace, lineno,
              j ? "" : ": ", j ? "" : jerr.text);
      json_decref(j);
      json_decref(cs);
      free(line);
      fclose(f);
      return NULL;
    }
    json_array_append_new(input, j);
  }
  free(line);
  fclose(f);
  return cs;
}

int wd_cmd_simulate(int argc, char **argv) {
  const char *store_kind = "rocksdb";
  long batch = 1;
  static const struct option longopts[] = {{"store", required_argument, NULL, 's'},
                                           {"batch", required_argument, NULL, 'b'},
                                           {"config", required_argument, NULL, 'c'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *config = NULL;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("simulate", argc, argv, "h", longopts)) != -1) {
    if (ch == 's') store_kind = optarg;
    else if (ch == 'b') batch = strtol(optarg, NULL, 10);
    else if (ch == 'c') config = optarg;
    else if (ch == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 1;
    }
  }
  if (optind != argc - 1 || batch < 1 || (strcmp(store_kind, "rocksdb") && strcmp(store_kind, "memory"))) {
    usage(stderr);
    return 1;
  }
  json_error_t jerr;
  json_t *cs = config ? case_of_trace(config, argv[optind]) : json_load_file(argv[optind], 0, &jerr), *result = NULL;
  if (!cs && config) return 1;
  if (!cs) {
    fprintf(stderr, "widen simulate: %s: %s (line %d)%s\n", argv[optind], jerr.text, jerr.line,
            jerr.line > 1 ? "; a trace of `widen run --trace` (JSON lines) needs --config PIPELINE.yaml" : "");
    return 1;
  }
  int rc = wd_simulate_run(cs, store_kind, batch, &result);
  if (result) {
    char *text = json_dumps(result, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (text) puts(text);
    free(text);
    json_decref(result);
  }
  json_decref(cs);
  return rc;
}
