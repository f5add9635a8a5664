/*
 * tests/support/registry_standin.c — a STAND-IN schema registry for tests (see the header: a few
 * endpoints only, not a real registry). No real registry can be run from what these machines
 * reach (Apicurio Registry's modules are only partly served by the Maven Central these
 * machines reach, see docs/schema-registry-standin.md), so the tests talk to this; the client is
 * the same libcurl code that talks to a real one. tests/unit/test_registry_standin.c checks its
 * answers against the Confluent API's documented responses.
 */
#include "tests/support/registry_standin.h"

#include <avro.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WD_STANDIN_MAX 256

struct wd_standin {
  struct MHD_Daemon *d;
  char url[64];
  char *user, *password;
  pthread_mutex_t mu;
  int fail_next;
  int32_t fail_id; /* GET /schemas/ids/<fail_id> answers 503 while not 0 */
  int failed_id; /* ... how many times it did */
  int requests;
  size_t n;
  int32_t ids[WD_STANDIN_MAX];
  char *schemas[WD_STANDIN_MAX];
  char *subjects[WD_STANDIN_MAX]; /* subject that registered it last, or NULL */
  int32_t next_id;
  /* the versions of subjects, in registration order: subject vsubj[k] version vver[k] is the
   * schema at index vidx[k] */
  size_t nv;
  char *vsubj[WD_STANDIN_MAX];
  int vver[WD_STANDIN_MAX];
  size_t vidx[WD_STANDIN_MAX];
};

/* The documented errors of the Confluent API (Schema Registry API reference, "Errors"). */
#define WD_SUBJECT_NOT_FOUND "{\"error_code\":40401,\"message\":\"Subject not found.\"}"
#define WD_VERSION_NOT_FOUND "{\"error_code\":40402,\"message\":\"Version not found.\"}"
#define WD_SCHEMA_NOT_FOUND "{\"error_code\":40403,\"message\":\"Schema not found\"}"
#define WD_INVALID_VERSION                                                                                             \
  "{\"error_code\":42202,\"message\":\"The specified version is not a valid version id. "                              \
  "Allowed values are between [1, 2^31-1] and the string \\\"latest\\\"\"}"

typedef struct {
  char *body;
  size_t len;
} wd_upload_t;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/vnd.schemaregistry.v1+json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  (void)version;
  wd_standin_t *s = cls;
  wd_upload_t *u = *con_cls;
  if (!u) {
    u = calloc(1, sizeof(*u));
    *con_cls = u;
    return MHD_YES;
  }
  if (*upload_size) {
    u->body = realloc(u->body, u->len + *upload_size + 1);
    memcpy(u->body + u->len, upload, *upload_size);
    u->len += *upload_size;
    u->body[u->len] = 0;
    *upload_size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&s->mu);
  s->requests++;
  enum MHD_Result ret;
  char *out = NULL;
  if (s->fail_next > 0) {
    s->fail_next--;
    ret = reply(c, 503, "{\"error_code\":50301,\"message\":\"stand-in: unavailable (injected)\"}");
    goto done;
  }
  if (s->user) {
    char *pass = NULL;
    char *user = MHD_basic_auth_get_username_password(c, &pass);
    bool ok = user && pass && !strcmp(user, s->user) && !strcmp(pass, s->password);
    MHD_free(user);
    MHD_free(pass);
    if (!ok) {
      ret = reply(c, 401, "{\"error_code\":401,\"message\":\"Unauthorized\"}");
      goto done;
    }
  }
  int id;
  char subject[256];
  if (!strcmp(method, "GET") && sscanf(url, "/schemas/ids/%d", &id) == 1 && s->fail_id && id == s->fail_id) {
    s->failed_id++;
    ret = reply(c, 503, "{\"error_code\":50301,\"message\":\"stand-in: unavailable for this id (injected)\"}");
    goto done;
  }
  if (!strcmp(method, "GET") && sscanf(url, "/schemas/ids/%d", &id) == 1) {
    for (size_t i = 0; i < s->n; i++)
      if (s->ids[i] == id) {
        json_t *j = json_pack("{s:s}", "schema", s->schemas[i]);
        out = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        ret = reply(c, 200, out);
        goto done;
      }
    ret = reply(c, 404, WD_SCHEMA_NOT_FOUND);
    goto done;
  }
  size_t ul = strlen(url);
  if (!strcmp(method, "GET") && (!strcmp(url, "/subjects") || !strcmp(url, "/subjects/"))) {
    json_t *a = json_array();
    for (size_t k = 0; k < s->nv; k++) {
      bool seen = false;
      for (size_t q = 0; q < k; q++) seen |= !strcmp(s->vsubj[q], s->vsubj[k]);
      if (!seen) json_array_append_new(a, json_string(s->vsubj[k]));
    }
    out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    ret = reply(c, 200, out);
    goto done;
  }
  /* GET /subjects/{subject}/versions and /subjects/{subject}/versions/{version|latest} */
  const char *vs = !strcmp(method, "GET") && !strncmp(url, "/subjects/", 10) ? strstr(url + 10, "/versions") : NULL;
  if (vs && (vs[9] == 0 || vs[9] == '/') && (size_t)(vs - url - 10) < sizeof(subject)) {
    snprintf(subject, sizeof(subject), "%.*s", (int)(vs - url - 10), url + 10);
    int latest = 0;
    for (size_t k = 0; k < s->nv; k++)
      if (!strcmp(s->vsubj[k], subject) && s->vver[k] > latest) latest = s->vver[k];
    if (!latest) {
      ret = reply(c, 404, WD_SUBJECT_NOT_FOUND);
      goto done;
    }
    if (vs[9] == 0) {
      json_t *a = json_array();
      for (size_t k = 0; k < s->nv; k++)
        if (!strcmp(s->vsubj[k], subject)) json_array_append_new(a, json_integer(s->vver[k]));
      out = json_dumps(a, JSON_COMPACT);
      json_decref(a);
      ret = reply(c, 200, out);
      goto done;
    }
    const char *vtext = vs + 10;
    char *end = NULL;
    long v = !strcmp(vtext, "latest") ? latest : strtol(vtext, &end, 10);
    if (end && (end == vtext || *end || v < 1 || v > INT32_MAX)) {
      ret = reply(c, 422, WD_INVALID_VERSION);
      goto done;
    }
    for (size_t k = 0; k < s->nv; k++)
      if (!strcmp(s->vsubj[k], subject) && s->vver[k] == v) {
        json_t *j = json_pack("{s:s,s:i,s:i,s:s}", "subject", subject, "id", (int)s->ids[s->vidx[k]], "version", (int)v,
                              "schema", s->schemas[s->vidx[k]]);
        out = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        ret = reply(c, 200, out);
        goto done;
      }
    ret = reply(c, 404, WD_VERSION_NOT_FOUND);
    goto done;
  }
  if (!strcmp(method, "POST") && !strncmp(url, "/subjects/", 10) && ul > 19 && ul - 19 < sizeof(subject) &&
      !strcmp(url + ul - 9, "/versions")) {
    snprintf(subject, sizeof(subject), "%.*s", (int)(ul - 19), url + 10);
    json_t *j = u->body ? json_loads(u->body, 0, NULL) : NULL;
    const char *schema = j ? json_string_value(json_object_get(j, "schema")) : NULL;
    /* an Avro schema (the default schemaType): what avro-c cannot parse is 42201 */
    avro_schema_t parsed = NULL;
    if (!schema || avro_schema_from_json_length(schema, strlen(schema), &parsed)) {
      json_decref(j);
      ret = reply(c, 422, "{\"error_code\":42201,\"message\":\"Invalid schema\"}");
      goto done;
    }
    avro_schema_decref(parsed);
    size_t i;
    for (i = 0; i < s->n; i++)
      if (!strcmp(s->schemas[i], schema)) break;
    if (i == s->n && s->n < WD_STANDIN_MAX) {
      s->ids[i] = ++s->next_id;
      s->schemas[i] = strdup(schema);
      s->n++;
    }
    if (i < s->n) {
      free(s->subjects[i]);
      s->subjects[i] = strdup(subject);
      /* a new version of the subject unless this schema is already one of its versions */
      int last = 0;
      bool have = false;
      for (size_t k = 0; k < s->nv; k++)
        if (!strcmp(s->vsubj[k], subject)) {
          have |= s->vidx[k] == i;
          if (s->vver[k] > last) last = s->vver[k];
        }
      if (!have && s->nv < WD_STANDIN_MAX) {
        s->vsubj[s->nv] = strdup(subject);
        s->vver[s->nv] = last + 1;
        s->vidx[s->nv] = i;
        s->nv++;
      }
    }
    json_decref(j);
    char buf[64];
    snprintf(buf, sizeof(buf), "{\"id\":%d}", i < s->n ? (int)s->ids[i] : -1);
    ret = reply(c, 200, buf);
    goto done;
  }
  ret = reply(c, 404, "{\"error_code\":404,\"message\":\"stand-in: endpoint not implemented\"}");
done:
  pthread_mutex_unlock(&s->mu);
  free(out);
  return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  wd_upload_t *u = *con_cls;
  if (u) {
    free(u->body);
    free(u);
  }
  *con_cls = NULL;
}

wd_standin_t *wd_standin_start(const char *user, const char *password) {
  wd_standin_t *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  pthread_mutex_init(&s->mu, NULL);
  if (user) {
    s->user = strdup(user);
    s->password = strdup(password ? password : "");
  }
  s->next_id = 100;
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, s,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_END);
  if (!s->d) {
    wd_standin_stop(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", info ? (unsigned)info->port : 0u);
  return s;
}

void wd_standin_stop(wd_standin_t *s) {
  if (!s) return;
  if (s->d) MHD_stop_daemon(s->d);
  for (size_t i = 0; i < s->n; i++) {
    free(s->schemas[i]);
    free(s->subjects[i]);
  }
  for (size_t k = 0; k < s->nv; k++) free(s->vsubj[k]);
  free(s->user);
  free(s->password);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

const char *wd_standin_url(const wd_standin_t *s) { return s->url; }

void wd_standin_put(wd_standin_t *s, int32_t id, const char *json) {
  pthread_mutex_lock(&s->mu);
  if (s->n < WD_STANDIN_MAX) {
    s->ids[s->n] = id;
    s->schemas[s->n] = strdup(json);
    s->n++;
  }
  pthread_mutex_unlock(&s->mu);
}

void wd_standin_fail_next(wd_standin_t *s, int n) {
  pthread_mutex_lock(&s->mu);
  s->fail_next = n;
  pthread_mutex_unlock(&s->mu);
}

void wd_standin_fail_id(wd_standin_t *s, int32_t id) {
  pthread_mutex_lock(&s->mu);
  s->fail_id = id;
  pthread_mutex_unlock(&s->mu);
}

int wd_standin_failed_id(wd_standin_t *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->failed_id;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int wd_standin_requests(wd_standin_t *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->requests;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int wd_standin_subject_schema(wd_standin_t *s, const char *subject, char *out, size_t cap) {
  int r = -1;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->n; i++)
    if (s->subjects[i] && !strcmp(s->subjects[i], subject)) {
      snprintf(out, cap, "%s", s->schemas[i]);
      r = 0;
    }
  pthread_mutex_unlock(&s->mu);
  return r;
}
