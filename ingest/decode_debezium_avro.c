/*
 * ingest/decode_debezium_avro.c — Debezium Avro (Confluent wire format) into change records.
 *
 * The writer schema of each id is parsed once (jansson) into a tree of wd_av_node_t that carries
 * what avro-c keeps no trace of (logicalType, precision, scale, connect.name,
 * connect.parameters.scale) plus what the binary walk needs (fixed sizes, constant encoded
 * lengths, units), and once by avro-c (avro_schema_from_json: the schema must be one avro-c
 * accepts). Records are then read one of two ways (wd_avro_decoder_set_generic):
 *   - directly (the default, "the binary walk" below): the bytes are checked against the node
 *     tree end to end without allocating, and only the fields the source maps are located and
 *     converted (wd_avb_*);
 *   - through avro-c's generic value of the whole record (wd_av_read), walked together with the
 *     node tree (a record field's index, a union's discriminant and an array's items are the
 *     same in both). This is the reference the tests hold the direct walk to
 *     (tests/unit/test_avro_paths.c).
 * Both feed the same conversions (wd_av_long_into, wd_av_decimal_into, wd_av_from_text, ...).
 */
#include "ingest/decode_avro.h"
#include "ingest/format.h"

#include <avro.h>
#include <pthread.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "ingest/conv.h"

/* ---- the annotated schema tree ---------------------------------------------------------- */

typedef enum {
  WD_AV_NULL = 0,
  WD_AV_BOOLEAN,
  WD_AV_INT,
  WD_AV_LONG,
  WD_AV_FLOAT,
  WD_AV_DOUBLE,
  WD_AV_BYTES,
  WD_AV_STRING,
  WD_AV_RECORD,
  WD_AV_ENUM,
  WD_AV_ARRAY,
  WD_AV_MAP,
  WD_AV_UNION,
  WD_AV_FIXED
} wd_av_kind_t;

static const char *const wd_av_kind_names[] = {"null",   "boolean", "int",  "long",  "float", "double", "bytes",
                                               "string", "record",  "enum", "array", "map",   "union",  "fixed"};

typedef struct wd_av_node wd_av_node_t;
struct wd_av_node {
  wd_av_kind_t kind;
  char *name; /* full name of a named type, else NULL */
  char *logical; /* logicalType, else NULL */
  char *connect_name; /* connect.name, else NULL */
  int precision, scale;
  bool has_scale;
  size_t n; /* record fields, union branches, enum symbols; 1 for array/map */
  wd_av_node_t **sub; /* field types, branches, items, values */
  char **fname; /* record field names, enum symbols */
  size_t *fnamelen; /* record field name lengths */
  int64_t size; /* fixed: its size in bytes */
  int64_t fsize; /* the binary encoding's length when it is the same for every value, else -1 */
  int fsize_state; /* 0 not computed, 1 being computed (recursive types), 2 done */
  int64_t unit; /* wd_av_unit's answer, computed once */
  bool is_decimal; /* wd_av_is_decimal's answer */
  bool is_vsd; /* connect.name io.debezium.data.VariableScaleDecimal */
};

typedef struct {
  char *name;
  wd_av_node_t *node;
} wd_av_named_t;

typedef struct wd_av_schema {
  int32_t id;
  int role; /* 0 value, 1 key */
  wd_av_node_t *root;
  wd_av_node_t **nodes; /* every node, owned */
  size_t nnodes, capnodes;
  wd_av_named_t *named;
  size_t nnamed, capnamed;
  avro_schema_t schema;
  avro_value_iface_t *iface;
  avro_value_t value;
  bool has_value;
  avro_reader_t reader;
} wd_av_schema_t;

/* A record value being walked in the binary encoding: where its fields start, known for the
 * first k fields (pos[off + i] for i < k; pos[off] is the record's own start). */
typedef struct {
  const wd_av_node_t *n;
  const uint8_t *p, *e;
  uint32_t off, k;
} wd_avb_frame_t;

/* Per source: the last field index that each path segment resolved to (a hint, checked against
 * the field's name before use, so a stale or foreign hint only costs a search). */
typedef struct {
  const wd_source_t *src;
  size_t ncols;
  size_t *first; /* ncols + 1 offsets into idx */
  uint32_t *idx;
} wd_avb_hints_t;

struct wd_avro_decoder {
  wd_registry_t *reg;
  wd_av_schema_t **cache;
  size_t ncache, capcache;
  bool generic; /* decode with avro-c's generic value instead of the binary walk */
  /* the binary walk's scratch, reset per record */
  wd_avb_frame_t *frames;
  size_t nframes, capframes;
  const uint8_t **pos;
  size_t npos, cappos;
  wd_avb_hints_t *hints;
  size_t nhints;
};

static void wd_av_schema_free(wd_av_schema_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nnodes; i++) {
    wd_av_node_t *n = s->nodes[i];
    free(n->name);
    free(n->logical);
    free(n->connect_name);
    if (n->fname)
      for (size_t k = 0; k < n->n; k++) free(n->fname[k]);
    free(n->fname);
    free(n->fnamelen);
    free(n->sub);
    free(n);
  }
  free(s->nodes);
  for (size_t i = 0; i < s->nnamed; i++) free(s->named[i].name);
  free(s->named);
  if (s->has_value) avro_value_decref(&s->value);
  if (s->iface) avro_value_iface_decref(s->iface);
  if (s->schema) avro_schema_decref(s->schema);
  if (s->reader) avro_reader_free(s->reader);
  free(s);
}

static wd_av_node_t *wd_av_node_new(wd_av_schema_t *s, wd_av_kind_t kind) {
  if (s->nnodes == s->capnodes) {
    size_t cap = s->capnodes ? s->capnodes * 2 : 16;
    wd_av_node_t **p = realloc(s->nodes, cap * sizeof(*p));
    if (!p) return NULL;
    s->nodes = p;
    s->capnodes = cap;
  }
  wd_av_node_t *n = calloc(1, sizeof(*n));
  if (!n) return NULL;
  n->kind = kind;
  s->nodes[s->nnodes++] = n;
  return n;
}

static int wd_av_name_add(wd_av_schema_t *s, const char *name, wd_av_node_t *n) {
  if (s->nnamed == s->capnamed) {
    size_t cap = s->capnamed ? s->capnamed * 2 : 8;
    wd_av_named_t *p = realloc(s->named, cap * sizeof(*p));
    if (!p) return -1;
    s->named = p;
    s->capnamed = cap;
  }
  if (!(s->named[s->nnamed].name = strdup(name))) return -1;
  s->named[s->nnamed++].node = n;
  return 0;
}

static wd_av_node_t *wd_av_name_find(const wd_av_schema_t *s, const char *name, const char *ns) {
  char full[512];
  if (ns && *ns && !strchr(name, '.')) {
    snprintf(full, sizeof(full), "%s.%s", ns, name);
    for (size_t i = 0; i < s->nnamed; i++)
      if (strcmp(s->named[i].name, full) == 0) return s->named[i].node;
  }
  for (size_t i = 0; i < s->nnamed; i++)
    if (strcmp(s->named[i].name, name) == 0) return s->named[i].node;
  /* a short name defined in another namespace */
  for (size_t i = 0; i < s->nnamed; i++) {
    const char *dot = strrchr(s->named[i].name, '.');
    if (dot && strcmp(dot + 1, name) == 0) return s->named[i].node;
  }
  return NULL;
}

static int wd_av_primitive(const char *t, wd_av_kind_t *k) {
  for (int i = 0; i <= WD_AV_STRING; i++)
    if (strcmp(t, wd_av_kind_names[i]) == 0) {
      *k = (wd_av_kind_t)i;
      return 0;
    }
  return -1;
}

static int wd_av_int_attr(const json_t *j, int *out) {
  if (json_is_integer(j)) {
    *out = (int)json_integer_value(j);
    return 0;
  }
  if (json_is_string(j)) {
    *out = atoi(json_string_value(j));
    return 0;
  }
  return -1;
}

/* Builds the node of schema JSON j in namespace ns. NULL on no memory or an unknown name
 * (*why says which). */
static wd_av_node_t *wd_av_build(wd_av_schema_t *s, const json_t *j, const char *ns, char *why, size_t whyn) {
  if (json_is_string(j)) {
    const char *t = json_string_value(j);
    wd_av_kind_t k;
    if (wd_av_primitive(t, &k) == 0) return wd_av_node_new(s, k);
    wd_av_node_t *n = wd_av_name_find(s, t, ns);
    if (!n) snprintf(why, whyn, "unknown type name '%s'", t);
    return n;
  }
  if (json_is_array(j)) {
    wd_av_node_t *n = wd_av_node_new(s, WD_AV_UNION);
    if (!n) return NULL;
    n->n = json_array_size(j);
    if (!(n->sub = calloc(n->n ? n->n : 1, sizeof(*n->sub)))) return NULL;
    for (size_t i = 0; i < n->n; i++)
      if (!(n->sub[i] = wd_av_build(s, json_array_get(j, i), ns, why, whyn))) return NULL;
    return n;
  }
  if (!json_is_object(j)) {
    snprintf(why, whyn, "a type that is neither a name, a union nor an object");
    return NULL;
  }
  const json_t *jt = json_object_get(j, "type");
  wd_av_node_t *n = NULL;
  if (!json_is_string(jt)) {
    /* {"type": {...}} or {"type": [...]}: attributes at this level annotate the inner type */
    if (!jt) {
      snprintf(why, whyn, "an object without \"type\"");
      return NULL;
    }
    return wd_av_build(s, jt, ns, why, whyn);
  }
  const char *t = json_string_value(jt);
  wd_av_kind_t k;
  if (wd_av_primitive(t, &k) == 0) {
    if (!(n = wd_av_node_new(s, k))) return NULL;
  } else if (!strcmp(t, "record") || !strcmp(t, "error") || !strcmp(t, "enum") || !strcmp(t, "fixed")) {
    k = t[0] == 'e' && t[1] == 'n' ? WD_AV_ENUM : t[0] == 'f' ? WD_AV_FIXED : WD_AV_RECORD;
    if (!(n = wd_av_node_new(s, k))) return NULL;
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *nns = json_string_value(json_object_get(j, "namespace"));
    if (!name) {
      snprintf(why, whyn, "a %s without a name", t);
      return NULL;
    }
    char full[512];
    const char *dot = strrchr(name, '.');
    if (dot) {
      snprintf(full, sizeof(full), "%s", name);
    } else if (nns ? *nns : (ns && *ns)) snprintf(full, sizeof(full), "%s.%s", nns ? nns : ns, name);
    else snprintf(full, sizeof(full), "%s", name);
    if (!(n->name = strdup(full)) || wd_av_name_add(s, full, n)) return NULL;
    char child_ns[512];
    if (dot) snprintf(child_ns, sizeof(child_ns), "%.*s", (int)(dot - name), name);
    else snprintf(child_ns, sizeof(child_ns), "%s", nns ? nns : ns ? ns : "");
    if (k == WD_AV_RECORD) {
      const json_t *fs = json_object_get(j, "fields");
      if (!json_is_array(fs)) {
        snprintf(why, whyn, "record %.120s without fields", full);
        return NULL;
      }
      n->n = json_array_size(fs);
      n->sub = calloc(n->n ? n->n : 1, sizeof(*n->sub));
      n->fname = calloc(n->n ? n->n : 1, sizeof(*n->fname));
      n->fnamelen = calloc(n->n ? n->n : 1, sizeof(*n->fnamelen));
      if (!n->sub || !n->fname || !n->fnamelen) return NULL;
      for (size_t i = 0; i < n->n; i++) {
        const json_t *f = json_array_get(fs, i);
        const char *fname = json_string_value(json_object_get(f, "name"));
        if (!fname) {
          snprintf(why, whyn, "a field of record %.120s without a name", full);
          return NULL;
        }
        if (!(n->fname[i] = strdup(fname))) return NULL;
        n->fnamelen[i] = strlen(fname);
        if (!(n->sub[i] = wd_av_build(s, json_object_get(f, "type"), child_ns, why, whyn))) return NULL;
      }
    } else if (k == WD_AV_ENUM) {
      const json_t *sy = json_object_get(j, "symbols");
      n->n = json_array_size(sy);
      if (!(n->fname = calloc(n->n ? n->n : 1, sizeof(*n->fname)))) return NULL;
      for (size_t i = 0; i < n->n; i++) {
        const char *v = json_string_value(json_array_get(sy, i));
        if (!(n->fname[i] = strdup(v ? v : ""))) return NULL;
      }
    } else {
      const json_t *sz = json_object_get(j, "size");
      if (!json_is_integer(sz) || json_integer_value(sz) < 0) {
        snprintf(why, whyn, "fixed %.120s without a size", full);
        return NULL;
      }
      n->size = (int64_t)json_integer_value(sz);
    }
  } else if (!strcmp(t, "array") || !strcmp(t, "map")) {
    if (!(n = wd_av_node_new(s, t[0] == 'a' ? WD_AV_ARRAY : WD_AV_MAP))) return NULL;
    n->n = 1;
    if (!(n->sub = calloc(1, sizeof(*n->sub)))) return NULL;
    if (!(n->sub[0] = wd_av_build(s, json_object_get(j, t[0] == 'a' ? "items" : "values"), ns, why, whyn))) return NULL;
  } else {
    wd_av_node_t *named = wd_av_name_find(s, t, ns);
    if (!named) snprintf(why, whyn, "unknown type name '%s'", t);
    return named;
  }
  const char *lt = json_string_value(json_object_get(j, "logicalType"));
  const char *cn = json_string_value(json_object_get(j, "connect.name"));
  if (lt && !(n->logical = strdup(lt))) return NULL;
  if (cn && !(n->connect_name = strdup(cn))) return NULL;
  int v;
  if (wd_av_int_attr(json_object_get(j, "precision"), &v) == 0) n->precision = v;
  if (wd_av_int_attr(json_object_get(j, "scale"), &v) == 0) {
    n->scale = v;
    n->has_scale = true;
  } else if (wd_av_int_attr(json_object_get(json_object_get(j, "connect.parameters"), "scale"), &v) == 0) {
    n->scale = v;
    n->has_scale = true;
  }
  return n;
}

/* The length of n's binary encoding when every value has the same (null 0, boolean 1, float 4,
 * double 8, fixed its size, a record of such fields their sum), else -1. */
static int64_t wd_av_fsize(wd_av_node_t *n) {
  if (n->fsize_state == 2) return n->fsize;
  if (n->fsize_state == 1) return -1;
  n->fsize_state = 1;
  int64_t z = -1;
  switch (n->kind) {
  case WD_AV_NULL: z = 0; break;
  case WD_AV_BOOLEAN: z = 1; break;
  case WD_AV_FLOAT: z = 4; break;
  case WD_AV_DOUBLE: z = 8; break;
  case WD_AV_FIXED: z = n->size; break;
  case WD_AV_RECORD:
    z = 0;
    for (size_t i = 0; i < n->n && z >= 0; i++) {
      int64_t f = wd_av_fsize(n->sub[i]);
      z = f < 0 ? -1 : z + f;
    }
    break;
  default: break;
  }
  n->fsize = z;
  n->fsize_state = 2;
  return z;
}

static int64_t wd_av_unit(const wd_av_node_t *n);
static bool wd_av_is_decimal(const wd_av_node_t *n);

/* Parses writer schema JSON text into a new wd_av_schema_t with its avro-c objects. */
static wd_error_t *wd_av_schema_parse(int32_t id, int role, const char *text, wd_av_schema_t **out) {
  *out = NULL;
  wd_av_schema_t *s = calloc(1, sizeof(*s));
  if (!s) return wd_error_nomem();
  s->id = id;
  s->role = role;
  wd_error_t *err = NULL;
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  char why[200] = "out of memory";
  if (!j) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "writer schema id %" PRId32 " is not JSON: %s", id, jerr.text);
    goto fail;
  }
  s->root = wd_av_build(s, j, "", why, sizeof(why));
  json_decref(j);
  if (!s->root) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "writer schema id %" PRId32 ": %s", id, why);
    goto fail;
  }
  for (size_t i = 0; i < s->nnodes; i++) {
    wd_av_node_t *n = s->nodes[i];
    wd_av_fsize(n);
    n->unit = wd_av_unit(n);
    n->is_decimal = wd_av_is_decimal(n);
    n->is_vsd = n->connect_name && !strcmp(n->connect_name, "io.debezium.data.VariableScaleDecimal");
  }
  if (avro_schema_from_json_length(text, strlen(text), &s->schema)) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "writer schema id %" PRId32 " is refused by avro-c: %s", id,
                       avro_strerror());
    s->schema = NULL;
    goto fail;
  }
  if (!(s->iface = avro_generic_class_from_schema(s->schema))) goto nomem;
  if (avro_generic_value_new(s->iface, &s->value)) goto nomem;
  s->has_value = true;
  if (!(s->reader = avro_reader_memory("", 0))) goto nomem;
  *out = s;
  return NULL;
nomem:
  err = wd_error_nomem();
fail:
  wd_av_schema_free(s);
  return err;
}

wd_error_t *wd_avro_decoder_new(wd_registry_t *reg, wd_avro_decoder_t **out) {
  *out = calloc(1, sizeof(**out));
  if (!*out) return wd_error_nomem();
  (*out)->reg = reg;
  return NULL;
}

void wd_avro_decoder_destroy(wd_avro_decoder_t *dec) {
  if (!dec) return;
  for (size_t i = 0; i < dec->ncache; i++) wd_av_schema_free(dec->cache[i]);
  free(dec->cache);
  free(dec->frames);
  free(dec->pos);
  for (size_t i = 0; i < dec->nhints; i++) {
    free(dec->hints[i].first);
    free(dec->hints[i].idx);
  }
  free(dec->hints);
  free(dec);
}

/* The parsed writer schema of id for role (value 0, key 1), fetched and parsed on first use. */
static wd_error_t *wd_av_get(wd_avro_decoder_t *dec, int32_t id, int role, wd_av_schema_t **out) {
  for (size_t i = 0; i < dec->ncache; i++)
    if (dec->cache[i]->id == id && dec->cache[i]->role == role) {
      *out = dec->cache[i];
      return NULL;
    }
  if (!dec->reg) return wd_error_new(WD_ERR_INTERNAL, NONE, "the avro decoder has no schema registry");
  const char *json = NULL;
  wd_error_t *err = wd_registry_get_schema(dec->reg, id, &json);
  if (err) return err;
  wd_av_schema_t *s = NULL;
  if ((err = wd_av_schema_parse(id, role, json, &s))) return err;
  if (dec->ncache == dec->capcache) {
    size_t cap = dec->capcache ? dec->capcache * 2 : 8;
    wd_av_schema_t **c = realloc(dec->cache, cap * sizeof(*c));
    if (!c) {
      wd_av_schema_free(s);
      return wd_error_nomem();
    }
    dec->cache = c;
    dec->capcache = cap;
  }
  dec->cache[dec->ncache++] = s;
  *out = s;
  return NULL;
}

/* avro-c trusts the lengths in the data: a string claiming 1 GiB in a 70-byte record makes it
 * allocate 1 GiB (and leak it on the error path). While a record is read, allocations larger than
 * the record itself (plus slack) are refused, so such a record fails to decode (dead letter)
 * instead of exhausting memory. Outside reads the limit is off. One thread decodes at a time. */
static _Thread_local size_t wd_av_alloc_limit; /* 0: unlimited */

/* The blocks avro-c allocated during a read on this thread and has not freed yet (while .on):
 * avro-c's read_bytes / read_string do not free their buffer when the bytes end early, so after
 * a failed read the value is released (which frees all the blocks it owns) and the blocks left
 * here are the leaked ones, freed then. .lost: the list itself could not grow (the leaks then
 * stay). */
typedef struct {
  void **p;
  size_t n, cap;
  bool on, lost;
} wd_av_track_t;
static _Thread_local wd_av_track_t wd_av_track;

static void wd_av_track_del(uintptr_t ptr) {
  for (size_t i = wd_av_track.n; i-- > 0;)
    if ((uintptr_t)wd_av_track.p[i] == ptr) {
      wd_av_track.p[i] = wd_av_track.p[--wd_av_track.n];
      return;
    }
}

static void wd_av_track_add(void *ptr) {
  if (wd_av_track.n == wd_av_track.cap) {
    size_t cap = wd_av_track.cap ? wd_av_track.cap * 2 : 64;
    void **p = realloc(wd_av_track.p, cap * sizeof(*p));
    if (!p) {
      wd_av_track.lost = true;
      return;
    }
    wd_av_track.p = p;
    wd_av_track.cap = cap;
  }
  wd_av_track.p[wd_av_track.n++] = ptr;
}

static void *wd_av_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    if (ptr && wd_av_track.on) wd_av_track_del((uintptr_t)ptr);
    free(ptr);
    return NULL;
  }
  if (wd_av_alloc_limit && nsize > wd_av_alloc_limit) return NULL;
  /* untracked first: should realloc fail, the old block stays avro-c's (only not freed here) */
  if (ptr && wd_av_track.on) wd_av_track_del((uintptr_t)ptr);
  void *q = realloc(ptr, nsize);
  if (q && wd_av_track.on) wd_av_track_add(q);
  return q;
}

/* Reads bytes p[0..n) into s->value. 0, or -1 with avro's reason. */
/* avro_set_allocator is process-wide: installed exactly once (pthread_once, safe when several
 * threads decode), and harmless to other avro-c users (the changelog's Avro sink): outside a
 * read on this thread the limit is off and it is plain realloc/free. */
static pthread_once_t wd_av_alloc_once = PTHREAD_ONCE_INIT;
static void wd_av_install_alloc(void) { avro_set_allocator(wd_av_alloc, NULL); }

static int wd_av_read(wd_av_schema_t *s, const uint8_t *p, size_t n) {
  pthread_once(&wd_av_alloc_once, wd_av_install_alloc);
  if (!s->has_value) {
    if (avro_generic_value_new(s->iface, &s->value)) return -1;
    s->has_value = true;
  }
  avro_value_reset(&s->value);
  avro_reader_memory_set_source(s->reader, (const char *)p, (int64_t)n);
  wd_av_alloc_limit = n + 65536;
  wd_av_track.n = 0;
  wd_av_track.lost = false;
  wd_av_track.on = true;
  int rc = avro_value_read(s->reader, &s->value);
  wd_av_alloc_limit = 0;
  if (rc) {
    avro_value_decref(&s->value); /* frees (and untracks) what the value owns */
    s->has_value = false;
    wd_av_track.on = false;
    if (!wd_av_track.lost)
      for (size_t i = 0; i < wd_av_track.n; i++) free(wd_av_track.p[i]);
  }
  wd_av_track.on = false;
  wd_av_track.n = 0;
  return rc;
}

/* ---- the binary walk ---------------------------------------------------------------------- */

/* The default decode path reads the Avro binary encoding (spec: "Binary Encoding") directly with
 * the writer schema's node tree: a record is checked once end to end (every length, union
 * discriminant, varint and block count, as avro-c's read would check them; nothing is
 * allocated), then only the values the source maps are located (the record's field starts are
 * found by skipping the fields before them by type, once per record value, kept in a frame) and
 * converted; the rest is never looked at again. avro-c's generic read (wd_av_read) stays as the
 * reference (wd_avro_decoder_set_generic); tests decode every fixture both ways. */

/* A value in the binary encoding: its node, the first byte of its encoding, the end of the
 * record's bytes. */
typedef struct {
  wd_av_node_t *n;
  const uint8_t *p, *e;
  int32_t fr; /* a record's frame (index in dec->frames) when known, else -1 */
} wd_avb_t;

#define WD_AVB_MAX_DEPTH 200 /* nesting levels of a value (recursive schemas) */

/* A zig-zag varint of at most 10 bytes at *pp (< e); advances *pp. 0, or -1 when malformed. */
static inline int wd_avb_long(const uint8_t **pp, const uint8_t *e, int64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    if (p == e || shift > 63) return -1;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
  *pp = p;
  return 0;
}

/* An int: a varint in the int32 range. */
static inline int wd_avb_int(const uint8_t **pp, const uint8_t *e, int32_t *out) {
  int64_t l;
  if (wd_avb_long(pp, e, &l) || l < INT32_MIN || l > INT32_MAX) return -1;
  *out = (int32_t)l;
  return 0;
}

/* bytes/string: a length and that many bytes; *data points into the record. */
static inline int wd_avb_bytes(const uint8_t **pp, const uint8_t *e, const uint8_t **data, size_t *len) {
  int64_t l;
  if (wd_avb_long(pp, e, &l) || l < 0 || l > e - *pp) return -1;
  *data = *pp;
  *len = (size_t)l;
  *pp += l;
  return 0;
}

/* The count of the next block of an array or map (0 at the end; a negative count is followed
 * by the block's byte size, which is read and not used, as avro-c does). A count that the
 * remaining bytes cannot hold (each item takes min_item bytes; items of size 0 are bounded by
 * the record size, as avro-c's allocations are) is malformed. */
static int wd_avb_block(const uint8_t **pp, const uint8_t *e, int64_t min_item, int64_t *count) {
  int64_t c, size;
  if (wd_avb_long(pp, e, &c)) return -1;
  if (c < 0) {
    if (c == INT64_MIN || wd_avb_long(pp, e, &size)) return -1;
    c = -c;
  }
  int64_t room = e - *pp;
  if (min_item > 0 ? c > room / min_item : c > room + 65536) return -1;
  *count = c;
  return 0;
}

static inline int wd_avb_skip(const wd_av_node_t *n, const uint8_t **pp, const uint8_t *e, int depth);

/* The least number of bytes of n's encoding (for block counts). */
static int64_t wd_avb_min_size(const wd_av_node_t *n) {
  if (n->fsize >= 0) return n->fsize;
  return 1; /* every variable-length encoding starts with at least one varint byte */
}

static int wd_avb_skip_items(const wd_av_node_t *n, const uint8_t **pp, const uint8_t *e, int depth) {
  bool map = n->kind == WD_AV_MAP;
  int64_t min = wd_avb_min_size(n->sub[0]) + (map ? 1 : 0), total = 0, limit = (e - *pp) + 65536;
  for (;;) {
    int64_t c;
    if (wd_avb_block(pp, e, min, &c)) return -1;
    if (c == 0) return 0;
    if (min == 0) { /* items without bytes (null, empty records): counted, bounded as avro-c's allocation is */
      if ((total += c) > limit) return -1;
      continue;
    }
    for (int64_t i = 0; i < c; i++) {
      const uint8_t *k;
      size_t kl;
      if (map && wd_avb_bytes(pp, e, &k, &kl)) return -1;
      if (wd_avb_skip(n->sub[0], pp, e, depth + 1)) return -1;
    }
  }
}

static int wd_avb_skip_var(const wd_av_node_t *n, const uint8_t **pp, const uint8_t *e, int depth);

/* Skips one value of n at *pp, checking it as avro-c's read would. 0, or -1 when malformed. */
static inline int wd_avb_skip(const wd_av_node_t *n, const uint8_t **pp, const uint8_t *e, int depth) {
  if (n->fsize >= 0) {
    if (e - *pp < n->fsize) return -1;
    *pp += n->fsize;
    return 0;
  }
  return wd_avb_skip_var(n, pp, e, depth);
}

/* wd_avb_skip of a variable-length n. */
static int wd_avb_skip_var(const wd_av_node_t *n, const uint8_t **pp, const uint8_t *e, int depth) {
  if (depth > WD_AVB_MAX_DEPTH) return -1;
  int64_t l;
  int32_t i32;
  const uint8_t *d;
  size_t dl;
  switch (n->kind) {
  case WD_AV_INT: return wd_avb_int(pp, e, &i32);
  case WD_AV_LONG:
  case WD_AV_ENUM: return wd_avb_long(pp, e, &l);
  case WD_AV_BYTES:
  case WD_AV_STRING: return wd_avb_bytes(pp, e, &d, &dl);
  case WD_AV_RECORD:
    for (size_t i = 0; i < n->n; i++)
      if (wd_avb_skip(n->sub[i], pp, e, depth + 1)) return -1;
    return 0;
  case WD_AV_UNION:
    if (wd_avb_long(pp, e, &l) || l < 0 || (uint64_t)l >= n->n) return -1;
    return wd_avb_skip(n->sub[l], pp, e, depth + 1);
  case WD_AV_ARRAY:
  case WD_AV_MAP: return wd_avb_skip_items(n, pp, e, depth);
  default: return -1; /* the fixed-size kinds are handled above */
  }
}

/* Resolves unions at v (reading their discriminants); false when the value is null. */
static bool wd_avb_unwrap(wd_avb_t *v) {
  while (v->n->kind == WD_AV_UNION) {
    int64_t d;
    if (wd_avb_long(&v->p, v->e, &d) || d < 0 || (uint64_t)d >= v->n->n) return false;
    v->n = v->n->sub[d];
    v->fr = -1;
  }
  return v->n->kind != WD_AV_NULL;
}

/* The frame of record value v (v->fr, else found or made; v->fr is set). NULL on no memory. */
static wd_avb_frame_t *wd_avb_frame(wd_avro_decoder_t *dec, wd_avb_t *v) {
  if (v->fr >= 0) return &dec->frames[v->fr];
  for (size_t i = dec->nframes; i-- > 0;)
    if (dec->frames[i].p == v->p && dec->frames[i].n == v->n) {
      v->fr = (int32_t)i;
      return &dec->frames[i];
    }
  if (dec->nframes == dec->capframes) {
    size_t cap = dec->capframes ? dec->capframes * 2 : 16;
    wd_avb_frame_t *f = realloc(dec->frames, cap * sizeof(*f));
    if (!f) return NULL;
    dec->frames = f;
    dec->capframes = cap;
  }
  size_t need = dec->npos + v->n->n + 1;
  if (need > dec->cappos) {
    size_t cap = dec->cappos ? dec->cappos : 64;
    while (cap < need) cap *= 2;
    const uint8_t **p = realloc(dec->pos, cap * sizeof(*p));
    if (!p) return NULL;
    dec->pos = p;
    dec->cappos = cap;
  }
  v->fr = (int32_t)dec->nframes;
  wd_avb_frame_t *f = &dec->frames[dec->nframes++];
  f->n = v->n;
  f->p = v->p;
  f->e = v->e;
  f->off = (uint32_t)dec->npos;
  f->k = 1;
  dec->pos[f->off] = v->p;
  dec->npos = need;
  return f;
}

/* Field i of record value rec: *out set. 1 found, 0 malformed (cannot happen after the
 * record's check), -1 no memory. */
static int wd_avb_field(wd_avro_decoder_t *dec, wd_avb_t *rec, size_t i, wd_avb_t *out) {
  wd_avb_frame_t *f = wd_avb_frame(dec, rec);
  if (!f) return -1;
  const uint8_t **pos = dec->pos + f->off;
  while (f->k <= i) {
    const uint8_t *p = pos[f->k - 1];
    if (wd_avb_skip(f->n->sub[f->k - 1], &p, f->e, 0)) return 0;
    pos[f->k++] = p;
  }
  out->n = f->n->sub[i];
  out->p = pos[i];
  out->e = f->e;
  out->fr = -1;
  return 1;
}

/* Checks record value v end to end while making its frame complete (every field's start and
 * its end; v->fr set); records that are fields of v (through unions) get theirs too, down to
 * depth more levels. 0, -1 malformed, -2 no memory; *end: the first byte after v. */
static int wd_avb_fill(wd_avro_decoder_t *dec, wd_avb_t *v, int depth, const uint8_t **end) {
  wd_avb_frame_t *f = wd_avb_frame(dec, v);
  if (!f) return -2;
  size_t fr = (size_t)v->fr, off = f->off, nf = v->n->n;
  const uint8_t *p = v->p;
  for (size_t i = 0; i < nf; i++) {
    dec->pos[off + i] = p;
    wd_av_node_t *ft = v->n->sub[i];
    if (depth > 0 && (ft->kind == WD_AV_RECORD || ft->kind == WD_AV_UNION) && ft->fsize < 0) {
      wd_avb_t c = {ft, p, v->e, -1};
      while (c.n->kind == WD_AV_UNION) {
        int64_t d;
        if (wd_avb_long(&c.p, c.e, &d) || d < 0 || (uint64_t)d >= c.n->n) return -1;
        c.n = c.n->sub[d];
      }
      if (c.n->kind == WD_AV_RECORD && c.n->fsize < 0) {
        int rc = wd_avb_fill(dec, &c, depth - 1, &p);
        if (rc) return rc;
      } else {
        p = c.p;
        if (wd_avb_skip(c.n, &p, c.e, 1)) return -1;
      }
      continue;
    }
    if (wd_avb_skip(ft, &p, v->e, 1)) return -1;
  }
  dec->pos[off + nf] = p;
  dec->frames[fr].k = (uint32_t)nf + 1;
  *end = p;
  return 0;
}
/* The index of field name[0..len) of record n, trying *hint first (updated); -1 when absent. */
static inline long wd_avb_field_index(const wd_av_node_t *n, const char *name, size_t len, uint32_t *hint) {
  if (hint && *hint < n->n && n->fnamelen[*hint] == len && memcmp(n->fname[*hint], name, len) == 0) return *hint;
  for (size_t i = 0; i < n->n; i++)
    if (n->fnamelen[i] == len && memcmp(n->fname[i], name, len) == 0) {
      if (hint) *hint = (uint32_t)i;
      return (long)i;
    }
  return -1;
}

/* One step of a path from v (not a union): a record field, an array element (digits), a map
 * entry (the last one with that key, as avro-c's generic map keeps it). 1 found, 0 absent,
 * -1 no memory. The result is not unwrapped. */
static int wd_avb_step(wd_avro_decoder_t *dec, wd_avb_t *v, const char *seg, size_t len, uint32_t *hint) {
  switch (v->n->kind) {
  case WD_AV_RECORD: {
    long i = wd_avb_field_index(v->n, seg, len, hint);
    if (i < 0) return 0;
    wd_avb_t c;
    int rc = wd_avb_field(dec, v, (size_t)i, &c);
    if (rc == 1) *v = c;
    return rc;
  }
  case WD_AV_ARRAY: {
    size_t idx = 0;
    if (len == 0 || len > 9) return 0;
    for (size_t i = 0; i < len; i++) {
      if (seg[i] < '0' || seg[i] > '9') return 0;
      idx = idx * 10 + (size_t)(seg[i] - '0');
    }
    const uint8_t *p = v->p;
    int64_t min = wd_avb_min_size(v->n->sub[0]);
    for (;;) {
      int64_t c;
      if (wd_avb_block(&p, v->e, min, &c) || c == 0) return 0;
      for (int64_t i = 0; i < c; i++, idx--) {
        if (idx == 0) {
          v->n = v->n->sub[0];
          v->p = p;
          return 1;
        }
        if (wd_avb_skip(v->n->sub[0], &p, v->e, 0)) return 0;
      }
    }
  }
  case WD_AV_MAP: {
    const uint8_t *p = v->p, *found = NULL;
    int64_t min = wd_avb_min_size(v->n->sub[0]) + 1;
    for (;;) {
      int64_t c;
      if (wd_avb_block(&p, v->e, min, &c)) return 0;
      if (c == 0) break;
      for (int64_t i = 0; i < c; i++) {
        const uint8_t *k;
        size_t kl;
        if (wd_avb_bytes(&p, v->e, &k, &kl)) return 0;
        kl = strnlen((const char *)k, kl); /* avro-c keeps map keys as C strings */
        if (kl == len && memcmp(k, seg, len) == 0) found = p;
        if (wd_avb_skip(v->n->sub[0], &p, v->e, 0)) return 0;
      }
    }
    if (!found) return 0;
    v->n = v->n->sub[0];
    v->p = found;
    return 1;
  }
  default: return 0;
  }
}

/* The hints of src's path segments (made on first use). NULL on no memory. */
static wd_avb_hints_t *wd_avb_hints(wd_avro_decoder_t *dec, const wd_source_t *src) {
  for (size_t i = 0; i < dec->nhints; i++)
    if (dec->hints[i].src == src && dec->hints[i].ncols == src->ncols) return &dec->hints[i];
  wd_avb_hints_t *h = realloc(dec->hints, (dec->nhints + 1) * sizeof(*h));
  if (!h) return NULL;
  dec->hints = h;
  h = &dec->hints[dec->nhints];
  h->src = src;
  h->ncols = src->ncols;
  h->first = malloc((src->ncols + 1) * sizeof(*h->first));
  size_t total = 0;
  for (size_t m = 0; m < src->ncols; m++) total += src->cols[m].nseg;
  h->idx = calloc(total ? total : 1, sizeof(*h->idx));
  if (!h->first || !h->idx) {
    free(h->first);
    free(h->idx);
    return NULL;
  }
  total = 0;
  for (size_t m = 0; m < src->ncols; m++) {
    h->first[m] = total;
    total += src->cols[m].nseg;
  }
  h->first[src->ncols] = total;
  dec->nhints++;
  return h;
}

/* ---- walking values --------------------------------------------------------------------- */

/* Resolves unions: *n and *v become the branch's. Returns false when the value is null. */
static bool wd_av_unwrap(wd_av_node_t **n, avro_value_t *v) {
  while ((*n)->kind == WD_AV_UNION) {
    int d = 0;
    avro_value_t b;
    if (avro_value_get_discriminant(v, &d) || d < 0 || (size_t)d >= (*n)->n || avro_value_get_current_branch(v, &b))
      return false;
    *n = (*n)->sub[d];
    *v = b;
  }
  return (*n)->kind != WD_AV_NULL;
}

/* One step of a path: field `seg` of a record, element of an array (digits), entry of a map.
 * Returns false when absent. The result is not unwrapped. */
static bool wd_av_step(wd_av_node_t **n, avro_value_t *v, const char *seg, size_t len) {
  switch ((*n)->kind) {
  case WD_AV_RECORD:
    for (size_t i = 0; i < (*n)->n; i++)
      if (strlen((*n)->fname[i]) == len && memcmp((*n)->fname[i], seg, len) == 0) {
        avro_value_t c;
        if (avro_value_get_by_index(v, i, &c, NULL)) return false;
        *n = (*n)->sub[i];
        *v = c;
        return true;
      }
    return false;
  case WD_AV_ARRAY: {
    size_t idx = 0, size = 0;
    if (len == 0 || len > 9) return false;
    for (size_t i = 0; i < len; i++) {
      if (seg[i] < '0' || seg[i] > '9') return false;
      idx = idx * 10 + (size_t)(seg[i] - '0');
    }
    avro_value_t c;
    if (avro_value_get_size(v, &size) || idx >= size || avro_value_get_by_index(v, idx, &c, NULL)) return false;
    *n = (*n)->sub[0];
    *v = c;
    return true;
  }
  case WD_AV_MAP: {
    size_t size = 0;
    if (avro_value_get_size(v, &size)) return false;
    for (size_t i = 0; i < size; i++) {
      avro_value_t c;
      const char *key = NULL;
      if (avro_value_get_by_index(v, i, &c, &key)) return false;
      if (key && strlen(key) == len && memcmp(key, seg, len) == 0) {
        *n = (*n)->sub[0];
        *v = c;
        return true;
      }
    }
    return false;
  }
  default: return false;
  }
}

/* Follows segments [from, nseg) of c from (n, v); false when absent or null on the way. The
 * result is unwrapped (false for null). */
static bool wd_av_path(wd_av_node_t **n, avro_value_t *v, const wd_source_col_t *c, size_t from) {
  for (size_t i = from; i < c->nseg; i++) {
    if (!wd_av_unwrap(n, v)) return false;
    if (!wd_av_step(n, v, c->seg[i], c->seglen[i])) return false;
  }
  return wd_av_unwrap(n, v);
}

/* ---- conversion -------------------------------------------------------------------------- */

typedef struct {
  wd_avro_decoder_t *dec;
  const wd_source_t *src;
  const wd_schema_t *schema;
  const wd_kafka_meta_t *meta;
  wd_av_node_t *rootn;
  avro_value_t root;
  int key_state; /* 0 not loaded, 1 loaded, -1 none */
  wd_av_node_t *keyn;
  avro_value_t key;
  char op;
  /* the binary walk (dec->generic false) */
  wd_avb_hints_t *hints; /* NULL when there was no memory for them: no hints */
  wd_avb_t broot, bkey;
} wd_avx_t;

/* What is being converted, for messages. */
typedef struct {
  const wd_source_col_t *c;
  const char *image; /* "before"/"after" for image fields, else NULL */
} wd_avf_t;

/* The Avro type of n as text: "long", "bytes (decimal(12,2))", "record Value". */
static void wd_av_type_text(const wd_av_node_t *n, char *out, size_t cap) {
  if (n->kind == WD_AV_UNION) {
    size_t o = (size_t)snprintf(out, cap, "union [");
    for (size_t i = 0; i < n->n && o < cap; i++) {
      char b[96];
      wd_av_type_text(n->sub[i], b, sizeof(b));
      o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? ", " : "", b);
    }
    if (o < cap) snprintf(out + o, cap - o, "]");
    return;
  }
  const char *k = wd_av_kind_names[n->kind];
  if (n->logical && !strcmp(n->logical, "decimal"))
    snprintf(out, cap, "%s (decimal(%d,%d))", k, n->precision, n->scale);
  else if (n->logical) snprintf(out, cap, "%s (%s)", k, n->logical);
  else if (n->connect_name) snprintf(out, cap, "%s (%s)", k, n->connect_name);
  else if (n->name) snprintf(out, cap, "%s %s", k, n->name);
  else snprintf(out, cap, "%s", k);
}

static wd_error_t *wd_av_type_error(const wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* E_TYPE naming the source, the field, its Avro type, the column and its SQL type. */
static wd_error_t *wd_av_type_error(const wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, const char *fmt, ...) {
  char reason[256], at[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  wd_av_type_text(n, at, sizeof(at));
  const wd_field_t *col = &x->schema->cols[f->c->col];
  char *ts = wd_type_to_string(col->type);
  wd_error_t *err;
  if (f->image)
    err = wd_error_new(WD_ERR_RECORD, E_TYPE, "source '%s': field '%s' of the %s image (Avro %s) -> column '%s' %s: %s",
                       x->src->name, f->c->spec, f->image, at, col->name, ts ? ts : "?", reason);
  else
    err = wd_error_new(WD_ERR_RECORD, E_TYPE, "source '%s': field '%s' (Avro %s) -> column '%s' %s: %s", x->src->name,
                       f->c->spec, at, col->name, ts ? ts : "?", reason);
  free(ts);
  return err;
}

/* An Avro integer into a TIME/TIMESTAMP column whose unit nothing says (no logical type, no
 * Connect or Debezium name, no _ms/_us/_ns path, the source option auto): not guessed from the
 * wide column's precision. WD_ERR_CONFIG "C_TEMPORAL_UNIT" (the pipeline stops) with the fix. */
static wd_error_t *wd_av_unknown_unit(const wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, const char *option) {
  char at[160];
  wd_av_type_text(n, at, sizeof(at));
  const wd_field_t *col = &x->schema->cols[f->c->col];
  char *ts = wd_type_to_string(col->type);
  wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_TEMPORAL_UNIT,
                                 "source '%s': field '%s' (Avro %s) -> column '%s' %s: an integer without a unit (no "
                                 "logical type, no io.debezium.time name) and the source's %s is auto; the wide "
                                 "column's precision does not tell the source's unit. Set the source option `%s: "
                                 "millis`, `micros` or `nanos`",
                                 x->src->name, f->c->spec, at, col->name, ts ? ts : "?", option, option);
  free(ts);
  return err;
}

static const char *wd_av_err_text(const wd_error_t *e) {
  const char *m = e->message;
  size_t n = strlen(e->id);
  if (n && strncmp(m, e->id, n) == 0 && m[n] == ':' && m[n + 1] == ' ') m += n + 2;
  return m;
}

/* Units of integers: 0 none, else the unit's length in ns; WD_AV_DAYS for days. */
#define WD_AV_DAYS (-1)
static int64_t wd_av_unit(const wd_av_node_t *n) {
  const char *l = n->logical, *c = n->connect_name;
  if (l) {
    if (!strcmp(l, "date")) return WD_AV_DAYS;
    if (!strcmp(l, "time-millis") || !strcmp(l, "timestamp-millis") || !strcmp(l, "local-timestamp-millis"))
      return 1000000;
    if (!strcmp(l, "time-micros") || !strcmp(l, "timestamp-micros") || !strcmp(l, "local-timestamp-micros"))
      return 1000;
    if (!strcmp(l, "timestamp-nanos") || !strcmp(l, "local-timestamp-nanos")) return 1;
  }
  if (c) {
    if (!strcmp(c, "io.debezium.time.Date") || !strcmp(c, "org.apache.kafka.connect.data.Date")) return WD_AV_DAYS;
    if (!strcmp(c, "io.debezium.time.Time") || !strcmp(c, "io.debezium.time.Timestamp") ||
        !strcmp(c, "org.apache.kafka.connect.data.Time") || !strcmp(c, "org.apache.kafka.connect.data.Timestamp"))
      return 1000000;
    if (!strcmp(c, "io.debezium.time.MicroTime") || !strcmp(c, "io.debezium.time.MicroTimestamp")) return 1000;
    if (!strcmp(c, "io.debezium.time.NanoTime") || !strcmp(c, "io.debezium.time.NanoTimestamp")) return 1;
  }
  return 0;
}

/* The unit (ns length) of option u; 0 for auto (not known). */
static int64_t wd_av_opt_unit(wd_time_unit_t u, int precision) {
  switch (u) {
  case WD_UNIT_MILLIS: return 1000000;
  case WD_UNIT_MICROS: return 1000;
  case WD_UNIT_NANOS: return 1;
  case WD_UNIT_PRECISION: return precision <= 3 ? 1000000 : precision <= 6 ? 1000 : 1;
  default: return 0;
  }
}

static bool wd_av_is_decimal(const wd_av_node_t *n) {
  return (n->logical && !strcmp(n->logical, "decimal")) ||
         (n->connect_name && !strcmp(n->connect_name, "org.apache.kafka.connect.data.Decimal"));
}

static void wd_av_ts_truncate(int p, int64_t *us, int32_t *ns) {
  if (p > 6) {
    int64_t q = 1;
    for (int i = p; i < 9; i++) q *= 10;
    *ns = (int32_t)(*ns - *ns % q);
    return;
  }
  *ns = 0;
  int64_t q = 1;
  for (int i = p; i < 6; i++) q *= 10;
  *us = wd_floordiv(*us, q) * q;
}

static wd_error_t *wd_av_check_precision(const wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n,
                                         const wd_type_t *t, wd_i128 u) {
  wd_i128 a = u < 0 ? -u : u;
  if (a >= wd_pow10(t->precision)) {
    char buf[48];
    wd_decimal_text(u, t->scale, buf);
    return wd_av_type_error(x, f, n, "%s does not fit DECIMAL(%d,%d)", buf, t->precision, t->scale);
  }
  return NULL;
}

static wd_error_t *wd_av_set_bytes(wd_value_t *v, const void *p, size_t n) {
  if (wd_value_set_bytes(v, p, n)) return wd_error_nomem();
  v->is_null = false;
  return NULL;
}

/* Parses a text into a scalar of t (for string/enum values). */
static wd_error_t *wd_av_from_text(const wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, const wd_type_t *t,
                                   const char *s, size_t len, wd_value_t *out) {
  wd_error_t *err = NULL;
  if (wd_type_is_text(t) || t->id == WD_BYTES) return wd_av_set_bytes(out, s, len);
  if (t->id == WD_ARRAY || t->id == WD_MAP || t->id == WD_ROW) {
    json_error_t je;
    json_t *j = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) return wd_av_type_error(x, f, n, "the string is not JSON: %s", je.text);
    err = wd_value_from_json(t, j, out);
    json_decref(j);
  } else if (t->id == WD_DECIMAL) {
    err = wd_decimal_parse(s, len, t->precision, t->scale, &out->dec);
    if (!err) out->is_null = false;
  } else if (t->id == WD_TIMESTAMP || t->id == WD_TIMESTAMP_LTZ) {
    bool zoned;
    if (wd_conv_parse_timestamp(s, len, &out->ts.us, &out->ts.ns, &zoned))
      return wd_av_type_error(x, f, n, "'%.*s' is not a timestamp", (int)(len > 64 ? 64 : len), s);
    wd_av_ts_truncate(t->precision, &out->ts.us, &out->ts.ns);
    out->is_null = false;
  } else {
    err = wd_value_parse_text(t, s, len, out);
  }
  if (err) {
    wd_error_t *e = wd_av_type_error(x, f, n, "%s", wd_av_err_text(err));
    wd_error_destroy(err);
    wd_value_clear(t, out);
    return e;
  }
  return NULL;
}

static const wd_type_t wd_av_t_double = {.id = WD_DOUBLE, .length = -1};
static const wd_type_t wd_av_t_bytes = {.id = WD_BYTES, .length = -1};

static wd_error_t *wd_av_convert(wd_avx_t *x, const wd_avf_t *f, wd_av_node_t *n, avro_value_t *v, const wd_type_t *t,
                                 int64_t path_unit, wd_value_t *out);

/* An unscaled decimal value (bytes/fixed with a decimal annotation, or VariableScaleDecimal)
 * into t. */
static wd_error_t *wd_av_decimal_into(wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, wd_i128 u, int scale,
                                      const wd_type_t *t, wd_value_t *out) {
  char buf[64];
  switch (t->id) {
  case WD_DECIMAL: {
    wd_i128 r;
    if (wd_conv_rescale(u, scale, t->scale, &r)) return wd_av_type_error(x, f, n, "the value does not fit");
    wd_error_t *err = wd_av_check_precision(x, f, n, t, r);
    if (err) return err;
    out->dec = r;
    break;
  }
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: {
    wd_i128 r;
    if (wd_conv_rescale(u, scale, 0, &r) || (scale > 0 && r * wd_pow10(scale) != u)) {
      wd_decimal_text(u, scale, buf);
      return wd_av_type_error(x, f, n, "%s is not an integer", buf);
    }
    if (r < wd_type_int_min(t) || r > wd_type_int_max(t)) {
      wd_decimal_text(u, scale, buf);
      return wd_av_type_error(x, f, n, "%s is out of range", buf);
    }
    out->i = (int64_t)r;
    break;
  }
  case WD_FLOAT:
  case WD_DOUBLE:
    wd_decimal_text(u, scale, buf);
    out->f = strtod(buf, NULL);
    if (t->id == WD_FLOAT) out->f = (float)out->f;
    break;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: {
    size_t len = wd_decimal_text(u, scale, buf);
    return wd_av_set_bytes(out, buf, len);
  }
  default: return wd_av_type_error(x, f, n, "a decimal cannot go into this type");
  }
  out->is_null = false;
  return NULL;
}

/* A long (int or long Avro value) into t; unit is the value's unit (ns length, WD_AV_DAYS, 0). */
static wd_error_t *wd_av_long_into(wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, int64_t iv, int64_t unit,
                                   int64_t path_unit, const wd_type_t *t, wd_value_t *out) {
  switch (t->id) {
  case WD_BOOLEAN:
    if (iv != 0 && iv != 1) return wd_av_type_error(x, f, n, "%" PRId64 " is not 0 or 1", iv);
    out->b = iv == 1;
    break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (iv < wd_type_int_min(t) || iv > wd_type_int_max(t))
      return wd_av_type_error(x, f, n, "%" PRId64 " is out of range", iv);
    out->i = iv;
    break;
  case WD_FLOAT: out->f = (float)iv; break;
  case WD_DOUBLE: out->f = (double)iv; break;
  case WD_DECIMAL: return wd_av_decimal_into(x, f, n, iv, 0, t, out);
  case WD_DATE:
    if (unit != WD_AV_DAYS && unit != 0) {
      /* a timestamp into a DATE: its day */
      wd_i128 ns = (wd_i128)iv * unit;
      out->i = (int64_t)(ns / ((wd_i128)86400 * 1000000000) - (ns % ((wd_i128)86400 * 1000000000) < 0));
    } else out->i = iv;
    if (!wd_conv_date_in_years(out->i)) return wd_av_type_error(x, f, n, "%" PRId64 " is %s", iv, WD_CONV_YEARS_TEXT);
    break;
  case WD_TIME: {
    int64_t u = unit ? unit : wd_av_opt_unit(x->src->time_unit, t->precision);
    if (!u) return wd_av_unknown_unit(x, f, n, "time-unit");
    if (u == WD_AV_DAYS) return wd_av_type_error(x, f, n, "a date is not a time of day");
    wd_i128 ns = (wd_i128)iv * u;
    if (ns < 0 || ns >= (wd_i128)86400 * 1000000000)
      return wd_av_type_error(x, f, n, "%" PRId64 " is not a time of day", iv);
    int64_t q = 1;
    for (int i = t->precision; i < 9; i++) q *= 10;
    out->i = (int64_t)ns / q * q;
    break;
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    int64_t u = unit ? unit : path_unit ? path_unit : wd_av_opt_unit(x->src->timestamp_unit, t->precision);
    if (!u) return wd_av_unknown_unit(x, f, n, "timestamp-unit");
    if (u == WD_AV_DAYS) {
      if (iv > INT64_MAX / 86400000000 || iv < INT64_MIN / 86400000000)
        return wd_av_type_error(x, f, n, "%" PRId64 " is out of range", iv);
      out->ts.us = iv * 86400 * 1000000;
      out->ts.ns = 0;
    } else {
      wd_i128 ns = (wd_i128)iv * u;
      wd_i128 us = ns / 1000 - (ns % 1000 < 0);
      if (us > INT64_MAX || us < INT64_MIN) return wd_av_type_error(x, f, n, "%" PRId64 " is out of range", iv);
      out->ts.us = (int64_t)us;
      out->ts.ns = (int32_t)(ns - us * 1000);
    }
    if (!wd_conv_ts_in_years(out->ts.us)) return wd_av_type_error(x, f, n, "%" PRId64 " is %s", iv, WD_CONV_YEARS_TEXT);
    wd_av_ts_truncate(t->precision, &out->ts.us, &out->ts.ns);
    break;
  }
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: {
    char tmp[24];
    int len = snprintf(tmp, sizeof(tmp), "%" PRId64, iv);
    return wd_av_set_bytes(out, tmp, (size_t)len);
  }
  default: return wd_av_type_error(x, f, n, "an integer cannot go into this type");
  }
  out->is_null = false;
  return NULL;
}

static wd_error_t *wd_av_double_into(wd_avx_t *x, const wd_avf_t *f, const wd_av_node_t *n, double d,
                                     const wd_type_t *t, wd_value_t *out) {
  wd_value_t dv = {.is_null = false, .f = d};
  wd_buf_t b = {0};
  wd_error_t *err = NULL;
  switch (t->id) {
  case WD_FLOAT: out->f = (float)d; break;
  case WD_DOUBLE: out->f = d; break;
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (d != d || d < (double)wd_type_int_min(t) || d > (double)wd_type_int_max(t) || d != (double)(int64_t)d)
      return wd_av_type_error(x, f, n, "%.17g is not an integer of the type's range", d);
    out->i = (int64_t)d;
    break;
  case WD_DECIMAL:
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
    if (wd_value_format(&wd_av_t_double, &dv, &b)) return wd_error_nomem();
    err = wd_av_from_text(x, f, n, t, (const char *)b.data, b.len, out);
    wd_buf_free(&b);
    return err;
  default: return wd_av_type_error(x, f, n, "a floating-point number cannot go into this type");
  }
  out->is_null = false;
  return NULL;
}

static wd_error_t *wd_av_convert(wd_avx_t *x, const wd_avf_t *f, wd_av_node_t *n, avro_value_t *v, const wd_type_t *t,
                                 int64_t path_unit, wd_value_t *out) {
  out->is_null = true;
  if (!wd_av_unwrap(&n, v)) return NULL;
  switch (n->kind) {
  case WD_AV_BOOLEAN: {
    int b = 0;
    avro_value_get_boolean(v, &b);
    if (t->id == WD_BOOLEAN) {
      out->b = b != 0;
      out->is_null = false;
      return NULL;
    }
    if (wd_type_is_text(t)) return wd_av_set_bytes(out, b ? "true" : "false", b ? 4 : 5);
    return wd_av_type_error(x, f, n, "a boolean cannot go into this type");
  }
  case WD_AV_INT: {
    int32_t i = 0;
    avro_value_get_int(v, &i);
    return wd_av_long_into(x, f, n, i, n->unit, path_unit, t, out);
  }
  case WD_AV_LONG: {
    int64_t i = 0;
    avro_value_get_long(v, &i);
    return wd_av_long_into(x, f, n, i, n->unit, path_unit, t, out);
  }
  case WD_AV_FLOAT: {
    float d = 0;
    avro_value_get_float(v, &d);
    return wd_av_double_into(x, f, n, d, t, out);
  }
  case WD_AV_DOUBLE: {
    double d = 0;
    avro_value_get_double(v, &d);
    return wd_av_double_into(x, f, n, d, t, out);
  }
  case WD_AV_BYTES:
  case WD_AV_FIXED: {
    const void *p = NULL;
    size_t len = 0;
    if (n->kind == WD_AV_BYTES) avro_value_get_bytes(v, &p, &len);
    else avro_value_get_fixed(v, &p, &len);
    if (t->id == WD_BYTES) return wd_av_set_bytes(out, p, len);
    if (n->is_decimal || t->id == WD_DECIMAL) {
      wd_i128 u;
      if (wd_conv_be_to_i128(p, len, &u)) return wd_av_type_error(x, f, n, "the decimal has more than 128 bits");
      int scale = n->has_scale ? n->scale : t->id == WD_DECIMAL ? t->scale : 0;
      return wd_av_decimal_into(x, f, n, u, scale, t, out);
    }
    if (wd_type_is_text(t)) {
      wd_value_t bv = {.is_null = false};
      bv.s.p = (char *)(uintptr_t)p;
      bv.s.n = len;
      wd_buf_t b = {0};
      if (wd_value_format(&wd_av_t_bytes, &bv, &b)) return wd_error_nomem();
      wd_error_t *err = wd_av_set_bytes(out, b.data ? (const char *)b.data : "", b.len);
      wd_buf_free(&b);
      return err;
    }
    return wd_av_type_error(x, f, n, "bytes cannot go into this type");
  }
  case WD_AV_STRING: {
    const char *s = NULL;
    size_t len = 0;
    avro_value_get_string(v, &s, &len);
    if (len > 0) len--; /* avro-c counts the NUL */
    return wd_av_from_text(x, f, n, t, s ? s : "", len, out);
  }
  case WD_AV_ENUM: {
    int e = 0;
    avro_value_get_enum(v, &e);
    if (e < 0 || (size_t)e >= n->n) return wd_av_type_error(x, f, n, "enum index %d is out of range", e);
    return wd_av_from_text(x, f, n, t, n->fname[e], strlen(n->fname[e]), out);
  }
  case WD_AV_ARRAY: {
    if (t->id != WD_ARRAY) return wd_av_type_error(x, f, n, "an array cannot go into this type");
    size_t size = 0;
    avro_value_get_size(v, &size);
    out->list.v = calloc(size ? size : 1, sizeof(wd_value_t));
    if (!out->list.v) return wd_error_nomem();
    out->list.n = 0;
    out->is_null = false;
    for (size_t i = 0; i < size; i++) {
      avro_value_t c;
      avro_value_get_by_index(v, i, &c, NULL);
      wd_error_t *err = wd_av_convert(x, f, n->sub[0], &c, t->elem, 0, &out->list.v[i]);
      out->list.n = i + 1;
      if (err) {
        wd_value_clear(t, out);
        return err;
      }
    }
    return NULL;
  }
  case WD_AV_MAP: {
    if (t->id != WD_MAP) return wd_av_type_error(x, f, n, "a map cannot go into this type");
    size_t size = 0;
    avro_value_get_size(v, &size);
    out->map.k = calloc(size ? size : 1, sizeof(wd_value_t));
    out->map.v = calloc(size ? size : 1, sizeof(wd_value_t));
    out->map.n = 0;
    out->is_null = false;
    if (!out->map.k || !out->map.v) {
      free(out->map.k);
      free(out->map.v);
      out->is_null = true;
      return wd_error_nomem();
    }
    for (size_t i = 0; i < size; i++) {
      avro_value_t c;
      const char *key = NULL;
      avro_value_get_by_index(v, i, &c, &key);
      out->map.n = i + 1;
      wd_error_t *err = wd_av_from_text(x, f, n, t->elem, key ? key : "", key ? strlen(key) : 0, &out->map.k[i]);
      if (!err) err = wd_av_convert(x, f, n->sub[0], &c, t->val, 0, &out->map.v[i]);
      if (err) {
        wd_value_clear(t, out);
        return err;
      }
    }
    return NULL;
  }
  case WD_AV_RECORD: {
    if (t->id == WD_DECIMAL || n->is_vsd) {
      /* VariableScaleDecimal {scale: int, value: bytes} */
      wd_av_node_t *sn = n, *vn = n;
      avro_value_t sv = *v, vv = *v;
      if (!wd_av_step(&sn, &sv, "scale", 5) || !wd_av_step(&vn, &vv, "value", 5) || !wd_av_unwrap(&sn, &sv) ||
          !wd_av_unwrap(&vn, &vv) || sn->kind != WD_AV_INT || vn->kind != WD_AV_BYTES)
        return wd_av_type_error(x, f, n, "a record that is not a VariableScaleDecimal cannot go into this type");
      int32_t scale = 0;
      const void *p = NULL;
      size_t len = 0;
      avro_value_get_int(&sv, &scale);
      avro_value_get_bytes(&vv, &p, &len);
      wd_i128 u;
      if (scale < 0 || scale > 38 || wd_conv_be_to_i128(p, len, &u))
        return wd_av_type_error(x, f, n, "the decimal does not fit 128 bits or has scale %d", (int)scale);
      return wd_av_decimal_into(x, f, n, u, scale, t, out);
    }
    if (t->id != WD_ROW) return wd_av_type_error(x, f, n, "a record cannot go into this type");
    out->list.v = calloc(t->nfields ? t->nfields : 1, sizeof(wd_value_t));
    if (!out->list.v) return wd_error_nomem();
    out->list.n = t->nfields;
    out->is_null = false;
    for (size_t i = 0; i < t->nfields; i++) {
      out->list.v[i].is_null = true;
      wd_av_node_t *cn = n;
      avro_value_t cv = *v;
      const char *name = t->fields[i].name;
      if (!wd_av_step(&cn, &cv, name, strlen(name))) continue;
      wd_error_t *err = wd_av_convert(x, f, cn, &cv, t->fields[i].type, 0, &out->list.v[i]);
      if (err) {
        wd_value_clear(t, out);
        return err;
      }
    }
    return NULL;
  }
  default: return wd_av_type_error(x, f, n, "this Avro type is not supported");
  }
}

/* ---- conversion from the binary encoding (the same rules as wd_av_convert) --------------- */

static inline double wd_avb_f64(const uint8_t *p) {
  uint64_t u = 0;
  for (int i = 7; i >= 0; i--) u = u << 8 | p[i];
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

static inline float wd_avb_f32(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

static wd_error_t *wd_avb_malformed(const wd_avx_t *x) {
  return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the value does not read with its writer schema",
                      x->src->name);
}

/* One map entry: its key (truncated at a NUL, as avro-c keeps keys) and where its value starts. */
typedef struct {
  const uint8_t *k;
  size_t kl;
  const uint8_t *v;
} wd_avb_entry_t;

static wd_error_t *wd_avb_convert(wd_avx_t *x, const wd_avf_t *f, wd_avb_t v, const wd_type_t *t, int64_t path_unit,
                                  wd_value_t *out) {
  out->is_null = true;
  if (!wd_avb_unwrap(&v)) return NULL;
  wd_av_node_t *n = v.n;
  const uint8_t *p = v.p, *e = v.e;
  switch (n->kind) {
  case WD_AV_BOOLEAN: {
    if (p == e) return wd_avb_malformed(x);
    int b = p[0];
    if (t->id == WD_BOOLEAN) {
      out->b = b != 0;
      out->is_null = false;
      return NULL;
    }
    if (wd_type_is_text(t)) return wd_av_set_bytes(out, b ? "true" : "false", b ? 4 : 5);
    return wd_av_type_error(x, f, n, "a boolean cannot go into this type");
  }
  case WD_AV_INT: {
    int32_t i;
    if (wd_avb_int(&p, e, &i)) return wd_avb_malformed(x);
    return wd_av_long_into(x, f, n, i, n->unit, path_unit, t, out);
  }
  case WD_AV_LONG: {
    int64_t i;
    if (wd_avb_long(&p, e, &i)) return wd_avb_malformed(x);
    return wd_av_long_into(x, f, n, i, n->unit, path_unit, t, out);
  }
  case WD_AV_FLOAT:
    if (e - p < 4) return wd_avb_malformed(x);
    return wd_av_double_into(x, f, n, wd_avb_f32(p), t, out);
  case WD_AV_DOUBLE:
    if (e - p < 8) return wd_avb_malformed(x);
    return wd_av_double_into(x, f, n, wd_avb_f64(p), t, out);
  case WD_AV_BYTES:
  case WD_AV_FIXED: {
    const uint8_t *d = p;
    size_t len = (size_t)n->size;
    if (n->kind == WD_AV_BYTES ? wd_avb_bytes(&p, e, &d, &len) : e - p < n->size) return wd_avb_malformed(x);
    if (t->id == WD_BYTES) return wd_av_set_bytes(out, d, len);
    if (n->is_decimal || t->id == WD_DECIMAL) {
      wd_i128 u;
      if (wd_conv_be_to_i128(d, len, &u)) return wd_av_type_error(x, f, n, "the decimal has more than 128 bits");
      int scale = n->has_scale ? n->scale : t->id == WD_DECIMAL ? t->scale : 0;
      return wd_av_decimal_into(x, f, n, u, scale, t, out);
    }
    if (wd_type_is_text(t)) {
      wd_value_t bv = {.is_null = false};
      bv.s.p = (char *)(uintptr_t)d;
      bv.s.n = len;
      wd_buf_t b = {0};
      if (wd_value_format(&wd_av_t_bytes, &bv, &b)) return wd_error_nomem();
      wd_error_t *err = wd_av_set_bytes(out, b.data ? (const char *)b.data : "", b.len);
      wd_buf_free(&b);
      return err;
    }
    return wd_av_type_error(x, f, n, "bytes cannot go into this type");
  }
  case WD_AV_STRING: {
    const uint8_t *d;
    size_t len;
    if (wd_avb_bytes(&p, e, &d, &len)) return wd_avb_malformed(x);
    if (wd_type_is_text(t) || t->id == WD_BYTES) return wd_av_set_bytes(out, d, len);
    /* the text parsers may read to a NUL (strtod): a terminated copy */
    char small[128], *s = len < sizeof(small) ? small : malloc(len + 1);
    if (!s) return wd_error_nomem();
    memcpy(s, d, len);
    s[len] = 0;
    wd_error_t *err = wd_av_from_text(x, f, n, t, s, len, out);
    if (s != small) free(s);
    return err;
  }
  case WD_AV_ENUM: {
    int64_t l;
    if (wd_avb_long(&p, e, &l)) return wd_avb_malformed(x);
    int ix = (int)l;
    if (ix < 0 || (size_t)ix >= n->n) return wd_av_type_error(x, f, n, "enum index %d is out of range", ix);
    return wd_av_from_text(x, f, n, t, n->fname[ix], strlen(n->fname[ix]), out);
  }
  case WD_AV_ARRAY: {
    if (t->id != WD_ARRAY) return wd_av_type_error(x, f, n, "an array cannot go into this type");
    size_t cap = 0;
    int64_t min = wd_avb_min_size(n->sub[0]);
    out->list.v = NULL;
    out->list.n = 0;
    out->is_null = false;
    for (;;) {
      int64_t c;
      wd_error_t *err = NULL;
      if (wd_avb_block(&p, e, min, &c)) err = wd_avb_malformed(x);
      if (!err && c == 0) break;
      if (!err) {
        wd_value_t *nv = realloc(out->list.v, (cap + (size_t)c) * sizeof(wd_value_t));
        if (!nv) err = wd_error_nomem();
        else {
          memset(nv + cap, 0, (size_t)c * sizeof(wd_value_t));
          out->list.v = nv;
          cap += (size_t)c;
        }
      }
      for (int64_t i = 0; !err && i < c; i++) {
        wd_avb_t item = {n->sub[0], p, e, -1};
        err = wd_avb_convert(x, f, item, t->elem, 0, &out->list.v[out->list.n]);
        out->list.n++;
        if (!err && wd_avb_skip(n->sub[0], &p, e, 0)) err = wd_avb_malformed(x);
      }
      if (err) {
        if (!out->list.v) out->is_null = true;
        else wd_value_clear(t, out);
        return err;
      }
    }
    if (!out->list.v && !(out->list.v = calloc(1, sizeof(wd_value_t)))) {
      out->is_null = true;
      return wd_error_nomem();
    }
    return NULL;
  }
  case WD_AV_MAP: {
    if (t->id != WD_MAP) return wd_av_type_error(x, f, n, "a map cannot go into this type");
    /* the entries first: avro-c's generic map keeps one entry per key, at the key's first
     * position, with the last value read for it */
    wd_avb_entry_t small[16], *ent = small;
    size_t nent = 0, capent = 16;
    int64_t min = wd_avb_min_size(n->sub[0]) + 1;
    wd_error_t *err = NULL;
    for (;;) {
      int64_t c;
      if (wd_avb_block(&p, e, min, &c)) {
        err = wd_avb_malformed(x);
        break;
      }
      if (c == 0) break;
      for (int64_t i = 0; !err && i < c; i++) {
        const uint8_t *k;
        size_t kl;
        if (wd_avb_bytes(&p, e, &k, &kl)) {
          err = wd_avb_malformed(x);
          break;
        }
        kl = strnlen((const char *)k, kl);
        size_t j = 0;
        while (j < nent && !(ent[j].kl == kl && memcmp(ent[j].k, k, kl) == 0)) j++;
        if (j == nent) {
          if (nent == capent) {
            wd_avb_entry_t *ne = malloc(capent * 2 * sizeof(*ne));
            if (!ne) {
              err = wd_error_nomem();
              break;
            }
            memcpy(ne, ent, nent * sizeof(*ne));
            if (ent != small) free(ent);
            ent = ne;
            capent *= 2;
          }
          ent[nent++].k = k;
          ent[j].kl = kl;
        }
        ent[j].v = p;
        if (wd_avb_skip(n->sub[0], &p, e, 0)) err = wd_avb_malformed(x);
      }
      if (err) break;
    }
    if (!err) {
      out->map.k = calloc(nent ? nent : 1, sizeof(wd_value_t));
      out->map.v = calloc(nent ? nent : 1, sizeof(wd_value_t));
      out->map.n = 0;
      out->is_null = false;
      if (!out->map.k || !out->map.v) {
        free(out->map.k);
        free(out->map.v);
        out->is_null = true;
        err = wd_error_nomem();
      }
    }
    for (size_t i = 0; !err && i < nent; i++) {
      out->map.n = i + 1;
      /* keys are C strings here (terminated copies, as for string values) */
      char kb[128], *ks = ent[i].kl < sizeof(kb) ? kb : malloc(ent[i].kl + 1);
      if (!ks) {
        err = wd_error_nomem();
      } else {
        memcpy(ks, ent[i].k, ent[i].kl);
        ks[ent[i].kl] = 0;
        err = wd_av_from_text(x, f, n, t->elem, ks, ent[i].kl, &out->map.k[i]);
        if (ks != kb) free(ks);
      }
      if (!err) {
        wd_avb_t item = {n->sub[0], ent[i].v, e, -1};
        err = wd_avb_convert(x, f, item, t->val, 0, &out->map.v[i]);
      }
      if (err) wd_value_clear(t, out);
    }
    if (ent != small) free(ent);
    return err;
  }
  case WD_AV_RECORD: {
    if (t->id == WD_DECIMAL || n->is_vsd) {
      /* VariableScaleDecimal {scale: int, value: bytes} */
      wd_avb_t sv = v, vv = v;
      int rs = wd_avb_step(x->dec, &sv, "scale", 5, NULL),
          rv = rs == 1 ? wd_avb_step(x->dec, &vv, "value", 5, NULL) : 0;
      if (rs < 0 || rv < 0) return wd_error_nomem();
      if (rs != 1 || rv != 1 || !wd_avb_unwrap(&sv) || !wd_avb_unwrap(&vv) || sv.n->kind != WD_AV_INT ||
          vv.n->kind != WD_AV_BYTES)
        return wd_av_type_error(x, f, n, "a record that is not a VariableScaleDecimal cannot go into this type");
      int32_t scale;
      const uint8_t *d;
      size_t len;
      if (wd_avb_int(&sv.p, sv.e, &scale) || wd_avb_bytes(&vv.p, vv.e, &d, &len)) return wd_avb_malformed(x);
      wd_i128 u;
      if (scale < 0 || scale > 38 || wd_conv_be_to_i128(d, len, &u))
        return wd_av_type_error(x, f, n, "the decimal does not fit 128 bits or has scale %d", (int)scale);
      return wd_av_decimal_into(x, f, n, u, scale, t, out);
    }
    if (t->id != WD_ROW) return wd_av_type_error(x, f, n, "a record cannot go into this type");
    out->list.v = calloc(t->nfields ? t->nfields : 1, sizeof(wd_value_t));
    if (!out->list.v) return wd_error_nomem();
    out->list.n = t->nfields;
    out->is_null = false;
    for (size_t i = 0; i < t->nfields; i++) {
      out->list.v[i].is_null = true;
      wd_avb_t cv = v;
      const char *name = t->fields[i].name;
      int rc = wd_avb_step(x->dec, &cv, name, strlen(name), NULL);
      wd_error_t *err = rc < 0    ? wd_error_nomem()
                        : rc == 0 ? NULL
                                  : wd_avb_convert(x, f, cv, t->fields[i].type, 0, &out->list.v[i]);
      if (err) {
        wd_value_clear(t, out);
        return err;
      }
    }
    return NULL;
  }
  default: return wd_av_type_error(x, f, n, "this Avro type is not supported");
  }
}

/* Follows segments [0, nseg) of c from v; 1 found (v unwrapped, not null), 0 absent or null on
 * the way, -1 no memory. */
static int wd_avb_path(wd_avx_t *x, size_t m, wd_avb_t *v) {
  const wd_source_col_t *c = &x->src->cols[m];
  uint32_t *hint = x->hints ? x->hints->idx + x->hints->first[m] : NULL;
  for (size_t i = 0; i < c->nseg; i++) {
    if (!wd_avb_unwrap(v)) return 0;
    int rc = wd_avb_step(x->dec, v, c->seg[i], c->seglen[i], hint ? hint + i : NULL);
    if (rc != 1) return rc;
  }
  return wd_avb_unwrap(v) ? 1 : 0;
}

/* ---- records ------------------------------------------------------------------------------ */

static int wd_avb_check(wd_avro_decoder_t *dec, wd_avb_t *v);

static wd_error_t *wd_av_load_key(wd_avx_t *x) {
  if (x->key_state) return NULL;
  x->key_state = -1;
  const wd_kafka_meta_t *m = x->meta;
  if (!m || !m->key || m->key_len == 0) return NULL;
  int32_t id;
  if (wd_wire_parse(m->key, m->key_len, &id))
    return wd_error_new(WD_ERR_DECODE, E_DECODE,
                        "source '%s': the Kafka key is not in the Avro wire format "
                        "(magic byte 0, schema id)",
                        x->src->name);
  wd_av_schema_t *s = NULL;
  wd_error_t *err = wd_av_get(x->dec, id, 1, &s);
  if (err) return err;
  if (!x->dec->generic) {
    const uint8_t *p = (const uint8_t *)m->key + WD_WIRE_HEADER, *e = (const uint8_t *)m->key + m->key_len;
    x->bkey = (wd_avb_t){s->root, p, e, -1};
    int rc = wd_avb_check(x->dec, &x->bkey);
    if (rc == -2) return wd_error_nomem();
    if (rc)
      return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the Kafka key does not read with schema id %" PRId32,
                          x->src->name, id);
    x->key_state = x->bkey.n->kind != WD_AV_NULL ? 1 : -1;
    return NULL;
  }
  if (wd_av_read(s, (const uint8_t *)m->key + WD_WIRE_HEADER, m->key_len - WD_WIRE_HEADER))
    return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the Kafka key does not read with schema id %" PRId32,
                        x->src->name, id);
  x->keyn = s->root;
  x->key = s->value;
  x->key_state = wd_av_unwrap(&x->keyn, &x->key) ? 1 : -1;
  return NULL;
}

static const char *const wd_av_images[2] = {"before", "after"};

/* An image: its schema node and value. */
typedef struct {
  wd_av_node_t *n;
  avro_value_t v;
} wd_av_img_t;

/* The image reader of wd_event_emit (ingest/format.h) over the envelope record. */
static wd_error_t *wd_av_value(void *ctx, int image, const void *img, size_t m, wd_value_t *v, bool *present) {
  wd_avx_t *x = ctx;
  const wd_av_img_t *im = img;
  const wd_source_col_t *c = &x->src->cols[m];
  const wd_type_t *t = x->schema->cols[c->col].type;
  wd_error_t *err = NULL;
  wd_avf_t f = {.c = c, .image = NULL};
  wd_av_node_t *n = NULL;
  avro_value_t av;
  bool found = false;
  int64_t path_unit = 0;
  *present = true;
  switch (c->kind) {
  case WD_MAP_IMAGE:
    f.image = wd_av_images[image];
    if (im) {
      n = im->n;
      av = im->v;
      found = wd_av_path(&n, &av, c, 0);
    }
    *present = found;
    break;
  case WD_MAP_ENVELOPE:
    n = x->rootn;
    av = x->root;
    found = wd_av_path(&n, &av, c, 0);
    path_unit = c->path_unit == WD_UNIT_AUTO ? 0 : wd_av_opt_unit(c->path_unit, 9);
    break;
  case WD_MAP_KEY:
    if ((err = wd_av_load_key(x))) return err;
    if (x->key_state != 1) break;
    n = x->keyn;
    av = x->key;
    found = wd_av_path(&n, &av, c, 0);
    path_unit = c->path_unit == WD_UNIT_AUTO ? 0 : wd_av_opt_unit(c->path_unit, 9);
    break;
  case WD_MAP_KAFKA: return NULL;
  }
  if (!found) return NULL;
  return wd_av_convert(x, &f, n, &av, t, path_unit, v);
}

/* wd_av_value over the binary encoding; img is a wd_avb_t of the image record. */
static wd_error_t *wd_avb_value(void *ctx, int image, const void *img, size_t m, wd_value_t *v, bool *present) {
  wd_avx_t *x = ctx;
  const wd_source_col_t *c = &x->src->cols[m];
  const wd_type_t *t = x->schema->cols[c->col].type;
  wd_error_t *err = NULL;
  wd_avf_t f = {.c = c, .image = NULL};
  wd_avb_t bv;
  int found = 0;
  int64_t path_unit = 0;
  *present = true;
  switch (c->kind) {
  case WD_MAP_IMAGE:
    f.image = wd_av_images[image];
    if (img) {
      bv = *(const wd_avb_t *)img;
      found = wd_avb_path(x, m, &bv);
    }
    *present = found == 1;
    break;
  case WD_MAP_ENVELOPE:
    bv = x->broot;
    found = wd_avb_path(x, m, &bv);
    path_unit = c->path_unit == WD_UNIT_AUTO ? 0 : wd_av_opt_unit(c->path_unit, 9);
    break;
  case WD_MAP_KEY:
    if ((err = wd_av_load_key(x))) return err;
    if (x->key_state != 1) break;
    bv = x->bkey;
    found = wd_avb_path(x, m, &bv);
    path_unit = c->path_unit == WD_UNIT_AUTO ? 0 : wd_av_opt_unit(c->path_unit, 9);
    break;
  case WD_MAP_KAFKA: return NULL;
  }
  if (found < 0) return wd_error_nomem();
  if (!found) return NULL;
  return wd_avb_convert(x, &f, bv, t, path_unit, v);
}

/* Field name of the envelope record x->broot, unwrapped: 1 found (not null), 0 null or absent,
 * -1 no memory. */
static int wd_avb_envelope_field(wd_avx_t *x, const char *name, wd_avb_t *out) {
  *out = x->broot;
  int rc = wd_avb_step(x->dec, out, name, strlen(name), NULL);
  return rc == 1 ? wd_avb_unwrap(out) ? 1 : 0 : rc;
}

/* The image record of field name of the envelope: n and v set and true, or false for null/absent. */
static const wd_av_img_t *wd_av_image(wd_avx_t *x, const char *name, wd_av_img_t *img) {
  img->n = x->rootn;
  img->v = x->root;
  return wd_av_step(&img->n, &img->v, name, strlen(name)) && wd_av_unwrap(&img->n, &img->v) &&
                 img->n->kind == WD_AV_RECORD
             ? img
             : NULL;
}

/* Checks the value at v end to end (a union resolved first: v is left at its branch); for a
 * record, its frame and those of its record fields then hold every field's start. 0, -1
 * malformed, -2 no memory. */
static int wd_avb_check(wd_avro_decoder_t *dec, wd_avb_t *v) {
  while (v->n->kind == WD_AV_UNION) {
    int64_t d;
    if (wd_avb_long(&v->p, v->e, &d) || d < 0 || (uint64_t)d >= v->n->n) return -1;
    v->n = v->n->sub[d];
  }
  const uint8_t *q = v->p;
  if (v->n->kind != WD_AV_RECORD) return wd_avb_skip(v->n, &q, v->e, 0) ? -1 : 0;
  return wd_avb_fill(dec, v, 1, &q);
}

void wd_avro_decoder_set_generic(wd_avro_decoder_t *dec, bool generic) { dec->generic = generic; }

wd_error_t *wd_decode_debezium_avro(wd_avro_decoder_t *dec, const wd_source_t *src, const wd_schema_t *schema,
                                    const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  wd_error_t *err = NULL;
  int index = -1;
  wd_changes_reset(out);
  if (out->schema && out->schema != schema) {
    err = wd_error_new(WD_ERR_INTERNAL, NONE, "wd_decode_debezium_avro: the container is bound to another schema");
    goto cleanup;
  }
  if (src->ncols && src->schema_ncols != schema->ncols) {
    err = wd_error_new(WD_ERR_INTERNAL, NONE,
                       "wd_decode_debezium_avro: source '%s' is not a debezium-avro source of this schema", src->name);
    goto cleanup;
  }
  if (!value || len == 0) {
    out->flags |= WD_CHANGES_TOMBSTONE;
    goto cleanup;
  }
  int32_t id;
  if (wd_wire_parse(value, len, &id)) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': not in the Confluent Avro wire format (%s)", src->name,
                       len < WD_WIRE_HEADER ? "fewer than 5 bytes" : "the magic byte is not 0");
    goto cleanup;
  }
  wd_av_schema_t *s = NULL;
  if ((err = wd_av_get(dec, id, 0, &s))) {
    if (err->cls == WD_ERR_DECODE) err = wd_error_wrap(err, "source '%s'", src->name);
    goto cleanup;
  }
  wd_avx_t x = {.dec = dec, .src = src, .schema = schema, .meta = meta, .rootn = s->root};
  const char *ops = NULL;
  size_t opl = 0;
  wd_av_img_t bi, ai;
  wd_avb_t bb, ab;
  const void *before = NULL, *after = NULL;
  if (dec->generic) {
    if (wd_av_read(s, (const uint8_t *)value + WD_WIRE_HEADER, len - WD_WIRE_HEADER)) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the value does not read with writer schema id %" PRId32,
                         src->name, id);
      goto cleanup;
    }
    x.root = s->value;
    if (!wd_av_unwrap(&x.rootn, &x.root)) { /* a null value in a ["null", Envelope] union */
      out->flags |= WD_CHANGES_TOMBSTONE;
      goto cleanup;
    }
    if (x.rootn->kind != WD_AV_RECORD) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': writer schema id %" PRId32 " is not a record",
                         src->name, id);
      goto cleanup;
    }
    wd_av_node_t *opn = x.rootn;
    avro_value_t opv = x.root;
    if (wd_av_step(&opn, &opv, "op", 2) && wd_av_unwrap(&opn, &opv) && opn->kind == WD_AV_STRING) {
      avro_value_get_string(&opv, &ops, &opl);
      if (opl) opl--;
    }
    wd_av_node_t *tsn = x.rootn;
    avro_value_t tsv = x.root;
    if (wd_av_step(&tsn, &tsv, "ts_ms", 5) && wd_av_unwrap(&tsn, &tsv)) {
      int64_t l;
      int32_t i;
      if (tsn->kind == WD_AV_LONG && !avro_value_get_long(&tsv, &l)) out->ts_ms = l;
      if (tsn->kind == WD_AV_INT && !avro_value_get_int(&tsv, &i)) out->ts_ms = i;
    }
    memset(&bi, 0, sizeof(bi));
    memset(&ai, 0, sizeof(ai));
    before = wd_av_image(&x, "before", &bi);
    after = wd_av_image(&x, "after", &ai);
  } else {
    dec->nframes = dec->npos = 0;
    x.hints = wd_avb_hints(dec, src);
    x.broot = (wd_avb_t){s->root, (const uint8_t *)value + WD_WIRE_HEADER, (const uint8_t *)value + len, -1};
    int rc = wd_avb_check(dec, &x.broot);
    if (rc == -2) {
      err = wd_error_nomem();
      goto cleanup;
    }
    if (rc) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the value does not read with writer schema id %" PRId32,
                         src->name, id);
      goto cleanup;
    }
    if (x.broot.n->kind == WD_AV_NULL) { /* a null value in a ["null", Envelope] union */
      out->flags |= WD_CHANGES_TOMBSTONE;
      goto cleanup;
    }
    if (x.broot.n->kind != WD_AV_RECORD) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': writer schema id %" PRId32 " is not a record",
                         src->name, id);
      goto cleanup;
    }
    wd_avb_t fv;
    int r1 = wd_avb_envelope_field(&x, "op", &fv);
    if (r1 == 1 && fv.n->kind == WD_AV_STRING) {
      const uint8_t *d;
      if (!wd_avb_bytes(&fv.p, fv.e, &d, &opl)) ops = (const char *)d;
    }
    int r2 = wd_avb_envelope_field(&x, "ts_ms", &fv);
    if (r2 == 1) {
      int64_t l;
      int32_t i;
      if (fv.n->kind == WD_AV_LONG && !wd_avb_long(&fv.p, fv.e, &l)) out->ts_ms = l;
      if (fv.n->kind == WD_AV_INT && !wd_avb_int(&fv.p, fv.e, &i)) out->ts_ms = i;
    }
    int r3 = wd_avb_envelope_field(&x, "before", &bb), r4 = wd_avb_envelope_field(&x, "after", &ab);
    if (r1 < 0 || r2 < 0 || r3 < 0 || r4 < 0) {
      err = wd_error_nomem();
      goto cleanup;
    }
    /* the images' frames were made by the check: found once here, not per column */
    if (r3 == 1 && bb.n->kind == WD_AV_RECORD) before = &bb, wd_avb_frame(dec, &bb);
    if (r4 == 1 && ab.n->kind == WD_AV_RECORD) after = &ab, wd_avb_frame(dec, &ab);
  }
  if (!ops) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': no \"op\" field: not a Debezium change event", src->name);
    goto cleanup;
  }
  if (opl != 1 || !ops[0] || !strchr("crud", ops[0])) {
    if (opl == 1 && ops[0] == 't')
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"t\" (truncate) is not supported", src->name);
    else if (opl == 1 && ops[0] == 'm')
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"m\" (a logical decoding message) is not supported",
                         src->name);
    else
      err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                         "source '%s': unknown op \"%.*s\" (expected \"c\", \"r\", \"u\" or \"d\")", src->name,
                         (int)(opl > 16 ? 16 : opl), ops);
    goto cleanup;
  }
  x.op = ops[0];
  out->op = x.op;
  char optext[2] = {x.op, 0};
  wd_event_t ev = {.op = x.op == 'c' || x.op == 'r' ? WD_EV_INSERT
                         : x.op == 'u'              ? WD_EV_UPDATE
                                                    : WD_EV_DELETE,
                   .op_text = optext,
                   .before = before,
                   .after = after};
  wd_image_reader_t rd = {
      .ctx = &x, .image_names = {"before", "after"}, .value = dec->generic ? wd_av_value : wd_avb_value};
  err = wd_event_emit(src, schema, meta, &rd, &ev, out);
  index = err ? err->index : -1;
cleanup:
  if (err) {
    wd_changes_reset(out);
    if (err != wd_error_nomem()) err->index = index;
  }
  return err;
}

/* ---- the format ---------------------------------------------------------------------------- */

static wd_error_t *wd_av_open(const wd_format_env_t *env, void **state) {
  *state = NULL;
  if (!env || !env->registry)
    return wd_error_new(WD_ERR_CONFIG, C_NO_REGISTRY,
                        "debezium-avro needs a schema registry; add a top-level "
                        "`schema-registry:` section with its url");
  return wd_avro_decoder_new(env->registry, (wd_avro_decoder_t **)state);
}

static void wd_av_close(void *state) { wd_avro_decoder_destroy(state); }

static wd_error_t *wd_av_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  return wd_decode_debezium_avro(state, src, schema, meta, value, len, out);
}

const wd_format_t wd_format_debezium_avro = {
    .name = "debezium-avro",
    .summary = "Debezium change events (AvroConverter) in the Confluent wire format, writer schemas from the schema "
               "registry",
    .caps = WD_FORMAT_CAP_BEFORE_IMAGE | WD_FORMAT_CAP_NO_BEFORE | WD_FORMAT_CAP_ENVELOPE | WD_FORMAT_CAP_REGISTRY,
    .decimal_default = WD_DECIMAL_AUTO,
    .open = wd_av_open,
    .close = wd_av_close,
    .decode = wd_av_decode,
};
