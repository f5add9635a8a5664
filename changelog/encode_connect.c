/*
 * changelog/encode_connect.c — Kafka Connect JsonConverter's envelope for the changelog's keys and
 * values (see changelog.h: wd_connect_*). With `sink.schemas-enable: true` every message is
 * {"schema": <Connect schema>, "payload": <value>} as JsonConverter with schemas.enable=true writes
 * and reads it (Apache Kafka connect/json JsonConverter, JsonSchema), so that a Connect sink
 * connector (Debezium's JDBC sink and any other) gets typed Structs: the value is a Debezium change
 * event (before/after/op/ts_ms/source, schema named "<table>.Envelope" as Debezium names its
 * envelopes), the key a struct "<table>.Key" of the primary-key columns.
 *
 * Types (Connect's own logical types, org.apache.kafka.connect.data.*):
 *   BOOLEAN boolean; TINYINT int8; SMALLINT int16; INT int32; BIGINT int64; FLOAT float;
 *   DOUBLE double; CHAR/VARCHAR/STRING string; BYTES bytes (base64);
 *   DECIMAL(p,s)   bytes named org.apache.kafka.connect.data.Decimal, parameters scale (and
 *                  connect.decimal.precision), the unscaled value as big-endian two's complement
 *                  in the fewest bytes (Java's BigInteger.toByteArray), base64;
 *   DATE           int32 named ...Date: days since 1970-01-01;
 *   TIME(p)        int32 named ...Time: milliseconds since midnight (finer digits dropped);
 *   TIMESTAMP(p), TIMESTAMP_LTZ(p)
 *                  int64 named ...Timestamp: milliseconds since the epoch, floored (finer digits
 *                  dropped: Connect's Timestamp has milliseconds);
 *   ARRAY array; MAP map (a JSON object when the keys are text, else an array of [key, value]
 *   pairs, as JsonConverter writes maps); ROW struct.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "changelog/changelog.h"

#define LIT(out, lit) wd_buf_append((out), (lit), sizeof(lit) - 1)

static int put_s(wd_buf_t *out, const char *s) { return wd_buf_append(out, s, strlen(s)); }

static int put_i64(wd_buf_t *out, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof(b), "%lld", (long long)v);
  return wd_buf_append(out, b, (size_t)n);
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Connect's schema of type t; field names the struct field (NULL: none), optional as given. */
static int put_schema(wd_buf_t *out, const wd_type_t *t, const char *field, bool optional) {
  int rc = 0;
  switch (t->id) {
  case WD_BOOLEAN: rc = LIT(out, "{\"type\":\"boolean\""); break;
  case WD_TINYINT: rc = LIT(out, "{\"type\":\"int8\""); break;
  case WD_SMALLINT: rc = LIT(out, "{\"type\":\"int16\""); break;
  case WD_INT: rc = LIT(out, "{\"type\":\"int32\""); break;
  case WD_BIGINT: rc = LIT(out, "{\"type\":\"int64\""); break;
  case WD_FLOAT: rc = LIT(out, "{\"type\":\"float\""); break;
  case WD_DOUBLE: rc = LIT(out, "{\"type\":\"double\""); break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: rc = LIT(out, "{\"type\":\"string\""); break;
  case WD_BYTES: rc = LIT(out, "{\"type\":\"bytes\""); break;
  case WD_DECIMAL: {
    char b[160];
    int n = snprintf(b, sizeof(b),
                     "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\",\"version\":1,"
                     "\"parameters\":{\"scale\":\"%d\",\"connect.decimal.precision\":\"%d\"}",
                     t->scale, t->precision);
    rc = wd_buf_append(out, b, (size_t)n);
    break;
  }
  case WD_DATE:
    rc = LIT(out, "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Date\",\"version\":1");
    break;
  case WD_TIME:
    rc = LIT(out, "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Time\",\"version\":1");
    break;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    rc = LIT(out, "{\"type\":\"int64\",\"name\":\"org.apache.kafka.connect.data.Timestamp\",\"version\":1");
    break;
  case WD_ARRAY:
    rc = LIT(out, "{\"type\":\"array\",\"items\":") || put_schema(out, t->elem, NULL, !t->elem->not_null);
    break;
  case WD_MAP:
    rc = LIT(out, "{\"type\":\"map\",\"keys\":") || put_schema(out, t->elem, NULL, false) || LIT(out, ",\"values\":") ||
         put_schema(out, t->val, NULL, !t->val->not_null);
    break;
  case WD_ROW:
    rc = LIT(out, "{\"type\":\"struct\",\"fields\":[");
    for (size_t i = 0; i < t->nfields && !rc; i++)
      rc = (i && wd_buf_putc(out, ',')) ||
           put_schema(out, t->fields[i].type, t->fields[i].name, !t->fields[i].type->not_null);
    if (!rc) rc = wd_buf_putc(out, ']');
    break;
  }
  if (!rc) rc = put_s(out, optional ? ",\"optional\":true" : ",\"optional\":false");
  if (!rc && field) rc = LIT(out, ",\"field\":") || wd_changelog_put_string(out, field, strlen(field));
  return rc || wd_buf_putc(out, '}');
}

/* The unscaled decimal as Java's BigInteger.toByteArray (big-endian two's complement, fewest
 * bytes, at least one), base64 in quotes. */
static int put_decimal(wd_buf_t *out, wd_i128 v) {
  uint8_t be[16];
  unsigned __int128 u = (unsigned __int128)v;
  for (int i = 15; i >= 0; i--) {
    be[i] = (uint8_t)(u & 0xff);
    u >>= 8;
  }
  int start = 0;
  while (start < 15 &&
         ((be[start] == 0x00 && !(be[start + 1] & 0x80)) || (be[start] == 0xff && (be[start + 1] & 0x80))))
    start++;
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *p = be + start;
  size_t n = (size_t)(16 - start);
  if (wd_buf_putc(out, '"')) return -1;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char q[4] = {b64[w >> 18 & 63], b64[w >> 12 & 63], i + 1 < n ? b64[w >> 6 & 63] : '=',
                 i + 2 < n ? b64[w & 63] : '='};
    if (wd_buf_append(out, q, 4)) return -1;
  }
  return wd_buf_putc(out, '"');
}

/* The payload form of a value (JsonConverter's convertToJson of the schema put_schema writes). */
static int put_value(wd_buf_t *out, const wd_type_t *t, const wd_value_t *v) {
  if (v->is_null) return LIT(out, "null");
  switch (t->id) {
  case WD_DECIMAL: return put_decimal(out, v->dec);
  case WD_DATE: return put_i64(out, v->i);
  case WD_TIME: return put_i64(out, floor_div(v->i, 1000000));
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: return put_i64(out, floor_div(v->ts.us, 1000));
  case WD_ARRAY: {
    if (wd_buf_putc(out, '[')) return -1;
    for (size_t i = 0; i < v->list.n; i++)
      if ((i && wd_buf_putc(out, ',')) || put_value(out, t->elem, &v->list.v[i])) return -1;
    return wd_buf_putc(out, ']');
  }
  case WD_ROW: {
    if (wd_buf_putc(out, '{')) return -1;
    for (size_t i = 0; i < v->list.n && i < t->nfields; i++)
      if ((i && wd_buf_putc(out, ',')) || wd_changelog_put_string(out, t->fields[i].name, strlen(t->fields[i].name)) ||
          wd_buf_putc(out, ':') || put_value(out, t->fields[i].type, &v->list.v[i]))
        return -1;
    return wd_buf_putc(out, '}');
  }
  case WD_MAP: {
    bool text = wd_type_is_text(t->elem);
    if (wd_buf_putc(out, text ? '{' : '[')) return -1;
    for (size_t i = 0; i < v->map.n; i++) {
      if (i && wd_buf_putc(out, ',')) return -1;
      const wd_value_t *k = &v->map.k[i];
      if (text) {
        if (k->is_null ? LIT(out, "\"\"") : wd_changelog_put_string(out, k->s.n ? k->s.p : "", k->s.n)) return -1;
        if (wd_buf_putc(out, ':') || put_value(out, t->val, &v->map.v[i])) return -1;
      } else if (wd_buf_putc(out, '[') || put_value(out, t->elem, k) || wd_buf_putc(out, ',') ||
                 put_value(out, t->val, &v->map.v[i]) || wd_buf_putc(out, ']')) {
        return -1;
      }
    }
    return wd_buf_putc(out, text ? '}' : ']');
  }
  default: return wd_changelog_put_value(out, t, v);
  }
}

/* The struct schema of the table's columns (all, or the primary key's when key) named
 * "<table>.<suffix>". */
static int put_row_schema(wd_buf_t *out, const wd_schema_t *schema, const char *table, bool key, const char *suffix,
                          const char *field, bool optional) {
  int rc = LIT(out, "{\"type\":\"struct\",\"fields\":[");
  size_t n = key ? schema->npk : schema->ncols;
  for (size_t k = 0; k < n && !rc; k++) {
    size_t c = key ? (size_t)schema->pk[k] : k;
    const wd_field_t *f = &schema->cols[c];
    bool is_pk = false;
    for (size_t j = 0; j < schema->npk; j++) is_pk |= (size_t)schema->pk[j] == c;
    rc = (k && wd_buf_putc(out, ',')) || put_schema(out, f->type, f->name, !is_pk && !f->type->not_null);
  }
  if (!rc) rc = LIT(out, "],\"optional\":") || put_s(out, optional ? "true" : "false");
  if (!rc) {
    char name[512];
    snprintf(name, sizeof(name), "%s.%s", table ? table : "widen", suffix);
    rc = LIT(out, ",\"name\":") || wd_changelog_put_string(out, name, strlen(name));
  }
  if (!rc && field) rc = LIT(out, ",\"field\":") || put_s(out, "\"") || put_s(out, field) || put_s(out, "\"");
  return rc || wd_buf_putc(out, '}');
}

static int put_row(wd_buf_t *out, const wd_schema_t *schema, const wd_row_t *row, bool key) {
  if (!row) return LIT(out, "null");
  if (wd_buf_putc(out, '{')) return -1;
  size_t n = key ? schema->npk : schema->ncols;
  for (size_t k = 0; k < n; k++) {
    size_t c = key ? (size_t)schema->pk[k] : k;
    const wd_field_t *f = &schema->cols[c];
    if ((k && wd_buf_putc(out, ',')) || wd_changelog_put_string(out, f->name, strlen(f->name)) ||
        wd_buf_putc(out, ':') || put_value(out, f->type, &row->v[c]))
      return -1;
  }
  return wd_buf_putc(out, '}');
}

wd_error_t *wd_connect_encode_key(const wd_schema_t *schema, const char *table, const wd_row_t *row, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = LIT(out, "{\"schema\":") || put_row_schema(out, schema, table, true, "Key", NULL, false) ||
           LIT(out, ",\"payload\":") || put_row(out, schema, row, true) || wd_buf_putc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

wd_error_t *wd_connect_encode_string_key(const char *text, size_t n, wd_buf_t *out) {
  size_t mark = out->len;
  int rc = LIT(out, "{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":") ||
           wd_changelog_put_string(out, text, n) || wd_buf_putc(out, '}');
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}

wd_error_t *wd_connect_encode_debezium(const wd_schema_t *schema, const char *table, int64_t ts_ms, wd_row_kind_t kind,
                                       const wd_row_t *before, const wd_row_t *after, wd_buf_t *out) {
  const char *op;
  wd_error_t *err = wd_changelog_debezium_op(kind, &before, &after, &op);
  if (err) return err;
  size_t mark = out->len;
  int rc = LIT(out, "{\"schema\":{\"type\":\"struct\",\"fields\":[") ||
           put_row_schema(out, schema, table, false, "Value", "before", true) || wd_buf_putc(out, ',') ||
           put_row_schema(out, schema, table, false, "Value", "after", true) ||
           LIT(out, ",{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"name\"},"
                    "{\"type\":\"string\",\"optional\":true,\"field\":\"table\"}],\"optional\":false,"
                    "\"name\":\"io.widen.Source\",\"field\":\"source\"},"
                    "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},"
                    "{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"}],\"optional\":false,\"name\":");
  if (!rc) {
    char name[512];
    snprintf(name, sizeof(name), "%s.Envelope", table ? table : "widen");
    rc = wd_changelog_put_string(out, name, strlen(name));
  }
  if (!rc) rc = LIT(out, ",\"version\":1},\"payload\":{\"before\":") || put_row(out, schema, before, false);
  if (!rc) rc = LIT(out, ",\"after\":") || put_row(out, schema, after, false);
  if (!rc) rc = LIT(out, ",\"source\":{\"name\":\"widen\",\"table\":");
  if (!rc) rc = table ? wd_changelog_put_string(out, table, strlen(table)) : LIT(out, "null");
  if (!rc) rc = LIT(out, "},\"op\":\"") || put_s(out, op) || LIT(out, "\",\"ts_ms\":");
  if (!rc) rc = ts_ms < 0 ? LIT(out, "null") : put_i64(out, ts_ms);
  if (!rc) rc = LIT(out, "}}");
  if (rc) {
    out->len = mark;
    return wd_error_nomem();
  }
  return NULL;
}
