/*
 * changelog/decode_json.c — decoders of widen's JSON output formats (see changelog.h):
 * verbatim tail lines (jsmn, common/jsmn_doc.h: the rows are copied as they are in the message, so numbers keep
 * their text) and typed rows (jansson + wd_row_from_json, the inverse of the encoders).
 */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"
#include "common/jsmn_doc.h"
#include "common/json.h"
#include "common/text.h"

/* ---- a small jsmn document ---------------------------------------------------------------- */

typedef struct wd_cdoc {
  const char *js;
  jsmntok_t *t;
  int n;
} wd_cdoc_t;

/* Tokenises js[0..len) (trimmed) and requires one object spanning it. 0; -1 not a single JSON
 * object; -2 no memory. d->t is malloc'd (free it also after -1). */
static int wd_cdoc_load(wd_cdoc_t *d, const char *js, size_t len) {
  d->js = js;
  d->t = NULL;
  d->n = 0;
  size_t b = 0, e = len;
  while (b < e && wd_json_space(js[b])) b++;
  while (e > b && wd_json_space(js[e - 1])) e--;
  if (b == e || js[b] != '{' || len >= INT_MAX) return -1;
  unsigned cap = 0, pos;
  jsmntok_t *t = NULL;
  int r = wd_jsmn_tokenize(js, len, &t, &cap, &pos);
  d->t = t;
  if (r == WD_JSMN_NOMEM) return -2;
  if (r < 0) return -1;
  d->n = r;
  if (d->n < 1 || d->t[0].type != JSMN_OBJECT || (size_t)d->t[0].end != e) return -1;
  return 0;
}

/* The helpers of common/jsmn_doc.h on document d. */
static int wd_cget(const wd_cdoc_t *d, int i, const char *s) { return wd_jsmn_get(d->js, d->t, d->n, i, s, strlen(s)); }
static bool wd_cis_null(const wd_cdoc_t *d, int i) { return wd_jsmn_is_null(d->js, d->t, i); }
static bool wd_cstr_is(const wd_cdoc_t *d, int i, const char *s) {
  return i >= 0 && wd_jsmn_str_eq(d->js, d->t, i, s, strlen(s));
}

static bool wd_is_tombstone(const void *value, size_t len) {
  const char *js = value;
  if (!js || len == 0) return true;
  size_t b = 0, e = len;
  while (b < e && wd_json_space(js[b])) b++;
  while (e > b && wd_json_space(js[e - 1])) e--;
  return e - b == 4 && memcmp(js + b, "null", 4) == 0;
}

/* E_DECODE for a debezium-json op without the image it needs. */
static wd_error_t *wd_missing_image(const char *op, size_t n) {
  bool del = n == 1 && op[0] == 'd';
  return wd_error_new(WD_ERR_DECODE, E_DECODE, "debezium-json value: op \"%.*s\" without its %s image", (int)n, op,
                      del ? "before" : "after");
}

/* ---- tail ------------------------------------------------------------------------------------ */

/* One line {"op":..,"key":..,"row":..}. */
static int wd_tail_line(wd_buf_t *out, wd_row_kind_t kind, const char *key, size_t keyn, const wd_cdoc_t *d, int row) {
  if (wd_buf_printf(out, "{\"op\":\"%s\",\"key\":", wd_row_kind_str(kind))) return -1;
  if (wd_buf_append(out, key, keyn)) return -1;
  if (wd_buf_append(out, ",\"row\":", 7)) return -1;
  if (wd_buf_append(out, d->js + d->t[row].start, (size_t)(d->t[row].end - d->t[row].start))) return -1;
  return wd_buf_append(out, "}\n", 2);
}

wd_error_t *wd_changelog_decode_tail(wd_changelog_format_t format, const void *key, size_t key_len, const void *value,
                                     size_t len, wd_buf_t *out, size_t *nlines) {
  wd_error_t *err = NULL;
  wd_cdoc_t d = {0}, kd = {0};
  wd_buf_t keytext = {0};
  size_t mark = out->len, lines = 0;
  if (nlines) *nlines = 0;
  if (wd_is_tombstone(value, len)) goto cleanup;
  /* the key: its JSON object text, else a JSON string of its bytes, else null */
  int kr = key && key_len ? wd_cdoc_load(&kd, key, key_len) : -1;
  if (kr == -2) {
    err = wd_error_nomem();
    goto cleanup;
  }
  int rc = 0;
  if (kr == 0) rc = wd_buf_append(&keytext, kd.js + kd.t[0].start, (size_t)(kd.t[0].end - kd.t[0].start));
  else if (key) rc = wd_changelog_put_string(&keytext, key, key_len);
  else rc = wd_buf_append(&keytext, "null", 4);
  if (rc) {
    err = wd_error_nomem();
    goto cleanup;
  }
  int r = wd_cdoc_load(&d, value, len);
  if (r == -2) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if (r == -1) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "%s value: not a JSON object", wd_changelog_format_name(format));
    goto cleanup;
  }
  const char *kt = (const char *)keytext.data;
  int root = 0;
  int op = wd_cget(&d, root, "op");
  if (op < 0 && wd_cget(&d, 0, "payload") >= 0) { /* Kafka Connect envelope */
    root = wd_cget(&d, 0, "payload");
    if (wd_cis_null(&d, root)) goto cleanup;
    op = wd_cget(&d, root, "op");
  }
  if (format == WD_CHANGELOG_JSON) {
    wd_row_kind_t kind;
    int row = wd_cget(&d, root, "row");
    char opbuf[4] = {0};
    if (op >= 0 && d.t[op].type == JSMN_STRING && d.t[op].end - d.t[op].start == 2)
      memcpy(opbuf, d.js + d.t[op].start, 2);
    if (wd_row_kind_parse(opbuf, &kind)) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "changelog-json value: \"op\" is not one of +I, -U, +U, -D");
      goto cleanup;
    }
    if (row < 0 || d.t[row].type != JSMN_OBJECT) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "changelog-json value: \"row\" is missing or not an object");
      goto cleanup;
    }
    if (wd_tail_line(out, kind, kt, keytext.len, &d, row)) err = wd_error_nomem();
    lines = 1;
    goto cleanup;
  }
  int before = wd_cget(&d, root, "before"), after = wd_cget(&d, root, "after");
  if ((!wd_cis_null(&d, before) && d.t[before].type != JSMN_OBJECT) ||
      (!wd_cis_null(&d, after) && d.t[after].type != JSMN_OBJECT)) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "debezium-json value: before/after is neither an object nor null");
    goto cleanup;
  }
  bool hb = !wd_cis_null(&d, before), ha = !wd_cis_null(&d, after);
  bool c = wd_cstr_is(&d, op, "c") || wd_cstr_is(&d, op, "r"), u = wd_cstr_is(&d, op, "u"),
       del = wd_cstr_is(&d, op, "d");
  if (!c && !u && !del) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "debezium-json value: \"op\" is missing or not one of c, r, u, d");
    goto cleanup;
  }
  if ((del && !hb) || (!del && !ha)) {
    err = wd_missing_image(d.js + d.t[op].start, (size_t)(d.t[op].end - d.t[op].start));
    goto cleanup;
  }
  if (c) {
    rc = wd_tail_line(out, WD_INSERT, kt, keytext.len, &d, after);
    lines = 1;
  } else if (u) {
    if (hb) rc = wd_tail_line(out, WD_UPDATE_BEFORE, kt, keytext.len, &d, before);
    if (!rc) rc = wd_tail_line(out, WD_UPDATE_AFTER, kt, keytext.len, &d, after);
    lines = hb ? 2 : 1;
  } else {
    rc = wd_tail_line(out, WD_DELETE, kt, keytext.len, &d, before);
    lines = 1;
  }
  if (rc) err = wd_error_nomem();
cleanup:
  if (err) {
    out->len = mark;
    lines = 0;
  }
  if (nlines) *nlines = lines;
  free(d.t);
  free(kd.t);
  wd_buf_free(&keytext);
  return err;
}

/* ---- typed rows ------------------------------------------------------------------------------ */

/* A Kafka Connect JsonConverter image (sink.schemas-enable: changelog/encode_connect.c) in place
 * into the canonical texts wd_row_from_json reads: Decimal's base64 bytes, Date's days, Time's and
 * Timestamp's milliseconds of the top-level columns. A value not of its Connect form is left as
 * it is (wd_row_from_json then reports the column). Returns 0, or -1 when out of memory. */
static int wd_connect_image_to_canonical(const wd_schema_t *schema, json_t *img) {
  wd_buf_t text = {0};
  int rc = 0;
  for (size_t c = 0; c < schema->ncols && !rc; c++) {
    const wd_type_t *t = schema->cols[c].type;
    json_t *j = json_object_get(img, schema->cols[c].name);
    if (!j || json_is_null(j)) continue;
    wd_value_t v = {.is_null = false};
    if (t->id == WD_DECIMAL && json_is_string(j)) {
      const char *b = json_string_value(j);
      size_t n = json_string_length(j), outn = 0;
      uint8_t raw[64];
      if (n > 60 || wd_base64_decode(b, n, WD_BASE64_STRICT, raw, &outn) || outn == 0 || outn > 16) continue;
      unsigned __int128 u = (raw[0] & 0x80) ? ~(unsigned __int128)0 : 0; /* sign extension */
      for (size_t i = 0; i < outn; i++) u = (u << 8) | raw[i];
      v.dec = (wd_i128)u;
    } else if (t->id == WD_DATE && json_is_integer(j)) {
      v.i = json_integer_value(j);
    } else if (t->id == WD_TIME && json_is_integer(j)) {
      v.i = json_integer_value(j) * 1000000;
    } else if ((t->id == WD_TIMESTAMP || t->id == WD_TIMESTAMP_LTZ) && json_is_integer(j)) {
      v.ts.us = json_integer_value(j) * 1000;
    } else {
      continue;
    }
    wd_buf_reset(&text);
    if (wd_value_format(t, &v, &text) ||
        json_object_set_new(img, schema->cols[c].name, json_stringn((const char *)text.data, text.len)))
      rc = -1;
  }
  wd_buf_free(&text);
  return rc;
}

/* A new row of kind from JSON object j (borrowed); what names the image for messages. */
static wd_error_t *wd_row_of(const wd_schema_t *schema, const json_t *j, wd_row_kind_t kind, const char *what,
                             wd_row_t **out) {
  wd_row_t *row = wd_row_new(schema);
  if (!row) return wd_error_nomem();
  wd_error_t *err = wd_row_from_json(schema, j, row);
  if (err) {
    wd_row_destroy(schema, row);
    if (err == wd_error_nomem()) return err;
    /* keep the id first: "E_TYPE: debezium-json after: column 'x': ..." */
    size_t idlen = err->id[0] ? strlen(err->id) + 2 : 0;
    const char *text = strlen(err->message) >= idlen ? err->message + idlen : err->message;
    wd_error_t *e2 = wd_error_make(err->cls, err->eid, "%s: %s", what, text);
    wd_error_destroy(err);
    return e2;
  }
  row->kind = kind;
  *out = row;
  return NULL;
}

wd_error_t *wd_changelog_decode_rows(wd_changelog_format_t format, const wd_schema_t *schema, const void *value,
                                     size_t len, wd_row_t *rows[2], size_t *n) {
  wd_error_t *err = NULL;
  json_t *root = NULL;
  size_t count = 0;
  rows[0] = rows[1] = NULL;
  *n = 0;
  if (wd_is_tombstone(value, len)) goto cleanup;
  json_error_t jerr;
  root = json_loadb(value, len, JSON_ALLOW_NUL, &jerr);
  if (!root) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "%s value: not JSON (%s at byte %d)", wd_changelog_format_name(format),
                       jerr.text, jerr.position);
    goto cleanup;
  }
  const json_t *obj = root;
  bool connect = false;
  if (!json_object_get(obj, "op") && json_is_object(json_object_get(obj, "payload"))) {
    obj = json_object_get(obj, "payload");
    connect = json_is_object(json_object_get(root, "schema")); /* sink.schemas-enable */
  }
  const char *op = json_string_value(json_object_get(obj, "op"));
  if (format == WD_CHANGELOG_JSON) {
    wd_row_kind_t kind;
    const json_t *row = json_object_get(obj, "row");
    if (!op || wd_row_kind_parse(op, &kind)) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "changelog-json value: \"op\" is not one of +I, -U, +U, -D");
      goto cleanup;
    }
    if (!json_is_object(row)) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "changelog-json value: \"row\" is missing or not an object");
      goto cleanup;
    }
    if ((err = wd_row_of(schema, row, kind, "changelog-json row", &rows[0]))) goto cleanup;
    count = 1;
    goto cleanup;
  }
  const json_t *before = json_object_get(obj, "before"), *after = json_object_get(obj, "after");
  if (json_is_null(before)) before = NULL;
  if (json_is_null(after)) after = NULL;
  if ((before && !json_is_object(before)) || (after && !json_is_object(after))) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "debezium-json value: before/after is neither an object nor null");
    goto cleanup;
  }
  bool c = op && (strcmp(op, "c") == 0 || strcmp(op, "r") == 0), u = op && strcmp(op, "u") == 0,
       del = op && strcmp(op, "d") == 0;
  if (!c && !u && !del) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "debezium-json value: \"op\" is missing or not one of c, r, u, d");
    goto cleanup;
  }
  if (connect && ((before && wd_connect_image_to_canonical(schema, (json_t *)before)) ||
                  (after && wd_connect_image_to_canonical(schema, (json_t *)after)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if ((del && !before) || (!del && !after)) {
    err = wd_missing_image(op, strlen(op));
    goto cleanup;
  }
  if (c) {
    if ((err = wd_row_of(schema, after, WD_INSERT, "debezium-json after", &rows[0]))) goto cleanup;
    count = 1;
  } else if (u) {
    if (before) {
      if ((err = wd_row_of(schema, before, WD_UPDATE_BEFORE, "debezium-json before", &rows[count]))) goto cleanup;
      count++;
    }
    if ((err = wd_row_of(schema, after, WD_UPDATE_AFTER, "debezium-json after", &rows[count]))) goto cleanup;
    count++;
  } else {
    if ((err = wd_row_of(schema, before, WD_DELETE, "debezium-json before", &rows[0]))) goto cleanup;
    count = 1;
  }
cleanup:
  if (err) {
    for (size_t i = 0; i < 2; i++) {
      wd_row_destroy(schema, rows[i]);
      rows[i] = NULL;
    }
    count = 0;
  }
  *n = count;
  json_decref(root);
  return err;
}
