/*
 * app/runtime/fingerprint.h — the table definition's fingerprint, its stored copy, the item-by-item
 * difference and the automatic rebuild (issue 13 point 3).
 *
 * The definition is everything of a config that decides the stored rows, as named items:
 *   "column <name>"            its type text, "columns" the names in order, "primary-key",
 *   "table option <key>"       every Paimon table option but the changelog-producer ones,
 *   "source <name> topics|format|column <col>|option <key>"  sources and their mappings;
 * plus items that do not decide the rows (compatible): "sink.topic", "sink.format",
 * "sink.key-format", "sink.dead-letter-topic", "pipeline.batch-size", "pipeline.batch-timeout-ms",
 * "pipeline.status-interval-s", "table option changelog-producer*"; and nullable columns appended at
 * the end with their new source mappings (the row codec reads older rows with NULL there).
 * The fingerprint is XXH3-64 of the deciding items (name=value lines in a fixed order).
 * The state keeps the definition (a JSON object of the items, meta "table/definition") and the
 * fingerprint (hex, meta "table/fingerprint").
 *
 * On start (wd_definition_prepare) with a changed definition widen logs every changed item and
 * whether it is compatible. Compatible changes go on (the stored copy is updated). Incompatible
 * ones follow state.on-incompatible-change: fail (C_STATE_DEFINITION naming the items) or
 * rebuild: the table is rebuilt from the sources' earliest offsets into "<state.dir>.rebuild"
 * (the replay machinery: wd_pipeline with opts.replay, no output), the old and the rebuilt table
 * are compared key by key (old rows read with the old definition, projected onto the new columns
 * by name) and only the difference goes to sink.topic (-D, +I, -U/+U; app/ops/netchange.h), then one
 * commit of mode "rebuild" with those output offsets is recorded in the new state's history, and
 * the directories are switched by rename (the old state is kept as "<state.dir>.old" until the
 * next rebuild). A crash before the switch leaves the old state in place (the rebuild starts
 * over); a crash between the two renames is completed at the next start.
 *
 * Thread: the caller's; the rebuild runs a pipeline on it (blocking, until the end offsets).
 */
#ifndef WD_FINGERPRINT_H
#define WD_FINGERPRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "app/config/config.h"
#include "common/buf.h"
#include "common/error.h"

/* Appends the definition of cfg as a JSON object (items in a fixed order) to out. 0 or -1 (no
 * memory). */
int wd_definition_json(const wd_config_t *cfg, wd_buf_t *out);

/* The fingerprint of a definition JSON text (the deciding items only). Returns 0 on a text that
 * does not parse. */
uint64_t wd_definition_fingerprint(const char *json, size_t len);

/* One differing item. */
typedef struct wd_definition_change {
  char *item;        /* "source payments column paid_at" */
  char *was, *now;   /* NULL when absent on that side */
  bool compatible;
} wd_definition_change_t;

/* The differences between two definition JSON texts (stored, current), in item order:
 * *changes a new array (wd_definition_changes_free) of *n. Errors: E_STATE_CORRUPT when the
 * stored text does not parse; E_NOMEM. */
wd_error_t *wd_definition_diff(const char *was, size_t was_len, const char *now, size_t now_len,
                               wd_definition_change_t **changes, size_t *n);
void wd_definition_changes_free(wd_definition_change_t *c, size_t n);

/* Checks the state directory (cfg's state.dir, or dir when not NULL) against cfg before a run:
 * records the definition in a state without one (new, or made before fingerprints), goes on
 * after compatible changes (logged, the copy updated), and after incompatible ones fails or
 * rebuilds (see above). *rebuilt (may be NULL) says whether a rebuild ran.
 * Errors: WD_ERR_CONFIG "C_STATE_DEFINITION" (fail: the message names each differing item, was
 * and now); for a rebuild: the pipeline's errors, E_SINK_DELIVERY, "E_REBUILD" (a rename or the
 * directory failed, naming the paths); E_STORE_* errors. */
wd_error_t *wd_definition_prepare(const wd_config_t *cfg, const char *dir, bool *rebuilt);

/* Records cfg's definition and fingerprint in the open store st (a fresh state of a replay).
 * Errors: E_STORE_WRITE, E_NOMEM. */
struct wd_store;
wd_error_t *wd_definition_record(const wd_config_t *cfg, struct wd_store *st);

#endif
