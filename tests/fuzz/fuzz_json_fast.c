/*
 * tests/fuzz/fuzz_json_fast.c — the JSON formats' tokenizer (ingest/json_fast.h: simdjson's
 * structural index walked into jsmn's tokens) against two references on any bytes: it accepts
 * exactly what jansson accepts as JSON, where jansson can tell (jansson also stops at a NUL byte,
 * at numbers it cannot hold, at \u0000 in keys and at lone surrogates, all of which it refuses or
 * takes in a way JSON's grammar does not say), and for a container document it makes exactly
 * jsmn's tokens (strict mode, parent links). fuzz.h. Seeds: the JSON-lines data of
 * ../shared/data/flink-json (every format's records).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/jsmn_doc.h"
#include "ingest/json_fast.h"
#include "tests/fuzz/fuzz.h"

int wd_fuzz_json_fast(const uint8_t *data, size_t size) {
  static wd_json_fast_t *jf;
  static jsmntok_t *ft, *jt;
  static unsigned fcap, jcap;
  if (!jf && !(jf = wd_json_fast_new())) wd_fuzz_fail("json_fast", "no memory for the tokenizer");
  const char *js = (const char *)data;
  unsigned pos = 0, fpos = 0;
  const char *why = NULL;
  int fn = wd_json_fast_tokenize(jf, js, size, 256, &ft, &fcap, &fpos, &why);
  if (fn == WD_JSON_FAST_DEEP || fn == WD_JSON_FAST_NOMEM) return 0;
  json_error_t e;
  json_t *j = json_loadb(js, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  bool unknown = memchr(js, 0, size) != NULL ||
                 (!j && (strstr(e.text, "overflow") || strstr(e.text, "too big") || strstr(e.text, "NUL byte in") ||
                         strstr(e.text, "invalid Unicode") || strstr(e.text, "maximum parsing depth")));
  bool jok = j != NULL;
  json_decref(j);
  if (!unknown && (fn >= 0) != jok) {
    char msg[320];
    snprintf(msg, sizeof(msg), "json_fast %s (%s at byte %u), jansson %s (%s)", fn >= 0 ? "accepts" : "refuses",
             why ? why : "", fpos, jok ? "accepts" : "refuses", jok ? "" : e.text);
    wd_fuzz_fail("json_fast", msg);
  }
  if (fn < 0) return 0;
  size_t k = 0;
  while (k < size && wd_json_space(js[k])) k++;
  if (k >= size || (js[k] != '{' && js[k] != '[')) return 0; /* jsmn's strict mode refuses a scalar alone */
  int jn = wd_jsmn_tokenize(js, size, &jt, &jcap, &pos);
  if (jn != fn) wd_fuzz_fail("json_fast", "another token count than jsmn's");
  for (int i = 0; i < fn; i++)
    if (ft[i].type != jt[i].type || ft[i].start != jt[i].start || ft[i].end != jt[i].end || ft[i].size != jt[i].size ||
        ft[i].parent != jt[i].parent)
      wd_fuzz_fail("json_fast", "a token other than jsmn's");
  return 0;
}

#ifdef WD_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return wd_fuzz_json_fast(data, size); }
#endif
