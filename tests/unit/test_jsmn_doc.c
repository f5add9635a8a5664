/*
 * tests/unit/test_jsmn_doc.c — the fast ways the JSON source decoders find things in a jsmn token
 * array give the same answers as the straightforward ones:
 *  - wd_jsmn_next (the token after a subtree: i + 1 for scalars, the element-count lower bound,
 *    then a binary search) against a linear scan of token starts;
 *  - wd_jsmn_str_eq (length first, then bytes) against unescaping the token and comparing;
 *  - wd_jsmn_get against a walk of the object's keys with both references;
 *  - the decoder's key list of the payload object (wd_jev_get, json_event.c) against that walk;
 *  - wd_conv_parse_int's fast path for plain integers against jansson's integers;
 *  - the nesting-depth guard's bracket pre-count: a record is refused as too deep exactly when
 *    its depth (strings skipped) exceeds 256;
 *  - the image key memory (a key at the position of a byte-identical key of the last image of
 *    the same source takes its mapping unhashed): decoding into a container that decoded other
 *    messages of several sources gives the records (or the error) of decoding into a fresh one.
 * On the real CDC files of ../shared/data, the generator's events, random JSON documents (nested
 * objects and arrays, escaped and repeated keys, big objects) and single-byte mutations of all
 * of them that jsmn still accepts.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/cli/generate.h"
#include "common/buf.h"
#include "common/jsmn_doc.h"
#include "ingest/conv.h"
#include "ingest/json_event.h"
#include "ingest/json_fast.h"
#include "ingest/source.h"
#include "join/merge.h"
#include "../support/shared.h"

/* ---- references ------------------------------------------------------------------------------ */

static int ref_next(const jsmntok_t *t, int n, int i) {
  int end = t[i].end;
  int j = i + 1;
  while (j < n && t[j].start < end) j++;
  return j;
}

static bool ref_str_eq(const char *js, const jsmntok_t *t, int i, const char *s, size_t n) {
  if (t[i].type != JSMN_STRING) return false;
  size_t rn = (size_t)(t[i].end - t[i].start);
  char *tmp = malloc(rn + 1);
  long m = wd_json_unescape(js + t[i].start, rn, tmp);
  bool eq = m >= 0 && (size_t)m == n && memcmp(tmp, s, n) == 0;
  free(tmp);
  return eq;
}

static int ref_get(const char *js, const jsmntok_t *t, int n, int i, const char *s, size_t len) {
  if (i < 0 || t[i].type != JSMN_OBJECT) return -1;
  int found = -1, j = i + 1;
  for (int k = 0; k < t[i].size && j + 1 < n; k++) {
    if (ref_str_eq(js, t, j, s, len)) found = j + 1;
    j = ref_next(t, n, j + 1);
  }
  return found;
}

/* The maximum nesting depth of js[0..len), strings skipped (the rule of the depth guard). */
static unsigned ref_depth(const char *js, size_t len) {
  unsigned depth = 0, max = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char c = js[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max) max = depth;
    } else if ((c == '}' || c == ']') && depth) {
      depth--;
    }
  }
  return max;
}

/* ---- inputs ------------------------------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static const char *const key_words[] = {
    "op",     "before",   "after",     "ts_ms",           "id",     "a",   "",    "payload", "schema",
    "source", "o\\u0070", "\\\"q\\\"", "\\u00e9t\\u00e9", "x\\\\y", "opp", "\\n", "b\\/c",   "\\ud83d\\ude00"};

static void rand_string(wd_buf_t *b, uint64_t *r) {
  wd_buf_putc(b, '"');
  if (rnd(r) % 3 == 0) {
    wd_buf_printf(b, "%s", key_words[rnd(r) % (sizeof(key_words) / sizeof(*key_words))]);
  } else {
    int n = (int)(rnd(r) % 12);
    for (int i = 0; i < n; i++) {
      int c = (int)(rnd(r) % 40);
      if (c == 0) wd_buf_printf(b, "\\n");
      else if (c == 1) wd_buf_printf(b, "\\u00%02x", (unsigned)(rnd(r) % 0x80 + 0x20) & 0x7f);
      else if (c == 2) wd_buf_printf(b, "{[");
      else wd_buf_putc(b, (char)('a' + c % 26));
    }
  }
  wd_buf_putc(b, '"');
}

static void rand_value(wd_buf_t *b, uint64_t *r, int depth) {
  int kind = (int)(rnd(r) % (depth > 4 ? 4 : 7));
  switch (kind) {
  case 0: wd_buf_printf(b, "%lld", (long long)(rnd(r) % 2000000) - 1000000); break;
  case 1: rand_string(b, r); break;
  case 2: wd_buf_printf(b, "%s", rnd(r) % 2 ? "null" : "true"); break;
  case 3: wd_buf_printf(b, "%.3f", (double)(rnd(r) % 100000) / 7.0); break;
  case 4:
  case 5: {
    int n = (int)(rnd(r) % (rnd(r) % 8 == 0 ? 40 : 6)); /* sometimes more keys than the key list holds */
    wd_buf_putc(b, '{');
    for (int i = 0; i < n; i++) {
      if (i) wd_buf_putc(b, ',');
      rand_string(b, r);
      wd_buf_putc(b, ':');
      rand_value(b, r, depth + 1);
    }
    wd_buf_putc(b, '}');
    break;
  }
  default: {
    int n = (int)(rnd(r) % 5);
    wd_buf_putc(b, '[');
    for (int i = 0; i < n; i++) {
      if (i) wd_buf_putc(b, ',');
      rand_value(b, r, depth + 1);
    }
    wd_buf_putc(b, ']');
  }
  }
}

/* A random top object, often shaped like a Debezium event or a Connect envelope. */
static void rand_doc(wd_buf_t *b, uint64_t *r) {
  wd_buf_reset(b);
  int shape = (int)(rnd(r) % 3);
  if (shape == 0) {
    wd_buf_printf(b, "{\"schema\":");
    rand_value(b, r, 3);
    wd_buf_printf(b, ",\"payload\":");
  }
  wd_buf_putc(b, '{');
  int n = 1 + (int)(rnd(r) % 8);
  for (int i = 0; i < n; i++) {
    if (i) wd_buf_putc(b, ',');
    rand_string(b, r);
    wd_buf_putc(b, ':');
    rand_value(b, r, 0);
  }
  if (rnd(r) % 2) wd_buf_printf(b, ",\"op\":\"c\",\"after\":{\"id\":%d}", (int)(rnd(r) % 100));
  wd_buf_putc(b, '}');
  if (shape == 0) wd_buf_putc(b, '}');
  wd_buf_putc(b, 0);
  b->len--;
}

/* ---- the comparisons -------------------------------------------------------------------------- */

typedef struct ctx {
  jsmntok_t *tok;
  unsigned cap;
  wd_json_fast_t *jf; /* the simdjson tokenizer, compared with jsmn and jansson */
  jsmntok_t *ftok;
  unsigned fcap;
  size_t fast_valid, fast_invalid;
  size_t docs, lookups;
  wd_schema_t *schema;
  wd_source_t *src;
  wd_changes_t ch;
} ctx_t;

/* Probe keys for object o: each of its keys unescaped, and the fixed words unescaped. */
static void probes(const char *js, const jsmntok_t *t, int n, int o, char keys[][64], size_t *klen, int *nk) {
  *nk = 0;
  for (size_t w = 0; w < sizeof(key_words) / sizeof(*key_words); w++) {
    char tmp[64];
    long m = wd_json_unescape(key_words[w], strlen(key_words[w]), tmp);
    if (m < 0) continue;
    memcpy(keys[*nk], tmp, (size_t)m);
    klen[(*nk)++] = (size_t)m;
  }
  if (o < 0 || t[o].type != JSMN_OBJECT) return;
  int j = o + 1;
  for (int k = 0; k < t[o].size && j + 1 < n && *nk < 96; k++) {
    size_t rn = (size_t)(t[j].end - t[j].start);
    if (rn < 64) {
      long m = wd_json_unescape(js + t[j].start, rn, keys[*nk]);
      if (m >= 0) {
        klen[(*nk)++] = (size_t)m;
        /* and a one-byte-longer and a one-byte-shorter neighbour */
        if (m > 0 && *nk < 96) {
          memcpy(keys[*nk], keys[*nk - 1], (size_t)m - 1);
          klen[(*nk)++] = (size_t)m - 1;
        }
        if (m < 63 && *nk < 96) {
          memcpy(keys[*nk], keys[*nk - 2 + (m == 0)], (size_t)m);
          keys[*nk][m] = 'x';
          klen[(*nk)++] = (size_t)m + 1;
        }
      }
    }
    j = ref_next(t, n, j + 1);
  }
}

/* The text of token i of js ("(absent)" for -1), as wd_jev_text writes it. */
static void tok_text(const char *js, const jsmntok_t *t, int i, char *out, size_t cap) {
  if (i < 0) {
    snprintf(out, cap, "(absent)");
    return;
  }
  int s = t[i].start, e = t[i].end;
  if (t[i].type == JSMN_STRING) {
    s--;
    e++;
  }
  if (e - s > 64) snprintf(out, cap, "%.64s...", js + s);
  else snprintf(out, cap, "%.*s", e - s, js + s);
}

/* The tokenizer of ingest/json_fast.h on any bytes: it accepts exactly what jansson accepts as
 * JSON (JSON_ALLOW_NUL: \u0000 escapes; our documents nest far less than either limit), and then
 * makes exactly jsmn's tokens. */
static void check_fast(ctx_t *c, const char *js, size_t len) {
  unsigned pos = 0, fpos = 0;
  const char *why = NULL;
  int fn = wd_json_fast_tokenize(c->jf, js, len, 256, &c->ftok, &c->fcap, &fpos, &why);
  cr_assert(fn != WD_JSON_FAST_NOMEM && fn != WD_JSON_FAST_DEEP);
  json_error_t jerr;
  json_t *j = json_loadb(js, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  /* jansson also stops at numbers it cannot hold (1e999, 2^64), at keys with \u0000 and at lone
   * surrogates (\ude00), which JSON's grammar allows (the decoders refuse a lone surrogate in a
   * field they read, as they did with jsmn): it does not tell about such a text */
  bool unknown = !j && (strstr(jerr.text, "overflow") || strstr(jerr.text, "too big") ||
                        strstr(jerr.text, "NUL byte in") || strstr(jerr.text, "invalid Unicode"));
  if (!unknown)
    cr_assert_eq(fn >= 0, j != NULL, "json_fast %s (%s at %u), jansson %s (%s) on %.*s",
                 fn >= 0 ? "accepts" : "refuses", why ? why : "", fpos, j ? "accepts" : "refuses", j ? "" : jerr.text,
                 (int)len, js);
  json_decref(j);
  if (fn < 0) {
    c->fast_invalid++;
    return;
  }
  c->fast_valid++;
  size_t k = 0;
  while (k < len && (js[k] == ' ' || js[k] == '\t' || js[k] == '\n' || js[k] == '\r')) k++;
  if (js[k] != '{' && js[k] != '[') return; /* a scalar alone, which jsmn's strict mode refuses at the end */
  int n = wd_jsmn_tokenize(js, len, &c->tok, &c->cap, &pos);
  cr_assert_eq(fn, n, "token count %d, jsmn %d on %.*s", fn, n, (int)len, js);
  for (int i = 0; i < n; i++) {
    const jsmntok_t *a = &c->ftok[i], *b = &c->tok[i];
    cr_assert(
        a->type == b->type && a->start == b->start && a->end == b->end && a->size == b->size && a->parent == b->parent,
        "token %d: type %d [%d,%d) size %d parent %d, jsmn: type %d [%d,%d) size %d parent %d in %.*s", i, (int)a->type,
        a->start, a->end, a->size, a->parent, (int)b->type, b->start, b->end, b->size, b->parent, (int)len, js);
  }
}

/* Checks one document (any bytes): the helpers against the references on every token, and the
 * decoder's payload lookups. */
static void check_doc(ctx_t *c, const char *js, size_t len) {
  unsigned pos = 0;
  check_fast(c, js, len);
  int n = wd_jsmn_tokenize(js, len, &c->tok, &c->cap, &pos);
  if (n <= 0) return;
  const jsmntok_t *t = c->tok;
  c->docs++;
  static char keys[96][64];
  static size_t klen[96];
  int nk;
  for (int i = 0; i < n; i++) {
    cr_assert_eq(wd_jsmn_next(t, n, i), ref_next(t, n, i), "next(%d) in %.*s", i, (int)len, js);
    if (t[i].type != JSMN_OBJECT) continue;
    probes(js, t, n, i, keys, klen, &nk);
    for (int k = 0; k < nk; k++) {
      c->lookups++;
      cr_assert_eq(wd_jsmn_get(js, t, n, i, keys[k], klen[k]), ref_get(js, t, n, i, keys[k], klen[k]),
                   "get(%d, %.*s) in %.*s", i, (int)klen[k], keys[k], (int)len, js);
    }
  }
  for (int i = 0; i < n; i++) {
    if (t[i].type != JSMN_STRING) continue;
    probes(js, t, n, -1, keys, klen, &nk);
    for (int k = 0; k < nk; k++)
      cr_assert_eq(wd_jsmn_str_eq(js, t, i, keys[k], klen[k]), ref_str_eq(js, t, i, keys[k], klen[k]),
                   "str_eq(%d, %.*s) in %.*s", i, (int)klen[k], keys[k], (int)len, js);
    size_t rn = (size_t)(t[i].end - t[i].start); /* the token's own unescaped text, and it cut by one */
    char *u = malloc(rn + 1);
    long m = wd_json_unescape(js + t[i].start, rn, u);
    if (m >= 0) {
      cr_assert(wd_jsmn_str_eq(js, t, i, u, (size_t)m));
      if (m > 0) cr_assert_eq(wd_jsmn_str_eq(js, t, i, u, (size_t)m - 1), ref_str_eq(js, t, i, u, (size_t)m - 1));
    }
    free(u);
  }
  /* the decoder: its root is the payload of a {"schema","payload"} envelope without "op" at the
   * top, else the top object (the general path tokenises the whole message, so token indexes
   * match ours; the envelope fast path tokenises the payload alone, so compare token texts) */
  if (t[0].type != JSMN_OBJECT || (size_t)t[0].end != len) return;
  jsmntok_t *mine = malloc((size_t)n * sizeof(*mine));
  memcpy(mine, t, (size_t)n * sizeof(*mine));
  int root = 0;
  if (ref_get(js, mine, n, 0, "op", 2) < 0) {
    int p = ref_get(js, mine, n, 0, "payload", 7);
    if (p >= 0) root = p;
  }
  wd_jev_t *x = NULL;
  wd_error_t *err = NULL;
  cr_assert_null(wd_jev_start(&c->ch, c->src, c->schema, NULL, NULL, &x));
  int r = wd_jev_parse(x, js, len, true, &err);
  if (r == 0 && mine[root].type == JSMN_OBJECT) {
    probes(js, mine, n, root, keys, klen, &nk);
    for (int k = 0; k < nk; k++) {
      char key[65];
      memcpy(key, keys[k], klen[k]);
      key[klen[k]] = 0;
      if (strlen(key) != klen[k]) continue; /* wd_jev_get takes C strings */
      char want[80], got[80];
      tok_text(js, mine, ref_get(js, mine, n, root, key, klen[k]), want, sizeof(want));
      wd_jev_text(x, wd_jev_get(x, wd_jev_root(x), key), got, sizeof(got));
      cr_assert_str_eq(got, want, "payload key %s in %.*s", key, (int)len, js);
      c->lookups++;
    }
  }
  wd_error_destroy(wd_jev_finish(x, err));
  free(mine);
}

/* The document and its single-byte mutations (bytes that matter to JSON and to keys). */
static void check_doc_mutated(ctx_t *c, const char *js, size_t len, uint64_t *r, int mutations) {
  check_doc(c, js, len);
  /* the bytes that matter to JSON and to keys, and to simdjson's checks: a NUL, a raw control
   * character, bytes of broken UTF-8, letters and digits that break literals and numbers */
  static const char bytes[] = "{}[]\",:\\0a- \x01\x80\xc3\xfftnue.1\t";
  char *m = malloc(len + 1);
  for (int k = 0; k < mutations && len; k++) {
    memcpy(m, js, len);
    m[rnd(r) % len] = bytes[rnd(r) % (sizeof(bytes) - 1)];
    check_doc(c, m, len);
  }
  free(m);
}

static void ctx_init(ctx_t *c) {
  memset(c, 0, sizeof(*c));
  cr_assert_not_null(c->jf = wd_json_fast_new());
  const char *names[] = {"id", "v"};
  const char *types[] = {"BIGINT NOT NULL", "STRING"};
  const char *pk[] = {"id"};
  cr_assert_null(wd_schema_new(2, names, types, 1, pk, &c->schema));
  cr_assert_null(wd_source_new("t", WD_FMT_DEBEZIUM_JSON, &c->src));
  cr_assert_null(wd_source_add_topic(c->src, "t"));
  cr_assert_null(wd_source_add_column(c->src, c->schema, "id", NULL));
  cr_assert_null(wd_source_add_column(c->src, c->schema, "v", NULL));
  wd_changes_init(&c->ch);
}

static void ctx_free(ctx_t *c) {
  free(c->tok);
  free(c->ftok);
  wd_json_fast_free(c->jf);
  wd_changes_free(&c->ch);
  wd_source_destroy(c->src);
  wd_schema_destroy(c->schema);
}

/* Every line of every file under shared/data (the CDC formats' real records). */
static void check_shared_files(ctx_t *c, uint64_t *r) {
  static const char *const files[] = {"flink-json/debezium-data-schema-include.txt",
                                      "flink-json/debezium-data-schema-exclude.txt",
                                      "flink-json/debezium-postgres-data-schema-include.txt",
                                      "flink-json/debezium-postgres-data-schema-exclude.txt",
                                      "flink-json/debezium-postgres-data-replica-identity.txt",
                                      "flink-json/canal-data.txt",
                                      "flink-json/maxwell-data.txt",
                                      "flink-json/ogg-data.txt",
                                      "paimon-kafka-cdc/debezium-table-schema-alltype-debezium-data-1.txt",
                                      "paimon-kafka-cdc/debezium-table-schema-include-debezium-data-1.txt",
                                      "paimon-kafka-cdc/debezium-table-schemaevolution-debezium-data-1.txt"};
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s/data", wd_test_shared_dir());
  if (access(dir, R_OK) != 0) cr_skip_test("needs the project's shared data, %s (see the test `shared`)", dir);
  for (size_t f = 0; f < sizeof(files) / sizeof(*files); f++) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, fp)) > 0) {
      while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
      if (n) check_doc_mutated(c, line, (size_t)n, r, 8);
    }
    free(line);
    fclose(fp);
  }
}

Test(jsmn_doc, helpers_match_references_on_real_and_random_documents) {
  ctx_t c;
  ctx_init(&c);
  uint64_t r = 0x9E3779B97F4A7C15u;
  check_shared_files(&c, &r);
  /* the generator's events (demo.yaml's streams) */
  wd_gen_opts_t go = {0};
  go.keys = 50;
  go.records = 200;
  go.seed = 7;
  go.topic_prefix = "shop.";
  wd_gen_t *gen = NULL;
  cr_assert_null(wd_gen_new(&go, &gen));
  wd_gen_msg_t m;
  while (wd_gen_next(gen, &m)) check_doc_mutated(&c, m.value, m.value_len, &r, 3);
  wd_gen_destroy(gen);
  /* random documents */
  wd_buf_t b = {0};
  for (int i = 0; i < 1500; i++) {
    rand_doc(&b, &r);
    check_doc_mutated(&c, (const char *)b.data, b.len, &r, 3);
  }
  wd_buf_free(&b);
  cr_log_info("%zu documents, %zu lookups; json_fast: %zu valid, %zu invalid", c.docs, c.lookups, c.fast_valid,
              c.fast_invalid);
  cr_assert_gt(c.fast_valid, 3000);
  cr_assert_gt(c.fast_invalid, 1000);
  cr_assert_gt(c.docs, 4000);
  cr_assert_gt(c.lookups, 50000);
  ctx_free(&c);
}

/* The edges of JSON's grammar, each in a few places (top level, in an array, in an object), through
 * the same comparison: json_fast accepts exactly what jansson accepts, with jsmn's tokens. */
Test(jsmn_doc, json_fast_on_the_edges_of_the_grammar) {
  ctx_t c;
  ctx_init(&c);
  static const char *const values[] = {
      "1", "-1", "0", "-0", "0.5", "-0.5e-3", "1E+2", "1e2", "123456789012345678901234567890", "1234567812345678",
      "-12345678901234567", "1700000000049", "true", "false", "null", "\"\"", "\"a\\\"b\"", "\"\\\\\"", "\"\\/\"",
      "\"\\b\\f\\n\\r\\t\"", "\"\\u00e9\\uD83D\\uDE00\"", "\"\xc3\xa9\"", "[]", "{}", "[[]]", "{\"a\":{}}", "[1,2,3]",
      "{\"a\":1,\"b\":[true,null]}", " [ 1 , 2 ] ", "{ \"a\" : 1 }",
      /* invalid */
      "01", "-", "1.", ".5", "\"ab\"cd", "\"ab\"\"cd\"", "1\"a\"", "truefalse", "nullx", "\"a\"\x01", "1\x01",
      "12345678x", "1234567890123456x7", "123456789012345\x01",
      "1234567\xff"
      "9",
      "1e", "1e+", "+1", "0x10", "1.2.3", "--1", "tru", "nul", "truex", "True", "NaN", "Infinity", "\"\\x\"",
      "\"\\u12\"", "\"\\u12g4\"", "\"a\x01b\"", "\"\xff\"", "\"\xc3\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"a",
      "[1,]", "[,1]", "[1,,2]", "[1 2]", "{\"a\":1,}", "{,}", "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{\"a\"::1}", "{1:2}",
      "{\"a\":1,,\"b\":2}", "{\"a\":1 \"b\":2}", "[}", "{]", "[1}", "{\"a\":1]", "[", "]", "{", "}", "[[]", "[]]",
      "1 2", "\"a\" \"b\"", "[]x", "x", "'a'", "[1]\x00"};
  static const char *const frames[] = {"%s", "[%s]", "{\"k\":%s}", "{\"k\":[0,%s],\"z\":{\"q\":%s}}", "[%s,%s]"};
  char doc[512];
  for (size_t v = 0; v < sizeof(values) / sizeof(*values); v++)
    for (size_t f = 0; f < sizeof(frames) / sizeof(*frames); f++) {
      int n = snprintf(doc, sizeof(doc), frames[f], values[v], values[v]);
      cr_assert(n > 0 && (size_t)n < sizeof(doc));
      check_fast(&c, doc, (size_t)n);
    }
  cr_log_info("json_fast: %zu valid, %zu invalid", c.fast_valid, c.fast_invalid);
  cr_assert_gt(c.fast_valid, 100);
  cr_assert_gt(c.fast_invalid, 250);
  ctx_free(&c);
}

/* Every prefix of a valid document is refused; a prefix that stops where a value or a key must
 * come next (after '{', '[', ',', ':') or after a complete scalar inside a container is refused as
 * ending early, at its length (json_fast reads past the last index entry into a sentinel); an
 * "unexpected character" is always a byte of the text. */
Test(jsmn_doc, json_fast_prefixes_end_early) {
  ctx_t c;
  ctx_init(&c);
  static const char *const docs[] = {
      "{\"op\":\"c\",\"after\":{\"id\":1,\"v\":[1,-2.5e3,true,null,\"x\"],\"w\":{}},\"ts_ms\":1700000000049}",
      "[ {\"a\" : [ [ ] , { } ] } , 12345678901234567 , \"s\\\"t\" ]"};
  size_t early = 0;
  for (size_t d = 0; d < sizeof(docs) / sizeof(*docs); d++) {
    size_t len = strlen(docs[d]);
    for (size_t k = 1; k < len; k++) {
      unsigned fpos = 0;
      const char *why = NULL;
      int fn = wd_json_fast_tokenize(c.jf, docs[d], k, 256, &c.ftok, &c.fcap, &fpos, &why);
      cr_assert_eq(fn, WD_JSON_FAST_INVALID, "prefix %zu of %s accepted", k, docs[d]);
      cr_assert_leq(fpos, k);
      if (strcmp(why, "unexpected character") == 0) cr_assert_lt(fpos, k, "prefix %.*s", (int)k, docs[d]);
      size_t e = k;
      while (e > 0 && docs[d][e - 1] == ' ') e--;
      char last = docs[d][e - 1];
      bool in_string = false;
      for (size_t q = 0; q < k; q++) {
        if (docs[d][q] == '\\') q++;
        else if (docs[d][q] == '"') in_string = !in_string;
      }
      bool must_end = !in_string && (strchr("{[,:", last) || (last >= '0' && last <= '9') || last == 'e' ||
                                     last == 'l' || last == '"' || last == '}' || last == ']');
      /* a scalar cut short ("tr", "nul", "-2.5e") is refused as that scalar, not as the end */
      if (!in_string && (last == 'e' || last == 'l') &&
          !(e >= 4 && (!strncmp(docs[d] + e - 4, "true", 4) || !strncmp(docs[d] + e - 4, "null", 4))))
        must_end = false;
      if (!in_string && last >= '0' && last <= '9' && e >= 2 && docs[d][e - 2] == 'e') must_end = true;
      if (must_end) {
        early++;
        cr_assert_str_eq(why, "the text ends inside a value", "prefix %.*s: %s at %u", (int)k, docs[d], why, fpos);
        cr_assert_eq(fpos, k, "prefix %.*s", (int)k, docs[d]);
      }
    }
  }
  cr_assert_gt(early, 40);
  ctx_free(&c);
}

Test(jsmn_doc, parse_int_matches_jansson_integers) {
  uint64_t r = 12345;
  static const char alpha[] = "0123456789-";
  char s[40];
  for (int i = 0; i < 300000; i++) {
    size_t n = (size_t)(rnd(&r) % 24);
    if (i % 3 == 0) { /* plain integers of every length, both signs */
      size_t d = 1 + (size_t)(rnd(&r) % 21);
      size_t k = 0;
      if (rnd(&r) % 2) s[k++] = '-';
      for (size_t q = 0; q < d; q++) s[k++] = (char)('0' + (q == 0 && rnd(&r) % 8 ? 1 + rnd(&r) % 9 : rnd(&r) % 10));
      n = k;
    } else {
      for (size_t k = 0; k < n; k++) s[k] = alpha[rnd(&r) % (sizeof(alpha) - 1)];
    }
    s[n] = 0;
    int64_t got = 0;
    int rc = wd_conv_parse_int(s, n, &got);
    /* a JSON integer: -?(0|[1-9][0-9]*); jansson reads it (or says it is too big) */
    size_t k = s[0] == '-';
    bool integer = k < n && (s[k] != '0' || k + 1 == n);
    for (size_t q = k; q < n && integer; q++) integer = s[q] >= '0' && s[q] <= '9';
    json_error_t e;
    json_t *j = integer ? json_loadb(s, n, JSON_DECODE_ANY, &e) : NULL;
    if (!integer) {
      cr_assert_eq(rc, -1, "'%s' (not a JSON number) -> %d", s, rc);
    } else if (j) {
      cr_assert(json_is_integer(j), "'%s'", s);
      cr_assert_eq(rc, 0, "'%s' -> %d", s, rc);
      cr_assert_eq(got, (int64_t)json_integer_value(j), "'%s'", s);
    } else {
      cr_assert(strstr(e.text, "too big") != NULL, "'%s': %s", s, e.text);
      cr_assert_eq(rc, -3, "'%s' (out of range) -> %d", s, rc);
    }
    json_decref(j);
  }
  /* the edges of the fast path (18 digits) and of the range */
  static const struct {
    const char *s;
    int rc;
    int64_t v;
  } edge[] = {{"999999999999999999", 0, 999999999999999999LL},
              {"-999999999999999999", 0, -999999999999999999LL},
              {"1000000000000000000", 0, 1000000000000000000LL},
              {"9223372036854775807", 0, INT64_MAX},
              {"-9223372036854775808", 0, INT64_MIN},
              {"9223372036854775808", -3, 0},
              {"-0", 0, 0},
              {"0", 0, 0},
              {"00", -1, 0},
              {"-", -1, 0},
              {"", -1, 0},
              {"1.0", 0, 1},
              {"1.5", -2, 0},
              {"1e3", 0, 1000}};
  for (size_t i = 0; i < sizeof(edge) / sizeof(*edge); i++) {
    int64_t v = 0;
    cr_assert_eq(wd_conv_parse_int(edge[i].s, strlen(edge[i].s), &v), edge[i].rc, "'%s'", edge[i].s);
    if (edge[i].rc == 0) cr_assert_eq(v, edge[i].v, "'%s'", edge[i].s);
  }
}

Test(jsmn_doc, depth_guard_refuses_exactly_the_too_deep) {
  ctx_t c;
  ctx_init(&c);
  uint64_t r = 777;
  wd_buf_t b = {0};
  for (int i = 0; i < 600; i++) {
    /* nesting around the limit, brackets in strings (counted by the pre-count, not the depth),
     * padding so that the brackets fall anywhere in the 16-byte blocks, sometimes unclosed */
    int depth = 240 + (int)(rnd(&r) % 30);
    int in_strings = (int)(rnd(&r) % 600);
    int pad = (int)(rnd(&r) % 40);
    bool closed = rnd(&r) % 4 != 0;
    wd_buf_reset(&b);
    wd_buf_printf(&b, "{\"before\":null,\"op\":\"c\",\"s\":\"");
    for (int k = 0; k < in_strings; k++) wd_buf_putc(&b, rnd(&r) % 2 ? '[' : '{');
    wd_buf_printf(&b, "\",\"p\":\"%*s\",\"after\":{\"id\":1,\"x\":", pad, "");
    for (int k = 0; k < depth - 2; k++) { /* an object every third level, arrays between */
      if (k % 3) wd_buf_putc(&b, '[');
      else wd_buf_printf(&b, "{\"k\":");
    }
    if (closed) {
      wd_buf_printf(&b, "1");
      for (int k = depth - 3; k >= 0; k--) wd_buf_putc(&b, k % 3 ? ']' : '}');
      wd_buf_printf(&b, "}}");
    }
    unsigned want = ref_depth((const char *)b.data, b.len);
    wd_error_t *err = wd_decode_debezium_json(c.src, c.schema, NULL, b.data, b.len, &c.ch);
    bool deep = err && strstr(err->message, "nested deeper than 256 levels");
    cr_assert_eq(deep, want > 256, "depth %u: %s", want, err ? err->message : "decoded");
    wd_error_destroy(err);
  }
  wd_buf_free(&b);
  ctx_free(&c);
}

/* ---- the image key memory ---------------------------------------------------------------------- */

/* The records of one decode as text ("ERR <message>" on an error). */
static void decode_text(const wd_source_t *src, const wd_schema_t *s, const char *js, size_t len, wd_changes_t *ch,
                        wd_buf_t *out) {
  wd_buf_reset(out);
  wd_kafka_meta_t meta = {"t", 0, 1, 0, "{\"order_id\":1}", 14};
  wd_error_t *err = wd_decode_debezium_json(src, s, &meta, js, len, ch);
  if (err) {
    wd_buf_printf(out, "ERR %s index %d", err->message, err->index);
    wd_error_destroy(err);
    return;
  }
  wd_buf_printf(out, "op %c ts %lld flags %u:", ch->op ? ch->op : '-', (long long)ch->ts_ms, ch->flags);
  for (size_t i = 0; i < ch->count; i++) {
    const wd_row_t *r = ch->rows[i];
    wd_buf_printf(out, " %s(", wd_row_kind_str(r->kind));
    for (size_t c = 0; c < s->ncols; c++) {
      if (c) wd_buf_putc(out, ',');
      if (r->absent && r->absent[c]) wd_buf_putc(out, '?');
      else wd_value_format(s->cols[c].type, &r->v[c], out);
    }
    wd_buf_putc(out, ')');
  }
  wd_buf_putc(out, 0);
}

/* An orders-like image with the keys in a random order, some missing, some unknown, some
 * escaped, some repeated. */
static void rand_image(wd_buf_t *b, uint64_t *r, uint64_t id) {
  static const char *const keys[] = {
      "order_id", "customer", "amount",         "currency",       "order_ts", "order_version",
      "address",  "note",     "ord\\u0065r_id", "custome\\u0072", "Currency", "amounT",
      "x",        ""};
  int order[14];
  for (int i = 0; i < 14; i++) order[i] = i;
  for (int i = 13; i > 0; i--) {
    int k = (int)(rnd(r) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[k];
    order[k] = t;
  }
  int n = 4 + (int)(rnd(r) % 8);
  wd_buf_printf(b, "{\"order_id\":%llu", (unsigned long long)id);
  if (rnd(r) % 4 == 0) { /* a key longer than the memory keeps (255 bytes: its "nothing here" length) */
    wd_buf_printf(b, ",\"");
    for (int i = 0; i < (rnd(r) % 2 ? 255 : 31); i++) wd_buf_putc(b, 'k');
    wd_buf_printf(b, "\":1");
  }
  for (int i = 0; i < n; i++) {
    const char *k = keys[order[i]];
    wd_buf_printf(b, ",\"%s\":", k);
    if (strstr(k, "order_ts") || strstr(k, "version") || strstr(k, "id"))
      wd_buf_printf(b, "%llu", (unsigned long long)(rnd(r) % 100000));
    else if (strstr(k, "amount") || strstr(k, "amounT"))
      wd_buf_printf(b, "\"%u.%02u\"", (unsigned)(rnd(r) % 1000), (unsigned)(rnd(r) % 100));
    else wd_buf_printf(b, "\"v%u\"", (unsigned)(rnd(r) % 1000));
  }
  wd_buf_putc(b, '}');
}

Test(jsmn_doc, image_key_memory_matches_a_fresh_decode) {
  wd_config_t *cfg = NULL;
  wd_table_t *table = NULL;
  cr_assert_null(wd_config_load(WD_SOURCE_DIR "/configs/demo.yaml", &cfg));
  cr_assert_null(wd_config_build_table(cfg, &table));
  const wd_schema_t *schema = wd_table_schema(table);
  /* the demo's three sources twice over (6 sources: more than the memory holds at once) */
  wd_source_t *srcs[6];
  size_t nsrc = cfg->sources.n;
  cr_assert_eq(nsrc, 3);
  for (size_t i = 0; i < 6; i++) cr_assert_null(wd_config_build_source(cfg, i % 3, schema, &srcs[i]));
  wd_changes_t warm, fresh;
  wd_changes_init(&warm);
  wd_buf_t got = {0}, want = {0}, doc = {0};
  uint64_t r = 4242;
  size_t compared = 0;
  wd_gen_opts_t go = {0};
  go.keys = 40;
  go.records = 1500;
  go.seed = 3;
  go.topic_prefix = "shop.";
  wd_gen_t *gen = NULL;
  cr_assert_null(wd_gen_new(&go, &gen));
  wd_gen_msg_t m;
  while (wd_gen_next(gen, &m)) {
    for (int v = 0; v < 4; v++) {
      const wd_source_t *src = srcs[(size_t)m.stream_index % 3 + 3 * (rnd(&r) % 2)];
      wd_buf_reset(&doc);
      if (v == 0) { /* as generated */
        wd_buf_append(&doc, m.value, m.value_len);
      } else if (v == 1) { /* a letter of the message changed (often in a key) */
        wd_buf_append(&doc, m.value, m.value_len);
        size_t at = rnd(&r) % doc.len;
        if (doc.data[at] >= 'a' && doc.data[at] <= 'z') doc.data[at] = (char)('a' + rnd(&r) % 26);
      } else { /* random images (the orders source's fields, any order) */
        src = srcs[3 * (rnd(&r) % 2)];
        wd_buf_printf(&doc, "{\"before\":");
        if (v == 3) rand_image(&doc, &r, 7);
        else wd_buf_printf(&doc, "null");
        wd_buf_printf(&doc, ",\"after\":");
        rand_image(&doc, &r, rnd(&r) % 3 ? 7 : 8);
        wd_buf_printf(&doc, ",\"op\":\"%s\"}", v == 3 ? "u" : "c");
      }
      decode_text(src, schema, (const char *)doc.data, doc.len, &warm, &got);
      wd_changes_init(&fresh);
      decode_text(src, schema, (const char *)doc.data, doc.len, &fresh, &want);
      wd_changes_free(&fresh);
      cr_assert_str_eq((const char *)got.data, (const char *)want.data, "%.*s", (int)doc.len, (const char *)doc.data);
      compared++;
    }
  }
  wd_gen_destroy(gen);
  /* a source's mapping changed between two messages: the memory does not answer for the old one */
  const char *names[] = {"id", "a", "b"};
  const char *types[] = {"BIGINT NOT NULL", "STRING", "STRING"};
  const char *pk[] = {"id"};
  wd_schema_t *s2 = NULL;
  cr_assert_null(wd_schema_new(3, names, types, 1, pk, &s2));
  wd_source_t *ms = NULL;
  cr_assert_null(wd_source_new("m", WD_FMT_DEBEZIUM_JSON, &ms));
  cr_assert_null(wd_source_add_topic(ms, "m"));
  cr_assert_null(wd_source_add_column(ms, s2, "id", NULL));
  cr_assert_null(wd_source_add_column(ms, s2, "a", "b"));
  wd_changes_t ch;
  wd_changes_init(&ch);
  const char *js = "{\"before\":null,\"after\":{\"id\":1,\"a\":\"x\",\"b\":\"y\"},\"op\":\"c\"}";
  decode_text(ms, s2, js, strlen(js), &ch, &got);
  cr_assert_str_eq((const char *)got.data, "op c ts -1 flags 2: +I(1,y,NULL)");
  cr_assert_null(wd_source_add_column(ms, s2, "b", "a"));
  decode_text(ms, s2, js, strlen(js), &ch, &got);
  cr_assert_str_eq((const char *)got.data, "op c ts -1 flags 2: +I(1,y,x)");
  wd_changes_free(&ch);
  wd_source_destroy(ms);
  wd_schema_destroy(s2);
  cr_log_info("%zu decodes compared", compared);
  cr_assert_gt(compared, 5000);
  wd_changes_free(&warm);
  wd_buf_free(&got);
  wd_buf_free(&want);
  wd_buf_free(&doc);
  for (size_t i = 0; i < 6; i++) wd_source_destroy(srcs[i]);
  wd_table_destroy(table);
  wd_config_destroy(cfg);
}
