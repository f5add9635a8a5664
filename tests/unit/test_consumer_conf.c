/*
 * tests/unit/test_consumer_conf.c — ingest/consumer.h's fetch defaults for a consumer whose output
 * is seen at commits (wd_consumer_conf_commit_paced): added when the configuration does not set
 * them, never over a value kafka.properties gives, and accepted by librdkafka as consumer settings.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/error.h"
#include "common/kafka_conf.h"
#include "ingest/consumer.h"

Test(consumer_conf, commit_paced_adds_both_fetch_defaults) {
  wd_kafka_conf_t conf = {0};
  cr_assert_null(wd_kafka_conf_set(&conf, "client.id", "w1"));
  cr_assert_null(wd_consumer_conf_commit_paced(&conf));
  cr_assert_str_eq(wd_kafka_conf_get(&conf, "fetch.min.bytes"), "65536");
  cr_assert_str_eq(wd_kafka_conf_get(&conf, "fetch.wait.max.ms"), "10");
  cr_assert_str_eq(wd_kafka_conf_get(&conf, "client.id"), "w1");
  cr_assert_eq(conf.nprops, 3);
  /* both are consumer properties librdkafka takes as they are */
  for (size_t i = 0; i < conf.nprops; i++) {
    wd_error_t *err = wd_kafka_property_check(conf.props[i].name, conf.props[i].value, WD_KAFKA_CONSUMER_PROPERTY);
    cr_assert_null(err, "%s: %s", conf.props[i].name, err ? err->message : "");
  }
  wd_kafka_conf_clear(&conf);
}

Test(consumer_conf, commit_paced_keeps_what_kafka_properties_set) {
  wd_kafka_conf_t conf = {0};
  cr_assert_null(wd_kafka_conf_set(&conf, "fetch.wait.max.ms", "500"));
  cr_assert_null(wd_consumer_conf_commit_paced(&conf));
  cr_assert_str_eq(wd_kafka_conf_get(&conf, "fetch.wait.max.ms"), "500");
  cr_assert_str_eq(wd_kafka_conf_get(&conf, "fetch.min.bytes"), "65536");
  cr_assert_eq(conf.nprops, 2);
  wd_kafka_conf_clear(&conf);

  wd_kafka_conf_t c2 = {0};
  cr_assert_null(wd_kafka_conf_set(&c2, "fetch.min.bytes", "1"));
  cr_assert_null(wd_consumer_conf_commit_paced(&c2));
  cr_assert_str_eq(wd_kafka_conf_get(&c2, "fetch.min.bytes"), "1");
  cr_assert_str_eq(wd_kafka_conf_get(&c2, "fetch.wait.max.ms"), "10");
  cr_assert_eq(c2.nprops, 2);
  wd_kafka_conf_clear(&c2);
}
