/*
 * tests/unit/test_registry_standin.c — the schema-registry stand-in (tests/support/registry_standin.h)
 * against the Confluent Schema Registry API's documented responses, since no real registry can run
 * here: the answer shapes of /subjects, /subjects/{s}/versions[/{v}], /schemas/ids/{id}
 * and POST /subjects/{s}/versions, the ids (one id per schema text across subjects, versions per
 * subject counted from 1), and the error codes 40401 (subject not found), 40402 (version not
 * found), 40403 (schema not found), 42201 (invalid schema) and 42202 (invalid version), each with
 * its HTTP status (404 / 422). Then widen's own client (ingest/schema_registry.h) on the same
 * answers: 40403 is E_SCHEMA_NOT_FOUND, 42201 is C_REGISTRY_REJECTED with the registry's text.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <string.h>

#include "ingest/schema_registry.h"
#include "tests/support/registry_standin.h"

static size_t collect(char *p, size_t size, size_t n, void *ud) {
  json_t **body = ud;
  json_error_t e;
  json_t *j = json_loadb(p, size * n, JSON_DECODE_ANY, &e);
  cr_assert_not_null(j, "the answer is not JSON: %.*s", (int)(size * n), p);
  json_decref(*body);
  *body = j;
  return size * n;
}

/* One request; returns the HTTP status, *body the JSON answer (caller decrefs). */
static long call(const wd_standin_t *s, const char *method, const char *path, const char *send, json_t **body) {
  CURL *c = curl_easy_init();
  char url[512];
  snprintf(url, sizeof(url), "%s%s", wd_standin_url(s), path);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/vnd.schemaregistry.v1+json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (send) curl_easy_setopt(c, CURLOPT_POSTFIELDS, send);
  *body = NULL;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  cr_assert_eq(curl_easy_perform(c), CURLE_OK, "%s %s", method, path);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  cr_assert_not_null(*body, "%s %s: no body", method, path);
  return status;
}

/* POST /subjects/{subject}/versions with schema; the status, *id the id (when 200). */
static long reg(const wd_standin_t *s, const char *subject, const char *schema, json_int_t *id) {
  char path[256];
  snprintf(path, sizeof(path), "/subjects/%s/versions", subject);
  json_t *req = json_pack("{s:s}", "schema", schema), *body;
  char *text = json_dumps(req, JSON_COMPACT);
  long st = call(s, "POST", path, text, &body);
  *id = json_integer_value(json_object_get(body, "id"));
  free(text);
  json_decref(req);
  json_decref(body);
  return st;
}

/* Expects status and the documented error_code (with a message) in the answer to GET path. */
static void expect_error(const wd_standin_t *s, const char *path, long status, json_int_t code) {
  json_t *body;
  long st = call(s, "GET", path, NULL, &body);
  cr_expect_eq(st, status, "GET %s: HTTP %ld", path, st);
  cr_expect_eq(json_integer_value(json_object_get(body, "error_code")), code, "GET %s: error_code", path);
  cr_expect(json_is_string(json_object_get(body, "message")), "GET %s: a message", path);
  json_decref(body);
}

static const char *const V1 =
    "{\"type\":\"record\",\"name\":\"Value\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}";
static const char *const V2 = "{\"type\":\"record\",\"name\":\"Value\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
                              "{\"name\":\"n\",\"type\":[\"null\",\"string\"],\"default\":null}]}";

Test(registry_standin, subjects_versions_and_ids_as_documented) {
  wd_standin_t *s = wd_standin_start(NULL, NULL);
  cr_assert_not_null(s);
  json_t *body;
  cr_expect_eq(call(s, "GET", "/subjects", NULL, &body), 200);
  cr_expect(json_is_array(body) && json_array_size(body) == 0, "no subjects yet");
  json_decref(body);

  json_int_t id1, id2, id1b, id1c;
  cr_assert_eq(reg(s, "orders-value", V1, &id1), 200);
  cr_assert_eq(reg(s, "orders-value", V2, &id2), 200);
  cr_assert_eq(reg(s, "orders-value", V1, &id1b), 200); /* already registered: same id, no new version */
  cr_assert_eq(reg(s, "other-value", V1, &id1c), 200); /* another subject: the same id */
  cr_expect_neq(id1, id2);
  cr_expect_eq(id1b, id1);
  cr_expect_eq(id1c, id1);

  cr_expect_eq(call(s, "GET", "/subjects", NULL, &body), 200);
  cr_expect_eq(json_array_size(body), 2);
  cr_expect_str_eq(json_string_value(json_array_get(body, 0)), "orders-value");
  cr_expect_str_eq(json_string_value(json_array_get(body, 1)), "other-value");
  json_decref(body);

  cr_expect_eq(call(s, "GET", "/subjects/orders-value/versions", NULL, &body), 200);
  cr_expect_eq(json_array_size(body), 2, "versions 1 and 2");
  cr_expect_eq(json_integer_value(json_array_get(body, 0)), 1);
  cr_expect_eq(json_integer_value(json_array_get(body, 1)), 2);
  json_decref(body);

  /* GET /subjects/{s}/versions/{v}: subject, id, version, schema */
  const char *const paths[] = {"/subjects/orders-value/versions/1", "/subjects/orders-value/versions/latest",
                               "/subjects/other-value/versions/1"};
  const json_int_t ids[] = {id1, id2, id1}, vers[] = {1, 2, 1};
  const char *const schemas[] = {V1, V2, V1};
  for (int i = 0; i < 3; i++) {
    cr_expect_eq(call(s, "GET", paths[i], NULL, &body), 200, "%s", paths[i]);
    cr_expect_str_eq(json_string_value(json_object_get(body, "subject")), i == 2 ? "other-value" : "orders-value");
    cr_expect_eq(json_integer_value(json_object_get(body, "id")), ids[i], "%s: id", paths[i]);
    cr_expect_eq(json_integer_value(json_object_get(body, "version")), vers[i], "%s: version", paths[i]);
    cr_expect_str_eq(json_string_value(json_object_get(body, "schema")), schemas[i], "%s: schema", paths[i]);
    json_decref(body);
  }

  /* GET /schemas/ids/{id}: the schema text as registered */
  char path[64];
  snprintf(path, sizeof(path), "/schemas/ids/%lld", (long long)id2);
  cr_expect_eq(call(s, "GET", path, NULL, &body), 200);
  cr_expect_str_eq(json_string_value(json_object_get(body, "schema")), V2);
  json_decref(body);

  /* the documented errors */
  expect_error(s, "/subjects/nope/versions", 404, 40401);
  expect_error(s, "/subjects/nope/versions/1", 404, 40401);
  expect_error(s, "/subjects/orders-value/versions/3", 404, 40402);
  expect_error(s, "/schemas/ids/999999", 404, 40403);
  expect_error(s, "/subjects/orders-value/versions/0", 422, 42202);
  expect_error(s, "/subjects/orders-value/versions/x", 422, 42202);
  json_int_t bad;
  const char *const invalid[] = {"not json", "{\"type\":\"record\",\"name\":\"R\"}", "{\"type\":\"nosuchtype\"}"};
  for (int i = 0; i < 3; i++) {
    char p2[64];
    snprintf(p2, sizeof(p2), "/subjects/orders-value/versions");
    json_t *req = json_pack("{s:s}", "schema", invalid[i]);
    char *text = json_dumps(req, JSON_COMPACT);
    cr_expect_eq(call(s, "POST", p2, text, &body), 422, "invalid schema %d", i);
    cr_expect_eq(json_integer_value(json_object_get(body, "error_code")), 42201, "invalid schema %d", i);
    json_decref(body);
    free(text);
    json_decref(req);
  }
  (void)bad;
  /* nothing of the refused schemas was registered */
  cr_expect_eq(call(s, "GET", "/subjects/orders-value/versions", NULL, &body), 200);
  cr_expect_eq(json_array_size(body), 2);
  json_decref(body);
  wd_standin_stop(s);
}

Test(registry_standin, widen_client_reads_the_documented_errors) {
  wd_standin_t *s = wd_standin_start(NULL, NULL);
  cr_assert_not_null(s);
  wd_registry_conf_t rc = {wd_standin_url(s), NULL, NULL, 5000};
  wd_registry_t *reg = NULL;
  cr_assert_null(wd_registry_new(&rc, &reg));
  const char *json = NULL;
  wd_error_t *err = wd_registry_get_schema(reg, 4242, &json);
  cr_assert_not_null(err, "40403 is an error");
  cr_expect_str_eq(err->id, "E_SCHEMA_NOT_FOUND", "%s", err->message);
  wd_error_destroy(err);
  int32_t id = 0;
  err = wd_registry_register(reg, "t-value", "{\"type\":\"nosuchtype\"}", &id);
  cr_assert_not_null(err, "42201 is an error");
  cr_expect_str_eq(err->id, "C_REGISTRY_REJECTED", "%s", err->message);
  cr_expect(strstr(err->message, "Invalid schema") != NULL, "the registry's own text: %s", err->message);
  wd_error_destroy(err);
  cr_assert_null(wd_registry_register(reg, "t-value", V1, &id));
  cr_expect_gt(id, 0);
  cr_assert_null(wd_registry_get_schema(reg, id, &json));
  cr_expect_str_eq(json, V1);
  wd_registry_destroy(reg);
  wd_standin_stop(s);
}
