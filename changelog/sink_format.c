/*
 * changelog/sink_format.c — the registry of sink value and key formats (changelog/sink_format.h).
 */
#include "changelog/sink_format.h"

#include <string.h>

#include "changelog/changelog.h"

static wd_error_t *enc_debezium_json(const wd_sink_ctx_t *c, wd_row_t *const *rows, size_t n, size_t *i,
                                     const wd_row_t **keyrow, wd_buf_t *out) {
  wd_row_kind_t kind;
  const wd_row_t *before = NULL, *after = NULL;
  wd_changelog_pair(rows, n, i, &kind, &before, &after);
  *keyrow = after ? after : before;
  return wd_changelog_encode_debezium_json(c->schema, c->table, c->ts_ms, kind, before, after, out);
}

static wd_error_t *enc_changelog_json(const wd_sink_ctx_t *c, wd_row_t *const *rows, size_t n, size_t *i,
                                      const wd_row_t **keyrow, wd_buf_t *out) {
  (void)n;
  *keyrow = rows[*i];
  return wd_changelog_encode_changelog_json(c->schema, c->table, c->ts_ms, rows[(*i)++], out);
}

static wd_error_t *enc_avro(const wd_sink_ctx_t *c, wd_row_t *const *rows, size_t n, size_t *i, const wd_row_t **keyrow,
                            wd_buf_t *out) {
  (void)n;
  const wd_row_t *row = *keyrow = rows[(*i)++];
  if (!c->avro) return wd_error_new(WD_ERR_INTERNAL, NONE, "the avro sink format needs the Avro sink");
  return wd_avro_sink_encode_value(c->avro, row, out);
}

static wd_error_t *key_json(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out) {
  return wd_changelog_encode_key_json(c->schema, row, out);
}

/* The key values' canonical texts (wd_value_format) joined by ','. */
static wd_error_t *key_string(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out) {
  for (size_t k = 0; k < c->schema->npk; k++) {
    int col = c->schema->pk[k];
    if ((k && wd_buf_putc(out, ',')) || wd_value_format(c->schema->cols[col].type, &row->v[col], out))
      return wd_error_nomem();
  }
  return NULL;
}

static wd_error_t *key_avro(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out) {
  if (!c->avro) return wd_error_new(WD_ERR_INTERNAL, NONE, "the avro key format needs the Avro sink");
  return wd_avro_sink_encode_key(c->avro, row, out);
}

/* debezium-json in Kafka Connect JsonConverter's envelope (sink.schemas-enable). */
static wd_error_t *enc_debezium_connect(const wd_sink_ctx_t *c, wd_row_t *const *rows, size_t n, size_t *i,
                                        const wd_row_t **keyrow, wd_buf_t *out) {
  wd_row_kind_t kind;
  const wd_row_t *before = NULL, *after = NULL;
  wd_changelog_pair(rows, n, i, &kind, &before, &after);
  *keyrow = after ? after : before;
  return wd_connect_encode_debezium(c->schema, c->table, c->ts_ms, kind, before, after, out);
}

static wd_error_t *key_json_connect(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out) {
  return wd_connect_encode_key(c->schema, c->table, row, out);
}

static wd_error_t *key_string_connect(const wd_sink_ctx_t *c, const wd_row_t *row, wd_buf_t *out) {
  wd_buf_t text = {0};
  wd_error_t *err = key_string(c, row, &text);
  if (!err) err = wd_connect_encode_string_key(text.len ? (const char *)text.data : "", text.len, out);
  wd_buf_free(&text);
  return err;
}

static const wd_sink_format_t wd_sink_format_debezium_connect = {"debezium-json", false, enc_debezium_connect};
static const wd_key_format_t wd_key_format_json_connect = {"json", false, key_json_connect};
static const wd_key_format_t wd_key_format_string_connect = {"string", false, key_string_connect};

static const wd_sink_format_t wd_sink_formats[] = {
    {"debezium-json", false, enc_debezium_json},
    {"changelog-json", false, enc_changelog_json},
    {"avro", true, enc_avro},
};

static const wd_key_format_t wd_key_formats[] = {
    {"json", false, key_json},
    {"string", false, key_string},
    {"avro", true, key_avro},
};

#define WD_N(a) (sizeof(a) / sizeof(*(a)))

const wd_sink_format_t *wd_sink_format_find(const char *name) {
  for (size_t i = 0; name && i < WD_N(wd_sink_formats); i++)
    if (!strcmp(wd_sink_formats[i].name, name)) return &wd_sink_formats[i];
  return NULL;
}

const wd_sink_format_t *wd_sink_format_at(int i) {
  return i >= 0 && (size_t)i < WD_N(wd_sink_formats) ? &wd_sink_formats[i] : NULL;
}

const wd_key_format_t *wd_key_format_find(const char *name) {
  for (size_t i = 0; name && i < WD_N(wd_key_formats); i++)
    if (!strcmp(wd_key_formats[i].name, name)) return &wd_key_formats[i];
  return NULL;
}

const wd_key_format_t *wd_key_format_at(int i) {
  return i >= 0 && (size_t)i < WD_N(wd_key_formats) ? &wd_key_formats[i] : NULL;
}

const wd_sink_format_t *wd_sink_format_with_schemas(const wd_sink_format_t *f) {
  return f == &wd_sink_formats[0] ? &wd_sink_format_debezium_connect : NULL;
}

const wd_key_format_t *wd_key_format_with_schemas(const wd_key_format_t *f) {
  if (f == &wd_key_formats[0]) return &wd_key_format_json_connect;
  if (f == &wd_key_formats[1]) return &wd_key_format_string_connect;
  return NULL;
}
