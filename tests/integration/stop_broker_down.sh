#!/usr/bin/env bash
# tests/integration/stop_broker_down.sh — a stop with the broker down, on a real broker of its own (scripts/kafka
# on KAFKA_PORT, default 19792, so the shared test broker is never stopped):
#   1. SIGTERM while the broker is down, with a commit open, exits within transaction.timeout.ms
#      (10 s) + 5 s + slack with rc 3 (the last commit was not made), never hanging;
#   2. SIGTERM then SIGINT leaves at once (rc 130);
#   2b. commits made before the broker went away, kept in memory by the deferred state flush (a
#      long state.flush-interval-ms), are written to the state by that stop: the restart in 3 finds
#      no partition whose state is behind the group's offsets (nothing to read again without output);
#   3. with the broker back, a restart recovers and the table equals a replay of the sources into a
#      fresh state directory: nothing that was committed was lost, nothing applied twice.
# Usage: stop_broker_down.sh WIDEN_BIN REPO
set -uo pipefail
W=$1
REPO=$2
PORT=${STOP_TEST_PORT:-19792}
T=$(mktemp -d /tmp/widen-stop-XXXXXX)
export WIDEN_BROKERS=127.0.0.1:$PORT
kafka() { KAFKA_PORT=$PORT KAFKA_DIR=$T/kafka KAFKA_STOP_TIMEOUT=2 "$REPO/scripts/kafka" "$@"; }
fails=0
check() { # check NAME CONDITION-RESULT MESSAGE
  if [[ $2 == 0 ]]; then echo "stop_broker_down: ok   $1"; else echo "stop_broker_down: FAIL $1: $3"; fails=$((fails + 1)); fi
}
cleanup() {
  pkill -KILL -f "widen run --config $T/" 2>/dev/null
  kafka stop >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
[[ -n ${KEEP:-} ]] && trap - EXIT

sed -e "s#group.id: .*#group.id: wdstop-$$#" -e "s#dir: ./state/demo#dir: $T/state#" \
  -e "s#shop\\.#wdstop$$.#g" "$REPO/configs/demo.yaml" > "$T/demo.yaml"
grep -q "dir: $T/state" "$T/demo.yaml" || { echo "stop_broker_down: FAIL the config template changed"; exit 1; }
# a commit stays open for minutes, so that one is open when the broker goes away: the interval is
# fixed (commit-interval-min-ms as high as commit-interval-ms), else a widen that caught up with the
# backlog before the kill commits at the adaptive pace and has no commit open (rc 0, not 3)
# (and the metrics listener: start_run waits until /status says records were taken into that commit)
MPORT=${STOP_TEST_METRICS_PORT:-$((PORT + 7))}
sed -e "s#^pipeline:#metrics:\n  listen: 127.0.0.1:$MPORT\npipeline:\n  commit-interval-ms: 600000\n  commit-interval-min-ms: 600000\n  commit-max-records: 100000000#" "$T/demo.yaml" > "$T/open.yaml"
grep -q "commit-interval-ms: 600000" "$T/open.yaml" || { echo "stop_broker_down: FAIL the config template changed"; exit 1; }
# commits every second, their rows kept in memory for 10 minutes (the deferred state flush)
sed -e "s#^pipeline:#metrics:\n  listen: 127.0.0.1:$MPORT\npipeline:\n  commit-interval-ms: 1000\n  commit-interval-min-ms: 1000#" \
  -e "s#^  dir: $T/state#  dir: $T/state\n  flush-interval-ms: 600000#" "$T/demo.yaml" > "$T/kept.yaml"
grep -q "flush-interval-ms: 600000" "$T/kept.yaml" || { echo "stop_broker_down: FAIL the config template changed"; exit 1; }
kafka start >/dev/null || { echo "stop_broker_down: FAIL could not start a broker on $PORT"; exit 1; }
"$W" produce --generate --topic-prefix "wdstop$$." --keys 1000 --records 10000 >/dev/null 2>&1 ||
  { echo "stop_broker_down: FAIL produce"; exit 1; }
# the same records again, fast (kcat), for backlogs: a widen under sanitizers then has tens of
# seconds of input fetched ahead when the broker goes away, so a commit is surely open
for s in orders payments shipments; do
  kcat -b "$WIDEN_BROKERS" -C -t "wdstop$$.$s" -e -q -f '%k\t%s\n' > "$T/$s.tsv" 2>/dev/null ||
    { echo "stop_broker_down: FAIL kcat -C $s"; exit 1; }
done
backlog() {
  for _ in $(seq 1 "$1"); do
    for s in orders payments shipments; do
      kcat -b "$WIDEN_BROKERS" -P -t "wdstop$$.$s" -K $'\t' < "$T/$s.tsv" 2>/dev/null ||
        { echo "stop_broker_down: FAIL kcat -P $s"; exit 1; }
    done
  done
}

# records taken so far by the running widen (its /status totals; `taken commits`: its commits), or 0
taken() {
  curl -s --max-time 2 "http://127.0.0.1:$MPORT/status" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["pipeline"]["totals"][sys.argv[1]])' "${1:-records_in}" \
      2>/dev/null || echo 0
}

# starts widen run in the background (log $T/run.N.log) on a backlog of 300000 records (several
# seconds even for a fast build: an idle widen completes its open commit at once), and returns
# once it has taken records into its open commit (its /status, published each second, says so; a
# loaded machine can take seconds from the assignment to the first record): the broker is then
# killed in the middle of the backlog, so a commit is open (records fetched before the kill keep
# coming from the client's queue)
start_run() {
  local n=$1
  backlog 30 # 300000 records
  "$W" run --config "$T/${2:-open}.yaml" --quiet > "$T/run.$n.log" 2>&1 &
  RUN=$!
  for _ in $(seq 1 240); do
    [[ $(taken) -gt 0 ]] && break
    sleep 0.5
  done
  [[ $(taken) -gt 0 ]] || echo "stop_broker_down: note: run $n took no record in 120 s: $(tail -3 "$T/run.$n.log")"
}

# the broker goes away under a running widen with input flowing, then SIGTERM (and maybe SIGINT)
stop_with_broker_down() {
  local second=$1
  kill -KILL "$(cat "$T/kafka/kafka.pid")" 2>/dev/null # at once, in the middle of the backlog
  kafka stop >/dev/null 2>&1
  sleep 1
  local t0=$SECONDS
  kill -TERM "$RUN"
  if [[ $second == yes ]]; then sleep 1; kill -INT "$RUN"; fi
  wait "$RUN"
  RC=$?
  TOOK=$((SECONDS - t0))
}

# 1. SIGTERM, broker down
start_run 1
stop_with_broker_down no
[[ $TOOK -le 20 ]]; check "sigterm_with_the_broker_down_exits_within_the_bound" $? "took $TOOK s (bound 10 + 5 s)"
[[ $RC == 3 ]]; check "sigterm_with_the_broker_down_says_the_last_commit_was_not_made" $? "rc $RC (want 3): $(tail -3 "$T/run.1.log")"
grep -qE "last commit was not made|leaving now" "$T/run.1.log"
check "rc_3_is_explained" $? "$(tail -3 "$T/run.1.log")"

# 2. SIGTERM then SIGINT: at once
kafka start >/dev/null || { echo "stop_broker_down: FAIL broker restart"; exit 1; }
start_run 2
stop_with_broker_down yes
[[ $RC == 130 ]]; check "a_second_signal_leaves_at_once" $? "rc $RC (want 130): $(tail -3 "$T/run.2.log")"
[[ $TOOK -le 4 ]]; check "a_second_signal_leaves_within_a_few_seconds" $? "took $TOOK s"

# 2b. commits kept in memory when the broker goes away: the stop writes them
kafka start >/dev/null || { echo "stop_broker_down: FAIL broker restart"; exit 1; }
start_run 2b kept
for _ in $(seq 1 120); do
  [[ $(taken commits) -ge 2 ]] && break
  sleep 0.5
done
COMMITS=$(taken commits)
stop_with_broker_down no
[[ $COMMITS -ge 2 ]]; check "commits_were_made_before_the_broker_went_away" $? "$COMMITS commits: $(tail -3 "$T/run.2b.log")"

# 3. restart with the broker back: nothing committed was lost, nothing repeated
kafka start >/dev/null || { echo "stop_broker_down: FAIL broker restart"; exit 1; }
"$W" run --config "$T/demo.yaml" --quiet --max-idle-ms 3000 > "$T/run.3.log" 2>&1
rc=$?
check "the_restart_recovers" $rc "rc $rc: $(tail -3 "$T/run.3.log")"
! grep -q "have their state behind" "$T/run.3.log"
check "the_stop_wrote_the_kept_commits" $? "$(grep -m1 "have their state behind" "$T/run.3.log" | cut -c1-300)"
"$W" rows --config "$T/demo.yaml" > "$T/rows.live" 2>"$T/rows.err"
"$W" replay --config "$T/demo.yaml" --from beginning --state-dir "$T/replay" --quiet > "$T/replay.log" 2>&1
"$W" rows --config "$T/demo.yaml" --state-dir "$T/replay" > "$T/rows.replay" 2>>"$T/rows.err"
n=$(wc -l < "$T/rows.live")
[[ $n -ge 100 ]]; check "the_table_has_rows" $? "$n rows"
cmp -s "$T/rows.live" "$T/rows.replay"
check "the_table_equals_a_replay_of_the_sources" $? "$(diff "$T/rows.live" "$T/rows.replay" | head -5)"

echo "stop_broker_down: $((fails == 0 ? 1 : 0)) passed, $((fails > 0 ? 1 : 0)) failed"
[[ $fails == 0 ]]
