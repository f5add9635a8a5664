/*
 * ingest/positions.c — a group's committed offsets and the end offsets, without joining it
 * (see positions.h).
 */
#include "ingest/positions.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka.h"

static void wd_positions_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  wd_kafka_on_error(rk, err, reason, "status", opaque);
}

wd_error_t *wd_kafka_group_positions(const wd_kafka_conf_t *conf, const char *const *topics, size_t ntopics,
                                     int timeout_ms, wd_partition_position_t **out, size_t *n) {
  static const wd_kafka_kv_t fixed[] = {{"enable.auto.commit", "false"}, {NULL, NULL}};
  wd_error_t *err = NULL;
  rd_kafka_conf_t *rconf = NULL;
  rd_kafka_t *rk = NULL;
  rd_kafka_topic_partition_list_t *list = NULL;
  wd_partition_position_t *arr = NULL;
  char errstr[512];
  bool waiting = false;
  *out = NULL;
  *n = 0;
  if (!conf->group_id || !*conf->group_id)
    return wd_error_new(WD_ERR_CONFIG, C_KAFKA_GROUP, "the group's positions need a group id (kafka.group.id)");
  if ((err = wd_kafka_conf_build(conf, NULL, fixed, &rconf))) goto cleanup;
  rd_kafka_conf_set_error_cb(rconf, wd_positions_error_cb);
  rd_kafka_conf_set_opaque(rconf, &waiting);
  if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, rconf, errstr, sizeof(errstr)))) {
    err = wd_error_new(WD_ERR_KAFKA, E_KAFKA, "cannot create a Kafka client: %s", errstr);
    goto cleanup;
  }
  rconf = NULL;
  if ((err = wd_kafka_check_connect(rk, timeout_ms, "status", &waiting))) goto cleanup;
  if (!(list = rd_kafka_topic_partition_list_new(16))) goto nomem;
  for (size_t i = 0; i < ntopics; i++) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topics[i], NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rkt ? rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) : rd_kafka_last_error();
    if (!rerr && (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt == 0))
      rerr = md->topic_cnt == 1 && md->topics[0].err ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    if (rerr) {
      err = wd_kafka_error_make(rk, rerr,
                                rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ? WD_EID_E_KAFKA_UNKNOWN_TOPIC
                                                                                : WD_EID_E_KAFKA_METADATA,
                                "metadata of topic '%s'", topics[i]);
    } else {
      /* metadata lists partitions in any order: add them 0..cnt-1 */
      for (int p = 0; p < md->topics[0].partition_cnt; p++)
        rd_kafka_topic_partition_list_add(list, topics[i], p)->opaque = (void *)(uintptr_t)i;
    }
    if (md) rd_kafka_metadata_destroy(md);
    if (rkt) rd_kafka_topic_destroy(rkt);
    if (err) goto cleanup;
  }
  rd_kafka_resp_err_t rerr = rd_kafka_committed(rk, list, timeout_ms);
  if (rerr) {
    err = wd_kafka_error(rk, rerr, E_KAFKA, "committed offsets of group '%s'", conf->group_id);
    goto cleanup;
  }
  if (!(arr = calloc(list->cnt ? (size_t)list->cnt : 1, sizeof(*arr)))) goto nomem;
  for (int i = 0; i < list->cnt; i++) {
    const rd_kafka_topic_partition_t *tp = &list->elems[i];
    int64_t lo = -1, hi = -1;
    if (tp->err) {
      err = wd_kafka_error(rk, tp->err, E_KAFKA, "committed offset of %s [%" PRId32 "]", tp->topic, tp->partition);
      goto cleanup;
    }
    rerr = rd_kafka_query_watermark_offsets(rk, tp->topic, tp->partition, &lo, &hi, timeout_ms);
    if (rerr) {
      err = wd_kafka_error(rk, rerr, E_KAFKA, "end offset of %s [%" PRId32 "]", tp->topic, tp->partition);
      goto cleanup;
    }
    arr[i].topic = topics[(uintptr_t)tp->opaque];
    arr[i].partition = tp->partition;
    arr[i].committed = tp->offset >= 0 ? tp->offset : -1;
    arr[i].end = hi;
  }
  *out = arr;
  *n = (size_t)list->cnt;
  arr = NULL;
  goto cleanup;
nomem:
  err = wd_error_nomem();
cleanup:
  free(arr);
  if (list) rd_kafka_topic_partition_list_destroy(list);
  if (rk) rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  if (rconf) rd_kafka_conf_destroy(rconf);
  return err;
}
