/*
 * join/merge_spec.c — table options (Paimon's names) validated into a wd_table_t, once, at start
 * (spec §3 and §11.1; D4 eager validation). Every refusal names the option and what to change.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "join/merge_int.h"
#include "join/table_options.h"

/* ---- small helpers -------------------------------------------------------------------- */

/* A comma-separated list, each item trimmed (spec §3 [CHOICE]: trim everywhere). */
typedef struct {
  char **items;
  size_t n;
} wd_list_t;

static void list_free(wd_list_t *l) {
  for (size_t i = 0; i < l->n; i++) free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->n = 0;
}

static char *trim_dup(const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  return strndup(s, n);
}

/* Splits s on ',' into trimmed items (empty items dropped). Returns 0 or -1 on no memory. */
static int list_split(const char *s, wd_list_t *out) {
  out->items = NULL;
  out->n = 0;
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char *item = trim_dup(p, len);
    if (!item) goto fail;
    if (*item) {
      char **items = realloc(out->items, (out->n + 1) * sizeof(*items));
      if (!items) {
        free(item);
        goto fail;
      }
      out->items = items;
      out->items[out->n++] = item;
    } else {
      free(item);
    }
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
fail:
  list_free(out);
  return -1;
}

static const char *opt_get(size_t nopts, const wd_option_t *opts, const char *key) {
  const char *v = NULL;
  for (size_t i = 0; i < nopts; i++)
    if (strcmp(opts[i].key, key) == 0) v = opts[i].value; /* last one wins */
  return v;
}

static wd_error_t *parse_bool(const char *key, const char *v, bool *out) {
  char *t = trim_dup(v, strlen(v));
  if (!t) return wd_error_nomem();
  wd_error_t *err = NULL;
  if (strcasecmp(t, "true") == 0) *out = true;
  else if (strcasecmp(t, "false") == 0) *out = false;
  else
    err = wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE, "option '%s' = '%s' is not a boolean: use true or false", key,
                       v);
  free(t);
  return err;
}

static wd_error_t *bool_opt(size_t nopts, const wd_option_t *opts, const char *key, bool *out) {
  const char *v = opt_get(nopts, opts, key);
  *out = false;
  return v ? parse_bool(key, v, out) : NULL;
}

/* ---- the option tables ------------------------------------------------------------------ */

/* How an option's value is read. */
typedef enum {
  TOPT_BOOL, /* true / false (ASCII case-insensitive, trimmed) */
  TOPT_ENUM, /* one of values ("a|b|c"; exact, trimmed); the index is the value */
  TOPT_ENUM_ICASE, /* likewise, ASCII case-insensitive */
  TOPT_LIST, /* comma-separated column or field names (trimmed, empty items dropped) */
  TOPT_TEXT, /* any text */
  TOPT_INT, /* an integer from 1 to 2147483647 */
  TOPT_FUNCTION /* an aggregate function name (join/agg.h) */
} topt_kind_t;

/* One option of spec §3: a table key, or the suffix of a per-field key fields.<f>.<suffix>. */
typedef struct {
  const char *name;
  topt_kind_t kind;
  /* TOPT_BOOL: offsetof the flag in wd_table_t (table keys) or wd_agg_spec_t (suffixes), set by
   * the generic loops below; -1 when wd_table_new or parse_aggs read the option themselves */
  ptrdiff_t flag;
  const char *values; /* TOPT_ENUM*: the values, '|'-separated, in the order of their C enum */
  /* the reference (join/table_options.h): the key as documented (NULL: name), the default,
   * where it applies, what it does (spec §3); `widen config doc` prints it */
  const char *doc_key, *def, *applies, *description;
} topt_t;

/* The table keys (spec §3), in the order unknown-option suggestions consider them. */
static const topt_t TABLE_OPTS[] = {
    {"merge-engine", TOPT_ENUM, -1, "deduplicate|partial-update|aggregation|first-row", NULL, "deduplicate", "all",
     "How the records of one key merge (spec sections 5 to 8)."}, /* wd_merge_engine_t */
    {"sequence.field", TOPT_LIST, -1, NULL, NULL, "none", "all except first-row",
     "Comma list of columns that order the records of a key (spec section 4); without it arrival order does."},
    {"sequence.field.sort-order", TOPT_ENUM_ICASE, -1, "ascending|descending", NULL, "ascending", "with sequence.field",
     "`ascending`: the largest sequence wins; `descending`: the smallest."},
    {"ignore-delete", TOPT_BOOL, -1, NULL, NULL, "false", "all",
     "Drop every -U and -D at the entrance."}, /* with the three legacy aliases that follow */
    {"first-row.ignore-delete", TOPT_BOOL, -1, NULL, NULL, "false", "all",
     "Legacy alias of `ignore-delete`, read when that is absent."},
    {"deduplicate.ignore-delete", TOPT_BOOL, -1, NULL, NULL, "false", "all",
     "Legacy alias of `ignore-delete`, read when that is absent."},
    {"partial-update.ignore-delete", TOPT_BOOL, -1, NULL, NULL, "false", "all",
     "Legacy alias of `ignore-delete`, read when that is absent."},
    {"ignore-update-before", TOPT_BOOL, offsetof(wd_table_t, ignore_update_before), NULL, NULL, "false", "all",
     "Drop every -U at the entrance."},
    {"partial-update.remove-record-on-delete", TOPT_BOOL, offsetof(wd_table_t, pu_remove_on_delete), NULL, NULL,
     "false", "partial-update without sequence groups", "A -D removes the whole row; -U is ignored."},
    {"partial-update.remove-record-on-sequence-group", TOPT_LIST, -1, NULL, NULL, "none",
     "partial-update with sequence groups",
     "Comma list of group sequence fields; a not-older -D for such a group removes the row."},
    {"fields.default-aggregate-function", TOPT_FUNCTION, -1, NULL, NULL, "none", "aggregation, partial-update",
     "Function of every non-key, non-sequence column without its own (spec section 9)."},
    {"aggregation.remove-record-on-delete", TOPT_BOOL, offsetof(wd_table_t, agg_remove_on_delete), NULL, NULL, "false",
     "aggregation", "A -D removes the whole row; -U still retracts."},
    {"changelog-producer", TOPT_ENUM, -1, "none|input|lookup|full-compaction", NULL, "none", "all",
     "Accepted for Paimon compatibility: the changelog is always lookup-style. first-row accepts only `none` "
     "or `lookup`."},
    {"changelog-producer.row-deduplicate", TOPT_BOOL, offsetof(wd_table_t, row_dedup), NULL, NULL, "false", "all",
     "No -U/+U pair when the row did not change."},
    {"changelog-producer.row-deduplicate-ignore-fields", TOPT_LIST, -1, NULL, NULL, "none", "with row-deduplicate",
     "Columns that the row-deduplicate comparison ignores."},
};
#define N_TABLE_OPTS (sizeof(TABLE_OPTS) / sizeof(*TABLE_OPTS))

/* The per-field option suffixes of spec §3 (fields.<f>.<suffix>); indexes are the SUF_ below. */
static const topt_t FIELD_OPTS[] = {
    {"sequence-group", TOPT_LIST, -1, NULL, "fields.<seq>[,<seq2>...].sequence-group", "none", "partial-update",
     "Comma list of the columns that the sequence columns `<seq>` protect (spec section 7.2)."},
    {"aggregate-function", TOPT_FUNCTION, -1, NULL, "fields.<f>.aggregate-function", "none",
     "aggregation, partial-update",
     "The column's function: sum, max, min, last_value, last_non_null_value, listagg, collect, ... (spec "
     "section 9)."},
    {"ignore-retract", TOPT_BOOL, offsetof(wd_agg_spec_t, ignore_retract), NULL, "fields.<f>.ignore-retract", "false",
     "aggregate functions", "Retractions leave the column unchanged."},
    {"distinct", TOPT_BOOL, offsetof(wd_agg_spec_t, distinct), NULL, "fields.<f>.distinct", "false", "collect, listagg",
     "De-duplicate elements or tokens."},
    {"list-agg-delimiter", TOPT_TEXT, -1, NULL, "fields.<f>.list-agg-delimiter", ",", "listagg", "Separator string."},
    {"nested-key", TOPT_LIST, -1, NULL, "fields.<f>.nested-key", "none", "nested_update, nested_partial_update",
     "Comma list of the ROW fields that form the nested key."},
    {"nested-key-null-strategy", TOPT_ENUM_ICASE, -1, "merge|ignore|error", "fields.<f>.nested-key-null-strategy",
     "merge", "nested functions",
     "What a nested row with a NULL key part does (spec section 9.2)."}, /* wd_nested_null_t */
    {"nested-sequence-field", TOPT_LIST, -1, NULL, "fields.<f>.nested-sequence-field", "none", "nested_update",
     "Comma list of the ROW fields that order nested rows."},
    {"count-limit", TOPT_INT, -1, NULL, "fields.<f>.count-limit", "2147483647", "nested_update",
     "Most nested rows kept (1 to 2147483647)."},
    {"ts-field", TOPT_TEXT, -1, NULL, "fields.<f>.ts-field", "the last ROW field", "merge_map_with_keytime",
     "ROW field holding the per-entry timestamp."},
};
#define N_FIELD_OPTS (sizeof(FIELD_OPTS) / sizeof(*FIELD_OPTS))

enum {
  SUF_SEQ_GROUP = 0,
  SUF_AGG,
  SUF_IGNORE_RETRACT,
  SUF_DISTINCT,
  SUF_DELIM,
  SUF_NESTED_KEY,
  SUF_NESTED_NULL,
  SUF_NESTED_SEQ,
  SUF_COUNT_LIMIT,
  SUF_TS_FIELD
};

/* The table option called name (one of TABLE_OPTS). */
static const topt_t *table_opt(const char *name) {
  for (size_t i = 0; i < N_TABLE_OPTS; i++)
    if (strcmp(TABLE_OPTS[i].name, name) == 0) return &TABLE_OPTS[i];
  return NULL;
}

/* Reads value v of option key as one of o->values into *out (its index). C_BAD_OPTION_VALUE
 * lists the values ("use a, b or c"). */
static wd_error_t *parse_enum(const topt_t *o, const char *key, const char *v, int *out) {
  char *x = trim_dup(v, strlen(v));
  if (!x) return wd_error_nomem();
  char use[256] = "";
  size_t nvals = 1;
  for (const char *c = o->values; *c; c++) nvals += *c == '|';
  int idx = 0, found = -1;
  for (const char *a = o->values; found < 0; idx++) {
    const char *bar = strchr(a, '|');
    size_t n = bar ? (size_t)(bar - a) : strlen(a);
    if (strlen(x) == n && (o->kind == TOPT_ENUM_ICASE ? strncasecmp(x, a, n) : strncmp(x, a, n)) == 0) found = idx;
    size_t at = strlen(use);
    snprintf(use + at, sizeof(use) - at, "%s%.*s", idx == 0 ? "" : (size_t)idx + 1 == nvals ? " or " : ", ", (int)n, a);
    if (!bar) break;
    a = bar + 1;
  }
  free(x);
  if (found < 0) return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE, "option '%s' = '%s': use %s", key, v, use);
  *out = found;
  return NULL;
}

/* The value of enum option name (a TABLE_OPTS key) into *out; *out = -1 when it is not set. */
static wd_error_t *enum_opt(size_t nopts, const wd_option_t *opts, const char *name, int *out) {
  const char *v = opt_get(nopts, opts, name);
  *out = -1;
  return v ? parse_enum(table_opt(name), name, v, out) : NULL;
}

/* Splits "fields.<f>.<suffix>" into f (allocated) and the suffix index; -1 if key is not of
 * that form with a known suffix. */
static int field_option(const char *key, char **field) {
  *field = NULL;
  if (strncmp(key, "fields.", 7) != 0) return -1;
  const char *rest = key + 7;
  size_t rlen = strlen(rest);
  for (size_t i = 0; i < N_FIELD_OPTS; i++) {
    size_t slen = strlen(FIELD_OPTS[i].name);
    if (rlen > slen + 1 && rest[rlen - slen - 1] == '.' && strcmp(rest + rlen - slen, FIELD_OPTS[i].name) == 0) {
      *field = trim_dup(rest, rlen - slen - 1);
      return *field ? (int)i : -2;
    }
  }
  return -1;
}

static bool seq_type_ok_for_order(const wd_type_t *t) {
  return t->id != WD_ARRAY && t->id != WD_MAP && t->id != WD_ROW;
}

/* Group sequence field types (spec §7.2 [CHOICE]). */
static bool seq_type_ok_for_group(const wd_type_t *t) {
  switch (t->id) {
  case WD_DECIMAL:
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_FLOAT:
  case WD_DOUBLE:
  case WD_DATE:
  case WD_TIME:
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
  case WD_STRING: return true;
  default: return false;
  }
}

/* Index of ROW field name in row type t, or -1. */
static int row_field(const wd_type_t *t, const char *name) {
  for (size_t i = 0; i < t->nfields; i++)
    if (strcmp(t->fields[i].name, name) == 0) return (int)i;
  return -1;
}

void wd_table_destroy(wd_table_t *t) {
  if (!t) return;
  if (t->agg && t->schema)
    for (size_t c = 0; c < t->schema->ncols; c++) wd_agg_spec_clear(&t->agg[c]);
  free(t->agg);
  for (size_t g = 0; g < t->ngroups; g++) {
    free(t->groups[g].seq);
    free(t->groups[g].fields);
  }
  free(t->groups);
  free(t->seq_fields);
  free(t->row_dedup_ignore);
  free(t->group_of);
  free(t->seq_group_of);
  free(t->ordering_col);
  free(t->ordering);
  free(t->ungrouped);
  wd_schema_destroy(t->schema);
  free(t);
}

const wd_schema_t *wd_table_schema(const wd_table_t *t) { return t->schema; }
wd_merge_engine_t wd_table_engine(const wd_table_t *t) { return t->engine; }
bool wd_table_has_ordering(const wd_table_t *t) { return t->has_ordering; }
bool wd_table_rejects_retractions(const wd_table_t *t) {
  return t->engine == WD_ENGINE_PARTIAL_UPDATE && t->ngroups == 0 && !t->pu_remove_on_delete && !t->ignore_delete;
}
bool wd_table_ignores_deletes(const wd_table_t *t) { return t->ignore_delete; }
size_t wd_table_seq_groups(const wd_table_t *t) { return t->ngroups; }
void wd_table_seq_group_name(const wd_table_t *t, size_t g, char *buf, size_t n) {
  size_t at = 0;
  if (!n) return;
  buf[0] = 0;
  for (size_t k = 0; g < t->ngroups && k < t->groups[g].nseq && at + 1 < n; k++) {
    int w = snprintf(buf + at, n - at, "%s%s", k ? "," : "", t->schema->cols[t->groups[g].seq[k]].name);
    if (w < 0) break;
    at += (size_t)w;
  }
}

/* Resolves a list of ROW field names of column c's ARRAY<ROW> element into indexes. */
static wd_error_t *nested_fields(const wd_table_t *t, int c, const char *key, const char *value, int **out,
                                 size_t *nout) {
  const wd_type_t *ty = t->schema->cols[c].type;
  if (ty->id != WD_ARRAY || ty->elem->id != WD_ROW)
    return wd_error_new(WD_ERR_CONFIG, C_AGG_TYPE, "option '%s': column '%s' is %s, not ARRAY<ROW<...>>", key,
                        t->schema->cols[c].name, "not an array of rows");
  wd_list_t l;
  if (list_split(value, &l)) return wd_error_nomem();
  wd_error_t *err = NULL;
  *out = calloc(l.n ? l.n : 1, sizeof(int));
  if (!*out) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < l.n; i++) {
    int f = row_field(ty->elem, l.items[i]);
    if (f < 0) {
      err = wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_FIELD,
                         "option '%s' names '%s', which is not a field of the rows of column '%s'", key, l.items[i],
                         t->schema->cols[c].name);
      goto done;
    }
    (*out)[i] = f;
  }
  *nout = l.n;
done:
  if (err) {
    free(*out);
    *out = NULL;
  }
  list_free(&l);
  return err;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Groups by the schema position of their first sequence field; a group without one (an empty
 * key list) last. */
static int cmp_group(const void *a, const void *b) {
  const wd_seq_group_t *x = a, *y = b;
  int kx = x->nseq ? x->seq[0] : 1 << 30, ky = y->nseq ? y->seq[0] : 1 << 30;
  return (kx > ky) - (kx < ky);
}

/* C_SEQ_GROUP_UNKNOWN_FIELD for name (what: "field" or "sequence field") of option key, with the
 * schema's closest column name when it looks like a typo. */
static wd_error_t *unknown_group_field(const wd_schema_t *s, const char *key, const char *what, const char *name) {
  const char **names = calloc(s->ncols ? s->ncols : 1, sizeof(*names));
  const char *near = NULL;
  if (names) {
    for (size_t c = 0; c < s->ncols; c++) names[c] = s->cols[c].name;
    near = wd_closest(name, names, s->ncols);
  }
  wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_UNKNOWN_FIELD,
                                 "option '%s': %s '%s' can not be found in table schema%s%s%s", key, what, name,
                                 near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  free(names);
  return err;
}

/* Parses every sequence group option into t->groups (spec §7.2, §7.5). */
static wd_error_t *parse_groups(wd_table_t *t, size_t nopts, const wd_option_t *opts) {
  const wd_schema_t *s = t->schema;
  wd_error_t *err = NULL;
  wd_list_t keys = {0}, vals = {0};
  for (size_t i = 0; i < nopts && !err; i++) {
    char *field = NULL;
    int suf = field_option(opts[i].key, &field);
    if (suf == -2) return wd_error_nomem();
    if (suf != SUF_SEQ_GROUP) {
      free(field);
      continue;
    }
    if (list_split(field, &keys) || list_split(opts[i].value, &vals)) {
      free(field);
      err = wd_error_nomem();
      break;
    }
    free(field);
    wd_seq_group_t *groups = realloc(t->groups, (t->ngroups + 1) * sizeof(*groups));
    if (!groups) {
      err = wd_error_nomem();
      break;
    }
    t->groups = groups;
    wd_seq_group_t *g = &t->groups[t->ngroups++];
    memset(g, 0, sizeof(*g));
    g->seq = calloc(keys.n + 1, sizeof(int));
    g->fields = calloc(vals.n + 1, sizeof(int));
    if (!g->seq || !g->fields) {
      err = wd_error_nomem();
      break;
    }
    for (size_t k = 0; k < keys.n && !err; k++) {
      int c = wd_schema_find(s, keys.items[k]);
      if (c < 0) err = unknown_group_field(s, opts[i].key, "sequence field", keys.items[k]);
      else if (wd_schema_is_pk(s, c))
        err = wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_CONTAINS_PK,
                           "option '%s': sequence group contains primary key field '%s'; a key column can be "
                           "neither a sequence field nor a protected field",
                           opts[i].key, keys.items[k]);
      else g->seq[g->nseq++] = c;
    }
    for (size_t k = 0; k < vals.n && !err; k++) {
      int c = wd_schema_find(s, vals.items[k]);
      if (c < 0) err = unknown_group_field(s, opts[i].key, "field", vals.items[k]);
      else if (wd_schema_is_pk(s, c))
        err = wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_CONTAINS_PK,
                           "option '%s': sequence group contains primary key field '%s'; remove it from the group",
                           opts[i].key, vals.items[k]);
      else g->fields[g->nfields++] = c;
    }
    list_free(&keys);
    list_free(&vals);
  }
  list_free(&keys);
  list_free(&vals);
  if (err) return err;
  /* Canonical order (independent of the order in which the options are written): protected
   * fields of a group in schema order, each once; groups in the schema order of their first
   * sequence field. The engine walks groups and fields in this order, so which error a record
   * gets, when two groups would both refuse it, does not depend on option order either. The
   * sequence fields of a multi-field group keep the key's order: they are compared left to right. */
  for (size_t g = 0; g < t->ngroups; g++) {
    wd_seq_group_t *gr = &t->groups[g];
    if (gr->nfields > 1) qsort(gr->fields, gr->nfields, sizeof(int), cmp_int);
    size_t n = 0;
    for (size_t k = 0; k < gr->nfields; k++)
      if (n == 0 || gr->fields[n - 1] != gr->fields[k]) gr->fields[n++] = gr->fields[k];
    gr->nfields = n;
  }
  if (t->ngroups > 1) qsort(t->groups, t->ngroups, sizeof(*t->groups), cmp_group);
  /* Each column in one group only, as a sequence field or as a protected field (a column shared
   * by two groups would be written by whichever group comes last); sequence field types. */
  for (size_t g = 0; g < t->ngroups; g++) {
    for (size_t k = 0; k < t->groups[g].nseq; k++) {
      int c = t->groups[g].seq[k];
      if (!seq_type_ok_for_group(s->cols[c].type)) {
        char *ty = wd_type_to_string(s->cols[c].type);
        err = wd_error_new(WD_ERR_CONFIG, C_SEQ_FIELD_TYPE,
                           "sequence group field '%s' has type %s; use a numeric, DATE, TIME, TIMESTAMP or STRING "
                           "column",
                           s->cols[c].name, ty ? ty : "?");
        free(ty);
        return err;
      }
      if (t->seq_group_of[c] >= 0 && t->seq_group_of[c] != (int)g)
        return wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_DUPLICATE_FIELD,
                            "field '%s' is defined repeatedly by multiple groups: it is a sequence field of two "
                            "'fields.<seq>.sequence-group' keys; give each group its own sequence field",
                            s->cols[c].name);
      t->seq_group_of[c] = (int)g;
    }
  }
  for (size_t g = 0; g < t->ngroups; g++) {
    for (size_t k = 0; k < t->groups[g].nfields; k++) {
      int c = t->groups[g].fields[k];
      if (t->seq_group_of[c] >= 0)
        return wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_DUPLICATE_FIELD,
                            "field '%s' is defined repeatedly by multiple groups: it is protected by a sequence "
                            "group and is itself a group's sequence field; a column can be one or the other",
                            s->cols[c].name);
      if (t->group_of[c] >= 0 && t->group_of[c] != (int)g)
        return wd_error_new(WD_ERR_CONFIG, C_SEQ_GROUP_DUPLICATE_FIELD,
                            "field '%s' is defined repeatedly by multiple groups; put it in one sequence group only",
                            s->cols[c].name);
      t->group_of[c] = (int)g;
    }
  }
  return NULL;
}

/* Builds the per-column aggregate function specs (spec §7.4, §8.1, §9). */
static wd_error_t *parse_aggs(wd_table_t *t, size_t nopts, const wd_option_t *opts) {
  const wd_schema_t *s = t->schema;
  wd_error_t *err = NULL;
  const char *deflt = opt_get(nopts, opts, "fields.default-aggregate-function");
  wd_agg_fn_t deflt_fn = WD_AGG_NONE;
  bool agg_engine = t->engine == WD_ENGINE_AGGREGATION;
  bool pu_engine = t->engine == WD_ENGINE_PARTIAL_UPDATE;
  if (deflt && (agg_engine || pu_engine)) {
    char *name = trim_dup(deflt, strlen(deflt));
    if (!name) return wd_error_nomem();
    err = wd_agg_lookup(name, "fields.default-aggregate-function", &deflt_fn);
    free(name);
    if (err) return err;
  }
  /* Explicit functions, and the options that go with them. */
  for (size_t c = 0; c < s->ncols; c++) {
    wd_agg_spec_t *a = &t->agg[c];
    a->type = s->cols[c].type;
    a->column = s->cols[c].name;
    a->count_limit = 2147483647;
    a->ts_field = -1;
  }
  for (size_t i = 0; i < nopts; i++) {
    char *field = NULL;
    int suf = field_option(opts[i].key, &field);
    if (suf == -2) return wd_error_nomem();
    if (suf < 0 || suf == SUF_SEQ_GROUP) {
      free(field);
      continue;
    }
    int c = wd_schema_find(s, field);
    free(field);
    if (c < 0) continue; /* reported by check_field_names */
    wd_agg_spec_t *a = &t->agg[c];
    const char *v = opts[i].value;
    switch (suf) {
    case SUF_AGG: {
      bool is_seq = false;
      for (size_t k = 0; k < t->nseq_fields; k++) is_seq |= t->seq_fields[k] == (int)c;
      if (is_seq)
        return wd_error_new(WD_ERR_CONFIG, C_SEQ_FIELD_HAS_AGG,
                            "option '%s': should not define aggregation on sequence field '%s'; remove the "
                            "option (sequence fields always keep the last value)",
                            opts[i].key, s->cols[c].name);
      if (!agg_engine && !pu_engine) break;
      char *name = trim_dup(v, strlen(v));
      if (!name) return wd_error_nomem();
      err = wd_agg_lookup(name, s->cols[c].name, &a->fn);
      free(name);
      if (err) return err;
      break;
    }
    case SUF_IGNORE_RETRACT:
    case SUF_DISTINCT:
      if ((err = parse_bool(opts[i].key, v, (bool *)((char *)a + FIELD_OPTS[suf].flag)))) return err;
      break;
    case SUF_DELIM:
      free(a->delimiter);
      if (!(a->delimiter = strdup(v))) return wd_error_nomem();
      break;
    case SUF_COUNT_LIMIT: {
      char *end = NULL;
      errno = 0;
      long long n = strtoll(v, &end, 10);
      while (end && isspace((unsigned char)*end)) end++;
      if (errno || !end || end == v || *end || n < 1 || n > 2147483647LL)
        return wd_error_new(WD_ERR_CONFIG, C_BAD_OPTION_VALUE,
                            "option '%s' = '%s': use an integer from 1 to 2147483647", opts[i].key, v);
      a->count_limit = n;
      break;
    }
    case SUF_NESTED_NULL: {
      int m;
      if ((err = parse_enum(&FIELD_OPTS[suf], opts[i].key, v, &m))) return err;
      a->nested_null = (wd_nested_null_t)m;
      break;
    }
    default: break; /* nested-key, nested-sequence-field, ts-field: resolved below */
    }
  }
  /* Default function and per-engine rules. */
  for (size_t c = 0; c < s->ncols; c++) {
    wd_agg_spec_t *a = &t->agg[c];
    bool is_seq = false;
    for (size_t k = 0; k < t->nseq_fields; k++) is_seq |= t->seq_fields[k] == (int)c;
    if (wd_schema_is_pk(s, (int)c)) {
      a->fn = WD_AGG_NONE;
      continue;
    }
    if (agg_engine) {
      if (is_seq) a->fn = WD_AGG_LAST_VALUE; /* §8.1 (1) */
      else if (a->fn == WD_AGG_NONE) a->fn = deflt_fn != WD_AGG_NONE ? deflt_fn : WD_AGG_LAST_NON_NULL_VALUE;
    } else if (pu_engine) {
      if (t->seq_group_of[c] >= 0) {
        a->fn = WD_AGG_NONE; /* §7.4: group sequence fields never aggregate */
        continue;
      }
      if (is_seq) continue;
      if (a->fn == WD_AGG_NONE) a->fn = deflt_fn;
      if (t->group_of[c] < 0 && a->fn != WD_AGG_NONE && a->fn != WD_AGG_LAST_NON_NULL_VALUE)
        return wd_error_new(WD_ERR_CONFIG, C_PU_AGG_NEEDS_SEQUENCE_GROUP,
                            "Must use sequence group for aggregation functions but not found for field '%s' "
                            "(function %s%s); protect it with 'fields.<seq>.sequence-group' or use "
                            "last_non_null_value",
                            s->cols[c].name, wd_agg_name(a->fn),
                            t->agg[c].fn == deflt_fn ? ", from fields.default-aggregate-function" : "");
    } else {
      a->fn = WD_AGG_NONE;
    }
  }
  /* Nested options, ts-field and type checks. */
  for (size_t i = 0; i < nopts; i++) {
    char *field = NULL;
    int suf = field_option(opts[i].key, &field);
    if (suf == -2) return wd_error_nomem();
    int c = suf >= 0 ? wd_schema_find(s, field) : -1;
    free(field);
    if (c < 0 || (suf != SUF_NESTED_KEY && suf != SUF_NESTED_SEQ && suf != SUF_TS_FIELD)) continue;
    wd_agg_spec_t *a = &t->agg[c];
    if (suf == SUF_NESTED_KEY) {
      free(a->nested_key);
      a->nested_key = NULL;
      if ((err = nested_fields(t, c, opts[i].key, opts[i].value, &a->nested_key, &a->n_nested_key))) return err;
    } else if (suf == SUF_NESTED_SEQ) {
      free(a->nested_seq);
      a->nested_seq = NULL;
      if ((err = nested_fields(t, c, opts[i].key, opts[i].value, &a->nested_seq, &a->n_nested_seq))) return err;
    } else {
      const wd_type_t *ty = s->cols[c].type;
      char *name = trim_dup(opts[i].value, strlen(opts[i].value));
      if (!name) return wd_error_nomem();
      a->ts_field = (ty->id == WD_MAP && ty->val->id == WD_ROW) ? row_field(ty->val, name) : -1;
      if (a->ts_field < 0)
        err =
            wd_error_new(WD_ERR_CONFIG, C_AGG_TYPE, "option '%s': '%s' is not a field of the ROW values of column '%s'",
                         opts[i].key, name, s->cols[c].name);
      free(name);
      if (err) return err;
    }
  }
  for (size_t c = 0; c < s->ncols; c++) {
    wd_agg_spec_t *a = &t->agg[c];
    const wd_type_t *ty = s->cols[c].type;
    bool has_nested_opts = a->n_nested_seq || a->nested_null != WD_NESTED_NULL_MERGE;
    if ((has_nested_opts && !a->nested_key) || (a->fn == WD_AGG_NESTED_PARTIAL_UPDATE && !a->nested_key))
      return wd_error_new(WD_ERR_CONFIG, C_NESTED_OPTION_NEEDS_KEY,
                          "column '%s' requires 'fields.%s.nested-key' to be configured", s->cols[c].name,
                          s->cols[c].name);
    if (a->fn == WD_AGG_MERGE_MAP_WITH_KEYTIME && a->ts_field < 0 && ty->id == WD_MAP && ty->val->id == WD_ROW &&
        ty->val->nfields >= 2)
      a->ts_field = (int)ty->val->nfields - 1; /* default: the last ROW field */
    if (a->fn == WD_AGG_LISTAGG && !a->delimiter && !(a->delimiter = strdup(","))) return wd_error_nomem();
    if (a->fn != WD_AGG_NONE && (err = wd_agg_check_type(a))) return err;
    if (t->agg_remove_on_delete && a->ignore_retract)
      return wd_error_new(WD_ERR_CONFIG, C_AGG_REMOVE_ON_DELETE_VS_IGNORE_RETRACT,
                          "'aggregation.remove-record-on-delete' and 'fields.%s.ignore-retract' have conflicting "
                          "behavior so should not be enabled at the same time; drop one of them",
                          s->cols[c].name);
  }
  return NULL;
}

/* C_UNKNOWN_OPTION for key, suggesting the closest option name (a table key, or
 * fields.<f>.<suffix> with the same <f>) when it looks like a typo. */
static wd_error_t *unknown_option(const char *key) {
  const char *cands[N_TABLE_OPTS + N_FIELD_OPTS];
  char fbuf[N_FIELD_OPTS][256];
  size_t n = 0;
  for (size_t i = 0; i < N_TABLE_OPTS; i++) cands[n++] = TABLE_OPTS[i].name;
  const char *last = strrchr(key, '.');
  if (strncmp(key, "fields.", 7) == 0 && last && last > key + 7)
    for (size_t i = 0; i < N_FIELD_OPTS; i++) {
      snprintf(fbuf[i], sizeof(fbuf[i]), "%.*s.%s", (int)(last - key), key, FIELD_OPTS[i].name);
      cands[n++] = fbuf[i];
    }
  const char *near = wd_closest(key, cands, n);
  if (near)
    return wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_OPTION, "unknown table option '%s'; did you mean '%s'?", key, near);
  return wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_OPTION,
                      "unknown table option '%s'; check its spelling against Paimon's option names (e.g. "
                      "merge-engine, sequence.field, fields.<f>.aggregate-function; configs/OPTIONS.md)",
                      key);
}

/* Every option key must be one spec §3 lists; fields.<f>.* must name a column. */
static wd_error_t *check_keys(wd_table_t *t, size_t nopts, const wd_option_t *opts) {
  for (size_t i = 0; i < nopts; i++) {
    const char *key = opts[i].key;
    if (table_opt(key)) continue;
    char *field = NULL;
    int suf = field_option(key, &field);
    if (suf == -2) return wd_error_nomem();
    if (suf < 0) return unknown_option(key);
    wd_error_t *err = NULL;
    if (suf != SUF_SEQ_GROUP && wd_schema_find(t->schema, field) < 0)
      err = wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_FIELD,
                         "option '%s' names field '%s', which can not be found in table schema", key, field);
    free(field);
    if (err) return err;
  }
  return NULL;
}

wd_error_t *wd_table_new(wd_schema_t *schema, size_t nopts, const wd_option_t *opts, wd_table_t **out) {
  wd_error_t *err = NULL;
  wd_list_t l = {0};
  *out = NULL;
  wd_table_t *t = calloc(1, sizeof(*t));
  if (!t) {
    wd_schema_destroy(schema);
    return wd_error_nomem();
  }
  t->schema = schema;
  size_t nc = schema->ncols;
  t->group_of = malloc(nc * sizeof(int));
  t->seq_group_of = malloc(nc * sizeof(int));
  t->ordering_col = calloc(nc, sizeof(bool));
  t->row_dedup_ignore = calloc(nc, sizeof(bool));
  t->agg = calloc(nc, sizeof(wd_agg_spec_t));
  if (!t->group_of || !t->seq_group_of || !t->ordering_col || !t->row_dedup_ignore || !t->agg) {
    err = wd_error_nomem();
    goto fail;
  }
  for (size_t c = 0; c < nc; c++) t->group_of[c] = t->seq_group_of[c] = -1;

  if ((err = check_keys(t, nopts, opts))) goto fail;

  /* merge-engine */
  int e;
  if ((err = enum_opt(nopts, opts, "merge-engine", &e))) goto fail;
  if (e >= 0) t->engine = (wd_merge_engine_t)e;

  /* booleans; ignore-delete with its legacy aliases (§3) */
  const char *id_key = "ignore-delete";
  if (!opt_get(nopts, opts, id_key)) {
    static const char *const aliases[] = {"first-row.ignore-delete", "deduplicate.ignore-delete",
                                          "partial-update.ignore-delete"};
    for (size_t i = 0; i < 3; i++)
      if (opt_get(nopts, opts, aliases[i])) id_key = aliases[i];
  }
  if ((err = bool_opt(nopts, opts, id_key, &t->ignore_delete))) goto fail;
  for (size_t i = 0; i < nopts; i++) /* validate the aliases' values too */
    if (strstr(opts[i].key, "ignore-delete")) {
      bool dummy;
      if ((err = parse_bool(opts[i].key, opts[i].value, &dummy))) goto fail;
    }
  /* the other booleans that only set a flag */
  for (size_t i = 0; i < N_TABLE_OPTS; i++)
    if (TABLE_OPTS[i].kind == TOPT_BOOL && TABLE_OPTS[i].flag >= 0 &&
        (err = bool_opt(nopts, opts, TABLE_OPTS[i].name, (bool *)((char *)t + TABLE_OPTS[i].flag))))
      goto fail;

  /* changelog-producer (none, input, lookup, full-compaction) */
  int cp;
  if ((err = enum_opt(nopts, opts, "changelog-producer", &cp))) goto fail;
  if (cp >= 0 && t->engine == WD_ENGINE_FIRST_ROW && cp != 0 && cp != 2) {
    err = wd_error_new(WD_ERR_CONFIG, C_FIRST_ROW_CHANGELOG_PRODUCER,
                       "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine (got '%s')",
                       opt_get(nopts, opts, "changelog-producer"));
    goto fail;
  }

  /* sequence.field and its sort order (§4) */
  int order;
  if ((err = enum_opt(nopts, opts, "sequence.field.sort-order", &order))) goto fail;
  t->seq_descending = order == 1;
  const char *v = opt_get(nopts, opts, "sequence.field");
  if (v) {
    if (t->engine == WD_ENGINE_FIRST_ROW) {
      err = wd_error_new(WD_ERR_CONFIG, C_FIRST_ROW_SEQUENCE_FIELD,
                         "Do not support use sequence field on FIRST_ROW merge engine; remove 'sequence.field'");
      goto fail;
    }
    if (list_split(v, &l)) {
      err = wd_error_nomem();
      goto fail;
    }
    t->seq_fields = calloc(l.n + 1, sizeof(int));
    if (!t->seq_fields) {
      err = wd_error_nomem();
      goto fail;
    }
    for (size_t i = 0; i < l.n; i++) {
      int c = wd_schema_find(schema, l.items[i]);
      if (c < 0) {
        err = wd_error_new(WD_ERR_CONFIG, C_SEQ_FIELD_UNKNOWN,
                           "option 'sequence.field' names '%s', which can not be found in table schema", l.items[i]);
        goto fail;
      }
      for (size_t k = 0; k < t->nseq_fields; k++)
        if (t->seq_fields[k] == c) {
          err = wd_error_new(WD_ERR_CONFIG, C_SEQ_FIELD_DUPLICATE,
                             "option 'sequence.field' lists '%s' twice; list each column once", l.items[i]);
          goto fail;
        }
      if (!seq_type_ok_for_order(schema->cols[c].type)) {
        err = wd_error_new(WD_ERR_CONFIG, C_SEQ_FIELD_TYPE,
                           "sequence.field '%s' is an ARRAY, MAP or ROW column, which has no order; use a scalar "
                           "column",
                           l.items[i]);
        goto fail;
      }
      t->seq_fields[t->nseq_fields++] = c;
    }
    list_free(&l);
  }

  /* sequence groups (partial-update, §7.2) */
  if (t->engine == WD_ENGINE_PARTIAL_UPDATE) {
    if ((err = parse_groups(t, nopts, opts))) goto fail;
  }

  /* partial-update conflicts (§7.5) */
  v = opt_get(nopts, opts, "partial-update.remove-record-on-sequence-group");
  if (t->ignore_delete && t->pu_remove_on_delete) {
    err = wd_error_new(WD_ERR_CONFIG, C_CONFLICT_IGNORE_DELETE_REMOVE_ON_DELETE,
                       "'ignore-delete' and 'partial-update.remove-record-on-delete' have conflicting behavior so "
                       "should not be enabled at the same time; drop one of them");
    goto fail;
  }
  if (t->ignore_delete && v) {
    err = wd_error_new(WD_ERR_CONFIG, C_CONFLICT_IGNORE_DELETE_REMOVE_ON_SEQUENCE_GROUP,
                       "'ignore-delete' and 'partial-update.remove-record-on-sequence-group' have conflicting "
                       "behavior so should not be enabled at the same time; drop one of them");
    goto fail;
  }
  if (t->ngroups && t->pu_remove_on_delete) {
    err = wd_error_new(WD_ERR_CONFIG, C_CONFLICT_SEQUENCE_GROUP_REMOVE_ON_DELETE,
                       "sequence groups and 'partial-update.remove-record-on-delete' have conflicting behavior so "
                       "should not be enabled at the same time; use 'partial-update.remove-record-on-sequence-group'");
    goto fail;
  }
  if (v && t->engine == WD_ENGINE_PARTIAL_UPDATE) {
    if (list_split(v, &l)) {
      err = wd_error_nomem();
      goto fail;
    }
    for (size_t i = 0; i < l.n; i++) {
      int c = wd_schema_find(schema, l.items[i]);
      if (c < 0 || t->seq_group_of[c] < 0) {
        err = wd_error_new(WD_ERR_CONFIG, C_REMOVE_ON_SEQUENCE_GROUP_NOT_SEQUENCE_FIELD,
                           "'partial-update.remove-record-on-sequence-group' lists '%s', which must be part of "
                           "sequence groups (a field named in a 'fields.<seq>.sequence-group' key)",
                           l.items[i]);
        goto fail;
      }
      t->groups[t->seq_group_of[c]].remove_on_delete = true;
    }
    list_free(&l);
  }

  /* NOT NULL value columns (§11.2 [CHOICE]) */
  if (t->engine == WD_ENGINE_PARTIAL_UPDATE || t->engine == WD_ENGINE_AGGREGATION)
    for (size_t c = 0; c < nc; c++)
      if (!wd_schema_is_pk(schema, (int)c) && schema->cols[c].type->not_null) {
        err = wd_error_new(WD_ERR_CONFIG, C_NOT_NULL_FIELD,
                           "column '%s' is NOT NULL, but in a %s table every non-key column must be nullable "
                           "(each stream writes only its own columns); drop NOT NULL",
                           schema->cols[c].name,
                           t->engine == WD_ENGINE_PARTIAL_UPDATE ? "partial-update" : "aggregation");
        goto fail;
      }

  if ((err = parse_aggs(t, nopts, opts))) goto fail;

  /* row-deduplicate ignore fields */
  v = opt_get(nopts, opts, "changelog-producer.row-deduplicate-ignore-fields");
  if (v) {
    if (list_split(v, &l)) {
      err = wd_error_nomem();
      goto fail;
    }
    for (size_t i = 0; i < l.n; i++) {
      int c = wd_schema_find(schema, l.items[i]);
      if (c < 0) {
        err = wd_error_new(WD_ERR_CONFIG, C_UNKNOWN_FIELD,
                           "'changelog-producer.row-deduplicate-ignore-fields' names '%s', which can not be found in "
                           "table schema",
                           l.items[i]);
        goto fail;
      }
      t->row_dedup_ignore[c] = true;
    }
    list_free(&l);
  }

  /* ordering columns (D7) */
  t->has_ordering = t->nseq_fields > 0 || t->ngroups > 0;
  for (size_t k = 0; k < schema->npk; k++) t->ordering_col[schema->pk[k]] = true;
  for (size_t k = 0; k < t->nseq_fields; k++) t->ordering_col[t->seq_fields[k]] = true;
  for (size_t c = 0; c < nc; c++)
    if (t->seq_group_of[c] >= 0) t->ordering_col[c] = true;
  /* the same as lists, for the per-record loops */
  t->ordering = malloc((nc ? nc : 1) * sizeof(int));
  t->ungrouped = malloc((nc ? nc : 1) * sizeof(int));
  if (!t->ordering || !t->ungrouped) {
    err = wd_error_nomem();
    goto fail;
  }
  for (size_t c = 0; c < nc; c++) {
    if (t->ordering_col[c]) t->ordering[t->nordering++] = (int)c;
    if (t->group_of[c] < 0 && t->seq_group_of[c] < 0 && !wd_schema_is_pk(schema, (int)c))
      t->ungrouped[t->nungrouped++] = (int)c;
  }

  *out = t;
  return NULL;
fail:
  list_free(&l);
  wd_table_destroy(t);
  return err;
}

wd_error_t *wd_table_check_source_columns(const wd_table_t *t, const bool *mapped, const char *who) {
  const wd_schema_t *s = t->schema;
  for (size_t g = 0; g < t->ngroups; g++) {
    const wd_seq_group_t *gr = &t->groups[g];
    bool seq = false;
    int field = -1;
    for (size_t k = 0; k < gr->nseq; k++) seq |= mapped[gr->seq[k]];
    for (size_t k = 0; k < gr->nfields && field < 0; k++)
      if (mapped[gr->fields[k]]) field = gr->fields[k];
    if (field >= 0 && !seq)
      return wd_error_new(WD_ERR_CONFIG, C_SOURCE_GROUP_NO_SEQUENCE,
                          "%s fills '%s', a field of the sequence group of '%s', but not the group's sequence field: "
                          "its values would always be dropped (a record whose group sequence is NULL skips the group); "
                          "map '%s' in this source too, or remove '%s' from it",
                          who, s->cols[field].name, s->cols[gr->seq[0]].name, s->cols[gr->seq[0]].name,
                          s->cols[field].name);
  }
  return NULL;
}

bool wd_table_is_sequence_column(const wd_table_t *t, int col) {
  if (col < 0 || (size_t)col >= t->schema->ncols) return false;
  for (size_t k = 0; k < t->nseq_fields; k++)
    if (t->seq_fields[k] == col) return true;
  return t->seq_group_of && t->seq_group_of[col] >= 0;
}

bool wd_table_option_doc(size_t i, wd_table_option_doc_t *out) {
  const topt_t *o = NULL;
  if (i < N_TABLE_OPTS) o = &TABLE_OPTS[i];
  else if (i < N_TABLE_OPTS + N_FIELD_OPTS) o = &FIELD_OPTS[i - N_TABLE_OPTS];
  if (!o) return false;
  out->key = o->doc_key ? o->doc_key : o->name;
  out->values = o->values ? o->values : o->kind == TOPT_BOOL ? "true|false" : "";
  out->def = o->def;
  out->applies = o->applies;
  out->description = o->description;
  return true;
}
