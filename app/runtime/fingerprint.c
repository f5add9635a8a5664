/*
 * app/runtime/fingerprint.c — the table definition, its fingerprint and diff, and the automatic rebuild
 * (see fingerprint.h).
 */
#include "app/runtime/fingerprint.h"
#include "common/kafka_conf.h"
#include "common/clock.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "app/ops/history.h"
#include "app/ops/netchange.h"
#include "app/runtime/pipeline.h"
#include "app/config/table_config.h"
#include "changelog/changelog.h"
#include "common/log.h"
#include "join/state.h"
#include "join/store.h"
#include "sink/producer.h"

#define DEF_KEY "table/definition"
#define FP_KEY "table/fingerprint"
#define REBUILD_DONE_KEY "rebuild/complete"
#define COMMIT_NUMBER_KEY "commit/number" /* app/runtime/commit.c's WD_NUMBER_KEY: the last finalized commit */

/* ---- the definition as JSON --------------------------------------------------------------- */

/* The pairs as [key, value] arrays; a secret's value (wd_conf_is_secret: a password in a source's
 * options) is stored as "[hidden]": it never decides the rows, and the state keeps no secret. */
static json_t *pairs_json(const wd_config_pairs_t *p) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < p->n; i++)
    json_array_append_new(a, json_pack("[s,s]", p->v[i].key,
                                       p->v[i].value ? wd_conf_shown(p->v[i].key, p->v[i].value) : ""));
  return a;
}

static json_t *strings_json(const wd_config_strings_t *s) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < s->n; i++) json_array_append_new(a, json_string(s->v[i]));
  return a;
}

static const char *sink_format_name(wd_config_sink_format_t f) {
  return f == WD_CONFIG_SINK_CHANGELOG_JSON ? "changelog-json" : f == WD_CONFIG_SINK_AVRO ? "avro" : "debezium-json";
}

static const char *key_format_name(wd_config_key_format_t f) {
  return f == WD_CONFIG_KEY_STRING ? "string" : f == WD_CONFIG_KEY_AVRO ? "avro" : "json";
}

int wd_definition_json(const wd_config_t *cfg, wd_buf_t *out) {
  json_t *cols = json_array(), *srcs = json_array();
  for (size_t i = 0; cols && i < cfg->table.schema.n; i++)
    json_array_append_new(cols, json_pack("[s,s]", cfg->table.schema.names[i], cfg->table.schema.types[i]));
  for (size_t i = 0; srcs && i < cfg->sources.n; i++) {
    const wd_config_source_t *s = &cfg->sources.v[i];
    json_array_append_new(srcs, json_pack("{s:s,s:o,s:s,s:o,s:o}", "name", s->name, "topics", strings_json(&s->topics),
                                          "format", wd_source_format_name(s->format), "columns",
                                          pairs_json(&s->columns), "options", pairs_json(&s->options)));
  }
  json_t *j = json_pack("{s:o,s:o,s:o,s:o,s:{s:s,s:s,s:s,s:s},s:{s:I,s:I,s:I}}", "columns", cols, "primary-key",
                        strings_json(&cfg->table.primary_key), "options", pairs_json(&cfg->table.options), "sources",
                        srcs, "sink", "topic", cfg->sink.topic, "format", sink_format_name(cfg->sink.format),
                        "key-format", key_format_name(cfg->sink.key_format), "dead-letter-topic",
                        cfg->sink.dead_letter_topic, "pipeline", "batch-size", (json_int_t)cfg->pipeline.batch_size,
                        "batch-timeout-ms", (json_int_t)cfg->pipeline.batch_timeout_ms, "status-interval-s",
                        (json_int_t)cfg->pipeline.status_interval_s);
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(j);
  int rc = s ? wd_buf_append(out, s, strlen(s)) : -1;
  free(s);
  return rc;
}

/* ---- flattening into items ---------------------------------------------------------------- */

typedef struct {
  char *item, *value;
  bool compatible;
} item_t;

typedef struct {
  item_t *v;
  size_t n, cap;
  bool nomem;
} items_t;

static void items_free(items_t *it) {
  for (size_t i = 0; i < it->n; i++) {
    free(it->v[i].item);
    free(it->v[i].value);
  }
  free(it->v);
}

static void item_add(items_t *it, bool compatible, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void item_add(items_t *it, bool compatible, const char *value, const char *fmt, ...) {
  if (it->nomem) return;
  if (it->n == it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 32;
    item_t *v = realloc(it->v, cap * sizeof(*v));
    if (!v) {
      it->nomem = true;
      return;
    }
    it->v = v;
    it->cap = cap;
  }
  char *name = NULL;
  va_list ap;
  va_start(ap, fmt);
  int rc = vasprintf(&name, fmt, ap);
  va_end(ap);
  char *val = strdup(value ? value : "");
  if (rc < 0 || !val) {
    if (rc >= 0) free(name);
    free(val);
    it->nomem = true;
    return;
  }
  it->v[it->n++] = (item_t){name, val, compatible};
}

/* "a,b,c" of a JSON array of strings (or of the first elements of pairs). */
static void join_names(const json_t *a, wd_buf_t *b) {
  size_t i;
  json_t *e;
  json_array_foreach(a, i, e) {
    const json_t *s = json_is_array(e) ? json_array_get(e, 0) : e;
    wd_buf_printf(b, "%s%s", i ? "," : "", json_string_value(s) ? json_string_value(s) : "");
  }
  wd_buf_putc(b, 0);
}

static bool output_only_option(const char *k) { return strncmp(k, "changelog-producer", 18) == 0; }

/* Flattens a definition JSON into items (see fingerprint.h). -1 when it does not parse. */
static int flatten(const char *text, size_t len, items_t *it) {
  json_error_t jerr;
  json_t *j = json_loadb(text, len, 0, &jerr);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    return -1;
  }
  wd_buf_t b = {0};
  size_t i, k;
  json_t *e, *f;
  json_t *cols = json_object_get(j, "columns");
  join_names(cols, &b);
  item_add(it, false, (const char *)b.data, "columns");
  json_array_foreach(cols, i, e) item_add(it, false, json_string_value(json_array_get(e, 1)), "column %s",
                                          json_string_value(json_array_get(e, 0)));
  wd_buf_reset(&b);
  join_names(json_object_get(j, "primary-key"), &b);
  item_add(it, false, (const char *)b.data, "primary-key");
  json_array_foreach(json_object_get(j, "options"), i, e) {
    const char *key = json_string_value(json_array_get(e, 0));
    item_add(it, key && output_only_option(key), json_string_value(json_array_get(e, 1)), "table option %s", key);
  }
  json_array_foreach(json_object_get(j, "sources"), i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    wd_buf_reset(&b);
    join_names(json_object_get(e, "topics"), &b);
    item_add(it, false, (const char *)b.data, "source %s topics", name);
    item_add(it, false, json_string_value(json_object_get(e, "format")), "source %s format", name);
    json_array_foreach(json_object_get(e, "columns"), k, f) item_add(it, false, json_string_value(json_array_get(f, 1)),
                                                                     "source %s column %s", name,
                                                                     json_string_value(json_array_get(f, 0)));
    json_array_foreach(json_object_get(e, "options"), k, f) item_add(it, false, json_string_value(json_array_get(f, 1)),
                                                                     "source %s option %s", name,
                                                                     json_string_value(json_array_get(f, 0)));
  }
  const char *key;
  json_t *sink = json_object_get(j, "sink"), *pipe = json_object_get(j, "pipeline"), *v;
  json_object_foreach(sink, key, v) item_add(it, true, json_string_value(v), "sink.%s", key);
  json_object_foreach(pipe, key, v) {
    char num[32];
    snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    item_add(it, true, num, "pipeline.%s", key);
  }
  wd_buf_free(&b);
  json_decref(j);
  return it->nomem ? -1 : 0;
}

uint64_t wd_definition_fingerprint(const char *json, size_t len) {
  items_t it = {0};
  if (flatten(json, len, &it)) {
    items_free(&it);
    return 0;
  }
  XXH3_state_t *h = XXH3_createState();
  uint64_t fp = 0;
  if (h && XXH3_64bits_reset(h) == XXH_OK) {
    for (size_t i = 0; i < it.n; i++) {
      if (it.v[i].compatible) continue;
      XXH3_64bits_update(h, it.v[i].item, strlen(it.v[i].item));
      XXH3_64bits_update(h, "=", 1);
      XXH3_64bits_update(h, it.v[i].value, strlen(it.v[i].value));
      XXH3_64bits_update(h, "\n", 1);
    }
    fp = XXH3_64bits_digest(h);
  }
  XXH3_freeState(h);
  items_free(&it);
  return fp;
}

void wd_definition_changes_free(wd_definition_change_t *c, size_t n) {
  for (size_t i = 0; c && i < n; i++) {
    free(c[i].item);
    free(c[i].was);
    free(c[i].now);
  }
  free(c);
}

static const item_t *find_item(const items_t *it, const char *name) {
  for (size_t i = 0; i < it->n; i++)
    if (!strcmp(it->v[i].item, name)) return &it->v[i];
  return NULL;
}

static int push_change(wd_definition_change_t **c, size_t *n, const char *item, const char *was, const char *now,
                       bool compatible) {
  wd_definition_change_t *v = realloc(*c, (*n + 1) * sizeof(*v));
  if (!v) return -1;
  *c = v;
  v[*n] = (wd_definition_change_t){strdup(item), was ? strdup(was) : NULL, now ? strdup(now) : NULL, compatible};
  if (!v[*n].item) return -1;
  (*n)++;
  return 0;
}

/* Whether name is one of the comma-separated names in list. */
static bool in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

/* A nullable column appended at the end, filled only by future records, leaves the stored rows
 * as they are (the row codec reads the older, shorter rows with NULL there: row_codec.h): the
 * "columns" change, the new "column <c>" and its new "source <s> column <c>" mappings are then
 * compatible. */
static void mark_appended_columns(const items_t *a, const items_t *b, wd_definition_change_t *c, size_t n) {
  const item_t *was = find_item(a, "columns"), *now = find_item(b, "columns");
  const item_t *pka = find_item(a, "primary-key"), *pkb = find_item(b, "primary-key");
  size_t wl = was ? strlen(was->value) : 0;
  if (!was || !now || !pka || !pkb || strcmp(pka->value, pkb->value) || strncmp(now->value, was->value, wl) ||
      now->value[wl] != ',')
    return;
  const char *added = now->value + wl + 1;
  for (const char *p = added; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    char name[256], item[300];
    size_t len = strcspn(p, ",");
    if (len >= sizeof(name)) return;
    memcpy(name, p, len);
    name[len] = 0;
    snprintf(item, sizeof(item), "column %s", name);
    const item_t *col = find_item(b, item);
    if (!col || strcasestr(col->value, "NOT NULL") || in_list(pkb->value, name)) return;
  }
  for (size_t i = 0; i < n; i++) {
    const char *it = c[i].item;
    if (!strcmp(it, "columns")) {
      c[i].compatible = true;
    } else if (!c[i].was && !strncmp(it, "column ", 7) && in_list(added, it + 7)) {
      c[i].compatible = true;
    } else if (!c[i].was && !strncmp(it, "source ", 7)) {
      const char *col = strstr(it, " column ");
      if (col && in_list(added, col + 8)) c[i].compatible = true;
    }
  }
}

wd_error_t *wd_definition_diff(const char *was, size_t was_len, const char *now, size_t now_len,
                               wd_definition_change_t **changes, size_t *n) {
  items_t a = {0}, b = {0};
  wd_error_t *err = NULL;
  *changes = NULL;
  *n = 0;
  if (flatten(was, was_len, &a)) {
    err = a.nomem ? wd_error_nomem()
                  : wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the state's stored table definition does not parse");
    goto done;
  }
  if (flatten(now, now_len, &b)) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < a.n && !err; i++) {
    const item_t *o = find_item(&b, a.v[i].item);
    if (!o || strcmp(o->value, a.v[i].value))
      if (push_change(changes, n, a.v[i].item, a.v[i].value, o ? o->value : NULL, a.v[i].compatible))
        err = wd_error_nomem();
  }
  for (size_t i = 0; i < b.n && !err; i++)
    if (!find_item(&a, b.v[i].item) && push_change(changes, n, b.v[i].item, NULL, b.v[i].value, b.v[i].compatible))
      err = wd_error_nomem();
  if (!err) mark_appended_columns(&a, &b, *changes, *n);
done:
  if (err) {
    wd_definition_changes_free(*changes, *n);
    *changes = NULL;
    *n = 0;
  }
  items_free(&a);
  items_free(&b);
  return err;
}

/* ---- storing ------------------------------------------------------------------------------ */

static int add_definition(const wd_config_t *cfg, wd_store_batch_t *b) {
  wd_buf_t def = {0};
  int rc = -1;
  if (wd_definition_json(cfg, &def)) goto done;
  char fp[32];
  int n = snprintf(fp, sizeof(fp), "%016" PRIx64, wd_definition_fingerprint((const char *)def.data, def.len));
  rc = wd_store_batch_set_meta(b, DEF_KEY, def.data, def.len) ||
       wd_store_batch_set_meta(b, FP_KEY, (const uint8_t *)fp, (size_t)n);
done:
  wd_buf_free(&def);
  return rc ? -1 : 0;
}

wd_error_t *wd_definition_record(const wd_config_t *cfg, wd_store_t *st) {
  wd_store_batch_t *b = wd_store_batch_new();
  wd_error_t *err = !b || add_definition(cfg, b) ? wd_error_nomem() : wd_store_write(st, b);
  wd_store_batch_destroy(b);
  return err;
}

/* ---- the rebuild -------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static int rm_rf(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) != 0) return errno == ENOENT ? 0 : -1;
  return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The table of a stored definition (columns, primary key, options). */
static wd_error_t *table_of_definition(const char *text, size_t len, wd_table_t **out) {
  json_error_t jerr;
  json_t *j = json_loadb(text, len, 0, &jerr);
  if (!j) return wd_error_new(WD_ERR_IO, "E_STATE_CORRUPT", "the state's stored table definition does not parse");
  json_t *cols = json_object_get(j, "columns"), *pk = json_object_get(j, "primary-key"),
         *opts = json_object_get(j, "options");
  size_t nc = json_array_size(cols), np = json_array_size(pk), no = json_array_size(opts);
  const char **names = calloc(nc + 1, sizeof(char *)), **types = calloc(nc + 1, sizeof(char *)),
             **pks = calloc(np + 1, sizeof(char *));
  wd_option_t *o = calloc(no + 1, sizeof(*o));
  wd_error_t *err = NULL;
  if (!names || !types || !pks || !o) {
    err = wd_error_nomem();
  } else {
    for (size_t i = 0; i < nc; i++) {
      names[i] = json_string_value(json_array_get(json_array_get(cols, i), 0));
      types[i] = json_string_value(json_array_get(json_array_get(cols, i), 1));
    }
    for (size_t i = 0; i < np; i++) pks[i] = json_string_value(json_array_get(pk, i));
    for (size_t i = 0; i < no; i++) {
      o[i].key = json_string_value(json_array_get(json_array_get(opts, i), 0));
      o[i].value = json_string_value(json_array_get(json_array_get(opts, i), 1));
    }
    err = wd_table_config_build(nc, names, types, np, pks, no, o, out);
    if (err) err = wd_error_wrap(err, "the state's stored table definition");
  }
  free(names);
  free(types);
  free(pks);
  free(o);
  json_decref(j);
  return err;
}

/* The rows of the state in dir read with table t, sorted by key (store opened and closed here). */
static wd_error_t *rows_of(const char *dir, const wd_table_t *t, wd_row_t ***rows, size_t *n) {
  wd_store_t *st = NULL;
  wd_state_t *s = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &st);
  if (!err && !(s = wd_state_new(t, st, 0))) err = wd_error_nomem();
  if (!err) err = wd_state_rows_sorted(s, rows, n);
  wd_state_destroy(s);
  wd_store_close(st);
  return err;
}

/* old row (old schema) projected onto the new schema by column name; NULL on no memory. */
static wd_row_t *project(const wd_schema_t *from, const wd_schema_t *to, const wd_row_t *r) {
  wd_row_t *o = wd_row_new(to);
  if (!o) return NULL;
  for (size_t c = 0; c < to->ncols; c++)
    for (size_t k = 0; k < from->ncols; k++)
      if (!strcmp(to->cols[c].name, from->cols[k].name)) {
        char *a = wd_type_to_string(to->cols[c].type), *b = wd_type_to_string(from->cols[k].type);
        bool same = a && b && !strcmp(a, b);
        free(a);
        free(b);
        if (same && wd_value_copy(to->cols[c].type, &o->v[c], &r->v[k])) {
          wd_row_destroy(to, o);
          return NULL;
        }
        break;
      }
  return o;
}

static int cmp_pk(const void *x, const void *y, void *ctx) {
  const wd_schema_t *sc = ctx;
  const wd_row_t *a = *(wd_row_t *const *)x, *b = *(wd_row_t *const *)y;
  for (size_t k = 0; k < sc->npk; k++) {
    int r = wd_value_cmp(sc->cols[sc->pk[k]].type, &a->v[sc->pk[k]], &b->v[sc->pk[k]]);
    if (r) return r;
  }
  return 0;
}

/* The emitter of the difference: the sink's format and key format, one message per row (an
 * -U and its +U are one debezium-json update). */
typedef struct {
  const wd_config_t *cfg;
  const wd_schema_t *schema;
  wd_producer_t *prod;
  wd_buf_t k, v;
  wd_row_t *pending_before; /* debezium-json: the -U waiting for its +U (borrowed) */
  wd_error_t *err;
  size_t rows;
} emitter_t;

static int emit_row(void *ctx, const wd_row_t *row) {
  emitter_t *e = ctx;
  const wd_config_t *cfg = e->cfg;
  e->rows++; /* changelog rows (an -U/+U pair is two, as the pipeline counts them) */
  bool dbz = cfg->sink.format != WD_CONFIG_SINK_CHANGELOG_JSON;
  if (dbz && row->kind == WD_UPDATE_BEFORE) {
    e->pending_before = wd_row_copy(e->schema, row);
    if (!e->pending_before) e->err = wd_error_nomem();
    return e->err != NULL;
  }
  wd_buf_reset(&e->k);
  wd_buf_reset(&e->v);
  int64_t ts = wd_wall_ms();
  if (dbz)
    e->err = wd_changelog_encode_debezium_json(e->schema, cfg->table.name, ts, row->kind,
                                               row->kind == WD_DELETE ? row : e->pending_before,
                                               row->kind == WD_DELETE ? NULL : row, &e->v);
  else
    e->err = wd_changelog_encode_changelog_json(e->schema, cfg->table.name, ts, row, &e->v);
  wd_row_destroy(e->schema, e->pending_before);
  e->pending_before = NULL;
  if (!e->err && cfg->sink.key_format == WD_CONFIG_KEY_STRING) {
    for (size_t k = 0; k < e->schema->npk && !e->err; k++) {
      int c = e->schema->pk[k];
      if ((k && wd_buf_putc(&e->k, ',')) || wd_value_format(e->schema->cols[c].type, &row->v[c], &e->k))
        e->err = wd_error_nomem();
    }
  } else if (!e->err) {
    e->err = wd_changelog_encode_key_json(e->schema, row, &e->k);
  }
  if (!e->err) e->err = wd_producer_send(e->prod, cfg->sink.topic, e->k.data, e->k.len, e->v.data, e->v.len, NULL, 0);
  return e->err != NULL;
}

static bool dir_exists(const char *d) {
  struct stat sb;
  return stat(d, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static wd_error_t *rebuild(const wd_config_t *cfg, const char *dir, const char *old_def, size_t old_len) {
  wd_error_t *err = NULL;
  char newdir[4096], olddir[4096];
  snprintf(newdir, sizeof(newdir), "%s.rebuild", dir);
  snprintf(olddir, sizeof(olddir), "%s.old", dir);
  wd_pipeline_t *p = NULL;
  wd_table_t *old_t = NULL, *new_t = NULL;
  wd_row_t **old_rows = NULL, **new_rows = NULL, **proj = NULL;
  size_t nold = 0, nnew = 0;
  wd_kafka_conf_t kc = {0};
  emitter_t em = {0};
  wd_store_t *st = NULL;
  wd_store_batch_t *b = NULL;
  wd_commit_range_t *in = NULL, *out = NULL;
  size_t nin = 0, nout = 0;
  double t0 = wd_mono_s();
  wd_pipeline_stats_t ps = {0};
  if (rm_rf(newdir)) {
    err = wd_error_new(WD_ERR_IO, "E_REBUILD", "cannot remove the unfinished rebuild %s: %s", newdir, strerror(errno));
    goto done;
  }
  /* 1. the table from the sources' earliest offsets, beside the old state */
  wd_log(WD_LOG_INFO, "rebuild", "rebuilding the table from the sources' earliest offsets into %s", newdir);
  wd_pipeline_opts_t o = {0};
  o.state_dir = newdir;
  o.no_output = true;
  o.replay = true;
  o.from_ms = -1;
  o.quiet = true;
  o.stop_at_state = dir; /* the rebuilt table stands where the old one stood: then the group's
                            committed offsets match both, and later records follow as usual */
  if ((err = wd_pipeline_new(cfg, &o, &p)) || (err = wd_pipeline_run(p))) goto done;
  wd_pipeline_get_stats(p, &ps);
  wd_pipeline_destroy(p);
  p = NULL;
  /* 2. old and new rows, both sorted by the new primary key */
  if ((err = table_of_definition(old_def, old_len, &old_t)) || (err = wd_config_build_table(cfg, &new_t))) goto done;
  if ((err = rows_of(dir, old_t, &old_rows, &nold)) || (err = rows_of(newdir, new_t, &new_rows, &nnew))) goto done;
  const wd_schema_t *os = wd_table_schema(old_t), *ns = wd_table_schema(new_t);
  if (!(proj = calloc(nold ? nold : 1, sizeof(*proj)))) goto nomem;
  for (size_t i = 0; i < nold; i++)
    if (!(proj[i] = project(os, ns, old_rows[i]))) goto nomem;
  if (nold > 1) qsort_r(proj, nold, sizeof(*proj), cmp_pk, (void *)ns);
  /* 3. only the difference to the output topic */
  if ((err = wd_kafka_conf_set_brokers(&kc, cfg->kafka.bootstrap_servers))) goto done;
  for (size_t i = 0; i < cfg->kafka.properties.n && !err; i++) { /* security settings, client.id, ... */
    const char *k = cfg->kafka.properties.v[i].key;
    if (strstr(k, "session.timeout") || strstr(k, "heartbeat") || strstr(k, "group.") || strstr(k, "poll") ||
        strstr(k, "offset") || strstr(k, "fetch") || strstr(k, "isolation") || strstr(k, "partition.assignment") ||
        strstr(k, "transaction"))
      continue; /* consumer and transaction settings: this producer is neither */
    err = wd_kafka_conf_set(&kc, k, cfg->kafka.properties.v[i].value);
  }
  for (size_t i = 0; i < cfg->sink.properties.n && !err; i++)
    err = wd_kafka_conf_set(&kc, cfg->sink.properties.v[i].key, cfg->sink.properties.v[i].value);
  if (!err && cfg->sink.format == WD_CONFIG_SINK_AVRO)
    err = wd_error_new(WD_ERR_CONFIG, "C_STATE_DEFINITION",
                       "state.on-incompatible-change rebuild: the avro sink format is not supported yet (use fail "
                       "and `widen replay`)");
  if (err || (err = wd_producer_new(&kc, &em.prod))) goto done;
  em.cfg = cfg;
  em.schema = ns;
  uint64_t batch = wd_producer_begin_batch(em.prod);
  size_t nd = 0, ni = 0, nu = 0;
  wd_error_t *derr = wd_table_diff(ns, proj, nold, new_rows, nnew, emit_row, &em, &nd, &ni, &nu);
  if (em.err) {
    wd_error_destroy(derr);
    err = em.err;
    em.err = NULL;
    goto done;
  }
  if ((err = derr) || (err = wd_producer_wait_batch(em.prod, batch, 120000))) goto done;
  wd_log(WD_LOG_INFO, "rebuild", "old table %zu rows, rebuilt table %zu rows: emitted the difference to %s: %zu -D, "
         "%zu +I, %zu -U/+U", nold, nnew, cfg->sink.topic, nd, ni, nu);
  /* 4. the rebuild's commit in the new state's history, its definition, and the completion mark */
  if ((err = wd_store_open_rocksdb(newdir, NULL, &st))) goto done;
  uint64_t last = 0;
  if ((err = wd_history_last(st, &last))) goto done;
  for (uint64_t n = 1; n <= last; n++) { /* input: the union of the replay's commits */
    wd_history_entry_t *e = NULL;
    if ((err = wd_history_get(st, n, &e))) goto done;
    for (size_t i = 0; e && i < e->info.nin; i++) {
      size_t k = 0;
      while (k < nin && !(in[k].partition == e->info.in[i].partition && !strcmp(in[k].topic, e->info.in[i].topic)))
        k++;
      if (k == nin) {
        wd_commit_range_t *r = realloc(in, (nin + 1) * sizeof(*r));
        char *t = strdup(e->info.in[i].topic);
        if (!r || !t) {
          free(t);
          if (r) in = r;
          wd_history_entry_free(e);
          goto nomem;
        }
        in = r;
        in[nin++] = (wd_commit_range_t){t, e->info.in[i].partition, e->info.in[i].from, e->info.in[i].to};
      } else {
        if (e->info.in[i].from < in[k].from) in[k].from = e->info.in[i].from;
        if (e->info.in[i].to > in[k].to) in[k].to = e->info.in[i].to;
      }
    }
    wd_history_entry_free(e);
  }
  const wd_producer_range_t *pr = NULL;
  size_t npr = wd_producer_offsets(em.prod, &pr); /* everything this producer delivered: the difference */
  if (!(out = calloc(npr ? npr : 1, sizeof(*out)))) goto nomem;
  for (size_t i = 0; i < npr; i++) out[nout++] = (wd_commit_range_t){pr[i].topic, pr[i].partition, pr[i].first, pr[i].end};
  char numtext[32]; /* the commit coordinator numbers on from here (app/runtime/commit.c "commit/number") */
  int numlen = snprintf(numtext, sizeof(numtext), "%" PRIu64, last + 1);
  wd_commit_info_t ci = {last + 1, wd_wall_ms(), "rebuild", in, nin, out, nout,
                         ps.records_in, em.rows, ps.dead_lettered, (wd_mono_s() - t0) * 1000.0};
  if (!(b = wd_store_batch_new()) || wd_history_add(b, &ci, (size_t)cfg->state.history_size) ||
      add_definition(cfg, b) || wd_store_batch_set_meta(b, REBUILD_DONE_KEY, (const uint8_t *)"1", 1) ||
      wd_store_batch_set_meta(b, COMMIT_NUMBER_KEY, (const uint8_t *)numtext, (size_t)numlen))
    goto nomem;
  if ((err = wd_store_write(st, b))) goto done;
  wd_store_close(st);
  st = NULL;
  /* 5. switch the directories */
  if (rm_rf(olddir) || rename(dir, olddir) || rename(newdir, dir)) {
    err = wd_error_new(WD_ERR_IO, "E_REBUILD", "switching %s to the rebuilt state %s (old state kept as %s): %s", dir,
                       newdir, olddir, strerror(errno));
    goto done;
  }
  wd_log(WD_LOG_INFO, "rebuild", "state %s is the rebuilt table now (the old state is kept in %s)", dir, olddir);
  goto done;
nomem:
  err = wd_error_nomem();
done:
  wd_pipeline_destroy(p);
  wd_store_batch_destroy(b);
  wd_store_close(st);
  for (size_t i = 0; i < nin; i++) free((char *)in[i].topic);
  free(in);
  free(out);
  if (new_t) wd_row_destroy(wd_table_schema(new_t), em.pending_before);
  if (em.prod) {
    wd_error_destroy(wd_producer_flush(em.prod, 10000));
    wd_producer_destroy(em.prod);
  }
  wd_buf_free(&em.k);
  wd_buf_free(&em.v);
  wd_kafka_conf_clear(&kc);
  if (proj && new_t)
    for (size_t i = 0; i < nold; i++) wd_row_destroy(wd_table_schema(new_t), proj[i]);
  free(proj);
  if (old_t) for (size_t i = 0; i < nold; i++) wd_row_destroy(wd_table_schema(old_t), old_rows[i]);
  free(old_rows);
  if (new_t) for (size_t i = 0; i < nnew; i++) wd_row_destroy(wd_table_schema(new_t), new_rows[i]);
  free(new_rows);
  wd_table_destroy(old_t);
  wd_table_destroy(new_t);
  return err;
}

/* ---- the check at start ------------------------------------------------------------------- */

wd_error_t *wd_definition_prepare(const wd_config_t *cfg, const char *dir, bool *rebuilt) {
  wd_error_t *err = NULL;
  wd_store_t *st = NULL;
  uint8_t *have = NULL;
  size_t hlen = 0;
  wd_buf_t now = {0}, msg = {0};
  wd_definition_change_t *ch = NULL;
  size_t nch = 0;
  if (rebuilt) *rebuilt = false;
  if (!dir) dir = cfg->state.dir;
  char newdir[4096];
  snprintf(newdir, sizeof(newdir), "%s.rebuild", dir);
  if (!dir_exists(dir) && dir_exists(newdir)) { /* a crash between the two renames of a rebuild */
    uint8_t *done = NULL;
    size_t dlen = 0;
    if ((err = wd_store_open_rocksdb(newdir, NULL, &st))) return err;
    err = wd_store_get_meta(st, REBUILD_DONE_KEY, &done, &dlen);
    wd_store_close(st);
    st = NULL;
    free(done);
    if (err) return err;
    if (done && rename(newdir, dir))
      return wd_error_new(WD_ERR_IO, "E_REBUILD", "completing the rebuild: renaming %s to %s: %s", newdir, dir,
                          strerror(errno));
    if (done) wd_log(WD_LOG_INFO, "rebuild", "completed the interrupted switch to the rebuilt state %s", dir);
  }
  if ((err = wd_store_open_rocksdb(dir, NULL, &st))) goto done;
  if ((err = wd_store_get_meta(st, DEF_KEY, &have, &hlen))) goto done;
  if (wd_definition_json(cfg, &now)) goto nomem;
  if (!have) { /* a new state, or one from before fingerprints: record the definition */
    err = wd_definition_record(cfg, st);
    goto done;
  }
  if ((err = wd_definition_diff((const char *)have, hlen, (const char *)now.data, now.len, &ch, &nch))) goto done;
  if (!nch) goto done;
  bool incompatible = false;
  for (size_t i = 0; i < nch; i++) {
    incompatible |= !ch[i].compatible;
    wd_log(ch[i].compatible ? WD_LOG_INFO : WD_LOG_WARN, "state", "%s definition change: %s: %s -> %s",
           ch[i].compatible ? "compatible" : "incompatible", ch[i].item, ch[i].was ? ch[i].was : "(absent)",
           ch[i].now ? ch[i].now : "(absent)");
    if (!ch[i].compatible)
      wd_buf_printf(&msg, "%s%s: %s -> %s", msg.len ? "; " : "", ch[i].item, ch[i].was ? ch[i].was : "(absent)",
                    ch[i].now ? ch[i].now : "(absent)");
  }
  if (!incompatible) {
    err = wd_definition_record(cfg, st);
    goto done;
  }
  if (cfg->state.on_incompatible_change == WD_CONFIG_INCOMPATIBLE_FAIL) {
    err = wd_error_new(WD_ERR_CONFIG, "C_STATE_DEFINITION",
                       "the state in %s was built with another table definition, and these changes decide the "
                       "stored rows: %.*s; set state.on-incompatible-change: rebuild to rebuild the table from the "
                       "sources (only the difference is emitted), or point state.dir at a fresh directory",
                       dir, (int)msg.len, msg.len ? (const char *)msg.data : "");
    goto done;
  }
  wd_store_close(st);
  st = NULL;
  if ((err = rebuild(cfg, dir, (const char *)have, hlen))) goto done;
  if (rebuilt) *rebuilt = true;
  goto done;
nomem:
  err = wd_error_nomem();
done:
  wd_definition_changes_free(ch, nch);
  wd_buf_free(&now);
  wd_buf_free(&msg);
  free(have);
  wd_store_close(st);
  return err;
}
