/*
 * join/store_impl.h — private to the store: the function-pointer table behind wd_store_t (like
 * Redis' struct _rio) and the read-only view of a write batch that each backend applies.
 *
 * A backend embeds `struct wd_store` as its first member, fills `ops`, and casts back in its
 * callbacks. store.c holds the public dispatch functions and the batch; store_rocksdb.c and
 * store_mem.c hold the backends. Nothing outside join/store*.c includes this header.
 */
#ifndef WD_STORE_IMPL_H
#define WD_STORE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "join/store.h"

/* The column families (RocksDB) / tables (memory) a batch op targets. */
#define WD_STORE_OFFSET_KEY_PREFIX "offset/"

typedef enum wd_store_op_kind {
  WD_STORE_OP_PUT = 1, /* "state": key -> value */
  WD_STORE_OP_DELETE, /* "state": remove key (no value) */
  WD_STORE_OP_META_PUT, /* "meta": key -> value (offsets: "offset/<topic>/<partition>" -> decimal) */
  WD_STORE_OP_META_DELETE, /* "meta": remove key */
  WD_STORE_OP_DELETE_RANGE, /* "state": remove every key in [key, val) (val is the end key) */
  WD_STORE_OP_META_DELETE_RANGE /* "meta": remove every key in [key, val) */
} wd_store_op_kind_t;

/* One op as recorded in a batch: key and value are ranges of the batch's byte arena, so the
 * arena can grow (realloc) without invalidating earlier ops. */
typedef struct wd_store_op {
  wd_store_op_kind_t kind;
  bool has_prior; /* a state put/delete whose prior entry is in the batch's undo image */
  size_t koff, klen;
  size_t voff, vlen;
} wd_store_op_t;

struct wd_store_batch {
  wd_store_op_t *ops;
  size_t n, cap;
  wd_buf_t bytes; /* keys and values of all ops, back to back */
  wd_buf_t undo; /* the undo image of the state ops with a prior (wd_store_batch_prior): the ops
                   * that restore them, in wd_store_batch_encode's op format without the count */
  size_t nundo; /* ops in undo */
};

/* A resolved op: pointers into the batch, valid until the batch is changed. Never NULL pointers
 * (an empty key/value points at a static empty array). */
typedef struct wd_store_op_view {
  wd_store_op_kind_t kind;
  const uint8_t *key;
  size_t klen;
  const uint8_t *val;
  size_t vlen;
} wd_store_op_view_t;

/* Resolves op i (< b->n) of b. */
void wd_store_batch_view(const wd_store_batch_t *b, size_t i, wd_store_op_view_t *v);

/* Appends the "meta" key of (topic, partition) to out ("offset/<topic>/<partition>").
 * Returns 0, or -1 on no memory. */
int wd_store_offset_key(wd_buf_t *out, const char *topic, int32_t partition);

/* Parses a stored offset value (decimal text, exactly vlen bytes). Returns 0, or -1 when the
 * bytes are not a decimal int64 >= 0. */
int wd_store_offset_parse(const uint8_t *val, size_t vlen, int64_t *next_offset);

/* The backend callbacks. Each receives a non-NULL store of its own kind; arguments have been
 * checked by the dispatchers in store.c (non-NULL arrays, n > 0 where it matters). */
typedef struct wd_store_ops {
  const char *name; /* "rocksdb", "memory" */
  wd_error_t *(*multi_get)(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens, uint8_t **vals,
                           size_t *vlens);
  /* Optional (NULL: multi_get and a copy per value): see wd_store_multi_get_each. */
  wd_error_t *(*multi_get_each)(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                wd_store_value_cb cb, void *ctx);
  /* Applies bs[0..nb) in order as one atomic write. */
  wd_error_t *(*write)(wd_store_t *st, const wd_store_batch_t *const *bs, size_t nb, bool sync);
  /* Looks up a "meta" key; *val is malloc'd (caller frees) or NULL when absent. */
  wd_error_t *(*meta_get)(wd_store_t *st, const uint8_t *key, size_t klen, uint8_t **val, size_t *vlen);
  wd_error_t *(*scan)(wd_store_t *st, wd_store_scan_cb cb, void *ctx);
  /* Like scan, over the keys that start with prefix[0..plen) only, in key order, from the first key
   * >= from[0..flen) (from NULL: the prefix's first). */
  wd_error_t *(*scan_prefix)(wd_store_t *st, const uint8_t *prefix, size_t plen, const uint8_t *from, size_t flen,
                             wd_store_scan_cb cb, void *ctx);
  wd_error_t *(*compact)(wd_store_t *st);
  uint64_t (*disk_bytes)(wd_store_t *st);
  void (*close)(wd_store_t *st); /* frees st itself */
} wd_store_ops_t;

struct wd_store {
  const wd_store_ops_t *ops;
};

#endif
