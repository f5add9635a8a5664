/*
 * app/cli/produce_avro.c — Debezium JSON events into Debezium Avro through a schema registry
 * (produce_avro.h). avro-c builds and writes the values; jansson reads the events and builds the
 * inferred schemas' JSON; ingest/schema_registry.h registers them.
 */
#include "app/cli/produce_avro.h"

#include <avro.h>
#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/schema_registry.h"

/* One half (key or value) of a topic's encoding: the inferred schema and its registry id. */
typedef struct wd_pa_half {
  avro_schema_t schema;
  avro_value_iface_t *iface;
  avro_value_t value;
  int32_t id;
  int ready;
} wd_pa_half_t;

typedef struct wd_pa_topic {
  char *name;
  wd_pa_half_t key, value;
  struct wd_pa_topic *next;
} wd_pa_topic_t;

struct wd_produce_avro {
  wd_registry_t *reg;
  wd_pa_topic_t *topics;
};

wd_error_t *wd_produce_avro_new(const char *url, wd_produce_avro_t **out) {
  *out = NULL;
  wd_produce_avro_t *pa = calloc(1, sizeof(*pa));
  if (!pa) return wd_error_nomem();
  wd_registry_conf_t rc = {url, NULL, NULL, 10000};
  wd_error_t *err = wd_registry_new(&rc, &pa->reg);
  if (err) {
    free(pa);
    return err;
  }
  *out = pa;
  return NULL;
}

static void wd_pa_half_clear(wd_pa_half_t *h) {
  if (!h->ready) return;
  avro_value_decref(&h->value);
  avro_value_iface_decref(h->iface);
  avro_schema_decref(h->schema);
  h->ready = 0;
}

void wd_produce_avro_destroy(wd_produce_avro_t *pa) {
  if (!pa) return;
  for (wd_pa_topic_t *t = pa->topics, *n; t; t = n) {
    n = t->next;
    wd_pa_half_clear(&t->key);
    wd_pa_half_clear(&t->value);
    free(t->name);
    free(t);
  }
  wd_registry_destroy(pa->reg);
  free(pa);
}

/* ---- schema inference ------------------------------------------------------------------------ */

static int wd_pa_valid_name(const char *s) {
  if (!*s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
  return 1;
}

static json_t *wd_pa_infer(json_t *j, const char *path, wd_error_t **err);

/* {"type":"record","name":name,"fields":[{name, type: ["null", T], default: null}...]} of object o;
 * path names the record's members in errors and makes nested record names unique. */
static json_t *wd_pa_record(json_t *o, const char *name, const char *path, wd_error_t **err) {
  json_t *fields = json_array(), *rec = json_pack("{s:s, s:s}", "type", "record", "name", name);
  if (!fields || !rec) goto nomem;
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    if (!wd_pa_valid_name(k)) {
      *err = wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO,
                          "member '%s%s%s' is not a valid Avro field name (letters, digits, _)", path, *path ? "." : "",
                          k);
      goto fail;
    }
    char sub[512];
    snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "_" : "", k);
    json_t *t = wd_pa_infer(v, sub, err);
    if (!t) goto fail;
    json_t *f = json_pack("{s:s, s:[s, o], s:n}", "name", k, "type", "null", t, "default");
    if (!f || json_array_append_new(fields, f)) goto nomem;
  }
  json_object_set_new(rec, "fields", fields);
  return rec;
nomem:
  if (!*err) *err = wd_error_nomem();
fail:
  json_decref(fields);
  json_decref(rec);
  return NULL;
}

/* The Avro type (not a union) of JSON value j; a record is named after path. */
static json_t *wd_pa_infer(json_t *j, const char *path, wd_error_t **err) {
  json_t *t = NULL;
  switch (json_typeof(j)) {
  case JSON_INTEGER: t = json_string("long"); break;
  case JSON_REAL: t = json_string("double"); break;
  case JSON_TRUE:
  case JSON_FALSE: t = json_string("boolean"); break;
  case JSON_NULL:
  case JSON_STRING: t = json_string("string"); break;
  case JSON_OBJECT: return wd_pa_record(j, path, path, err);
  case JSON_ARRAY: {
    char sub[512];
    snprintf(sub, sizeof(sub), "%s_item", path);
    json_t *it = json_array_size(j) ? wd_pa_infer(json_array_get(j, 0), sub, err) : json_string("string");
    if (!it) return NULL;
    t = json_pack("{s:s, s:[s, o]}", "type", "array", "items", "null", it);
    break;
  }
  }
  if (!t && !*err) *err = wd_error_nomem();
  return t;
}

/* The value schema of a Debezium event ev: record Envelope with before/after ["null", Value]
 * (Value from whichever image is an object) and the other members inferred. */
static json_t *wd_pa_envelope(json_t *ev, const char *ns, wd_error_t **err) {
  json_t *after = json_object_get(ev, "after"), *before = json_object_get(ev, "before");
  json_t *img = json_is_object(after) ? after : json_is_object(before) ? before : NULL;
  if (!img) {
    *err = wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO,
                        "the first message of the topic has no row image (before/after) to infer its Avro schema from");
    return NULL;
  }
  json_t *value = wd_pa_record(img, "Value", "Value", err);
  if (!value) return NULL;
  json_t *fields = json_array(),
         *rec = json_pack("{s:s, s:s, s:s}", "type", "record", "name", "Envelope", "namespace", ns);
  int value_given = 0;
  const char *k;
  json_t *v;
  if (!fields || !rec) goto nomem;
  json_object_foreach(ev, k, v) {
    json_t *t;
    if (!strcmp(k, "before") || !strcmp(k, "after")) {
      t = value_given ? json_string("Value") : json_incref(value);
      value_given = 1;
    } else {
      if (!wd_pa_valid_name(k)) {
        *err = wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO, "member '%s' is not a valid Avro field name", k);
        goto fail;
      }
      if (!(t = wd_pa_infer(v, k, err))) goto fail;
    }
    json_t *f = json_pack("{s:s, s:[s, o], s:n}", "name", k, "type", "null", t, "default");
    if (!f || json_array_append_new(fields, f)) goto nomem;
  }
  json_object_set_new(rec, "fields", fields);
  json_decref(value);
  return rec;
nomem:
  if (!*err) *err = wd_error_nomem();
fail:
  json_decref(value);
  json_decref(fields);
  json_decref(rec);
  return NULL;
}

/* Parses and registers schema (consumed) under subject; fills h. */
static wd_error_t *wd_pa_half_init(wd_produce_avro_t *pa, wd_pa_half_t *h, json_t *schema, const char *subject) {
  char *text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(schema);
  if (!text) return wd_error_nomem();
  wd_error_t *err = NULL;
  if (avro_schema_from_json_length(text, strlen(text), &h->schema)) {
    err = wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "the inferred Avro schema of %s does not parse: %s", subject,
                       avro_strerror());
    goto cleanup;
  }
  if (!(h->iface = avro_generic_class_from_schema(h->schema)) || avro_generic_value_new(h->iface, &h->value)) {
    if (h->iface) avro_value_iface_decref(h->iface);
    avro_schema_decref(h->schema);
    err = wd_error_nomem();
    goto cleanup;
  }
  h->ready = 1;
  if ((err = wd_registry_register(pa->reg, subject, text, &h->id)))
    err = wd_error_wrap(err, "registering the schema of %s", subject);
cleanup:
  free(text);
  return err;
}

/* ---- JSON into Avro values ------------------------------------------------------------------- */

static wd_error_t *wd_pa_set(avro_value_t *v, json_t *j, const char *path);

/* v is a ["null", T] union: null for a missing or null j, else T from j. */
static wd_error_t *wd_pa_set_nullable(avro_value_t *v, json_t *j, const char *path) {
  avro_value_t b;
  if (!j || json_is_null(j)) {
    if (avro_value_set_branch(v, 0, &b) || avro_value_set_null(&b)) return wd_error_nomem();
    return NULL;
  }
  if (avro_value_set_branch(v, 1, &b)) return wd_error_nomem();
  return wd_pa_set(&b, j, path);
}

static wd_error_t *wd_pa_set(avro_value_t *v, json_t *j, const char *path) {
  switch (avro_value_get_type(v)) {
  case AVRO_STRING: {
    if (json_is_string(j))
      return avro_value_set_string_len(v, json_string_value(j), json_string_length(j) + 1) ? wd_error_nomem() : NULL;
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (!s) return wd_error_nomem();
    int rc = avro_value_set_string(v, s);
    free(s);
    return rc ? wd_error_nomem() : NULL;
  }
  case AVRO_INT64:
    if (!json_is_integer(j)) break;
    avro_value_set_long(v, (int64_t)json_integer_value(j));
    return NULL;
  case AVRO_DOUBLE:
    if (!json_is_number(j)) break;
    avro_value_set_double(v, json_number_value(j));
    return NULL;
  case AVRO_BOOLEAN:
    if (!json_is_boolean(j)) break;
    avro_value_set_boolean(v, json_is_true(j));
    return NULL;
  case AVRO_ARRAY: {
    if (!json_is_array(j)) break;
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e) {
      avro_value_t ev;
      if (avro_value_append(v, &ev, NULL)) return wd_error_nomem();
      char sub[512];
      snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
      wd_error_t *err = wd_pa_set_nullable(&ev, e, sub);
      if (err) return err;
    }
    return NULL;
  }
  case AVRO_RECORD: {
    if (!json_is_object(j)) break;
    size_t n = 0;
    avro_value_get_size(v, &n);
    for (size_t i = 0; i < n; i++) {
      avro_value_t f;
      const char *name = NULL;
      avro_value_get_by_index(v, i, &f, &name);
      char sub[512];
      snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", name);
      wd_error_t *err = wd_pa_set_nullable(&f, json_object_get(j, name), sub);
      if (err) return err;
    }
    const char *k;
    json_t *m;
    json_object_foreach(j, k, m) {
      avro_value_t f;
      if (avro_value_get_by_name(v, k, &f, NULL))
        return wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO,
                            "member '%s%s%s' is not in the Avro schema inferred from the topic's first message "
                            "(every message of a topic needs the members of its first)",
                            path, *path ? "." : "", k);
    }
    return NULL;
  }
  default: break;
  }
  return wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO,
                      "member '%s': a JSON %s where the Avro schema inferred from the "
                      "topic's first message has %s",
                      *path ? path : "(the message)",
                      json_is_object(j)    ? "object"
                      : json_is_array(j)   ? "array"
                      : json_is_string(j)  ? "string"
                      : json_is_boolean(j) ? "boolean"
                                           : "number",
                      avro_value_get_type(v) == AVRO_RECORD  ? "a record"
                      : avro_value_get_type(v) == AVRO_ARRAY ? "an array"
                                                             : "another type");
}

/* h's value from j into a new wire-format buffer. */
static wd_error_t *wd_pa_write(wd_pa_half_t *h, json_t *j, char **out, size_t *len) {
  avro_value_reset(&h->value);
  wd_error_t *err = wd_pa_set(&h->value, j, "");
  if (err) return err;
  size_t sz = 0;
  if (avro_value_sizeof(&h->value, &sz)) return wd_error_nomem();
  char *buf = malloc(sz + WD_WIRE_HEADER);
  if (!buf) return wd_error_nomem();
  wd_wire_header(h->id, (uint8_t *)buf);
  avro_writer_t w = avro_writer_memory(buf + WD_WIRE_HEADER, (int64_t)sz);
  int rc = w ? avro_value_write(w, &h->value) : ENOMEM;
  if (w) avro_writer_free(w);
  if (rc) {
    free(buf);
    return wd_error_new(WD_ERR_INTERNAL, E_INTERNAL, "avro-c could not write a value: %s", avro_strerror());
  }
  *out = buf;
  *len = sz + WD_WIRE_HEADER;
  return NULL;
}

static json_t *wd_pa_load(const char *text, size_t len, const char *what, wd_error_t **err) {
  json_error_t je;
  json_t *j = json_loadb(text, len, 0, &je);
  if (!json_is_object(j)) {
    *err = wd_error_new(WD_ERR_DECODE, E_PRODUCE_AVRO, "the %s is not a JSON object%s%s", what, j ? "" : ": ",
                        j ? "" : je.text);
    json_decref(j);
    return NULL;
  }
  return j;
}

wd_error_t *wd_produce_avro_encode(wd_produce_avro_t *pa, const char *topic, const char *key, size_t key_len,
                                   const char *value, size_t value_len, char **key_out, size_t *key_out_len,
                                   char **value_out, size_t *value_out_len) {
  *key_out = *value_out = NULL;
  *key_out_len = *value_out_len = 0;
  wd_error_t *err = NULL;
  json_t *kj = NULL, *vj = NULL, *ev = NULL;
  wd_pa_topic_t *t = pa->topics;
  while (t && strcmp(t->name, topic)) t = t->next;
  if (!t) {
    if (!(t = calloc(1, sizeof(*t))) || !(t->name = strdup(topic))) {
      free(t);
      return wd_error_nomem();
    }
    t->next = pa->topics;
    pa->topics = t;
  }
  if (value) {
    if (!(vj = wd_pa_load(value, value_len, "value", &err))) goto cleanup;
    ev = vj;
    json_t *payload = json_object_get(vj, "payload");
    if (json_is_object(payload) && json_object_get(vj, "schema")) ev = payload;
    if (!t->value.ready) {
      char ns[256], subject[300];
      snprintf(ns, sizeof(ns), "%s", topic);
      for (char *p = ns; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.') *p = '_';
      if (isdigit((unsigned char)ns[0])) ns[0] = '_';
      snprintf(subject, sizeof(subject), "%s-value", topic);
      json_t *s = wd_pa_envelope(ev, ns, &err);
      if (!s || (err = wd_pa_half_init(pa, &t->value, s, subject))) goto cleanup;
    }
    if ((err = wd_pa_write(&t->value, ev, value_out, value_out_len))) goto cleanup;
  }
  if (key) {
    if (!(kj = wd_pa_load(key, key_len, "key", &err))) goto cleanup;
    if (!t->key.ready) {
      char subject[300];
      snprintf(subject, sizeof(subject), "%s-key", topic);
      json_t *s = wd_pa_record(kj, "Key", "Key", &err);
      if (s) json_object_set_new(s, "namespace", json_string("widen.produce"));
      if (!s || (err = wd_pa_half_init(pa, &t->key, s, subject))) goto cleanup;
    }
    if ((err = wd_pa_write(&t->key, kj, key_out, key_out_len))) goto cleanup;
  }
cleanup:
  if (err) {
    free(*key_out);
    free(*value_out);
    *key_out = *value_out = NULL;
    *key_out_len = *value_out_len = 0;
  }
  json_decref(kj);
  json_decref(vj);
  return err;
}
