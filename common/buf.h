/*
 * common/buf.h — a growable byte buffer (like Redis' sds, but a plain struct).
 * Owner: whoever declared the wd_buf_t; release with wd_buf_free(). Zero-initialised is empty.
 */
#ifndef WD_BUF_H
#define WD_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct wd_buf {
  uint8_t *data;
  size_t len;
  size_t cap;
} wd_buf_t;

/* Each returns 0 on success, -1 when memory runs out (the buffer is then unchanged). */
int wd_buf_reserve(wd_buf_t *b, size_t extra);
int wd_buf_append(wd_buf_t *b, const void *p, size_t n);
int wd_buf_putc(wd_buf_t *b, uint8_t c);
int wd_buf_put_varint(wd_buf_t *b, uint64_t v); /* LEB128 */
int wd_buf_put_zigzag(wd_buf_t *b, int64_t v); /* zig-zag + LEB128 */
/* v as decimal digits, zero-padded to at least width digits (width <= 20); no printf: this is on
 * the output path of every changelog row. */
int wd_buf_put_uint(wd_buf_t *b, uint64_t v, int width);
int wd_buf_put_int(wd_buf_t *b, int64_t v); /* decimal, '-' for a negative v */
int wd_buf_printf(wd_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wd_buf_reset(wd_buf_t *b); /* len = 0, keeps memory */
void wd_buf_free(wd_buf_t *b);

/* A read cursor over bytes it does not own. Readers return 0, or -1 on truncated/bad input. */
typedef struct wd_reader {
  const uint8_t *p;
  const uint8_t *end;
} wd_reader_t;
int wd_reader_varint(wd_reader_t *r, uint64_t *v);
int wd_reader_zigzag(wd_reader_t *r, int64_t *v);
int wd_reader_byte(wd_reader_t *r, uint8_t *v);
int wd_reader_bytes(wd_reader_t *r, size_t n, const uint8_t **p);

#endif
