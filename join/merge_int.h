/*
 * join/merge_int.h — internals of the merge engine shared by merge_spec.c (validation) and
 * merge.c (the engines). Not for use outside join/.
 */
#ifndef WD_MERGE_INT_H
#define WD_MERGE_INT_H

#include "join/merge.h"

/* A sequence group (spec §7.2): sequence fields protect fields. wd_table_t.groups is in a
 * canonical order that does not depend on how the options were written: by the schema position
 * of the first sequence field; fields are in schema order, each once; a column belongs to one
 * group at most (as a sequence field or as a protected field). */
typedef struct wd_seq_group {
  int *seq; /* column indexes of the sequence fields, compared left to right */
  size_t nseq;
  int *fields; /* protected columns, ascending */
  size_t nfields;
  bool remove_on_delete; /* one of seq is listed in partial-update.remove-record-on-sequence-group */
} wd_seq_group_t;

struct wd_table {
  wd_schema_t *schema;
  wd_merge_engine_t engine;
  int *seq_fields; /* sequence.field columns */
  size_t nseq_fields;
  bool seq_descending;
  bool ignore_delete;
  bool ignore_update_before;
  bool pu_remove_on_delete;
  bool agg_remove_on_delete;
  bool row_dedup;
  bool *row_dedup_ignore; /* per column */
  wd_seq_group_t *groups;
  size_t ngroups;
  int *group_of; /* per column: index of the group protecting it, or -1 */
  int *seq_group_of; /* per column: index of the group whose sequence field it is, or -1 */
  bool *ordering_col; /* per column: key, sequence.field or group sequence field (D7) */
  int *ordering; /* the columns with ordering_col, ascending (nordering of them) */
  size_t nordering;
  int *ungrouped; /* the columns outside the key and every sequence group, ascending */
  size_t nungrouped;
  wd_agg_spec_t *agg; /* per column; fn NONE = no function applies */
  bool has_ordering;
};

#endif
