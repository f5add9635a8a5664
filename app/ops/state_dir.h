/*
 * app/ops/state_dir.h — the state directory before a run: a corrupt one refused with what to do,
 * or moved aside and rebuilt (state.on-corruption), and the state disk's free bytes for the
 * metrics and readiness (the disk guard itself is the store's: join/store.h min_free_bytes).
 */
#ifndef WD_APP_OPS_STATE_DIR_H
#define WD_APP_OPS_STATE_DIR_H

#include <stdbool.h>
#include <stdint.h>

#include "app/config/config.h"
#include "common/error.h"
#include "join/store.h"

/* Opens the state directory dir (NULL: cfg->state.dir) once and closes it, before anything else
 * reads it. A directory that does not exist is left alone (a first start). When RocksDB finds it
 * corrupt (E_STATE_CORRUPT from the store: a damaged SST, MANIFEST or CURRENT file; the message
 * names the file and what to do): with state.on-corruption: fail (the default) that error is
 * returned; with rebuild the directory is renamed to "<dir>.corrupt-<UTC time>" (a warning names
 * both) and NULL is returned: the run then starts with no state directory, and its tasks are
 * rebuilt as those of a lost directory are (app/runtime/commit.c: restored from the state
 * changelog topic under per-partition tasks, else from the sources' beginning without output up
 * to the group's committed offsets), so nothing is repeated downstream. Errors: E_STATE_CORRUPT,
 * E_STORE_LOCKED, E_STORE_OPEN (the store's, unchanged), "E_STATE_CORRUPT" also when the rename
 * fails (the message says why). */
wd_error_t *wd_state_dir_check(const wd_config_t *cfg, const char *dir);

/* wd_state_dir_check that keeps the store open for the start's next steps, so that a start opens
 * it once: the directory is opened with so (may be NULL: defaults), and when it opens, *keep
 * (not NULL) is that store (the caller's: wd_definition_prepare_open takes it); *keep is NULL when
 * there was no directory, it was moved aside, or on an error. Errors: as wd_state_dir_check. */
wd_error_t *wd_state_dir_check_open(const wd_config_t *cfg, const char *dir, const wd_store_options_t *so,
                                    wd_store_t **keep);

/* Whether the state disk is short: its free bytes, measured now (statvfs), are below
 * state.min-free-bytes (a running pipeline stops with E_STATE_DISK_FULL at its next state write).
 * For readiness (not ready while short). false before the pipeline opened its store. Any thread. */
bool wd_state_disk_short(void);
/* The free bytes of the state directory's filesystem, measured now, or -1 before the pipeline
 * opened its store (the gauge widen_state_disk_free_bytes). Any thread. */
int64_t wd_state_disk_free_bytes(void);

#endif
