/*
 * bench/lookup.c — joins on other keys (join/lookup.h) in the pipeline's micro-batches, no Kafka:
 * the invoice_wide table of configs/invoice-wide.yaml (invoice main; payment a lookup on
 * payment_id with a sequence field; reconciliation a lookup on the payment's reconciliation_id, a
 * chain; customer a lookup on customer_id), over RocksDB in a temporary directory.
 *
 *   build-bench/bench/lookup throughput [--keys 100000] [--records 500000] [--batch 1000] [--seed 1]
 *   build-bench/bench/lookup fanout --rows 1000,100000,1000000
 *
 * throughput: a seeded workload of source messages over the four tables (40 % invoice, 20 % each
 * lookup; first a +I per key, then updates as -U,+U messages that change payment_id, customer_id
 * or reconciliation_id a third of the time, 1 % deletes), built as rows in memory (decoding has
 * its own benchmark). Timed per batch of --batch messages: one wd_state_prefetch of the batch's
 * invoice keys, wd_join_apply per message (changelog collected), wd_state_flush (wide rows,
 * lookup rows, index and flags in one RocksDB write), releasing the changelog. Reported: source
 * records per CPU second (thread CPU time), and the same invoice messages alone with a join-less
 * table (the merge engine only) as the reference.
 *
 * fanout: N invoices referencing payment 1 (loaded and flushed untimed); then one update of
 * payment 1 (a -U,+U message changing its status): the wall and CPU time of wd_join_apply (which
 * refreshes the N rows and emits 2N changelog rows) and of the flush that writes them.
 *
 * Prints a `RESULT` line (key=value) per measurement, for bench/median.py.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/table_config.h"
#include "bench/bench_util.h"
#include "join/lookup.h"
#include "join/state.h"
#include "join/store.h"

static void die(const char *what, wd_error_t *err) {
  fprintf(stderr, "lookup: %s: %s\n", what, err ? err->message : "failed");
  exit(1);
}

static uint64_t rng;
static uint64_t next(void) {
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int64_t pick(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

typedef struct {
  wd_table_t *t;
  wd_store_t *st;
  wd_state_t *state;
  wd_join_t *j;
  int id[4]; /* invoice, payment, reconciliation, customer */
  char dir[64];
} setup_t;

static void setup(setup_t *s, bool lookups) {
  const char *names[] = {"invoice_id",        "payment_id", "customer_id",  "amount",
                         "reconciliation_id", "pay_status", "recon_status", "customer_name"};
  const char *types[] = {"BIGINT NOT NULL", "BIGINT", "BIGINT", "DECIMAL(12,2)",
                         "BIGINT",          "STRING", "STRING", "STRING"};
  const char *pk[] = {"invoice_id"};
  wd_option_t opt = {"merge-engine", "deduplicate"};
  wd_error_t *err = wd_table_config_build(8, names, types, 1, pk, 1, &opt, &s->t);
  if (err) die("table", err);
  snprintf(s->dir, sizeof(s->dir), "/tmp/widen-bench-lookup-XXXXXX");
  if (!mkdtemp(s->dir)) die("mkdtemp", NULL);
  if ((err = wd_store_open_rocksdb(s->dir, NULL, &s->st))) die("store", err);
  if (!(s->state = wd_state_new(s->t, s->st, 0))) die("state", NULL);
  if ((err = wd_join_new(s->t, &s->j))) die("join", err);
  bool mapped[8] = {true, true, true, true, !lookups, !lookups, !lookups, !lookups};
  if ((err = wd_join_add_main(s->j, "invoice", mapped, lookups, &s->id[0]))) die("main", err);
  if (lookups) {
    const char *on1[] = {"payment_id"}, *c1[] = {"reconciliation_id", "pay_status"};
    const char *on2[] = {"reconciliation_id"}, *c2[] = {"recon_status"};
    const char *on3[] = {"customer_id"}, *c3[] = {"customer_name"};
    if ((err = wd_join_add_lookup(s->j, "payment", on1, 1, c1, 2, true, true, &s->id[1])) ||
        (err = wd_join_add_lookup(s->j, "reconciliation", on2, 1, c2, 1, false, false, &s->id[2])) ||
        (err = wd_join_add_lookup(s->j, "customer", on3, 1, c3, 1, false, false, &s->id[3])))
      die("lookup", err);
  }
  if ((err = wd_join_start(s->j, s->state, s->st))) die("start", err);
}

static void teardown(setup_t *s) {
  wd_join_destroy(s->j);
  wd_state_destroy(s->state);
  wd_store_close(s->st);
  wd_table_destroy(s->t);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
  if (system(cmd) != 0) fprintf(stderr, "lookup: could not remove %s\n", s->dir);
}

static void set_int(wd_row_t *r, int c, int64_t v) {
  r->v[c].is_null = false;
  r->v[c].i = v;
}
static void set_str(wd_row_t *r, int c, const char *text) { wd_value_set_bytes(&r->v[c], text, strlen(text)); }

/* The current row of each source key (what the next update's -U carries). */
typedef struct {
  bool present;
  int64_t a, b; /* invoice: payment_id, customer_id; payment: reconciliation_id, seq; others: - */
  int status;
} cur_t;

static const char *const STATUS[] = {"open", "paid", "pending", "closed", "failed", "refunded"};

/* One source message of table tb (0..3) for key k into recs (1 or 2 rows). */
static size_t make_message(setup_t *s, int tb, int64_t k, cur_t *cur, int64_t nlk, int64_t seq, wd_row_t **recs) {
  const wd_schema_t *sc = wd_join_source_schema(s->j, s->id[tb]);
  size_t n = 0;
  cur_t old = *cur;
  bool del = cur->present && pick(100) == 0;
  if (cur->present) {
    if (!del) {
      if (pick(3) == 0) cur->a = 1 + pick(nlk);
      if (pick(3) == 0) cur->b = 1 + pick(nlk);
      cur->status = (int)pick(6);
    }
  } else {
    cur->a = 1 + pick(nlk);
    cur->b = 1 + pick(nlk);
    cur->status = (int)pick(6);
  }
  for (int img = 0; img < 2; img++) {
    const cur_t *c = img == 0 ? &old : cur;
    if (img == 0 && !old.present) continue;
    if (img == 1 && del) continue;
    wd_row_t *r = wd_row_new(sc);
    r->kind = img == 0 ? (del ? WD_DELETE : WD_UPDATE_BEFORE) : (old.present ? WD_UPDATE_AFTER : WD_INSERT);
    set_int(r, 0, k);
    if (tb == 0) { /* invoice_id, payment_id, customer_id, amount */
      set_int(r, 1, c->a);
      set_int(r, 2, c->b);
      r->v[3].is_null = false;
      r->v[3].dec = 100 * (k % 1000) + c->status;
    } else if (tb == 1) { /* payment_id, reconciliation_id, pay_status, _seq */
      set_int(r, 1, c->a);
      set_str(r, 2, STATUS[c->status]);
      set_int(r, 3, seq);
    } else { /* reconciliation_id, recon_status | customer_id, customer_name */
      set_str(r, 1, STATUS[c->status]);
    }
    recs[n++] = r;
  }
  cur->present = !del;
  return n;
}

static void throughput(int64_t keys, int64_t records, size_t batch, uint64_t seed, bool lookups) {
  setup_t s;
  setup(&s, lookups);
  rng = seed;
  int64_t nlk = keys / 3 + 1;
  cur_t *cur[4];
  for (int t = 0; t < 4; t++) cur[t] = calloc((size_t)(t ? nlk : keys) + 1, sizeof(cur_t));
  wd_row_t **recs = calloc(batch * 2 + 2, sizeof(*recs));
  size_t *first = calloc(batch + 1, sizeof(*first));
  int *tbl = calloc(batch + 1, sizeof(*tbl));
  const uint8_t **kp = calloc(batch * 2 + 2, sizeof(*kp));
  size_t *kl = calloc(batch * 2 + 2, sizeof(*kl));
  wd_buf_t keyb = {0};
  size_t *koff = calloc(batch * 2 + 2, sizeof(*koff));
  wd_changelog_t cl = {0};
  wd_store_batch_t *b = wd_store_batch_new();
  double cpu = 0, wall = 0;
  uint64_t nrec = 0, nchanges = 0, out = 0;
  for (int64_t done = 0; done < records;) {
    size_t nm = 0, nr = 0, nk = 0;
    wd_buf_reset(&keyb);
    for (; nm < batch && done < records; nm++, done++) {
      int r = (int)pick(10);
      int tb = !lookups ? 0 : r < 4 ? 0 : r < 6 ? 1 : r < 8 ? 2 : 3;
      int64_t k = 1 + pick(tb ? nlk : keys);
      first[nm] = nr;
      tbl[nm] = tb;
      nr += make_message(&s, tb, k, &cur[tb][k], nlk, done + 1, recs + nr);
      if (tb == 0)
        for (size_t q = first[nm]; q < nr; q++) {
          koff[nk++] = keyb.len;
          wd_row_key_encode(wd_table_schema(s.t), recs[q], &keyb);
        }
    }
    first[nm] = nr;
    for (size_t q = 0; q < nk; q++) {
      kp[q] = keyb.data + koff[q];
      kl[q] = (q + 1 < nk ? koff[q + 1] : keyb.len) - koff[q];
    }
    double c0 = bench_cpu_thread(), w0 = wd_mono_s();
    wd_error_t *err = wd_state_prefetch(s.state, nk, kp, kl);
    if (err) die("prefetch", err);
    for (size_t m = 0; m < nm; m++) {
      const wd_schema_t *sc = wd_join_source_schema(s.j, s.id[tbl[m]]);
      err = wd_join_apply(s.j, s.id[tbl[m]], recs + first[m], first[m + 1] - first[m], &cl, NULL);
      if (err && err->cls != WD_ERR_RECORD) die("apply", err);
      wd_error_destroy(err);
      for (size_t q = first[m]; q < first[m + 1]; q++) wd_row_destroy(sc, recs[q]);
    }
    if ((err = wd_state_flush(s.state, b))) die("flush", err);
    out += cl.n;
    wd_changelog_reset(s.t, &cl);
    cpu += bench_cpu_thread() - c0;
    wall += wd_mono_s() - w0;
    nrec += nm;
    nchanges += nr;
  }
  printf("%s: %" PRIu64 " source records (%" PRIu64 " change records), %" PRIu64 " changelog rows, %.2f CPU s, "
         "%.2f s wall, fan-out refreshes %" PRIu64 "\n",
         lookups ? "two lookups + a chain" : "invoice alone, no lookups", nrec, nchanges, out, cpu, wall,
         wd_join_fanout_rows(s.j));
  printf("RESULT mode=%s records_per_cpu_s=%.0f records_per_s=%.0f changelog_rows=%" PRIu64 " disk_mib=%.1f\n",
         lookups ? "lookups" : "main_only", (double)nrec / cpu, (double)nrec / wall, out,
         (double)wd_store_disk_bytes(s.st) / 1048576.0);
  wd_changelog_free(s.t, &cl);
  wd_store_batch_destroy(b);
  wd_buf_free(&keyb);
  free(koff);
  free(kp);
  free(kl);
  free(tbl);
  free(first);
  free(recs);
  for (int t = 0; t < 4; t++) free(cur[t]);
  teardown(&s);
}

static void fanout(int64_t n) {
  setup_t s;
  setup(&s, true);
  wd_changelog_t cl = {0};
  wd_store_batch_t *b = wd_store_batch_new();
  const wd_schema_t *ws = wd_table_schema(s.t), *ps = wd_join_source_schema(s.j, s.id[1]);
  wd_row_t *r = wd_row_new(ps);
  set_int(r, 0, 1);
  set_int(r, 1, 1);
  set_str(r, 2, "open");
  set_int(r, 3, 1);
  wd_error_t *err = wd_join_apply(s.j, s.id[1], &r, 1, &cl, NULL);
  if (err) die("payment", err);
  wd_row_destroy(ps, r);
  for (int64_t i = 1; i <= n; i++) {
    r = wd_row_new(ws);
    set_int(r, 0, i);
    set_int(r, 1, 1);
    set_int(r, 2, i % 1000);
    if ((err = wd_join_apply(s.j, s.id[0], &r, 1, &cl, NULL))) die("invoice", err);
    wd_row_destroy(ws, r);
    if (i % 10000 == 0 || i == n) {
      if ((err = wd_state_flush(s.state, b))) die("flush", err);
      wd_changelog_reset(s.t, &cl);
    }
  }
  wd_state_drop_clean(s.state); /* the rows are read from the store, as after a restart */
  wd_row_t *msg[2] = {wd_row_new(ps), wd_row_new(ps)};
  for (int k = 0; k < 2; k++) {
    msg[k]->kind = k ? WD_UPDATE_AFTER : WD_UPDATE_BEFORE;
    set_int(msg[k], 0, 1);
    set_int(msg[k], 1, 1);
    set_str(msg[k], 2, k ? "paid" : "open");
    set_int(msg[k], 3, 1 + k);
  }
  double c0 = bench_cpu_thread(), w0 = wd_mono_s();
  if ((err = wd_join_apply(s.j, s.id[1], msg, 2, &cl, NULL))) die("change", err);
  double c1 = bench_cpu_thread(), w1 = wd_mono_s();
  if ((err = wd_state_flush(s.state, b))) die("flush", err);
  double c2 = bench_cpu_thread(), w2 = wd_mono_s();
  printf("fan-out %" PRId64 " rows: apply %.3f s (%.3f CPU s), flush %.3f s (%.3f CPU s), %zu changelog rows\n", n,
         w1 - w0, c1 - c0, w2 - w1, c2 - c1, cl.n);
  printf("RESULT mode=fanout rows=%" PRId64 " apply_s=%.4f apply_cpu_s=%.4f flush_s=%.4f total_s=%.4f "
         "changelog_rows=%zu\n",
         n, w1 - w0, c1 - c0, w2 - w1, w2 - w0, cl.n);
  for (int k = 0; k < 2; k++) wd_row_destroy(ps, msg[k]);
  wd_changelog_free(s.t, &cl);
  wd_store_batch_destroy(b);
  teardown(&s);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lookup throughput [--keys N] [--records M] [--batch B] [--seed S] | fanout --rows N,...\n");
    return 1;
  }
  int64_t keys = 100000, records = 500000;
  size_t batch = 1000;
  uint64_t seed = 1;
  const char *rows = "1000,100000,1000000";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--keys")) keys = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--records")) records = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = (size_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = (uint64_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--rows")) rows = argv[i + 1];
  }
  if (!strcmp(argv[1], "throughput")) {
    throughput(keys, records, batch, seed, true);
    throughput(keys, records, batch, seed, false);
  } else if (!strcmp(argv[1], "fanout")) {
    for (const char *p = rows; p && *p;) {
      fanout(atoll(p));
      p = strchr(p, ',');
      if (p) p++;
    }
  } else {
    fprintf(stderr, "lookup: unknown mode %s\n", argv[1]);
    return 1;
  }
  return 0;
}
