/*
 * app/runtime/repartition.h — sources not keyed by the wide key: the internal repartition topics of
 * `pipeline.tasks: per-partition` (design in docs/scale-out.md).
 *
 * The unit of work is a task: partition i of the wide table's key space, i < N (the table's
 * partition count, `pipeline.partitions`, else the largest partition count of the sources that
 * are not forced through a repartition topic). A source whose topics have N partitions and whose
 * records are each in their wide key's partition (wd_repartition_direct_partition: murmur2 of
 * widen's JSON key bytes, checked per record) is *co-partitioned*: its partition i feeds task i
 * directly; under `auto` a record found elsewhere goes through the source's repartition topic to
 * its key's partition (wd_repart_fallback), under `false` it stops the pipeline. Any other
 * source (`sources[].repartition: true`, or `auto` with another partition count) is
 * *repartitioned*: whoever owns one of its partitions decodes its records (stateless: no state is
 * read), groups each record's change records by wide key and produces one repartition record per
 * key to `<group.id>-<table>-<source>-repartition` (N partitions), at partition
 * murmur2(key bytes) mod N (wd_producer_partition_of), in the same commit (under exactly-once the
 * same Kafka transaction) as the output and the source offsets; the owner of task i reads
 * partition i of that topic like a co-partitioned source. Kafka Streams does the same for a
 * re-keyed stream (its `-repartition` topics).
 *
 * A repartition record: key = the wide key bytes (wd_row_key_encode); value (version 1):
 *   "WRP1", varint len + source name, varint len + origin topic, zig-zag origin partition,
 *   zig-zag origin offset, zig-zag origin timestamp (ms, -1 unknown), varint count, then per
 *   change record: varint len + the row in the stored-row encoding (join/row_codec.h, row kind
 *   included), varint number of absent columns, each a varint column index.
 * The origin names the source record in dead letters and traces.
 *
 * The functions wd_repartition_* are pure (no Kafka, no RocksDB). The object wd_repart_t (below)
 * holds a pipeline's repartition state (out of the pipeline's struct): the plan,
 * the task and stateless topics, the keying checks done, and the scratch of forwarding, which it
 * sends through the record collector (app/runtime/collector.h); app/runtime/pipeline.c reads the
 * repartition topics like the sources.
 */
#ifndef WD_REPARTITION_H
#define WD_REPARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/types.h"
#include "ingest/source.h"

struct wd_collector;

/* One source's input to the plan: its configured mode and its topics' partition counts. */
typedef struct wd_repartition_input {
  const char *name; /* the source's name (borrowed) */
  int mode; /* wd_config_repartition_t (app/config/config.h) */
  bool lookup; /* a lookup source: never repartitioned (read whole, join/lookup.h) */
  size_t ntopics;
  const char *const *topics; /* borrowed */
  const int *counts; /* partition count per topic (0: the topic does not exist) */
} wd_repartition_input_t;

/* Decides the table's partition count *partitions and, per source, out[i] = whether it is
 * repartitioned. configured: pipeline.partitions (0: the largest count among the main sources not
 * set to `true`; when every main source is `true`, the largest of theirs). A `false` source whose
 * count differs is refused; so is a source topic that does not exist.
 * *why (may be NULL) gets a malloc'd, caller-owned text of what was decided, one line per source
 * ("source 'payments': topic payments has 3 partitions, the table 6: through repartition topic").
 * Errors (WD_ERR_CONFIG): "C_TASKS_NOT_COPARTITIONED" naming the source, its topic, both counts
 * and what to set; "C_SOURCE_TOPIC_MISSING" naming the topic; E_NOMEM. */
wd_error_t *wd_repartition_plan(const wd_repartition_input_t *in, size_t n, int64_t configured, int32_t *partitions,
                                bool *out, char **why);

/* The repartition topic of a source: "<group>-<table>-<source>-repartition", malloc'd (caller
 * frees), NULL on no memory. */
char *wd_repartition_topic(const char *group, const char *table, const char *source);

/* Appends to out the value of one repartition record carrying rows[0..n) (rows of schema, all of
 * one wide key) of source `source` read from (origin topic, partition, offset, timestamp).
 * scratch: the caller's buffer for one row's bytes (reset here; kept across calls so that
 * encoding allocates nothing once it has grown). 0, or -1 on no memory. */
int wd_repartition_encode(const wd_schema_t *schema, const char *source, const wd_kafka_meta_t *origin,
                          wd_row_t *const *rows, size_t n, wd_buf_t *scratch, wd_buf_t *out);

/* A decoded repartition record. Owner: the caller, released with wd_repartition_rec_free(). */
typedef struct wd_repartition_rec {
  char *source; /* owned */
  char *topic; /* the origin topic, owned */
  int32_t partition;
  int64_t offset, timestamp;
  wd_row_t **rows; /* owned, n of them */
  size_t n;
} wd_repartition_rec_t;

/* Decodes value[0..len) into *rec (zeroed first). Errors: WD_ERR_DECODE "E_REPARTITION_RECORD" for
 * bytes that are not a version-1 repartition record of this schema (truncated, another magic, a
 * column index past the schema); E_NOMEM. On error *rec holds nothing. */
wd_error_t *wd_repartition_decode(const wd_schema_t *schema, const void *value, size_t len, wd_repartition_rec_t *rec);
void wd_repartition_rec_free(const wd_schema_t *schema, wd_repartition_rec_t *rec);

/* Checks that the Kafka key key[0..klen) of a record of a co-partitioned source src is the wide key:
 * when the key is a JSON object (plain, or Debezium's {"schema","payload"}) whose field names are
 * known, at least one of the fields the source maps the primary-key columns from (row-image
 * mappings; `$key.` mappings pass by definition) must be among them. Keys that are not JSON
 * objects (Avro, text, null) are not checked (returns NULL).
 * Returns NULL when the key fits (or cannot be checked), else a malloc'd, caller-owned reason
 * ("its Kafka key has the field(s) payment_id; the primary key comes from its field(s) order_id"). */
char *wd_repartition_key_mismatch(const wd_source_t *src, const wd_schema_t *schema, const void *key, size_t klen);

/* The partition of the table (of `partitions`) that a co-partitioned source record carrying row
 * (of schema) must be in: murmur2 (Kafka's default partitioner, wd_producer_partition_of) of the
 * canonical key bytes, the JSON key widen writes itself (wd_changelog_encode_key_json:
 * {"order_id":7}, the primary-key columns in key order), modulo partitions. A producer that keys
 * records by those bytes with Kafka's default partitioner (Debezium through Kafka Connect's
 * JsonConverter with schemas.enable=false and the same column names) puts every record there;
 * a {"schema","payload"} key, an Avro key or other fields are other bytes, so other partitions.
 * scratch: reset and filled with those key bytes. -1 on no memory. */
int32_t wd_repartition_direct_partition(const wd_schema_t *schema, const wd_row_t *row, int32_t partitions,
                                        wd_buf_t *scratch);

/* ---- a pipeline's repartition state (wd_repart_t) -------------------------------------------
 * Made once per pipeline (single task too: then nothing is repartitioned and every topic is a
 * task's). Owner: the pipeline (wd_repart_destroy). Thread: the pipeline's. */
typedef struct wd_repart wd_repart_t;

/* A new object for nsources sources, nothing repartitioned (partitions 0, not forwarding, no
 * topics). NULL on no memory. */
wd_repart_t *wd_repart_new(size_t nsources);
void wd_repart_destroy(wd_repart_t *rp); /* accepts NULL */

/* Per-partition tasks: decides the table's partition count and which sources are repartitioned
 * (wd_repartition_plan over in[0..nsources), configured = pipeline.partitions; *why as there,
 * may be NULL). forward: a live run (records of repartitioned sources are forwarded; a replay
 * computes each record's task from its key instead, as the repartition topic would place it);
 * then each repartitioned source's topic is named wd_repartition_topic(group, table, its name)
 * (owned here; creating it is the caller's). Errors: those of wd_repartition_plan, E_NOMEM. */
wd_error_t *wd_repart_plan(wd_repart_t *rp, const wd_repartition_input_t *in, int64_t configured, bool forward,
                           const char *group, const char *table, char **why);

/* The table's partition count N (0 before a plan: a single task). These four accept NULL (as an
 * object with no plan). */
int32_t wd_repart_partitions(const wd_repart_t *rp);
/* Whether records of repartitioned sources are forwarded (a live run with a plan). */
bool wd_repart_forwarding(const wd_repart_t *rp);
/* Whether source si goes through a repartition topic (false before a plan, or si out of range). */
bool wd_repart_on(const wd_repart_t *rp, size_t si);
/* Source si's repartition topic (borrowed from rp, valid for its life), NULL when it has none
 * (not repartitioned, a replay, no plan, si out of range). */
const char *wd_repart_topic(const wd_repart_t *rp, size_t si);

/* Adds topic (borrowed, outlives rp) to the topics of the tasks (co-partitioned sources' and
 * repartition topics, stateless false) or to the stateless ones (the topics whose records are
 * only forwarded, stateless true), in the order given. 0, or -1 on no memory (nothing added). */
int wd_repart_add_topic(wd_repart_t *rp, const char *topic, bool stateless);
/* Those lists (borrowed from rp, NULL-terminated, valid until the next wd_repart_add_topic); *n
 * their length. */
const char *const *wd_repart_task_topics(const wd_repart_t *rp, size_t *n);
const char *const *wd_repart_stateless_topics(const wd_repart_t *rp, size_t *n);

/* Checks, once per source, the Kafka key of co-partitioned source si's first record (origin:
 * its topic, partition, offset and key) against the wide key (wd_repartition_key_mismatch).
 * Only while forwarding (a live run with a plan) and for a source without a fallback
 * (`repartition: false`; under `auto` wd_repart_fallback routes the records, and the per-record
 * partition check of the pipeline decides); later records of si are not checked here.
 * Errors: WD_ERR_CONFIG "C_SOURCE_KEYING" naming the source, the record and what to set. */
wd_error_t *wd_repart_check_key(wd_repart_t *rp, size_t si, const wd_source_t *src, const wd_schema_t *schema,
                                const wd_kafka_meta_t *origin);

/* Forwards rows[0..n) (borrowed: the change records decoded from one record of repartitioned
 * source si, named source, read at origin) to si's repartition topic through coll (inside the
 * open commit): one repartition record per wide key, in the order of each key's first change
 * record, at partition murmur2(key) mod N (wd_producer_partition_of), or for a source read directly
 * (wd_repart_fallback) at its key's home (wd_repart_home). *sent grows by the records
 * sent. The scratch is rp's, grown and kept across calls.
 * Errors: those of wd_collector_send (the records before it were sent), E_NOMEM. */
wd_error_t *wd_repart_forward(wd_repart_t *rp, size_t si, const wd_schema_t *schema, const char *source,
                              const wd_kafka_meta_t *origin, wd_row_t *const *rows, size_t n, struct wd_collector *coll,
                              uint64_t *sent);

/* The partition (task) that the change record row of source si belongs to: for a repartitioned
 * source murmur2 of wd_row_key_encode's bytes (where its repartition topic puts it), else
 * wd_repartition_direct_partition. The key bytes hashed stay in rp until the next call
 * (wd_repart_canonical_key). -1 on no memory. */
int32_t wd_repart_home(wd_repart_t *rp, size_t si, const wd_schema_t *schema, const wd_row_t *row);

/* Whether source si is read directly with `repartition: auto` in a live run: its records whose
 * partition is not their key's home (wd_repart_home) are forwarded through its repartition
 * topic (wd_repart_topic, created at start) to the home partition, instead of stopping. */
bool wd_repart_fallback(const wd_repart_t *rp, size_t si);

/* The key bytes the last wd_repart_home hashed (borrowed from rp), *len their length. */
const char *wd_repart_canonical_key(const wd_repart_t *rp, size_t *len);

/* The error for a record of co-partitioned source src read at origin (its key included) whose
 * partition is not want, its key's home (wd_repart_home, just called): WD_ERR_CONFIG
 * "C_SOURCE_KEYING" naming the source, the record, its key, widen's key bytes and both partitions,
 * and the fix (`repartition: auto` or `true`). */
wd_error_t *wd_repart_misplaced_error(const wd_repart_t *rp, const wd_source_t *src, const wd_kafka_meta_t *origin,
                                      int32_t want);

#endif
