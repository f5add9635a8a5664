/*
 * tests/fuzz/fuzz_common.c — the wide table and sources the decoder harnesses share (fuzz.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/avro.h"
#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/text.h"
#include "ingest/format.h"
#include "join/merge.h"
#include "join/row_codec.h"
#include "join/state.h"
#include "join/store.h"
#include "tests/fuzz/fuzz.h"

void wd_fuzz_fail(const char *what, const char *message) {
  fprintf(stderr, "fuzz: %s: %s\n", what, message);
  abort();
}

/* column, type, mapping spec (NULL: the column's own name) */
static const char *const COLS[][3] = {
    {"id", "BIGINT NOT NULL", NULL},
    {"name", "STRING", NULL},
    {"description", "VARCHAR(255)", NULL},
    {"weight", "FLOAT", NULL},
    {"price", "DECIMAL(12,2)", NULL},
    {"big", "DECIMAL(38,10)", NULL},
    {"qty", "INT", NULL},
    {"small", "TINYINT", NULL},
    {"short", "SMALLINT", NULL},
    {"ratio", "DOUBLE", NULL},
    {"flag", "BOOLEAN", NULL},
    {"code", "CHAR(3)", NULL},
    {"raw", "BYTES", NULL},
    {"day", "DATE", NULL},
    {"tm", "TIME(3)", NULL},
    {"ts", "TIMESTAMP(3)", NULL},
    {"ts6", "TIMESTAMP(6)", NULL},
    {"ltz", "TIMESTAMP_LTZ(6)", NULL},
    {"tags", "ARRAY<STRING>", NULL},
    {"attrs", "MAP<STRING,BIGINT>", NULL},
    {"point", "ROW<x DOUBLE, y DOUBLE>", NULL},
    {"city", "STRING", "address.city"},
    {"zip", "INT", "address.geo.zip"},
    {"env_ts", "BIGINT", "$.ts"},
    {"src_ts", "TIMESTAMP(3)", "$.source.ts_ms"},
    {"src_db", "STRING", "$.source.db"},
    {"k_id", "BIGINT", "$key.id"},
    {"k_name", "STRING", "$key.payload.name"},
    {"k_ts", "TIMESTAMP(6)", "$key.ts"},
    {"off", "BIGINT", "$kafka.offset"},
    {"topic", "STRING", "$kafka.topic"},
    {"kts", "TIMESTAMP_LTZ(3)", "$kafka.timestamp"},
};
#define NCOLS (sizeof(COLS) / sizeof(COLS[0]))

const wd_schema_t *wd_fuzz_schema(void) {
  static wd_schema_t *schema;
  if (!schema) {
    const char *names[NCOLS], *types[NCOLS];
    for (size_t i = 0; i < NCOLS; i++) {
      names[i] = COLS[i][0];
      types[i] = COLS[i][1];
    }
    const char *pk[] = {"id"};
    wd_error_t *err = wd_schema_new(NCOLS, names, types, 1, pk, &schema);
    if (err) wd_fuzz_fail("schema", err->message);
  }
  return schema;
}

const wd_source_t *wd_fuzz_source(const char *format) {
  static struct {
    const char *format;
    wd_source_t *src;
  } made[8];
  for (size_t i = 0; i < 8 && made[i].format; i++)
    if (!strcmp(made[i].format, format)) return made[i].src;
  const wd_schema_t *s = wd_fuzz_schema();
  wd_source_format_t f;
  wd_source_t *src = NULL;
  wd_error_t *err = wd_source_format_parse(format, &f);
  if (!err) err = wd_source_new("fuzzed", f, &src);
  if (!err) err = wd_source_add_topic(src, "fuzzed");
  for (size_t i = 0; !err && i < NCOLS; i++) err = wd_source_add_column(src, s, COLS[i][0], COLS[i][2]);
  /* a schemaless integer's unit by the column's precision (millis to 3, micros to 6, nanos above), so
   * that the values reach the conversions and the range check rather than C_TEMPORAL_UNIT */
  if (!err) err = wd_source_set_option(src, "timestamp-unit", "precision");
  if (!err) err = wd_source_set_option(src, "time-unit", "precision");
  if (!err) err = wd_source_check(src, s);
  if (err) wd_fuzz_fail(format, err->message);
  for (size_t i = 0; i < 8; i++)
    if (!made[i].format) {
      made[i].format = format;
      made[i].src = src;
      return src;
    }
  wd_fuzz_fail(format, "more than 8 sources");
}

/* Whether a value's texts are valid UTF-8 (the JSON encoders write an invalid byte as U+FFFD, by
 * design: their output is JSON, so such a value does not read back as it was); nested values
 * element by element. */
static bool wd_fuzz_utf8(const wd_type_t *t, const wd_value_t *v) {
  if (v->is_null) return true;
  if (t->id == WD_ARRAY || t->id == WD_ROW) {
    for (size_t i = 0; i < v->list.n; i++)
      if (!wd_fuzz_utf8(t->id == WD_ARRAY ? t->elem : t->fields[i].type, &v->list.v[i])) return false;
    return true;
  }
  if (t->id == WD_MAP) {
    for (size_t i = 0; i < v->map.n; i++)
      if (!wd_fuzz_utf8(t->elem, &v->map.k[i]) || !wd_fuzz_utf8(t->val, &v->map.v[i])) return false;
    return true;
  }
  if (!wd_type_is_text(t)) return true;
  for (size_t i = 0; i < v->s.n;) {
    if ((uint8_t)v->s.p[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = wd_utf8_decode((const uint8_t *)v->s.p + i, v->s.n - i, NULL);
    if (!k) return false;
    i += k;
  }
  return true;
}

/* The row as a decoder's row reads back from an output: absent values are NULL there; with json,
 * a text value that is not valid UTF-8 is not compared (see wd_fuzz_utf8). */
/* The first column where a and b differ, or -1 when they are the same. */
static int wd_fuzz_differs_at(const wd_schema_t *s, const wd_row_t *a, const wd_row_t *b, bool json) {
  for (size_t c = 0; c < s->ncols; c++) {
    bool an = a->v[c].is_null || (a->absent && a->absent[c]);
    bool bn = b->v[c].is_null || (b->absent && b->absent[c]);
    if (an != bn) return (int)c;
    if (json && !an && !wd_fuzz_utf8(s->cols[c].type, &a->v[c])) continue;
    if (!an && !wd_value_eq(s->cols[c].type, &a->v[c], &b->v[c])) return (int)c;
  }
  return -1;
}
static bool wd_fuzz_same_as(const wd_schema_t *s, const wd_row_t *a, const wd_row_t *b, bool json) {
  return wd_fuzz_differs_at(s, a, b, json) < 0;
}
static bool wd_fuzz_same(const wd_schema_t *s, const wd_row_t *a, const wd_row_t *b) {
  return wd_fuzz_same_as(s, a, b, false);
}

/* A copy of r with its absent values NULL (what the merge and the encoders see of them). */
static wd_row_t *wd_fuzz_full(const wd_schema_t *s, const wd_row_t *r) {
  wd_row_t *c = wd_row_copy(s, r);
  if (!c) wd_fuzz_fail("follow", "no memory");
  return c;
}

/* Formats every value of row and encodes it as changelog-json (the sink's path of a merged row). */
static void wd_fuzz_emit(const char *what, const wd_schema_t *s, const wd_row_t *row, wd_buf_t *b) {
  for (size_t c = 0; c < s->ncols; c++) {
    wd_buf_reset(b);
    if (wd_value_format(s->cols[c].type, &row->v[c], b)) wd_fuzz_fail(what, "wd_value_format failed");
  }
  wd_buf_reset(b);
  wd_error_t *e = wd_changelog_encode_changelog_json(s, "fuzzed", 1, row, b);
  if (e) wd_fuzz_fail(what, e->message);
}

static int wd_fuzz_scan_cb(void *ctx, const wd_row_t *row) {
  void **c = ctx;
  wd_fuzz_emit(c[0], c[1], row, c[2]);
  return 0;
}

/* The simulate path of one decoded message: merged (wd_message_apply, twice, so that the second
 * finds the first's rows) into a table of schema s (deduplicate, the default engine) on a memory
 * store; the changelog rows formatted and encoded; the state flushed through the stored-row codec
 * into the store, read back and its rows encoded. A record error is the merge's answer to a record
 * (dead-lettered in a run); any other error aborts. */
static void wd_fuzz_merge(const char *what, const wd_schema_t *s, const wd_changes_t *out) {
  static struct {
    const wd_schema_t *s;
    wd_table_t *t;
  } tables[4];
  wd_table_t *t = NULL;
  for (size_t i = 0; i < 4 && !t; i++) {
    if (!tables[i].s) { /* a table of a copy of s (wd_table_new takes its schema) */
      const char *names[64], *pk[8];
      char *types[64];
      if (s->ncols > 64 || s->npk > 8) wd_fuzz_fail(what, "schema too wide for the merge");
      for (size_t c = 0; c < s->ncols; c++) {
        names[c] = s->cols[c].name;
        types[c] = wd_type_to_string(s->cols[c].type);
      }
      for (size_t k = 0; k < s->npk; k++) pk[k] = s->cols[s->pk[k]].name;
      wd_schema_t *copy = NULL;
      wd_error_t *e = wd_schema_new(s->ncols, names, (const char *const *)types, s->npk, pk, &copy);
      for (size_t c = 0; c < s->ncols; c++) free(types[c]);
      if (!e) e = wd_table_new(copy, 0, NULL, &tables[i].t);
      if (e) wd_fuzz_fail(what, e->message);
      tables[i].s = s;
    }
    if (tables[i].s == s) t = tables[i].t;
  }
  if (!t) wd_fuzz_fail(what, "more than 4 schemas");
  wd_store_t *st = NULL;
  wd_error_t *e = wd_store_open_memory(&st);
  if (e) wd_fuzz_fail(what, e->message);
  wd_state_t *state = wd_state_new(t, st, 0);
  wd_store_batch_t *b = wd_store_batch_new();
  if (!state || !b) wd_fuzz_fail(what, "no memory");
  wd_changelog_t cl = {0};
  wd_buf_t buf = {0};
  for (int pass = 0; pass < 2; pass++) {
    e = wd_message_apply(t, wd_state_ops(), state, out->rows, out->count, &cl, NULL);
    if (e) {
      if (e->cls != WD_ERR_RECORD && e->cls != WD_ERR_DECODE) wd_fuzz_fail(what, e->message);
      wd_error_destroy(e);
    }
    for (size_t i = 0; i < cl.n; i++) wd_fuzz_emit(what, s, cl.rows[i], &buf);
    wd_changelog_reset(t, &cl);
  }
  if ((e = wd_state_flush(state, b)) || (e = wd_store_write(st, b))) wd_fuzz_fail(what, e->message);
  wd_state_destroy(state);
  if (!(state = wd_state_new(t, st, 0))) wd_fuzz_fail(what, "no memory");
  void *ctx[3] = {(void *)what, (void *)s, &buf};
  if ((e = wd_state_scan_rows(state, wd_fuzz_scan_cb, ctx))) wd_fuzz_fail(what, e->message);
  wd_changelog_free(t, &cl);
  wd_buf_free(&buf);
  wd_store_batch_destroy(b);
  wd_state_destroy(state);
  wd_store_close(st);
}

void wd_fuzz_follow(const char *what, const wd_schema_t *s, const wd_changes_t *out) {
  if (out->count) wd_fuzz_merge(what, s, out);
  /* one Avro sink per schema (the harnesses use two tables), made on first use and kept */
  static struct {
    const wd_schema_t *s;
    wd_avro_sink_t *sink;
  } sinks[4];
  wd_avro_sink_t *avro = NULL;
  for (size_t i = 0; i < 4 && !avro; i++) {
    if (!sinks[i].s) {
      wd_error_t *e = wd_avro_sink_new(s, "fuzzed", &sinks[i].sink);
      if (e) wd_fuzz_fail(what, e->message);
      sinks[i].s = s;
    }
    if (sinks[i].s == s) avro = sinks[i].sink;
  }
  if (!avro) wd_fuzz_fail(what, "more than 4 schemas");
  wd_buf_t b = {0};
  char why[128];
  for (size_t i = 0; i < out->count; i++) {
    const wd_row_t *r = out->rows[i];
    wd_row_t *full = wd_fuzz_full(s, r);
    for (size_t c = 0; c < s->ncols; c++) {
      /* every value inside its type's range, and its text defined */
      if (!wd_value_in_range(s->cols[c].type, &r->v[c], why, sizeof(why))) {
        char m[256];
        snprintf(m, sizeof(m), "column '%s' decoded outside its type's range: %s", s->cols[c].name, why);
        wd_fuzz_fail(what, m);
      }
      wd_buf_reset(&b);
      if (wd_value_format(s->cols[c].type, &r->v[c], &b)) wd_fuzz_fail(what, "wd_value_format failed");
    }
    /* the stored row codec: what is written reads back equal */
    wd_buf_reset(&b);
    if (wd_row_encode(s, full, false, 0, &b)) wd_fuzz_fail(what, "wd_row_encode failed");
    wd_row_t *back = NULL;
    bool tomb = false;
    wd_error_t *e = wd_row_decode(s, b.data, b.len, &back, &tomb);
    if (e) wd_fuzz_fail(what, e->message);
    if (!wd_fuzz_same(s, full, back) || back->kind != full->kind) wd_fuzz_fail(what, "stored row round trip differs");
    wd_row_destroy(s, back);
    /* each sink format: changelog-json and debezium-json read back equal; avro encodes */
    wd_buf_reset(&b);
    if ((e = wd_changelog_encode_changelog_json(s, "fuzzed", 1, full, &b))) wd_fuzz_fail(what, e->message);
    wd_row_t *rows[2] = {NULL, NULL};
    size_t n = 0;
    if ((e = wd_changelog_decode_rows(WD_CHANGELOG_JSON, s, b.data, b.len, rows, &n))) {
      char m[512];
      snprintf(m, sizeof(m), "changelog-json output does not read back: %s: %.*s", e->message,
               (int)(b.len > 300 ? 300 : b.len), (const char *)b.data);
      wd_fuzz_fail(what, m);
    }
    if (n != 1 || !wd_fuzz_same_as(s, full, rows[0], true) || rows[0]->kind != full->kind) {
      char m[640];
      int at = n == 1 ? wd_fuzz_differs_at(s, full, rows[0], true) : -1;
      snprintf(m, sizeof(m), "changelog-json round trip differs (column '%s'): %.*s", at >= 0 ? s->cols[at].name : "-",
               (int)(b.len > 400 ? 400 : b.len), (const char *)b.data);
      wd_fuzz_fail(what, m);
    }
    for (size_t k = 0; k < n; k++) wd_row_destroy(s, rows[k]);
    if (full->kind != WD_UPDATE_BEFORE) {
      wd_buf_reset(&b);
      wd_row_kind_t kind = full->kind == WD_INSERT ? WD_INSERT : full->kind == WD_DELETE ? WD_DELETE : WD_UPDATE_AFTER;
      if ((e = wd_changelog_encode_debezium_json(s, "fuzzed", 1, kind, kind == WD_DELETE ? full : NULL,
                                                 kind == WD_DELETE ? NULL : full, &b)))
        wd_fuzz_fail(what, e->message);
      n = 0;
      if ((e = wd_changelog_decode_rows(WD_CHANGELOG_DEBEZIUM_JSON, s, b.data, b.len, rows, &n))) {
        char m[512];
        snprintf(m, sizeof(m), "debezium-json output does not read back: %s", e->message);
        wd_fuzz_fail(what, m);
      }
      if (n != 1 || !wd_fuzz_same_as(s, full, rows[0], true)) {
        char m[512];
        snprintf(m, sizeof(m), "debezium-json round trip differs: %.*s", (int)(b.len > 400 ? 400 : b.len),
                 (const char *)b.data);
        wd_fuzz_fail(what, m);
      }
      for (size_t k = 0; k < n; k++) wd_row_destroy(s, rows[k]);
    }
    wd_buf_reset(&b);
    if ((e = wd_avro_sink_encode_value(avro, full, &b))) wd_fuzz_fail(what, e->message);
    wd_row_destroy(s, full);
  }
  wd_buf_free(&b);
}

void wd_fuzz_check_decode(const char *what, const wd_schema_t *s, wd_error_t *err, const wd_changes_t *out) {
  if (err) {
    if (!err->message || !err->message[0]) wd_fuzz_fail(what, "an error without a message");
    if (err->cls != WD_ERR_NOMEM && !err->id[0]) wd_fuzz_fail(what, err->message);
    if (out->count != 0) wd_fuzz_fail(what, "records left in the container after an error");
    wd_error_destroy(err);
    return;
  }
  for (size_t i = 0; i < out->count; i++) {
    const wd_row_t *r = out->rows[i];
    if (!r || r->n != s->ncols) wd_fuzz_fail(what, "a record that is not full width");
    /* every present primary-key value is set: E_NO_KEY otherwise */
    for (size_t k = 0; k < s->npk; k++)
      if (!(r->absent && r->absent[s->pk[k]]) && r->v[s->pk[k]].is_null)
        wd_fuzz_fail(what, "a record with a NULL primary key");
  }
  wd_fuzz_follow(what, s, out);
}
