/*
 * app/ops/history.c — the commit history in the state store's meta (see history.h).
 */
#include "app/ops/history.h"

#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define WD_HISTORY_FIRST_KEY "history/first"

static void history_key(char *buf, size_t n, uint64_t number) { snprintf(buf, n, "history/%020" PRIu64, number); }

/* One kept record. */
typedef struct kept_rec {
  uint64_t number;
  int64_t time_ms;
  uint64_t bytes;
} kept_rec_t;

/* A ring of the kept records, oldest at head. */
struct wd_history_kept {
  kept_rec_t *r;
  size_t cap, head, n;
  uint64_t bytes;
};

static kept_rec_t *kept_at(wd_history_kept_t *k, size_t i) { return &k->r[(k->head + i) % k->cap]; }

static int kept_push(wd_history_kept_t *k, kept_rec_t rec) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 256;
    kept_rec_t *r = malloc(cap * sizeof(*r));
    if (!r) return -1;
    for (size_t i = 0; i < k->n; i++) r[i] = *kept_at(k, i);
    free(k->r);
    k->r = r;
    k->cap = cap;
    k->head = 0;
  }
  k->r[(k->head + k->n) % k->cap] = rec;
  k->n++;
  k->bytes += rec.bytes;
  return 0;
}

/* the time_ms of a stored record's JSON (it is written second, after number) */
static bool record_time(const uint8_t *v, size_t len, int64_t *t) {
  static const char tag[] = "\"time_ms\":";
  size_t tl = sizeof(tag) - 1;
  for (size_t i = 0; i + tl < len && i < 64; i++)
    if (!memcmp(v + i, tag, tl)) {
      char buf[24];
      size_t j = 0;
      for (size_t at = i + tl; at < len && j + 1 < sizeof(buf) && (v[at] == '-' || (v[at] >= '0' && v[at] <= '9'));)
        buf[j++] = (char)v[at++];
      buf[j] = 0;
      if (!j) return false;
      *t = strtoll(buf, NULL, 10);
      return true;
    }
  return false;
}

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
                                  (json_int_t)ci->time_ms, "mode", ci->mode ? ci->mode : "incremental", "in", in, "out",
                                  o, "records_in", (json_int_t)ci->records_in, "changes_out",
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
  if (!ok)
    return wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "the state's %s is not a commit number", WD_HISTORY_LAST_KEY);
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
    if (json_unpack(json_array_get(a, i), "{s:s,s:i,s:I,s:I}", "topic", &topic, "partition", &partition, "from", &from,
                    "to", &to))
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
  bool ok =
      e && j &&
      !json_unpack(j, "{s:I,s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:F}", "number", &num, "time_ms", &t, "mode", &mode, "in", &in,
                   "out", &o, "records_in", &rin, "changes_out", &cout, "dead_letters", &dl, "duration_ms", &dur);
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
  uint8_t *fv = NULL;
  size_t flen = 0;
  if ((err = wd_store_get_meta(st, WD_HISTORY_FIRST_KEY, &fv, &flen))) return err;
  if (fv) {
    char buf[32];
    uint64_t f = 0;
    if (flen > 0 && flen < sizeof(buf)) {
      memcpy(buf, fv, flen);
      buf[flen] = 0;
      f = strtoull(buf, NULL, 10);
    }
    free(fv);
    if (f >= 1 && f <= last) {
      /* normally its record is there; a first whose record is gone walks forward to the next kept */
      for (uint64_t n = f; n <= last; n++) {
        char key[64];
        uint8_t *v = NULL;
        size_t vlen = 0;
        history_key(key, sizeof(key), n);
        if ((err = wd_store_get_meta(st, key, &v, &vlen))) return err;
        free(v);
        if (v) {
          *number = n;
          return NULL;
        }
      }
      return NULL;
    }
  }
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

wd_error_t *wd_history_kept_load(wd_store_t *st, wd_history_kept_t **out) {
  *out = NULL;
  wd_history_kept_t *k = calloc(1, sizeof(*k));
  if (!k) return wd_error_nomem();
  uint64_t first = 0, last = 0;
  wd_error_t *err = wd_history_last(st, &last);
  if (!err) err = wd_history_first(st, &first);
  for (uint64_t n = first; !err && first && n <= last; n++) {
    char key[64];
    uint8_t *v = NULL;
    size_t vlen = 0;
    history_key(key, sizeof(key), n);
    if ((err = wd_store_get_meta(st, key, &v, &vlen)) || !v) break;
    kept_rec_t rec = {n, 0, vlen};
    bool ok = record_time(v, vlen, &rec.time_ms);
    free(v);
    if (!ok)
      err =
          wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "commit history record %" PRIu64 " of the state has no time_ms", n);
    else if (kept_push(k, rec)) err = wd_error_nomem();
  }
  if (err) {
    wd_history_kept_free(k);
    return err;
  }
  *out = k;
  return NULL;
}

void wd_history_kept_free(wd_history_kept_t *k) {
  if (!k) return;
  free(k->r);
  free(k);
}

void wd_history_kept_stats(const wd_history_kept_t *k, uint64_t *records, uint64_t *bytes) {
  *records = k ? k->n : 0;
  *bytes = k ? k->bytes : 0;
}

int wd_history_add_retained(wd_store_batch_t *b, const wd_commit_info_t *ci, const wd_history_retention_t *r,
                            wd_history_kept_t *k) {
  if (!b || !ci || !r || !k || ci->number == 0) return -1;
  wd_buf_t v = {0};
  if (wd_history_to_json(ci, &v)) return -1;
  uint64_t len = v.len;
  wd_buf_free(&v);
  if (wd_history_add(b, ci, 0)) return -1;
  /* the same number again (the commit's second put) replaces its entry; a lower one (another
   * history restarted, e.g. a fresh state directory) starts the index afresh */
  while (k->n && kept_at(k, k->n - 1)->number >= ci->number) {
    k->bytes -= kept_at(k, k->n - 1)->bytes;
    k->n--;
  }
  if (kept_push(k, (kept_rec_t){ci->number, ci->time_ms, len})) return -1;
  while (k->n > 1) {
    kept_rec_t *o = kept_at(k, 0);
    bool drop = (r->keep > 0 && k->n > r->keep) || (r->max_bytes > 0 && k->bytes > r->max_bytes) ||
                (r->max_age_ms > 0 && o->time_ms < ci->time_ms - r->max_age_ms);
    if (!drop) break;
    char key[64];
    history_key(key, sizeof(key), o->number);
    if (wd_store_batch_delete_meta(b, key)) return -1;
    k->bytes -= o->bytes;
    k->head = (k->head + 1) % k->cap;
    k->n--;
  }
  char first[32];
  int n = snprintf(first, sizeof(first), "%" PRIu64, kept_at(k, 0)->number);
  return wd_store_batch_set_meta(b, WD_HISTORY_FIRST_KEY, (const uint8_t *)first, (size_t)n) ? -1 : 0;
}

wd_error_t *wd_history_kept_range(wd_store_t *st, uint64_t *first, int64_t *first_time_ms, uint64_t *last,
                                  int64_t *last_time_ms) {
  *first = *last = 0;
  *first_time_ms = *last_time_ms = 0;
  wd_error_t *err = wd_history_last(st, last);
  if (!err) err = wd_history_first(st, first);
  if (err || !*last) return err;
  uint64_t nums[2] = {*first, *last};
  int64_t *times[2] = {first_time_ms, last_time_ms};
  for (int i = 0; i < 2; i++) {
    wd_history_entry_t *e = NULL;
    if ((err = wd_history_get(st, nums[i], &e))) return err;
    if (e) *times[i] = e->info.time_ms;
    wd_history_entry_free(e);
  }
  return NULL;
}
