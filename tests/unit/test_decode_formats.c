/*
 * tests/unit/test_decode_formats.c — the source-format registry (ingest/format.h) and the
 * canal-json, maxwell-json, ogg-json and changelog-json decoders on every record of the real
 * files in ../shared/data, widen's own outputs read back as inputs, and the shared event rules
 * (partial before images, key changes, key-only retractions).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/types.h"
#include "ingest/format.h"
#include "ingest/source.h"
#include "../support/shared.h"

/* The lines of shared/<rel> that are JSON objects (a license header and blank lines skipped),
 * NUL-terminated copies; *n their count. */
static char **load_records(const char *rel, size_t *n) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", wd_test_shared_dir(), rel);
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp, "cannot open %s", path);
  char **out = NULL;
  *n = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, fp)) >= 0) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0 || line[0] != '{') continue;
    out = realloc(out, (*n + 1) * sizeof(*out));
    out[(*n)++] = strdup(line);
  }
  free(line);
  fclose(fp);
  return out;
}

static void free_records(char **r, size_t n) {
  for (size_t i = 0; i < n; i++) free(r[i]);
  free(r);
}

static wd_schema_t *products_schema(void) {
  static const char *const names[] = {"id", "name", "description", "weight"};
  static const char *const types[] = {"INT NOT NULL", "STRING", "STRING", "FLOAT"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(4, names, types, 1, pk, &s));
  return s;
}

static wd_source_t *source_of(const char *format, const wd_schema_t *s) {
  wd_source_format_t f;
  cr_assert_null(wd_source_format_parse(format, &f));
  wd_source_t *src = NULL;
  cr_assert_null(wd_source_new("products", f, &src));
  cr_assert_null(wd_source_add_topic(src, "products"));
  for (size_t i = 0; i < s->ncols; i++) cr_assert_null(wd_source_add_column(src, s, s->cols[i].name, NULL));
  cr_assert_null(wd_source_check(src, s));
  return src;
}

/* "+I(101,scooter,...)" per record, space separated; '?' for an absent column; "ERR <id>: ..."
 * for an error. The caller frees. */
static char *decode_text(const wd_source_t *src, const wd_schema_t *s, const char *json, wd_changes_t *ch) {
  const wd_format_t *f = wd_format_of(src->format);
  wd_buf_t b = {0};
  wd_buf_append(&b, "", 0);
  wd_error_t *err = f->decode(NULL, src, s, NULL, json, strlen(json), ch);
  if (err) {
    wd_buf_printf(&b, "ERR %s", err->message);
    wd_error_destroy(err);
    return (char *)b.data;
  }
  for (size_t i = 0; i < ch->count; i++) {
    const wd_row_t *r = ch->rows[i];
    if (i) wd_buf_putc(&b, ' ');
    wd_buf_printf(&b, "%s(", wd_row_kind_str(r->kind));
    for (size_t c = 0; c < s->ncols; c++) {
      if (c) wd_buf_putc(&b, ',');
      if (r->absent && r->absent[c]) wd_buf_putc(&b, '?');
      else wd_value_format(s->cols[c].type, &r->v[c], &b);
    }
    wd_buf_putc(&b, ')');
  }
  return (char *)b.data;
}

/* Decodes every record of a file with format and compares with want[0..nwant). */
static void check_file(const char *format, const char *rel, const char *const *want, size_t nwant) {
  wd_schema_t *s = products_schema();
  wd_source_t *src = source_of(format, s);
  size_t n;
  char **recs = load_records(rel, &n);
  cr_assert_eq(n, nwant, "%s: %zu records", rel, n);
  wd_changes_t ch;
  wd_changes_init(&ch);
  for (size_t i = 0; i < n; i++) {
    char *got = decode_text(src, s, recs[i], &ch);
    if (getenv("WD_PRINT")) printf("    \"%s\",\n", got);
    cr_expect_str_eq(got, want[i], "%s record %zu\n got: %s\nwant: %s", rel, i + 1, got, want[i]);
    free(got);
  }
  wd_changes_free(&ch);
  free_records(recs, n);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* Flink's CanalJsonSerDeSchemaTest expectations: 106 inserted with a NULL description, its update's
 * `old` holds only the changed column; two multi-row messages; the DDL message gives nothing. */
static const char *const canal_want[11] = {
    "+I(101,scooter,Small 2-wheel scooter,3.14) +I(102,car battery,12V car battery,8.1) +I(103,12-pack "
    "drill bits,12-pack of drill bits with sizes ranging from #40 to #3,0.8) +I(104,hammer,12oz "
    "carpenter's hammer,0.75) +I(105,hammer,14oz carpenter's hammer,0.875) +I(106,hammer,NULL,1) "
    "+I(107,rocks,box of assorted rocks,5.3) +I(108,jacket,water resistent black wind breaker,0.1) "
    "+I(109,spare tire,24 inch spare tire,22.2)",
    "-U(106,hammer,NULL,1) +U(106,hammer,18oz carpenter hammer,1)",
    "-U(107,rocks,box of assorted rocks,5.3) +U(107,rocks,box of assorted rocks,5.1)",
    "+I(110,jacket,water resistent white wind breaker,0.2)",
    "+I(111,scooter,Big 2-wheel scooter ,5.18)",
    "-U(110,jacket,water resistent white wind breaker,0.2) +U(110,jacket,new water resistent white wind "
    "breaker,0.5)",
    "-U(111,scooter,Big 2-wheel scooter ,5.18) +U(111,scooter,Big 2-wheel scooter ,5.17)",
    "-D(111,scooter,Big 2-wheel scooter ,5.17)",
    "-U(101,scooter,Small 2-wheel scooter,3.14) +U(101,scooter,Small 2-wheel scooter,5.17) -U(102,car "
    "battery,12V car battery,8.1) +U(102,car battery,12V car battery,5.17)",
    "",
    "-D(102,car battery,12V car battery,5.17) -D(103,12-pack drill bits,12-pack of drill bits with sizes "
    "ranging from #40 to #3,0.8)",
};
Test(files, canal) { check_file("canal-json", "data/flink-json/canal-data.txt", canal_want, 11); }
static const char *const maxwell_want[20] = {
    "+I(101,scooter,Small 2-wheel scooter,3.14)",
    "+I(102,car battery,12V car battery,8.1)",
    "+I(103,12-pack drill bits,12-pack of drill bits with sizes ranging from #40 to #3,0.8)",
    "+I(104,hammer,12oz carpenter's hammer,0.75)",
    "+I(105,hammer,14oz carpenter's hammer,0.875)",
    "+I(106,hammer,16oz carpenter's hammer,1)",
    "+I(107,rocks,box of assorted rocks,5.3)",
    "+I(108,jacket,water resistent black wind breaker,0.1)",
    "+I(109,spare tire,24 inch spare tire,22.2)",
    "-U(106,hammer,16oz carpenter's hammer,1) +U(106,hammer,18oz carpenter hammer,1)",
    "-U(107,rocks,box of assorted rocks,5.3) +U(107,rocks,box of assorted rocks,5.1)",
    "+I(110,jacket,water resistent white wind breaker,0.2)",
    "+I(111,scooter,Big 2-wheel scooter ,5.18)",
    "-U(110,jacket,water resistent white wind breaker,0.2) +U(110,jacket,new water resistent white wind "
    "breaker,0.5)",
    "-U(111,scooter,Big 2-wheel scooter ,5.18) +U(111,scooter,Big 2-wheel scooter ,5.17)",
    "-D(111,scooter,Big 2-wheel scooter ,5.17)",
    "-U(101,scooter,Small 2-wheel scooter,3.14) +U(101,scooter,Small 2-wheel scooter,5.17)",
    "-U(102,car battery,12V car battery,8.1) +U(102,car battery,12V car battery,5.17)",
    "-D(102,car battery,12V car battery,5.17)",
    "-D(103,12-pack drill bits,12-pack of drill bits with sizes ranging from #40 to #3,0.8)",
};
Test(files, maxwell) { check_file("maxwell-json", "data/flink-json/maxwell-data.txt", maxwell_want, 20); }
static const char *const ogg_want[16] = {
    "+I(101,scooter,Small 2-wheel scooter,3.14)",
    "+I(102,car battery,12V car battery,8.1)",
    "+I(103,12-pack drill bits,12-pack of drill bits with sizes ranging from #40 to #3,0.8)",
    "+I(104,hammer,12oz carpenter's hammer,0.75)",
    "+I(105,hammer,14oz carpenter's hammer,0.875)",
    "+I(106,hammer,16oz carpenter's hammer,1)",
    "+I(107,rocks,box of assorted rocks,5.3)",
    "+I(108,jacket,water resistent black wind breaker,0.1)",
    "+I(109,spare tire,24 inch spare tire,22.2)",
    "-U(106,hammer,16oz carpenter's hammer,1) +U(106,hammer,18oz carpenter hammer,1)",
    "-U(107,rocks,box of assorted rocks,5.3) +U(107,rocks,box of assorted rocks,5.1)",
    "+I(110,jacket,water resistent white wind breaker,0.2)",
    "+I(111,scooter,Big 2-wheel scooter ,5.18)",
    "-U(110,jacket,water resistent white wind breaker,0.2) +U(110,jacket,new water resistent white wind "
    "breaker,0.5)",
    "-U(111,scooter,Big 2-wheel scooter ,5.18) +U(111,scooter,Big 2-wheel scooter ,5.17)",
    "-D(111,scooter,Big 2-wheel scooter ,5.17)",
};
Test(files, ogg) { check_file("ogg-json", "data/flink-json/ogg-data.txt", ogg_want, 16); }

/* ---- the registry --------------------------------------------------------------------------- */

Test(registry, every_format_by_name) {
  size_t n;
  const wd_format_t *const *all = wd_formats(&n);
  cr_assert_eq(n, 7);
  static const char *const names[] = {"debezium-json", "debezium-avro",  "canal-json", "maxwell-json",
                                      "ogg-json",      "changelog-json", "upsert-json"};
  for (size_t i = 0; i < n; i++) {
    cr_expect_str_eq(all[i]->name, names[i]);
    cr_expect_eq(wd_format_find(names[i]), all[i]);
    cr_expect_eq(wd_format_of((wd_source_format_t)i), all[i]);
    cr_expect_not_null(all[i]->decode);
  }
  cr_expect_null(wd_format_find("canal-avro"));
  cr_expect_null(wd_format_of(7));
  cr_expect_str_eq(wd_format_names(),
                   "debezium-json, debezium-avro, canal-json, maxwell-json, ogg-json, changelog-json, upsert-json");
  cr_expect(wd_format_find("upsert-json")->caps & WD_FORMAT_CAP_NO_BEFORE);
  cr_expect(wd_format_find("canal-json")->caps & WD_FORMAT_CAP_MULTI_ROW);
  cr_expect(wd_format_find("debezium-avro")->caps & WD_FORMAT_CAP_REGISTRY);
  cr_expect(wd_format_find("changelog-json")->caps & WD_FORMAT_CAP_ROW_KINDS);
}

/* ---- widen's outputs as inputs -------------------------------------------------------------- */

static wd_row_t *row_make(const wd_schema_t *s, wd_row_kind_t kind, int id, const char *name, const char *desc,
                          double w) {
  wd_row_t *r = wd_row_new(s);
  r->kind = kind;
  r->v[0].is_null = false;
  r->v[0].i = id;
  r->v[1].is_null = false;
  r->v[1].s.p = strdup(name);
  r->v[1].s.n = strlen(name);
  if (desc) {
    r->v[2].is_null = false;
    r->v[2].s.p = strdup(desc);
    r->v[2].s.n = strlen(desc);
  }
  r->v[3].is_null = false;
  r->v[3].f = (float)w;
  return r;
}

/* widen's changelog-json output decodes to the rows it was written from, row kinds kept. */
Test(chain, changelog_json_round_trip) {
  wd_schema_t *s = products_schema();
  wd_source_t *src = source_of("changelog-json", s);
  wd_row_t *rows[4] = {row_make(s, WD_INSERT, 7, "a \"b\"", NULL, 1.5), row_make(s, WD_UPDATE_BEFORE, 7, "a", "x", 1.5),
                       row_make(s, WD_UPDATE_AFTER, 7, "a", "y", 2.25), row_make(s, WD_DELETE, 7, "a", "y", 2.25)};
  static const char *const want[4] = {"+I(7,a \"b\",NULL,1.5)", "-U(7,a,x,1.5)", "+U(7,a,y,2.25)", "-D(7,a,y,2.25)"};
  wd_changes_t ch;
  wd_changes_init(&ch);
  for (int i = 0; i < 4; i++) {
    wd_buf_t b = {0};
    cr_assert_null(wd_changelog_encode_changelog_json(s, "wide", 1700000000000, rows[i], &b));
    wd_buf_putc(&b, 0);
    char *got = decode_text(src, s, (const char *)b.data, &ch);
    cr_expect_str_eq(got, want[i], "%s", (const char *)b.data);
    cr_expect_eq(ch.ts_ms, 1700000000000);
    free(got);
    wd_buf_free(&b);
  }
  /* bad row kinds and shapes */
  char *got = decode_text(src, s, "{\"op\":\"*U\",\"row\":{\"id\":1}}", &ch);
  cr_expect(strstr(got, "E_DECODE") && strstr(got, "\"*U\""), "%s", got);
  free(got);
  got = decode_text(src, s, "{\"op\":\"+I\",\"row\":null}", &ch);
  cr_expect(strstr(got, "without a \"row\" object"), "%s", got);
  free(got);
  wd_changes_free(&ch);
  for (int i = 0; i < 4; i++) wd_row_destroy(s, rows[i]);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* widen's debezium-json output (an -U/+U pair in one message) reads back through debezium-json. */
Test(chain, debezium_json_output_round_trip) {
  wd_schema_t *s = products_schema();
  wd_source_t *src = source_of("debezium-json", s);
  wd_row_t *b = row_make(s, WD_UPDATE_BEFORE, 9, "n", "old", 0.1), *a = row_make(s, WD_UPDATE_AFTER, 9, "n", NULL, 3);
  wd_changes_t ch;
  wd_changes_init(&ch);
  struct {
    wd_row_kind_t kind;
    const wd_row_t *before, *after;
    const char *want;
  } cases[] = {{WD_INSERT, NULL, a, "+I(9,n,NULL,3)"},
               {WD_UPDATE_AFTER, b, a, "-U(9,n,old,0.1) +U(9,n,NULL,3)"},
               {WD_DELETE, b, NULL, "-D(9,n,old,0.1)"}};
  for (int i = 0; i < 3; i++) {
    wd_buf_t v = {0};
    cr_assert_null(wd_changelog_encode_debezium_json(s, "wide", 5, cases[i].kind, cases[i].before, cases[i].after, &v));
    wd_buf_putc(&v, 0);
    char *got = decode_text(src, s, (const char *)v.data, &ch);
    cr_expect_str_eq(got, cases[i].want, "%s", (const char *)v.data);
    free(got);
    wd_buf_free(&v);
  }
  wd_changes_free(&ch);
  wd_row_destroy(s, a);
  wd_row_destroy(s, b);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* ---- the shared event rules on each format -------------------------------------------------- */

Test(events, partial_and_missing_before_images) {
  wd_schema_t *s = products_schema();
  wd_changes_t ch;
  wd_changes_init(&ch);
  struct {
    const char *format, *json, *want;
  } cases[] = {
      /* Canal UPDATE without old: -U carries the key, the rest from the stored row */
      {"canal-json",
       "{\"data\":[{\"id\":\"5\",\"name\":\"n\",\"description\":\"d\",\"weight\":\"1\"}],\"old\":null,"
       "\"type\":\"UPDATE\",\"isDdl\":false}",
       "-U(5,?,?,?) +U(5,n,d,1)"},
      /* Canal UPDATE whose old changes the key: -D/+I */
      {"canal-json",
       "{\"data\":[{\"id\":\"6\",\"name\":\"n\",\"description\":null,\"weight\":\"2\"}],"
       "\"old\":[{\"id\":\"5\"}],\"type\":\"UPDATE\",\"isDdl\":false}",
       "-D(5,n,NULL,2) +I(6,n,NULL,2)"},
      {"canal-json", "{\"data\":null,\"type\":\"TRUNCATE\",\"isDdl\":false}",
       "ERR E_DECODE: source 'products': Canal type \"TRUNCATE\" is not supported (expected INSERT, UPDATE, DELETE or "
       "a DDL message)"},
      {"canal-json", "{\"data\":[{\"name\":\"x\"}],\"type\":\"INSERT\",\"isDdl\":false}",
       "ERR E_NO_KEY: source 'products': op 'INSERT': primary-key column 'id' is missing in the data image (field "
       "'id')"},
      /* Maxwell update: before = data with old's columns */
      {"maxwell-json",
       "{\"type\":\"update\",\"ts\":2,\"data\":{\"id\":1,\"name\":\"b\",\"weight\":2.5},"
       "\"old\":{\"name\":\"a\"}}",
       "-U(1,a,?,2.5) +U(1,b,NULL,2.5)"},
      {"maxwell-json", "{\"type\":\"table-create\",\"database\":\"d\",\"table\":\"t\"}", ""},
      /* OGG: a compressed update whose before has only the key and a changed column */
      {"ogg-json",
       "{\"op_type\":\"U\",\"before\":{\"id\":3,\"weight\":1},\"after\":{\"id\":3,\"name\":\"m\","
       "\"description\":\"d\",\"weight\":2}}",
       "-U(3,?,?,1) +U(3,m,d,2)"},
      {"ogg-json", "{\"op_type\":\"D\",\"before\":{\"id\":3},\"after\":null}", "-D(3,?,?,?)"},
      {"ogg-json", "{\"op_type\":\"T\",\"before\":null,\"after\":null}",
       "ERR E_DECODE: source 'products': op_type \"T\" (truncate) is not supported"},
      {"ogg-json", "{\"op_type\":\"I\",\"before\":null,\"after\":null}",
       "ERR E_DECODE: source 'products': op \"I\" without an after image (\"after\" is null or absent)"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    wd_source_t *src = source_of(cases[i].format, s);
    char *got = decode_text(src, s, cases[i].json, &ch);
    cr_expect_str_eq(got, cases[i].want, "case %zu (%s)", i, cases[i].format);
    free(got);
    wd_source_destroy(src);
  }
  /* the maxwell ts is seconds */
  wd_source_t *src = source_of("maxwell-json", s);
  char *got = decode_text(src, s, cases[4].json, &ch);
  cr_expect_eq(ch.ts_ms, 2000);
  free(got);
  wd_source_destroy(src);
  wd_changes_free(&ch);
  wd_schema_destroy(s);
}

/* Canal writes every value as a string: BOOLEAN from "1", DECIMAL as text (never base64), BYTES
 * as ISO-8859-1 text when mysqlType says binary, else the text's bytes. */
Test(events, canal_types) {
  static const char *const names[] = {"id", "flag", "amount", "bin", "txt", "ts"};
  static const char *const types[] = {"BIGINT NOT NULL", "BOOLEAN", "DECIMAL(6,2)", "BYTES", "BYTES", "TIMESTAMP(3)"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(6, names, types, 1, pk, &s));
  wd_source_t *src = source_of("canal-json", s);
  cr_expect_eq(wd_format_decimal_encoding(src), WD_DECIMAL_TEXT);
  cr_expect_null(wd_format_decimal_warning(src, s));
  wd_changes_t ch;
  wd_changes_init(&ch);
  const char *json = "{\"data\":[{\"id\":\"1\",\"flag\":\"1\",\"amount\":\"1234\",\"bin\":\"\\u00ff\\u0001A\","
                     "\"txt\":\"h\\u00e9\",\"ts\":\"2020-05-13 17:30:10.230\"}],\"type\":\"INSERT\",\"isDdl\":false,"
                     "\"mysqlType\":{\"id\":\"bigint\",\"flag\":\"tinyint(1)\",\"amount\":\"decimal(6,2)\","
                     "\"bin\":\"varbinary(8)\",\"txt\":\"varchar(8)\",\"ts\":\"datetime(3)\"}}";
  cr_assert_null(wd_format_of(src->format)->decode(NULL, src, s, NULL, json, strlen(json), &ch));
  cr_assert_eq(ch.count, 1);
  const wd_row_t *r = ch.rows[0];
  cr_expect(r->v[1].b);
  cr_expect(r->v[2].dec == 123400, "1234 is the decimal 1234.00, not base64");
  cr_expect_eq(r->v[3].s.n, 3);
  cr_expect_eq((unsigned char)r->v[3].s.p[0], 0xff);
  cr_expect_eq(r->v[3].s.p[1], 1);
  cr_expect_eq(r->v[4].s.n, 3);
  cr_expect(memcmp(r->v[4].s.p, "h\xc3\xa9", 3) == 0);
  cr_expect_eq(r->v[5].ts.us, 1589391010230000LL);
  wd_changes_free(&ch);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}

/* Decimal encodings (issue point 4): "1234" is base64 of the bytes d7 6d f8 (unscaled -2658824).
 * The envelope schema says which encoding the connector used and wins; without it, auto reads
 * all-digit text as a number and warns at start; the option settles it. */
Test(events, decimal_encodings) {
  static const char *const names[] = {"id", "amount"};
  static const char *const types[] = {"INT NOT NULL", "DECIMAL(10,2)"};
  static const char *const pk[] = {"id"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &s));
  wd_source_t *src = source_of("debezium-json", s);
  char *warn = wd_format_decimal_warning(src, s);
  cr_assert_not_null(warn);
  cr_expect(strstr(warn, "source 'products' (debezium-json): decimal-encoding is auto") && strstr(warn, "amount"), "%s",
            warn);
  free(warn);
  wd_changes_t ch;
  wd_changes_init(&ch);
  const char *with_schema =
      "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\",\"fields\":["
      "{\"type\":\"int32\",\"field\":\"id\"},{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
      "\"parameters\":{\"scale\":\"2\"},\"field\":\"amount\"}]}]},"
      "\"payload\":{\"op\":\"c\",\"before\":null,\"after\":{\"id\":1,\"amount\":\"1234\"}}}";
  const char *bare = "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":1,\"amount\":\"1234\"}}";
  char *got = decode_text(src, s, with_schema, &ch);
  cr_expect_str_eq(got, "+I(1,-26588.24)");
  free(got);
  got = decode_text(src, s, bare, &ch);
  cr_expect_str_eq(got, "+I(1,1234.00)");
  free(got);
  cr_assert_null(wd_source_set_option(src, "decimal-encoding", "base64"));
  cr_expect_null(wd_format_decimal_warning(src, s));
  got = decode_text(src, s, bare, &ch);
  cr_expect_str_eq(got, "+I(1,-26588.24)");
  free(got);
  got = decode_text(src, s, with_schema, &ch);
  cr_expect_str_eq(got, "+I(1,-26588.24)");
  free(got);
  wd_changes_free(&ch);
  wd_source_destroy(src);
  wd_schema_destroy(s);
}
