/*
 * app/config/config.h — the pipeline config file: YAML (libyaml) loaded into plain C structs.
 *
 * This module owns the file format of `widen run CONFIG.yaml`: its sections (kafka, table,
 * sources, sink, state, pipeline), the option table that describes every key (name, type, offset,
 * default, range, description; see wd_config_root()), the checks that run at load (unknown keys,
 * missing required keys, wrong types, bad durations and ranges, references between sections),
 * and the generated option reference configs/OPTIONS.md (wd_config_write_doc()).
 * It does not interpret Kafka properties, Paimon table options or column mappings: those are kept
 * as ordered string pairs for librdkafka, join/ (through app/config/table_config.h) and ingest/.
 *
 * Errors: every problem in the file is a WD_ERR_CONFIG error with id "C_CONFIG" whose message is
 * "C_CONFIG: <file>:<line>: <what is wrong>; <what to change>" (lines count from 1; YAML syntax
 * errors also give the column as <file>:<line>:<col>). Errors found later by the table or source
 * builders keep their own id and get the file and line of the offending entry after the id:
 * "C_SEQ_GROUP_UNKNOWN_FIELD: <file>:<line>: option '...': ...".
 *
 * Environment: WIDEN_BROKERS, when set and not empty, replaces kafka.bootstrap.servers (which may
 * then be left out of the file).
 *
 * Ownership: a wd_config_t owns every string it holds; everything the accessors return is borrowed
 * from it and valid until wd_config_destroy(). A loaded config is read-only, so any thread may
 * read it.
 */
#ifndef WD_CONFIG_H
#define WD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "ingest/source.h"
#include "join/merge.h"

/* ---- the loaded config ---------------------------------------------------------------------- */

/* A list of strings (a YAML list, or one scalar taken as a one-element list). */
typedef struct wd_config_strings {
  size_t n;
  char **v; /* v[0..n), owned */
  int *lines; /* line of each element */
  int line; /* line of the list (0 when the key was absent) */
} wd_config_strings_t;

/* One key/value pair of a string mapping, in file order. */
typedef struct wd_config_pair {
  char *key; /* owned */
  char *value; /* owned; numbers and booleans as their text, a list of scalars joined by "," */
  int line;
} wd_config_pair_t;

/* An ordered string mapping (Kafka properties, table options, column mappings, source options). */
typedef struct wd_config_pairs {
  size_t n;
  wd_config_pair_t *v; /* owned */
  int line; /* line of the mapping (0 when the key was absent) */
} wd_config_pairs_t;

/* The wide table's columns as parallel arrays (the shape wd_table_config_build takes). */
typedef struct wd_config_schema {
  size_t n;
  char **names; /* owned */
  char **types; /* owned, type text as written ("DECIMAL(12,2)") */
  int *lines; /* line of each column entry */
  int line;
} wd_config_schema_t;

typedef struct wd_config_kafka {
  char *bootstrap_servers; /* required (or WIDEN_BROKERS) */
  char *group_id; /* required */
  wd_config_pairs_t properties; /* extra librdkafka properties for the consumer and producer */
  int static_membership; /* 0/1 (default 1): group.instance.id from the state directory's instance id */
  int line;
} wd_config_kafka_t;

typedef struct wd_config_table {
  char *name;
  wd_config_schema_t schema;
  wd_config_strings_t primary_key;
  wd_config_pairs_t options; /* Paimon table options, in file order */
  int line;
} wd_config_table_t;

/* sources[].repartition: whether a source goes through an internal repartition topic keyed by
 * the wide key (pipeline.tasks per-partition; app/runtime/repartition.h). */
typedef enum wd_config_repartition {
  WD_CONFIG_REPARTITION_AUTO = 0, /* "auto": when its partition count differs from the table's */
  WD_CONFIG_REPARTITION_TRUE, /* "true": always (its Kafka key is not the wide key) */
  WD_CONFIG_REPARTITION_FALSE /* "false": never (refused when the partition count differs) */
} wd_config_repartition_t;

typedef struct wd_config_source {
  char *name;
  wd_config_strings_t topics;
  wd_source_format_t format;
  wd_config_pairs_t columns; /* (wide column, mapping spec) in file order */
  wd_config_pairs_t options; /* source options (wd_source_options[]) */
  int lookup; /* 0/1: a lookup (dimension) source with its own key (join/lookup.h) */
  wd_config_strings_t key; /* lookup: mapping specs of its key fields, parallel to `on` */
  wd_config_strings_t on; /* lookup: the wide columns its key is joined on */
  int required; /* 0/1: INNER (rows are visible only while this source contributes) */
  char *sequence; /* lookup: mapping spec of its sequence field (BIGINT), or NULL */
  int repartition; /* wd_config_repartition_t (per-partition tasks: app/runtime/repartition.h) */
  wd_config_strings_t primary_key; /* a main source's own primary key: mapping specs of its key fields
                                      (join/srckey.h, docs/source-keys.md); empty: keyed by the wide key */
  int line;
} wd_config_source_t;

typedef struct wd_config_sources {
  size_t n;
  wd_config_source_t *v; /* owned */
  int line;
} wd_config_sources_t;

typedef enum wd_config_sink_format {
  WD_CONFIG_SINK_DEBEZIUM_JSON = 0, /* "debezium-json" */
  WD_CONFIG_SINK_CHANGELOG_JSON, /* "changelog-json" */
  WD_CONFIG_SINK_AVRO /* "avro": Confluent wire format through the schema registry
                                       (changelog/avro.h) */
} wd_config_sink_format_t;

typedef enum wd_config_key_format {
  WD_CONFIG_KEY_JSON = 0, /* "json": a Debezium-style key object {"col": value, ...} */
  WD_CONFIG_KEY_STRING, /* "string": the key values as text */
  WD_CONFIG_KEY_AVRO /* "avro": an Avro record of the key columns, registered as <topic>-key */
} wd_config_key_format_t;

typedef struct wd_config_sink {
  char *topic;
  wd_config_sink_format_t format;
  wd_config_key_format_t key_format;
  int schemas_enable; /* 1: keys and values in Kafka Connect JsonConverter's envelope */
  char *dead_letter_topic; /* never NULL after load: default "<topic>.dlq" */
  wd_config_pairs_t properties; /* extra librdkafka producer properties */
  int line;
} wd_config_sink_t;

/* The schema registry (debezium-avro sources, the avro sink, Avro keys). */
typedef struct wd_config_registry {
  char *url; /* NULL: no registry configured */
  char *username; /* basic auth; NULL for none */
  char *password;
  int64_t timeout_ms; /* per request */
  int line;
} wd_config_registry_t;

/* What a start with a changed table definition does (app/ops/fingerprint.h). */
typedef enum wd_config_on_incompatible {
  WD_CONFIG_INCOMPATIBLE_FAIL = 0, /* "fail": refuse to start, naming what changed */
  WD_CONFIG_INCOMPATIBLE_REBUILD /* "rebuild": rebuild the table from the sources, emit the difference */
} wd_config_on_incompatible_t;

/* What a start does when the state directory is corrupt (app/ops/state_dir.h). */
typedef enum wd_config_on_corruption {
  WD_CONFIG_CORRUPTION_FAIL = 0, /* "fail": refuse to start with E_STATE_CORRUPT naming the file */
  WD_CONFIG_CORRUPTION_REBUILD /* "rebuild": move the directory aside, rebuild as a lost directory */
} wd_config_on_corruption_t;

typedef struct wd_config_state {
  char *dir;
  int64_t tombstone_retention_ms; /* -1: keep ordering tombstones forever */
  int64_t cache_entries;
  int64_t cache_memory_mb;
  char *changelog_topic; /* NULL: <group.id>-<table>-changelog (pipeline.tasks per-partition) */
  int64_t history_size; /* commit history records kept at most (app/ops/history.h); 0: no count limit */
  int64_t history_retention_ms; /* commit history records older than this are dropped; 0: no age limit */
  int64_t history_max_bytes; /* the history's records together at most this many bytes; 0: no size limit */
  wd_config_on_incompatible_t on_incompatible_change;
  int64_t min_free_bytes; /* stop before the state's filesystem has less free (0: never) */
  wd_config_on_corruption_t on_corruption;
  int64_t flush_interval_ms; /* the deferred state flush: committed rows kept at most this long (0: each commit) */
  int64_t flush_max_bytes; /* ... and at most this many bytes before they are written */
  int line;
} wd_config_state_t;

/* pipeline.processing-guarantee (docs/exactly-once.md). */
typedef enum wd_config_guarantee {
  WD_CONFIG_EXACTLY_ONCE = 0, /* "exactly-once": Kafka transactions + prepared/finalized state */
  WD_CONFIG_AT_LEAST_ONCE /* "at-least-once": acknowledged output, then the state */
} wd_config_guarantee_t;

/* pipeline.tasks: how the state is split into tasks (app/runtime/commit.h). */
typedef enum wd_config_tasks {
  WD_CONFIG_TASKS_SINGLE = 0, /* "single": one task for every partition (any keying of sources) */
  WD_CONFIG_TASKS_PER_PARTITION /* "per-partition": partition i of every source is task i */
} wd_config_tasks_t;
/* Monitoring (app/ops/metrics.h). */
typedef struct wd_config_metrics {
  char *listen; /* "host:port" of the Prometheus endpoint; NULL: off */
  int line;
} wd_config_metrics_t;

typedef struct wd_config_pipeline {
  int64_t batch_size;
  int64_t batch_timeout_ms;
  int64_t status_interval_s; /* 0: no periodic status line */
  int processing_guarantee; /* wd_config_guarantee_t */
  int64_t commit_interval_ms;
  int64_t commit_interval_min_ms; /* the adaptive interval's floor (app/runtime/commit_pace.h) */
  int64_t commit_max_records;
  int tasks; /* wd_config_tasks_t */
  int64_t partitions; /* per-partition tasks: the table's partition count (0: from the sources) */
  int64_t
      num_standby_replicas; /* per-partition tasks: > 0 keeps warm copies of the other tasks (app/runtime/standby.h) */
  int line;
} wd_config_pipeline_t;

typedef struct wd_config {
  char *path; /* the file as given to wd_config_load, for messages */
  wd_config_kafka_t kafka;
  wd_config_table_t table;
  wd_config_sources_t sources;
  wd_config_sink_t sink;
  wd_config_registry_t schema_registry;
  wd_config_state_t state;
  wd_config_pipeline_t pipeline;
  wd_config_metrics_t metrics;
  bool brokers_from_env; /* kafka.bootstrap.servers came from WIDEN_BROKERS */
  char *brokers_in_file; /* the file's kafka.bootstrap.servers that WIDEN_BROKERS replaced (owned), or NULL */
  int line;
  /* private */
  wd_option_t *table_opts; /* borrows from table.options */
} wd_config_t;

/* ---- loading ------------------------------------------------------------------------------- */

/* Reads and checks the YAML config file at path (borrowed). On success *out is a new config owned
 * by the caller (wd_config_destroy); on error *out is NULL. Thread: any.
 * Errors: WD_ERR_CONFIG "C_CONFIG" as described at the top (also for a file that cannot be read);
 * E_NOMEM. Table options, column types and mappings are not interpreted here: see
 * wd_config_build_table and wd_config_build_source. */
wd_error_t *wd_config_load(const char *path, wd_config_t **out);

/* Releases cfg and everything it owns; accepts NULL. */
void wd_config_destroy(wd_config_t *cfg);

/* ---- accessors ------------------------------------------------------------------------------ */

/* A Kafka error (class WD_ERR_KAFKA: a TLS handshake, an unreachable broker) of a pipeline whose
 * brokers came from WIDEN_BROKERS gets where they came from appended: "(the brokers B came from the
 * environment variable WIDEN_BROKERS, not from FILE's kafka.bootstrap.servers 'F')". Takes err and
 * returns the error to report (err itself when nothing is added, or on no memory); cfg may be NULL. */
wd_error_t *wd_config_brokers_origin(const wd_config_t *cfg, wd_error_t *err);

/* The table options as (key, value) pairs in file order, borrowed from cfg; *n gets their number.
 * The pointer is non-NULL even when *n is 0. */
const wd_option_t *wd_config_table_options(const wd_config_t *cfg, size_t *n);

/* The table's column names and type strings (parallel arrays of *n entries, borrowed). */
const char *const *wd_config_column_names(const wd_config_t *cfg, size_t *n);
const char *const *wd_config_column_types(const wd_config_t *cfg, size_t *n);

/* The primary-key column names (*n entries, borrowed). */
const char *const *wd_config_primary_key(const wd_config_t *cfg, size_t *n);

/* The value of `key` in pairs, or NULL when absent (borrowed). */
const char *wd_config_pairs_get(const wd_config_pairs_t *pairs, const char *key);

/* ---- building the stages' objects ------------------------------------------------------------- */

/* Builds the wide table (schema, primary key, Paimon options) through wd_table_config_build, so
 * table errors surface at start. On success *out is a new table owned by the caller.
 * Errors: every C_... id of wd_schema_new / wd_table_new, with "<file>:<line>: " inserted after the
 * id: the line of the option, column or primary key the error names, else of table.options. */
wd_error_t *wd_config_build_table(const wd_config_t *cfg, wd_table_t **out);

/* Builds source i (< cfg->sources.n) against the table's schema (borrowed; the one of the table
 * built by wd_config_build_table; for a lookup source the lookup schema of join/lookup.h, whose
 * key columns are named like its `on` columns and filled from its `key` specs, and whose `_seq`
 * column is filled from `sequence`; for a source with its own `primary-key` the source schema of
 * join/srckey.h, whose key columns are named by wd_config_source_key_name and filled from its
 * `primary-key` specs): its topics, format, column mapping and options, then wd_source_check. On success *out is a new source owned by the caller.
 * Errors: the C_... ids of ingest/source.h with "<file>:<line>: " after the id (the line of the
 * failing mapping or option, else of the source). */
/* The name of key column k of a source with its own `primary-key` in its source schema
 * (join/srckey.h): "primary-key.<spec>", into buf[0..n) (truncated, terminated). */
void wd_config_source_key_name(const wd_config_source_t *cs, size_t k, char *buf, size_t n);

wd_error_t *wd_config_build_source(const wd_config_t *cfg, size_t i, const wd_schema_t *schema, wd_source_t **out);

/* ---- the option table --------------------------------------------------------------------- */

typedef enum wd_config_type {
  WD_CONFIG_STRING = 0, /* char * */
  WD_CONFIG_INT, /* int64_t in [min, max] */
  WD_CONFIG_DURATION, /* int64_t milliseconds in [min, max]: "500ms", "30s", "5m", "12h", "7d" or
                             an integer of ms */
  WD_CONFIG_ENUM, /* an int-sized enum: the index of the value in `values` ("a|b") */
  WD_CONFIG_STRINGS, /* wd_config_strings_t */
  WD_CONFIG_PAIRS, /* wd_config_pairs_t */
  WD_CONFIG_SCHEMA, /* wd_config_schema_t: a list of {name, type} */
  WD_CONFIG_SECTION, /* a mapping described by `sub` (the struct at offset) */
  WD_CONFIG_SECTION_LIST /* a list of mappings described by `sub`: {size_t n; T *v; int line} */
} wd_config_type_t;

#define WD_CONFIG_REQUIRED 0x1u /* the key must be present (with a value) */
#define WD_CONFIG_ALIAS 0x2u /* another name for the option before it with the same offset */
#define WD_CONFIG_NULL_IS_KEY                                                                                          \
  0x4u /* PAIRS: `key:` with no value, or a list item `key`, maps the key
                                      to itself */
#define WD_CONFIG_NONEMPTY 0x8u /* lists and mappings: at least one entry */

typedef struct wd_config_section wd_config_section_t;

/* One row of the option table. */
typedef struct wd_config_option {
  const char *name; /* the YAML key inside its section */
  wd_config_type_t type;
  size_t offset; /* offsetof the field in the section's struct */
  const char *def; /* default as YAML text, NULL: none (strings NULL, lists empty) */
  const char *def_doc; /* the default as the docs show it when it is not def ("<topic>.dlq") */
  int64_t min, max; /* INT, DURATION */
  const char *values; /* ENUM: the accepted values, "a|b|c", in enum order */
  unsigned flags; /* WD_CONFIG_* */
  const wd_config_section_t *sub; /* SECTION, SECTION_LIST */
  const char *description;
} wd_config_option_t;

/* A mapping of the file and the struct it fills. */
struct wd_config_section {
  const char *name; /* "kafka", "sources[]"; "" for the root */
  const wd_config_option_t *options; /* ends with a row whose name is NULL */
  size_t size; /* sizeof the struct */
  size_t line_offset; /* offsetof its `int line` */
  const char *description;
};

/* The root of the option table (the whole file). Static storage. */
const wd_config_section_t *wd_config_root(void);

/* Writes the option reference (the text of configs/OPTIONS.md, Markdown) to f, generated from the
 * option table and ingest's wd_source_options[]. Returns 0, or -1 on a write error. */
int wd_config_write_doc(FILE *f);

/* Parses a duration ("500ms", "30s", "5m", "12h", "7d", or an integer of milliseconds) into *ms.
 * Returns 0, or -1 when text is not one (or overflows int64_t). */
int wd_config_parse_duration(const char *text, int64_t *ms);

#endif
