/*
 * tests/unit/test_produce_avro.c — `widen produce --format debezium-avro`'s converter
 * (app/cli/produce_avro.h) through the registry stand-in (tests/support/registry_standin.h):
 * the schemas inferred from a topic's first event are registered under <topic>-value/-key, the
 * messages are in the wire format with those ids, and read back with avro-c under the registered
 * schema they give the event's values (a later event's integer in a double field as a double, a
 * missing member as null); a member the first event did not have is an error naming it.
 */
#include <avro.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli/produce_avro.h"
#include "ingest/schema_registry.h"
#include "tests/support/registry_standin.h"

static const char *const EV1 =
    "{\"before\":null,\"after\":{\"id\":1,\"name\":\"a\",\"price\":1.5,\"tags\":[\"x\",\"y\"]},"
    "\"source\":{\"ts_ms\":5,\"db\":\"shop\"},\"op\":\"c\",\"ts_ms\":7}";
static const char *const EV2 =
    "{\"before\":{\"id\":1,\"name\":\"a\",\"price\":1.5,\"tags\":[\"x\"]},\"after\":{\"id\":1,\"price\":2,\"tags\":[]},"
    "\"source\":{\"ts_ms\":6,\"db\":\"shop\"},\"op\":\"u\",\"ts_ms\":8}";

static int32_t wire_id(const char *b) {
  const uint8_t *h = (const uint8_t *)b;
  return (int32_t)(((uint32_t)h[1] << 24) | ((uint32_t)h[2] << 16) | ((uint32_t)h[3] << 8) | h[4]);
}

/* The value's Avro datum under the schema registered under subject (caller decrefs both). */
static void read_back(wd_standin_t *srv, const char *subject, const char *buf, size_t len, avro_schema_t *s,
                      avro_value_iface_t **iface, avro_value_t *v) {
  char schema[8192];
  cr_assert_eq(wd_standin_subject_schema(srv, subject, schema, sizeof(schema)), 0, "nothing under %s", subject);
  cr_assert_eq(avro_schema_from_json_length(schema, strlen(schema), s), 0);
  *iface = avro_generic_class_from_schema(*s);
  cr_assert_eq(avro_generic_value_new(*iface, v), 0);
  cr_assert(len > 5 && buf[0] == 0);
  avro_reader_t r = avro_reader_memory(buf + 5, (int64_t)len - 5);
  cr_assert_eq(avro_value_read(r, v), 0, "%s", avro_strerror());
  avro_reader_free(r);
}

static avro_value_t branch_of(avro_value_t *rec, const char *path) {
  char p[256];
  snprintf(p, sizeof(p), "%s", path);
  avro_value_t cur = *rec, f, b;
  for (char *save = NULL, *tok = strtok_r(p, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
    cr_assert_eq(avro_value_get_by_name(&cur, tok, &f, NULL), 0, "no field %s", tok);
    int disc = -1;
    cr_assert_eq(avro_value_get_discriminant(&f, &disc), 0);
    cr_assert_eq(avro_value_get_current_branch(&f, &b), 0);
    cur = b;
  }
  return cur;
}

Test(produce_avro, events_registered_and_read_back) {
  wd_standin_t *srv = wd_standin_start(NULL, NULL);
  cr_assert_not_null(srv);
  wd_produce_avro_t *pa = NULL;
  cr_assert_null(wd_produce_avro_new(wd_standin_url(srv), &pa));
  char *k = NULL, *v = NULL;
  size_t kl = 0, vl = 0;
  const char *key = "{\"id\":1}";
  cr_assert_null(wd_produce_avro_encode(pa, "shop.items", key, strlen(key), EV1, strlen(EV1), &k, &kl, &v, &vl));
  int32_t vid = wire_id(v), kid = wire_id(k);
  cr_expect_neq(vid, kid);
  avro_schema_t s;
  avro_value_iface_t *iface;
  avro_value_t val;
  read_back(srv, "shop.items-value", v, vl, &s, &iface, &val);
  const char *str;
  size_t sl;
  int64_t l;
  double d;
  avro_value_t x = branch_of(&val, "after.name");
  cr_assert_eq(avro_value_get_string(&x, &str, &sl), 0);
  cr_expect_str_eq(str, "a");
  x = branch_of(&val, "after.price");
  avro_value_get_double(&x, &d);
  cr_expect_eq(d, 1.5);
  x = branch_of(&val, "source.ts_ms");
  avro_value_get_long(&x, &l);
  cr_expect_eq(l, 5);
  x = branch_of(&val, "op");
  avro_value_get_string(&x, &str, &sl);
  cr_expect_str_eq(str, "c");
  size_t n = 0;
  x = branch_of(&val, "after.tags");
  avro_value_get_size(&x, &n);
  cr_expect_eq(n, 2);
  avro_value_t before;
  int disc = -1;
  avro_value_get_by_name(&val, "before", &before, NULL);
  avro_value_get_discriminant(&before, &disc);
  cr_expect_eq(disc, 0, "before is null");
  avro_value_decref(&val);
  avro_value_iface_decref(iface);
  avro_schema_decref(s);
  free(k);
  free(v);

  /* the second event: same ids; an integer into the double field, a missing member null */
  cr_assert_null(wd_produce_avro_encode(pa, "shop.items", key, strlen(key), EV2, strlen(EV2), &k, &kl, &v, &vl));
  cr_expect_eq(wire_id(v), vid);
  cr_expect_eq(wire_id(k), kid);
  read_back(srv, "shop.items-value", v, vl, &s, &iface, &val);
  x = branch_of(&val, "after.price");
  avro_value_get_double(&x, &d);
  cr_expect_eq(d, 2.0);
  avro_value_t after, name;
  avro_value_get_by_name(&val, "after", &after, NULL);
  avro_value_get_current_branch(&after, &x);
  avro_value_get_by_name(&x, "name", &name, NULL);
  avro_value_get_discriminant(&name, &disc);
  cr_expect_eq(disc, 0, "a missing member is null");
  avro_value_decref(&val);
  avro_value_iface_decref(iface);
  avro_schema_decref(s);
  free(k);
  free(v);

  /* a tombstone: no value, the key still encoded */
  cr_assert_null(wd_produce_avro_encode(pa, "shop.items", key, strlen(key), NULL, 0, &k, &kl, &v, &vl));
  cr_expect_null(v);
  cr_expect_eq(wire_id(k), kid);
  free(k);

  /* a member the first event did not have */
  const char *bad = "{\"before\":null,\"after\":{\"id\":2,\"colour\":\"red\"},\"op\":\"c\"}";
  wd_error_t *err = wd_produce_avro_encode(pa, "shop.items", NULL, 0, bad, strlen(bad), &k, &kl, &v, &vl);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_PRODUCE_AVRO");
  cr_expect(strstr(err->message, "after.colour") != NULL, "%s", err->message);
  cr_expect_null(v);
  wd_error_destroy(err);
  /* not JSON */
  err = wd_produce_avro_encode(pa, "shop.other", NULL, 0, "nope", 4, &k, &kl, &v, &vl);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_PRODUCE_AVRO");
  wd_error_destroy(err);
  wd_produce_avro_destroy(pa);
  wd_standin_stop(srv);
}
