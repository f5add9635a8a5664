/*
 * tests/unit/test_merge_complete.c — change records with absent columns (wd_row_t.absent: an
 * update without a before image, a key-only delete) are completed from the stored row by
 * wd_message_apply (join/merge.h), so the changelog keeps full -U rows and retractions stay
 * right.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/table_config.h"
#include "join/merge.h"

static wd_table_t *table_from(const char *text) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  cr_assert_not_null(j, "bad test JSON: %s", jerr.text);
  wd_table_t *t = NULL;
  wd_error_t *err = wd_table_config_from_json(json_object_get(j, "schema"), json_object_get(j, "primary_key"),
                                              json_object_get(j, "options"), &t);
  json_decref(j);
  cr_assert_null(err, "%s", err ? err->message : "");
  return t;
}

/* A store of one key. */
typedef struct {
  const wd_table_t *t;
  wd_entry_t e;
} one_t;

static wd_error_t *one_get(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  (void)key;
  (void)klen;
  one_t *o = ctx;
  e->state = o->e.state;
  e->row = o->e.row ? wd_row_copy(wd_table_schema(o->t), o->e.row) : NULL;
  return NULL;
}

static wd_error_t *one_put(void *ctx, const uint8_t *key, size_t klen, wd_entry_t *e) {
  (void)key;
  (void)klen;
  one_t *o = ctx;
  wd_entry_clear(o->t, &o->e);
  o->e = *e;
  e->row = NULL;
  e->state = WD_ENTRY_ABSENT;
  return NULL;
}

static const wd_state_ops_t one_ops = {one_get, one_put};

/* A row of (k, a, s) with kind; NULL for a NULL value; absent marks columns 1.. by '?'. */
static wd_row_t *rec(const wd_table_t *t, wd_row_kind_t kind, int k, const char *a, const char *s) {
  const wd_schema_t *sc = wd_table_schema(t);
  wd_row_t *r = wd_row_new(sc);
  r->kind = kind;
  r->v[0].is_null = false;
  r->v[0].i = k;
  const char *vals[2] = {a, s};
  for (int c = 0; c < 2; c++) {
    if (vals[c] && !strcmp(vals[c], "?")) {
      cr_assert_eq(wd_row_set_absent(r, (size_t)c + 1), 0);
    } else if (vals[c]) {
      r->v[c + 1].is_null = false;
      r->v[c + 1].i = atoi(vals[c]);
    }
  }
  return r;
}

static char *cl_text(const wd_table_t *t, const wd_changelog_t *cl) {
  wd_buf_t b = {0};
  wd_buf_append(&b, "", 0);
  for (size_t i = 0; i < cl->n; i++) {
    if (i) wd_buf_putc(&b, ' ');
    wd_buf_printf(&b, "%s(", wd_row_kind_str(cl->rows[i]->kind));
    for (size_t c = 0; c < 3; c++) {
      if (c) wd_buf_putc(&b, ',');
      wd_value_format(wd_table_schema(t)->cols[c].type, &cl->rows[i]->v[c], &b);
    }
    wd_buf_putc(&b, ')');
  }
  return (char *)b.data;
}

/* Applies the records as one message and returns the changelog as text. */
static char *apply(one_t *o, wd_row_t **recs, size_t n) {
  wd_changelog_t cl = {0};
  wd_error_t *err = wd_message_apply(o->t, &one_ops, o, recs, n, &cl, NULL);
  cr_assert_null(err, "%s", err ? err->message : "");
  char *s = cl_text(o->t, &cl);
  wd_changelog_free(o->t, &cl);
  for (size_t i = 0; i < n; i++) wd_row_destroy(wd_table_schema(o->t), recs[i]);
  return s;
}

#define SCHEMA                                                                                                         \
  "\"schema\":[{\"name\":\"k\",\"type\":\"INT NOT NULL\"},{\"name\":\"a\",\"type\":\"INT\"},"                          \
  "{\"name\":\"s\",\"type\":\"INT\"}],\"primary_key\":[\"k\"]"

/* Aggregation (sum): an update without before image retracts the stored value, not NULL. */
Test(complete, aggregation_retracts_the_stored_value) {
  wd_table_t *t = table_from("{" SCHEMA ",\"options\":{\"merge-engine\":\"aggregation\","
                             "\"fields.a.aggregate-function\":\"sum\",\"fields.s.aggregate-function\":\"sum\"}}");
  one_t o = {t, {0}};
  char *got = apply(&o, (wd_row_t *[]){rec(t, WD_INSERT, 1, "10", "1")}, 1);
  cr_expect_str_eq(got, "+I(1,10,1)");
  free(got);
  /* the source changed a from 10 to 25 and sent no before image */
  got = apply(&o, (wd_row_t *[]){rec(t, WD_UPDATE_BEFORE, 1, "?", "?"), rec(t, WD_UPDATE_AFTER, 1, "25", "2")}, 2);
  cr_expect_str_eq(got, "-U(1,10,1) +U(1,25,2)");
  free(got);
  /* a key-only delete retracts what is stored */
  got = apply(&o, (wd_row_t *[]){rec(t, WD_DELETE, 1, "?", "?")}, 1);
  cr_expect_str_eq(got, "-U(1,25,2) +U(1,0,0)");
  free(got);
  wd_entry_clear(t, &o.e);
  wd_table_destroy(t);
}

/* Deduplicate with sequence.field s: a key-only delete whose s is absent takes s from the stored
 * row and applies; with s NULL (not completed) it is ordered oldest and dropped. */
Test(complete, delete_without_sequence_field) {
  wd_table_t *t = table_from("{" SCHEMA ",\"options\":{\"merge-engine\":\"deduplicate\",\"sequence.field\":\"s\"}}");
  cr_expect(wd_table_is_sequence_column(t, 2));
  cr_expect_not(wd_table_is_sequence_column(t, 1));
  one_t o = {t, {0}};
  char *got = apply(&o, (wd_row_t *[]){rec(t, WD_INSERT, 1, "7", "5")}, 1);
  cr_expect_str_eq(got, "+I(1,7,5)");
  free(got);
  got = apply(&o, (wd_row_t *[]){rec(t, WD_DELETE, 1, NULL, NULL)}, 1);
  cr_expect(strstr(got, "-D") == NULL, "a delete with a NULL sequence field is ordered oldest: %s", got);
  cr_expect_eq(o.e.state, WD_ENTRY_ROW);
  free(got);
  got = apply(&o, (wd_row_t *[]){rec(t, WD_DELETE, 1, "?", "?")}, 1);
  cr_expect_str_eq(got, "-D(1,7,5)");
  free(got);
  wd_entry_clear(t, &o.e);
  wd_table_destroy(t);
}

/* Completion uses the entry as earlier records of the same message left it; a key without an
 * entry leaves the absent values NULL. */
Test(complete, within_one_message) {
  wd_table_t *t = table_from("{" SCHEMA ",\"options\":{\"merge-engine\":\"deduplicate\"}}");
  one_t o = {t, {0}};
  char *got = apply(&o,
                    (wd_row_t *[]){rec(t, WD_INSERT, 1, "1", "1"), rec(t, WD_UPDATE_BEFORE, 1, "?", "?"),
                                   rec(t, WD_UPDATE_AFTER, 1, "2", "2")},
                    3);
  cr_expect_str_eq(got, "+I(1,2,2)");
  free(got);
  wd_entry_clear(t, &o.e);
  got = apply(&o, (wd_row_t *[]){rec(t, WD_DELETE, 1, "?", "?")}, 1);
  cr_expect_str_eq(got, "");
  free(got);
  wd_entry_clear(t, &o.e);
  wd_table_destroy(t);
}

/* An -U with only its key is skipped by engines that do not retract values: partial-update
 * without sequence groups would refuse it (E_PU_DELETE_NOT_ACCEPTED) and first-row
 * (E_FIRST_ROW_RETRACT), though the source sent a plain update. A key-only -D is not skipped. */
Test(complete, key_only_update_before_where_nothing_retracts) {
  static const char *const tables[] = {
      "{" SCHEMA ",\"options\":{\"merge-engine\":\"partial-update\"}}",
      "{" SCHEMA ",\"options\":{\"merge-engine\":\"first-row\"}}",
  };
  static const char *const want[] = {"-U(1,1,1) +U(1,2,2)", ""};
  for (int k = 0; k < 2; k++) {
    wd_table_t *t = table_from(tables[k]);
    one_t o = {t, {0}};
    free(apply(&o, (wd_row_t *[]){rec(t, WD_INSERT, 1, "1", "1")}, 1));
    char *got =
        apply(&o, (wd_row_t *[]){rec(t, WD_UPDATE_BEFORE, 1, "?", "?"), rec(t, WD_UPDATE_AFTER, 1, "2", "2")}, 2);
    cr_expect_str_eq(got, want[k], "table %d", k);
    free(got);
    wd_changelog_t cl = {0};
    wd_row_t *d = rec(t, WD_DELETE, 1, "?", "?");
    wd_error_t *err = wd_message_apply(t, &one_ops, &o, &d, 1, &cl, NULL);
    cr_expect_not_null(err, "table %d: a key-only -D still reaches the engine", k);
    wd_error_destroy(err);
    wd_row_destroy(wd_table_schema(t), d);
    wd_changelog_free(t, &cl);
    wd_entry_clear(t, &o.e);
    wd_table_destroy(t);
  }
}

/* An update whose source sent no before image and left a column out (Debezium's TOAST
 * placeholder: an unchanged large value): the key-only -U retracts the sequence group, and the
 * +U's absent column is the row's before the update, not the retracted NULL. */
Test(complete, an_add_after_a_key_only_retraction_keeps_the_value_it_did_not_carry) {
  wd_table_t *t = table_from("{" SCHEMA ",\"options\":{\"merge-engine\":\"partial-update\","
                             "\"fields.s.sequence-group\":\"a\"}}");
  one_t o = {t, {0}};
  free(apply(&o, (wd_row_t *[]){rec(t, WD_INSERT, 1, "10", "1")}, 1));
  char *got = apply(&o, (wd_row_t *[]){rec(t, WD_UPDATE_BEFORE, 1, "?", "?"), rec(t, WD_UPDATE_AFTER, 1, "?", "2")}, 2);
  cr_expect_str_eq(got, "-U(1,10,1) +U(1,10,2)");
  free(got);
  /* a column the +U carries as NULL is NULL */
  got = apply(&o, (wd_row_t *[]){rec(t, WD_UPDATE_BEFORE, 1, "?", "?"), rec(t, WD_UPDATE_AFTER, 1, NULL, "3")}, 2);
  cr_expect_str_eq(got, "-U(1,10,2) +U(1,NULL,3)");
  free(got);
  wd_entry_clear(t, &o.e);
  wd_table_destroy(t);
}
