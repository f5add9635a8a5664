/*
 * common/jsmn_doc.c — see jsmn_doc.h; also the one copy of jsmn's parser (the header-only library
 * compiled here). Its functions are static (JSMN_STATIC): wd_jsmn_tokenize is their only caller,
 * so the compiler inlines jsmn_parse into it and keeps the parser state (a local whose address
 * does not escape) in registers instead of storing the position to memory at every byte.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "common/jsmn_doc.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

int wd_jsmn_tokenize(const char *js, size_t len, jsmntok_t **tok, unsigned *cap, unsigned *errpos) {
  jsmn_parser p;
  jsmn_init(&p);
  if (!*tok) {
    *cap = 256;
    if (!(*tok = malloc(*cap * sizeof(**tok)))) {
      *cap = 0;
      return WD_JSMN_NOMEM;
    }
  }
  for (;;) {
    int r = jsmn_parse(&p, js, len, *tok, *cap);
    if (r >= 0) return (int)p.toknext;
    if (r != JSMN_ERROR_NOMEM) {
      *errpos = p.pos;
      return r;
    }
    if (*cap > UINT_MAX / 2) return WD_JSMN_NOMEM;
    jsmntok_t *t = realloc(*tok, (size_t)*cap * 2 * sizeof(**tok));
    if (!t) return WD_JSMN_NOMEM;
    *tok = t;
    *cap *= 2;
  }
}

static int wd_hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int wd_hex4(const char *p, size_t n, size_t i, uint32_t *out) {
  if (i + 4 > n) return -1;
  uint32_t v = 0;
  for (size_t k = 0; k < 4; k++) {
    int h = wd_hexval(p[i + k]);
    if (h < 0) return -1;
    v = (v << 4) | (uint32_t)h;
  }
  *out = v;
  return 0;
}

long wd_json_unescape(const char *p, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    char c = p[i];
    if (c != '\\') {
      out[o++] = c;
      i++;
      continue;
    }
    if (i + 1 >= n) return -1;
    char e = p[i + 1];
    i += 2;
    switch (e) {
    case '"': out[o++] = '"'; break;
    case '\\': out[o++] = '\\'; break;
    case '/': out[o++] = '/'; break;
    case 'b': out[o++] = '\b'; break;
    case 'f': out[o++] = '\f'; break;
    case 'n': out[o++] = '\n'; break;
    case 'r': out[o++] = '\r'; break;
    case 't': out[o++] = '\t'; break;
    case 'u': {
      uint32_t cp;
      if (wd_hex4(p, n, i, &cp)) return -1;
      i += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t lo;
        if (i + 6 > n || p[i] != '\\' || p[i + 1] != 'u' || wd_hex4(p, n, i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
          return -1;
        i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return -1;
      }
      if (cp < 0x80) {
        out[o++] = (char)cp;
      } else if (cp < 0x800) {
        out[o++] = (char)(0xC0 | (cp >> 6));
        out[o++] = (char)(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out[o++] = (char)(0xE0 | (cp >> 12));
        out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[o++] = (char)(0x80 | (cp & 0x3F));
      } else {
        out[o++] = (char)(0xF0 | (cp >> 18));
        out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[o++] = (char)(0x80 | (cp & 0x3F));
      }
      break;
    }
    default: return -1;
    }
  }
  return (long)o;
}
