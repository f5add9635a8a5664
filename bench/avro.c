/*
 * bench/avro.c — Avro decode and encode rates, one thread, thread CPU time.
 *
 *   build-bench/bench/avro [--records 200000] [--keys 10000] [--runs 5] [--seed 1] [--generic]
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
 *   Rate = source records / CPU s. --generic: the decoder reads with avro-c's generic value
 *   (wd_avro_decoder_set_generic), the reference path, instead of its direct binary walk.
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

#include "bench/avro_gen.h"
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

static const char *const COLS[] = {"id",         "customer", "amount", "order_date", "created_at",
                                   "updated_at", "tags",     "attrs",  "city",       "price",
                                   "paid",       "src_ts",   "lsn",    "key_id",     "note"};
static const char *const TYPES[] = {"BIGINT",       "STRING",       "DECIMAL(12,2)", "DATE",
                                    "TIMESTAMP(6)", "TIMESTAMP(3)", "ARRAY<STRING>", "MAP<STRING,BIGINT>",
                                    "STRING",       "DOUBLE",       "BOOLEAN",       "TIMESTAMP(3)",
                                    "BIGINT",       "BIGINT",       "STRING"};
static const char *const SPECS[] = {
    NULL,           NULL,      NULL, NULL, NULL, NULL, NULL, NULL, "address.city", NULL, NULL, "$.source.ts_ms",
    "$.source.lsn", "$key.id", NULL};

static void die(const char *what, wd_error_t *err) {
  fprintf(stderr, "avro: %s: %s\n", what, err ? err->message : "failed");
  exit(1);
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
  bool generic = false;
  static const struct option lo[] = {{"records", 1, 0, 'r'}, {"keys", 1, 0, 'k'},    {"runs", 1, 0, 'n'},
                                     {"seed", 1, 0, 's'},    {"generic", 0, 0, 'g'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'r': records = strtoull(optarg, NULL, 10); break;
    case 'k': keys = strtoull(optarg, NULL, 10); break;
    case 'n': runs = atoi(optarg); break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'g': generic = true; break;
    default: fprintf(stderr, "usage: avro [--records N] [--keys K] [--runs R] [--seed S] [--generic]\n"); return 2;
    }
  }
  if (!records || !keys || runs < 1) return 2;

  /* the writer schemas and the registry stand-in */
  char *sj = wd_bench_slurp(WD_SOURCE_DIR "/tests/fixtures/avro/schemas.json");
  json_t *schemas = json_loads(sj, 0, NULL);
  free(sj);
  if (!schemas) die("schemas.json", NULL);
  wd_standin_t *srv = wd_standin_start(NULL, NULL);
  if (!srv) die("registry stand-in", NULL);
  const char *k;
  json_t *v;
  json_object_foreach(schemas, k, v) wd_standin_put(srv, atoi(k), json_string_value(v));
  /* the input records */
  wd_bench_avro_input_t in;
  wd_bench_avro_generate(schemas, records, keys, seed, &in);
  json_decref(schemas);
  const wd_buf_t vals = in.vals, keysb = in.keys;
  const size_t *voff = in.voff, *koff = in.koff;

  /* the table, the source, the decoder, the sink */
  wd_error_t *err;
  wd_schema_t *schema = NULL;
  wd_source_t *src = NULL;
  const char *pk[] = {"id"};
  if ((err = wd_schema_new(15, COLS, TYPES, 1, pk, &schema))) die("schema", err);
  if ((err = wd_source_new("orders", WD_FMT_DEBEZIUM_AVRO, &src))) die("source", err);
  for (size_t i = 0; i < 15; i++)
    if ((err = wd_source_add_column(src, schema, COLS[i], SPECS[i]))) die("source column", err);
  if ((err = wd_source_add_topic(src, "shop.public.orders")) || (err = wd_source_check(src, schema)))
    die("source", err);
  wd_registry_conf_t rc = {wd_standin_url(srv), NULL, NULL, 5000};
  wd_registry_t *reg = NULL;
  wd_avro_decoder_t *dec = NULL;
  wd_avro_sink_t *sink = NULL;
  if ((err = wd_registry_new(&rc, &reg)) || (err = wd_avro_decoder_new(reg, &dec))) die("decoder", err);
  wd_avro_decoder_set_generic(dec, generic);
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
      if ((err = wd_avro_sink_encode_key(sink, rows[i], &out)) ||
          (err = wd_avro_sink_encode_value(sink, rows[i], &out)))
        die("encode", err);
      keybytes += out.len;
    }
    ek[run] = (double)nrows / (bench_cpu_thread() - c0);
    printf("run %d: decode %.0f records/s, encode value %.0f rows/s, encode key+value %.0f rows/s (per core)\n",
           run + 1, dr[run], ev[run], ek[run]);
  }
  double inavg = (double)vals.len / (double)records, outavg = (double)outbytes / (double)nrows;
  printf("avro: %" PRIu64
         " envelope records (%.0f B avg value, %.0f B avg key; writer schemas 1 and 2), %zu change rows "
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
  wd_standin_stop(srv);
  wd_bench_avro_input_free(&in);
  return 0;
}
