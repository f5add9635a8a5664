/*
 * tests/fuzz/fuzz_config.c — the YAML config loader (app/config/config.c, libyaml) and what
 * `widen config check` builds from a loaded config: the table (app/config/table_config.c), every source
 * and the join (app/config/join_config.c), and the interleaving warnings; fuzz.h. The input is the
 * file's bytes, given to wd_config_load as /proc/self/fd/N of a memfd (no file written). Seeds:
 * the configs/ YAML files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/config/interleaving.h"
#include "app/config/join_config.h"
#include "app/config/table_config.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_config(const uint8_t *data, size_t size) {
  int fd = memfd_create("widen-fuzz.yaml", MFD_CLOEXEC);
  if (fd < 0) wd_fuzz_fail("config", "memfd_create failed");
  if (size && write(fd, data, size) != (ssize_t)size) wd_fuzz_fail("config", "write to the memfd failed");
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

  wd_config_t *cfg = NULL;
  wd_table_t *t = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  if (err && cfg) wd_fuzz_fail("config", "a config returned with an error");
  if (!err) err = wd_config_build_table(cfg, &t);
  if (!err) {
    wd_source_t **srcs = calloc(cfg->sources.n + 1, sizeof(*srcs));
    int *ids = calloc(cfg->sources.n + 1, sizeof(*ids));
    wd_join_t *join = NULL;
    err = srcs && ids ? wd_config_build_join(cfg, t, srcs, ids, &join) : wd_error_nomem();
    if (err && join) wd_fuzz_fail("config", "a join returned with an error");
    wd_join_destroy(join);
    for (size_t i = 0; srcs && i < cfg->sources.n; i++) wd_source_destroy(srcs[i]);
    free(srcs);
    free(ids);
  }
  if (!err) {
    char **warn = NULL;
    wd_interleaving_warnings(cfg, &warn);
    wd_interleaving_free(warn);
  }
  if (err && (!err->message || !err->message[0])) wd_fuzz_fail("config", "an error without a message");
  wd_error_destroy(err);
  wd_table_destroy(t);
  wd_config_destroy(cfg);
  close(fd);
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_config(data, size); }
#endif
