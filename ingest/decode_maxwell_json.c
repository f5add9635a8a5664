/*
 * ingest/decode_maxwell_json.c — the maxwell-json source format: Zendesk Maxwell's JSON,
 *   {"database":"db","table":"t","type":"insert|update|delete","ts":seconds,"xid":N,
 *    "commit":true,"data":{row},"old":{changed columns},"primary_key_columns":[..]}
 * insert (and bootstrap-insert) -> +I(data); delete -> -D(data: the deleted row); update ->
 * -U(before), +U(data), before being data with the columns of old (only the changed ones)
 * replaced by their old values (-D/+I when old changes the key). Bootstrap start/complete and
 * DDL events (type database-*, table-*) decode to no records. Values are typed JSON as Maxwell
 * writes them; decimals are text or numbers; BYTES base64 (Maxwell's binary encoding). ts_ms is
 * ts * 1000. `$.` mappings read the message (`$.ts`, `$.xid`, `$.xoffset`).
 */
#include <string.h>

#include "ingest/json_event.h"

static wd_error_t *wd_maxwell_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                     const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  wd_jev_t *x = NULL;
  wd_error_t *err = wd_jev_start(out, src, schema, meta, NULL, &x);
  if (err) return err;
  if (wd_jev_parse(x, value, len, false, &err)) return wd_jev_finish(x, err);
  int root = wd_jev_root(x);
  int type = wd_jev_get(x, root, "type");
  char found[80];
  if (wd_jev_type(x, type) != WD_JT_STRING) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': no \"type\" string: not a Maxwell event", src->name);
    return wd_jev_finish(x, err);
  }
  wd_jev_text(x, type, found, sizeof(found));
  wd_event_t ev = {.op_text = NULL};
  if (wd_jev_str_eq(x, type, "insert") || wd_jev_str_eq(x, type, "bootstrap-insert")) {
    ev.op = WD_EV_INSERT;
    out->op = 'c';
  } else if (wd_jev_str_eq(x, type, "update")) {
    ev.op = WD_EV_UPDATE;
    out->op = 'u';
  } else if (wd_jev_str_eq(x, type, "delete")) {
    ev.op = WD_EV_DELETE;
    out->op = 'd';
  } else if (strncmp(found, "\"bootstrap-", 11) == 0 || strncmp(found, "\"table-", 7) == 0 ||
             strncmp(found, "\"database-", 10) == 0) {
    return wd_jev_finish(x, NULL);
  } else {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                       "source '%s': Maxwell type %s is not supported (expected insert, "
                       "update or delete)",
                       src->name, found);
    return wd_jev_finish(x, err);
  }
  ev.op_text = ev.op == WD_EV_INSERT ? "insert" : ev.op == WD_EV_UPDATE ? "update" : "delete";
  int64_t ts;
  if (wd_jev_int(x, wd_jev_get(x, root, "ts"), &ts) == 0 && ts >= 0 && ts < INT64_MAX / 1000) out->ts_ms = ts * 1000;
  int data = wd_jev_get(x, root, "data"), old = wd_jev_get(x, root, "old");
  if (wd_jev_type(x, data) != WD_JT_OBJECT) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': Maxwell %s without a \"data\" object", src->name,
                       ev.op_text);
    return wd_jev_finish(x, err);
  }
  wd_jimg_t img = {.obj = data, .overlay = -1};
  wd_jimg_t bimg = {.obj = data, .overlay = wd_jev_type(x, old) == WD_JT_OBJECT ? old : -1};
  if (ev.op == WD_EV_INSERT) ev.after = &img;
  if (ev.op == WD_EV_DELETE) ev.before = &img;
  if (ev.op == WD_EV_UPDATE) {
    ev.after = &img;
    ev.before = bimg.overlay >= 0 ? &bimg : NULL;
  }
  wd_image_reader_t rd = wd_jev_reader(x, "old", "data");
  return wd_jev_finish(x, wd_event_emit(src, schema, meta, &rd, &ev, out));
}

const wd_format_t wd_format_maxwell_json = {
    .name = "maxwell-json",
    .summary = "Maxwell's JSON (type insert/update/delete, data, old with the changed columns)",
    .caps = WD_FORMAT_CAP_PARTIAL_BEFORE | WD_FORMAT_CAP_ENVELOPE,
    .decimal_default = WD_DECIMAL_TEXT,
    .decode = wd_maxwell_decode,
};
