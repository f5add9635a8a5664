/*
 * app/config/config.c — the pipeline config file (see config.h): the option table, the libyaml document
 * walk that fills the structs from it, the checks between sections, the builders of the table and
 * sources, and the generated option reference.
 */
#include "app/config/config.h"
#include "common/kafka_conf.h"
#include "app/config/interleaving.h"
#include "common/log.h"
#include "common/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "app/config/table_config.h"
#include "ingest/consumer.h"
#include "ingest/format.h"
#include "join/table_options.h"

/* ---- the option table ------------------------------------------------------------------------- */

#define END_OPT                                                                                                        \
  { NULL, 0, 0, NULL, NULL, 0, 0, NULL, 0, NULL, NULL }

static const wd_config_option_t KAFKA_OPTS[] = {
    {"bootstrap.servers", WD_CONFIG_STRING, offsetof(wd_config_kafka_t, bootstrap_servers), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED, NULL,
     "Kafka brokers as host:port[,host:port...]. The environment variable WIDEN_BROKERS, when set and not empty, "
     "replaces this value (the key may then be left out)."},
    {"group.id", WD_CONFIG_STRING, offsetof(wd_config_kafka_t, group_id), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED,
     NULL,
     "Consumer group of the pipeline: processes with the same group.id share the source partitions and their "
     "state."},
    {"properties", WD_CONFIG_PAIRS, offsetof(wd_config_kafka_t, properties), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Extra librdkafka properties (client.id, security.protocol, sasl.*, ...) passed as they are to the consumer "
     "and the producer. Values are strings; numbers and booleans are taken as their text."},
    {"static-membership", WD_CONFIG_ENUM, offsetof(wd_config_kafka_t, static_membership), "true", NULL, 0, 0,
     "false|true", 0, NULL,
     "Static group membership (KIP-345): the consumer's group.instance.id is the instance id generated once and kept "
     "in state.dir (the one the transactional.id is made of), unless kafka.properties sets group.instance.id. A "
     "process restarted within session.timeout.ms takes its partitions back without a rebalance of the other "
     "members; a stopped one (SIGTERM too: static members do not leave the group) holds its partitions until "
     "session.timeout.ms expires. false: dynamic membership (a SIGTERM leaves the group at once; a restart "
     "rebalances the whole group)."},
    END_OPT,
};

static const wd_config_option_t TABLE_OPTS[] = {
    {"name", WD_CONFIG_STRING, offsetof(wd_config_table_t, name), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, NULL,
     "Name of the wide table (used in logs, the changelog's source block and the state store)."},
    {"schema", WD_CONFIG_SCHEMA, offsetof(wd_config_table_t, schema), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED | WD_CONFIG_NONEMPTY, NULL,
     "The wide table's columns in order, one `{name: ..., type: ...}` entry each. Types are Paimon/Flink SQL "
     "names (`BIGINT`, `DECIMAL(12,2)`, `STRING`, `TIMESTAMP(3)`, `ARRAY<INT>`, ... optionally `NOT NULL`). "
     "Quote a type that contains a comma inside `{...}`: `type: \"DECIMAL(12,2)\"`."},
    {"primary-key", WD_CONFIG_STRINGS, offsetof(wd_config_table_t, primary_key), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED | WD_CONFIG_NONEMPTY, NULL, "Primary-key column names (a list, or one name)."},
    {"options", WD_CONFIG_PAIRS, offsetof(wd_config_table_t, options), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Paimon table options (`merge-engine`, `sequence.field`, `fields.<f>.sequence-group`, "
     "`fields.<f>.aggregate-function`, ...; see \"Table options\" below). Values are strings; numbers and booleans "
     "are taken as their text and a list of names is joined with commas."},
    END_OPT,
};

static const wd_config_option_t SOURCE_OPTS[] = {
    {"name", WD_CONFIG_STRING, offsetof(wd_config_source_t, name), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, NULL,
     "Name of the source, unique in the file (used in logs, errors and metrics)."},
    {"topics", WD_CONFIG_STRINGS, offsetof(wd_config_source_t, topics), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED | WD_CONFIG_NONEMPTY, NULL, "Kafka topics read by this source. A topic belongs to one source."},
    {"topic", WD_CONFIG_STRINGS, offsetof(wd_config_source_t, topics), NULL, NULL, 0, 0, NULL, WD_CONFIG_ALIAS, NULL,
     "Another spelling of `topics` for a single topic (set one of the two)."},
    {"format", WD_CONFIG_ENUM, offsetof(wd_config_source_t, format), "debezium-json", NULL, 0, 0,
     "debezium-json|debezium-avro|canal-json|maxwell-json|ogg-json|changelog-json|upsert-json", 0, NULL,
     "Format of the record values (ingest/format.h): Debezium JSON (JsonConverter, with or without schemas; also "
     "widen's debezium-json output), Debezium Avro (AvroConverter) in the Confluent wire format with writer schemas "
     "from `schema-registry`, Alibaba Canal flat messages, Maxwell JSON, Oracle GoldenGate JSON, widen's "
     "changelog-json output (to chain pipelines), or an upsert topic (upsert-json: the value is the row as a JSON "
     "object, a null value deletes the Kafka key's row; needs `primary-key`)."},
    {"columns", WD_CONFIG_PAIRS, offsetof(wd_config_source_t, columns), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED | WD_CONFIG_NONEMPTY | WD_CONFIG_NULL_IS_KEY, NULL,
     "The wide columns this source writes, `column: path`: a field of the row image (`weight`, `address.city`), "
     "`$.source.ts_ms` (a payload path), `$key.id` (a Kafka key path) or `$kafka.offset` (record metadata). "
     "`column:` with no path, or a list `[a, b]`, reads the field of the same name. Every primary-key column must "
     "be mapped."},
    {"options", WD_CONFIG_PAIRS, offsetof(wd_config_source_t, options), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Source options (see \"Source options\" below)."},
    {"lookup", WD_CONFIG_ENUM, offsetof(wd_config_source_t, lookup), "false", NULL, 0, 0, "false|true", 0, NULL,
     "A lookup (dimension) source: its rows are kept by its own `key` and joined to the wide rows whose `on` "
     "columns equal it; its `columns` always hold the current lookup row's values, or NULL when there is none. "
     "One process per table for now (docs/lookups.md)."},
    {"key", WD_CONFIG_STRINGS, offsetof(wd_config_source_t, key), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Lookup only: where the lookup's primary key comes from, one mapping path per `on` column (`id`, `$key.id`)."},
    {"on", WD_CONFIG_STRINGS, offsetof(wd_config_source_t, on), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Lookup only: the wide columns the lookup's key is joined on (`payment_id`); filled by a main source, or by "
     "another lookup for a chain."},
    {"required", WD_CONFIG_ENUM, offsetof(wd_config_source_t, required), "false", NULL, 0, 0, "false|true", 0, NULL,
     "INNER join: a wide row is visible (emitted, listed by `widen rows`) only while this source contributes to "
     "it (+I when the last required side arrives, -D when one goes). `false`: LEFT."},
    {"sequence", WD_CONFIG_STRING, offsetof(wd_config_source_t, sequence), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Lookup only: mapping path of an integer field ordering its versions (`$.source.lsn`, `$.source.ts_ms`); "
     "without it the latest arrival wins."},
    {"repartition", WD_CONFIG_ENUM, offsetof(wd_config_source_t, repartition), "auto", NULL, 0, 0, "auto|true|false", 0,
     NULL,
     "With `pipeline.tasks: per-partition`: whether this source goes through an internal repartition topic "
     "(`<group.id>-<table>-<source>-repartition`, keyed by the wide key, produced in the same transaction). A source "
     "read directly must have each record in its wide key's partition: murmur2 (Kafka's default partitioner) of "
     "widen's own JSON key bytes (`{\"order_id\":7}`) modulo the table's partition count, as Debezium through Kafka "
     "Connect's JsonConverter with schemas.enable=false writes it; a `{\"schema\",\"payload\"}` key "
     "(schemas.enable=true, Connect's default), an Avro key, other fields or another partitioner are other bytes. "
     "`auto`: through the repartition topic when its partition count differs from the table's; else read directly, "
     "checking every record, and a record outside its key's partition goes through the repartition topic (created "
     "at start) to the right task; `true`: always (e.g. payments keyed by `payment_id` feeding an `order_id` "
     "table); `false`: never: a record outside its key's partition stops widen with C_SOURCE_KEYING naming it. "
     "Once one source goes through a repartition topic every main source does (a repartition topic is partitioned "
     "by widen's key bytes, a source topic by its producer's). Ignored with `pipeline.tasks: single`."},
    {"primary-key", WD_CONFIG_STRINGS, offsetof(wd_config_source_t, primary_key), NULL, NULL, 0, 0, NULL, 0, NULL,
     "The source's own primary key when it is not the wide key (payments(payment_id) filling a table keyed by "
     "`order_id`): mapping paths of its key fields (`payment_id`, `$key.payment_id`). widen then keeps the source's "
     "last row per key in the state store and derives deletes, updates and moves from it, so key-only deletes "
     "(Postgres REPLICA IDENTITY DEFAULT), updates without a before image and a row moving to another wide key "
     "retract what it had put into its old wide row (docs/source-keys.md). Required by `format: upsert-json`. Not "
     "with `lookup: true`. With `pipeline.tasks: per-partition` its topics need the table's partition count (its "
     "partition i is task i's input) and its derived records go through its repartition topic."},
    END_OPT,
};

static const wd_config_option_t SINK_OPTS[] = {
    {"topic", WD_CONFIG_STRING, offsetof(wd_config_sink_t, topic), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, NULL,
     "Output topic of the wide table's changelog, keyed by primary key."},
    {"format", WD_CONFIG_ENUM, offsetof(wd_config_sink_t, format), "debezium-json", NULL, 0, 0,
     "debezium-json|changelog-json|avro", 0, NULL,
     "Encoding of changelog rows: Debezium change events (`op` c/u/d with before/after), widen's changelog JSON "
     "(one row with its row kind +I/-U/+U/-D), or Avro in the Confluent wire format (one record per row kind: "
     "`_row_kind` then every column), its schema registered under `<topic>-value` at start."},
    {"key-format", WD_CONFIG_ENUM, offsetof(wd_config_sink_t, key_format), "json", NULL, 0, 0, "json|string|avro", 0,
     NULL,
     "Encoding of the message key: a Debezium-style key object `{\"col\": value}`, the key values as text "
     "(joined by `,`), or an Avro record of the key columns registered under `<topic>-key`."},
    {"schemas-enable", WD_CONFIG_ENUM, offsetof(wd_config_sink_t, schemas_enable), "false", NULL, 0, 0, "false|true", 0,
     NULL,
     "Kafka Connect's JsonConverter `schemas.enable` for keys and values: `true` writes each key and value as "
     "`{\"schema\": ..., \"payload\": ...}` with Connect's struct schemas and logical types (DECIMAL as "
     "`org.apache.kafka.connect.data.Decimal` base64 bytes, DATE, TIME and TIMESTAMP as `...Date`, `...Time` "
     "(milliseconds) and `...Timestamp` (milliseconds since the epoch)), the value schema named "
     "`<table>.Envelope`, so that a Connect sink connector with JsonConverter `schemas.enable=true` (Debezium's JDBC "
     "sink with `primary.key.mode=record_key`, `delete.enabled=true`) upserts and deletes the wide table. Needs "
     "`format: debezium-json` and `key-format: json` or `string`. See docs/debezium-postgres.md."},
    {"dead-letter-topic", WD_CONFIG_STRING, offsetof(wd_config_sink_t, dead_letter_topic), NULL, "`<topic>.dlq`", 0, 0,
     NULL, 0, NULL, "Topic that receives input records that cannot be decoded or are rejected, with the reason."},
    {"properties", WD_CONFIG_PAIRS, offsetof(wd_config_sink_t, properties), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Extra librdkafka producer properties (applied after kafka.properties)."},
    END_OPT,
};

static const wd_config_option_t REGISTRY_OPTS[] = {
    {"url", WD_CONFIG_STRING, offsetof(wd_config_registry_t, url), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Required when the section is used: base URL of a Confluent-compatible schema registry (`http://host:8081`). "
     "widen uses GET "
     "`/schemas/ids/{id}` (writer schemas, cached per id for the process's life) and POST "
     "`/subjects/{subject}/versions` (the sink's schemas, at start)."},
    {"username", WD_CONFIG_STRING, offsetof(wd_config_registry_t, username), NULL, NULL, 0, 0, NULL, 0, NULL,
     "User name for HTTP basic auth (none when absent)."},
    {"password", WD_CONFIG_STRING, offsetof(wd_config_registry_t, password), NULL, NULL, 0, 0, NULL, 0, NULL,
     "Password for HTTP basic auth."},
    {"timeout", WD_CONFIG_DURATION, offsetof(wd_config_registry_t, timeout_ms), "10s", NULL, 100, 600000, NULL, 0, NULL,
     "Time limit of one request. A registry that does not answer is retried with backoff (100 ms doubling to "
     "10 s) and logged; records wait, none is dropped."},
    END_OPT,
};

static const wd_config_option_t STATE_OPTS[] = {
    {"dir", WD_CONFIG_STRING, offsetof(wd_config_state_t, dir), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, NULL,
     "Directory of the RocksDB state store (created when missing)."},
    {"tombstone-retention", WD_CONFIG_DURATION, offsetof(wd_config_state_t, tombstone_retention_ms), NULL, "forever", 0,
     INT64_MAX, NULL, 0, NULL,
     "How long ordering tombstones (the ordering columns of a removed key, kept so that late older records stay "
     "ordered) are kept."},
    {"cache-entries", WD_CONFIG_INT, offsetof(wd_config_state_t, cache_entries), "100000", NULL, 0, 1000000000, NULL, 0,
     NULL,
     "Most decoded rows kept in memory in front of the store (written back once per batch; 0 takes the "
     "default)."},
    {"changelog-topic", WD_CONFIG_STRING, offsetof(wd_config_state_t, changelog_topic), NULL,
     "`<group.id>-<table>-changelog`", 0, 0, NULL, 0, NULL,
     "With `pipeline.tasks: per-partition` and exactly-once: the compacted state changelog topic (created at start "
     "when missing, "
     "one partition per task), which receives every row change of each commit (in its transaction under "
     "exactly-once); a process that takes over a task without matching local state restores it from there."},
    {"cache-memory-mb", WD_CONFIG_INT, offsetof(wd_config_state_t, cache_memory_mb), "256", NULL, 1, 1048576, NULL, 0,
     NULL,
     "Memory budget of the decoded-row cache in MiB (an estimate per row from its stored size); rows are evicted "
     "when either this or cache-entries is exceeded."},
    {"history-retention", WD_CONFIG_DURATION, offsetof(wd_config_state_t, history_retention_ms), "24h", NULL, 0,
     INT64_MAX, NULL, 0, NULL,
     "How long the commit history (one record per commit: number, time, mode, input and output offset ranges, "
     "counts, duration; `widen status`, `widen changes`) keeps a commit: older records are deleted by the commit "
     "that makes them too old. 0: no age limit (history-max-bytes still holds)."},
    {"history-max-bytes", WD_CONFIG_INT, offsetof(wd_config_state_t, history_max_bytes), "268435456", NULL, 0,
     INT64_MAX, NULL, 0, NULL,
     "Upper bound of the commit history's size in bytes (its records' JSON: about 100 bytes per partition a "
     "commit read or wrote, plus 150): the oldest records are deleted first when it is reached, whatever "
     "history-retention says. 0: no size limit. The default (256 MiB) holds 24 h of about 3 commits/s of 8 "
     "partitions; `widen status` prints the time span kept."},
    {"history-size", WD_CONFIG_INT, offsetof(wd_config_state_t, history_size), "0", NULL, 0, 100000000, NULL, 0, NULL,
     "At most this many commit history records are kept, whatever their age and size; 0: no count limit "
     "(history-retention and history-max-bytes decide)."},
    {"on-incompatible-change", WD_CONFIG_ENUM, offsetof(wd_config_state_t, on_incompatible_change), "fail", NULL, 0, 0,
     "fail|rebuild", 0, NULL,
     "What a start does when the table definition changed in a way that changes the stored rows (schema, primary "
     "key, merge options, sources and their mappings): `fail` names the differing items and stops; `rebuild` "
     "(exactly-once) rebuilds each task this process owns from the sources' earliest offsets into a fresh state "
     "(the old one kept beside it), in the run's poll loop, emits only the difference between its old and rebuilt "
     "rows in a commit of its own, and goes on with the new state."},
    {"min-free-bytes", WD_CONFIG_INT, offsetof(wd_config_state_t, min_free_bytes), "268435456", NULL, 0, INT64_MAX,
     NULL, 0, NULL,
     "Free bytes the state directory's filesystem must keep (statvfs, checked before every write of the state): "
     "below it `widen run` stops cleanly with E_STATE_DISK_FULL naming the directory and the free bytes, the open "
     "commit aborted and nothing lost, instead of RocksDB failing on a full disk; free space (or lower this) and "
     "start again. The default (256 MiB) leaves room for a memtable flush and a compaction; 0 turns the check off."},
    {"on-corruption", WD_CONFIG_ENUM, offsetof(wd_config_state_t, on_corruption), "fail", NULL, 0, 0, "fail|rebuild", 0,
     NULL,
     "What a start does when the state directory is corrupt (a damaged SST, MANIFEST or CURRENT file): `fail` stops "
     "with E_STATE_CORRUPT naming the file and what to do; `rebuild` moves the directory aside to "
     "`<state.dir>.corrupt-<time>` and starts with a fresh one, whose tasks are rebuilt as those of a lost state "
     "directory are (restored from the state changelog topic, else from the sources without output: nothing is "
     "repeated downstream)."},
    {"flush-interval-ms", WD_CONFIG_INT, offsetof(wd_config_state_t, flush_interval_ms), "5000", NULL, 0, 3600000, NULL,
     0, NULL,
     "Exactly-once: the rows of committed commits are kept in memory and written to the state store together, "
     "at most this many ms after the first of them (and when state.flush-max-bytes is reached, at a rebalance, at "
     "a stop), so a row changed in several commits costs one store write; 0 writes each commit's rows with it. "
     "Only rows whose transaction committed are written, so after a crash the store is behind the group's "
     "committed offsets and the records in between are read again without output (docs/exactly-once.md "
     "\"Deferred state flush\": a crash costs at most this interval's records read again). Applies with a group, "
     "a single task or per-partition tasks without a state changelog topic, no lookup sources, no rebuild in "
     "progress and a table whose rows do not depend on how its sources interleave; elsewhere each commit "
     "writes its rows (the start-up log says which). `widen rows` and `widen status` on a running process see "
     "the store as of its last flush. The default, 5000, bounds both that lag and a crash's replay to 5 s of "
     "input."},
    {"flush-max-bytes", WD_CONFIG_INT, offsetof(wd_config_state_t, flush_max_bytes), "67108864", NULL, 1024, INT64_MAX,
     NULL, 0, NULL,
     "With state.flush-interval-ms: the committed rows kept in memory are written once their encoded size "
     "reaches this many bytes (the default: 64 MiB)."},
    END_OPT,
};

static const wd_config_option_t PIPELINE_OPTS[] = {
    {"batch-size", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, batch_size), "1000", NULL, 1, 1000000, NULL, 0, NULL,
     "Most records taken per poll batch (one multi-get of their keys, one produce round)."},
    {"processing-guarantee", WD_CONFIG_ENUM, offsetof(wd_config_pipeline_t, processing_guarantee), "exactly-once", NULL,
     0, 0, "exactly-once|at-least-once", 0, NULL,
     "`exactly-once`: each commit's changelog, dead letters and input offsets go in one Kafka transaction and the "
     "state always equals the committed transaction (docs/exactly-once.md); consumers of the output must read with "
     "`isolation.level=read_committed`. `at-least-once`: output is acknowledged, then the state and offsets are "
     "written; a crash repeats the output of the open commit. `widen replay` and the mock-cluster demo run "
     "at-least-once."},
    {"commit-interval-ms", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, commit_interval_ms), "100", NULL, 0, 600000,
     NULL, 0, NULL,
     "Longest time, in milliseconds, between a commit's first record and its completion (transaction commit, state "
     "write). Rows changed several times within a commit are written once; output becomes visible to "
     "read_committed consumers at each commit. Under exactly-once this is the interval while there is a backlog "
     "(full poll batches) and the bound of the adaptive interval otherwise (`pipeline.commit-interval-min-ms`); "
     "under at-least-once it is the interval."},
    {"commit-interval-min-ms", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, commit_interval_min_ms), "10", NULL, 0,
     600000, NULL, 0, NULL,
     "Exactly-once: shortest commit interval, in milliseconds, of the adaptive interval. While the pipeline is caught "
     "up (its polls drain what was fetched) a commit is completed as soon as the commits take no more than 80 % of "
     "the time the pipeline does not spend processing records, and not before this; with a backlog the interval is "
     "`pipeline.commit-interval-ms` (docs/exactly-once.md, \"What a commit is\"). Equal to (or above) "
     "`commit-interval-ms`: a fixed interval, as Kafka Streams' `commit.interval.ms`."},
    {"commit-max-records", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, commit_max_records), "100000", NULL, 1,
     100000000, NULL, 0, NULL, "Most input records in one commit: a commit is completed when it holds this many."},
    {"tasks", WD_CONFIG_ENUM, offsetof(wd_config_pipeline_t, tasks), "single", NULL, 0, 0, "single|per-partition", 0,
     NULL,
     "How the state is split for recovery and scale-out: `single` keeps one task for all partitions (works with "
     "sources keyed any way; a process whose local state does not match the group's committed offsets rebuilds all "
     "its partitions), `per-partition` makes partition i of every source topic task i with its own key range "
     "(only a moved partition is rebuilt; every source must be keyed by the wide table's primary key with the same "
     "partition count, or go through a repartition topic: see `sources[].repartition`; lookup sources are no "
     "task's: every process reads them whole, as a global table, docs/lookups-scale-out.md)."},
    {"partitions", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, partitions), "0", NULL, 0, 100000, NULL, 0, NULL,
     "With `pipeline.tasks: per-partition`: the wide table's partition count (its number of tasks, of partitions of "
     "the state changelog and repartition topics). 0: the largest partition count of the sources not forced through "
     "a repartition topic. Fixed for a state: a start whose tasks would be split otherwise (another count, or a "
     "source read directly instead of through its repartition topic) stops with C_TASKS_LAYOUT."},
    {"num-standby-replicas", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, num_standby_replicas), "0", NULL, 0, 100,
     NULL, 0, NULL,
     "With `pipeline.tasks: per-partition` under exactly-once (Kafka Streams' num.standby.replicas): above 0 this "
     "process keeps a warm copy of every task it does not own by tailing the state changelog topic, so that a task "
     "moving to it is caught up from its copy instead of restored from the beginning. librdkafka gives no view of the "
     "other members, so any value above 0 keeps a copy of every other task (the process then stores the whole "
     "table)."},
    {"batch-timeout-ms", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, batch_timeout_ms), "100", NULL, 0, 60000, NULL,
     0, NULL,
     "Longest wait, in milliseconds, for the first record of a poll batch (idle polls wake this often). A batch "
     "is then the records already fetched, up to `batch-size`, processed without waiting for more (as Kafka's "
     "poll with max.poll.records): under load batches are full, at a low rate a record is not held back. For "
     "fuller batches at a low rate (less CPU per record, more latency) let the broker wait instead: "
     "`fetch.min.bytes` and `fetch.wait.max.ms` under `kafka.properties`."},
    {"status-interval-s", WD_CONFIG_INT, offsetof(wd_config_pipeline_t, status_interval_s), "5", NULL, 0, 86400, NULL,
     0, NULL, "Seconds between status log lines (records, changes, lag); 0 turns them off."},
    END_OPT,
};

static const wd_config_option_t METRICS_OPTS[] = {
    {"listen", WD_CONFIG_STRING, offsetof(wd_config_metrics_t, listen), NULL, "off", 0, 0, NULL, 0, NULL,
     "`host:port` (e.g. `127.0.0.1:9464`) where `widen run` serves Prometheus metrics at `/metrics` in the text "
     "exposition format; a port alone (`9464`) is served on 127.0.0.1 only (give `0.0.0.0:9464` to serve every "
     "interface); off when absent."},
    END_OPT,
};

static const wd_config_section_t KAFKA_SEC = {"kafka", KAFKA_OPTS, sizeof(wd_config_kafka_t),
                                              offsetof(wd_config_kafka_t, line),
                                              "The Kafka cluster and the consumer group."};
static const wd_config_section_t TABLE_SEC = {"table", TABLE_OPTS, sizeof(wd_config_table_t),
                                              offsetof(wd_config_table_t, line),
                                              "The wide table: columns, primary key and merge options."};
static const wd_config_section_t SOURCE_SEC = {
    "sources[]", SOURCE_OPTS, sizeof(wd_config_source_t), offsetof(wd_config_source_t, line),
    "The input streams, one or more. Each source reads its topics and writes some columns of the wide table."};
static const wd_config_section_t SINK_SEC = {"sink", SINK_OPTS, sizeof(wd_config_sink_t),
                                             offsetof(wd_config_sink_t, line),
                                             "The output: the wide table's full-row changelog."};
static const wd_config_section_t REGISTRY_SEC = {
    "schema-registry", REGISTRY_OPTS, sizeof(wd_config_registry_t), offsetof(wd_config_registry_t, line),
    "The schema registry of Avro sources and the Avro sink (required when one is used)."};
static const wd_config_section_t STATE_SEC = {"state", STATE_OPTS, sizeof(wd_config_state_t),
                                              offsetof(wd_config_state_t, line),
                                              "The keyed state store holding the current wide rows."};
static const wd_config_section_t PIPELINE_SEC = {"pipeline", PIPELINE_OPTS, sizeof(wd_config_pipeline_t),
                                                 offsetof(wd_config_pipeline_t, line),
                                                 "Batching and status reporting of the processing loop."};

static const wd_config_section_t METRICS_SEC = {"metrics", METRICS_OPTS, sizeof(wd_config_metrics_t),
                                                offsetof(wd_config_metrics_t, line),
                                                "Monitoring: the Prometheus endpoint."};

static const wd_config_option_t ROOT_OPTS[] = {
    {"kafka", WD_CONFIG_SECTION, offsetof(wd_config_t, kafka), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, &KAFKA_SEC,
     "The Kafka cluster and the consumer group."},
    {"table", WD_CONFIG_SECTION, offsetof(wd_config_t, table), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, &TABLE_SEC,
     "The wide table."},
    {"sources", WD_CONFIG_SECTION_LIST, offsetof(wd_config_t, sources), NULL, NULL, 0, 0, NULL,
     WD_CONFIG_REQUIRED | WD_CONFIG_NONEMPTY, &SOURCE_SEC, "The input streams (a list)."},
    {"sink", WD_CONFIG_SECTION, offsetof(wd_config_t, sink), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, &SINK_SEC,
     "The changelog output."},
    {"schema-registry", WD_CONFIG_SECTION, offsetof(wd_config_t, schema_registry), NULL, NULL, 0, 0, NULL, 0,
     &REGISTRY_SEC, "The schema registry (only for debezium-avro sources and the avro sink or key format)."},
    {"state", WD_CONFIG_SECTION, offsetof(wd_config_t, state), NULL, NULL, 0, 0, NULL, WD_CONFIG_REQUIRED, &STATE_SEC,
     "The state store."},
    {"pipeline", WD_CONFIG_SECTION, offsetof(wd_config_t, pipeline), NULL, NULL, 0, 0, NULL, 0, &PIPELINE_SEC,
     "The processing loop (optional: every key has a default)."},
    {"metrics", WD_CONFIG_SECTION, offsetof(wd_config_t, metrics), NULL, NULL, 0, 0, NULL, 0, &METRICS_SEC,
     "Monitoring (optional)."},
    END_OPT,
};

static const wd_config_section_t ROOT_SEC = {"", ROOT_OPTS, sizeof(wd_config_t), offsetof(wd_config_t, line),
                                             "The whole file."};

/* The layout every SECTION_LIST field has ({size_t n; T *v; int line;}). */
typedef struct {
  size_t n;
  void *v;
  int line;
} list_layout_t;
_Static_assert(offsetof(wd_config_sources_t, n) == offsetof(list_layout_t, n) &&
                   offsetof(wd_config_sources_t, v) == offsetof(list_layout_t, v) &&
                   offsetof(wd_config_sources_t, line) == offsetof(list_layout_t, line),
               "SECTION_LIST layout");
_Static_assert(sizeof(wd_source_format_t) == sizeof(int) && sizeof(wd_config_sink_format_t) == sizeof(int) &&
                   sizeof(wd_config_key_format_t) == sizeof(int),
               "ENUM fields are int-sized");

/* The environment variable that overrides an option (only kafka.bootstrap.servers has one). */
#define WD_BROKERS_ENV "WIDEN_BROKERS"

const wd_config_section_t *wd_config_root(void) { return &ROOT_SEC; }

/* ---- small helpers -------------------------------------------------------------------------- */

int wd_config_parse_duration(const char *text, int64_t *ms) {
  if (!text || *text < '0' || *text > '9') return -1;
  int64_t v = 0;
  const char *p = text;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (INT64_MAX - (*p - '0')) / 10) return -1;
    v = v * 10 + (*p - '0');
  }
  static const struct {
    const char *unit;
    int64_t ms;
  } UNITS[] = {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
  for (size_t i = 0; i < sizeof(UNITS) / sizeof(*UNITS); i++) {
    if (strcmp(p, UNITS[i].unit) != 0) continue;
    if (v > INT64_MAX / UNITS[i].ms) return -1;
    *ms = v * UNITS[i].ms;
    return 0;
  }
  return -1;
}

/* Parses a whole decimal integer (optional '-'). 0, or -1. */
static int parse_int(const char *text, int64_t *out) {
  if (!text || !*text || (*text != '-' && (*text < '0' || *text > '9'))) return -1;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* ---- freeing -------------------------------------------------------------------------------- */

static void strings_free(wd_config_strings_t *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  free(l->lines);
  memset(l, 0, sizeof(*l));
}

static void pairs_free(wd_config_pairs_t *p) {
  for (size_t i = 0; i < p->n; i++) {
    free(p->v[i].key);
    free(p->v[i].value);
  }
  free(p->v);
  memset(p, 0, sizeof(*p));
}

static void schema_free(wd_config_schema_t *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->names[i]);
    free(s->types[i]);
  }
  free(s->names);
  free(s->types);
  free(s->lines);
  memset(s, 0, sizeof(*s));
}

/* Frees what the struct at base (described by sec) owns; the struct itself stays. */
static void section_free(const wd_config_section_t *sec, char *base) {
  for (const wd_config_option_t *o = sec->options; o->name; o++) {
    if (o->flags & WD_CONFIG_ALIAS) continue;
    void *p = base + o->offset;
    switch (o->type) {
    case WD_CONFIG_STRING: {
      char **s = p;
      free(*s);
      *s = NULL;
      break;
    }
    case WD_CONFIG_STRINGS: strings_free(p); break;
    case WD_CONFIG_PAIRS: pairs_free(p); break;
    case WD_CONFIG_SCHEMA: schema_free(p); break;
    case WD_CONFIG_SECTION: section_free(o->sub, p); break;
    case WD_CONFIG_SECTION_LIST: {
      list_layout_t l;
      memcpy(&l, p, sizeof(l));
      for (size_t i = 0; i < l.n; i++) section_free(o->sub, (char *)l.v + i * o->sub->size);
      free(l.v);
      memset(p, 0, sizeof(l));
      break;
    }
    default: break;
    }
  }
}

void wd_config_destroy(wd_config_t *cfg) {
  if (!cfg) return;
  section_free(&ROOT_SEC, (char *)cfg);
  free(cfg->table_opts);
  free(cfg->brokers_in_file);
  free(cfg->path);
  free(cfg);
}

/* ---- the YAML walk ------------------------------------------------------------------------------ */

/* Config errors found after the first: the walk goes on to the next key after an error of one
 * key, so that one run reports every independent mistake of a file. */
typedef struct {
  wd_error_t *first; /* owned */
  wd_buf_t more; /* "\n  <message>" per further error */
  size_t nmore;
} ld_errors_t;

typedef struct {
  const char *file;
  yaml_document_t *doc;
  ld_errors_t *errs; /* NULL: stop at the first error */
} ld_t;

/* Keeps err (a config error of one key) and returns NULL so that the walk goes on; any other
 * error (out of memory, internal) is returned to stop the walk. */
static wd_error_t *ld_note(const ld_t *ld, wd_error_t *err) {
  if (!err || !ld->errs || err->cls != WD_ERR_CONFIG) return err;
  ld_errors_t *e = ld->errs;
  if (!e->first) {
    e->first = err;
    return NULL;
  }
  if (e->nmore < 20) (void)wd_buf_printf(&e->more, "\n  %s", err->message);
  e->nmore++;
  wd_error_destroy(err);
  return NULL;
}

static int line_of(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

static yaml_node_t *node_at(const ld_t *ld, int index) { return yaml_document_get_node(ld->doc, index); }

/* A C_CONFIG error "<file>:<line>: <text>". */
static wd_error_t *cfg_err(const ld_t *ld, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static wd_error_t *cfg_err_id(const ld_t *ld, wd_eid_t eid, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static wd_error_t *cfg_err(const ld_t *ld, int line, const char *fmt, ...) {
  char *text = NULL;
  va_list ap;
  va_start(ap, fmt);
  int rc = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (rc < 0) return wd_error_nomem();
  wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_CONFIG, "%s:%d: %s", ld->file, line, text);
  free(text);
  return err;
}

static wd_error_t *cfg_err_id(const ld_t *ld, wd_eid_t eid, int line, const char *fmt, ...) {
  char *text = NULL;
  va_list ap;
  va_start(ap, fmt);
  int rc = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (rc < 0) return wd_error_nomem();
  wd_error_t *err = wd_error_make(WD_ERR_CONFIG, eid, "%s:%d: %s", ld->file, line, text);
  free(text);
  return err;
}

/* A plain scalar that YAML reads as null: empty, "~" or "null". */
static bool is_null(const yaml_node_t *node) {
  if (!node || node->type == YAML_NO_NODE) return true;
  if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const char *v = (const char *)node->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *kind_name(const yaml_node_t *node) {
  switch (node->type) {
  case YAML_SCALAR_NODE: return "a single value";
  case YAML_SEQUENCE_NODE: return "a list";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "nothing";
  }
}

/* The text of a scalar node, or an error naming path when node is not a usable scalar. */
static wd_error_t *scalar_text(const ld_t *ld, const char *path, const yaml_node_t *node, const char *what,
                               const char **out) {
  if (node->type != YAML_SCALAR_NODE)
    return cfg_err(ld, line_of(node), "'%s' must be %s, not %s; write it as 'key: value' on one line", path, what,
                   kind_name(node));
  if (strlen((const char *)node->data.scalar.value) != node->data.scalar.length)
    return cfg_err(ld, line_of(node), "'%s' contains a NUL character; remove it", path);
  if (strcmp(what, "a name")) { /* values (not keys) may come from ${env:NAME} / ${file:PATH} */
    char *expanded = NULL;
    wd_error_t *err = wd_conf_expand((const char *)node->data.scalar.value, &expanded);
    if (err) {
      wd_error_t *e = cfg_err(ld, line_of(node), "'%s': %s", path, err->message);
      wd_error_destroy(err);
      return e;
    }
    if (expanded) { /* the document owns it from now on (libyaml frees scalars with free()) */
      yaml_node_t *n = (yaml_node_t *)node;
      free(n->data.scalar.value);
      n->data.scalar.value = (yaml_char_t *)expanded;
      n->data.scalar.length = strlen(expanded);
    }
  }
  *out = (const char *)node->data.scalar.value;
  return NULL;
}

/* Joins the scalar items of a sequence with "," into a new string (for option values given as a
 * list). */
static wd_error_t *join_list(const ld_t *ld, const char *path, const yaml_node_t *node, char **out) {
  size_t len = 1;
  for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
    yaml_node_t *item = node_at(ld, *it);
    const char *s = NULL;
    if (item->type != YAML_SCALAR_NODE || is_null(item))
      return cfg_err(ld, line_of(item),
                     "'%s' must be a value or a list of values, but an item is %s; write the "
                     "items as plain values",
                     path, is_null(item) ? "empty" : kind_name(item));
    wd_error_t *err = scalar_text(ld, path, item, "a value", &s);
    if (err) return err;
    len += strlen(s) + 1;
  }
  char *buf = malloc(len);
  if (!buf) return wd_error_nomem();
  buf[0] = 0;
  for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
    if (it != node->data.sequence.items.start) strcat(buf, ",");
    strcat(buf, (const char *)node_at(ld, *it)->data.scalar.value);
  }
  *out = buf;
  return NULL;
}

/* Grows the array at *arr (elements of size sz) to hold n + 1: 0, or -1 on no memory (*arr is then
 * unchanged). A macro so that *arr keeps its own pointer type. */
#define GROW(arr, n) grow_into((void *)&(arr), realloc((arr), ((n) + 1) * sizeof(*(arr))))
static int grow_into(void *slot, void *p) {
  if (!p) return -1;
  memcpy(slot, &p, sizeof(p));
  return 0;
}

static wd_error_t *load_strings(const ld_t *ld, const wd_config_option_t *opt, const char *path, yaml_node_t *node,
                                int keyline, wd_config_strings_t *l) {
  l->line = keyline;
  if (!is_null(node) && node->type == YAML_MAPPING_NODE)
    return cfg_err(ld, line_of(node), "'%s' must be a list, not a mapping; write it as [a, b] or as '- a' lines", path);
  bool single = node->type == YAML_SCALAR_NODE;
  size_t count = is_null(node) ? 0
                 : single      ? 1
                               : (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
  for (size_t i = 0; i < count; i++) {
    yaml_node_t *item = single ? node : node_at(ld, node->data.sequence.items.start[i]);
    const char *s = NULL;
    if (is_null(item)) return cfg_err(ld, line_of(item), "'%s' has an empty item; remove it or give it a value", path);
    wd_error_t *err = scalar_text(ld, path, item, "a list of values", &s);
    if (err) return err;
    for (size_t k = 0; k < l->n; k++)
      if (!strcmp(l->v[k], s))
        return cfg_err(ld, line_of(item), "'%s' lists '%s' twice (also at line %d); remove one", path, s, l->lines[k]);
    if (GROW(l->v, l->n) || GROW(l->lines, l->n)) return wd_error_nomem();
    if (!(l->v[l->n] = strdup(s))) return wd_error_nomem();
    l->lines[l->n++] = line_of(item);
  }
  if ((opt->flags & WD_CONFIG_NONEMPTY) && l->n == 0)
    return cfg_err(ld, keyline, "'%s' is an empty list; give it at least one entry", path);
  return NULL;
}

/* Appends a pair (key and value copied; value NULL = key). */
static wd_error_t *pairs_add(wd_config_pairs_t *p, const char *key, const char *value, char *owned_value, int line) {
  if (GROW(p->v, p->n)) {
    free(owned_value);
    return wd_error_nomem();
  }
  wd_config_pair_t *pr = &p->v[p->n];
  pr->key = strdup(key);
  pr->value = owned_value ? owned_value : strdup(value ? value : key);
  pr->line = line;
  if (!pr->key || !pr->value) {
    free(pr->key);
    free(pr->value);
    return wd_error_nomem();
  }
  p->n++;
  return NULL;
}

static wd_error_t *load_pairs(const ld_t *ld, const wd_config_option_t *opt, const char *path, yaml_node_t *node,
                              int keyline, wd_config_pairs_t *p) {
  wd_error_t *err = NULL;
  p->line = keyline;
  if (is_null(node)) goto check;
  if (node->type == YAML_SEQUENCE_NODE && (opt->flags & WD_CONFIG_NULL_IS_KEY)) {
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
      yaml_node_t *item = node_at(ld, *it);
      const char *s = NULL;
      if (is_null(item) || item->type != YAML_SCALAR_NODE)
        return cfg_err(ld, line_of(item),
                       "'%s' as a list must hold column names, but an item is %s; write "
                       "'column: path' pairs or plain names",
                       path, is_null(item) ? "empty" : kind_name(item));
      if ((err = scalar_text(ld, path, item, "a name", &s))) return err;
      for (size_t k = 0; k < p->n; k++)
        if (!strcmp(p->v[k].key, s))
          return cfg_err(ld, line_of(item), "'%s' lists '%s' twice (also at line %d); remove one", path, s,
                         p->v[k].line);
      if ((err = pairs_add(p, s, NULL, NULL, line_of(item)))) return err;
    }
    goto check;
  }
  if (node->type != YAML_MAPPING_NODE)
    return cfg_err(ld, line_of(node),
                   "'%s' must be a mapping, not %s; write one 'key: value' line per entry, "
                   "indented under '%s:'",
                   path, kind_name(node), opt->name);
  for (yaml_node_pair_t *pr = node->data.mapping.pairs.start; pr < node->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = node_at(ld, pr->key), *v = node_at(ld, pr->value);
    const char *key = NULL, *val = NULL;
    char *joined = NULL;
    if (k->type != YAML_SCALAR_NODE || is_null(k))
      return cfg_err(ld, line_of(k), "a key of '%s' is %s; keys must be plain names", path,
                     is_null(k) ? "empty" : kind_name(k));
    if ((err = scalar_text(ld, path, k, "a name", &key))) return err;
    for (size_t i = 0; i < p->n; i++)
      if (!strcmp(p->v[i].key, key))
        return cfg_err(ld, line_of(k), "duplicate key '%s' in '%s' (first at line %d); remove one of them", key, path,
                       p->v[i].line);
    if (is_null(v)) {
      if (!(opt->flags & WD_CONFIG_NULL_IS_KEY))
        return cfg_err(ld, line_of(k), "'%s.%s' has no value; give it a value or remove the line", path, key);
    } else if (v->type == YAML_SEQUENCE_NODE) {
      if ((err = join_list(ld, path, v, &joined))) return err;
    } else if (v->type == YAML_MAPPING_NODE) {
      return cfg_err(ld, line_of(v),
                     "'%s.%s' must be a single value, not a mapping; write it as 'key: value' "
                     "(quote the value if it contains ': ')",
                     path, key);
    } else if ((err = scalar_text(ld, path, v, "a value", &val))) {
      return err;
    }
    if ((err = pairs_add(p, key, val, joined, line_of(k)))) return err;
  }
check:
  if ((opt->flags & WD_CONFIG_NONEMPTY) && p->n == 0)
    return cfg_err(ld, keyline, "'%s' is empty; give it at least one entry", path);
  return NULL;
}

/* Whether a type text opens more '(' or '<' than it closes: the sign of a flow mapping
 * ({name: a, type: DECIMAL(12,2)}) that YAML split at the comma. */
static bool unbalanced(const char *type) {
  int depth = 0;
  for (const char *c = type; *c; c++) depth += (*c == '(' || *c == '<') - (*c == ')' || *c == '>');
  return depth > 0;
}

static wd_error_t *load_schema(const ld_t *ld, const wd_config_option_t *opt, const char *path, yaml_node_t *node,
                               int keyline, wd_config_schema_t *s) {
  wd_error_t *err = NULL;
  s->line = keyline;
  if (is_null(node)) goto check;
  if (node->type != YAML_SEQUENCE_NODE)
    return cfg_err(ld, line_of(node),
                   "'%s' must be a list, not %s; write one '- {name: ..., type: ...}' line per "
                   "column",
                   path, kind_name(node));
  for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
    yaml_node_t *col = node_at(ld, *it);
    size_t idx = (size_t)(it - node->data.sequence.items.start);
    const char *name = NULL, *type = NULL;
    const char *stray = NULL;
    int stray_line = 0;
    if (col->type != YAML_MAPPING_NODE)
      return cfg_err(ld, line_of(col), "'%s[%zu]' must be a mapping, not %s; write it as '- {name: ..., type: ...}'",
                     path, idx, is_null(col) ? "empty" : kind_name(col));
    for (yaml_node_pair_t *pr = col->data.mapping.pairs.start; pr < col->data.mapping.pairs.top; pr++) {
      yaml_node_t *k = node_at(ld, pr->key), *v = node_at(ld, pr->value);
      const char *key = NULL, *val = NULL;
      if ((err = scalar_text(ld, path, k, "a name", &key))) return err;
      const char **slot = !strcmp(key, "name") ? &name : !strcmp(key, "type") ? &type : NULL;
      if (!slot) {
        if (!stray) {
          stray = key;
          stray_line = line_of(k);
        }
        continue;
      }
      if (*slot) return cfg_err(ld, line_of(k), "'%s[%zu]' sets '%s' twice; remove one", path, idx, key);
      if (is_null(v))
        return cfg_err(ld, line_of(k), "'%s[%zu].%s' has no value; give the column its %s", path, idx, key, key);
      if ((err = scalar_text(ld, path, v, "a single value", &val))) return err;
      *slot = val;
    }
    if (stray) {
      if (type && unbalanced(type))
        return cfg_err(ld, stray_line,
                       "column '%s' has type '%s' and a stray key '%s': YAML ends a value at ',' "
                       "inside {...}; quote the type, e.g. type: \"%s,%s\"",
                       name ? name : "?", type, stray, type, stray);
      const char *known[] = {"name", "type"};
      const char *near = wd_closest(stray, known, 2);
      return cfg_err(ld, stray_line, "unknown key '%s' in '%s[%zu]'; %s%s%s", stray, path, idx,
                     near ? "did you mean '" : "a column has only 'name' and 'type'", near ? near : "",
                     near ? "'?" : "");
    }
    if (!name || !type)
      return cfg_err(ld, line_of(col), "missing required key '%s' in '%s[%zu]'; add '%s: ...'", name ? "type" : "name",
                     path, idx, name ? "type" : "name");
    for (size_t k = 0; k < s->n; k++)
      if (!strcmp(s->names[k], name))
        return cfg_err(ld, line_of(col), "column '%s' is defined twice (also at line %d); rename or remove one", name,
                       s->lines[k]);
    if (GROW(s->names, s->n) || GROW(s->types, s->n) || GROW(s->lines, s->n)) return wd_error_nomem();
    s->names[s->n] = strdup(name);
    s->types[s->n] = strdup(type);
    s->lines[s->n] = line_of(col);
    s->n++; /* counted before the check so that schema_free releases both */
    if (!s->names[s->n - 1] || !s->types[s->n - 1]) return wd_error_nomem();
  }
check:
  if ((opt->flags & WD_CONFIG_NONEMPTY) && s->n == 0)
    return cfg_err(ld, keyline, "'%s' has no columns; list them as '- {name: ..., type: ...}'", path);
  return NULL;
}

/* Parses the YAML text of a scalar option (from the file, or its default) into the field at p.
 * line is 0 for defaults (which are valid by construction). */
static wd_error_t *set_scalar(const ld_t *ld, const wd_config_option_t *opt, const char *path, const char *text,
                              int line, void *p) {
  switch (opt->type) {
  case WD_CONFIG_STRING: {
    char *s = strdup(text);
    if (!s) return wd_error_nomem();
    free(*(char **)p);
    *(char **)p = s;
    return NULL;
  }
  case WD_CONFIG_INT:
  case WD_CONFIG_DURATION: {
    int64_t v = 0;
    if (opt->type == WD_CONFIG_INT && parse_int(text, &v))
      return cfg_err(ld, line, "'%s' must be an integer, not '%s'; write a whole number from %lld to %lld", path, text,
                     (long long)opt->min, (long long)opt->max);
    if (opt->type == WD_CONFIG_DURATION && wd_config_parse_duration(text, &v))
      return cfg_err(ld, line,
                     "'%s' is not a duration: '%s'; write a number with a unit ms, s, m, h or d (500ms, "
                     "30s, 5m, 12h, 7d), or a plain number of milliseconds",
                     path, text);
    if (v < opt->min || v > opt->max)
      return cfg_err(ld, line, "'%s' is %s, outside its range; use a value from %lld to %lld%s", path, text,
                     (long long)opt->min, (long long)opt->max, opt->type == WD_CONFIG_DURATION ? " ms" : "");
    *(int64_t *)p = v;
    return NULL;
  }
  case WD_CONFIG_ENUM: {
    const char *vals[16] = {0};
    size_t n = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", opt->values);
    for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok && n < 16; tok = strtok_r(NULL, "|", &save))
      vals[n++] = tok;
    for (size_t i = 0; i < n; i++)
      if (!strcmp(vals[i], text)) {
        *(int *)p = (int)i;
        return NULL;
      }
    const char *near = wd_closest(text, vals, n);
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
      if (i) strncat(list, ", ", sizeof(list) - strlen(list) - 1);
      strncat(list, vals[i], sizeof(list) - strlen(list) - 1);
    }
    return cfg_err(ld, line, "'%s' is '%s', which is not one of its values; %s%s%suse one of: %s", path, text,
                   near ? "did you mean '" : "", near ? near : "", near ? "'? " : "", list);
  }
  default: return wd_error_new(WD_ERR_INTERNAL, NONE, "option '%s' is not a scalar", path);
  }
}

static wd_error_t *load_section(const ld_t *ld, const wd_config_section_t *sec, const char *path, yaml_node_t *node,
                                int line, char *base);

static wd_error_t *load_list(const ld_t *ld, const wd_config_option_t *opt, const char *path, yaml_node_t *node,
                             int keyline, void *p) {
  list_layout_t l = {0, NULL, keyline};
  wd_error_t *err = NULL;
  if (is_null(node)) goto check;
  if (node->type != YAML_SEQUENCE_NODE) {
    err = cfg_err(ld, line_of(node), "'%s' must be a list, not %s; start each entry with '- ' under '%s:'", path,
                  kind_name(node), opt->name);
    goto done;
  }
  size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
  if (n && !(l.v = calloc(n, opt->sub->size))) {
    err = wd_error_nomem();
    goto done;
  }
  for (size_t i = 0; i < n && !err; i++) {
    yaml_node_t *item = node_at(ld, node->data.sequence.items.start[i]);
    char ipath[340];
    snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
    l.n = i + 1; /* so that a half-loaded entry is freed */
    if (item->type != YAML_MAPPING_NODE)
      err = cfg_err(ld, line_of(item), "'%s' must be a mapping, not %s; write its keys ('name: ...') under the '- '",
                    ipath, is_null(item) ? "empty" : kind_name(item));
    else err = load_section(ld, opt->sub, ipath, item, line_of(item), (char *)l.v + i * opt->sub->size);
  }
check:
  if (!err && (opt->flags & WD_CONFIG_NONEMPTY) && l.n == 0)
    err = cfg_err(ld, keyline, "'%s' is empty; give it at least one entry", path);
done:
  memcpy(p, &l, sizeof(l));
  return err;
}

/* Loads the value node of option opt into the field at p. keyline is the line of its key. */
static wd_error_t *load_value(const ld_t *ld, const wd_config_option_t *opt, const char *path, yaml_node_t *node,
                              int keyline, void *p) {
  const char *text = NULL;
  wd_error_t *err = NULL;
  static const char *const WHAT[] = {"a single value", "an integer", "a duration", "a single value"};
  switch (opt->type) {
  case WD_CONFIG_STRING:
  case WD_CONFIG_INT:
  case WD_CONFIG_DURATION:
  case WD_CONFIG_ENUM:
    if ((err = scalar_text(ld, path, node, WHAT[opt->type], &text))) return err;
    return set_scalar(ld, opt, path, text, line_of(node), p);
  case WD_CONFIG_STRINGS: return load_strings(ld, opt, path, node, keyline, p);
  case WD_CONFIG_PAIRS: return load_pairs(ld, opt, path, node, keyline, p);
  case WD_CONFIG_SCHEMA: return load_schema(ld, opt, path, node, keyline, p);
  case WD_CONFIG_SECTION:
    if (is_null(node)) return load_section(ld, opt->sub, path, NULL, keyline, p);
    if (node->type != YAML_MAPPING_NODE)
      return cfg_err(ld, line_of(node), "'%s' must be a mapping, not %s; indent its keys under '%s:'", path,
                     kind_name(node), opt->name);
    return load_section(ld, opt->sub, path, node, keyline, p);
  case WD_CONFIG_SECTION_LIST: return load_list(ld, opt, path, node, keyline, p);
  }
  return NULL;
}

/* The unknown-key error for key in section sec: the closest known key when it looks like a typo,
 * else the list of known keys. */
static wd_error_t *unknown_key(const ld_t *ld, const wd_config_section_t *sec, const char *path, const char *key,
                               int line) {
  const char *names[32];
  size_t n = 0;
  bool has_props = false;
  char list[512] = "";
  for (const wd_config_option_t *o = sec->options; o->name && n < 32; o++) {
    names[n++] = o->name;
    has_props |= !strcmp(o->name, "properties");
    if (list[0]) strncat(list, ", ", sizeof(list) - strlen(list) - 1);
    strncat(list, o->name, sizeof(list) - strlen(list) - 1);
  }
  const char *near = wd_closest(key, names, n);
  char where[300];
  if (*path) snprintf(where, sizeof(where), "in '%s'", path);
  else snprintf(where, sizeof(where), "at the top level");
  if (near) return cfg_err(ld, line, "unknown key '%s' %s; did you mean '%s'?", key, where, near);
  return cfg_err(ld, line, "unknown key '%s' %s; use one of: %s%s%s%s", key, where, list,
                 has_props ? " (librdkafka properties go under '" : "", has_props ? path : "",
                 has_props ? ".properties')" : "");
}

/* WIDEN_BROKERS when set and not empty, else NULL. */
static const char *env_brokers(void) {
  const char *b = getenv(WD_BROKERS_ENV);
  return b && *b ? b : NULL;
}

static bool is_scalar_type(wd_config_type_t type) {
  return type == WD_CONFIG_STRING || type == WD_CONFIG_INT || type == WD_CONFIG_DURATION || type == WD_CONFIG_ENUM;
}

/* Loads the mapping node (NULL: an empty or absent mapping) into the struct at base described by
 * sec: every key must be one of sec's options, each at most once; then required keys and
 * defaults. line is the line that introduces the mapping (its key's line, or the list item's). */
static wd_error_t *load_section(const ld_t *ld, const wd_config_section_t *sec, const char *path, yaml_node_t *node,
                                int line, char *base) {
  bool seen[32] = {false};
  size_t nopt = 0;
  wd_error_t *err = NULL;
  while (sec->options[nopt].name) nopt++;
  if (nopt > 32) return wd_error_new(WD_ERR_INTERNAL, NONE, "config section '%s' has too many options", path);
  *(int *)(base + sec->line_offset) = line;
  yaml_node_pair_t *start = node ? node->data.mapping.pairs.start : NULL;
  yaml_node_pair_t *top = node ? node->data.mapping.pairs.top : NULL;
  for (yaml_node_pair_t *pr = start; pr < top; pr++) {
    yaml_node_t *k = node_at(ld, pr->key), *v = node_at(ld, pr->value);
    const char *key = NULL;
    if (k->type != YAML_SCALAR_NODE || is_null(k)) {
      if ((err = ld_note(ld, cfg_err(ld, line_of(k), "a key %s%s is %s; keys must be plain names",
                                     *path ? "in " : "at the top level", path, is_null(k) ? "empty" : kind_name(k)))))
        return err;
      continue;
    }
    if ((err = scalar_text(ld, path, k, "a name", &key))) {
      if ((err = ld_note(ld, err))) return err;
      continue;
    }
    bool dup = false;
    for (yaml_node_pair_t *q = start; q < pr; q++) {
      yaml_node_t *qk = node_at(ld, q->key);
      if (!dup && !strcmp((const char *)qk->data.scalar.value, key)) {
        dup = true;
        if ((err = ld_note(ld, cfg_err(ld, line_of(k), "duplicate key '%s' (first at line %d); remove one of them", key,
                                       line_of(qk)))))
          return err;
      }
    }
    if (dup) continue;
    size_t i = 0;
    while (i < nopt && strcmp(sec->options[i].name, key)) i++;
    if (i == nopt) {
      if ((err = ld_note(ld, unknown_key(ld, sec, path, key, line_of(k))))) return err;
      continue;
    }
    const wd_config_option_t *opt = &sec->options[i];
    for (size_t j = 0; j < nopt; j++)
      if (seen[j] && sec->options[j].offset == opt->offset) {
        if ((err = ld_note(ld, cfg_err(ld, line_of(k),
                                       "'%s' and '%s' are two names for one setting; keep one of "
                                       "them",
                                       key, sec->options[j].name))))
          return err;
        goto next_key;
      }
    char opath[300];
    snprintf(opath, sizeof(opath), "%s%s%s", path, *path ? "." : "", key);
    if (is_null(v) && is_scalar_type(opt->type)) {
      if ((opt->flags & WD_CONFIG_REQUIRED) && !(opt == &KAFKA_OPTS[0] && env_brokers())) {
        seen[i] = true; /* reported here, not again as missing */
        if ((err = ld_note(ld, cfg_err(ld, line_of(k), "'%s' has no value; give it a value", opath)))) return err;
      }
      continue; /* an empty optional value keeps the default */
    }
    seen[i] = true; /* also when its value is refused: reported once, not again as missing */
    if ((err = load_value(ld, opt, opath, v, line_of(k), base + opt->offset)) && (err = ld_note(ld, err))) return err;
  next_key:;
  }
  for (size_t i = 0; i < nopt; i++) {
    const wd_config_option_t *opt = &sec->options[i];
    bool set = false;
    for (size_t j = 0; j < nopt; j++) set |= seen[j] && sec->options[j].offset == opt->offset;
    if (set || (opt->flags & WD_CONFIG_ALIAS)) continue;
    char opath[300];
    snprintf(opath, sizeof(opath), "%s%s%s", path, *path ? "." : "", opt->name);
    if (opt == &KAFKA_OPTS[0] && env_brokers()) continue; /* applied after the load */
    if (opt->flags & WD_CONFIG_REQUIRED) {
      if (*path)
        err = cfg_err(ld, line, "missing required key '%s' in '%s'; add '%s: ...' to it", opt->name, path, opt->name);
      else
        err = cfg_err(ld, line, "missing required section '%s'; add a '%s:' section (see configs/example.yaml)",
                      opt->name, opt->name);
      if ((err = ld_note(ld, err))) return err;
      continue;
    }
    void *p = base + opt->offset;
    if (opt->def) err = set_scalar(ld, opt, opath, opt->def, 0, p);
    else if (opt->type == WD_CONFIG_DURATION) *(int64_t *)p = -1;
    else if (opt->type == WD_CONFIG_SECTION) err = load_section(ld, opt->sub, opath, NULL, 0, p);
    if (err) return err;
  }
  return NULL;
}

/* ---- checks between sections ------------------------------------------------------------------ */

/* kafka.properties (consumer and producer) and sink.properties (producer) as librdkafka and
 * widen's clients take them (wd_kafka_property_check: no broker needed), each mistake noted with
 * its line. bootstrap.servers and group.id in kafka.properties are check_refs' (its own message). */
static wd_error_t *check_kafka_properties(const ld_t *ld, const wd_config_t *cfg) {
  wd_error_t *err = NULL;
  for (int s = 0; s < 2; s++) {
    const wd_config_pairs_t *props = s ? &cfg->sink.properties : &cfg->kafka.properties;
    unsigned clients = s ? WD_KAFKA_PRODUCER_PROPERTY : WD_KAFKA_CONSUMER_PROPERTY | WD_KAFKA_PRODUCER_PROPERTY;
    for (size_t i = 0; i < props->n; i++) {
      const wd_config_pair_t *pr = &props->v[i];
      if (!s && (!strcmp(pr->key, "bootstrap.servers") || !strcmp(pr->key, "group.id"))) continue;
      wd_error_t *perr = wd_kafka_property_check(pr->key, pr->value ? pr->value : "", clients);
      if (!perr) continue;
      if (perr->cls != WD_ERR_CONFIG) return perr;
      err = wd_error_make(WD_ERR_CONFIG, perr->eid, "%s:%d: %s.properties: %s", ld->file, pr->line,
                          s ? "sink" : "kafka", wd_error_text(perr));
      wd_error_destroy(perr);
      if (err == wd_error_nomem() || (err = ld_note(ld, err))) return err;
    }
  }
  return NULL;
}

/* The error for a name that must be one of names[0..n) (e.g. a column of table.schema); subject
 * is the start of the sentence ("primary-key column 'x'"). */
static wd_error_t *not_in(const ld_t *ld, int line, const char *subject, const char *name, const char *listname,
                          char *const *names, size_t n) {
  const char *near = wd_closest(name, (const char *const *)names, n);
  if (near) return cfg_err(ld, line, "%s is not in %s; did you mean '%s'?", subject, listname, near);
  return cfg_err(ld, line, "%s is not in %s; add it there or correct the name", subject, listname);
}

/* Source options: known keys (ingest's wd_source_options[]) and values from their lists. */
/* A source's own primary key (join/srckey.h): a main source's; the upsert format needs it (with
 * per-partition tasks its partition counts are checked at start: app/runtime/lookups.h). */
static wd_error_t *check_source_key(const ld_t *ld, const wd_config_source_t *src) {
  const wd_format_t *f = wd_format_of(src->format);
  bool upsert = f && !strcmp(f->name, "upsert-json");
  if (src->primary_key.n && src->lookup)
    return cfg_err_id(ld, WD_EID_C_SOURCE_KEY_LOOKUP, src->primary_key.line,
                      "source '%s' has both `lookup: true` and `primary-key:`; a lookup is kept by its `key:` "
                      "already, so remove `primary-key:`",
                      src->name);
  if (upsert && !src->primary_key.n)
    return cfg_err_id(ld, WD_EID_C_SOURCE_KEY_REQUIRED, src->line,
                      "source '%s' has `format: upsert-json`, whose deletes (tombstones) carry only the Kafka key; "
                      "add `primary-key: [<its key fields>]`",
                      src->name);
  return NULL;
}

static wd_error_t *check_source_options(const ld_t *ld, const wd_config_source_t *src, const char *path) {
  const char *names[16];
  size_t n = 0;
  for (const wd_source_option_t *o = wd_source_options; o->name && n < 16; o++) names[n++] = o->name;
  for (size_t i = 0; i < src->options.n; i++) {
    const wd_config_pair_t *pr = &src->options.v[i];
    const wd_source_option_t *o = wd_source_options;
    while (o->name && strcmp(o->name, pr->key)) o++;
    if (!o->name) {
      const char *near = wd_closest(pr->key, names, n);
      char list[256] = "";
      for (size_t k = 0; k < n; k++) {
        if (k) strncat(list, ", ", sizeof(list) - strlen(list) - 1);
        strncat(list, names[k], sizeof(list) - strlen(list) - 1);
      }
      if (near) return cfg_err(ld, pr->line, "unknown key '%s' in '%s'; did you mean '%s'?", pr->key, path, near);
      return cfg_err(ld, pr->line, "unknown key '%s' in '%s'; use one of: %s", pr->key, path, list);
    }
    if (!o->values) continue; /* free text */
    wd_config_option_t as_enum = {0};
    as_enum.type = WD_CONFIG_ENUM;
    as_enum.values = o->values;
    int ignored = 0;
    char opath[300];
    snprintf(opath, sizeof(opath), "%s.%s", path, pr->key);
    wd_error_t *err = set_scalar(ld, &as_enum, opath, pr->value, pr->line, &ignored);
    if (err) return err;
  }
  return NULL;
}

/* References between sections: key and mapped columns exist, names and topics are unique, the
 * sink does not feed a source; and the derived defaults (dead-letter topic). */
static wd_error_t *check_refs(const ld_t *ld, wd_config_t *cfg) {
  wd_error_t *err = NULL;
  const wd_config_schema_t *schema = &cfg->table.schema;
  static const char *const OWN[] = {"bootstrap.servers", "group.id"};
  for (size_t i = 0; i < 2; i++)
    for (size_t k = 0; k < cfg->kafka.properties.n; k++)
      if (!strcmp(cfg->kafka.properties.v[k].key, OWN[i]))
        return cfg_err(ld, cfg->kafka.properties.v[k].line,
                       "'%s' is set in kafka.properties; set it as kafka.%s instead", OWN[i], OWN[i]);
  for (size_t k = 0; k < cfg->table.primary_key.n; k++) {
    const char *name = cfg->table.primary_key.v[k];
    bool found = false;
    for (size_t c = 0; c < schema->n; c++) found |= !strcmp(schema->names[c], name);
    if (!found) {
      char subject[300];
      snprintf(subject, sizeof(subject), "primary-key column '%s'", name);
      return not_in(ld, cfg->table.primary_key.lines[k], subject, name, "table.schema", schema->names, schema->n);
    }
  }
  for (size_t s = 0; s < cfg->sources.n; s++) {
    const wd_config_source_t *src = &cfg->sources.v[s];
    char path[64];
    snprintf(path, sizeof(path), "sources[%zu]", s);
    for (size_t t = 0; t < s; t++)
      if (!strcmp(cfg->sources.v[t].name, src->name))
        return cfg_err(ld, src->line, "source name '%s' is used twice (also at line %d); give each source its own name",
                       src->name, cfg->sources.v[t].line);
    for (size_t i = 0; i < src->topics.n; i++) {
      for (size_t t = 0; t < s; t++)
        for (size_t j = 0; j < cfg->sources.v[t].topics.n; j++)
          if (!strcmp(cfg->sources.v[t].topics.v[j], src->topics.v[i]))
            return cfg_err(ld, src->topics.lines[i],
                           "topic '%s' is read by sources '%s' and '%s'; a topic belongs to one source, so remove it "
                           "from one of them",
                           src->topics.v[i], cfg->sources.v[t].name, src->name);
      if (!strcmp(src->topics.v[i], cfg->sink.topic))
        return cfg_err(ld, src->topics.lines[i],
                       "topic '%s' is both read by source '%s' and written by the sink; use another sink.topic",
                       src->topics.v[i], src->name);
    }
    for (size_t i = 0; i < src->columns.n; i++) {
      bool found = false;
      for (size_t c = 0; c < schema->n; c++) found |= !strcmp(schema->names[c], src->columns.v[i].key);
      if (!found) {
        char subject[400];
        snprintf(subject, sizeof(subject), "source '%s' maps column '%s', which", src->name, src->columns.v[i].key);
        return not_in(ld, src->columns.v[i].line, subject, src->columns.v[i].key, "table.schema", schema->names,
                      schema->n);
      }
    }
    if (!src->lookup && (src->key.line || src->on.line || src->sequence))
      return cfg_err(ld,
                     src->key.line  ? src->key.line
                     : src->on.line ? src->on.line
                                    : src->line,
                     "source '%s' has `key:`, `on:` or `sequence:`, which only lookup sources take; add `lookup: true` "
                     "or remove them",
                     src->name);
    if (src->lookup && (src->on.n == 0 || src->key.n != src->on.n))
      return cfg_err(ld, src->on.line ? src->on.line : src->line,
                     "lookup source '%s' needs `on:` (the wide columns it joins on) and as many `key:` paths (its own "
                     "key fields), one per `on` column; it has %zu and %zu",
                     src->name, src->on.n, src->key.n);
    for (size_t i = 0; src->lookup && i < src->on.n; i++) {
      bool found = false;
      for (size_t c = 0; c < schema->n; c++) found |= !strcmp(schema->names[c], src->on.v[i]);
      if (!found) {
        char subject[400];
        snprintf(subject, sizeof(subject), "lookup source '%s' joins on '%s', which", src->name, src->on.v[i]);
        return not_in(ld, src->on.lines[i], subject, src->on.v[i], "table.schema", schema->names, schema->n);
      }
    }
    if ((err = check_source_key(ld, src))) return err;
    snprintf(path, sizeof(path), "sources[%zu].options", s);
    if ((err = check_source_options(ld, src, path))) return err;
  }
  if (cfg->sink.schemas_enable &&
      (cfg->sink.format != WD_CONFIG_SINK_DEBEZIUM_JSON || cfg->sink.key_format == WD_CONFIG_KEY_AVRO))
    return cfg_err(ld, cfg->sink.line,
                   "sink.schemas-enable: true writes Kafka Connect's JSON envelope, which needs "
                   "`format: debezium-json` and `key-format: json` or `string`; change the format or set "
                   "schemas-enable: false");
  bool avro = cfg->sink.format == WD_CONFIG_SINK_AVRO || cfg->sink.key_format == WD_CONFIG_KEY_AVRO;
  int avro_line = avro ? cfg->sink.line : 0;
  for (size_t s = 0; s < cfg->sources.n && !avro; s++)
    if (cfg->sources.v[s].format == WD_FMT_DEBEZIUM_AVRO) {
      avro = true;
      avro_line = cfg->sources.v[s].line;
    }
  if (avro && !cfg->schema_registry.url)
    return cfg_err(ld, avro_line,
                   "Avro needs a schema registry; add a top-level `schema-registry:` section with its "
                   "url");
  if (!cfg->sink.dead_letter_topic) {
    if (asprintf(&cfg->sink.dead_letter_topic, "%s.dlq", cfg->sink.topic) < 0) {
      cfg->sink.dead_letter_topic = NULL;
      return wd_error_nomem();
    }
  } else if (!strcmp(cfg->sink.dead_letter_topic, cfg->sink.topic)) {
    return cfg_err(ld, cfg->sink.line,
                   "sink.dead-letter-topic is the same topic as sink.topic ('%s'); use another "
                   "topic (default: '<topic>.dlq')",
                   cfg->sink.topic);
  }
  return NULL;
}

/* ---- loading -------------------------------------------------------------------------------------- */

/* The C_CONFIG error for a parser that failed (syntax errors with line and column). */
static wd_error_t *yaml_error(const ld_t *ld, const yaml_parser_t *parser) {
  if (parser->error == YAML_MEMORY_ERROR) return wd_error_nomem();
  const char *problem = parser->problem ? parser->problem : "unknown problem";
  if (parser->error == YAML_READER_ERROR)
    return wd_error_new(WD_ERR_CONFIG, C_CONFIG,
                        "%s:%zu:%zu: the file is not valid text: %s (byte %zu); save it "
                        "as UTF-8 text",
                        ld->file, parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem,
                        parser->problem_offset);
  char ctx[200] = "";
  if (parser->context) snprintf(ctx, sizeof(ctx), " (%s at line %zu)", parser->context, parser->context_mark.line + 1);
  const char *fix = strstr(problem, "cannot start any token") || strstr(problem, "tab")
                        ? "replace tabs with spaces there (YAML indents with spaces, never tabs)"
                        : "fix the YAML there (indentation, a missing ':' or space after it, an unclosed quote or "
                          "bracket)";
  return wd_error_new(WD_ERR_CONFIG, C_CONFIG, "%s:%zu:%zu: YAML syntax error: %s%s; %s", ld->file,
                      parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem, ctx, fix);
}

/* Points cfg->table_opts at the table options (borrowed strings). */
static wd_error_t *index_table_options(wd_config_t *cfg) {
  size_t n = cfg->table.options.n;
  free(cfg->table_opts);
  if (!(cfg->table_opts = calloc(n + 1, sizeof(*cfg->table_opts)))) return wd_error_nomem();
  for (size_t i = 0; i < n; i++) {
    cfg->table_opts[i].key = cfg->table.options.v[i].key;
    cfg->table_opts[i].value = cfg->table.options.v[i].value;
  }
  return NULL;
}

/* When other mistakes were found already: the table's definition (its merge engine and options,
 * checked when the table is built) too, so that one run names them all, not those of the table
 * only once the others are fixed. Only a table section that loaded whole is built. */
static wd_error_t *check_table_too(wd_config_t *cfg) {
  bool whole = cfg->table.schema.n > 0 && cfg->table.primary_key.n > 0;
  for (size_t i = 0; whole && i < cfg->table.schema.n; i++)
    whole = cfg->table.schema.names[i] && cfg->table.schema.types[i];
  for (size_t i = 0; whole && i < cfg->table.primary_key.n; i++) whole = cfg->table.primary_key.v[i] != NULL;
  for (size_t i = 0; whole && i < cfg->table.options.n; i++)
    whole = cfg->table.options.v[i].key && cfg->table.options.v[i].value;
  if (!whole) return NULL;
  wd_table_t *t = NULL;
  wd_error_t *err = index_table_options(cfg);
  if (!err) err = wd_config_build_table(cfg, &t);
  wd_table_destroy(t);
  return err;
}

wd_error_t *wd_config_load(const char *path, wd_config_t **out) {
  wd_error_t *err = NULL;
  FILE *f = NULL;
  yaml_parser_t parser;
  yaml_document_t doc, extra;
  bool parser_ok = false, doc_ok = false, extra_ok = false;
  wd_config_t *cfg = NULL;
  ld_errors_t errs = {0};
  ld_t ld = {path, &doc, NULL};
  *out = NULL;
  if (!(f = fopen(path, "rb"))) {
    err = wd_error_new(WD_ERR_CONFIG, C_CONFIG, "%s: can not open the config file: %s; check the path", path,
                       strerror(errno));
    goto done;
  }
  if (!yaml_parser_initialize(&parser)) {
    err = wd_error_nomem();
    goto done;
  }
  parser_ok = true;
  yaml_parser_set_input_file(&parser, f);
  if (!yaml_parser_load(&parser, &doc)) {
    err = yaml_error(&ld, &parser);
    goto done;
  }
  doc_ok = true;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) {
    err = cfg_err(&ld, 1, "the file is empty; write the pipeline config (see configs/example.yaml)");
    goto done;
  }
  if (!yaml_parser_load(&parser, &extra)) {
    err = yaml_error(&ld, &parser);
    goto done;
  }
  extra_ok = true;
  if (yaml_document_get_root_node(&extra)) {
    err = cfg_err(&ld, (int)extra.start_mark.line + 1,
                  "the file holds more than one YAML document; keep one pipeline per file (remove the '---')");
    goto done;
  }
  if (root->type != YAML_MAPPING_NODE) {
    err = cfg_err(&ld, line_of(root),
                  "the file must be a mapping of sections (kafka:, table:, sources:, sink:, "
                  "state:), not %s; see configs/example.yaml",
                  kind_name(root));
    goto done;
  }
  if (!(cfg = calloc(1, sizeof(*cfg))) || !(cfg->path = strdup(path))) {
    err = wd_error_nomem();
    goto done;
  }
  ld.errs = &errs; /* the sections' keys: every mistake, not only the first */
  err = load_section(&ld, &ROOT_SEC, "", root, line_of(root), (char *)cfg);
  if (!err) err = check_kafka_properties(&ld, cfg);
  if (!err && errs.first) err = ld_note(&ld, check_table_too(cfg));
  ld.errs = NULL;
  if (!err && errs.first) {
    err = errs.first;
    errs.first = NULL;
    if (errs.nmore) {
      wd_buf_putc(&errs.more, 0);
      wd_error_t *all =
          wd_error_make(err->cls, err->eid, "%s\n  and %zu more error%s in this file:%s%s", wd_error_text(err),
                        errs.nmore, errs.nmore > 1 ? "s" : "", errs.more.data ? (const char *)errs.more.data : "",
                        errs.nmore > 20 ? "\n  ..." : "");
      if (all != wd_error_nomem()) {
        wd_error_destroy(err);
        err = all;
      }
    }
  }
  wd_error_destroy(errs.first);
  wd_buf_free(&errs.more);
  if (err) goto done;
  if (env_brokers()) {
    /* the file's value is kept to say where the address came from (a warning here, and the Kafka
     * errors of `widen run`: wd_config_brokers_origin) */
    if (cfg->kafka.bootstrap_servers && strcmp(cfg->kafka.bootstrap_servers, env_brokers())) {
      /* a warning where the file secures its connection (the address it names is likely the one its
       * certificates and credentials are for), else a note: the walkthroughs export it on purpose */
      bool secured = false;
      for (size_t i = 0; i < cfg->kafka.properties.n; i++)
        if (!strcmp(cfg->kafka.properties.v[i].key, "security.protocol") &&
            strcasecmp(cfg->kafka.properties.v[i].value, "plaintext"))
          secured = true;
      wd_log(secured ? WD_LOG_WARN : WD_LOG_INFO, "config",
             "%s:%d: kafka.bootstrap.servers '%s' is replaced by the environment variable " WD_BROKERS_ENV
             "='%s' (unset it to use the file's)",
             path, cfg->kafka.line, cfg->kafka.bootstrap_servers, env_brokers());
      cfg->brokers_in_file = cfg->kafka.bootstrap_servers;
    } else {
      free(cfg->kafka.bootstrap_servers);
    }
    cfg->kafka.bootstrap_servers = NULL;
    if (!(cfg->kafka.bootstrap_servers = strdup(env_brokers()))) {
      err = wd_error_nomem();
      goto done;
    }
    cfg->brokers_from_env = true;
  }
  if ((err = check_refs(&ld, cfg))) goto done;
  /* the rebuild emits its difference in a transaction with its switch (app/runtime/rebuild.h): refused
   * here, not months later at the start that finds the definition changed */
  if (cfg->state.on_incompatible_change == WD_CONFIG_INCOMPATIBLE_REBUILD &&
      cfg->pipeline.processing_guarantee != WD_CONFIG_EXACTLY_ONCE) {
    err = cfg_err(&ld, cfg->state.line,
                  "'state.on-incompatible-change: rebuild' runs under 'pipeline.processing-guarantee: exactly-once' "
                  "only (the difference is emitted in a transaction with its switch); set exactly-once, or "
                  "on-incompatible-change: fail (then `widen replay` into a fresh state directory)");
    goto done;
  }
  err = index_table_options(cfg);
done:
  if (extra_ok) yaml_document_delete(&extra);
  if (doc_ok) yaml_document_delete(&doc);
  if (parser_ok) yaml_parser_delete(&parser);
  if (f) fclose(f);
  if (err) wd_config_destroy(cfg);
  else *out = cfg;
  return err;
}

/* ---- accessors --------------------------------------------------------------------------------------- */

wd_error_t *wd_config_brokers_origin(const wd_config_t *cfg, wd_error_t *err) {
  if (!err || !cfg || !cfg->brokers_from_env || err->cls != WD_ERR_KAFKA) return err;
  const char *m = wd_error_text(err);
  char file[600] = "";
  if (cfg->brokers_in_file)
    snprintf(file, sizeof(file), ", not from %s's kafka.bootstrap.servers '%s'", cfg->path, cfg->brokers_in_file);
  wd_error_t *all =
      wd_error_make(err->cls, err->eid, "%s (the brokers %s came from the environment variable " WD_BROKERS_ENV "%s)",
                    m, cfg->kafka.bootstrap_servers, file);
  if (all == wd_error_nomem()) return err;
  all->retriable = err->retriable;
  all->fatal = err->fatal;
  all->fenced = err->fenced;
  wd_error_destroy(err);
  return all;
}

const wd_option_t *wd_config_table_options(const wd_config_t *cfg, size_t *n) {
  *n = cfg->table.options.n;
  return cfg->table_opts;
}

const char *const *wd_config_column_names(const wd_config_t *cfg, size_t *n) {
  *n = cfg->table.schema.n;
  return (const char *const *)cfg->table.schema.names;
}

const char *const *wd_config_column_types(const wd_config_t *cfg, size_t *n) {
  *n = cfg->table.schema.n;
  return (const char *const *)cfg->table.schema.types;
}

const char *const *wd_config_primary_key(const wd_config_t *cfg, size_t *n) {
  *n = cfg->table.primary_key.n;
  return (const char *const *)cfg->table.primary_key.v;
}

const char *wd_config_pairs_get(const wd_config_pairs_t *pairs, const char *key) {
  for (size_t i = 0; i < pairs->n; i++)
    if (!strcmp(pairs->v[i].key, key)) return pairs->v[i].value;
  return NULL;
}

/* ---- building the stages' objects ---------------------------------------------------------------- */

/* Returns err with "<file>:<line>: " put after its id ("ID: file:line: text"); takes err. Out of
 * memory and internal errors are returned as they are. */
static wd_error_t *at_line(wd_error_t *err, const char *file, int line) {
  if (!err || err->cls == WD_ERR_NOMEM || err->cls == WD_ERR_INTERNAL) return err;
  const char *text = err->message;
  size_t idn = strlen(err->id);
  if (idn && !strncmp(text, err->id, idn) && !strncmp(text + idn, ": ", 2)) text += idn + 2;
  wd_error_t *e2 = wd_error_make(err->cls, idn ? err->eid : WD_EID_NONE, "%s:%d: %s", file, line, text);
  if (e2 == wd_error_nomem()) return err;
  e2->index = err->index;
  e2->retriable = err->retriable;
  e2->fatal = err->fatal;
  wd_error_destroy(err);
  return e2;
}

/* The line of the name among names[0..n) that the message quotes first ('name'), or 0. */
static int quoted_line(const char *msg, const char *const *names, const int *lines, size_t n) {
  const char *best = NULL;
  int line = 0;
  for (size_t i = 0; i < n; i++) {
    char needle[512];
    if ((size_t)snprintf(needle, sizeof(needle), "'%s'", names[i]) >= sizeof(needle)) continue;
    const char *at = strstr(msg, needle);
    if (at && (!best || at < best)) {
      best = at;
      line = lines[i];
    }
  }
  return line;
}

/* The line a table error is about: the column, key column or option its message names. */
static int table_error_line(const wd_config_t *cfg, const wd_error_t *err) {
  const wd_config_table_t *t = &cfg->table;
  int line = 0;
  if (wd_error_is(err, WD_EID_C_BAD_TYPE) || wd_error_is(err, WD_EID_C_DECIMAL_PRECISION) ||
      wd_error_is(err, WD_EID_C_DUPLICATE_COLUMN)) {
    line = quoted_line(err->message, (const char *const *)t->schema.names, t->schema.lines, t->schema.n);
    return line ? line : t->schema.line;
  }
  if (wd_error_is(err, WD_EID_C_PRIMARY_KEY)) {
    line = quoted_line(err->message, (const char *const *)t->primary_key.v, t->primary_key.lines, t->primary_key.n);
    return line ? line : t->primary_key.line;
  }
  const char *names[256];
  int lines[256];
  size_t n = t->options.n < 256 ? t->options.n : 256;
  for (size_t k = 0; k < n; k++) {
    names[k] = t->options.v[k].key;
    lines[k] = t->options.v[k].line;
  }
  line = quoted_line(err->message, names, lines, n);
  return line ? line : t->options.line ? t->options.line : t->line;
}

wd_error_t *wd_config_build_table(const wd_config_t *cfg, wd_table_t **out) {
  size_t nopts = 0;
  const wd_option_t *opts = wd_config_table_options(cfg, &nopts);
  *out = NULL;
  wd_error_t *err = wd_table_config_build(cfg->table.schema.n, (const char *const *)cfg->table.schema.names,
                                          (const char *const *)cfg->table.schema.types, cfg->table.primary_key.n,
                                          (const char *const *)cfg->table.primary_key.v, nopts, opts, out);
  if (err) err = at_line(err, cfg->path, table_error_line(cfg, err));
  return err;
}

void wd_config_source_key_name(const wd_config_source_t *cs, size_t k, char *buf, size_t n) {
  snprintf(buf, n, "primary-key.%s", k < cs->primary_key.n ? cs->primary_key.v[k] : "?");
}

wd_error_t *wd_config_build_source(const wd_config_t *cfg, size_t i, const wd_schema_t *schema, wd_source_t **out) {
  wd_error_t *err = NULL;
  wd_source_t *src = NULL;
  int line = 0;
  *out = NULL;
  if (i >= cfg->sources.n) {
    err = wd_error_new(WD_ERR_INTERNAL, NONE, "source index %zu out of range (%zu sources)", i, cfg->sources.n);
    goto done;
  }
  const wd_config_source_t *cs = &cfg->sources.v[i];
  line = cs->line;
  if ((err = wd_source_new(cs->name, cs->format, &src))) goto done;
  for (size_t k = 0; k < cs->topics.n; k++) {
    line = cs->topics.lines[k];
    if ((err = wd_source_add_topic(src, cs->topics.v[k]))) goto done;
  }
  for (size_t k = 0; cs->lookup && k < cs->on.n && k < cs->key.n; k++) { /* the lookup's key, named like `on` */
    line = cs->key.lines[k];
    if ((err = wd_source_add_column(src, schema, cs->on.v[k], cs->key.v[k]))) goto done;
  }
  for (size_t k = 0; !cs->lookup && k < cs->primary_key.n; k++) { /* the source's own key (join/srckey.h) */
    char name[320];
    wd_config_source_key_name(cs, k, name, sizeof(name));
    if (wd_schema_find(schema, name) < 0) break; /* built for the wide schema: its key is not there */
    line = cs->primary_key.lines[k];
    if ((err = wd_source_add_column(src, schema, name, cs->primary_key.v[k]))) goto done;
  }
  if (cs->lookup && cs->sequence) {
    line = cs->line;
    if ((err = wd_source_add_column(src, schema, "_seq", cs->sequence))) goto done;
  }
  for (size_t k = 0; k < cs->columns.n; k++) {
    line = cs->columns.v[k].line;
    if ((err = wd_source_add_column(src, schema, cs->columns.v[k].key, cs->columns.v[k].value))) goto done;
  }
  for (size_t k = 0; k < cs->options.n; k++) {
    line = cs->options.v[k].line;
    if ((err = wd_source_set_option(src, cs->options.v[k].key, cs->options.v[k].value))) goto done;
  }
  err = wd_source_check(src, schema);
  if (wd_error_is(err, WD_EID_C_SOURCE_NO_KEY)) line = cs->columns.line;
  else if (wd_error_is(err, WD_EID_C_SOURCE_NO_TOPIC)) line = cs->topics.line ? cs->topics.line : cs->line;
  else line = cs->line;
done:
  if (err) {
    wd_source_destroy(src);
    err = at_line(err, cfg->path, line);
  } else {
    *out = src;
  }
  return err;
}

/* ---- the option reference -------------------------------------------------------------------------- */

static const char *type_doc(const wd_config_option_t *o) {
  switch (o->type) {
  case WD_CONFIG_STRING: return "string";
  case WD_CONFIG_INT: return "integer";
  case WD_CONFIG_DURATION: return "duration";
  case WD_CONFIG_ENUM: return "enum";
  case WD_CONFIG_STRINGS: return "list of strings";
  case WD_CONFIG_PAIRS: return (o->flags & WD_CONFIG_NULL_IS_KEY) ? "mapping (or list of names)" : "mapping of strings";
  case WD_CONFIG_SCHEMA: return "list of columns";
  case WD_CONFIG_SECTION: return "section";
  case WD_CONFIG_SECTION_LIST: return "list of sections";
  }
  return "?";
}

/* The '|'-separated values as a Markdown list in code font ("`a`, `b`") into out[0..n). */
static void doc_values(const char *values, char *out, size_t n) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", values);
  out[0] = 0;
  for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
    if (out[0]) strncat(out, ", ", n - strlen(out) - 1);
    strncat(out, "`", n - strlen(out) - 1);
    strncat(out, tok, n - strlen(out) - 1);
    strncat(out, "`", n - strlen(out) - 1);
  }
}

/* One table row per option of sec (recursing into sub-sections), keys prefixed with prefix. */
static void doc_rows(FILE *f, const wd_config_section_t *sec, const char *prefix) {
  for (const wd_config_option_t *o = sec->options; o->name; o++) {
    if (o->type == WD_CONFIG_SECTION || o->type == WD_CONFIG_SECTION_LIST) continue;
    char def[128], range[256] = "";
    if (o->flags & WD_CONFIG_REQUIRED) snprintf(def, sizeof(def), "**required**");
    else if (o->def_doc) snprintf(def, sizeof(def), "%s", o->def_doc);
    else if (o->def) snprintf(def, sizeof(def), "`%s`", o->def);
    else if (o->flags & WD_CONFIG_ALIAS) snprintf(def, sizeof(def), "(alias)");
    else snprintf(def, sizeof(def), "%s", o->type == WD_CONFIG_STRING ? "none" : "empty");
    if (o->type == WD_CONFIG_INT || o->type == WD_CONFIG_DURATION) {
      const char *unit = o->type == WD_CONFIG_DURATION ? " ms" : "";
      if (o->max == INT64_MAX) snprintf(range, sizeof(range), ">= %lld%s", (long long)o->min, unit);
      else snprintf(range, sizeof(range), "%lld .. %lld%s", (long long)o->min, (long long)o->max, unit);
    } else if (o->type == WD_CONFIG_ENUM) {
      doc_values(o->values, range, sizeof(range));
    } else if (o->flags & WD_CONFIG_NONEMPTY) {
      snprintf(range, sizeof(range), "at least one");
    }
    fprintf(f, "| `%s%s` | %s | %s | %s | %s |\n", prefix, o->name, type_doc(o), def, range, o->description);
  }
}

int wd_config_write_doc(FILE *f) {
  fprintf(f,
          "# widen pipeline configuration\n"
          "\n"
          "<!-- Generated by `widen config doc` from the option table in app/config/config.c. Do not edit by hand:\n"
          "     run `build/widen config doc > configs/OPTIONS.md` after changing an option. -->\n"
          "\n"
          "A pipeline is one YAML file (`widen run FILE`; `widen config check FILE` validates it and prints a\n"
          "summary). [example.yaml](example.yaml) sets every option with comments; "
          "[orders-wide.yaml](orders-wide.yaml),\n"
          "[customer-360.yaml](customer-360.yaml) and [dedup-products.yaml](dedup-products.yaml) are realistic "
          "pipelines.\n"
          "\n"
          "## Rules\n"
          "\n"
          "- Every key must be one of those below; an unknown key is an error that names the closest known key.\n"
          "  A key may appear once per mapping.\n"
          "- Errors read `C_CONFIG: <file>:<line>: <what is wrong>; <what to change>`. Errors found when the table\n"
          "  or a source is built keep their own id (`C_SEQ_GROUP_UNKNOWN_FIELD: <file>:<line>: ...`, see the\n"
          "  spec's section 11.1) and point at the option, column or mapping concerned. Every mistake in the\n"
          "  file's keys and values is reported in one run (the first, then `and N more errors in this file`).\n"
          "- **Durations** are a number with a unit `ms`, `s`, `m`, `h` or `d` (`500ms`, `30s`, `5m`, `12h`, "
          "`7d`),\n"
          "  or a plain number of milliseconds.\n"
          "- In the free-form mappings (`kafka.properties`, `table.options`, `sources[].columns`,\n"
          "  `sources[].options`, `sink.properties`) values are strings: numbers and booleans are taken as their\n"
          "  text (`true`, `1000`), and a list of values is joined with commas (`[a, b]` is `a,b`). File order is\n"
          "  kept.\n"
          "- An empty value (`key:`) of an optional key keeps its default.\n"
          "- **Secrets**: any value may be `${env:NAME}` (the environment variable) or `${file:PATH}` (the file's\n"
          "  contents, one trailing newline removed), as Kafka's config providers; `$${` is a literal `${`. The\n"
          "  values of properties whose name says password/secret/token/credential are never printed.\n"
          "- Environment: **`WIDEN_BROKERS`**, when set and not empty, replaces `kafka.bootstrap.servers` (which\n"
          "  may then be left out of the file), e.g. `WIDEN_BROKERS=kafka:9092 widen run configs/orders-wide.yaml`.\n"
          "\n"
          "Types: *string*, *integer*, *duration* and *enum* are single values; a *list of strings* may also be\n"
          "written as one value (`topic: a` is `[a]`).\n");
  for (const wd_config_option_t *o = ROOT_OPTS; o->name; o++) {
    const char *prefix_fmt = o->type == WD_CONFIG_SECTION_LIST ? "%s[]." : "%s.";
    char prefix[64];
    snprintf(prefix, sizeof(prefix), prefix_fmt, o->name);
    fprintf(f, "\n## `%s%s`%s\n\n%s\n\n", o->name, o->type == WD_CONFIG_SECTION_LIST ? "[]" : "",
            (o->flags & WD_CONFIG_REQUIRED) ? " (required)" : " (optional)", o->sub->description);
    fprintf(f, "| key | type | default | range / values | description |\n|---|---|---|---|---|\n");
    doc_rows(f, o->sub, prefix);
  }
  fprintf(f, "\n## Source options (`sources[].options`)\n\n"
             "Interpreted by the source's decoder (ingest/source.h).\n\n"
             "| key | values | default | description |\n|---|---|---|---|\n");
  for (const wd_source_option_t *o = wd_source_options; o->name; o++) {
    char vals[256] = "text";
    if (o->values) doc_values(o->values, vals, sizeof(vals));
    fprintf(f, "| `%s` | %s | `%s` | %s |\n", o->name, vals, o->def, o->description);
  }
  fprintf(f, "\n## Table options (`table.options`)\n\n"
             "Apache Paimon's option names and values, validated when the table is built (join/merge_spec.c, from\n"
             "the table this list is generated from); section 3 of the merge-semantics spec defines them. Any other\n"
             "key is refused with `C_UNKNOWN_OPTION`, a bad value with `C_BAD_OPTION_VALUE`. Booleans are `true` or\n"
             "`false`; lists are comma-separated and each item is trimmed.\n\n"
             "| key | values | default | applies to | meaning |\n|---|---|---|---|---|\n");
  wd_table_option_doc_t td;
  for (size_t i = 0; wd_table_option_doc(i, &td); i++) {
    char vals[256];
    doc_values(td.values, vals, sizeof(vals));
    /* a default that is a value in code font; "none" and phrases as text */
    bool code = !strchr(td.def, ' ') && (strcmp(td.def, "none") != 0 || strstr(td.values, "none"));
    fprintf(f, "| `%s` | %s | %s%s%s | %s | %s |\n", td.key, vals, code ? "`" : "", td.def, code ? "`" : "", td.applies,
            td.description);
  }
  wd_interleaving_doc(f);
  return ferror(f) ? -1 : 0;
}
