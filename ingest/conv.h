/*
 * ingest/conv.h — private helpers of the decoders: text and number conversions that do not
 * depend on a JSON library (base64, exact integer/decimal parsing, big-endian decimals, ISO
 * dates/times/timestamps). Not part of the public API of ingest/.
 */
#ifndef WD_INGEST_CONV_H
#define WD_INGEST_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/types.h"

/* Decodes standard base64 (padding optional, no whitespace) from p[0..n) into out, which must
 * hold n / 4 * 3 + 3 bytes; *outn is the decoded length. 0, or -1 on a bad character/length. */
int wd_conv_base64_decode(const char *p, size_t n, uint8_t *out, size_t *outn);

/* Whether p[0..n) is a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
bool wd_conv_is_json_number(const char *p, size_t n);

/* Parses a JSON-grammar number exactly into an int64 (fraction digits must be zero, exponents
 * allowed: "2.0E10"). 0; -1 not a number; -2 not an integer; -3 outside int64. */
int wd_conv_parse_int(const char *p, size_t n, int64_t *out);

/* The value of n big-endian two's complement bytes. 0, or -1 when it does not fit 128 bits
 * (n == 0 gives 0). */
int wd_conv_be_to_i128(const uint8_t *b, size_t n, wd_i128 *out);

/* Rescales an unscaled decimal from scale `from` to scale `to` (0..38 each; HALF_UP when
 * digits are dropped). 0, or -1 on overflow of 128 bits. */
int wd_conv_rescale(wd_i128 v, int from, int to, wd_i128 *out);

/* Writes an unscaled decimal as text with `scale` fraction digits ("-12.30") into buf (>= 48
 * bytes); returns the length. */
size_t wd_conv_decimal_text(wd_i128 v, int scale, char *buf);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12, day 1..31). */
int64_t wd_conv_days_from_civil(int64_t y, int m, int d);

/* "YYYY-MM-DD" -> days since the epoch. 0 or -1. */
int wd_conv_parse_date(const char *p, size_t n, int64_t *days);

/* "hh:mm[:ss[.f{1,9}]]" with an optional trailing "Z" -> nanoseconds since midnight
 * (0 <= t < 24h). 0 or -1. */
int wd_conv_parse_time(const char *p, size_t n, int64_t *nanos);

/* "YYYY-MM-DD[T| ]hh:mm[:ss[.f{1,9}]][Z|±hh[[:]mm]]" (also a bare date) -> the instant's µs
 * since the epoch plus extra ns 0..999; an offset is subtracted (the result is UTC). *zoned
 * says whether a zone was given. 0 or -1. */
int wd_conv_parse_timestamp(const char *p, size_t n, int64_t *micros, int32_t *nanos, bool *zoned);

/* Floor division and modulo for a positive divisor. */
static inline int64_t wd_conv_floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static inline int64_t wd_conv_floormod(int64_t a, int64_t b) { return a - wd_conv_floordiv(a, b) * b; }

#endif
