/*
 * common/ratelog.h — a rate-limited logger for repeated errors: one line per distinct key the
 * first time it is seen, then at most one line per key every interval seconds, saying how many of
 * that key were not logged since its last line. Every occurrence is counted; the counts by error
 * id are printable on a status line ("E_TYPE 3, E_DECODE 1").
 *
 * The key is (source, error id, field): the pipeline logs its dead letters through it, so a bad
 * record of another source, or of another field, is logged even when one kind of error floods.
 *
 * Ownership: a wd_ratelog_t is a value owned by its holder; wd_ratelog_free releases what it holds.
 * Thread: one thread uses a given wd_ratelog_t (no locking).
 */
#ifndef WD_RATELOG_H
#define WD_RATELOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/log.h"

typedef struct wd_ratelog_entry {
  char *source, *id, *field; /* owned */
  uint64_t count; /* occurrences in all */
  uint64_t unlogged; /* occurrences since its last line that were not logged */
  double last; /* time of its last line (caller's clock, seconds) */
} wd_ratelog_entry_t;

typedef struct wd_ratelog {
  double interval; /* seconds between two lines of one key (0: every occurrence) */
  size_t max_keys; /* distinct keys remembered (0: 1024); later new keys share one entry */
  wd_ratelog_entry_t *v; /* owned */
  size_t n, cap;
  uint64_t total; /* occurrences in all */
} wd_ratelog_t;

/* Notes one occurrence of (source, id, field) (each may be NULL: ""), at time now (seconds, any
 * monotonic clock), and logs message at level under module when the key is new or its last line
 * is at least interval old; such a line ends with "(N more of these since the last line, not
 * logged)" when N > 0, and with "(more of these: one line every I s at most)" on the key's first
 * line (of the same source, error id and field). Returns 1 when it logged, 0 when it only counted.
 * Out of memory: the occurrence is logged (never lost from stderr) and counted in total only. */
int wd_ratelog_note(wd_ratelog_t *rl, double now, wd_log_level_t level, const char *module, const char *source,
                    const char *id, const char *field, const char *message);

/* Appends the counts by error id, most frequent first: "E_TYPE 3, E_DECODE 1" ("" when none).
 * 0, or -1 when out of memory (out is then partly written). */
int wd_ratelog_put_counts(const wd_ratelog_t *rl, wd_buf_t *out);

/* The field a widen error message names: the text between quotes after "column '" (the wide
 * column of an E_TYPE, E_NO_KEY ... error), copied into buf (size bytes, truncated); "" when the
 * message names none. Returns buf. */
const char *wd_ratelog_field_of(const char *message, char *buf, size_t size);

/* Releases the entries; rl is empty (and reusable) afterwards. */
void wd_ratelog_free(wd_ratelog_t *rl);

#endif
