/*
 * app/runtime/repartition.c — the repartition plan and records (see repartition.h).
 */
#include "app/runtime/repartition.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/config/config.h"
#include "app/runtime/collector.h"
#include "changelog/changelog.h"
#include "sink/producer.h"
#include "join/row_codec.h"

#define WD_RP_MAGIC "WRP1"

wd_error_t *wd_repartition_plan(const wd_repartition_input_t *in, size_t n, int64_t configured, int32_t *partitions,
                                bool *out, char **why) {
  wd_buf_t w = {0};
  wd_error_t *err = NULL;
  if (why) *why = NULL;
  int32_t np = (int32_t)configured;
  for (size_t i = 0; i < n; i++) {
    out[i] = false;
    for (size_t k = 0; k < in[i].ntopics; k++)
      if (in[i].counts[k] <= 0)
        return wd_error_new(WD_ERR_CONFIG, C_SOURCE_TOPIC_MISSING,
                            "source '%s': topic %s does not exist (per-partition tasks need every source topic's "
                            "partition count at start: create it first)",
                            in[i].name, in[i].topics[k]);
  }
  if (np <= 0) {
    for (int pass = 0; pass < 2 && np <= 0; pass++) /* pass 0: sources not forced; 1: all */
      for (size_t i = 0; i < n; i++) {
        if (in[i].lookup || (pass == 0 && in[i].mode == WD_CONFIG_REPARTITION_TRUE)) continue;
        for (size_t k = 0; k < in[i].ntopics; k++)
          if (in[i].counts[k] > np) np = in[i].counts[k];
      }
    if (np <= 0) np = 1;
  }
  for (size_t i = 0; i < n && !err; i++) {
    if (in[i].lookup) continue;
    const char *odd = NULL;
    int odd_count = 0;
    for (size_t k = 0; k < in[i].ntopics && !odd; k++)
      if (in[i].counts[k] != np) {
        odd = in[i].topics[k];
        odd_count = in[i].counts[k];
      }
    if (in[i].mode == WD_CONFIG_REPARTITION_TRUE) {
      out[i] = true;
      if (wd_buf_printf(&w, "source '%s': repartition: true: through its repartition topic (%d partitions)\n",
                        in[i].name, np))
        err = wd_error_nomem();
    } else if (odd && in[i].mode == WD_CONFIG_REPARTITION_FALSE) {
      err = wd_error_new(WD_ERR_CONFIG, C_TASKS_NOT_COPARTITIONED,
                         "source '%s': topic %s has %d partitions but the table has %d (pipeline.partitions or the "
                         "other sources) and the source says `repartition: false`: set `repartition: auto` (or true) "
                         "on it to route it through a repartition topic, or give the topic %d partitions",
                         in[i].name, odd, odd_count, np, np);
    } else if (odd) {
      out[i] = true;
      if (wd_buf_printf(&w, "source '%s': topic %s has %d partitions, the table %d: through its repartition topic\n",
                        in[i].name, odd, odd_count, np))
        err = wd_error_nomem();
    }
  }
  for (size_t i = 0; i < n && !err; i++) {
    if (in[i].lookup || out[i]) continue;
    size_t others = 0;
    for (size_t k = 0; k < n; k++) others += out[k];
    if (!others && wd_buf_printf(&w,
                                 "source '%s': co-partitioned (%d partitions, like the table): read "
                                 "directly, each record checked to be in its wide key's partition\n",
                                 in[i].name, np))
      err = wd_error_nomem();
  }
  /* one repartitioned source puts every main source through a repartition topic: its topic is
   * partitioned by murmur2 of widen's key bytes, the sources by their producers' key bytes (a
   * Debezium key is JSON, maybe with a schema), so partition i of both is not the same keys */
  size_t nrp = 0, nmain = 0;
  for (size_t i = 0; i < n; i++) {
    nrp += out[i];
    nmain += !in[i].lookup;
  }
  for (size_t i = 0; i < n && !err && nrp && nrp < nmain; i++) {
    if (in[i].lookup || out[i]) continue;
    if (in[i].mode == WD_CONFIG_REPARTITION_FALSE)
      err = wd_error_new(WD_ERR_CONFIG, C_TASKS_NOT_COPARTITIONED,
                         "source '%s' says `repartition: false`, but another source goes through a repartition topic, "
                         "which is partitioned by widen's own key bytes, not by this topic's producer: set "
                         "`repartition: auto` on it (every main source then goes through one)",
                         in[i].name);
    else if (wd_buf_printf(&w,
                           "source '%s': through its repartition topic too (another source needs one, and a "
                           "repartition topic is partitioned by widen's key bytes, not by this topic's producer)\n",
                           in[i].name))
      err = wd_error_nomem();
    out[i] = true;
  }
  if (!err && why && w.len && !wd_buf_putc(&w, 0)) {
    *why = (char *)w.data;
    w.data = NULL;
  }
  wd_buf_free(&w);
  if (!err) *partitions = np;
  return err;
}

char *wd_repartition_topic(const char *group, const char *table, const char *source) {
  char *s = NULL;
  return asprintf(&s, "%s-%s-%s-repartition", group, table, source) < 0 ? NULL : s;
}

static int put_str(wd_buf_t *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  return wd_buf_put_varint(b, n) || wd_buf_append(b, s ? s : "", n);
}

int wd_repartition_encode(const wd_schema_t *schema, const char *source, const wd_kafka_meta_t *origin,
                          wd_row_t *const *rows, size_t n, wd_buf_t *scratch, wd_buf_t *out) {
  if (wd_buf_append(out, WD_RP_MAGIC, 4) || put_str(out, source) || put_str(out, origin->topic) ||
      wd_buf_put_zigzag(out, origin->partition) || wd_buf_put_zigzag(out, origin->offset) ||
      wd_buf_put_zigzag(out, origin->timestamp) || wd_buf_put_varint(out, n))
    return -1;
  for (size_t i = 0; i < n; i++) {
    wd_buf_reset(scratch);
    size_t nabsent = 0;
    for (size_t c = 0; rows[i]->absent && c < rows[i]->n; c++) nabsent += rows[i]->absent[c];
    if (wd_row_encode(schema, rows[i], false, 0, scratch) || wd_buf_put_varint(out, scratch->len) ||
        wd_buf_append(out, scratch->data, scratch->len) || wd_buf_put_varint(out, nabsent))
      return -1;
    for (size_t c = 0; rows[i]->absent && c < rows[i]->n; c++)
      if (rows[i]->absent[c] && wd_buf_put_varint(out, c)) return -1;
  }
  return 0;
}

static int get_str(wd_reader_t *r, char **out) {
  uint64_t n = 0;
  const uint8_t *p = NULL;
  if (wd_reader_varint(r, &n) || n > (uint64_t)(r->end - r->p) || wd_reader_bytes(r, (size_t)n, &p)) return -1;
  if (!(*out = strndup((const char *)p, (size_t)n))) return -2;
  return 0;
}

void wd_repartition_rec_free(const wd_schema_t *schema, wd_repartition_rec_t *rec) {
  if (!rec) return;
  free(rec->source);
  free(rec->topic);
  for (size_t i = 0; i < rec->n; i++) wd_row_destroy(schema, rec->rows[i]);
  free(rec->rows);
  memset(rec, 0, sizeof(*rec));
}

wd_error_t *wd_repartition_decode(const wd_schema_t *schema, const void *value, size_t len, wd_repartition_rec_t *rec) {
  memset(rec, 0, sizeof(*rec));
  wd_reader_t r = {value, (const uint8_t *)value + len};
  const uint8_t *magic = NULL;
  int64_t part = 0;
  uint64_t n = 0;
  wd_error_t *err = NULL;
  int rc = 0;
  if (!value || len < 4 || wd_reader_bytes(&r, 4, &magic) || memcmp(magic, WD_RP_MAGIC, 4)) goto bad;
  if ((rc = get_str(&r, &rec->source)) || (rc = get_str(&r, &rec->topic))) {
    if (rc == -2) goto nomem;
    goto bad;
  }
  if (wd_reader_zigzag(&r, &part) || wd_reader_zigzag(&r, &rec->offset) || wd_reader_zigzag(&r, &rec->timestamp) ||
      wd_reader_varint(&r, &n) || n > len)
    goto bad;
  rec->partition = (int32_t)part;
  if (n && !(rec->rows = calloc((size_t)n, sizeof(*rec->rows)))) goto nomem;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t rl = 0, na = 0;
    const uint8_t *rp = NULL;
    bool tomb = false;
    if (wd_reader_varint(&r, &rl) || rl > (uint64_t)(r.end - r.p) || wd_reader_bytes(&r, (size_t)rl, &rp)) goto bad;
    if ((err = wd_row_decode(schema, rp, (size_t)rl, &rec->rows[i], &tomb))) {
      if (wd_error_is(err, WD_EID_E_NOMEM)) goto out;
      wd_error_destroy(err);
      err = NULL;
      goto bad;
    }
    rec->n++;
    if (tomb || wd_reader_varint(&r, &na) || na > schema->ncols) goto bad;
    for (uint64_t a = 0; a < na; a++) {
      uint64_t c = 0;
      if (wd_reader_varint(&r, &c) || c >= schema->ncols) goto bad;
      if (wd_row_set_absent(rec->rows[i], (size_t)c)) goto nomem;
    }
  }
  if (r.p != r.end) goto bad;
  return NULL;
bad:
  err = wd_error_new(WD_ERR_DECODE, E_REPARTITION_RECORD,
                     "not a repartition record of this table (version 1, %zu bytes): written by another widen version "
                     "or another table's config",
                     len);
  goto out;
nomem:
  err = wd_error_nomem();
out:
  wd_repartition_rec_free(schema, rec);
  return err;
}

char *wd_repartition_key_mismatch(const wd_source_t *src, const wd_schema_t *schema, const void *key, size_t klen) {
  if (!key || !klen) return NULL;
  json_t *j = json_loadb(key, klen, JSON_DECODE_ANY, NULL);
  if (!j) return NULL;
  json_t *obj = j;
  json_t *payload = json_is_object(j) ? json_object_get(j, "payload") : NULL;
  if (payload && json_object_get(j, "schema")) obj = payload; /* Debezium JsonConverter with schemas */
  char *why = NULL;
  if (!json_is_object(obj) || json_object_size(obj) == 0) goto done;
  bool any_image = false, match = false;
  wd_buf_t pk = {0}, kf = {0};
  for (size_t m = 0; m < src->ncols; m++) {
    const wd_source_col_t *c = &src->cols[m];
    if (!wd_schema_is_pk(schema, c->col)) continue;
    if (c->kind == WD_MAP_KEY) match = true; /* read from the key itself */
    if (c->kind != WD_MAP_IMAGE || !c->nseg) continue;
    any_image = true;
    if (json_object_get(obj, c->seg[0])) match = true;
    (void)(wd_buf_printf(&pk, "%s%s", pk.len ? ", " : "", c->seg[0]));
  }
  if (any_image && !match) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
      (void)v;
      (void)(wd_buf_printf(&kf, "%s%s", kf.len ? ", " : "", k));
    }
    if (!wd_buf_putc(&pk, 0) && !wd_buf_putc(&kf, 0) &&
        asprintf(&why, "its Kafka key has the field(s) %s; the table's primary key comes from its field(s) %s",
                 (char *)kf.data, (char *)pk.data) < 0)
      why = NULL;
  }
  wd_buf_free(&pk);
  wd_buf_free(&kf);
done:
  json_decref(j);
  return why;
}

/* ---- a pipeline's repartition state ---------------------------------------------------------- */

struct wd_repart {
  size_t nsources;
  int32_t partitions; /* the table's partition count N (per-partition tasks), else 0 */
  bool *on; /* per source: repartitioned (NULL before a plan) */
  char **topic; /* per source: its repartition topic (owned), NULL when not repartitioned */
  bool forward; /* a live run: records of repartitioned sources are forwarded */
  bool *checked; /* per source: its Kafka key was checked against the wide key */
  bool *fallback; /* per source: read directly, its records not in their key's partition forwarded */
  wd_buf_t jkey; /* the canonical (JSON) key bytes of one change record */
  const char **task_topics; /* the topics of the tasks (co-partitioned sources', repartition topics) */
  size_t ntask, cap_task;
  const char **stateless; /* the topics whose records are only forwarded */
  size_t nstateless, cap_stateless;
  wd_buf_t key, val, row; /* forward's scratch: key bytes, record value, one row's bytes */
  bool *sent; /* ... per change record of the message: forwarded already */
  wd_row_t **group; /* ... the change records of one key */
  size_t *off; /* ... where each record's key starts in key (n + 1) */
  size_t cap; /* entries of sent / group (off: cap + 1) */
};

wd_repart_t *wd_repart_new(size_t nsources) {
  wd_repart_t *rp = calloc(1, sizeof(*rp));
  if (!rp) return NULL;
  rp->nsources = nsources;
  rp->task_topics = calloc(1, sizeof(*rp->task_topics));
  rp->stateless = calloc(1, sizeof(*rp->stateless));
  if (!rp->task_topics || !rp->stateless) {
    wd_repart_destroy(rp);
    return NULL;
  }
  return rp;
}

void wd_repart_destroy(wd_repart_t *rp) {
  if (!rp) return;
  free(rp->task_topics);
  free(rp->stateless);
  for (size_t i = 0; rp->topic && i < rp->nsources; i++) free(rp->topic[i]);
  free(rp->topic);
  free(rp->on);
  free(rp->checked);
  free(rp->fallback);
  wd_buf_free(&rp->jkey);
  wd_buf_free(&rp->key);
  wd_buf_free(&rp->val);
  wd_buf_free(&rp->row);
  free(rp->sent);
  free(rp->group);
  free(rp->off);
  free(rp);
}

wd_error_t *wd_repart_plan(wd_repart_t *rp, const wd_repartition_input_t *in, int64_t configured, bool forward,
                           const char *group, const char *table, char **why) {
  size_t n = rp->nsources;
  if (why) *why = NULL;
  if (!rp->on && !(rp->on = calloc(n ? n : 1, sizeof(*rp->on)))) return wd_error_nomem();
  if (!rp->topic && !(rp->topic = calloc(n ? n : 1, sizeof(*rp->topic)))) return wd_error_nomem();
  if (!rp->checked && !(rp->checked = calloc(n ? n : 1, sizeof(*rp->checked)))) return wd_error_nomem();
  if (!rp->fallback && !(rp->fallback = calloc(n ? n : 1, sizeof(*rp->fallback)))) return wd_error_nomem();
  rp->forward = forward;
  wd_error_t *err = wd_repartition_plan(in, n, configured, &rp->partitions, rp->on, why);
  for (size_t i = 0; i < n && !err && forward; i++) {
    /* `auto` read directly: a record found outside its key's partition goes through the topic */
    rp->fallback[i] = !rp->on[i] && !in[i].lookup && in[i].mode == WD_CONFIG_REPARTITION_AUTO;
    if ((rp->on[i] || rp->fallback[i]) && !(rp->topic[i] = wd_repartition_topic(group, table, in[i].name)))
      err = wd_error_nomem();
  }
  return err;
}

int32_t wd_repart_partitions(const wd_repart_t *rp) { return rp ? rp->partitions : 0; }
bool wd_repart_forwarding(const wd_repart_t *rp) { return rp && rp->forward; }
bool wd_repart_on(const wd_repart_t *rp, size_t si) { return rp && rp->on && si < rp->nsources && rp->on[si]; }

const char *wd_repart_topic(const wd_repart_t *rp, size_t si) {
  return rp && rp->topic && si < rp->nsources ? rp->topic[si] : NULL;
}

static int push_topic(const char ***v, size_t *n, size_t *cap, const char *topic) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    const char **t = realloc(*v, (c + 1) * sizeof(*t));
    if (!t) return -1;
    *v = t;
    *cap = c;
  }
  (*v)[(*n)++] = topic;
  (*v)[*n] = NULL;
  return 0;
}

int wd_repart_add_topic(wd_repart_t *rp, const char *topic, bool stateless) {
  return stateless ? push_topic(&rp->stateless, &rp->nstateless, &rp->cap_stateless, topic)
                   : push_topic(&rp->task_topics, &rp->ntask, &rp->cap_task, topic);
}

const char *const *wd_repart_task_topics(const wd_repart_t *rp, size_t *n) {
  *n = rp->ntask;
  return rp->task_topics;
}

const char *const *wd_repart_stateless_topics(const wd_repart_t *rp, size_t *n) {
  *n = rp->nstateless;
  return rp->stateless;
}

wd_error_t *wd_repart_check_key(wd_repart_t *rp, size_t si, const wd_source_t *src, const wd_schema_t *schema,
                                const wd_kafka_meta_t *origin) {
  if (!rp->checked || si >= rp->nsources || rp->checked[si] || !rp->forward || rp->fallback[si]) return NULL;
  rp->checked[si] = true;
  char *why = wd_repartition_key_mismatch(src, schema, origin->key, origin->key_len);
  if (!why) return NULL;
  wd_error_t *err = wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEYING,
                                 "source '%s' (%s[%d]@%" PRId64 "): %s, so one wide key's records are spread over "
                                 "partitions and tasks; set `repartition: true` on this source (its records then go "
                                 "through a repartition topic keyed by the wide key)",
                                 src->name, origin->topic, origin->partition, origin->offset, why);
  free(why);
  return err;
}

wd_error_t *wd_repart_forward(wd_repart_t *rp, size_t si, const wd_schema_t *schema, const char *source,
                              const wd_kafka_meta_t *origin, wd_row_t *const *rows, size_t n, struct wd_collector *coll,
                              uint64_t *nsent) {
  if (n > rp->cap) { /* grow-only scratch, kept across records */
    bool *sent = realloc(rp->sent, n * sizeof(*sent));
    if (sent) rp->sent = sent;
    wd_row_t **group = realloc(rp->group, n * sizeof(*group));
    if (group) rp->group = group;
    size_t *off = realloc(rp->off, (n + 1) * sizeof(*off));
    if (off) rp->off = off;
    if (!sent || !group || !off) return wd_error_nomem();
    rp->cap = n;
  }
  bool *sent = rp->sent;
  size_t *off = rp->off;
  wd_buf_reset(&rp->key);
  for (size_t k = 0; k < n; k++) {
    sent[k] = false;
    off[k] = rp->key.len;
    if (wd_row_key_encode(schema, rows[k], &rp->key)) return wd_error_nomem();
  }
  if (n) off[n] = rp->key.len;
  wd_error_t *err = NULL;
  for (size_t k = 0; k < n && !err; k++) {
    if (sent[k]) continue;
    const uint8_t *key = rp->key.data + off[k];
    size_t klen = off[k + 1] - off[k], ng = 0;
    for (size_t j = k; j < n; j++)
      if (!sent[j] && off[j + 1] - off[j] == klen && !memcmp(rp->key.data + off[j], key, klen)) {
        sent[j] = true;
        rp->group[ng++] = rows[j];
      }
    wd_buf_reset(&rp->val);
    if (wd_repartition_encode(schema, source, origin, rp->group, ng, &rp->row, &rp->val)) return wd_error_nomem();
    int32_t part =
        rp->on[si] ? wd_producer_partition_of(key, klen, rp->partitions) : wd_repart_home(rp, si, schema, rp->group[0]);
    if (part < 0) return wd_error_nomem();
    err = wd_collector_send(coll, WD_OUT_REPARTITION, rp->topic[si], part, key, klen, rp->val.data, rp->val.len);
    if (!err) (*nsent)++;
  }
  return err;
}

/* ---- where a key's records belong --------------------------------------------------------------- */

int32_t wd_repartition_direct_partition(const wd_schema_t *schema, const wd_row_t *row, int32_t partitions,
                                        wd_buf_t *scratch) {
  wd_buf_reset(scratch);
  wd_error_t *err = wd_changelog_encode_key_json(schema, row, scratch);
  if (err) {
    wd_error_destroy(err);
    return -1;
  }
  return wd_producer_partition_of(scratch->data, scratch->len, partitions);
}

int32_t wd_repart_home(wd_repart_t *rp, size_t si, const wd_schema_t *schema, const wd_row_t *row) {
  if (rp->on && si < rp->nsources && rp->on[si]) {
    wd_buf_reset(&rp->jkey);
    if (wd_row_key_encode(schema, row, &rp->jkey)) return -1;
    return wd_producer_partition_of(rp->jkey.data, rp->jkey.len, rp->partitions);
  }
  return wd_repartition_direct_partition(schema, row, rp->partitions, &rp->jkey);
}

bool wd_repart_fallback(const wd_repart_t *rp, size_t si) {
  return rp && rp->fallback && si < rp->nsources && rp->fallback[si] && rp->forward;
}

const char *wd_repart_canonical_key(const wd_repart_t *rp, size_t *len) {
  *len = rp->jkey.len;
  return (const char *)rp->jkey.data;
}

wd_error_t *wd_repart_misplaced_error(const wd_repart_t *rp, const wd_source_t *src, const wd_kafka_meta_t *origin,
                                      int32_t want) {
  /* the record's key as text, shortened, for the message */
  char shown[240];
  size_t n = 0;
  for (size_t i = 0; origin->key && i < origin->key_len && n + 5 < sizeof(shown); i++) {
    unsigned char c = ((const unsigned char *)origin->key)[i];
    n += (size_t)snprintf(shown + n, sizeof(shown) - n, c >= 0x20 && c < 0x7f && c != '\\' ? "%c" : "\\x%02x", c);
  }
  shown[n] = 0;
  bool cut = origin->key && n + 5 >= sizeof(shown);
  return wd_error_new(WD_ERR_CONFIG, C_SOURCE_KEYING,
                      "source '%s' (%s[%d]@%" PRId64 "): the record is in partition %d, but its wide key belongs to "
                      "partition %d of %d (murmur2 of widen's key bytes %.*s, as Kafka's default partitioner places "
                      "them); its Kafka key is %s%s%s%s, so the source is not co-partitioned with the table (Kafka "
                      "Connect's JsonConverter with schemas.enable=true, an Avro key, a key of other fields or "
                      "another partitioner) and its rows would be split over tasks. The source says `repartition: "
                      "false`: set `repartition: auto` (records outside their key's partition then go through its "
                      "repartition topic) or `true`",
                      src->name, origin->topic, origin->partition, origin->offset, origin->partition, want,
                      rp->partitions, (int)rp->jkey.len, (const char *)rp->jkey.data, origin->key ? "'" : "",
                      origin->key ? shown : "null", cut ? "..." : "", origin->key ? "'" : "");
}
