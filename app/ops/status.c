/*
 * app/ops/status.c — the probes, /status and the status page (see status.h).
 */
#include "app/ops/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "status_page.h" /* generated from app/ops/status_page.html: wd_status_page_html */

struct wd_status {
  pthread_mutex_t mu;
  _Atomic int64_t beat_ms; /* monotonic ms of the loop's last turn */
  /* under mu: the last snapshot */
  char *json;
  bool ready;
  char why[512];
  int64_t published_ms; /* monotonic ms of its publication, 0 before */
};

wd_status_t *wd_status_new(void) {
  wd_status_t *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  if (pthread_mutex_init(&s->mu, NULL)) {
    free(s);
    return NULL;
  }
  atomic_store(&s->beat_ms, wd_mono_ms());
  snprintf(s->why, sizeof(s->why), "starting: recovering the state and joining the consumer group");
  return s;
}

void wd_status_destroy(wd_status_t *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free(s->json);
  free(s);
}

void wd_status_beat(wd_status_t *s) {
  if (s) atomic_store(&s->beat_ms, wd_mono_ms());
}

int wd_status_publish(wd_status_t *s, const char *json, bool ready, const char *why_not) {
  if (!s) return 0;
  char *copy = strdup(json);
  if (!copy) return -1;
  pthread_mutex_lock(&s->mu);
  free(s->json);
  s->json = copy;
  s->ready = ready;
  snprintf(s->why, sizeof(s->why), "%s", ready || !why_not ? "" : why_not);
  for (char *c = s->why; *c; c++) /* it goes into /status's JSON as it is */
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '\'';
  s->published_ms = wd_mono_ms();
  pthread_mutex_unlock(&s->mu);
  return 0;
}

unsigned wd_status_route(void *ctx, const char *path, wd_buf_t *body, const char **content_type) {
  wd_status_t *s = ctx;
  int64_t now = wd_mono_ms(), live_ms = (int64_t)(WD_STATUS_LIVE_S * 1000);
  int64_t since = now - atomic_load(&s->beat_ms);
  if (!strcmp(path, "/livez") || !strcmp(path, "/healthz")) {
    bool ok = since <= live_ms;
    wd_buf_printf(body, "%s: the pipeline loop turned %.1f s ago (bound %.0f s)\n", ok ? "ok" : "not live",
                  (double)since / 1000.0, WD_STATUS_LIVE_S);
    return ok ? 200 : 503;
  }
  if (!strcmp(path, "/readyz")) {
    pthread_mutex_lock(&s->mu);
    int64_t age = s->published_ms ? now - s->published_ms : -1;
    bool ready = s->ready && age >= 0 && age <= live_ms && since <= live_ms;
    if (ready) wd_buf_printf(body, "ready\n");
    else if (s->ready)
      wd_buf_printf(body, "not ready: the status was last published %.1f s ago\n", (double)age / 1000.0);
    else wd_buf_printf(body, "not ready: %s\n", s->why);
    pthread_mutex_unlock(&s->mu);
    return ready ? 200 : 503;
  }
  if (!strcmp(path, "/status")) {
    pthread_mutex_lock(&s->mu);
    int64_t age = s->published_ms ? now - s->published_ms : -1;
    if (s->json && s->json[0] == '{' && s->json[1] != '}')
      wd_buf_printf(body, "{\"snapshot_age_ms\":%lld,\"live\":%s,\"ready\":%s,\"not_ready_reason\":\"%s\",%s",
                    (long long)age, since <= live_ms ? "true" : "false", s->ready ? "true" : "false",
                    s->ready ? "" : s->why, s->json + 1);
    else
      wd_buf_printf(body, "{\"snapshot_age_ms\":%lld,\"live\":%s,\"ready\":false,\"not_ready_reason\":\"%s\"}",
                    (long long)age, since <= live_ms ? "true" : "false", s->why);
    pthread_mutex_unlock(&s->mu);
    *content_type = "application/json";
    return 200;
  }
  if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
    wd_buf_append(body, wd_status_page_html, strlen(wd_status_page_html));
    *content_type = "text/html; charset=utf-8";
    return 200;
  }
  return 0;
}
