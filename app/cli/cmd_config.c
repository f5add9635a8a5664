/*
 * app/cli/cmd_config.c — `widen config check FILE` (load and validate a pipeline config, build its
 * table and sources, print a summary) and `widen config doc` (print the option reference,
 * configs/OPTIONS.md, generated from the option table of app/config/config.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli/commands.h"
#include "common/error_docs.h"
#include "app/config/config.h"
#include "app/config/interleaving.h"
#include "app/config/join_config.h"
#include "app/config/table_config.h"
#include "ingest/format.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: widen config check FILE...   validate pipeline configs and print a summary of each\n"
          "       widen config doc          print the option reference (configs/OPTIONS.md)\n"
          "       widen config doc --errors print every error id, what it means and what to do (docs/operations.md)\n"
          "\n"
          "WIDEN_BROKERS, when set, replaces kafka.bootstrap.servers.\n"
          "Exit status: 0 valid, 2 the config is refused, 1 usage error.\n");
}

static const char *engine_name(wd_merge_engine_t e) {
  switch (e) {
  case WD_ENGINE_DEDUPLICATE: return "deduplicate";
  case WD_ENGINE_PARTIAL_UPDATE: return "partial-update";
  case WD_ENGINE_AGGREGATION: return "aggregation";
  case WD_ENGINE_FIRST_ROW: return "first-row";
  }
  return "?";
}

/* A duration in its largest exact unit ("7d", "1500ms"). */
static void format_duration(int64_t ms, char *buf, size_t size) {
  static const struct {
    const char *unit;
    int64_t ms;
  } UNITS[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
  for (size_t i = 0; i < sizeof(UNITS) / sizeof(*UNITS); i++)
    if (ms && ms % UNITS[i].ms == 0) {
      snprintf(buf, size, "%lld%s", (long long)(ms / UNITS[i].ms), UNITS[i].unit);
      return;
    }
  snprintf(buf, size, "%lldms", (long long)ms);
}

/* Prints the summary of a valid config and its built table to f. */
static void print_summary(FILE *f, const wd_config_t *cfg, const wd_table_t *t) {
  static const char *const SINK_FMT[] = {"debezium-json", "changelog-json", "avro"};
  static const char *const KEY_FMT[] = {"json", "string", "avro"};
  fprintf(f, "%s: OK\n", cfg->path);
  fprintf(f, "  kafka     %s%s, group %s, %zu extra properties\n", cfg->kafka.bootstrap_servers,
          cfg->brokers_from_env ? " (from WIDEN_BROKERS)" : "", cfg->kafka.group_id, cfg->kafka.properties.n);
  fprintf(f, "  table     %s: %zu columns, primary key (", cfg->table.name, cfg->table.schema.n);
  for (size_t i = 0; i < cfg->table.primary_key.n; i++) fprintf(f, "%s%s", i ? ", " : "", cfg->table.primary_key.v[i]);
  fprintf(f, "), merge-engine %s, %zu options\n", engine_name(wd_table_engine(t)), cfg->table.options.n);
  for (size_t i = 0; i < cfg->sources.n; i++) {
    const wd_config_source_t *src = &cfg->sources.v[i];
    fprintf(f, "  source    %s: ", src->name);
    for (size_t k = 0; k < src->topics.n; k++) fprintf(f, "%s%s", k ? ", " : "", src->topics.v[k]);
    fprintf(f, " (%s), %zu columns:", wd_source_format_name(src->format), src->columns.n);
    for (size_t k = 0; k < src->columns.n; k++) fprintf(f, " %s", src->columns.v[k].key);
    for (size_t k = 0; k < src->primary_key.n; k++) /* docs/source-keys.md */
      fprintf(f, "%s%s", k ? ", " : "; its own primary key (", src->primary_key.v[k]);
    if (src->primary_key.n) fprintf(f, "): deletes, updates and moves derived from its stored rows");
    fprintf(f, "\n");
  }
  fprintf(f, "  sink      %s (%s, key %s%s), dead letters to %s\n", cfg->sink.topic, SINK_FMT[cfg->sink.format],
          KEY_FMT[cfg->sink.key_format], cfg->sink.schemas_enable ? ", Kafka Connect JSON with schemas" : "",
          cfg->sink.dead_letter_topic);
  char kept[32] = "forever";
  if (cfg->state.tombstone_retention_ms >= 0) format_duration(cfg->state.tombstone_retention_ms, kept, sizeof(kept));
  fprintf(f, "  state     %s: tombstones kept %s, cache %lld rows, %lld MiB\n", cfg->state.dir, kept,
          (long long)cfg->state.cache_entries, (long long)cfg->state.cache_memory_mb);
  fprintf(f,
          "  pipeline  %s, commits every %lld ms%s or %lld records, batches of %lld records or %lld ms, %s, status "
          "every %lld s\n",
          cfg->pipeline.processing_guarantee == WD_CONFIG_EXACTLY_ONCE ? "exactly-once (read the output read_committed)"
                                                                       : "at-least-once",
          (long long)cfg->pipeline.commit_interval_ms,
          cfg->pipeline.processing_guarantee == WD_CONFIG_EXACTLY_ONCE &&
                  cfg->pipeline.commit_interval_min_ms < cfg->pipeline.commit_interval_ms
              ? " (less while caught up)"
              : "",
          (long long)cfg->pipeline.commit_max_records, (long long)cfg->pipeline.batch_size,
          (long long)cfg->pipeline.batch_timeout_ms,
          cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION ? "a task per partition" : "one task",
          (long long)cfg->pipeline.status_interval_s);
}

/* `widen config check FILE`: 0 when valid, 2 when refused (the error on stderr). */
static int cmd_check(const char *path) {
  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  char *notes[16] = {0}; /* time units the records must say (wd_format_temporal_note) */
  size_t nnotes = 0;
  wd_error_t *err = wd_config_load(path, &cfg);
  int rc = 2;
  if (!err) err = wd_config_build_table(cfg, &t);
  if (!err) { /* every source, and lookups and required sources checked together (join/lookup.h) */
    wd_source_t **srcs = calloc(cfg->sources.n + 1, sizeof(*srcs));
    int *ids = calloc(cfg->sources.n + 1, sizeof(*ids));
    wd_join_t *join = NULL;
    err = srcs && ids ? wd_config_build_join(cfg, t, srcs, ids, &join) : wd_error_nomem();
    wd_join_destroy(join);
    for (size_t i = 0; !err && srcs && i < cfg->sources.n && nnotes < 16; i++)
      if (srcs[i] && !cfg->sources.v[i].lookup &&
          (notes[nnotes] = wd_format_temporal_note(srcs[i], wd_table_schema(t))))
        nnotes++;
    for (size_t i = 0; srcs && i < cfg->sources.n; i++) wd_source_destroy(srcs[i]);
    free(srcs);
    free(ids);
  }
  if (err) {
    fprintf(stderr, "widen config check: %s\n", err->message);
    goto done;
  }
  print_summary(stdout, cfg, t);
  char **warn = NULL;
  int nw = wd_interleaving_warnings(cfg, &warn);
  for (int i = 0; i < nw; i++) fprintf(stdout, "  warning   %s\n", warn[i]);
  if (nw > 0)
    fprintf(stdout, "  (the rows of this table depend on how its source topics interleave: a replay or another "
                    "process can give other rows; configs/OPTIONS.md lists such options)\n");
  wd_interleaving_free(warn);
  const char **names = calloc(cfg->sources.n + 1, sizeof(*names));
  size_t nn = 0;
  for (size_t i = 0; names && i < cfg->sources.n; i++)
    if (!cfg->sources.v[i].lookup) names[nn++] = cfg->sources.v[i].name;
  char *rw = names ? wd_table_config_retraction_warning(t, cfg->table.name, nn, names) : NULL;
  if (rw) fprintf(stdout, "  warning   %s\n", rw);
  free(rw);
  free(names);
  for (size_t i = 0; i < nnotes; i++) fprintf(stdout, "  note      %s\n", notes[i]);
  rc = 0;
done:
  for (size_t i = 0; i < nnotes; i++) free(notes[i]);
  wd_error_destroy(err);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  return rc;
}

int wd_cmd_config(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
    usage(stdout);
    return 0;
  }
  if (argc >= 3 && !strcmp(argv[1], "check")) { /* one or more files: the worst result */
    int rc = 0;
    for (int i = 2; i < argc; i++) {
      int r = cmd_check(argv[i]);
      if (r > rc) rc = r;
    }
    return rc;
  }
  if (argc == 2 && !strcmp(argv[1], "doc")) return wd_config_write_doc(stdout) ? 1 : 0;
  if (argc == 3 && !strcmp(argv[1], "doc") && !strcmp(argv[2], "--errors")) return wd_error_docs_write(stdout) ? 1 : 0;
  usage(stderr);
  return 1;
}
