/*
 * app/cli/cmd_tail.c — `widen tail`: reads a changelog topic as a downstream consumer would and
 * prints one JSON line per changelog record (changelog/changelog.h decodes the formats), or the
 * raw Kafka records with --raw.
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
#include "app/cli/cli.h"
#include "common/clock.h"
#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/kafka_conf.h"
#include "common/log.h"
#include "ingest/consumer.h"

#define WD_TAIL_MAX_TOPICS 16
#define WD_TAIL_BATCH 500

static volatile sig_atomic_t wd_tail_stop;

static void wd_tail_on_signal(int sig) {
  (void)sig;
  wd_tail_stop = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: widen tail --brokers B --topic T [--from beginning|now] [--format debezium-json|changelog-json]\n"
             "                  [--raw] [--max N] [--timeout-ms T] [--group G] [-X name=value]...\n"
             "\n"
             "Prints a changelog topic as one JSON line per record: {\"op\":\"+I|-U|+U|-D\",\"key\":..,\"row\":..}\n"
             "(a debezium-json update gives its -U and +U lines). A record with widen's dead-letter headers\n"
             "(a dead-letter topic) is shown as {\"dead_letter\":{\"error\":ID,\"reason\":..,\"source\":\n"
             "{\"topic\",\"partition\",\"offset\"},\"key\":..,\"value\":..}} with the rejected bytes as JSON,\n"
             "or as a string when they are not JSON. Without --group every partition is read\n"
             "directly (no group join, nothing committed); with --group G the topic is read in consumer\n"
             "group G, starting at its committed offsets, and offsets are committed as lines are printed.\n"
             "\n"
             "options:\n"
             "  --brokers B          bootstrap servers host:port[,...] (default: $WIDEN_BROKERS)\n"
             "  --topic T            topic to read (repeatable)\n"
             "  --from WHERE         beginning (default; or earliest) or now (or latest); with --group:\n"
             "                       where a group without committed offsets starts\n"
             "  --format F           debezium-json or changelog-json (default: detected from the first record)\n"
             "  --raw                print the Kafka records instead: {\"topic\",\"partition\",\"offset\",\n"
             "                       \"timestamp\",\"key\",\"value\"} (JSON key/value embedded, else strings)\n"
             "  --max N              stop after N lines\n"
             "  --timeout-ms T       stop after T ms without data (default: run until interrupted)\n"
             "  --group G            consume in consumer group G\n"
             "  -X, --property K=V   librdkafka consumer property (repeatable)\n"
             "  -h, --help           this help\n");
}

static int64_t wd_tail_on_assign(void *ctx, const char *topic, int32_t partition) {
  (void)topic;
  (void)partition;
  return *(const int64_t *)ctx;
}

/* Appends bytes as JSON: their own text when they are one JSON value on one line, the compact
 * JSON of that value when it spans lines, else a JSON string; null for NULL. 0 or -1. */
static int wd_tail_put_json(wd_buf_t *out, const void *p, size_t n) {
  if (!p) return wd_buf_printf(out, "null");
  json_error_t jerr;
  json_t *j = json_loadb(p, n, JSON_DECODE_ANY, &jerr);
  int rc;
  if (!j) rc = wd_changelog_put_string(out, p, n);
  else if (!memchr(p, '\n', n) && !memchr(p, '\r', n)) rc = wd_buf_append(out, p, n);
  else {
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    rc = text ? wd_buf_append(out, text, strlen(text)) : -1;
    free(text);
  }
  json_decref(j);
  return rc;
}

static int wd_tail_raw(const wd_kmsg_t *m, wd_buf_t *out) {
  int rc = wd_buf_printf(out, "{\"topic\":");
  rc |= wd_changelog_put_string(out, m->topic, strlen(m->topic));
  rc |= wd_buf_printf(out, ",\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"timestamp\":%" PRId64 ",\"key\":",
                      m->partition, m->offset, m->timestamp);
  rc |= wd_tail_put_json(out, m->key, m->key_len);
  rc |= wd_buf_printf(out, ",\"value\":");
  rc |= wd_tail_put_json(out, m->value, m->value_len);
  /* headers, as strings (the dead-letter topic's reasons: widen.error.id, ...) */
  const char *name;
  const void *val;
  size_t len;
  for (size_t i = 0; wd_kmsg_header(m, i, &name, &val, &len) == 0; i++) {
    rc |= wd_buf_printf(out, i ? "," : ",\"headers\":{");
    rc |= wd_changelog_put_string(out, name, strlen(name));
    rc |= wd_buf_putc(out, ':');
    rc |= val ? wd_changelog_put_string(out, val, len) : wd_buf_printf(out, "null");
    if (wd_kmsg_header(m, i + 1, &name, &val, &len) != 0) rc |= wd_buf_putc(out, '}');
  }
  rc |= wd_buf_printf(out, "}\n");
  return rc ? -1 : 0;
}

/* A header's value by name (the first with that name), or NULL. */
static const void *wd_tail_header(const wd_kmsg_t *m, const char *want, size_t *len) {
  const char *name;
  const void *val;
  for (size_t i = 0; wd_kmsg_header(m, i, &name, &val, len) == 0; i++)
    if (!strcmp(name, want)) return val;
  return NULL;
}

/* The dead-letter view of a record that carries widen's dead-letter headers (docs/formats.md): {"dead_letter":{"error":ID,"reason":TEXT,"source":{"topic","partition","offset"},
 * "key":K,"value":V}} with the rejected key and value as JSON when they are JSON, else as strings
 * (so a non-JSON value is shown, not dropped). 1 when m is a dead letter (out written), 0 when it
 * is not, -1 when out of memory. */
static int wd_tail_dead_letter(const wd_kmsg_t *m, wd_buf_t *out) {
  size_t idlen = 0, len = 0;
  const void *id = wd_tail_header(m, "widen.error.id", &idlen);
  if (!id) return 0;
  int rc = wd_buf_printf(out, "{\"dead_letter\":{\"error\":");
  rc |= wd_changelog_put_string(out, id, idlen);
  static const struct {
    const char *header, *name;
    bool number;
  } F[] = {{"widen.error.message", "reason", false},
           {"widen.source.topic", "topic", false},
           {"widen.source.partition", "partition", true},
           {"widen.source.offset", "offset", true}};
  for (size_t i = 0; i < sizeof(F) / sizeof(*F); i++) {
    const char *v = wd_tail_header(m, F[i].header, &len);
    if (i == 1) rc |= wd_buf_printf(out, ",\"source\":{");
    rc |= wd_buf_printf(out, "%s\"%s\":", i == 1 ? "" : ",", F[i].name);
    char num[32];
    char *end = NULL;
    if (v && F[i].number && len < sizeof(num)) {
      memcpy(num, v, len);
      num[len] = 0;
      long long n = strtoll(num, &end, 10);
      if (len && end && !*end) {
        rc |= wd_buf_printf(out, "%lld", n);
        continue;
      }
    }
    rc |= v ? wd_changelog_put_string(out, v, len) : wd_buf_printf(out, "null");
  }
  rc |= wd_buf_printf(out, "},\"key\":");
  rc |= wd_tail_put_json(out, m->key, m->key_len);
  rc |= wd_buf_printf(out, ",\"value\":");
  rc |= wd_tail_put_json(out, m->value, m->value_len);
  rc |= wd_buf_printf(out, "}}\n");
  return rc ? -1 : 1;
}

/* Records the next offset of a printed message for the group commit. */
static int wd_tail_note_offset(wd_tp_offset_t **offs, size_t *n, const wd_kmsg_t *m, const char *const *topics,
                               size_t ntopics) {
  for (size_t i = 0; i < *n; i++) {
    if ((*offs)[i].partition == m->partition && strcmp((*offs)[i].topic, m->topic) == 0) {
      (*offs)[i].offset = m->offset + 1;
      return 0;
    }
  }
  const char *topic = NULL;
  for (size_t i = 0; i < ntopics; i++)
    if (strcmp(topics[i], m->topic) == 0) topic = topics[i];
  if (!topic) return 0;
  wd_tp_offset_t *o = realloc(*offs, (*n + 1) * sizeof(*o));
  if (!o) return -1;
  *offs = o;
  o[*n] = (wd_tp_offset_t){topic, m->partition, m->offset + 1};
  (*n)++;
  return 0;
}

int wd_cmd_tail(int argc, char **argv) {
  enum { O_BROKERS = 256, O_TOPIC, O_FROM, O_FORMAT, O_RAW, O_MAX, O_TIMEOUT, O_GROUP };
  static const struct option longopts[] = {{"brokers", required_argument, NULL, O_BROKERS},
                                           {"topic", required_argument, NULL, O_TOPIC},
                                           {"from", required_argument, NULL, O_FROM},
                                           {"format", required_argument, NULL, O_FORMAT},
                                           {"raw", no_argument, NULL, O_RAW},
                                           {"max", required_argument, NULL, O_MAX},
                                           {"timeout-ms", required_argument, NULL, O_TIMEOUT},
                                           {"group", required_argument, NULL, O_GROUP},
                                           {"property", required_argument, NULL, 'X'},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  int rc = 1, ch;
  bool raw = false, from_now = false, show_usage = false, handlers = false;
  const char *topics[WD_TAIL_MAX_TOPICS];
  size_t ntopics = 0, nmsgs = 0, noffs = 0;
  long long max = -1, timeout_ms = -1;
  wd_changelog_format_t format = WD_CHANGELOG_DEBEZIUM_JSON;
  bool format_given = false; /* without --format, the first record decides (the other format is tried) */
  wd_kafka_conf_t kconf = {0};
  wd_consumer_t *c = NULL;
  wd_error_t *err = NULL;
  wd_kmsg_t *msgs = NULL;
  wd_tp_offset_t *offs = NULL;
  wd_buf_t out = {0};
  struct sigaction sa = {0}, old_int, old_term;
  char *end;

  if (wd_log_level > WD_LOG_WARN) wd_log_set_level(WD_LOG_WARN); /* stdout is the data; keep stderr quiet */
  optind = 1;
  while ((ch = wd_cli_getopt("tail", argc, argv, "hX:", longopts)) != -1) {
    switch (ch) {
    case O_BROKERS:
      if ((err = wd_kafka_conf_set_brokers(&kconf, optarg))) goto cleanup;
      break;
    case O_TOPIC:
      if (ntopics == WD_TAIL_MAX_TOPICS) {
        fprintf(stderr, "widen tail: at most %d --topic\n", WD_TAIL_MAX_TOPICS);
        goto cleanup;
      }
      topics[ntopics++] = optarg;
      break;
    case O_FROM:
      /* the same words as `widen replay --from` (beginning/earliest), and Kafka's latest for now */
      if (strcmp(optarg, "now") && strcmp(optarg, "latest") && strcmp(optarg, "beginning") &&
          strcmp(optarg, "earliest")) {
        fprintf(stderr, "widen tail: --from is beginning (or earliest) or now (or latest), not '%s'\n", optarg);
        goto cleanup;
      }
      from_now = !strcmp(optarg, "now") || !strcmp(optarg, "latest");
      break;
    case O_FORMAT:
      if ((err = wd_changelog_format_parse(optarg, &format))) goto cleanup;
      format_given = true;
      break;
    case O_RAW: raw = true; break;
    case O_MAX:
    case O_TIMEOUT: {
      errno = 0;
      long long v = strtoll(optarg, &end, 10);
      if (errno || end == optarg || *end || v < 0) {
        fprintf(stderr, "widen tail: %s: '%s' is not a non-negative integer\n", ch == O_MAX ? "--max" : "--timeout-ms",
                optarg);
        goto cleanup;
      }
      if (ch == O_MAX) max = v;
      else timeout_ms = v;
      break;
    }
    case O_GROUP:
      if ((err = wd_kafka_conf_set_group(&kconf, optarg))) goto cleanup;
      break;
    case 'X':
      if ((err = wd_kafka_conf_set_pair(&kconf, optarg))) goto cleanup;
      break;
    case 'h':
      usage(stdout);
      rc = 0;
      goto cleanup;
    default: show_usage = true; goto cleanup;
    }
  }
  if (optind != argc || ntopics == 0) {
    if (ntopics == 0) fprintf(stderr, "widen tail: --topic is required\n");
    show_usage = true;
    goto cleanup;
  }
  const char *env = getenv("WIDEN_BROKERS");
  if (!kconf.brokers && env && *env && (err = wd_kafka_conf_set_brokers(&kconf, env))) goto cleanup;
  if (!kconf.brokers) {
    fprintf(stderr, "widen tail: --brokers is required (or set WIDEN_BROKERS)\n");
    show_usage = true;
    goto cleanup;
  }
  if (kconf.group_id && !wd_kafka_conf_get(&kconf, "auto.offset.reset") &&
      (err = wd_kafka_conf_set(&kconf, "auto.offset.reset", from_now ? "latest" : "earliest")))
    goto cleanup;
  int64_t start = kconf.group_id ? WD_OFFSET_STORED : (from_now ? WD_OFFSET_END : WD_OFFSET_BEGINNING);
  if (max == 0) {
    rc = 0;
    goto cleanup;
  }
  if (!(msgs = calloc(WD_TAIL_BATCH, sizeof(*msgs)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if ((err = wd_consumer_new_ex(&kconf, topics, ntopics, wd_tail_on_assign, &start, WD_CONSUMER_WAIT_FOR_TOPICS, &c)))
    goto cleanup;
  sa.sa_handler = wd_tail_on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  handlers = true;

  long long printed = 0;
  int undecodable = 0;
  int64_t last_data = wd_mono_ms();
  bool done = false;
  while (!done && !wd_tail_stop) {
    int wait = 200;
    if (timeout_ms >= 0) {
      int64_t left = last_data + timeout_ms - wd_mono_ms();
      if (left <= 0) break;
      if (left < wait) wait = (int)left;
    }
    if ((err = wd_consumer_poll_batch(c, WD_TAIL_BATCH, wait, msgs, &nmsgs))) goto cleanup;
    if (nmsgs) last_data = wd_mono_ms();
    for (size_t i = 0; i < nmsgs && !done; i++) {
      const wd_kmsg_t *m = &msgs[i];
      int dl = 0;
      wd_buf_reset(&out);
      if (raw) {
        if (wd_tail_raw(m, &out)) {
          err = wd_error_nomem();
          goto cleanup;
        }
      } else if ((dl = wd_tail_dead_letter(m, &out)) != 0) {
        if (dl < 0) {
          err = wd_error_nomem();
          goto cleanup;
        }
      } else {
        wd_error_t *derr = wd_changelog_decode_tail(format, m->key, m->key_len, m->value, m->value_len, &out, NULL);
        if (derr && !format_given && printed == 0) { /* try the other format once; keep the one that works */
          wd_changelog_format_t other = format == WD_CHANGELOG_JSON ? WD_CHANGELOG_DEBEZIUM_JSON : WD_CHANGELOG_JSON;
          wd_error_t *e2 = wd_changelog_decode_tail(other, m->key, m->key_len, m->value, m->value_len, &out, NULL);
          if (!e2) {
            format = other;
            wd_error_destroy(derr);
            derr = NULL;
          }
          wd_error_destroy(e2);
          format_given = true;
        }
        if (derr) {
          wd_log(WD_LOG_WARN, "tail", "%s [%" PRId32 "] offset %" PRId64 ": %s", m->topic, m->partition, m->offset,
                 derr->message);
          wd_error_destroy(derr);
          /* a topic in another format fails on every record: stop with a hint instead of a flood */
          if (++undecodable >= 10 && printed == 0) {
            err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                               "the first %d records are not %s; is the topic in the other format (--format "
                               "debezium-json | changelog-json)? --raw prints records as they are",
                               undecodable, wd_changelog_format_name(format));
            goto cleanup;
          }
        }
      }
      /* print whole lines, at most max in all */
      size_t pos = 0;
      while (pos < out.len) {
        const uint8_t *nl = memchr(out.data + pos, '\n', out.len - pos);
        size_t len = nl ? (size_t)(nl - (out.data + pos)) + 1 : out.len - pos;
        fwrite(out.data + pos, 1, len, stdout);
        if (!nl) fputc('\n', stdout);
        pos += len;
        if (max >= 0 && ++printed >= max) {
          done = true;
          break;
        }
      }
      /* with --group, a record is committed only when all of its lines were printed (--max may
       * stop between the -U and +U of an update: that record is printed again next time) */
      if (kconf.group_id && pos >= out.len && wd_tail_note_offset(&offs, &noffs, m, topics, ntopics)) {
        err = wd_error_nomem();
        goto cleanup;
      }
    }
    fflush(stdout);
    wd_kmsg_release(msgs, nmsgs);
    nmsgs = 0;
    if (kconf.group_id && noffs) {
      wd_error_t *cerr = wd_consumer_commit(c, offs, noffs);
      if (cerr) wd_log(WD_LOG_WARN, "tail", "%s", cerr->message);
      wd_error_destroy(cerr);
      noffs = 0;
    }
  }
  rc = 0;
cleanup:
  if (err) fprintf(stderr, "widen tail: %s\n", err->message);
  if (show_usage) usage(stderr);
  if (handlers) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
  }
  if (msgs) wd_kmsg_release(msgs, nmsgs);
  free(msgs);
  free(offs);
  wd_consumer_destroy(c);
  wd_error_destroy(err);
  wd_buf_free(&out);
  wd_kafka_conf_clear(&kconf);
  return rc;
}
