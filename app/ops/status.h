/*
 * app/ops/status.h — the probes, the status document and the status page of a running pipeline,
 * served beside /metrics by the metrics listener (app/ops/metrics.h wd_metrics_set_route;
 * docs/operations.md "Probes and the status page"):
 *
 *   GET /livez    200 while the pipeline's loop turned within the last WD_STATUS_LIVE_S seconds
 *                 (a loop stuck in a call that never returns fails it), else 503
 *   GET /readyz   200 while the last published snapshot says ready (every task this process owns is
 *                 RUNNING and each of its partitions is within WD_STATUS_READY_LAG records of its end
 *                 offset; no assignment is being initialised, no restore or rebuild runs) and that
 *                 snapshot is younger than WD_STATUS_LIVE_S; else 503 with the reason
 *   GET /status   the last published snapshot (JSON, application/json), with its age
 *   GET /         the status page (one self-contained HTML file compiled into the binary, app/ops/
 *                 status_page.html) that reads /status every second
 *
 * Thread-safety: the pipeline's thread beats and publishes; the server's thread answers. The loop's
 * live structures are never read by the server: the pipeline publishes a finished document (a copy
 * under the unit's mutex) and the beat is an atomic.
 * Ownership: the unit owns the published document.
 */
#ifndef WD_STATUS_H
#define WD_STATUS_H

#include <stdbool.h>

#include "app/ops/metrics.h"
#include "common/buf.h"

/* /livez fails once the loop has not turned for this long (seconds). The loop's longest waits are
 * bounded well below it (a poll, a commit's producer flush and a schema registry's retry each
 * wait at most a few seconds per turn). */
#define WD_STATUS_LIVE_S 60.0
/* /readyz: "caught up" is every owned partition at most this many records behind its end offset. */
#define WD_STATUS_READY_LAG 10000

typedef struct wd_status wd_status_t;

/* A new unit: not ready ("starting"), its beat at now. NULL on no memory. */
wd_status_t *wd_status_new(void);
/* Frees it; accepts NULL. The server must be stopped first (wd_metrics_destroy). */
void wd_status_destroy(wd_status_t *s);

/* The loop turned (pipeline thread; cheap: an atomic store of the monotonic clock). */
void wd_status_beat(wd_status_t *s);

/* Publishes a snapshot (pipeline thread): json (a complete JSON object; copied), whether the
 * process is ready and, when not, why (copied; NULL: no reason). 0, or -1 on no memory (the
 * previous snapshot stays). */
int wd_status_publish(wd_status_t *s, const char *json, bool ready, const char *why_not);

/* The router for wd_metrics_set_route (ctx: the unit): /livez, /readyz, /status, / and
 * /index.html; 0 for any other path. Server thread. */
unsigned wd_status_route(void *ctx, const char *path, wd_buf_t *body, const char **content_type);

#endif
