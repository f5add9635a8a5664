/*
 * ingest/format.c — the registry of source formats (ingest/format.h). Adding a format is one
 * line in WD_FORMATS; the order is the wd_source_format_t index (debezium-json 0 and
 * debezium-avro 1 first: WD_FMT_DEBEZIUM_JSON / WD_FMT_DEBEZIUM_AVRO).
 */
#include "ingest/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WD_FORMATS(X)                                                                                                  \
  X(debezium_json)                                                                                                     \
  X(debezium_avro)                                                                                                     \
  X(canal_json)                                                                                                        \
  X(maxwell_json)                                                                                                      \
  X(ogg_json)                                                                                                          \
  X(changelog_json)                                                                                                    \
  X(upsert_json)
#define WD_FORMAT_EXTERN(n) extern const wd_format_t wd_format_##n;
WD_FORMATS(WD_FORMAT_EXTERN)
#define WD_FORMAT_REF(n) &wd_format_##n,
static const wd_format_t *const wd_format_list[] = {WD_FORMATS(WD_FORMAT_REF)};
#define WD_NFORMATS (sizeof(wd_format_list) / sizeof(*wd_format_list))

const wd_format_t *const *wd_formats(size_t *n) {
  *n = WD_NFORMATS;
  return wd_format_list;
}

const wd_format_t *wd_format_find(const char *name) {
  for (size_t i = 0; name && i < WD_NFORMATS; i++)
    if (strcmp(wd_format_list[i]->name, name) == 0) return wd_format_list[i];
  return NULL;
}

const wd_format_t *wd_format_of(wd_source_format_t format) {
  return format >= 0 && (size_t)format < WD_NFORMATS ? wd_format_list[format] : NULL;
}

const char *wd_format_names(void) {
  static char names[512];
  if (!names[0]) {
    size_t o = 0;
    for (size_t i = 0; i < WD_NFORMATS && o < sizeof(names); i++)
      o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", wd_format_list[i]->name);
  }
  return names;
}

/* ---- source formats by name (source.h) ---------------------------------------------------- */

const char *wd_source_format_name(wd_source_format_t format) {
  const wd_format_t *f = wd_format_of(format);
  return f ? f->name : "?";
}

wd_error_t *wd_source_format_parse(const char *text, wd_source_format_t *out) {
  for (size_t i = 0; text && i < WD_NFORMATS; i++)
    if (strcmp(wd_format_list[i]->name, text) == 0) {
      *out = (wd_source_format_t)i;
      return NULL;
    }
  return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE, "source format '%s' is not one of %s", text ? text : "(null)",
                      wd_format_names());
}

/* ---- decimals --------------------------------------------------------------------------------- */

wd_decimal_encoding_t wd_format_decimal_encoding(const wd_source_t *src) {
  if (src->decimal_encoding_set) return src->decimal_encoding;
  const wd_format_t *f = wd_format_of(src->format);
  return f ? f->decimal_default : WD_DECIMAL_AUTO;
}

char *wd_format_decimal_warning(const wd_source_t *src, const wd_schema_t *schema) {
  const wd_format_t *f = wd_format_of(src->format);
  if (!f || (f->caps & WD_FORMAT_CAP_REGISTRY) || wd_format_decimal_encoding(src) != WD_DECIMAL_AUTO) return NULL;
  char cols[256] = "";
  size_t n = 0;
  for (size_t m = 0; m < src->ncols; m++) {
    const wd_source_col_t *c = &src->cols[m];
    if (c->kind != WD_MAP_IMAGE || schema->cols[c->col].type->id != WD_DECIMAL) continue;
    if (n++ < 4) {
      if (cols[0]) strncat(cols, ", ", sizeof(cols) - strlen(cols) - 1);
      strncat(cols, schema->cols[c->col].name, sizeof(cols) - strlen(cols) - 1);
    }
  }
  if (!n) return NULL;
  char *msg = NULL;
  if (asprintf(&msg,
               "source '%s' (%s): decimal-encoding is auto for DECIMAL column%s %s%s; set it to text "
               "(decimal.handling.mode=string) or base64 (precise) in the source's options",
               src->name, f->name, n > 1 ? "s" : "", cols, n > 4 ? ", ..." : "") < 0)
    return NULL;
  return msg;
}

char *wd_format_temporal_note(const wd_source_t *src, const wd_schema_t *schema) {
  const wd_format_t *f = wd_format_of(src->format);
  if (!f || src->format != WD_FMT_DEBEZIUM_JSON) return NULL;
  char cols[256] = "";
  size_t n = 0;
  for (size_t m = 0; m < src->ncols; m++) {
    const wd_source_col_t *c = &src->cols[m];
    if (c->kind != WD_MAP_IMAGE) continue;
    int id = schema->cols[c->col].type->id;
    wd_time_unit_t u = id == WD_TIME                                  ? src->time_unit
                       : id == WD_TIMESTAMP || id == WD_TIMESTAMP_LTZ ? src->timestamp_unit
                                                                      : WD_UNIT_MILLIS;
    if (u != WD_UNIT_AUTO) continue;
    if (n++ < 4) {
      if (cols[0]) strncat(cols, ", ", sizeof(cols) - strlen(cols) - 1);
      strncat(cols, schema->cols[c->col].name, sizeof(cols) - strlen(cols) - 1);
    }
  }
  if (!n) return NULL;
  char *msg = NULL;
  if (asprintf(&msg,
               "source '%s' (%s): column%s %s%s read with time-unit/timestamp-unit auto: an integer value needs the "
               "record's envelope schema to say its unit (Kafka Connect's JsonConverter with schemas.enable=true); "
               "without one widen stops at it (C_TEMPORAL_UNIT). With schemas.enable=false set `timestamp-unit` "
               "(`time-unit`) to millis, micros, nanos or precision",
               src->name, f->name, n > 1 ? "s" : "", cols, n > 4 ? ", ..." : "") < 0)
    return NULL;
  return msg;
}
