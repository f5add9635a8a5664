/*
 * bench/srckey.c — the cost of a source's own primary key (join/srckey.h): the extra keyed-state
 * read and write per record, in the pipeline's micro-batches, no Kafka, RocksDB in /tmp.
 *
 *   build-bench/bench/srckey [--payments 100000] [--orders 100000] [--records 500000] [--batch 1000] [--seed 1]
 *
 * A payments stream (payment_id pk, order_id, method, amount, ts) into orders_wide keyed by
 * order_id (partial-update, a sequence group over the payment's columns): first a +I per payment,
 * then 70 % updates in place, 20 % moves to another order, 10 % deletes (each deleted payment
 * inserted again later). Generated as Debezium JSON twice and decoded untimed by the real decoder:
 *   full:     REPLICA IDENTITY FULL, keyed by the wide key: updates carry full before images,
 *             a move is -D(before) +I(after): the merge engine only (today's fast path);
 *   source-key: REPLICA IDENTITY DEFAULT (updates before: null, deletes with payment_id only)
 *             through the source's `primary-key`: wd_srckey_apply per message (the source row
 *             read from the cache or RocksDB, the deduplicate engine, the derived wide records),
 *             then the same merge.
 * Timed per batch of --batch messages (thread CPU and wall): [source-key: wd_srckey_apply per
 * message], key encode + one wd_state_prefetch of the wide keys, wd_message_apply per message,
 * wd_state_flush (wide rows, and the source rows through the hooks, in one RocksDB write).
 * Reported: ns of CPU per source record for each, and the difference (the cost of the lookup).
 * Prints `RESULT` lines (key=value) for bench/median.py.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "ingest/format.h"
#include "ingest/source.h"
#include "join/srckey.h"
#include "join/state.h"
#include "join/store.h"

static void die(const char *what, wd_error_t *err) {
  fprintf(stderr, "srckey: %s: %s\n", what, err ? err->message : "failed");
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
  wd_row_t **rows;
  size_t n;
} msg_t;

typedef struct {
  msg_t *m;
  size_t n, cap;
} msgs_t;

static wd_table_t *wide_table(void) {
  const char *names[] = {"order_id", "customer", "payment_id", "method", "amount", "payment_ver"};
  const char *types[] = {"BIGINT NOT NULL", "STRING", "BIGINT", "STRING", "BIGINT", "BIGINT"};
  const char *pk[] = {"order_id"};
  wd_schema_t *schema = NULL;
  wd_error_t *err = wd_schema_new(6, names, types, 1, pk, &schema);
  if (err) die("schema", err);
  wd_option_t opts[] = {{"merge-engine", "partial-update"},
                        {"fields.payment_ver.sequence-group", "payment_id,method,amount"}};
  wd_table_t *t = NULL;
  if ((err = wd_table_new(schema, 2, opts, &t))) die("table", err);
  return t;
}

static wd_source_t *source(const wd_schema_t *schema, bool with_key) {
  wd_source_t *src = NULL;
  wd_error_t *err = wd_source_new("payments", WD_FMT_DEBEZIUM_JSON, &src);
  if (!err) err = wd_source_add_topic(src, "payments");
  if (!err && with_key) err = wd_source_add_column(src, schema, "primary-key.payment_id", "payment_id");
  if (!err) err = wd_source_add_column(src, schema, "order_id", "order_id");
  if (!err) err = wd_source_add_column(src, schema, "payment_id", "payment_id");
  if (!err) err = wd_source_add_column(src, schema, "method", "method");
  if (!err) err = wd_source_add_column(src, schema, "amount", "amount");
  if (!err) err = wd_source_add_column(src, schema, "payment_ver", "$.source.ts_ms");
  if (!err) err = wd_source_check(src, schema);
  if (err) die("source", err);
  return src;
}

static void add_msg(msgs_t *ms, const wd_source_t *src, const wd_schema_t *schema, wd_changes_t *ch, const char *json) {
  wd_error_t *err = wd_format_of(WD_FMT_DEBEZIUM_JSON)->decode(NULL, src, schema, NULL, json, strlen(json), ch);
  if (err) die("decode", err);
  if (ms->n == ms->cap) {
    ms->cap = ms->cap ? ms->cap * 2 : 1024;
    ms->m = realloc(ms->m, ms->cap * sizeof(*ms->m));
  }
  msg_t *m = &ms->m[ms->n++];
  m->n = ch->count;
  m->rows = calloc(ch->count + 1, sizeof(*m->rows));
  for (size_t i = 0; i < ch->count; i++) m->rows[i] = wd_changes_take(ch, i);
}

typedef struct {
  wd_changes_t out;
  const wd_schema_t *ws;
} sink_t;

static wd_row_t *add_cb(void *ctx, wd_row_kind_t kind) {
  sink_t *s = ctx;
  return wd_changes_add(&s->out, s->ws, kind);
}

/* Runs the messages through the pipeline's steps; returns CPU seconds (wall into *wall). */
static double run(const msgs_t *ms, bool with_key, wd_table_t *t, size_t batch, double *wall) {
  char dir[] = "/tmp/widen-bench-srckey-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", NULL);
  wd_store_t *st = NULL;
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &st);
  if (err) die("store", err);
  wd_state_t *wide = wd_state_new(t, st, 0);
  const wd_schema_t *ws = wd_table_schema(t);
  wd_srckey_t *sk = NULL;
  int id = -1;
  if (with_key) {
    bool mapped[6] = {true, false, true, true, true, true};
    const char *key[] = {"primary-key.payment_id"};
    if ((err = wd_srckey_new(t, &sk)) || (err = wd_srckey_add(sk, "payments", key, 1, mapped, &id)) ||
        (err = wd_srckey_start(sk, wide, st)))
      die("srckey", err);
    wd_srckey_set_event_col(sk, id, 5, true);
  }
  wd_store_batch_t *b = wd_store_batch_new();
  sink_t sink = {.ws = ws};
  wd_changes_init(&sink.out);
  wd_changelog_t cl = {0};
  wd_buf_t keys = {0};
  /* per batch: the wide records of every message (owned), their keys */
  size_t cap = 0;
  wd_row_t **recs = NULL;
  size_t *mfirst = calloc(batch + 1, sizeof(size_t)), *mcount = calloc(batch + 1, sizeof(size_t));
  size_t *koff = NULL;
  double c0 = bench_cpu_thread(), w0 = wd_mono_s();
  for (size_t at = 0; at < ms->n; at += batch) {
    size_t end = at + batch < ms->n ? at + batch : ms->n, nrec = 0;
    for (size_t i = at; i < end; i++) {
      const msg_t *m = &ms->m[i];
      mfirst[i - at] = nrec;
      wd_row_t *const *src = m->rows;
      size_t n = m->n;
      if (with_key) {
        wd_changes_reset(&sink.out);
        if ((err = wd_srckey_apply(sk, id, m->rows, m->n, add_cb, &sink, NULL))) die("srckey apply", err);
        src = sink.out.rows;
        n = sink.out.count;
      }
      if (nrec + n > cap) {
        cap = (nrec + n) * 2 + 1024;
        recs = realloc(recs, cap * sizeof(*recs));
        koff = realloc(koff, (cap + 1) * sizeof(*koff));
      }
      for (size_t k = 0; k < n; k++) recs[nrec++] = with_key ? wd_changes_take(&sink.out, k) : src[k];
      mcount[i - at] = n;
    }
    wd_buf_reset(&keys);
    for (size_t r = 0; r < nrec; r++) {
      koff[r] = keys.len;
      wd_row_key_encode(ws, recs[r], &keys);
    }
    koff[nrec] = keys.len;
    const uint8_t **kp = malloc((nrec + 1) * sizeof(*kp));
    size_t *kl = malloc((nrec + 1) * sizeof(*kl));
    for (size_t r = 0; r < nrec; r++) {
      kp[r] = keys.data + koff[r];
      kl[r] = koff[r + 1] - koff[r];
    }
    if ((err = wd_state_prefetch(wide, nrec, kp, kl))) die("prefetch", err);
    free(kp);
    free(kl);
    for (size_t i = at; i < end; i++) {
      wd_changelog_reset(t, &cl);
      if ((err = wd_message_apply(t, wd_state_ops(), wide, recs + mfirst[i - at], mcount[i - at], &cl, NULL)))
        die("apply", err);
    }
    wd_changelog_reset(t, &cl);
    if ((err = wd_state_flush(wide, b))) die("flush", err);
    if (with_key)
      for (size_t r = 0; r < nrec; r++) wd_row_destroy(ws, recs[r]);
  }
  double cpu = bench_cpu_thread() - c0;
  *wall = wd_mono_s() - w0;
  wd_changelog_free(t, &cl);
  wd_changes_free(&sink.out);
  wd_buf_free(&keys);
  free(recs);
  free(koff);
  free(mfirst);
  free(mcount);
  wd_store_batch_destroy(b);
  wd_srckey_destroy(sk);
  wd_state_destroy(wide);
  wd_store_close(st);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return cpu;
}

int main(int argc, char **argv) {
  long payments = 100000, orders = 100000, records = 500000, batch = 1000, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--payments")) payments = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--orders")) orders = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--records")) records = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = atol(argv[i + 1]);
    else {
      fprintf(stderr, "usage: srckey [--payments N] [--orders N] [--records N] [--batch N] [--seed S]\n");
      return 2;
    }
  }
  rng = (uint64_t)seed;
  wd_table_t *t = wide_table();
  const wd_schema_t *ws = wd_table_schema(t);
  /* the source schema of the source-key variant (built the same way as the pipeline does) */
  wd_srckey_t *sk0 = NULL;
  int id0 = -1;
  bool mapped[6] = {true, false, true, true, true, true};
  const char *key[] = {"primary-key.payment_id"};
  wd_error_t *err = wd_srckey_new(t, &sk0);
  if (!err) err = wd_srckey_add(sk0, "payments", key, 1, mapped, &id0);
  if (err) die("srckey", err);
  const wd_schema_t *ss = wd_srckey_schema(sk0, id0);
  wd_source_t *full_src = source(ws, false), *key_src = source(ss, true);
  wd_changes_t ch_full, ch_key;
  wd_changes_init(&ch_full);
  wd_changes_init(&ch_key);
  msgs_t full = {0}, keyed = {0};
  int64_t *ord = calloc((size_t)payments, sizeof(int64_t)), *amt = calloc((size_t)payments, sizeof(int64_t));
  bool *live = calloc((size_t)payments, sizeof(bool));
  char js[1024], img[256], old[256];
  int64_t ts = 1000000;
  for (long r = 0; r < records; r++) {
    int64_t p = r < payments ? r : pick(payments);
    ts++;
    int64_t o = ord[p], a = amt[p];
    snprintf(old, sizeof(old),
             "{\"payment_id\":%" PRId64 ",\"order_id\":%" PRId64 ",\"method\":\"m%" PRId64 "\",\"amount\":%" PRId64 "}",
             p, o, a % 5, a);
    int64_t what = pick(100);
    if (!live[p]) { /* insert */
      ord[p] = 1 + pick(orders);
      amt[p] = pick(100000);
      live[p] = true;
      snprintf(img, sizeof(img),
               "{\"payment_id\":%" PRId64 ",\"order_id\":%" PRId64 ",\"method\":\"m%" PRId64 "\",\"amount\":%" PRId64
               "}",
               p, ord[p], amt[p] % 5, amt[p]);
      snprintf(js, sizeof(js), "{\"op\":\"c\",\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":%" PRId64 "}}", img,
               ts);
      add_msg(&full, full_src, ws, &ch_full, js);
      add_msg(&keyed, key_src, ss, &ch_key, js);
    } else if (what < 10) { /* delete */
      live[p] = false;
      snprintf(js, sizeof(js), "{\"op\":\"d\",\"before\":%s,\"after\":null,\"source\":{\"ts_ms\":%" PRId64 "}}", old,
               ts);
      add_msg(&full, full_src, ws, &ch_full, js);
      snprintf(js, sizeof(js),
               "{\"op\":\"d\",\"before\":{\"payment_id\":%" PRId64 "},\"after\":null,\"source\":{\"ts_ms\":%" PRId64
               "}}",
               p, ts);
      add_msg(&keyed, key_src, ss, &ch_key, js);
    } else { /* update in place, or a move */
      if (what < 30) ord[p] = 1 + pick(orders);
      amt[p] = pick(100000);
      snprintf(img, sizeof(img),
               "{\"payment_id\":%" PRId64 ",\"order_id\":%" PRId64 ",\"method\":\"m%" PRId64 "\",\"amount\":%" PRId64
               "}",
               p, ord[p], amt[p] % 5, amt[p]);
      snprintf(js, sizeof(js), "{\"op\":\"u\",\"before\":%s,\"after\":%s,\"source\":{\"ts_ms\":%" PRId64 "}}", old, img,
               ts);
      add_msg(&full, full_src, ws, &ch_full, js);
      snprintf(js, sizeof(js), "{\"op\":\"u\",\"before\":null,\"after\":%s,\"source\":{\"ts_ms\":%" PRId64 "}}", img,
               ts);
      add_msg(&keyed, key_src, ss, &ch_key, js);
    }
  }
  double wf = 0, wk = 0;
  double cf = run(&full, false, t, (size_t)batch, &wf);
  double ck = run(&keyed, true, t, (size_t)batch, &wk);
  double nf = cf * 1e9 / (double)records, nk = ck * 1e9 / (double)records;
  printf("full before images (merge only):     %.0f ns CPU per record (%.0f records/CPU s, wall %.2f s)\n", nf,
         records / cf, wf);
  printf("source primary-key (lookup + merge): %.0f ns CPU per record (%.0f records/CPU s, wall %.2f s)\n", nk,
         records / ck, wk);
  printf("RESULT full_ns=%.0f srckey_ns=%.0f extra_ns=%.0f ratio=%.2f\n", nf, nk, nk - nf, nk / nf);
  for (size_t i = 0; i < full.n; i++) {
    for (size_t k = 0; k < full.m[i].n; k++) wd_row_destroy(ws, full.m[i].rows[k]);
    free(full.m[i].rows);
  }
  for (size_t i = 0; i < keyed.n; i++) {
    for (size_t k = 0; k < keyed.m[i].n; k++) wd_row_destroy(ss, keyed.m[i].rows[k]);
    free(keyed.m[i].rows);
  }
  free(full.m);
  free(keyed.m);
  free(ord);
  free(amt);
  free(live);
  wd_changes_free(&ch_full);
  wd_changes_free(&ch_key);
  wd_source_destroy(full_src);
  wd_source_destroy(key_src);
  wd_srckey_destroy(sk0);
  wd_table_destroy(t);
  return 0;
}
