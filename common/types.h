/*
 * common/types.h — SQL types, typed values, schemas and rows: the vocabulary every stage shares.
 *
 * Types are the ones of spec §12.1 (Paimon/Flink SQL names): BOOLEAN, TINYINT, SMALLINT, INT,
 * BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), CHAR(n), VARCHAR(n), STRING, BYTES, DATE, TIME[(p)],
 * TIMESTAMP[(p)], TIMESTAMP_LTZ[(p)], ARRAY<T>, MAP<K,V>, ROW<name T, ...>, each optionally
 * followed by "NOT NULL".
 *
 * Value representation (wd_value_t, interpreted through its wd_type_t):
 *   BOOLEAN                     b
 *   TINYINT SMALLINT INT BIGINT i   (range of the type enforced by producers of values)
 *   FLOAT DOUBLE                f   (FLOAT values are kept rounded to binary32)
 *   DECIMAL(p,s)                dec: the unscaled integer (value = dec / 10^s), |dec| < 10^p, p <= 38
 *   CHAR VARCHAR STRING BYTES   s.p / s.n: owned bytes, s.p[s.n] == 0 always (so text is a C string)
 *   DATE                        i: days since 1970-01-01
 *   TIME(p)                     i: nanoseconds since midnight
 *   TIMESTAMP(p), _LTZ(p)       ts.us: microseconds since 1970-01-01T00:00 (UTC for LTZ),
 *                               ts.ns: extra nanoseconds 0..999 (only for p > 6)
 *   ARRAY<T>                    list.v[0..n): elements (owned)
 *   ROW<...>                    list.v[0..n): one value per field, n == type->nfields (owned)
 *   MAP<K,V>                    map.k[0..n), map.v[0..n): keys unique by value, insertion order
 * A NULL value has is_null = true and no owned memory.
 *
 * Ownership: a wd_value_t owns everything it points to; wd_value_clear() frees it (given its type).
 * A wd_row_t owns its values; a packed row (wd_row_pack) keeps the bytes of its text/BYTES values
 * in its own block instead: clear those with wd_row_clear_value, not wd_value_clear.
 * A wd_schema_t owns its fields and types.
 */
#ifndef WD_TYPES_H
#define WD_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

typedef enum wd_type_id {
  WD_BOOLEAN = 0,
  WD_TINYINT,
  WD_SMALLINT,
  WD_INT,
  WD_BIGINT,
  WD_FLOAT,
  WD_DOUBLE,
  WD_DECIMAL,
  WD_CHAR,
  WD_VARCHAR,
  WD_STRING,
  WD_BYTES,
  WD_DATE,
  WD_TIME,
  WD_TIMESTAMP,
  WD_TIMESTAMP_LTZ,
  WD_ARRAY,
  WD_MAP,
  WD_ROW
} wd_type_id_t;

typedef struct wd_type wd_type_t;

typedef struct wd_field {
  char *name; /* owned */
  wd_type_t *type; /* owned */
} wd_field_t;

struct wd_type {
  wd_type_id_t id;
  bool not_null;
  int precision; /* DECIMAL p; TIME/TIMESTAMP fraction digits p (default: TIME 0, TIMESTAMP 6) */
  int scale; /* DECIMAL s */
  int length; /* CHAR(n)/VARCHAR(n) n; STRING: -1 */
  wd_type_t *elem; /* ARRAY element type; MAP key type (owned) */
  wd_type_t *val; /* MAP value type (owned) */
  size_t nfields; /* ROW */
  wd_field_t *fields;
};

typedef __int128 wd_i128;

typedef struct wd_value wd_value_t;
struct wd_value {
  bool is_null;
  union {
    bool b;
    int64_t i;
    double f;
    wd_i128 dec;
    struct {
      int64_t us;
      int32_t ns;
    } ts;
    struct {
      char *p;
      size_t n;
    } s;
    struct {
      wd_value_t *v;
      size_t n;
    } list;
    struct {
      wd_value_t *k;
      wd_value_t *v;
      size_t n;
    } map;
  };
};

/* ---- types ---------------------------------------------------------------------------- */

/* Parses a type string such as "DECIMAL(6,2) NOT NULL" or "ARRAY<ROW<k INT, v STRING>>"
 * (case-insensitive keywords). On success *out is a new type owned by the caller.
 * Errors: WD_ERR_CONFIG "C_DECIMAL_PRECISION" for p < 1, p > 38 or s > p (also nested);
 * WD_ERR_CONFIG "C_BAD_TYPE" for anything that does not parse (the message quotes the text). */
wd_error_t *wd_type_parse(const char *text, wd_type_t **out);
/* Deep copy (NULL on allocation failure). */
wd_type_t *wd_type_copy(const wd_type_t *t);
/* Canonical text of a type ("DECIMAL(6,2)", "ARRAY<INT NOT NULL>"); caller frees with free(). */
char *wd_type_to_string(const wd_type_t *t);
void wd_type_destroy(wd_type_t *t);
bool wd_type_is_integer(const wd_type_t *t); /* TINYINT..BIGINT */
bool wd_type_is_numeric(const wd_type_t *t); /* integers, FLOAT, DOUBLE, DECIMAL */
bool wd_type_is_text(const wd_type_t *t); /* CHAR, VARCHAR, STRING */
/* Smallest/largest value of an integer type (TINYINT -128..127 etc.). */
int64_t wd_type_int_min(const wd_type_t *t);
int64_t wd_type_int_max(const wd_type_t *t);

/* ---- values --------------------------------------------------------------------------- */

/* Frees what v owns and leaves it NULL. */
void wd_value_clear(const wd_type_t *t, wd_value_t *v);
/* Deep copy of src into dst (dst is overwritten, not cleared first). 0, or -1 on no memory
 * (dst is then NULL). */
int wd_value_copy(const wd_type_t *t, wd_value_t *dst, const wd_value_t *src);
/* Moves src into dst (clearing dst first); src becomes NULL. */
void wd_value_move(const wd_type_t *t, wd_value_t *dst, wd_value_t *src);
/* Sets a string/bytes value from n bytes (copied). 0 or -1 on no memory. */
int wd_value_set_bytes(wd_value_t *v, const void *p, size_t n);

/* Total order used for sequence fields, max/min and sorting (spec §4): NULL < everything; two
 * NULLs equal; integers/DATE/TIME/TIMESTAMP numerically; DECIMAL by value; FLOAT/DOUBLE as Java's
 * Double.compare (-0.0 < 0.0, NaN after +Inf, NaN == NaN); BOOLEAN false < true; text and BYTES
 * by unsigned bytes; ARRAY/ROW lexicographically by elements then length; MAP by sorted entries.
 * Returns <0, 0, >0. */
int wd_value_cmp(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b);
/* Value equality (spec §10: MAPs as key/value sets, ARRAYs in order, FLOAT as Double.compare). */
bool wd_value_eq(const wd_type_t *t, const wd_value_t *a, const wd_value_t *b);
/* A 64-bit hash consistent with wd_value_eq. */
uint64_t wd_value_hash(const wd_type_t *t, const wd_value_t *v);

/* Canonical text of a scalar value as spec §12.2 writes it and as MAP keys are written: integers
 * in decimal, DECIMAL with exactly s fraction digits, DATE "YYYY-MM-DD", TIME "hh:mm:ss[.f{p}]",
 * TIMESTAMP "YYYY-MM-DD hh:mm:ss.f{p}" (p = 3 when p <= 3, else 6, 9 for p > 6), BOOLEAN
 * true/false, BYTES base64, text as is, FLOAT/DOUBLE shortest round-trip ("NaN", "Infinity",
 * "-Infinity"). Appends to out. 0, or -1 on no memory. */
int wd_value_format(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out);
/* The shortest "%.Ng" text of finite d that reads back as d (strtod; as_float: d is a FLOAT's
 * value and strtof must give it back), into buf[0..n) (n >= 32). The same text as trying
 * N = 1, 2, ... 17 in turn, in at most four formats: "%.15g" ("%.6g" for FLOAT) already has the
 * shortest digits when they are that few, so their count gives N. */
void wd_float_shortest(double d, bool as_float, char *buf, size_t n);
/* Parses the canonical text of a scalar (the inverse of wd_value_format; also accepts ISO 'T'
 * separators and fewer fraction digits). Errors: WD_ERR_RECORD "E_TYPE" naming the type. */
wd_error_t *wd_value_parse_text(const wd_type_t *t, const char *text, size_t n, wd_value_t *out);

/* DECIMAL helpers: parse "12.30" / "-1e3" exactly into the unscaled integer at scale s, rounding
 * HALF_UP when more fraction digits are given; error "E_TYPE" on junk, "E_ARITH_OVERFLOW" when
 * the value does not fit precision p. */
wd_error_t *wd_decimal_parse(const char *text, size_t n, int p, int s, wd_i128 *out);
/* 10^n for 0 <= n <= 38 (n > 38 gives 10^38). */
wd_i128 wd_pow10(int n);
/* Bytes wd_decimal_text needs: 39 digits, a sign, a point and the NUL, rounded up. */
#define WD_DECIMAL_TEXT_MAX 48
/* Writes the unscaled decimal v at scale s (0..38) as text into buf (WD_DECIMAL_TEXT_MAX bytes):
 * an optional '-', at least one integer digit, and exactly s fraction digits after a '.' when
 * s > 0 ("-12.30", "0.05", "7"); NUL-terminated. Returns the length. The text of spec §12.2. */
size_t wd_decimal_text(wd_i128 v, int s, char *buf);
/* Bytes wd_scalar_text needs (any value of its types). */
#define WD_SCALAR_TEXT_MAX 128
/* The text wd_value_format writes for the non-NULL value v of a fixed-size type t (TINYINT..BIGINT,
 * DECIMAL, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ), into buf[0..WD_SCALAR_TEXT_MAX), without a
 * terminating NUL; returns its length (0 for the other types: nothing written). No allocation
 * and no stdio: the output path's writer of these values (changelog/encode_json.c). */
size_t wd_scalar_text(const wd_type_t *t, const wd_value_t *v, char *buf);

/* ---- calendar and integer helpers ----------------------------------------------------- */

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12, d 1..31; not checked
 * against the month's length), by H. Hinnant's days_from_civil
 * (https://howardhinnant.github.io/date_algorithms.html). Any int64 year: computed in 128 bits,
 * a result outside int64 is clamped to INT64_MIN/INT64_MAX. */
int64_t wd_days_from_civil(int64_t y, int m, int d);
/* Number of days of month m (1..12) of year y in the proleptic Gregorian calendar. */
int wd_days_in_month(int64_t y, int m);
/* Floor division and modulo (rounding toward negative infinity) for b > 0. */
static inline int64_t wd_floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static inline int64_t wd_floormod(int64_t a, int64_t b) {
  int64_t r = a % b; /* never a product that can overflow: any int64 a */
  return r < 0 ? r + b : r;
}

/* ---- ranges --------------------------------------------------------------------------- */

/* The range of the temporal types (Flink's and Paimon's): the years 0001-9999. */
#define WD_DATE_MIN_DAYS INT64_C(-719162) /* 0001-01-01 */
#define WD_DATE_MAX_DAYS INT64_C(2932896) /* 9999-12-31 */
#define WD_TIMESTAMP_MIN_US (WD_DATE_MIN_DAYS * INT64_C(86400000000)) /* 0001-01-01 00:00 */
#define WD_TIMESTAMP_MAX_US ((WD_DATE_MAX_DAYS + 1) * INT64_C(86400000000) - 1) /* 9999-12-31 23:59:59.999999 */
#define WD_TIME_MAX_NS (INT64_C(86400000000000) - 1) /* 23:59:59.999999999 */
/* Whether the value v of type t lies inside its type's range: integers inside their type
 * (TINYINT -128..127 ...), DECIMAL(p,s) fewer than p + 1 digits, DATE and TIMESTAMP in the years
 * 0001-9999, TIME a time of day, a TIMESTAMP's extra nanoseconds 0..999; ARRAY, MAP and ROW
 * values element by element. NULL is inside. When outside and why is not NULL, a short reason
 * (NUL-terminated, at most cap bytes) is written there. The decoders reject a value outside
 * (E_TYPE, ingest/event.c); every formatter and encoder still accepts any value without
 * undefined behaviour. */
bool wd_value_in_range(const wd_type_t *t, const wd_value_t *v, char *why, size_t cap);

/* ---- schemas and rows ----------------------------------------------------------------- */

typedef struct wd_schema {
  size_t ncols;
  wd_field_t *cols; /* owned */
  size_t npk;
  int *pk; /* indexes into cols, owned */
  /* Derived from cols by wd_schema_new, for the per-row loops (owned, never changed after):
   * var[0..nvar) the indexes (ascending) of the columns whose values can own memory (CHAR,
   * VARCHAR, STRING, BYTES, ARRAY, MAP, ROW); nested: some column is an ARRAY, MAP or ROW;
   * name_len[i] == strlen(cols[i].name); name_plain[i]: that name is printable ASCII without '"'
   * and '\\' (a JSON string as it is). */
  size_t nvar;
  int *var;
  bool nested;
  size_t *name_len;
  bool *name_plain;
} wd_schema_t;

/* Builds a schema from parallel arrays of names and type strings and the primary-key names.
 * Errors: C_BAD_TYPE / C_DECIMAL_PRECISION from wd_type_parse (message names the column);
 * "C_DUPLICATE_COLUMN"; "C_PRIMARY_KEY" when the key is empty, repeats or names a missing column. */
wd_error_t *wd_schema_new(size_t ncols, const char *const *names, const char *const *types, size_t npk,
                          const char *const *pk, wd_schema_t **out);
void wd_schema_destroy(wd_schema_t *schema);
/* Index of the column named name, or -1. */
int wd_schema_find(const wd_schema_t *schema, const char *name);
bool wd_schema_is_pk(const wd_schema_t *schema, int col);

/* Row kinds (spec §2). Values are the same as Paimon's RowKind byte values. */
typedef enum wd_row_kind {
  WD_INSERT = 0, /* +I */
  WD_UPDATE_BEFORE = 1, /* -U */
  WD_UPDATE_AFTER = 2, /* +U */
  WD_DELETE = 3 /* -D */
} wd_row_kind_t;

const char *wd_row_kind_str(wd_row_kind_t kind); /* "+I" "-U" "+U" "-D" */
int wd_row_kind_parse(const char *s, wd_row_kind_t *kind); /* 0, or -1 if not one of those */
static inline bool wd_row_kind_is_add(wd_row_kind_t k) { return k == WD_INSERT || k == WD_UPDATE_AFTER; }

/* A full-width row: one value per schema column, plus its row kind.
 *
 * Sharing (the changelog refers to stored rows instead of copying them): a row may have several
 * owners (wd_row_share); wd_row_destroy drops one and frees the row with the last. A view
 * (wd_row_view) is a row of its own kind whose values are those of its base row (v == base->v),
 * holding one share of the base. A shared row and a view are read-only: nobody changes their
 * values (the view's kind is its own). */
typedef struct wd_row {
  wd_row_kind_t kind;
  size_t n; /* == schema->ncols */
  wd_value_t *v; /* owned (a view: the base's) */
  /* NULL, or n flags (owned, malloc'd): absent[i] when the source did not send column i's value
   * in this change record (a before image without it: Postgres updates without a before image,
   * key-only deletes, partial before images). Such a value is NULL here and is completed from
   * the stored row by the merge (join/merge.h, wd_message_apply). Not copied by wd_row_copy. */
  bool *absent;
  uint32_t shares; /* owners beyond the first (wd_row_share); 0 for a row with one owner */
  struct wd_row *base; /* a view: the row whose values it shows (one share of it); else NULL */
  /* a packed row's block (in the row's own allocation): text/BYTES values whose s.p points into
   * [blk, blk + blk_len) are not freed one by one. NULL/0 for other rows. */
  char *blk;
  size_t blk_len;
  /* the row owns nothing outside its own allocation: every text/BYTES value's bytes are in the
   * block and no value is an ARRAY, MAP or ROW (set by wd_row_pack and the stored-row decode of
   * such rows); wd_row_destroy then frees the row without visiting its values. wd_row_clear_value
   * and wd_row_clear drop the flag, so a value set after them is freed as usual; nobody sets a
   * value of a row with the flag any other way. */
  bool blk_only;
} wd_row_t;

/* A new all-NULL +I row for schema; NULL on no memory. */
wd_row_t *wd_row_new(const wd_schema_t *schema);
/* Deep copy: every value owned (one allocation per string). NULL on no memory. */
wd_row_t *wd_row_copy(const wd_schema_t *schema, const wd_row_t *row);
/* Deep copy in one allocation: the row, its values and the bytes of its top-level text/BYTES
 * values (in the row's block, see wd_row_t.blk; nested ARRAY/MAP/ROW values are owned copies as
 * in wd_row_copy); absent flags are not copied. A value of it is changed through
 * wd_row_clear_value (which leaves the block alone) and then set like any value. NULL on no memory. */
wd_row_t *wd_row_pack(const wd_schema_t *schema, const wd_row_t *row);
/* A new all-NULL +I row with a block of extra bytes in the same allocation (row->blk, also in
 * *extra_out; for the row's own text/BYTES bytes, see wd_row_t.blk). NULL on no memory. */
wd_row_t *wd_row_new_extra(const wd_schema_t *schema, size_t extra, char **extra_out);
/* wd_value_clear of column col of row, except that bytes in the row's block are not freed. */
void wd_row_clear_value(const wd_schema_t *schema, wd_row_t *row, size_t col);
/* Adds an owner to row (read-only from now on, until only one owner is left); returns row. */
wd_row_t *wd_row_share(wd_row_t *row);
/* A new row of the given kind showing row's values (a view, see above: it takes a share of
 * row, or of row's base when row is itself a view); NULL on no memory. */
wd_row_t *wd_row_view(wd_row_t *row, wd_row_kind_t kind);
/* Drops one owner of row; the last frees it (a view: drops its share of the base). Accepts NULL. */
void wd_row_destroy(const wd_schema_t *schema, wd_row_t *row);
/* Marks column col of row absent (see wd_row_t.absent), allocating the flags on first use.
 * 0, or -1 on no memory. */
int wd_row_set_absent(wd_row_t *row, size_t col);
/* Sets every value NULL and drops the absent flags (kind unchanged). Not for shared rows or views. */
void wd_row_clear(const wd_schema_t *schema, wd_row_t *row);
/* Equality over all columns except those with ignore[i] true (ignore may be NULL). Kinds are not
 * compared. */
bool wd_row_eq(const wd_schema_t *schema, const wd_row_t *a, const wd_row_t *b, const bool *ignore);

/* The key bytes of a row: a deterministic encoding of its primary-key values (equal keys give
 * equal bytes). Appends to out. 0, or -1 on no memory. */
int wd_row_key_encode(const wd_schema_t *schema, const wd_row_t *row, wd_buf_t *out);

#endif
