/*
 * changelog/encode_avro.c — the `avro` changelog format (see avro.h). The binary encoding is
 * written straight into a wd_buf_t (Avro's zig-zag varints, little-endian floats, length-
 * prefixed bytes, block-encoded arrays and maps); the unit tests read it back with avro-c and
 * with an independent encoder's fixtures.
 */
#include "changelog/avro.h"
#include "common/wire.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct wd_avro_sink {
  const wd_schema_t *schema;
  char *value_json;
  char *key_json;
  int32_t value_id, key_id;
};

static bool wd_avro_valid_name(const char *s) {
  if (!s || !*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
  for (const char *p = s + 1; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

/* The Avro schema JSON of t; NULL with *err set (C_AVRO_NAME) or on no memory. `name` is the
 * record name a ROW gets. */
static json_t *wd_avro_type_json(const wd_type_t *t, bool nullable, const char *name, wd_error_t **err) {
  json_t *j = NULL;
  char sub[512];
  switch (t->id) {
  case WD_BOOLEAN: j = json_string("boolean"); break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT: j = json_string("int"); break;
  case WD_BIGINT: j = json_string("long"); break;
  case WD_FLOAT: j = json_string("float"); break;
  case WD_DOUBLE: j = json_string("double"); break;
  case WD_DECIMAL:
    j = json_pack("{s:s,s:s,s:i,s:i}", "type", "bytes", "logicalType", "decimal", "precision", t->precision, "scale",
                  t->scale);
    break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: j = json_string("string"); break;
  case WD_BYTES: j = json_string("bytes"); break;
  case WD_DATE: j = json_pack("{s:s,s:s}", "type", "int", "logicalType", "date"); break;
  case WD_TIME:
    j = t->precision <= 3 ? json_pack("{s:s,s:s}", "type", "int", "logicalType", "time-millis")
                          : json_pack("{s:s,s:s}", "type", "long", "logicalType", "time-micros");
    break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    j = json_pack("{s:s,s:s}", "type", "long", "logicalType",
                  t->precision <= 3 ? "timestamp-millis" : "timestamp-micros");
    break;
  case WD_ARRAY: {
    snprintf(sub, sizeof(sub), "%s_item", name);
    json_t *e = wd_avro_type_json(t->elem, !t->elem->not_null, sub, err);
    if (!e) return NULL;
    j = json_pack("{s:s,s:o}", "type", "array", "items", e);
    break;
  }
  case WD_MAP: {
    snprintf(sub, sizeof(sub), "%s_value", name);
    json_t *e = wd_avro_type_json(t->val, !t->val->not_null, sub, err);
    if (!e) return NULL;
    j = json_pack("{s:s,s:o}", "type", "map", "values", e);
    break;
  }
  case WD_ROW: {
    json_t *fs = json_array();
    for (size_t i = 0; fs && i < t->nfields; i++) {
      if (!wd_avro_valid_name(t->fields[i].name)) {
        *err = wd_error_new(WD_ERR_CONFIG, C_AVRO_NAME, "ROW field '%s' of '%s' is not a valid Avro name",
                            t->fields[i].name, name);
        json_decref(fs);
        return NULL;
      }
      snprintf(sub, sizeof(sub), "%s_%s", name, t->fields[i].name);
      bool nl = !t->fields[i].type->not_null;
      json_t *ft = wd_avro_type_json(t->fields[i].type, nl, sub, err);
      if (!ft) {
        json_decref(fs);
        return NULL;
      }
      json_t *f = nl ? json_pack("{s:s,s:o,s:n}", "name", t->fields[i].name, "type", ft, "default")
                     : json_pack("{s:s,s:o}", "name", t->fields[i].name, "type", ft);
      if (!f || json_array_append_new(fs, f)) {
        json_decref(fs);
        fs = NULL;
      }
    }
    if (!fs) return NULL;
    j = json_pack("{s:s,s:s,s:o}", "type", "record", "name", name, "fields", fs);
    break;
  }
  }
  if (j && nullable) j = json_pack("[s,o]", "null", j);
  return j;
}

wd_error_t *wd_avro_sink_new(const wd_schema_t *schema, const char *table, wd_avro_sink_t **out) {
  *out = NULL;
  wd_error_t *err = NULL;
  if (!wd_avro_valid_name(table))
    return wd_error_new(WD_ERR_CONFIG, C_AVRO_NAME, "table name '%s' is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*)",
                        table ? table : "");
  wd_avro_sink_t *s = calloc(1, sizeof(*s));
  if (!s) return wd_error_nomem();
  s->schema = schema;
  json_t *vf = json_array(), *kf = json_array();
  json_t *vs = NULL, *ks = NULL;
  if (!vf || !kf) goto nomem;
  if (json_array_append_new(vf, json_pack("{s:s,s:s}", "name", "_row_kind", "type", "string"))) goto nomem;
  char name[512];
  for (size_t i = 0; i < schema->ncols; i++) {
    const wd_field_t *c = &schema->cols[i];
    if (!wd_avro_valid_name(c->name) || strcmp(c->name, "_row_kind") == 0) {
      err = wd_error_new(WD_ERR_CONFIG, C_AVRO_NAME, "column '%s' is not a valid Avro field name%s", c->name,
                         strcmp(c->name, "_row_kind") == 0 ? " (_row_kind is the row kind's field)" : "");
      goto fail;
    }
    bool nl = !c->type->not_null && !wd_schema_is_pk(schema, (int)i);
    snprintf(name, sizeof(name), "%s_%s", table, c->name);
    json_t *t = wd_avro_type_json(c->type, nl, name, &err);
    if (!t) goto fail_or_nomem;
    json_t *f = nl ? json_pack("{s:s,s:o,s:n}", "name", c->name, "type", t, "default")
                   : json_pack("{s:s,s:o}", "name", c->name, "type", t);
    if (!f || json_array_append_new(vf, f)) goto nomem;
  }
  for (size_t k = 0; k < schema->npk; k++) {
    const wd_field_t *c = &schema->cols[schema->pk[k]];
    snprintf(name, sizeof(name), "%s_key_%s", table, c->name);
    json_t *t = wd_avro_type_json(c->type, false, name, &err);
    if (!t) goto fail_or_nomem;
    json_t *f = json_pack("{s:s,s:o}", "name", c->name, "type", t);
    if (!f || json_array_append_new(kf, f)) goto nomem;
  }
  snprintf(name, sizeof(name), "%s_key", table);
  vs = json_pack("{s:s,s:s,s:s,s:O}", "type", "record", "name", table, "namespace", "widen", "fields", vf);
  ks = json_pack("{s:s,s:s,s:s,s:O}", "type", "record", "name", name, "namespace", "widen", "fields", kf);
  if (!vs || !ks) goto nomem;
  s->value_json = json_dumps(vs, JSON_COMPACT | JSON_PRESERVE_ORDER);
  s->key_json = json_dumps(ks, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!s->value_json || !s->key_json) goto nomem;
  json_decref(vf);
  json_decref(kf);
  json_decref(vs);
  json_decref(ks);
  *out = s;
  return NULL;
fail_or_nomem:
  if (err) goto fail;
nomem:
  err = wd_error_nomem();
fail:
  json_decref(vf);
  json_decref(kf);
  json_decref(vs);
  json_decref(ks);
  wd_avro_sink_destroy(s);
  return err;
}

void wd_avro_sink_destroy(wd_avro_sink_t *s) {
  if (!s) return;
  free(s->value_json);
  free(s->key_json);
  free(s);
}

const char *wd_avro_sink_value_schema(const wd_avro_sink_t *s) { return s->value_json; }
const char *wd_avro_sink_key_schema(const wd_avro_sink_t *s) { return s->key_json; }

void wd_avro_sink_set_ids(wd_avro_sink_t *s, int32_t value_id, int32_t key_id) {
  s->value_id = value_id;
  s->key_id = key_id;
}

/* ---- binary encoding ---------------------------------------------------------------------- */

static int wd_avro_put_bytes(wd_buf_t *out, const void *p, size_t n) {
  if (wd_buf_put_zigzag(out, (int64_t)n)) return -1;
  return n ? wd_buf_append(out, p, n) : 0;
}

static int wd_avro_put_decimal(wd_buf_t *out, wd_i128 v) {
  uint8_t b[16];
  unsigned __int128 u = (unsigned __int128)v;
  for (int i = 15; i >= 0; i--) {
    b[i] = (uint8_t)u;
    u >>= 8;
  }
  /* drop leading bytes that only repeat the sign */
  int start = 0;
  while (start < 15 && ((b[start] == 0x00 && !(b[start + 1] & 0x80)) || (b[start] == 0xff && (b[start + 1] & 0x80))))
    start++;
  return wd_avro_put_bytes(out, b + start, (size_t)(16 - start));
}

static int64_t wd_avro_floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int wd_avro_put_value(wd_buf_t *out, const wd_type_t *t, bool nullable, const wd_value_t *v) {
  if (nullable) {
    if (v->is_null) return wd_buf_put_zigzag(out, 0);
    if (wd_buf_put_zigzag(out, 1)) return -1;
  } else if (v->is_null) {
    return -2;
  }
  switch (t->id) {
  case WD_BOOLEAN: return wd_buf_putc(out, v->b ? 1 : 0);
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_DATE: return wd_buf_put_zigzag(out, v->i);
  case WD_FLOAT: {
    float f = (float)v->f;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    return wd_buf_append(out, b, 4);
  }
  case WD_DOUBLE: {
    uint64_t u;
    memcpy(&u, &v->f, 8);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(u >> (8 * i));
    return wd_buf_append(out, b, 8);
  }
  case WD_DECIMAL: return wd_avro_put_decimal(out, v->dec);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: return wd_avro_put_bytes(out, v->s.p, v->s.n);
  case WD_TIME: return wd_buf_put_zigzag(out, t->precision <= 3 ? v->i / 1000000 : v->i / 1000);
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: return wd_buf_put_zigzag(out, t->precision <= 3 ? wd_avro_floordiv(v->ts.us, 1000) : v->ts.us);
  case WD_ARRAY: {
    if (v->list.n && wd_buf_put_zigzag(out, (int64_t)v->list.n)) return -1;
    for (size_t i = 0; i < v->list.n; i++) {
      int r = wd_avro_put_value(out, t->elem, !t->elem->not_null, &v->list.v[i]);
      if (r) return r;
    }
    return wd_buf_put_zigzag(out, 0);
  }
  case WD_MAP: {
    if (v->map.n && wd_buf_put_zigzag(out, (int64_t)v->map.n)) return -1;
    wd_buf_t kt = {0};
    for (size_t i = 0; i < v->map.n; i++) {
      wd_buf_reset(&kt);
      int r = 0;
      if (v->map.k[i].is_null) r = wd_avro_put_bytes(out, "", 0);
      else if (wd_type_is_text(t->elem)) r = wd_avro_put_bytes(out, v->map.k[i].s.p, v->map.k[i].s.n);
      else r = wd_value_format(t->elem, &v->map.k[i], &kt) ? -1 : wd_avro_put_bytes(out, kt.data, kt.len);
      if (!r) r = wd_avro_put_value(out, t->val, !t->val->not_null, &v->map.v[i]);
      if (r) {
        wd_buf_free(&kt);
        return r;
      }
    }
    wd_buf_free(&kt);
    return wd_buf_put_zigzag(out, 0);
  }
  case WD_ROW:
    for (size_t i = 0; i < t->nfields; i++) {
      int r = wd_avro_put_value(out, t->fields[i].type, !t->fields[i].type->not_null, &v->list.v[i]);
      if (r) return r;
    }
    return 0;
  }
  return 0;
}

static wd_error_t *wd_avro_put_error(const wd_avro_sink_t *s, int r, int col, wd_buf_t *out, size_t len0) {
  out->len = len0;
  if (r == -1) return wd_error_nomem();
  return wd_error_new(WD_ERR_RECORD, E_NOT_NULL, "avro sink: column '%s' is NULL but its Avro type is not nullable",
                      s->schema->cols[col].name);
}

wd_error_t *wd_avro_sink_encode_value(const wd_avro_sink_t *s, const wd_row_t *row, wd_buf_t *out) {
  size_t len0 = out->len;
  uint8_t h[WD_WIRE_HEADER];
  wd_wire_header(s->value_id, h);
  const char *kind = wd_row_kind_str(row->kind);
  if (wd_buf_append(out, h, sizeof(h)) || wd_avro_put_bytes(out, kind, strlen(kind))) {
    out->len = len0;
    return wd_error_nomem();
  }
  const wd_schema_t *schema = s->schema;
  for (size_t i = 0; i < schema->ncols; i++) {
    const wd_type_t *t = schema->cols[i].type;
    int r = wd_avro_put_value(out, t, !t->not_null && !wd_schema_is_pk(schema, (int)i), &row->v[i]);
    if (r) return wd_avro_put_error(s, r, (int)i, out, len0);
  }
  return NULL;
}

wd_error_t *wd_avro_sink_encode_key(const wd_avro_sink_t *s, const wd_row_t *row, wd_buf_t *out) {
  size_t len0 = out->len;
  uint8_t h[WD_WIRE_HEADER];
  wd_wire_header(s->key_id, h);
  if (wd_buf_append(out, h, sizeof(h))) return wd_error_nomem();
  for (size_t k = 0; k < s->schema->npk; k++) {
    int col = s->schema->pk[k];
    int r = wd_avro_put_value(out, s->schema->cols[col].type, false, &row->v[col]);
    if (r) return wd_avro_put_error(s, r, col, out, len0);
  }
  return NULL;
}
