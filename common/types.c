/*
 * common/types.c — SQL types, typed values, schemas and rows (see types.h).
 *
 * Everything here is a pure function of its arguments: any thread may call it, provided two
 * threads do not modify the same value, row or schema at the same time.
 */
#include "common/types.h"
#include "common/hash.h"
#include "common/text.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WD_TYPE_MAX_DEPTH 64

/* ===================================================================================== */
/* Type parsing                                                                            */
/* ===================================================================================== */

/* Parser state: the text, the position and the first error seen. */
typedef struct wd_tparser {
  const char *text;
  size_t pos;
  wd_error_t *err;
} wd_tparser_t;

static void wd_tp_skip_ws(wd_tparser_t *tp) {
  while (tp->text[tp->pos] && isspace((unsigned char)tp->text[tp->pos])) tp->pos++;
}

static bool wd_tp_is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool wd_tp_is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$'; }

/* Sets the parser's error (only the first one is kept). */
static void wd_tp_fail(wd_tparser_t *tp, wd_eid_t eid, const char *what) {
  if (tp->err) return;
  tp->err =
      wd_error_make(WD_ERR_CONFIG, eid, "%s in type '%s' at offset %zu%s", what, tp->text, tp->pos,
                    strcmp(what, "unknown type")
                        ? ""
                        : "; the types are BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), "
                          "CHAR(n), VARCHAR(n), STRING, BYTES, BINARY(n), VARBINARY(n), DATE, TIME(p), TIMESTAMP(p), "
                          "TIMESTAMP(p) WITH LOCAL TIME ZONE (or TIMESTAMP_LTZ(p)), ARRAY<T>, MAP<K,V>, "
                          "ROW<name T, ...>, each optionally followed by NOT NULL");
}

/* Consumes keyword kw (case-insensitive, whole word) if it is next. */
static bool wd_tp_keyword(wd_tparser_t *tp, const char *kw) {
  wd_tp_skip_ws(tp);
  size_t n = strlen(kw);
  if (strncasecmp(tp->text + tp->pos, kw, n) != 0) return false;
  if (wd_tp_is_ident_char(tp->text[tp->pos + n])) return false;
  tp->pos += n;
  return true;
}

/* Consumes the punctuation character c if it is next. */
static bool wd_tp_punct(wd_tparser_t *tp, char c) {
  wd_tp_skip_ws(tp);
  if (tp->text[tp->pos] != c) return false;
  tp->pos++;
  return true;
}

/* Reads a non-negative decimal integer (at most 10 digits). -1 if there is none. */
static long wd_tp_number(wd_tparser_t *tp) {
  wd_tp_skip_ws(tp);
  const char *s = tp->text + tp->pos;
  if (!isdigit((unsigned char)*s)) return -1;
  long v = 0;
  size_t n = 0;
  while (isdigit((unsigned char)s[n])) {
    if (n >= 10) return -1;
    v = v * 10 + (s[n] - '0');
    n++;
  }
  tp->pos += n;
  return v;
}

/*
 * Reads an optional "(n)" or "(n, m)" argument list. Returns the number of arguments read
 * (0 when there is no parenthesis), -1 on a syntax error (error set).
 */
static int wd_tp_args(wd_tparser_t *tp, long *a, long *b, int max_args) {
  if (!wd_tp_punct(tp, '(')) return 0;
  int nargs = 0;
  const char *why = "bad type arguments: expected a number";
  *a = wd_tp_number(tp);
  if (*a < 0) goto bad;
  nargs = 1;
  if (max_args > 1 && wd_tp_punct(tp, ',')) {
    *b = wd_tp_number(tp);
    if (*b < 0) goto bad;
    nargs = 2;
  }
  why = max_args > 1 && nargs == 1 ? "bad type arguments: expected ',' or ')'" : "bad type arguments: expected ')'";
  if (!wd_tp_punct(tp, ')')) goto bad;
  return nargs;
bad:
  wd_tp_fail(tp, WD_EID_C_BAD_TYPE, why);
  return -1;
}

/* Reads a field name: an identifier or a `back-quoted` name. Returns a new string or NULL. */
static char *wd_tp_field_name(wd_tparser_t *tp) {
  wd_tp_skip_ws(tp);
  const char *s = tp->text + tp->pos;
  char *name = NULL;
  if (*s == '`') {
    size_t n = 1;
    while (s[n] && s[n] != '`') n++;
    if (s[n] != '`' || n == 1) goto bad;
    name = strndup(s + 1, n - 1);
    tp->pos += n + 1;
  } else if (wd_tp_is_ident_start(*s)) {
    size_t n = 1;
    while (wd_tp_is_ident_char(s[n])) n++;
    name = strndup(s, n);
    tp->pos += n;
  } else {
    goto bad;
  }
  if (!name) tp->err = tp->err ? tp->err : wd_error_nomem();
  return name;
bad:
  wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected a field name");
  return NULL;
}

static wd_type_t *wd_tp_type(wd_tparser_t *tp, int depth);

/* Parses the fields of a ROW after its opening bracket, up to and including close. */
static bool wd_tp_row_fields(wd_tparser_t *tp, wd_type_t *t, char close, int depth) {
  size_t cap = 0;
  if (wd_tp_punct(tp, close)) {
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "a ROW needs at least one field");
    return false;
  }
  for (;;) {
    if (t->nfields == cap) {
      size_t ncap = cap ? cap * 2 : 4;
      wd_field_t *nf = realloc(t->fields, ncap * sizeof(*nf));
      if (!nf) {
        tp->err = tp->err ? tp->err : wd_error_nomem();
        return false;
      }
      t->fields = nf;
      cap = ncap;
    }
    wd_field_t *f = &t->fields[t->nfields];
    f->name = wd_tp_field_name(tp);
    f->type = NULL;
    if (!f->name) return false;
    t->nfields++;
    for (size_t i = 0; i + 1 < t->nfields; i++) {
      if (strcmp(t->fields[i].name, f->name) == 0) {
        wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "duplicate ROW field name");
        return false;
      }
    }
    f->type = wd_tp_type(tp, depth + 1);
    if (!f->type) return false;
    if (wd_tp_punct(tp, ',')) continue;
    if (wd_tp_punct(tp, close)) return true;
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected ',' or the end of the ROW");
    return false;
  }
}

/*
 * Parses one type (with its optional NOT NULL / NULL suffix) at the parser's position.
 * Returns a new type, or NULL with tp->err set.
 */
static wd_type_t *wd_tp_type(wd_tparser_t *tp, int depth) {
  wd_type_t *t = NULL;
  long a = 0, b = 0;
  int nargs = 0;
  if (depth > WD_TYPE_MAX_DEPTH) {
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "type nested too deeply");
    goto fail;
  }
  t = calloc(1, sizeof(*t));
  if (!t) {
    tp->err = tp->err ? tp->err : wd_error_nomem();
    goto fail;
  }
  t->length = -1;
  if (wd_tp_keyword(tp, "BOOLEAN") || wd_tp_keyword(tp, "BOOL")) {
    t->id = WD_BOOLEAN;
  } else if (wd_tp_keyword(tp, "TINYINT")) {
    t->id = WD_TINYINT;
  } else if (wd_tp_keyword(tp, "SMALLINT")) {
    t->id = WD_SMALLINT;
  } else if (wd_tp_keyword(tp, "INT") || wd_tp_keyword(tp, "INTEGER")) {
    t->id = WD_INT;
  } else if (wd_tp_keyword(tp, "BIGINT")) {
    t->id = WD_BIGINT;
  } else if (wd_tp_keyword(tp, "FLOAT")) {
    t->id = WD_FLOAT;
  } else if (wd_tp_keyword(tp, "DOUBLE")) {
    t->id = WD_DOUBLE;
    (void)wd_tp_keyword(tp, "PRECISION");
  } else if (wd_tp_keyword(tp, "DECIMAL") || wd_tp_keyword(tp, "NUMERIC") || wd_tp_keyword(tp, "DEC")) {
    t->id = WD_DECIMAL;
    nargs = wd_tp_args(tp, &a, &b, 2);
    if (nargs < 0) goto fail;
    t->precision = nargs >= 1 ? (int)a : 10;
    t->scale = nargs >= 2 ? (int)b : 0;
    if (nargs >= 1 && (a < 1 || a > 38 || b > a)) {
      wd_tp_fail(tp, WD_EID_C_DECIMAL_PRECISION, "DECIMAL precision must be 1..38 and scale 0..precision");
      goto fail;
    }
  } else if (wd_tp_keyword(tp, "CHAR") || wd_tp_keyword(tp, "CHARACTER")) {
    t->id = WD_CHAR;
    nargs = wd_tp_args(tp, &a, &b, 1);
    if (nargs < 0) goto fail;
    t->length = nargs ? (int)a : 1;
  } else if (wd_tp_keyword(tp, "VARCHAR")) {
    t->id = WD_VARCHAR;
    nargs = wd_tp_args(tp, &a, &b, 1);
    if (nargs < 0) goto fail;
    t->length = nargs ? (int)a : 1;
  } else if (wd_tp_keyword(tp, "STRING")) {
    t->id = WD_STRING;
  } else if (wd_tp_keyword(tp, "BYTES")) {
    t->id = WD_BYTES;
  } else if (wd_tp_keyword(tp, "BINARY") || wd_tp_keyword(tp, "VARBINARY")) {
    t->id = WD_BYTES; /* no fixed-length binary type here: kept as BYTES */
    if (wd_tp_args(tp, &a, &b, 1) < 0) goto fail;
  } else if (wd_tp_keyword(tp, "DATE")) {
    t->id = WD_DATE;
  } else if (wd_tp_keyword(tp, "TIMESTAMP_LTZ")) {
    t->id = WD_TIMESTAMP_LTZ;
    nargs = wd_tp_args(tp, &a, &b, 1);
    if (nargs < 0) goto fail;
    t->precision = nargs ? (int)a : 6;
  } else if (wd_tp_keyword(tp, "TIMESTAMP")) {
    t->id = WD_TIMESTAMP;
    nargs = wd_tp_args(tp, &a, &b, 1);
    if (nargs < 0) goto fail;
    t->precision = nargs ? (int)a : 6;
    size_t save = tp->pos;
    if (wd_tp_keyword(tp, "WITH")) {
      if (!wd_tp_keyword(tp, "LOCAL") || !wd_tp_keyword(tp, "TIME") || !wd_tp_keyword(tp, "ZONE")) {
        wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected WITH LOCAL TIME ZONE");
        goto fail;
      }
      t->id = WD_TIMESTAMP_LTZ;
    } else if (wd_tp_keyword(tp, "WITHOUT")) {
      if (!wd_tp_keyword(tp, "TIME") || !wd_tp_keyword(tp, "ZONE")) {
        wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected WITHOUT TIME ZONE");
        goto fail;
      }
    } else {
      tp->pos = save;
    }
  } else if (wd_tp_keyword(tp, "TIME")) {
    t->id = WD_TIME;
    nargs = wd_tp_args(tp, &a, &b, 1);
    if (nargs < 0) goto fail;
    t->precision = nargs ? (int)a : 0;
    size_t save = tp->pos;
    if (wd_tp_keyword(tp, "WITHOUT")) {
      if (!wd_tp_keyword(tp, "TIME") || !wd_tp_keyword(tp, "ZONE")) {
        wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected WITHOUT TIME ZONE");
        goto fail;
      }
    } else {
      tp->pos = save;
    }
  } else if (wd_tp_keyword(tp, "ARRAY")) {
    t->id = WD_ARRAY;
    if (!wd_tp_punct(tp, '<')) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected '<' after ARRAY");
      goto fail;
    }
    t->elem = wd_tp_type(tp, depth + 1);
    if (!t->elem) goto fail;
    if (!wd_tp_punct(tp, '>')) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected '>' closing ARRAY");
      goto fail;
    }
  } else if (wd_tp_keyword(tp, "MAP")) {
    t->id = WD_MAP;
    if (!wd_tp_punct(tp, '<')) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected '<' after MAP");
      goto fail;
    }
    t->elem = wd_tp_type(tp, depth + 1);
    if (!t->elem) goto fail;
    if (!wd_tp_punct(tp, ',')) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected ',' in MAP");
      goto fail;
    }
    t->val = wd_tp_type(tp, depth + 1);
    if (!t->val) goto fail;
    if (!wd_tp_punct(tp, '>')) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected '>' closing MAP");
      goto fail;
    }
  } else if (wd_tp_keyword(tp, "ROW")) {
    t->id = WD_ROW;
    char close;
    if (wd_tp_punct(tp, '<')) {
      close = '>';
    } else if (wd_tp_punct(tp, '(')) {
      close = ')';
    } else {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected '<' after ROW");
      goto fail;
    }
    if (!wd_tp_row_fields(tp, t, close, depth)) goto fail;
  } else {
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "unknown type");
    goto fail;
  }

  if ((t->id == WD_CHAR || t->id == WD_VARCHAR) && t->length < 1) {
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "length must be at least 1");
    goto fail;
  }
  if ((t->id == WD_TIME || t->id == WD_TIMESTAMP || t->id == WD_TIMESTAMP_LTZ) &&
      (t->precision < 0 || t->precision > 9)) {
    wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "fraction precision must be 0..9");
    goto fail;
  }
  if (wd_tp_keyword(tp, "NOT")) {
    if (!wd_tp_keyword(tp, "NULL")) {
      wd_tp_fail(tp, WD_EID_C_BAD_TYPE, "expected NULL after NOT");
      goto fail;
    }
    t->not_null = true;
  } else {
    (void)wd_tp_keyword(tp, "NULL");
  }
  return t;
fail:
  wd_type_destroy(t);
  return NULL;
}

wd_error_t *wd_type_parse(const char *text, wd_type_t **out) {
  wd_tparser_t tp = {text ? text : "", 0, NULL};
  wd_type_t *t = wd_tp_type(&tp, 0);
  if (t) {
    wd_tp_skip_ws(&tp);
    if (tp.text[tp.pos] != '\0') wd_tp_fail(&tp, WD_EID_C_BAD_TYPE, "unexpected text after the type");
  }
  if (tp.err) {
    wd_type_destroy(t);
    *out = NULL;
    return tp.err;
  }
  *out = t;
  return NULL;
}

/* Deep copy of a type; NULL on allocation failure. */
wd_type_t *wd_type_copy(const wd_type_t *t) {
  if (!t) return NULL;
  wd_type_t *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  *c = *t;
  c->elem = c->val = NULL;
  c->fields = NULL;
  c->nfields = 0;
  if (t->elem && !(c->elem = wd_type_copy(t->elem))) goto fail;
  if (t->val && !(c->val = wd_type_copy(t->val))) goto fail;
  if (t->nfields) {
    c->fields = calloc(t->nfields, sizeof(*c->fields));
    if (!c->fields) goto fail;
    c->nfields = t->nfields;
    for (size_t i = 0; i < t->nfields; i++) {
      c->fields[i].name = strdup(t->fields[i].name);
      c->fields[i].type = wd_type_copy(t->fields[i].type);
      if (!c->fields[i].name || !c->fields[i].type) goto fail;
    }
  }
  return c;
fail:
  wd_type_destroy(c);
  return NULL;
}

void wd_type_destroy(wd_type_t *t) {
  if (!t) return;
  wd_type_destroy(t->elem);
  wd_type_destroy(t->val);
  for (size_t i = 0; i < t->nfields; i++) {
    free(t->fields[i].name);
    wd_type_destroy(t->fields[i].type);
  }
  free(t->fields);
  free(t);
}

/* True when name can be written without back-quotes. */
static bool wd_plain_ident(const char *name) {
  if (!wd_tp_is_ident_start(name[0])) return false;
  for (const char *p = name + 1; *p; p++)
    if (!wd_tp_is_ident_char(*p)) return false;
  return true;
}

/* Appends the canonical text of t to out. 0 or -1 on no memory. */
static int wd_type_put(const wd_type_t *t, wd_buf_t *out) {
  static const char *const names[] = {"BOOLEAN",   "TINYINT",       "SMALLINT", "INT",    "BIGINT", "FLOAT", "DOUBLE",
                                      "DECIMAL",   "CHAR",          "VARCHAR",  "STRING", "BYTES",  "DATE",  "TIME",
                                      "TIMESTAMP", "TIMESTAMP_LTZ", "ARRAY",    "MAP",    "ROW"};
  int rc = wd_buf_printf(out, "%s", names[t->id]);
  switch (t->id) {
  case WD_DECIMAL: rc = rc ? rc : wd_buf_printf(out, "(%d,%d)", t->precision, t->scale); break;
  case WD_CHAR:
  case WD_VARCHAR: rc = rc ? rc : wd_buf_printf(out, "(%d)", t->length); break;
  case WD_TIME:
    if (t->precision) rc = rc ? rc : wd_buf_printf(out, "(%d)", t->precision);
    break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: rc = rc ? rc : wd_buf_printf(out, "(%d)", t->precision); break;
  case WD_ARRAY:
    rc = rc ? rc : wd_buf_putc(out, '<');
    rc = rc ? rc : wd_type_put(t->elem, out);
    rc = rc ? rc : wd_buf_putc(out, '>');
    break;
  case WD_MAP:
    rc = rc ? rc : wd_buf_putc(out, '<');
    rc = rc ? rc : wd_type_put(t->elem, out);
    rc = rc ? rc : wd_buf_printf(out, ", ");
    rc = rc ? rc : wd_type_put(t->val, out);
    rc = rc ? rc : wd_buf_putc(out, '>');
    break;
  case WD_ROW:
    rc = rc ? rc : wd_buf_putc(out, '<');
    for (size_t i = 0; i < t->nfields && !rc; i++) {
      if (i) rc = wd_buf_printf(out, ", ");
      const char *name = t->fields[i].name;
      rc = rc ? rc : wd_buf_printf(out, wd_plain_ident(name) ? "%s " : "`%s` ", name);
      rc = rc ? rc : wd_type_put(t->fields[i].type, out);
    }
    rc = rc ? rc : wd_buf_putc(out, '>');
    break;
  default: break;
  }
  if (t->not_null) rc = rc ? rc : wd_buf_printf(out, " NOT NULL");
  return rc;
}

char *wd_type_to_string(const wd_type_t *t) {
  wd_buf_t b = {0};
  if (wd_type_put(t, &b) || wd_buf_putc(&b, 0)) {
    wd_buf_free(&b);
    return NULL;
  }
  return (char *)b.data; /* ownership of the buffer's memory passes to the caller */
}

bool wd_type_is_integer(const wd_type_t *t) { return t->id >= WD_TINYINT && t->id <= WD_BIGINT; }
bool wd_type_is_numeric(const wd_type_t *t) { return t->id >= WD_TINYINT && t->id <= WD_DECIMAL; }
bool wd_type_is_text(const wd_type_t *t) { return t->id == WD_CHAR || t->id == WD_VARCHAR || t->id == WD_STRING; }

int64_t wd_type_int_min(const wd_type_t *t) {
  switch (t->id) {
  case WD_TINYINT: return INT8_MIN;
  case WD_SMALLINT: return INT16_MIN;
  case WD_INT: return INT32_MIN;
  default: return INT64_MIN;
  }
}

int64_t wd_type_int_max(const wd_type_t *t) {
  switch (t->id) {
  case WD_TINYINT: return INT8_MAX;
  case WD_SMALLINT: return INT16_MAX;
  case WD_INT: return INT32_MAX;
  default: return INT64_MAX;
  }
}

/* ===================================================================================== */
/* Values: clear, copy, move                                                               */
/* ===================================================================================== */

void wd_value_clear(const wd_type_t *t, wd_value_t *v) {
  if (!v) return;
  if (!v->is_null) {
    switch (t->id) {
    case WD_CHAR:
    case WD_VARCHAR:
    case WD_STRING:
    case WD_BYTES: free(v->s.p); break;
    case WD_ARRAY:
      for (size_t i = 0; i < v->list.n; i++) wd_value_clear(t->elem, &v->list.v[i]);
      free(v->list.v);
      break;
    case WD_ROW:
      for (size_t i = 0; i < v->list.n && i < t->nfields; i++) wd_value_clear(t->fields[i].type, &v->list.v[i]);
      free(v->list.v);
      break;
    case WD_MAP:
      for (size_t i = 0; i < v->map.n; i++) {
        wd_value_clear(t->elem, &v->map.k[i]);
        wd_value_clear(t->val, &v->map.v[i]);
      }
      free(v->map.k);
      free(v->map.v);
      break;
    default: break;
    }
  }
  memset(v, 0, sizeof(*v));
  v->is_null = true;
}

int wd_value_set_bytes(wd_value_t *v, const void *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return -1;
  if (n) memcpy(s, p, n);
  s[n] = 0;
  memset(v, 0, sizeof(*v));
  v->s.p = s;
  v->s.n = n;
  return 0;
}

/* Deep copy (see types.h). On failure dst is left NULL and owns nothing. */
int wd_value_copy(const wd_type_t *t, wd_value_t *dst, const wd_value_t *src) {
  memset(dst, 0, sizeof(*dst));
  dst->is_null = true;
  if (src->is_null) return 0;
  switch (t->id) {
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: return wd_value_set_bytes(dst, src->s.p, src->s.n);
  case WD_ARRAY:
  case WD_ROW: {
    size_t n = src->list.n;
    wd_value_t *v = calloc(n ? n : 1, sizeof(*v));
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) v[i].is_null = true;
    dst->is_null = false;
    dst->list.v = v;
    dst->list.n = n;
    for (size_t i = 0; i < n; i++) {
      const wd_type_t *et = t->id == WD_ARRAY ? t->elem : t->fields[i].type;
      if (wd_value_copy(et, &v[i], &src->list.v[i])) {
        wd_value_clear(t, dst);
        return -1;
      }
    }
    return 0;
  }
  case WD_MAP: {
    size_t n = src->map.n;
    wd_value_t *k = calloc(n ? n : 1, sizeof(*k));
    wd_value_t *v = calloc(n ? n : 1, sizeof(*v));
    if (!k || !v) {
      free(k);
      free(v);
      return -1;
    }
    for (size_t i = 0; i < n; i++) k[i].is_null = v[i].is_null = true;
    dst->is_null = false;
    dst->map.k = k;
    dst->map.v = v;
    dst->map.n = n;
    for (size_t i = 0; i < n; i++) {
      if (wd_value_copy(t->elem, &k[i], &src->map.k[i]) || wd_value_copy(t->val, &v[i], &src->map.v[i])) {
        wd_value_clear(t, dst);
        return -1;
      }
    }
    return 0;
  }
  default: *dst = *src; return 0;
  }
}

void wd_value_move(const wd_type_t *t, wd_value_t *dst, wd_value_t *src) {
  if (dst == src) return;
  wd_value_clear(t, dst);
  *dst = *src;
  memset(src, 0, sizeof(*src));
  src->is_null = true;
}

/* ===================================================================================== */
/* Comparison, equality, hashing                                                           */
/* ===================================================================================== */

/* Java's Double.doubleToLongBits: the bits, with every NaN made the canonical one. */
static int64_t wd_double_bits(double d) {
  uint64_t u;
  if (isnan(d)) return INT64_C(0x7ff8000000000000);
  memcpy(&u, &d, sizeof(u));
  return (int64_t)u;
}

/* Java's Double.compare. */
static int wd_double_cmp(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  int64_t x = wd_double_bits(a), y = wd_double_bits(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

/* Unsigned byte comparison, then length. */
static int wd_bytes_cmp(const char *a, size_t an, const char *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c < 0 ? -1 : 1;
  return an < bn ? -1 : (an > bn ? 1 : 0);
}

/* Context of the MAP entry sort: the key type and the key array. */
typedef struct wd_map_sort_ctx {
  const wd_type_t *kt;
  const wd_value_t *k;
} wd_map_sort_ctx_t;

static int wd_map_sort_cmp(const void *x, const void *y, void *arg) {
  const wd_map_sort_ctx_t *ctx = arg;
  size_t i = *(const size_t *)x, j = *(const size_t *)y;
  return wd_value_cmp(ctx->kt, &ctx->k[i], &ctx->k[j]);
}

/* Returns a new array of the entry indexes of map value v sorted by key, or NULL on no memory. */
static size_t *wd_map_sorted_index(const wd_type_t *t, const wd_value_t *v) {
  size_t n = v->map.n;
  size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
  if (!idx) return NULL;
  for (size_t i = 0; i < n; i++) idx[i] = i;
  wd_map_sort_ctx_t ctx = {t->elem, v->map.k};
  if (n > 1) qsort_r(idx, n, sizeof(*idx), wd_map_sort_cmp, &ctx);
  return idx;
}

/*
 * Compares two MAP values by their entries sorted by key: key, then value, entry by entry, then
 * the number of entries. Falls back to insertion order if memory runs out.
 */
static int wd_map_cmp(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b) {
  size_t *ia = wd_map_sorted_index(t, a);
  size_t *ib = wd_map_sorted_index(t, b);
  int c = 0;
  size_t n = a->map.n < b->map.n ? a->map.n : b->map.n;
  for (size_t i = 0; i < n && !c; i++) {
    size_t x = ia ? ia[i] : i, y = ib ? ib[i] : i;
    c = wd_value_cmp(t->elem, &a->map.k[x], &b->map.k[y]);
    if (!c) c = wd_value_cmp(t->val, &a->map.v[x], &b->map.v[y]);
  }
  if (!c) c = a->map.n < b->map.n ? -1 : (a->map.n > b->map.n ? 1 : 0);
  free(ia);
  free(ib);
  return c;
}

int wd_value_cmp(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b) {
  if (a->is_null || b->is_null) return (int)!a->is_null - (int)!b->is_null;
  switch (t->id) {
  case WD_BOOLEAN: return (int)a->b - (int)b->b;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_DATE:
  case WD_TIME: return a->i < b->i ? -1 : (a->i > b->i ? 1 : 0);
  case WD_FLOAT:
  case WD_DOUBLE: return wd_double_cmp(a->f, b->f);
  case WD_DECIMAL: return a->dec < b->dec ? -1 : (a->dec > b->dec ? 1 : 0);
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (a->ts.us != b->ts.us) return a->ts.us < b->ts.us ? -1 : 1;
    return a->ts.ns < b->ts.ns ? -1 : (a->ts.ns > b->ts.ns ? 1 : 0);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: return wd_bytes_cmp(a->s.p, a->s.n, b->s.p, b->s.n);
  case WD_ARRAY:
  case WD_ROW: {
    size_t n = a->list.n < b->list.n ? a->list.n : b->list.n;
    for (size_t i = 0; i < n; i++) {
      const wd_type_t *et = t->id == WD_ARRAY ? t->elem : t->fields[i].type;
      int c = wd_value_cmp(et, &a->list.v[i], &b->list.v[i]);
      if (c) return c;
    }
    return a->list.n < b->list.n ? -1 : (a->list.n > b->list.n ? 1 : 0);
  }
  case WD_MAP: return wd_map_cmp(t, a, b);
  }
  return 0;
}

/* Index of the entry of map value m whose key equals key (hint tried first), or -1. */
static long wd_map_find(const wd_type_t *t, const wd_value_t *m, const wd_value_t *key, size_t hint) {
  if (hint < m->map.n && wd_value_eq(t->elem, &m->map.k[hint], key)) return (long)hint;
  for (size_t i = 0; i < m->map.n; i++)
    if (wd_value_eq(t->elem, &m->map.k[i], key)) return (long)i;
  return -1;
}

bool wd_value_eq(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b) {
  if (a->is_null || b->is_null) return a->is_null && b->is_null;
  switch (t->id) {
  case WD_ARRAY:
  case WD_ROW:
    if (a->list.n != b->list.n) return false;
    for (size_t i = 0; i < a->list.n; i++) {
      const wd_type_t *et = t->id == WD_ARRAY ? t->elem : t->fields[i].type;
      if (!wd_value_eq(et, &a->list.v[i], &b->list.v[i])) return false;
    }
    return true;
  case WD_MAP:
    if (a->map.n != b->map.n) return false;
    for (size_t i = 0; i < a->map.n; i++) {
      long j = wd_map_find(t, b, &a->map.k[i], i);
      if (j < 0 || !wd_value_eq(t->val, &a->map.v[i], &b->map.v[j])) return false;
    }
    return true;
  default: return wd_value_cmp(t, a, b) == 0;
  }
}

uint64_t wd_value_hash(const wd_type_t *t, const wd_value_t *v) {
  if (v->is_null) return UINT64_C(0x6e756c6c);
  uint64_t h = (uint64_t)t->id * UINT64_C(0x100000001b3);
  switch (t->id) {
  case WD_BOOLEAN: return wd_hash_mix64(h ^ (uint64_t)v->b);
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_DATE:
  case WD_TIME: return wd_hash_mix64(h ^ (uint64_t)v->i);
  case WD_FLOAT:
  case WD_DOUBLE: return wd_hash_mix64(h ^ (uint64_t)wd_double_bits(v->f));
  case WD_DECIMAL: {
    unsigned __int128 u = (unsigned __int128)v->dec;
    return wd_hash_mix64(wd_hash_mix64(h ^ (uint64_t)u) ^ (uint64_t)(u >> 64));
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: return wd_hash_mix64(wd_hash_mix64(h ^ (uint64_t)v->ts.us) ^ (uint64_t)(uint32_t)v->ts.ns);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: return wd_hash_bytes(v->s.p, v->s.n, h);
  case WD_ARRAY:
  case WD_ROW:
    h = wd_hash_mix64(h ^ v->list.n);
    for (size_t i = 0; i < v->list.n; i++) {
      const wd_type_t *et = t->id == WD_ARRAY ? t->elem : t->fields[i].type;
      h = wd_hash_mix64(h ^ wd_value_hash(et, &v->list.v[i]));
    }
    return h;
  case WD_MAP: {
    /* order-independent: a sum of per-entry hashes */
    uint64_t sum = 0;
    for (size_t i = 0; i < v->map.n; i++) {
      uint64_t hk = wd_value_hash(t->elem, &v->map.k[i]);
      uint64_t hv = wd_value_hash(t->val, &v->map.v[i]);
      sum += wd_hash_mix64(hk ^ ((hv << 17) | (hv >> 47)));
    }
    return wd_hash_mix64(h ^ sum ^ v->map.n);
  }
  }
  return h;
}

/* ===================================================================================== */
/* DECIMAL helpers                                                                         */
/* ===================================================================================== */

#define WD_P19 ((wd_i128)10000000000000000000u)
static const wd_i128 wd_p10_table[39] = {1,
                                         10,
                                         100,
                                         1000,
                                         10000,
                                         100000,
                                         1000000,
                                         10000000,
                                         100000000,
                                         1000000000,
                                         10000000000,
                                         100000000000,
                                         1000000000000,
                                         10000000000000,
                                         100000000000000,
                                         1000000000000000,
                                         10000000000000000,
                                         100000000000000000,
                                         1000000000000000000,
                                         WD_P19,
                                         WD_P19 * 10,
                                         WD_P19 * 100,
                                         WD_P19 * 1000,
                                         WD_P19 * 10000,
                                         WD_P19 * 100000,
                                         WD_P19 * 1000000,
                                         WD_P19 * 10000000,
                                         WD_P19 * 100000000,
                                         WD_P19 * 1000000000,
                                         WD_P19 * 10000000000,
                                         WD_P19 * 100000000000,
                                         WD_P19 * 1000000000000,
                                         WD_P19 * 10000000000000,
                                         WD_P19 * 100000000000000,
                                         WD_P19 * 1000000000000000,
                                         WD_P19 * 10000000000000000,
                                         WD_P19 * 100000000000000000,
                                         WD_P19 * 1000000000000000000,
                                         WD_P19 *WD_P19};

/* 10^n for n in 0..38 from a table (n < 0: 1, n > 38: 10^38, as the loop it replaces gave) */
wd_i128 wd_pow10(int n) { return wd_p10_table[n < 0 ? 0 : n > 38 ? 38 : n]; }

static inline char *wd_put_udigits(char *p, uint64_t u, int width);

size_t wd_decimal_text(wd_i128 v, int s, char *buf) {
  char digits[40];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  if (!(u >> 64) && s >= 0 && s <= 19) {
    /* a magnitude of 64 bits (nearly every value): its digits, at least s + 1 of them, in one
     * pass of two digits per division, then the point before the last s */
    char *p = buf;
    if (neg) *p++ = '-';
    char *end = wd_put_udigits(p, (uint64_t)u, s + 1);
    if (s > 0) {
      memmove(end - s + 1, end - s, (size_t)s);
      end[-s] = '.';
      end++;
    }
    *end = 0;
    return (size_t)(end - buf);
  }
  do {
    digits[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  while (n <= s && n < (int)sizeof(digits)) digits[n++] = '0'; /* at least one integer digit */
  size_t len = 0;
  if (neg) buf[len++] = '-';
  for (int i = n - 1; i >= 0; i--) {
    if (i == s - 1) buf[len++] = '.';
    buf[len++] = digits[i];
  }
  buf[len] = 0;
  return len;
}

/*
 * Parses decimal text exactly into the unscaled integer at scale s (see types.h). Accepts an
 * optional sign, digits with an optional '.', and an optional exponent ("1.5E+3"); leading and
 * trailing blanks are ignored. Rounds HALF_UP (away from zero on ties) beyond s digits.
 */
wd_error_t *wd_decimal_parse(const char *text, size_t n, int p, int s, wd_i128 *out) {
  const char *x = text, *end = text + n;
  bool neg = false;
  const char *first = NULL; /* first significant digit */
  size_t ndigits = 0; /* digits from first on (integer + fraction) */
  long long nfrac = 0; /* fraction digits seen */
  bool any = false, dot = false;
  long long exp = 0;
  if (p < 1 || p > 38 || s < 0 || s > p) return wd_error_new(WD_ERR_INTERNAL, E_TYPE, "bad DECIMAL(%d,%d)", p, s);
  while (x < end && isspace((unsigned char)*x)) x++;
  while (end > x && isspace((unsigned char)end[-1])) end--;
  if (x < end && (*x == '+' || *x == '-')) neg = *x++ == '-';
  for (; x < end; x++) {
    if (isdigit((unsigned char)*x)) {
      any = true;
      if (dot) nfrac++;
      if (!first && *x != '0') first = x;
      if (first) ndigits++;
    } else if (*x == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any) goto bad;
  if (x < end && (*x == 'e' || *x == 'E')) {
    x++;
    bool eneg = false;
    if (x < end && (*x == '+' || *x == '-')) eneg = *x++ == '-';
    if (x >= end || !isdigit((unsigned char)*x)) goto bad;
    for (; x < end && isdigit((unsigned char)*x); x++)
      if (exp < 1000000000LL) exp = exp * 10 + (*x - '0');
    if (eneg) exp = -exp;
  }
  if (x != end) goto bad;
  if (!first) {
    *out = 0;
    return NULL;
  }
  /* value = D * 10^(exp - nfrac), D = the ndigits digits from the first significant one (its
   * last digit is the last fraction digit); we want D * 10^k */
  long long k = exp - nfrac + s;
  long long keep = (long long)ndigits + k; /* digits of the integer result before rounding */
  if (keep > p) goto overflow; /* the leading digit is non-zero */
  wd_i128 r = 0;
  int round_digit = 0;
  {
    long long taken = 0;
    for (const char *d = first; taken < (long long)ndigits; d++) {
      if (*d == '.') continue;
      if (taken < keep) {
        r = r * 10 + (*d - '0');
      } else if (taken == keep) {
        round_digit = *d - '0';
        break;
      }
      taken++;
    }
    if (keep < 0) round_digit = 0; /* below half of one unit at scale s */
    for (long long z = (long long)ndigits; z < keep; z++) r *= 10; /* k > 0: trailing zeros */
  }
  if (round_digit >= 5) r += 1;
  if (r >= wd_pow10(p)) goto overflow;
  *out = neg ? -r : r;
  return NULL;
bad:
  return wd_error_new(WD_ERR_RECORD, E_TYPE, "expected DECIMAL(%d,%d), got '%.*s'", p, s, (int)(n > 64 ? 64 : n), text);
overflow:
  return wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "'%.*s' does not fit DECIMAL(%d,%d)", (int)(n > 64 ? 64 : n),
                      text, p, s);
}

/* ===================================================================================== */
/* Text: format and parse                                                                  */
/* ===================================================================================== */

static const char wd_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Appends the standard base64 (with padding) of p[0..n). */
static int wd_base64_put(const uint8_t *p, size_t n, wd_buf_t *out) {
  if (wd_buf_reserve(out, (n + 2) / 3 * 4 + 1)) return -1;
  char q[4];
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    q[0] = wd_b64[(v >> 18) & 63];
    q[1] = wd_b64[(v >> 12) & 63];
    q[2] = i + 1 < n ? wd_b64[(v >> 6) & 63] : '=';
    q[3] = i + 2 < n ? wd_b64[v & 63] : '=';
    if (wd_buf_append(out, q, 4)) return -1;
  }
  return 0;
}

/*
 * Decodes base64 text (standard or URL alphabet, padding optional) into a new value v.
 * Returns 0, -1 on bad text, -2 on no memory.
 */
static int wd_base64_parse(const char *s, size_t n, wd_value_t *v) {
  uint8_t *buf = malloc(n / 4 * 3 + 4);
  if (!buf) return -2;
  size_t len;
  if (wd_base64_decode(s, n, WD_BASE64_LENIENT, buf, &len)) {
    free(buf);
    return -1;
  }
  buf[len] = 0;
  memset(v, 0, sizeof(*v));
  v->s.p = (char *)buf;
  v->s.n = len;
  return 0;
}

/* Civil date from days since 1970-01-01 (H. Hinnant's algorithm), for any int64 z: the
 * arithmetic is done in 128 bits, so no step overflows (the year of INT64_MAX days is about
 * 2.5e16, which fits). */
static void wd_civil_from_days(int64_t days, int64_t *y, int *m, int *d) {
  if (days > -(INT64_C(1) << 40) && days < INT64_C(1) << 40) {
    /* every date a record can hold, in 64-bit arithmetic (the same steps; no product can
     * overflow here): the 128-bit divisions below are library calls, ~10x the instructions */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
    return;
  }
  wd_i128 z = (wd_i128)days + 719468;
  wd_i128 era = (z >= 0 ? z : z - 146096) / 146097;
  wd_i128 doe = z - era * 146097;
  wd_i128 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  wd_i128 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  wd_i128 mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int64_t)(yoe + era * 400 + (*m <= 2));
}

/* see types.h */
int64_t wd_days_from_civil(int64_t year, int m, int d) {
  wd_i128 y = (wd_i128)year - (m <= 2);
  wd_i128 era = (y >= 0 ? y : y - 399) / 400;
  wd_i128 yoe = y - era * 400;
  wd_i128 doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  wd_i128 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  wd_i128 r = era * 146097 + doe - 719468;
  return r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : (int64_t)r;
}

/* see types.h */
bool wd_value_in_range(const wd_type_t *t, const wd_value_t *v, char *why, size_t cap) {
  if (v->is_null) return true;
  switch (t->id) {
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (v->i >= wd_type_int_min(t) && v->i <= wd_type_int_max(t)) return true;
    if (why)
      snprintf(why, cap, "%lld is outside %lld..%lld", (long long)v->i, (long long)wd_type_int_min(t),
               (long long)wd_type_int_max(t));
    return false;
  case WD_DECIMAL: {
    wd_i128 lim = wd_pow10(t->precision);
    if (v->dec < lim && v->dec > -lim) return true;
    if (why) snprintf(why, cap, "more than %d digits", t->precision);
    return false;
  }
  case WD_DATE:
    if (v->i >= WD_DATE_MIN_DAYS && v->i <= WD_DATE_MAX_DAYS) return true;
    if (why) snprintf(why, cap, "%lld days since 1970-01-01 is outside the years 0001-9999", (long long)v->i);
    return false;
  case WD_TIME:
    if (v->i >= 0 && v->i <= WD_TIME_MAX_NS) return true;
    if (why) snprintf(why, cap, "%lld ns is not a time of day (00:00:00..23:59:59.999999999)", (long long)v->i);
    return false;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (v->ts.us >= WD_TIMESTAMP_MIN_US && v->ts.us <= WD_TIMESTAMP_MAX_US && v->ts.ns >= 0 && v->ts.ns <= 999)
      return true;
    if (why) snprintf(why, cap, "%lld µs since 1970-01-01 is outside the years 0001-9999", (long long)v->ts.us);
    return false;
  case WD_ARRAY:
  case WD_ROW:
    for (size_t i = 0; i < v->list.n; i++)
      if (!wd_value_in_range(t->id == WD_ARRAY ? t->elem : t->fields[i].type, &v->list.v[i], why, cap)) return false;
    return true;
  case WD_MAP:
    for (size_t i = 0; i < v->map.n; i++)
      if (!wd_value_in_range(t->elem, &v->map.k[i], why, cap) || !wd_value_in_range(t->val, &v->map.v[i], why, cap))
        return false;
    return true;
  default: return true;
  }
}

int wd_days_in_month(int64_t y, int m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return dm[m - 1];
}

static const char WD_DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/* Writes u in decimal, zero-padded to at least width digits (at most 23 in all), at p; returns
 * the end (the digits of wd_buf_put_uint). Two digits per division. */
static inline char *wd_put_udigits(char *p, uint64_t u, int width) {
  /* the fixed widths of dates and times first: months, days, hours..., milliseconds, years */
  if (width == 2 && u < 100) {
    p[0] = WD_DIGIT_PAIRS[2 * u];
    p[1] = WD_DIGIT_PAIRS[2 * u + 1];
    return p + 2;
  }
  if (width == 3 && u < 1000) {
    p[0] = (char)('0' + u / 100);
    p[1] = WD_DIGIT_PAIRS[2 * (u % 100)];
    p[2] = WD_DIGIT_PAIRS[2 * (u % 100) + 1];
    return p + 3;
  }
  if (width == 4 && u < 10000) {
    p[0] = WD_DIGIT_PAIRS[2 * (u / 100)];
    p[1] = WD_DIGIT_PAIRS[2 * (u / 100) + 1];
    p[2] = WD_DIGIT_PAIRS[2 * (u % 100)];
    p[3] = WD_DIGIT_PAIRS[2 * (u % 100) + 1];
    return p + 4;
  }
  int n = 1;
  for (uint64_t x = u;;) {
    if (x < 10) break;
    if (x < 100) {
      n += 1;
      break;
    }
    if (x < 1000) {
      n += 2;
      break;
    }
    if (x < 10000) {
      n += 3;
      break;
    }
    x /= 10000;
    n += 4;
  }
  if (width > 23) width = 23;
  for (; n < width; width--) *p++ = '0';
  char *end = p + n, *q = end;
  while (u >= 100) {
    unsigned r = (unsigned)(u % 100);
    u /= 100;
    q -= 2;
    q[0] = WD_DIGIT_PAIRS[2 * r];
    q[1] = WD_DIGIT_PAIRS[2 * r + 1];
  }
  if (u >= 10) {
    q -= 2;
    q[0] = WD_DIGIT_PAIRS[2 * u];
    q[1] = WD_DIGIT_PAIRS[2 * u + 1];
  } else {
    *--q = (char)('0' + u);
  }
  return end;
}

/* "[-]YYYY-MM-DD" of days since 1970-01-01 at p; returns the end (at most 27 bytes). */
static char *wd_date_text(int64_t days, char *p) {
  int64_t y;
  int m, d;
  wd_civil_from_days(days, &y, &m, &d);
  if (y < 0) *p++ = '-';
  p = wd_put_udigits(p, (uint64_t)(y < 0 ? -y : y), 4);
  *p++ = '-';
  p = wd_put_udigits(p, (uint64_t)m, 2);
  *p++ = '-';
  return wd_put_udigits(p, (uint64_t)d, 2);
}

/* "hh:mm:ss" and, if digits > 0, "." and that many digits of the nanoseconds, at p; returns the
 * end (at most 84 bytes, for any int64). */
static char *wd_time_text(int64_t ns_of_day, int digits, char *p) {
  int64_t secs = ns_of_day / 1000000000;
  int64_t frac = ns_of_day % 1000000000;
  p = wd_put_udigits(p, (uint64_t)(secs / 3600), 2);
  *p++ = ':';
  p = wd_put_udigits(p, (uint64_t)(secs / 60 % 60), 2);
  *p++ = ':';
  p = wd_put_udigits(p, (uint64_t)(secs % 60), 2);
  if (digits > 0) {
    /* frac / 10^(9 - digits), truncating toward zero as one division by ten at a time does */
    static const int64_t DIV[] = {1000000000, 100000000, 10000000, 1000000, 100000, 10000, 1000, 100, 10, 1};
    int64_t f = digits < 9 ? frac / DIV[digits] : frac;
    *p++ = '.';
    p = wd_put_udigits(p, (uint64_t)f, digits);
  }
  return p;
}

size_t wd_scalar_text(const wd_type_t *t, const wd_value_t *v, char *buf) {
  char *p = buf;
  switch (t->id) {
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (v->i < 0) *p++ = '-';
    return (size_t)(wd_put_udigits(p, v->i < 0 ? (uint64_t)0 - (uint64_t)v->i : (uint64_t)v->i, 0) - buf);
  case WD_DECIMAL: return wd_decimal_text(v->dec, t->scale, buf);
  case WD_DATE: return (size_t)(wd_date_text(v->i, p) - buf);
  case WD_TIME: return (size_t)(wd_time_text(v->i, t->precision, p) - buf);
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    int digits = t->precision <= 3 ? 3 : (t->precision <= 6 ? 6 : 9);
    /* any int64 (a value outside the years 0001-9999 never gets here from a decoder, but the
       * text of any value is defined): no product that can overflow */
    int64_t days = wd_floordiv(v->ts.us, INT64_C(86400000000));
    int64_t us_of_day = wd_floormod(v->ts.us, INT64_C(86400000000));
    p = wd_date_text(days, p);
    *p++ = ' ';
    return (size_t)(wd_time_text(us_of_day * 1000 + v->ts.ns, digits, p) - buf);
  }
  default: return 0;
  }
}

/* Shortest "%.{n}g" text of d that reads back exactly (as a float when as_float). */
/* The significant digits of a "%g" text (sign, point, exponent and leading/trailing zeros left out). */
static int wd_significant_digits(const char *s) {
  int n = 0, zeros = 0;
  bool started = false;
  for (; *s && *s != 'e' && *s != 'E'; s++) {
    if (*s < '0' || *s > '9') continue;
    if (*s == '0') {
      if (started) zeros++;
      continue;
    }
    started = true;
    n += zeros + 1;
    zeros = 0;
  }
  return n ? n : 1;
}

void wd_float_shortest(double d, bool as_float, char *buf, size_t n) {
  /* with at most 15 (FLOAT: 6) significant digits the shortest text is the one at that precision
   * without its trailing zeros: d is within half an ulp of it, far less than half a step of that
   * decimal grid; above, the precisions are tried in turn */
  int prec = as_float ? 6 : 15;
  if (d != 0 && fabs(d) < (as_float ? (double)FLT_MIN : DBL_MIN)) prec = 1; /* subnormal: fewer bits, try all */
  for (; prec < 17; prec++) {
    snprintf(buf, n, "%.*g", prec, d);
    if (as_float ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d) break;
  }
  if (prec == 17) snprintf(buf, n, "%.17g", d);
  int sig = wd_significant_digits(buf);
  if (sig < prec) snprintf(buf, n, "%.*g", sig, d); /* "%g" at that precision: its exponent form too */
}

static int wd_float_put(double d, bool as_float, wd_buf_t *out) {
  if (isnan(d)) return wd_buf_printf(out, "NaN");
  if (isinf(d)) return wd_buf_printf(out, d > 0 ? "Infinity" : "-Infinity");
  char tmp[40];
  wd_float_shortest(d, as_float, tmp, sizeof(tmp));
  return wd_buf_append(out, tmp, strlen(tmp));
}

int wd_value_format(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out) {
  if (v->is_null) return wd_buf_printf(out, "NULL");
  switch (t->id) {
  case WD_BOOLEAN: return wd_buf_printf(out, "%s", v->b ? "true" : "false");
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: return wd_buf_put_int(out, v->i);
  case WD_FLOAT: return wd_float_put(v->f, true, out);
  case WD_DOUBLE: return wd_float_put(v->f, false, out);
  case WD_DECIMAL:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    char text[WD_SCALAR_TEXT_MAX];
    return wd_buf_append(out, text, wd_scalar_text(t, v, text));
  }
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: return wd_buf_append(out, v->s.p, v->s.n);
  case WD_BYTES: return wd_base64_put((const uint8_t *)v->s.p, v->s.n, out);
  case WD_ARRAY: {
    /* not a case format; Flink's CAST(... AS STRING) style, for messages and logs */
    int rc = wd_buf_putc(out, '[');
    for (size_t i = 0; i < v->list.n && !rc; i++) {
      if (i) rc = wd_buf_printf(out, ", ");
      rc = rc ? rc : wd_value_format(t->elem, &v->list.v[i], out);
    }
    return rc ? rc : wd_buf_putc(out, ']');
  }
  case WD_ROW: {
    int rc = wd_buf_putc(out, '(');
    for (size_t i = 0; i < v->list.n && !rc; i++) {
      if (i) rc = wd_buf_printf(out, ", ");
      rc = rc ? rc : wd_value_format(t->fields[i].type, &v->list.v[i], out);
    }
    return rc ? rc : wd_buf_putc(out, ')');
  }
  case WD_MAP: {
    int rc = wd_buf_putc(out, '{');
    for (size_t i = 0; i < v->map.n && !rc; i++) {
      if (i) rc = wd_buf_printf(out, ", ");
      rc = rc ? rc : wd_value_format(t->elem, &v->map.k[i], out);
      rc = rc ? rc : wd_buf_putc(out, '=');
      rc = rc ? rc : wd_value_format(t->val, &v->map.v[i], out);
    }
    return rc ? rc : wd_buf_putc(out, '}');
  }
  }
  return -1;
}

/* A cursor over text being parsed. */
typedef struct wd_tcur {
  const char *p;
  const char *end;
} wd_tcur_t;

/* Reads exactly n digits (n <= 9) into *v. */
static bool wd_tc_digits(wd_tcur_t *c, int n, int64_t *v) {
  int64_t x = 0;
  if (c->end - c->p < n) return false;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)c->p[i])) return false;
    x = x * 10 + (c->p[i] - '0');
  }
  c->p += n;
  *v = x;
  return true;
}

static bool wd_tc_char(wd_tcur_t *c, char ch) {
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* Parses "[-]Y{4,}-MM-DD" (year with at least 4 digits, or 1..4 digits accepted) into days. */
static bool wd_tc_date(wd_tcur_t *c, int64_t *days) {
  bool neg = wd_tc_char(c, '-');
  int64_t y = 0, m, d;
  int n = 0;
  while (c->p < c->end && isdigit((unsigned char)*c->p) && n < 9) {
    y = y * 10 + (*c->p++ - '0');
    n++;
  }
  if (n < 1) return false;
  if (neg) y = -y;
  if (!wd_tc_char(c, '-') || !wd_tc_digits(c, 2, &m) || !wd_tc_char(c, '-') || !wd_tc_digits(c, 2, &d)) return false;
  if (m < 1 || m > 12 || d < 1 || d > wd_days_in_month(y, (int)m)) return false;
  *days = wd_days_from_civil(y, (int)m, (int)d);
  return true;
}

/* Parses "hh:mm[:ss[.f{1,9}]]" into nanoseconds of the day, truncated to precision digits. */
static bool wd_tc_time(wd_tcur_t *c, int precision, int64_t *ns) {
  int64_t h, m, s = 0, frac = 0;
  if (!wd_tc_digits(c, 2, &h) || !wd_tc_char(c, ':') || !wd_tc_digits(c, 2, &m)) return false;
  if (wd_tc_char(c, ':')) {
    if (!wd_tc_digits(c, 2, &s)) return false;
    if (wd_tc_char(c, '.')) {
      int n = 0;
      while (c->p < c->end && isdigit((unsigned char)*c->p)) {
        if (n < 9) frac = frac * 10 + (*c->p - '0');
        n++;
        c->p++;
      }
      if (n == 0) return false;
      for (; n < 9; n++) frac *= 10;
    }
  }
  if (h > 23 || m > 59 || s > 59) return false;
  int64_t unit = 1;
  for (int i = precision; i < 9; i++) unit *= 10;
  frac -= frac % unit;
  *ns = ((h * 60 + m) * 60 + s) * INT64_C(1000000000) + frac;
  return true;
}

/* Parses an optional zone suffix "Z", "+hh:mm", "-hhmm" into an offset in seconds. */
static bool wd_tc_zone(wd_tcur_t *c, int64_t *offset_s) {
  *offset_s = 0;
  if (c->p == c->end) return true;
  if (wd_tc_char(c, 'Z') || wd_tc_char(c, 'z')) return true;
  int sign = *c->p == '-' ? -1 : 1;
  if (!wd_tc_char(c, '+') && !wd_tc_char(c, '-')) return false;
  int64_t h, m = 0;
  if (!wd_tc_digits(c, 2, &h)) return false;
  if (wd_tc_char(c, ':')) {
    if (!wd_tc_digits(c, 2, &m)) return false;
  } else if (c->p < c->end) {
    if (!wd_tc_digits(c, 2, &m)) return false;
  }
  if (h > 18 || m > 59) return false;
  *offset_s = sign * (h * 3600 + m * 60);
  return true;
}

/* Parses a signed decimal integer filling the whole text. -1 junk, -2 out of [lo, hi]. */
static int wd_parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out) {
  size_t i = 0;
  bool neg = false;
  uint64_t v = 0, limit;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == n) return -1;
  limit = neg ? (uint64_t)0 - (uint64_t)lo : (uint64_t)hi;
  bool over = false;
  for (; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) over = true;
    else v = v * 10 + d;
  }
  if (over || v > limit) return -2;
  *out = neg ? (int64_t)((uint64_t)0 - v) : (int64_t)v;
  if (neg && v == 0) *out = 0;
  return 0;
}

wd_error_t *wd_value_parse_text(const wd_type_t *t, const char *text, size_t n, wd_value_t *out) {
  wd_error_t *err = NULL;
  char *tname = NULL;
  char small[128];
  char *z = NULL; /* a NUL-terminated copy for strtod */
  wd_tcur_t c = {text, text + n};
  memset(out, 0, sizeof(*out));
  out->is_null = true;
  switch (t->id) {
  case WD_BOOLEAN:
    if (n == 4 && strncasecmp(text, "true", 4) == 0) out->b = true;
    else if (n == 5 && strncasecmp(text, "false", 5) == 0) out->b = false;
    else goto bad;
    break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: {
    int rc = wd_parse_int(text, n, wd_type_int_min(t), wd_type_int_max(t), &out->i);
    if (rc == -1) goto bad;
    if (rc == -2) {
      tname = wd_type_to_string(t);
      err = wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "'%.*s' is out of the range of %s", (int)(n > 64 ? 64 : n),
                         text, tname ? tname : "the type");
      goto cleanup;
    }
    break;
  }
  case WD_FLOAT:
  case WD_DOUBLE: {
    if (n == 0 || isspace((unsigned char)text[0])) goto bad;
    z = n < sizeof(small) ? small : malloc(n + 1);
    if (!z) {
      err = wd_error_nomem();
      goto cleanup;
    }
    memcpy(z, text, n);
    z[n] = 0;
    if (strlen(z) != n) goto bad;
    double d;
    if (strcmp(z, "NaN") == 0) d = NAN;
    else if (strcmp(z, "Infinity") == 0 || strcmp(z, "+Infinity") == 0) d = INFINITY;
    else if (strcmp(z, "-Infinity") == 0) d = -INFINITY;
    else {
      char *e = NULL;
      d = strtod(z, &e);
      if (e != z + n) goto bad;
    }
    out->f = t->id == WD_FLOAT ? (double)(float)d : d;
    break;
  }
  case WD_DECIMAL:
    err = wd_decimal_parse(text, n, t->precision, t->scale, &out->dec);
    if (err) goto cleanup;
    break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
    if (wd_value_set_bytes(out, text, n)) {
      err = wd_error_nomem();
      goto cleanup;
    }
    break;
  case WD_BYTES: {
    int rc = wd_base64_parse(text, n, out);
    if (rc == -1) goto bad;
    if (rc == -2) {
      err = wd_error_nomem();
      goto cleanup;
    }
    break;
  }
  case WD_DATE:
    if (!wd_tc_date(&c, &out->i) || c.p != c.end) goto bad;
    if (out->i < WD_DATE_MIN_DAYS || out->i > WD_DATE_MAX_DAYS) goto bad; /* the years 0001-9999 */
    break;
  case WD_TIME:
    if (!wd_tc_time(&c, t->precision, &out->i) || c.p != c.end) goto bad;
    break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    int64_t days, ns = 0, off = 0;
    if (!wd_tc_date(&c, &days)) goto bad;
    if (c.p < c.end && (*c.p == ' ' || *c.p == 'T' || *c.p == 't')) {
      c.p++;
      if (!wd_tc_time(&c, t->precision, &ns)) goto bad;
    }
    if (t->id == WD_TIMESTAMP_LTZ) {
      if (!wd_tc_zone(&c, &off)) goto bad;
    }
    if (c.p != c.end) goto bad;
    if (days > INT64_C(100000000) || days < -INT64_C(100000000)) goto bad;
    out->ts.us = days * INT64_C(86400000000) + ns / 1000 - off * INT64_C(1000000);
    out->ts.ns = (int32_t)(ns % 1000);
    if (out->ts.us < WD_TIMESTAMP_MIN_US || out->ts.us > WD_TIMESTAMP_MAX_US) goto bad; /* the years 0001-9999 */
    break;
  }
  case WD_ARRAY:
  case WD_MAP:
  case WD_ROW: goto bad;
  }
  out->is_null = false;
  goto cleanup;
bad:
  tname = wd_type_to_string(t);
  err = wd_error_new(WD_ERR_RECORD, E_TYPE, "expected %s, got '%.*s'", tname ? tname : "a value",
                     (int)(n > 64 ? 64 : n), text);
cleanup:
  if (err) {
    wd_value_clear(t, out);
  }
  if (z && z != small) free(z);
  free(tname);
  return err;
}

/* ===================================================================================== */
/* Schemas                                                                                 */
/* ===================================================================================== */

wd_error_t *wd_schema_new(size_t ncols, const char *const *names, const char *const *types, size_t npk,
                          const char *const *pk, wd_schema_t **out) {
  wd_error_t *err = NULL;
  wd_schema_t *schema = calloc(1, sizeof(*schema));
  *out = NULL;
  if (!schema) return wd_error_nomem();
  schema->cols = calloc(ncols ? ncols : 1, sizeof(*schema->cols));
  schema->pk = calloc(npk ? npk : 1, sizeof(*schema->pk));
  if (!schema->cols || !schema->pk) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < ncols; i++) {
    for (size_t j = 0; j < i; j++) {
      if (strcmp(names[i], names[j]) == 0) {
        err = wd_error_new(WD_ERR_CONFIG, C_DUPLICATE_COLUMN, "column '%s' is defined twice", names[i]);
        goto cleanup;
      }
    }
    wd_type_t *t = NULL;
    err = wd_type_parse(types[i], &t);
    if (err) {
      wd_error_t *e2 = wd_error_make(err->cls, err->eid, "column '%s': %s", names[i],
                                     err->message + (err->id[0] ? strlen(err->id) + 2 : 0));
      wd_error_destroy(err);
      err = e2;
      goto cleanup;
    }
    schema->cols[i].type = t;
    schema->cols[i].name = strdup(names[i]);
    schema->ncols = i + 1;
    if (!schema->cols[i].name) {
      err = wd_error_nomem();
      goto cleanup;
    }
  }
  if (npk == 0) {
    err = wd_error_new(WD_ERR_CONFIG, C_PRIMARY_KEY, "the primary key is empty");
    goto cleanup;
  }
  for (size_t i = 0; i < npk; i++) {
    int col = wd_schema_find(schema, pk[i]);
    if (col < 0) {
      err =
          wd_error_new(WD_ERR_CONFIG, C_PRIMARY_KEY, "primary key column '%s' can not be found in table schema", pk[i]);
      goto cleanup;
    }
    for (size_t j = 0; j < i; j++) {
      if (schema->pk[j] == col) {
        err = wd_error_new(WD_ERR_CONFIG, C_PRIMARY_KEY, "primary key column '%s' is repeated", pk[i]);
        goto cleanup;
      }
    }
    schema->pk[i] = col;
    schema->npk = i + 1;
  }
  /* the derived per-column data (types.h) */
  schema->var = calloc(ncols ? ncols : 1, sizeof(*schema->var));
  schema->name_len = calloc(ncols ? ncols : 1, sizeof(*schema->name_len));
  schema->name_plain = calloc(ncols ? ncols : 1, sizeof(*schema->name_plain));
  if (!schema->var || !schema->name_len || !schema->name_plain) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < ncols; i++) {
    wd_type_id_t id = schema->cols[i].type->id;
    bool nested = id == WD_ARRAY || id == WD_MAP || id == WD_ROW;
    if (nested || id == WD_CHAR || id == WD_VARCHAR || id == WD_STRING || id == WD_BYTES)
      schema->var[schema->nvar++] = (int)i;
    schema->nested |= nested;
    const char *name = schema->cols[i].name;
    schema->name_len[i] = strlen(name);
    bool plain = true;
    for (const char *c = name; *c && plain; c++) plain = *c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\';
    schema->name_plain[i] = plain;
  }
  *out = schema;
  schema = NULL;
cleanup:
  wd_schema_destroy(schema);
  return err;
}

void wd_schema_destroy(wd_schema_t *schema) {
  if (!schema) return;
  for (size_t i = 0; i < schema->ncols; i++) {
    free(schema->cols[i].name);
    wd_type_destroy(schema->cols[i].type);
  }
  free(schema->cols);
  free(schema->pk);
  free(schema->var);
  free(schema->name_len);
  free(schema->name_plain);
  free(schema);
}

int wd_schema_find(const wd_schema_t *schema, const char *name) {
  for (size_t i = 0; i < schema->ncols; i++)
    if (schema->cols[i].name && strcmp(schema->cols[i].name, name) == 0) return (int)i;
  return -1;
}

bool wd_schema_is_pk(const wd_schema_t *schema, int col) {
  for (size_t i = 0; i < schema->npk; i++)
    if (schema->pk[i] == col) return true;
  return false;
}

/* ===================================================================================== */
/* Rows                                                                                    */
/* ===================================================================================== */

const char *wd_row_kind_str(wd_row_kind_t kind) {
  switch (kind) {
  case WD_INSERT: return "+I";
  case WD_UPDATE_BEFORE: return "-U";
  case WD_UPDATE_AFTER: return "+U";
  case WD_DELETE: return "-D";
  }
  return "?";
}

int wd_row_kind_parse(const char *s, wd_row_kind_t *kind) {
  static const char *const names[] = {"+I", "-U", "+U", "-D"};
  for (int i = 0; i < 4; i++) {
    if (s && strcmp(s, names[i]) == 0) {
      *kind = (wd_row_kind_t)i;
      return 0;
    }
  }
  return -1;
}

/* A row and its values in one allocation (one malloc and one free per row on the hot path),
 * optionally followed by the bytes of its variable-length data (wd_row_new_extra, wd_row_pack). */
typedef struct wd_row_block {
  wd_row_t row;
  wd_value_t v[];
} wd_row_block_t;

wd_row_t *wd_row_new_extra(const wd_schema_t *schema, size_t extra, char **extra_out) {
  size_t n = schema->ncols ? schema->ncols : 1;
  wd_row_block_t *b = malloc(sizeof(*b) + n * sizeof(wd_value_t) + extra);
  if (!b) return NULL;
  wd_row_t *row = &b->row;
  row->v = b->v;
  memset(row->v, 0, n * sizeof(wd_value_t));
  row->n = schema->ncols;
  row->kind = WD_INSERT;
  row->absent = NULL;
  row->shares = 0;
  row->base = NULL;
  row->blk = extra ? (char *)(b->v + n) : NULL;
  row->blk_len = extra;
  row->blk_only = false;
  for (size_t i = 0; i < row->n; i++) row->v[i].is_null = true;
  if (extra_out) *extra_out = row->blk;
  return row;
}

wd_row_t *wd_row_new(const wd_schema_t *schema) { return wd_row_new_extra(schema, 0, NULL); }

int wd_row_set_absent(wd_row_t *row, size_t col) {
  if (col >= row->n) return 0;
  if (!row->absent && !(row->absent = calloc(row->n, sizeof(bool)))) return -1;
  row->absent[col] = true;
  return 0;
}

wd_row_t *wd_row_copy(const wd_schema_t *schema, const wd_row_t *row) {
  wd_row_t *c = wd_row_new(schema);
  if (!c) return NULL;
  c->kind = row->kind;
  for (size_t i = 0; i < c->n && i < row->n; i++) {
    if (wd_value_copy(schema->cols[i].type, &c->v[i], &row->v[i])) {
      wd_row_destroy(schema, c);
      return NULL;
    }
  }
  return c;
}

static bool wd_is_bytes_type(const wd_type_t *t) {
  return t->id == WD_CHAR || t->id == WD_VARCHAR || t->id == WD_STRING || t->id == WD_BYTES;
}

wd_row_t *wd_row_pack(const wd_schema_t *schema, const wd_row_t *row) {
  size_t n = schema->ncols < row->n ? schema->ncols : row->n;
  size_t extra = 0;
  bool nested = false;
  /* only the columns that can own memory (schema->var, ascending) need a look */
  for (size_t k = 0; k < schema->nvar && (size_t)schema->var[k] < n; k++) {
    size_t i = (size_t)schema->var[k];
    if (row->v[i].is_null) continue;
    if (wd_is_bytes_type(schema->cols[i].type)) extra += row->v[i].s.n + 1;
    else nested = true;
  }
  size_t nv = schema->ncols ? schema->ncols : 1;
  wd_row_block_t *b = malloc(sizeof(*b) + nv * sizeof(wd_value_t) + extra);
  if (!b) return NULL;
  wd_row_t *c = &b->row;
  c->kind = row->kind;
  c->n = schema->ncols;
  c->v = b->v;
  c->absent = NULL;
  c->shares = 0;
  c->base = NULL;
  c->blk = extra ? (char *)(b->v + nv) : NULL;
  c->blk_len = extra;
  c->blk_only = !nested;
  /* the scalars as they are; then text into the block and nested values copied */
  memcpy(c->v, row->v, n * sizeof(wd_value_t));
  for (size_t i = n; i < c->n; i++) {
    memset(&c->v[i], 0, sizeof(wd_value_t));
    c->v[i].is_null = true;
  }
  char *blk = c->blk;
  for (size_t k = 0; k < schema->nvar && (size_t)schema->var[k] < n; k++) {
    wd_value_t *dst = &c->v[schema->var[k]];
    if (dst->is_null || !wd_is_bytes_type(schema->cols[schema->var[k]].type)) continue;
    if (dst->s.n) memcpy(blk, dst->s.p, dst->s.n);
    blk[dst->s.n] = 0;
    dst->s.p = blk; /* in the row's block */
    blk += dst->s.n + 1;
  }
  if (nested) {
    for (size_t i = 0; i < n; i++) {
      wd_type_id_t id = schema->cols[i].type->id;
      if (c->v[i].is_null || !(id == WD_ARRAY || id == WD_MAP || id == WD_ROW)) continue;
      if (wd_value_copy(schema->cols[i].type, &c->v[i], &row->v[i])) {
        for (size_t j = i; j < n; j++) { /* the rest still points at row's values: not ours */
          id = schema->cols[j].type->id;
          if (id == WD_ARRAY || id == WD_MAP || id == WD_ROW) {
            memset(&c->v[j], 0, sizeof(wd_value_t));
            c->v[j].is_null = true;
          }
        }
        wd_row_destroy(schema, c);
        return NULL;
      }
    }
  }
  return c;
}

wd_row_t *wd_row_share(wd_row_t *row) {
  row->shares++;
  return row;
}

wd_row_t *wd_row_view(wd_row_t *row, wd_row_kind_t kind) {
  wd_row_t *base = row->base ? row->base : row;
  wd_row_t *v = malloc(sizeof(*v));
  if (!v) return NULL;
  v->kind = kind;
  v->n = base->n;
  v->v = base->v;
  v->absent = NULL;
  v->shares = 0;
  v->base = wd_row_share(base);
  v->blk = NULL;
  v->blk_len = 0;
  v->blk_only = false;
  return v;
}

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds check the promise of a row flagged blk_only (types.h) before it is freed
 * without a look at its values: a text value outside the block or a nested value would leak. */
static void wd_row_check_blk_only(const wd_schema_t *schema, const wd_row_t *row) {
  for (size_t i = 0; i < row->n && i < schema->ncols; i++) {
    const wd_value_t *v = &row->v[i];
    if (v->is_null) continue;
    wd_type_id_t id = schema->cols[i].type->id;
    bool outside = id == WD_ARRAY || id == WD_MAP || id == WD_ROW ||
                   (wd_is_bytes_type(schema->cols[i].type) &&
                    (!row->blk || (uintptr_t)v->s.p - (uintptr_t)row->blk >= row->blk_len));
    if (outside) {
      fprintf(stderr, "wd_row_destroy: a row flagged blk_only owns column %zu's value outside its block\n", i);
      abort();
    }
  }
}
#endif

void wd_row_destroy(const wd_schema_t *schema, wd_row_t *row) {
  if (!row) return;
  if (row->shares) {
    row->shares--;
    return;
  }
  if (row->base) { /* a view: its values are the base's */
    wd_row_destroy(schema, row->base);
    free(row->absent);
    free(row);
    return;
  }
#if defined(__SANITIZE_ADDRESS__)
  if (row->blk_only) wd_row_check_blk_only(schema, row);
#endif
  /* what the values own (the values themselves go with the row): scalars nothing, text its bytes
   * unless they are in the row's block, nested values everything below them; a blk_only row owns
   * nothing of the kind, and only the columns of schema->var can */
  if (!row->blk_only) {
    size_t n = row->n < schema->ncols ? row->n : schema->ncols;
    for (size_t k = 0; k < schema->nvar && (size_t)schema->var[k] < n; k++) {
      wd_value_t *v = &row->v[schema->var[k]];
      if (v->is_null) continue;
      const wd_type_t *t = schema->cols[schema->var[k]].type;
      if (wd_is_bytes_type(t)) {
        if (!row->blk || (uintptr_t)v->s.p - (uintptr_t)row->blk >= row->blk_len) free(v->s.p);
      } else {
        wd_value_clear(t, v);
      }
    }
  }
  free(row->absent);
  if (row->v != ((wd_row_block_t *)row)->v) free(row->v); /* values allocated apart (not by wd_row_new) */
  free(row);
}

void wd_row_clear_value(const wd_schema_t *schema, wd_row_t *row, size_t col) {
  wd_value_t *v = &row->v[col];
  row->blk_only = false; /* the value set next may be the row's own */
  if (row->blk && !v->is_null && wd_is_bytes_type(schema->cols[col].type) &&
      (uintptr_t)v->s.p - (uintptr_t)row->blk < row->blk_len) {
    memset(v, 0, sizeof(*v)); /* the bytes are the block's */
    v->is_null = true;
    return;
  }
  wd_value_clear(schema->cols[col].type, v);
}

void wd_row_clear(const wd_schema_t *schema, wd_row_t *row) {
  size_t n = row->n < schema->ncols ? row->n : schema->ncols;
  /* what the values own (schema->var), then every value NULL */
  for (size_t k = 0; k < schema->nvar && (size_t)schema->var[k] < n; k++)
    if (!row->v[schema->var[k]].is_null) wd_row_clear_value(schema, row, (size_t)schema->var[k]);
  if (n) memset(row->v, 0, n * sizeof(wd_value_t));
  for (size_t i = 0; i < n; i++) row->v[i].is_null = true;
  row->blk_only = false;
  if (row->absent) { /* most rows have none: no call */
    free(row->absent);
    row->absent = NULL;
  }
}

bool wd_row_eq(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b, const bool *ignore) {
  for (size_t i = 0; i < schema->ncols; i++) {
    if (ignore && ignore[i]) continue;
    if (!wd_value_eq(schema->cols[i].type, &a->v[i], &b->v[i])) return false;
  }
  return true;
}

/*
 * Appends a self-delimiting, deterministic encoding of v (equal values give equal bytes, and
 * different values different bytes): a null byte, then the value; MAP entries in key order.
 */
static int wd_key_put(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out) {
  if (wd_buf_putc(out, v->is_null ? 0 : 1)) return -1;
  if (v->is_null) return 0;
  switch (t->id) {
  case WD_BOOLEAN: return wd_buf_putc(out, v->b ? 1 : 0);
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_DATE:
  case WD_TIME: return wd_buf_put_zigzag(out, v->i);
  case WD_FLOAT:
  case WD_DOUBLE: {
    uint64_t u = (uint64_t)wd_double_bits(v->f);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(u >> (8 * i));
    return wd_buf_append(out, b, 8);
  }
  case WD_DECIMAL: {
    unsigned __int128 u = (unsigned __int128)v->dec;
    uint8_t b[16];
    for (int i = 0; i < 16; i++) b[i] = (uint8_t)(u >> (8 * i));
    return wd_buf_append(out, b, 16);
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (wd_buf_put_zigzag(out, v->ts.us)) return -1;
    return wd_buf_put_varint(out, (uint64_t)(uint32_t)v->ts.ns);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES:
    if (wd_buf_put_varint(out, v->s.n)) return -1;
    return wd_buf_append(out, v->s.p, v->s.n);
  case WD_ARRAY:
  case WD_ROW:
    if (wd_buf_put_varint(out, v->list.n)) return -1;
    for (size_t i = 0; i < v->list.n; i++) {
      const wd_type_t *et = t->id == WD_ARRAY ? t->elem : t->fields[i].type;
      if (wd_key_put(et, &v->list.v[i], out)) return -1;
    }
    return 0;
  case WD_MAP: {
    int rc = 0;
    size_t *idx = wd_map_sorted_index(t, v);
    if (!idx) return -1;
    rc = wd_buf_put_varint(out, v->map.n);
    for (size_t i = 0; i < v->map.n && !rc; i++) {
      rc = wd_key_put(t->elem, &v->map.k[idx[i]], out);
      rc = rc ? rc : wd_key_put(t->val, &v->map.v[idx[i]], out);
    }
    free(idx);
    return rc;
  }
  }
  return -1;
}

int wd_row_key_encode(const wd_schema_t *schema, const wd_row_t *row, wd_buf_t *out) {
  for (size_t i = 0; i < schema->npk; i++) {
    int col = schema->pk[i];
    if (wd_key_put(schema->cols[col].type, &row->v[col], out)) return -1;
  }
  return 0;
}
