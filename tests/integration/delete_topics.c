/*
 * tests/integration/delete_topics.c — the integration tests' cleanup (ctest fixture
 * `wd_test_topics`, run after every integration test): deletes the topics whose names start with
 * the tests' prefix ("wdtest.", which the README's walkthrough and configs never use), so the
 * tests leave nothing in a broker that is then used for the walkthrough.
 *   delete_topics BROKERS PREFIX     (BROKERS "" or unset: $WIDEN_TEST_BROKERS)
 * Exit 0 when every matching topic was deleted (or none exists), 1 otherwise.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *brokers = argc > 1 && argv[1][0] ? argv[1] : getenv("WIDEN_TEST_BROKERS");
  const char *prefix = argc > 2 ? argv[2] : "wdtest.";
  if (!brokers || !*brokers) {
    fprintf(stderr, "delete_topics: no brokers (WIDEN_TEST_BROKERS)\n");
    return 1;
  }
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "delete_topics: %s\n", errstr);
    rd_kafka_conf_destroy(conf);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "delete_topics: %s\n", errstr);
    return 1;
  }
  int rc = 1;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, 30000);
  if (e) {
    fprintf(stderr, "delete_topics: metadata from %s: %s\n", brokers, rd_kafka_err2str(e));
    rd_kafka_destroy(rk);
    return 1;
  }
  rd_kafka_DeleteTopic_t **del = calloc((size_t)md->topic_cnt + 1, sizeof(*del));
  size_t n = 0;
  for (int i = 0; del && i < md->topic_cnt; i++)
    if (!strncmp(md->topics[i].topic, prefix, strlen(prefix))) del[n++] = rd_kafka_DeleteTopic_new(md->topics[i].topic);
  rd_kafka_metadata_destroy(md);
  if (!del) goto out;
  if (n == 0) {
    printf("delete_topics: no topic starts with '%s'\n", prefix);
    rc = 0;
    goto out;
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteTopics(rk, del, n, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
  const rd_kafka_DeleteTopics_result_t *res = ev ? rd_kafka_event_DeleteTopics_result(ev) : NULL;
  if (!res) {
    fprintf(stderr, "delete_topics: DeleteTopics: %s\n", ev ? rd_kafka_event_error_string(ev) : "no answer in 60 s");
  } else {
    size_t cnt = 0, ok = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_DeleteTopics_result_topics(res, &cnt);
    for (size_t i = 0; i < cnt; i++) {
      rd_kafka_resp_err_t te = rd_kafka_topic_result_error(tr[i]);
      if (te == RD_KAFKA_RESP_ERR_NO_ERROR || te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) ok++;
      else fprintf(stderr, "delete_topics: %s: %s\n", rd_kafka_topic_result_name(tr[i]), rd_kafka_err2str(te));
    }
    printf("delete_topics: deleted %zu of %zu topics starting with '%s'\n", ok, cnt, prefix);
    rc = ok == cnt ? 0 : 1;
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
out:
  for (size_t i = 0; i < n; i++) rd_kafka_DeleteTopic_destroy(del[i]);
  free(del);
  rd_kafka_destroy(rk);
  return rc;
}
