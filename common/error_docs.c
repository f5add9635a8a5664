/*
 * common/error_docs.c — what each error id of common/error_ids.h means and what to do about it
 * (error_docs.h). One entry per id; tests/unit/test_error_docs.c fails when an id has none, and
 * when docs/operations.md's list is not what wd_error_docs_write prints.
 */
#include "common/error_docs.h"

#include <string.h>

static const wd_error_doc_t DOCS[] = {
    {"C_AGG_REMOVE_ON_DELETE_VS_IGNORE_RETRACT",
     "`aggregation.remove-record-on-delete` and `fields.<f>.ignore-retract` are both set; they contradict each other.",
     "Drop one of the two options."},
    {"C_AGG_TYPE", "An aggregate function is set on a column whose type it cannot aggregate (e.g. `sum` on STRING).",
     "Change the function (`fields.<f>.aggregate-function`) or the column's type; the message names both."},
    {"C_AGG_UNKNOWN_FUNCTION", "`fields.<f>.aggregate-function` names no function widen knows.",
     "Use one of Paimon's function names (configs/OPTIONS.md lists them)."},
    {"C_AGG_UNSUPPORTED", "The aggregate function exists in Paimon but widen does not implement it.",
     "Choose another function for that column."},
    {"C_AVRO_NAME", "A column or ROW field name cannot be an Avro name, and the sink or key format is Avro.",
     "Rename it (letters, digits, `_`, not starting with a digit) or use a JSON sink."},
    {"C_BAD_CONFIG", "The table definition has the wrong shape (schema/primary key not lists, options not a mapping).",
     "Fix the section the message names; `configs/example.yaml` shows each shape."},
    {"C_BAD_MAPPING", "A source's column mapping is malformed (no name, an empty or unparsable path).",
     "Fix the mapping the message names: a row-image field, `$.path`, `$key.path` or `$kafka.*`."},
    {"C_BAD_OPTION_VALUE", "A table or source option has a value of the wrong kind or outside its range.",
     "Give the option a value of the kind `configs/OPTIONS.md` lists."},
    {"C_BAD_TYPE", "A column type does not parse or has bad arguments.",
     "Write a Paimon type: `BIGINT`, `DECIMAL(12,2)`, `TIMESTAMP(3)`, `ARRAY<STRING>`, `MAP<STRING, BIGINT>`, `ROW<a "
     "INT>`."},
    {"C_CONFIG", "The config file itself is wrong: YAML syntax, an unknown or missing key, a value of the wrong type.",
     "Fix the line the message names (`file:line`); every such mistake is reported in one run."},
    {"C_CONFIG_PROVIDER",
     "A `${...}` reference in the config cannot be resolved (unset environment variable, unreadable file, unclosed "
     "`${`).",
     "Set the variable or fix the path; `$${` writes a literal `${`."},
    {"C_CONFLICT_IGNORE_DELETE_REMOVE_ON_DELETE",
     "`ignore-delete` and `partial-update.remove-record-on-delete` are both set.", "Drop one of them."},
    {"C_CONFLICT_IGNORE_DELETE_REMOVE_ON_SEQUENCE_GROUP",
     "`ignore-delete` and `partial-update.remove-record-on-sequence-group` are both set.", "Drop one of them."},
    {"C_CONFLICT_SEQUENCE_GROUP_REMOVE_ON_DELETE",
     "Sequence groups and `partial-update.remove-record-on-delete` are both set.",
     "Use `partial-update.remove-record-on-sequence-group` with sequence groups instead."},
    {"C_DECIMAL_PRECISION", "A DECIMAL's precision is not 1..38 or its scale not 0..precision.",
     "Fix the type, e.g. `DECIMAL(12,2)`."},
    {"C_DUPLICATE_COLUMN", "The schema defines a column name twice.", "Rename or remove one of them."},
    {"C_DUPLICATE_MAPPING", "A source maps the same wide column twice.",
     "Keep one mapping for that column in the source."},
    {"C_FIRST_ROW_CHANGELOG_PRODUCER",
     "`merge-engine: first-row` with a changelog producer other than `none` or `lookup`.",
     "Set `changelog-producer: lookup` (or `none`)."},
    {"C_FIRST_ROW_SEQUENCE_FIELD",
     "`merge-engine: first-row` with `sequence.field`: first-row keeps the first record whatever its sequence.",
     "Remove `sequence.field`."},
    {"C_GENERATE", "`widen produce --generate` got an unknown stream name or ratios out of range.",
     "Use streams `orders,payments,shipments` and the ratio limits `widen produce --help` gives."},
    {"C_HISTORY_RANGE", "`widen changes` was asked for commits or times outside the commit history kept in the state.",
     "Ask within the range `widen status` prints; to keep more, raise `state.history-retention` / "
     "`state.history-max-bytes`."},
    {"C_INTERNAL_TOPIC_PARTITIONS",
     "An internal topic (state changelog, repartition) has another partition count than the table's tasks.",
     "Set `pipeline.partitions` to the count the table was built with, or build the table anew (the message says "
     "how)."},
    {"C_JOIN_TOO_MANY_SOURCES", "More sources than one table supports.", "Split the table or merge streams upstream."},
    {"C_KAFKA_GROUP", "A consumer without `kafka.group.id` was asked to commit offsets.", "Set `kafka.group.id`."},
    {"C_KAFKA_PROPERTY",
     "librdkafka refused a property of `kafka.properties` / `sink.properties` / `-X` (unknown name or bad value).",
     "Fix it as the message says (an unknown name gets the closest known property)."},
    {"C_KAFKA_TOPIC", "A consumer was started without topics.", "Give each source a `topic`/`topics`."},
    {"C_LOOKUP_COLUMN_KEY", "A lookup source fills a primary-key column or one of its own `on` columns.",
     "Map only the lookup's other columns in it."},
    {"C_LOOKUP_COLUMN_NOT_NULL", "A lookup source fills a NOT NULL column; it is NULL while no lookup row matches.",
     "Drop NOT NULL from that column."},
    {"C_LOOKUP_COLUMN_ORDERING", "A lookup source fills a sequence field or a sequence-group column.",
     "Ordering columns must come from main sources: move the mapping."},
    {"C_LOOKUP_COLUMN_SHARED", "A column is filled both by a lookup source and by another source.",
     "Map it in one of them only."},
    {"C_LOOKUP_COLUMN_UNKNOWN", "A lookup source maps a column the table does not have.",
     "Fix the column name or add the column to the schema."},
    {"C_LOOKUP_CYCLE", "Lookup sources join on each other's columns in a cycle.",
     "Make each lookup's `on` columns come from main sources or from lookups earlier in a chain."},
    {"C_LOOKUP_NO_ON", "A lookup source has no `on:` columns.", "List the wide columns its key is joined on."},
    {"C_LOOKUP_ON_UNFILLED", "A lookup joins on a column no source fills.",
     "Map that column in a main source (or an earlier lookup)."},
    {"C_LOOKUP_ON_UNKNOWN", "A lookup's `on:` names a column the table does not have.", "Fix the name."},
    {"C_METRICS_LISTEN", "`metrics.listen` is not a port or host:port.",
     "Write e.g. `9464` (127.0.0.1) or `0.0.0.0:9464`."},
    {"C_NESTED_OPTION_NEEDS_KEY", "A `nested_update`-style aggregate needs `fields.<f>.nested-key`.",
     "Set `fields.<f>.nested-key` to the nested rows' key fields."},
    {"C_NOT_NULL_FIELD",
     "A non-key column is NOT NULL in a partial-update table, where each stream writes only its own columns.",
     "Drop NOT NULL from the column."},
    {"C_NO_REGISTRY", "A `debezium-avro` source or an Avro sink without a `schema-registry` section.",
     "Add `schema-registry: {url: ...}` (docs/schema-registry.md)."},
    {"C_PRIMARY_KEY", "The primary key is missing, names an unknown column, or names one twice.",
     "List existing columns in `table.primary-key`."},
    {"C_PU_AGG_NEEDS_SEQUENCE_GROUP",
     "A partial-update column has an aggregate function but no sequence group protects it.",
     "Add it to a `fields.<seq>.sequence-group`, or use `last_non_null_value`."},
    {"C_REGISTRY_AUTH", "The schema registry refused the credentials (HTTP 401/403).",
     "Fix `schema-registry.username` / `password` (or the URL's credentials)."},
    {"C_REGISTRY_REJECTED",
     "The schema registry refused a schema widen registers (e.g. 409 incompatible, 422 invalid).",
     "Read the registry's message; relax the subject's compatibility or change the table."},
    {"C_REGISTRY_URL", "`schema-registry.url` is not an http:// or https:// URL.",
     "Fix the URL (Apicurio: `http://host:port/apis/ccompat/v7`)."},
    {"C_REMOVE_ON_SEQUENCE_GROUP_NOT_SEQUENCE_FIELD",
     "`partial-update.remove-record-on-sequence-group` names a column that is not a sequence field.",
     "Name sequence fields of `fields.<seq>.sequence-group`."},
    {"C_REPLAY_OUTPUT", "`widen replay --output` names the live changelog topic of the config.",
     "Write the replay to another topic (e.g. `<topic>.replay`)."},
    {"C_SEQ_FIELD_DUPLICATE", "A column is a sequence field twice (in `sequence.field` or two groups).",
     "Keep it in one place."},
    {"C_SEQ_FIELD_HAS_AGG", "A sequence field has an aggregate function.",
     "Remove the function from the sequence field."},
    {"C_SEQ_FIELD_TYPE", "A sequence field's type cannot be compared as a sequence (e.g. ARRAY, MAP, ROW, BYTES).",
     "Use a numeric, DECIMAL, date/time or string column."},
    {"C_SEQ_FIELD_UNKNOWN", "`sequence.field` or a sequence group names an unknown column.", "Fix the name."},
    {"C_SEQ_GROUP_CONTAINS_PK", "A sequence group contains a primary-key column.",
     "Remove the key column from the group."},
    {"C_SEQ_GROUP_DUPLICATE_FIELD", "A column is in two sequence groups.", "Keep it in one group."},
    {"C_SEQ_GROUP_UNKNOWN_FIELD", "A sequence group lists an unknown column.", "Fix the name."},
    {"C_SOURCE_GROUP_NO_SEQUENCE",
     "A source fills columns of a sequence group but not the group's sequence field: its values would always be "
     "dropped.",
     "Map the sequence field in that source too, or remove the columns from it."},
    {"C_SOURCE_KEYING",
     "A source's records are not keyed by the wide key, so one key's records are spread over partitions and tasks.",
     "Set `repartition: true` (or `auto`) on the source."},
    {"C_SOURCE_NO_KEY", "A source does not map the whole primary key.",
     "Map every primary-key column in every source."},
    {"C_SOURCE_NO_TOPIC", "A source lists no topic.", "Give it `topic:` or `topics:`."},
    {"C_SOURCE_TOPIC_MISSING", "With per-partition tasks, a source topic does not exist at start.",
     "Create the topic first (its partition count decides the tasks)."},
    {"C_STATE_DEFINITION",
     "The table definition changed in a way the state cannot follow (e.g. the primary key under per-partition tasks), "
     "or changed with `on-incompatible-change: fail`.",
     "Revert the change, or set `state.on-incompatible-change: rebuild`, or build anew (new group and state directory, "
     "or `widen replay`)."},
    {"C_STATE_DIR", "The state directory does not exist (read-only commands) or cannot be created.",
     "Check `state.dir` (relative to the working directory) and its permissions."},
    {"C_STATE_SCHEMA", "The state directory was built with another table schema.",
     "Use the config it was built with, another `state.dir`, or `state.on-incompatible-change: rebuild`."},
    {"C_TASKS_LAYOUT",
     "The state was split into tasks differently (partition counts, `pipeline.partitions`, `pipeline.tasks` or "
     "repartitioning changed).",
     "Restore the old layout, or build the table anew (the message says how)."},
    {"C_TASKS_NOT_COPARTITIONED", "A source topic has another partition count than the table and `repartition: false`.",
     "Set `repartition: auto` on the source, or give the topic the table's partition count."},
    {"C_UNKNOWN_COLUMN", "A source or option names a column the table does not have.",
     "Fix the name or add the column."},
    {"C_UNKNOWN_FIELD", "An option names a field that the column's ROW type does not have.", "Fix the field name."},
    {"C_UNKNOWN_OPTION", "An unknown table or source option (typo?).",
     "Fix the name; `widen config check` names the closest known option."},
    {"C_UNSUPPORTED_FORMAT", "A source format widen has no decoder for.",
     "Use one of the formats `configs/OPTIONS.md` lists."},
    {"E_AGG_NO_RETRACT",
     "A retraction (-U/-D) reached a column whose aggregate function cannot retract. The record is dead-lettered.",
     "If the column may ignore retractions, set `fields.<f>.ignore-retract: true`; else fix the input."},
    {"E_ARITH_OVERFLOW", "An aggregate (sum, product) overflowed its column type. The record is dead-lettered.",
     "Widen the column type (BIGINT, DECIMAL with more precision)."},
    {"E_BATCH_ABANDONED",
     "A rebalance took partitions while a batch was in hand; the batch is dropped and its records read again. Retried "
     "by itself.",
     "Nothing; frequent ones point to an unstable group (`session.timeout.ms`, processes restarting)."},
    {"E_CHANGES_TIMEOUT",
     "`widen changes` could not read the changelog ranges the history names (deleted by the topic's retention?).",
     "Ask for newer commits, or keep the changelog topic longer (`retention.ms`)."},
    {"E_COLLECTOR_FULL", "Too many records were held while the previous commit completes. Retried by itself.",
     "Nothing if rare; often: a slow broker or `pipeline.batch-size` too big for the commit rate."},
    {"E_DECODE",
     "A record could not be decoded (not JSON, not the format's envelope, not the Avro wire format). Dead-lettered "
     "with its topic, partition and offset.",
     "Look at the dead letter (`widen tail --topic <dlq>`); fix the producer or the source's `format`."},
    {"E_DELETE_NO_SEQUENCE",
     "A delete without its sequence field, rejected by `delete-without-sequence: dead-letter`. Dead-lettered.",
     "Send deletes with the sequence field, or choose another `delete-without-sequence` policy."},
    {"E_FIRST_ROW_RETRACT", "A first-row table received a retraction. Dead-lettered.",
     "Set `ignore-delete: true` to drop retractions, or use another merge engine."},
    {"E_INTERNAL", "An invariant did not hold: a bug.",
     "Report it with the log; the process stops without committing the open batch, and a restart resumes from the last "
     "commit."},
    {"E_KAFKA", "A Kafka client error (broker away, network). Retried by itself while it is retriable.",
     "Check the brokers (`widen status`, the log); the message carries librdkafka's reason."},
    {"E_KAFKA_AUTH", "The broker refused the SASL login. widen stops.",
     "Fix `sasl.username` / `sasl.password` / `sasl.mechanism` in `kafka.properties`."},
    {"E_KAFKA_COMMIT", "Committing offsets to the group failed. Retried by the next commit.",
     "Check the group coordinator (broker log); persistent ones mean the group lost this member."},
    {"E_KAFKA_FATAL", "librdkafka reported a fatal consumer error. widen stops.",
     "Read the reason; restart after fixing (e.g. a fenced static member: another process uses the same "
     "`group.instance.id`)."},
    {"E_KAFKA_METADATA", "Topic metadata could not be read. Retried by itself.",
     "Check that the broker answers and the topic exists."},
    {"E_KAFKA_TLS", "The TLS handshake with the broker failed (not a TLS listener, protocol mismatch). widen stops.",
     "Check `security.protocol` and the `ssl.*` properties against the listener."},
    {"E_KAFKA_TLS_CERT", "The broker's certificate is not trusted. widen stops.",
     "Set `ssl.ca.location` to the CA that signed it."},
    {"E_KAFKA_TLS_HOSTNAME", "The broker's certificate does not name the address widen connected to. widen stops.",
     "Connect by a name the certificate has, or fix the certificate."},
    {"E_KAFKA_UNKNOWN_TOPIC", "A source topic does not exist.", "Create it, or fix the source's topic name."},
    {"E_METRICS_LISTEN", "The metrics listener could not bind its address (port in use, no permission).",
     "Choose another `metrics.listen` port or stop what holds it."},
    {"E_NESTED_KEY_NULL", "A nested key contains null and `nested-key-null-strategy` is `error`. Dead-lettered.",
     "Fix the input, or choose another `nested-key-null-strategy`."},
    {"E_NOMEM", "Out of memory. widen stops; a restart resumes from the last commit.",
     "Give the process more memory, or lower `state.cache-memory-mb` / `pipeline.batch-size`."},
    {"E_NOT_NULL", "A record carries NULL for a NOT NULL column. Dead-lettered.",
     "Fix the input or drop NOT NULL from the column."},
    {"E_NO_KEY",
     "A record lacks (part of) its primary key. Dead-lettered. Also a PostgreSQL delete through Debezium whose "
     "before image holds only the table's key (REPLICA IDENTITY DEFAULT) when the wide key is another column.",
     "Fix the source's key mapping or the producer; for the delete, declare the source's own `primary-key` "
     "(docs/source-keys.md) or set REPLICA IDENTITY FULL."},
    {"E_OUTPUT_TOO_LARGE",
     "The changelog message a record caused is larger than the producer's `message.max.bytes`, or than the "
     "topic's `max.message.bytes` (read at the first send to the topic, and again after the broker refused a "
     "message for its size). The record is dead-lettered; the state has the change.",
     "Raise `message.max.bytes` in `sink.properties` (and the topic's `max.message.bytes`)."},
    {"E_PRODUCER_FATAL",
     "The transactional producer was fenced or turned fatal (another process took over the `transactional.id`). widen "
     "stops.",
     "Make sure one process runs per `group.instance.id`; a restart resumes from the last commit."},
    {"E_PRODUCE_AVRO",
     "`widen produce --format debezium-avro` could not encode a line (not a JSON object, a member that does not fit "
     "the schema inferred from the topic's first message).",
     "Fix the line the message names; every line of a topic needs the members of its first."},
    {"E_PU_DELETE_NOT_ACCEPTED", "A partial-update table without a delete policy received a retraction. Dead-lettered.",
     "Configure `ignore-delete`, `partial-update.remove-record-on-delete`, or sequence groups."},
    {"E_REBUILD",
     "A rebuild after a definition change cannot compute the difference from the old state (it is not at the group's "
     "committed offsets).",
     "Do what the message says (put the old state back and run the old definition to the group's offsets), or build "
     "anew."},
    {"E_RECOVER", "Recovering a commit that was prepared but not finished. Retried by itself.",
     "Nothing; persistent ones point to the broker (transactions) or the state directory."},
    {"E_REGISTRY",
     "The schema registry did not answer or answered 5xx. Retried with backoff; records wait, none is dropped.",
     "Check the registry (`curl <url>/subjects`)."},
    {"E_REPARTITION_RECORD",
     "A record of a repartition topic was not written by this table's config (another version or table).",
     "Do not share internal topics between tables; delete the topic if a table was rebuilt."},
    {"E_RESTORE", "Restoring tasks from the state changelog topic made no progress for 60 s. widen stops.",
     "Check that the changelog topic exists and is readable; a restart tries again."},
    {"E_SCHEMA_NOT_FOUND", "The registry has no schema with the record's schema id. Dead-lettered.",
     "Check that widen and the producer use the same registry."},
    {"E_SINK_DELIVERY", "Changelog messages could not be delivered. The batch is not committed; retried.",
     "Check the sink topic and the broker (ACLs, `min.insync.replicas`)."},
    {"E_SINK_FATAL", "The sink producer turned fatal. widen stops; a restart resumes from the last commit.",
     "Read the reason in the message."},
    {"E_SINK_PRODUCE", "A changelog message was refused by the producer (e.g. too large for the broker).",
     "Raise the message size limits, or check the topic."},
    {"E_SINK_TIMEOUT", "Changelog messages were still in flight at a time limit. Retried.",
     "Check the broker's health and `delivery.timeout.ms`."},
    {"E_STATE_CORRUPT",
     "The state directory is damaged (a file RocksDB refuses, a value widen cannot read); widen stops, naming the "
     "file.",
     "Move the directory aside (or start with `state.on-corruption: rebuild`, which does it): its tasks are rebuilt "
     "without repeating output. [State directory](#state-directory-full-disk-and-corruption) says more."},
    {"E_STOPPED", "A stop came before an operation finished (a retriable condition, not a failure).",
     "Nothing; the next start resumes from the last commit."},
    {"E_STORE_LOCKED", "Another process holds the state directory (RocksDB lock).",
     "Run one `widen run` per state directory; `status`/`rows` read without the lock."},
    {"E_STORE_OPEN", "The state store could not be opened (permissions, disk, incompatible files).",
     "Check the directory and the message's reason."},
    {"E_STORE_READ", "Reading the state store failed.", "Check the disk; the message carries RocksDB's reason."},
    {"E_STORE_WRITE", "Writing the state store failed (disk full?). widen stops without committing.",
     "Free disk space; a restart resumes from the last commit."},
    {"E_TASK_TRANSITION", "A task was asked for an illegal state change: a bug.", "Report it with the log."},
    {"E_TOPIC_CREATE", "A topic widen creates (sink, dead letters, internal) could not be created. Retried.",
     "Check ACLs and the broker's `auto.create.topics.enable`; or create the topic yourself."},
    {"E_TOPIC_METADATA", "The metadata of a topic widen writes could not be read. Retried.", "Check the broker."},
    {"E_TRACE", "The `--trace` file cannot be opened or written.", "Check the path and permissions."},
    {"E_TXN_ABORT", "Aborting a Kafka transaction failed. Retried.", "Check the broker's transaction coordinator."},
    {"E_TXN_BEGIN", "Beginning a Kafka transaction failed. Retried.", "Check the broker's transaction coordinator."},
    {"E_TXN_COMMIT",
     "Committing a Kafka transaction failed; the commit is retried or aborted and its records read again.",
     "Check the broker; frequent ones: `transaction.timeout.ms` too low."},
    {"E_TXN_INIT", "Initialising transactions failed. Retried.",
     "Check the broker (transaction state log replication: `transaction.state.log.replication.factor` vs brokers)."},
    {"E_TXN_OFFSETS", "Sending the input offsets to the transaction failed. Retried.", "Check the group coordinator."},
    {"E_TYPE",
     "A field's value cannot be converted to its column's type. Dead-lettered with the field, column and value.",
     "Fix the producer, or the column's type, or the source's conversion options (`time-unit`, `decimal-encoding`)."},
    {"E_UNKNOWN_COLUMN", "A record names a column the table does not have. Dead-lettered.",
     "Fix the input or the mapping."},
    /* ids other changes add to common/error_ids.h */
    {"C_SOURCE_KEY_EMPTY", "A source's `primary-key:` names no field.",
     "List the fields of the source's own primary key."},
    {"C_SOURCE_KEY_LOOKUP",
     "A source has both `lookup: true` and `primary-key:`; a lookup is kept by its `key:` already.",
     "Remove `primary-key:` from the lookup source."},
    {"C_SOURCE_KEY_PER_PARTITION",
     "A source with its own `primary-key:` under `pipeline.tasks: per-partition` whose topic has another partition "
     "count than the table, or that says `repartition: false` (its derived records go through its repartition "
     "topic).",
     "Give the topic the table's partition count (or set `pipeline.partitions`), and remove `repartition: false`; or "
     "set `pipeline.tasks: single`."},
    {"C_SOURCE_KEY_REQUIRED",
     "A source format whose deletes carry only the Kafka key (e.g. `upsert-json` tombstones) without `primary-key:`.",
     "Add `primary-key: [<its key fields>]` to the source."},
    {"C_TEMPORAL_UNIT",
     "An integer time or timestamp value whose unit nothing says (no logical type, no Debezium time name, no "
     "`_ms`/`_us`/`_ns` path) while the source's unit option is `auto`. widen stops rather than guess.",
     "Set the source option the message names (`timestamp-unit` / `time-unit`) to the source's unit."},
    {"E_COMMIT_PHASE",
     "A commit was asked for an illegal phase change: a bug. widen stops; a restart resumes from the last commit.",
     "Report it with the log."},
    {"E_TXN_UNKNOWN",
     "A transaction's outcome stayed unknown past `transaction.timeout.ms` and could not be resolved in-process.",
     "Restart widen: the open commit is resolved from the group's committed offsets."},
    {"E_STATE_DISK_FULL",
     "The state directory's filesystem has less free space than `state.min-free-bytes`; widen stops before the disk is "
     "full (the open commit is aborted, nothing is lost).",
     "Free space on that filesystem (or move `state.dir` to a larger one, or lower `state.min-free-bytes`) and start "
     "widen again."},
};

const wd_error_doc_t *wd_error_doc(const char *id) {
  for (size_t i = 0; id && i < sizeof(DOCS) / sizeof(DOCS[0]); i++)
    if (!strcmp(DOCS[i].id, id)) return &DOCS[i];
  return NULL;
}

/* The ids in error_ids.h's order, with whether each is retriable. */
#define WD_DOC_ID(id, retriable) {#id, retriable},
static const struct {
  const char *id;
  int retriable;
} IDS[] = {WD_ERROR_IDS(WD_DOC_ID)};
#undef WD_DOC_ID

int wd_error_docs_write(FILE *f) {
  int rc = 0;
  const char *const heads[2] = {"Configuration and start-up (`C_...`): widen does not start, or the command stops",
                                "Records and runtime (`E_...`)"};
  for (int part = 0; part < 2; part++) {
    if (fprintf(f, "%s### %s\n\n| id | retried | what it means | what to do |\n| --- | --- | --- | --- |\n",
                part ? "\n" : "", heads[part]) < 0)
      rc = -1;
    for (size_t i = 0; i < sizeof(IDS) / sizeof(IDS[0]); i++) {
      if ((IDS[i].id[0] == 'C') != (part == 0)) continue;
      const wd_error_doc_t *d = wd_error_doc(IDS[i].id);
      if (fprintf(f, "| `%s` | %s | %s | %s |\n", IDS[i].id, IDS[i].retriable ? "yes" : "no",
                  d ? d->meaning : "(undocumented)", d ? d->action : "") < 0)
        rc = -1;
    }
  }
  return rc;
}
