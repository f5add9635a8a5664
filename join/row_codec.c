/*
 * join/row_codec.c — the stored-row encoding (layout in row_codec.h).
 *
 * Pure functions of their arguments: any thread may call them.
 */
#include "join/row_codec.h"

#include <stdlib.h>
#include <string.h>

#define WD_CODEC_KIND_SHIFT 2
#define WD_CODEC_KIND_MASK 0x0c
#define WD_CODEC_KNOWN_FLAGS (WD_ENTRY_FLAG_TOMBSTONE | WD_CODEC_KIND_MASK | WD_ENTRY_FLAG_NCOLS)

/* Decoder results besides 0. */
#define WD_CODEC_CORRUPT (-1)
#define WD_CODEC_NOMEM (-2)

static int wd_codec_put_le(wd_buf_t *out, uint64_t v, int nbytes) {
  uint8_t b[8];
  for (int i = 0; i < nbytes; i++) b[i] = (uint8_t)(v >> (8 * i));
  return wd_buf_append(out, b, (size_t)nbytes);
}

static int wd_codec_put_value(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out);

/* LEB128 of v at p (at most 10 bytes; the bytes of wd_buf_put_varint); returns the end. */
static inline uint8_t *wd_codec_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* v little-endian at p (8 bytes); returns the end. */
static inline uint8_t *wd_codec_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, 8);
#else
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
  return p + 8;
}

/* Appends a null byte (1 = NULL) and, when not NULL, the value. */
static int wd_codec_put_nullable(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out) {
  if (wd_buf_putc(out, v->is_null ? 1 : 0)) return -1;
  return v->is_null ? 0 : wd_codec_put_value(t, v, out);
}

/* Appends the encoding of the non-NULL value v of type t. 0, or -1 (no memory, NULL MAP key). */
static int wd_codec_put_value(const wd_type_t *t, const wd_value_t *v, wd_buf_t *out) {
  switch (t->id) {
  case WD_BOOLEAN: return wd_buf_putc(out, v->b ? 1 : 0);
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
  case WD_DATE:
  case WD_TIME: return wd_buf_put_zigzag(out, v->i);
  case WD_FLOAT:
  case WD_DOUBLE: {
    uint64_t u;
    memcpy(&u, &v->f, sizeof(u));
    return wd_codec_put_le(out, u, 8);
  }
  case WD_DECIMAL: {
    unsigned __int128 u = (unsigned __int128)v->dec;
    if (wd_codec_put_le(out, (uint64_t)u, 8)) return -1;
    return wd_codec_put_le(out, (uint64_t)(u >> 64), 8);
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ:
    if (wd_buf_put_zigzag(out, v->ts.us)) return -1;
    return wd_buf_put_varint(out, (uint64_t)(uint32_t)v->ts.ns);
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES:
    if (wd_buf_put_varint(out, v->s.n)) return -1;
    return wd_buf_append(out, v->s.p, v->s.n);
  case WD_ARRAY:
    if (wd_buf_put_varint(out, v->list.n)) return -1;
    for (size_t i = 0; i < v->list.n; i++)
      if (wd_codec_put_nullable(t->elem, &v->list.v[i], out)) return -1;
    return 0;
  case WD_ROW:
    for (size_t i = 0; i < t->nfields; i++)
      if (wd_codec_put_nullable(t->fields[i].type, &v->list.v[i], out)) return -1;
    return 0;
  case WD_MAP:
    if (wd_buf_put_varint(out, v->map.n)) return -1;
    for (size_t i = 0; i < v->map.n; i++) {
      if (v->map.k[i].is_null) return -1; /* the layout has no NULL keys */
      if (wd_codec_put_value(t->elem, &v->map.k[i], out)) return -1;
      if (wd_codec_put_nullable(t->val, &v->map.v[i], out)) return -1;
    }
    return 0;
  }
  return -1;
}

/*
 * Appends the entry: version, flags, the tombstone time (tombstones only), the null bitmap and
 * the non-NULL columns. On failure out is restored to its previous length.
 */
int wd_row_encode(const wd_schema_t *schema, const wd_row_t *row, bool tombstone, uint64_t tombstone_ms,
                  wd_buf_t *out) {
  return wd_row_encode_base(schema, 0, row, tombstone, tombstone_ms, out);
}

int wd_row_encode_base(const wd_schema_t *schema, size_t base_ncols, const wd_row_t *row, bool tombstone,
                       uint64_t tombstone_ms, wd_buf_t *out) {
  size_t start = out->len;
  size_t nbitmap = (schema->ncols + 7) / 8;
  bool ncols = base_ncols && base_ncols != schema->ncols;
  uint8_t flags = (uint8_t)(((unsigned)row->kind << WD_CODEC_KIND_SHIFT) & WD_CODEC_KIND_MASK);
  if (tombstone) flags |= WD_ENTRY_FLAG_TOMBSTONE;
  if (ncols) flags |= WD_ENTRY_FLAG_NCOLS;
  if (wd_buf_putc(out, WD_ROW_CODEC_VERSION) || wd_buf_putc(out, flags)) goto fail;
  if (tombstone && wd_codec_put_le(out, tombstone_ms, 8)) goto fail;
  if (ncols && wd_buf_put_varint(out, schema->ncols)) goto fail;
  if (wd_buf_reserve(out, nbitmap + 1)) goto fail;
  size_t bitmap_at = out->len;
  memset(out->data + out->len, 0, nbitmap + 1);
  out->len += nbitmap;
  /* the values: the top-level scalars and text written in place (the bytes of
   * wd_codec_put_value, which writes the nested ones) */
  for (size_t i = 0; i < schema->ncols; i++) {
    const wd_value_t *v = &row->v[i];
    if (v->is_null) {
      out->data[bitmap_at + i / 8] |= (uint8_t)(1u << (i % 8));
      continue;
    }
    const wd_type_t *t = schema->cols[i].type;
    bool text = t->id == WD_CHAR || t->id == WD_VARCHAR || t->id == WD_STRING || t->id == WD_BYTES;
    if (t->id == WD_ARRAY || t->id == WD_MAP || t->id == WD_ROW) {
      if (wd_codec_put_value(t, v, out)) goto fail;
      continue;
    }
    /* at most 16 bytes for a scalar (DECIMAL), 10 + n for text, and the terminating 0 */
    size_t need = (text ? 10 + v->s.n : 16) + 1;
    if (out->cap - out->len < need && wd_buf_reserve(out, need)) goto fail;
    uint8_t *p = out->data + out->len;
    switch (t->id) {
    case WD_BOOLEAN: *p++ = v->b ? 1 : 0; break;
    case WD_TINYINT:
    case WD_SMALLINT:
    case WD_INT:
    case WD_BIGINT:
    case WD_DATE:
    case WD_TIME: p = wd_codec_varint(p, ((uint64_t)v->i << 1) ^ (uint64_t)(v->i >> 63)); break;
    case WD_FLOAT:
    case WD_DOUBLE: {
      uint64_t u;
      memcpy(&u, &v->f, sizeof(u));
      p = wd_codec_le64(p, u);
      break;
    }
    case WD_DECIMAL: {
      unsigned __int128 u = (unsigned __int128)v->dec;
      p = wd_codec_le64(wd_codec_le64(p, (uint64_t)u), (uint64_t)(u >> 64));
      break;
    }
    case WD_TIMESTAMP:
    case WD_TIMESTAMP_LTZ:
      p = wd_codec_varint(p, ((uint64_t)v->ts.us << 1) ^ (uint64_t)(v->ts.us >> 63));
      p = wd_codec_varint(p, (uint64_t)(uint32_t)v->ts.ns);
      break;
    default: /* text */
      p = wd_codec_varint(p, v->s.n);
      if (v->s.n) memcpy(p, v->s.p, v->s.n);
      p += v->s.n;
      break;
    }
    *p = 0; /* as wd_buf_append leaves it */
    out->len = (size_t)(p - out->data);
  }
  return 0;
fail:
  out->len = start;
  return -1;
}

/* ---- decoding ------------------------------------------------------------------------ */

static int wd_codec_get_value(const wd_type_t *t, wd_reader_t *r, wd_value_t *out);

/* Reads a null byte and, if it is 0, the value. */
static int wd_codec_get_nullable(const wd_type_t *t, wd_reader_t *r, wd_value_t *out) {
  uint8_t null_byte;
  memset(out, 0, sizeof(*out));
  out->is_null = true;
  if (wd_reader_byte(r, &null_byte) || null_byte > 1) return WD_CODEC_CORRUPT;
  return null_byte ? 0 : wd_codec_get_value(t, r, out);
}

static int wd_codec_get_le(wd_reader_t *r, int nbytes, uint64_t *v) {
  const uint8_t *p;
  if (wd_reader_bytes(r, (size_t)nbytes, &p)) return WD_CODEC_CORRUPT;
  uint64_t x = 0;
  for (int i = 0; i < nbytes; i++) x |= (uint64_t)p[i] << (8 * i);
  *v = x;
  return 0;
}

/* Allocates n NULL values into *vals (at least one slot). */
static int wd_codec_alloc(size_t n, wd_value_t **vals) {
  *vals = calloc(n ? n : 1, sizeof(wd_value_t));
  if (!*vals) return WD_CODEC_NOMEM;
  for (size_t i = 0; i < n; i++) (*vals)[i].is_null = true;
  return 0;
}

/*
 * Reads one non-NULL value of type t into out (NULL on entry). Returns 0, WD_CODEC_CORRUPT or
 * WD_CODEC_NOMEM; on failure out holds whatever was decoded so far (the caller clears it).
 */
static int wd_codec_get_value(const wd_type_t *t, wd_reader_t *r, wd_value_t *out) {
  int rc = 0;
  size_t left = (size_t)(r->end - r->p);
  switch (t->id) {
  case WD_BOOLEAN: {
    uint8_t b;
    if (wd_reader_byte(r, &b) || b > 1) return WD_CODEC_CORRUPT;
    out->b = b;
    break;
  }
  case WD_TINYINT:
  case WD_SMALLINT:
  case WD_INT:
  case WD_BIGINT:
    if (wd_reader_zigzag(r, &out->i)) return WD_CODEC_CORRUPT;
    if (out->i < wd_type_int_min(t) || out->i > wd_type_int_max(t)) return WD_CODEC_CORRUPT;
    break;
  case WD_DATE:
    if (wd_reader_zigzag(r, &out->i)) return WD_CODEC_CORRUPT;
    break;
  case WD_TIME:
    if (wd_reader_zigzag(r, &out->i)) return WD_CODEC_CORRUPT;
    if (out->i < 0 || out->i >= INT64_C(86400000000000)) return WD_CODEC_CORRUPT;
    break;
  case WD_FLOAT:
  case WD_DOUBLE: {
    uint64_t u;
    if (wd_codec_get_le(r, 8, &u)) return WD_CODEC_CORRUPT;
    memcpy(&out->f, &u, sizeof(u));
    break;
  }
  case WD_DECIMAL: {
    uint64_t lo, hi;
    if (wd_codec_get_le(r, 8, &lo) || wd_codec_get_le(r, 8, &hi)) return WD_CODEC_CORRUPT;
    out->dec = (wd_i128)(((unsigned __int128)hi << 64) | lo);
    wd_i128 lim = wd_pow10(t->precision);
    if (out->dec >= lim || out->dec <= -lim) return WD_CODEC_CORRUPT;
    break;
  }
  case WD_TIMESTAMP:
  case WD_TIMESTAMP_LTZ: {
    uint64_t ns;
    if (wd_reader_zigzag(r, &out->ts.us) || wd_reader_varint(r, &ns) || ns > 999) return WD_CODEC_CORRUPT;
    out->ts.ns = (int32_t)ns;
    break;
  }
  case WD_CHAR:
  case WD_VARCHAR:
  case WD_STRING:
  case WD_BYTES: {
    uint64_t n;
    const uint8_t *p;
    if (wd_reader_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return WD_CODEC_CORRUPT;
    if (wd_reader_bytes(r, (size_t)n, &p)) return WD_CODEC_CORRUPT;
    if (wd_value_set_bytes(out, p, (size_t)n)) return WD_CODEC_NOMEM;
    break;
  }
  case WD_ARRAY: {
    uint64_t n;
    if (wd_reader_varint(r, &n) || n > left) return WD_CODEC_CORRUPT; /* >= 1 byte per element */
    if ((rc = wd_codec_alloc((size_t)n, &out->list.v))) return rc;
    out->is_null = false;
    out->list.n = (size_t)n;
    for (size_t i = 0; i < n; i++)
      if ((rc = wd_codec_get_nullable(t->elem, r, &out->list.v[i]))) return rc;
    return 0;
  }
  case WD_ROW:
    if ((rc = wd_codec_alloc(t->nfields, &out->list.v))) return rc;
    out->is_null = false;
    out->list.n = t->nfields;
    for (size_t i = 0; i < t->nfields; i++)
      if ((rc = wd_codec_get_nullable(t->fields[i].type, r, &out->list.v[i]))) return rc;
    return 0;
  case WD_MAP: {
    uint64_t n;
    if (wd_reader_varint(r, &n) || n > left / 2) return WD_CODEC_CORRUPT; /* >= 2 bytes per entry */
    if ((rc = wd_codec_alloc((size_t)n, &out->map.k))) return rc;
    if ((rc = wd_codec_alloc((size_t)n, &out->map.v))) {
      free(out->map.k);
      out->map.k = NULL;
      return rc;
    }
    out->is_null = false;
    out->map.n = (size_t)n;
    for (size_t i = 0; i < n; i++) {
      if ((rc = wd_codec_get_value(t->elem, r, &out->map.k[i]))) return rc;
      if ((rc = wd_codec_get_nullable(t->val, r, &out->map.v[i]))) return rc;
    }
    return 0;
  }
  }
  out->is_null = false;
  return 0;
}

/*
 * Decodes one entry (see row_codec.h). Checks the version, the flags, every length and count
 * against the bytes left, each value against its type, and that no bytes are left over.
 */
wd_error_t *wd_row_decode(const wd_schema_t *schema, const void *p, size_t n, wd_row_t **row, bool *tombstone) {
  return wd_row_decode_base(schema, 0, p, n, row, tombstone);
}

wd_error_t *wd_row_decode_base(const wd_schema_t *schema, size_t base_ncols, const void *p, size_t n, wd_row_t **row,
                               bool *tombstone) {
  wd_error_t *err = NULL;
  wd_reader_t r = {p, (const uint8_t *)p + n};
  wd_row_t *out = NULL;
  uint8_t version = 0, flags = 0;
  const uint8_t *bitmap = NULL;
  size_t ncols = base_ncols && base_ncols < schema->ncols ? base_ncols : schema->ncols;
  size_t nbitmap;
  const char *what = NULL;
  *row = NULL;
  if (wd_reader_byte(&r, &version) || wd_reader_byte(&r, &flags)) {
    what = "truncated header";
    goto cleanup;
  }
  if (version != WD_ROW_CODEC_VERSION) {
    err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "unknown stored-row format version %u (this build reads %d)",
                       version, WD_ROW_CODEC_VERSION);
    goto cleanup;
  }
  if (flags & ~WD_CODEC_KNOWN_FLAGS) {
    what = "unknown flag bits";
    goto cleanup;
  }
  if (flags & WD_ENTRY_FLAG_TOMBSTONE) {
    uint64_t ms;
    if (wd_codec_get_le(&r, 8, &ms)) {
      what = "truncated tombstone time";
      goto cleanup;
    }
  }
  if (flags & WD_ENTRY_FLAG_NCOLS) {
    uint64_t v = 0;
    if (wd_reader_varint(&r, &v) || v == 0 || v > schema->ncols) {
      what = "bad column count (more columns than the schema, or truncated)";
      goto cleanup;
    }
    ncols = (size_t)v;
  }
  nbitmap = (ncols + 7) / 8;
  if (wd_reader_bytes(&r, nbitmap, &bitmap)) {
    what = "truncated null bitmap";
    goto cleanup;
  }
  for (size_t i = ncols; i < nbitmap * 8; i++) {
    if (bitmap[i / 8] & (1u << (i % 8))) {
      what = "null bitmap bits beyond the last column";
      goto cleanup;
    }
  }
  /* one allocation for the row, its values and the bytes of its top-level text/BYTES columns
   * (each at most the bytes left, plus its terminating 0): no allocation per string */
  char *blk = NULL;
  out = wd_row_new_extra(schema, (size_t)(r.end - r.p) + ncols, &blk);
  if (!out) {
    err = wd_error_nomem();
    goto cleanup;
  }
  out->kind = (wd_row_kind_t)((flags & WD_CODEC_KIND_MASK) >> WD_CODEC_KIND_SHIFT);
  bool owns = false; /* a nested value was decoded (owned apart from the block) */
  for (size_t i = 0; i < ncols; i++) { /* columns after ncols (added since) stay NULL */
    if (bitmap[i / 8] & (1u << (i % 8))) continue;
    const wd_type_t *ty = schema->cols[i].type;
    int rc;
    if (ty->id == WD_CHAR || ty->id == WD_VARCHAR || ty->id == WD_STRING || ty->id == WD_BYTES) {
      uint64_t len;
      const uint8_t *sp;
      rc = WD_CODEC_CORRUPT;
      if (!wd_reader_varint(&r, &len) && len <= (uint64_t)(r.end - r.p) && !wd_reader_bytes(&r, (size_t)len, &sp)) {
        if (len) memcpy(blk, sp, (size_t)len);
        blk[len] = 0;
        out->v[i].is_null = false; /* in the row's block */
        out->v[i].s.p = blk;
        out->v[i].s.n = (size_t)len;
        blk += len + 1;
        rc = 0;
      }
    } else {
      rc = wd_codec_get_value(ty, &r, &out->v[i]);
      owns |= ty->id == WD_ARRAY || ty->id == WD_MAP || ty->id == WD_ROW;
    }
    if (rc == WD_CODEC_NOMEM) {
      err = wd_error_nomem();
      goto cleanup;
    }
    if (rc) {
      err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "stored row: bad or truncated value of column '%s'",
                         schema->cols[i].name);
      goto cleanup;
    }
  }
  if (r.p != r.end) {
    what = "bytes left over after the last column";
    goto cleanup;
  }
  *tombstone = (flags & WD_ENTRY_FLAG_TOMBSTONE) != 0;
  out->blk_only = !owns; /* text in the block, nothing else owned: freed without a walk */
  *row = out;
  out = NULL;
cleanup:
  if (what && !err) err = wd_error_new(WD_ERR_IO, E_STATE_CORRUPT, "stored row: %s", what);
  if (err) err->retriable = false;
  wd_row_destroy(schema, out);
  return err;
}
