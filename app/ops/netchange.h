/*
 * app/ops/netchange.h — the net change of a sequence of changelog rows, per key: the row before the
 * first change and the row after the last, as +I / -D / -U+U, nothing when they are equal (Paimon's
 * incremental query between two snapshots, "what changed between version A and version B").
 * Also the difference between two whole tables sorted by primary key (the automatic rebuild's
 * output, app/ops/fingerprint.h).
 *
 * Folding per key, in the order rows were added: the first row gives the "before" image (an -U or
 * -D carries it; a +I says the key was absent; a +U with no -U before it says the key existed
 * with an unknown image), the last row the "after" image (+I/+U: the row; -D: absent).
 *
 * Ownership: a wd_netchange_t copies every row added and frees them on destroy.
 * Thread: one thread per object.
 */
#ifndef WD_NETCHANGE_H
#define WD_NETCHANGE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/types.h"

typedef struct wd_netchange wd_netchange_t;

/* A new, empty fold for rows of schema (borrowed; must outlive it). NULL on no memory. */
wd_netchange_t *wd_netchange_new(const wd_schema_t *schema);
void wd_netchange_destroy(wd_netchange_t *nc);

/* Adds one changelog row (borrowed; copied, with its kind). 0, or -1 on no memory. */
int wd_netchange_add(wd_netchange_t *nc, const wd_row_t *row);

/* Called per emitted row (borrowed for the call; row->kind is +I, -U, +U or -D). Non-zero stops. */
typedef int (*wd_netchange_cb)(void *ctx, const wd_row_t *row);

/* Emits the net change of every key, keys in encoded-key byte order (an -U is followed by its
 * +U). Errors: E_NOMEM; WD_ERR_INTERNAL "E_STOPPED" when cb stopped. */
wd_error_t *wd_netchange_emit(wd_netchange_t *nc, wd_netchange_cb cb, void *ctx);

/* Whether rows a and b hold equal values in every column (wd_value_eq). */
bool wd_row_same(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b);

/* The difference that turns table old[0..nold) into new[0..nnew) (both sorted by primary key with
 * wd_value_cmp per key column, as wd_state_rows_sorted gives): -D for a key only in old, +I for a
 * key only in new, -U (old row) then +U (new row) for a key whose row differs; cb gets rows whose
 * kind has been set (the arrays are not changed otherwise: the rows' kinds are restored).
 * Counts (may be NULL) get the number of deletes, inserts and updates.
 * Errors: "E_STOPPED" when cb stopped. */
wd_error_t *wd_table_diff(const wd_schema_t *schema, wd_row_t *const *old, size_t nold, wd_row_t *const *new_,
                          size_t nnew, wd_netchange_cb cb, void *ctx, size_t *deletes, size_t *inserts,
                          size_t *updates);

#endif
