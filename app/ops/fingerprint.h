/*
 * app/ops/fingerprint.h — the table definition's fingerprint, its stored copy, the item-by-item
 * difference and the automatic rebuild.
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
 * rebuild (exactly-once only): the rebuild is armed here and runs as a runtime mode of `widen run`
 * (app/runtime/rebuild.h, docs/runtime.md "Rebuild as a runtime mode"): a fresh state directory takes the
 * old one's place (the old state is kept as "<state.dir>.before-rebuild" until the next rebuild),
 * holding the new definition, the old one (meta "rebuild/old-definition") and the old state's
 * instance id and commit number; then, in the poll loop, each task this process owns is rebuilt
 * from the sources' earliest offsets up to the group's committed offsets without output, its old
 * rows (read with the old definition, projected onto the new columns by name) are compared with
 * the rebuilt ones key by key, and only the difference goes to sink.topic (-D, +I, -U/+U) in one
 * coordinator commit of mode "rebuild" with the task's switch. A crash before the first rename
 * leaves the old state in place (armed again at the next start); a crash between the two renames
 * is completed at the next start.
 *
 * Thread: the caller's.
 */
#ifndef WD_FINGERPRINT_H
#define WD_FINGERPRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "app/config/config.h"
#include "common/buf.h"
#include "common/error.h"
#include "join/store.h"

/* Appends the definition of cfg as a JSON object (items in a fixed order) to out. 0 or -1 (no
 * memory). */
int wd_definition_json(const wd_config_t *cfg, wd_buf_t *out);

/* The fingerprint of a definition JSON text (the deciding items only). Returns 0 on a text that
 * does not parse. */
uint64_t wd_definition_fingerprint(const char *json, size_t len);

/* One differing item. */
typedef struct wd_definition_change {
  char *item; /* "source payments column paid_at" */
  char *was, *now; /* NULL when absent on that side */
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
 * arms the rebuild (see above). *rebuilt (may be NULL) says whether a rebuild was armed.
 * Errors: WD_ERR_CONFIG "C_STATE_DEFINITION" (fail: the message names each differing item, was
 * and now; rebuild under at-least-once, or over a state with a commit left prepared by a crash);
 * "E_REBUILD" (a rename or the directory failed, naming the paths); E_STORE_* errors. */
wd_error_t *wd_definition_prepare(const wd_config_t *cfg, const char *dir, bool *rebuilt);

/* wd_definition_prepare that keeps the state's store open for the run, so that a start opens it
 * once. keep (may be NULL: as wd_definition_prepare): on entry *keep is the store of dir already
 * opened with so (wd_state_dir_check_open), or NULL to open it here with so (may be NULL:
 * defaults); either way the call owns it from then on. On return NULL without a rebuild armed,
 * *keep is the opened store of dir (the caller's: wd_pipeline_opts_t.store, or wd_store_close);
 * after an armed rebuild or an error *keep is NULL and the store is closed (a rebuild replaces
 * the directory). Errors: as wd_definition_prepare. */
wd_error_t *wd_definition_prepare_open(const wd_config_t *cfg, const char *dir, const wd_store_options_t *so,
                                       bool *rebuilt, wd_store_t **keep);

/* Meta keys of a state whose rebuild is armed (app/runtime/rebuild.h): the old definition (JSON), the
 * state directory before the change, and the old state's base column count (when it had one). */
#define WD_REBUILD_OLD_DEF_KEY "rebuild/old-definition"
#define WD_REBUILD_OLD_STATE_KEY "rebuild/old-state"
#define WD_REBUILD_OLD_BASE_KEY "rebuild/old-base-ncols"
/* The fingerprint of the definition the rebuild was armed for: the switch marks hold it. A later
 * compatible change (a nullable column appended) updates WD_DEFINITION_FP_KEY but not this, so the
 * tasks already switched stay current (a state armed before this key: WD_DEFINITION_FP_KEY). */
#define WD_REBUILD_FP_KEY "rebuild/fingerprint"
/* Per-partition tasks: the definitions of earlier rebuilds, JSON {"<mark>": {"definition": text,
 * "base": n}}: a task whose restored mark is one of them holds that definition's rows (it was
 * switched by that rebuild, not yet by this one); a task with no mark holds the old definition's. */
#define WD_REBUILD_DEFS_KEY "rebuild/definitions"
/* ... and "1" when the state before the change was itself rebuilding (a second change) */
#define WD_REBUILD_CHAINED_KEY "rebuild/chained"
/* The meta key of the definition's fingerprint (16 hex digits). */
#define WD_DEFINITION_FP_KEY "table/fingerprint"

/* The table (columns, primary key, options) of a stored definition JSON text: *out owned by the
 * caller (wd_table_destroy). Errors: E_STATE_CORRUPT (the text does not parse), the table
 * config's C_... errors, E_NOMEM. */
struct wd_table;
wd_error_t *wd_definition_table(const char *text, size_t len, struct wd_table **out);

/* Records cfg's definition and fingerprint in the open store st (a fresh state of a replay).
 * Errors: E_STORE_WRITE, E_NOMEM. */
struct wd_store;
wd_error_t *wd_definition_record(const wd_config_t *cfg, struct wd_store *st);

#endif
