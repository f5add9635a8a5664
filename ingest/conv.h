/*
 * ingest/conv.h — private helpers of the decoders: text and number conversions that do not
 * depend on a JSON library (exact integer/decimal parsing, big-endian decimals, ISO
 * dates/times/timestamps). Not part of the public API of ingest/. The helpers the rest of widen
 * shares too (base64, decimal text, days from a civil date, floor division) are in common/.
 */
#ifndef WD_INGEST_CONV_H
#define WD_INGEST_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/types.h"

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

/* "YYYY-MM-DD" -> days since the epoch. 0 or -1. */
int wd_conv_parse_date(const char *p, size_t n, int64_t *days);

/* "hh:mm[:ss[.f{1,9}]]" with an optional trailing "Z" -> nanoseconds since midnight
 * (0 <= t < 24h). 0 or -1. */
int wd_conv_parse_time(const char *p, size_t n, int64_t *nanos);

/* "YYYY-MM-DD[T| ]hh:mm[:ss[.f{1,9}]][Z|±hh[[:]mm]]" (also a bare date) -> the instant's µs
 * since the epoch plus extra ns 0..999; an offset is subtracted (the result is UTC). *zoned
 * says whether a zone was given. 0 or -1. */
int wd_conv_parse_timestamp(const char *p, size_t n, int64_t *micros, int32_t *nanos, bool *zoned);

/* Whether an instant (µs since 1970-01-01T00:00:00) or a day (days since 1970-01-01) lies in the
 * years 0001-9999, the range of SQL's TIMESTAMP and DATE (Flink, Paimon, PostgreSQL's output): a
 * decoder refuses a value outside it (E_TYPE) rather than store a year 58141 (an integer read in
 * the wrong unit) or -68031. */
bool wd_conv_ts_in_years(int64_t micros);
bool wd_conv_date_in_years(int64_t days);
#define WD_CONV_YEARS_TEXT "outside the years 0001-9999 (an integer in another unit than the one it was read in?)"

#endif
