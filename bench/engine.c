/*
 * bench/engine.c — the merge engine and the RocksDB store in the pipeline's micro-batches, no
 * Kafka; and in the same run the RocksDB ceiling (multi-get + write batch of the same keys and
 * value sizes, no decoding, no merging).
 *
 *   build-bench/bench/engine --keys 100000 --records 1000000 [--batch 1000] [--seed 1]
 *                            [--config configs/demo.yaml] [--dir /tmp/widen-bench-engine]
 *                            [--cache-entries N] [--no-ceiling]
 *
 * Workload: app/cli/generate.h (3 streams, a sequence group per stream, ~20% late, 1% deletes,
 * ~200-byte row images), decoded by the Debezium JSON decoder of each stream's source of the
 * config (configs/demo.yaml matches the generator). Per batch of --batch source messages, the
 * timed part is what the pipeline does between decode and produce (app/runtime/pipeline.c
 * process_batch steps 2, 3 and 6): encode the records' primary keys, wd_state_prefetch (one
 * multi-get), wd_message_apply per message (changelog collected), the state flush with the
 * batch's input offsets in one write, and releasing the batch's records. Decoding and generating
 * are outside the timed part (decode has its own benchmark, bench/decode).
 *
 * Ceiling: a second, fresh RocksDB with the store's options (store_rocksdb.c: 64 MiB LRU block
 * cache, bloom 10, 16 KiB blocks, lz4 + zstd bottommost, WAL without fsync); per batch, the same
 * batch's distinct keys go through one batched multi-get (pinned values touched, not copied),
 * then one write batch puts every distinct key with a real stored entry of the engine's run
 * (sampled from its store, so the sizes and compressibility match) plus the batch's 12 offsets.
 *
 * Prints one line per phase and a final `RESULT` line (key=value) for bench/run-engine.
 */
#include <getopt.h>
#include <inttypes.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "bench/bench_util.h"
#include "common/buf.h"
#include "common/hash.h"
#include "common/hindex.h"
#include "ingest/source.h"
#include "join/merge.h"
#include "join/state.h"
#include "join/store.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static void die_err(const char *what, wd_error_t *err) {
  fprintf(stderr, "engine: %s: %s\n", what, err ? err->message : "failed");
  exit(1);
}

/* Key trace of the run: every record's full state key (prefix + encoded primary key), batch by batch (for the ceiling). */
typedef struct {
  wd_buf_t bytes;
  size_t *off; /* per record: start in bytes; off[n] = end */
  size_t n, cap;
  size_t *batch_end; /* per batch: index of its first record after it */
  size_t nb, capb;
} trace_t;

static void trace_key(trace_t *t, const uint8_t *k, size_t len) {
  if (t->n + 2 > t->cap) {
    t->cap = t->cap ? t->cap * 2 : 1 << 16;
    t->off = realloc(t->off, t->cap * sizeof(*t->off));
  }
  t->off[t->n++] = t->bytes.len;
  /* the state's key layout (join/state.h): the row namespace byte and task 0, then the key */
  static const uint8_t prefix[5] = {'R', 0, 0, 0, 0};
  wd_buf_append(&t->bytes, prefix, sizeof prefix);
  wd_buf_append(&t->bytes, k, len);
  t->off[t->n] = t->bytes.len;
}

static void trace_batch(trace_t *t) {
  if (t->nb == t->capb) {
    t->capb = t->capb ? t->capb * 2 : 1024;
    t->batch_end = realloc(t->batch_end, t->capb * sizeof(*t->batch_end));
  }
  t->batch_end[t->nb++] = t->n;
}

/* A pool of real stored entries (sampled by a store scan). */
typedef struct {
  uint8_t **v;
  size_t *len;
  size_t n, cap;
  uint64_t total_len, seen;
} pool_t;

static int pool_add(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen) {
  (void)key;
  (void)klen;
  pool_t *p = ctx;
  p->seen++;
  p->total_len += vlen;
  if (p->n < p->cap) {
    p->v[p->n] = malloc(vlen);
    memcpy(p->v[p->n], val, vlen);
    p->len[p->n++] = vlen;
  }
  return 0;
}

/* A key of the batch being deduplicated, and the keys kept so far. */
typedef struct {
  const char **keys;
  const size_t *klens;
  const char *k;
  size_t kl;
} key_probe_t;

static bool key_eq(const void *ctx, size_t e) {
  const key_probe_t *q = ctx;
  return q->klens[e] == q->kl && memcmp(q->keys[e], q->k, q->kl) == 0;
}

typedef struct {
  double secs, cpu, p50, p99;
  uint64_t records, batches;
} phase_t;

static void print_phase(const char *name, const phase_t *ph) {
  printf("%-8s %" PRIu64 " records in %" PRIu64 " batches: %.3f s wall, %.3f s cpu, %.0f records/s (wall), "
         "%.0f records/s per core (cpu); batch p50 %.2f ms p99 %.2f ms\n",
         name, ph->records, ph->batches, ph->secs, ph->cpu, ph->records / ph->secs, ph->records / ph->cpu,
         ph->p50 * 1e3, ph->p99 * 1e3);
}

/* ---- the ceiling --------------------------------------------------------------------------- */

typedef struct {
  const char *k;
  size_t kl;
} ckey_t;

/* RocksDB's bytewise order of two keys. */
static int cmp_ckey(const void *a, const void *b) {
  const ckey_t *x = a, *y = b;
  int c = memcmp(x->k, y->k, x->kl < y->kl ? x->kl : y->kl);
  return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

static void run_ceiling(const char *dir, const trace_t *tr, const pool_t *pool, uint64_t nrec, phase_t *ph,
                        uint64_t *disk) {
  char *rerr = NULL;
  rocksdb_cache_t *cache = rocksdb_cache_create_lru(64u << 20);
  rocksdb_block_based_table_options_t *to = rocksdb_block_based_options_create();
  rocksdb_block_based_options_set_block_cache(to, cache);
  rocksdb_block_based_options_set_filter_policy(to, rocksdb_filterpolicy_create_bloom_full(10));
  rocksdb_block_based_options_set_cache_index_and_filter_blocks(to, 1);
  rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(to, 1);
  rocksdb_block_based_options_set_format_version(to, 5);
  rocksdb_block_based_options_set_block_size(to, 16u << 10);
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_block_based_table_factory(o, to);
  rocksdb_options_set_compression(o, rocksdb_lz4_compression);
  rocksdb_options_set_bottommost_compression(o, rocksdb_zstd_compression);
  /* as store_rocksdb.c: the memtable bloom, insert hints per 6-byte key prefix with the batch's
   * keys written in order, no perf counters */
  rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0.1);
  rocksdb_options_set_memtable_whole_key_filtering(o, 1);
  {
    rocksdb_options_t *n = rocksdb_options_create();
    rocksdb_get_options_from_string(o, "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.6", n, &rerr);
    if (rerr) {
      fprintf(stderr, "ceiling: options: %s\n", rerr);
      exit(1);
    }
    rocksdb_options_destroy(o);
    o = n;
  }
  rocksdb_set_perf_level(rocksdb_disable);
  const char *cfn[1] = {"default"};
  const rocksdb_options_t *cfo[1] = {o};
  rocksdb_column_family_handle_t *cf = NULL;
  rocksdb_t *db = rocksdb_open_column_families(o, dir, 1, cfn, cfo, &cf, &rerr);
  if (!db) {
    fprintf(stderr, "ceiling: open %s: %s\n", dir, rerr);
    exit(1);
  }
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
  size_t maxb = 0;
  for (size_t b = 0, s = 0; b < tr->nb; s = tr->batch_end[b++])
    if (tr->batch_end[b] - s > maxb) maxb = tr->batch_end[b] - s;
  const char **keys = malloc((maxb + 1) * sizeof(*keys));
  size_t *klens = malloc((maxb + 1) * sizeof(*klens));
  rocksdb_pinnableslice_t **pins = malloc((maxb + 1) * sizeof(*pins));
  char **errs = malloc((maxb + 1) * sizeof(*errs));
  ckey_t *ord = malloc((maxb + 1) * sizeof(*ord));
  wd_hindex_t ht;
  if (wd_hindex_init(&ht, maxb)) {
    fprintf(stderr, "ceiling: no memory\n");
    exit(1);
  }
  double *lat = malloc((tr->nb + 1) * sizeof(*lat));
  volatile size_t sink = 0;
  double t0 = wd_mono_s(), c0 = bench_cpu_self();
  for (size_t b = 0, s = 0; b < tr->nb; s = tr->batch_end[b++]) {
    double bt = wd_mono_s();
    size_t m = 0;
    wd_hindex_clear(&ht);
    for (size_t r = s; r < tr->batch_end[b]; r++) {
      key_probe_t q = {keys, klens, (const char *)tr->bytes.data + tr->off[r], tr->off[r + 1] - tr->off[r]};
      size_t slot = 0;
      if (wd_hindex_find(&ht, wd_hash_bytes(q.k, q.kl, 0), key_eq, &q, &slot) >= 0) continue; /* a repeat */
      wd_hindex_put(&ht, slot, m);
      keys[m] = q.k;
      klens[m++] = q.kl;
    }
    rocksdb_batched_multi_get_cf(db, ro, cf, m, keys, klens, pins, errs, false);
    for (size_t i = 0; i < m; i++) {
      if (errs[i]) {
        fprintf(stderr, "ceiling: multi-get: %s\n", errs[i]);
        exit(1);
      }
      if (pins[i]) {
        size_t vl = 0;
        const char *v = rocksdb_pinnableslice_value(pins[i], &vl);
        sink += vl + (vl ? (uint8_t)v[0] : 0);
        rocksdb_pinnableslice_destroy(pins[i]);
      }
    }
    for (size_t i = 0; i < m; i++) {
      ord[i].k = keys[i];
      ord[i].kl = klens[i];
    }
    qsort(ord, m, sizeof(*ord), cmp_ckey); /* in key order, as wd_state_snapshot writes */
    for (size_t i = 0; i < m; i++) {
      size_t pi = wd_hash_bytes(ord[i].k, ord[i].kl, 0) % pool->n;
      rocksdb_writebatch_put_cf(wb, cf, ord[i].k, ord[i].kl, (const char *)pool->v[pi], pool->len[pi]);
    }
    for (int t = 0; t < 3; t++)
      for (int p = 0; p < 4; p++) {
        char ok[64], ov[32];
        int kl = snprintf(ok, sizeof ok, "offset/shop.stream%d/%d", t, p);
        int vl = snprintf(ov, sizeof ov, "%zu", tr->batch_end[b]);
        rocksdb_writebatch_put_cf(wb, cf, ok, (size_t)kl, ov, (size_t)vl);
      }
    rocksdb_write(db, wo, wb, &rerr);
    if (rerr) {
      fprintf(stderr, "ceiling: write: %s\n", rerr);
      exit(1);
    }
    rocksdb_writebatch_clear(wb);
    lat[b] = wd_mono_s() - bt;
  }
  ph->secs = wd_mono_s() - t0;
  ph->cpu = bench_cpu_self() - c0;
  ph->records = nrec;
  ph->batches = tr->nb;
  ph->p50 = bench_quantile(lat, tr->nb, 0.50);
  ph->p99 = bench_quantile(lat, tr->nb, 0.99);
  *disk = bench_dir_bytes(dir);
  (void)sink;
  free(lat);
  wd_hindex_free(&ht);
  free(ord);
  free(keys);
  free(klens);
  free(pins);
  free(errs);
  rocksdb_writebatch_destroy(wb);
  rocksdb_readoptions_destroy(ro);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_column_family_handle_destroy(cf);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  rocksdb_block_based_options_destroy(to);
  rocksdb_cache_destroy(cache);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *config = WD_SOURCE_DIR "/configs/demo.yaml";
  const char *dir = "/tmp/widen-bench-engine";
  uint64_t keys = 100000, records = 1000000, seed = 1;
  long batch = 0, cache_entries = -1;
  bool ceiling = true;
  static const struct option lo[] = {{"config", 1, 0, 'c'},        {"dir", 1, 0, 'd'},        {"keys", 1, 0, 'k'},
                                     {"records", 1, 0, 'r'},       {"seed", 1, 0, 's'},       {"batch", 1, 0, 'b'},
                                     {"cache-entries", 1, 0, 'C'}, {"no-ceiling", 0, 0, 'N'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 'd': dir = optarg; break;
    case 'k': keys = strtoull(optarg, NULL, 10); break;
    case 'r': records = strtoull(optarg, NULL, 10); break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'b': batch = strtol(optarg, NULL, 10); break;
    case 'C': cache_entries = strtol(optarg, NULL, 10); break;
    case 'N': ceiling = false; break;
    default:
      fprintf(stderr, "usage: engine [--keys N] [--records M] [--batch B] [--seed S] [--config F] [--dir D] "
                      "[--cache-entries N] [--no-ceiling]\n");
      return 2;
    }
  }
  wd_error_t *err = NULL;
  wd_config_t *cfg = NULL;
  if ((err = wd_config_load(config, &cfg))) die_err("config", err);
  wd_table_t *table = NULL;
  if ((err = wd_config_build_table(cfg, &table))) die_err("table", err);
  const wd_schema_t *schema = wd_table_schema(table);
  size_t nsrc = cfg->sources.n;
  wd_source_t **srcs = calloc(nsrc, sizeof(*srcs));
  for (size_t i = 0; i < nsrc; i++)
    if ((err = wd_config_build_source(cfg, i, schema, &srcs[i]))) die_err("source", err);
  if (batch <= 0) batch = (long)cfg->pipeline.batch_size;
  if (cache_entries < 0) cache_entries = (long)cfg->state.cache_entries;

  char edir[4096], cdir[4096];
  snprintf(edir, sizeof edir, "%s/engine", dir);
  snprintf(cdir, sizeof cdir, "%s/ceiling", dir);
  bench_rm_rf(dir);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  if (system(cmd)) return 1;

  wd_store_t *store = NULL;
  wd_store_options_t so = {0};
  so.tombstone_retention_ms = cfg->state.tombstone_retention_ms;
  if ((err = wd_store_open_rocksdb(edir, &so, &store))) die_err("store", err);
  wd_state_t *state = wd_state_new(table, store, (size_t)cache_entries);
  wd_store_batch_t *sb = wd_store_batch_new();

  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = keys;
  go.records = records;
  go.topic_prefix = "shop.";
  wd_gen_t *gen = NULL;
  if ((err = wd_gen_new(&go, &gen))) die_err("generator", err);
  size_t gen_bytes = 3 * keys * 72; /* ~sizeof(wd_gen_key_t) per stream and key */
  long rss_base = bench_peak_rss_kb();

  /* per batch */
  size_t bmax = (size_t)batch;
  wd_row_t **recs = NULL;
  size_t nrecs = 0, cap_recs = 0;
  size_t *msg_first = malloc((bmax + 1) * sizeof(size_t));
  size_t *key_off = NULL;
  const uint8_t **kp = NULL;
  size_t *kl = NULL;
  wd_buf_t kbuf = {0};
  wd_changes_t changes;
  wd_changes_init(&changes);
  wd_changelog_t cl = {0};
  trace_t tr = {0};
  size_t nbatches = (records + bmax - 1) / bmax + 1;
  double *lat = malloc(nbatches * sizeof(*lat));
  size_t nb = 0;
  uint64_t nmsgs = 0, nchanges = 0, nout = 0, dead = 0, ms_total = 0;
  int64_t offsets[3][4] = {{0}};
  double engine_secs = 0, engine_cpu = 0, decode_secs = 0;
  uint64_t decode_bytes = 0;
  wd_merge_stats_t mst = {0};
  double step[5] = {0};
  for (;;) {
    /* generate + decode one batch (untimed) */
    double d0 = wd_mono_s();
    size_t nm = 0;
    nrecs = 0;
    wd_gen_msg_t gm;
    while (nm < bmax && wd_gen_next(gen, &gm)) {
      const wd_source_t *src = srcs[gm.stream_index < (int)nsrc ? gm.stream_index : 0];
      for (size_t i = 0; i < nsrc; i++)
        if (!strcmp(srcs[i]->topics[0], gm.topic)) src = srcs[i];
      int part = (int)(gm.order_id % 4);
      wd_kafka_meta_t meta = {gm.topic, part, offsets[gm.stream_index][part]++, gm.ts_ms, gm.key, gm.key_len};
      double dd = wd_mono_s();
      err = wd_decode_debezium_json(src, schema, &meta, gm.value, gm.value_len, &changes);
      decode_secs += wd_mono_s() - dd;
      decode_bytes += gm.value_len;
      msg_first[nm++] = nrecs;
      if (err) {
        dead++;
        wd_error_destroy(err);
        err = NULL;
        continue;
      }
      for (size_t k = 0; k < changes.count; k++) {
        if (nrecs == cap_recs) {
          cap_recs = cap_recs ? cap_recs * 2 : 4096;
          recs = realloc(recs, cap_recs * sizeof(*recs));
          key_off = realloc(key_off, (cap_recs + 1) * sizeof(*key_off));
          kp = realloc(kp, cap_recs * sizeof(*kp));
          kl = realloc(kl, cap_recs * sizeof(*kl));
        }
        recs[nrecs++] = wd_changes_take(&changes, k);
      }
    }
    msg_first[nm] = nrecs;
    (void)d0;
    if (nm == 0) break;
    nmsgs += nm;
    nchanges += nrecs;

    /* the engine (timed) */
    double t0 = wd_mono_s(), c0 = bench_cpu_thread();
    wd_buf_reset(&kbuf);
    for (size_t i = 0; i < nrecs; i++) {
      key_off[i] = kbuf.len;
      if (wd_row_key_encode(schema, recs[i], &kbuf)) die_err("key", NULL);
    }
    key_off[nrecs] = kbuf.len;
    for (size_t i = 0; i < nrecs; i++) {
      kp[i] = kbuf.data + key_off[i];
      kl[i] = key_off[i + 1] - key_off[i];
    }
    double s1 = wd_mono_s();
    if (nrecs && (err = wd_state_prefetch(state, nrecs, kp, kl))) die_err("prefetch", err);
    double s2 = wd_mono_s();
    for (size_t m = 0; m < nm; m++) {
      size_t f = msg_first[m], c = msg_first[m + 1] - f;
      if (!c) continue;
      wd_error_t *merr = wd_message_apply(table, wd_state_ops(), state, recs + f, c, &cl, &mst);
      if (merr) {
        if (merr->cls != WD_ERR_RECORD) die_err("apply", merr);
        dead++;
        wd_error_destroy(merr);
      }
    }
    nout += cl.n;
    wd_changelog_reset(table, &cl);
    double s3 = wd_mono_s();
    for (int t = 0; t < 3; t++)
      for (int p = 0; p < 4; p++)
        if (offsets[t][p] && wd_store_batch_set_offset(sb, srcs[t]->topics[0], p, offsets[t][p]))
          die_err("offset", NULL);
    wd_state_set_now(state, (uint64_t)wd_wall_ms());
    if ((err = wd_state_flush(state, sb))) die_err("flush", err);
    double s4 = wd_mono_s();
    for (size_t i = 0; i < nrecs; i++) wd_row_destroy(schema, recs[i]);
    double dt = wd_mono_s() - t0;
    step[0] += s1 - t0;
    step[1] += s2 - s1;
    step[2] += s3 - s2;
    step[3] += s4 - s3;
    step[4] += t0 + dt - s4;
    engine_secs += dt;
    engine_cpu += bench_cpu_thread() - c0;
    lat[nb++] = dt;
    for (size_t i = 0; i < nrecs; i++) trace_key(&tr, kp[i], kl[i]);
    trace_batch(&tr);
    ms_total += nm;
  }
  long rss_peak = bench_peak_rss_kb();
  uint64_t disk_engine = wd_store_disk_bytes(store);
  uint64_t dir_engine = bench_dir_bytes(edir);
  phase_t pe = {engine_secs, engine_cpu, 0, 0, nmsgs, nb};
  pe.p50 = bench_quantile(lat, nb, 0.50);
  pe.p99 = bench_quantile(lat, nb, 0.99);
  printf("workload: %" PRIu64 " keys, %" PRIu64 " source records (%" PRIu64 " change records, %" PRIu64
         " changelog rows, %" PRIu64 " rejected), batches of %ld, cache %ld entries\n",
         keys, nmsgs, nchanges, nout, dead, batch, cache_entries);
  print_phase("engine", &pe);
  printf("steps    key encode %.1f%%, prefetch (multi-get + decode) %.1f%%, apply + changelog %.1f%%, "
         "flush (encode + write) %.1f%%, free records %.1f%% of the engine time\n",
         100 * step[0] / engine_secs, 100 * step[1] / engine_secs, 100 * step[2] / engine_secs,
         100 * step[3] / engine_secs, 100 * step[4] / engine_secs);
  printf("decode   %.0f events/s (%.1f MB/s), measured inside this run, not part of the engine time\n",
         nmsgs / decode_secs, decode_bytes / decode_secs / 1e6);
  printf("memory   peak RSS %.1f MiB (generator state ~%.1f MiB of it; RSS before the run %.1f MiB)\n",
         rss_peak / 1024.0, gen_bytes / 1048576.0, rss_base / 1024.0);
  printf("disk     engine store %.1f MiB (SST + memtables %.1f MiB)\n", dir_engine / 1048576.0,
         disk_engine / 1048576.0);

  double ratio = 0;
  phase_t pc = {0};
  uint64_t disk_ceiling = 0;
  if (ceiling) {
    pool_t pool = {0};
    pool.cap = 4096;
    pool.v = calloc(pool.cap, sizeof(*pool.v));
    pool.len = calloc(pool.cap, sizeof(*pool.len));
    if ((err = wd_store_scan(store, pool_add, &pool))) die_err("scan", err);
    printf("entries  %" PRIu64 " stored entries, mean %.1f bytes\n", pool.seen,
           pool.seen ? (double)pool.total_len / pool.seen : 0.0);
    wd_state_destroy(state);
    state = NULL;
    wd_store_close(store);
    store = NULL;
    run_ceiling(cdir, &tr, &pool, nmsgs, &pc, &disk_ceiling);
    print_phase("ceiling", &pc);
    printf("disk     ceiling store %.1f MiB\n", disk_ceiling / 1048576.0);
    ratio = (pe.records / pe.cpu) / (pc.records / pc.cpu);
    printf("ratio    engine/ceiling %.3f (per core, cpu) %.3f (wall)\n", ratio,
           (pe.records / pe.secs) / (pc.records / pc.secs));
    for (size_t i = 0; i < pool.n; i++) free(pool.v[i]);
    free(pool.v);
    free(pool.len);
  }
  printf("RESULT keys=%" PRIu64 " records=%" PRIu64 " engine_rps=%.0f engine_rps_cpu=%.0f p50_ms=%.3f p99_ms=%.3f "
         "rss_mib=%.1f disk_mib=%.1f ceiling_rps=%.0f ceiling_rps_cpu=%.0f ceiling_p50_ms=%.3f ceiling_p99_ms=%.3f "
         "ratio_cpu=%.3f ratio_wall=%.3f decode_eps=%.0f\n",
         keys, nmsgs, pe.records / pe.secs, pe.records / pe.cpu, pe.p50 * 1e3, pe.p99 * 1e3, rss_peak / 1024.0,
         dir_engine / 1048576.0, ceiling ? pc.records / pc.secs : 0, ceiling ? pc.records / pc.cpu : 0, pc.p50 * 1e3,
         pc.p99 * 1e3, ratio, ceiling ? (pe.records / pe.secs) / (pc.records / pc.secs) : 0, nmsgs / decode_secs);
  (void)ms_total;
  wd_state_destroy(state);
  wd_store_close(store);
  wd_store_batch_destroy(sb);
  wd_changelog_free(table, &cl);
  wd_changes_free(&changes);
  wd_gen_destroy(gen);
  for (size_t i = 0; i < nsrc; i++) wd_source_destroy(srcs[i]);
  free(srcs);
  wd_table_destroy(table);
  wd_config_destroy(cfg);
  free(recs);
  free(key_off);
  free(kp);
  free(kl);
  free(msg_first);
  free(lat);
  wd_buf_free(&kbuf);
  wd_buf_free(&tr.bytes);
  free(tr.off);
  free(tr.batch_end);
  bench_rm_rf(dir);
  return 0;
}
