/*
 * app/cli/generate.c — the seeded multi-stream Debezium JSON workload (see generate.h).
 *
 * Row images are pure functions of (seed, stream, key, version, event time), so a before image
 * is rendered again from the previous version instead of being stored: the state per (stream,
 * key) is a few integers.
 */
#include "app/cli/generate.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

const char *const wd_gen_stream_names[] = {"orders", "payments", "shipments", NULL};

enum { WD_GEN_ORDERS = 0, WD_GEN_PAYMENTS, WD_GEN_SHIPMENTS, WD_GEN_NKINDS };

/* One change as generated (before rendering). */
typedef struct wd_gen_rec {
  uint32_t si; /* index into g->kinds */
  uint64_t key; /* order_id */
  char op; /* c u d */
  bool late;
  uint32_t version;
  int64_t ts; /* event time of this change */
  int64_t prev_ts; /* event time of version-1 (the before image) */
  int64_t pos; /* binlog position (generation order) */
  uint64_t from_key; /* a key-changing update: the old order_id (before image), else 0 */
  uint32_t from_version; /* ... the old key's last version (of the before image) */
  int64_t from_ts; /* ... and its event time */
} wd_gen_rec_t;

typedef struct wd_gen_key {
  uint32_t version; /* last generated version, 0 = none */
  bool exists; /* row present after the last generated change */
  int64_t ts; /* event time of the last generated change */
} wd_gen_key_t;

/* A late record waiting in the delay line until `due` records have been emitted. */
typedef struct wd_gen_late {
  wd_gen_rec_t rec;
  uint64_t due;
} wd_gen_late_t;

#define WD_GEN_MAX_DELAY 10 /* a late record is emitted 0..10 records after its successor */
#define WD_GEN_QUEUE 64 /* > the delay line's maximum length (WD_GEN_MAX_DELAY + 1) + 2 */

struct wd_gen {
  uint64_t rng;
  uint64_t seed;
  uint64_t keys, records;
  double pair_prob, delete_prob, keychange_prob; /* per generation step */
  size_t nstreams;
  int kinds[WD_GEN_NKINDS]; /* stream index -> built-in stream kind */
  char *topics[WD_GEN_NKINDS];
  wd_gen_key_t *state; /* [stream index * keys + key - 1] */
  uint64_t generated, emitted;
  int64_t clock_ms;
  wd_gen_rec_t out[WD_GEN_QUEUE]; /* ring of records ready to emit, in order */
  size_t out_head, nout;
  wd_gen_late_t late[WD_GEN_QUEUE]; /* the delay line, oldest first */
  size_t nlate;
  bool failed;
  wd_buf_t key, value;
};

/* ---- randomness ----------------------------------------------------------------------------- */

static uint64_t wd_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t wd_gen_rand(wd_gen_t *g) { return wd_mix64(g->rng += 0x9e3779b97f4a7c15ULL); }

/* Uniform double in [0, 1). */
static double wd_gen_unit(wd_gen_t *g) { return (double)(wd_gen_rand(g) >> 11) * 0x1.0p-53; }

/* A hash of a row image's identity, for its field values. */
static uint64_t wd_gen_hash(const wd_gen_t *g, int kind, uint64_t key, uint64_t version, uint64_t salt) {
  return wd_mix64(g->seed ^
                  wd_mix64((uint64_t)kind * 0x100000001b3ULL ^ wd_mix64(key ^ wd_mix64(version * 31 + salt))));
}

/* ---- rendering ------------------------------------------------------------------------------ */

static const char *const wd_streets[] = {"Harbour", "Linden", "Market", "Canal", "Station", "Meadow", "Church", "Mill"};
static const char *const wd_cities[] = {"Amsterdam", "Rotterdam", "Utrecht", "Antwerp",
                                        "Hamburg",   "Lyon",      "Porto",   "Bologna"};
static const char *const wd_currencies[] = {"EUR", "USD", "GBP"};
static const char *const wd_methods[] = {"card", "paypal", "transfer", "voucher"};
static const char *const wd_pay_status[] = {"PENDING", "AUTHORIZED", "CAPTURED", "SETTLED"};
static const char *const wd_carriers[] = {"DHL", "UPS", "FedEx", "PostNL", "GLS"};
static const char *const wd_ship_status[] = {"CREATED", "PACKED", "SHIPPED", "IN_TRANSIT", "DELIVERED"};
#define WD_PICK(arr, h) (arr[(h) % (sizeof(arr) / sizeof(*arr))])

static int wd_gen_address(wd_buf_t *b, uint64_t h) {
  return wd_buf_printf(b, "%u %s Street, %05u %s", (unsigned)(1 + h % 250), WD_PICK(wd_streets, h >> 8),
                       (unsigned)(1000 + (h >> 16) % 9000), WD_PICK(wd_cities, h >> 32));
}

/* Appends the row image of (kind, key, version, ts) to b. 0, or -1 on no memory. */
static int wd_gen_image(const wd_gen_t *g, int kind, uint64_t key, uint32_t version, int64_t ts, wd_buf_t *b) {
  uint64_t hk = wd_gen_hash(g, kind, key, 0, 1); /* stable per key */
  uint64_t hv = wd_gen_hash(g, kind, key, version, 2); /* changes per version */
  int rc = 0;
  switch (kind) {
  case WD_GEN_ORDERS:
    rc |= wd_buf_printf(b,
                        "{\"order_id\":%" PRIu64 ",\"customer\":\"customer-%06u\",\"amount\":\"%u.%02u\","
                        "\"currency\":\"%s\",\"order_ts\":%" PRId64 ",\"order_version\":%u,\"address\":\"",
                        key, (unsigned)(hk % 1000000), (unsigned)(1 + hv % 9999), (unsigned)((hv >> 20) % 100),
                        WD_PICK(wd_currencies, hk >> 24), ts, version);
    rc |= wd_gen_address(b, hk >> 7);
    rc |= wd_buf_printf(b, "\",\"note\":\"order note %016" PRIx64 "\"}", hv);
    break;
  case WD_GEN_PAYMENTS:
    rc |= wd_buf_printf(b,
                        "{\"order_id\":%" PRIu64 ",\"pay_amount\":\"%u.%02u\",\"pay_method\":\"%s\","
                        "\"pay_ts\":%" PRId64 ",\"pay_status\":\"%s\",\"pay_version\":%u,"
                        "\"pay_ref\":\"PAY-%016" PRIx64 "\",\"payer\":\"payer-%06u@example.com\"}",
                        key, (unsigned)(1 + hv % 9999), (unsigned)((hv >> 20) % 100), WD_PICK(wd_methods, hk >> 3), ts,
                        wd_pay_status[(version - 1) % 4], version, hv, (unsigned)(hk % 1000000));
    break;
  default:
    rc |= wd_buf_printf(b,
                        "{\"order_id\":%" PRIu64 ",\"carrier\":\"%s\",\"ship_ts\":%" PRId64 ",\"ship_status\":\"%s\","
                        "\"ship_version\":%u,\"tracking\":\"TRK%012" PRIx64 "\",\"ship_address\":\"",
                        key, WD_PICK(wd_carriers, hk >> 5), ts, wd_ship_status[(version - 1) % 5], version,
                        (uint64_t)(hv & UINT64_C(0xffffffffffff)));
    rc |= wd_gen_address(b, hk >> 9);
    rc |= wd_buf_printf(b, "\"}");
    break;
  }
  return rc ? -1 : 0;
}

/* Renders rec into g->key / g->value and fills msg. 0, or -1 on no memory. */
static int wd_gen_render(wd_gen_t *g, const wd_gen_rec_t *rec, wd_gen_msg_t *msg) {
  int kind = g->kinds[rec->si];
  int rc = 0;
  wd_buf_reset(&g->key);
  wd_buf_reset(&g->value);
  rc |= wd_buf_printf(&g->key, "{\"order_id\":%" PRIu64 "}", rec->key);
  rc |= wd_buf_printf(&g->value, "{\"before\":");
  if (rec->op == 'c') rc |= wd_buf_printf(&g->value, "null");
  else if (rec->from_key) rc |= wd_gen_image(g, kind, rec->from_key, rec->from_version, rec->from_ts, &g->value);
  else rc |= wd_gen_image(g, kind, rec->key, rec->version - 1, rec->prev_ts, &g->value);
  rc |= wd_buf_printf(&g->value, ",\"after\":");
  if (rec->op == 'd') rc |= wd_buf_printf(&g->value, "null");
  else rc |= wd_gen_image(g, kind, rec->key, rec->version, rec->ts, &g->value);
  int64_t lag = 5 + (int64_t)(wd_gen_hash(g, kind, rec->key, rec->version, 3) % 50);
  rc |= wd_buf_printf(&g->value,
                      ",\"source\":{\"version\":\"2.5.0.Final\",\"connector\":\"mysql\",\"name\":\"widen-gen\","
                      "\"ts_ms\":%" PRId64 ",\"snapshot\":\"false\",\"db\":\"shop\",\"table\":\"%s\","
                      "\"server_id\":1,\"file\":\"mysql-bin.000001\",\"pos\":%" PRId64 ",\"row\":0},"
                      "\"op\":\"%c\",\"ts_ms\":%" PRId64 ",\"transaction\":null}",
                      rec->ts, wd_gen_stream_names[kind], rec->pos, rec->op, rec->ts + lag);
  if (rc) return -1;
  msg->topic = g->topics[rec->si];
  msg->stream = wd_gen_stream_names[kind];
  msg->stream_index = (int)rec->si;
  msg->key = (const char *)g->key.data;
  msg->key_len = g->key.len;
  msg->value = (const char *)g->value.data;
  msg->value_len = g->value.len;
  msg->order_id = rec->key;
  msg->from_order_id = rec->from_key;
  msg->version = rec->version;
  msg->op = rec->op;
  msg->late = rec->late;
  msg->ts_ms = rec->ts;
  return 0;
}

/* ---- generation ----------------------------------------------------------------------------- */

wd_error_t *wd_gen_new(const wd_gen_opts_t *opts, wd_gen_t **out) {
  wd_error_t *err = NULL;
  wd_gen_t *g = NULL;
  *out = NULL;
  double late = opts->late_ratio == 0 ? 0.20 : (opts->late_ratio < 0 ? 0 : opts->late_ratio);
  double del = opts->delete_ratio == 0 ? 0.01 : (opts->delete_ratio < 0 ? 0 : opts->delete_ratio);
  double kc = opts->key_change_ratio > 0 ? opts->key_change_ratio : 0;
  if (late > 0.9 || del > 0.5 || kc > 0.5 || del + kc > 0.5) {
    err = wd_error_new(WD_ERR_CONFIG, C_GENERATE,
                       "late ratio %.3f (max 0.9), delete ratio %.3f (max 0.5) or key change ratio %.3f (max 0.5, "
                       "with deletes at most 0.5) too high",
                       late, del, kc);
    goto cleanup;
  }
  if (!(g = calloc(1, sizeof(*g)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  g->seed = opts->seed;
  g->rng = wd_mix64(opts->seed ^ 0x5eedULL);
  g->keys = opts->keys ? opts->keys : 1000;
  g->records = opts->records ? opts->records : 10000;
  /* A step makes one record, or two (a late pair) with probability q: the late share is
   * q / (1 + q) and the delete share d / (1 + q). */
  g->pair_prob = late / (1.0 - late);
  g->delete_prob = del * (1.0 + g->pair_prob);
  g->keychange_prob = kc * (1.0 + g->pair_prob);
  g->clock_ms = opts->start_ms ? opts->start_ms : INT64_C(1700000000000);
  size_t n = opts->streams ? opts->nstreams : WD_GEN_NKINDS;
  if (n == 0 || n > WD_GEN_NKINDS) {
    err = wd_error_new(WD_ERR_CONFIG, C_GENERATE, "between 1 and 3 streams (orders, payments, shipments), not %zu", n);
    goto cleanup;
  }
  const char *prefix = opts->topic_prefix ? opts->topic_prefix : "";
  for (size_t i = 0; i < n; i++) {
    const char *name = opts->streams ? opts->streams[i] : wd_gen_stream_names[i];
    int kind = -1;
    for (int k = 0; k < WD_GEN_NKINDS; k++)
      if (name && strcmp(name, wd_gen_stream_names[k]) == 0) kind = k;
    for (size_t j = 0; j < i && kind >= 0; j++)
      if (g->kinds[j] == kind) kind = -2;
    if (kind < 0) {
      err = wd_error_new(WD_ERR_CONFIG, C_GENERATE, "stream '%s' is %s (streams: orders, payments, shipments)",
                         name ? name : "(null)", kind == -2 ? "given twice" : "unknown");
      goto cleanup;
    }
    g->kinds[i] = kind;
    wd_buf_t t = {0};
    if (wd_buf_printf(&t, "%s%s", prefix, name) || wd_buf_putc(&t, 0)) {
      wd_buf_free(&t);
      err = wd_error_nomem();
      goto cleanup;
    }
    g->topics[i] = (char *)t.data;
    g->nstreams++;
  }
  if (g->keys > SIZE_MAX / sizeof(wd_gen_key_t) / n || !(g->state = calloc(n * g->keys, sizeof(wd_gen_key_t)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  *out = g;
  g = NULL;
cleanup:
  wd_gen_destroy(g);
  return err;
}

static void wd_gen_push(wd_gen_t *g, const wd_gen_rec_t *rec) {
  g->out[(g->out_head + g->nout++) % WD_GEN_QUEUE] = *rec;
}

/* Queues the changes of (si, key) still in the delay line, oldest first: nothing overtakes a
 * delete or a key change. */
static void wd_gen_flush_late(wd_gen_t *g, uint32_t si, uint64_t key) {
  size_t k = 0;
  for (size_t i = 0; i < g->nlate; i++) {
    if (g->late[i].rec.si == si && g->late[i].rec.key == key) wd_gen_push(g, &g->late[i].rec);
    else g->late[k++] = g->late[i];
  }
  g->nlate = k;
}

/* A key-changing update of stream si: moves a present row to a key the stream has no row for.
 * False (nothing generated) when neither is found among a few random keys. */
static bool wd_gen_key_change(wd_gen_t *g, uint32_t si, uint64_t key) {
  wd_gen_key_t *base = &g->state[si * g->keys];
  for (int tries = 0; tries < 16 && !base[key - 1].exists; tries++) key = 1 + wd_gen_rand(g) % g->keys;
  if (!base[key - 1].exists) return false;
  uint64_t to = 1 + wd_gen_rand(g) % g->keys;
  for (int tries = 0; tries < 16 && base[to - 1].exists; tries++) to = 1 + wd_gen_rand(g) % g->keys;
  if (base[to - 1].exists) return false;
  wd_gen_flush_late(g, si, key);
  wd_gen_key_t *from = &base[key - 1], *dst = &base[to - 1];
  g->clock_ms += 1 + (int64_t)(wd_gen_rand(g) % 20);
  wd_gen_rec_t rec = {.si = si, .key = to, .op = 'u', .pos = 4 + (int64_t)g->generated * 371};
  rec.version = ++dst->version;
  rec.ts = g->clock_ms;
  rec.prev_ts = dst->ts;
  rec.from_key = key;
  rec.from_version = from->version;
  rec.from_ts = from->ts;
  from->version++; /* the move is a change of the old key too (like a delete) */
  from->exists = false;
  from->ts = rec.ts;
  dst->exists = true;
  dst->ts = rec.ts;
  g->generated++;
  wd_gen_push(g, &rec);
  return true;
}

/* The next change of slot (si, key): op c when the row is absent, else u, or d when del. */
static wd_gen_rec_t wd_gen_change(wd_gen_t *g, uint32_t si, uint64_t key, bool del) {
  wd_gen_key_t *st = &g->state[si * g->keys + key - 1];
  g->clock_ms += 1 + (int64_t)(wd_gen_rand(g) % 20);
  wd_gen_rec_t rec = {.si = si, .key = key, .pos = 4 + (int64_t)g->generated * 371};
  rec.op = !st->exists ? 'c' : (del ? 'd' : 'u');
  rec.version = ++st->version;
  rec.ts = g->clock_ms;
  rec.prev_ts = st->ts;
  st->exists = rec.op != 'd';
  st->ts = rec.ts;
  g->generated++;
  return rec;
}

/* Generates one step: a delete of a present row, a late pair (the second change is emitted
 * first, the first goes to the delay line) or one change; queues what can be emitted. */
static void wd_gen_step(wd_gen_t *g) {
  uint32_t si = (uint32_t)(wd_gen_rand(g) % g->nstreams);
  uint64_t key = 1 + wd_gen_rand(g) % g->keys;
  double u = wd_gen_unit(g);
  uint64_t left = g->records - g->generated;
  if (u < g->delete_prob) {
    /* delete a present row: look for one among a few random keys of the stream */
    for (int tries = 0; tries < 16 && !g->state[si * g->keys + key - 1].exists; tries++)
      key = 1 + wd_gen_rand(g) % g->keys;
    if (g->state[si * g->keys + key - 1].exists) {
      /* older changes of the key still in the delay line go first: nothing overtakes a delete */
      wd_gen_flush_late(g, si, key);
      wd_gen_rec_t rec = wd_gen_change(g, si, key, true);
      wd_gen_push(g, &rec);
      return;
    }
  } else if (u < g->delete_prob + g->keychange_prob) {
    if (wd_gen_key_change(g, si, key)) return;
  } else if (u < g->delete_prob + g->keychange_prob + g->pair_prob && left >= 2 && g->nlate < WD_GEN_MAX_DELAY + 1) {
    wd_gen_rec_t first = wd_gen_change(g, si, key, false);
    wd_gen_rec_t second = wd_gen_change(g, si, key, false);
    first.late = true;
    wd_gen_push(g, &second);
    g->late[g->nlate].rec = first;
    g->late[g->nlate].due = g->emitted + g->nout + wd_gen_rand(g) % (WD_GEN_MAX_DELAY + 1);
    g->nlate++;
    return;
  }
  wd_gen_rec_t rec = wd_gen_change(g, si, key, false);
  wd_gen_push(g, &rec);
}

bool wd_gen_next(wd_gen_t *g, wd_gen_msg_t *msg) {
  if (g->failed || g->emitted >= g->records) return false;
  /* a late record whose time has come goes first (the delay line is short: scan it) */
  for (size_t i = 0; i < g->nlate; i++) {
    if (g->late[i].due <= g->emitted || (g->nout == 0 && g->generated == g->records)) {
      wd_gen_push(g, &g->late[i].rec);
      memmove(&g->late[i], &g->late[i + 1], (g->nlate - i - 1) * sizeof(*g->late));
      g->nlate--;
      break;
    }
  }
  while (g->nout == 0) {
    if (g->generated >= g->records) return false; /* not reached: every record is queued by now */
    wd_gen_step(g);
  }
  wd_gen_rec_t rec = g->out[g->out_head];
  g->out_head = (g->out_head + 1) % WD_GEN_QUEUE;
  g->nout--;
  if (wd_gen_render(g, &rec, msg)) {
    g->failed = true;
    return false;
  }
  g->emitted++;
  return true;
}

bool wd_gen_failed(const wd_gen_t *g) { return g->failed; }

void wd_gen_destroy(wd_gen_t *g) {
  if (!g) return;
  for (size_t i = 0; i < WD_GEN_NKINDS; i++) free(g->topics[i]);
  free(g->state);
  wd_buf_free(&g->key);
  wd_buf_free(&g->value);
  free(g);
}
