/*
 * tests/unit/test_secrets.c — without a broker: the config providers
 * ${env:NAME} / ${file:PATH} (common/kafka_conf.h wd_conf_expand) in a YAML config and in -X
 * properties, their errors naming the config line and never a value, and which property names
 * are secrets (wd_conf_is_secret / wd_conf_shown).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/config/config.h"
#include "app/ops/fingerprint.h"
#include "common/buf.h"
#include "common/kafka_conf.h"

static char dir[64], yaml[128], pwfile[128];

static void setup(void) {
  snprintf(dir, sizeof(dir), "/tmp/wd_test_secrets_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(yaml, sizeof(yaml), "%s/w.yaml", dir);
  snprintf(pwfile, sizeof(pwfile), "%s/pw", dir);
  FILE *f = fopen(pwfile, "w");
  cr_assert_not_null(f);
  fputs("file-secret-42\n", f);
  fclose(f);
  setenv("WD_TEST_SECRET_PW", "env-secret-17", 1);
  unsetenv("WD_TEST_SECRET_UNSET");
}

static void teardown(void) {
  unlink(yaml);
  unlink(pwfile);
  rmdir(dir);
}

TestSuite(secrets, .init = setup, .fini = teardown);

static char *expand_ok(const char *in) {
  char *out = NULL;
  wd_error_t *err = wd_conf_expand(in, &out);
  cr_assert_null(err, "%s: %s", in, err ? err->message : "");
  return out;
}

Test(secrets, providers_replace_env_and_file_references) {
  char *s = expand_ok("${env:WD_TEST_SECRET_PW}");
  cr_assert_str_eq(s, "env-secret-17");
  free(s);
  char ref[256];
  snprintf(ref, sizeof(ref), "a-${file:%s}-b-${env:WD_TEST_SECRET_PW}", pwfile);
  s = expand_ok(ref);
  cr_assert_str_eq(s, "a-file-secret-42-b-env-secret-17"); /* the file's trailing newline dropped */
  free(s);
  s = expand_ok("cost $${env:X} and $5");
  cr_assert_str_eq(s, "cost ${env:X} and $5");
  free(s);
  char *none = (char *)"x";
  cr_assert_null(wd_conf_expand("plain $value", &none));
  cr_assert_null(none, "a value without ${ is used as it is");
}

static void expand_fails(const char *in, const char *part) {
  char *out = NULL;
  wd_error_t *err = wd_conf_expand(in, &out);
  cr_assert_not_null(err, "%s expanded", in);
  cr_assert_null(out);
  cr_assert_str_eq(err->id, "C_CONFIG_PROVIDER");
  cr_assert(strstr(err->message, part), "'%s' lacks '%s'", err->message, part);
  wd_error_destroy(err);
}

Test(secrets, provider_errors_say_what_is_missing) {
  expand_fails("${env:WD_TEST_SECRET_UNSET}", "WD_TEST_SECRET_UNSET is not set");
  expand_fails("${file:/nonexistent/widen-pw}", "cannot read /nonexistent/widen-pw: No such file");
  expand_fails("${vault:x}", "unknown config provider");
  expand_fails("${env:X", "not closed");
}

Test(secrets, a_config_line_takes_a_provider_and_an_error_names_the_line) {
  FILE *f = fopen(yaml, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "kafka:\n  bootstrap.servers: 127.0.0.1:9092\n  group.id: g\n  properties:\n"
          "    sasl.password: ${env:WD_TEST_SECRET_PW}\n    ssl.key.password: ${file:%s}\n"
          "table:\n  name: t\n  schema:\n    - {name: id, type: BIGINT NOT NULL}\n  primary-key: [id]\n"
          "sources:\n  - {name: s, topic: in, columns: {id: }}\nsink:\n  topic: out\nstate:\n  dir: %s/state\n",
          pwfile, dir);
  fclose(f);
  unsetenv("WIDEN_BROKERS");
  wd_config_t *cfg = NULL;
  wd_error_t *err = wd_config_load(yaml, &cfg);
  cr_assert_null(err, "%s", err ? err->message : "");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->kafka.properties, "sasl.password"), "env-secret-17");
  cr_assert_str_eq(wd_config_pairs_get(&cfg->kafka.properties, "ssl.key.password"), "file-secret-42");
  /* the stored definition holds neither */
  wd_buf_t b = {0};
  cr_assert_eq(wd_definition_json(cfg, &b), 0);
  wd_buf_putc(&b, 0);
  cr_assert_null(strstr((const char *)b.data, "secret-"), "%s", (const char *)b.data);
  wd_buf_free(&b);
  wd_config_destroy(cfg);

  unsetenv("WD_TEST_SECRET_PW");
  cfg = NULL;
  err = wd_config_load(yaml, &cfg);
  cr_assert_null(cfg);
  cr_assert_not_null(err);
  char at[200];
  snprintf(at, sizeof(at), "%s:5:", yaml);
  cr_assert(strstr(err->message, at), "'%s' does not name line 5", err->message);
  cr_assert(strstr(err->message, "WD_TEST_SECRET_PW is not set"), "%s", err->message);
  wd_error_destroy(err);
}

Test(secrets, a_minus_x_property_takes_a_provider) {
  wd_kafka_conf_t kc = {0};
  cr_assert_null(wd_kafka_conf_set_pair(&kc, "sasl.password=${env:WD_TEST_SECRET_PW}"));
  cr_assert_str_eq(wd_kafka_conf_get(&kc, "sasl.password"), "env-secret-17");
  wd_error_t *err = wd_kafka_conf_set_pair(&kc, "sasl.password=${env:WD_TEST_SECRET_UNSET}");
  cr_assert_not_null(err);
  cr_assert(strstr(err->message, "sasl.password") && strstr(err->message, "WD_TEST_SECRET_UNSET"), "%s", err->message);
  wd_error_destroy(err);
  wd_kafka_conf_clear(&kc);
}

Test(secrets, secret_names) {
  const char *secret[] = {"sasl.password",
                          "ssl.key.password",
                          "ssl.keystore.password",
                          "ssl.truststore.password",
                          "sasl.oauthbearer.client.secret",
                          "SASL.PASSWORD",
                          "sasl.jaas.config",
                          "ssl.key.pem",
                          "my.api.token",
                          "basic.auth.user.info.credentials",
                          NULL};
  const char *plain[] = {
      "sasl.username", "ssl.ca.location", "ssl.key.location", "security.protocol", "client.id", "sasl.mechanism", NULL};
  for (const char **n = secret; *n; n++) {
    cr_assert(wd_conf_is_secret(*n), "%s", *n);
    cr_assert_str_eq(wd_conf_shown(*n, "x"), "[hidden]");
  }
  for (const char **n = plain; *n; n++) {
    cr_assert_not(wd_conf_is_secret(*n), "%s", *n);
    cr_assert_str_eq(wd_conf_shown(*n, "x"), "x");
  }
}
