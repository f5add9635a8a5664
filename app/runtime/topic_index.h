/*
 * app/runtime/topic_index.h — the pipeline's topic index (out of
 * the pipeline's struct): what each topic the pipeline reads is to it, found in O(1) per record,
 * and the partitions of the batch in hand, gathered once per partition and batch for the commit
 * coordinator, the global table and the history record.
 *
 * The index is built once the topics are known (the classification depends on the configuration
 * and the repartition plan only, not on the assignment): open addressing on the name's FNV-1a
 * hash, 2^k slots for at least twice the entries. Within a batch, the topic name pointers of its
 * messages already looked up are remembered (a message's topic name pointer is librdkafka's topic
 * object's, alive while the batch holds the message: within a batch, the same pointer is the same
 * topic); wd_topic_index_batch_begin forgets them.
 *
 * Ownership: the index owns its entries and slots; names are borrowed (the pipeline's copies,
 * which outlive it). Thread: the pipeline's.
 */
#ifndef WD_TOPIC_INDEX_H
#define WD_TOPIC_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a topic is to the pipeline. */
typedef enum {
  WD_TOPIC_NONE = 0, /* not read by the pipeline */
  WD_TOPIC_DIRECT, /* a co-partitioned source's (or a single task's) topic */
  WD_TOPIC_RAW, /* a repartitioned source's own topic (its records are forwarded) */
  WD_TOPIC_REPARTITION /* a repartition topic (app/runtime/repartition.h) */
} wd_topic_kind_t;

/* One entry of the index. */
typedef struct wd_topic_ent {
  const char *name; /* borrowed: the pipeline's own copy (the source's, or its repartition topic) */
  wd_topic_kind_t kind;
  int si; /* its source's index */
  bool global; /* a lookup topic read by the global table (app/runtime/global_table.h), not the group */
} wd_topic_ent_t;

/* The batch's records of one (topic, partition). */
typedef struct wd_batch_tp {
  const wd_topic_ent_t *te;
  int32_t partition;
  int64_t min, max, last; /* the smallest and largest offsets taken, the last in delivery order */
  uint64_t count;
} wd_batch_tp_t;

typedef struct wd_topic_index wd_topic_index_t;

/* An index of ents[0..n) (copied; names borrowed). Of entries with the same name the first is
 * kept. NULL on no memory. */
wd_topic_index_t *wd_topic_index_new(const wd_topic_ent_t *ents, size_t n);
void wd_topic_index_destroy(wd_topic_index_t *ix); /* accepts NULL */

/* Entries kept (distinct names). */
size_t wd_topic_index_size(const wd_topic_index_t *ix);

/* A new batch: the topic pointers seen and the batch's partitions are forgotten. */
void wd_topic_index_batch_begin(wd_topic_index_t *ix);

/* The entry of topic (borrowed from ix, valid for its life), or NULL when the pipeline does not
 * read it. Within one batch each distinct topic pointer is hashed once. */
const wd_topic_ent_t *wd_topic_index_find(wd_topic_index_t *ix, const char *topic);

/* Notes a record of the batch at (te, partition, offset) taken: its partition's entry is added
 * when new (count, min, max, last kept). 0, or -1 on no memory (nothing noted). */
int wd_topic_index_take(wd_topic_index_t *ix, const wd_topic_ent_t *te, int32_t partition, int64_t offset);

/* The batch's partitions (borrowed from ix, valid until the next take or batch_begin), in the
 * order of their first record; *n how many. */
const wd_batch_tp_t *wd_topic_index_batch(const wd_topic_index_t *ix, size_t *n);

#endif
