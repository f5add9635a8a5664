#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wd_error_t wd_nomem_error = {.cls = WD_ERR_NOMEM,
                                    .id = "E_NOMEM",
                                    .eid = WD_EID_E_NOMEM,
                                    .message = "E_NOMEM: out of memory",
                                    .index = -1,
                                    .retriable = true,
                                    .fatal = true};

static const struct {
  const char *id;
  bool retriable;
} wd_error_list[] = {
#define WD_EID_ROW_(id, retriable) [WD_EID_##id] = {#id, retriable},
    WD_ERROR_IDS(WD_EID_ROW_)
#undef WD_EID_ROW_
};

wd_eid_t wd_error_eid(const char *id) {
  if (!id || !*id) return WD_EID_NONE;
  for (size_t i = 1; i < WD_EID_UNLISTED; i++)
    if (!strcmp(wd_error_list[i].id, id)) return (wd_eid_t)i;
  return WD_EID_UNLISTED;
}

wd_error_t *wd_error_nomem(void) { return &wd_nomem_error; }

const char *wd_error_id_text(wd_eid_t eid) {
  return eid > WD_EID_NONE && eid < WD_EID_UNLISTED ? wd_error_list[eid].id : "";
}

const char *wd_error_text(const wd_error_t *err) {
  const char *m = err->message;
  size_t idl = strlen(err->id);
  if (idl && !strncmp(m, err->id, idl) && m[idl] == ':' && m[idl + 1] == ' ') m += idl + 2;
  return m;
}

wd_error_t *wd_error_makev(wd_err_class_t cls, wd_eid_t eid, const char *fmt, va_list ap) {
  wd_error_t *err = calloc(1, sizeof(*err));
  if (!err) return &wd_nomem_error;
  const char *id = wd_error_id_text(eid);
  err->cls = cls;
  err->index = -1;
  snprintf(err->id, sizeof(err->id), "%s", id);
  char *text = NULL;
  if (vasprintf(&text, fmt, ap) < 0) text = NULL;
  if (!text) {
    free(err);
    return &wd_nomem_error;
  }
  if (*id) {
    if (asprintf(&err->message, "%s: %s", id, text) < 0) err->message = NULL;
    free(text);
  } else {
    err->message = text;
  }
  if (!err->message) {
    free(err);
    return &wd_nomem_error;
  }
  err->eid = *id ? eid : WD_EID_NONE;
  err->retriable = *id && wd_error_list[err->eid].retriable;
  return err;
}

wd_error_t *wd_error_make(wd_err_class_t cls, wd_eid_t eid, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wd_error_t *err = wd_error_makev(cls, eid, fmt, ap);
  va_end(ap);
  return err;
}

wd_error_t *wd_error_wrap(wd_error_t *err, const char *fmt, ...) {
  if (!err || err == &wd_nomem_error) return err;
  char *prefix = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&prefix, fmt, ap) < 0) prefix = NULL;
  va_end(ap);
  if (!prefix) return err;
  char *msg = NULL;
  if (asprintf(&msg, "%s: %s", prefix, err->message) >= 0) {
    free(err->message);
    err->message = msg;
  }
  free(prefix);
  return err;
}

void wd_error_destroy(wd_error_t *err) {
  if (!err || err == &wd_nomem_error) return;
  free(err->message);
  free(err);
}
