/*
 * app/ops/metrics.h — Prometheus metrics: a registry of counter, gauge and histogram families with
 * labels, rendered in the text exposition format (version 0.0.4: # HELP / # TYPE lines, then one
 * `name{label="value",...} number` line per series; histograms as _bucket{le=...} cumulative
 * counts, _sum and _count), and an HTTP server (libmicrohttpd, its own thread) answering
 * GET /metrics with it (metrics.listen, off by default).
 *
 * Thread-safety: the pipeline thread updates, the server thread renders; every function that
 * takes the registry locks its mutex, so any thread may call any of them.
 * Ownership: the registry owns its families and series (names, help texts and label values are
 * copied); a wd_metric_t is borrowed from the registry and valid until wd_metrics_destroy.
 */
#ifndef WD_METRICS_H
#define WD_METRICS_H

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

typedef struct wd_metrics wd_metrics_t;
typedef struct wd_metric wd_metric_t;

typedef enum wd_metric_type { WD_METRIC_COUNTER, WD_METRIC_GAUGE, WD_METRIC_HISTOGRAM } wd_metric_type_t;

/* A new, empty registry; NULL on no memory. */
wd_metrics_t *wd_metrics_new(void);
/* Stops the server (if any) and frees everything; accepts NULL. */
void wd_metrics_destroy(wd_metrics_t *m);

/* Registers a family: name (Prometheus metric name, e.g. "widen_records_in_total"), help text,
 * type, nlabels label names (at most 4), and for a histogram its bucket upper bounds
 * buckets[0..nbuckets) in increasing order (+Inf is implied). Returns the family (the existing one
 * when name is registered already), or NULL on no memory or bad arguments. */
wd_metric_t *wd_metrics_family(wd_metrics_t *m, const char *name, const char *help, wd_metric_type_t type,
                               size_t nlabels, const char *const *label_names, const double *buckets, size_t nbuckets);

/* Counter/gauge: adds v to the series of the label values lv[0..nlabels) (created at 0 on first
 * use). Gauge: sets it. Histogram: observes v. NULL families are ignored (metrics off), and so is
 * a series that cannot be allocated. */
void wd_metric_add(wd_metric_t *f, const char *const *lv, double v);
void wd_metric_set(wd_metric_t *f, const char *const *lv, double v);
void wd_metric_observe(wd_metric_t *f, const char *const *lv, double v);

/* Gauge: replaces every series of f with the n given ones at once (lvs[i*nlabels ..] the label
 * values of series i, values[i] its value): series not given are removed from the exposition (the
 * lag of partitions revoked from this process). NULL families are ignored; on no memory the series
 * that could not be allocated are left out. */
void wd_metric_set_all(wd_metric_t *f, size_t n, const char *const *lvs, const double *values);

/* Other paths of the server (the probes, /status and the status page: app/ops/status.h): fn is called
 * on the server's thread for every GET/HEAD of a path other than /metrics, with the path (borrowed
 * for the call); it appends the answer to body, may set *content_type (a static string; default
 * text/plain) and returns the HTTP status, 0 for "not mine" (404). Set it before wd_metrics_serve
 * (the server thread reads it unlocked); NULL: only /metrics is served. ctx is borrowed and must
 * outlive the server (wd_metrics_destroy stops it first). */
typedef unsigned (*wd_metrics_route_fn)(void *ctx, const char *path, wd_buf_t *body, const char **content_type);
void wd_metrics_set_route(wd_metrics_t *m, wd_metrics_route_fn fn, void *ctx);

/* Appends the text exposition of every family to out. 0, or -1 on no memory. */
int wd_metrics_render(wd_metrics_t *m, wd_buf_t *out);

/* Starts the HTTP server on listen ("host:port"; host a name or address, port 0 picks a free
 * one; a port alone, "9464" or ":9464", is served on 127.0.0.1 only: least exposure, as
 * Prometheus exporters that bind the loopback unless told otherwise): GET /metrics answers 200 with the exposition (Content-Type text/plain; version=0.0.4),
 * anything else 404. *port (may be NULL) gets the bound port.
 * Errors: WD_ERR_CONFIG "C_METRICS_LISTEN" for an address that does not parse or resolve;
 * WD_ERR_IO "E_METRICS_LISTEN" when the server cannot start (port in use), naming the address. */
wd_error_t *wd_metrics_serve(wd_metrics_t *m, const char *listen, int *port);

/* "host:port" (host as resolved, port as bound) that wd_metrics_serve serves, "" before;
 * borrowed from m. */
const char *wd_metrics_address(const wd_metrics_t *m);

#endif
