/*
 * tests/unit/test_alloc_failure.c — allocation-failure injection (tests/support/fail_alloc.h) for
 * the modules that allocate on their error paths: the config loader (every error of a file), the
 * table build, the merge engine and the keyed state through wd_simulate_run (a message touching
 * two keys, a record error after rows were read), the Debezium JSON decoder on a bad record, the
 * state's schema check and the rate-limited logger. Each operation is run again and again with the
 * n-th allocation failing, n = 0, 1, 2 ... until it no longer reaches the failing allocation; every
 * run must end in the operation's own result or a clean E_NOMEM, never a crash, a wrong result or
 * a leak (LeakSanitizer fails the test).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/cli/simulate.h"
#include "app/config/table_config.h"
#include "common/ratelog.h"
#include "ingest/source.h"
#include "ingest/format.h"
#include "join/srckey.h"
#include "join/state.h"
#include "join/store.h"
#include "tests/support/fail_alloc.h"

#define MAX_RUNS 100000

/* Runs op(ctx) with allocation n failing for n = 0.. until op completes without reaching it;
 * check(ctx, result, failed) judges each run. Returns how many runs had an injected failure. */
static size_t each_failure(int (*op)(void *ctx), void (*check)(void *ctx, int result, bool failed), void *ctx) {
  for (size_t n = 0; n < MAX_RUNS; n++) {
    wd_fail_alloc_at(n);
    int r = op(ctx);
    bool failed = wd_fail_alloc_off();
    if (getenv("WD_ALLOC_DEBUG")) fprintf(stderr, "run %zu: result %d, failed %d\n", n, r, failed);
    check(ctx, r, failed);
    if (!failed) return n;
  }
  cr_assert_fail("more than %d allocations", MAX_RUNS);
  return 0;
}

/* ---- the config loader: a file with several mistakes ---------------------------------------- */

static const char *BAD_CONFIG = "kafka: {bootstrap.servers: 'k:9092', group.idd: g}\n"
                                "table:\n"
                                "  name: t\n"
                                "  schema:\n"
                                "    - {name: id, type: BIGINT NOT NULL}\n"
                                "    - {name: a, type: STRING}\n"
                                "  primary-key: [id]\n"
                                "sources:\n"
                                "  - name: s\n"
                                "    topic: in\n"
                                "    columns: {id: id, a: a}\n"
                                "sink: {tpic: out}\n"
                                "pipeline: {batch-size: lots}\n"
                                "state: {dir: /tmp/x}\n";

typedef struct {
  char path[64];
  const char *want; /* substring of the error without injection */
} cfg_ctx_t;

static int load_config(void *ctx) {
  cfg_ctx_t *c = ctx;
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(c->path, &cfg);
  int r = err ? (err->cls == WD_ERR_NOMEM ? 2 : 1) : 0;
  if (r == 1 && !strstr(err->message, c->want)) r = 3;
  wd_error_destroy(err);
  wd_config_destroy(cfg);
  return r;
}

static void check_config(void *ctx, int r, bool failed) {
  (void)ctx;
  /* without injection: the config error; with it: that error (the first of the file, perhaps
   * without the others) or out of memory, never a success or another error */
  if (!failed) cr_assert_eq(r, 1, "no injection: expected the config errors, got %d", r);
  else cr_assert(r == 1 || r == 2 || r == 3, "an allocation failure gave result %d", r);
}

Test(alloc_failure, config_loader_with_several_errors) {
  cfg_ctx_t c = {.want = "unknown key 'group.idd'"};
  snprintf(c.path, sizeof(c.path), "/tmp/widen-allocfail-XXXXXX");
  int fd = mkstemp(c.path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, BAD_CONFIG, strlen(BAD_CONFIG)), (ssize_t)strlen(BAD_CONFIG));
  close(fd);
  size_t runs = each_failure(load_config, check_config, &c);
  cr_assert_gt(runs, 10, "the loader allocates (%zu)", runs);
  unlink(c.path);
}

/* ---- table, merge engine, state: wd_simulate_run ---------------------------------------------- */

/* A partial-update table; message 0 moves key 1 to key 2 (-D 1, +I 2: two keys), message 1 has a
 * record error after a good row (the rows already read must be freed). */
static const char *CASE =
    "{\"schema\":[{\"name\":\"id\",\"type\":\"INT NOT NULL\"},{\"name\":\"a\",\"type\":\"STRING\"},"
    "{\"name\":\"v\",\"type\":\"BIGINT\"}],\"primary_key\":[\"id\"],"
    "\"options\":{\"merge-engine\":\"partial-update\",\"fields.v.sequence-group\":\"a\"},"
    "\"input\":["
    "{\"op\":\"+I\",\"row\":{\"id\":1,\"a\":\"x\",\"v\":1}},"
    "{\"op\":\"-D\",\"row\":{\"id\":1,\"a\":\"x\",\"v\":2},\"message\":0},"
    "{\"op\":\"+I\",\"row\":{\"id\":2,\"a\":\"y\",\"v\":2},\"message\":0},"
    "{\"op\":\"+I\",\"row\":{\"id\":3,\"a\":\"z\",\"v\":1},\"message\":1},"
    "{\"op\":\"+I\",\"row\":{\"id\":4,\"a\":\"w\",\"v\":\"not a number\"},\"message\":1}"
    "]}";

typedef struct {
  json_t *cs;
  char *want; /* the result without injection */
} sim_ctx_t;

static int simulate(void *ctx) {
  sim_ctx_t *c = ctx;
  json_t *result = NULL;
  int rc = wd_simulate_run(c->cs, "memory", 1, &result);
  int r = 1;
  if (rc == 0 && result) {
    /* the error's message may lose a detail to a failed allocation (a type name): compare its
     * stage and index, the rows and the changelog */
    json_t *e = json_object_get(result, "error");
    if (json_is_object(e)) json_object_del(e, "message");
    char *text = json_dumps(result, JSON_COMPACT | JSON_SORT_KEYS);
    if (!c->want) {
      c->want = text;
      text = NULL;
    }
    r = text && strcmp(text, c->want) ? 3 : 0;
    if (r == 3 && getenv("WD_ALLOC_DEBUG")) fprintf(stderr, "differs: %s\n", text);
    free(text);
  }
  json_decref(result);
  return r;
}

static void check_simulate(void *ctx, int r, bool failed) {
  sim_ctx_t *c = ctx;
  if (!failed) {
    cr_assert_eq(r, 0);
    /* key 1's delete (sequence 2) retracts its group; key 2 moved in; message 1 failed on its
     * second record, so key 3 is not there either */
    cr_assert(strstr(c->want, "\"rows\":[{\"a\":null,\"id\":1,\"v\":2},{\"a\":\"y\",\"id\":2,\"v\":2}]"), "rows: %s",
              c->want);
    cr_assert(strstr(c->want, "\"error\":{\"index\":4,\"stage\":\"record\"}"), "error: %s", c->want);
  } else {
    cr_assert_neq(r, 3, "an allocation failure changed the result instead of failing the run");
  }
}

Test(alloc_failure, simulate_two_keys_and_a_record_error) {
  json_error_t jerr;
  sim_ctx_t c = {json_loads(CASE, 0, &jerr), NULL};
  cr_assert_not_null(c.cs, "%s", jerr.text);
  cr_assert_eq(simulate(&c), 0); /* the reference result, no injection */
  size_t runs = each_failure(simulate, check_simulate, &c);
  cr_assert_gt(runs, 10);
  free(c.want);
  json_decref(c.cs);
}

/* ---- the Debezium JSON decoder on a record with a type error -------------------------------- */

typedef struct {
  wd_schema_t *schema;
  wd_source_t *src;
} dec_ctx_t;

static int decode_bad(void *ctx) {
  dec_ctx_t *c = ctx;
  static const char rec[] = "{\"op\":\"c\",\"before\":null,\"after\":{\"id\":1,\"a\":\"x\",\"v\":\"twelve\"}}";
  wd_kafka_meta_t meta = {.topic = "in", .partition = 0, .offset = 7, .timestamp = 1};
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_error_t *err = wd_decode_debezium_json(c->src, c->schema, &meta, rec, sizeof(rec) - 1, &ch);
  int r = !err ? 0 : err->cls == WD_ERR_NOMEM ? 2 : !strcmp(err->id, "E_TYPE") ? 1 : 3;
  wd_error_destroy(err);
  wd_changes_free(&ch);
  return r;
}

static void check_decode(void *ctx, int r, bool failed) {
  (void)ctx;
  if (!failed) cr_assert_eq(r, 1, "no injection: expected E_TYPE, got %d", r);
  else cr_assert(r == 1 || r == 2, "an allocation failure gave result %d", r);
}

Test(alloc_failure, debezium_decoder_type_error) {
  const char *names[] = {"id", "a", "v"}, *types[] = {"INT NOT NULL", "STRING", "BIGINT"}, *pk[] = {"id"};
  dec_ctx_t c = {0};
  cr_assert_null(wd_schema_new(3, names, types, 1, pk, &c.schema));
  cr_assert_null(wd_source_new("s", WD_FMT_DEBEZIUM_JSON, &c.src));
  for (int i = 0; i < 3; i++) cr_assert_null(wd_source_add_column(c.src, c.schema, names[i], NULL));
  each_failure(decode_bad, check_decode, &c);
  wd_source_destroy(c.src);
  wd_schema_destroy(c.schema);
}

/* ---- the state's schema check (C_STATE_SCHEMA names the column) ------------------------------ */

typedef struct {
  wd_table_t *t2;
  wd_store_t *st;
} schema_ctx_t;

static int check_table(void *ctx) {
  schema_ctx_t *c = ctx;
  wd_state_t *s = wd_state_new(c->t2, c->st, 0);
  if (!s) return 2;
  wd_error_t *err = wd_state_check_table(s, "mem");
  int r = !err ? 0 : err->cls == WD_ERR_NOMEM ? 2 : strstr(err->message, "column 'v' is BIGINT in the state") ? 1 : 3;
  wd_error_destroy(err);
  wd_state_destroy(s);
  return r;
}

static void check_check_table(void *ctx, int r, bool failed) {
  (void)ctx;
  if (!failed) cr_assert_eq(r, 1, "no injection: expected C_STATE_SCHEMA naming v, got %d", r);
  else cr_assert(r == 1 || r == 2, "an allocation failure gave result %d", r);
}

static wd_table_t *table_with(const char *vtype) {
  const char *names[] = {"id", "v"}, *types[] = {"INT NOT NULL", vtype}, *pk[] = {"id"};
  wd_table_t *t = NULL;
  cr_assert_null(wd_table_config_build(2, names, types, 1, pk, 0, NULL, &t));
  return t;
}

Test(alloc_failure, state_schema_check) {
  wd_table_t *t1 = table_with("BIGINT");
  schema_ctx_t c = {table_with("STRING"), NULL};
  cr_assert_null(wd_store_open_memory(&c.st));
  wd_state_t *s = wd_state_new(t1, c.st, 0);
  cr_assert_null(wd_state_check_table(s, "mem")); /* records t1's schema */
  wd_state_destroy(s);
  each_failure(check_table, check_check_table, &c);
  wd_store_close(c.st);
  wd_table_destroy(t1);
  wd_table_destroy(c.t2);
}

/* ---- the rate-limited logger ------------------------------------------------------------------ */

static int ratelog_op(void *ctx) {
  (void)ctx;
  wd_ratelog_t rl = {.interval = 10.0};
  wd_log_set_level(WD_LOG_ERROR); /* the lines are not the point here */
  for (int i = 0; i < 5; i++) {
    char field[8];
    snprintf(field, sizeof(field), "f%d", i % 3);
    wd_ratelog_note(&rl, (double)i, WD_LOG_WARN, "t", "src", "E_TYPE", field, "message");
  }
  int r = rl.total == 5 ? 0 : 3; /* every occurrence is counted in total, memory or not */
  wd_buf_t b = {0};
  /* the counts by id: exact when every key got its entry (an occurrence whose entry could not
   * be made is in total only, ratelog.h) */
  if (r == 0 && wd_ratelog_put_counts(&rl, &b) == 0 && b.len && strncmp((char *)b.data, "E_TYPE 5", 8)) r = 1;
  wd_buf_free(&b);
  wd_ratelog_free(&rl);
  return r;
}

static void check_ratelog(void *ctx, int r, bool failed) {
  (void)ctx;
  if (!failed) cr_assert_eq(r, 0, "no injection: every count exact");
  else cr_assert(r == 0 || r == 1, "an allocation failure lost an occurrence from the total (%d)", r);
}

Test(alloc_failure, ratelog) { each_failure(ratelog_op, check_ratelog, NULL); }

/* ---- a source with its own primary key (join/srckey.h): build, insert, move, key-only delete ---- */

typedef struct {
  const wd_schema_t *ws;
  wd_changes_t *out;
} sk_sink_t;

static wd_row_t *sk_add2(void *ctx, wd_row_kind_t kind) {
  sk_sink_t *k = ctx;
  return wd_changes_add(k->out, k->ws, kind);
}

/* 0: every step ran and derived what it should; 1: a clean E_NOMEM; 2: a wrong result. */
static int srckey_op(void *ctx) {
  (void)ctx;
  int rc = 1;
  wd_schema_t *schema = NULL;
  wd_table_t *t = NULL;
  wd_store_t *st = NULL;
  wd_state_t *wide = NULL;
  wd_srckey_t *sk = NULL;
  wd_source_t *src = NULL;
  wd_store_batch_t *b = NULL;
  wd_changes_t dec, out;
  wd_changelog_t cl = {0};
  wd_changes_init(&dec);
  wd_changes_init(&out);
  wd_error_t *err = NULL;
  const char *names[] = {"order_id", "pay_method", "payment_ver"};
  const char *types[] = {"BIGINT NOT NULL", "STRING", "BIGINT"};
  const char *pk[] = {"order_id"};
  wd_option_t opts[] = {{"merge-engine", "partial-update"}, {"fields.payment_ver.sequence-group", "pay_method"}};
  bool mapped[3] = {true, true, true};
  const char *key[] = {"primary-key.payment_id"};
  int id = -1;
  if ((err = wd_schema_new(3, names, types, 1, pk, &schema))) goto done;
  err = wd_table_new(schema, 2, opts, &t);
  schema = NULL; /* the table's (also after a failure) */
  if (err) goto done;
  if ((err = wd_store_open_memory(&st))) goto done;
  if (!(wide = wd_state_new(t, st, 0)) || !(b = wd_store_batch_new())) goto done;
  if ((err = wd_srckey_new(t, &sk)) || (err = wd_srckey_add(sk, "payments", key, 1, mapped, &id)) ||
      (err = wd_srckey_start(sk, wide, st)))
    goto done;
  const wd_schema_t *ss = wd_srckey_schema(sk, id);
  if ((err = wd_source_new("payments", WD_FMT_DEBEZIUM_JSON, &src)) || (err = wd_source_add_topic(src, "p")) ||
      (err = wd_source_add_column(src, ss, "primary-key.payment_id", "payment_id")) ||
      (err = wd_source_add_column(src, ss, "order_id", "order_id")) ||
      (err = wd_source_add_column(src, ss, "pay_method", "method")) ||
      (err = wd_source_add_column(src, ss, "payment_ver", "$.source.ts_ms")) || (err = wd_source_check(src, ss)))
    goto done;
  static const char *const msgs[] = {
      "{\"op\":\"c\",\"after\":{\"payment_id\":1,\"order_id\":586,\"method\":\"card\"},\"source\":{\"ts_ms\":1}}",
      "{\"op\":\"u\",\"before\":null,\"after\":{\"payment_id\":1,\"order_id\":725,\"method\":\"card\"},"
      "\"source\":{\"ts_ms\":2}}",
      "{\"op\":\"d\",\"before\":{\"payment_id\":1},\"after\":null,\"source\":{\"ts_ms\":3}}"};
  static const size_t want[] = {1, 2, 1};
  sk_sink_t sink = {wd_table_schema(t), &out};
  for (size_t i = 0; i < 3; i++) {
    if ((err = wd_format_of(WD_FMT_DEBEZIUM_JSON)->decode(NULL, src, ss, NULL, msgs[i], strlen(msgs[i]), &dec)))
      goto done;
    wd_changes_reset(&out);
    if ((err = wd_srckey_apply(sk, id, dec.rows, dec.count, sk_add2, &sink, NULL))) goto done;
    if (out.count != want[i]) {
      rc = 2;
      goto done;
    }
    wd_changelog_reset(t, &cl);
    if ((err = wd_message_apply(t, wd_state_ops(), wide, out.rows, out.count, &cl, NULL)) ||
        (err = wd_state_flush(wide, b))) {
      wd_state_discard(wide);
      goto done;
    }
  }
  rc = 0;
done:
  if (err && err->cls != WD_ERR_NOMEM) {
    fprintf(stderr, "srckey_op: %s\n", err->message);
    rc = 2;
  }
  wd_error_destroy(err);
  wd_changes_free(&dec);
  wd_changes_free(&out);
  if (t) wd_changelog_free(t, &cl);
  wd_source_destroy(src);
  wd_srckey_destroy(sk);
  wd_store_batch_destroy(b);
  wd_state_destroy(wide);
  wd_store_close(st);
  wd_table_destroy(t);
  wd_schema_destroy(schema);
  return rc;
}

static void check_srckey(void *ctx, int result, bool failed) {
  (void)ctx;
  if (!failed) cr_assert_eq(result, 0, "without a failure the derivation must be right");
  else cr_assert_neq(result, 2, "an allocation failure must end in E_NOMEM or the right result");
}

Test(alloc_failure, source_key_insert_move_delete) {
  size_t n = each_failure(srckey_op, check_srckey, NULL);
  cr_assert_gt(n, 20);
}
