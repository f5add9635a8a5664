/*
 * app/cli/cmd_demo.c — `widen demo`: the whole job with nothing installed. On librdkafka's
 * in-process mock cluster it produces the example's events (app/cli/generate.h: three Debezium
 * streams with late records and deletes, plus one undecodable record), runs the pipeline of
 * configs/demo.yaml (compiled in), prints the changelog read back from the output topic and the
 * final wide rows from the state store.
 */
#include <getopt.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli/commands.h"
#include "app/config/config.h"
#include "app/cli/generate.h"
#include "app/runtime/pipeline.h"
#include "app/cli/cli.h"
#include "changelog/changelog.h"
#include "common/log.h"
#include "demo_config.h"
#include "ingest/consumer.h"
#include "ingest/mock_cluster.h"
#include "join/state.h"
#include "sink/producer.h"

static void usage(FILE *f) {
  fprintf(f, "usage: widen demo [--keys N] [--records M] [--seed S] [--verbose]\n"
             "\n"
             "Runs the example pipeline (configs/demo.yaml) end to end on an in-process mock Kafka cluster:\n"
             "M generated Debezium events over N orders on shop.orders, shop.payments and shop.shipments\n"
             "(about 20%% late, some deletes, one payment with a type error) are produced one at a time;\n"
             "after each the pipeline applies it and the demo prints the event and the changelog it caused\n"
             "on shop.orders_wide (or its dead letter), then the final wide rows. The same on every run.\n"
             "Defaults: --keys 3 --records 20 --seed 9. --verbose prints full rows and the logs.\n");
}

/* One input event of the demo, copied from the generator. */
typedef struct {
  char *topic, *key, *value;
  const char *stream; /* static: "orders", "payments", "shipments", or NULL for the bad record */
  uint64_t order_id;
  int64_t version, newest; /* newest: the stream's newest version of the order before this one */
  char op;
  bool late;
} demo_event_t;

static void events_free(demo_event_t *ev, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(ev[i].topic);
    free(ev[i].key);
    free(ev[i].value);
  }
  free(ev);
}

/* The generated workload, in the order it is produced, with the bad record (a payment whose
 * pay_amount is not a DECIMAL: a type error) after the middle event. */
static wd_error_t *make_events(uint64_t keys, uint64_t records, uint64_t seed, demo_event_t **out, size_t *n) {
  static const char *const STREAMS[] = {"orders", "payments", "shipments"};
  wd_gen_t *g = NULL;
  wd_gen_opts_t go = {0};
  go.seed = seed;
  go.keys = keys;
  go.records = records;
  go.topic_prefix = "shop.";
  go.delete_ratio = 0.1;
  *n = 0;
  demo_event_t *ev = calloc(records + 1, sizeof(*ev));
  int64_t *newest = calloc(3 * (keys + 1), sizeof(*newest));
  wd_error_t *err = ev && newest ? wd_gen_new(&go, &g) : wd_error_nomem();
  wd_gen_msg_t m;
  while (!err && *n < records + 1) {
    if (*n == records / 2) { /* the bad record */
      static const char bad[] = "{\"before\":null,\"after\":{\"order_id\":1,\"pay_amount\":\"12.3x\","
                                "\"pay_method\":\"card\",\"pay_status\":\"PAID\",\"pay_version\":99},\"op\":\"c\"}";
      demo_event_t *e = &ev[(*n)++];
      e->topic = strdup("shop.payments");
      e->key = strdup("{\"order_id\":1}");
      e->value = strdup(bad);
      e->order_id = 1;
      e->op = 'c';
      if (!e->topic || !e->key || !e->value) err = wd_error_nomem();
      continue;
    }
    if (!wd_gen_next(g, &m)) break;
    demo_event_t *e = &ev[(*n)++];
    e->topic = strdup(m.topic);
    e->key = strndup(m.key, m.key_len);
    e->value = strndup(m.value, m.value_len);
    e->stream = STREAMS[m.stream_index < 3 ? m.stream_index : 0];
    e->order_id = m.order_id;
    e->version = m.version;
    e->op = m.op;
    e->late = m.late;
    int64_t *nv = &newest[3 * (m.order_id <= keys ? m.order_id : 0) + (m.stream_index < 3 ? m.stream_index : 0)];
    e->newest = *nv;
    if (m.version > *nv) *nv = m.version;
    if (!e->topic || !e->key || !e->value) err = wd_error_nomem();
  }
  wd_gen_destroy(g);
  free(newest);
  if (err) {
    events_free(ev, *n);
    *n = 0;
    return err;
  }
  *out = ev;
  return NULL;
}

/* Whether s ends with suffix (and has something before it). */
static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

/* Prints one input event: number, stream, order, what it is, its columns (no key, version or
 * timestamps; a delete the sequence its before image carries); a late one says it is older than
 * what the stream already gave. */
static void print_event(size_t i, const demo_event_t *e) {
  json_t *j = json_loads(e->value, 0, NULL);
  const char *what = e->op == 'c' ? "insert" : e->op == 'u' ? "update" : e->op == 'd' ? "DELETE" : "?";
  printf("#%02zu %-9s order %" PRIu64 "  %s", i + 1, e->stream ? e->stream : "payments", e->order_id, what);
  if (e->stream) printf(" v%" PRId64, e->version);
  json_t *img = json_object_get(j, e->op == 'd' ? "before" : "after");
  const char *col;
  json_t *v;
  int shown = 0;
  json_object_foreach(img, col, v) {
    bool version = ends_with(col, "_version");
    if (e->op == 'd') { /* a delete carries the deleted row, so its sequence is the row's last version */
      if (version && json_is_integer(v))
        printf(" (its before image carries %s=%" JSON_INTEGER_FORMAT ")", col, json_integer_value(v));
      continue;
    }
    if (!strcmp(col, "order_id") || version || ends_with(col, "_ts")) continue;
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    printf("%s %s=%s", shown++ ? "," : "", col, t ? t : "?");
    free(t);
  }
  printf("\n");
  if (!e->stream)
    printf("      TYPE ERROR: pay_amount \"12.3x\" is not a number for the DECIMAL(10,2) column paid_amount\n");
  if (e->late)
    printf("      LATE: v%" PRId64 " arrives after v%" PRId64 " of this order's %s; its sequence group keeps the "
           "newer values, so it changes nothing\n",
           e->version, e->newest, e->stream);
  json_decref(j);
}

/* Prints changelog records (tail lines {"op","key","row"}) compactly: +I with its non-NULL
 * columns, an update as the columns that changed (the -U line is remembered in *before), -D as
 * a delete of the row; an update that only clears columns says it is a delete's. */
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
    } else if (op && !strcmp(op, "-D")) {
      printf("      -> -D %s (the row is deleted)\n", key ? key : "");
    } else if (op) {
      printf("      -> %s %s", op, key ? key : "");
      const char *col;
      json_t *v;
      int shown = 0, cleared = 0;
      json_object_foreach(row, col, v) {
        json_t *old = !strcmp(op, "+U") && *before ? json_object_get(*before, col) : NULL;
        bool show = !strcmp(op, "+I") ? !json_is_null(v) : !strcmp(op, "+U") ? !old || !json_equal(old, v) : false;
        if (!show) continue;
        cleared += json_is_null(v);
        char *o = old ? json_dumps(old, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        char *n = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("%s %s=%s%s%s", shown++ ? "," : "", col, o ? o : "", o ? "->" : "", n ? n : "");
        free(o);
        free(n);
      }
      if (!strcmp(op, "+U") && !shown) printf(" (no change)");
      if (shown && cleared == shown) printf("  (the delete clears this stream's columns; the row stays)");
      printf("\n");
    }
    free(key);
    json_decref(j);
  }
}

/* Reads what arrived on consumer c within about wait_ms (at least want records when want > 0):
 * changelog records printed compactly (or as tail lines with verbose), dead letters with their
 * reason. Adds the changelog lines to *lines. */
static wd_error_t *drain(wd_consumer_t *c, bool dlq, size_t want, bool verbose, json_t **before, size_t *lines) {
  wd_kmsg_t msgs[64];
  wd_buf_t out = {0};
  wd_error_t *err = NULL;
  size_t got = 0;
  for (int tries = 0; !err && tries < 40 && (got < want || tries == 0); tries++) {
    size_t n = 0;
    if ((err = wd_consumer_poll_batch(c, 64, got < want ? 100 : 20, msgs, &n))) break;
    for (size_t i = 0; i < n && !err; i++) {
      got++;
      if (dlq) {
        const char *name;
        const void *val;
        size_t len;
        for (size_t h = 0; wd_kmsg_header(&msgs[i], h, &name, &val, &len) == 0; h++)
          if (!strcmp(name, "widen.error.message"))
            printf("      -> dead-lettered to %s: %.*s\n", msgs[i].topic, (int)len, (const char *)val);
        continue;
      }
      wd_buf_reset(&out);
      size_t nl = 0;
      err = wd_changelog_decode_tail(WD_CHANGELOG_DEBEZIUM_JSON, msgs[i].key, msgs[i].key_len, msgs[i].value,
                                     msgs[i].value_len, &out, &nl);
      if (!err && verbose) fwrite(out.data, 1, out.len, stdout);
      if (!err && !verbose) print_compact((char *)out.data, before);
      *lines += nl;
    }
    wd_kmsg_release(msgs, n);
  }
  wd_buf_free(&out);
  return err;
}

/* librdkafka settings for a quick round trip per event on the in-process cluster (the demo runs
 * one short pipeline per event): fetches return at once instead of waiting for more data. */
static const char *const QUICK[][2] = {{"fetch.wait.max.ms", "5"}, {"fetch.error.backoff.ms", "5"}};

static wd_error_t *quick_fetches(wd_config_pairs_t *props) {
  size_t n = sizeof(QUICK) / sizeof(*QUICK);
  wd_config_pair_t *v = realloc(props->v, (props->n + n) * sizeof(*v));
  if (!v) return wd_error_nomem();
  props->v = v;
  for (size_t i = 0; i < n; i++) {
    wd_config_pair_t *pr = &props->v[props->n];
    memset(pr, 0, sizeof(*pr));
    pr->key = strdup(QUICK[i][0]);
    pr->value = strdup(QUICK[i][1]);
    props->n++;
    if (!pr->key || !pr->value) return wd_error_nomem();
  }
  return NULL;
}

static int64_t demo_from_beginning(void *ctx, const char *topic, int32_t partition) {
  (void)ctx;
  (void)topic;
  (void)partition;
  return WD_OFFSET_BEGINNING;
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
  static const struct option longopts[] = {
      {"keys", required_argument, NULL, 'k'}, {"records", required_argument, NULL, 'r'},
      {"seed", required_argument, NULL, 's'}, {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},       {0}};
  uint64_t keys = 3, records = 20, seed = 9;
  bool verbose = false;
  int ch;
  optind = 1;
  while ((ch = wd_cli_getopt("demo", argc, argv, "h", longopts)) != -1) {
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
  if (!verbose) wd_log_set_level(WD_LOG_ERROR); /* the demo prints the dead letter itself */
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
  demo_event_t *events = NULL;
  size_t nevents = 0;
  wd_producer_t *prod = NULL;
  wd_consumer_t *out_c = NULL, *dlq_c = NULL;
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

  if ((err = make_events(keys, records, seed, &events, &nevents))) goto done;
  /* the header counts the events the demo lists: the generated ones and the bad record */
  printf("== widen demo: %" PRIu64 " orders, %zu Debezium events (1 with a type error) on a mock Kafka cluster\n", keys,
         nevents);
  if ((err = wd_mock_cluster_new(1, &mc))) goto done;
  const char *brokers = wd_mock_cluster_bootstraps(mc);
  static const char *const topics[] = {"shop.orders", "shop.payments", "shop.shipments", "shop.orders_wide",
                                       "shop.orders_wide.dlq"};
  for (size_t i = 0; i < 5 && !err; i++) err = wd_mock_cluster_topic(mc, topics[i], i == 4 ? 1 : 4);
  if (err) goto done;
  setenv("WIDEN_BROKERS", brokers, 1);
  size_t late = 0, deletes = 0;
  for (size_t i = 0; i < nevents; i++) {
    late += events[i].late;
    deletes += events[i].op == 'd';
  }
  if ((err = wd_config_load(cfg_path, &cfg))) goto done;
  if ((err = quick_fetches(&cfg->kafka.properties))) goto done;
  /* librdkafka's mock cluster cannot do transactions (no read_committed, transactional offsets
   * discarded): the demo runs at-least-once; `widen run` on a real broker defaults to exactly-once */
  cfg->pipeline.processing_guarantee = WD_CONFIG_AT_LEAST_ONCE;
  printf("-- the pipeline of configs/demo.yaml: one row per order; each stream owns its columns, ordered by\n"
         "   its own version (a sequence group per stream), so a late event changes nothing and a delete\n"
         "   clears only its stream's columns (at-least-once here: the in-process mock cluster cannot do\n"
         "   transactions; `widen run` on a real broker is exactly-once)\n");
  printf("-- the %zu input events (%zu late, %zu deletes, 1 with a type error), one at a time, each with the\n"
         "   changelog it causes on %s (%s):\n",
         nevents, late, deletes, cfg->sink.topic,
         verbose ? "as `widen tail` prints it"
                 : "row kind, key, the columns it sets or changes; --verbose for full rows");
  wd_kafka_conf_t kc = {0};
  const char *out_topics[] = {cfg->sink.topic}, *dlq_topics[] = {cfg->sink.dead_letter_topic};
  err = wd_kafka_conf_set_brokers(&kc, brokers);
  if (!err) err = wd_producer_new(&kc, &prod);
  if (!err) err = wd_kafka_conf_set(&kc, "fetch.wait.max.ms", "5");
  if (!err) err = wd_consumer_new(&kc, out_topics, 1, demo_from_beginning, NULL, &out_c);
  if (!err) err = wd_consumer_new(&kc, dlq_topics, 1, demo_from_beginning, NULL, &dlq_c);
  wd_kafka_conf_clear(&kc);
  if (err) goto done;
  /* Each event is produced and then applied by a pipeline run that stops at the end of the input
   * (replay mode over the same state directory, resuming at the offsets stored with the state):
   * the events are applied exactly in the order shown, so the changelog is the same on every run. */
  wd_pipeline_stats_t total = {0};
  size_t lines = 0;
  json_t *before = NULL;
  for (size_t i = 0; i < nevents && !err; i++) {
    const demo_event_t *e = &events[i];
    print_event(i, e);
    if ((err = wd_producer_send(prod, e->topic, e->key, strlen(e->key), e->value, strlen(e->value), NULL, 0)) ||
        (err = wd_producer_wait_acked(prod, 30000)))
      break;
    wd_pipeline_opts_t opts = {0};
    opts.state_dir = state_dir;
    opts.quiet = true;
    opts.replay = true;
    opts.from_ms = -1;
    opts.max_idle_ms = 5000;
    if ((err = wd_pipeline_new(cfg, &opts, &p)) || (err = wd_pipeline_run(p))) break;
    wd_pipeline_stats_t ps;
    wd_pipeline_get_stats(p, &ps);
    wd_pipeline_destroy(p);
    p = NULL;
    total.records_in += ps.records_in;
    total.changes_out += ps.changes_out;
    total.messages_out += ps.messages_out;
    total.dead_lettered += ps.dead_lettered;
    if ((err = drain(out_c, false, (size_t)ps.messages_out, verbose, &before, &lines))) break;
    if ((err = drain(dlq_c, true, (size_t)ps.dead_lettered, verbose, &before, &lines))) break;
    if (!ps.messages_out && !ps.dead_lettered) printf("      -> no change\n");
  }
  json_decref(before);
  if (err) goto done;
  printf("-- %" PRIu64 " records in, %" PRIu64 " changelog rows out in %" PRIu64
         " messages (an update is one message: -U and +U), %" PRIu64 " dead-lettered to %s\n",
         total.records_in, total.changes_out, total.messages_out, total.dead_lettered, cfg->sink.dead_letter_topic);

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
  wd_consumer_destroy(out_c);
  wd_consumer_destroy(dlq_c);
  wd_producer_destroy(prod);
  events_free(events, nevents);
  wd_config_destroy(cfg);
  wd_mock_cluster_destroy(mc);
  if (made) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "widen demo: could not remove %s\n", dir);
  }
  return rc;
}
