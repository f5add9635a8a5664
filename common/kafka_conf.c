/*
 * common/kafka_conf.c — the plain Kafka client configuration (see kafka_conf.h).
 */
#include "common/kafka_conf.h"

#include <stdlib.h>
#include <string.h>

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
    err = wd_error_new(WD_ERR_CONFIG, "C_KAFKA_PROPERTY", "Kafka property '%s' needs a name and a value",
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
  char *name = NULL;
  const char *eq = name_eq_value ? strchr(name_eq_value, '=') : NULL;
  if (!eq || eq == name_eq_value) {
    err = wd_error_new(WD_ERR_CONFIG, "C_KAFKA_PROPERTY", "Kafka property '%s' is not of the form name=value",
                       name_eq_value ? name_eq_value : "(null)");
    goto cleanup;
  }
  if (!(name = strndup(name_eq_value, (size_t)(eq - name_eq_value)))) {
    err = wd_error_nomem();
    goto cleanup;
  }
  err = wd_kafka_conf_set(conf, name, eq + 1);
cleanup:
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
