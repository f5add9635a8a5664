/*
 * ingest/conv.c — see conv.h. Pure functions; safe from any thread.
 */
#include "ingest/conv.h"

#include <string.h>

bool wd_conv_is_json_number(const char *p, size_t n) {
  size_t i = 0;
  if (i < n && p[i] == '-') i++;
  if (i >= n) return false;
  if (p[i] == '0') {
    i++;
  } else if (p[i] >= '1' && p[i] <= '9') {
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
  } else {
    return false;
  }
  if (i < n && p[i] == '.') {
    i++;
    size_t s = i;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    if (i == s) return false;
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) i++;
    size_t s = i;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    if (i == s) return false;
  }
  return i == n;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wd_conv_parse_int reads eight digits as a word");

int wd_conv_parse_int(const char *p, size_t n, int64_t *out) {
  /* the common case first: an optional '-' and 1..18 digits without a leading zero (below 10^18,
   * so no overflow); anything else (fractions, exponents, 19 digits and more) takes the general
   * path below */
  bool neg0 = n > 0 && p[0] == '-';
  size_t d0 = neg0 ? 1 : 0;
  if (n - d0 >= 1 && n - d0 <= 18 && (p[d0] != '0' || n - d0 == 1)) {
    uint64_t v = 0;
    size_t k = d0;
    for (; k + 8 <= n; k += 8) { /* eight digits at a time while eight are left */
      uint64_t w;
      memcpy(&w, p + k, 8);
      /* every byte 0x30..0x39: high nibble 3, still 3 after adding 6 (a byte that would carry,
       * >= 0xFA, fails the first test) */
      if ((w & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u ||
          ((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u)
        break;
      /* the digits' values (byte i = digit i, little-endian), combined pairwise: 2, 4, then 8 */
      w -= 0x3030303030303030u;
      w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFu;
      w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFu;
      w = (w * 10000 + (w >> 32)) & 0xFFFFFFFFu;
      v = v * 100000000u + w;
    }
    for (; k < n; k++) {
      unsigned d = (unsigned)((unsigned char)p[k] - '0');
      if (d > 9) break;
      v = v * 10 + d;
    }
    if (k == n) {
      *out = neg0 ? -(int64_t)v : (int64_t)v;
      return 0;
    }
  }
  if (!wd_conv_is_json_number(p, n)) return -1;
  bool neg = p[0] == '-';
  size_t i = neg ? 1 : 0;
  const char *ip = p + i;
  size_t ni = 0;
  while (i < n && p[i] >= '0' && p[i] <= '9') {
    i++;
    ni++;
  }
  const char *fp = p + i;
  size_t nf = 0;
  if (i < n && p[i] == '.') {
    i++;
    fp = p + i;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
      i++;
      nf++;
    }
  }
  int64_t exp = 0;
  if (i < n) { /* e/E */
    i++;
    bool eneg = false;
    if (p[i] == '+' || p[i] == '-') eneg = p[i++] == '-';
    for (; i < n; i++) {
      if (exp < 100000) exp = exp * 10 + (p[i] - '0');
    }
    if (eneg) exp = -exp;
  }
  /* digits d[0..ni+nf) with the decimal point after position ni + exp */
  size_t nd = ni + nf;
  int64_t point = (int64_t)ni + exp;
  uint64_t mag = 0;
  const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (size_t k = 0; k < nd; k++) {
    char c = k < ni ? ip[k] : fp[k - ni];
    if ((int64_t)k < point) {
      unsigned d = (unsigned)(c - '0');
      if (mag > (limit - d) / 10) return -3;
      mag = mag * 10 + d;
    } else if (c != '0') {
      return -2;
    }
  }
  for (int64_t k = (int64_t)nd; k < point && mag != 0; k++) {
    if (mag > limit / 10) return -3;
    mag *= 10;
  }
  *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return 0;
}

int wd_conv_be_to_i128(const uint8_t *b, size_t n, wd_i128 *out) {
  if (n == 0) {
    *out = 0;
    return 0;
  }
  uint8_t sign = (b[0] & 0x80) ? 0xff : 0x00;
  /* strip redundant sign-extension bytes */
  while (n > 16 && b[0] == sign && ((b[1] & 0x80) == (sign & 0x80))) {
    b++;
    n--;
  }
  if (n > 16) return -1;
  unsigned __int128 u = sign ? ~(unsigned __int128)0 : 0;
  for (size_t i = 0; i < n; i++) u = (u << 8) | b[i];
  *out = (wd_i128)u;
  return 0;
}

static const wd_i128 wd_i128_max = (wd_i128)(~(unsigned __int128)0 >> 1);

int wd_conv_rescale(wd_i128 v, int from, int to, wd_i128 *out) {
  if (from == to) {
    *out = v;
    return 0;
  }
  if (to > from) {
    wd_i128 m = wd_pow10(to - from);
    if (v > wd_i128_max / m || v < -(wd_i128_max / m)) return -1;
    *out = v * m;
    return 0;
  }
  if (from - to > 38) {
    *out = 0;
    return 0;
  }
  wd_i128 d = wd_pow10(from - to);
  wd_i128 q = v / d, r = v % d;
  if (r < 0) r = -r;
  if (r >= d - r) q += v < 0 ? -1 : 1; /* HALF_UP: away from zero on ties */
  *out = q;
  return 0;
}

static int wd_digits(const char *p, size_t n, size_t at, size_t count, int *out) {
  if (at + count > n) return -1;
  int v = 0;
  for (size_t i = 0; i < count; i++) {
    char c = p[at + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return 0;
}

/* Parses "YYYY-MM-DD" at p[0..10). */
static int wd_parse_ymd(const char *p, size_t n, int64_t *days) {
  int y, m, d;
  if (wd_digits(p, n, 0, 4, &y) || n < 10 || p[4] != '-' || wd_digits(p, n, 5, 2, &m) || p[7] != '-' ||
      wd_digits(p, n, 8, 2, &d))
    return -1;
  if (m < 1 || m > 12 || d < 1 || d > wd_days_in_month(y, m)) return -1;
  *days = wd_days_from_civil(y, m, d);
  return 0;
}

int wd_conv_parse_date(const char *p, size_t n, int64_t *days) {
  if (n != 10) return -1;
  return wd_parse_ymd(p, n, days);
}

/* Parses "hh:mm[:ss[.f{1,9}]]" at p[*pos..); advances *pos. */
static int wd_parse_hms(const char *p, size_t n, size_t *pos, int64_t *nanos) {
  size_t i = *pos;
  int h, mi, s = 0;
  if (wd_digits(p, n, i, 2, &h) || i + 2 >= n || p[i + 2] != ':' || wd_digits(p, n, i + 3, 2, &mi)) return -1;
  i += 5;
  int64_t frac = 0;
  if (i < n && p[i] == ':') {
    if (wd_digits(p, n, i + 1, 2, &s)) return -1;
    i += 3;
    if (i < n && p[i] == '.') {
      i++;
      int nd = 0;
      while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (nd >= 9) return -1;
        frac = frac * 10 + (p[i] - '0');
        nd++;
        i++;
      }
      if (nd == 0) return -1;
      for (; nd < 9; nd++) frac *= 10;
    }
  }
  if (h > 23 || mi > 59 || s > 59) return -1;
  *nanos = ((int64_t)h * 3600 + mi * 60 + s) * 1000000000LL + frac;
  *pos = i;
  return 0;
}

int wd_conv_parse_time(const char *p, size_t n, int64_t *nanos) {
  size_t pos = 0;
  if (wd_parse_hms(p, n, &pos, nanos)) return -1;
  if (pos < n && (p[pos] == 'Z' || p[pos] == 'z')) pos++;
  return pos == n ? 0 : -1;
}

int wd_conv_parse_timestamp(const char *p, size_t n, int64_t *micros, int32_t *nanos, bool *zoned) {
  int64_t days, tod = 0, offset_s = 0;
  *zoned = false;
  if (n < 10 || wd_parse_ymd(p, n, &days)) return -1;
  size_t i = 10;
  if (i < n && (p[i] == 'T' || p[i] == 't' || p[i] == ' ')) {
    i++;
    if (wd_parse_hms(p, n, &i, &tod)) return -1;
  }
  if (i < n) {
    if (p[i] == 'Z' || p[i] == 'z') {
      i++;
      *zoned = true;
    } else if (p[i] == '+' || p[i] == '-') {
      int sign = p[i] == '-' ? -1 : 1, oh, om = 0;
      i++;
      if (wd_digits(p, n, i, 2, &oh)) return -1;
      i += 2;
      if (i < n && p[i] == ':') i++;
      if (i < n) {
        if (wd_digits(p, n, i, 2, &om)) return -1;
        i += 2;
      }
      if (oh > 18 || om > 59) return -1;
      offset_s = sign * ((int64_t)oh * 3600 + om * 60);
      *zoned = true;
    }
  }
  if (i != n) return -1;
  int64_t secs = days * 86400 + tod / 1000000000LL - offset_s;
  int64_t sub = tod % 1000000000LL;
  *micros = secs * 1000000 + sub / 1000;
  *nanos = (int32_t)(sub % 1000);
  return 0;
}

bool wd_conv_ts_in_years(int64_t micros) {
  /* 0001-01-01T00:00:00 and 9999-12-31T23:59:59.999999, proleptic Gregorian */
  return micros >= -62135596800LL * 1000000 && micros <= 253402300799999999LL;
}

bool wd_conv_date_in_years(int64_t days) { return days >= -719162 && days <= 2932896; }
