/*
 * changelog/encode_json.c — debezium-json and changelog-json encoders and the JSON value writer
 * (see changelog.h). Writes straight into a wd_buf_t.
 */
#include <math.h>
#include <string.h>

#include "changelog/changelog.h"
#include "common/text.h"

const char *wd_changelog_format_name(wd_changelog_format_t format) {
  switch (format) {
  case WD_CHANGELOG_DEBEZIUM_JSON: return "debezium-json";
  case WD_CHANGELOG_JSON: return "changelog-json";
  }
  return "?";
}

wd_error_t *wd_changelog_format_parse(const char *text, wd_changelog_format_t *out) {
  if (text && strcmp(text, "debezium-json") == 0) {
    *out = WD_CHANGELOG_DEBEZIUM_JSON;
    return NULL;
  }
  if (text && strcmp(text, "changelog-json") == 0) {
    *out = WD_CHANGELOG_JSON;
    return NULL;
  }
  return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE,
                      "changelog format '%s' is not one of debezium-json, changelog-json", text ? text : "(null)");
}

/* Appends to out as wd_buf_putc / wd_buf_append do (out->data[out->len] stays 0), without a call
 * when out has room. */
static inline int wd_jc(wd_buf_t *out, char c) {
  if (out->len + 2 <= out->cap) {
    out->data[out->len++] = (uint8_t)c;
    out->data[out->len] = 0;
    return 0;
  }
  return wd_buf_putc(out, (uint8_t)c);
}

static inline int wd_jw(wd_buf_t *out, const void *p, size_t n) {
  if (out->len + n + 1 <= out->cap) {
    memcpy(out->data + out->len, p, n);
    out->len += n;
    out->data[out->len] = 0;
    return 0;
  }
  return wd_buf_append(out, p, n);
}

/* A literal: no strlen at run time. */
#define WD_JLIT(out, lit) wd_jw((out), (lit), sizeof(lit) - 1)

/* Whether any of the 8 bytes of w needs a look: < 0x20, '"', '\\' or >= 0x80 (SWAR). */
static inline bool wd_j8_special(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  uint64_t lt20 = (w - ones * 0x20) & ~w; /* high bit where a byte is < 0x20 */
  uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
  uint64_t eq = ((q - ones) & ~q) | ((bs - ones) & ~bs); /* high bit where a byte is '"' or '\\' */
  return ((lt20 | eq | w) & highs) != 0; /* w: bytes >= 0x80 */
}

int wd_changelog_put_string(wd_buf_t *out, const char *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t *s = (const uint8_t *)p;
  if (wd_buf_reserve(out, n + 3)) return -1;
  /* the common case first: nothing to escape (8 bytes at a time, the tail in one word padded
   * with plain bytes), one copy between the quotes */
  size_t i = 0;
  uint64_t w;
  while (n - i >= 8 && (memcpy(&w, s + i, 8), !wd_j8_special(w))) i += 8;
  if (n - i < 8) {
    w = 0x6161616161616161ULL; /* "aaaaaaaa" */
    if (n > i) memcpy(&w, s + i, n - i);
    if (!wd_j8_special(w)) {
      uint8_t *d = out->data + out->len;
      d[0] = '"';
      if (n) memcpy(d + 1, s, n);
      d[n + 1] = '"';
      d[n + 2] = 0;
      out->len += n + 2;
      return 0;
    }
  }
  out->data[out->len++] = '"';
  size_t run = 0; /* start of the pending run of plain bytes (bytes before i are plain) */
  while (i < n) {
    if (n - i >= 8 && (memcpy(&w, s + i, 8), !wd_j8_special(w))) {
      i += 8;
      continue;
    }
    uint8_t c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      i++;
      continue;
    }
    size_t ulen = 0;
    if (c >= 0x80 && (ulen = wd_utf8_decode(s + i, n - i, NULL)) != 0) {
      i += ulen;
      continue;
    }
    if (i > run && wd_jw(out, s + run, i - run)) return -1;
    char esc[8];
    size_t elen = 2;
    esc[0] = '\\';
    switch (c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    default:
      if (c < 0x20) {
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        elen = 6;
      } else { /* an invalid UTF-8 byte: U+FFFD */
        esc[0] = (char)0xef;
        esc[1] = (char)0xbf;
        esc[2] = (char)0xbd;
        elen = 3;
      }
    }
    if (wd_jw(out, esc, elen)) return -1;
    i++;
    run = i;
  }
  /* the run and the closing quote: room was reserved for n + 3 bytes, and escapes grew it */
  if (n > run && wd_jw(out, s + run, n - run)) return -1;
  return wd_jc(out, '"');
}

/* Appends the text of wd_scalar_text (types.h) of a non-NULL fixed-size value, in quotes when
 * quoted, written in place (the same text as wd_value_format's). */
static inline int wd_put_scalar(wd_buf_t *out, const wd_type_t *t, const wd_value_t *v, bool quoted) {
  if (out->cap - out->len < WD_SCALAR_TEXT_MAX + 3 && wd_buf_reserve(out, WD_SCALAR_TEXT_MAX + 3)) return -1;
  char *p = (char *)out->data + out->len;
  if (quoted) *p++ = '"';
  p += wd_scalar_text(t, v, p);
  if (quoted) *p++ = '"';
  *p = 0;
  out->len = (size_t)((uint8_t *)p - out->data);
  return 0;
}

static int wd_put_lit(wd_buf_t *out, const char *s) { return wd_jw(out, s, strlen(s)); }

int wd_changelog_put_value(wd_buf_t *out, const wd_type_t *t, const wd_value_t *v) {
  if (v->is_null) return WD_JLIT(out, "null");
  switch (t->id) {
  case WD_BOOLEAN: return wd_put_lit(out, v->b ? "true" : "false");
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: return wd_put_scalar(out, t, v, false);
  case WD_FLOAT:
  case WD_DOUBLE:
    if (isnan(v->f)) return WD_JLIT(out, "\"NaN\"");
    if (isinf(v->f)) return wd_put_lit(out, v->f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    /* -0 as "-0.0": JSON readers (jansson, Python, Jackson) read "-0" as the integer 0 and lose
     * the sign; "-0.0" is a floating-point -0 to all of them */
    if (v->f == 0 && signbit(v->f)) return WD_JLIT(out, "-0.0");
    return wd_value_format(t, v, out);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: return wd_changelog_put_string(out, v->s.p, v->s.n);
  case WD_DECIMAL:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    /* canonical texts of these types are plain ASCII without '"' or '\' */
    return wd_put_scalar(out, t, v, true);
  case WD_BYTES:
    if (wd_jc(out, '"') || wd_value_format(t, v, out)) return -1;
    return wd_jc(out, '"');
  case WD_ARRAY:
    if (wd_jc(out, '[')) return -1;
    for (size_t i = 0; i < v->list.n; i++) {
      if (i && wd_jc(out, ',')) return -1;
      if (wd_changelog_put_value(out, t->elem, &v->list.v[i])) return -1;
    }
    return wd_jc(out, ']');
  case WD_ROW:
    if (wd_jc(out, '{')) return -1;
    for (size_t i = 0; i < v->list.n && i < t->nfields; i++) {
      if (i && wd_jc(out, ',')) return -1;
      if (wd_changelog_put_string(out, t->fields[i].name, strlen(t->fields[i].name)) || wd_jc(out, ':') ||
          wd_changelog_put_value(out, t->fields[i].type, &v->list.v[i]))
        return -1;
    }
    return wd_jc(out, '}');
  case WD_MAP: {
    wd_buf_t key = {0};
    int rc = wd_jc(out, '{');
    for (size_t i = 0; i < v->map.n && !rc; i++) {
      wd_buf_reset(&key);
      if (i) rc = wd_jc(out, ',');
      const wd_value_t *k = &v->map.k[i];
      if (!rc && !k->is_null && wd_type_is_text(t->elem)) { /* its canonical text is itself: no copy */
        rc = wd_changelog_put_string(out, k->s.n ? k->s.p : "", k->s.n);
      } else {
        if (!rc) rc = wd_value_format(t->elem, k, &key);
        if (!rc) rc = wd_changelog_put_string(out, key.len ? (const char *)key.data : "", key.len);
      }
      if (!rc) rc = wd_jc(out, ':');
      if (!rc) rc = wd_changelog_put_value(out, t->val, &v->map.v[i]);
    }
    if (!rc) rc = wd_jc(out, '}');
    wd_buf_free(&key);
    return rc;
  }
  }
  return -1;
}

/* Appends ',' (when comma) and column i's name as a JSON string and ':'. A plain name
 * (schema->name_plain: nothing to escape) is copied as it is. */
static inline int wd_put_col_key(wd_buf_t *out, const wd_schema_t *schema, size_t i, bool comma) {
  const char *name = schema->cols[i].name;
  size_t n = schema->name_len[i];
  if (!schema->name_plain[i])
    return (comma && wd_jc(out, ',')) || wd_changelog_put_string(out, name, n) || wd_jc(out, ':') ? -1 : 0;
  if (out->cap - out->len < n + 5 && wd_buf_reserve(out, n + 5)) return -1;
  uint8_t *d = out->data + out->len;
  if (comma) *d++ = ',';
  *d++ = '"';
  memcpy(d, name, n);
  d += n;
  *d++ = '"';
  *d++ = ':';
  *d = 0;
  out->len = (size_t)(d - out->data);
  return 0;
}

int wd_changelog_put_row(wd_buf_t *out, const wd_schema_t *schema, const wd_row_t *row) {
  if (wd_jc(out, '{')) return -1;
  for (size_t i = 0; i < schema->ncols; i++) {
    if (wd_put_col_key(out, schema, i, i > 0)) return -1;
    /* the common values here, the rest (and the same bytes) by wd_changelog_put_value */
    const wd_type_t *t = schema->cols[i].type;
    const wd_value_t *v = &row->v[i];
    int rc;
    if (v->is_null) rc = WD_JLIT(out, "null");
    else if (t->id == WD_STRING || t->id == WD_VARCHAR || t->id == WD_CHAR)
      rc = wd_changelog_put_string(out, v->s.p, v->s.n);
    else if (t->id >= WD_TINYINT && t->id <= WD_BIGINT) rc = wd_put_scalar(out, t, v, false);
    else if (t->id == WD_DECIMAL || (t->id >= WD_DATE && t->id <= WD_TIMESTAMP_LTZ))
      rc = wd_put_scalar(out, t, v, true);
    else rc = wd_changelog_put_value(out, t, v);
    if (rc) return -1;
  }
  return wd_jc(out, '}');
}

wd_error_t *wd_changelog_encode_key_json(const wd_schema_t *schema, const wd_row_t *row, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = wd_jc(out, '{');
  for (size_t k = 0; k < schema->npk && !rc; k++) {
    const wd_field_t *c = &schema->cols[schema->pk[k]];
    rc = wd_put_col_key(out, schema, (size_t)schema->pk[k], k > 0);
    if (!rc) rc = wd_changelog_put_value(out, c->type, &row->v[schema->pk[k]]);
  }
  if (!rc) rc = wd_jc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

/* ,"ts_ms":N or null */
static int wd_put_ts(wd_buf_t *out, int64_t ts_ms) {
  static const wd_type_t bigint = {.id = WD_BIGINT};
  if (WD_JLIT(out, "\"ts_ms\":")) return -1;
  if (ts_ms < 0) return WD_JLIT(out, "null");
  wd_value_t v = {.i = ts_ms};
  return wd_put_scalar(out, &bigint, &v, false);
}

wd_error_t *wd_changelog_debezium_op(wd_row_kind_t kind, const wd_row_t **before, const wd_row_t **after,
                                     const char **op) {
  switch (kind) {
  case WD_INSERT:
    if (!*after) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: +I without a row");
    *op = "c";
    *before = NULL;
    return NULL;
  case WD_UPDATE_AFTER:
    if (!*after) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: +U without an after row");
    *op = "u";
    return NULL;
  case WD_DELETE:
    if (!*before) return wd_error_new(WD_ERR_INTERNAL, NONE, "debezium-json: -D without a row");
    *op = "d";
    *after = NULL;
    return NULL;
  default:
    return wd_error_new(WD_ERR_INTERNAL, NONE,
                        "debezium-json: a -U is not a message of its own; pass it as before with its +U");
  }
}

wd_error_t *wd_changelog_encode_debezium_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                              wd_row_kind_t kind, const wd_row_t *before, const wd_row_t *after,
                                              wd_buf_t *out) {
  const char *op;
  wd_error_t *err = wd_changelog_debezium_op(kind, &before, &after, &op);
  if (err) return err;
  size_t mark = out->len;
  int rc = WD_JLIT(out, "{\"before\":");
  if (!rc) rc = before ? wd_changelog_put_row(out, schema, before) : WD_JLIT(out, "null");
  if (!rc) rc = WD_JLIT(out, ",\"after\":");
  if (!rc) rc = after ? wd_changelog_put_row(out, schema, after) : WD_JLIT(out, "null");
  if (!rc) rc = WD_JLIT(out, ",\"op\":\"") || wd_put_lit(out, op) || WD_JLIT(out, "\",");
  if (!rc) rc = wd_put_ts(out, ts_ms);
  if (!rc) rc = WD_JLIT(out, ",\"source\":{\"name\":\"widen\",\"table\":");
  if (!rc) rc = table ? wd_changelog_put_string(out, table, strlen(table)) : WD_JLIT(out, "null");
  if (!rc) rc = WD_JLIT(out, "}}");
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

wd_error_t *wd_changelog_encode_changelog_json(const wd_schema_t *schema, const char *table, int64_t ts_ms,
                                               const wd_row_t *row, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = WD_JLIT(out, "{\"op\":\"") || wd_put_lit(out, wd_row_kind_str(row->kind)) || WD_JLIT(out, "\"");
  if (!rc && table) {
    rc = WD_JLIT(out, ",\"table\":");
    if (!rc) rc = wd_changelog_put_string(out, table, strlen(table));
  }
  if (!rc && ts_ms >= 0) {
    rc = wd_jc(out, ',');
    if (!rc) rc = wd_put_ts(out, ts_ms);
  }
  if (!rc) rc = WD_JLIT(out, ",\"row\":");
  if (!rc) rc = wd_changelog_put_row(out, schema, row);
  if (!rc) rc = wd_jc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

void wd_changelog_pair(wd_row_t *const *rows, size_t n, size_t *i, wd_row_kind_t *kind, const wd_row_t **before,
                       const wd_row_t **after) {
  const wd_row_t *r = rows[*i];
  *before = *after = NULL;
  switch (r->kind) {
  case WD_INSERT:
    *kind = WD_INSERT;
    *after = r;
    break;
  case WD_UPDATE_AFTER:
    *kind = WD_UPDATE_AFTER;
    *after = r;
    break;
  case WD_DELETE:
    *kind = WD_DELETE;
    *before = r;
    break;
  case WD_UPDATE_BEFORE:
    if (*i + 1 < n && rows[*i + 1]->kind == WD_UPDATE_AFTER) {
      *kind = WD_UPDATE_AFTER;
      *before = r;
      *after = rows[*i + 1];
      (*i)++;
    } else {
      *kind = WD_DELETE;
      *before = r;
    }
    break;
  }
  (*i)++;
}
