/*
 * tests/chaos/chaos_verify.c — the verifier of the chaos test (tests/chaos/run), and its topic
 * helper.
 *
 *   chaos_verify topics create --brokers B --partitions P TOPIC...
 *   chaos_verify topics delete --brokers B TOPIC...
 *   chaos_verify verify --group NAME=COL,COL... (repeatable)
 *                (--brokers B --clean TOPIC --chaos TOPIC | --clean-file F --chaos-file F)
 *                [--at-least-once] [--dump-clean F] [--dump-chaos F] [--max-print N]
 *
 * verify reads two debezium-json changelog topics of widen (the clean reference run and the
 * chaos run of the same input) to their ends with isolation.level=read_committed (or two files
 * of JSON lines {"partition":P,"offset":O,"key":K,"value":V}, the format --dump-* writes; the
 * tampered-output test feeds such files) and decodes every message with the changelog decoder
 * (changelog/changelog.h, wd_changelog_decode_tail). It then checks, per primary key:
 *   (a) consistency, in both runs: replayed from empty, a +I is of an absent key, an -U and a -D
 *       equal the current row, a +U comes with its -U (one debezium update carries both);
 *   (b) per group of columns (--group: one per source stream, the stream's own columns): the
 *       sequence of distinct values of the group that the key passes through (absent = all
 *       null) is the clean run's, each transition once and in order; a value the clean run
 *       left earlier is a repeat, skipped values are a gap, others are unexpected;
 *   (c) the final row equals the clean run's;
 *   (d) no key appears that the clean run does not have.
 * The streams are separate topics, so two runs may interleave them differently and the full
 * rows a key passes through may legitimately differ; each group's own sequence does not (given
 * sequence groups, no cross-group effects and one order per key in each stream: single-partition
 * sources, or, as in the multi-process mode (tests/chaos/multi), several partitions per stream
 * with no key-changing updates, so that each key's records of a stream sit in one partition, also
 * when a stream is keyed by another field and goes through a repartition topic). Columns in no
 * group (a lookup's, whose changes reach a row at a time that depends on the run) are checked by
 * (a) and (c) only. The output topic is keyed by the primary key, so each key's changes are in
 * one of its partitions, in order.
 *
 * --at-least-once: the chaos run ran under pipeline.processing-guarantee: at-least-once, where a
 * restart after a crash reads the records again from the offsets stored with its state, so its
 * output may go back to an earlier row of a key and forward again (docs/guarantees.md); it must
 * still lose no change, invent no value and end with the clean run's rows. In the chaos run
 * (a) then also accepts an -U or -D whose before row is not the current one (or whose key is
 * absent) when the key had that row earlier in the run (a replay went back; each key's rows are
 * kept as hashes of their compact JSON), and a +I of a present key (every key was absent
 * once); an -U or -D of a row the key never had is still a violation (a lost change). (b) then
 * accepts a repeated transition and a value repeated or gone back to; a gap and a value the clean
 * run never has are still violations; (c) and (d) are unchanged. What is accepted is counted as
 * a repeat. The clean run, which no crash interrupts, is checked as without the flag.
 *
 * Prints the first --max-print violations (default 20) with key, partition and offset, then
 *   chaos-verify: clean M messages (R rows), chaos M messages (R rows), keys K, violations V
 * (with --at-least-once: ..., keys K, repeats N, violations V).
 * Exit 0 when V = 0, 1 when V > 0, 2 on a usage, Kafka or I/O error.
 *
 * Ownership: everything is owned by main's structures and freed before exit (ASan clean).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "changelog/changelog.h"
#include "common/buf.h"
#include "common/hash.h"

#define CV_MAX_GROUPS 8
#define CV_MAX_COLS 64

/* ---- groups of columns ---------------------------------------------------------------------- */

typedef struct cv_group {
  char *name;
  char *cols[CV_MAX_COLS];
  size_t ncols;
} cv_group_t;

static cv_group_t cv_groups[CV_MAX_GROUPS];
static size_t cv_ngroups;

/* Parses NAME=COL,COL into the next group. 0, or -1 with a message. */
static int cv_group_add(const char *spec) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1] || cv_ngroups == CV_MAX_GROUPS) {
    fprintf(stderr, "chaos_verify: --group NAME=COL,COL... (at most %d groups): '%s'\n", CV_MAX_GROUPS, spec);
    return -1;
  }
  cv_group_t *g = &cv_groups[cv_ngroups++];
  g->name = strndup(spec, (size_t)(eq - spec));
  char *list = strdup(eq + 1), *save = NULL;
  if (!g->name || !list) {
    free(list);
    return -1;
  }
  for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (g->ncols == CV_MAX_COLS || !(g->cols[g->ncols] = strdup(tok))) {
      free(list);
      return -1;
    }
    g->ncols++;
  }
  free(list);
  return 0;
}

/* Hash of group g's columns of row (NULL = absent = every column null). */
static uint64_t cv_project(const cv_group_t *g, const json_t *row) {
  uint64_t h = 0;
  for (size_t c = 0; c < g->ncols; c++) {
    json_t *v = row ? json_object_get(row, g->cols[c]) : NULL;
    char *text = v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
    if (text) {
      h = wd_hash_bytes("v", 1, h);
      h = wd_hash_bytes(text, strlen(text), h);
    } else {
      h = wd_hash_bytes("n", 1, h);
    }
    h = wd_hash_bytes("\x1f", 1, h);
    free(text);
  }
  return h;
}

/* ---- violations ----------------------------------------------------------------------------- */

static uint64_t cv_violations;
static uint64_t cv_max_print = 20;
static bool cv_at_least_once; /* --at-least-once: the chaos run may repeat (see the header) */
static uint64_t cv_repeats;

static void cv_violation(const char *run, const char *key, int32_t partition, int64_t offset, const char *fmt, ...) {
  cv_violations++;
  if (cv_violations > cv_max_print) return;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (partition >= 0)
    printf("violation %" PRIu64 ": %s run, key %s, partition %" PRId32 " offset %" PRId64 ": %s\n", cv_violations, run,
           key, partition, offset, what);
  else printf("violation %" PRIu64 ": %s run, key %s: %s\n", cv_violations, run, key, what);
}

/* What (b) finds repeated in the chaos run: a repeat under --at-least-once, else a violation. */
static void cv_repeat(const char *key, int32_t partition, int64_t offset, const char *fmt, ...) {
  if (cv_at_least_once) {
    cv_repeats++;
    return;
  }
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  cv_violation("chaos", key, partition, offset, "%s", what);
}

/* ---- keys and runs -------------------------------------------------------------------------- */

/* One message's effect on its key: where it is and the group values after it. */
typedef struct cv_event {
  uint32_t key;
  int32_t partition;
  int64_t offset;
  uint64_t proj[CV_MAX_GROUPS];
} cv_event_t;

typedef struct cv_run {
  const char *name;
  cv_event_t *ev;
  size_t nev, cap;
  json_t **cur; /* [key] current row (owned) or NULL */
  size_t ncur;
  uint64_t messages, rows;
  /* --at-least-once: the rows each key had, an open-addressing set of the mixed hash of key index
   * and row (never 0; 0 is an empty slot); cap is a power of two, at most half full */
  uint64_t *had;
  size_t nhad, had_cap;
} cv_run_t;

/* Key text -> index: a jansson object used as a hash map; names[] owns copies for printing. */
static json_t *cv_key_index;
static char **cv_key_names;
static size_t cv_nkeys, cv_key_cap;
static bool *cv_key_in_clean;

static int cv_key_of(const char *text, uint32_t *out) {
  json_t *ix = json_object_get(cv_key_index, text);
  if (ix) {
    *out = (uint32_t)json_integer_value(ix);
    return 0;
  }
  if (cv_nkeys == cv_key_cap) {
    size_t cap = cv_key_cap ? cv_key_cap * 2 : 1024;
    char **n = realloc(cv_key_names, cap * sizeof(*n));
    if (!n) return -1;
    cv_key_names = n;
    bool *in = realloc(cv_key_in_clean, cap * sizeof(*in));
    if (!in) return -1;
    cv_key_in_clean = in;
    cv_key_cap = cap;
  }
  if (!(cv_key_names[cv_nkeys] = strdup(text))) return -1;
  cv_key_in_clean[cv_nkeys] = false;
  if (json_object_set_new(cv_key_index, text, json_integer((json_int_t)cv_nkeys))) return -1;
  *out = (uint32_t)cv_nkeys++;
  return 0;
}

static int cv_run_grow(cv_run_t *r) {
  if (r->ncur < cv_nkeys) {
    json_t **n = realloc(r->cur, cv_key_cap * sizeof(*n));
    if (!n) return -1;
    for (size_t i = r->ncur; i < cv_key_cap; i++) n[i] = NULL;
    r->cur = n;
    r->ncur = cv_key_cap;
  }
  if (r->nev == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 4096;
    cv_event_t *e = realloc(r->ev, cap * sizeof(*e));
    if (!e) return -1;
    r->ev = e;
    r->cap = cap;
  }
  return 0;
}

static void cv_run_free(cv_run_t *r) {
  for (size_t i = 0; i < r->ncur; i++) json_decref(r->cur[i]);
  free(r->cur);
  free(r->ev);
  free(r->had);
}

/* The entry of key ki's row in the set of rows had: the hash of the row's compact JSON (sorted
 * keys) mixed with the key index, never 0. 0 on no memory. */
static uint64_t cv_had_hash(uint32_t ki, const json_t *row) {
  char *text = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  if (!text) return 0;
  uint64_t h = wd_hash_mix64(wd_hash_bytes(text, strlen(text), ki));
  free(text);
  return h ? h : 1;
}

/* The slot of h in r's set: where it is, or the empty slot where it would go. */
static size_t cv_had_slot(const cv_run_t *r, uint64_t h) {
  size_t i = (size_t)h & (r->had_cap - 1);
  while (r->had[i] && r->had[i] != h) i = (i + 1) & (r->had_cap - 1);
  return i;
}

/* Whether key ki had row in run r. */
static bool cv_had(const cv_run_t *r, uint32_t ki, const json_t *row) {
  uint64_t h = cv_had_hash(ki, row);
  return h && r->had_cap && r->had[cv_had_slot(r, h)] == h;
}

/* Records that key ki has row in run r. 0, or -1 on no memory. */
static int cv_had_add(cv_run_t *r, uint32_t ki, const json_t *row) {
  uint64_t h = cv_had_hash(ki, row);
  if (!h) return -1;
  if (2 * (r->nhad + 1) > r->had_cap) {
    size_t cap = r->had_cap ? r->had_cap * 2 : 4096;
    uint64_t *old = r->had, *n = calloc(cap, sizeof(*n));
    if (!n) return -1;
    size_t old_cap = r->had_cap;
    r->had = n;
    r->had_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i]) r->had[cv_had_slot(r, old[i])] = old[i];
    free(old);
  }
  size_t i = cv_had_slot(r, h);
  if (!r->had[i]) {
    r->had[i] = h;
    r->nhad++;
  }
  return 0;
}

/* Applies one Kafka message (key/value bytes) of run r: decodes it, checks (a), records the
 * event. 0, or -1 on no memory (violations are counted, not errors). */
static int cv_apply(cv_run_t *r, bool is_clean, int32_t partition, int64_t offset, const void *key, size_t klen,
                    const void *value, size_t vlen) {
  wd_buf_t out = {0};
  size_t nlines = 0;
  int rc = -1;
  json_t *lines[2] = {NULL, NULL};
  char *ktext = NULL;
  r->messages++;
  if (!value || vlen == 0) { /* a tombstone: widen's debezium-json sink writes none */
    cv_violation(r->name, "(tombstone)", partition, offset, "a null or empty value");
    rc = 0;
    goto cleanup;
  }
  wd_error_t *err = wd_changelog_decode_tail(WD_CHANGELOG_DEBEZIUM_JSON, key, klen, value, vlen, &out, &nlines);
  if (err) {
    cv_violation(r->name, "(undecodable)", partition, offset, "%s", err->message);
    wd_error_destroy(err);
    rc = 0;
    goto cleanup;
  }
  /* the decoder's lines: {"op":..,"key":..,"row":..}\n, one or two */
  const char *p = (const char *)out.data, *end = p + out.len;
  for (size_t i = 0; i < nlines && i < 2 && p < end; i++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_error_t jerr;
    if (!(lines[i] = json_loadb(p, n, 0, &jerr))) goto cleanup;
    p += n + 1;
  }
  if (nlines == 0 || nlines > 2 || !lines[0]) {
    cv_violation(r->name, "(empty)", partition, offset, "%zu changelog rows in one message", nlines);
    rc = 0;
    goto cleanup;
  }
  json_t *k = json_object_get(lines[0], "key");
  if (!(ktext = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY))) goto cleanup;
  uint32_t ki;
  if (cv_key_of(ktext, &ki) || cv_run_grow(r)) goto cleanup;
  if (is_clean) cv_key_in_clean[ki] = true;
  r->rows += nlines;
  json_t **cur = &r->cur[ki];
  const char *op0 = json_string_value(json_object_get(lines[0], "op"));
  json_t *row0 = json_object_get(lines[0], "row");
  op0 = op0 ? op0 : "?";
  /* --at-least-once, the chaos run: a replay may go back to a row the key had earlier */
  bool replays = cv_at_least_once && !is_clean;
  if (strcmp(op0, "+I") == 0) {
    if (*cur && replays) cv_repeats++;
    else if (*cur) cv_violation(r->name, ktext, partition, offset, "+I of a key that is present");
    json_decref(*cur);
    *cur = json_incref(row0);
  } else if (strcmp(op0, "-U") == 0 && nlines == 2) {
    if ((!*cur || !json_equal(*cur, row0)) && replays && cv_had(r, ki, row0)) cv_repeats++;
    else if (!*cur) cv_violation(r->name, ktext, partition, offset, "-U of an absent key");
    else if (!json_equal(*cur, row0))
      cv_violation(r->name, ktext, partition, offset, "-U does not equal the current row");
    json_decref(*cur);
    *cur = json_incref(json_object_get(lines[1], "row"));
  } else if (strcmp(op0, "+U") == 0) {
    cv_violation(r->name, ktext, partition, offset, "+U without its -U (update without before)");
    json_decref(*cur);
    *cur = json_incref(row0);
  } else if (strcmp(op0, "-D") == 0) {
    if ((!*cur || !json_equal(*cur, row0)) && replays && cv_had(r, ki, row0)) cv_repeats++;
    else if (!*cur) cv_violation(r->name, ktext, partition, offset, "-D of an absent key");
    else if (!json_equal(*cur, row0))
      cv_violation(r->name, ktext, partition, offset, "-D does not equal the current row");
    json_decref(*cur);
    *cur = NULL;
  } else {
    cv_violation(r->name, ktext, partition, offset, "unexpected row kind %s (%zu rows)", op0, nlines);
  }
  if (replays && *cur && cv_had_add(r, ki, *cur)) goto cleanup;
  cv_event_t *e = &r->ev[r->nev++];
  e->key = ki;
  e->partition = partition;
  e->offset = offset;
  for (size_t g = 0; g < cv_ngroups; g++) e->proj[g] = cv_project(&cv_groups[g], *cur);
  rc = 0;
cleanup:
  if (rc) fprintf(stderr, "chaos_verify: out of memory\n");
  json_decref(lines[0]);
  json_decref(lines[1]);
  free(ktext);
  wd_buf_free(&out);
  return rc;
}

/* Appends one dump line. */
static void cv_dump(FILE *f, int32_t partition, int64_t offset, const void *key, size_t klen, const void *value,
                    size_t vlen) {
  if (!f) return;
  json_t *k = key ? json_loadb(key, klen, JSON_DECODE_ANY, NULL) : json_null();
  json_t *v = value && vlen ? json_loadb(value, vlen, JSON_DECODE_ANY, NULL) : json_null();
  if (!k && key) k = json_stringn(key, klen);
  if (!v) v = json_stringn(value, vlen);
  json_t *o = json_pack("{s:i,s:I,s:o,s:o}", "partition", (int)partition, "offset", (json_int_t)offset, "key",
                        k ? k : json_null(), "value", v ? v : json_null());
  if (o) {
    json_dumpf(o, f, JSON_COMPACT);
    fputc('\n', f);
  }
  json_decref(o);
}

/* ---- reading -------------------------------------------------------------------------------- */

static int cv_read_file(const char *path, cv_run_t *r, bool is_clean) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "chaos_verify: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0, lineno = 0;
  ssize_t len;
  int rc = 0;
  while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (len <= 1) continue;
    json_error_t jerr;
    json_t *o = json_loadb(line, (size_t)len, 0, &jerr);
    if (!o || !json_is_object(o)) {
      fprintf(stderr, "chaos_verify: %s:%zu: not a JSON object: %s\n", path, lineno, o ? "" : jerr.text);
      json_decref(o);
      rc = -1;
      break;
    }
    json_t *k = json_object_get(o, "key"), *v = json_object_get(o, "value");
    char *kt = k && !json_is_null(k) ? json_dumps(k, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char *vt = v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    rc = cv_apply(r, is_clean, (int32_t)json_integer_value(json_object_get(o, "partition")),
                  (int64_t)json_integer_value(json_object_get(o, "offset")), kt, kt ? strlen(kt) : 0, vt,
                  vt ? strlen(vt) : 0);
    free(kt);
    free(vt);
    json_decref(o);
  }
  free(line);
  fclose(f);
  return rc;
}

static rd_kafka_t *cv_kafka(rd_kafka_type_t type, const char *brokers, bool consumer_props, const char *isolation) {
  char errstr[512], group[64];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  snprintf(group, sizeof group, "chaos-verify-%ld-%ld", (long)getpid(), (long)time(NULL));
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
      (consumer_props &&
       (rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "isolation.level", isolation, errstr, sizeof errstr) != RD_KAFKA_CONF_OK))) {
    fprintf(stderr, "chaos_verify: %s\n", errstr);
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "chaos_verify: %s\n", errstr);
    rd_kafka_conf_destroy(conf);
  }
  return rk;
}

/* Waits (up to 180 s) until no partition of topic has an open transaction: the last stable
 * offset (what rk, read_committed, lists) equals the high watermark (what a read_uncommitted
 * client lists). A transaction a killed producer left open is aborted by the broker after its
 * transaction.timeout.ms or by the next producer of its transactional id; reading before then
 * would end early. 0, or -1 when they still differ (the read goes on; violations will show). */
static int cv_wait_stable(rd_kafka_t *rk, const char *brokers, const char *topic,
                          const struct rd_kafka_metadata_topic *t) {
  rd_kafka_t *ru = cv_kafka(RD_KAFKA_CONSUMER, brokers, true, "read_uncommitted");
  if (!ru) return -1;
  int rc = -1;
  for (int round = 0; round < 180 && rc; round++) {
    rc = 0;
    for (int i = 0; i < t->partition_cnt && !rc; i++) {
      int64_t lo, lso, hw;
      if (rd_kafka_query_watermark_offsets(rk, topic, t->partitions[i].id, &lo, &lso, 10000) ||
          rd_kafka_query_watermark_offsets(ru, topic, t->partitions[i].id, &lo, &hw, 10000) || lso != hw) {
        rc = -1;
        if (round % 15 == 0)
          fprintf(stderr, "chaos_verify: %s[%" PRId32 "]: waiting for open transactions to end\n", topic,
                  t->partitions[i].id);
      }
    }
    if (rc) sleep(1);
  }
  if (rc) fprintf(stderr, "chaos_verify: %s: still open transactions after 180 s; reading what is committed\n", topic);
  rd_kafka_destroy(ru);
  return rc;
}

/* Reads every partition of topic from the beginning to its end (read_committed: the last stable
 * offset, once no transaction is open) into r. */
static int cv_read_topic(const char *brokers, const char *topic, cv_run_t *r, bool is_clean, FILE *dump) {
  int rc = -1;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_topic_t *rkt = NULL;
  rd_kafka_topic_partition_list_t *parts = NULL;
  bool *eof = NULL;
  rd_kafka_t *rk = cv_kafka(RD_KAFKA_CONSUMER, brokers, true, "read_committed");
  if (!rk) return -1;
  rkt = rd_kafka_topic_new(rk, topic, NULL);
  rd_kafka_resp_err_t err = rkt ? rd_kafka_metadata(rk, 0, rkt, &md, 15000) : RD_KAFKA_RESP_ERR__FAIL;
  if (err || md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt <= 0) {
    fprintf(stderr, "chaos_verify: metadata of %s: %s\n", topic,
            rd_kafka_err2str(err                  ? err
                             : md->topic_cnt == 1 ? md->topics[0].err
                                                  : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
    goto cleanup;
  }
  (void)cv_wait_stable(rk, brokers, topic, &md->topics[0]);
  int np = md->topics[0].partition_cnt, neof = 0;
  if (!(eof = calloc((size_t)np, sizeof(*eof))) || !(parts = rd_kafka_topic_partition_list_new(np))) goto cleanup;
  for (int i = 0; i < np; i++)
    rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[i].id)->offset = RD_KAFKA_OFFSET_BEGINNING;
  if ((err = rd_kafka_assign(rk, parts))) {
    fprintf(stderr, "chaos_verify: assign %s: %s\n", topic, rd_kafka_err2str(err));
    goto cleanup;
  }
  time_t last = time(NULL);
  while (neof < np) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) {
      if (time(NULL) - last > 120) {
        fprintf(stderr, "chaos_verify: %s: no data and not at the end for 120 s\n", topic);
        goto cleanup;
      }
      continue;
    }
    last = time(NULL);
    int mrc = 0;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      for (int i = 0; i < np; i++)
        if (md->topics[0].partitions[i].id == m->partition && !eof[i]) {
          eof[i] = true;
          neof++;
        }
    } else if (m->err) {
      fprintf(stderr, "chaos_verify: %s: %s\n", topic, rd_kafka_message_errstr(m));
      mrc = -1;
    } else {
      cv_dump(dump, m->partition, m->offset, m->key, m->key_len, m->payload, m->len);
      mrc = cv_apply(r, is_clean, m->partition, m->offset, m->key, m->key_len, m->payload, m->len);
    }
    rd_kafka_message_destroy(m);
    if (mrc) goto cleanup;
  }
  rc = 0;
cleanup:
  free(eof);
  if (parts) rd_kafka_topic_partition_list_destroy(parts);
  if (md) rd_kafka_metadata_destroy(md);
  if (rkt) rd_kafka_topic_destroy(rkt);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return rc;
}

/* ---- checks (b), (c), (d) ------------------------------------------------------------------- */

static int cv_ev_cmp(const void *a, const void *b) {
  const cv_event_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->partition != y->partition) return x->partition < y->partition ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The distinct-value sequence of group g over events ev[0..n) (one key), starting with absent.
 * seq/at (at: the event index of each value, -1 for the start) must hold n + 1. Returns its length. */
static size_t cv_seq(const cv_event_t *ev, size_t n, size_t g, uint64_t absent, uint64_t *seq, ptrdiff_t *at) {
  size_t len = 0;
  seq[len] = absent;
  at[len++] = -1;
  for (size_t i = 0; i < n; i++)
    if (ev[i].proj[g] != seq[len - 1]) {
      seq[len] = ev[i].proj[g];
      at[len++] = (ptrdiff_t)i;
    }
  return len;
}

/* Compares the chaos sequence of one key and group against the clean one (see the header). */
static void cv_compare(const char *key, const cv_group_t *grp, const uint64_t *cl, size_t ncl, const uint64_t *ch,
                       const ptrdiff_t *chat, size_t nch, const cv_event_t *chev) {
  size_t j = 0, hw = 0;
  for (size_t i = 1; i < nch; i++) {
    const cv_event_t *e = &chev[chat[i]];
    if (j + 1 < ncl && ch[i] == cl[j + 1]) {
      j++;
      if (j <= hw) cv_repeat(key, e->partition, e->offset, "%s: transition %zu of %zu repeated", grp->name, j, ncl - 1);
      else hw = j;
      continue;
    }
    size_t k = SIZE_MAX;
    for (size_t x = j + 2; x < ncl && k == SIZE_MAX; x++)
      if (cl[x] == ch[i]) k = x;
    if (k != SIZE_MAX) {
      if (k > hw + 1)
        cv_violation("chaos", key, e->partition, e->offset, "%s: gap, clean values %zu..%zu of %zu missing before it",
                     grp->name, j + 1 > hw + 1 ? j + 1 : hw + 1, k - 1, ncl - 1);
      else
        cv_repeat(key, e->partition, e->offset, "%s: value %zu of %zu repeated (out of order)", grp->name, k, ncl - 1);
      j = k;
      if (k > hw) hw = k;
      continue;
    }
    for (size_t x = j + 1; x-- > 0 && k == SIZE_MAX;)
      if (cl[x] == ch[i]) k = x;
    if (k != SIZE_MAX) {
      cv_repeat(key, e->partition, e->offset, "%s: back to value %zu of %zu (repeat)", grp->name, k, ncl - 1);
      j = k;
      continue;
    }
    cv_violation("chaos", key, e->partition, e->offset, "%s: a value the clean run never has", grp->name);
  }
  if (hw + 1 < ncl)
    cv_violation("chaos", key, -1, -1, "%s: gap, clean values %zu..%zu of %zu never appear", grp->name, hw + 1, ncl - 1,
                 ncl - 1);
}

static int cv_check(cv_run_t *clean, cv_run_t *chaos) {
  if (cv_run_grow(clean) || cv_run_grow(chaos)) return -1;
  qsort(clean->ev, clean->nev, sizeof(*clean->ev), cv_ev_cmp);
  qsort(chaos->ev, chaos->nev, sizeof(*chaos->ev), cv_ev_cmp);
  size_t maxn = 1;
  for (size_t a = 0, b = 0, k = 0; k < cv_nkeys; k++) {
    size_t a0 = a, b0 = b;
    while (a < clean->nev && clean->ev[a].key == k) a++;
    while (b < chaos->nev && chaos->ev[b].key == k) b++;
    if (a - a0 + 1 > maxn) maxn = a - a0 + 1;
    if (b - b0 + 1 > maxn) maxn = b - b0 + 1;
  }
  uint64_t *s1 = malloc(maxn * sizeof(*s1)), *s2 = malloc(maxn * sizeof(*s2));
  ptrdiff_t *t1 = malloc(maxn * sizeof(*t1)), *t2 = malloc(maxn * sizeof(*t2));
  uint64_t absent[CV_MAX_GROUPS];
  for (size_t g = 0; g < cv_ngroups; g++) absent[g] = cv_project(&cv_groups[g], NULL);
  int rc = -1;
  if (!s1 || !s2 || !t1 || !t2) goto cleanup;
  for (size_t a = 0, b = 0, k = 0; k < cv_nkeys; k++) {
    size_t a0 = a, b0 = b;
    while (a < clean->nev && clean->ev[a].key == k) a++;
    while (b < chaos->nev && chaos->ev[b].key == k) b++;
    const char *key = cv_key_names[k];
    if (!cv_key_in_clean[k]) { /* (d) */
      cv_violation("chaos", key, chaos->ev[b0].partition, chaos->ev[b0].offset, "a key the clean run does not have");
      continue;
    }
    for (size_t g = 0; g < cv_ngroups; g++) { /* (b) */
      size_t n1 = cv_seq(clean->ev + a0, a - a0, g, absent[g], s1, t1);
      size_t n2 = cv_seq(chaos->ev + b0, b - b0, g, absent[g], s2, t2);
      cv_compare(key, &cv_groups[g], s1, n1, s2, t2, n2, chaos->ev + b0);
    }
    json_t *x = clean->cur[k], *y = chaos->cur[k]; /* (c) */
    if ((x == NULL) != (y == NULL) || (x && !json_equal(x, y)))
      cv_violation("chaos", key, -1, -1, "final row differs from the clean run's (%s)",
                   !y   ? "absent in chaos"
                   : !x ? "absent in clean"
                        : "other values");
  }
  rc = 0;
cleanup:
  free(s1);
  free(s2);
  free(t1);
  free(t2);
  return rc;
}

/* ---- topics --------------------------------------------------------------------------------- */

static int cv_topics(int argc, char **argv) {
  if (argc < 2) return 2;
  bool create = strcmp(argv[1], "create") == 0;
  if (!create && strcmp(argv[1], "delete") != 0) return 2;
  const char *brokers = NULL;
  int partitions = 1, i = 2;
  for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--brokers") == 0) brokers = argv[i + 1];
    else if (strcmp(argv[i], "--partitions") == 0) partitions = atoi(argv[i + 1]);
    else return 2;
  }
  int n = argc - i;
  if (!brokers || n <= 0 || partitions <= 0) return 2;
  rd_kafka_t *rk = cv_kafka(RD_KAFKA_PRODUCER, brokers, false, NULL);
  if (!rk) return 2;
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ANY);
  char errstr[256];
  rd_kafka_AdminOptions_set_operation_timeout(opt, 30000, errstr, sizeof errstr);
  rd_kafka_AdminOptions_set_request_timeout(opt, 30000, errstr, sizeof errstr);
  rd_kafka_NewTopic_t **nt = calloc((size_t)n, sizeof(*nt));
  rd_kafka_DeleteTopic_t **dt = calloc((size_t)n, sizeof(*dt));
  int rc = 2;
  if (!nt || !dt) goto cleanup;
  for (int t = 0; t < n; t++) {
    if (create) {
      if (!(nt[t] = rd_kafka_NewTopic_new(argv[i + t], partitions, 1, errstr, sizeof errstr))) {
        fprintf(stderr, "chaos_verify: %s: %s\n", argv[i + t], errstr);
        goto cleanup;
      }
    } else {
      dt[t] = rd_kafka_DeleteTopic_new(argv[i + t]);
    }
  }
  if (create) rd_kafka_CreateTopics(rk, nt, (size_t)n, opt, q);
  else rd_kafka_DeleteTopics(rk, dt, (size_t)n, opt, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  if (!ev) {
    fprintf(stderr, "chaos_verify: topics %s: no answer in 60 s\n", argv[1]);
    goto cleanup;
  }
  if (rd_kafka_event_error(ev)) {
    fprintf(stderr, "chaos_verify: topics %s: %s\n", argv[1], rd_kafka_event_error_string(ev));
  } else {
    size_t cnt = 0;
    const rd_kafka_topic_result_t **res =
        create ? rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt)
               : rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &cnt);
    rc = 0;
    for (size_t t = 0; t < cnt; t++) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[t]);
      if (e && !(create && e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) &&
          !(!create && e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)) {
        fprintf(stderr, "chaos_verify: %s %s: %s\n", argv[1], rd_kafka_topic_result_name(res[t]),
                rd_kafka_topic_result_error_string(res[t]));
        rc = 2;
      }
    }
  }
  rd_kafka_event_destroy(ev);
cleanup:
  for (int t = 0; t < n && nt && dt; t++) {
    if (nt[t]) rd_kafka_NewTopic_destroy(nt[t]);
    if (dt[t]) rd_kafka_DeleteTopic_destroy(dt[t]);
  }
  free(nt);
  free(dt);
  rd_kafka_AdminOptions_destroy(opt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return rc;
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr,
          "usage: chaos_verify topics create|delete --brokers B [--partitions P] TOPIC...\n"
          "       chaos_verify verify --group NAME=COL,COL... (--brokers B --clean T --chaos T |\n"
          "                    --clean-file F --chaos-file F) [--at-least-once] [--dump-clean F] [--dump-chaos F]\n"
          "                    [--max-print N]\n");
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "topics") == 0) {
    int rc = cv_topics(argc - 1, argv + 1);
    if (rc == 2) usage();
    return rc;
  }
  if (argc < 2 || strcmp(argv[1], "verify") != 0) {
    usage();
    return 2;
  }
  const char *brokers = NULL, *clean_t = NULL, *chaos_t = NULL, *clean_f = NULL, *chaos_f = NULL;
  const char *dump_clean = NULL, *dump_chaos = NULL;
  int rc = 2;
  cv_run_t clean = {.name = "clean"}, chaos = {.name = "chaos"};
  FILE *d1 = NULL, *d2 = NULL;
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "--at-least-once") == 0) { /* the one option without a value */
      cv_at_least_once = true;
      continue;
    }
    const char *v = i + 1 < argc ? argv[++i] : NULL;
    if (!v) goto bad;
    if (strcmp(o, "--brokers") == 0) brokers = v;
    else if (strcmp(o, "--clean") == 0) clean_t = v;
    else if (strcmp(o, "--chaos") == 0) chaos_t = v;
    else if (strcmp(o, "--clean-file") == 0) clean_f = v;
    else if (strcmp(o, "--chaos-file") == 0) chaos_f = v;
    else if (strcmp(o, "--dump-clean") == 0) dump_clean = v;
    else if (strcmp(o, "--dump-chaos") == 0) dump_chaos = v;
    else if (strcmp(o, "--max-print") == 0) cv_max_print = strtoull(v, NULL, 10);
    else if (strcmp(o, "--group") == 0) {
      if (cv_group_add(v)) goto cleanup;
    } else goto bad;
  }
  if (cv_ngroups == 0 ||
      !((brokers && clean_t && chaos_t && !clean_f && !chaos_f) || (!clean_t && !chaos_t && clean_f && chaos_f)))
    goto bad;
  if (!(cv_key_index = json_object())) goto cleanup;
  if ((dump_clean && !(d1 = fopen(dump_clean, "w"))) || (dump_chaos && !(d2 = fopen(dump_chaos, "w")))) {
    fprintf(stderr, "chaos_verify: cannot write a dump: %s\n", strerror(errno));
    goto cleanup;
  }
  if (clean_f ? cv_read_file(clean_f, &clean, true) : cv_read_topic(brokers, clean_t, &clean, true, d1)) goto cleanup;
  if (chaos_f ? cv_read_file(chaos_f, &chaos, false) : cv_read_topic(brokers, chaos_t, &chaos, false, d2)) goto cleanup;
  if (cv_check(&clean, &chaos)) {
    fprintf(stderr, "chaos_verify: out of memory\n");
    goto cleanup;
  }
  if (cv_violations > cv_max_print) printf("... %" PRIu64 " more violations not shown\n", cv_violations - cv_max_print);
  char repeats[48] = "";
  if (cv_at_least_once) snprintf(repeats, sizeof repeats, ", repeats %" PRIu64, cv_repeats);
  printf("chaos-verify: clean %" PRIu64 " messages (%" PRIu64 " rows), chaos %" PRIu64 " messages (%" PRIu64
         " rows), keys %zu%s, violations %" PRIu64 "\n",
         clean.messages, clean.rows, chaos.messages, chaos.rows, cv_nkeys, repeats, cv_violations);
  rc = cv_violations ? 1 : 0;
  goto cleanup;
bad:
  usage();
cleanup:
  if (d1) fclose(d1);
  if (d2) fclose(d2);
  cv_run_free(&clean);
  cv_run_free(&chaos);
  for (size_t k = 0; k < cv_nkeys; k++) free(cv_key_names[k]);
  free(cv_key_names);
  free(cv_key_in_clean);
  json_decref(cv_key_index);
  for (size_t g = 0; g < cv_ngroups; g++) {
    free(cv_groups[g].name);
    for (size_t c = 0; c < cv_groups[g].ncols; c++) free(cv_groups[g].cols[c]);
  }
  return rc;
}
