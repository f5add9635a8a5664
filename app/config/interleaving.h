/*
 * app/config/interleaving.h — which table options make the wide table's rows depend on how the source
 * streams interleave (the order in which records of different topics reach widen). A live run,
 * a replay and another process see the topics interleaved differently; within one partition the
 * order is always the same. Shown as warnings by `widen config check` and at the start of
 * `widen run`, and documented in configs/OPTIONS.md (wd_interleaving_doc).
 *
 * Where it comes from: ../shared/spec/merge-semantics.md §14 (sequence groups commute across
 * streams; removal options and whole-row engines do not).
 */
#ifndef WD_INTERLEAVING_H
#define WD_INTERLEAVING_H

#include <stdio.h>

#include "app/config/config.h"

/* Appends to *out (a NULL-terminated array of new strings, owned by the caller: free each and the
 * array) one warning per option or setting of cfg (borrowed) that makes the result depend on the
 * interleaving of its sources; nothing when the table has one source. Each warning names the
 * option with its config line and says what depends on the order. Returns the number of warnings,
 * or -1 when out of memory (*out is then NULL). */
int wd_interleaving_warnings(const wd_config_t *cfg, char ***out);

/* Frees an array from wd_interleaving_warnings (accepts NULL). */
void wd_interleaving_free(char **warnings);

/* Writes the Markdown section of configs/OPTIONS.md that lists these options. */
void wd_interleaving_doc(FILE *f);

#endif
