/*
 * tests/unit/test_lookups_unit.c — app/runtime/lookups.h, the join layer as the loop uses it (state kept
 * apart from struct wd_pipeline): built from configs/invoice-wide.yaml (a main
 * source and three lookup sources), a lookup message decoded into the object's buffer and taken
 * into the batch as rows of the lookup's own schema, freed at the end of the batch. The data path
 * through Kafka is tests/integration/test_lookup_pipeline.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "app/config/config.h"
#include "app/runtime/lookups.h"
#include "common/types.h"
#include "ingest/source.h"

typedef struct {
  wd_config_t *cfg;
  wd_table_t *table;
  wd_source_t **sources;
  wd_lookups_t *lk;
} fix_t;

static void fix_new(fix_t *f) {
  memset(f, 0, sizeof(*f));
  wd_error_t *err = wd_config_load(WD_SOURCE_DIR "/configs/invoice-wide.yaml", &f->cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_null(wd_config_build_table(f->cfg, &f->table));
  f->sources = calloc(f->cfg->sources.n, sizeof(*f->sources));
  cr_assert_not_null(f->sources);
  err = wd_lookups_new(f->cfg, f->table, f->sources, &f->lk);
  cr_assert_null(err, "%s", err ? err->message : "");
}

static void fix_done(fix_t *f) {
  wd_lookups_destroy(f->lk);
  for (size_t i = 0; i < f->cfg->sources.n; i++) wd_source_destroy(f->sources[i]);
  free(f->sources);
  wd_table_destroy(f->table);
  wd_config_destroy(f->cfg);
}

Test(lookups_unit, which_sources_are_lookups_and_their_schemas) {
  fix_t f;
  fix_new(&f);
  cr_assert_eq(f.cfg->sources.n, 4);
  cr_assert(wd_lookups_active(f.lk), "a config with lookups and a required source changes rows");
  cr_assert_not(wd_lookups_is_lookup(f.lk, 0), "invoice is the main source");
  for (int i = 1; i < 4; i++) cr_assert(wd_lookups_is_lookup(f.lk, i), "source %d", i);
  cr_assert_not(wd_lookups_is_lookup(f.lk, -1));
  cr_assert_not(wd_lookups_is_lookup(f.lk, 4));
  /* payment's rows: [on = payment_id, its columns reconciliation_id and pay_status, _seq]
   * (join/lookup.h "the lookup schema") */
  const wd_schema_t *pay = wd_lookups_schema(f.lk, 1);
  cr_assert_eq(wd_schema_find(pay, "payment_id"), 0);
  cr_assert_geq(wd_schema_find(pay, "reconciliation_id"), 1);
  cr_assert_geq(wd_schema_find(pay, "pay_status"), 1);
  cr_assert_lt(wd_schema_find(pay, "invoice_id"), 0, "a lookup row is not a wide row");
  cr_assert_not_null(wd_lookups_join(f.lk));
  fix_done(&f);
}

Test(lookups_unit, a_decoded_lookup_message_is_taken_into_the_batch_and_freed_with_it) {
  fix_t f;
  fix_new(&f);
  const char *msg = "{\"before\":null,\"after\":{\"id\":7,\"reconciliation_id\":3,\"status\":\"paid\"},"
                    "\"source\":{\"lsn\":100},\"op\":\"c\"}";
  const char *upd = "{\"before\":{\"id\":7,\"reconciliation_id\":3,\"status\":\"paid\"},"
                    "\"after\":{\"id\":7,\"reconciliation_id\":4,\"status\":\"refunded\"},"
                    "\"source\":{\"lsn\":101},\"op\":\"u\"}";
  wd_kafka_meta_t meta = {0};
  size_t first = 99, count = 99;
  for (int round = 0; round < 2; round++) {
    wd_error_t *err = wd_decode_debezium_json(f.sources[1], wd_lookups_schema(f.lk, 1), &meta, msg, strlen(msg),
                                              wd_lookups_changes(f.lk, 1));
    cr_assert_null(err, "%s", err ? err->message : "");
    cr_assert_null(wd_lookups_take(f.lk, 1, &first, &count));
    cr_assert_eq(first, 0);
    cr_assert_eq(count, 1);
    err = wd_decode_debezium_json(f.sources[1], wd_lookups_schema(f.lk, 1), &meta, upd, strlen(upd),
                                  wd_lookups_changes(f.lk, 1));
    cr_assert_null(err, "%s", err ? err->message : "");
    cr_assert_null(wd_lookups_take(f.lk, 1, &first, &count));
    cr_assert_eq(first, 1, "the update's rows follow the create's in the batch");
    cr_assert_eq(count, 2, "an update is -U and +U");
    cr_assert_eq(wd_lookups_row(f.lk, 0)->kind, WD_INSERT);
    cr_assert_eq(wd_lookups_row(f.lk, 1)->kind, WD_UPDATE_BEFORE);
    cr_assert_eq(wd_lookups_row(f.lk, 2)->kind, WD_UPDATE_AFTER);
    cr_assert_eq(wd_lookups_row_schema(f.lk, 2), wd_lookups_schema(f.lk, 1));
    wd_lookups_batch_done(f.lk); /* the next batch starts at index 0 again (ASan: nothing leaked) */
  }
  fix_done(&f);
}
