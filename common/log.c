#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int wd_log_level = WD_LOG_INFO;

void wd_log_set_level(wd_log_level_t level) { wd_log_level = (int)level; }

void wd_log_write(wd_log_level_t level, const char *module, const char *fmt, ...) {
  static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  char line[2048];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n =
      snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [%s] ", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L, names[level], module);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(line)) vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}
