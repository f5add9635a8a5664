/*
 * ingest/schema_registry.c — the schema registry client (see schema_registry.h).
 */
#include "ingest/schema_registry.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"

typedef struct {
  int32_t id;
  char *json; /* owned */
} wd_reg_entry_t;

struct wd_registry {
  char *url; /* without a trailing '/' */
  char *username;
  char *password;
  long timeout_ms;
  CURL *curl;
  wd_reg_entry_t *cache;
  size_t ncache, capcache;
  wd_buf_t body;
  uint64_t requests, hits;
};

static pthread_once_t wd_curl_once = PTHREAD_ONCE_INIT;
static void wd_curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

wd_error_t *wd_registry_new(const wd_registry_conf_t *conf, wd_registry_t **out) {
  *out = NULL;
  const char *url = conf ? conf->url : NULL;
  if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
    return wd_error_new(WD_ERR_CONFIG, C_REGISTRY_URL, "schema registry url '%s' is not an http:// or https:// URL",
                        url ? url : "");
  pthread_once(&wd_curl_once, wd_curl_init);
  wd_registry_t *reg = calloc(1, sizeof(*reg));
  if (!reg) return wd_error_nomem();
  reg->url = strdup(url);
  reg->username = conf->username && *conf->username ? strdup(conf->username) : NULL;
  reg->password = strdup(conf->password ? conf->password : "");
  reg->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : 10000;
  reg->curl = curl_easy_init();
  if (!reg->url || !reg->password || (conf->username && *conf->username && !reg->username) || !reg->curl) {
    wd_registry_destroy(reg);
    return wd_error_nomem();
  }
  /* credentials in the URL (http://user:password@host) go to basic auth and out of the URL, which
   * messages and logs print */
  char *host = strstr(reg->url, "://") + 3, *at = strchr(host, '@'), *slash = strchr(host, '/');
  if (at && (!slash || at < slash)) {
    char *colon = memchr(host, ':', (size_t)(at - host));
    if (!reg->username) {
      free(reg->password);
      reg->username = strndup(host, (size_t)((colon ? colon : at) - host));
      reg->password = colon ? strndup(colon + 1, (size_t)(at - colon - 1)) : strdup("");
      if (!reg->username || !reg->password) {
        wd_registry_destroy(reg);
        return wd_error_nomem();
      }
    }
    memmove(host, at + 1, strlen(at + 1) + 1);
  }
  size_t n = strlen(reg->url);
  while (n > 0 && reg->url[n - 1] == '/') reg->url[--n] = 0;
  *out = reg;
  return NULL;
}

void wd_registry_destroy(wd_registry_t *reg) {
  if (!reg) return;
  for (size_t i = 0; i < reg->ncache; i++) free(reg->cache[i].json);
  free(reg->cache);
  if (reg->curl) curl_easy_cleanup(reg->curl);
  wd_buf_free(&reg->body);
  free(reg->url);
  free(reg->username);
  free(reg->password);
  free(reg);
}

long wd_registry_backoff_ms(unsigned attempt) {
  long ms = 100;
  for (unsigned i = 0; i < attempt && ms < 10000; i++) ms *= 2;
  return ms > 10000 ? 10000 : ms;
}

void wd_registry_stats(const wd_registry_t *reg, uint64_t *requests, uint64_t *cache_hits) {
  if (requests) *requests = reg->requests;
  if (cache_hits) *cache_hits = reg->hits;
}

static size_t wd_reg_write(char *ptr, size_t size, size_t nmemb, void *ud) {
  wd_buf_t *b = ud;
  if (wd_buf_append(b, ptr, size * nmemb)) return 0;
  return size * nmemb;
}

/* One request: GET when body is NULL, else POST body. Sets *status; the answer is in reg->body
 * (NUL-terminated). Errors: E_REGISTRY (retriable) when there is no HTTP answer; E_NOMEM. */
static wd_error_t *wd_reg_request(wd_registry_t *reg, const char *url, const char *body, long *status) {
  CURL *c = reg->curl;
  curl_easy_reset(c);
  wd_buf_reset(&reg->body);
  struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/vnd.schemaregistry.v1+json, application/json");
  if (!hdr) return wd_error_nomem();
  if (body) { /* curl_slist_append returns NULL on failure and leaves the list as it was */
    struct curl_slist *more = curl_slist_append(hdr, "Content-Type: application/vnd.schemaregistry.v1+json");
    if (!more) {
      curl_slist_free_all(hdr);
      return wd_error_nomem();
    }
    hdr = more;
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wd_reg_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reg->body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, reg->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, reg->timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (reg->username) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, reg->username);
    curl_easy_setopt(c, CURLOPT_PASSWORD, reg->password);
  }
  if (body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  reg->requests++;
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hdr);
  if (rc == CURLE_WRITE_ERROR || rc == CURLE_OUT_OF_MEMORY) return wd_error_nomem();
  if (rc != CURLE_OK) {
    wd_error_t *err =
        wd_error_new(WD_ERR_IO, E_REGISTRY, "schema registry %s did not answer: %s", url, curl_easy_strerror(rc));
    err->retriable = true;
    return err;
  }
  if (wd_buf_putc(&reg->body, 0)) return wd_error_nomem();
  reg->body.len--;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  return NULL;
}

/* The error of a non-2xx answer (the registry's "message" when it gives one). */
static wd_error_t *wd_reg_status_error(wd_registry_t *reg, const char *what, long status) {
  char text[240] = "";
  json_t *j = json_loadb((const char *)reg->body.data, reg->body.len, 0, NULL);
  const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
  snprintf(text, sizeof(text), "%s", m ? m : (reg->body.len ? (const char *)reg->body.data : ""));
  json_decref(j);
  wd_error_t *err;
  if (status == 401 || status == 403)
    err =
        wd_error_new(WD_ERR_CONFIG, C_REGISTRY_AUTH,
                     "schema registry %s: %s: HTTP %ld (check username and password) %s", reg->url, what, status, text);
  else if (status >= 500 || status == 408 || status == 429 || status < 200) {
    err = wd_error_new(WD_ERR_IO, E_REGISTRY, "schema registry %s: %s: HTTP %ld %s", reg->url, what, status, text);
    err->retriable = true;
  } else
    err = wd_error_new(WD_ERR_CONFIG, C_REGISTRY_REJECTED, "schema registry %s: %s: HTTP %ld %s", reg->url, what,
                       status, text);
  return err;
}

static wd_error_t *wd_reg_bad_answer(wd_registry_t *reg, const char *what) {
  wd_error_t *err = wd_error_new(WD_ERR_IO, E_REGISTRY, "schema registry %s: %s: the answer is not the JSON expected",
                                 reg->url, what);
  err->retriable = true;
  return err;
}

wd_error_t *wd_registry_get_schema(wd_registry_t *reg, int32_t id, const char **json) {
  for (size_t i = 0; i < reg->ncache; i++)
    if (reg->cache[i].id == id) {
      reg->hits++;
      *json = reg->cache[i].json;
      return NULL;
    }
  char url[1100], what[64];
  snprintf(url, sizeof(url), "%s/schemas/ids/%" PRId32, reg->url, id);
  snprintf(what, sizeof(what), "schema id %" PRId32, id);
  long status = 0;
  wd_error_t *err = wd_reg_request(reg, url, NULL, &status);
  if (err) return err;
  if (status == 404)
    return wd_error_new(WD_ERR_DECODE, E_SCHEMA_NOT_FOUND, "schema registry %s has no schema with id %" PRId32,
                        reg->url, id);
  if (status < 200 || status >= 300) return wd_reg_status_error(reg, what, status);
  json_t *j = json_loadb((const char *)reg->body.data, reg->body.len, 0, NULL);
  const char *s = j ? json_string_value(json_object_get(j, "schema")) : NULL;
  if (!s) {
    json_decref(j);
    return wd_reg_bad_answer(reg, what);
  }
  if (reg->ncache == reg->capcache) {
    size_t cap = reg->capcache ? reg->capcache * 2 : 8;
    wd_reg_entry_t *c = realloc(reg->cache, cap * sizeof(*c));
    if (!c) {
      json_decref(j);
      return wd_error_nomem();
    }
    reg->cache = c;
    reg->capcache = cap;
  }
  char *copy = strdup(s);
  json_decref(j);
  if (!copy) return wd_error_nomem();
  reg->cache[reg->ncache].id = id;
  reg->cache[reg->ncache].json = copy;
  reg->ncache++;
  wd_log(WD_LOG_INFO, "registry", "fetched writer schema id %" PRId32 " from %s", id, reg->url);
  *json = copy;
  return NULL;
}

wd_error_t *wd_registry_register(wd_registry_t *reg, const char *subject, const char *schema_json, int32_t *id) {
  char url[1400], what[600];
  /* subjects are topic names plus -key/-value: [A-Za-z0-9._-], nothing to escape */
  char *esc = curl_easy_escape(reg->curl, subject, 0);
  if (!esc) return wd_error_nomem();
  snprintf(url, sizeof(url), "%s/subjects/%s/versions", reg->url, esc);
  curl_free(esc);
  snprintf(what, sizeof(what), "registering subject '%s'", subject);
  json_t *b = json_pack("{s:s}", "schema", schema_json);
  char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
  json_decref(b);
  if (!body) return wd_error_nomem();
  long status = 0;
  wd_error_t *err = wd_reg_request(reg, url, body, &status);
  free(body);
  if (err) return err;
  if (status < 200 || status >= 300) return wd_reg_status_error(reg, what, status);
  json_t *j = json_loadb((const char *)reg->body.data, reg->body.len, 0, NULL);
  json_t *jid = j ? json_object_get(j, "id") : NULL;
  if (!json_is_integer(jid)) {
    json_decref(j);
    return wd_reg_bad_answer(reg, what);
  }
  *id = (int32_t)json_integer_value(jid);
  json_decref(j);
  wd_log(WD_LOG_INFO, "registry", "subject '%s' has schema id %" PRId32, subject, *id);
  return NULL;
}
