/*
 * app/runtime/repart_setup.h — the repartition module's start-up steps, for wd_pipeline_new and
 * the loop (app/runtime/repartition.h has the plan's rules and the forwarding):
 *   wd_repart_setup           the table's partition count and which sources go through a
 *                             repartition topic, said at start; in a live run the repartition
 *                             topics are created;
 *   wd_repart_check_layout    the task layout the state was split by, kept in the state;
 *   wd_repart_topic_index     the index of every topic the pipeline reads;
 *   wd_repart_ensure_topic    an internal topic (repartition, state changelog) made or checked;
 *   wd_repart_check_copartitioning  a warning for an assignment that is not co-partitioned.
 *
 * Everything in wd_repart_env_t is borrowed for the call. Thread: the pipeline's.
 */
#ifndef WD_APP_REPART_SETUP_H
#define WD_APP_REPART_SETUP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "app/config/config.h"
#include "app/runtime/collector.h"
#include "app/runtime/lookups.h"
#include "app/runtime/repartition.h"
#include "app/runtime/topic_index.h"
#include "ingest/consumer.h"
#include "join/store.h"

/* What the steps read (borrowed; a member a step does not use may be NULL). */
typedef struct wd_repart_env {
  const wd_config_t *cfg;
  wd_source_t *const *sources; /* [nsources], as the config's */
  size_t nsources;
  wd_lookups_t *lk; /* which sources are lookups, which have their own key */
  wd_repart_t *rp; /* the plan */
  wd_collector_t *coll; /* partition counts, topics created */
  wd_store_t *store; /* the state's meta (the layout) */
  wd_consumer_t *cons; /* the assignment (co-partitioning) */
  const char *const *gtopics; /* the lookup topics read by the global table (NULL-terminated), or NULL */
  bool per_partition; /* pipeline.tasks: per-partition */
  bool replay; /* a replay: nothing is created, nothing forwarded */
  const volatile sig_atomic_t *start_stop; /* a stop during the start (ends the waits), or NULL */
} wd_repart_env_t;

/* Per-partition tasks: asks each source topic's partition count, plans (wd_repart_plan with
 * pipeline.partitions; a source with its own primary key always repartitioned), checks the lookups'
 * partitions (wd_lookups_check_partitions), logs the plan, and in a live run creates each
 * repartition topic (wd_repart_ensure_topic). Errors: those of the steps named, the collector's. */
wd_error_t *wd_repart_setup(const wd_repart_env_t *e);

/* The task layout the state's rows are split by (meta "tasks/layout"): "single", or
 * "per-partition N; <source> direct|repartitioned; ..." for the main sources. Rows, stored offsets
 * and the state changelog topic are laid out by it: a task of another layout (another N, a source
 * read directly instead of through its repartition topic, or the other way round) holds other
 * keys, and resuming it would keep keys in two tasks. A state without one (new, or made before
 * this check) gets the current one; another one stops the start with C_TASKS_LAYOUT (naming dir
 * and what to do). Other errors: E_STORE_*, E_NOMEM. */
wd_error_t *wd_repart_check_layout(const wd_repart_env_t *e, const char *dir);

/* The topics the group reads into topics[0..*nt) (every source topic; the repartition topic of a
 * source repartitioned or read directly under `auto`) and, when gtopics is not NULL, the lookup
 * sources' topics into gtopics[0..*ngt) (a global table's, not the group's); each group topic added
 * to the plan's task or stateless topics (wd_repart_add_topic). The arrays are the caller's, of at
 * least (source topics + nsources + 1) and (source topics + 1) entries; the names are the
 * sources' and the plan's. 0, or -1 on no memory. */
int wd_repart_group_topics(const wd_repart_env_t *e, const char **topics, size_t *nt, const char **gtopics,
                           size_t *ngt);

/* The index of every topic the pipeline reads (the sources' topics, their repartition topics),
 * once they are known (after wd_repart_setup, with e->gtopics filled): each with its kind, its
 * source and whether the global table reads it. The first source naming a topic wins. NULL on no
 * memory; the caller owns it (wd_topic_index_destroy). */
wd_topic_index_t *wd_repart_topic_index(const wd_repart_env_t *e);

/* Creates internal topic `topic` of the table (wd_repart_partitions partitions, topic configs cfgs
 * as name/value pairs, NULL-terminated, may be NULL) when missing, and waits until the broker's
 * metadata lists it; `what` names it in messages. Errors: C_INTERNAL_TOPIC_PARTITIONS for one
 * that exists with another partition count (what to do); the collector's. */
wd_error_t *wd_repart_ensure_topic(const wd_repart_env_t *e, const char *topic, const char *const *cfgs,
                                   const char *what);

/* Warns (once per process) when e->cons's assignment is not co-partitioned across the task topics
 * (docs/guarantees.md "Scaling out"): every one should have the same partition numbers assigned
 * to this process, or the changes of one key may be merged by two processes into two stores.
 * Partitions 0..63 are checked. */
void wd_repart_check_copartitioning(const wd_repart_env_t *e);

#endif
