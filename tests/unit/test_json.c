/*
 * tests/unit/test_json.c — common/json.c: values and rows to and from JSON (spec §12.2), including a
 * round trip of every row of every conformance case in ../shared/cases.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "../support/shared.h"

static wd_type_t *parse_ok(const char *text) {
  wd_type_t *t = NULL;
  wd_error_t *err = wd_type_parse(text, &t);
  cr_assert_null(err, "parse '%s': %s", text, err ? err->message : "");
  return t;
}

static json_t *jparse(const char *text) {
  json_error_t jerr;
  json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  cr_assert_not_null(j, "bad test JSON '%s': %s", text, jerr.text);
  return j;
}

/*
 * Like shared/tools/check-cases.py: integers exact, other numbers with a relative 1e-6, strings
 * and booleans exact, arrays in order, objects by key (any order). NaN/±Infinity are strings.
 */
static bool json_same(const json_t *a, const json_t *b) {
  if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
  if (json_is_number(a) && json_is_number(b)) {
    double x = json_number_value(a), y = json_number_value(b);
    double m = fmax(1.0, fmax(fabs(x), fabs(y)));
    return x == y || fabs(x - y) <= 1e-6 * m;
  }
  if (json_is_array(a) && json_is_array(b)) {
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!json_same(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  }
  if (json_is_object(a) && json_is_object(b)) {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !json_same(v, w)) return false;
    }
    return true;
  }
  return json_equal((json_t *)a, (json_t *)b);
}

/* from_json(text) then to_json must give want (JSON text). */
static void rt(const char *type, const char *text, const char *want) {
  wd_type_t *t = parse_ok(type);
  json_t *j = jparse(text);
  wd_value_t v;
  wd_error_t *err = wd_value_from_json(t, j, &v);
  cr_assert_null(err, "%s from %s: %s", type, text, err ? err->message : "");
  json_t *out = wd_value_to_json(t, &v);
  cr_assert_not_null(out);
  json_t *w = jparse(want);
  char *got = json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT);
  cr_assert(json_same(out, w), "%s: %s gave %s, want %s", type, text, got, want);
  /* and the output converts back to an equal value */
  wd_value_t v2;
  err = wd_value_from_json(t, out, &v2);
  cr_assert_null(err, "%s re-reading %s: %s", type, got, err ? err->message : "");
  cr_assert(wd_value_eq(t, &v, &v2), "%s: %s re-read differs", type, got);
  free(got);
  wd_value_clear(t, &v);
  wd_value_clear(t, &v2);
  json_decref(j);
  json_decref(out);
  json_decref(w);
  wd_type_destroy(t);
}

/* from_json(text) must fail with id. */
static void bad(const char *type, const char *text, const char *id) {
  wd_type_t *t = parse_ok(type);
  json_t *j = jparse(text);
  wd_value_t v;
  wd_error_t *err = wd_value_from_json(t, j, &v);
  cr_assert_not_null(err, "%s from %s should fail", type, text);
  cr_assert_str_eq(err->id, id, "%s from %s: %s", type, text, err->message);
  cr_assert(strncmp(err->message, id, strlen(id)) == 0, "message starts with its id: %s", err->message);
  cr_assert_eq(err->cls, WD_ERR_RECORD);
  cr_assert(v.is_null);
  wd_error_destroy(err);
  json_decref(j);
  wd_type_destroy(t);
}

Test(json, scalars) {
  rt("INT", "null", "null");
  rt("BOOLEAN", "true", "true");
  rt("BOOLEAN", "\"false\"", "false");
  rt("TINYINT", "-128", "-128");
  rt("SMALLINT", "32767", "32767");
  rt("INT", "\"42\"", "42");
  rt("INT", "5.0", "5");
  rt("BIGINT", "-9223372036854775808", "-9223372036854775808");
  rt("BIGINT", "9223372036854775807", "9223372036854775807");
  rt("DOUBLE", "1e+300", "1e+300");
  rt("DOUBLE", "-0.5", "-0.5");
  rt("DOUBLE", "3", "3.0");
  rt("DOUBLE", "\"NaN\"", "\"NaN\"");
  rt("DOUBLE", "\"Infinity\"", "\"Infinity\"");
  rt("DOUBLE", "\"-Infinity\"", "\"-Infinity\"");
  rt("FLOAT", "3.14", "3.140000104904175");
  rt("FLOAT", "\"-Infinity\"", "\"-Infinity\"");
  rt("DECIMAL(6,2)", "\"12.3\"", "\"12.30\"");
  rt("DECIMAL(6,2)", "12.3", "\"12.30\"");
  rt("DECIMAL(6,2)", "1.005", "\"1.01\"");
  rt("DECIMAL(6,2)", "7", "\"7.00\"");
  rt("DECIMAL(38,0)", "\"-99999999999999999999999999999999999999\"", "\"-99999999999999999999999999999999999999\"");
  rt("STRING", "\"h\\u00e9llo \\\"q\\\"\"", "\"h\\u00e9llo \\\"q\\\"\"");
  rt("STRING", "\"\"", "\"\"");
  rt("STRING", "\"a\\u0000b\"", "\"a\\u0000b\"");
  rt("CHAR(3)", "\"abc\"", "\"abc\"");
  rt("VARCHAR(8)", "\"abc\"", "\"abc\"");
  rt("BYTES", "\"AAEC/w==\"", "\"AAEC/w==\"");
  rt("BYTES", "\"\"", "\"\"");
  rt("DATE", "\"2024-01-31\"", "\"2024-01-31\"");
  rt("TIME", "\"10:00:00\"", "\"10:00:00\"");
  rt("TIME(3)", "\"10:00:00.5\"", "\"10:00:00.500\"");
  rt("TIMESTAMP(3)", "\"2024-01-31 10:00:00.000\"", "\"2024-01-31 10:00:00.000\"");
  rt("TIMESTAMP(3)", "\"2024-01-31T10:00:00\"", "\"2024-01-31 10:00:00.000\"");
  rt("TIMESTAMP(6)", "\"1969-12-31 23:59:59.999999\"", "\"1969-12-31 23:59:59.999999\"");
  rt("TIMESTAMP_LTZ(6)", "\"2024-05-01 07:59:59.999999\"", "\"2024-05-01 07:59:59.999999\"");
  rt("TIMESTAMP_LTZ(3)", "\"2024-05-01T09:00:00+02:00\"", "\"2024-05-01 07:00:00.000\"");
}

Test(json, float_is_binary32) {
  wd_type_t *t = parse_ok("FLOAT");
  json_t *j = json_real(3.14);
  wd_value_t v;
  cr_assert_null(wd_value_from_json(t, j, &v));
  cr_assert_eq(v.f, (double)3.14f);
  json_t *out = wd_value_to_json(t, &v);
  cr_assert(json_is_real(out));
  cr_assert_eq(json_real_value(out), (double)3.14f);
  json_decref(j);
  json_decref(out);
  wd_type_destroy(t);
}

Test(json, nested) {
  rt("ARRAY<INT>", "[1, null, 3]", "[1, null, 3]");
  rt("ARRAY<INT>", "[]", "[]");
  rt("ARRAY<STRING>", "[\"paimon\", \"\"]", "[\"paimon\", \"\"]");
  rt("ARRAY<ROW<k0 INT, k1 INT, v STRING>>", "[{\"k0\": 1, \"k1\": 2, \"v\": \"a\"}, {\"k0\": 1}, null]",
     "[{\"k0\": 1, \"k1\": 2, \"v\": \"a\"}, {\"k0\": 1, \"k1\": null, \"v\": null}, null]");
  rt("ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>", "{\"city\": \"x\", \"geo\": {\"lat\": 1.5, \"lon\": -2}}",
     "{\"city\": \"x\", \"geo\": {\"lat\": 1.5, \"lon\": -2.0}}");
  rt("ROW<a INT, b STRING>", "[1, \"x\"]", "{\"a\": 1, \"b\": \"x\"}");
  rt("MAP<INT,STRING>", "{\"1\": \"A\", \"2\": null}", "{\"2\": null, \"1\": \"A\"}");
  rt("MAP<INT,STRING>", "{\"1\": \"A\", \"01\": \"B\"}", "{\"1\": \"B\"}");
  rt("MAP<STRING,INT>", "{}", "{}");
  rt("MAP<STRING,ROW<value STRING, ts STRING>>", "{\"a\": {\"value\": \"v\", \"ts\": \"2024\"}, \"b\": null}",
     "{\"a\": {\"value\": \"v\", \"ts\": \"2024\"}, \"b\": null}");
  rt("MAP<DECIMAL(4,2),BOOLEAN>", "{\"1.5\": true}", "{\"1.50\": true}");
  rt("MAP<DATE,INT>", "{\"2024-01-31\": 1}", "{\"2024-01-31\": 1}");
  rt("MAP<BOOLEAN,INT>", "{\"true\": 1, \"false\": 0}", "{\"true\": 1, \"false\": 0}");
  rt("MAP<BYTES,INT>", "{\"AAE=\": 1}", "{\"AAE=\": 1}");
}

Test(json, refused) {
  bad("INT", "\"x\"", "E_TYPE");
  bad("INT", "1.5", "E_TYPE");
  bad("INT", "true", "E_TYPE");
  bad("INT", "2147483648", "E_ARITH_OVERFLOW");
  bad("INT", "\"2147483648\"", "E_ARITH_OVERFLOW");
  bad("TINYINT", "128", "E_ARITH_OVERFLOW");
  bad("TINYINT", "-129", "E_ARITH_OVERFLOW");
  bad("SMALLINT", "40000", "E_ARITH_OVERFLOW");
  bad("BIGINT", "1e19", "E_ARITH_OVERFLOW");
  bad("BOOLEAN", "1", "E_TYPE");
  bad("DOUBLE", "\"abc\"", "E_TYPE");
  bad("DOUBLE", "[1]", "E_TYPE");
  bad("DECIMAL(4,2)", "\"100.00\"", "E_ARITH_OVERFLOW");
  bad("DECIMAL(4,2)", "100", "E_ARITH_OVERFLOW");
  bad("DECIMAL(4,2)", "\"1,5\"", "E_TYPE");
  bad("DECIMAL(4,2)", "true", "E_TYPE");
  bad("STRING", "5", "E_TYPE");
  bad("BYTES", "\"***\"", "E_TYPE");
  bad("DATE", "20240131", "E_TYPE");
  bad("DATE", "\"2024-02-30\"", "E_TYPE");
  bad("TIMESTAMP(3)", "\"yesterday\"", "E_TYPE");
  bad("ARRAY<INT>", "{}", "E_TYPE");
  bad("ARRAY<INT>", "[1, \"x\"]", "E_TYPE");
  bad("ARRAY<TINYINT>", "[1, 300]", "E_ARITH_OVERFLOW");
  bad("ROW<a INT>", "{\"b\": 1}", "E_TYPE");
  bad("ROW<a INT>", "[1, 2]", "E_TYPE");
  bad("ROW<a INT>", "{\"a\": \"z\"}", "E_TYPE");
  bad("MAP<INT,STRING>", "{\"x\": \"A\"}", "E_TYPE");
  bad("MAP<INT,STRING>", "{\"1\": 5}", "E_TYPE");
  bad("MAP<INT,STRING>", "[]", "E_TYPE");
}

Test(json, error_names_the_path) {
  wd_type_t *t = parse_ok("ARRAY<ROW<k INT, v STRING>>");
  json_t *j = jparse("[{\"k\": 1, \"v\": \"a\"}, {\"k\": \"x\"}]");
  wd_value_t v;
  wd_error_t *err = wd_value_from_json(t, j, &v);
  cr_assert_not_null(err);
  cr_assert(strstr(err->message, "[1]") && strstr(err->message, "'k'"), "%s", err->message);
  cr_assert(strncmp(err->message, "E_TYPE: ", 8) == 0, "%s", err->message);
  wd_error_destroy(err);
  json_decref(j);
  wd_type_destroy(t);
}

Test(json, invalid_utf8_is_replaced) {
  wd_type_t *t = parse_ok("MAP<STRING,STRING>");
  wd_value_t v;
  memset(&v, 0, sizeof(v));
  v.map.n = 1;
  v.map.k = calloc(1, sizeof(wd_value_t));
  v.map.v = calloc(1, sizeof(wd_value_t));
  cr_assert_eq(wd_value_set_bytes(&v.map.k[0], "k\xff", 2), 0);
  cr_assert_eq(wd_value_set_bytes(&v.map.v[0], "a\xc3", 2), 0);
  json_t *j = wd_value_to_json(t, &v);
  cr_assert_not_null(j);
  json_t *s = json_object_get(j, "k\xef\xbf\xbd");
  cr_assert_not_null(s);
  cr_assert_str_eq(json_string_value(s), "a\xef\xbf\xbd");
  json_decref(j);
  wd_value_clear(t, &v);
  wd_type_destroy(t);
}

static wd_schema_t *schema_of(const char *const *names, const char *const *types, size_t n, const char *pk) {
  wd_schema_t *s = NULL;
  const char *pks[] = {pk};
  wd_error_t *err = wd_schema_new(n, names, types, 1, pks, &s);
  cr_assert_null(err, "%s", err ? err->message : "");
  return s;
}

Test(json, rows) {
  const char *names[] = {"k", "d", "tags"};
  const char *types[] = {"INT", "DECIMAL(6,2)", "ARRAY<STRING>"};
  wd_schema_t *s = schema_of(names, types, 3, "k");
  wd_row_t *row = wd_row_new(s);
  json_t *in = jparse("{\"k\": 1, \"d\": \"2.5\"}");
  cr_assert_null(wd_row_from_json(s, in, row));
  cr_assert_eq(row->v[0].i, 1);
  cr_assert(row->v[1].dec == 250);
  cr_assert(row->v[2].is_null, "absent column is NULL");
  json_t *out = wd_row_to_json(s, row);
  json_t *want = jparse("{\"k\": 1, \"d\": \"2.50\", \"tags\": null}");
  cr_assert(json_equal(out, want));
  json_decref(in);
  json_decref(out);
  json_decref(want);

  /* previous values are cleared */
  in = jparse("{\"tags\": [\"a\"]}");
  cr_assert_null(wd_row_from_json(s, in, row));
  cr_assert(row->v[0].is_null);
  cr_assert_eq(row->v[2].list.n, 1);
  json_decref(in);

  in = jparse("{\"k\": 1, \"nope\": 2}");
  wd_error_t *err = wd_row_from_json(s, in, row);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_UNKNOWN_COLUMN");
  cr_assert(strstr(err->message, "nope"));
  wd_error_destroy(err);
  json_decref(in);

  in = jparse("{\"k\": 1, \"d\": \"x\"}");
  err = wd_row_from_json(s, in, row);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "E_TYPE");
  cr_assert(strstr(err->message, "'d'"), "%s", err->message);
  for (size_t i = 0; i < 3; i++) cr_assert(row->v[i].is_null, "row cleared on error");
  wd_error_destroy(err);
  json_decref(in);

  in = jparse("[1]");
  err = wd_row_from_json(s, in, row);
  cr_assert_str_eq(err->id, "E_TYPE");
  wd_error_destroy(err);
  json_decref(in);

  wd_row_destroy(s, row);
  wd_schema_destroy(s);
}

/* ---- every case file's rows ---------------------------------------------------------- */

/* Round-trips one row object of a case; returns 1 if it was checked. */
static int check_case_row(const char *file, const wd_schema_t *s, const json_t *obj) {
  wd_row_t *row = wd_row_new(s);
  cr_assert_not_null(row);
  wd_error_t *err = wd_row_from_json(s, obj, row);
  char *in = json_dumps(obj, JSON_COMPACT);
  cr_assert_null(err, "%s: row %s: %s", file, in, err ? err->message : "");
  json_t *out = wd_row_to_json(s, row);
  cr_assert_not_null(out);
  /* the expected output: every column, absent ones as null */
  json_t *want = json_deep_copy(obj);
  for (size_t i = 0; i < s->ncols; i++)
    if (!json_object_get(want, s->cols[i].name)) json_object_set_new(want, s->cols[i].name, json_null());
  char *got = json_dumps(out, JSON_COMPACT);
  cr_assert(json_same(out, want), "%s: row %s gave %s", file, in, got);
  /* converting the output again gives an equal row */
  wd_row_t *row2 = wd_row_new(s);
  cr_assert_null(wd_row_from_json(s, out, row2));
  cr_assert(wd_row_eq(s, row, row2, NULL), "%s: %s", file, got);
  free(in);
  free(got);
  json_decref(out);
  json_decref(want);
  wd_row_destroy(s, row);
  wd_row_destroy(s, row2);
  return 1;
}

/* Checks one case file; returns the number of rows checked. */
static int check_case(const char *path) {
  json_error_t jerr;
  json_t *c = json_load_file(path, 0, &jerr);
  cr_assert_not_null(c, "%s: %s", path, jerr.text);
  json_t *schema = json_object_get(c, "schema");
  size_t ncols = json_array_size(schema);
  const char **names = calloc(ncols + 1, sizeof(char *));
  const char **types = calloc(ncols + 1, sizeof(char *));
  for (size_t i = 0; i < ncols; i++) {
    names[i] = json_string_value(json_object_get(json_array_get(schema, i), "name"));
    types[i] = json_string_value(json_object_get(json_array_get(schema, i), "type"));
  }
  json_t *pkj = json_object_get(c, "primary_key");
  size_t npk = json_array_size(pkj);
  const char **pk = calloc(npk + 1, sizeof(char *));
  for (size_t i = 0; i < npk; i++) pk[i] = json_string_value(json_array_get(pkj, i));
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(ncols, names, types, npk, pk, &s);
  int checked = 0;
  if (err) {
    /* only a case that expects this config error may have a schema we refuse */
    const char *about = json_string_value(json_object_get(json_object_get(c, "expect_error"), "about"));
    cr_assert(about && strncmp(about, err->id, strlen(err->id)) == 0, "%s: schema refused: %s", path, err->message);
    wd_error_destroy(err);
  } else {
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(c, "input"), i, e) checked += check_case_row(path, s, json_object_get(e, "row"));
    json_array_foreach(json_object_get(c, "expect_rows"), i, e) checked += check_case_row(path, s, e);
    json_array_foreach(json_object_get(c, "expect_changelog"), i, e) checked +=
        check_case_row(path, s, json_object_get(e, "row"));
  }
  wd_schema_destroy(s);
  free(names);
  free(types);
  free(pk);
  json_decref(c);
  return checked;
}

Test(json, every_case_row_round_trips, .timeout = 120) {
  char dir[1200], path[1600];
  snprintf(dir, sizeof(dir), "%s/cases", wd_test_shared_dir());
  if (access(dir, R_OK) != 0) /* a clone without ../shared: say so (test `shared` fails) */
    cr_skip_test("needs the project's conformance cases, %s, which are missing (see the test `shared`)", dir);
  static const char *const engines[] = {"deduplicate", "first-row", "partial-update", "aggregation"};
  int files = 0, rows = 0;
  for (size_t e = 0; e < 4; e++) {
    snprintf(dir, sizeof(dir), "%s/cases/%s", wd_test_shared_dir(), engines[e]);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no cases at %s", dir);
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t len = strlen(de->d_name);
      if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
      snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
      rows += check_case(path);
      files++;
    }
    closedir(d);
  }
  cr_log_info("%d case files, %d rows round-tripped", files, rows);
  cr_assert_gt(files, 50);
  cr_assert_gt(rows, 500);
}
