/*
 * ingest/decode_upsert_json.c — the upsert-json source format: an upsert (compacted) topic, as
 * Flink's upsert-kafka connector and Kafka Streams' KTable topics write it: the Kafka key holds the
 * row's primary key as a JSON object ({"payment_id":100426}, or JsonConverter's
 * {"schema","payload"} envelope of one), the value the whole current row as a JSON object (an
 * envelope too), and a null value (a tombstone) deletes the key's row.
 *   value an object  -> +I(value): the row as it is now (a later one for the same key replaces it);
 *   null value       -> -D with the key's fields only (image `key`; every other column absent);
 *   null key and value -> nothing (a tombstone with no key).
 * There is no before image: the source needs its own `primary-key` (join/srckey.h), whose stored
 * rows turn these records into full updates, deletes and moves. Image paths read the value's
 * fields (`payment_id`, `address.city`) and, for a delete, the key's; `$key.` paths read the key.
 * A key that is not a JSON object is E_DECODE on a delete.
 */
#include <string.h>

#include "ingest/json_event.h"

static wd_error_t *wd_upsert_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                    const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  wd_jev_t *x = NULL;
  wd_error_t *err = wd_jev_start(out, src, schema, meta, NULL, &x);
  if (err) return err;
  int r = wd_jev_parse(x, value, len, true, &err);
  if (r < 0) return wd_jev_finish(x, err);
  wd_event_t ev = {.op_text = NULL};
  wd_jimg_t img = {.obj = -1, .overlay = -1};
  if (r == 1) { /* a tombstone: the delete of the Kafka key's row */
    if (!meta || !meta->key || !meta->key_len) return wd_jev_finish(x, NULL); /* no key: nothing to delete */
    out->flags &= ~WD_CHANGES_TOMBSTONE;
    r = wd_jev_parse(x, meta->key, meta->key_len, true, &err);
    if (r != 0) {
      if (r == 1) out->flags &= ~WD_CHANGES_TOMBSTONE;
      wd_error_destroy(err);
      err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                         "source '%s': upsert-json tombstone whose Kafka key is not a "
                         "JSON object (the key's fields say which row is deleted)",
                         src->name);
      return wd_jev_finish(x, err);
    }
    img.obj = wd_jev_root(x);
    ev.op = WD_EV_DELETE;
    ev.op_text = "tombstone";
    ev.before = &img;
    out->op = 'd';
  } else {
    img.obj = wd_jev_root(x);
    ev.op = WD_EV_INSERT;
    ev.op_text = "upsert";
    ev.after = &img;
    out->op = 'c';
  }
  wd_image_reader_t rd = wd_jev_reader(x, "key", "value");
  return wd_jev_finish(x, wd_event_emit(src, schema, meta, &rd, &ev, out));
}

const wd_format_t wd_format_upsert_json = {
    .name = "upsert-json",
    .summary = "an upsert topic: the value is the row as a JSON object, a null value deletes the Kafka key's row "
               "(needs the source's `primary-key`)",
    .caps = WD_FORMAT_CAP_NO_BEFORE,
    .decimal_default = WD_DECIMAL_TEXT,
    .decode = wd_upsert_decode,
};
