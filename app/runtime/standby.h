/*
 * app/runtime/standby.h — standby replicas (`pipeline.num-standby-replicas`, Kafka Streams'
 * num.standby.replicas, docs/scale-out.md): a process keeps warm copies of the tasks it
 * does not own by tailing their partitions of the state changelog topic, so that a task that
 * moves to it is caught up from where its copy stands instead of restored from the beginning.
 *
 * Placement: librdkafka has no pluggable assignor and gives a member no view of the others'
 * assignments, so with num-standby-replicas >= 1 every process keeps a copy of every task it does
 * not own (N - 1 copies of each task with N processes; each process then holds the whole table).
 *
 * How a copy stays right: the copy of task t lives in t's own key range of the store (the range
 * of a task this process does not own is written by nobody else). One consumer in assign mode,
 * read_committed, reads every partition of the changelog topic; a record of a task not owned
 * here is applied (the stored entry put, or a tombstone deleted) and the partition's next offset
 * is written with it (meta "standby/<t>", one store write per poll); records of owned tasks are
 * skipped (they are this process's own writes). Invariant: the rows of a task not owned here are
 * the changelog partition's records [0, position) applied over rows that are themselves a prefix
 * of it, so reading on from position gives the committed state; re-applying records this process
 * wrote itself (while it owned the task) is harmless, since each record is a whole entry.
 * When the task is assigned here and its local offsets do not match the group's, the commit
 * coordinator reads the partition from wd_standby_position() to its end instead of from the
 * beginning (app/runtime/commit.c).
 *
 * Ownership: the standby borrows the store and the state (they outlive it); it owns its consumer.
 * Thread: the pipeline's.
 */
#ifndef WD_STANDBY_H
#define WD_STANDBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/runtime/tasks.h"
#include "common/error.h"
#include "common/kafka_conf.h"
#include "join/state.h"
#include "join/store.h"

typedef struct wd_standby wd_standby_t;

/* Creates the standby of changelog topic `topic` (copied) with `tasks` partitions, its consumer
 * built from conf (brokers and client properties, no group; borrowed). Every task starts as not
 * owned, at the position stored in meta, else at the beginning. *out owned by the caller
 * (wd_standby_destroy). Errors: those of wd_consumer_new (E_KAFKA_METADATA,
 * E_KAFKA_UNKNOWN_TOPIC when the changelog topic does not exist), E_STORE_*, E_NOMEM. */
wd_error_t *wd_standby_new(const wd_kafka_conf_t *conf, const char *topic, uint32_t tasks, wd_store_t *store,
                           wd_state_t *state, const char *const *task_topics, size_t ntask_topics, wd_standby_t **out);
/* Start-up: with replicas > 0 (pipeline.num-standby-replicas) the standby of changelog topic
 * `topic` as wd_standby_new, logged; else *out NULL. Errors: wd_standby_new's. */
wd_error_t *wd_standby_open(const wd_kafka_conf_t *conf, const char *topic, int64_t replicas, uint32_t tasks,
                            wd_store_t *store, wd_state_t *state, const char *const *task_topics, size_t ntask_topics,
                            wd_standby_t **out);
void wd_standby_destroy(wd_standby_t *sb); /* accepts NULL */

/* The task table (borrowed; valid whenever wd_standby_poll is called) that says which tasks this
 * process owns (wd_tasks_active: their records are skipped, they are its own writes); the commit
 * coordinator sets it (wd_commit_new). Without it no task counts as owned. */
void wd_standby_set_tasks(wd_standby_t *sb, const wd_tasks_t *tasks);

/* Called once the group's assignment is known (its tasks are active in the task table): the
 * copies are kept from then on. Before it wd_standby_poll applies nothing: at a start, the local
 * rows of the tasks this process owned before it stopped are its own, newer than any standby
 * position, and must not be overwritten with a prefix of the changelog before the group says
 * whether they come back (a task given back with its offsets equal to the group's is used as it
 * is, without a catch-up). */
void wd_standby_set_ready(wd_standby_t *sb);

/* The next changelog offset of task t's local copy (its rows are the partition's records before
 * it), or -1 when there is no copy. */
int64_t wd_standby_position(const wd_standby_t *sb, uint32_t t);

/* Forgets the copy of task t (its rows are gone from the store: a rebuild cut short, app/runtime/rebuild.h):
 * its position is dropped (in memory and in the store) and its changelog partition is read again
 * from the beginning, so that the copy is whole again before a restore starts from it. Accepts a
 * NULL sb. Errors: "E_KAFKA" (the seek), E_STORE_WRITE, E_NOMEM. */
wd_error_t *wd_standby_forget(wd_standby_t *sb, uint32_t t);

/* Applies what the consumer has fetched (up to max records, without waiting) to the copies of
 * the tasks not owned here, in one store write. The first time nothing is left to read it logs
 * (INFO, once) "standby copies are up to date with <topic>". *applied (may be NULL) gets the number applied.
 * Errors: E_STORE_WRITE, the consumer's fatal errors, E_NOMEM. */
wd_error_t *wd_standby_poll(wd_standby_t *sb, size_t max, size_t *applied);

/* Changelog records applied to copies so far. */
uint64_t wd_standby_applied(const wd_standby_t *sb);

#endif
