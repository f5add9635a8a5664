/*
 * ingest/json_fast.h — private to ingest/: the tokenizer of the JSON source formats. A record
 * value is indexed by simdjson (ingest/json_simd.h: SIMD stage 1 of Debian's libsimdjson-dev,
 * which validates UTF-8 and finds every structural character and string outside strings), and
 * the index (not the bytes) is walked once into the same tokens jsmn makes (jsmn.h in strict mode
 * with parent links: type, start, end, size, parent), so the decoders of ingest/json_event.c read
 * them as before (a document that is a scalar alone, which jsmn's strict mode refuses when it ends
 * the text, is one primitive or string token).
 *
 * What it accepts is RFC 8259 JSON, checked in full: UTF-8 and no raw control character in
 * strings (simdjson), escapes as jsmn's strict mode checks them (\" \\ \/ \b \f \n \r \t, \u and
 * four hex digits), the grammar of objects, arrays, keys, colons and commas, every scalar (true,
 * false, null, or a number in JSON's grammar), one value with nothing but whitespace after it, and
 * a nesting depth limit. A text it refuses goes back to the caller (json_event.c then asks jsmn for
 * the byte and the reason it gave before, so that a record jsmn refuses too keeps its message).
 *
 * simdjson reads up to 64 bytes past the end of its input: the text is copied into a padded
 * buffer the tokenizer keeps and reuses (a memcpy of the record; librdkafka's message buffers
 * have no padding and may end at a page's end).
 */
#ifndef WD_INGEST_JSON_FAST_H
#define WD_INGEST_JSON_FAST_H

#ifndef JSMN_HEADER
#define JSMN_HEADER
#endif
#ifndef JSMN_PARENT_LINKS
#define JSMN_PARENT_LINKS
#endif
#ifndef JSMN_STRICT
#define JSMN_STRICT
#endif
#include <jsmn.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A tokenizer: simdjson's indexer with its padded copy buffer, reused between records (one per
 * decoding container; not shared between threads). */
typedef struct wd_json_fast wd_json_fast_t;

/* A new parser, or NULL when out of memory. The caller frees it with wd_json_fast_free. */
wd_json_fast_t *wd_json_fast_new(void);
void wd_json_fast_free(wd_json_fast_t *p); /* accepts NULL */

#define WD_JSON_FAST_INVALID (-1) /* not JSON (simdjson's index or the walk refuses it) */
#define WD_JSON_FAST_DEEP (-2) /* nested deeper than max_depth (checked while walking) */
#define WD_JSON_FAST_NOMEM (-100) /* = WD_JSMN_NOMEM of common/jsmn_doc.h */

/* Tokenises js[0..len) into *tok (grown as needed with realloc; *cap its room; *tok may be NULL
 * with *cap 0), in jsmn's order and layout. Returns the token count (>= 1), or
 * WD_JSON_FAST_INVALID with *errpos the byte offset of the first thing refused (when simdjson's
 * index refuses the text, which it does not locate: the first byte of invalid UTF-8 or of a raw
 * control character in a string, the end for a string left open, else 0) and *why the reason
 * (static text),
 * WD_JSON_FAST_DEEP (a container nested deeper than max_depth, at most 1024; the root is at depth
 * 1), or WD_JSON_FAST_NOMEM. Token offsets are into js. len must be below INT_MAX. */
int wd_json_fast_tokenize(wd_json_fast_t *p, const char *js, size_t len, unsigned max_depth, jsmntok_t **tok,
                          unsigned *cap, unsigned *errpos, const char **why);

#ifdef __cplusplus
}
#endif

#endif
