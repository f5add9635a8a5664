/*
 * tests/unit/test_types.c — common/types.c: type parsing, value order/equality/hash, text
 * format/parse, DECIMAL parsing, schemas and rows.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/types.h"

/* Parses text, failing the test on error. */
static wd_type_t *parse_ok(const char *text) {
  wd_type_t *t = NULL;
  wd_error_t *err = wd_type_parse(text, &t);
  cr_assert_null(err, "parse '%s': %s", text, err ? err->message : "");
  cr_assert_not_null(t);
  return t;
}

/* Asserts that text is refused with error id. */
static void parse_fails(const char *text, const char *id) {
  wd_type_t *t = NULL;
  wd_error_t *err = wd_type_parse(text, &t);
  cr_assert_not_null(err, "'%s' should be refused", text);
  cr_assert_null(t);
  cr_assert_str_eq(err->id, id, "'%s': %s", text, err->message);
  cr_assert_eq(err->cls, WD_ERR_CONFIG);
  cr_assert(strstr(err->message, id) == err->message, "message starts with the id: %s", err->message);
  wd_error_destroy(err);
}

/* Canonical text of a type string. */
static void canon_is(const char *text, const char *want) {
  wd_type_t *t = parse_ok(text);
  char *s = wd_type_to_string(t);
  cr_assert_str_eq(s, want, "to_string('%s')", text);
  /* the canonical text parses back to the same text */
  wd_type_t *t2 = parse_ok(s);
  char *s2 = wd_type_to_string(t2);
  cr_assert_str_eq(s2, s);
  wd_type_t *t3 = wd_type_copy(t);
  char *s3 = wd_type_to_string(t3);
  cr_assert_str_eq(s3, s);
  free(s);
  free(s2);
  free(s3);
  wd_type_destroy(t);
  wd_type_destroy(t2);
  wd_type_destroy(t3);
}

Test(type, parse_every_case_type) {
  static const char *const types[] = {"ARRAY<INT>",
                                      "ARRAY<ROW<daily_id INT, today STRING, product_name STRING, price BIGINT>>",
                                      "ARRAY<ROW<k INT, v1 INT, v2 STRING>>",
                                      "ARRAY<ROW<k0 INT, k1 INT, v STRING, seq INT>>",
                                      "ARRAY<ROW<k0 INT, k1 INT, v STRING>>",
                                      "ARRAY<STRING>",
                                      "BIGINT",
                                      "BOOLEAN",
                                      "BYTES",
                                      "CHAR(3)",
                                      "DATE",
                                      "DECIMAL(10,2)",
                                      "DECIMAL(12,2)",
                                      "DECIMAL(4,2)",
                                      "DECIMAL(5,2)",
                                      "DECIMAL(6,2)",
                                      "DOUBLE",
                                      "FLOAT",
                                      "INT",
                                      "MAP<INT,STRING>",
                                      "MAP<STRING,INT>",
                                      "MAP<STRING,ROW<value STRING, ts STRING>>",
                                      "ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE>>",
                                      "SMALLINT",
                                      "STRING",
                                      "TIME",
                                      "TIME(3)",
                                      "TIMESTAMP(3)",
                                      "TIMESTAMP(6)",
                                      "TIMESTAMP_LTZ(3)",
                                      "TIMESTAMP_LTZ(6)",
                                      "TINYINT",
                                      "VARCHAR(100)",
                                      "VARCHAR(16)",
                                      "VARCHAR(20)",
                                      "VARCHAR(8)",
                                      "INT NOT NULL",
                                      "STRING NOT NULL",
                                      "BIGINT NOT NULL"};
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    wd_type_t *t = parse_ok(types[i]);
    wd_type_destroy(t);
  }
}

Test(type, parse_details) {
  wd_type_t *t = parse_ok("ARRAY<ROW<k0 INT, v STRING>>");
  cr_assert_eq(t->id, WD_ARRAY);
  cr_assert_eq(t->elem->id, WD_ROW);
  cr_assert_eq(t->elem->nfields, 2);
  cr_assert_str_eq(t->elem->fields[0].name, "k0");
  cr_assert_eq(t->elem->fields[0].type->id, WD_INT);
  cr_assert_str_eq(t->elem->fields[1].name, "v");
  cr_assert_eq(t->elem->fields[1].type->id, WD_STRING);
  cr_assert_eq(t->elem->fields[1].type->length, -1);
  wd_type_destroy(t);

  t = parse_ok("MAP<STRING,ROW<value STRING, ts STRING>>");
  cr_assert_eq(t->id, WD_MAP);
  cr_assert_eq(t->elem->id, WD_STRING);
  cr_assert_eq(t->val->id, WD_ROW);
  cr_assert_str_eq(t->val->fields[1].name, "ts");
  wd_type_destroy(t);

  t = parse_ok("  decimal( 6 , 2 )  not   null ");
  cr_assert_eq(t->id, WD_DECIMAL);
  cr_assert_eq(t->precision, 6);
  cr_assert_eq(t->scale, 2);
  cr_assert(t->not_null);
  wd_type_destroy(t);

  t = parse_ok("TIMESTAMP");
  cr_assert_eq(t->id, WD_TIMESTAMP);
  cr_assert_eq(t->precision, 6);
  wd_type_destroy(t);
  t = parse_ok("TIME");
  cr_assert_eq(t->precision, 0);
  wd_type_destroy(t);
  t = parse_ok("time(3)");
  cr_assert_eq(t->id, WD_TIME);
  cr_assert_eq(t->precision, 3);
  wd_type_destroy(t);
  t = parse_ok("TIMESTAMP(3) WITH LOCAL TIME ZONE");
  cr_assert_eq(t->id, WD_TIMESTAMP_LTZ);
  cr_assert_eq(t->precision, 3);
  wd_type_destroy(t);
  t = parse_ok("Timestamp_Ltz(9)");
  cr_assert_eq(t->id, WD_TIMESTAMP_LTZ);
  cr_assert_eq(t->precision, 9);
  wd_type_destroy(t);
  t = parse_ok("CHAR(3)");
  cr_assert_eq(t->id, WD_CHAR);
  cr_assert_eq(t->length, 3);
  wd_type_destroy(t);
  t = parse_ok("VARCHAR(100)");
  cr_assert_eq(t->id, WD_VARCHAR);
  cr_assert_eq(t->length, 100);
  wd_type_destroy(t);
  t = parse_ok("ARRAY<INT NOT NULL> NOT NULL");
  cr_assert(t->not_null);
  cr_assert(t->elem->not_null);
  wd_type_destroy(t);
  t = parse_ok("INTEGER");
  cr_assert_eq(t->id, WD_INT);
  cr_assert(!t->not_null);
  wd_type_destroy(t);
}

Test(type, canonical_text) {
  canon_is("decimal(6,2)", "DECIMAL(6,2)");
  canon_is("array<int not null>", "ARRAY<INT NOT NULL>");
  canon_is("MAP<STRING,ROW<value STRING, ts STRING>>", "MAP<STRING, ROW<value STRING, ts STRING>>");
  canon_is("TIME", "TIME");
  canon_is("TIME(3)", "TIME(3)");
  canon_is("TIMESTAMP", "TIMESTAMP(6)");
  canon_is("TIMESTAMP_LTZ(3) NOT NULL", "TIMESTAMP_LTZ(3) NOT NULL");
  canon_is("ROW<`a b` INT, c VARCHAR(5)>", "ROW<`a b` INT, c VARCHAR(5)>");
  canon_is("CHAR(3)", "CHAR(3)");
}

Test(type, refused) {
  parse_fails("DECIMAL(40,2)", "C_DECIMAL_PRECISION");
  parse_fails("DECIMAL(0,0)", "C_DECIMAL_PRECISION");
  parse_fails("DECIMAL(5,6)", "C_DECIMAL_PRECISION");
  parse_fails("ARRAY<DECIMAL(39,0)>", "C_DECIMAL_PRECISION");
  parse_fails("MAP<STRING,ROW<a DECIMAL(50,2)>>", "C_DECIMAL_PRECISION");
  parse_fails("", "C_BAD_TYPE");
  parse_fails("INTT", "C_BAD_TYPE");
  parse_fails("INT NOT", "C_BAD_TYPE");
  parse_fails("INT garbage", "C_BAD_TYPE");
  parse_fails("ARRAY<INT", "C_BAD_TYPE");
  parse_fails("ARRAY INT", "C_BAD_TYPE");
  parse_fails("MAP<INT>", "C_BAD_TYPE");
  parse_fails("ROW<>", "C_BAD_TYPE");
  parse_fails("ROW<a INT, a INT>", "C_BAD_TYPE");
  parse_fails("ROW<a>", "C_BAD_TYPE");
  parse_fails("TIMESTAMP(10)", "C_BAD_TYPE");
  parse_fails("VARCHAR(0)", "C_BAD_TYPE");
  parse_fails("DECIMAL(5,", "C_BAD_TYPE");
  /* an unclosed or wrong argument list says what was expected there */
  const char *said[][2] = {
      {"TIMESTAMP(3", "expected ')'"}, {"DECIMAL(10 2)", "expected ',' or ')'"}, {"VARCHAR(x)", "expected a number"}};
  for (size_t i = 0; i < sizeof(said) / sizeof(*said); i++) {
    wd_type_t *t = NULL;
    wd_error_t *err = wd_type_parse(said[i][0], &t);
    cr_assert_not_null(err, "'%s' should be refused", said[i][0]);
    cr_expect(strstr(err->message, said[i][1]) != NULL, "'%s': %s", said[i][0], err->message);
    wd_error_destroy(err);
  }
  /* deep nesting is refused, not a stack overflow */
  char deep[2000] = "";
  for (int i = 0; i < 100; i++) strcat(deep, "ARRAY<");
  strcat(deep, "INT");
  for (int i = 0; i < 100; i++) strcat(deep, ">");
  parse_fails(deep, "C_BAD_TYPE");
}

Test(type, int_ranges) {
  wd_type_t *t = parse_ok("TINYINT");
  cr_assert(wd_type_is_integer(t));
  cr_assert_eq(wd_type_int_min(t), -128);
  cr_assert_eq(wd_type_int_max(t), 127);
  wd_type_destroy(t);
  t = parse_ok("SMALLINT");
  cr_assert_eq(wd_type_int_min(t), -32768);
  wd_type_destroy(t);
  t = parse_ok("INT");
  cr_assert_eq(wd_type_int_max(t), 2147483647);
  wd_type_destroy(t);
  t = parse_ok("BIGINT");
  cr_assert_eq(wd_type_int_min(t), INT64_MIN);
  wd_type_destroy(t);
  t = parse_ok("DECIMAL(5,2)");
  cr_assert(wd_type_is_numeric(t));
  cr_assert(!wd_type_is_integer(t));
  wd_type_destroy(t);
  t = parse_ok("VARCHAR(3)");
  cr_assert(wd_type_is_text(t));
  cr_assert(!wd_type_is_numeric(t));
  wd_type_destroy(t);
}

/* ---- values --------------------------------------------------------------------------- */

static wd_value_t vnull(void) {
  wd_value_t v;
  memset(&v, 0, sizeof(v));
  v.is_null = true;
  return v;
}

static wd_value_t vdouble(double d) {
  wd_value_t v = vnull();
  v.is_null = false;
  v.f = d;
  return v;
}

static wd_value_t vint(int64_t i) {
  wd_value_t v = vnull();
  v.is_null = false;
  v.i = i;
  return v;
}

/* Parses text into a value of t, failing the test on error. */
static wd_value_t ptext(const wd_type_t *t, const char *text) {
  wd_value_t v;
  wd_error_t *err = wd_value_parse_text(t, text, strlen(text), &v);
  cr_assert_null(err, "parse '%s': %s", text, err ? err->message : "");
  cr_assert(!v.is_null);
  return v;
}

/* Formats v into a new string. */
static char *fmt(const wd_type_t *t, const wd_value_t *v) {
  wd_buf_t b = {0};
  cr_assert_eq(wd_value_format(t, v, &b), 0);
  cr_assert_eq(wd_buf_putc(&b, 0), 0);
  return (char *)b.data;
}

Test(value, double_order_is_java_compare) {
  wd_type_t *t = parse_ok("DOUBLE");
  double vals[] = {-INFINITY, -1e300, -1.0, -0.0, 0.0, 5e-324, 1.0, 1e300, INFINITY, NAN};
  size_t n = sizeof(vals) / sizeof(vals[0]);
  wd_value_t nul = vnull();
  for (size_t i = 0; i < n; i++) {
    wd_value_t a = vdouble(vals[i]);
    cr_assert_gt(wd_value_cmp(t, &a, &nul), 0, "NULL is smallest");
    cr_assert_lt(wd_value_cmp(t, &nul, &a), 0);
    for (size_t j = 0; j < n; j++) {
      wd_value_t b = vdouble(vals[j]);
      int c = wd_value_cmp(t, &a, &b);
      int want = i < j ? -1 : (i > j ? 1 : 0);
      cr_assert_eq(c < 0 ? -1 : (c > 0 ? 1 : 0), want, "cmp(%g, %g)", vals[i], vals[j]);
      cr_assert_eq(wd_value_eq(t, &a, &b), i == j);
      if (i == j) cr_assert_eq(wd_value_hash(t, &a), wd_value_hash(t, &b));
    }
  }
  wd_value_t n1 = vdouble(NAN), n2 = vdouble(-NAN);
  cr_assert(wd_value_eq(t, &n1, &n2), "every NaN equals NaN");
  cr_assert_eq(wd_value_hash(t, &n1), wd_value_hash(t, &n2));
  cr_assert_eq(wd_value_cmp(t, &nul, &nul), 0);
  cr_assert(wd_value_eq(t, &nul, &nul));
  wd_value_t mz = vdouble(-0.0), pz = vdouble(0.0);
  cr_assert_lt(wd_value_cmp(t, &mz, &pz), 0, "-0.0 < 0.0");
  cr_assert(!wd_value_eq(t, &mz, &pz));
  wd_type_destroy(t);
}

Test(value, text_and_bytes_unsigned) {
  wd_type_t *t = parse_ok("STRING");
  wd_value_t a = vnull(), b = vnull(), c = vnull();
  cr_assert_eq(wd_value_set_bytes(&a, "a", 1), 0);
  cr_assert_eq(wd_value_set_bytes(&b, "\xc3\xa9", 2), 0); /* é: bytes above 0x7f sort after ASCII */
  cr_assert_eq(wd_value_set_bytes(&c, "ab", 2), 0);
  cr_assert_lt(wd_value_cmp(t, &a, &b), 0);
  cr_assert_lt(wd_value_cmp(t, &a, &c), 0, "prefix first");
  cr_assert_lt(wd_value_cmp(t, &c, &b), 0);
  cr_assert_eq(a.s.p[a.s.n], 0);
  wd_value_t e = vnull();
  cr_assert_eq(wd_value_set_bytes(&e, "", 0), 0);
  cr_assert(!e.is_null);
  cr_assert_lt(wd_value_cmp(t, &e, &a), 0, "empty string before 'a'");
  wd_value_t nul = vnull();
  cr_assert_lt(wd_value_cmp(t, &nul, &e), 0, "NULL before empty");
  wd_value_clear(t, &a);
  wd_value_clear(t, &b);
  wd_value_clear(t, &c);
  wd_value_clear(t, &e);
  cr_assert(a.is_null);
  wd_type_destroy(t);

  t = parse_ok("BYTES");
  a = vnull();
  b = vnull();
  cr_assert_eq(wd_value_set_bytes(&a, "\x7f", 1), 0);
  cr_assert_eq(wd_value_set_bytes(&b, "\x80", 1), 0);
  cr_assert_lt(wd_value_cmp(t, &a, &b), 0, "0x7f < 0x80 unsigned");
  wd_value_clear(t, &a);
  wd_value_clear(t, &b);
  wd_type_destroy(t);
}

Test(value, scalars_order) {
  wd_type_t *t = parse_ok("BOOLEAN");
  wd_value_t f = ptext(t, "false"), tr = ptext(t, "TRUE");
  cr_assert_lt(wd_value_cmp(t, &f, &tr), 0);
  wd_type_destroy(t);

  t = parse_ok("DECIMAL(6,2)");
  wd_value_t a = ptext(t, "9.99"), b = ptext(t, "10.00"), c = ptext(t, "-10.00"), d = ptext(t, "-1.50");
  cr_assert_lt(wd_value_cmp(t, &a, &b), 0);
  cr_assert_lt(wd_value_cmp(t, &c, &d), 0);
  wd_type_destroy(t);

  t = parse_ok("TIMESTAMP(9)");
  wd_value_t x = ptext(t, "2024-05-01 10:00:00.000000001"), y = ptext(t, "2024-05-01 10:00:00.000000002");
  wd_value_t w = ptext(t, "1969-12-31 23:59:59.999999999");
  cr_assert_lt(wd_value_cmp(t, &x, &y), 0);
  cr_assert_lt(wd_value_cmp(t, &w, &x), 0);
  cr_assert_eq(w.ts.us, -1);
  cr_assert_eq(w.ts.ns, 999);
  wd_type_destroy(t);
}

/* Builds ARRAY<INT> [vals...]. */
static wd_value_t varr(const int *vals, size_t n) {
  wd_value_t v = vnull();
  v.is_null = false;
  v.list.n = n;
  v.list.v = calloc(n ? n : 1, sizeof(wd_value_t));
  for (size_t i = 0; i < n; i++) v.list.v[i] = vals[i] < 0 ? vnull() : vint(vals[i]);
  return v;
}

Test(value, arrays_lexicographic) {
  wd_type_t *t = parse_ok("ARRAY<INT>");
  int a1[] = {1, 2}, a2[] = {1, 2, 0}, a3[] = {1, 3}, a4[] = {-1, 5};
  wd_value_t a = varr(a1, 2), b = varr(a2, 3), c = varr(a3, 2), d = varr(a4, 2), e = varr(NULL, 0);
  cr_assert_lt(wd_value_cmp(t, &a, &b), 0, "shorter prefix first");
  cr_assert_lt(wd_value_cmp(t, &b, &c), 0);
  cr_assert_lt(wd_value_cmp(t, &d, &a), 0, "NULL element first");
  cr_assert_lt(wd_value_cmp(t, &e, &d), 0, "empty array first");
  wd_value_t cp;
  cr_assert_eq(wd_value_copy(t, &cp, &b), 0);
  cr_assert(wd_value_eq(t, &cp, &b));
  cr_assert_eq(wd_value_hash(t, &cp), wd_value_hash(t, &b));
  cr_assert(!wd_value_eq(t, &cp, &a));
  wd_value_t mv = vnull();
  wd_value_move(t, &mv, &cp);
  cr_assert(cp.is_null);
  cr_assert(wd_value_eq(t, &mv, &b));
  char *s = fmt(t, &d);
  cr_assert_str_eq(s, "[NULL, 5]");
  free(s);
  wd_value_t *all[] = {&a, &b, &c, &d, &e, &mv};
  for (size_t i = 0; i < 6; i++) wd_value_clear(t, all[i]);
  wd_type_destroy(t);
}

/* Builds MAP<STRING,INT> from parallel arrays. */
static wd_value_t vmap(const char *const *keys, const int *vals, size_t n) {
  wd_value_t v = vnull();
  v.is_null = false;
  v.map.n = n;
  v.map.k = calloc(n ? n : 1, sizeof(wd_value_t));
  v.map.v = calloc(n ? n : 1, sizeof(wd_value_t));
  for (size_t i = 0; i < n; i++) {
    v.map.k[i] = vnull();
    cr_assert_eq(wd_value_set_bytes(&v.map.k[i], keys[i], strlen(keys[i])), 0);
    v.map.v[i] = vals[i] < 0 ? vnull() : vint(vals[i]);
  }
  return v;
}

Test(value, maps_as_sets) {
  wd_type_t *t = parse_ok("MAP<STRING,INT>");
  const char *k1[] = {"a", "b", "c"}, *k2[] = {"c", "a", "b"}, *k3[] = {"a", "b"};
  int v1[] = {1, 2, -1}, v2[] = {-1, 1, 2}, v3[] = {1, 3, -1};
  wd_value_t a = vmap(k1, v1, 3), b = vmap(k2, v2, 3), c = vmap(k1, v3, 3), d = vmap(k3, v1, 2);
  cr_assert(wd_value_eq(t, &a, &b), "insertion order does not matter");
  cr_assert_eq(wd_value_cmp(t, &a, &b), 0);
  cr_assert_eq(wd_value_hash(t, &a), wd_value_hash(t, &b));
  cr_assert(!wd_value_eq(t, &a, &c));
  cr_assert_lt(wd_value_cmp(t, &a, &c), 0);
  cr_assert(!wd_value_eq(t, &a, &d));
  cr_assert_gt(wd_value_cmp(t, &a, &d), 0, "more entries after a prefix");
  wd_value_t cp;
  cr_assert_eq(wd_value_copy(t, &cp, &b), 0);
  cr_assert(wd_value_eq(t, &cp, &a));
  wd_value_t *all[] = {&a, &b, &c, &d, &cp};
  for (size_t i = 0; i < 5; i++) wd_value_clear(t, all[i]);
  wd_type_destroy(t);
}

/* Parses text as t, formats it and checks the canonical text. */
static void roundtrip(const char *type, const char *text, const char *want) {
  wd_type_t *t = parse_ok(type);
  wd_value_t v = ptext(t, text);
  char *s = fmt(t, &v);
  cr_assert_str_eq(s, want, "%s '%s'", type, text);
  wd_value_t v2 = ptext(t, s);
  cr_assert(wd_value_eq(t, &v, &v2), "%s '%s' reparses equal", type, s);
  free(s);
  wd_value_clear(t, &v);
  wd_value_clear(t, &v2);
  wd_type_destroy(t);
}

/* Asserts that text does not parse as type, with error id. */
static void text_fails(const char *type, const char *text, const char *id) {
  wd_type_t *t = parse_ok(type);
  wd_value_t v;
  wd_error_t *err = wd_value_parse_text(t, text, strlen(text), &v);
  cr_assert_not_null(err, "%s '%s' should fail", type, text);
  cr_assert_str_eq(err->id, id, "%s '%s': %s", type, text, err->message);
  cr_assert(v.is_null);
  wd_error_destroy(err);
  wd_type_destroy(t);
}

Test(text, canonical_forms) {
  roundtrip("INT", "-42", "-42");
  roundtrip("BIGINT", "-9223372036854775808", "-9223372036854775808");
  roundtrip("TINYINT", "127", "127");
  roundtrip("BOOLEAN", "true", "true");
  roundtrip("DECIMAL(6,2)", "12.3", "12.30");
  roundtrip("DECIMAL(6,2)", "-0.005", "-0.01");
  roundtrip("DECIMAL(6,2)", "-0.004", "0.00");
  roundtrip("DECIMAL(38,0)", "99999999999999999999999999999999999999", "99999999999999999999999999999999999999");
  roundtrip("DECIMAL(38,38)", "-0.1", "-0.10000000000000000000000000000000000000");
  roundtrip("DECIMAL(5,0)", "1.5E+3", "1500");
  roundtrip("DOUBLE", "0.1", "0.1");
  roundtrip("DOUBLE", "1e+300", "1e+300");
  roundtrip("DOUBLE", "NaN", "NaN");
  roundtrip("DOUBLE", "-Infinity", "-Infinity");
  roundtrip("FLOAT", "3.14", "3.14");
  roundtrip("STRING", "héllo", "héllo");
  roundtrip("BYTES", "AAEC/w==", "AAEC/w==");
  roundtrip("BYTES", "", "");
  roundtrip("BYTES", "OjAAAAEAAAAAAAEAEAAAAAEAAgA=", "OjAAAAEAAAAAAAEAEAAAAAEAAgA=");
  roundtrip("DATE", "2024-01-31", "2024-01-31");
  roundtrip("DATE", "1969-12-31", "1969-12-31");
  roundtrip("DATE", "2000-02-29", "2000-02-29");
  roundtrip("TIME", "10:00:00", "10:00:00");
  roundtrip("TIME", "23:59:59", "23:59:59");
  roundtrip("TIME(3)", "17:30:00.001", "17:30:00.001");
  roundtrip("TIME(3)", "17:30:00.5", "17:30:00.500");
  roundtrip("TIME(3)", "17:30", "17:30:00.000");
  roundtrip("TIMESTAMP(3)", "2024-01-31 10:00:00.000", "2024-01-31 10:00:00.000");
  roundtrip("TIMESTAMP(3)", "2024-01-31T10:00:00", "2024-01-31 10:00:00.000");
  roundtrip("TIMESTAMP(6)", "2024-05-01 10:00:00.000002", "2024-05-01 10:00:00.000002");
  roundtrip("TIMESTAMP(6)", "1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.999999");
  roundtrip("TIMESTAMP(9)", "1969-12-31 23:59:59.123456789", "1969-12-31 23:59:59.123456789");
  roundtrip("TIMESTAMP(0)", "2024-01-31 10:00:00", "2024-01-31 10:00:00.000");
  roundtrip("TIMESTAMP_LTZ(3)", "2024-01-31 10:00:00.000", "2024-01-31 10:00:00.000");
  roundtrip("TIMESTAMP_LTZ(3)", "2024-01-31T12:00:00.000+02:00", "2024-01-31 10:00:00.000");
  roundtrip("TIMESTAMP_LTZ(6)", "2024-01-31T10:00:00Z", "2024-01-31 10:00:00.000000");
}

Test(text, values) {
  wd_type_t *t = parse_ok("DATE");
  wd_value_t v = ptext(t, "1970-01-02");
  cr_assert_eq(v.i, 1);
  wd_type_destroy(t);
  t = parse_ok("TIME(3)");
  v = ptext(t, "00:00:01.5");
  cr_assert_eq(v.i, 1500000000LL);
  wd_type_destroy(t);
  t = parse_ok("TIMESTAMP(3)");
  v = ptext(t, "1970-01-01 00:00:01.001999");
  cr_assert_eq(v.ts.us, 1001000, "truncated to the type's precision");
  wd_type_destroy(t);
  t = parse_ok("FLOAT");
  v = ptext(t, "3.14");
  cr_assert_eq(v.f, (double)3.14f, "FLOAT is rounded to binary32");
  wd_type_destroy(t);
}

Test(text, refused) {
  text_fails("INT", "12a", "E_TYPE");
  text_fails("INT", "", "E_TYPE");
  text_fails("INT", "2147483648", "E_ARITH_OVERFLOW");
  text_fails("TINYINT", "-129", "E_ARITH_OVERFLOW");
  text_fails("BIGINT", "9223372036854775808", "E_ARITH_OVERFLOW");
  text_fails("BOOLEAN", "yes", "E_TYPE");
  text_fails("DOUBLE", "1.5x", "E_TYPE");
  text_fails("DOUBLE", " 1", "E_TYPE");
  text_fails("DATE", "2023-02-29", "E_TYPE");
  text_fails("DATE", "2024-13-01", "E_TYPE");
  text_fails("DATE", "2024-01-01x", "E_TYPE");
  text_fails("TIME", "24:00:00", "E_TYPE");
  text_fails("TIME", "10:00:00.", "E_TYPE");
  text_fails("TIMESTAMP(3)", "2024-01-01 10:00:00+01:00", "E_TYPE");
  text_fails("BYTES", "A", "E_TYPE");
  text_fails("BYTES", "AA*A", "E_TYPE");
  text_fails("DECIMAL(4,2)", "100.00", "E_ARITH_OVERFLOW");
  text_fails("DECIMAL(4,2)", "99.995", "E_ARITH_OVERFLOW");
  text_fails("DECIMAL(4,2)", "abc", "E_TYPE");
  text_fails("ARRAY<INT>", "[1]", "E_TYPE");
}

/* ---- DECIMAL --------------------------------------------------------------------------- */

/* wd_decimal_parse(text) at (p,s) must give the unscaled value want (as text). */
static void dec_is(const char *text, int p, int s, const char *want) {
  wd_i128 v = 0;
  wd_error_t *err = wd_decimal_parse(text, strlen(text), p, s, &v);
  cr_assert_null(err, "'%s' (%d,%d): %s", text, p, s, err ? err->message : "");
  wd_type_t t = {.id = WD_DECIMAL, .precision = p, .scale = s, .length = -1};
  wd_value_t val = vnull();
  val.is_null = false;
  val.dec = v;
  char *got = fmt(&t, &val);
  cr_assert_str_eq(got, want, "'%s' at (%d,%d)", text, p, s);
  free(got);
}

static void dec_fails(const char *text, int p, int s, const char *id) {
  wd_i128 v = 0;
  wd_error_t *err = wd_decimal_parse(text, strlen(text), p, s, &v);
  cr_assert_not_null(err, "'%s' (%d,%d) should fail", text, p, s);
  cr_assert_str_eq(err->id, id, "'%s': %s", text, err->message);
  wd_error_destroy(err);
}

Test(decimal, parse) {
  dec_is("12.30", 6, 2, "12.30");
  dec_is("+12.3", 6, 2, "12.30");
  dec_is("-1e3", 6, 2, "-1000.00");
  dec_is("1.5E+3", 6, 2, "1500.00");
  dec_is("1.5e-1", 6, 2, "0.15");
  dec_is("0.625", 6, 2, "0.63");
  dec_is("-0.625", 6, 2, "-0.63");
  dec_is("0.624999", 6, 2, "0.62");
  dec_is("0.005", 6, 2, "0.01");
  dec_is("0.00499999", 6, 2, "0.00");
  dec_is(".5", 3, 0, "1");
  dec_is("5.", 3, 0, "5");
  dec_is("000000000000000000000000000000000000000000000123.4500000000000000000000000000000000000", 5, 2, "123.45");
  dec_is("9.999", 4, 2, "10.00");
  dec_is("1e-100", 4, 2, "0.00");
  dec_is("0e999999999999", 4, 2, "0.00");
  dec_is("-0.00", 4, 2, "0.00");
  dec_is("12345678901234567890123456789012345678", 38, 0, "12345678901234567890123456789012345678");
  dec_is("-9999999999999999999999999999999999999.9", 38, 1, "-9999999999999999999999999999999999999.9");
  dec_is("0.99999999999999999999999999999999999999", 38, 38, "0.99999999999999999999999999999999999999");
  dec_is(" 1.25 ", 4, 1, "1.3");
  dec_fails("99.995", 4, 2, "E_ARITH_OVERFLOW");
  dec_fails("1e38", 38, 0, "E_ARITH_OVERFLOW");
  dec_fails("1e999999999999999", 38, 0, "E_ARITH_OVERFLOW");
  dec_fails("100000", 5, 0, "E_ARITH_OVERFLOW");
  dec_fails("", 5, 0, "E_TYPE");
  dec_fails(".", 5, 0, "E_TYPE");
  dec_fails("1e", 5, 0, "E_TYPE");
  dec_fails("1.2.3", 5, 0, "E_TYPE");
  dec_fails("NaN", 5, 0, "E_TYPE");
  dec_fails("- 1", 5, 0, "E_TYPE");
  cr_assert(wd_pow10(0) == 1);
  cr_assert(wd_pow10(38) / wd_pow10(19) == wd_pow10(19));
}

/* ---- schemas and rows --------------------------------------------------------------- */

Test(schema, build_and_errors) {
  const char *names[] = {"k", "a", "m"};
  const char *types[] = {"INT NOT NULL", "DECIMAL(6,2)", "MAP<STRING,INT>"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  wd_error_t *err = wd_schema_new(3, names, types, 1, pk, &s);
  cr_assert_null(err);
  cr_assert_eq(s->ncols, 3);
  cr_assert_eq(wd_schema_find(s, "a"), 1);
  cr_assert_eq(wd_schema_find(s, "zz"), -1);
  cr_assert(wd_schema_is_pk(s, 0));
  cr_assert(!wd_schema_is_pk(s, 1));
  cr_assert(s->cols[0].type->not_null);
  /* the derived per-column data: the columns that can own memory, the names' lengths */
  cr_assert_eq(s->nvar, 1);
  cr_assert_eq(s->var[0], 2);
  cr_assert(s->nested);
  cr_assert_eq(s->name_len[0], 1);
  cr_assert(s->name_plain[0] && s->name_plain[1] && s->name_plain[2]);
  wd_schema_destroy(s);
  wd_schema_destroy(NULL);
  const char *odd[] = {"id", "q\"x", "b\\s", "caf\u00e9", "tab\t", "plain name"};
  const char *odd_types[] = {"INT", "STRING", "INT", "DATE", "INT", "INT"};
  const char *odd_pk[] = {"id"};
  cr_assert_null(wd_schema_new(6, odd, odd_types, 1, odd_pk, &s));
  cr_assert_eq(s->nvar, 1);
  cr_assert_eq(s->var[0], 1);
  cr_assert(!s->nested);
  bool plain[] = {true, false, false, false, false, true};
  for (size_t i = 0; i < 6; i++) {
    cr_assert_eq(s->name_plain[i], plain[i], "column %zu", i);
    cr_assert_eq(s->name_len[i], strlen(odd[i]));
  }
  wd_schema_destroy(s);

  const char *bad_types[] = {"INT", "DECIMAL(40,2)", "STRING"};
  err = wd_schema_new(3, names, bad_types, 1, pk, &s);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_DECIMAL_PRECISION");
  cr_assert(strstr(err->message, "'a'"), "%s", err->message);
  cr_assert(strncmp(err->message, "C_DECIMAL_PRECISION", 19) == 0, "%s", err->message);
  cr_assert_null(s);
  wd_error_destroy(err);

  const char *dup[] = {"k", "k", "m"};
  err = wd_schema_new(3, dup, types, 1, pk, &s);
  cr_assert_str_eq(err->id, "C_DUPLICATE_COLUMN");
  wd_error_destroy(err);

  const char *pk_missing[] = {"nope"};
  err = wd_schema_new(3, names, types, 1, pk_missing, &s);
  cr_assert_str_eq(err->id, "C_PRIMARY_KEY");
  wd_error_destroy(err);
  err = wd_schema_new(3, names, types, 0, NULL, &s);
  cr_assert_str_eq(err->id, "C_PRIMARY_KEY");
  wd_error_destroy(err);
  const char *pk_rep[] = {"k", "k"};
  err = wd_schema_new(3, names, types, 2, pk_rep, &s);
  cr_assert_str_eq(err->id, "C_PRIMARY_KEY");
  wd_error_destroy(err);
}

Test(row, new_copy_eq_key) {
  const char *names[] = {"k1", "v", "k2"};
  const char *types[] = {"STRING", "ARRAY<INT>", "BIGINT"};
  const char *pk[] = {"k2", "k1"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(3, names, types, 2, pk, &s));
  wd_row_t *r = wd_row_new(s);
  cr_assert_eq(r->n, 3);
  cr_assert_eq(r->kind, WD_INSERT);
  for (size_t i = 0; i < 3; i++) cr_assert(r->v[i].is_null);
  cr_assert_eq(wd_value_set_bytes(&r->v[0], "x", 1), 0);
  int a[] = {1, 2};
  r->v[1] = varr(a, 2);
  r->v[2] = vint(7);
  r->kind = WD_UPDATE_AFTER;
  wd_row_t *c = wd_row_copy(s, r);
  cr_assert_eq(c->kind, WD_UPDATE_AFTER);
  cr_assert(wd_row_eq(s, r, c, NULL));
  wd_value_clear(s->cols[1].type, &c->v[1]);
  cr_assert(!wd_row_eq(s, r, c, NULL));
  bool ignore[] = {false, true, false};
  cr_assert(wd_row_eq(s, r, c, ignore));

  wd_buf_t k1 = {0}, k2 = {0};
  cr_assert_eq(wd_row_key_encode(s, r, &k1), 0);
  cr_assert_eq(wd_row_key_encode(s, c, &k2), 0);
  cr_assert_eq(k1.len, k2.len);
  cr_assert_eq(memcmp(k1.data, k2.data, k1.len), 0, "equal keys give equal bytes");
  c->v[2].i = 8;
  wd_buf_reset(&k2);
  cr_assert_eq(wd_row_key_encode(s, c, &k2), 0);
  cr_assert(k1.len != k2.len || memcmp(k1.data, k2.data, k1.len) != 0);
  wd_buf_free(&k1);
  wd_buf_free(&k2);

  wd_row_clear(s, c);
  for (size_t i = 0; i < 3; i++) cr_assert(c->v[i].is_null);
  cr_assert_eq(c->kind, WD_UPDATE_AFTER);
  wd_row_destroy(s, r);
  wd_row_destroy(s, c);
  wd_row_destroy(s, NULL);
  wd_schema_destroy(s);
}

Test(row, key_encode_is_injective_across_columns) {
  /* ("ab","c") and ("a","bc") must not collide */
  const char *names[] = {"a", "b"};
  const char *types[] = {"STRING", "STRING"};
  const char *pk[] = {"a", "b"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(2, names, types, 2, pk, &s));
  wd_row_t *r1 = wd_row_new(s), *r2 = wd_row_new(s);
  wd_value_set_bytes(&r1->v[0], "ab", 2);
  wd_value_set_bytes(&r1->v[1], "c", 1);
  wd_value_set_bytes(&r2->v[0], "a", 1);
  wd_value_set_bytes(&r2->v[1], "bc", 2);
  wd_buf_t b1 = {0}, b2 = {0};
  wd_row_key_encode(s, r1, &b1);
  wd_row_key_encode(s, r2, &b2);
  cr_assert(b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0);
  wd_buf_free(&b1);
  wd_buf_free(&b2);
  wd_row_destroy(s, r1);
  wd_row_destroy(s, r2);
  wd_schema_destroy(s);
}

Test(row, kinds) {
  static const char *const names[] = {"+I", "-U", "+U", "-D"};
  for (int i = 0; i < 4; i++) {
    wd_row_kind_t k;
    cr_assert_eq(wd_row_kind_parse(names[i], &k), 0);
    cr_assert_eq((int)k, i);
    cr_assert_str_eq(wd_row_kind_str(k), names[i]);
  }
  wd_row_kind_t k;
  cr_assert_eq(wd_row_kind_parse("+X", &k), -1);
  cr_assert_eq(wd_row_kind_parse("", &k), -1);
  cr_assert(wd_row_kind_is_add(WD_INSERT));
  cr_assert(wd_row_kind_is_add(WD_UPDATE_AFTER));
  cr_assert(!wd_row_kind_is_add(WD_DELETE));
  cr_assert(!wd_row_kind_is_add(WD_UPDATE_BEFORE));
}

/* wd_row_pack: one allocation, text in the row's block, nested values owned; a packed value is
 * changed through wd_row_clear_value; views and shares keep a row alive until the last owner. */
Test(row, pack_share_view) {
  const char *names[] = {"k", "s", "b", "a", "n"};
  const char *types[] = {"INT", "STRING", "BYTES", "ARRAY<INT>", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(5, names, types, 1, pk, &s));
  wd_row_t *r = wd_row_new(s);
  r->v[0] = vint(42);
  cr_assert_eq(wd_value_set_bytes(&r->v[1], "hello", 5), 0);
  cr_assert_eq(wd_value_set_bytes(&r->v[2], "", 0), 0);
  int a[] = {3, 4, 5};
  r->v[3] = varr(a, 3);
  r->kind = WD_UPDATE_AFTER;
  wd_row_t *p = wd_row_pack(s, r);
  cr_assert_not_null(p);
  cr_assert_eq(p->kind, WD_UPDATE_AFTER);
  cr_assert(wd_row_eq(s, r, p, NULL));
  cr_assert(p->v[4].is_null);
  /* the text is in the block (5 + 1 and 0 + 1 bytes), not the source's; the array is a copy */
  cr_assert_eq(p->blk_len, 7);
  cr_assert(p->v[1].s.p >= p->blk && p->v[1].s.p < p->blk + p->blk_len);
  cr_assert(p->v[2].s.p >= p->blk && p->v[2].s.p < p->blk + p->blk_len);
  cr_assert_str_eq(p->v[1].s.p, "hello");
  cr_assert_eq(p->v[2].s.p[0], 0);
  cr_assert_neq(p->v[3].list.v, r->v[3].list.v);
  wd_row_destroy(s, r); /* the packed row stands alone */
  cr_assert_eq(p->v[3].list.v[2].i, 5);
  /* change a packed text value: cleared without freeing the block, then set owned */
  wd_row_clear_value(s, p, 1);
  cr_assert(p->v[1].is_null);
  cr_assert_eq(wd_value_set_bytes(&p->v[1], "world", 5), 0);
  wd_row_clear_value(s, p, 3);
  cr_assert(p->v[3].is_null);
  /* a view has its own kind and shares the values; the base lives until the view goes */
  wd_row_t *v = wd_row_view(p, WD_UPDATE_BEFORE);
  cr_assert_not_null(v);
  cr_assert_eq(v->kind, WD_UPDATE_BEFORE);
  cr_assert_eq(p->kind, WD_UPDATE_AFTER);
  cr_assert_eq(v->v, p->v);
  wd_row_t *v2 = wd_row_view(v, WD_DELETE); /* a view of a view shares the base */
  cr_assert_eq(v2->base, p);
  cr_assert_eq(p->shares, 2);
  wd_row_destroy(s, wd_row_share(p)); /* a share and its release */
  cr_assert_eq(p->shares, 2);
  wd_row_destroy(s, p); /* the first owner leaves: the views keep it */
  cr_assert_str_eq(v->v[1].s.p, "world");
  cr_assert_eq(v2->v[0].i, 42);
  wd_row_destroy(s, v);
  cr_assert_str_eq(v2->v[1].s.p, "world");
  wd_row_destroy(s, v2); /* the last owner frees the row (ASan would report a leak otherwise) */
  wd_schema_destroy(s);
}

/* common/buf.h's decimal writers (the changelog's integers, dates and times). */
Test(buf, decimal_integers) {
  wd_buf_t b = {0};
  cr_assert_eq(wd_buf_put_int(&b, 0), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_int(&b, -42), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_int(&b, INT64_MIN), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_int(&b, INT64_MAX), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_uint(&b, 7, 3), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_uint(&b, 12345, 2), 0);
  cr_assert_eq(wd_buf_putc(&b, ' '), 0);
  cr_assert_eq(wd_buf_put_uint(&b, UINT64_MAX, 0), 0);
  cr_assert_str_eq((const char *)b.data,
                   "0 -42 -9223372036854775808 9223372036854775807 007 12345 18446744073709551615");
  wd_buf_free(&b);
}

/* The reference: try "%.Ng" for N = 1..17 and keep the first that reads back. */
static void shortest_by_trying(double d, bool as_float, char *buf, size_t n) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, d);
    if (as_float ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d) return;
  }
}

/* wd_float_shortest gives the reference's text for random bit patterns, decimal-looking values,
 * powers of ten, integers and their neighbours, as DOUBLE and as FLOAT. */
Test(value, float_shortest_matches_trying_every_precision) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  char a[40], b[40];
  size_t checked = 0;
  for (int i = 0; i < 200000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double cand[6];
    uint64_t bits = x;
    memcpy(&cand[0], &bits, sizeof(double));
    cand[1] = (double)(int64_t)(x % 2000001) / 1000.0 - 1000.0; /* 3 decimals */
    cand[2] = pow(10.0, (double)((int)(x % 617) - 308)); /* powers of ten */
    cand[3] = (double)(x % 100000000000ull) * (x & 1 ? 1.0 : 1e10); /* integers, round numbers */
    cand[4] = nextafter(cand[3], INFINITY);
    cand[5] = (double)(float)((double)(x % 1000000) / 64.0);
    for (int c = 0; c < 6; c++) {
      double d = cand[c];
      if (!isfinite(d)) continue;
      for (int f = 0; f < 2; f++) {
        double v = f ? (double)(float)d : d;
        if (!isfinite(v)) continue;
        shortest_by_trying(v, f, a, sizeof(a));
        wd_float_shortest(v, f, b, sizeof(b));
        cr_assert_str_eq(b, a, "%.17g as %s", v, f ? "FLOAT" : "DOUBLE");
        checked++;
      }
    }
  }
  const double edge[] = {0.0,
                         -0.0,
                         0.1,
                         1e10,
                         1e15,
                         1e16,
                         1e17,
                         123456789012345678.0,
                         5e-324,
                         1.7976931348623157e308,
                         2.2250738585072014e-308,
                         0.30000000000000004,
                         100.0,
                         1e21,
                         1e-5,
                         9.999999999999999e22};
  for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
    for (int f = 0; f < 2; f++) {
      double v = f ? (double)(float)edge[i] : edge[i];
      if (!isfinite(v)) continue;
      shortest_by_trying(v, f, a, sizeof(a));
      wd_float_shortest(v, f, b, sizeof(b));
      cr_assert_str_eq(b, a, "%.17g as %s", v, f ? "FLOAT" : "DOUBLE");
    }
  cr_assert_gt(checked, 1000000);
}

/* ---- wd_scalar_text against the previous writers ------------------------------------------ */

/* The reference: common/types.c's DECIMAL, DATE, TIME and TIMESTAMP writers as they were before
 * wd_scalar_text (one wd_buf call per piece, 128-bit division for every decimal digit). */
static void ref_civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int ref_date_put(int64_t days, wd_buf_t *out) {
  int64_t y;
  int m, d;
  ref_civil_from_days(days, &y, &m, &d);
  int rc = y < 0 ? wd_buf_putc(out, '-') : 0;
  rc = rc || wd_buf_put_uint(out, (uint64_t)(y < 0 ? -y : y), 4) || wd_buf_putc(out, '-') ||
       wd_buf_put_uint(out, (uint64_t)m, 2) || wd_buf_putc(out, '-') || wd_buf_put_uint(out, (uint64_t)d, 2);
  return rc ? -1 : 0;
}

static int ref_time_put(int64_t ns_of_day, int digits, wd_buf_t *out) {
  int64_t secs = ns_of_day / 1000000000;
  int64_t frac = ns_of_day % 1000000000;
  int rc = wd_buf_put_uint(out, (uint64_t)(secs / 3600), 2) || wd_buf_putc(out, ':') ||
           wd_buf_put_uint(out, (uint64_t)(secs / 60 % 60), 2) || wd_buf_putc(out, ':') ||
           wd_buf_put_uint(out, (uint64_t)(secs % 60), 2);
  if (!rc && digits > 0) {
    int64_t f = frac;
    for (int i = digits; i < 9; i++) f /= 10;
    rc = wd_buf_putc(out, '.') || wd_buf_put_uint(out, (uint64_t)f, digits);
  }
  return rc ? -1 : 0;
}

static size_t ref_decimal_text(wd_i128 v, int s, char *buf) {
  char digits[40];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  do {
    digits[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  while (n <= s && n < (int)sizeof(digits)) digits[n++] = '0';
  size_t len = 0;
  if (neg) buf[len++] = '-';
  for (int i = n - 1; i >= 0; i--) {
    if (i == s - 1) buf[len++] = '.';
    buf[len++] = digits[i];
  }
  buf[len] = 0;
  return len;
}

static int ref_format(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out) {
  switch (t->id) {
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT: return wd_buf_put_int(out, v->i);
  case WD_DECIMAL: {
    char text[WD_DECIMAL_TEXT_MAX];
    return wd_buf_append(out, text, ref_decimal_text(v->dec, t->scale, text));
  }
  case WD_DATE: return ref_date_put(v->i, out);
  case WD_TIME: return ref_time_put(v->i, t->precision, out);
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    int digits = t->precision <= 3 ? 3 : (t->precision <= 6 ? 6 : 9);
    int64_t days = wd_floordiv(v->ts.us, INT64_C(86400000000));
    int64_t us_of_day = v->ts.us - days * INT64_C(86400000000);
    int rc = ref_date_put(days, out);
    rc = rc ? rc : wd_buf_putc(out, ' ');
    rc = rc ? rc : ref_time_put(us_of_day * 1000 + v->ts.ns, digits, out);
    return rc;
  }
  default: return -1;
  }
}

static uint64_t xs(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

/* wd_scalar_text and wd_value_format write the reference's text for random values of every
 * fixed-size type: decimals of every scale with magnitudes below and above 2^64 (up to 38
 * digits), dates with negative and five-digit years, times (also out-of-range ones, which only
 * a caller's bug could make), timestamps of every precision, integers to their limits. */
Test(value, scalar_text_matches_the_previous_writers) {
  static const char *const TYPES[] = {
      "TINYINT",       "INT",           "BIGINT",         "DATE",           "TIME",          "TIME(3)",
      "TIME(9)",       "TIMESTAMP(0)",  "TIMESTAMP(3)",   "TIMESTAMP(6)",   "TIMESTAMP(9)",  "TIMESTAMP_LTZ(3)",
      "DECIMAL(38,0)", "DECIMAL(38,2)", "DECIMAL(38,18)", "DECIMAL(38,38)", "DECIMAL(10,2)", "DECIMAL(20,10)"};
  uint64_t x = 0x2545f4914f6cdd1dULL;
  wd_buf_t a = {0}, b = {0};
  char text[WD_SCALAR_TEXT_MAX];
  size_t checked = 0, wide = 0;
  for (size_t ti = 0; ti < sizeof(TYPES) / sizeof(TYPES[0]); ti++) {
    wd_type_t *t = parse_ok(TYPES[ti]);
    for (int i = 0; i < 20000; i++) {
      wd_value_t v = {0};
      uint64_t r = xs(&x), k = xs(&x) % 8;
      switch (t->id) {
      case WD_TINYINT: v.i = (int8_t)r; break;
      case WD_INT: v.i = (int32_t)r; break;
      case WD_BIGINT:
        v.i = k == 0 ? INT64_MIN : k == 1 ? INT64_MAX : k < 4 ? (int64_t)(r % 1000) - 500 : (int64_t)r;
        break;
      case WD_DATE:
        v.i = k < 4 ? (int64_t)(r % 200000) - 100000 : (int64_t)(r % 2000000000000ULL) - 1000000000000LL;
        break;
      case WD_TIME:
        v.i = k < 6 ? (int64_t)(r % 86400000000000ULL) : k == 6 ? -(int64_t)(r % 86400000000000ULL) : (int64_t)(r >> 1);
        break;
      case WD_TIMESTAMP:
      case WD_TIMESTAMP_LTZ:
        v.ts.us = k < 4 ? (int64_t)(r % 8000000000000000ULL) - 4000000000000000LL : (int64_t)r / 4;
        v.ts.ns = t->precision > 6 ? (int32_t)(xs(&x) % 1000) : 0;
        break;
      case WD_DECIMAL: {
        unsigned __int128 u = ((unsigned __int128)xs(&x) << 64) | r;
        wd_i128 lim = wd_pow10(t->precision);
        wd_i128 d = k < 3 ? (wd_i128)(r % 100000) : (wd_i128)(u % (unsigned __int128)lim);
        if (k == 7) d = lim - 1;
        v.dec = xs(&x) & 1 ? -d : d;
        wide += (v.dec < 0 ? -v.dec : v.dec) >> 64 != 0;
        break;
      }
      default: break;
      }
      wd_buf_reset(&a);
      wd_buf_reset(&b);
      cr_assert_eq(ref_format(t, &v, &b), 0);
      cr_assert_eq(wd_value_format(t, &v, &a), 0);
      cr_assert(a.len == b.len && memcmp(a.data, b.data, a.len) == 0, "%s: '%s' vs the reference '%s'", TYPES[ti],
                (const char *)a.data, (const char *)b.data);
      size_t n = wd_scalar_text(t, &v, text);
      cr_assert(n == b.len && memcmp(text, b.data, n) == 0, "%s: wd_scalar_text '%.*s' vs '%s'", TYPES[ti], (int)n,
                text, (const char *)b.data);
      checked++;
    }
    wd_type_destroy(t);
  }
  wd_type_t *s = parse_ok("STRING");
  wd_value_t sv = {0};
  cr_assert_eq(wd_scalar_text(s, &sv, text), 0, "not a fixed-size type: nothing written");
  wd_type_destroy(s);
  cr_assert_gt(wide, 10000, "decimals beyond 64 bits were checked");
  cr_assert_eq(checked, 20000 * (sizeof(TYPES) / sizeof(TYPES[0])));
  wd_buf_free(&a);
  wd_buf_free(&b);
}

/* ---- rows that own nothing outside their block -------------------------------------------- */

/* wd_row_pack flags a row whose text is all in its block and that has no nested value
 * (blk_only: freed without a walk); a row with a nested value is not flagged; wd_row_clear_value
 * and wd_row_clear drop the flag, so a value set after them is freed (LeakSanitizer reports the
 * bytes of "world" and of the array otherwise). */
Test(row, blk_only_flag) {
  const char *names[] = {"k", "s", "b", "a"};
  const char *types[] = {"INT", "STRING", "BYTES", "ARRAY<INT>"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(4, names, types, 1, pk, &s));
  cr_assert_eq(s->nvar, 3);
  cr_assert(s->nested);
  wd_row_t *r = wd_row_new(s);
  cr_assert(!r->blk_only);
  r->v[0] = vint(1);
  cr_assert_eq(wd_value_set_bytes(&r->v[1], "hello", 5), 0);
  cr_assert_eq(wd_value_set_bytes(&r->v[2], "xy", 2), 0);
  wd_row_t *p = wd_row_pack(s, r);
  cr_assert(p->blk_only, "text only in the block, the array NULL");
  wd_row_t *q = wd_row_pack(s, p);
  cr_assert(q->blk_only);
  cr_assert_str_eq(q->v[1].s.p, "hello");
  wd_row_destroy(s, q);
  /* a value changed through wd_row_clear_value is the row's own */
  wd_row_clear_value(s, p, 1);
  cr_assert(!p->blk_only);
  cr_assert_eq(wd_value_set_bytes(&p->v[1], "world", 5), 0);
  wd_row_destroy(s, p);
  p = wd_row_pack(s, r);
  cr_assert(p->blk_only);
  wd_row_clear_value(s, p, 3); /* a NULL column, then set */
  cr_assert(!p->blk_only);
  int a[] = {7, 8};
  p->v[3] = varr(a, 2);
  wd_row_destroy(s, p);
  /* wd_row_clear */
  p = wd_row_pack(s, r);
  wd_row_clear(s, p);
  cr_assert(!p->blk_only);
  cr_assert(p->v[1].is_null && p->v[2].is_null);
  cr_assert_eq(wd_value_set_bytes(&p->v[2], "zz", 2), 0);
  wd_row_destroy(s, p);
  /* a nested value: owned apart from the block, so never flagged */
  r->v[3] = varr(a, 2);
  p = wd_row_pack(s, r);
  cr_assert(!p->blk_only);
  cr_assert_neq(p->v[3].list.v, r->v[3].list.v);
  wd_row_destroy(s, p);
  /* the view of a flagged row frees its share only */
  wd_value_clear(s->cols[3].type, &r->v[3]);
  p = wd_row_pack(s, r);
  wd_row_t *v = wd_row_view(p, WD_DELETE);
  cr_assert(!v->blk_only);
  wd_row_destroy(s, p);
  cr_assert_str_eq(v->v[1].s.p, "hello");
  wd_row_destroy(s, v);
  wd_row_destroy(s, r);
  wd_schema_destroy(s);
}

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer builds check a flagged row before it is freed without a walk: a value set
 * without wd_row_clear_value (a bug; it would leak) stops the process. */
Test(row, blk_only_row_owning_a_value_aborts, .signal = SIGABRT) {
  const char *names[] = {"k", "s", "a"};
  const char *types[] = {"INT", "STRING", "ARRAY<INT>"};
  const char *pk[] = {"k"};
  wd_schema_t *s = NULL;
  cr_assert_null(wd_schema_new(3, names, types, 1, pk, &s));
  wd_row_t *r = wd_row_new(s);
  r->v[0] = vint(1);
  cr_assert_eq(wd_value_set_bytes(&r->v[1], "hello", 5), 0);
  wd_row_t *p = wd_row_pack(s, r);
  cr_assert(p->blk_only);
  int a[] = {1};
  p->v[2] = varr(a, 1); /* wrong: not through wd_row_clear_value */
  wd_row_destroy(s, p); /* aborts */
}
#endif

/* DATE text on both sides of the 64-bit path's bound (|days| < 2^40) and far beyond it, against
 * the reference writer */
Test(value, date_text_at_the_bound_of_the_64_bit_path) {
  wd_type_t *t = parse_ok("DATE");
  const int64_t B = INT64_C(1) << 40;
  const int64_t DAYS[] = {B - 1, B,       B + 1,   -B + 1,  -B,      -B - 1, 0,     -1,
                          1,     -719468, -719469, 2932896, 2932897, B * 3,  -B * 5};
  wd_buf_t ref = {0};
  char text[WD_SCALAR_TEXT_MAX];
  for (size_t i = 0; i < sizeof(DAYS) / sizeof(DAYS[0]); i++) {
    wd_value_t v = {0};
    v.i = DAYS[i];
    wd_buf_reset(&ref);
    cr_assert_eq(ref_format(t, &v, &ref), 0);
    size_t n = wd_scalar_text(t, &v, text);
    cr_expect(n == ref.len && memcmp(text, ref.data, n) == 0, "days %" PRId64 ": '%.*s' vs the reference '%s'", DAYS[i],
              (int)n, text, (const char *)ref.data);
  }
  wd_buf_free(&ref);
  wd_type_destroy(t);
}
