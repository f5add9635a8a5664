/*
 * app/ops/fingerprint.c — the table definition, its fingerprint and diff, and the automatic rebuild
 * (see fingerprint.h).
 */
#include "app/ops/fingerprint.h"
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
    json_array_append_new(
        a, json_pack("[s,s]", p->v[i].key, p->v[i].value ? wd_conf_shown(p->v[i].key, p->v[i].value) : ""));
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
    json_t *sj = json_pack("{s:s,s:o,s:s,s:o,s:o}", "name", s->name, "topics", strings_json(&s->topics), "format",
                           wd_source_format_name(s->format), "columns", pairs_json(&s->columns), "options",
                           pairs_json(&s->options));
    if (sj && s->primary_key.n) { /* join/srckey.h: its stored rows are encoded for its key and its columns */
      wd_buf_t kb = {0};
      for (size_t k = 0; k < s->primary_key.n; k++) wd_buf_printf(&kb, "%s%s", k ? "," : "", s->primary_key.v[k]);
      wd_buf_printf(&kb, " (columns");
      for (size_t k = 0; k < s->columns.n; k++) wd_buf_printf(&kb, "%s %s", k ? "," : "", s->columns.v[k].key);
      wd_buf_printf(&kb, ")");
      if (!wd_buf_putc(&kb, 0)) json_object_set_new(sj, "primary-key", json_string((const char *)kb.data));
      wd_buf_free(&kb);
    }
    json_array_append_new(srcs, sj);
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
    if (json_object_get(e, "primary-key"))
      item_add(it, false, json_string_value(json_object_get(e, "primary-key")), "source %s primary-key", name);
    json_array_foreach(json_object_get(e, "columns"), k, f)
        item_add(it, false, json_string_value(json_array_get(f, 1)), "source %s column %s", name,
                 json_string_value(json_array_get(f, 0)));
    json_array_foreach(json_object_get(e, "options"), k, f)
        item_add(it, false, json_string_value(json_array_get(f, 1)), "source %s option %s", name,
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
                  : wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the state's stored table definition does not parse");
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

static int add_definition(const wd_config_t *cfg, wd_store_batch_t *b, bool rebuild_target) {
  wd_buf_t def = {0};
  int rc = -1;
  if (wd_definition_json(cfg, &def)) goto done;
  char fp[32];
  int n = snprintf(fp, sizeof(fp), "%016" PRIx64, wd_definition_fingerprint((const char *)def.data, def.len));
  rc = wd_store_batch_set_meta(b, DEF_KEY, def.data, def.len) ||
       wd_store_batch_set_meta(b, FP_KEY, (const uint8_t *)fp, (size_t)n) ||
       (rebuild_target && wd_store_batch_set_meta(b, WD_REBUILD_FP_KEY, (const uint8_t *)fp, (size_t)n));
done:
  wd_buf_free(&def);
  return rc ? -1 : 0;
}

wd_error_t *wd_definition_record(const wd_config_t *cfg, wd_store_t *st) {
  wd_store_batch_t *b = wd_store_batch_new();
  wd_error_t *err = !b || add_definition(cfg, b, false) ? wd_error_nomem() : wd_store_write(st, b);
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
wd_error_t *wd_definition_table(const char *text, size_t len, wd_table_t **out) {
  json_error_t jerr;
  json_t *j = json_loadb(text, len, 0, &jerr);
  if (!j) return wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the state's stored table definition does not parse");
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

static bool dir_exists(const char *d) {
  struct stat sb;
  return stat(d, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Copies meta `name` of `from` into b (nothing when absent). */
static wd_error_t *copy_meta(wd_store_t *from, const char *name, wd_store_batch_t *b) {
  uint8_t *v = NULL;
  size_t n = 0;
  wd_error_t *err = wd_store_get_meta(from, name, &v, &n);
  if (!err && v && wd_store_batch_set_meta(b, name, v, n)) err = wd_error_nomem();
  free(v);
  return err;
}

/* The earlier definitions of a per-partition rebuild armed over one (old, its state): old's
 * WD_REBUILD_DEFS_KEY with old's own definition (def) added under the fingerprint its switch marks
 * hold, and its rows' base column count; *out a new JSON text (free). */
static wd_error_t *earlier_definitions(wd_store_t *old, const char *def, size_t dlen, char **out) {
  *out = NULL;
  uint8_t *prev = NULL, *fp = NULL, *base = NULL;
  size_t plen = 0, flen = 0, blen = 0;
  wd_error_t *err = NULL;
  json_t *j = NULL;
  if ((err = wd_store_get_meta(old, WD_REBUILD_DEFS_KEY, &prev, &plen)) ||
      (err = wd_store_get_meta(old, WD_REBUILD_FP_KEY, &fp, &flen)) ||
      (!fp && (err = wd_store_get_meta(old, FP_KEY, &fp, &flen))) ||
      (err = wd_store_get_meta(old, "table/base-ncols", &base, &blen)))
    goto done;
  j = prev ? json_loadb((const char *)prev, plen, 0, NULL) : json_object();
  if (!j || !fp) {
    err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the armed rebuild's %s",
                       j ? "fingerprint is missing" : "earlier definitions do not parse");
    goto done;
  }
  char fps[32], bs[32];
  snprintf(fps, sizeof(fps), "%.*s", (int)(flen < 31 ? flen : 31), (const char *)fp);
  snprintf(bs, sizeof(bs), "%.*s", (int)(blen < 31 ? blen : 31), base ? (const char *)base : "0");
  json_t *e = json_pack("{s:s%,s:I}", "definition", def, dlen, "base", (json_int_t)strtoll(bs, NULL, 10));
  if (!e || json_object_set_new(j, fps, e) || !(*out = json_dumps(j, JSON_COMPACT))) err = wd_error_nomem();
done:
  json_decref(j);
  free(prev);
  free(fp);
  free(base);
  return err;
}

/* Arms the rebuild (app/runtime/rebuild.h): a fresh state is made as "<dir>.rebuild"
 * with the new definition, the old one (WD_REBUILD_OLD_DEF_KEY), the old state's instance id (the
 * transactional.id and group.instance.id stay the same), commit number, task layout and base column count, and
 * the completion mark; then the old state becomes "<dir>.before-rebuild" and the fresh one "<dir>".
 * The rebuild itself runs in `widen run`'s poll loop, per owned task. A crash before the first
 * rename leaves the old state (armed again next time); between the renames the switch is completed
 * at the next start. */
static wd_error_t *arm(const wd_config_t *cfg, const char *dir, const char *old_def, size_t old_len) {
  wd_error_t *err = NULL;
  char newdir[4096], olddir[4096];
  snprintf(newdir, sizeof(newdir), "%s.rebuild", dir);
  snprintf(olddir, sizeof(olddir), "%s.before-rebuild", dir);
  wd_store_t *old = NULL, *st = NULL;
  wd_store_batch_t *b = NULL;
  uint8_t *prep = NULL;
  size_t plen = 0;
  uint8_t *first_def = NULL, *first_base = NULL; /* an unfinished single-task rebuild's old definition */
  size_t first_len = 0, first_blen = 0;
  bool unfinished = false;
  char *defs = NULL; /* per-partition: WD_REBUILD_DEFS_KEY of the new state */
  char dropdir[4096];
  snprintf(dropdir, sizeof(dropdir), "%s.unfinished", dir);
  if (cfg->pipeline.processing_guarantee != WD_CONFIG_EXACTLY_ONCE)
    return wd_error_new(WD_ERR_CONFIG, C_STATE_DEFINITION,
                        "state.on-incompatible-change: rebuild runs under pipeline.processing-guarantee: exactly-once "
                        "only (its difference is emitted in a transaction with its switch); set it, or use fail and "
                        "`widen replay` into a fresh directory");
  if ((err = wd_store_open_rocksdb(dir, NULL, &old))) return err;
  if ((err = wd_store_get_meta(old, "commit/prepared", &prep, &plen))) goto done;
  if (prep) {
    err = wd_error_new(WD_ERR_CONFIG, C_STATE_DEFINITION,
                       "the state in %s holds a commit left prepared by a crash: start widen once with the table "
                       "definition it was built with (recovery resolves the commit), then with the new one",
                       dir);
    goto done;
  }
  /* A single task whose rebuild is unfinished (its switch deletes the old definition): its rows are
   * not the table downstream has; the state before that change (at the group's offsets) and its
   * definition stay the old ones, and the unfinished state is dropped. Per-partition tasks keep
   * the old definition after their switches and take their old rows from the state changelog
   * topic: those of a task never switched are still the first old definition's (kept), those of
   * a task switched by the earlier rebuild its definition's (WD_REBUILD_DEFS_KEY, by its mark). */
  if ((err = wd_store_get_meta(old, WD_REBUILD_OLD_DEF_KEY, &first_def, &first_len))) goto done;
  if (first_def && cfg->pipeline.tasks == WD_CONFIG_TASKS_PER_PARTITION) {
    if ((err = wd_store_get_meta(old, WD_REBUILD_OLD_BASE_KEY, &first_base, &first_blen)) ||
        (err = earlier_definitions(old, old_def, old_len, &defs)))
      goto done;
    old_def = (const char *)first_def;
    old_len = first_len;
  } else if (cfg->pipeline.tasks == WD_CONFIG_TASKS_SINGLE) {
    if (first_def && dir_exists(olddir)) {
      unfinished = true;
      old_def = (const char *)first_def;
      old_len = first_len;
      if ((err = wd_store_get_meta(old, WD_REBUILD_OLD_BASE_KEY, &first_base, &first_blen))) goto done;
      wd_log(WD_LOG_WARN, "rebuild",
             "the rebuild to the previous table definition did not finish: the new one is "
             "rebuilt from the state before it (%s), and the unfinished state is dropped",
             olddir);
    }
  }
  if (rm_rf(newdir)) {
    err = wd_error_new(WD_ERR_IO, E_REBUILD, "cannot remove the unfinished rebuild %s: %s", newdir, strerror(errno));
    goto done;
  }
  if ((err = wd_store_open_rocksdb(newdir, NULL, &st))) goto done;
  if (!(b = wd_store_batch_new()) || add_definition(cfg, b, true) ||
      wd_store_batch_set_meta(b, WD_REBUILD_OLD_DEF_KEY, (const uint8_t *)old_def, old_len) ||
      wd_store_batch_set_meta(b, WD_REBUILD_OLD_STATE_KEY, (const uint8_t *)olddir, strlen(olddir)) ||
      wd_store_batch_set_meta(b, REBUILD_DONE_KEY, (const uint8_t *)"1", 1)) {
    err = wd_error_nomem();
    goto done;
  }
  /* the task layout too: the old rows (and the state changelog topic) are split by it, so a start
   * that would split them otherwise still stops with C_TASKS_LAYOUT */
  if ((err = copy_meta(old, "instance/id", b)) || (err = copy_meta(old, COMMIT_NUMBER_KEY, b)) ||
      (err = copy_meta(old, "tasks/layout", b)))
    goto done;
  uint8_t *base = NULL;
  size_t blen = 0;
  if (defs && wd_store_batch_set_meta(b, WD_REBUILD_DEFS_KEY, (const uint8_t *)defs, strlen(defs)))
    err = wd_error_nomem();
  if (old_def == (const char *)first_def) { /* the kept old definition's */
    if (first_base && wd_store_batch_set_meta(b, WD_REBUILD_OLD_BASE_KEY, first_base, first_blen))
      err = wd_error_nomem();
  } else {
    if ((err = wd_store_get_meta(old, "table/base-ncols", &base, &blen))) goto done;
    if (base && wd_store_batch_set_meta(b, WD_REBUILD_OLD_BASE_KEY, base, blen)) err = wd_error_nomem();
    free(base);
  }
  /* a state that was itself the target of a rebuild (per-partition tasks keep the mode): tasks the
   * first rebuild did not switch hold rows of the first old definition (kept above); a state armed
   * before the earlier definitions were kept refuses them (app/runtime/rebuild.c) */
  if (first_def && wd_store_batch_set_meta(b, WD_REBUILD_CHAINED_KEY, (const uint8_t *)"1", 1)) err = wd_error_nomem();
  if (err || (err = wd_store_write_sync(st, b))) goto done;
  wd_store_close(st);
  st = NULL;
  wd_store_close(old);
  old = NULL;
  /* unfinished: the dropped state moves aside first (a crash before the last rename completes it at
   * the next start, wd_definition_prepare) */
  if (unfinished ? rm_rf(dropdir) || rename(dir, dropdir) || rename(newdir, dir)
                 : rm_rf(olddir) || rename(dir, olddir) || rename(newdir, dir)) {
    err = wd_error_new(WD_ERR_IO, E_REBUILD, "switching %s to the fresh state %s (old state kept as %s): %s", dir,
                       newdir, olddir, strerror(errno));
    goto done;
  }
  if (unfinished && rm_rf(dropdir))
    wd_log(WD_LOG_WARN, "rebuild", "cannot remove the dropped unfinished state %s: %s", dropdir, strerror(errno));
  wd_log(WD_LOG_INFO, "rebuild",
         "rebuilding the table from the sources' earliest offsets: per task this process "
         "owns, in the poll loop, into a fresh state in %s (the state before the change is kept in %s); each task "
         "emits only its difference, in the switch commit",
         dir, olddir);
done:
  free(prep);
  free(first_def);
  free(first_base);
  free(defs);
  wd_store_batch_destroy(b);
  wd_store_close(st);
  wd_store_close(old);
  return err;
}

/* ---- the check at start ------------------------------------------------------------------- */

wd_error_t *wd_definition_prepare(const wd_config_t *cfg, const char *dir, bool *rebuilt) {
  return wd_definition_prepare_open(cfg, dir, NULL, rebuilt, NULL);
}

wd_error_t *wd_definition_prepare_open(const wd_config_t *cfg, const char *dir, const wd_store_options_t *so,
                                       bool *rebuilt, wd_store_t **keep) {
  wd_error_t *err = NULL;
  wd_store_t *st = keep ? *keep : NULL;
  if (keep) *keep = NULL;
  uint8_t *have = NULL;
  size_t hlen = 0;
  wd_buf_t now = {0}, msg = {0};
  wd_definition_change_t *ch = NULL;
  size_t nch = 0;
  if (rebuilt) *rebuilt = false;
  if (!dir) dir = cfg->state.dir;
  char newdir[4096];
  snprintf(newdir, sizeof(newdir), "%s.rebuild", dir);
  if (!st && !dir_exists(dir) && dir_exists(newdir)) { /* a crash between the two renames of a rebuild */
    uint8_t *done = NULL;
    size_t dlen = 0;
    if ((err = wd_store_open_rocksdb(newdir, NULL, &st))) return err;
    err = wd_store_get_meta(st, REBUILD_DONE_KEY, &done, &dlen);
    wd_store_close(st);
    st = NULL;
    free(done);
    if (err) return err;
    if (done && rename(newdir, dir))
      return wd_error_new(WD_ERR_IO, E_REBUILD, "completing the rebuild: renaming %s to %s: %s", newdir, dir,
                          strerror(errno));
    if (done) wd_log(WD_LOG_INFO, "rebuild", "completed the interrupted switch to the rebuilt state %s", dir);
  }
  if (!st && (err = wd_store_open_rocksdb(dir, so, &st))) goto done;
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
    err = wd_error_new(WD_ERR_CONFIG, C_STATE_DEFINITION,
                       "the state in %s was built with another table definition, and these changes decide the "
                       "stored rows: %.*s; set state.on-incompatible-change: rebuild to rebuild the table from the "
                       "sources (only the difference is emitted), or point state.dir at a fresh directory",
                       dir, (int)msg.len, msg.len ? (const char *)msg.data : "");
    goto done;
  }
  wd_store_close(st);
  st = NULL;
  if ((err = arm(cfg, dir, (const char *)have, hlen))) goto done;
  if (rebuilt) *rebuilt = true;
  goto done;
nomem:
  err = wd_error_nomem();
done:
  wd_definition_changes_free(ch, nch);
  wd_buf_free(&now);
  wd_buf_free(&msg);
  free(have);
  if (!err && keep && st) { /* the pipeline's from here on (no rebuild armed: that one closed st) */
    *keep = st;
    st = NULL;
  }
  wd_store_close(st);
  return err;
}
