/*
 * app/ops/metrics.c — the metrics registry, its text exposition and the libmicrohttpd server (see
 * metrics.h).
 */
#include "app/ops/metrics.h"

#include <math.h>
#include <stdio.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WD_METRIC_MAX_LABELS 4

typedef struct wd_series {
  char *lv[WD_METRIC_MAX_LABELS];
  double value; /* counter / gauge; histogram: sum */
  uint64_t count; /* histogram */
  uint64_t *bucket; /* histogram: per bucket (not cumulative) */
} wd_series_t;

struct wd_metric {
  wd_metrics_t *reg;
  char *name, *help;
  wd_metric_type_t type;
  size_t nlabels;
  char *labels[WD_METRIC_MAX_LABELS];
  double *buckets;
  size_t nbuckets;
  wd_series_t *series;
  size_t n, cap;
};

struct wd_metrics {
  pthread_mutex_t mu;
  wd_metric_t **fam;
  size_t n, cap;
  struct MHD_Daemon *d;
  wd_metrics_route_fn route; /* the other paths (wd_metrics_set_route), or NULL */
  void *route_ctx;
  char addr[300]; /* "host:port" served ("" before wd_metrics_serve) */
};

wd_metrics_t *wd_metrics_new(void) {
  wd_metrics_t *m = calloc(1, sizeof(*m));
  if (m && pthread_mutex_init(&m->mu, NULL)) {
    free(m);
    return NULL;
  }
  return m;
}

static void family_free(wd_metric_t *f) {
  if (!f) return;
  for (size_t i = 0; i < f->n; i++) {
    for (size_t k = 0; k < f->nlabels; k++) free(f->series[i].lv[k]);
    free(f->series[i].bucket);
  }
  for (size_t k = 0; k < f->nlabels; k++) free(f->labels[k]);
  free(f->series);
  free(f->buckets);
  free(f->name);
  free(f->help);
  free(f);
}

void wd_metrics_destroy(wd_metrics_t *m) {
  if (!m) return;
  if (m->d) MHD_stop_daemon(m->d); /* joins the server thread: no render runs after this */
  for (size_t i = 0; i < m->n; i++) family_free(m->fam[i]);
  free(m->fam);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

wd_metric_t *wd_metrics_family(wd_metrics_t *m, const char *name, const char *help, wd_metric_type_t type,
                               size_t nlabels, const char *const *label_names, const double *buckets, size_t nbuckets) {
  if (!m || !name || !help || nlabels > WD_METRIC_MAX_LABELS || (nlabels && !label_names)) return NULL;
  wd_metric_t *f = NULL;
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->fam[i]->name, name)) {
      f = m->fam[i];
      goto done;
    }
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    wd_metric_t **fam = realloc(m->fam, cap * sizeof(*fam));
    if (!fam) goto done;
    m->fam = fam;
    m->cap = cap;
  }
  if (!(f = calloc(1, sizeof(*f)))) goto done;
  f->reg = m;
  f->type = type;
  f->nlabels = nlabels;
  bool ok = (f->name = strdup(name)) && (f->help = strdup(help));
  for (size_t k = 0; ok && k < nlabels; k++) ok = !!(f->labels[k] = strdup(label_names[k]));
  if (ok && type == WD_METRIC_HISTOGRAM && nbuckets) {
    ok = !!(f->buckets = malloc(nbuckets * sizeof(double)));
    if (ok) memcpy(f->buckets, buckets, nbuckets * sizeof(double));
    f->nbuckets = nbuckets;
  }
  if (!ok) {
    family_free(f);
    f = NULL;
    goto done;
  }
  m->fam[m->n++] = f;
done:
  pthread_mutex_unlock(&m->mu);
  return f;
}

/* The series of lv in f, created when new; NULL on no memory. Called with the lock held. */
static wd_series_t *series_of(wd_metric_t *f, const char *const *lv) {
  for (size_t i = 0; i < f->n; i++) {
    size_t k = 0;
    while (k < f->nlabels && !strcmp(f->series[i].lv[k], lv[k] ? lv[k] : "")) k++;
    if (k == f->nlabels) return &f->series[i];
  }
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 8;
    wd_series_t *s = realloc(f->series, cap * sizeof(*s));
    if (!s) return NULL;
    f->series = s;
    f->cap = cap;
  }
  wd_series_t *s = &f->series[f->n];
  memset(s, 0, sizeof(*s));
  bool ok = true;
  for (size_t k = 0; ok && k < f->nlabels; k++) ok = !!(s->lv[k] = strdup(lv[k] ? lv[k] : ""));
  if (ok && f->type == WD_METRIC_HISTOGRAM) ok = !!(s->bucket = calloc(f->nbuckets + 1, sizeof(uint64_t)));
  if (!ok) {
    for (size_t k = 0; k < f->nlabels; k++) free(s->lv[k]);
    free(s->bucket);
    return NULL;
  }
  f->n++;
  return s;
}

static void update(wd_metric_t *f, const char *const *lv, double v, int how) {
  if (!f) return;
  pthread_mutex_lock(&f->reg->mu);
  wd_series_t *s = series_of(f, lv);
  if (s) {
    if (how == 0) {
      s->value += v;
    } else if (how == 1) {
      s->value = v;
    } else {
      size_t b = 0;
      while (b < f->nbuckets && v > f->buckets[b]) b++;
      s->bucket[b]++;
      s->count++;
      s->value += v;
    }
  }
  pthread_mutex_unlock(&f->reg->mu);
}

void wd_metric_add(wd_metric_t *f, const char *const *lv, double v) { update(f, lv, v, 0); }
void wd_metric_set(wd_metric_t *f, const char *const *lv, double v) { update(f, lv, v, 1); }
void wd_metric_observe(wd_metric_t *f, const char *const *lv, double v) { update(f, lv, v, 2); }

void wd_metric_set_all(wd_metric_t *f, size_t n, const char *const *lvs, const double *values) {
  if (!f) return;
  pthread_mutex_lock(&f->reg->mu);
  for (size_t i = 0; i < f->n; i++) { /* drop every series, then add the given ones */
    for (size_t k = 0; k < f->nlabels; k++) free(f->series[i].lv[k]);
    free(f->series[i].bucket);
  }
  f->n = 0;
  for (size_t i = 0; i < n; i++) {
    wd_series_t *s = series_of(f, lvs + i * f->nlabels);
    if (s) s->value = values[i];
  }
  pthread_mutex_unlock(&f->reg->mu);
}

/* A label value escaped as the exposition format wants (\\, \", \n). */
static int put_label_value(wd_buf_t *out, const char *v) {
  int rc = 0;
  for (; *v && !rc; v++) {
    if (*v == '\\' || *v == '"') rc = wd_buf_putc(out, '\\') || wd_buf_putc(out, (uint8_t)*v);
    else if (*v == '\n') rc = wd_buf_printf(out, "\\n") < 0;
    else rc = wd_buf_putc(out, (uint8_t)*v);
  }
  return rc ? -1 : 0;
}

static int put_number(wd_buf_t *out, double v) {
  if (isnan(v)) return wd_buf_printf(out, "NaN");
  if (isinf(v)) return wd_buf_printf(out, v > 0 ? "+Inf" : "-Inf");
  if (v == floor(v) && fabs(v) < 1e15) return wd_buf_printf(out, "%.0f", v);
  return wd_buf_printf(out, "%.17g", v);
}

/* name{labels[,le="x"]} */
static int put_series_name(wd_buf_t *out, const wd_metric_t *f, const wd_series_t *s, const char *suffix,
                           const char *le) {
  int rc = wd_buf_printf(out, "%s%s", f->name, suffix) < 0;
  if (f->nlabels || le) {
    rc |= wd_buf_putc(out, '{');
    for (size_t k = 0; k < f->nlabels; k++) {
      rc |= wd_buf_printf(out, "%s%s=\"", k ? "," : "", f->labels[k]) < 0;
      rc |= put_label_value(out, s->lv[k]);
      rc |= wd_buf_putc(out, '"');
    }
    if (le) rc |= wd_buf_printf(out, "%sle=\"%s\"", f->nlabels ? "," : "", le) < 0;
    rc |= wd_buf_putc(out, '}');
  }
  return rc ? -1 : 0;
}

int wd_metrics_render(wd_metrics_t *m, wd_buf_t *out) {
  int rc = 0;
  static const char *const types[] = {"counter", "gauge", "histogram"};
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n && !rc; i++) {
    const wd_metric_t *f = m->fam[i];
    rc |= wd_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, types[f->type]) < 0;
    for (size_t j = 0; j < f->n && !rc; j++) {
      const wd_series_t *s = &f->series[j];
      if (f->type != WD_METRIC_HISTOGRAM) {
        rc |= put_series_name(out, f, s, "", NULL);
        rc |= wd_buf_putc(out, ' ');
        rc |= put_number(out, s->value) < 0;
        rc |= wd_buf_putc(out, '\n');
        continue;
      }
      uint64_t cum = 0;
      for (size_t b = 0; b <= f->nbuckets; b++) {
        char le[64];
        if (b < f->nbuckets) snprintf(le, sizeof(le), "%g", f->buckets[b]);
        else snprintf(le, sizeof(le), "+Inf");
        cum += s->bucket[b];
        rc |= put_series_name(out, f, s, "_bucket", le);
        rc |= wd_buf_printf(out, " %llu\n", (unsigned long long)cum) < 0;
      }
      rc |= put_series_name(out, f, s, "_sum", NULL);
      rc |= wd_buf_putc(out, ' ');
      rc |= put_number(out, s->value) < 0;
      rc |= wd_buf_putc(out, '\n');
      rc |= put_series_name(out, f, s, "_count", NULL);
      rc |= wd_buf_printf(out, " %llu\n", (unsigned long long)s->count) < 0;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return rc ? -1 : 0;
}

/* The request handler (server thread). */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **req) {
  (void)version;
  (void)upload;
  (void)upload_size;
  (void)req;
  wd_metrics_t *m = cls;
  wd_buf_t body = {0};
  unsigned status = MHD_HTTP_OK;
  const char *ctype = NULL;
  if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
    wd_buf_printf(&body, "only GET\n");
  } else if (strcmp(url, "/metrics")) {
    status = m->route ? m->route(m->route_ctx, url, &body, &ctype) : 0;
    if (!status) {
      status = MHD_HTTP_NOT_FOUND;
      wd_buf_reset(&body);
      wd_buf_printf(&body, m->route ? "not found: widen serves /, /status, /livez, /readyz and /metrics\n"
                                    : "not found: widen serves /metrics\n");
    }
  } else if (wd_metrics_render(m, &body)) {
    status = MHD_HTTP_INTERNAL_SERVER_ERROR;
  } else {
    ctype = "text/plain; version=0.0.4; charset=utf-8";
  }
  struct MHD_Response *r =
      MHD_create_response_from_buffer(body.len, body.len ? body.data : (void *)"", MHD_RESPMEM_MUST_COPY);
  wd_buf_free(&body);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", ctype ? ctype : "text/plain; charset=utf-8");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

void wd_metrics_set_route(wd_metrics_t *m, wd_metrics_route_fn fn, void *ctx) {
  m->route = fn;
  m->route_ctx = ctx;
}

wd_error_t *wd_metrics_serve(wd_metrics_t *m, const char *listen, int *port) {
  char host[256];
  const char *colon = listen ? strrchr(listen, ':') : NULL, *portstr = colon ? colon + 1 : listen;
  /* least exposure: a port alone ("9464" or ":9464") is served on the loopback address only */
  bool port_only =
      listen && (!colon || colon == listen) && *portstr && strspn(portstr, "0123456789") == strlen(portstr);
  if (!port_only && (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host) || !colon[1]))
    return wd_error_new(WD_ERR_CONFIG, C_METRICS_LISTEN,
                        "metrics.listen '%s': give a port (served on 127.0.0.1) or host:port, e.g. 9464 or "
                        "0.0.0.0:9464",
                        listen ? listen : "");
  if (port_only) {
    snprintf(host, sizeof(host), "127.0.0.1");
  } else {
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
  }
  if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:9464 */
    memmove(host, host + 1, strlen(host));
    host[strlen(host) - 1] = 0;
  }
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gai = getaddrinfo(host, portstr, &hints, &ai);
  if (gai || !ai)
    return wd_error_new(WD_ERR_CONFIG, C_METRICS_LISTEN, "metrics.listen '%s': %s", listen,
                        gai ? gai_strerror(gai) : "no address");
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  m->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!m->d)
    return wd_error_new(WD_ERR_IO, E_METRICS_LISTEN, "cannot serve metrics on %s (port in use?); change metrics.listen",
                        listen);
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
  int bound = di ? (int)di->port : 0;
  if (port) *port = bound;
  snprintf(m->addr, sizeof(m->addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, bound);
  return NULL;
}

const char *wd_metrics_address(const wd_metrics_t *m) { return m->addr; }
