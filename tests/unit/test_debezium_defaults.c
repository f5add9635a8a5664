/*
 * tests/unit/test_debezium_defaults.c — what real Debezium sends with its defaults, through the
 * real code path: the config file (app/config), the source's decoder (ingest/), the merge
 * (join/merge.h) and the stored row. Debezium's unavailable.value.placeholder (a TOAST column an
 * UPDATE did not touch) is not carried; the unit of an integer temporal value follows the
 * source's type.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "common/buf.h"
#include "ingest/format.h"
#include "ingest/source.h"
#include "join/merge.h"

/* ---- a table of one config file, a source, a store of one key --------------------------------- */

typedef struct {
  char path[64];
  wd_config_t *cfg;
  wd_table_t *t;
  wd_source_t *src;
  wd_entry_t e; /* the one key's stored entry */
} fx_t;

/* Loads YAML text (a complete config) and builds its table and first source. */
static wd_error_t *fx_load(fx_t *f, const char *yaml) {
  memset(f, 0, sizeof(*f));
  snprintf(f->path, sizeof(f->path), "/tmp/widen-dbz-XXXXXX");
  int fd = mkstemp(f->path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
  close(fd);
  wd_error_t *err = wd_config_load(f->path, &f->cfg);
  if (!err) err = wd_config_build_table(f->cfg, &f->t);
  if (!err) err = wd_config_build_source(f->cfg, 0, wd_table_schema(f->t), &f->src);
  return err;
}

static void fx_done(fx_t *f) {
  if (f->t) wd_entry_clear(f->t, &f->e);
  wd_source_destroy(f->src);
  wd_table_destroy(f->t);
  wd_config_destroy(f->cfg);
  unlink(f->path);
}

static wd_error_t *one_get(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  (void)key;
  (void)klen;
  fx_t *f = ctx;
  e->state = f->e.state;
  e->row = f->e.row ? wd_row_copy(wd_table_schema(f->t), f->e.row) : NULL;
  return NULL;
}

static wd_error_t *one_put(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  (void)key;
  (void)klen;
  fx_t *f = ctx;
  wd_entry_clear(f->t, &f->e);
  f->e = *e;
  e->row = NULL;
  e->state = WD_ENTRY_ABSENT;
  return NULL;
}

static const wd_state_ops_t one_ops = {one_get, one_put};

/* Row text "(v1,v2,...)" with '?' for an absent column. */
static void row_text(const wd_schema_t *s, const wd_row_t *r, wd_buf_t *b) {
  wd_buf_putc(b, '(');
  for (size_t c = 0; c < s->ncols; c++) {
    if (c) wd_buf_putc(b, ',');
    if (r->absent && r->absent[c]) wd_buf_putc(b, '?');
    else wd_value_format(s->cols[c].type, &r->v[c], b);
  }
  wd_buf_putc(b, ')');
}

/* Decodes one Debezium JSON record and applies it; returns "<decoded> => <changelog>" (the caller
 * frees), or "ERR <id>: <message>" when decoding fails. */
static char *feed(fx_t *f, const char *json) {
  const wd_schema_t *s = wd_table_schema(f->t);
  wd_changes_t ch;
  wd_changes_init(&ch);
  wd_kafka_meta_t meta = {"shop.orders", 0, 42, -1, NULL, 0};
  wd_buf_t b = {0};
  wd_error_t *err = wd_decode_debezium_json(f->src, s, &meta, json, strlen(json), &ch);
  if (err) {
    wd_buf_printf(&b, "ERR %s: %s", err->id, err->message);
    wd_error_destroy(err);
  } else {
    for (size_t i = 0; i < ch.count; i++) {
      wd_buf_printf(&b, "%s%s", i ? " " : "", wd_row_kind_str(ch.rows[i]->kind));
      row_text(s, ch.rows[i], &b);
    }
    wd_changelog_t cl = {0};
    err = wd_message_apply(f->t, &one_ops, f, ch.rows, ch.count, &cl, NULL);
    cr_assert_null(err, "%s", err ? err->message : "");
    wd_buf_printf(&b, " =>");
    for (size_t i = 0; i < cl.n; i++) {
      wd_buf_printf(&b, " %s", wd_row_kind_str(cl.rows[i]->kind));
      row_text(s, cl.rows[i], &b);
    }
    wd_changelog_free(f->t, &cl);
  }
  wd_buf_putc(&b, 0);
  wd_changes_free(&ch);
  return (char *)b.data;
}

/* The stored row as text. */
static char *stored(fx_t *f) {
  wd_buf_t b = {0};
  if (f->e.row) row_text(wd_table_schema(f->t), f->e.row, &b);
  else wd_buf_printf(&b, "(none)");
  wd_buf_putc(&b, 0);
  return (char *)b.data;
}

#define EXPECT_FEED(f, json, want)                                                                                     \
  do {                                                                                                                 \
    char *got_ = feed((f), (json));                                                                                    \
    cr_expect_str_eq(got_, (want));                                                                                    \
    free(got_);                                                                                                        \
  } while (0)

#define EXPECT_STORED(f, want)                                                                                         \
  do {                                                                                                                 \
    char *got_ = stored(f);                                                                                            \
    cr_expect_str_eq(got_, (want));                                                                                    \
    free(got_);                                                                                                        \
  } while (0)

static const char *const HEAD = "kafka:\n"
                                "  bootstrap.servers: 127.0.0.1:1\n"
                                "  group.id: g\n"
                                "sink:\n"
                                "  topic: out\n"
                                "state:\n"
                                "  dir: /tmp/widen-dbz-state\n";

/* A config: HEAD, then the table and one source over topic shop.orders with extra source lines. */
static char *yaml(const char *table, const char *source_extra) {
  char *y = NULL;
  cr_assert(asprintf(&y,
                     "%s"
                     "table:\n"
                     "  name: wide\n"
                     "%s"
                     "sources:\n"
                     "  - name: orders\n"
                     "    topic: shop.orders\n"
                     "    format: debezium-json\n"
                     "%s",
                     HEAD, table, source_extra) > 0);
  return y;
}

/* ---- TOAST: unavailable.value.placeholder ---------------------------------------------------- */

static const char *const TOAST_TABLE = "  schema:\n"
                                       "    - {name: order_id, type: BIGINT NOT NULL}\n"
                                       "    - {name: customer, type: STRING}\n"
                                       "    - {name: note, type: BYTES}\n"
                                       "    - {name: amount, type: BIGINT}\n"
                                       "  primary-key: [order_id]\n";

/* PostgreSQL with REPLICA IDENTITY DEFAULT: an UPDATE that does not touch the out-of-line columns
 * `customer` (text) and `note` (bytea) sends Debezium's placeholder for them (text as is, bytea as
 * base64 of its bytes) and no before image. The columns are absent from the change records and
 * the stored row keeps their values (deduplicate: a NULL would have erased them). */
Test(toast, the_placeholder_is_not_carried) {
  fx_t f;
  char *y = yaml(TOAST_TABLE, "    columns: [order_id, customer, note, amount]\n");
  wd_error_t *err = fx_load(&f, y);
  cr_assert_null(err, "%s", err ? err->message : "");
  EXPECT_FEED(&f,
              "{\"before\":null,\"after\":{\"order_id\":7,\"customer\":\"alice\",\"note\":\"aGVsbG8=\",\"amount\":5},"
              "\"op\":\"c\"}",
              "+I(7,alice,aGVsbG8=,5) => +I(7,alice,aGVsbG8=,5)");
  EXPECT_FEED(&f,
              "{\"before\":null,\"after\":{\"order_id\":7,\"customer\":\"__debezium_unavailable_value\","
              "\"note\":\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\",\"amount\":9},\"op\":\"u\"}",
              "-U(7,?,?,?) +U(7,?,?,9) => -U(7,alice,aGVsbG8=,5) +U(7,alice,aGVsbG8=,9)");
  EXPECT_STORED(&f, "(7,alice,aGVsbG8=,9)");
  /* a real change of the column still goes through */
  EXPECT_FEED(&f,
              "{\"before\":null,\"after\":{\"order_id\":7,\"customer\":\"bob\",\"note\":null,\"amount\":9},"
              "\"op\":\"u\"}",
              "-U(7,?,?,?) +U(7,bob,NULL,9) => -U(7,alice,aGVsbG8=,9) +U(7,bob,NULL,9)");
  EXPECT_STORED(&f, "(7,bob,NULL,9)");
  fx_done(&f);
  free(y);
}

/* The option names the connector's own placeholder; an empty one turns it off. */
Test(toast, the_placeholder_is_the_sources_option) {
  fx_t f;
  char *y = yaml(TOAST_TABLE, "    columns: [order_id, customer, note, amount]\n"
                              "    options:\n"
                              "      unavailable.value.placeholder: \"<toasted>\"\n");
  wd_error_t *err = fx_load(&f, y);
  cr_assert_null(err, "%s", err ? err->message : "");
  EXPECT_FEED(&f, "{\"after\":{\"order_id\":1,\"customer\":\"alice\",\"note\":null,\"amount\":5},\"op\":\"c\"}",
              "+I(1,alice,NULL,5) => +I(1,alice,NULL,5)");
  EXPECT_FEED(&f, "{\"after\":{\"order_id\":1,\"customer\":\"<toasted>\",\"note\":null,\"amount\":6},\"op\":\"u\"}",
              "-U(1,?,?,?) +U(1,?,NULL,6) => -U(1,alice,NULL,5) +U(1,alice,NULL,6)");
  /* Debezium's default text is an ordinary value for this source */
  EXPECT_FEED(&f,
              "{\"after\":{\"order_id\":1,\"customer\":\"__debezium_unavailable_value\",\"note\":null,"
              "\"amount\":6},\"op\":\"u\"}",
              "-U(1,?,?,?) +U(1,__debezium_unavailable_value,NULL,6) => -U(1,alice,NULL,6) "
              "+U(1,__debezium_unavailable_value,NULL,6)");
  fx_done(&f);
  free(y);
  y = yaml(TOAST_TABLE, "    columns: [order_id, customer, note, amount]\n"
                        "    options:\n"
                        "      unavailable.value.placeholder: \"\"\n");
  err = fx_load(&f, y);
  cr_assert_null(err, "%s", err ? err->message : "");
  EXPECT_FEED(&f,
              "{\"after\":{\"order_id\":1,\"customer\":\"__debezium_unavailable_value\",\"note\":null,"
              "\"amount\":6},\"op\":\"c\"}",
              "+I(1,__debezium_unavailable_value,NULL,6) => +I(1,__debezium_unavailable_value,NULL,6)");
  fx_done(&f);
  free(y);
}

/* ---- time units at `config check` ------------------------------------------------------------- */

/* `widen config check` says which TIMESTAMP/TIME columns of a debezium-json source need their
 * records' envelope schema to know their unit (timestamp-unit auto), with the fix; a unit set, or
 * none of those columns, says nothing. */
Test(units, config_check_names_the_columns_that_need_a_schema) {
  static const char *const table = "  schema:\n"
                                   "    - {name: order_id, type: BIGINT NOT NULL}\n"
                                   "    - {name: paid_at, type: TIMESTAMP(3)}\n"
                                   "    - {name: note, type: STRING}\n"
                                   "  primary-key: [order_id]\n";
  fx_t f;
  char *y = yaml(table, "    columns: [order_id, paid_at, note]\n");
  wd_error_t *err = fx_load(&f, y);
  cr_assert_null(err, "%s", err ? err->message : "");
  char *note = wd_format_temporal_note(f.src, wd_table_schema(f.t));
  cr_assert_not_null(note);
  cr_expect(strstr(note, "source 'orders'") && strstr(note, "column paid_at") && strstr(note, "C_TEMPORAL_UNIT") &&
                strstr(note, "timestamp-unit"),
            "%s", note);
  free(note);
  fx_done(&f);
  free(y);
  y = yaml(table, "    columns: [order_id, paid_at, note]\n    options: {timestamp-unit: micros}\n");
  err = fx_load(&f, y);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_expect_null(wd_format_temporal_note(f.src, wd_table_schema(f.t)));
  fx_done(&f);
  free(y);
}
