/*
 * tests/support/registry_standin.c — a STAND-IN schema registry for tests (see the header: two
 * endpoints only, not a real registry). No real registry could be run from what these machines
 * reach in the time given (Apicurio's Maven artifact is a Quarkus app without its runner), so the
 * tests talk to this; the client is the same libcurl code that talks to a real one.
 */
#include "tests/support/registry_standin.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
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
  int failed_id;   /* ... how many times it did */
  int requests;
  size_t n;
  int32_t ids[WD_STANDIN_MAX];
  char *schemas[WD_STANDIN_MAX];
  char *subjects[WD_STANDIN_MAX]; /* subject that registered it last, or NULL */
  int32_t next_id;
};

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
    ret = reply(c, 404, "{\"error_code\":40403,\"message\":\"Schema not found\"}");
    goto done;
  }
  size_t ul = strlen(url);
  if (!strcmp(method, "POST") && !strncmp(url, "/subjects/", 10) && ul > 19 && ul - 19 < sizeof(subject) &&
      !strcmp(url + ul - 9, "/versions")) {
    snprintf(subject, sizeof(subject), "%.*s", (int)(ul - 19), url + 10);
    json_t *j = u->body ? json_loads(u->body, 0, NULL) : NULL;
    const char *schema = j ? json_string_value(json_object_get(j, "schema")) : NULL;
    json_t *parsed = schema ? json_loads(schema, JSON_DECODE_ANY, NULL) : NULL;
    if (!parsed) {
      json_decref(j);
      ret = reply(c, 422, "{\"error_code\":42201,\"message\":\"Invalid schema\"}");
      goto done;
    }
    json_decref(parsed);
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
