/*
 * app/ops/state_dir.c — see state_dir.h.
 */
#include "app/ops/state_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "join/store.h"

wd_error_t *wd_state_dir_check(const wd_config_t *cfg, const char *dir) {
  return wd_state_dir_check_open(cfg, dir, NULL, NULL);
}

wd_error_t *wd_state_dir_check_open(const wd_config_t *cfg, const char *dir, const wd_store_options_t *so,
                                    wd_store_t **keep) {
  if (keep) *keep = NULL;
  if (!dir) dir = cfg->state.dir;
  struct stat sb;
  if (!dir || stat(dir, &sb) != 0) return NULL; /* nothing there yet */
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, so, &st);
  if (!err) {
    if (keep) *keep = st; /* the caller's */
    else wd_store_close(st);
    return NULL;
  }
  if (strcmp(err->id, "E_STATE_CORRUPT") != 0 || cfg->state.on_corruption != WD_CONFIG_CORRUPTION_REBUILD) return err;
  char aside[4096], stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
  snprintf(aside, sizeof(aside), "%s.corrupt-%s", dir, stamp);
  for (int i = 1; stat(aside, &sb) == 0 && i < 100; i++)
    snprintf(aside, sizeof(aside), "%s.corrupt-%s-%d", dir, stamp, i);
  if (rename(dir, aside) != 0) {
    wd_error_t *e2 = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT,
                                  "%s; state.on-corruption: rebuild could not move it to %s: %s (move it yourself)",
                                  err->message, aside, strerror(errno));
    wd_error_destroy(err);
    return e2;
  }
  wd_log(WD_LOG_WARN, "state",
         "%s -- state.on-corruption: rebuild: moved %s to %s; the tasks are rebuilt as those of a lost state "
         "directory (from the state changelog topic, else from the sources without output)",
         err->message, dir, aside);
  wd_error_destroy(err);
  return NULL;
}

bool wd_state_disk_short(void) {
  wd_store_disk_refresh();
  return wd_store_disk_short();
}

int64_t wd_state_disk_free_bytes(void) {
  wd_store_disk_refresh();
  return wd_store_disk_free_bytes();
}
