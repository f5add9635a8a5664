/*
 * common/json.c — values and rows to and from JSON (jansson), spec §12.2 (see json.h).
 *
 * Pure functions: any thread may call them (jansson values are not shared between threads here).
 */
#include "common/json.h"
#include "common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A short description of what a JSON value is, for error messages. */
static const char *wd_json_kind(const json_t *j) {
  if (!j) return "nothing (missing)";
  switch (json_typeof(j)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE: return "true";
  case JSON_FALSE: return "false";
  case JSON_NULL: return "null";
  }
  return "something else";
}

/* E_TYPE: "expected <type>, got <kind of j>". */
static wd_error_t *wd_json_type_err(const wd_type_t *t, const json_t *j) {
  char *tname = wd_type_to_string(t);
  wd_error_t *err =
      wd_error_new(WD_ERR_RECORD, E_TYPE, "expected %s, got %s", tname ? tname : "a value", wd_json_kind(j));
  free(tname);
  return err;
}

/* E_ARITH_OVERFLOW for a number out of the range of integer type t. */
static wd_error_t *wd_json_range_err(const wd_type_t *t, const char *num) {
  char *tname = wd_type_to_string(t);
  wd_error_t *err =
      wd_error_new(WD_ERR_RECORD, E_ARITH_OVERFLOW, "%s is out of the range of %s", num, tname ? tname : "the type");
  free(tname);
  return err;
}

/*
 * Returns an error like err (same class and id) whose text is prefixed with "<ctx>: ", keeping
 * the message's leading id. Takes ownership of err.
 */
static wd_error_t *wd_json_err_at(wd_error_t *err, const char *fmt, const char *arg) {
  if (!err || err == wd_error_nomem()) return err;
  char ctx[256];
  snprintf(ctx, sizeof(ctx), fmt, arg);
  size_t idlen = err->id[0] ? strlen(err->id) + 2 : 0;
  const char *text = strlen(err->message) >= idlen ? err->message + idlen : err->message;
  wd_error_t *e2 = wd_error_make(err->cls, err->eid, "%s: %s", ctx, text);
  e2->index = err->index;
  wd_error_destroy(err);
  return e2;
}

/* Shortest decimal text of d that reads back as d (as a JSON writer most likely wrote it). */
static void wd_json_real_text(double d, char *buf, size_t n) { wd_float_shortest(d, false, buf, n); }

/* Integer value of j for integer type t (range-checked). */
static wd_error_t *wd_json_int(const wd_type_t *t, const json_t *j, int64_t *out) {
  char num[64];
  int64_t v;
  if (json_is_integer(j)) {
    v = (int64_t)json_integer_value(j);
    snprintf(num, sizeof(num), "%lld", (long long)v);
  } else if (json_is_real(j)) {
    double d = json_real_value(j);
    wd_json_real_text(d, num, sizeof(num));
    if (!isfinite(d) || d != trunc(d)) return wd_json_type_err(t, j);
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return wd_json_range_err(t, num);
    v = (int64_t)d;
  } else if (json_is_string(j)) {
    wd_value_t tmp;
    wd_error_t *err = wd_value_parse_text(t, json_string_value(j), json_string_length(j), &tmp);
    if (!err) *out = tmp.i;
    return err;
  } else {
    return wd_json_type_err(t, j);
  }
  if (v < wd_type_int_min(t) || v > wd_type_int_max(t)) return wd_json_range_err(t, num);
  *out = v;
  return NULL;
}

/* Converts a JSON array into an ARRAY value (out is NULL on entry). */
static wd_error_t *wd_json_array(const wd_type_t *t, const json_t *j, wd_value_t *out) {
  size_t n = json_array_size(j);
  out->list.v = calloc(n ? n : 1, sizeof(wd_value_t));
  if (!out->list.v) return wd_error_nomem();
  for (size_t i = 0; i < n; i++) out->list.v[i].is_null = true;
  out->list.n = n;
  out->is_null = false;
  for (size_t i = 0; i < n; i++) {
    wd_error_t *err = wd_value_from_json(t->elem, json_array_get(j, i), &out->list.v[i]);
    if (err) {
      char idx[32];
      snprintf(idx, sizeof(idx), "%zu", i);
      return wd_json_err_at(err, "element [%s]", idx);
    }
  }
  return NULL;
}

/*
 * Converts a JSON object keyed by field name (missing fields NULL, unknown ones refused) or a
 * JSON array of the field values in order into a ROW value (out is NULL on entry).
 */
static wd_error_t *wd_json_row(const wd_type_t *t, const json_t *j, wd_value_t *out) {
  size_t n = t->nfields;
  if (json_is_array(j) && json_array_size(j) != n) return wd_json_type_err(t, j);
  out->list.v = calloc(n ? n : 1, sizeof(wd_value_t));
  if (!out->list.v) return wd_error_nomem();
  for (size_t i = 0; i < n; i++) out->list.v[i].is_null = true;
  out->list.n = n;
  out->is_null = false;
  if (json_is_object(j)) {
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val) {
      size_t i = 0;
      while (i < n && strcmp(t->fields[i].name, key) != 0) i++;
      if (i == n) {
        char *tname = wd_type_to_string(t);
        wd_error_t *err =
            wd_error_new(WD_ERR_RECORD, E_TYPE, "field '%s' is not in %s", key, tname ? tname : "the ROW");
        free(tname);
        return err;
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *fj = json_is_object(j) ? json_object_get(j, t->fields[i].name) : json_array_get(j, i);
    wd_error_t *err = wd_value_from_json(t->fields[i].type, fj, &out->list.v[i]);
    if (err) return wd_json_err_at(err, "field '%s'", t->fields[i].name);
  }
  return NULL;
}

/* Converts a JSON object keyed by the keys' canonical text into a MAP value (out NULL on entry). */
static wd_error_t *wd_json_map(const wd_type_t *t, const json_t *j, wd_value_t *out) {
  size_t cap = json_object_size(j);
  const char *key;
  json_t *val;
  out->map.k = calloc(cap ? cap : 1, sizeof(wd_value_t));
  out->map.v = calloc(cap ? cap : 1, sizeof(wd_value_t));
  if (!out->map.k || !out->map.v) {
    free(out->map.k);
    free(out->map.v);
    out->map.k = out->map.v = NULL;
    return wd_error_nomem();
  }
  out->is_null = false;
  out->map.n = 0;
  json_object_foreach((json_t *)j, key, val) {
    wd_value_t k, v;
    wd_error_t *err = NULL;
    if (t->elem->id == WD_ARRAY || t->elem->id == WD_MAP || t->elem->id == WD_ROW) {
      return wd_error_new(WD_ERR_RECORD, E_TYPE, "MAP keys of type ARRAY, MAP or ROW are not supported in JSON");
    }
    err = wd_value_parse_text(t->elem, key, strlen(key), &k);
    if (err) return wd_json_err_at(err, "map key '%s'", key);
    err = wd_value_from_json(t->val, val, &v);
    if (err) {
      wd_value_clear(t->elem, &k);
      return wd_json_err_at(err, "map value of '%s'", key);
    }
    size_t i = 0;
    while (i < out->map.n && !wd_value_eq(t->elem, &out->map.k[i], &k)) i++;
    if (i < out->map.n) { /* the same key written twice ("1" and "01"): the last one wins */
      wd_value_clear(t->elem, &k);
      wd_value_move(t->val, &out->map.v[i], &v);
    } else {
      out->map.k[i] = k;
      out->map.v[i] = v;
      out->map.n++;
    }
  }
  return NULL;
}

wd_error_t *wd_value_from_json(const wd_type_t *t, const json_t *j, wd_value_t *out) {
  wd_error_t *err = NULL;
  memset(out, 0, sizeof(*out));
  out->is_null = true;
  if (!j || json_is_null(j)) return NULL;
  switch (t->id) {
  case WD_BOOLEAN:
    if (json_is_boolean(j)) {
      out->b = json_is_true(j);
      out->is_null = false;
    } else if (json_is_string(j)) {
      err = wd_value_parse_text(t, json_string_value(j), json_string_length(j), out);
    } else {
      err = wd_json_type_err(t, j);
    }
    break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    err = wd_json_int(t, j, &out->i);
    if (!err) out->is_null = false;
    break;
  case WD_FLOAT:
  case WD_DOUBLE:
    if (json_is_number(j)) {
      double d = json_number_value(j);
      out->f = t->id == WD_FLOAT ? (double)(float)d : d;
      out->is_null = false;
    } else if (json_is_string(j)) {
      err = wd_value_parse_text(t, json_string_value(j), json_string_length(j), out);
    } else {
      err = wd_json_type_err(t, j);
    }
    break;
  case WD_DECIMAL: {
    char num[64];
    if (json_is_string(j)) {
      err = wd_decimal_parse(json_string_value(j), json_string_length(j), t->precision, t->scale, &out->dec);
    } else if (json_is_integer(j)) {
      snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(j));
      err = wd_decimal_parse(num, strlen(num), t->precision, t->scale, &out->dec);
    } else if (json_is_real(j) && isfinite(json_real_value(j))) {
      wd_json_real_text(json_real_value(j), num, sizeof(num));
      err = wd_decimal_parse(num, strlen(num), t->precision, t->scale, &out->dec);
    } else {
      err = wd_json_type_err(t, j);
    }
    if (!err) out->is_null = false;
    break;
  }
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
    if (!json_is_string(j)) {
      err = wd_json_type_err(t, j);
    } else if (wd_value_set_bytes(out, json_string_value(j), json_string_length(j))) {
      err = wd_error_nomem();
    }
    break;
  case WD_BYTES:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (json_is_string(j)) err = wd_value_parse_text(t, json_string_value(j), json_string_length(j), out);
    else err = wd_json_type_err(t, j);
    break;
  case WD_ARRAY:
    if (json_is_array(j)) err = wd_json_array(t, j, out);
    else err = wd_json_type_err(t, j);
    break;
  case WD_ROW:
    if (json_is_object(j) || json_is_array(j)) err = wd_json_row(t, j, out);
    else err = wd_json_type_err(t, j);
    break;
  case WD_MAP:
    if (json_is_object(j)) err = wd_json_map(t, j, out);
    else err = wd_json_type_err(t, j);
    break;
  }
  if (err) wd_value_clear(t, out);
  return err;
}

/*
 * A JSON string of the bytes p[0..n): as is when they are UTF-8, else with each invalid byte
 * replaced by U+FFFD (JSON text must be Unicode). New reference, NULL on no memory.
 */
static json_t *wd_json_text(const char *p, size_t n) {
  json_t *j = json_stringn(p, n);
  if (j) return j;
  wd_buf_t b = {0};
  int rc = 0;
  for (size_t i = 0; i < n && !rc;) {
    size_t len = wd_utf8_decode((const uint8_t *)p + i, n - i, NULL);
    if (len) {
      rc = wd_buf_append(&b, p + i, len);
      i += len;
    } else {
      rc = wd_buf_append(&b, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  j = rc ? NULL : json_stringn(b.len ? (const char *)b.data : "", b.len);
  wd_buf_free(&b);
  return j;
}

/* True when p[0..n) is valid UTF-8. */
static bool wd_utf8_valid(const char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t len = wd_utf8_decode((const uint8_t *)p + i, n - i, NULL);
    if (!len) return false;
    i += len;
  }
  return true;
}

/*
 * Sets key (text of n bytes) of obj to val (reference stolen, also on failure), replacing invalid
 * UTF-8 in the key. 0 or -1 on no memory.
 */
static int wd_json_setn(json_t *obj, const char *key, size_t n, json_t *val) {
  if (!val) return -1;
  if (wd_utf8_valid(key, n)) return json_object_setn_new(obj, key, n, val);
  json_t *k = wd_json_text(key, n);
  int rc = -1;
  if (k) rc = json_object_setn_new(obj, json_string_value(k), json_string_length(k), val);
  else json_decref(val);
  json_decref(k);
  return rc;
}

json_t *wd_value_to_json(const wd_type_t *t, const wd_value_t *v) {
  json_t *j = NULL;
  wd_buf_t b = {0};
  if (v->is_null) return json_null();
  switch (t->id) {
  case WD_BOOLEAN: j = json_boolean(v->b); break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: j = json_integer((json_int_t)v->i); break;
  case WD_FLOAT:
  case WD_DOUBLE:
    if (isnan(v->f)) j = json_string("NaN");
    else if (isinf(v->f)) j = json_string(v->f > 0 ? "Infinity" : "-Infinity");
    else j = json_real(v->f);
    break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: j = wd_json_text(v->s.p, v->s.n); break;
  case WD_DECIMAL:
  case WD_BYTES:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (wd_value_format(t, v, &b) == 0) j = json_stringn(b.len ? (const char *)b.data : "", b.len);
    break;
  case WD_ARRAY:
    j = json_array();
    for (size_t i = 0; j && i < v->list.n; i++) {
      if (json_array_append_new(j, wd_value_to_json(t->elem, &v->list.v[i]))) {
        json_decref(j);
        j = NULL;
      }
    }
    break;
  case WD_ROW:
    j = json_object();
    for (size_t i = 0; j && i < v->list.n && i < t->nfields; i++) {
      if (json_object_set_new(j, t->fields[i].name, wd_value_to_json(t->fields[i].type, &v->list.v[i]))) {
        json_decref(j);
        j = NULL;
      }
    }
    break;
  case WD_MAP:
    j = json_object();
    for (size_t i = 0; j && i < v->map.n; i++) {
      wd_buf_reset(&b);
      if (wd_value_format(t->elem, &v->map.k[i], &b) ||
          wd_json_setn(j, b.len ? (const char *)b.data : "", b.len, wd_value_to_json(t->val, &v->map.v[i]))) {
        json_decref(j);
        j = NULL;
      }
    }
    break;
  }
  wd_buf_free(&b);
  return j;
}

wd_error_t *wd_row_from_json(const wd_schema_t *schema, const json_t *obj, wd_row_t *row) {
  wd_error_t *err = NULL;
  const char *key;
  json_t *val;
  wd_row_clear(schema, row);
  if (!json_is_object(obj)) {
    err = wd_error_new(WD_ERR_RECORD, E_TYPE, "a row must be a JSON object, got %s", wd_json_kind(obj));
    goto cleanup;
  }
  json_object_foreach((json_t *)obj, key, val) {
    int col = wd_schema_find(schema, key);
    if (col < 0) {
      err = wd_error_new(WD_ERR_RECORD, E_UNKNOWN_COLUMN, "column '%s' is not in the schema", key);
      goto cleanup;
    }
    const wd_type_t *t = schema->cols[col].type;
    wd_value_t v;
    err = wd_value_from_json(t, val, &v);
    if (err) {
      err = wd_json_err_at(err, "column '%s'", key);
      goto cleanup;
    }
    wd_value_move(t, &row->v[col], &v);
  }
cleanup:
  if (err) wd_row_clear(schema, row);
  return err;
}

json_t *wd_row_to_json(const wd_schema_t *schema, const wd_row_t *row) {
  json_t *obj = json_object();
  for (size_t i = 0; obj && i < schema->ncols; i++) {
    if (json_object_set_new(obj, schema->cols[i].name, wd_value_to_json(schema->cols[i].type, &row->v[i]))) {
      json_decref(obj);
      obj = NULL;
    }
  }
  return obj;
}
