/* The workload generator of `widen produce --generate` (app/cli/generate.h): deterministic per seed,
 * exact counts, ~20% late and ~1% deletes, valid Debezium JSON whose images agree with the
 * message metadata, creates before updates per key. No Kafka. */
#include <criterion/criterion.h>
#include <jansson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli/generate.h"
#include "common/hash.h"

/* Hash of every topic, key and value of a run. */
static uint64_t run_hash(const wd_gen_opts_t *opts, uint64_t *count) {
  wd_gen_t *g = NULL;
  wd_error_t *err = wd_gen_new(opts, &g);
  cr_assert_null(err, "%s", err ? err->message : "");
  uint64_t h = 0;
  wd_gen_msg_t m;
  *count = 0;
  while (wd_gen_next(g, &m)) {
    h = wd_hash_bytes(m.topic, strlen(m.topic) + 1, h);
    h = wd_hash_bytes(m.key, m.key_len, h);
    h = wd_hash_bytes(m.value, m.value_len, h);
    (*count)++;
  }
  cr_assert(!wd_gen_failed(g));
  wd_gen_destroy(g);
  return h;
}

Test(generate, deterministic_for_a_seed) {
  wd_gen_opts_t o = {.seed = 42, .keys = 200, .records = 5000};
  uint64_t n1, n2, n3;
  uint64_t h1 = run_hash(&o, &n1), h2 = run_hash(&o, &n2);
  cr_assert_eq(h1, h2);
  cr_assert_eq(n1, 5000);
  cr_assert_eq(n2, 5000);
  o.seed = 43;
  uint64_t h3 = run_hash(&o, &n3);
  cr_assert_neq(h1, h3);
  cr_assert_eq(n3, 5000);
}

typedef struct key_hist {
  int64_t max_emitted; /* highest version emitted so far */
  int64_t nver;
  char ops[256]; /* ops[v] = op of version v (for v < 256) */
} key_hist_t;

Test(generate, counts_ratios_and_valid_debezium_json) {
  enum { KEYS = 100, RECORDS = 30000 };
  wd_gen_opts_t o = {.seed = 7, .keys = KEYS, .records = RECORDS, .topic_prefix = "shop."};
  wd_gen_t *g = NULL;
  wd_error_t *err = wd_gen_new(&o, &g);
  cr_assert_null(err, "%s", err ? err->message : "");
  key_hist_t *hist = calloc(3 * KEYS, sizeof(*hist));
  cr_assert_not_null(hist);
  static const char *const names[] = {"orders", "payments", "shipments"};
  static const char *const vfield[] = {"order_version", "pay_version", "ship_version"};
  static const char *const tsfield[] = {"order_ts", "pay_ts", "ship_ts"};
  uint64_t per_stream[3] = {0}, late = 0, late_seen = 0, deletes = 0, n = 0, img_bytes = 0, nimg = 0;
  wd_gen_msg_t m;
  while (wd_gen_next(g, &m)) {
    n++;
    cr_assert(m.stream_index >= 0 && m.stream_index < 3);
    int s = m.stream_index;
    cr_assert_str_eq(m.stream, names[s]);
    char topic[32];
    snprintf(topic, sizeof topic, "shop.%s", names[s]);
    cr_assert_str_eq(m.topic, topic);
    per_stream[s]++;
    cr_assert(m.order_id >= 1 && m.order_id <= KEYS);

    /* the key is Debezium's: {"order_id":N} */
    char key[48];
    snprintf(key, sizeof key, "{\"order_id\":%llu}", (unsigned long long)m.order_id);
    cr_assert_eq(m.key_len, strlen(key));
    cr_assert(memcmp(m.key, key, m.key_len) == 0);

    /* the value is valid JSON with a consistent envelope */
    json_error_t jerr;
    json_t *v = json_loadb(m.value, m.value_len, JSON_REJECT_DUPLICATES, &jerr);
    cr_assert_not_null(v, "invalid JSON: %s: %.*s", jerr.text, (int)m.value_len, m.value);
    const char *op = json_string_value(json_object_get(v, "op"));
    cr_assert(op && strlen(op) == 1 && op[0] == m.op);
    json_t *before = json_object_get(v, "before"), *after = json_object_get(v, "after");
    json_t *source = json_object_get(v, "source");
    cr_assert(json_is_object(source));
    cr_assert_str_eq(json_string_value(json_object_get(source, "table")), names[s]);
    cr_assert_eq(json_integer_value(json_object_get(source, "ts_ms")), m.ts_ms);
    cr_assert(json_integer_value(json_object_get(v, "ts_ms")) >= m.ts_ms);
    switch (m.op) {
    case 'c': cr_assert(json_is_null(before) && json_is_object(after)); break;
    case 'u': cr_assert(json_is_object(before) && json_is_object(after)); break;
    case 'd': cr_assert(json_is_object(before) && json_is_null(after)); break;
    default: cr_assert_fail("op %c", m.op);
    }
    if (json_is_object(after)) {
      cr_assert_eq(json_integer_value(json_object_get(after, "order_id")), (json_int_t)m.order_id);
      cr_assert_eq(json_integer_value(json_object_get(after, vfield[s])), m.version);
      cr_assert_eq(json_integer_value(json_object_get(after, tsfield[s])), m.ts_ms);
      char *img = json_dumps(after, JSON_COMPACT);
      img_bytes += strlen(img);
      nimg++;
      free(img);
    }
    if (json_is_object(before)) {
      cr_assert_eq(json_integer_value(json_object_get(before, vfield[s])), m.version - 1);
      cr_assert(json_integer_value(json_object_get(before, tsfield[s])) < m.ts_ms);
    }
    if (s == 0 && json_is_object(after)) {
      const char *amount = json_string_value(json_object_get(after, "amount"));
      cr_assert(amount && strchr(amount, '.') && strlen(strchr(amount, '.')) == 3, "amount %s", amount);
    }
    json_decref(v);

    /* lateness, checked independently of the flag */
    key_hist_t *h = &hist[s * KEYS + (m.order_id - 1)];
    bool is_late = m.version < h->max_emitted;
    cr_assert_eq(is_late, m.late, "stream %s key %llu version %lld: late flag %d", names[s],
                 (unsigned long long)m.order_id, (long long)m.version, m.late);
    if (m.version > h->max_emitted) h->max_emitted = m.version;
    cr_assert(m.version >= 1 && m.version < 256);
    cr_assert_eq(h->ops[m.version], 0, "version emitted twice");
    h->ops[m.version] = m.op;
    h->nver++;
    late += m.late;
    late_seen += is_late;
    deletes += m.op == 'd';
  }
  cr_assert(!wd_gen_failed(g));
  wd_gen_destroy(g);

  cr_assert_eq(n, RECORDS);
  for (int s = 0; s < 3; s++)
    cr_assert(per_stream[s] > RECORDS / 3 - 600 && per_stream[s] < RECORDS / 3 + 600, "stream %d: %llu", s,
              (unsigned long long)per_stream[s]);
  double late_ratio = (double)late / RECORDS, del_ratio = (double)deletes / RECORDS;
  cr_assert(late_ratio > 0.17 && late_ratio < 0.23, "late ratio %.4f", late_ratio);
  cr_assert(del_ratio > 0.006 && del_ratio < 0.014, "delete ratio %.4f", del_ratio);
  double avg_img = (double)img_bytes / (double)nimg;
  cr_assert(avg_img > 160 && avg_img < 260, "average row image %.1f bytes", avg_img);

  /* per key, in version order: versions 1..n, the first a create, a create after each delete,
   * updates otherwise */
  for (int i = 0; i < 3 * KEYS; i++) {
    key_hist_t *h = &hist[i];
    for (int64_t v = 1; v <= h->nver; v++) {
      char want = (v == 1 || h->ops[v - 1] == 'd') ? 'c' : 0;
      cr_assert_neq(h->ops[v], 0, "version %lld missing", (long long)v);
      if (want) cr_assert_eq(h->ops[v], 'c', "version %lld of slot %d is %c, not a create", (long long)v, i, h->ops[v]);
      else cr_assert(h->ops[v] == 'u' || h->ops[v] == 'd');
    }
  }
  free(hist);
}

Test(generate, stream_subset_and_defaults) {
  const char *streams[] = {"shipments", "orders"};
  wd_gen_opts_t o = {.seed = 1, .keys = 10, .records = 300, .streams = streams, .nstreams = 2};
  wd_gen_t *g = NULL;
  wd_error_t *err = wd_gen_new(&o, &g);
  cr_assert_null(err, "%s", err ? err->message : "");
  wd_gen_msg_t m;
  uint64_t n = 0, per[2] = {0};
  while (wd_gen_next(g, &m)) {
    cr_assert(m.stream_index == 0 || m.stream_index == 1);
    cr_assert_str_eq(m.topic, streams[m.stream_index]);
    per[m.stream_index]++;
    n++;
  }
  cr_assert_eq(n, 300);
  cr_assert(per[0] > 0 && per[1] > 0);
  wd_gen_destroy(g);

  /* zero late and delete ratios (negative = none) */
  wd_gen_opts_t o2 = {.seed = 3, .keys = 5, .records = 2000, .late_ratio = -1, .delete_ratio = -1};
  cr_assert_null(wd_gen_new(&o2, &g));
  while (wd_gen_next(g, &m)) {
    cr_assert(!m.late);
    cr_assert_neq(m.op, 'd');
  }
  wd_gen_destroy(g);
}

Test(generate, rejects_bad_streams) {
  const char *bad[] = {"orders", "refunds"};
  wd_gen_opts_t o = {.streams = bad, .nstreams = 2};
  wd_gen_t *g = NULL;
  wd_error_t *err = wd_gen_new(&o, &g);
  cr_assert_not_null(err);
  cr_assert_null(g);
  cr_assert_str_eq(err->id, "C_GENERATE");
  cr_assert(strstr(err->message, "refunds"), "%s", err->message);
  wd_error_destroy(err);
  const char *twice[] = {"orders", "orders"};
  o.streams = twice;
  err = wd_gen_new(&o, &g);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->id, "C_GENERATE");
  wd_error_destroy(err);
}

/* Key-changing updates (--key-change-ratio): op u, before of a present row of the stream under
 * its old order_id, after under an order_id the stream has no row for; the old key then counts
 * as deleted (its next change is a create), and the share is about the ratio. A ratio of 0
 * leaves the output that of the generator without the option. */
Test(generate, key_changing_updates) {
  enum { KEYS = 2000, RECORDS = 20000 };
  static const char *const vfield[] = {"order_version", "pay_version", "ship_version"};
  wd_gen_opts_t o = {.seed = 11, .keys = KEYS, .records = RECORDS, .key_change_ratio = 0.05};
  wd_gen_t *g = NULL;
  cr_assert_null(wd_gen_new(&o, &g));
  static bool exists[3][KEYS + 1];
  static int64_t last_version[3][KEYS + 1];
  uint64_t moves = 0;
  wd_gen_msg_t m;
  while (wd_gen_next(g, &m)) {
    int s = m.stream_index;
    json_t *v = json_loadb(m.value, m.value_len, 0, NULL);
    cr_assert_not_null(v);
    json_t *before = json_object_get(v, "before"), *after = json_object_get(v, "after");
    if (m.from_order_id) {
      moves++;
      cr_assert_eq(m.op, 'u');
      cr_assert(!m.late);
      cr_assert_neq(m.from_order_id, m.order_id);
      cr_assert_eq(json_integer_value(json_object_get(before, "order_id")), (json_int_t)m.from_order_id);
      cr_assert_eq(json_integer_value(json_object_get(after, "order_id")), (json_int_t)m.order_id);
      cr_assert(exists[s][m.from_order_id], "moved a row that is not there");
      cr_assert(!exists[s][m.order_id], "moved onto a present row");
      cr_assert_eq(json_integer_value(json_object_get(before, vfield[s])), last_version[s][m.from_order_id]);
      exists[s][m.from_order_id] = false;
      exists[s][m.order_id] = true;
    } else if (!m.late) {
      exists[s][m.order_id] = m.op != 'd'; /* (the create of a late pair may come after its update) */
    }
    if (!m.late) last_version[s][m.order_id] = m.version;
    json_decref(v);
  }
  cr_assert(!wd_gen_failed(g));
  wd_gen_destroy(g);
  cr_assert(moves > RECORDS * 0.04 && moves < RECORDS * 0.06, "key changes %llu", (unsigned long long)moves);

  /* ratio 0 = the output without the option */
  wd_gen_opts_t a = {.seed = 42, .keys = 200, .records = 5000}, b = a;
  b.key_change_ratio = 0;
  uint64_t na, nb;
  cr_assert_eq(run_hash(&a, &na), run_hash(&b, &nb));
  b.key_change_ratio = 0.01;
  cr_assert_neq(run_hash(&a, &na), run_hash(&b, &nb));
}
