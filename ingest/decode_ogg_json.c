/*
 * ingest/decode_ogg_json.c — the ogg-json source format: Oracle GoldenGate's JSON formatter,
 *   {"table":"OGG.TBL","op_type":"I|U|D|T","op_ts":"yyyy-MM-dd HH:mm:ss.ffffff",
 *    "current_ts":"...","pos":"...","primary_keys":[..],"before":{row}|null,"after":{row}|null}
 * I -> +I(after); U -> -U(before), +U(after) (-D/+I when the key changed; a before image without
 * some columns — GoldenGate's compressed updates — or none at all is completed from the stored
 * row); D -> -D(before). T (truncate) is E_DECODE: a truncate has no key. Values are typed JSON;
 * decimals are text or numbers; BYTES base64. `$.` mappings read the message (`$.op_ts`,
 * `$.pos`, `$.table`).
 */
#include <string.h>

#include "ingest/json_event.h"

static const wd_jimg_t *wd_ogg_image(wd_jev_t *x, const char *name, wd_jimg_t *img, bool *bad) {
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

static wd_error_t *wd_ogg_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                 const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  wd_jev_t *x = NULL;
  wd_error_t *err = wd_jev_start(out, src, schema, meta, NULL, &x);
  if (err) return err;
  if (wd_jev_parse(x, value, len, false, &err)) return wd_jev_finish(x, err);
  int op = wd_jev_get(x, wd_jev_root(x), "op_type");
  char found[80];
  wd_event_t ev = {.op_text = NULL};
  if (wd_jev_str_eq(x, op, "I")) {
    ev.op = WD_EV_INSERT;
    ev.op_text = "I";
    out->op = 'c';
  } else if (wd_jev_str_eq(x, op, "U")) {
    ev.op = WD_EV_UPDATE;
    ev.op_text = "U";
    out->op = 'u';
  } else if (wd_jev_str_eq(x, op, "D")) {
    ev.op = WD_EV_DELETE;
    ev.op_text = "D";
    out->op = 'd';
  } else {
    wd_jev_text(x, op, found, sizeof(found));
    if (op < 0)
      err =
          wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': no \"op_type\": not a GoldenGate JSON record", src->name);
    else if (wd_jev_str_eq(x, op, "T"))
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op_type \"T\" (truncate) is not supported", src->name);
    else
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': unknown op_type %s (expected \"I\", \"U\", \"D\")",
                         src->name, found);
    return wd_jev_finish(x, err);
  }
  wd_jimg_t bi, ai;
  bool bad_b = false, bad_a = false;
  ev.before = wd_ogg_image(x, "before", &bi, &bad_b);
  ev.after = wd_ogg_image(x, "after", &ai, &bad_a);
  if (bad_b || bad_a) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op_type \"%s\": \"%s\" is neither an object nor null",
                       src->name, ev.op_text, bad_b ? "before" : "after");
    return wd_jev_finish(x, err);
  }
  wd_image_reader_t rd = wd_jev_reader(x, "before", "after");
  return wd_jev_finish(x, wd_event_emit(src, schema, meta, &rd, &ev, out));
}

const wd_format_t wd_format_ogg_json = {
    .name = "ogg-json",
    .summary = "Oracle GoldenGate JSON (op_type I/U/D, before/after)",
    .caps = WD_FORMAT_CAP_BEFORE_IMAGE | WD_FORMAT_CAP_NO_BEFORE | WD_FORMAT_CAP_ENVELOPE,
    .decimal_default = WD_DECIMAL_TEXT,
    .decode = wd_ogg_decode,
};
