/*
 * common/log.h — leveled logging to stderr: wd_log(WD_LOG_WARN, "ingest", "fmt", ...).
 * Level from wd_log_set_level() (default INFO). Thread-safe (one fprintf per line).
 */
#ifndef WD_LOG_H
#define WD_LOG_H

typedef enum { WD_LOG_ERROR = 0, WD_LOG_WARN, WD_LOG_INFO, WD_LOG_DEBUG } wd_log_level_t;

extern int wd_log_level;
void wd_log_set_level(wd_log_level_t level);
void wd_log_write(wd_log_level_t level, const char *module, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define wd_log(level, module, ...)                                                                                     \
  do {                                                                                                                 \
    if ((int)(level) <= wd_log_level) wd_log_write((level), (module), __VA_ARGS__);                                    \
  } while (0)

#endif
