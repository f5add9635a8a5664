/*
 * bench/decode.c — Debezium JSON decode rate: the generator's events (app/cli/generate.h) through
 * wd_decode_debezium_json with the sources of configs/demo.yaml, one thread.
 *
 *   build-bench/bench/decode [--records 200000] [--keys 100000] [--passes 5] [--config F]
 *
 * The events are generated into memory first; then each pass decodes all of them (into one
 * reused wd_changes_t, as the pipeline does) and the best and median pass are reported in
 * events/s per core (thread CPU time) and MB/s of JSON.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "bench/bench_util.h"
#include "common/buf.h"
#include "ingest/source.h"
#include "join/merge.h"

#ifndef WD_SOURCE_DIR
#define WD_SOURCE_DIR "."
#endif

int main(int argc, char **argv) {
  const char *config = WD_SOURCE_DIR "/configs/demo.yaml";
  uint64_t records = 200000, keys = 100000;
  int passes = 5;
  static const struct option lo[] = {
      {"config", 1, 0, 'c'}, {"records", 1, 0, 'r'}, {"keys", 1, 0, 'k'}, {"passes", 1, 0, 'p'}, {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
    case 'c': config = optarg; break;
    case 'r': records = strtoull(optarg, NULL, 10); break;
    case 'k': keys = strtoull(optarg, NULL, 10); break;
    case 'p': passes = atoi(optarg); break;
    default: fprintf(stderr, "usage: decode [--records N] [--keys K] [--passes P] [--config F]\n"); return 2;
    }
  }
  wd_error_t *err = NULL;
  wd_config_t *cfg = NULL;
  wd_table_t *table = NULL;
  if ((err = wd_config_load(config, &cfg)) || (err = wd_config_build_table(cfg, &table))) {
    fprintf(stderr, "decode: %s\n", err->message);
    return 1;
  }
  const wd_schema_t *schema = wd_table_schema(table);
  size_t nsrc = cfg->sources.n;
  wd_source_t **srcs = calloc(nsrc, sizeof(*srcs));
  for (size_t i = 0; i < nsrc; i++)
    if ((err = wd_config_build_source(cfg, i, schema, &srcs[i]))) {
      fprintf(stderr, "decode: %s\n", err->message);
      return 1;
    }
  wd_gen_opts_t go = {0};
  go.keys = keys;
  go.records = records;
  go.seed = 1;
  go.topic_prefix = "shop.";
  wd_gen_t *gen = NULL;
  if ((err = wd_gen_new(&go, &gen))) return 1;
  wd_buf_t vals = {0}, keysb = {0};
  size_t *voff = malloc((records + 1) * sizeof(size_t)), *koff = malloc((records + 1) * sizeof(size_t));
  const wd_source_t **msrc = malloc(records * sizeof(*msrc));
  size_t n = 0;
  wd_gen_msg_t m;
  while (n < records && wd_gen_next(gen, &m)) {
    voff[n] = vals.len;
    koff[n] = keysb.len;
    wd_buf_append(&vals, m.value, m.value_len);
    wd_buf_append(&keysb, m.key, m.key_len);
    msrc[n] = NULL;
    for (size_t i = 0; i < nsrc; i++)
      if (!strcmp(srcs[i]->topics[0], m.topic)) msrc[n] = srcs[i];
    n++;
  }
  voff[n] = vals.len;
  koff[n] = keysb.len;
  wd_changes_t chg;
  wd_changes_init(&chg);
  double *rate = malloc(passes * sizeof(double));
  uint64_t nrec = 0, errors = 0;
  for (int p = 0; p < passes; p++) {
    double c0 = bench_cpu_thread();
    for (size_t i = 0; i < n; i++) {
      wd_kafka_meta_t meta = {msrc[i]->topics[0], 0, (int64_t)i, 0, keysb.data + koff[i], koff[i + 1] - koff[i]};
      err = wd_decode_debezium_json(msrc[i], schema, &meta, vals.data + voff[i], voff[i + 1] - voff[i], &chg);
      if (err) {
        errors++;
        wd_error_destroy(err);
      }
      if (p == 0) nrec += chg.count;
    }
    rate[p] = n / (bench_cpu_thread() - c0);
  }
  double mb = (double)vals.len / n;
  double med = bench_quantile(rate, passes, 0.5), best = rate[passes - 1];
  printf("decode: %zu events (%.0f bytes avg, %" PRIu64 " change records, %" PRIu64 " errors), %d passes: "
         "median %.0f events/s per core (%.1f MB/s), best %.0f\n",
         n, mb, nrec, errors, passes, med, med * mb / 1e6, best);
  printf("RESULT decode_eps=%.0f decode_mbps=%.1f best_eps=%.0f\n", med, med * mb / 1e6, best);
  wd_changes_free(&chg);
  for (size_t i = 0; i < nsrc; i++) wd_source_destroy(srcs[i]);
  free(srcs);
  free(rate);
  free(voff);
  free(koff);
  free(msrc);
  wd_buf_free(&vals);
  wd_buf_free(&keysb);
  wd_gen_destroy(gen);
  wd_table_destroy(table);
  wd_config_destroy(cfg);
  return 0;
}
