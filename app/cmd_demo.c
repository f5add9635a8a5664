/*
 * app/cmd_demo.c — `widen demo`: the whole job with nothing installed. On librdkafka's
 * in-process mock cluster it produces the example's events (app/generate.h: three Debezium
 * streams with late records and deletes, plus one undecodable record), runs the pipeline of
 * configs/demo.yaml (compiled in), prints the changelog read back from the output topic and the
 * final wide rows from the state store.
 */
#include <getopt.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/commands.h"
#include "app/config.h"
#include "app/generate.h"
#include "app/pipeline.h"
#include "changelog/changelog.h"
#include "common/log.h"
#include "demo_config.h"
#include "ingest/consumer.h"
#include "ingest/mock_cluster.h"
#include "join/state.h"
#include "sink/producer.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: widen demo [--keys N] [--records M] [--seed S] [--verbose]\n"
          "\n"
          "Runs the example pipeline (configs/demo.yaml) end to end on an in-process mock Kafka cluster:\n"
          "produces M generated Debezium events over N orders on shop.orders, shop.payments and\n"
          "shop.shipments (about 20%% late, some deletes, one undecodable record), widens them into one\n"
          "row per order, then prints the changelog read back from shop.orders_wide and the final rows.\n"
          "Defaults: --keys 3 --records 20 --seed 9. --verbose prints full rows and the logs.\n");
}

/* Sends the generated workload and one bad record. */
static wd_error_t *produce_events(const char *brokers, uint64_t keys, uint64_t records, uint64_t seed,
                                  uint64_t *late, uint64_t *deletes) {
  wd_kafka_conf_t kc = {0};
  wd_producer_t *prod = NULL;
  wd_gen_t *g = NULL;
  wd_error_t *err = wd_kafka_conf_set_brokers(&kc, brokers);
  if (!err) err = wd_producer_new(&kc, &prod);
  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = keys;
  go.records = records;
  go.topic_prefix = "shop.";
  go.delete_ratio = 0.1;
  if (!err) err = wd_gen_new(&go, &g);
  wd_gen_msg_t m;
  while (!err && wd_gen_next(g, &m)) {
    *late += m.late;
    *deletes += m.op == 'd';
    err = wd_producer_send(prod, m.topic, m.key, m.key_len, m.value, m.value_len, NULL, 0);
  }
  static const char bad[] = "{\"before\":null,\"after\":{\"order_id\":1,\"pay_amount\":\"12.3x\"},\"op\":\"c\"}";
  if (!err) err = wd_producer_send(prod, "shop.payments", "{\"order_id\":1}", 14, bad, sizeof(bad) - 1, NULL, 0);
  if (!err) err = wd_producer_wait_acked(prod, 30000);
  wd_gen_destroy(g);
  wd_producer_destroy(prod);
  wd_kafka_conf_clear(&kc);
  return err;
}

/* Prints every record of topic as widen tail would, until idle. */
/* Prints tail lines ({"op","key","row"}) compactly: +I with its non-NULL columns, an update as
 * the columns that changed (the -U line is remembered in *before), -D with the key. */
static void print_compact(char *lines, json_t **before) {
  for (char *line = lines, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = 0;
    json_t *j = json_loads(line, 0, NULL);
    if (!j) continue;
    const char *op = json_string_value(json_object_get(j, "op"));
    json_t *row = json_object_get(j, "row");
    char *key = json_dumps(json_object_get(j, "key"), JSON_COMPACT);
    if (op && !strcmp(op, "-U")) {
      json_decref(*before);
      *before = json_incref(row);
    } else if (op) {
      printf("  %s %s", op, key ? key : "");
      const char *col;
      json_t *v;
      int shown = 0;
      json_object_foreach(row, col, v) {
        json_t *old = !strcmp(op, "+U") && *before ? json_object_get(*before, col) : NULL;
        bool show = !strcmp(op, "+I") ? !json_is_null(v) : !strcmp(op, "+U") ? !old || !json_equal(old, v) : false;
        if (!show) continue;
        char *o = old ? json_dumps(old, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        char *n = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("%s %s=%s%s%s", shown++ ? "," : "", col, o ? o : "", o ? "->" : "", n ? n : "");
        free(o);
        free(n);
      }
      if (!strcmp(op, "+U") && !shown) printf(" (no change)");
      printf("\n");
    }
    free(key);
    json_decref(j);
  }
}

static wd_error_t *print_topic(const char *brokers, const char *topic, wd_changelog_format_t fmt, bool verbose,
                               size_t *count) {
  json_t *before = NULL;
  wd_kafka_conf_t kc = {0};
  wd_consumer_t *c = NULL;
  wd_buf_t out = {0};
  wd_kmsg_t msgs[256];
  const char *topics[] = {topic};
  wd_error_t *err = wd_kafka_conf_set_brokers(&kc, brokers);
  if (!err) err = wd_kafka_conf_set(&kc, "auto.offset.reset", "earliest");
  if (!err) err = wd_consumer_new(&kc, topics, 1, NULL, NULL, &c);
  int idle = 0;
  while (!err && idle < 3) {
    size_t n = 0;
    if ((err = wd_consumer_poll_batch(c, 256, 500, msgs, &n))) break;
    idle = n ? 0 : idle + 1;
    for (size_t i = 0; i < n && !err; i++) {
      wd_buf_reset(&out);
      size_t lines = 0;
      err = wd_changelog_decode_tail(fmt, msgs[i].key, msgs[i].key_len, msgs[i].value, msgs[i].value_len, &out, &lines);
      if (!err && verbose) fwrite(out.data, 1, out.len, stdout);
      if (!err && !verbose) print_compact((char *)out.data, &before);
      *count += lines;
    }
    wd_kmsg_release(msgs, n);
  }
  wd_consumer_destroy(c);
  wd_kafka_conf_clear(&kc);
  wd_buf_free(&out);
  json_decref(before);
  return err;
}

static int print_row(void *ctx, const wd_row_t *row) {
  const wd_schema_t *schema = ctx;
  wd_buf_t b = {0};
  if (wd_changelog_put_row(&b, schema, row)) return 1;
  printf("  %s\n", (const char *)b.data);
  wd_buf_free(&b);
  return 0;
}

int wd_cmd_demo(int argc, char **argv) {
  static const struct option longopts[] = {{"keys", required_argument, NULL, 'k'},
                                           {"records", required_argument, NULL, 'r'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"verbose", no_argument, NULL, 'v'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  uint64_t keys = 3, records = 20, seed = 9;
  bool verbose = false;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
      case 'k': keys = strtoull(optarg, NULL, 10); break;
      case 'r': records = strtoull(optarg, NULL, 10); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'v': verbose = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 1;
    }
  }
  if (optind != argc || keys == 0 || records == 0) {
    usage(stderr);
    return 1;
  }
  if (!verbose) wd_log_set_level(WD_LOG_WARN);
  int rc = 1;
  char dir[] = "/tmp/widen-demo-XXXXXX";
  char cfg_path[128], state_dir[128];
  wd_mock_cluster_t *mc = NULL;
  wd_config_t *cfg = NULL;
  wd_pipeline_t *p = NULL;
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  wd_state_t *state = NULL;
  wd_error_t *err = NULL;
  bool made = mkdtemp(dir) != NULL;
  if (!made) {
    perror("widen demo: mkdtemp");
    return 1;
  }
  snprintf(cfg_path, sizeof(cfg_path), "%s/demo.yaml", dir);
  snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
  FILE *f = fopen(cfg_path, "w");
  if (!f || fputs(wd_demo_config_yaml, f) < 0 || fclose(f)) {
    fprintf(stderr, "widen demo: cannot write %s\n", cfg_path);
    goto done;
  }

  printf("== widen demo: %" PRIu64 " orders, %" PRIu64 " Debezium events on a mock Kafka cluster\n", keys, records);
  if ((err = wd_mock_cluster_new(1, &mc))) goto done;
  const char *brokers = wd_mock_cluster_bootstraps(mc);
  static const char *const topics[] = {"shop.orders", "shop.payments", "shop.shipments", "shop.orders_wide",
                                       "shop.orders_wide.dlq"};
  for (size_t i = 0; i < 5 && !err; i++) err = wd_mock_cluster_topic(mc, topics[i], i == 4 ? 1 : 4);
  if (err) goto done;
  setenv("WIDEN_BROKERS", brokers, 1);
  uint64_t late = 0, deletes = 0;
  if ((err = produce_events(brokers, keys, records, seed, &late, &deletes))) goto done;
  printf("-- produced %" PRIu64 " events (%" PRIu64 " late, %" PRIu64
         " deletes) to shop.orders, shop.payments, shop.shipments, plus 1 undecodable payment\n",
         records, late, deletes);

  if ((err = wd_config_load(cfg_path, &cfg))) goto done;
  wd_pipeline_opts_t opts = {0};
  opts.state_dir = state_dir;
  opts.quiet = true;
  opts.from_ms = -1;
  opts.max_idle_ms = 2000;
  /* librdkafka's mock cluster cannot do transactions (no read_committed, transactional offsets
   * discarded): the demo runs at-least-once; `widen run` on a real broker defaults to exactly-once */
  cfg->pipeline.processing_guarantee = WD_CONFIG_AT_LEAST_ONCE;
  printf("-- running the pipeline of configs/demo.yaml (partial-update, one sequence group per stream; at-least-once: "
         "the in-process mock cluster cannot do transactions, `widen run` on a real broker is exactly-once)\n");
  if ((err = wd_pipeline_new(cfg, &opts, &p))) goto done;
  if ((err = wd_pipeline_run(p))) goto done;
  wd_pipeline_stats_t ps;
  wd_pipeline_get_stats(p, &ps);
  wd_pipeline_destroy(p);
  p = NULL;
  printf("-- %" PRIu64 " records in, %" PRIu64 " changelog rows out in %" PRIu64
         " messages (an update is one message: -U and +U), %" PRIu64 " dead-lettered to %s\n",
         ps.records_in, ps.changes_out, ps.messages_out, ps.dead_lettered, cfg->sink.dead_letter_topic);

  printf("-- the changelog on %s (%s):\n", cfg->sink.topic,
         verbose ? "as `widen tail` prints it" : "per record: row kind, key, the columns it sets or changes; --verbose "
                                                  "for full rows");
  size_t lines = 0;
  if ((err = print_topic(brokers, cfg->sink.topic, WD_CHANGELOG_DEBEZIUM_JSON, verbose, &lines))) goto done;

  printf("-- the final wide rows (state store):\n");
  if ((err = wd_config_build_table(cfg, &t))) goto done;
  if ((err = wd_store_open_rocksdb(state_dir, NULL, &st))) goto done;
  if (!(state = wd_state_new(t, st, 0))) {
    err = wd_error_nomem();
    goto done;
  }
  wd_row_t **rows = NULL;
  size_t nrows = 0;
  if ((err = wd_state_rows_sorted(state, &rows, &nrows))) goto done;
  for (size_t i = 0; i < nrows; i++) print_row((void *)wd_table_schema(t), rows[i]);
  wd_state_rows_free(state, rows, nrows);
  printf("== done: %zu changelog records; try it on a real broker with the README's walkthrough\n", lines);
  rc = 0;
done:
  if (err) fprintf(stderr, "widen demo: %s\n", err->message);
  wd_error_destroy(err);
  wd_state_destroy(state);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_pipeline_destroy(p);
  wd_config_destroy(cfg);
  wd_mock_cluster_destroy(mc);
  if (made) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "widen demo: could not remove %s\n", dir);
  }
  return rc;
}
