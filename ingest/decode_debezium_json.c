/*
 * ingest/decode_debezium_json.c — the debezium-json source format: Debezium change events
 * written by Kafka Connect's JsonConverter, with or without schemas.enable ({"schema","payload"}
 * envelope), and widen's own debezium-json output (changelog/changelog.h), which has the same
 * shape. The op and images are found here; ingest/event.c makes the change records and
 * ingest/json_event.c reads the values (source.h has the conversion table).
 */
#include <string.h>

#include "ingest/json_event.h"

/* The image handle of key name in the payload: NULL for absent or null; *bad when not an
 * object. */
static const wd_jimg_t *wd_dbz_image(wd_jev_t *x, const char *name, wd_jimg_t *img, bool *bad) {
  int i = wd_jev_get(x, wd_jev_root(x), name);
  if (wd_jev_is_null(x, i)) return NULL;
  if (wd_jev_type(x, i) != WD_JT_OBJECT) {
    *bad = true;
    return NULL;
  }
  img->obj = i;
  img->overlay = -1;
  return img;
}

wd_error_t *wd_decode_debezium_json(const wd_source_t *src, const wd_schema_t *schema, const wd_kafka_meta_t *meta,
                                    const void *value, size_t len, wd_changes_t *out) {
  wd_jev_t *x = NULL;
  wd_error_t *err = wd_jev_start(out, src, schema, meta, NULL, &x);
  if (err) return err;
  if (wd_jev_parse(x, value, len, true, &err)) return wd_jev_finish(x, err);
  int root = wd_jev_root(x);
  int op = wd_jev_get(x, root, "op");
  char found[80];
  if (op < 0) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': no \"op\" field: not a Debezium change event", src->name);
    return wd_jev_finish(x, err);
  }
  static const char *const ops[] = {"c", "r", "u", "d"};
  int k = 0;
  while (k < 4 && !wd_jev_str_eq(x, op, ops[k])) k++;
  if (k == 4) {
    wd_jev_text(x, op, found, sizeof(found));
    if (wd_jev_str_eq(x, op, "t"))
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"t\" (truncate) is not supported", src->name);
    else if (wd_jev_str_eq(x, op, "m"))
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"m\" (a logical decoding message) is not supported",
                         src->name);
    else
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': unknown op %s (expected \"c\", \"r\", \"u\" or \"d\")",
                         src->name, found);
    return wd_jev_finish(x, err);
  }
  out->op = ops[k][0];
  int64_t ts;
  int tst = wd_jev_get(x, root, "ts_ms");
  if (wd_jev_type(x, tst) == WD_JT_PRIMITIVE && wd_jev_int(x, tst, &ts) == 0) out->ts_ms = ts;
  wd_jimg_t bi, ai;
  bool bad_b = false, bad_a = false;
  const wd_jimg_t *before = wd_dbz_image(x, "before", &bi, &bad_b), *after = wd_dbz_image(x, "after", &ai, &bad_a);
  if (bad_b || bad_a) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"%s\": \"%s\" is neither an object nor null",
                       src->name, ops[k], bad_b ? "before" : "after");
    return wd_jev_finish(x, err);
  }
  wd_event_t ev = {.op = k < 2    ? WD_EV_INSERT
                         : k == 2 ? WD_EV_UPDATE
                                  : WD_EV_DELETE,
                   .op_text = ops[k],
                   .before = before,
                   .after = after};
  /* PostgreSQL's REPLICA IDENTITY DEFAULT: a delete's before image is the key and defaults */
  if (k == 3 && before && wd_jev_key_only_image(x, before->obj) < 0) return wd_jev_finish(x, NULL);
  if (k == 2 && !before) wd_jev_note_update_without_before(x);
  wd_image_reader_t rd = wd_jev_reader(x, "before", "after");
  return wd_jev_finish(x, wd_event_emit(src, schema, meta, &rd, &ev, out));
}

static wd_error_t *wd_dbz_json_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                      const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  return wd_decode_debezium_json(src, schema, meta, value, len, out);
}

const wd_format_t wd_format_debezium_json = {
    .name = "debezium-json",
    .summary = "Debezium change events (JsonConverter, with or without schemas.enable); also widen's own debezium-json "
               "output",
    .caps = WD_FORMAT_CAP_BEFORE_IMAGE | WD_FORMAT_CAP_NO_BEFORE | WD_FORMAT_CAP_ENVELOPE,
    .decimal_default = WD_DECIMAL_AUTO,
    .decode = wd_dbz_json_decode,
};
