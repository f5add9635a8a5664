/*
 * ingest/decode_canal_json.c — the canal-json source format: Alibaba Canal's flat messages
 * (canal.mq.flatMessage=true), as Paimon's and Flink's canal-json read them:
 *   {"data":[{row}...],"old":[{changed columns}...]|null,"type":"INSERT|UPDATE|DELETE|...",
 *    "isDdl":false,"pkNames":[..],"mysqlType":{"col":"decimal(10,2)",...},"sqlType":{..},
 *    "es":ms,"ts":ms,"database":"db","table":"t"}
 * One message carries one or more rows of one table; each row is one event:
 *   INSERT data[i] -> +I;  DELETE data[i] -> -D (full before image);
 *   UPDATE -> -U(before), +U(data[i]) where before is data[i] with the columns of old[i] (only the
 *     changed ones) replaced by their old values; -D/+I when old[i] changes the key; without
 *     old[i], -U carries the key and the rest comes from the stored row.
 * DDL messages (isDdl true, or type CREATE/ALTER/ERASE/QUERY/RENAME/CINDEX/DINDEX) decode to no
 * records; TRUNCATE and unknown types are E_DECODE. Every value is a JSON string ("101",
 * "3.14"), read by the column's type (source.h); decimals are text; BOOLEAN also from "0"/"1";
 * BYTES from Canal's ISO-8859-1 text when mysqlType says the column is binary/blob/bit, else the
 * UTF-8 bytes of the text. `$.` mappings read the message (`$.ts`, `$.es`, `$.table`).
 */
#include <string.h>

#include "ingest/json_event.h"

static const char *const wd_canal_ddl[] = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX", NULL};

static wd_error_t *wd_canal_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                   const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  wd_jev_t *x = NULL;
  wd_json_hints_t hints = {.strings_only = true};
  wd_error_t *err = wd_jev_start(out, src, schema, meta, &hints, &x);
  if (err) return err;
  if (wd_jev_parse(x, value, len, false, &err)) return wd_jev_finish(x, err);
  int root = wd_jev_root(x);
  int isddl = wd_jev_get(x, root, "isDdl");
  char found[80];
  int type = wd_jev_get(x, root, "type");
  if (wd_jev_type(x, type) != WD_JT_STRING) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': no \"type\" string: not a Canal flat message", src->name);
    return wd_jev_finish(x, err);
  }
  wd_jev_text(x, isddl, found, sizeof(found));
  if (isddl >= 0 && strcmp(found, "true") == 0) return wd_jev_finish(x, NULL);
  for (size_t i = 0; wd_canal_ddl[i]; i++)
    if (wd_jev_str_eq(x, type, wd_canal_ddl[i])) return wd_jev_finish(x, NULL);
  wd_event_op_t op;
  const char *optext;
  if (wd_jev_str_eq(x, type, "INSERT")) {
    op = WD_EV_INSERT;
    optext = "INSERT";
    out->op = 'c';
  } else if (wd_jev_str_eq(x, type, "UPDATE")) {
    op = WD_EV_UPDATE;
    optext = "UPDATE";
    out->op = 'u';
  } else if (wd_jev_str_eq(x, type, "DELETE")) {
    op = WD_EV_DELETE;
    optext = "DELETE";
    out->op = 'd';
  } else {
    wd_jev_text(x, type, found, sizeof(found));
    err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                       "source '%s': Canal type %s is not supported (expected INSERT, "
                       "UPDATE, DELETE or a DDL message)",
                       src->name, found);
    return wd_jev_finish(x, err);
  }
  int64_t ts;
  if (wd_jev_int(x, wd_jev_get(x, root, "ts"), &ts) == 0) out->ts_ms = ts;
  int data = wd_jev_get(x, root, "data"), old = wd_jev_get(x, root, "old");
  if (wd_jev_type(x, data) != WD_JT_ARRAY) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': Canal %s message without a \"data\" array", src->name,
                       optext);
    return wd_jev_finish(x, err);
  }
  if (!wd_jev_is_null(x, old) && wd_jev_type(x, old) != WD_JT_ARRAY) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': Canal \"old\" is neither an array nor null", src->name);
    return wd_jev_finish(x, err);
  }
  int types = wd_jev_get(x, root, "mysqlType");
  wd_jev_set_type_hints(x, wd_jev_type(x, types) == WD_JT_OBJECT ? types : -1);
  wd_image_reader_t rd = wd_jev_reader(x, "old", "data");
  for (int i = 0; i < wd_jev_size(x, data) && !err; i++) {
    int row = wd_jev_index(x, data, i);
    if (wd_jev_type(x, row) != WD_JT_OBJECT) {
      err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': Canal data[%d] is not an object", src->name, i);
      break;
    }
    int o = op == WD_EV_UPDATE && wd_jev_type(x, old) == WD_JT_ARRAY ? wd_jev_index(x, old, i) : -1;
    if (o >= 0 && wd_jev_type(x, o) != WD_JT_OBJECT) o = -1;
    wd_jimg_t img = {.obj = row, .overlay = -1}, bimg = {.obj = row, .overlay = o};
    wd_event_t ev = {.op = op, .op_text = optext};
    if (op == WD_EV_INSERT) ev.after = &img;
    if (op == WD_EV_DELETE) ev.before = &img;
    if (op == WD_EV_UPDATE) {
      ev.after = &img;
      ev.before = o >= 0 ? &bimg : NULL;
    }
    err = wd_event_emit(src, schema, meta, &rd, &ev, out);
  }
  return wd_jev_finish(x, err);
}

const wd_format_t wd_format_canal_json = {
    .name = "canal-json",
    .summary = "Alibaba Canal flat messages (data/old arrays, several rows per message; DDL messages skipped)",
    .caps = WD_FORMAT_CAP_PARTIAL_BEFORE | WD_FORMAT_CAP_MULTI_ROW | WD_FORMAT_CAP_ENVELOPE,
    .decimal_default = WD_DECIMAL_TEXT,
    .decode = wd_canal_decode,
};
