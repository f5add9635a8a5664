/*
 * ingest/json_event.c — the JSON side of every JSON source format (ingest/json_event.h): one
 * record value tokenised once, row images read through the source's mapping, values converted
 * by the table of source.h.
 *
 * The value is tokenised once into jsmn's tokens (common/jsmn_doc.h: strict mode, parent links)
 * by ingest/json_fast.h: simdjson's SIMD structural index walked once, checking the whole text
 * (UTF-8, grammar, escapes, every scalar) and the nesting depth. A text it refuses takes the old
 * path, a nesting-depth guard (its exact scan runs only when a count of '{'/'[' bytes says the
 * depth could exceed its limit) and jsmn, so that its message stays what jsmn said. The keys of the top object (then of the payload) are listed once, so
 * the format's repeated lookups there (op, ts_ms, before, after) compare keys only.
 * Row-image fields are found in one pass over the image object through the source's hash of
 * first path segments, remembered per key position for the next image of the same source (a
 * byte-identical key there takes the same mapping unhashed); envelope and key paths, and the
 * envelope schema hints (field name, parameters.scale, type), are looked up only when a mapping
 * needs them. Values are converted straight from the token text (see source.h for the rules).
 *
 * The {"schema":S,"payload":P} envelope: S is usually byte-identical from one message to the
 * next and several times larger than P. The last S is kept in the scratch memory; a message
 * that starts with it is recognised by one memcmp, only P is tokenised, and S is tokenised
 * (once per distinct S) only when a column needs a schema hint. Any other shape takes the
 * general path: the whole message is tokenised.
 */
#include "common/jsmn_doc.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/text.h"
#include "ingest/conv.h"
#include "ingest/json_event.h"
#include "ingest/json_fast.h"
#include "ingest/source.h"

/* ---- scratch memory kept in wd_changes_t between messages ---------------------------------- */

/* What the image keys at each position of the last images of a source mapped to: the next
 * image (messages of one table come from one producer and list their keys in one order) takes
 * the mapping of a key that is byte for byte the one remembered at its position without hashing
 * it. Keyed by wd_source_t.serial (renewed when the mapping changes); a few sources per
 * container (one pipeline decodes the messages of all its sources into one container). */
#define WD_KC_SOURCES 4
#define WD_KC_KEYS 32
#define WD_KC_KEYLEN 30

typedef struct wd_kc_key {
  uint8_t len; /* the key's length (<= WD_KC_KEYLEN); 0xff: nothing remembered here */
  char key[WD_KC_KEYLEN]; /* the key's text (it had no escape) */
  int first; /* wd_hindex_find's answer for it: a mapping, or -1 */
} wd_kc_key_t;

typedef struct wd_kc {
  uint64_t serial; /* the source; 0: unused */
  uint64_t used; /* when last used (the least recent one is replaced) */
  wd_kc_key_t k[WD_KC_KEYS];
} wd_kc_t;

typedef struct wd_dbz_scratch {
  jsmntok_t *tok; /* tokens of the value */
  unsigned tokcap;
  jsmntok_t *ktok; /* tokens of the Kafka key */
  unsigned ktokcap;
  int *slot; /* per mapping: value token in the current image, -1 when absent */
  size_t slotcap;
  wd_buf_t buf; /* unescaped strings, number text */
  wd_buf_t schema_text; /* the last envelope schema (its JSON text) */
  jsmntok_t *stok; /* its tokens, when snt > 0 */
  unsigned stokcap;
  int snt; /* 0 not tokenised yet, > 0 token count, -1 not an object */
  struct wd_dbz *ctx; /* the record being decoded */
  wd_json_fast_t *jf; /* simdjson's parser and padded buffer (ingest/json_fast.h) */
  wd_kc_t kc[WD_KC_SOURCES];
  uint64_t kc_clock;
} wd_dbz_scratch_t;

static void wd_dbz_scratch_free(void *p) {
  wd_dbz_scratch_t *sc = p;
  if (!sc) return;
  free(sc->tok);
  free(sc->ktok);
  free(sc->slot);
  free(sc->stok);
  free(sc->ctx);
  wd_json_fast_free(sc->jf);
  wd_buf_free(&sc->buf);
  wd_buf_free(&sc->schema_text);
  free(sc);
}

/* ---- a tokenised JSON document ------------------------------------------------------------- */

/* Most lookups are keys of one object, several times per record (the payload's op, ts_ms,
 * before, after; the envelope check's op and payload): its key tokens are listed once, so a
 * lookup compares keys without walking the values between them. */
#define WD_JDOC_KEYS 32

typedef struct wd_jdoc {
  const char *js;
  const jsmntok_t *t;
  int n;
  int root; /* the payload object (the top object without an envelope) */
  int schema; /* the envelope's schema struct, or -1 */
  int kobj; /* the object whose keys key[0..nkey) are (the top object, then the payload), or -1 */
  int nkey;
  int key[WD_JDOC_KEYS];
  /* per listed key: its raw length and its first 8 raw bytes zero-padded, so that a lookup skips
   * the keys that cannot match by comparing words */
  uint32_t klen[WD_JDOC_KEYS];
  uint64_t kw[WD_JDOC_KEYS];
} wd_jdoc_t;

/* The helpers of common/jsmn_doc.h on document d. */
static int wd_jnext(const wd_jdoc_t *d, int i) { return wd_jsmn_next(d->t, d->n, i); }
static bool wd_jis_null(const wd_jdoc_t *d, int i) { return wd_jsmn_is_null(d->js, d->t, i); }
static bool wd_jstr_eq(const wd_jdoc_t *d, int i, const char *s, size_t n) {
  return wd_jsmn_str_eq(d->js, d->t, i, s, n);
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wd_jword puts byte i of a key at bits 8i..8i+7");

/* The first min(n, 8) bytes of s[0..n) as a word, byte i at bits 8i..8i+7, zero-padded (reads
 * only s[0..n)). */
static inline uint64_t wd_jword(const char *s, size_t n) {
  uint64_t w;
  if (n >= 8) {
    memcpy(&w, s, 8);
    return w;
  }
  /* two loads that overlap, the second shifted to its place (little-endian) */
  if (n >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, s, 4);
    memcpy(&hi, s + n - 4, 4);
    return (uint64_t)lo | (uint64_t)hi << (8 * (n - 4));
  }
  if (n >= 2) {
    uint16_t lo, hi;
    memcpy(&lo, s, 2);
    memcpy(&hi, s + n - 2, 2);
    return (uint64_t)lo | (uint64_t)hi << (8 * (n - 2));
  }
  return n ? (unsigned char)s[0] : 0;
}

/* Whether a[0..n) and b[0..n) are equal, n <= 32: word compares without a call (the last word
 * overlaps the one before; reads only a[0..n) and b[0..n)). */
static inline bool wd_jeq_short(const char *a, const char *b, size_t n) {
  if (n < 8) return wd_jword(a, n) == wd_jword(b, n);
  uint64_t x, y;
  for (size_t i = 0; i + 8 < n; i += 8) {
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  memcpy(&x, a + n - 8, 8);
  memcpy(&y, b + n - 8, 8);
  return x == y;
}

/* The value of key s[0..n) in object i, as wd_jsmn_get (the last one when the key repeats), from
 * the key list when i is d->kobj. */
static int wd_jget(const wd_jdoc_t *d, int i, const char *s, size_t n) {
  if (i < 0 || i != d->kobj) return wd_jsmn_get(d->js, d->t, d->n, i, s, n);
  uint64_t w = wd_jword(s, n);
  /* a probe of at most 8 bytes without a backslash equals a raw key of its length and bytes
   * (which then has no escape either) */
  uint64_t bs = w ^ 0x5C5C5C5C5C5C5C5Cu; /* a zero byte where w has a backslash ('\\' = 0x5C) */
  bool plain8 = n <= 8 && !((bs - 0x0101010101010101u) & ~bs & 0x8080808080808080u);
  for (int k = d->nkey - 1; k >= 0; k--) {
    if (plain8 && d->klen[k] == n && d->kw[k] == w) return d->key[k] + 1;
    /* a raw key of the probe's length matches only if its first 8 bytes do; a longer one only if
     * it has an escape, which can only start with a backslash or the probe's first byte; the
     * candidates are then compared exactly */
    bool cand =
        d->klen[k] == n ? d->kw[k] == w : d->klen[k] > n && n && ((char)d->kw[k] == '\\' || (char)d->kw[k] == s[0]);
    if (cand && wd_jsmn_str_eq(d->js, d->t, d->key[k], s, n)) return d->key[k] + 1;
  }
  return -1;
}

/* Lists the keys of object i in d (when it is an object of at most WD_JDOC_KEYS keys; else no
 * list: lookups walk the object). */
static void wd_jdoc_keys(wd_jdoc_t *d, int i) {
  d->kobj = -1;
  d->nkey = 0;
  if (i < 0 || i >= d->n || d->t[i].type != JSMN_OBJECT || d->t[i].size > WD_JDOC_KEYS) return;
  int j = i + 1, nk = 0;
  for (int k = 0; k < d->t[i].size && j + 1 < d->n; k++) {
    const char *kp = d->js + d->t[j].start;
    size_t kn = (size_t)(d->t[j].end - d->t[j].start);
    d->key[nk] = j;
    d->klen[nk] = (uint32_t)kn;
    d->kw[nk] = wd_jword(kp, kn);
    nk++;
    j = wd_jsmn_next(d->t, d->n, j + 1);
  }
  d->nkey = nk;
  d->kobj = i;
}
static int wd_jgets(const wd_jdoc_t *d, int i, const char *s) { return wd_jget(d, i, s, strlen(s)); }

/* Element idx of array i, or -1. */
static int wd_jindex(const wd_jdoc_t *d, int i, size_t idx) {
  if (i < 0 || d->t[i].type != JSMN_ARRAY || idx >= (size_t)d->t[i].size) return -1;
  int j = i + 1;
  for (size_t k = 0; k < idx; k++) j = wd_jnext(d, j);
  return j;
}

/* Follows segments seg[from..nseg) from token i: object keys, or array indexes for segments of
 * digits. -1 when a step is missing. */
static int wd_jpath(const wd_jdoc_t *d, int i, const wd_source_col_t *c, size_t from) {
  for (size_t k = from; k < c->nseg && i >= 0; k++) {
    if (d->t[i].type == JSMN_ARRAY) {
      size_t idx = 0;
      bool digits = c->seglen[k] > 0 && c->seglen[k] < 10;
      for (size_t q = 0; q < c->seglen[k] && digits; q++) {
        if (c->seg[k][q] < '0' || c->seg[k][q] > '9') digits = false;
        idx = idx * 10 + (size_t)(c->seg[k][q] - '0');
      }
      i = digits ? wd_jindex(d, i, idx) : -1;
    } else {
      i = wd_jget(d, i, c->seg[k], c->seglen[k]);
    }
  }
  return i;
}

#define WD_JTOK_NOMEM WD_JSMN_NOMEM
#define WD_JTOK_DEEP (-101)
/* Nesting deeper than this is refused before tokenising: jsmn closes a bracket by walking up
 * from the last token, so deep nesting costs time quadratic in the depth (a 400 KB record of
 * nested arrays took a minute of CPU). Debezium events nest a few levels. */
#define WD_JSON_MAX_DEPTH 256

/* The maximum nesting depth of js[0..len), scanning strings correctly; stops counting once it
 * exceeds limit. */
static unsigned wd_json_depth(const char *js, size_t len, unsigned limit) {
  unsigned depth = 0, max = 0;
  bool in_str = false;
  for (size_t i = 0; i < len && max <= limit; i++) {
    char c = js[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max) max = depth;
    } else if ((c == '}' || c == ']') && depth) {
      depth--;
    }
  }
  return max;
}

/* Whether js[0..len) has more than limit bytes '{' or '[' (strings included). They bound the
 * nesting depth from above, so a text without that many cannot be too deep and needs no exact
 * scan. Sixteen bytes at a time (GCC vector extensions: SSE2 on x86-64, NEON on arm64): '{'
 * (0x7B) and '[' (0x5B) are the bytes b with b | 0x20 == 0x7B; each lane of acc counts its
 * matches (a true comparison is -1), folded into count at most every 255 blocks. */
typedef unsigned char wd_u8x16 __attribute__((vector_size(16)));
typedef signed char wd_s8x16 __attribute__((vector_size(16)));

static bool wd_json_many_opens(const char *js, size_t len, size_t limit) {
  size_t count = 0, i = 0;
  while (len - i >= 16) {
    wd_u8x16 acc = {0};
    for (int k = 0; k < 255 && len - i >= 16; k++, i += 16) {
      wd_u8x16 w;
      memcpy(&w, js + i, 16);
      acc -= (wd_u8x16)((w | 0x20) == 0x7B);
    }
    for (int l = 0; l < 16; l++) count += acc[l];
    if (count > limit) return true;
  }
  for (; i < len; i++) count += js[i] == '{' || js[i] == '[';
  return count > limit;
}

#define WD_JTOK_FAST_INVALID (-102)

/* Tokenises js[0..len) into *tok (grown as needed): ingest/json_fast.h (simdjson's index
 * walked into jsmn's tokens) through jf when jf is set, the nesting-depth guard and jsmn
 * otherwise. A text json_fast refuses is given to the guard and jsmn, so that a record jsmn
 * refuses too gets the message it got before; one jsmn accepts (invalid UTF-8, a raw control
 * character in a string, a bad literal or number, a trailing comma...) is refused unless jansson
 * finds it valid JSON after all (then jsmn's tokens are used). Returns the token count,
 * WD_JTOK_DEEP, JSMN_ERROR_INVAL or JSMN_ERROR_PART (*errpos: the byte offset),
 * WD_JTOK_FAST_INVALID (*errpos and *fast_why say where and why), or WD_JTOK_NOMEM. */
static int wd_jtokenize(wd_json_fast_t *jf, const char *js, size_t len, jsmntok_t **tok, unsigned *cap,
                        unsigned *errpos, const char **fast_why) {
  unsigned fpos = 0;
  *fast_why = NULL;
  if (jf) {
    int n = wd_json_fast_tokenize(jf, js, len, WD_JSON_MAX_DEPTH, tok, cap, &fpos, fast_why);
    if (n >= 0) return n;
    if (n == WD_JSON_FAST_NOMEM) return WD_JTOK_NOMEM;
    if (n == WD_JSON_FAST_DEEP) return WD_JTOK_DEEP;
  }
  if (wd_json_many_opens(js, len, WD_JSON_MAX_DEPTH) && wd_json_depth(js, len, WD_JSON_MAX_DEPTH) > WD_JSON_MAX_DEPTH)
    return WD_JTOK_DEEP;
  int n = wd_jsmn_tokenize(js, len, tok, cap, errpos);
  if (n < 0 || !jf) return n;
  json_error_t jerr;
  json_t *j = json_loadb(js, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  if (j) {
    json_decref(j);
    return n;
  }
  *errpos = fpos;
  return WD_JTOK_FAST_INVALID;
}

/* ---- the decoding context ----------------------------------------------------------------- */

typedef struct wd_dbz {
  wd_changes_t *out;
  const char *image_names[2]; /* how messages name before/after */
  wd_decimal_encoding_t dec_enc; /* the source's decimal encoding (format default or option) */
  wd_json_hints_t hints;
  int type_hints; /* object of field -> type name (Canal mysqlType), or -1 */
  const wd_source_t *src;
  const wd_schema_t *schema;
  const wd_kafka_meta_t *meta;
  wd_dbz_scratch_t *sc;
  int key_state; /* 0 not parsed yet, 1 parsed, -1 null key */
  bool cached_schema; /* the value's schema is sc->schema_text (fast path), not doc.schema */
  int img_schema[2]; /* schema struct of the before [0] / after [1] image; -2 = not looked up */
  wd_kc_t *kc; /* the image key memory of src, NULL until an image is read */
  int key_only_img; /* a before image holding only the Kafka key's fields (wd_jev_key_only_image), or 0 */
  /* the documents last: wd_jev_start zeroes what comes before them and only their heads (their
   * key lists are written before they are read) */
  wd_jdoc_t doc; /* the value */
  wd_jdoc_t key; /* the Kafka key */
  wd_jdoc_t sdoc; /* sc->schema_text tokenised */
} wd_dbz_t;

/* A value being converted: where it came from, for schema hints and messages. */
typedef struct wd_fld {
  const wd_jdoc_t *doc;
  const wd_source_col_t *c;
  int image; /* 0 before, 1 after, -1 not an image field */
  const char *iname; /* the image's name in messages */
  bool hints_done;
  const char *name; /* schema "name" (Debezium semantic type), not NUL-terminated */
  size_t namelen;
  const char *stype; /* schema "type" */
  size_t stypelen;
  int scale; /* parameters.scale, -1 when absent */
} wd_fld_t;

static const char *const wd_image_names[2] = {"before", "after"};

/* The schema struct describing schema field `name` among root's fields (Kafka Connect JSON
 * schema: {"type":"struct","fields":[{...,"field":"x"}...]}), or -1. */
static int wd_schema_field(const wd_jdoc_t *d, int st, const char *name, size_t n) {
  int fields = wd_jgets(d, st, "fields");
  if (fields < 0 || d->t[fields].type != JSMN_ARRAY) return -1;
  int j = fields + 1;
  for (int k = 0; k < d->t[fields].size && j < d->n; k++) {
    int f = wd_jgets(d, j, "field");
    if (f >= 0 && wd_jstr_eq(d, f, name, n)) return j;
    j = wd_jnext(d, j);
  }
  return -1;
}

static int wd_jdoc_load(wd_jdoc_t *d, wd_json_fast_t *jf, const char *js, size_t len, jsmntok_t **tok, unsigned *cap,
                        char *why, size_t whycap);

/* The schema document and struct token describing f's document: the key's own envelope schema,
 * the value's schema inside the value (general path), or the cached schema text (fast path,
 * tokenised on first use). *st = -1 when there is none. */
static const wd_jdoc_t *wd_fld_schema_root(wd_dbz_t *x, const wd_fld_t *f, int *st) {
  *st = -1;
  if (f->doc != &x->doc || !x->cached_schema) {
    *st = f->doc->schema;
    return f->doc;
  }
  wd_dbz_scratch_t *sc = x->sc;
  if (sc->snt == 0) {
    char why[160];
    int r = wd_jdoc_load(&x->sdoc, sc->jf, (const char *)sc->schema_text.data, sc->schema_text.len, &sc->stok,
                         &sc->stokcap, why, sizeof(why));
    sc->snt = r == 0 ? x->sdoc.n : -1; /* no memory: no hints (the value may then fail E_TYPE) */
  } else if (sc->snt > 0 && x->sdoc.t != sc->stok) {
    x->sdoc.js = (const char *)sc->schema_text.data;
    x->sdoc.t = sc->stok;
    x->sdoc.n = sc->snt;
    wd_jdoc_keys(&x->sdoc, 0);
  }
  if (sc->snt <= 0) return f->doc;
  x->sdoc.root = 0;
  x->sdoc.schema = 0;
  *st = 0;
  return &x->sdoc;
}

static void wd_fld_hints(wd_dbz_t *x, wd_fld_t *f) {
  if (f->hints_done) return;
  f->hints_done = true;
  f->scale = -1;
  int st;
  const wd_jdoc_t *d = wd_fld_schema_root(x, f, &st);
  if (st < 0) return;
  if (f->image >= 0) {
    if (x->img_schema[f->image] == -2) {
      int s = wd_schema_field(d, st, wd_image_names[f->image], strlen(wd_image_names[f->image]));
      if (s < 0) s = wd_schema_field(d, st, wd_image_names[1 - f->image], strlen(wd_image_names[1 - f->image]));
      x->img_schema[f->image] = s;
    }
    st = x->img_schema[f->image];
  }
  for (size_t k = 0; k < f->c->nseg && st >= 0; k++) st = wd_schema_field(d, st, f->c->seg[k], f->c->seglen[k]);
  if (st < 0) return;
  int t = wd_jgets(d, st, "name");
  if (t >= 0 && d->t[t].type == JSMN_STRING) {
    f->name = d->js + d->t[t].start;
    f->namelen = (size_t)(d->t[t].end - d->t[t].start);
  }
  t = wd_jgets(d, st, "type");
  if (t >= 0 && d->t[t].type == JSMN_STRING) {
    f->stype = d->js + d->t[t].start;
    f->stypelen = (size_t)(d->t[t].end - d->t[t].start);
  }
  t = wd_jgets(d, wd_jgets(d, st, "parameters"), "scale");
  if (t >= 0) {
    int64_t s;
    if (wd_conv_parse_int(d->js + d->t[t].start, (size_t)(d->t[t].end - d->t[t].start), &s) == 0 && s >= 0 && s <= 38)
      f->scale = (int)s;
  }
}

static bool wd_fld_name_is(const wd_fld_t *f, const char *s) {
  size_t n = strlen(s);
  return f->namelen == n && memcmp(f->name, s, n) == 0;
}

static bool wd_fld_type_is(const wd_fld_t *f, const char *s) {
  size_t n = strlen(s);
  return f->stypelen == n && memcmp(f->stype, s, n) == 0;
}

/* ---- errors --------------------------------------------------------------------------------- */

/* Appends a token's JSON text (strings with their quotes), shortened to ~64 bytes. */
static void wd_tok_text(const wd_jdoc_t *d, int i, char *out, size_t cap) {
  if (i < 0) {
    snprintf(out, cap, "(absent)");
    return;
  }
  const jsmntok_t *t = &d->t[i];
  int s = t->start, e = t->end;
  if (t->type == JSMN_STRING) {
    s--;
    e++;
  }
  int n = e - s;
  if (n > 64) snprintf(out, cap, "%.64s...", d->js + s);
  else snprintf(out, cap, "%.*s", n, d->js + s);
}

/* "after.weight", "$.source.ts_ms", "$key.id": how a message names a source field. */
static void wd_fld_label(const wd_fld_t *f, char *out, size_t cap) {
  if (f->image >= 0) snprintf(out, cap, "%s.%s", f->iname, f->c->spec);
  else snprintf(out, cap, "%s", f->c->spec);
}

static wd_error_t *wd_type_error(const wd_dbz_t *x, const wd_fld_t *f, int tok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* E_TYPE naming source, source field, wide column, column type and the JSON found. */
static wd_error_t *wd_type_error(const wd_dbz_t *x, const wd_fld_t *f, int tok, const char *fmt, ...) {
  char reason[256], label[192], found[80];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  wd_fld_label(f, label, sizeof(label));
  if (f->doc) wd_tok_text(f->doc, tok, found, sizeof(found));
  else snprintf(found, sizeof(found), "the value");
  const wd_field_t *col = &x->schema->cols[f->c->col];
  char *ts = wd_type_to_string(col->type);
  wd_error_t *err =
      wd_error_new(WD_ERR_RECORD, E_TYPE, "source '%s': field %s -> column '%s' %s: cannot convert %s%s: %s",
                   x->src->name, label, col->name, ts ? ts : "?", f->doc ? "JSON " : "", found, reason);
  free(ts);
  return err;
}

/* ---- token access --------------------------------------------------------------------------- */

/* The unescaped text of string token i: into *p and *n (pointing into the message, or into the
 * scratch buffer, valid until the next call). E_DECODE on a bad escape. */
static wd_error_t *wd_jstr(wd_dbz_t *x, const wd_fld_t *f, int i, const char **p, size_t *n) {
  const wd_jdoc_t *d = f->doc;
  const char *rp = d->js + d->t[i].start;
  size_t rn = (size_t)(d->t[i].end - d->t[i].start);
  if (!memchr(rp, '\\', rn)) {
    *p = rp;
    *n = rn;
    return NULL;
  }
  wd_buf_reset(&x->sc->buf);
  if (wd_buf_reserve(&x->sc->buf, rn + 1)) return wd_error_nomem();
  long m = wd_json_unescape(rp, rn, (char *)x->sc->buf.data);
  if (m < 0) {
    char label[192];
    wd_fld_label(f, label, sizeof(label));
    return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': field %s: invalid escape or lone surrogate in a string",
                        x->src->name, label);
  }
  x->sc->buf.len = (size_t)m;
  x->sc->buf.data[m] = 0;
  *p = (const char *)x->sc->buf.data;
  *n = (size_t)m;
  return NULL;
}

/* Sets v to a copy of p[0..n) (text or bytes). */
static wd_error_t *wd_set_bytes(wd_value_t *v, const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return wd_error_nomem();
  if (n) memcpy(s, p, n);
  s[n] = 0;
  v->is_null = false;
  v->s.p = s;
  v->s.n = n;
  return NULL;
}

/* A NUL-terminated copy of p[0..n) for strtod: into stack when it fits, else the scratch
 * buffer. */
static const char *wd_cstr(wd_dbz_t *x, const char *p, size_t n, char *stack, size_t cap) {
  if (n < cap) {
    memcpy(stack, p, n);
    stack[n] = 0;
    return stack;
  }
  wd_buf_reset(&x->sc->buf);
  if (wd_buf_append(&x->sc->buf, p, n)) return NULL;
  return (const char *)x->sc->buf.data;
}

/* ---- numbers -------------------------------------------------------------------------------- */

/* An exact decimal read from Debezium bytes (base64 of a big-endian unscaled value), or from a
 * VariableScaleDecimal struct. */
static wd_error_t *wd_read_b64_decimal(wd_dbz_t *x, const wd_fld_t *f, int tok, const char *p, size_t n,
                                       wd_i128 *unscaled) {
  uint8_t stack[64];
  uint8_t *bytes = n / 4 * 3 + 3 <= sizeof(stack) ? stack : malloc(n / 4 * 3 + 3);
  wd_error_t *err = NULL;
  size_t bn = 0;
  if (!bytes) return wd_error_nomem();
  if (wd_base64_decode(p, n, WD_BASE64_STRICT, bytes, &bn)) {
    err = wd_type_error(x, f, tok, "not base64 (Debezium decimal bytes)");
    goto cleanup;
  }
  if (wd_conv_be_to_i128(bytes, bn, unscaled)) {
    err = wd_type_error(x, f, tok, "the unscaled value (%zu bytes) exceeds 128 bits", bn);
    goto cleanup;
  }
cleanup:
  if (bytes != stack) free(bytes);
  return err;
}

/* Whether p[0..n) looks like Debezium's base64 decimal bytes: non-empty, a multiple of 4 long,
 * only base64 characters with '=' padding at the end, and not a word Debezium writes as text for
 * special values ("Infinity"). Anything else is read as decimal text, and fails as text, so "NaN",
 * "+5x" or "" are type errors rather than silently decoded bytes. */
static bool wd_plausible_b64(const char *p, size_t n) {
  if (n == 0 || n % 4 != 0 || (n == 8 && memcmp(p, "Infinity", 8) == 0)) return false;
  size_t pad = 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c == '=') {
      pad++;
      continue;
    }
    if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
      return false;
  }
  return pad <= 2;
}

/* Reads a Debezium decimal in bytes form: token tok is a base64 string (scale from the schema,
 * else dflt_scale) or a VariableScaleDecimal object. *is_dec = false when tok is neither (the
 * caller then reads it as text). */
static wd_error_t *wd_read_bytes_decimal(wd_dbz_t *x, wd_fld_t *f, int tok, int dflt_scale, bool text_first,
                                         bool *is_dec, wd_i128 *unscaled, int *scale) {
  const wd_jdoc_t *d = f->doc;
  wd_error_t *err = NULL;
  *is_dec = false;
  if (d->t[tok].type == JSMN_OBJECT) {
    int st = wd_jgets(d, tok, "scale"), sv = wd_jgets(d, tok, "value");
    if (st < 0 || sv < 0 || d->t[sv].type != JSMN_STRING) return NULL;
    int64_t s;
    if (wd_conv_parse_int(d->js + d->t[st].start, (size_t)(d->t[st].end - d->t[st].start), &s) || s < 0 || s > 38)
      return wd_type_error(x, f, tok, "VariableScaleDecimal scale is not an integer in 0..38");
    const char *p;
    size_t n;
    if ((err = wd_jstr(x, f, sv, &p, &n))) return err;
    if ((err = wd_read_b64_decimal(x, f, tok, p, n, unscaled))) return err;
    *scale = (int)s;
    *is_dec = true;
    return NULL;
  }
  if (d->t[tok].type != JSMN_STRING) return NULL;
  wd_fld_hints(x, f);
  bool bytes_form;
  if (f->stype) bytes_form = wd_fld_type_is(f, "bytes");
  else bytes_form = !text_first;
  if (!bytes_form) return NULL;
  const char *p;
  size_t n;
  if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
  if (!f->stype) { /* schemaless: the source's decimal-encoding decides, else valid text first */
    wd_decimal_encoding_t enc = x->dec_enc;
    if (enc == WD_DECIMAL_TEXT) return NULL;
    if (enc == WD_DECIMAL_AUTO && (wd_conv_is_json_number(p, n) || !wd_plausible_b64(p, n))) return NULL;
  }
  if ((err = wd_read_b64_decimal(x, f, tok, p, n, unscaled))) return err;
  *scale = f->scale >= 0 ? f->scale : dflt_scale;
  *is_dec = true;
  return NULL;
}

static wd_error_t *wd_to_integer(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, int64_t *out) {
  const wd_jdoc_t *d = f->doc;
  const jsmntok_t *k = &d->t[tok];
  wd_error_t *err = NULL;
  int64_t v = 0;
  if (k->type == JSMN_PRIMITIVE) {
    char c = d->js[k->start];
    if (c == 't' || c == 'f') return wd_type_error(x, f, tok, "a boolean is not a number");
    int r = wd_conv_parse_int(d->js + k->start, (size_t)(k->end - k->start), &v);
    if (r == -1) return wd_type_error(x, f, tok, "not a JSON number");
    if (r == -2) return wd_type_error(x, f, tok, "not an integer");
    if (r == -3) return wd_type_error(x, f, tok, "out of range");
  } else if (k->type == JSMN_STRING || k->type == JSMN_OBJECT) {
    bool is_dec;
    wd_i128 u;
    int scale;
    if ((err = wd_read_bytes_decimal(x, f, tok, 0, true, &is_dec, &u, &scale))) return err;
    if (is_dec) {
      wd_i128 p10 = wd_pow10(scale);
      if (u % p10 != 0) return wd_type_error(x, f, tok, "not an integer (decimal with scale %d)", scale);
      u /= p10;
      if (u < INT64_MIN || u > INT64_MAX) return wd_type_error(x, f, tok, "out of range");
      v = (int64_t)u;
    } else {
      if (k->type != JSMN_STRING) return wd_type_error(x, f, tok, "an object is not a number");
      const char *p;
      size_t n;
      if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
      int r = wd_conv_parse_int(p, n, &v);
      if (r == -1) return wd_type_error(x, f, tok, "the string is not a number");
      if (r == -2) return wd_type_error(x, f, tok, "not an integer");
      if (r == -3) return wd_type_error(x, f, tok, "out of range");
    }
  } else {
    return wd_type_error(x, f, tok, "an array is not a number");
  }
  if (v < wd_type_int_min(t) || v > wd_type_int_max(t))
    return wd_type_error(x, f, tok, "out of range %lld..%lld", (long long)wd_type_int_min(t),
                         (long long)wd_type_int_max(t));
  *out = v;
  return NULL;
}

static wd_error_t *wd_to_float(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, double *out) {
  const wd_jdoc_t *d = f->doc;
  const jsmntok_t *k = &d->t[tok];
  wd_error_t *err = NULL;
  const char *p = d->js + k->start;
  size_t n = (size_t)(k->end - k->start);
  char dtext[64];
  if (k->type == JSMN_PRIMITIVE) {
    if (!wd_conv_is_json_number(p, n)) return wd_type_error(x, f, tok, "not a JSON number");
  } else if (k->type == JSMN_STRING || k->type == JSMN_OBJECT) {
    bool is_dec;
    wd_i128 u;
    int scale;
    if ((err = wd_read_bytes_decimal(x, f, tok, 0, true, &is_dec, &u, &scale))) return err;
    if (is_dec) {
      n = wd_decimal_text(u, scale, dtext);
      p = dtext;
    } else {
      if (k->type != JSMN_STRING) return wd_type_error(x, f, tok, "an object is not a number");
      if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
      if (n == 3 && memcmp(p, "NaN", 3) == 0) {
        *out = NAN;
        return NULL;
      }
      if (n == 8 && memcmp(p, "Infinity", 8) == 0) {
        *out = INFINITY;
        return NULL;
      }
      if (n == 9 && memcmp(p, "-Infinity", 9) == 0) {
        *out = -INFINITY;
        return NULL;
      }
      if (!wd_conv_is_json_number(p, n)) return wd_type_error(x, f, tok, "the string is not a number");
    }
  } else {
    return wd_type_error(x, f, tok, "an array is not a number");
  }
  char stack[128];
  const char *z = wd_cstr(x, p, n, stack, sizeof(stack));
  if (!z) return wd_error_nomem();
  if (t->id == WD_FLOAT) {
    float fv = strtof(z, NULL);
    if (isinf(fv)) return wd_type_error(x, f, tok, "out of the FLOAT range");
    *out = fv;
  } else {
    double dv = strtod(z, NULL);
    if (isinf(dv)) return wd_type_error(x, f, tok, "out of the DOUBLE range");
    *out = dv;
  }
  return NULL;
}

static wd_error_t *wd_check_precision(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, wd_i128 u) {
  wd_i128 lim = 1;
  for (int i = 0; i < t->precision; i++) lim *= 10;
  if (u >= lim || u <= -lim) return wd_type_error(x, f, tok, "does not fit precision %d", t->precision);
  return NULL;
}

/* DECIMAL(prec, scale) of plain decimal text p[0..n) (`-?D+` or `-?D+.D+`, at most 18 digits, no
 * more fraction digits than scale) into *out: the value wd_decimal_parse gives it, without its
 * general scan. false (nothing set) for any other text or a value that does not fit prec, which
 * then takes wd_decimal_parse (and its error). */
static bool wd_decimal_fast(const char *p, size_t n, int prec, int scale, wd_i128 *out) {
  size_t i = n && p[0] == '-';
  bool neg = i == 1;
  uint64_t v = 0;
  size_t nd = 0, nfrac = 0;
  bool dot = false;
  for (; i < n; i++) {
    unsigned d = (unsigned)((unsigned char)p[i] - '0');
    if (d <= 9) {
      v = v * 10 + d;
      nd++;
      nfrac += dot;
    } else if (p[i] == '.' && !dot && nd) {
      dot = true;
    } else {
      return false;
    }
  }
  static const uint64_t p10[19] = {1u,
                                   10u,
                                   100u,
                                   1000u,
                                   10000u,
                                   100000u,
                                   1000000u,
                                   10000000u,
                                   100000000u,
                                   1000000000u,
                                   10000000000u,
                                   100000000000u,
                                   1000000000000u,
                                   10000000000000u,
                                   100000000000000u,
                                   1000000000000000u,
                                   10000000000000000u,
                                   100000000000000000u,
                                   1000000000000000000u};
  /* v * 10^(scale - nfrac) below 10^18: at most 18 digits with the zeros the scale adds */
  if (!nd || (dot && !nfrac) || scale < 0 || nfrac > (size_t)scale || nd + ((size_t)scale - nfrac) > 18 || prec < 1 ||
      prec > 38 || scale > prec)
    return false;
  uint64_t r = v * p10[(size_t)scale - nfrac];
  if (prec <= 18 && r >= p10[prec]) return false;
  *out = neg ? -(wd_i128)r : (wd_i128)r;
  return true;
}

static wd_error_t *wd_to_decimal(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, wd_i128 *out) {
  const wd_jdoc_t *d = f->doc;
  const jsmntok_t *k = &d->t[tok];
  wd_error_t *err = NULL;
  const char *p = d->js + k->start;
  size_t n = (size_t)(k->end - k->start);
  if (k->type == JSMN_PRIMITIVE) {
    if (!wd_conv_is_json_number(p, n)) return wd_type_error(x, f, tok, "not a JSON number");
  } else if (k->type == JSMN_STRING || k->type == JSMN_OBJECT) {
    bool is_dec;
    wd_i128 u;
    int scale;
    if ((err = wd_read_bytes_decimal(x, f, tok, t->scale, false, &is_dec, &u, &scale))) return err;
    if (is_dec) {
      if (wd_conv_rescale(u, scale, t->scale, &u))
        return wd_type_error(x, f, tok, "does not fit precision %d", t->precision);
      if ((err = wd_check_precision(x, f, tok, t, u))) return err;
      *out = u;
      return NULL;
    }
    if (k->type != JSMN_STRING) return wd_type_error(x, f, tok, "an object is not a decimal");
    if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
  } else {
    return wd_type_error(x, f, tok, "an array is not a decimal");
  }
  if (wd_decimal_fast(p, n, t->precision, t->scale, out)) return NULL;
  wd_error_t *perr = wd_decimal_parse(p, n, t->precision, t->scale, out);
  if (perr) {
    err = wd_type_error(x, f, tok, "%s", wd_error_text(perr));
    wd_error_destroy(perr);
  }
  return err;
}

/* ---- temporal ------------------------------------------------------------------------------- */

/* The unit of an integer TIME/TIMESTAMP value: the source's type when the record says it (the
 * envelope schema's name), then a path suffix, then the source option. WD_UNIT_AUTO when none
 * does: the unit is not known (a schemaless record, an int64 without a name), and the caller
 * refuses to guess (unknown_unit). */
static wd_time_unit_t wd_int_unit(wd_dbz_t *x, wd_fld_t *f, const wd_type_t *t, wd_time_unit_t opt, bool *days) {
  *days = false;
  wd_fld_hints(x, f);
  if (f->name) {
    if (wd_fld_name_is(f, "io.debezium.time.Time") || wd_fld_name_is(f, "io.debezium.time.Timestamp") ||
        wd_fld_name_is(f, "org.apache.kafka.connect.data.Time") ||
        wd_fld_name_is(f, "org.apache.kafka.connect.data.Timestamp"))
      return WD_UNIT_MILLIS;
    if (wd_fld_name_is(f, "io.debezium.time.MicroTime") || wd_fld_name_is(f, "io.debezium.time.MicroTimestamp"))
      return WD_UNIT_MICROS;
    if (wd_fld_name_is(f, "io.debezium.time.NanoTime") || wd_fld_name_is(f, "io.debezium.time.NanoTimestamp"))
      return WD_UNIT_NANOS;
    if (wd_fld_name_is(f, "io.debezium.time.Date") || wd_fld_name_is(f, "org.apache.kafka.connect.data.Date")) {
      *days = true;
      return WD_UNIT_AUTO;
    }
  }
  if (f->c->path_unit != WD_UNIT_AUTO) return f->c->path_unit;
  if (opt == WD_UNIT_PRECISION)
    return t->precision <= 3 ? WD_UNIT_MILLIS : t->precision <= 6 ? WD_UNIT_MICROS : WD_UNIT_NANOS;
  return opt;
}

/* An integer TIME/TIMESTAMP value whose unit nothing says (no envelope schema name, no _ms/_us/_ns
 * path, the source option `auto`): the wide column's precision says nothing about the source's
 * unit (Debezium sends a PostgreSQL timestamp(6) as µs whatever the wide column), so the record
 * is not read: WD_ERR_CONFIG "C_TEMPORAL_UNIT" (the pipeline stops) naming the record, the field
 * and the fix. */
static wd_error_t *wd_unknown_unit(const wd_dbz_t *x, const wd_fld_t *f, const char *option) {
  char label[192];
  wd_fld_label(f, label, sizeof(label));
  const wd_field_t *col = &x->schema->cols[f->c->col];
  char *ts = wd_type_to_string(col->type);
  char at[200] = "";
  if (x->meta && x->meta->topic)
    snprintf(at, sizeof(at), " (%s[%d]@%" PRId64 ")", x->meta->topic, (int)x->meta->partition, x->meta->offset);
  wd_error_t *err = wd_error_new(
      WD_ERR_CONFIG, C_TEMPORAL_UNIT,
      "source '%s'%s: field %s -> column '%s' %s: an integer without a unit: the record has no envelope schema "
      "naming its type (io.debezium.time.Timestamp, MicroTimestamp, NanoTimestamp...: Kafka Connect's "
      "JsonConverter with schemas.enable=false leaves it out) and the source's %s is auto; the wide column's "
      "precision does not tell the source's unit. Set the source option `%s: millis`, `micros` or `nanos` (Debezium "
      "sends PostgreSQL/MySQL columns of precision 0-3 in millis, 4-6 in micros with time.precision.mode=adaptive), "
      "or enable schemas in the converter",
      x->src->name, at, label, col->name, ts ? ts : "?", option, option);
  free(ts);
  return err;
}

static wd_error_t *wd_json_int(wd_dbz_t *x, wd_fld_t *f, int tok, int64_t *v) {
  const wd_jdoc_t *d = f->doc;
  const jsmntok_t *k = &d->t[tok];
  int r = wd_conv_parse_int(d->js + k->start, (size_t)(k->end - k->start), v);
  if (r == -1) return wd_type_error(x, f, tok, "not a JSON number");
  if (r == -2) return wd_type_error(x, f, tok, "not an integer");
  if (r == -3) return wd_type_error(x, f, tok, "out of range");
  return NULL;
}

static wd_error_t *wd_to_date(wd_dbz_t *x, wd_fld_t *f, int tok, int64_t *out) {
  const wd_jdoc_t *d = f->doc;
  wd_error_t *err = NULL;
  if (d->t[tok].type == JSMN_PRIMITIVE) {
    if ((err = wd_json_int(x, f, tok, out))) return err;
    if (*out < INT32_MIN || *out > INT32_MAX) return wd_type_error(x, f, tok, "days out of range");
    if (!wd_conv_date_in_years(*out)) return wd_type_error(x, f, tok, "%s", WD_CONV_YEARS_TEXT);
    return NULL;
  }
  if (d->t[tok].type != JSMN_STRING) return wd_type_error(x, f, tok, "expected days or \"YYYY-MM-DD\"");
  const char *p;
  size_t n;
  if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
  if (wd_conv_parse_date(p, n, out)) return wd_type_error(x, f, tok, "not a date \"YYYY-MM-DD\"");
  return NULL;
}

static wd_error_t *wd_to_time(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, int64_t *out) {
  const wd_jdoc_t *d = f->doc;
  wd_error_t *err = NULL;
  int64_t ns;
  if (d->t[tok].type == JSMN_PRIMITIVE) {
    int64_t v;
    bool days;
    if ((err = wd_json_int(x, f, tok, &v))) return err;
    wd_time_unit_t u = wd_int_unit(x, f, t, x->src->time_unit, &days);
    if (u == WD_UNIT_AUTO && !days) return wd_unknown_unit(x, f, "time-unit");
    int64_t mul = u == WD_UNIT_MILLIS ? 1000000 : u == WD_UNIT_MICROS ? 1000 : 1;
    if (days || v < 0 || v > 86400LL * 1000000000LL / mul)
      return wd_type_error(x, f, tok, "not a time of day in %s",
                           days                  ? "days"
                           : u == WD_UNIT_MILLIS ? "ms"
                           : u == WD_UNIT_MICROS ? "µs"
                                                 : "ns");
    ns = v * mul;
    if (ns >= 86400LL * 1000000000LL) return wd_type_error(x, f, tok, "24:00 or later is not a time of day");
  } else if (d->t[tok].type == JSMN_STRING) {
    const char *p;
    size_t n;
    if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
    if (wd_conv_parse_time(p, n, &ns)) return wd_type_error(x, f, tok, "not a time \"hh:mm:ss[.fffffffff]\"");
  } else {
    return wd_type_error(x, f, tok, "expected an integer or \"hh:mm:ss\"");
  }
  int p = t->precision < 0 ? 0 : t->precision > 9 ? 9 : t->precision;
  *out = ns - ns % (int64_t)wd_pow10(9 - p);
  return NULL;
}

/* Truncates (us, ns) to p fraction digits, towards the past. */
static void wd_ts_truncate(int p, int64_t *us, int32_t *ns) {
  if (p < 0) p = 0;
  if (p >= 9) return;
  if (p > 6) {
    *ns -= (int32_t)(*ns % (int64_t)wd_pow10(9 - p));
    return;
  }
  *ns = 0;
  *us -= wd_floormod(*us, (int64_t)wd_pow10(6 - p));
}

static wd_error_t *wd_to_timestamp(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, int64_t *us, int32_t *ns) {
  const wd_jdoc_t *d = f->doc;
  wd_error_t *err = NULL;
  *ns = 0;
  if (d->t[tok].type == JSMN_PRIMITIVE) {
    int64_t v;
    bool days;
    if ((err = wd_json_int(x, f, tok, &v))) return err;
    wd_time_unit_t u = wd_int_unit(x, f, t, x->src->timestamp_unit, &days);
    if (u == WD_UNIT_AUTO && !days) return wd_unknown_unit(x, f, "timestamp-unit");
    if (days) {
      if (v > INT64_MAX / 86400000000LL || v < INT64_MIN / 86400000000LL)
        return wd_type_error(x, f, tok, "days out of range");
      *us = v * 86400000000LL;
    } else if (u == WD_UNIT_MILLIS) {
      if (v > INT64_MAX / 1000 || v < INT64_MIN / 1000) return wd_type_error(x, f, tok, "ms out of range");
      *us = v * 1000;
    } else if (u == WD_UNIT_MICROS) {
      *us = v;
    } else {
      *us = wd_floordiv(v, 1000);
      *ns = (int32_t)wd_floormod(v, 1000);
    }
  } else if (d->t[tok].type == JSMN_STRING) {
    const char *p;
    size_t n;
    bool zoned;
    if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
    if (wd_conv_parse_timestamp(p, n, us, ns, &zoned))
      return wd_type_error(x, f, tok, "not an ISO-8601 timestamp \"YYYY-MM-DDThh:mm:ss[.f][Z|+hh:mm]\"");
  } else {
    return wd_type_error(x, f, tok, "expected an integer or an ISO-8601 string");
  }
  if (!wd_conv_ts_in_years(*us)) return wd_type_error(x, f, tok, "%s", WD_CONV_YEARS_TEXT);
  wd_ts_truncate(t->precision, us, ns);
  return NULL;
}

/* ---- one value ---------------------------------------------------------------------------- */

/* Converts token tok of f->doc (may be -1: absent) into v (NULL beforehand) of type t. */
static wd_error_t *wd_convert(wd_dbz_t *x, wd_fld_t *f, int tok, const wd_type_t *t, wd_value_t *v) {
  const wd_jdoc_t *d = f->doc;
  wd_error_t *err = NULL;
  if (wd_jis_null(d, tok)) return NULL;
  const jsmntok_t *k = &d->t[tok];
  /* a primitive token is true, false or a JSON number: wd_jtokenize gives only tokens of valid
   * JSON (json_fast.h checks every scalar; jsmn's tokens only when jansson accepts the text) */
  switch (t->id) {
  case WD_BOOLEAN:
    if (k->type == JSMN_STRING && x->hints.strings_only) {
      const char *p = d->js + k->start;
      size_t n = (size_t)(k->end - k->start);
      if ((n == 1 && (p[0] == '0' || p[0] == '1')) || (n == 4 && !memcmp(p, "true", 4)) ||
          (n == 5 && !memcmp(p, "false", 5))) {
        v->b = p[0] == '1' || p[0] == 't';
        v->is_null = false;
        return NULL;
      }
    }
    if (k->type == JSMN_PRIMITIVE) {
      const char *p = d->js + k->start;
      if (p[0] == 't' || p[0] == 'f') {
        v->b = p[0] == 't';
        v->is_null = false;
        return NULL;
      }
      int64_t i;
      if (wd_conv_parse_int(p, (size_t)(k->end - k->start), &i) == 0 && (i == 0 || i == 1)) {
        v->b = i == 1;
        v->is_null = false;
        return NULL;
      }
    }
    return wd_type_error(x, f, tok, "expected true, false, 0 or 1");
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if ((err = wd_to_integer(x, f, tok, t, &v->i))) return err;
    v->is_null = false;
    return NULL;
  case WD_FLOAT:
  case WD_DOUBLE:
    if ((err = wd_to_float(x, f, tok, t, &v->f))) return err;
    v->is_null = false;
    return NULL;
  case WD_DECIMAL:
    if ((err = wd_to_decimal(x, f, tok, t, &v->dec))) return err;
    v->is_null = false;
    return NULL;
  case WD_DATE:
    if ((err = wd_to_date(x, f, tok, &v->i))) return err;
    v->is_null = false;
    return NULL;
  case WD_TIME:
    if ((err = wd_to_time(x, f, tok, t, &v->i))) return err;
    v->is_null = false;
    return NULL;
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if ((err = wd_to_timestamp(x, f, tok, t, &v->ts.us, &v->ts.ns))) return err;
    v->is_null = false;
    return NULL;
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING: {
    if (k->type == JSMN_STRING) {
      const char *rp = d->js + k->start;
      size_t rn = (size_t)(k->end - k->start);
      if (!memchr(rp, '\\', rn)) return wd_set_bytes(v, rp, rn);
      char *s = malloc(rn + 1);
      if (!s) return wd_error_nomem();
      long m = wd_json_unescape(rp, rn, s);
      if (m < 0) {
        free(s);
        char label[192];
        wd_fld_label(f, label, sizeof(label));
        return wd_error_new(WD_ERR_DECODE, E_DECODE,
                            "source '%s': field %s: invalid escape or lone surrogate in a string", x->src->name, label);
      }
      s[m] = 0;
      v->is_null = false;
      v->s.p = s;
      v->s.n = (size_t)m;
      return NULL;
    }
    /* numbers, booleans, objects and arrays: their JSON text as it is in the message */
    return wd_set_bytes(v, d->js + k->start, (size_t)(k->end - k->start));
  }
  case WD_BYTES: {
    if (k->type != JSMN_STRING) return wd_type_error(x, f, tok, "expected a base64 string");
    const char *p;
    size_t n;
    if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
    wd_fld_hints(x, f);
    if (f->stype && wd_fld_type_is(f, "string")) return wd_set_bytes(v, p, n);
    bool latin1 = false;
    if (!f->stype && x->hints.strings_only && f->image >= 0 && x->type_hints >= 0) {
      int th = wd_jget(d, x->type_hints, f->c->seg[0], f->c->seglen[0]);
      if (th >= 0 && d->t[th].type == JSMN_STRING) {
        size_t tn = (size_t)(d->t[th].end - d->t[th].start);
        const char *tp = d->js + d->t[th].start;
        latin1 = memmem(tp, tn, "binary", 6) || memmem(tp, tn, "blob", 4) || memmem(tp, tn, "bit", 3);
      }
    }
    if (!f->stype && x->hints.strings_only && !latin1) return wd_set_bytes(v, p, n);
    if (latin1) { /* Canal writes binary columns as ISO-8859-1 text: one byte per code point <= U+00FF */
      char *b = malloc(n + 1);
      size_t bn = 0;
      if (!b) return wd_error_nomem();
      for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80) {
          b[bn++] = (char)c;
        } else if ((c == 0xC2 || c == 0xC3) && i + 1 < n && ((unsigned char)p[i + 1] & 0xC0) == 0x80) {
          b[bn++] = (char)(((c & 0x03) << 6) | ((unsigned char)p[i + 1] & 0x3F));
          i++;
        } else {
          free(b);
          return wd_type_error(x, f, tok, "not ISO-8859-1 text (a character above U+00FF)");
        }
      }
      b[bn] = 0;
      v->is_null = false;
      v->s.p = b;
      v->s.n = bn;
      return NULL;
    }
    char *b = malloc(n / 4 * 3 + 4);
    size_t bn;
    if (!b) return wd_error_nomem();
    if (wd_base64_decode(p, n, WD_BASE64_STRICT, (uint8_t *)b, &bn)) {
      free(b);
      return wd_type_error(x, f, tok, "not base64");
    }
    b[bn] = 0;
    v->is_null = false;
    v->s.p = b;
    v->s.n = bn;
    return NULL;
  }
  case WD_ARRAY:
  case WD_MAP:
  case WD_ROW: {
    const char *p = d->js + k->start;
    size_t n = (size_t)(k->end - k->start);
    if (k->type == JSMN_STRING) {
      if ((err = wd_jstr(x, f, tok, &p, &n))) return err;
    } else if (k->type == JSMN_PRIMITIVE) {
      return wd_type_error(x, f, tok, "expected a JSON %s", t->id == WD_ARRAY ? "array" : "object");
    }
    json_error_t jerr;
    json_t *j = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!j) return wd_type_error(x, f, tok, "not JSON: %s", jerr.text);
    wd_error_t *verr = wd_value_from_json(t, j, v);
    json_decref(j);
    if (verr) {
      err = wd_type_error(x, f, tok, "%s", wd_error_text(verr));
      wd_error_destroy(verr);
    }
    return err;
  }
  }
  return wd_type_error(x, f, tok, "unsupported column type");
}

/* ---- documents -------------------------------------------------------------------------------- */

/* Finds payload and schema of a tokenised top object: the {"schema","payload"} envelope when
 * the top object has no "op" but a "payload". *payload_null when the payload is JSON null. */
static void wd_envelope(wd_jdoc_t *d, bool *payload_null) {
  *payload_null = false;
  d->root = 0;
  d->schema = -1;
  if (wd_jgets(d, 0, "op") >= 0) return;
  int p = wd_jgets(d, 0, "payload");
  if (p < 0) return;
  if (wd_jis_null(d, p)) *payload_null = true;
  d->root = p;
  int s = wd_jgets(d, 0, "schema");
  if (s >= 0 && d->t[s].type == JSMN_OBJECT) d->schema = s;
  wd_jdoc_keys(d, p);
}

/* The index after the JSON string starting at js[i] == '"', or 0 when it is not closed. */
static size_t wd_skip_string(const char *js, size_t e, size_t i) {
  i++;
  for (;;) {
    const char *q = i < e ? memchr(js + i, '"', e - i) : NULL;
    if (!q) return 0;
    size_t k = (size_t)(q - js), bs = 0;
    while (k - bs > i && js[k - bs - 1] == '\\') bs++;
    if (bs % 2 == 0) return k + 1;
    i = k + 1;
  }
}

/* The index after the JSON value starting at js[i] (strings and bracket depth only; not a
 * validator), or 0. */
static size_t wd_skip_value(const char *js, size_t e, size_t i) {
  if (i >= e) return 0;
  if (js[i] == '"') return wd_skip_string(js, e, i);
  if (js[i] == '{' || js[i] == '[') {
    int depth = 0;
    while (i < e) {
      char c = js[i];
      if (c == '"') {
        if (!(i = wd_skip_string(js, e, i))) return 0;
        continue;
      }
      if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      i++;
    }
    return 0;
  }
  while (i < e && js[i] != ',' && js[i] != '}' && js[i] != ']' && !wd_json_space(js[i])) i++;
  return i;
}

/* The envelope fast path: when js[b..e) is {"schema":S,"payload":P} (P last), sets [*pb, *pe)
 * to P and makes S the cached schema (compared with it first), returning 1; 0 when the message
 * has another shape (use the general path); -1 on no memory. */
static int wd_envelope_fast(wd_dbz_t *x, const char *js, size_t b, size_t e, size_t *pb, size_t *pe) {
  static const char pre[] = "{\"schema\":";
  const size_t npre = sizeof(pre) - 1;
  wd_buf_t *st = &x->sc->schema_text;
  if (e - b < npre + 12 || memcmp(js + b, pre, npre) != 0 || js[e - 1] != '}') return 0;
  size_t i = b + npre, se;
  while (i < e && wd_json_space(js[i])) i++;
  if (st->len && e - i > st->len && memcmp(js + i, st->data, st->len) == 0 &&
      (js[i + st->len] == ',' || wd_json_space(js[i + st->len]))) {
    se = i + st->len;
  } else {
    if (!(se = wd_skip_value(js, e, i))) return 0;
    wd_buf_reset(st);
    if (wd_buf_append(st, js + i, se - i)) return -1;
    x->sc->snt = 0;
  }
  i = se;
  while (i < e && wd_json_space(js[i])) i++;
  if (i >= e || js[i] != ',') return 0;
  i++;
  while (i < e && wd_json_space(js[i])) i++;
  if (e - i < 10 || memcmp(js + i, "\"payload\"", 9) != 0) return 0;
  i += 9;
  while (i < e && wd_json_space(js[i])) i++;
  if (i >= e || js[i] != ':') return 0;
  i++;
  while (i < e && wd_json_space(js[i])) i++;
  size_t j = e - 1; /* the closing '}' of the envelope */
  while (j > i && wd_json_space(js[j - 1])) j--;
  if (j <= i) return 0;
  *pb = i;
  *pe = j;
  return 1;
}

/* Tokenises js into a document whose top token is an object spanning all of js (whitespace
 * aside). Returns 0, -1 (not JSON / not an object; *why says which), -2 no memory. */
static int wd_jdoc_load(wd_jdoc_t *d, wd_json_fast_t *jf, const char *js, size_t len, jsmntok_t **tok, unsigned *cap,
                        char *why, size_t whycap) {
  if (len >= INT_MAX) {
    snprintf(why, whycap, "the value is too large (%zu bytes)", len);
    return -1;
  }
  size_t b = 0, e = len;
  while (b < e && wd_json_space(js[b])) b++;
  while (e > b && wd_json_space(js[e - 1])) e--;
  if (b == e) {
    snprintf(why, whycap, "the value is empty or whitespace only");
    return -1;
  }
  if (js[b] != '{') {
    snprintf(why, whycap, "not a JSON object (starts with '%.*s')", (int)(e - b > 20 ? 20 : e - b), js + b);
    return -1;
  }
  unsigned pos = 0;
  const char *fast_why;
  int n = wd_jtokenize(jf, js, len, tok, cap, &pos, &fast_why);
  if (n == WD_JTOK_NOMEM) return -2;
  if (n == WD_JTOK_FAST_INVALID) {
    snprintf(why, whycap, "invalid JSON at byte %u (%s)", pos, fast_why);
    return -1;
  }
  if (n == WD_JTOK_DEEP) {
    snprintf(why, whycap, "JSON nested deeper than %d levels", WD_JSON_MAX_DEPTH);
    return -1;
  }
  if (n == JSMN_ERROR_INVAL) {
    snprintf(why, whycap, "invalid JSON at byte %u", pos);
    return -1;
  }
  if (n < 0) {
    snprintf(why, whycap, "truncated JSON (an object, array or string is not closed)");
    return -1;
  }
  if (n < 1 || (*tok)[0].type != JSMN_OBJECT || (size_t)(*tok)[0].end != e) {
    snprintf(why, whycap, "not a single JSON object (text after the object at byte %d)", n >= 1 ? (*tok)[0].end : 0);
    return -1;
  }
  d->js = js;
  d->t = *tok;
  d->n = n;
  wd_jdoc_keys(d, 0);
  return 0;
}

/* Parses the Kafka key once per message (for $key.* mappings). */
static wd_error_t *wd_load_key(wd_dbz_t *x) {
  if (x->key_state) return NULL;
  x->key_state = -1;
  const wd_kafka_meta_t *m = x->meta;
  if (!m || !m->key || m->key_len == 0) return NULL;
  char why[160];
  int r = wd_jdoc_load(&x->key, x->sc->jf, m->key, m->key_len, &x->sc->ktok, &x->sc->ktokcap, why, sizeof(why));
  if (r == -2) return wd_error_nomem();
  if (r == -1) return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the Kafka key: %s", x->src->name, why);
  bool null_payload;
  wd_envelope(&x->key, &null_payload);
  if (null_payload) return NULL;
  x->key_state = 1;
  return NULL;
}

/* ---- row images ---------------------------------------------------------------------------- */

/* What wd_fill_slots looks for: the IMAGE mapping whose first segment is p[0..n). */
typedef struct wd_key_probe {
  const wd_source_t *src;
  const char *p;
  size_t n;
} wd_key_probe_t;

static bool wd_key_eq(const void *ctx, size_t e) {
  const wd_key_probe_t *q = ctx;
  const wd_source_col_t *c = &q->src->cols[e];
  return c->seglen[0] == q->n && memcmp(c->seg[0], q->p, q->n) == 0;
}

/* Sets x->sc->slot for the keys of object img (without clearing first): one pass over its keys
 * through the source's hash. */
static wd_error_t *wd_fill_slots(wd_dbz_t *x, int image, int img) {
  const wd_source_t *src = x->src;
  const wd_jdoc_t *d = &x->doc;
  if (img < 0 || !src->hash.slot || d->t[img].type != JSMN_OBJECT) return NULL;
  int j = img + 1;
  for (int k = 0; k < d->t[img].size && j + 1 < d->n; k++) {
    const char *kp = d->js + d->t[j].start;
    size_t kn = (size_t)(d->t[j].end - d->t[j].start);
    wd_kc_key_t *ck = k < WD_KC_KEYS ? &x->kc->k[k] : NULL;
    if (ck && kn <= WD_KC_KEYLEN && ck->len == kn && wd_jeq_short(ck->key, kp, kn)) { /* the key remembered here */
      for (int mm = ck->first; mm >= 0; mm = src->cols[mm].next_same) x->sc->slot[mm] = j + 1;
      j = wd_jnext(d, j + 1);
      continue;
    }
    bool plain = true;
    if (memchr(kp, '\\', kn)) {
      plain = false;
      wd_buf_reset(&x->sc->buf);
      if (wd_buf_reserve(&x->sc->buf, kn + 1)) return wd_error_nomem();
      long r = wd_json_unescape(kp, kn, (char *)x->sc->buf.data);
      if (r < 0)
        return wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': a key of the %s image has an invalid escape",
                            x->src->name, x->image_names[image]);
      kp = (const char *)x->sc->buf.data;
      kn = (size_t)r;
    }
    wd_key_probe_t q = {src, kp, kn};
    ptrdiff_t first = wd_hindex_find(&src->hash, wd_hash_bytes(kp, kn, 0), wd_key_eq, &q, NULL);
    for (int mm = (int)first; mm >= 0; mm = src->cols[mm].next_same) x->sc->slot[mm] = j + 1;
    if (ck) {
      ck->len = plain && kn <= WD_KC_KEYLEN ? (uint8_t)kn : 0xff;
      if (ck->len != 0xff) memcpy(ck->key, kp, kn);
      ck->first = (int)first;
    }
    j = wd_jnext(d, j + 1);
  }
  return NULL;
}

/* The image key memory of x->src in the scratch (found, or the least recently used one taken
 * and emptied). */
static wd_kc_t *wd_kc_of(wd_dbz_t *x) {
  wd_dbz_scratch_t *sc = x->sc;
  wd_kc_t *kc = &sc->kc[0];
  for (int i = 0; i < WD_KC_SOURCES; i++) {
    if (x->src->serial && sc->kc[i].serial == x->src->serial) {
      kc = &sc->kc[i];
      kc->used = ++sc->kc_clock;
      return kc;
    }
    if (sc->kc[i].used < kc->used) kc = &sc->kc[i];
  }
  kc->serial = x->src->serial;
  kc->used = ++sc->kc_clock;
  for (int k = 0; k < WD_KC_KEYS; k++) kc->k[k].len = 0xff;
  return kc;
}

static bool wd_jzero(const wd_jdoc_t *d, int i);
static bool wd_jin_key(const wd_dbz_t *x, int k);

static wd_error_t *wd_jev_begin_image(void *ctx, int image, const void *img) {
  wd_dbz_t *x = ctx;
  const wd_jimg_t *ji = img;
  wd_error_t *err = NULL;
  for (size_t m = 0; m < x->src->ncols; m++) x->sc->slot[m] = -1;
  if (!ji) return NULL;
  if (!x->kc) x->kc = wd_kc_of(x);
  if ((err = wd_fill_slots(x, image, ji->obj))) return err;
  if (ji->overlay >= 0) err = wd_fill_slots(x, image, ji->overlay);
  if (!err && x->key_only_img && x->key_only_img == ji->obj) /* the fields Debezium filled in: not carried */
    for (size_t m = 0; m < x->src->ncols; m++) {
      int v = x->sc->slot[m];
      if (v > 0 && !wd_jin_key(x, v - 1) && wd_jzero(&x->doc, v)) x->sc->slot[m] = -1;
    }
  return err;
}

/* Whether the value at token i is its type's zero: a number 0 (0, -0, 0.0, 0e0), false, "" or
 * "AA==" (Kafka Connect's Decimal 0: one zero byte in base64): what Debezium writes for a NOT
 * NULL column it has no value of. */
static bool wd_jzero(const wd_jdoc_t *d, int i) {
  const char *p = d->js + d->t[i].start;
  size_t n = (size_t)(d->t[i].end - d->t[i].start);
  if (d->t[i].type == JSMN_STRING) { /* also the temporal types' fallbacks and an empty hstore */
    static const char *const zs[] = {"AA==", "1970-01-01T00:00:00Z", "1970-01-01", "00:00:00Z", "{}"};
    for (size_t k = 0; k < sizeof(zs) / sizeof(*zs); k++)
      if (n == strlen(zs[k]) && memcmp(p, zs[k], n) == 0) return true;
    return n == 0;
  }
  if (d->t[i].type == JSMN_OBJECT) { /* VariableScaleDecimal 0: {"scale":0,"value":"AA=="} */
    int v = wd_jgets(d, i, "value"), sc = wd_jgets(d, i, "scale");
    return d->t[i].size == 2 && v > 0 && sc > 0 && wd_jzero(d, v) && wd_jzero(d, sc);
  }
  if (d->t[i].type != JSMN_PRIMITIVE) return false;
  if (n == 5 && memcmp(p, "false", 5) == 0) return true;
  bool digit = false;
  for (size_t k = 0; k < n; k++) {
    if (p[k] == 'e' || p[k] == 'E') break; /* 0e5 is 0 */
    if (p[k] >= '1' && p[k] <= '9') return false;
    if (p[k] == '0') digit = true;
    else if (p[k] != '-' && p[k] != '.') return false;
  }
  return digit;
}

/* Whether the image field whose key token is k is a field of the Kafka key (loaded). */
static bool wd_jin_key(const wd_dbz_t *x, int k) {
  const wd_jdoc_t *d = &x->doc;
  return wd_jget(&x->key, x->key.root, d->js + d->t[k].start, (size_t)(d->t[k].end - d->t[k].start)) >= 0;
}

/* Whether the record is Debezium PostgreSQL's (source.connector "postgresql") with a Kafka key
 * that is a non-empty JSON object (loaded into x->key). */
static bool wd_jev_postgres_key(wd_dbz_t *x) {
  const wd_jdoc_t *d = &x->doc;
  int source = wd_jgets(d, d->root, "source");
  int connector = source >= 0 && d->t[source].type == JSMN_OBJECT ? wd_jgets(d, source, "connector") : -1;
  if (connector < 0 || !wd_jstr_eq(d, connector, "postgresql", 10)) return false;
  wd_error_t *err = wd_load_key(x);
  if (err) {
    /* a Kafka key that is not JSON: not this shape; a $key mapping reports it when it reads it */
    wd_error_destroy(err);
    x->key_state = 0;
    return false;
  }
  const wd_jdoc_t *k = &x->key;
  return x->key_state == 1 && k->t[k->root].type == JSMN_OBJECT && k->t[k->root].size > 0;
}

/* The first IMAGE mapping of a wide primary-key column whose field is not in the Kafka key, or
 * NULL. */
static const wd_source_col_t *wd_jev_pk_outside_key(const wd_dbz_t *x) {
  const wd_jdoc_t *k = &x->key;
  for (size_t m = 0; m < x->src->ncols; m++) {
    const wd_source_col_t *c = &x->src->cols[m];
    if (c->kind == WD_MAP_IMAGE && wd_schema_is_pk(x->schema, c->col) &&
        wd_jget(k, k->root, c->seg[0], c->seglen[0]) < 0)
      return c;
  }
  return NULL;
}

void wd_jev_note_update_without_before(wd_jev_t *x) {
  if (wd_jev_postgres_key(x) && wd_jev_pk_outside_key(x)) x->out->flags |= WD_CHANGES_KEY_ONLY_BEFORE;
}

int wd_jev_key_only_image(wd_jev_t *x, int img) {
  const wd_jdoc_t *d = &x->doc;
  if (img <= 0 || d->t[img].type != JSMN_OBJECT || !wd_jev_postgres_key(x)) return 0;
  const wd_jdoc_t *k = &x->key;
  int nkey = 0, nzero = 0, j = img + 1;
  for (int f = 0; f < d->t[img].size && j + 1 < d->n; f++, j = wd_jnext(d, j + 1)) {
    if (wd_jin_key(x, j)) nkey++;
    else if (wd_jzero(d, j + 1)) nzero++;
    else if (!wd_jis_null(d, j + 1)) return 0; /* a real value: a full image */
  }
  if (nkey != k->t[k->root].size || nzero == 0) return 0;
  /* the wide row such a delete leaves is named by its key fields only: when a wide key column
   * is read from another field, the row is unknown (the caller decides: dead letter, or nothing
   * under ignore-delete) */
  if (wd_jev_pk_outside_key(x)) {
    x->out->flags |= WD_CHANGES_KEY_ONLY_BEFORE | WD_CHANGES_ROW_UNKNOWN;
    return -1;
  }
  x->key_only_img = img;
  x->out->flags |= WD_CHANGES_KEY_ONLY_BEFORE;
  return 1;
}

static wd_error_t *wd_jev_value(void *ctx, int image, const void *img, size_t m, wd_value_t *v, bool *present) {
  wd_dbz_t *x = ctx;
  const wd_source_col_t *c = &x->src->cols[m];
  const wd_type_t *t = x->schema->cols[c->col].type;
  wd_error_t *err = NULL;
  wd_fld_t f = {.doc = &x->doc, .c = c, .image = -1, .iname = x->image_names[image]};
  int tok = -1;
  *present = true;
  switch (c->kind) {
  case WD_MAP_IMAGE:
    f.image = image;
    tok = img ? x->sc->slot[m] : -1;
    *present = tok >= 0;
    if (tok >= 0 && c->nseg > 1) tok = wd_jpath(&x->doc, tok, c, 1);
    break;
  case WD_MAP_ENVELOPE: tok = wd_jpath(&x->doc, x->doc.root, c, 0); break;
  case WD_MAP_KEY:
    if ((err = wd_load_key(x))) return err;
    f.doc = &x->key;
    if (x->key_state == 1) tok = wd_jpath(&x->key, x->key.root, c, 0);
    break;
  case WD_MAP_KAFKA: return NULL;
  }
  if (tok < 0) return NULL;
  return wd_convert(x, &f, tok, t, v);
}

wd_image_reader_t wd_jev_reader(wd_jev_t *x, const char *before_name, const char *after_name) {
  x->image_names[0] = before_name;
  x->image_names[1] = after_name;
  wd_image_reader_t rd = {
      .ctx = x, .image_names = {before_name, after_name}, .begin = wd_jev_begin_image, .value = wd_jev_value};
  return rd;
}

/* ---- the record ----------------------------------------------------------------------------- */

wd_error_t *wd_jev_start(wd_changes_t *out, const wd_source_t *src, const wd_schema_t *schema,
                         const wd_kafka_meta_t *meta, const wd_json_hints_t *hints, wd_jev_t **xp) {
  wd_changes_reset(out);
  *xp = NULL;
  if (out->schema && out->schema != schema)
    return wd_error_new(WD_ERR_INTERNAL, NONE, "JSON decoder: the container is bound to another schema");
  if (src->ncols && src->schema_ncols != schema->ncols)
    return wd_error_new(WD_ERR_INTERNAL, NONE, "JSON decoder: source '%s' is not a source of this schema", src->name);
  if (out->scratch && out->scratch_free != wd_dbz_scratch_free) {
    out->scratch_free(out->scratch);
    out->scratch = NULL;
  }
  if (!out->scratch) {
    if (!(out->scratch = calloc(1, sizeof(wd_dbz_scratch_t)))) return wd_error_nomem();
    out->scratch_free = wd_dbz_scratch_free;
  }
  wd_dbz_scratch_t *sc = out->scratch;
  if (!sc->ctx && !(sc->ctx = calloc(1, sizeof(*sc->ctx)))) return wd_error_nomem();
  if (!sc->jf && !(sc->jf = wd_json_fast_new())) return wd_error_nomem();
  if (sc->slotcap < src->ncols) {
    int *sl = realloc(sc->slot, src->ncols * sizeof(*sl));
    if (!sl) return wd_error_nomem();
    sc->slot = sl;
    sc->slotcap = src->ncols;
  }
  wd_dbz_t *x = sc->ctx;
  memset(x, 0, offsetof(wd_dbz_t, doc));
  memset(&x->doc, 0, offsetof(wd_jdoc_t, key));
  memset(&x->key, 0, offsetof(wd_jdoc_t, key));
  memset(&x->sdoc, 0, offsetof(wd_jdoc_t, key));
  x->out = out;
  x->src = src;
  x->schema = schema;
  x->meta = meta;
  x->sc = sc;
  x->img_schema[0] = x->img_schema[1] = -2;
  x->doc.kobj = x->key.kobj = x->sdoc.kobj = -1;
  x->type_hints = -1;
  x->image_names[0] = "before";
  x->image_names[1] = "after";
  x->dec_enc = wd_format_decimal_encoding(src);
  if (hints) x->hints = *hints;
  *xp = x;
  return NULL;
}

int wd_jev_parse(wd_jev_t *x, const void *value, size_t len, bool connect_envelope, wd_error_t **err) {
  wd_changes_t *out = x->out;
  const wd_source_t *src = x->src;
  *err = NULL;
  const char *js = value;
  if (!js || len == 0) {
    out->flags |= WD_CHANGES_TOMBSTONE;
    return 1;
  }
  size_t b = 0, e = len;
  while (b < e && wd_json_space(js[b])) b++;
  while (e > b && wd_json_space(js[e - 1])) e--;
  if (e - b == 4 && memcmp(js + b, "null", 4) == 0) {
    out->flags |= WD_CHANGES_TOMBSTONE;
    return 1;
  }
  char why[160];
  int r = -1;
  size_t pb, pe;
  int fast = connect_envelope && len < INT_MAX ? wd_envelope_fast(x, js, b, e, &pb, &pe) : 0;
  if (fast < 0) {
    *err = wd_error_nomem();
    return -1;
  }
  if (fast) {
    if (pe - pb == 4 && memcmp(js + pb, "null", 4) == 0) {
      out->flags |= WD_CHANGES_TOMBSTONE;
      return 1;
    }
    r = wd_jdoc_load(&x->doc, x->sc->jf, js + pb, pe - pb, &x->sc->tok, &x->sc->tokcap, why, sizeof(why));
    if (r == 0) {
      x->doc.root = 0;
      x->doc.schema = -1;
      x->cached_schema = true;
    }
  }
  if (r == -1) { /* the general path (also for a fast-path payload that is not one object) */
    r = wd_jdoc_load(&x->doc, x->sc->jf, js, len, &x->sc->tok, &x->sc->tokcap, why, sizeof(why));
    if (r == -1) {
      *err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': %s", src->name, why);
      return -1;
    }
    if (r == 0) {
      x->doc.root = 0;
      x->doc.schema = -1;
      if (connect_envelope) {
        bool payload_null;
        wd_envelope(&x->doc, &payload_null);
        if (payload_null) {
          out->flags |= WD_CHANGES_TOMBSTONE;
          return 1;
        }
      }
    }
  }
  if (r == -2) {
    *err = wd_error_nomem();
    return -1;
  }
  if (x->doc.t[x->doc.root].type != JSMN_OBJECT) {
    *err = wd_error_new(WD_ERR_DECODE, E_DECODE, "source '%s': the envelope's payload is not an object", src->name);
    return -1;
  }
  if (connect_envelope && !fast && x->doc.schema < 0) out->flags |= WD_CHANGES_SCHEMALESS;
  return 0;
}

int wd_jev_root(const wd_jev_t *x) { return x->doc.root; }

wd_jtype_t wd_jev_type(const wd_jev_t *x, int tok) {
  if (tok < 0 || tok >= x->doc.n) return WD_JT_OTHER;
  switch (x->doc.t[tok].type) {
  case JSMN_OBJECT: return WD_JT_OBJECT;
  case JSMN_ARRAY: return WD_JT_ARRAY;
  case JSMN_STRING: return WD_JT_STRING;
  case JSMN_PRIMITIVE: return WD_JT_PRIMITIVE;
  default: return WD_JT_OTHER;
  }
}

bool wd_jev_is_null(const wd_jev_t *x, int tok) { return wd_jis_null(&x->doc, tok); }

int wd_jev_get(const wd_jev_t *x, int obj, const char *key) { return wd_jgets(&x->doc, obj, key); }

int wd_jev_size(const wd_jev_t *x, int tok) { return tok < 0 ? 0 : x->doc.t[tok].size; }

int wd_jev_index(const wd_jev_t *x, int arr, int i) { return i < 0 ? -1 : wd_jindex(&x->doc, arr, (size_t)i); }

bool wd_jev_str_eq(const wd_jev_t *x, int tok, const char *s) {
  return tok >= 0 && wd_jstr_eq(&x->doc, tok, s, strlen(s));
}

void wd_jev_text(const wd_jev_t *x, int tok, char *out, size_t cap) { wd_tok_text(&x->doc, tok, out, cap); }

int wd_jev_int(const wd_jev_t *x, int tok, int64_t *out) {
  if (tok < 0) return -1;
  const jsmntok_t *t = &x->doc.t[tok];
  if (t->type != JSMN_PRIMITIVE && t->type != JSMN_STRING) return -1;
  return wd_conv_parse_int(x->doc.js + t->start, (size_t)(t->end - t->start), out) == 0 ? 0 : -1;
}

wd_error_t *wd_jev_finish(wd_jev_t *x, wd_error_t *err) {
  if (err) wd_changes_reset(x->out);
  return err;
}

void wd_jev_set_type_hints(wd_jev_t *x, int tok) { x->type_hints = tok; }
