/*
 * bench/bench_util.h — small helpers shared by the benchmarks: clocks, CPU time, peak RSS,
 * percentiles, directory size. Header-only (static functions).
 */
#ifndef WD_BENCH_UTIL_H
#define WD_BENCH_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h" /* wd_mono_s, wd_wall_ms */

/* CPU seconds (user + system) of this process, all threads. */
static inline double bench_cpu_self(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds of the calling thread only. */
static inline double bench_cpu_thread(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline long bench_peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n) (sorted in place); 0 when n == 0. */
static inline double bench_quantile(double *v, size_t n, double q) {
  if (!n) return 0;
  qsort(v, n, sizeof(*v), bench_cmp_double);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* Bytes of regular files under dir (recursive). */
static inline uint64_t bench_dir_bytes(const char *dir) {
  uint64_t total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  char path[4352];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    struct stat st;
    if (lstat(path, &st)) continue;
    if (S_ISDIR(st.st_mode)) total += bench_dir_bytes(path);
    else if (S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
  }
  closedir(d);
  return total;
}

static inline void bench_rm_rf(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "bench: %s failed\n", cmd);
}

#endif
