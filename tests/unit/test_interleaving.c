/*
 * tests/unit/test_interleaving.c — app/config/interleaving.h: the options that make a table's rows depend
 * on how its streams interleave are named (with their config line); the walkthrough's table
 * (configs/demo.yaml) has none.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/config/interleaving.h"

static const char *BASE = "kafka: {bootstrap.servers: 'k:9092', group.id: g}\n"
                          "table:\n"
                          "  name: t\n"
                          "  schema:\n"
                          "    - {name: id, type: BIGINT NOT NULL}\n"
                          "    - {name: a, type: STRING}\n"
                          "    - {name: av, type: BIGINT}\n"
                          "    - {name: b, type: STRING}\n"
                          "    - {name: bv, type: BIGINT}\n"
                          "  primary-key: [id]\n"
                          "  options:\n"
                          "%s"
                          "sources:\n"
                          "  - name: sa\n    topic: ta\n    columns:\n      id:\n      a:\n      av:\n%s"
                          "  - name: sb\n    topic: tb\n    columns:\n      id:\n      b:\n      bv:\n"
                          "sink: {topic: out}\n"
                          "state: {dir: /tmp/widen-interleave-state}\n";

/* Loads BASE with the options text and the extra columns of source sa; returns the warnings. */
static int warnings_of(const char *options, const char *extra, char ***w) {
  char path[] = "/tmp/widen-interleave-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, BASE, options, extra);
  fclose(f);
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(path, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  int n = wd_interleaving_warnings(cfg, w);
  wd_config_destroy(cfg);
  unlink(path);
  return n;
}

Test(interleaving, one_sequence_group_per_stream_has_no_warning) {
  char **w = NULL;
  int n = warnings_of("    merge-engine: partial-update\n    fields.av.sequence-group: a\n"
                      "    fields.bv.sequence-group: b\n",
                      "", &w);
  cr_assert_eq(n, 0, "%s", n > 0 ? w[0] : "");
  wd_interleaving_free(w);
}

Test(interleaving, remove_record_on_sequence_group_is_named_with_its_line) {
  char **w = NULL;
  int n = warnings_of("    merge-engine: partial-update\n    fields.av.sequence-group: a\n"
                      "    fields.bv.sequence-group: b\n    partial-update.remove-record-on-sequence-group: av\n",
                      "", &w);
  cr_assert_eq(n, 1);
  cr_assert(strstr(w[0], "partial-update.remove-record-on-sequence-group: av couples the streams"), "%s", w[0]);
  cr_assert(strstr(w[0], ":15: "), "line of the option: %s", w[0]);
  /* the note after the warnings says that a replay can give other rows: not repeated in each line */
  cr_assert_null(strstr(w[0], "a replay"), "%s", w[0]);
  wd_interleaving_free(w);
}

Test(interleaving, whole_row_engines_and_shared_columns) {
  char **w = NULL;
  int n = warnings_of("    merge-engine: first-row\n", "", &w);
  cr_assert_eq(n, 1);
  cr_assert(strstr(w[0], "merge-engine first-row with 2 sources"), "%s", w[0]);
  wd_interleaving_free(w);
  /* column b filled by both sources, not in a group: the last to arrive wins */
  n = warnings_of("    merge-engine: partial-update\n    partial-update.remove-record-on-delete: true\n", "      b:\n",
                  &w);
  cr_assert_eq(n, 2);
  cr_assert(strstr(w[0], "partial-update.remove-record-on-delete: true"), "%s", w[0]);
  cr_assert(strstr(w[1], "column 'b' is filled by sources 'sa' and 'sb' without a sequence group"), "%s", w[1]);
  wd_interleaving_free(w);
  n = warnings_of("    merge-engine: aggregation\n    fields.b.aggregate-function: listagg\n"
                  "    fields.a.aggregate-function: max\n",
                  "      b:\n", &w);
  cr_assert_eq(n, 1);
  cr_assert(strstr(w[0], "order-sensitive aggregate function listagg"), "%s", w[0]);
  wd_interleaving_free(w);
}

Test(interleaving, the_walkthrough_table_does_not_depend_on_interleaving) {
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(WD_SOURCE_DIR "/configs/demo.yaml", &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  char **w = NULL;
  int n = wd_interleaving_warnings(cfg, &w);
  cr_assert_eq(n, 0, "configs/demo.yaml: %s", n > 0 ? w[0] : "");
  wd_interleaving_free(w);
  wd_config_destroy(cfg);
}
