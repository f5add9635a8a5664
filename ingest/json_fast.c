/*
 * ingest/json_fast.c — see json_fast.h: jsmn's tokens from simdjson's structural index.
 *
 * The walk visits each index entry once, with a stack of the open containers and a state (what
 * may come next), as a JSON grammar over tokens: a value, a key or '}', a key, ':', ',' or the
 * closing bracket, the end. Offsets of a token's end come from the next index entry: a string's
 * closing quote and a scalar's last byte are the last non-whitespace byte before it (anything
 * else there would itself be indexed: simdjson marks the first byte after whitespace, a quote or
 * a structural character as the start of a scalar). A container ends after its closing bracket.
 * The token array is grown once to the number of index entries, an upper bound of the tokens.
 */
#include "ingest/json_fast.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "ingest/conv.h"
#include "ingest/json_simd.h"

struct wd_json_fast {
  wd_json_simd_t *simd;
};

wd_json_fast_t *wd_json_fast_new(void) {
  wd_json_fast_t *p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  if (!(p->simd = wd_json_simd_new())) {
    free(p);
    return NULL;
  }
  return p;
}

void wd_json_fast_free(wd_json_fast_t *p) {
  if (!p) return;
  wd_json_simd_free(p->simd);
  free(p);
}

#define WD_JF_MAX_DEPTH 1024

static inline bool wd_jf_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline bool wd_jf_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* jsmn's strict escapes in string content s[0..n): a backslash followed by one of "\/bfnrt, or by
 * u and four hex digits. */
static bool wd_jf_escapes_ok(const char *s, size_t n) {
  const char *q = memchr(s, '\\', n);
  while (q) {
    size_t i = (size_t)(q - s) + 1;
    if (i >= n) return false;
    char c = s[i];
    if (c == 'u') {
      if (i + 5 > n || !wd_jf_hex(s[i + 1]) || !wd_jf_hex(s[i + 2]) || !wd_jf_hex(s[i + 3]) || !wd_jf_hex(s[i + 4]))
        return false;
      i += 5;
    } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'r' || c == 'n' || c == 't') {
      i++;
    } else {
      return false;
    }
    q = i < n ? memchr(s + i, '\\', n - i) : NULL;
  }
  return true;
}

/* Whether v[0..m) is a JSON number: an optional '-' and digits without a leading zero, eight at a
 * time while eight are left, the common case; else the full grammar of wd_conv_is_json_number. */
static inline bool wd_jf_number(const char *v, size_t m) {
  size_t i = m && v[0] == '-';
  if (i < m && v[i] >= '1' && v[i] <= '9') {
    size_t k = i + 1;
    for (; k + 8 <= m; k += 8) {
      uint64_t w;
      memcpy(&w, v + k, 8);
      /* every byte 0x30..0x39: high nibble 3, still 3 after adding 6 (no byte carries: one that
       * would, >= 0xFA, fails the first test) */
      if ((w & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u ||
          ((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u)
        break;
    }
    while (k < m && v[k] >= '0' && v[k] <= '9') k++;
    if (k == m) return true;
  }
  return wd_conv_is_json_number(v, m);
}

/* Where stage 1 found js[0..len) wrong (it does not say): the first byte of invalid UTF-8, of a raw
 * control character in a string, or the end of a string left open; 0 when none is found. Only on
 * the error path. */
static unsigned wd_jf_stage1_pos(const char *js, size_t len) {
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)js[i];
    if (c >= 0x80) {
      size_t k = wd_utf8_decode((const uint8_t *)js + i, len - i, NULL);
      if (!k) return (unsigned)i;
      i += k - 1;
    } else if (in_str) {
      if (c < 0x20) return (unsigned)i;
      if (c == '\\') i++;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    }
  }
  return in_str ? (unsigned)len : 0;
}

static int wd_jf_grow(jsmntok_t **tok, unsigned *cap, size_t want) {
  if (want < 256) want = 256;
  if (*tok && *cap >= want) return 0;
  if (want > UINT_MAX / 2) return -1;
  size_t nc = *cap ? *cap : 256;
  while (nc < want) nc *= 2;
  jsmntok_t *t = realloc(*tok, nc * sizeof(*t));
  if (!t) return -1;
  *tok = t;
  *cap = (unsigned)nc;
  return 0;
}

int wd_json_fast_tokenize(wd_json_fast_t *p, const char *js, size_t len, unsigned max_depth, jsmntok_t **tok,
                          unsigned *cap, unsigned *errpos, const char **why) {
  const char *b;
  const uint32_t *ix;
  size_t nix;
  *errpos = 0;
  *why = "";
  if (len >= INT_MAX) {
    *why = "the value is too large";
    return WD_JSON_FAST_INVALID;
  }
  int r = wd_json_simd_index(p->simd, js, len, &b, &ix, &nix, why);
  if (r == WD_JSON_SIMD_NOMEM) return WD_JSON_FAST_NOMEM;
  if (r) {
    *errpos = wd_jf_stage1_pos(js, len);
    return WD_JSON_FAST_INVALID;
  }
  if (wd_jf_grow(tok, cap, nix)) return WD_JSON_FAST_NOMEM;
  if (max_depth > WD_JF_MAX_DEPTH) max_depth = WD_JF_MAX_DEPTH;
  const bool escapes = memchr(b, '\\', len) != NULL;
  jsmntok_t *t = *tok;
  int stack[WD_JF_MAX_DEPTH];
  unsigned depth = 0;
  int sup = -1; /* the innermost open container */
  bool obj = false; /* whether sup is an object (t[sup].type == JSMN_OBJECT, kept out of memory) */
  int parent = -1; /* the parent of the value that comes next: its key, or its array, or -1 */
  int n = 0;
  size_t i = 0; /* the index entry being read */
  uint32_t pos = 0;
  char c;

/* Reads index entry i into pos and c. Past the last entry (i == nix: the text ends early) the
 * sentinel entry gives pos = len and c = 0, the padding's zero, which every state refuses: `bad`
 * then reports the truncation. No state reads an entry beyond ix[nix + 1]. */
#define WD_JF_AT()                                                                                                     \
  do {                                                                                                                 \
    pos = ix[i];                                                                                                       \
    c = b[pos];                                                                                                        \
  } while (0)
/* The end of the token starting at pos: the last non-whitespace byte before the next entry (the
 * sentinel ix[nix] = len after the last). */
#define WD_JF_END(e)                                                                                                   \
  do {                                                                                                                 \
    e = ix[i + 1];                                                                                                     \
    if ((unsigned char)b[e - 1] <= ' ') /* whitespace (or a control byte, which stays and is refused) */               \
      while (e > pos && wd_jf_space(b[e - 1])) e--;                                                                    \
  } while (0)

value: /* a value at entry i, child of parent */
  WD_JF_AT();
  if (c == '{' || c == '[') {
    if (depth >= max_depth) return WD_JSON_FAST_DEEP;
    jsmntok_t *o = &t[n];
    o->type = c == '{' ? JSMN_OBJECT : JSMN_ARRAY;
    o->start = (int)pos;
    o->end = -1;
    o->size = 0;
    o->parent = parent;
    stack[depth++] = sup = n++;
    obj = c == '{';
    i++;
    WD_JF_AT();
    if (obj) {
      if (c == '}') goto close;
      if (c != '"') goto bad;
      goto key;
    }
    if (c == ']') goto close;
    parent = sup;
    t[sup].size++;
    goto value;
  }
  if (c == '"') {
    size_t e;
    WD_JF_END(e);
    if (e < pos + 2 || b[e - 1] != '"') goto bad;
    e--; /* the closing quote (an escaped quote there would leave the string open up to a later
            quote, which would then not be whitespace before the next entry) */
    if (escapes && !wd_jf_escapes_ok(b + pos + 1, e - pos - 1)) goto bad;
    jsmntok_t *s = &t[n++];
    s->type = JSMN_STRING;
    s->start = (int)pos + 1;
    s->end = (int)e;
    s->size = 0;
    s->parent = parent;
  } else {
    size_t e;
    WD_JF_END(e);
    size_t m = e - pos;
    const char *v = b + pos;
    bool ok = c == 't'   ? m == 4 && memcmp(v, "true", 4) == 0
              : c == 'f' ? m == 5 && memcmp(v, "false", 5) == 0
              : c == 'n' ? m == 4 && memcmp(v, "null", 4) == 0
                         : wd_jf_number(v, m);
    if (!ok) goto bad;
    jsmntok_t *s = &t[n++];
    s->type = JSMN_PRIMITIVE;
    s->start = (int)pos;
    s->end = (int)e;
    s->size = 0;
    s->parent = parent;
  }

next: /* after a value: ',' or the closing bracket of the container, or the end */
  if (!depth) {
    if (i + 1 < nix) {
      pos = ix[i + 1];
      goto bad;
    }
    return n;
  }
  i++;
  WD_JF_AT();
  if (c == ',') {
    i++;
    WD_JF_AT();
    if (obj) {
      if (c != '"') goto bad;
      goto key;
    }
    parent = sup;
    t[sup].size++;
    goto value;
  }
close: /* entry i closes the innermost container */
  if (c != (obj ? '}' : ']')) goto bad;
  t[sup].end = (int)pos + 1;
  depth--;
  sup = depth ? stack[depth - 1] : -1;
  obj = depth && t[sup].type == JSMN_OBJECT;
  goto next;

key : /* a key at entry i (c is its quote) of object sup, then ':' and its value */
{
  size_t e;
  WD_JF_END(e);
  if (e < pos + 2 || b[e - 1] != '"') goto bad;
  e--;
  if (escapes && !wd_jf_escapes_ok(b + pos + 1, e - pos - 1)) goto bad;
  jsmntok_t *s = &t[n];
  s->type = JSMN_STRING;
  s->start = (int)pos + 1;
  s->end = (int)e;
  s->size = 1;
  s->parent = sup;
  t[sup].size++;
  parent = n++;
  i++;
  WD_JF_AT();
  if (c != ':') goto bad;
  i++;
  goto value;
}

truncated:
  *errpos = (unsigned)len;
  *why = "the text ends inside a value";
  return WD_JSON_FAST_INVALID;
bad:
  if (i >= nix) goto truncated; /* the sentinel's zero */
  *errpos = pos;
  *why = "unexpected character";
  return WD_JSON_FAST_INVALID;
#undef WD_JF_AT
#undef WD_JF_END
}
