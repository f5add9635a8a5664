/*
 * bench/avro.c — Avro decode and encode rates, one thread, thread CPU time.
 *
 *   build-bench/bench/avro [--records 200000] [--keys 10000] [--runs 5] [--seed 1]
 *
 * Input: N Debezium Avro envelope records in the Confluent wire format, generated here with
 * avro-c from the fixtures' writer schemas (tests/fixtures/avro/schemas.json: envelope ids 1 and
 * 2, mixed, and the Avro key schema id 7): c/u/d over K keys (every field kind of the fixtures:
 * nullable unions, decimal bytes, Debezium Date / MicroTimestamp, timestamp-millis, arrays, maps,
 * a nested record), with a Kafka key in the wire format. The schemas are served by the in-process
 * registry stand-in of tests/support (HTTP on 127.0.0.1; fetched once per id, then cached).
 *
 * decode: wd_decode_debezium_avro with the source mapping of tests/unit/test_avro.c (15 columns,
 *   `address.city`, `$.source.ts_ms`, `$.source.lsn`, `$key.id`) into one reused wd_changes_t.
 *   Rate = source records / CPU s.
 * encode: the change rows the decode produced (+I, -U, +U, -D) through wd_avro_sink_encode_value
 *   (and, second figure, value + wd_avro_sink_encode_key as the pipeline does per row) into a
 *   reused buffer. Rate = changelog rows / CPU s.
 * An untimed pass first (schema fetches, allocator warm-up); then --runs timed runs of each, the
 * median is reported (min..max).
 */
#include <avro.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "changelog/avro.h"
#include "common/buf.h"
#include "ingest/decode_avro.h"
#include "ingest/schema_registry.h"
#include "ingest/source.h"
#include "tests/support/registry_standin.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

static const char *const COLS[] = {"id", "customer", "amount", "order_date", "created_at", "updated_at", "tags",
                                   "attrs", "city", "price", "paid", "src_ts", "lsn", "key_id", "note"};
static const char *const TYPES[] = {"BIGINT", "STRING", "DECIMAL(12,2)", "DATE", "TIMESTAMP(6)", "TIMESTAMP(3)",
                                    "ARRAY<STRING>", "MAP<STRING,BIGINT>", "STRING", "DOUBLE", "BOOLEAN",
                                    "TIMESTAMP(3)", "BIGINT", "BIGINT", "STRING"};
static const char *const SPECS[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "address.city", NULL, NULL,
                                    "$.source.ts_ms", "$.source.lsn", "$key.id", NULL};

static void die(const char *what, wd_error_t *err) {
  fprintf(stderr, "avro: %s: %s\n", what, err ? err->message : "failed");
  exit(1);
}

/* ---- the generator: Debezium envelopes with avro-c ---------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "avro: avro-c %s: %s\n", what, avro_strerror());
    exit(1);
  }
}

/* Sets union u to its null branch (0) or its value branch (1), returning the branch in *b. */
static void branch(avro_value_t *u, int which, avro_value_t *b) {
  check(avro_value_set_branch(u, which, b), "set_branch");
  if (!which) check(avro_value_set_null(b), "set_null");
}

/* Minimal big-endian two's complement of v (Avro decimal bytes). */
static size_t be_twos(int64_t v, uint8_t out[8]) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[7 - i] = (uint8_t)((uint64_t)v >> (8 * i));
  size_t s = 0;
  while (s < 7 && ((b[s] == 0 && !(b[s + 1] & 0x80)) || (b[s] == 0xff && (b[s + 1] & 0x80)))) s++;
  memcpy(out, b + s, 8 - s);
  return 8 - s;
}

/* Fills the Value record img (writer schema version 1 or 2) of key id from seed. */
static void fill_image(avro_value_t *img, int64_t id, uint64_t seed, int version) {
  avro_value_t f, b, e;
  char s[48];
  uint64_t r = seed;
  check(avro_value_get_by_name(img, "id", &f, NULL), "id");
  avro_value_set_long(&f, id);
  avro_value_get_by_name(img, "customer", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_STRING) {
    snprintf(s, sizeof(s), "customer-%" PRIu64, rnd(&r) % 100000);
    avro_value_set_string(&b, s);
  }
  avro_value_get_by_name(img, "amount", &f, NULL);
  branch(&f, rnd(&r) % 7 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_BYTES) {
    uint8_t d[8];
    size_t n = be_twos((int64_t)(rnd(&r) % 20000000) - 10000000, d);
    avro_value_set_bytes(&b, d, n);
  }
  avro_value_get_by_name(img, "order_date", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT32) avro_value_set_int(&b, 18000 + (int32_t)(rnd(&r) % 2000));
  avro_value_get_by_name(img, "created_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64) avro_value_set_long(&b, 1709287872000000LL + (int64_t)(rnd(&r) % 1000000000000ULL));
  avro_value_get_by_name(img, "updated_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64) avro_value_set_long(&b, 1709287872000LL + (int64_t)(rnd(&r) % 1000000000ULL));
  avro_value_get_by_name(img, "tags", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_ARRAY)
    for (int i = 0, n = (int)(rnd(&r) % 4); i < n; i++) {
      avro_value_append(&b, &e, NULL);
      snprintf(s, sizeof(s), "tag%d", (int)(rnd(&r) % 50));
      avro_value_set_string(&e, s);
    }
  avro_value_get_by_name(img, "attrs", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_MAP)
    for (int i = 0, n = (int)(rnd(&r) % 3); i < n; i++) {
      snprintf(s, sizeof(s), "k%d", i);
      avro_value_add(&b, s, &e, NULL, NULL);
      avro_value_set_long(&e, (int64_t)(rnd(&r) % 2001) - 1000);
    }
  avro_value_get_by_name(img, "address", &f, NULL);
  branch(&f, rnd(&r) % 4 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_RECORD) {
    avro_value_get_by_name(&b, "city", &e, NULL);
    snprintf(s, sizeof(s), "city-%d", (int)(rnd(&r) % 300));
    avro_value_set_string(&e, s);
    avro_value_t z, zb;
    avro_value_get_by_name(&b, "zip", &z, NULL);
    branch(&z, (int)(rnd(&r) & 1), &zb);
    if (avro_value_get_type(&zb) == AVRO_STRING) avro_value_set_string(&zb, "0150");
  }
  avro_value_get_by_name(img, "price", &f, NULL);
  avro_value_set_double(&f, ((double)(rnd(&r) % 2000000) - 1000000.0) / 3.0);
  avro_value_get_by_name(img, "paid", &f, NULL);
  avro_value_set_boolean(&f, (int)(rnd(&r) & 1));
  if (version == 1) {
    avro_value_get_by_name(img, "internal_flag", &f, NULL);
    avro_value_set_int(&f, 7);
  } else {
    avro_value_get_by_name(img, "note", &f, NULL);
    branch(&f, (int)(rnd(&r) & 1), &b);
    if (avro_value_get_type(&b) == AVRO_STRING) {
      snprintf(s, sizeof(s), "note %" PRIu64, rnd(&r) % 1000);
      avro_value_set_string(&b, s);
    }
  }
}

/* Fills envelope env: op, before (seed bseed) / after (seed aseed) images of key id. */
static void fill_envelope(avro_value_t *env, int version, char op, int64_t id, uint64_t bseed, uint64_t aseed,
                          int64_t ts_ms, int64_t lsn) {
  avro_value_t f, b;
  avro_value_reset(env);
  avro_value_get_by_name(env, "before", &f, NULL);
  branch(&f, op == 'u' || op == 'd', &b);
  if (op == 'u' || op == 'd') fill_image(&b, id, bseed, version);
  avro_value_get_by_name(env, "after", &f, NULL);
  branch(&f, op != 'd', &b);
  if (op != 'd') fill_image(&b, id, aseed, version);
  avro_value_t src, x;
  avro_value_get_by_name(env, "source", &src, NULL);
  static const char *const S[][2] = {{"version", "2.5.0.Final"}, {"connector", "postgresql"}, {"name", "shop"},
                                     {"db", "shop"}, {"table", "orders"}};
  for (size_t i = 0; i < 5; i++) {
    avro_value_get_by_name(&src, S[i][0], &x, NULL);
    avro_value_set_string(&x, S[i][1]);
  }
  avro_value_get_by_name(&src, "ts_ms", &x, NULL);
  avro_value_set_long(&x, ts_ms);
  avro_value_get_by_name(&src, "lsn", &x, NULL);
  branch(&x, 1, &b);
  avro_value_set_long(&b, lsn);
  char ops[2] = {op, 0};
  avro_value_get_by_name(env, "op", &f, NULL);
  avro_value_set_string(&f, ops);
  avro_value_get_by_name(env, "ts_ms", &f, NULL);
  branch(&f, 1, &b);
  avro_value_set_long(&b, ts_ms + 2);
  avro_value_get_by_name(env, "transaction", &f, NULL);
  branch(&f, 0, &b);
}

/* Appends value v in the wire format with schema id to out. */
static void wire_append(wd_buf_t *out, int32_t id, avro_value_t *v) {
  size_t sz = 0;
  check(avro_value_sizeof(v, &sz), "sizeof");
  uint8_t h[WD_WIRE_HEADER];
  wd_wire_header(id, h);
  wd_buf_append(out, h, WD_WIRE_HEADER);
  char *tmp = malloc(sz ? sz : 1);
  avro_writer_t w = avro_writer_memory(tmp, (int64_t)sz);
  check(avro_value_write(w, v), "write");
  avro_writer_free(w);
  wd_buf_append(out, tmp, sz);
  free(tmp);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "avro: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n) exit(1);
  s[n] = 0;
  fclose(f);
  return s;
}

static void report(const char *name, double *v, int n, const char *unit) {
  double lo = v[0], hi = v[0];
  for (int i = 1; i < n; i++) {
    if (v[i] < lo) lo = v[i];
    if (v[i] > hi) hi = v[i];
  }
  printf("  %-22s median %9.0f %s (min %.0f .. max %.0f)\n", name, bench_quantile(v, (size_t)n, 0.5), unit, lo, hi);
}

int main(int argc, char **argv) {
  uint64_t records = 200000, keys = 10000, seed = 1;
  int runs = 5;
  static const struct option lo[] = {
      {"records", 1, 0, 'r'}, {"keys", 1, 0, 'k'}, {"runs", 1, 0, 'n'}, {"seed", 1, 0, 's'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
      case 'r': records = strtoull(optarg, NULL, 10); break;
      case 'k': keys = strtoull(optarg, NULL, 10); break;
      case 'n': runs = atoi(optarg); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      default: fprintf(stderr, "usage: avro [--records N] [--keys K] [--runs R] [--seed S]\n"); return 2;
    }
  }
  if (!records || !keys || runs < 1) return 2;

  /* the writer schemas and the registry stand-in */
  char *sj = slurp(WD_SOURCE_DIR "/tests/fixtures/avro/schemas.json");
  json_t *schemas = json_loads(sj, 0, NULL);
  free(sj);
  if (!schemas) die("schemas.json", NULL);
  wd_standin_t *srv = wd_standin_start(NULL, NULL);
  if (!srv) die("registry stand-in", NULL);
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  avro_schema_t as[3];
  avro_value_iface_t *ifc[3];
  avro_value_t env[3];
  static const char *const IDS[] = {"1", "2", "7"};
  for (int i = 0; i < 3; i++) {
    const char *txt = json_string_value(json_object_get(schemas, IDS[i]));
    check(avro_schema_from_json_length(txt, strlen(txt), &as[i]), "schema");
    ifc[i] = avro_generic_class_from_schema(as[i]);
    check(avro_generic_value_new(ifc[i], &env[i]), "value_new");
  }
  json_decref(schemas);

  /* the input records */
  wd_buf_t vals = {0}, keysb = {0};
  size_t *voff = malloc((records + 1) * sizeof(size_t)), *koff = malloc((records + 1) * sizeof(size_t));
  uint64_t *cur = calloc(keys, sizeof(uint64_t)); /* seed of the key's current image, 0 = absent */
  uint64_t r = 0x9e3779b97f4a7c15ULL ^ seed;
  for (uint64_t i = 0; i < records; i++) {
    uint64_t key = rnd(&r) % keys;
    int ver = (rnd(&r) % 3 == 0) ? 2 : 1;
    uint64_t ns = rnd(&r) | 1;
    char op;
    if (!cur[key])
      op = (rnd(&r) % 8 == 0) ? 'r' : 'c';
    else
      op = (rnd(&r) % 10 == 0) ? 'd' : 'u';
    fill_envelope(&env[ver - 1], ver, op, (int64_t)key + 1, cur[key], ns, 1709287872000LL + (int64_t)i, (int64_t)i + 1);
    cur[key] = op == 'd' ? 0 : ns;
    voff[i] = vals.len;
    wire_append(&vals, ver, &env[ver - 1]);
    avro_value_t kf;
    avro_value_reset(&env[2]);
    avro_value_get_by_name(&env[2], "id", &kf, NULL);
    avro_value_set_long(&kf, (int64_t)key + 1);
    koff[i] = keysb.len;
    wire_append(&keysb, 7, &env[2]);
  }
  voff[records] = vals.len;
  koff[records] = keysb.len;
  free(cur);

  /* the table, the source, the decoder, the sink */
  wd_error_t *err;
  wd_schema_t *schema = NULL;
  wd_source_t *src = NULL;
  const char *pk[] = {"id"};
  if ((err = wd_schema_new(15, COLS, TYPES, 1, pk, &schema))) die("schema", err);
  if ((err = wd_source_new("orders", WD_FMT_DEBEZIUM_AVRO, &src))) die("source", err);
  for (size_t i = 0; i < 15; i++)
    if ((err = wd_source_add_column(src, schema, COLS[i], SPECS[i]))) die("source column", err);
  if ((err = wd_source_add_topic(src, "shop.public.orders")) || (err = wd_source_check(src, schema))) die("source", err);
  wd_registry_conf_t rc = {wd_standin_url(srv), NULL, NULL, 5000};
  wd_registry_t *reg = NULL;
  wd_avro_decoder_t *dec = NULL;
  wd_avro_sink_t *sink = NULL;
  if ((err = wd_registry_new(&rc, &reg)) || (err = wd_avro_decoder_new(reg, &dec))) die("decoder", err);
  if ((err = wd_avro_sink_new(schema, "orders_wide", &sink))) die("sink", err);
  wd_avro_sink_set_ids(sink, 21, 22);

  /* untimed pass: fetch the schemas, keep the change rows for the encoder */
  wd_changes_t chg;
  wd_changes_init(&chg);
  size_t nrows = 0, rcap = records * 2 + 2;
  wd_row_t **rows = malloc(rcap * sizeof(*rows));
  uint64_t errors = 0;
  for (size_t i = 0; i < records; i++) {
    wd_kafka_meta_t meta = {"shop.public.orders", 0, (int64_t)i, 0, keysb.data + koff[i], koff[i + 1] - koff[i]};
    if ((err = wd_decode_debezium_avro(dec, src, schema, &meta, vals.data + voff[i], voff[i + 1] - voff[i], &chg))) {
      fprintf(stderr, "avro: record %zu: %s\n", i, err->message);
      wd_error_destroy(err);
      errors++;
      continue;
    }
    for (size_t j = 0; j < chg.count; j++) rows[nrows++] = wd_changes_take(&chg, j);
  }
  if (errors) {
    fprintf(stderr, "avro: %" PRIu64 " decode errors\n", errors);
    return 1;
  }

  double *dr = malloc(runs * sizeof(double)), *ev = malloc(runs * sizeof(double)), *ek = malloc(runs * sizeof(double));
  wd_buf_t out = {0};
  size_t outbytes = 0, keybytes = 0;
  for (int run = 0; run < runs; run++) {
    double c0 = bench_cpu_thread();
    for (size_t i = 0; i < records; i++) {
      wd_kafka_meta_t meta = {"shop.public.orders", 0, (int64_t)i, 0, keysb.data + koff[i], koff[i + 1] - koff[i]};
      if ((err = wd_decode_debezium_avro(dec, src, schema, &meta, vals.data + voff[i], voff[i + 1] - voff[i], &chg)))
        die("decode", err);
    }
    dr[run] = (double)records / (bench_cpu_thread() - c0);
    c0 = bench_cpu_thread();
    outbytes = 0;
    for (size_t i = 0; i < nrows; i++) {
      wd_buf_reset(&out);
      if ((err = wd_avro_sink_encode_value(sink, rows[i], &out))) die("encode", err);
      outbytes += out.len;
    }
    ev[run] = (double)nrows / (bench_cpu_thread() - c0);
    c0 = bench_cpu_thread();
    keybytes = 0;
    for (size_t i = 0; i < nrows; i++) {
      wd_buf_reset(&out);
      if ((err = wd_avro_sink_encode_key(sink, rows[i], &out)) || (err = wd_avro_sink_encode_value(sink, rows[i], &out)))
        die("encode", err);
      keybytes += out.len;
    }
    ek[run] = (double)nrows / (bench_cpu_thread() - c0);
    printf("run %d: decode %.0f records/s, encode value %.0f rows/s, encode key+value %.0f rows/s (per core)\n", run + 1,
           dr[run], ev[run], ek[run]);
  }
  double inavg = (double)vals.len / (double)records, outavg = (double)outbytes / (double)nrows;
  printf("avro: %" PRIu64 " envelope records (%.0f B avg value, %.0f B avg key; writer schemas 1 and 2), %zu change rows "
         "(%.0f B avg value out), %d runs:\n",
         records, inavg, (double)keysb.len / (double)records, nrows, outavg, runs);
  report("decode", dr, runs, "records/s per core");
  report("encode value", ev, runs, "rows/s per core");
  report("encode key+value", ek, runs, "rows/s per core");
  double dm = bench_quantile(dr, runs, 0.5), em = bench_quantile(ev, runs, 0.5), km = bench_quantile(ek, runs, 0.5);
  printf("RESULT avro_decode_rps=%.0f avro_decode_mbps=%.1f avro_encode_rps=%.0f avro_encode_mbps=%.1f "
         "avro_encode_kv_rps=%.0f rows_per_record=%.2f\n",
         dm, dm * inavg / 1e6, em, em * outavg / 1e6, km, (double)nrows / (double)records);
  (void)keybytes;

  for (size_t i = 0; i < nrows; i++) wd_row_destroy(schema, rows[i]);
  free(rows);
  free(dr);
  free(ev);
  free(ek);
  wd_buf_free(&out);
  wd_changes_free(&chg);
  wd_avro_sink_destroy(sink);
  wd_avro_decoder_destroy(dec);
  wd_registry_destroy(reg);
  wd_source_destroy(src);
  wd_schema_destroy(schema);
  for (int i = 0; i < 3; i++) {
    avro_value_decref(&env[i]);
    avro_value_iface_decref(ifc[i]);
    avro_schema_decref(as[i]);
  }
  wd_standin_stop(srv);
  wd_buf_free(&vals);
  wd_buf_free(&keysb);
  free(voff);
  free(koff);
  return 0;
}
