/*
 * ingest/event.c — the part of decoding that every source format shares (ingest/format.h): one
 * event (op + row images) into change records, `$kafka.*` metadata, key checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/conv.h"
#include "ingest/format.h"

bool wd_event_same_key(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b) {
  for (size_t k = 0; k < schema->npk; k++) {
    int col = schema->pk[k];
    if (!wd_value_eq(schema->cols[col].type, &a->v[col], &b->v[col])) return false;
  }
  return true;
}

static wd_error_t *wd_ev_set_text(wd_value_t *v, const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return wd_error_nomem();
  if (n) memcpy(s, p, n);
  s[n] = 0;
  v->is_null = false;
  v->s.p = s;
  v->s.n = n;
  return NULL;
}

static wd_error_t *wd_ev_kafka_error(const wd_source_t *src, const wd_schema_t *schema, const wd_source_col_t *c,
                                     const char *what) {
  const wd_field_t *col = &schema->cols[c->col];
  char *ts = wd_type_to_string(col->type);
  wd_error_t *err = wd_error_new(WD_ERR_RECORD, E_TYPE,
                                 "source '%s': field %s -> column '%s' %s: cannot convert the "
                                 "value: %s",
                                 src->name, c->spec, col->name, ts ? ts : "?", what);
  free(ts);
  return err;
}

wd_error_t *wd_event_kafka_value(const wd_source_t *src, const wd_schema_t *schema, const wd_source_col_t *c,
                                 const wd_kafka_meta_t *m, wd_value_t *v) {
  if (!m) return NULL;
  const wd_type_t *t = schema->cols[c->col].type;
  int64_t iv;
  char what[96];
  switch (c->kafka) {
  case WD_KAFKA_TOPIC: return m->topic ? wd_ev_set_text(v, m->topic, strlen(m->topic)) : NULL;
  case WD_KAFKA_KEY: return m->key ? wd_ev_set_text(v, m->key, m->key_len) : NULL;
  case WD_KAFKA_PARTITION: iv = m->partition; break;
  case WD_KAFKA_OFFSET: iv = m->offset; break;
  case WD_KAFKA_TIMESTAMP: iv = m->timestamp; break;
  default: return NULL;
  }
  if (iv < 0) return NULL;
  switch (t->id) {
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (iv > wd_type_int_max(t)) {
      snprintf(what, sizeof(what), "%lld is out of range", (long long)iv);
      return wd_ev_kafka_error(src, schema, c, what);
    }
    v->i = iv;
    break;
  case WD_DECIMAL: {
    wd_i128 u, lim = 1;
    for (int i = 0; i < t->precision; i++) lim *= 10;
    if (wd_conv_rescale(iv, 0, t->scale, &u) || u >= lim) {
      snprintf(what, sizeof(what), "%lld does not fit precision %d", (long long)iv, t->precision);
      return wd_ev_kafka_error(src, schema, c, what);
    }
    v->dec = u;
    break;
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    if (iv > INT64_MAX / 1000) {
      snprintf(what, sizeof(what), "%lld ms is out of range", (long long)iv);
      return wd_ev_kafka_error(src, schema, c, what);
    }
    int64_t us = iv * 1000;
    int p = t->precision < 0 ? 0 : t->precision;
    if (p < 6) {
      int64_t q = 1;
      for (int i = p; i < 6; i++) q *= 10;
      us -= wd_floormod(us, q);
    }
    v->ts.us = us;
    v->ts.ns = 0;
    break;
  }
  default: {
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%lld", (long long)iv);
    return wd_ev_set_text(v, tmp, (size_t)n);
  }
  }
  v->is_null = false;
  return NULL;
}

/* E_TYPE when the converted value v of source column c lies outside its column type's range
 * (wd_value_in_range: the years 0001-9999, integers inside their type, ...). Every format's
 * decoder reaches it through wd_ev_build, the one point where a converted value enters a record. */
static wd_error_t *wd_ev_check_range(const wd_source_t *src, const wd_schema_t *schema, const wd_source_col_t *c,
                                     const wd_value_t *v) {
  const wd_type_t *t = schema->cols[c->col].type;
  switch (t->id) { /* the types whose values wd_value_in_range accepts whatever they hold: no call */
  case WD_BOOLEAN:
  case WD_FLOAT:
  case WD_DOUBLE:
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: return NULL;
  default: break;
  }
  char why[128];
  if (wd_value_in_range(t, v, why, sizeof(why))) return NULL;
  char what[160];
  snprintf(what, sizeof(what), "outside the type's range: %s", why);
  return wd_ev_kafka_error(src, schema, c, what);
}

/* Builds one record of kind from image (handle img, NULL when none). key_only: only the
 * primary-key columns are read from the image (an update without a before image). For a
 * retraction (-U/-D), every IMAGE-mapped column the image does not have is marked absent.
 * nullkey: NULL, or where a half whose key column is NULL in an image that has it (the field is
 * there, its value null) is reported instead of failing: *nullkey = true, no error, and the row
 * is left out of out again (a NULL key holds no row; see wd_event_emit). */
static wd_error_t *wd_ev_build(const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                               const wd_image_reader_t *rd, const wd_event_t *ev, int image, const void *img,
                               bool key_only, wd_row_kind_t kind, wd_changes_t *out, wd_row_t **rowp, bool *nullkey) {
  wd_error_t *err = NULL;
  if (nullkey) *nullkey = false;
  wd_row_t *row = wd_changes_add(out, schema, kind);
  if (!row) return wd_error_nomem();
  bool retract = kind == WD_UPDATE_BEFORE || kind == WD_DELETE;
  if (img && rd->begin && (err = rd->begin(rd->ctx, image, img))) return err;
  const char *iname = rd->image_names[image];
  int missing_pk = -1; /* first primary-key IMAGE column absent from the image */
  for (size_t m = 0; m < src->ncols; m++) {
    const wd_source_col_t *c = &src->cols[m];
    wd_value_t *v = &row->v[c->col];
    bool pk = wd_schema_is_pk(schema, c->col);
    if (c->kind == WD_MAP_KAFKA) {
      if ((err = wd_event_kafka_value(src, schema, c, meta, v)) || (err = wd_ev_check_range(src, schema, c, v)))
        return err;
      continue;
    }
    bool present = false;
    if (c->kind == WD_MAP_IMAGE && (!img || (key_only && !pk))) {
      present = false;
    } else if ((err = rd->value(rd->ctx, image, img, m, v, &present)) || (err = wd_ev_check_range(src, schema, c, v))) {
      return err;
    }
    /* Debezium's unavailable.value.placeholder (a TOAST column the change did not touch): not carried */
    if (c->kind == WD_MAP_IMAGE && present && !pk && wd_source_unavailable(src, schema->cols[c->col].type, v)) {
      wd_value_clear(schema->cols[c->col].type, v);
      v->is_null = true;
      if (wd_row_set_absent(row, (size_t)c->col)) return wd_error_nomem();
      continue;
    }
    if (c->kind != WD_MAP_IMAGE || present) continue;
    if (pk) {
      if (missing_pk < 0) missing_pk = (int)m;
    } else if (retract && wd_row_set_absent(row, (size_t)c->col)) {
      return wd_error_nomem();
    }
  }
  for (size_t k = 0; k < schema->npk; k++) {
    int col = schema->pk[k];
    if (!row->v[col].is_null) continue;
    const wd_source_col_t *c = NULL;
    for (size_t m = 0; m < src->ncols && !c; m++)
      if (src->cols[m].col == col) c = &src->cols[m];
    const char *cname = schema->cols[col].name;
    if (!c)
      return wd_error_new(WD_ERR_RECORD, E_NO_KEY, "source '%s': primary-key column '%s' is not mapped by the source",
                          src->name, cname);
    if (c->kind == WD_MAP_IMAGE && !img)
      return wd_error_new(WD_ERR_RECORD, E_NO_KEY,
                          "source '%s': op '%s' has no %s image (\"%s\": null), so primary-key column '%s' (from "
                          "'%s') is missing",
                          src->name, ev->op_text, iname, iname, cname, c->spec);
    bool missing = missing_pk >= 0 && src->cols[missing_pk].col == col;
    if (c->kind == WD_MAP_IMAGE && !missing && nullkey) {
      *nullkey = true;
      wd_row_clear(schema, out->rows[--out->count]); /* back to a spare row */
      out->null_key_halves++;
      *rowp = NULL;
      return NULL;
    }
    if (c->kind == WD_MAP_IMAGE)
      return wd_error_new(WD_ERR_RECORD, E_NO_KEY,
                          "source '%s': op '%s': primary-key column '%s' is %s in the %s image (field '%s')", src->name,
                          ev->op_text, cname, missing ? "missing" : "null", iname, c->spec);
    return wd_error_new(WD_ERR_RECORD, E_NO_KEY,
                        "source '%s': op '%s': primary-key column '%s' is missing or null (from '%s')", src->name,
                        ev->op_text, cname, c->spec);
  }
  *rowp = row;
  return NULL;
}

wd_error_t *wd_event_emit(const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                          const wd_image_reader_t *rd, const wd_event_t *ev, wd_changes_t *out) {
  wd_error_t *err = NULL;
  wd_row_t *rb = NULL, *ra = NULL;
  size_t first = out->count;
  if ((ev->op == WD_EV_INSERT || ev->op == WD_EV_UPDATE) && !ev->after) {
    return wd_error_new(WD_ERR_DECODE, E_DECODE,
                        "source '%s': op \"%s\" without an after image (\"%s\" is null "
                        "or absent)",
                        src->name, ev->op_text, rd->image_names[WD_IMAGE_AFTER]);
  }
  /* Each half of an update stands on its own: a half whose key is NULL is left out
   * and counted in out->null_key_halves. A NULL key holds no row, so a retraction (-U/-D) of one
   * has nothing to retract, and an add half (+U) cannot be stored under it: an update NULL -> K
   * is +I(K), K -> NULL is -D(K) (the row leaves the keyed table), NULL -> NULL is nothing. A
   * delete of a NULL key is nothing either. An insert (or a row kind +I/+U) with a NULL key
   * stays E_NO_KEY: it is the whole message, and dead-lettering it loses nothing. */
  bool bnull = false, anull = false;
  switch (ev->op) {
  case WD_EV_INSERT:
    err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_AFTER, ev->after, false, WD_INSERT, out, &ra, NULL);
    break;
  case WD_EV_UPDATE:
    if (ev->before) {
      if ((err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_BEFORE, ev->before, false, WD_UPDATE_BEFORE, out, &rb,
                             &bnull)))
        break;
    } else if ((err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_AFTER, ev->after, true, WD_UPDATE_BEFORE, out,
                                  &rb, &bnull))) {
      break; /* no before image: the key of after, the rest from the stored row */
    }
    if ((err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_AFTER, ev->after, false, WD_UPDATE_AFTER, out, &ra,
                           &anull)))
      break;
    if (rb && ra && !wd_event_same_key(schema, rb, ra)) {
      rb->kind = WD_DELETE;
      ra->kind = WD_INSERT;
    } else if (rb && !ra) {
      rb->kind = WD_DELETE; /* K -> NULL */
    } else if (ra && !rb) {
      ra->kind = WD_INSERT; /* NULL -> K */
    }
    break;
  case WD_EV_DELETE:
    err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_BEFORE, ev->before, false, WD_DELETE, out, &rb, &bnull);
    break;
  case WD_EV_ROW: {
    bool retract = ev->kind == WD_UPDATE_BEFORE || ev->kind == WD_DELETE;
    err = wd_ev_build(src, schema, meta, rd, ev, WD_IMAGE_AFTER, ev->after, false, ev->kind, out, &ra,
                      retract ? &bnull : NULL);
    break;
  }
  }
  if (err && err != wd_error_nomem()) err->index = (int)(out->count > first ? out->count - 1 : first);
  return err;
}
