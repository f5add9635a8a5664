/*
 * tests/support/invoice_workload.c — see invoice_workload.h.
 */
#include "tests/support/invoice_workload.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/json_same.h"

const char *const wl_table_names[WL_TABLES] = {"invoice", "payment", "reconciliation", "customer"};

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int pick(uint64_t *s, int n) { return (int)(next(s) % (uint64_t)n); }

/* A reference to a key of a table with m keys: mostly existing ids, sometimes one past them
 * (never created), sometimes NULL. */
static json_t *ref(uint64_t *s, int m) {
  int r = pick(s, 10);
  if (r == 0) return json_null();
  if (r == 1) return json_integer(m + 1 + pick(s, 2));
  return json_integer(1 + pick(s, m));
}

static json_t *new_row(uint64_t *s, int table, int id, int m) {
  static const char *const st[] = {"open", "paid", "pending", "closed", "failed"};
  switch (table) {
  case WL_INVOICE:
    return json_pack("{s:i,s:o,s:o,s:i}", "id", id, "payment_id", ref(s, m), "customer_id", ref(s, m), "amount",
                     1 + pick(s, 1000));
  case WL_PAYMENT:
    return json_pack("{s:i,s:o,s:s}", "id", id, "reconciliation_id", ref(s, m), "status", st[pick(s, 5)]);
  case WL_RECON: return json_pack("{s:i,s:s}", "id", id, "status", st[pick(s, 5)]);
  default: {
    char name[32];
    snprintf(name, sizeof(name), "cust-%d-%d", id, pick(s, 100));
    return json_pack("{s:i,s:s}", "id", id, "name", name);
  }
  }
}

void wl_generate(wl_workload_t *w, size_t n, int keys, uint64_t seed) {
  memset(w, 0, sizeof(*w));
  uint64_t s = seed * 7919 + 1;
  int m = keys / 3 + 1; /* keys of the lookup tables */
  for (int t = 0; t < WL_TABLES; t++) w->final[t] = json_object();
  w->ev = calloc(n, sizeof(*w->ev));
  for (size_t i = 0; i < n; i++) {
    int table = pick(&s, 10);
    table = table < 4 ? WL_INVOICE : table < 6 ? WL_PAYMENT : table < 8 ? WL_RECON : WL_CUSTOMER;
    int id = 1 + pick(&s, table == WL_INVOICE ? keys : m);
    char ks[24];
    snprintf(ks, sizeof(ks), "%d", id);
    json_t *cur = json_object_get(w->final[table], ks);
    wl_event_t *e = &w->ev[w->n++];
    e->table = table;
    e->lsn = (int64_t)i + 1;
    if (!cur) {
      e->op = 'c';
      e->after = new_row(&s, table, id, m);
    } else if (pick(&s, 10) < 7) {
      e->op = 'u';
      e->before = json_deep_copy(cur);
      e->after = json_deep_copy(cur);
      json_t *fresh = new_row(&s, table, id, m);
      /* change one or two fields: the join keys as often as the rest */
      const char *k;
      json_t *v;
      json_object_foreach(fresh, k, v) {
        if (strcmp(k, "id") && pick(&s, 2)) json_object_set(e->after, k, v);
      }
      json_decref(fresh);
    } else {
      e->op = 'd';
      e->before = json_deep_copy(cur);
    }
    if (e->after) json_object_set(w->final[table], ks, e->after);
    else json_object_del(w->final[table], ks);
  }
}

void wl_free(wl_workload_t *w) {
  for (size_t i = 0; i < w->n; i++) {
    json_decref(w->ev[i].before);
    json_decref(w->ev[i].after);
  }
  free(w->ev);
  for (int t = 0; t < WL_TABLES; t++) json_decref(w->final[t]);
  memset(w, 0, sizeof(*w));
}

static void bind_json(sqlite3_stmt *st, int i, json_t *v) {
  if (!v || json_is_null(v)) sqlite3_bind_null(st, i);
  else if (json_is_integer(v)) sqlite3_bind_int64(st, i, json_integer_value(v));
  else sqlite3_bind_text(st, i, json_string_value(v), -1, SQLITE_TRANSIENT);
}

static json_t *col_json(sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
  case SQLITE_NULL: return json_null();
  case SQLITE_INTEGER: return json_integer(sqlite3_column_int64(st, i));
  default: return json_string((const char *)sqlite3_column_text(st, i));
  }
}

json_t *wl_sql_join(const wl_workload_t *w, bool pay_inner) {
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return NULL;
  static const char *const ddl =
      "CREATE TABLE invoice(id INTEGER PRIMARY KEY, payment_id INTEGER, customer_id INTEGER, amount INTEGER);"
      "CREATE TABLE payment(id INTEGER PRIMARY KEY, reconciliation_id INTEGER, status TEXT);"
      "CREATE TABLE reconciliation(id INTEGER PRIMARY KEY, status TEXT);"
      "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT);";
  static const char *const ins[WL_TABLES] = {"INSERT INTO invoice VALUES(?,?,?,?)", "INSERT INTO payment VALUES(?,?,?)",
                                             "INSERT INTO reconciliation VALUES(?,?)",
                                             "INSERT INTO customer VALUES(?,?)"};
  static const char *const fields[WL_TABLES][4] = {{"id", "payment_id", "customer_id", "amount"},
                                                   {"id", "reconciliation_id", "status", NULL},
                                                   {"id", "status", NULL, NULL},
                                                   {"id", "name", NULL, NULL}};
  json_t *out = NULL;
  if (sqlite3_exec(db, ddl, NULL, NULL, NULL) != SQLITE_OK) goto done;
  for (int t = 0; t < WL_TABLES; t++) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, ins[t], -1, &st, NULL) != SQLITE_OK) goto done;
    const char *k;
    json_t *row;
    json_object_foreach(w->final[t], k, row) {
      for (int f = 0; f < 4 && fields[t][f]; f++) bind_json(st, f + 1, json_object_get(row, fields[t][f]));
      if (sqlite3_step(st) != SQLITE_DONE) {
        sqlite3_finalize(st);
        goto done;
      }
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
  }
  char q[1024];
  snprintf(q, sizeof(q),
           "SELECT i.id, i.payment_id, i.customer_id, i.amount, p.reconciliation_id, p.status, r.status, c.name "
           "FROM invoice i %s JOIN payment p ON p.id = i.payment_id "
           "LEFT JOIN reconciliation r ON r.id = p.reconciliation_id "
           "LEFT JOIN customer c ON c.id = i.customer_id ORDER BY i.id",
           pay_inner ? "" : "LEFT");
  static const char *const wide[] = {"invoice_id",        "payment_id", "customer_id",  "amount",
                                     "reconciliation_id", "pay_status", "recon_status", "customer_name"};
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) goto done;
  out = json_array();
  while (sqlite3_step(st) == SQLITE_ROW) {
    json_t *r = json_object();
    for (int c = 0; c < 8; c++) json_object_set_new(r, wide[c], col_json(st, c));
    json_array_append_new(out, r);
  }
  sqlite3_finalize(st);
done:
  sqlite3_close(db);
  return out;
}

static int by_key(const void *a, const void *b, void *keycol) {
  json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, keycol));
  json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, keycol));
  return x < y ? -1 : x > y;
}

char *wl_replay(json_t *changelog, const char *keycol, json_t **table) {
  json_t *cur = json_object();
  char *why = NULL;
  bool pending_u = false; /* a -U was seen for pend_key: its +U must follow */
  char pend_key[32] = "";
  *table = NULL;
  for (size_t i = 0; i < json_array_size(changelog) && !why; i++) {
    json_t *c = json_array_get(changelog, i);
    const char *op = json_string_value(json_object_get(c, "op"));
    json_t *row = json_object_get(c, "row");
    char k[32];
    snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(row, keycol)));
    json_t *have = json_object_get(cur, k);
    char *text = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);
    if (!op) {
      if (asprintf(&why, "change %zu has no op", i) < 0) why = NULL;
    } else if (!strcmp(op, "+I")) {
      if (have && asprintf(&why, "change %zu: +I of present key %s: %s", i, k, text) < 0) why = NULL;
      json_object_set(cur, k, row);
    } else if (!strcmp(op, "-U") || !strcmp(op, "-D")) {
      if (!have || !wd_test_json_same(have, row)) {
        char *h = have ? json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (asprintf(&why, "change %zu: %s of key %s that is not the current row: %s, current %s", i, op, k, text,
                     h ? h : "none") < 0)
          why = NULL;
        free(h);
      }
      json_object_del(cur, k);
      if (!strcmp(op, "-U")) {
        pending_u = true;
        snprintf(pend_key, sizeof(pend_key), "%s", k);
      }
    } else if (!strcmp(op, "+U")) {
      if ((have || !pending_u || strcmp(pend_key, k)) &&
          asprintf(&why, "change %zu: +U of key %s without its -U: %s", i, k, text) < 0)
        why = NULL;
      pending_u = false;
      json_object_set(cur, k, row);
    }
    free(text);
  }
  if (why) {
    json_decref(cur);
    return why;
  }
  size_t n = json_object_size(cur), i = 0;
  json_t **rows = calloc(n + 1, sizeof(*rows));
  const char *k;
  json_t *v;
  json_object_foreach(cur, k, v) rows[i++] = v;
  qsort_r(rows, n, sizeof(*rows), by_key, (void *)keycol);
  *table = json_array();
  for (i = 0; i < n; i++) json_array_append(*table, rows[i]);
  free(rows);
  json_decref(cur);
  return NULL;
}

bool wl_rows_equal(json_t *got, json_t *want, char **why) {
  *why = NULL;
  bool ok = json_array_size(got) == json_array_size(want);
  size_t i = 0;
  for (; ok && i < json_array_size(got); i++) ok = wd_test_json_same(json_array_get(got, i), json_array_get(want, i));
  if (!ok) {
    char *g =
        json_dumps(i && i <= json_array_size(got) ? json_array_get(got, i - 1) : got, JSON_COMPACT | JSON_SORT_KEYS);
    char *w =
        json_dumps(i && i <= json_array_size(want) ? json_array_get(want, i - 1) : want, JSON_COMPACT | JSON_SORT_KEYS);
    if (asprintf(why, "%zu rows vs %zu; first difference at %zu: got %.500s want %.500s", json_array_size(got),
                 json_array_size(want), i ? i - 1 : 0, g ? g : "", w ? w : "") < 0)
      *why = NULL;
    free(g);
    free(w);
  }
  return ok;
}
