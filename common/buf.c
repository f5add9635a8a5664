#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wd_buf_reserve(wd_buf_t *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra) cap *= 2;
  uint8_t *p = realloc(b->data, cap);
  if (!p) return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

int wd_buf_append(wd_buf_t *b, const void *p, size_t n) {
  if (wd_buf_reserve(b, n + 1)) return -1;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0; /* always NUL-terminated past len, handy for text */
  return 0;
}

int wd_buf_putc(wd_buf_t *b, uint8_t c) { return wd_buf_append(b, &c, 1); }

int wd_buf_put_varint(wd_buf_t *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v) byte |= 0x80;
    tmp[n++] = byte;
  } while (v);
  return wd_buf_append(b, tmp, n);
}

int wd_buf_put_zigzag(wd_buf_t *b, int64_t v) { return wd_buf_put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

/* Appends the digits of u, zero-padded to width, and a leading '-' when neg: one append, so a
 * failure leaves b unchanged. */
static int wd_buf_put_digits(wd_buf_t *b, uint64_t u, int width, int neg) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  while ((int)n < width && n < sizeof(tmp) - 1) tmp[sizeof(tmp) - 1 - n++] = '0';
  if (neg) tmp[sizeof(tmp) - 1 - n++] = '-';
  return wd_buf_append(b, tmp + sizeof(tmp) - n, n);
}

int wd_buf_put_uint(wd_buf_t *b, uint64_t v, int width) { return wd_buf_put_digits(b, v, width, 0); }

int wd_buf_put_int(wd_buf_t *b, int64_t v) {
  return wd_buf_put_digits(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 0, v < 0);
}

int wd_buf_printf(wd_buf_t *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || wd_buf_reserve(b, (size_t)n + 1)) {
    va_end(ap2);
    return -1;
  }
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)n;
  return 0;
}

void wd_buf_reset(wd_buf_t *b) { b->len = 0; }

void wd_buf_free(wd_buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int wd_reader_varint(wd_reader_t *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return -1;
    uint8_t byte = *r->p++;
    x |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

int wd_reader_zigzag(wd_reader_t *r, int64_t *v) {
  uint64_t u;
  if (wd_reader_varint(r, &u)) return -1;
  *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
  return 0;
}

int wd_reader_byte(wd_reader_t *r, uint8_t *v) {
  if (r->p >= r->end) return -1;
  *v = *r->p++;
  return 0;
}

int wd_reader_bytes(wd_reader_t *r, size_t n, const uint8_t **p) {
  if ((size_t)(r->end - r->p) < n) return -1;
  *p = r->p;
  r->p += n;
  return 0;
}
