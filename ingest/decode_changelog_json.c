/*
 * ingest/decode_changelog_json.c — the changelog-json source format: widen's own changelog-json
 * output (changelog/changelog.h), {"op":"+I|-U|+U|-D","table":"t","ts_ms":N,"row":{..}}, so one
 * widen pipeline can consume another's changelog with its row kinds as they are (a -U and its
 * +U are two Kafka records). Values are read as widen writes them (DECIMAL as text, BYTES
 * base64, timestamps "YYYY-MM-DD hh:mm:ss.fff"). `$.` mappings read the record (`$.ts_ms`,
 * `$.table`).
 */
#include <string.h>

#include "ingest/json_event.h"

static wd_error_t *wd_cl_decode(void *state, const wd_source_t *src, const wd_schema_t *schema,
                                const wd_kafka_meta_t *meta, const void *value, size_t len, wd_changes_t *out) {
  (void)state;
  wd_jev_t *x = NULL;
  wd_error_t *err = wd_jev_start(out, src, schema, meta, NULL, &x);
  if (err) return err;
  if (wd_jev_parse(x, value, len, false, &err)) return wd_jev_finish(x, err);
  int root = wd_jev_root(x);
  int op = wd_jev_get(x, root, "op");
  static const char *const kinds[] = {"+I", "-U", "+U", "-D"};
  static const wd_row_kind_t kv[] = {WD_INSERT, WD_UPDATE_BEFORE, WD_UPDATE_AFTER, WD_DELETE};
  int k = 0;
  while (k < 4 && !wd_jev_str_eq(x, op, kinds[k])) k++;
  if (k == 4) {
    char found[80];
    wd_jev_text(x, op, found, sizeof(found));
    err = wd_error_new(WD_ERR_DECODE, E_DECODE,
                       "source '%s': %s%s is not a changelog-json row kind (expected "
                       "\"+I\", \"-U\", \"+U\" or \"-D\")",
                       src->name, op < 0 ? "no \"op\"" : "op ", op < 0 ? "" : found);
    return wd_jev_finish(x, err);
  }
  out->op = k == 0 ? 'c' : k == 3 ? 'd' : 'u';
  int64_t ts;
  int tst = wd_jev_get(x, root, "ts_ms");
  if (wd_jev_type(x, tst) == WD_JT_PRIMITIVE && wd_jev_int(x, tst, &ts) == 0) out->ts_ms = ts;
  int row = wd_jev_get(x, root, "row");
  if (wd_jev_type(x, row) != WD_JT_OBJECT) {
    err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': op \"%s\" without a \"row\" object", src->name, kinds[k]);
    return wd_jev_finish(x, err);
  }
  wd_jimg_t img = {.obj = row, .overlay = -1};
  wd_event_t ev = {.op = WD_EV_ROW, .kind = kv[k], .op_text = kinds[k], .after = &img};
  wd_image_reader_t rd = wd_jev_reader(x, "row", "row");
  return wd_jev_finish(x, wd_event_emit(src, schema, meta, &rd, &ev, out));
}

const wd_format_t wd_format_changelog_json = {
    .name = "changelog-json",
    .summary = "widen's changelog-json output (one row with its row kind per record): chains pipelines",
    .caps = WD_FORMAT_CAP_ROW_KINDS | WD_FORMAT_CAP_ENVELOPE,
    .decimal_default = WD_DECIMAL_TEXT,
    .decode = wd_cl_decode,
};
