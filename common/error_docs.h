/*
 * common/error_docs.h — for users: what each stable error id (common/error_ids.h) means and what
 * to do about it. `widen config doc --errors` prints the table; docs/operations.md carries it
 * (tests/unit/test_error_docs.c checks that every id is documented and the page is current).
 */
#ifndef WD_ERROR_DOCS_H
#define WD_ERROR_DOCS_H

#include <stdio.h>

#include "common/error_ids.h"

typedef struct wd_error_doc {
  const char *id; /* "E_DECODE" */
  const char *meaning; /* what happened, and what widen does (dead-letters, retries, stops) */
  const char *action; /* what the operator does about it */
} wd_error_doc_t;

/* The entry of id (static storage), or NULL when id has none. */
const wd_error_doc_t *wd_error_doc(const char *id);

/* Writes the Markdown tables of every id of common/error_ids.h, in its order, configuration ids
 * first (an id without an entry is printed "(undocumented)"). 0, or -1 when f fails. */
int wd_error_docs_write(FILE *f);

#endif
