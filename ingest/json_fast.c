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

/* What may come next. */
enum {
  WD_JF_VALUE, /* a value (the root, after ':', after ',' in an array) */
  WD_JF_VALUE_OR_CLOSE, /* after '[' */
  WD_JF_KEY_OR_CLOSE, /* after '{' */
  WD_JF_KEY, /* after ',' in an object */
  WD_JF_COLON, /* after a key */
  WD_JF_NEXT, /* after a value in a container: ',' or its closing bracket */
  WD_JF_END /* after the root value: nothing */
};

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
  if (r) return WD_JSON_FAST_INVALID;
  if (wd_jf_grow(tok, cap, nix)) return WD_JSON_FAST_NOMEM;
  if (max_depth > WD_JF_MAX_DEPTH) max_depth = WD_JF_MAX_DEPTH;
  bool escapes = memchr(b, '\\', len) != NULL;
  jsmntok_t *t = *tok;
  int stack[WD_JF_MAX_DEPTH];
  unsigned depth = 0;
  int sup = -1; /* the innermost open container */
  int key = -1; /* the key whose value comes next (sup is an object) */
  int n = 0, state = WD_JF_VALUE;
  uint32_t pos = 0;
  for (size_t i = 0; i < nix; i++) {
    pos = ix[i];
    char c = b[pos];
    size_t next = i + 1 < nix ? ix[i + 1] : len; /* where the token's text stops at the latest */
    switch (c) {
    case '{':
    case '[': {
      if (state != WD_JF_VALUE && state != WD_JF_VALUE_OR_CLOSE) goto bad;
      if (depth >= max_depth) return WD_JSON_FAST_DEEP;
      jsmntok_t *o = &t[n];
      o->type = c == '{' ? JSMN_OBJECT : JSMN_ARRAY;
      o->start = (int)pos;
      o->end = -1;
      o->size = 0;
      if (sup >= 0 && t[sup].type == JSMN_ARRAY) {
        o->parent = sup;
        t[sup].size++;
      } else {
        o->parent = sup >= 0 ? key : -1;
      }
      stack[depth++] = sup = n++;
      state = c == '{' ? WD_JF_KEY_OR_CLOSE : WD_JF_VALUE_OR_CLOSE;
      break;
    }
    case '}':
    case ']':
      if (sup < 0 || t[sup].type != (c == '}' ? JSMN_OBJECT : JSMN_ARRAY)) goto bad;
      if (state != WD_JF_NEXT && state != (c == '}' ? WD_JF_KEY_OR_CLOSE : WD_JF_VALUE_OR_CLOSE)) goto bad;
      t[sup].end = (int)pos + 1;
      depth--;
      sup = depth ? stack[depth - 1] : -1;
      state = depth ? WD_JF_NEXT : WD_JF_END;
      break;
    case ':':
      if (state != WD_JF_COLON) goto bad;
      state = WD_JF_VALUE;
      break;
    case ',':
      if (state != WD_JF_NEXT) goto bad;
      state = t[sup].type == JSMN_OBJECT ? WD_JF_KEY : WD_JF_VALUE;
      break;
    case '"': {
      size_t e = next;
      while (e > pos + 1 && wd_jf_space(b[e - 1])) e--;
      if (e < pos + 2 || b[e - 1] != '"') goto bad;
      e--; /* the closing quote, which is not escaped: an escaped one would have a later closing quote
              before the next index entry, which would then be text, not whitespace */
      if (escapes && !wd_jf_escapes_ok(b + pos + 1, e - pos - 1)) goto bad;
      jsmntok_t *s = &t[n];
      s->type = JSMN_STRING;
      s->start = (int)pos + 1;
      s->end = (int)e;
      if (state == WD_JF_KEY_OR_CLOSE || state == WD_JF_KEY) {
        s->size = 1;
        s->parent = sup;
        t[sup].size++;
        key = n++;
        state = WD_JF_COLON;
        break;
      }
      if (state != WD_JF_VALUE && state != WD_JF_VALUE_OR_CLOSE) goto bad;
      s->size = 0;
      if (sup >= 0 && t[sup].type == JSMN_ARRAY) {
        s->parent = sup;
        t[sup].size++;
      } else {
        s->parent = sup >= 0 ? key : -1;
      }
      n++;
      state = depth ? WD_JF_NEXT : WD_JF_END;
      break;
    }
    default: {
      if (state != WD_JF_VALUE && state != WD_JF_VALUE_OR_CLOSE) goto bad;
      size_t e = next;
      while (e > pos && wd_jf_space(b[e - 1])) e--;
      size_t m = e - pos;
      const char *v = b + pos;
      bool ok = c == 't'   ? m == 4 && memcmp(v, "true", 4) == 0
                : c == 'f' ? m == 5 && memcmp(v, "false", 5) == 0
                : c == 'n' ? m == 4 && memcmp(v, "null", 4) == 0
                           : wd_conv_is_json_number(v, m);
      if (!ok) goto bad;
      jsmntok_t *s = &t[n];
      s->type = JSMN_PRIMITIVE;
      s->start = (int)pos;
      s->end = (int)e;
      s->size = 0;
      if (sup >= 0 && t[sup].type == JSMN_ARRAY) {
        s->parent = sup;
        t[sup].size++;
      } else {
        s->parent = sup >= 0 ? key : -1;
      }
      n++;
      state = depth ? WD_JF_NEXT : WD_JF_END;
      break;
    }
    }
  }
  if (state == WD_JF_END) return n;
  *errpos = (unsigned)len;
  *why = "the text ends inside a value";
  return WD_JSON_FAST_INVALID;
bad:
  *errpos = pos;
  *why = "unexpected character";
  return WD_JSON_FAST_INVALID;
}
