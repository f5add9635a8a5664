/*
 * tests/unit/test_commit_phases.c — the commit coordinator's phase machine (app/runtime/commit.c):
 *   - the table of legal phase moves, checked pair by pair against the picture at the top of
 *     commit.c (written out again here);
 *   - a commit driven through its phases without a broker (an at-least-once collector on
 *     librdkafka's mock cluster, an in-memory store and state): each move is logged in order
 *     (IDLE -> OPEN -> SNAPPED -> COMMITTED -> IDLE), the commit is numbered and its offsets
 *     written; an abort goes back to IDLE without writing them and tells the pipeline (hook);
 *   - the fault hook's syntax (app/runtime/fault.h): point, count, "+", "fatal-".
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/runtime/commit.h"
#include "app/runtime/fault.h"
#include "common/log.h"
#include "join/merge.h"

#define ok(e)                                                                                                          \
  do {                                                                                                                 \
    wd_error_t *err_ = (e);                                                                                            \
    cr_assert_null(err_, "%s", err_ ? err_->message : "");                                                             \
  } while (0)

enum { IDLE, OPEN, SNAPPED, PREPARED, OFFSETS_SENT, COMMITTED };

static bool documented(int a, int b) {
  static const int legal[][2] = {{IDLE, OPEN},
                                 {OPEN, SNAPPED},
                                 {OPEN, IDLE},
                                 {SNAPPED, PREPARED},
                                 {SNAPPED, OFFSETS_SENT},
                                 {SNAPPED, COMMITTED},
                                 {SNAPPED, IDLE},
                                 {PREPARED, OFFSETS_SENT},
                                 {PREPARED, IDLE},
                                 {OFFSETS_SENT, COMMITTED},
                                 {OFFSETS_SENT, IDLE},
                                 {COMMITTED, IDLE}};
  for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
    if (legal[i][0] == a && legal[i][1] == b) return true;
  return false;
}

Test(commit_phases, every_move_is_legal_exactly_as_documented) {
  size_t n = 0;
  for (int a = IDLE; a <= COMMITTED; a++)
    for (int b = IDLE; b <= COMMITTED; b++) {
      if (a == b) continue;
      cr_assert_eq(wd_commit_phase_legal(a, b), documented(a, b), "%s -> %s", wd_commit_phase_name(a),
                   wd_commit_phase_name(b));
      n += documented(a, b);
    }
  cr_assert_eq(n, 12);
  cr_assert_not(wd_commit_phase_legal(-1, OPEN));
  cr_assert_not(wd_commit_phase_legal(OPEN, 6));
  cr_assert_str_eq(wd_commit_phase_name(OFFSETS_SENT), "OFFSETS_SENT");
  cr_assert_str_eq(wd_commit_phase_name(9), "?");
}

Test(commit_phases, the_fault_hook_syntax) {
  wd_fault_t f;
  wd_fault_parse(&f, NULL);
  cr_assert_not(wd_fault_due(&f, "after-commit"));
  wd_fault_parse(&f, "after-commit");
  cr_assert_not(wd_fault_due(&f, "after-prepare"));
  cr_assert(wd_fault_due(&f, "after-commit")); /* the first time */
  cr_assert_not(wd_fault_due(&f, "after-commit"));
  wd_fault_parse(&f, "fatal-during-commit:3+");
  cr_assert(f.fatal);
  cr_assert_str_eq(f.point, "during-commit");
  cr_assert_not(wd_fault_due(&f, "during-commit"));
  cr_assert_not(wd_fault_due(&f, "during-commit"));
  cr_assert(wd_fault_due(&f, "during-commit")); /* the third time */
  cr_assert(wd_fault_due(&f, "during-commit")); /* and every time after */
  wd_fault_parse(&f, "rebuild-after-stage:2");
  cr_assert_not(f.fatal);
  cr_assert_not(f.repeat);
  cr_assert_not(wd_fault_due(&f, "rebuild-after-stage"));
  cr_assert(wd_fault_due(&f, "rebuild-after-stage"));
  wd_fault_parse(&f, "a-point-name-far-longer-than-thirty-one-characters");
  cr_assert_eq(f.point[0], 0);
}

/* ---- a commit driven through its phases ---------------------------------------------------------- */

typedef struct {
  rd_kafka_t *rk;
  rd_kafka_mock_cluster_t *mc;
  wd_collector_t *coll;
  wd_table_t *t;
  wd_store_t *st;
  wd_state_t *s;
  wd_commit_t *c;
  int aborted;
} fix_t;

static void on_aborted(void *ctx) { ((fix_t *)ctx)->aborted++; }

static void fix_open(fix_t *f) {
  memset(f, 0, sizeof(*f));
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  cr_assert_not_null(f->rk, "%s", errstr);
  cr_assert_not_null(f->mc = rd_kafka_mock_cluster_new(f->rk, 1));
  wd_kafka_conf_t kc = {0};
  ok(wd_kafka_conf_set_brokers(&kc, rd_kafka_mock_cluster_bootstraps(f->mc)));
  ok(wd_kafka_conf_set(&kc, "log_level", "0"));
  ok(wd_collector_new(&kc, &f->coll));
  wd_kafka_conf_clear(&kc);
  const char *names[] = {"k", "v"};
  const char *types[] = {"INT", "STRING"};
  const char *pk[] = {"k"};
  wd_schema_t *sc = NULL;
  ok(wd_schema_new(2, names, types, 1, pk, &sc));
  ok(wd_table_new(sc, 0, NULL, &f->t));
  ok(wd_store_open_memory(&f->st));
  cr_assert_not_null(f->s = wd_state_new(f->t, f->st, 0));
  static const char *const topics[] = {"in"};
  wd_commit_conf_t cc = {.exactly_once = false,
                         .group = false,
                         .interval_ms = 1000,
                         .txn_timeout_ms = 60000,
                         .topics = topics,
                         .ntopics = 1,
                         .hooks = {.ctx = f, .aborted = on_aborted}};
  ok(wd_commit_new(&cc, f->coll, NULL, f->s, f->st, &f->c));
}

static void fix_close(fix_t *f) {
  wd_commit_destroy(f->c);
  wd_state_destroy(f->s);
  wd_store_close(f->st);
  wd_table_destroy(f->t);
  wd_collector_destroy(f->coll);
  rd_kafka_mock_cluster_destroy(f->mc);
  rd_kafka_destroy(f->rk);
}

static int64_t stored(fix_t *f, int32_t partition) {
  int64_t off = -1;
  ok(wd_store_get_offset(f->st, "in", partition, &off));
  return off;
}

static void before(void) {
  cr_redirect_stderr();
  wd_log_set_level(WD_LOG_DEBUG);
}

/* The log lines of the "commit" unit that name a phase move, in order, as "FROM>TO" joined by ' '. */
static void moves(char *out, size_t cap) {
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  char line[1024];
  out[0] = 0;
  while (fgets(line, sizeof(line), f)) {
    const char *c = strstr(line, "[commit] commit ");
    const char *arrow = c ? strstr(c, " -> ") : NULL;
    if (!arrow) continue;
    const char *from = strchr(c + 16, ' ');
    if (!from) continue;
    char a[32] = "", b[32] = "";
    if (sscanf(from + 1, "%31[A-Z_] -> %31[A-Z_]", a, b) != 2) continue;
    snprintf(out + strlen(out), cap - strlen(out), "%s%s>%s", out[0] ? " " : "", a, b);
  }
}

Test(commit_phases, a_commit_moves_through_its_phases_and_an_abort_back_to_idle, .init = before) {
  fix_t f;
  fix_open(&f);
  cr_assert_not(wd_commit_pending(f.c));
  cr_assert_eq(wd_commit_note_input(f.c, "in", 0, 41, 3), 0);
  cr_assert(wd_commit_pending(f.c));
  bool aborted = true;
  ok(wd_commit_run(f.c, NULL, &aborted));
  cr_assert_not(aborted);
  cr_assert_not(wd_commit_pending(f.c));
  cr_assert_eq(wd_commit_number(f.c), 1);
  cr_assert_eq(stored(&f, 0), 42); /* the next offset, written with the commit */
  /* the next commit is aborted: nothing of it is written */
  cr_assert_eq(wd_commit_note_input(f.c, "in", 0, 50, 1), 0);
  ok(wd_commit_abort(f.c, "a test"));
  cr_assert_not(wd_commit_pending(f.c));
  cr_assert_eq(f.aborted, 1);
  cr_assert_eq(wd_commit_number(f.c), 1);
  cr_assert_eq(stored(&f, 0), 42);
  ok(wd_commit_take_error(f.c)); /* no illegal move was tried */
  char m[512];
  moves(m, sizeof(m));
  cr_assert_str_eq(m, "IDLE>OPEN OPEN>SNAPPED SNAPPED>COMMITTED COMMITTED>IDLE IDLE>OPEN OPEN>IDLE");
  fix_close(&f);
}
