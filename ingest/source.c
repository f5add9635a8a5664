/*
 * ingest/source.c — building sources: topics, the column mapping (its syntax is documented in
 * source.h), options; and the wd_changes_t container.
 */
#include "ingest/source.h"

#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "common/hash.h"
#include "ingest/conv.h"
#include "ingest/format.h"

const wd_source_option_t wd_source_options[] = {
    {"time-unit", "auto|millis|micros|nanos|precision", "auto",
     "Unit of integer TIME values. auto: the record's type says it (the envelope schema's "
     "io.debezium.time.Time/MicroTime/NanoTime, an Avro logical type); an integer without one (schemaless JSON) "
     "stops widen with C_TEMPORAL_UNIT naming the record: the wide column's precision does not tell the source's "
     "unit. millis, micros, nanos: that unit when the record does not say. precision: the source columns have the "
     "wide columns' precisions (Debezium's adaptive mode: millis for p<=3, micros for 4-6, nanos above)."},
    {"timestamp-unit", "auto|millis|micros|nanos|precision", "auto",
     "Unit of integer TIMESTAMP/TIMESTAMP_LTZ values. auto: the record's type says it (the envelope schema's "
     "io.debezium.time.Timestamp/MicroTimestamp/NanoTimestamp, Connect's Timestamp, an Avro logical type; a `$.` path "
     "ending in _ms/_us/_ns); an integer without one (Kafka Connect's JsonConverter with schemas.enable=false) stops "
     "widen with C_TEMPORAL_UNIT naming the record. millis, micros, nanos: that unit when the record does not say "
     "(a PostgreSQL timestamp(6) through Debezium is micros). precision: the source columns have the wide columns' "
     "precisions (millis for p<=3, micros for 4-6, nanos above). A value outside the years 0001-9999 is E_TYPE."},
    {"decimal-encoding", "auto|text|base64", "auto",
     "How a JSON string is read into a DECIMAL column when the envelope schema does not say "
     "(auto: decimal text when it is one, else Debezium's base64 bytes if it is well-formed base64; "
     "text: always decimal text; base64: always bytes, decimal.handling.mode=precise). Default: the format's "
     "(auto for debezium-json, which warns at start when a DECIMAL column is mapped; text for canal-json, "
     "maxwell-json, ogg-json and changelog-json)."},
    {"delete-without-sequence", "apply|dead-letter|ignore", "apply",
     "A delete whose sequence field is NULL because the record carries only the key (Postgres REPLICA IDENTITY "
     "DEFAULT): apply takes the sequence field from the stored row, so the delete is applied; dead-letter rejects "
     "it to the dead-letter topic; ignore leaves it to the merge, which orders it oldest and drops it. Each kind "
     "is counted in the status line."},
    {"unavailable.value.placeholder", NULL, "__debezium_unavailable_value",
     "Debezium's option of the same name: the value its connectors send for a column whose value they do not "
     "have (a PostgreSQL TOAST column an UPDATE did not touch, an Oracle LOB). A column value equal to it (as "
     "text, as its bytes in a BYTES column, or as the base64 of those bytes, as Debezium sends binary columns) is "
     "not carried: as if the field were absent from the row image, the wide row keeps the value it had. Default "
     "for debezium-json and debezium-avro; for the other formats only when set. Set it as the connector's "
     "`unavailable.value.placeholder`; an empty value turns it off."},
    {NULL, NULL, NULL, NULL},
};

static const char *const wd_unit_names[] = {"auto", "millis", "micros", "nanos", "precision"};

/* ---- small helpers -------------------------------------------------------------------------- */

static char *wd_strdup_n(const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  if (n) memcpy(s, p, n);
  s[n] = 0;
  return s;
}

static void wd_source_col_clear(wd_source_col_t *c) {
  for (size_t i = 0; i < c->nseg; i++) free(c->seg[i]);
  free(c->seg);
  free(c->seglen);
  free(c->spec);
  memset(c, 0, sizeof(*c));
}

/* ---- sources ------------------------------------------------------------------------------ */

static int wd_source_set_placeholder(wd_source_t *src, const char *text);

/* The next wd_source_t.serial (from 1; any thread). */
static uint64_t wd_source_next_serial(void) {
  static _Atomic uint64_t next;
  return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) + 1;
}

wd_error_t *wd_source_new(const char *name, wd_source_format_t format, wd_source_t **out) {
  wd_error_t *err = NULL;
  wd_source_t *src = NULL;
  *out = NULL;
  if (!name || !*name) {
    err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "a source needs a non-empty name");
    goto cleanup;
  }
  src = calloc(1, sizeof(*src));
  if (!src || !(src->name = strdup(name))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  src->format = format;
  src->serial = wd_source_next_serial();
  src->time_unit = WD_UNIT_AUTO;
  src->timestamp_unit = WD_UNIT_AUTO;
  if ((format == WD_FMT_DEBEZIUM_JSON || format == WD_FMT_DEBEZIUM_AVRO) &&
      wd_source_set_placeholder(src, "__debezium_unavailable_value")) {
    err = wd_error_nomem();
    goto cleanup;
  }
  *out = src;
  src = NULL;
cleanup:
  wd_source_destroy(src);
  return err;
}

void wd_source_destroy(wd_source_t *src) {
  if (!src) return;
  for (size_t i = 0; i < src->ntopics; i++) free(src->topics[i]);
  free(src->topics);
  for (size_t i = 0; i < src->ncols; i++) wd_source_col_clear(&src->cols[i]);
  free(src->cols);
  wd_hindex_free(&src->hash);
  free(src->placeholder);
  free(src->placeholder_b64);
  free(src->name);
  free(src);
}

wd_error_t *wd_source_add_topic(wd_source_t *src, const char *topic) {
  if (!topic || !*topic) return wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s': empty topic name", src->name);
  for (size_t i = 0; i < src->ntopics; i++)
    if (strcmp(src->topics[i], topic) == 0)
      return wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s': topic '%s' is listed twice", src->name, topic);
  char **t = realloc(src->topics, (src->ntopics + 1) * sizeof(*t));
  if (!t) return wd_error_nomem();
  src->topics = t;
  if (!(t[src->ntopics] = strdup(topic))) return wd_error_nomem();
  src->ntopics++;
  return NULL;
}

/* Splits a dotted path into segments (backtick quoting, see source.h) and appends them to c.
 * Returns NULL or a C_BAD_MAPPING / E_NOMEM error (c keeps what it had; the caller clears). */
static wd_error_t *wd_path_parse(const wd_source_t *src, const char *column, const char *spec, const char *p,
                                 wd_source_col_t *c) {
  wd_error_t *err = NULL;
  char *segbuf = malloc(strlen(p) + 1);
  if (!segbuf) return wd_error_nomem();
  for (;;) {
    size_t n = 0;
    if (*p == '`') {
      p++;
      for (;;) {
        if (!*p) {
          err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                             "source '%s', column '%s': mapping '%s' has an unterminated backtick", src->name, column,
                             spec);
          goto cleanup;
        }
        if (*p == '`') {
          if (p[1] == '`') {
            segbuf[n++] = '`';
            p += 2;
            continue;
          }
          p++;
          break;
        }
        segbuf[n++] = *p++;
      }
      if (*p && *p != '.') {
        err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                           "source '%s', column '%s': mapping '%s': a quoted segment must be followed by '.' or "
                           "the end",
                           src->name, column, spec);
        goto cleanup;
      }
    } else {
      while (*p && *p != '.') {
        if (*p == '`') {
          err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                             "source '%s', column '%s': mapping '%s': a backtick may only quote a whole segment",
                             src->name, column, spec);
          goto cleanup;
        }
        segbuf[n++] = *p++;
      }
    }
    if (n == 0) {
      err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s', column '%s': mapping '%s' has an empty segment",
                         src->name, column, spec);
      goto cleanup;
    }
    char **seg = realloc(c->seg, (c->nseg + 1) * sizeof(*seg));
    if (seg) c->seg = seg;
    size_t *seglen = realloc(c->seglen, (c->nseg + 1) * sizeof(*seglen));
    if (seglen) c->seglen = seglen;
    if (!seg || !seglen || !(c->seg[c->nseg] = wd_strdup_n(segbuf, n))) {
      err = wd_error_nomem();
      goto cleanup;
    }
    c->seglen[c->nseg++] = n;
    if (!*p) break;
    p++; /* the '.' */
    if (!*p) {
      err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s', column '%s': mapping '%s' ends with '.'",
                         src->name, column, spec);
      goto cleanup;
    }
  }
cleanup:
  free(segbuf);
  return err;
}

/* Whether a $kafka field can be written into type t. */
static bool wd_kafka_type_ok(wd_kafka_field_t f, const wd_type_t *t) {
  switch (f) {
  case WD_KAFKA_TOPIC: return wd_type_is_text(t);
  case WD_KAFKA_KEY: return t->id == WD_STRING || t->id == WD_VARCHAR || t->id == WD_BYTES;
  case WD_KAFKA_PARTITION:
  case WD_KAFKA_OFFSET:
    return wd_type_is_integer(t) || t->id == WD_DECIMAL || t->id == WD_STRING || t->id == WD_VARCHAR;
  case WD_KAFKA_TIMESTAMP:
    return wd_type_is_integer(t) || t->id == WD_DECIMAL || t->id == WD_STRING || t->id == WD_VARCHAR ||
           t->id == WD_TIMESTAMP || t->id == WD_TIMESTAMP_LTZ;
  }
  return false;
}

/* Rebuilds the hash over IMAGE first segments and the next_same chains. 0 or -1 (no memory;
 * the old table is kept). */
/* What wd_source_rehash looks for: an IMAGE mapping with the first segment p[0..n). */
typedef struct wd_seg_probe {
  const wd_source_t *src;
  const char *p;
  size_t n;
} wd_seg_probe_t;

static bool wd_seg_eq(const void *ctx, size_t e) {
  const wd_seg_probe_t *q = ctx;
  const wd_source_col_t *o = &q->src->cols[e];
  return o->seglen[0] == q->n && memcmp(o->seg[0], q->p, q->n) == 0;
}

static int wd_source_rehash(wd_source_t *src) {
  size_t nimg = 0;
  for (size_t i = 0; i < src->ncols; i++)
    if (src->cols[i].kind == WD_MAP_IMAGE) nimg++;
  wd_hindex_t h;
  if (wd_hindex_init(&h, nimg)) return -1;
  for (size_t i = 0; i < src->ncols; i++) src->cols[i].next_same = -1;
  for (size_t i = 0; i < src->ncols; i++) {
    wd_source_col_t *c = &src->cols[i];
    if (c->kind != WD_MAP_IMAGE) continue;
    wd_seg_probe_t q = {src, c->seg[0], c->seglen[0]};
    size_t slot = 0;
    ptrdiff_t first = wd_hindex_find(&h, wd_hash_bytes(q.p, q.n, 0), wd_seg_eq, &q, &slot);
    if (first < 0) {
      wd_hindex_put(&h, slot, i);
      continue;
    }
    wd_source_col_t *o = &src->cols[first];
    while (o->next_same >= 0) o = &src->cols[o->next_same];
    o->next_same = (int)i;
  }
  wd_hindex_free(&src->hash);
  src->hash = h;
  return 0;
}

/* The unit implied by a last segment ending in _ms/_us/_ns (Debezium's ts_ms, ts_us, ts_ns). */
static wd_time_unit_t wd_suffix_unit(const char *s, size_t n) {
  if (n < 3 || s[n - 3] != '_' || s[n - 1] != 's') return WD_UNIT_AUTO;
  switch (s[n - 2]) {
  case 'm': return WD_UNIT_MILLIS;
  case 'u': return WD_UNIT_MICROS;
  case 'n': return WD_UNIT_NANOS;
  }
  return WD_UNIT_AUTO;
}

wd_error_t *wd_source_add_column(wd_source_t *src, const wd_schema_t *schema, const char *column, const char *spec) {
  wd_error_t *err = NULL;
  wd_source_col_t c;
  memset(&c, 0, sizeof(c));
  c.next_same = -1;
  int col = column ? wd_schema_find(schema, column) : -1;
  if (col < 0) {
    err = wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_COLUMN, "source '%s': column '%s' is not in the table schema",
                       src->name, column ? column : "(null)");
    goto cleanup;
  }
  if (src->ncols && src->schema_ncols != schema->ncols) {
    err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                       "source '%s': column '%s' is mapped against a different table schema", src->name, column);
    goto cleanup;
  }
  for (size_t i = 0; i < src->ncols; i++)
    if (src->cols[i].col == col) {
      err = wd_error_new(WD_ERR_CONFIG, C_DUPLICATE_MAPPING, "source '%s': column '%s' is mapped twice ('%s' and '%s')",
                         src->name, column, src->cols[i].spec, spec ? spec : column);
      goto cleanup;
    }
  c.col = col;
  if (!spec) spec = column;
  if (!(c.spec = strdup(spec))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if (!*spec) {
    err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s', column '%s': empty mapping", src->name, column);
    goto cleanup;
  }
  const char *path = spec;
  if (spec[0] == '$') {
    if (strncmp(spec, "$.", 2) == 0) {
      c.kind = WD_MAP_ENVELOPE;
      path = spec + 2;
    } else if (strncmp(spec, "$key.", 5) == 0) {
      c.kind = WD_MAP_KEY;
      path = spec + 5;
    } else if (strncmp(spec, "$kafka.", 7) == 0) {
      static const char *const names[] = {"topic", "partition", "offset", "timestamp", "key"};
      c.kind = WD_MAP_KAFKA;
      int f = -1;
      for (int i = 0; i < 5; i++)
        if (strcmp(spec + 7, names[i]) == 0) f = i;
      if (f < 0) {
        err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                           "source '%s', column '%s': '%s' is not one of $kafka.topic, $kafka.partition, "
                           "$kafka.offset, $kafka.timestamp, $kafka.key",
                           src->name, column, spec);
        goto cleanup;
      }
      c.kafka = (wd_kafka_field_t)f;
      const wd_type_t *t = schema->cols[col].type;
      if (!wd_kafka_type_ok(c.kafka, t)) {
        char *ts = wd_type_to_string(t);
        err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s', column '%s': '%s' cannot go into type %s",
                           src->name, column, spec, ts ? ts : "?");
        free(ts);
        goto cleanup;
      }
      path = NULL;
    } else {
      err = wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING,
                         "source '%s', column '%s': mapping '%s' starts with '$' but is not $.<path>, $key.<path> "
                         "or $kafka.<field> (quote a field named with '$' in backticks)",
                         src->name, column, spec);
      goto cleanup;
    }
  }
  if (path) {
    if ((err = wd_path_parse(src, column, spec, path, &c))) goto cleanup;
    if (c.kind != WD_MAP_IMAGE) c.path_unit = wd_suffix_unit(c.seg[c.nseg - 1], c.seglen[c.nseg - 1]);
  }
  wd_source_col_t *cols = realloc(src->cols, (src->ncols + 1) * sizeof(*cols));
  if (!cols) {
    err = wd_error_nomem();
    goto cleanup;
  }
  src->cols = cols;
  src->cols[src->ncols++] = c;
  memset(&c, 0, sizeof(c));
  src->schema_ncols = schema->ncols;
  if (wd_source_rehash(src)) {
    /* keep the source consistent: drop the column again */
    wd_source_col_clear(&src->cols[--src->ncols]);
    err = wd_error_nomem();
    goto cleanup;
  }
  src->serial = wd_source_next_serial();
cleanup:
  wd_source_col_clear(&c);
  return err;
}

/* Sets src's placeholder to text (copied) and its base64 form; an empty text: none. 0 or -1. */
static int wd_source_set_placeholder(wd_source_t *src, const char *text) {
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  free(src->placeholder);
  free(src->placeholder_b64);
  src->placeholder = src->placeholder_b64 = NULL;
  src->placeholder_len = src->placeholder_b64_len = 0;
  size_t n = text ? strlen(text) : 0;
  if (!n) return 0;
  char *p = strdup(text), *e = malloc((n + 2) / 3 * 4 + 1);
  if (!p || !e) {
    free(p);
    free(e);
    return -1;
  }
  size_t k = 0;
  const unsigned char *u = (const unsigned char *)text;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t w = (uint32_t)u[i] << 16 | (i + 1 < n ? (uint32_t)u[i + 1] << 8 : 0) | (i + 2 < n ? u[i + 2] : 0);
    e[k++] = b64[w >> 18 & 63];
    e[k++] = b64[w >> 12 & 63];
    e[k++] = i + 1 < n ? b64[w >> 6 & 63] : '=';
    e[k++] = i + 2 < n ? b64[w & 63] : '=';
  }
  e[k] = 0;
  src->placeholder = p;
  src->placeholder_len = n;
  src->placeholder_b64 = e;
  src->placeholder_b64_len = k;
  return 0;
}

bool wd_source_unavailable(const wd_source_t *src, const wd_type_t *t, const wd_value_t *v) {
  if (!src->placeholder || v->is_null) return false;
  switch (t->id) {
  case WD_STRING:
  case WD_VARCHAR:
  case WD_CHAR:
  case WD_BYTES:
    return (v->s.n == src->placeholder_len && !memcmp(v->s.p, src->placeholder, v->s.n)) ||
           (v->s.n == src->placeholder_b64_len && !memcmp(v->s.p, src->placeholder_b64, v->s.n));
  default: return false;
  }
}

wd_error_t *wd_source_set_option(wd_source_t *src, const char *key, const char *value) {
  if (key && strcmp(key, "unavailable.value.placeholder") == 0) {
    return wd_source_set_placeholder(src, value) ? wd_error_nomem() : NULL;
  }
  if (key && strcmp(key, "decimal-encoding") == 0) {
    static const char *const names[] = {"auto", "text", "base64"};
    for (int i = 0; i < 3; i++)
      if (value && strcmp(value, names[i]) == 0) {
        src->decimal_encoding = (wd_decimal_encoding_t)i;
        src->decimal_encoding_set = true;
        return NULL;
      }
    return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE,
                        "source '%s': option 'decimal-encoding' = '%s' is not one of auto, text, base64", src->name,
                        value ? value : "(null)");
  }
  if (key && strcmp(key, "delete-without-sequence") == 0) {
    static const char *const names[] = {"apply", "dead-letter", "ignore"};
    for (int i = 0; i < 3; i++)
      if (value && strcmp(value, names[i]) == 0) {
        src->delete_without_sequence = (wd_delete_no_seq_t)i;
        return NULL;
      }
    return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE,
                        "source '%s': option 'delete-without-sequence' = '%s' is not one of apply, dead-letter, ignore",
                        src->name, value ? value : "(null)");
  }
  wd_time_unit_t *dst = NULL;
  if (key && strcmp(key, "time-unit") == 0) dst = &src->time_unit;
  if (key && strcmp(key, "timestamp-unit") == 0) dst = &src->timestamp_unit;
  if (!dst)
    return wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_OPTION,
                        "source '%s': unknown option '%s' (known: time-unit, "
                        "timestamp-unit, decimal-encoding, delete-without-sequence, unavailable.value.placeholder)",
                        src->name, key ? key : "(null)");
  for (int i = 0; i < 5; i++)
    if (value && strcmp(value, wd_unit_names[i]) == 0) {
      *dst = (wd_time_unit_t)i;
      return NULL;
    }
  return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE,
                      "source '%s': option '%s' = '%s' is not one of auto, "
                      "millis, micros, nanos, precision",
                      src->name, key, value ? value : "(null)");
}

wd_error_t *wd_source_check(const wd_source_t *src, const wd_schema_t *schema) {
  if (!wd_format_of(src->format))
    return wd_error_new(WD_ERR_CONFIG, C_UNSUPPORTED_FORMAT, "source '%s': format %s has no decoder yet", src->name,
                        wd_source_format_name(src->format));
  if (src->ntopics == 0) return wd_error_new(WD_ERR_CONFIG, C_SOURCE_NO_TOPIC, "source '%s' lists no topic", src->name);
  if (src->ncols && src->schema_ncols != schema->ncols)
    return wd_error_new(WD_ERR_CONFIG, C_BAD_MAPPING, "source '%s' was mapped against a different table schema",
                        src->name);
  for (size_t k = 0; k < schema->npk; k++) {
    int col = schema->pk[k];
    bool found = false;
    for (size_t i = 0; i < src->ncols; i++) found = found || src->cols[i].col == col;
    if (!found)
      return wd_error_new(WD_ERR_CONFIG, C_SOURCE_NO_KEY,
                          "source '%s' does not map primary-key column '%s' (every source must map the whole "
                          "primary key)",
                          src->name, schema->cols[col].name);
  }
  return NULL;
}

/* ---- the change container ---------------------------------------------------------------- */

void wd_changes_init(wd_changes_t *ch) {
  memset(ch, 0, sizeof(*ch));
  ch->ts_ms = -1;
}

void wd_changes_reset(wd_changes_t *ch) {
  for (size_t i = 0; i < ch->count; i++)
    if (ch->rows[i]) wd_row_clear(ch->schema, ch->rows[i]);
  ch->count = 0;
  ch->flags = 0;
  ch->op = 0;
  ch->null_key_halves = 0;
  ch->ts_ms = -1;
}

void wd_changes_free(wd_changes_t *ch) {
  for (size_t i = 0; i < ch->cap; i++) wd_row_destroy(ch->schema, ch->rows[i]);
  free(ch->rows);
  if (ch->scratch && ch->scratch_free) ch->scratch_free(ch->scratch);
  wd_changes_init(ch);
}

wd_row_t *wd_changes_add(wd_changes_t *ch, const wd_schema_t *schema, wd_row_kind_t kind) {
  if (ch->schema && ch->schema != schema) return NULL;
  ch->schema = schema;
  if (ch->count == ch->cap) {
    size_t cap = ch->cap ? ch->cap * 2 : 4;
    wd_row_t **rows = realloc(ch->rows, cap * sizeof(*rows));
    if (!rows) return NULL;
    for (size_t i = ch->cap; i < cap; i++) rows[i] = NULL;
    ch->rows = rows;
    ch->cap = cap;
  }
  if (!ch->rows[ch->count] && !(ch->rows[ch->count] = wd_row_new(schema))) return NULL;
  wd_row_t *row = ch->rows[ch->count++];
  row->kind = kind;
  return row;
}

wd_row_t *wd_changes_take(wd_changes_t *ch, size_t i) {
  if (i >= ch->count) return NULL;
  wd_row_t *row = ch->rows[i];
  ch->rows[i] = NULL;
  return row;
}
