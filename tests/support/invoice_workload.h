/*
 * tests/support/invoice_workload.h — the invoice / payment / reconciliation / customer workload of
 * README "Joins on other keys" for the join tests: a seeded random sequence of CDC events over the
 * four normalized tables (inserts, updates that change payment_id, customer_id and
 * reconciliation_id to existing, missing or NULL keys, deletes, of every table in random order),
 * the SQL join of the final tables computed by SQLite, and a checker that replays a changelog per
 * key. Shared by tests/unit/test_lookup.c and tests/integration/test_lookup_pipeline.c.
 */
#ifndef WD_TEST_INVOICE_WORKLOAD_H
#define WD_TEST_INVOICE_WORKLOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum { WL_INVOICE = 0, WL_PAYMENT, WL_RECON, WL_CUSTOMER, WL_TABLES };
extern const char *const wl_table_names[WL_TABLES]; /* "invoice", "payment", ... */

/* One CDC event: its table, Debezium op ('c','u','d'), row images in the table's own field names
 * (invoice {id, payment_id, customer_id, amount}, payment {id, reconciliation_id, status},
 * reconciliation {id, status}, customer {id, name}; owned, NULL when absent) and lsn (its index,
 * increasing). */
typedef struct {
  int table;
  char op;
  json_t *before, *after;
  int64_t lsn;
} wl_event_t;

typedef struct {
  wl_event_t *ev;
  size_t n;
  json_t *final[WL_TABLES]; /* the final source tables: objects id (as text) -> row image */
} wl_workload_t;

/* n events over keys 1..keys (payments, reconciliations, customers: 1..keys/3+1), seed. */
void wl_generate(wl_workload_t *w, size_t n, int keys, uint64_t seed);
void wl_free(wl_workload_t *w);

/* The wide table of the final source tables by SQLite: a JSON array of rows with the wide columns
 * (invoice_id, payment_id, customer_id, amount, reconciliation_id, pay_status, recon_status,
 * customer_name) ordered by invoice_id; payment INNER when pay_inner, else LEFT; reconciliation
 * and customer LEFT. */
json_t *wl_sql_join(const wl_workload_t *w, bool pay_inner);

/* Replays changelog (a JSON array of {"op","row"}) per key column keycol: returns NULL and the
 * final table in *table (sorted by the integer key), or a malloc'd description of the first change
 * a consumer cannot explain (a -U that is not the current row, an +I or +U of a present key, a
 * -D of an absent key or not equal to the current row). */
char *wl_replay(json_t *changelog, const char *keycol, json_t **table);

/* Whether two row arrays are equal (wd_test_json_same per row); on a difference *why (malloc'd). */
bool wl_rows_equal(json_t *got, json_t *want, char **why);

#endif
