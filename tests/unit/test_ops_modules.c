/*
 * tests/unit/test_ops_modules.c — the operations modules without Kafka: the commit history in a store
 * (app/ops/history.h), the net change fold and table difference (app/ops/netchange.h), the metrics
 * exposition (app/ops/metrics.h), the definition diff (app/ops/fingerprint.h) and the RocksDB secondary
 * instance reading a store another handle holds (join/store.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/ops/fingerprint.h"
#include "app/ops/history.h"
#include "app/ops/metrics.h"
#include "app/ops/netchange.h"
#include "app/config/table_config.h"
#include "common/json.h"

/* ---- history ---- */

static void add_commit(wd_store_t *st, uint64_t number, size_t keep) {
  wd_commit_range_t in[2] = {{"src", 0, (int64_t)number * 10, (int64_t)number * 10 + 10}, {"src", 1, 5, 6}};
  wd_commit_range_t out[1] = {{"out", 2, (int64_t)number * 3, (int64_t)number * 3 + 3}};
  wd_commit_info_t ci = {number, 1700000000000 + (int64_t)number, "incremental", in, 2, out, 1, 11, 3, 1, 2.5};
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_history_add(b, &ci, keep), 0);
  cr_assert_null(wd_store_write(st, b));
  wd_store_batch_destroy(b);
}

Test(history, add_read_and_keep) {
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  uint64_t last = 99, first = 99;
  cr_assert_null(wd_history_last(st, &last));
  cr_assert_eq(last, 0);
  for (uint64_t n = 1; n <= 7; n++) add_commit(st, n, 3);
  cr_assert_null(wd_history_last(st, &last));
  cr_assert_null(wd_history_first(st, &first));
  cr_expect_eq(last, 7);
  cr_expect_eq(first, 5, "keep 3: 5, 6, 7 stay");
  wd_history_entry_t *e = NULL;
  cr_assert_null(wd_history_get(st, 4, &e));
  cr_expect_null(e, "record 4 was deleted with record 7");
  cr_assert_null(wd_history_get(st, 6, &e));
  cr_assert_not_null(e);
  cr_expect_eq(e->info.number, 6);
  cr_expect_eq(e->info.time_ms, 1700000000006);
  cr_expect_str_eq(e->info.mode, "incremental");
  cr_assert_eq(e->info.nin, 2);
  cr_expect_str_eq(e->info.in[0].topic, "src");
  cr_expect_eq(e->info.in[0].from, 60);
  cr_expect_eq(e->info.in[0].to, 70);
  cr_expect_eq(e->info.in[1].partition, 1);
  cr_assert_eq(e->info.nout, 1);
  cr_expect_eq(e->info.out[0].partition, 2);
  cr_expect_eq(e->info.out[0].from, 18);
  cr_expect_eq(e->info.out[0].to, 21);
  cr_expect_eq(e->info.records_in, 11);
  cr_expect_eq(e->info.changes_out, 3);
  cr_expect_eq(e->info.dead_letters, 1);
  cr_expect_eq(e->info.duration_ms, 2.5);
  wd_history_entry_free(e);
  wd_store_close(st);
}

/* ---- net change ---- */

static const wd_schema_t *schema2(wd_schema_t **owned) {
  const char *names[] = {"id", "v"}, *types[] = {"INT NOT NULL", "STRING"}, *pk[] = {"id"};
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, owned));
  return *owned;
}

static wd_row_t *row(const wd_schema_t *s, wd_row_kind_t k, int id, const char *v) {
  wd_row_t *r = wd_row_new(s);
  r->kind = k;
  r->v[0].is_null = false;
  r->v[0].i = id;
  if (v) {
    r->v[1].is_null = false;
    cr_assert_eq(wd_value_set_bytes(&r->v[1], v, strlen(v)), 0);
  }
  return r;
}

typedef struct {
  const wd_schema_t *s;
  char text[1024];
} sink_t;

static int collect(void *ctx, const wd_row_t *r) {
  sink_t *k = ctx;
  size_t n = strlen(k->text);
  snprintf(k->text + n, sizeof(k->text) - n, "%s%s:%d:%.*s", n ? " " : "", wd_row_kind_str(r->kind), (int)r->v[0].i,
           r->v[1].is_null ? 1 : (int)r->v[1].s.n, r->v[1].is_null ? "-" : r->v[1].s.p);
  return 0;
}

Test(netchange, fold_per_key) {
  wd_schema_t *owned = NULL;
  const wd_schema_t *s = schema2(&owned);
  wd_netchange_t *nc = wd_netchange_new(s);
  struct {
    wd_row_kind_t k;
    int id;
    const char *v;
  } in[] = {
      {WD_INSERT, 1, "a"},        {WD_UPDATE_BEFORE, 1, "a"}, {WD_UPDATE_AFTER, 1, "b"}, /* 1: +I b */
      {WD_UPDATE_BEFORE, 2, "x"}, {WD_UPDATE_AFTER, 2, "y"},  {WD_UPDATE_BEFORE, 2, "y"},
      {WD_UPDATE_AFTER, 2, "x"}, /* 2: back to x: nothing */
      {WD_DELETE, 3, "z"}, /* 3: -D z */
      {WD_INSERT, 4, "n"},        {WD_DELETE, 4, "n"}, /* 4: nothing */
      {WD_UPDATE_BEFORE, 5, "p"}, {WD_UPDATE_AFTER, 5, "q"}, /* 5: -U p +U q */
      {WD_DELETE, 6, "d"},        {WD_INSERT, 6, "e"}, /* 6: -U d +U e */
  };
  for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
    wd_row_t *r = row(s, in[i].k, in[i].id, in[i].v);
    cr_assert_eq(wd_netchange_add(nc, r), 0);
    wd_row_destroy(s, r);
  }
  sink_t k = {s, ""};
  cr_assert_null(wd_netchange_emit(nc, collect, &k));
  /* INT keys encode big-endian with the sign flipped: byte order is numeric order */
  cr_expect_str_eq(k.text, "+I:1:b -D:3:z -U:5:p +U:5:q -U:6:d +U:6:e");
  wd_netchange_destroy(nc);
  wd_schema_destroy(owned);
}

Test(netchange, table_diff) {
  wd_schema_t *owned = NULL;
  const wd_schema_t *s = schema2(&owned);
  wd_row_t *old[] = {row(s, WD_INSERT, 1, "a"), row(s, WD_INSERT, 2, "b"), row(s, WD_INSERT, 4, "d")};
  wd_row_t *new_[] = {row(s, WD_INSERT, 2, "b"), row(s, WD_INSERT, 3, "c"), row(s, WD_INSERT, 4, "D")};
  sink_t k = {s, ""};
  size_t nd = 0, ni = 0, nu = 0;
  cr_assert_null(wd_table_diff(s, old, 3, new_, 3, collect, &k, &nd, &ni, &nu));
  cr_expect_str_eq(k.text, "-D:1:a +I:3:c -U:4:d +U:4:D");
  cr_expect_eq(nd, 1);
  cr_expect_eq(ni, 1);
  cr_expect_eq(nu, 1);
  cr_expect_eq(old[0]->kind, WD_INSERT, "kinds restored");
  for (int i = 0; i < 3; i++) {
    wd_row_destroy(s, old[i]);
    wd_row_destroy(s, new_[i]);
  }
  wd_schema_destroy(owned);
}

/* ---- metrics ---- */

Test(metrics, text_exposition) {
  wd_metrics_t *m = wd_metrics_new();
  const char *src[] = {"source"};
  wd_metric_t *c = wd_metrics_family(m, "widen_records_in_total", "Records.", WD_METRIC_COUNTER, 1, src, NULL, 0);
  wd_metric_t *g = wd_metrics_family(m, "widen_state_size_bytes", "Bytes.", WD_METRIC_GAUGE, 0, NULL, NULL, 0);
  const double b[] = {0.1, 1};
  wd_metric_t *h =
      wd_metrics_family(m, "widen_commit_duration_seconds", "Commits.", WD_METRIC_HISTOGRAM, 0, NULL, b, 2);
  cr_assert(c && g && h);
  cr_expect_eq(wd_metrics_family(m, "widen_records_in_total", "x", WD_METRIC_COUNTER, 1, src, NULL, 0), c);
  wd_metric_add(c, (const char *const[]){"orders"}, 2);
  wd_metric_add(c, (const char *const[]){"a\"b\\c"}, 1);
  wd_metric_add(c, (const char *const[]){"orders"}, 3);
  wd_metric_set(g, NULL, 123);
  wd_metric_set(g, NULL, 456);
  wd_metric_observe(h, NULL, 0.05);
  wd_metric_observe(h, NULL, 0.5);
  wd_metric_observe(h, NULL, 5);
  wd_metric_add(NULL, NULL, 1); /* metrics off: ignored */
  wd_buf_t out = {0};
  cr_assert_eq(wd_metrics_render(m, &out), 0);
  wd_buf_putc(&out, 0);
  cr_expect_str_eq(
      (const char *)out.data,
      "# HELP widen_records_in_total Records.\n# TYPE widen_records_in_total counter\n"
      "widen_records_in_total{source=\"orders\"} 5\nwiden_records_in_total{source=\"a\\\"b\\\\c\"} 1\n"
      "# HELP widen_state_size_bytes Bytes.\n# TYPE widen_state_size_bytes gauge\n"
      "widen_state_size_bytes 456\n"
      "# HELP widen_commit_duration_seconds Commits.\n# TYPE widen_commit_duration_seconds histogram\n"
      "widen_commit_duration_seconds_bucket{le=\"0.1\"} 1\nwiden_commit_duration_seconds_bucket{le=\"1\"} 2\n"
      "widen_commit_duration_seconds_bucket{le=\"+Inf\"} 3\nwiden_commit_duration_seconds_sum 5.5499999999999998\n"
      "widen_commit_duration_seconds_count 3\n");
  wd_buf_free(&out);
  wd_error_t *err = wd_metrics_serve(m, "nonsense", NULL);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "C_METRICS_LISTEN");
  wd_error_destroy(err);
  wd_metrics_destroy(m);
}

/* A gauge family replaced at once keeps exactly the series given (the lag of a
 * revoked partition goes; none at all when nothing is held). */
Test(metrics, set_all_replaces_the_series) {
  wd_metrics_t *m = wd_metrics_new();
  const char *tp[] = {"topic", "partition"};
  wd_metric_t *g = wd_metrics_family(m, "widen_consumer_lag", "Lag.", WD_METRIC_GAUGE, 2, tp, NULL, 0);
  cr_assert_not_null(g);
  const char *lv3[] = {"t", "0", "t", "1", "u", "0"};
  wd_metric_set_all(g, 3, lv3, (const double[]){5, 6, 7});
  const char *lv1[] = {"t", "1"};
  wd_metric_set_all(g, 1, lv1, (const double[]){2});
  wd_buf_t out = {0};
  cr_assert_eq(wd_metrics_render(m, &out), 0);
  wd_buf_putc(&out, 0);
  cr_expect_str_eq((const char *)out.data, "# HELP widen_consumer_lag Lag.\n# TYPE widen_consumer_lag gauge\n"
                                           "widen_consumer_lag{topic=\"t\",partition=\"1\"} 2\n");
  wd_metric_set_all(g, 0, NULL, NULL);
  wd_buf_reset(&out);
  cr_assert_eq(wd_metrics_render(m, &out), 0);
  wd_buf_putc(&out, 0);
  cr_expect_null(strstr((const char *)out.data, "widen_consumer_lag{"), "%s", (const char *)out.data);
  wd_metric_set_all(NULL, 1, lv1, (const double[]){1}); /* metrics off: ignored */
  wd_buf_free(&out);
  wd_metrics_destroy(m);
}

/* ---- definition diff ---- */

static const char *DEF_A =
    "{\"columns\":[[\"id\",\"INT NOT NULL\"],[\"a\",\"STRING\"],[\"v\",\"BIGINT\"]],\"primary-key\":[\"id\"],"
    "\"options\":[[\"merge-engine\",\"partial-update\"],[\"fields.v.sequence-group\",\"a\"],[\"changelog-producer\","
    "\"lookup\"]],\"sources\":[{\"name\":\"s\",\"topics\":[\"t\"],\"format\":\"debezium-json\",\"columns\":[[\"id\","
    "\"\"],[\"a\",\"\"],[\"v\",\"\"]],\"options\":[]}],\"sink\":{\"topic\":\"out\",\"format\":\"debezium-json\","
    "\"key-format\":\"json\",\"dead-letter-topic\":\"out.dlq\"},\"pipeline\":{\"batch-size\":1000,"
    "\"batch-timeout-ms\":100,\"status-interval-s\":5}}";

static char *subst(const char *s, const char *from, const char *to) {
  const char *p = strstr(s, from);
  cr_assert_not_null(p, "%s", from);
  char *o = malloc(strlen(s) + strlen(to) + 1);
  sprintf(o, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
  return o;
}

Test(fingerprint, diff_and_classification) {
  char *b1 = subst(DEF_A, "\"topic\":\"out\"", "\"topic\":\"out2\"");
  char *b2 = subst(b1, "\"batch-size\":1000", "\"batch-size\":10");
  char *b3 = subst(b2, "\"changelog-producer\",\"lookup\"", "\"changelog-producer\",\"none\"");
  wd_definition_change_t *ch = NULL;
  size_t n = 0;
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), b3, strlen(b3), &ch, &n));
  cr_assert_eq(n, 3);
  for (size_t i = 0; i < n; i++) cr_expect(ch[i].compatible, "%s is compatible", ch[i].item);
  cr_expect_eq(wd_definition_fingerprint(DEF_A, strlen(DEF_A)), wd_definition_fingerprint(b3, strlen(b3)),
               "compatible items do not enter the fingerprint");
  wd_definition_changes_free(ch, n);
  char *c1 = subst(DEF_A, "\"fields.v.sequence-group\",\"a\"", "\"fields.v.sequence-group\",\"\"");
  char *c2 = subst(c1, "[\"v\",\"\"]]", "[\"v\",\"version\"]]");
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), c2, strlen(c2), &ch, &n));
  cr_assert_eq(n, 2);
  cr_expect_str_eq(ch[0].item, "table option fields.v.sequence-group");
  cr_expect_str_eq(ch[0].was, "a");
  cr_expect_str_eq(ch[0].now, "");
  cr_expect_not(ch[0].compatible);
  cr_expect_str_eq(ch[1].item, "source s column v");
  cr_expect_str_eq(ch[1].now, "version");
  cr_expect_not(ch[1].compatible);
  cr_expect_neq(wd_definition_fingerprint(DEF_A, strlen(DEF_A)), wd_definition_fingerprint(c2, strlen(c2)));
  wd_definition_changes_free(ch, n);
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), DEF_A, strlen(DEF_A), &ch, &n));
  cr_expect_eq(n, 0);
  wd_error_t *err = wd_definition_diff("nope", 4, DEF_A, strlen(DEF_A), &ch, &n);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_STATE_CORRUPT");
  wd_error_destroy(err);
  free(b1);
  free(b2);
  free(b3);
  free(c1);
  free(c2);
}

/* ---- RocksDB secondary instance ---- */

Test(store_secondary, reads_a_store_held_by_another_handle) {
  char dir[] = "/tmp/widen-secondary-test-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  wd_store_t *prim = NULL, *sec = NULL;
  cr_assert_null(wd_store_open_rocksdb(dir, NULL, &prim));
  add_commit(prim, 1, 0);
  wd_error_t *err = wd_store_open_rocksdb(dir, NULL, &sec);
  cr_assert_not_null(err, "the lock is held");
  cr_expect_str_eq(err->id, "E_STORE_LOCKED");
  wd_error_destroy(err);
  cr_assert_null(wd_store_open_rocksdb_secondary(dir, &sec));
  uint64_t last = 0;
  cr_assert_null(wd_history_last(sec, &last));
  cr_expect_eq(last, 1, "the secondary sees the primary's unflushed write (WAL)");
  wd_store_batch_t *b = wd_store_batch_new();
  cr_assert_eq(wd_store_batch_set_meta(b, "x", (const uint8_t *)"1", 1), 0);
  err = wd_store_write(sec, b);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_STORE_WRITE");
  wd_error_destroy(err);
  wd_store_batch_destroy(b);
  wd_store_close(sec);
  wd_store_close(prim);
  err = wd_store_open_rocksdb_secondary("/tmp/widen-no-such-dir-for-secondary", &sec);
  cr_assert_not_null(err);
  cr_expect_str_eq(err->id, "E_STORE_OPEN");
  wd_error_destroy(err);
  char cmd[200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* ---- a nullable column appended: old rows stay readable ---- */

#include "join/row_codec.h"
#include "join/state.h"

static wd_table_t *table_of(size_t n, const char *const *names, const char *const *types) {
  const char *pk[] = {"id"};
  wd_table_t *t = NULL;
  wd_error_t *err = wd_table_config_build(n, names, types, 1, pk, 0, NULL, &t);
  cr_assert_null(err, "%s", err ? err->message : "");
  return t;
}

Test(row_codec, appended_nullable_columns) {
  const char *names[] = {"id", "v", "w"}, *types[] = {"INT NOT NULL", "STRING", "STRING"};
  wd_table_t *t1 = table_of(2, names, types), *t2 = table_of(3, names, types);
  const wd_schema_t *s1 = wd_table_schema(t1), *s2 = wd_table_schema(t2);
  wd_row_t *r1 = row(s1, WD_INSERT, 7, "old");
  wd_buf_t b = {0};
  cr_assert_eq(wd_row_encode(s1, r1, false, 0, &b), 0);
  wd_row_t *got = NULL;
  bool tomb = true;
  cr_assert_null(wd_row_decode_base(s2, 2, b.data, b.len, &got, &tomb));
  cr_expect_not(tomb);
  cr_expect_eq(got->v[0].i, 7);
  cr_expect_eq(got->v[1].s.n, 3);
  cr_expect(got->v[2].is_null, "the appended column reads as NULL");
  wd_row_destroy(s2, got);
  /* a row written after the change carries its column count */
  wd_row_t *r2 = wd_row_new(s2);
  r2->v[0].is_null = false;
  r2->v[0].i = 8;
  r2->v[2].is_null = false;
  cr_assert_eq(wd_value_set_bytes(&r2->v[2], "new", 3), 0);
  wd_buf_reset(&b);
  cr_assert_eq(wd_row_encode_base(s2, 2, r2, false, 0, &b), 0);
  cr_expect(b.data[1] & WD_ENTRY_FLAG_NCOLS);
  cr_assert_null(wd_row_decode_base(s2, 2, b.data, b.len, &got, &tomb));
  cr_expect_eq(got->v[0].i, 8);
  cr_expect(got->v[1].is_null);
  cr_expect_eq(got->v[2].s.n, 3);
  wd_row_destroy(s2, got);
  wd_error_t *err = wd_row_decode_base(s1, 0, b.data, b.len, &got, &tomb);
  cr_assert_not_null(err, "an entry with more columns than the schema");
  cr_expect_str_eq(err->id, "E_STATE_CORRUPT");
  wd_error_destroy(err);
  /* without a change of schema nothing changes in the bytes */
  wd_buf_reset(&b);
  cr_assert_eq(wd_row_encode_base(s1, 2, r1, false, 0, &b), 0);
  cr_expect_not(b.data[1] & WD_ENTRY_FLAG_NCOLS);
  wd_buf_free(&b);
  wd_row_destroy(s1, r1);
  wd_row_destroy(s2, r2);
  wd_table_destroy(t1);
  wd_table_destroy(t2);
}

Test(state, check_table_accepts_appended_nullable_columns) {
  const char *names[] = {"id", "v", "w"}, *types[] = {"INT NOT NULL", "STRING", "STRING"},
             *types_nn[] = {"INT NOT NULL", "STRING", "STRING NOT NULL"};
  wd_table_t *t1 = table_of(2, names, types), *t2 = table_of(3, names, types), *t3 = table_of(3, names, types_nn);
  wd_store_t *st = NULL;
  cr_assert_null(wd_store_open_memory(&st));
  wd_state_t *s = wd_state_new(t1, st, 0);
  cr_assert_null(wd_state_check_table(s, "mem"));
  wd_state_destroy(s);
  s = wd_state_new(t3, st, 0);
  wd_error_t *err = wd_state_check_table(s, "mem");
  cr_assert_not_null(err, "a NOT NULL column cannot be appended");
  cr_expect_str_eq(err->id, "C_STATE_SCHEMA");
  wd_error_destroy(err);
  wd_state_destroy(s);
  s = wd_state_new(t2, st, 0);
  cr_assert_null(wd_state_check_table(s, "mem"));
  wd_state_destroy(s);
  uint8_t *v = NULL;
  size_t vlen = 0;
  cr_assert_null(wd_store_get_meta(st, "table/base-ncols", &v, &vlen));
  cr_assert_not_null(v);
  cr_expect_eq(vlen, 1);
  cr_expect_eq(v[0], '2');
  free(v);
  wd_store_close(st);
  wd_table_destroy(t1);
  wd_table_destroy(t2);
  wd_table_destroy(t3);
}

Test(fingerprint, appended_nullable_column_is_compatible) {
  char *c1 = subst(DEF_A, "[\"v\",\"BIGINT\"]]", "[\"v\",\"BIGINT\"],[\"note\",\"STRING\"]]");
  char *c2 = subst(c1, "[\"v\",\"\"]]", "[\"v\",\"\"],[\"note\",\"a\"]]");
  wd_definition_change_t *ch = NULL;
  size_t n = 0;
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), c2, strlen(c2), &ch, &n));
  cr_assert_eq(n, 3);
  for (size_t i = 0; i < n; i++) cr_expect(ch[i].compatible, "%s is compatible", ch[i].item);
  wd_definition_changes_free(ch, n);
  char *c3 = subst(DEF_A, "[\"v\",\"BIGINT\"]]", "[\"v\",\"BIGINT\"],[\"note\",\"STRING NOT NULL\"]]");
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), c3, strlen(c3), &ch, &n));
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) cr_expect_not(ch[i].compatible, "%s is not compatible", ch[i].item);
  wd_definition_changes_free(ch, n);
  char *c4 = subst(DEF_A, "[\"id\",\"INT NOT NULL\"],", "[\"id\",\"INT NOT NULL\"],[\"first\",\"STRING\"],");
  cr_assert_null(wd_definition_diff(DEF_A, strlen(DEF_A), c4, strlen(c4), &ch, &n));
  for (size_t i = 0; i < n; i++) cr_expect_not(ch[i].compatible, "a column not at the end: %s", ch[i].item);
  wd_definition_changes_free(ch, n);
  free(c1);
  free(c2);
  free(c3);
  free(c4);
}
