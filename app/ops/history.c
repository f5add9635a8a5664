/*
 * app/ops/history.c — the commit history in the state store's meta (see history.h).
 */
#include "app/ops/history.h"

#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void history_key(char *buf, size_t n, uint64_t number) { snprintf(buf, n, "history/%020" PRIu64, number); }

static json_t *ranges_json(const wd_commit_range_t *r, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) {
    json_t *o = json_pack("{s:s,s:i,s:I,s:I}", "topic", r[i].topic ? r[i].topic : "", "partition", (int)r[i].partition,
                          "from", (json_int_t)r[i].from, "to", (json_int_t)r[i].to);
    if (!o || json_array_append_new(a, o)) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

int wd_history_to_json(const wd_commit_info_t *ci, wd_buf_t *out) {
  json_t *in = ranges_json(ci->in, ci->nin), *o = ranges_json(ci->out, ci->nout);
  json_t *j = in && o ? json_pack("{s:I,s:I,s:s,s:O,s:O,s:I,s:I,s:I,s:f}", "number", (json_int_t)ci->number, "time_ms",
                                  (json_int_t)ci->time_ms, "mode", ci->mode ? ci->mode : "incremental", "in", in,
                                  "out", o, "records_in", (json_int_t)ci->records_in, "changes_out",
                                  (json_int_t)ci->changes_out, "dead_letters", (json_int_t)ci->dead_letters,
                                  "duration_ms", round(ci->duration_ms * 10.0) / 10.0)
                      : NULL;
  json_decref(in);
  json_decref(o);
  /* duration_ms rounded to 0.1 ms and printed in 15 significant digits: "568.5", not 568.54642199999716 */
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(j);
  int rc = s ? wd_buf_append(out, s, strlen(s)) : -1;
  free(s);
  return rc;
}

int wd_history_add(wd_store_batch_t *b, const wd_commit_info_t *ci, size_t keep) {
  if (!b || !ci || ci->number == 0) return -1;
  wd_buf_t v = {0};
  char key[64], last[32];
  int rc = -1;
  if (wd_history_to_json(ci, &v)) goto done;
  history_key(key, sizeof(key), ci->number);
  if (wd_store_batch_set_meta(b, key, v.data, v.len)) goto done;
  int n = snprintf(last, sizeof(last), "%" PRIu64, ci->number);
  if (wd_store_batch_set_meta(b, WD_HISTORY_LAST_KEY, (const uint8_t *)last, (size_t)n)) goto done;
  if (keep > 0 && ci->number > keep) {
    history_key(key, sizeof(key), ci->number - keep);
    if (wd_store_batch_delete_meta(b, key)) goto done;
  }
  rc = 0;
done:
  wd_buf_free(&v);
  return rc;
}

wd_error_t *wd_history_last(wd_store_t *st, uint64_t *number) {
  uint8_t *v = NULL;
  size_t vlen = 0;
  *number = 0;
  wd_error_t *err = wd_store_get_meta(st, WD_HISTORY_LAST_KEY, &v, &vlen);
  if (err || !v) return err;
  char buf[32];
  bool ok = vlen > 0 && vlen < sizeof(buf);
  if (ok) {
    memcpy(buf, v, vlen);
    buf[vlen] = 0;
    char *end = NULL;
    unsigned long long n = strtoull(buf, &end, 10);
    ok = end && *end == 0;
    if (ok) *number = n;
  }
  free(v);
  if (!ok) return wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the state's %s is not a commit number", WD_HISTORY_LAST_KEY);
  return NULL;
}

void wd_history_entry_free(wd_history_entry_t *e) {
  if (!e) return;
  for (size_t i = 0; i < e->info.nin; i++) free((char *)e->in[i].topic);
  for (size_t i = 0; i < e->info.nout; i++) free((char *)e->out[i].topic);
  free(e->in);
  free(e->out);
  free(e->mode);
  free(e);
}

/* Parses a JSON array of ranges into a new array (topics strdup'd). 0, -1 on bad shape/no memory. */
static int ranges_parse(const json_t *a, wd_commit_range_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!json_is_array(a)) return -1;
  size_t cnt = json_array_size(a);
  wd_commit_range_t *r = calloc(cnt ? cnt : 1, sizeof(*r));
  if (!r) return -1;
  *out = r;
  for (size_t i = 0; i < cnt; i++) {
    const char *topic = NULL;
    int partition = 0;
    json_int_t from = 0, to = 0;
    if (json_unpack(json_array_get(a, i), "{s:s,s:i,s:I,s:I}", "topic", &topic, "partition", &partition, "from",
                    &from, "to", &to))
      return -1;
    if (!(r[i].topic = strdup(topic))) return -1;
    r[i].partition = partition;
    r[i].from = from;
    r[i].to = to;
    (*n)++;
  }
  return 0;
}

wd_error_t *wd_history_get(wd_store_t *st, uint64_t number, wd_history_entry_t **out) {
  char key[64];
  uint8_t *v = NULL;
  size_t vlen = 0;
  *out = NULL;
  history_key(key, sizeof(key), number);
  wd_error_t *err = wd_store_get_meta(st, key, &v, &vlen);
  if (err || !v) return err;
  json_error_t jerr;
  json_t *j = json_loadb((const char *)v, vlen, 0, &jerr);
  free(v);
  wd_history_entry_t *e = calloc(1, sizeof(*e));
  json_int_t num = 0, t = 0, rin = 0, cout = 0, dl = 0;
  double dur = 0;
  const char *mode = NULL;
  json_t *in = NULL, *o = NULL;
  bool ok = e && j &&
            !json_unpack(j, "{s:I,s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:F}", "number", &num, "time_ms", &t, "mode", &mode,
                         "in", &in, "out", &o, "records_in", &rin, "changes_out", &cout, "dead_letters", &dl,
                         "duration_ms", &dur);
  if (ok) {
    ok = !!(e->mode = strdup(mode));
    ok = ok && !ranges_parse(in, &e->in, &e->info.nin);
    ok = ok && !ranges_parse(o, &e->out, &e->info.nout);
  }
  json_decref(j);
  if (!ok) {
    wd_history_entry_free(e);
    return wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "commit history record %" PRIu64 " of the state is not readable",
                        number);
  }
  e->info.number = (uint64_t)num;
  e->info.time_ms = t;
  e->info.mode = e->mode;
  e->info.in = e->in;
  e->info.out = e->out;
  e->info.records_in = (uint64_t)rin;
  e->info.changes_out = (uint64_t)cout;
  e->info.dead_letters = (uint64_t)dl;
  e->info.duration_ms = dur;
  *out = e;
  return NULL;
}

wd_error_t *wd_history_first(wd_store_t *st, uint64_t *number) {
  uint64_t last = 0;
  *number = 0;
  wd_error_t *err = wd_history_last(st, &last);
  if (err || !last) return err;
  uint64_t n = last;
  while (n > 1) {
    char key[64];
    uint8_t *v = NULL;
    size_t vlen = 0;
    history_key(key, sizeof(key), n - 1);
    if ((err = wd_store_get_meta(st, key, &v, &vlen))) return err;
    free(v);
    if (!v) break;
    n--;
  }
  *number = n;
  return NULL;
}
