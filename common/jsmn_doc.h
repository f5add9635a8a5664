/*
 * common/jsmn_doc.h — helpers over a JSON text tokenised by jsmn (Debian's libjsmn-dev,
 * https://github.com/zserge/jsmn; strict mode, parent links), shared by the JSON source decoders
 * (ingest/json_event.c) and the changelog's tail decoder (changelog/decode_json.c): growing the
 * token array, walking subtrees, looking keys up, comparing and unescaping string tokens.
 * Tokens are indexes into an array t[0..n) of a text js; a token's text is js[t[i].start ..
 * t[i].end) (strings without their quotes, still escaped). Nothing is allocated except by
 * wd_jsmn_tokenize (and wd_jsmn_str_eq's scratch for an escaped string over 256 bytes). The small
 * helpers are static inline: they run once per key of every decoded record. Pure; any thread.
 *
 * Include this header instead of <jsmn.h>: it fixes the jsmn options (the token layout depends
 * on them) for every file, and common/jsmn_doc.c holds the one copy of jsmn's parser.
 */
#ifndef WD_JSMN_DOC_H
#define WD_JSMN_DOC_H

#define JSMN_HEADER
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* wd_jsmn_tokenize's result when the token array cannot grow (no memory). */
#define WD_JSMN_NOMEM (-100)

/* Tokenises js[0..len) into *tok (malloc'd on first use with room for 256 tokens, doubled as
 * needed; *cap is its capacity; the caller frees *tok, also after an error). Returns the token
 * count; JSMN_ERROR_INVAL or JSMN_ERROR_PART (not JSON, or cut short) with *errpos the byte
 * offset where jsmn stopped; or WD_JSMN_NOMEM. */
int wd_jsmn_tokenize(const char *js, size_t len, jsmntok_t **tok, unsigned *cap, unsigned *errpos);

/* Whether c is JSON whitespace (RFC 8259: space, tab, line feed, carriage return). */
static inline bool wd_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Index of the first token after the subtree rooted at token i (n when it is the last subtree):
 * the first j > i whose text starts at or after token i's end. Token starts increase along the
 * array, so that is a binary search; strings and primitives end before the next token starts
 * (a key's value follows its key), so for them it is i + 1. For a container the guess first
 * tried is i + 1 + s (an array of s elements) or i + 1 + 2s (an object of s keys), the answer
 * when no element is itself a container; it is taken only when the token before it is inside
 * and it is not (jsmn also accepts some malformed text, "{"a" "b"}", whose sizes do not count
 * tokens like that). */
static inline int wd_jsmn_next(const jsmntok_t *t, int n, int i) {
  if (t[i].type != JSMN_OBJECT && t[i].type != JSMN_ARRAY) return i + 1;
  int end = t[i].end;
  long g = (long)i + 1 + (t[i].type == JSMN_OBJECT ? 2L : 1L) * t[i].size;
  int lo = i + 1, hi = n; /* the answer: the first j in [lo, hi] with j == n or t[j].start >= end */
  if (g <= n) {
    int j = (int)g;
    if (j < n && t[j].start < end) {
      lo = j + 1;
    } else {
      if (j == i + 1 || t[j - 1].start < end) return j;
      hi = j - 1;
    }
  }
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (t[mid].start < end) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Whether token i is absent (i < 0) or the literal null. */
static inline bool wd_jsmn_is_null(const char *js, const jsmntok_t *t, int i) {
  return i < 0 ||
         (t[i].type == JSMN_PRIMITIVE && t[i].end - t[i].start == 4 && memcmp(js + t[i].start, "null", 4) == 0);
}

/* Unescapes JSON string content p[0..n) into out (room for n bytes; the result is never longer),
 * \uXXXX (with surrogate pairs) as UTF-8. Returns the length, or -1 on a bad escape or a lone
 * surrogate. */
long wd_json_unescape(const char *p, size_t n, char *out);

/* Whether token i is a string equal to s[0..n) after unescaping. Unescaping never makes a string
 * longer and shortens every string that has an escape (to one byte at least), so a token as long
 * as s is equal only when it is s byte for byte without a backslash, a shorter one never is, and
 * only a longer one with a backslash (and, unless that is its first byte, s's first byte first) is
 * unescaped to compare. */
static inline bool wd_jsmn_str_eq(const char *js, const jsmntok_t *t, int i, const char *s, size_t n) {
  if (t[i].type != JSMN_STRING) return false;
  size_t rn = (size_t)(t[i].end - t[i].start);
  const char *rp = js + t[i].start;
  if (rn < n) return false;
  if (rn == n) return memcmp(rp, s, n) == 0 && !memchr(rp, '\\', rn);
  /* unescaped, a string starts with its first byte unless that is a backslash */
  if (n == 0 || (rp[0] != '\\' && rp[0] != s[0]) || !memchr(rp, '\\', rn)) return false;
  char stack[256];
  char *tmp = rn <= sizeof(stack) ? stack : malloc(rn);
  if (!tmp) return false;
  long m = wd_json_unescape(rp, rn, tmp);
  bool eq = m >= 0 && (size_t)m == n && memcmp(tmp, s, n) == 0;
  if (tmp != stack) free(tmp);
  return eq;
}

/* The value token of key s[0..len) in object token i (the last one if the key repeats; keys are
 * compared unescaped), or -1 when i < 0, i is not an object or the key is not there. */
static inline int wd_jsmn_get(const char *js, const jsmntok_t *t, int n, int i, const char *s, size_t len) {
  if (i < 0 || t[i].type != JSMN_OBJECT) return -1;
  int found = -1;
  int j = i + 1;
  for (int k = 0; k < t[i].size && j + 1 < n; k++) {
    if (wd_jsmn_str_eq(js, t, j, s, len)) found = j + 1;
    j = wd_jsmn_next(t, n, j + 1);
  }
  return found;
}

#endif
