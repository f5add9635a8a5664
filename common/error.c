#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wd_error_t wd_nomem_error = {WD_ERR_NOMEM, "E_NOMEM", "E_NOMEM: out of memory", -1, true, true, 0, false, false};

wd_error_t *wd_error_nomem(void) { return &wd_nomem_error; }

wd_error_t *wd_error_newv(wd_err_class_t cls, const char *id, const char *fmt, va_list ap) {
  wd_error_t *err = calloc(1, sizeof(*err));
  if (!err) return &wd_nomem_error;
  err->cls = cls;
  err->index = -1;
  if (id) snprintf(err->id, sizeof(err->id), "%s", id);
  char *text = NULL;
  if (vasprintf(&text, fmt, ap) < 0) text = NULL;
  if (!text) {
    free(err);
    return &wd_nomem_error;
  }
  if (id && *id) {
    if (asprintf(&err->message, "%s: %s", id, text) < 0) err->message = NULL;
    free(text);
  } else {
    err->message = text;
  }
  if (!err->message) {
    free(err);
    return &wd_nomem_error;
  }
  err->retriable = (cls == WD_ERR_KAFKA || cls == WD_ERR_IO);
  return err;
}

wd_error_t *wd_error_new(wd_err_class_t cls, const char *id, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wd_error_t *err = wd_error_newv(cls, id, fmt, ap);
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
