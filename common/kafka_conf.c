/*
 * common/kafka_conf.c — the plain Kafka client configuration (see kafka_conf.h).
 */
#include "common/kafka_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

static wd_error_t *wd_kafka_conf_set_str(char **field, const char *value) {
  char *copy = NULL;
  if (value && !(copy = strdup(value))) return wd_error_nomem();
  free(*field);
  *field = copy;
  return NULL;
}

wd_error_t *wd_kafka_conf_set_brokers(wd_kafka_conf_t *conf, const char *brokers) {
  return wd_kafka_conf_set_str(&conf->brokers, brokers);
}

wd_error_t *wd_kafka_conf_set_group(wd_kafka_conf_t *conf, const char *group_id) {
  return wd_kafka_conf_set_str(&conf->group_id, group_id);
}

wd_error_t *wd_kafka_conf_set(wd_kafka_conf_t *conf, const char *name, const char *value) {
  wd_error_t *err = NULL;
  char *n = NULL, *v = NULL;
  if (!name || !*name || !value) {
    err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' needs a name and a value",
                       name ? name : "(null)");
    goto cleanup;
  }
  if (!(v = strdup(value))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  for (size_t i = 0; i < conf->nprops; i++) {
    if (strcmp(conf->props[i].name, name) == 0) {
      free(conf->props[i].value);
      conf->props[i].value = v;
      v = NULL;
      goto cleanup;
    }
  }
  wd_kafka_prop_t *props = realloc(conf->props, (conf->nprops + 1) * sizeof(*props));
  if (!props) {
    err = wd_error_nomem();
    goto cleanup;
  }
  conf->props = props;
  if (!(n = strdup(name))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  props[conf->nprops].name = n;
  props[conf->nprops].value = v;
  conf->nprops++;
  n = v = NULL;
cleanup:
  free(n);
  free(v);
  return err;
}

wd_error_t *wd_kafka_conf_set_pair(wd_kafka_conf_t *conf, const char *name_eq_value) {
  wd_error_t *err = NULL;
  char *name = NULL, *value = NULL;
  const char *eq = name_eq_value ? strchr(name_eq_value, '=') : NULL;
  if (!eq || eq == name_eq_value) {
    /* only a text that is a property name is repeated: anything else may be a secret typed wrongly
     * (sasl.password:hunter2, =hunter2) */
    const char *arg = name_eq_value ? name_eq_value : "";
    bool is_name =
        !eq && *arg && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(arg);
    if (is_name)
      err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY, "Kafka property '%s' is not of the form name=value", arg);
    else
      err = wd_error_new(WD_ERR_CONFIG, C_KAFKA_PROPERTY,
                         "a Kafka property argument is not of the form name=value%s (not shown: it may hold a secret)",
                         eq ? ": the name is missing" : "");
    goto cleanup;
  }
  if (!(name = strndup(name_eq_value, (size_t)(eq - name_eq_value)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  if ((err = wd_conf_expand(eq + 1, &value))) {
    err = wd_error_wrap(err, "Kafka property '%s'", name);
    goto cleanup;
  }
  err = wd_kafka_conf_set(conf, name, value ? value : eq + 1);
cleanup:
  free(value);
  free(name);
  return err;
}

const char *wd_kafka_conf_get(const wd_kafka_conf_t *conf, const char *name) {
  for (size_t i = 0; i < conf->nprops; i++)
    if (strcmp(conf->props[i].name, name) == 0) return conf->props[i].value;
  return NULL;
}

wd_error_t *wd_kafka_conf_copy(wd_kafka_conf_t *dst, const wd_kafka_conf_t *src) {
  wd_error_t *err = NULL;
  memset(dst, 0, sizeof(*dst));
  if ((err = wd_kafka_conf_set_brokers(dst, src->brokers))) goto cleanup;
  if ((err = wd_kafka_conf_set_group(dst, src->group_id))) goto cleanup;
  for (size_t i = 0; i < src->nprops; i++)
    if ((err = wd_kafka_conf_set(dst, src->props[i].name, src->props[i].value))) goto cleanup;
cleanup:
  if (err) wd_kafka_conf_clear(dst);
  return err;
}

void wd_kafka_conf_clear(wd_kafka_conf_t *conf) {
  if (!conf) return;
  for (size_t i = 0; i < conf->nprops; i++) {
    free(conf->props[i].name);
    free(conf->props[i].value);
  }
  free(conf->props);
  free(conf->brokers);
  free(conf->group_id);
  memset(conf, 0, sizeof(*conf));
}

int wd_conf_is_secret(const char *name) {
  static const char *const words[] = {"password", "passwd", "secret", "credential", "token", NULL};
  if (!name) return 0;
  for (const char *const *w = words; *w; w++)
    if (strcasestr(name, *w)) return 1;
  return !strcasecmp(name, "ssl.key.pem") || !strcasecmp(name, "ssl_key.pem") ||
         !strcasecmp(name, "sasl.jaas.config") || !strcasecmp(name, "sasl.oauthbearer.config");
}

const char *wd_conf_shown(const char *name, const char *value) { return wd_conf_is_secret(name) ? "[hidden]" : value; }

/* Appends n bytes of s to the growing string *b (length *len, capacity *cap). 0 or -1. */
static int wd_conf_append(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = (*len + n + 1) * 2;
    char *nb = realloc(*b, c);
    if (!nb) return -1;
    *b = nb;
    *cap = c;
  }
  memcpy(*b + *len, s, n);
  *len += n;
  (*b)[*len] = 0;
  return 0;
}

/* The contents of path (malloc'd, one trailing newline removed), or NULL with errno set. */
static char *wd_conf_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *b = NULL;
  size_t len = 0, cap = 0;
  char chunk[4096];
  size_t k;
  if (!f) return NULL;
  while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if (wd_conf_append(&b, &len, &cap, chunk, k)) {
      fclose(f);
      free(b);
      errno = ENOMEM;
      return NULL;
    }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(b);
    errno = EIO;
    return NULL;
  }
  if (!b && wd_conf_append(&b, &len, &cap, "", 0)) return NULL;
  if (len && b[len - 1] == '\n') b[--len] = 0;
  if (len && b[len - 1] == '\r') b[--len] = 0;
  *n = len;
  return b;
}

wd_error_t *wd_conf_expand(const char *value, char **out) {
  wd_error_t *err = NULL;
  char *b = NULL, *ref = NULL, *file = NULL;
  size_t len = 0, cap = 0;
  *out = NULL;
  if (!value || !strstr(value, "${")) return NULL;
  for (const char *p = value; *p;) {
    const char *d = strstr(p, "${");
    if (!d) {
      if (wd_conf_append(&b, &len, &cap, p, strlen(p))) goto nomem;
      break;
    }
    if (d > p && d[-1] == '$') { /* "$${" is a literal "${" */
      if (wd_conf_append(&b, &len, &cap, p, (size_t)(d - 1 - p)) || wd_conf_append(&b, &len, &cap, "${", 2)) goto nomem;
      p = d + 2;
      continue;
    }
    if (wd_conf_append(&b, &len, &cap, p, (size_t)(d - p))) goto nomem;
    const char *close = strchr(d, '}');
    if (!close) {
      err = wd_error_new(WD_ERR_CONFIG, C_CONFIG_PROVIDER,
                         "a '${' is not closed by '}' (write ${env:NAME} or ${file:PATH}; $${ for a literal ${)");
      goto cleanup;
    }
    free(ref);
    if (!(ref = strndup(d + 2, (size_t)(close - d - 2)))) goto nomem;
    if (!strncmp(ref, "env:", 4) && ref[4]) {
      const char *v = getenv(ref + 4);
      if (!v) {
        err = wd_error_new(WD_ERR_CONFIG, C_CONFIG_PROVIDER,
                           "${%s}: the environment variable %s is not set; set it or write the value", ref, ref + 4);
        goto cleanup;
      }
      if (wd_conf_append(&b, &len, &cap, v, strlen(v))) goto nomem;
    } else if (!strncmp(ref, "file:", 5) && ref[5]) {
      size_t n = 0;
      free(file);
      if (!(file = wd_conf_read_file(ref + 5, &n))) {
        err = wd_error_new(WD_ERR_CONFIG, C_CONFIG_PROVIDER, "${%s}: cannot read %s: %s; make it readable", ref,
                           ref + 5, strerror(errno));
        goto cleanup;
      }
      if (strlen(file) != n) {
        err = wd_error_new(WD_ERR_CONFIG, C_CONFIG_PROVIDER, "${%s}: %s contains a NUL byte", ref, ref + 5);
        goto cleanup;
      }
      if (wd_conf_append(&b, &len, &cap, file, n)) goto nomem;
    } else {
      err =
          wd_error_new(WD_ERR_CONFIG, C_CONFIG_PROVIDER,
                       "${%s}: unknown config provider; write ${env:NAME} or ${file:PATH} ($${ for a literal ${)", ref);
      goto cleanup;
    }
    p = close + 1;
  }
  if (!b && wd_conf_append(&b, &len, &cap, "", 0)) goto nomem;
  *out = b;
  b = NULL;
  goto cleanup;
nomem:
  err = wd_error_nomem();
cleanup:
  free(b);
  free(ref);
  free(file);
  return err;
}
