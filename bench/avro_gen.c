/*
 * bench/avro_gen.c — the Avro benchmarks' input (see avro_gen.h): Debezium envelopes written
 * with avro-c from the fixtures' writer schemas, in the Confluent wire format.
 */
#include "bench/avro_gen.h"

#include <avro.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/schema_registry.h"

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "bench: avro-c %s: %s\n", what, avro_strerror());
    exit(1);
  }
}

/* Sets union u to its null branch (0) or its value branch (1), returning the branch in *b. */
static void branch(avro_value_t *u, int which, avro_value_t *b) {
  check(avro_value_set_branch(u, which, b), "set_branch");
  if (!which) check(avro_value_set_null(b), "set_null");
}

/* Minimal big-endian two's complement of v (Avro decimal bytes). */
static size_t be_twos(int64_t v, uint8_t out[8]) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[7 - i] = (uint8_t)((uint64_t)v >> (8 * i));
  size_t s = 0;
  while (s < 7 && ((b[s] == 0 && !(b[s + 1] & 0x80)) || (b[s] == 0xff && (b[s + 1] & 0x80)))) s++;
  memcpy(out, b + s, 8 - s);
  return 8 - s;
}

/* Fills the Value record img (writer schema version 1 or 2) of key id from seed. */
static void fill_image(avro_value_t *img, int64_t id, uint64_t seed, int version) {
  avro_value_t f, b, e;
  char s[48];
  uint64_t r = seed;
  check(avro_value_get_by_name(img, "id", &f, NULL), "id");
  avro_value_set_long(&f, id);
  avro_value_get_by_name(img, "customer", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_STRING) {
    snprintf(s, sizeof(s), "customer-%" PRIu64, rnd(&r) % 100000);
    avro_value_set_string(&b, s);
  }
  avro_value_get_by_name(img, "amount", &f, NULL);
  branch(&f, rnd(&r) % 7 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_BYTES) {
    uint8_t d[8];
    size_t n = be_twos((int64_t)(rnd(&r) % 20000000) - 10000000, d);
    avro_value_set_bytes(&b, d, n);
  }
  avro_value_get_by_name(img, "order_date", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT32) avro_value_set_int(&b, 18000 + (int32_t)(rnd(&r) % 2000));
  avro_value_get_by_name(img, "created_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64)
    avro_value_set_long(&b, 1709287872000000LL + (int64_t)(rnd(&r) % 1000000000000ULL));
  avro_value_get_by_name(img, "updated_at", &f, NULL);
  branch(&f, rnd(&r) % 6 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_INT64)
    avro_value_set_long(&b, 1709287872000LL + (int64_t)(rnd(&r) % 1000000000ULL));
  avro_value_get_by_name(img, "tags", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_ARRAY)
    for (int i = 0, n = (int)(rnd(&r) % 4); i < n; i++) {
      avro_value_append(&b, &e, NULL);
      snprintf(s, sizeof(s), "tag%d", (int)(rnd(&r) % 50));
      avro_value_set_string(&e, s);
    }
  avro_value_get_by_name(img, "attrs", &f, NULL);
  branch(&f, rnd(&r) % 5 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_MAP)
    for (int i = 0, n = (int)(rnd(&r) % 3); i < n; i++) {
      snprintf(s, sizeof(s), "k%d", i);
      avro_value_add(&b, s, &e, NULL, NULL);
      avro_value_set_long(&e, (int64_t)(rnd(&r) % 2001) - 1000);
    }
  avro_value_get_by_name(img, "address", &f, NULL);
  branch(&f, rnd(&r) % 4 != 0, &b);
  if (avro_value_get_type(&b) == AVRO_RECORD) {
    avro_value_get_by_name(&b, "city", &e, NULL);
    snprintf(s, sizeof(s), "city-%d", (int)(rnd(&r) % 300));
    avro_value_set_string(&e, s);
    avro_value_t z, zb;
    avro_value_get_by_name(&b, "zip", &z, NULL);
    branch(&z, (int)(rnd(&r) & 1), &zb);
    if (avro_value_get_type(&zb) == AVRO_STRING) avro_value_set_string(&zb, "0150");
  }
  avro_value_get_by_name(img, "price", &f, NULL);
  avro_value_set_double(&f, ((double)(rnd(&r) % 2000000) - 1000000.0) / 3.0);
  avro_value_get_by_name(img, "paid", &f, NULL);
  avro_value_set_boolean(&f, (int)(rnd(&r) & 1));
  if (version == 1) {
    avro_value_get_by_name(img, "internal_flag", &f, NULL);
    avro_value_set_int(&f, 7);
  } else {
    avro_value_get_by_name(img, "note", &f, NULL);
    branch(&f, (int)(rnd(&r) & 1), &b);
    if (avro_value_get_type(&b) == AVRO_STRING) {
      snprintf(s, sizeof(s), "note %" PRIu64, rnd(&r) % 1000);
      avro_value_set_string(&b, s);
    }
  }
}

/* Fills envelope env: op, before (seed bseed) / after (seed aseed) images of key id. */
static void fill_envelope(avro_value_t *env, int version, char op, int64_t id, uint64_t bseed, uint64_t aseed,
                          int64_t ts_ms, int64_t lsn) {
  avro_value_t f, b;
  avro_value_reset(env);
  avro_value_get_by_name(env, "before", &f, NULL);
  branch(&f, op == 'u' || op == 'd', &b);
  if (op == 'u' || op == 'd') fill_image(&b, id, bseed, version);
  avro_value_get_by_name(env, "after", &f, NULL);
  branch(&f, op != 'd', &b);
  if (op != 'd') fill_image(&b, id, aseed, version);
  avro_value_t src, x;
  avro_value_get_by_name(env, "source", &src, NULL);
  static const char *const S[][2] = {
      {"version", "2.5.0.Final"}, {"connector", "postgresql"}, {"name", "shop"}, {"db", "shop"}, {"table", "orders"}};
  for (size_t i = 0; i < 5; i++) {
    avro_value_get_by_name(&src, S[i][0], &x, NULL);
    avro_value_set_string(&x, S[i][1]);
  }
  avro_value_get_by_name(&src, "ts_ms", &x, NULL);
  avro_value_set_long(&x, ts_ms);
  avro_value_get_by_name(&src, "lsn", &x, NULL);
  branch(&x, 1, &b);
  avro_value_set_long(&b, lsn);
  char ops[2] = {op, 0};
  avro_value_get_by_name(env, "op", &f, NULL);
  avro_value_set_string(&f, ops);
  avro_value_get_by_name(env, "ts_ms", &f, NULL);
  branch(&f, 1, &b);
  avro_value_set_long(&b, ts_ms + 2);
  avro_value_get_by_name(env, "transaction", &f, NULL);
  branch(&f, 0, &b);
}

/* Appends value v in the wire format with schema id to out. */
static void wire_append(wd_buf_t *out, int32_t id, avro_value_t *v) {
  size_t sz = 0;
  check(avro_value_sizeof(v, &sz), "sizeof");
  uint8_t h[WD_WIRE_HEADER];
  wd_wire_header(id, h);
  wd_buf_append(out, h, WD_WIRE_HEADER);
  char *tmp = malloc(sz ? sz : 1);
  avro_writer_t w = avro_writer_memory(tmp, (int64_t)sz);
  check(avro_value_write(w, v), "write");
  avro_writer_free(w);
  wd_buf_append(out, tmp, sz);
  free(tmp);
}

/* The whole file at path, NUL-terminated (caller frees); exits on failure. */
char *wd_bench_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "bench: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "bench: cannot read %s\n", path);
    exit(1);
  }
  s[n] = 0;
  fclose(f);
  return s;
}

void wd_bench_avro_generate(json_t *schemas, uint64_t records, uint64_t keys, uint64_t seed,
                            wd_bench_avro_input_t *in) {
  avro_schema_t as[3];
  avro_value_iface_t *ifc[3];
  avro_value_t env[3];
  static const char *const IDS[] = {"1", "2", "7"};
  for (int i = 0; i < 3; i++) {
    const char *txt = json_string_value(json_object_get(schemas, IDS[i]));
    check(avro_schema_from_json_length(txt, strlen(txt), &as[i]), "schema");
    ifc[i] = avro_generic_class_from_schema(as[i]);
    check(avro_generic_value_new(ifc[i], &env[i]), "value_new");
  }
  memset(in, 0, sizeof *in);
  in->n = records;
  in->voff = malloc((records + 1) * sizeof(size_t));
  in->koff = malloc((records + 1) * sizeof(size_t));
  uint64_t *cur = calloc(keys, sizeof(uint64_t)); /* seed of the key's current image, 0 = absent */
  uint64_t r = 0x9e3779b97f4a7c15ULL ^ seed;
  for (uint64_t i = 0; i < records; i++) {
    uint64_t key = rnd(&r) % keys;
    int ver = (rnd(&r) % 3 == 0) ? 2 : 1;
    uint64_t ns = rnd(&r) | 1;
    char op;
    if (!cur[key]) op = (rnd(&r) % 8 == 0) ? 'r' : 'c';
    else op = (rnd(&r) % 10 == 0) ? 'd' : 'u';
    fill_envelope(&env[ver - 1], ver, op, (int64_t)key + 1, cur[key], ns, 1709287872000LL + (int64_t)i, (int64_t)i + 1);
    cur[key] = op == 'd' ? 0 : ns;
    in->voff[i] = in->vals.len;
    wire_append(&in->vals, ver, &env[ver - 1]);
    avro_value_t kf;
    avro_value_reset(&env[2]);
    avro_value_get_by_name(&env[2], "id", &kf, NULL);
    avro_value_set_long(&kf, (int64_t)key + 1);
    in->koff[i] = in->keys.len;
    wire_append(&in->keys, 7, &env[2]);
  }
  in->voff[records] = in->vals.len;
  in->koff[records] = in->keys.len;
  free(cur);
  for (int i = 0; i < 3; i++) {
    avro_value_decref(&env[i]);
    avro_value_iface_decref(ifc[i]);
    avro_schema_decref(as[i]);
  }
}

/* Produces every input record to topic (unlimited rate). Returns wall seconds. */

void wd_bench_avro_input_free(wd_bench_avro_input_t *in) {
  wd_buf_free(&in->vals);
  wd_buf_free(&in->keys);
  free(in->voff);
  free(in->koff);
  memset(in, 0, sizeof(*in));
}
