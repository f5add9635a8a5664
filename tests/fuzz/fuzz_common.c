/*
 * tests/fuzz/fuzz_common.c — the wide table and sources the decoder harnesses share (fuzz.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/format.h"
#include "tests/fuzz/fuzz.h"

void wd_fuzz_fail(const char *what, const char *message) {
  fprintf(stderr, "fuzz: %s: %s\n", what, message);
  abort();
}

/* column, type, mapping spec (NULL: the column's own name) */
static const char *const COLS[][3] = {
    {"id", "BIGINT NOT NULL", NULL},
    {"name", "STRING", NULL},
    {"description", "VARCHAR(255)", NULL},
    {"weight", "FLOAT", NULL},
    {"price", "DECIMAL(12,2)", NULL},
    {"big", "DECIMAL(38,10)", NULL},
    {"qty", "INT", NULL},
    {"small", "TINYINT", NULL},
    {"short", "SMALLINT", NULL},
    {"ratio", "DOUBLE", NULL},
    {"flag", "BOOLEAN", NULL},
    {"code", "CHAR(3)", NULL},
    {"raw", "BYTES", NULL},
    {"day", "DATE", NULL},
    {"tm", "TIME(3)", NULL},
    {"ts", "TIMESTAMP(3)", NULL},
    {"ts6", "TIMESTAMP(6)", NULL},
    {"ltz", "TIMESTAMP_LTZ(6)", NULL},
    {"tags", "ARRAY<STRING>", NULL},
    {"attrs", "MAP<STRING,BIGINT>", NULL},
    {"point", "ROW<x DOUBLE, y DOUBLE>", NULL},
    {"city", "STRING", "address.city"},
    {"zip", "INT", "address.geo.zip"},
    {"env_ts", "BIGINT", "$.ts"},
    {"src_ts", "TIMESTAMP(3)", "$.source.ts_ms"},
    {"src_db", "STRING", "$.source.db"},
    {"k_id", "BIGINT", "$key.id"},
    {"k_name", "STRING", "$key.payload.name"},
    {"off", "BIGINT", "$kafka.offset"},
    {"topic", "STRING", "$kafka.topic"},
    {"kts", "TIMESTAMP_LTZ(3)", "$kafka.timestamp"},
};
#define NCOLS (sizeof(COLS) / sizeof(COLS[0]))

const wd_schema_t *wd_fuzz_schema(void) {
  static wd_schema_t *schema;
  if (!schema) {
    const char *names[NCOLS], *types[NCOLS];
    for (size_t i = 0; i < NCOLS; i++) {
      names[i] = COLS[i][0];
      types[i] = COLS[i][1];
    }
    const char *pk[] = {"id"};
    wd_error_t *err = wd_schema_new(NCOLS, names, types, 1, pk, &schema);
    if (err) wd_fuzz_fail("schema", err->message);
  }
  return schema;
}

const wd_source_t *wd_fuzz_source(const char *format) {
  static struct {
    const char *format;
    wd_source_t *src;
  } made[8];
  for (size_t i = 0; i < 8 && made[i].format; i++)
    if (!strcmp(made[i].format, format)) return made[i].src;
  const wd_schema_t *s = wd_fuzz_schema();
  wd_source_format_t f;
  wd_source_t *src = NULL;
  wd_error_t *err = wd_source_format_parse(format, &f);
  if (!err) err = wd_source_new("fuzzed", f, &src);
  if (!err) err = wd_source_add_topic(src, "fuzzed");
  for (size_t i = 0; !err && i < NCOLS; i++) err = wd_source_add_column(src, s, COLS[i][0], COLS[i][2]);
  if (!err) err = wd_source_check(src, s);
  if (err) wd_fuzz_fail(format, err->message);
  for (size_t i = 0; i < 8; i++)
    if (!made[i].format) {
      made[i].format = format;
      made[i].src = src;
      return src;
    }
  wd_fuzz_fail(format, "more than 8 sources");
}

void wd_fuzz_check_decode(const char *what, const wd_schema_t *s, wd_error_t *err, const wd_changes_t *out) {
  if (err) {
    if (!err->message || !err->message[0]) wd_fuzz_fail(what, "an error without a message");
    if (err->cls != WD_ERR_NOMEM && !err->id[0]) wd_fuzz_fail(what, err->message);
    if (out->count != 0) wd_fuzz_fail(what, "records left in the container after an error");
    wd_error_destroy(err);
    return;
  }
  for (size_t i = 0; i < out->count; i++) {
    const wd_row_t *r = out->rows[i];
    if (!r || r->n != s->ncols) wd_fuzz_fail(what, "a record that is not full width");
    /* every present primary-key value is set: E_NO_KEY otherwise */
    for (size_t k = 0; k < s->npk; k++)
      if (!(r->absent && r->absent[s->pk[k]]) && r->v[s->pk[k]].is_null)
        wd_fuzz_fail(what, "a record with a NULL primary key");
  }
}
