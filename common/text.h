/*
 * common/text.h — small text helpers shared by the config loader and the table validation.
 */
#ifndef WD_TEXT_H
#define WD_TEXT_H

#include <stddef.h>

/* Levenshtein distance of a and b (ASCII case-insensitive), capped at 99 for strings longer than
 * 63 bytes. */
size_t wd_edit_distance(const char *a, const char *b);

/* The candidate of cands[0..n) closest to word when it is close enough to be a likely typo (at
 * most 1 edit for words up to 4 characters, 2 up to 8, 3 above), else NULL. Borrowed from cands. */
const char *wd_closest(const char *word, const char *const *cands, size_t n);

#endif
