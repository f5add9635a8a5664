/*
 * app/runtime/fault.h — the runtime's one fault hook (tests and the chaos runs; docs/exactly-once.md
 * "Fault points"). The environment variable WIDEN_FAULT names one point of the runtime where the
 * process is killed (SIGKILL) or, for the commit's points, where the producer raises a fatal error:
 *
 *   WIDEN_FAULT=[fatal-]<point>[:<n>[+]]
 *
 * <point>: a commit point (before-begin, during-produce, after-prepare, during-commit, after-commit,
 * after-finalize; app/runtime/commit.c) or a rebuild point (rebuild-after-stage,
 * rebuild-during-sources, rebuild-during-switch, rebuild-after-commit; app/runtime/rebuild.c).
 * <n> (default 1): the n-th time the point is reached; "+": that time and every time after.
 * "fatal-": the producer turns fatal there (the collector's wd_collector_inject_fatal) instead of
 * a kill (commit points only).
 *
 * A wd_fault_t is plain data, filled once from the environment by its owner (the commit
 * coordinator, the rebuild) and counted by that owner alone. Thread: its owner's.
 */
#ifndef WD_FAULT_H
#define WD_FAULT_H

#include <stdbool.h>

typedef struct wd_fault {
  char point[32]; /* "" : not armed */
  long left; /* reaches 0 at the n-th time */
  bool fatal; /* fatal-<point>: a fatal producer error instead of a kill */
  bool repeat; /* <n>+: every time from the n-th on */
} wd_fault_t;

/* Parses spec (the syntax above; NULL or "" arms nothing) into *f. A point name longer than 31
 * characters arms nothing. */
void wd_fault_parse(wd_fault_t *f, const char *spec);

/* wd_fault_parse of the environment's WIDEN_FAULT. */
void wd_fault_from_env(wd_fault_t *f);

/* Whether the armed point is `point` and it is reached for the n-th time now (counts one reach). */
bool wd_fault_due(wd_fault_t *f, const char *point);

/* Logs "fault hook: killing the process at <point> (<what>)" under `unit`, flushes every stream and
 * kills the process with SIGKILL. what may be NULL. Does not return. */
void wd_fault_kill(const char *unit, const char *point, const char *what);

#endif
