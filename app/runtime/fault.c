/*
 * app/runtime/fault.c — the runtime's fault hook (app/runtime/fault.h).
 */
#include "app/runtime/fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

void wd_fault_parse(wd_fault_t *f, const char *spec) {
  memset(f, 0, sizeof(*f));
  if (!spec || !*spec) return;
  const char *colon = strchr(spec, ':');
  bool fatal = false;
  if (!strncmp(spec, "fatal-", 6)) {
    fatal = true;
    spec += 6;
  }
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  if (len >= sizeof(f->point)) return;
  memcpy(f->point, spec, len);
  f->point[len] = 0;
  f->fatal = fatal;
  char *end = NULL;
  f->left = colon ? strtol(colon + 1, &end, 10) : 1;
  if (f->left < 1) f->left = 1;
  f->repeat = end && *end == '+';
}

void wd_fault_from_env(wd_fault_t *f) { wd_fault_parse(f, getenv("WIDEN_FAULT")); }

bool wd_fault_due(wd_fault_t *f, const char *point) {
  if (!f->point[0] || strcmp(f->point, point) != 0) return false;
  return --f->left == 0 || (f->repeat && f->left < 0);
}

void wd_fault_kill(const char *unit, const char *point, const char *what) {
  wd_log(WD_LOG_WARN, unit, "fault hook: killing the process at %s%s%s%s", point, what ? " (" : "", what ? what : "",
         what ? ")" : "");
  fflush(NULL);
  raise(SIGKILL);
}
