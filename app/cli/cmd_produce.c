/*
 * app/cli/cmd_produce.c — `widen produce`: sends a JSON-lines file, or a generated multi-stream
 * Debezium workload (app/cli/generate.h), to Kafka, keyed the way Debezium keys its messages.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/cli/commands.h"
#include "common/clock.h"
#include "app/cli/generate.h"
#include "app/cli/produce_avro.h"
#include "app/cli/cli.h"
#include "common/kafka_conf.h"
#include "common/log.h"
#include "sink/producer.h"

#define WD_PRODUCE_MAX_KEY_FIELDS 16
#define WD_PRODUCE_WARN_LINES 5
/* the last null-key line logged says that the rest are only counted (the count is at the end) */
#define NOKEY_MORE "; further lines with a null key are counted, not logged (the total is printed at the end)"

static volatile sig_atomic_t wd_produce_stop;

static void wd_produce_on_signal(int sig) {
  (void)sig;
  wd_produce_stop = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: widen produce --brokers B --topic T --file F.jsonl [--key-field NAME]... [OPTIONS]\n"
             "       widen produce --generate --brokers B [--keys N] [--records M] [--seed S]\n"
             "                     [--streams orders,payments,shipments] [--topic-prefix P] [OPTIONS]\n"
             "\n"
             "File mode sends each non-empty line of F (\"-\" for stdin) as one message value, unchanged.\n"
             "A line that carries its own record key, {\"key\":K,\"value\":V,...} (as `widen tail --raw`\n"
             "prints records), is sent as that key and value. Otherwise (and always with --key-field) the\n"
             "key is the source row's primary key as Debezium writes keys: a JSON object of the key\n"
             "fields (--key-field, repeatable; default: a field named id), e.g. {\"id\":101}, taken from\n"
             "`after`, or from `before` for deletes (op d) or when `after` is null, inside `payload` when\n"
             "the line is a {\"schema\",\"payload\"} envelope. Lines that are not JSON objects, or lack the\n"
             "key field, are sent with a null key and a warning naming the field: records with a null key\n"
             "are spread over the partitions, so one row's changes lose their order.\n"
             "\n"
             "Generate mode sends a seeded, reproducible workload of Debezium JSON change events to one\n"
             "topic per stream (prefix + stream name), keyed {\"order_id\":N}: creates then updates,\n"
             "about 20%% of the records late (out of order per key), 1%% deletes, ~200-byte row images.\n"
             "\n"
             "With --format debezium-avro (either mode) each message is written as Kafka Connect's\n"
             "AvroConverter writes Debezium events: its Avro schemas are inferred from the topic's first\n"
             "message, registered under <topic>-value and <topic>-key in the schema registry --registry\n"
             "(Confluent's API; for Apicurio Registry http://host:port/apis/ccompat/v7), and each key and\n"
             "value is sent in the Confluent wire format; read them with a source of format debezium-avro.\n"
             "\n"
             "options:\n"
             "  --brokers B          bootstrap servers host:port[,...] (default: $WIDEN_BROKERS)\n"
             "  --format F           debezium-json (default: the lines or events as they are) or\n"
             "                       debezium-avro (needs --registry)\n"
             "  --registry URL       the schema registry of --format debezium-avro (default:\n"
             "                       $WIDEN_REGISTRY; credentials as http://user:password@host:port)\n"
             "  --topic T            topic to send the file to (file mode)\n"
             "  --file F             JSON-lines file, - for stdin (file mode)\n"
             "  --key-field NAME     a primary-key field (repeatable; default id)\n"
             "  --generate           generate the workload instead of reading a file\n"
             "  --keys N             distinct order_id values (default 1000)\n"
             "  --records M          records over all streams (default 10000)\n"
             "  --seed S             random seed (default 1)\n"
             "  --streams LIST       comma-separated subset of orders,payments,shipments (default all)\n"
             "  --topic-prefix P     topic name prefix of the generated streams (default none)\n"
             "  --late-ratio X       share of late records (default 0.2)\n"
             "  --delete-ratio X     share of deletes (default 0.01)\n"
             "  --key-change-ratio X share of key-changing updates: op u whose before and after have\n"
             "                       different order_id (default 0: none)\n"
             "  --rate R             at most R records per second (default unlimited)\n"
             "  -X, --property K=V   librdkafka producer property (repeatable), e.g. -X compression.type=lz4\n"
             "  --timeout-ms T       how long to wait for the final acknowledgements (default 60000)\n"
             "  -h, --help           this help\n");
}

/* Sleeps until `sent` records fit the rate limit (no-op when rate <= 0). */
static void wd_produce_throttle(double rate, double t0, uint64_t sent) {
  if (rate <= 0) return;
  double due = t0 + (double)sent / rate, now = wd_mono_s();
  if (due <= now) return;
  double d = due - now;
  struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

/* The Debezium-style key of one JSON line: a new compact JSON text, or NULL (no key) with
 * *why set to the reason (naming the field looked for, in why_buf). */
static char *wd_produce_key_of(const char *line, size_t len, const char *const *fields, size_t nfields,
                               bool default_field, const char **why, char *why_buf, size_t why_size) {
  char *text = NULL;
  json_t *key = NULL;
  json_error_t jerr;
  json_t *root = json_loadb(line, len, 0, &jerr);
  if (!root || !json_is_object(root)) {
    *why = "not a JSON object";
    goto cleanup;
  }
  json_t *ev = root, *payload = json_object_get(root, "payload");
  if (json_is_object(payload) && json_object_get(root, "schema")) ev = payload;
  const char *op = json_string_value(json_object_get(ev, "op"));
  json_t *after = json_object_get(ev, "after"), *before = json_object_get(ev, "before");
  json_t *img = (op && strcmp(op, "d") == 0) ? before : after;
  if (!json_is_object(img)) img = json_is_object(after) ? after : before;
  if (!json_is_object(img)) img = ev; /* not an envelope: a plain row */
  if (!(key = json_object())) {
    *why = "out of memory";
    goto cleanup;
  }
  for (size_t i = 0; i < nfields; i++) {
    json_t *v = json_object_get(img, fields[i]);
    if (!v || json_is_null(v)) {
      snprintf(why_buf, why_size, "no key field '%s'%s in the row image (%s)", fields[i],
               default_field ? " (the default; name the primary key with --key-field NAME)" : "",
               v ? "it is null" : "missing");
      *why = why_buf;
      goto cleanup;
    }
    if (json_object_set(key, fields[i], v)) {
      *why = "out of memory";
      goto cleanup;
    }
  }
  if (!(text = json_dumps(key, JSON_COMPACT | JSON_PRESERVE_ORDER))) *why = "out of memory";
cleanup:
  json_decref(key);
  json_decref(root);
  return text;
}

/* A line that carries its own record key: {"key": K, "value": V, ...} (as `widen tail --raw`
 * prints records; other members are ignored). On 1 *key and *value are new texts (K and V as
 * compact JSON, a string K or V as its bytes; a null K gives *key NULL, a null V *value NULL:
 * a tombstone); 0 when the line is not such a record; -1 when out of memory. */
static int wd_produce_record_of(const char *line, size_t len, char **key, char **value) {
  *key = *value = NULL;
  json_error_t jerr;
  json_t *root = json_loadb(line, len, 0, &jerr);
  json_t *k = json_object_get(root, "key"), *v = json_object_get(root, "value");
  int rc = 0;
  if (json_is_object(root) && k && v && !json_object_get(root, "op") && !json_object_get(root, "payload")) {
    rc = 1;
    json_t *parts[2] = {k, v};
    char **outs[2] = {key, value};
    for (int i = 0; i < 2 && rc == 1; i++) {
      if (json_is_null(parts[i])) continue;
      *outs[i] = json_is_string(parts[i]) ? strdup(json_string_value(parts[i]))
                                          : json_dumps(parts[i], JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
      if (!*outs[i]) rc = -1;
    }
    if (rc < 0) {
      free(*key);
      free(*value);
      *key = *value = NULL;
    }
  }
  json_decref(root);
  return rc;
}

typedef struct wd_produce_args {
  wd_kafka_conf_t kconf;
  const char *topic, *file, *streams, *prefix;
  const char *key_fields[WD_PRODUCE_MAX_KEY_FIELDS];
  size_t nkey_fields;
  bool key_given; /* --key-field given: lines are keyed by those fields, never by their own key */
  bool generate;
  uint64_t keys, records, seed;
  double late_ratio, delete_ratio, key_change_ratio, rate;
  int timeout_ms;
  wd_produce_avro_t *avro; /* --format debezium-avro: the converter, else NULL */
} wd_produce_args_t;

/* Sends one message, through the Avro converter with --format debezium-avro. */
static wd_error_t *wd_produce_send(const wd_produce_args_t *a, wd_producer_t *prod, const char *topic, const char *key,
                                   size_t klen, const char *value, size_t vlen) {
  if (!a->avro) return wd_producer_send(prod, topic, key, klen, value, vlen, NULL, 0);
  char *k = NULL, *v = NULL;
  size_t kl = 0, vl = 0;
  wd_error_t *err = wd_produce_avro_encode(a->avro, topic, key, klen, value, vlen, &k, &kl, &v, &vl);
  if (!err) err = wd_producer_send(prod, topic, k, kl, v, vl, NULL, 0);
  free(k);
  free(v);
  return err;
}

static int wd_produce_file(const wd_produce_args_t *a, wd_producer_t *prod, uint64_t *nsent) {
  int rc = 1;
  FILE *f = NULL;
  char *line = NULL;
  size_t cap = 0;
  uint64_t lineno = 0, nokey = 0;
  wd_error_t *err = NULL;
  double t0 = wd_mono_s();
  bool is_stdin = strcmp(a->file, "-") == 0;
  if (!(f = is_stdin ? stdin : fopen(a->file, "r"))) {
    fprintf(stderr, "widen produce: %s: %s\n", a->file, strerror(errno));
    goto cleanup;
  }
  ssize_t len;
  while (!wd_produce_stop && (len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0) continue;
    const char *why = NULL;
    char why_buf[300];
    char *key = NULL, *value = NULL;
    int own = a->key_given ? 0 : wd_produce_record_of(line, (size_t)len, &key, &value);
    if (own < 0) {
      fprintf(stderr, "widen produce: out of memory\n");
      goto cleanup;
    }
    if (own) {
      if (!key && ++nokey <= WD_PRODUCE_WARN_LINES)
        wd_log(WD_LOG_WARN, "produce",
               "%s:%" PRIu64 ": its record key is null: sent with a null key (a null key "
               "spreads one row's changes over partitions: their order is lost)%s",
               a->file, lineno, nokey == WD_PRODUCE_WARN_LINES ? NOKEY_MORE : "");
    } else if (!(key = wd_produce_key_of(line, (size_t)len, a->key_fields, a->nkey_fields, !a->key_given, &why, why_buf,
                                         sizeof(why_buf)))) {
      if (++nokey <= WD_PRODUCE_WARN_LINES)
        wd_log(WD_LOG_WARN, "produce",
               "%s:%" PRIu64 ": %s: sent with a null key (a null key spreads one row's "
               "changes over partitions: their order is lost)%s",
               a->file, lineno, why, nokey == WD_PRODUCE_WARN_LINES ? NOKEY_MORE : "");
    }
    wd_produce_throttle(a->rate, t0, *nsent);
    if (own) err = wd_produce_send(a, prod, a->topic, key, key ? strlen(key) : 0, value, value ? strlen(value) : 0);
    else err = wd_produce_send(a, prod, a->topic, key, key ? strlen(key) : 0, line, (size_t)len);
    free(key);
    free(value);
    if (err) {
      fprintf(stderr, "widen produce: %s:%" PRIu64 ": %s\n", a->file, lineno, err->message);
      goto cleanup;
    }
    (*nsent)++;
  }
  if (ferror(f)) {
    fprintf(stderr, "widen produce: %s: %s\n", a->file, strerror(errno));
    goto cleanup;
  }
  if (nokey)
    fprintf(stderr, "widen produce: %" PRIu64 " of %" PRIu64 " lines sent with a null key (%s)\n", nokey, *nsent,
            a->key_given ? "check --key-field" : "name the primary key with --key-field NAME");
  rc = 0;
cleanup:
  wd_error_destroy(err);
  free(line);
  if (f && !is_stdin) fclose(f);
  return rc;
}

static int wd_produce_generate(const wd_produce_args_t *a, wd_producer_t *prod, uint64_t *nsent) {
  int rc = 1;
  wd_gen_t *g = NULL;
  wd_error_t *err = NULL;
  char *list = NULL;
  const char *names[4];
  size_t nnames = 0;
  uint64_t per_stream[3] = {0}, late = 0, deletes = 0, key_changes = 0;
  wd_gen_opts_t opts = {.seed = a->seed,
                        .keys = a->keys,
                        .records = a->records,
                        .topic_prefix = a->prefix,
                        .late_ratio = a->late_ratio,
                        .delete_ratio = a->delete_ratio,
                        .key_change_ratio = a->key_change_ratio};
  if (a->streams) {
    if (!(list = strdup(a->streams))) goto cleanup;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (nnames == 3) {
        fprintf(stderr, "widen produce: --streams: at most 3 streams (orders, payments, shipments)\n");
        goto cleanup;
      }
      names[nnames++] = tok;
    }
    opts.streams = names;
    opts.nstreams = nnames;
  }
  if ((err = wd_gen_new(&opts, &g))) {
    fprintf(stderr, "widen produce: %s\n", err->message);
    goto cleanup;
  }
  double t0 = wd_mono_s();
  wd_gen_msg_t m;
  while (!wd_produce_stop && wd_gen_next(g, &m)) {
    wd_produce_throttle(a->rate, t0, *nsent);
    if ((err = wd_produce_send(a, prod, m.topic, m.key, m.key_len, m.value, m.value_len))) {
      fprintf(stderr, "widen produce: %s\n", err->message);
      goto cleanup;
    }
    (*nsent)++;
    per_stream[m.stream_index]++;
    late += m.late;
    deletes += m.op == 'd';
    key_changes += m.from_order_id != 0;
  }
  if (wd_gen_failed(g)) {
    fprintf(stderr, "widen produce: out of memory while generating\n");
    goto cleanup;
  }
  for (size_t i = 0; i < (opts.streams ? nnames : 3); i++)
    printf("%s%s: %" PRIu64 " messages\n", a->prefix ? a->prefix : "", opts.streams ? names[i] : wd_gen_stream_names[i],
           per_stream[i]);
  if (a->key_change_ratio > 0)
    printf("late: %" PRIu64 ", deletes: %" PRIu64 ", key changes: %" PRIu64 "\n", late, deletes, key_changes);
  else printf("late: %" PRIu64 ", deletes: %" PRIu64 "\n", late, deletes);
  rc = 0;
cleanup:
  wd_error_destroy(err);
  wd_gen_destroy(g);
  free(list);
  return rc;
}

static int wd_parse_u64(const char *opt, const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-') {
    fprintf(stderr, "widen produce: %s: '%s' is not a non-negative integer\n", opt, text);
    return -1;
  }
  *out = v;
  return 0;
}

static int wd_parse_double(const char *opt, const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || v < 0) {
    fprintf(stderr, "widen produce: %s: '%s' is not a non-negative number\n", opt, text);
    return -1;
  }
  *out = v;
  return 0;
}

int wd_cmd_produce(int argc, char **argv) {
  enum {
    O_BROKERS = 256,
    O_TOPIC,
    O_FILE,
    O_KEY_FIELD,
    O_GENERATE,
    O_KEYS,
    O_RECORDS,
    O_SEED,
    O_STREAMS,
    O_PREFIX,
    O_LATE,
    O_DELETE,
    O_KEY_CHANGE,
    O_RATE,
    O_TIMEOUT,
    O_FORMAT,
    O_REGISTRY
  };
  static const struct option longopts[] = {{"brokers", required_argument, NULL, O_BROKERS},
                                           {"topic", required_argument, NULL, O_TOPIC},
                                           {"file", required_argument, NULL, O_FILE},
                                           {"key-field", required_argument, NULL, O_KEY_FIELD},
                                           {"generate", no_argument, NULL, O_GENERATE},
                                           {"keys", required_argument, NULL, O_KEYS},
                                           {"records", required_argument, NULL, O_RECORDS},
                                           {"seed", required_argument, NULL, O_SEED},
                                           {"streams", required_argument, NULL, O_STREAMS},
                                           {"topic-prefix", required_argument, NULL, O_PREFIX},
                                           {"late-ratio", required_argument, NULL, O_LATE},
                                           {"delete-ratio", required_argument, NULL, O_DELETE},
                                           {"key-change-ratio", required_argument, NULL, O_KEY_CHANGE},
                                           {"rate", required_argument, NULL, O_RATE},
                                           {"timeout-ms", required_argument, NULL, O_TIMEOUT},
                                           {"format", required_argument, NULL, O_FORMAT},
                                           {"registry", required_argument, NULL, O_REGISTRY},
                                           {"property", required_argument, NULL, 'X'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  int rc = 1, ch;
  wd_producer_t *prod = NULL;
  wd_error_t *err = NULL;
  wd_produce_args_t a = {.keys = 1000, .records = 10000, .seed = 1, .timeout_ms = 60000};
  uint64_t v, nsent = 0;
  struct sigaction sa = {0}, old_int, old_term;
  bool handlers = false, show_usage = false, avro = false;
  const char *registry = NULL;

  optind = 1;
  while ((ch = wd_cli_getopt("produce", argc, argv, "hX:", longopts)) != -1) {
    switch (ch) {
    case O_BROKERS:
      if ((err = wd_kafka_conf_set_brokers(&a.kconf, optarg))) goto cleanup;
      break;
    case O_TOPIC: a.topic = optarg; break;
    case O_FORMAT:
      if (!strcmp(optarg, "debezium-avro")) avro = true;
      else if (!strcmp(optarg, "debezium-json")) avro = false;
      else {
        fprintf(stderr, "widen produce: --format: '%s' is not debezium-json or debezium-avro\n", optarg);
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_REGISTRY: registry = optarg; break;
    case O_FILE: a.file = optarg; break;
    case O_KEY_FIELD:
      if (a.nkey_fields == WD_PRODUCE_MAX_KEY_FIELDS) {
        fprintf(stderr, "widen produce: at most %d --key-field\n", WD_PRODUCE_MAX_KEY_FIELDS);
        goto cleanup;
      }
      a.key_fields[a.nkey_fields++] = optarg;
      break;
    case O_GENERATE: a.generate = true; break;
    case O_KEYS:
      if (wd_parse_u64("--keys", optarg, &a.keys) || a.keys == 0) {
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_RECORDS:
      if (wd_parse_u64("--records", optarg, &a.records) || a.records == 0) {
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_SEED:
      if (wd_parse_u64("--seed", optarg, &a.seed)) {
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_STREAMS: a.streams = optarg; break;
    case O_PREFIX: a.prefix = optarg; break;
    case O_LATE:
      if (wd_parse_double("--late-ratio", optarg, &a.late_ratio)) {
        show_usage = true;
        goto cleanup;
      }
      if (a.late_ratio == 0) a.late_ratio = -1; /* generator: negative = none, 0 = default */
      break;
    case O_DELETE:
      if (wd_parse_double("--delete-ratio", optarg, &a.delete_ratio)) {
        show_usage = true;
        goto cleanup;
      }
      if (a.delete_ratio == 0) a.delete_ratio = -1;
      break;
    case O_KEY_CHANGE:
      if (wd_parse_double("--key-change-ratio", optarg, &a.key_change_ratio)) {
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_RATE:
      if (wd_parse_double("--rate", optarg, &a.rate)) {
        show_usage = true;
        goto cleanup;
      }
      break;
    case O_TIMEOUT:
      if (wd_parse_u64("--timeout-ms", optarg, &v) || v > INT32_MAX) {
        show_usage = true;
        goto cleanup;
      }
      a.timeout_ms = (int)v;
      break;
    case 'X':
      if ((err = wd_kafka_conf_set_pair(&a.kconf, optarg))) goto cleanup;
      break;
    case 'h':
      usage(stdout);
      rc = 0;
      goto cleanup;
    default: {
      show_usage = true;
      goto cleanup;
    }
    }
  }
  if (optind != argc) {
    show_usage = true;
    goto cleanup;
  }
  if (!a.kconf.brokers && getenv("WIDEN_BROKERS") && *getenv("WIDEN_BROKERS") &&
      (err = wd_kafka_conf_set_brokers(&a.kconf, getenv("WIDEN_BROKERS"))))
    goto cleanup;
  if (!a.kconf.brokers) {
    fprintf(stderr, "widen produce: --brokers is required (or set WIDEN_BROKERS)\n");
    {
      show_usage = true;
      goto cleanup;
    }
  }
  if (a.generate ? (a.topic || a.file || a.nkey_fields) : (!a.topic || !a.file || a.streams || a.prefix)) {
    fprintf(stderr, a.generate ? "widen produce: --generate takes no --topic/--file/--key-field (topics are "
                                 "--topic-prefix + stream)\n"
                               : "widen produce: file mode needs --topic and --file (and takes no --streams/"
                                 "--topic-prefix)\n");
    {
      show_usage = true;
      goto cleanup;
    }
  }
  if (!registry && getenv("WIDEN_REGISTRY") && *getenv("WIDEN_REGISTRY")) registry = getenv("WIDEN_REGISTRY");
  if (avro && !registry) {
    fprintf(stderr, "widen produce: --format debezium-avro needs --registry URL (or WIDEN_REGISTRY): the schema "
                    "registry the Avro schemas are registered in\n");
    show_usage = true;
    goto cleanup;
  }
  if (avro && (err = wd_produce_avro_new(registry, &a.avro))) goto cleanup;
  a.key_given = a.nkey_fields > 0;
  if (!a.nkey_fields) a.key_fields[a.nkey_fields++] = "id";

  if ((err = wd_producer_new(&a.kconf, &prod))) goto cleanup;
  sa.sa_handler = wd_produce_on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  handlers = true;

  double t0 = wd_mono_s();
  int sent_rc = a.generate ? wd_produce_generate(&a, prod, &nsent) : wd_produce_file(&a, prod, &nsent);
  err = wd_producer_wait_acked(prod, a.timeout_ms);
  double dt = wd_mono_s() - t0;
  wd_producer_stats_t st;
  wd_producer_stats(prod, &st);
  printf("produced %" PRIu64 " messages, %" PRIu64 " bytes in %.3f s (%.0f msg/s, %.2f MB/s); acknowledged %" PRIu64
         ", failed %" PRIu64 "%s\n",
         st.sent, st.bytes, dt, dt > 0 ? (double)st.sent / dt : 0.0, dt > 0 ? (double)st.bytes / dt / 1e6 : 0.0,
         st.acked, st.failed, wd_produce_stop ? " (interrupted)" : "");
  if (!err) rc = sent_rc;
cleanup:
  if (err) fprintf(stderr, "widen produce: %s\n", err->message);
  if (show_usage) usage(stderr);
  if (handlers) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
  }
  wd_error_destroy(err);
  wd_producer_destroy(prod);
  wd_produce_avro_destroy(a.avro);
  wd_kafka_conf_clear(&a.kconf);
  return rc;
}
