#!/usr/bin/env bash
# tests/integration/state_disk.sh — the state directory's bad days, on the real test broker
# (WIDEN_TEST_BROKERS) and a small filesystem made here (tmpfs, so it runs as root):
#   1. a full disk: state.dir on a tmpfs filled up to just above state.min-free-bytes; widen run
#      stops with E_STATE_DISK_FULL (rc 1) naming the directory and the free bytes, never an
#      assertion or a signal; once space is freed, a restart resumes and the table equals a replay
#      of the sources into a fresh directory (`widen replay`): nothing lost, nothing applied twice;
#   2. corruption: copies of that state directory with a truncated SST, a damaged data block of an
#      SST (found when read: `widen rows` reports it and marks the directory), a damaged MANIFEST, a
#      CURRENT naming a missing MANIFEST, and a damaged WAL tail. Each of the first four is refused
#      with E_STATE_CORRUPT naming the file (rc 1); with state.on-corruption: rebuild the directory
#      is moved aside and the run rebuilds the table: rows equal the replay, and the output topic
#      (read_committed) gets no record more (the rebuild emits nothing). A damaged WAL tail is
#      recovered by RocksDB to the last intact write (point in time); the run resumes (rc 0) with
#      the rows of the replay and no output repeated.
# Usage: state_disk.sh WIDEN_BIN REPO
set -uo pipefail
W=$1
REPO=$2
B=${WIDEN_TEST_BROKERS:?WIDEN_TEST_BROKERS is not set (scripts/kafka start, then export it)}
export WIDEN_BROKERS=$B
T=$(mktemp -d /tmp/widen-statedisk-XXXXXX)
P="wdtest.sd$$."
fails=0
check() { # check NAME STATUS MESSAGE
  if [[ $2 == 0 ]]; then echo "state_disk: ok   $1"; else echo "state_disk: FAIL $1: $3"; fails=$((fails + 1)); fi
}
cleanup() {
  umount "$T/small" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
[[ -n ${KEEP:-} ]] && trap - EXIT

mkdir -p "$T/small"
mount -t tmpfs -o size=48m tmpfs "$T/small" || { echo "state_disk: FAIL cannot mount a tmpfs (root needed)"; exit 1; }
MIN=$((8 * 1024 * 1024))
# config: the demo pipeline on topics of its own, state on the tmpfs, min-free-bytes 8 MiB
mkconf() { # mkconf OUT STATE_DIR [EXTRA_STATE_LINE]
  # a fixed group.instance.id: a run on a fresh (rebuilt) directory takes the partitions back at
  # once, as a restart does (the generated one is kept in the state directory)
  sed -e "s#group.id: .*#group.id: wdtest-sd-$$\n  properties:\n    session.timeout.ms: 6000\n    group.instance.id: wdtest-sd-$$-a#" -e "s#dir: ./state/demo#dir: $2\n  min-free-bytes: $MIN${3:+\n  $3}#" \
    -e "s#shop\\.#$P#g" "$REPO/configs/demo.yaml" > "$1"
  grep -q "dir: $2" "$1" || { echo "state_disk: FAIL the config template changed"; exit 1; }
}
mkconf "$T/run.yaml" "$T/small/state"
out_count() { # records of the output topic, read_committed
  kcat -b "$B" -C -t "${P}orders_wide" -e -q -X isolation.level=read_committed -f '%o\n' 2>/dev/null | wc -l
}
rows_equal_replay() { # rows_equal_replay CONFIG NAME
  "$W" rows --config "$1" > "$T/rows.$2" 2>"$T/rows.$2.err"
  cmp -s "$T/rows.$2" "$T/rows.replay"
  check "$2: the table equals a replay of the sources" $? \
    "$(wc -l < "$T/rows.$2") vs $(wc -l < "$T/rows.replay") rows: $(diff "$T/rows.$2" "$T/rows.replay" | head -3) $(head -c 300 "$T/rows.$2.err")"
}

# ---- 1. a full disk ----------------------------------------------------------------------------
"$W" produce --generate --topic-prefix "$P" --keys 300 --records 3000 >/dev/null 2>&1 || { echo "state_disk: FAIL produce"; exit 1; }
# small memtables, so that the state has SST files (flushed) for the corruption cases below
export WIDEN_BENCH_ROCKSDB_OPTIONS="write_buffer_size=65536"
"$W" run --config "$T/run.yaml" --quiet --max-idle-ms 3000 > "$T/run.1.log" 2>&1
check "a first run" $? "$(tail -3 "$T/run.1.log")"
# fill the filesystem up to 1 MiB above the minimum, then more input: the guard stops widen
avail=$(df --output=avail -B1 "$T/small" | tail -1)
fill=$((avail - MIN - 1024 * 1024))
[[ $fill -gt 0 ]] && fallocate -l "$fill" "$T/small/filler"
"$W" produce --generate --topic-prefix "$P" --keys 3000 --records 30000 >/dev/null 2>&1 || { echo "state_disk: FAIL produce"; exit 1; }
"$W" run --config "$T/run.yaml" --quiet --max-idle-ms 3000 > "$T/run.2.log" 2>&1
rc=$?
[[ $rc == 1 ]]; check "a short disk stops widen with rc 1" $? "rc $rc: $(tail -3 "$T/run.2.log")"
grep -q "E_STATE_DISK_FULL" "$T/run.2.log" && grep -q "$T/small/state has [0-9]* bytes free" "$T/run.2.log" &&
  grep -q "state.min-free-bytes" "$T/run.2.log"
check "the error names E_STATE_DISK_FULL, the directory, the free bytes and the option" $? "$(grep -m1 E_ "$T/run.2.log")"
! grep -qiE "Assertion|SIGABRT|AddressSanitizer|runtime error" "$T/run.2.log"
check "no assertion or sanitizer report" $? "$(grep -m1 -iE "Assertion|runtime error" "$T/run.2.log")"
rm -f "$T/small/filler"
"$W" run --config "$T/run.yaml" --quiet --max-idle-ms 3000 > "$T/run.3.log" 2>&1
check "with space freed, a restart resumes" $? "$(tail -3 "$T/run.3.log")"
"$W" replay --config "$T/run.yaml" --from beginning --state-dir "$T/replay" --quiet > "$T/replay.log" 2>&1
check "replay" $? "$(tail -3 "$T/replay.log")"
"$W" rows --config "$T/run.yaml" --state-dir "$T/replay" > "$T/rows.replay" 2>"$T/rows.replay.err"
n=$(wc -l < "$T/rows.replay")
[[ $n -ge 1000 ]]; check "the table has rows" $? "$n rows"
rows_equal_replay "$T/run.yaml" "full_disk"
unset WIDEN_BENCH_ROCKSDB_OPTIONS

# ---- 2. corruption -----------------------------------------------------------------------------
OUT0=$(out_count)
[[ $OUT0 -ge 1000 ]]; check "the output has records" $? "$OUT0"
ls "$T/small/state"/*.sst >/dev/null 2>&1; check "the state has SST files" $? "$(ls "$T/small/state")"
corrupt() { # corrupt KIND DIR: damages one kind of file; prints the file's name
  local d=$2 f
  case $1 in
  sst)
    f=$(ls -S "$d"/*.sst | head -1)
    truncate -s $(($(stat -c %s "$f") / 2)) "$f" ;;
  manifest)
    f=$(ls "$d"/MANIFEST-* | head -1)
    dd if=/dev/urandom of="$f" bs=1 seek=20 count=200 conv=notrunc 2>/dev/null ;;
  block) # a data block of an SST: found only when read (widen rows scans every row)
    f=$(ls -S "$d"/*.sst | head -1)
    printf '\xde\xad\xbe\xef\xde\xad\xbe\xef' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null ;;
  current)
    f=$d/CURRENT
    echo "MANIFEST-999999" > "$f" ;;
  wal)
    f=$(ls -t "$d"/*.log | head -1)
    local s
    s=$(stat -c %s "$f")
    [[ $s -gt 300 ]] && dd if=/dev/urandom of="$f" bs=1 seek=$((s - 200)) count=200 conv=notrunc 2>/dev/null ;;
  esac
  basename "$f"
}
for kind in sst block manifest current wal; do
  d=$T/c-$kind
  cp -a "$T/small/state" "$d"
  file=$(corrupt "$kind" "$d")
  want=$file
  [[ $kind == current ]] && want="MANIFEST-999999, which its CURRENT file names, is missing"
  mkconf "$T/$kind.yaml" "$d"
  mkconf "$T/$kind.rebuild.yaml" "$d" "on-corruption: rebuild"
  if [[ $kind == block ]]; then # found by a read, which leaves WIDEN-CORRUPT: refused from then on
    "$W" rows --config "$T/$kind.yaml" > /dev/null 2> "$T/$kind.scan.err"
    grep -q "E_STATE_CORRUPT" "$T/$kind.scan.err" && [[ -f $d/WIDEN-CORRUPT ]]
    check "$kind: a damaged block found by a read is E_STATE_CORRUPT and marks the directory" $? "$(head -c 400 "$T/$kind.scan.err")"
  fi
  "$W" run --config "$T/$kind.yaml" --quiet --max-idle-ms 3000 > "$T/$kind.fail.log" 2>&1
  rc=$?
  if [[ $kind == wal ]]; then
    [[ $rc == 0 ]]; check "$kind: a damaged WAL tail is recovered to the last intact write" $? "rc $rc: $(tail -3 "$T/$kind.fail.log")"
  else
    [[ $rc == 1 ]] && grep -q "E_STATE_CORRUPT" "$T/$kind.fail.log" && grep -q "$want" "$T/$kind.fail.log" &&
      grep -q "state.on-corruption: rebuild" "$T/$kind.fail.log"
    check "$kind: refused with E_STATE_CORRUPT naming $file and the way forward" $? "rc $rc: $(grep -m1 E_ "$T/$kind.fail.log")"
    "$W" rows --config "$T/$kind.yaml" > /dev/null 2> "$T/$kind.rows.err"
    grep -q "E_STATE_CORRUPT" "$T/$kind.rows.err"; check "$kind: widen rows says E_STATE_CORRUPT" $? "$(head -c 300 "$T/$kind.rows.err")"
    "$W" run --config "$T/$kind.rebuild.yaml" --quiet --max-idle-ms 3000 > "$T/$kind.rebuild.log" 2>&1
    rc=$?
    [[ $rc == 0 ]] && ls -d "$d".corrupt-* > /dev/null 2>&1
    check "$kind: state.on-corruption: rebuild moves it aside and runs" $? "rc $rc: $(tail -3 "$T/$kind.rebuild.log")"
  fi
  rows_equal_replay "$T/$kind.yaml" "$kind"
  n=$(out_count)
  [[ $n == "$OUT0" ]]; check "$kind: nothing repeated in the output (read_committed)" $? "$n records, $OUT0 before"
done

echo "state_disk: $((fails == 0 ? 1 : 0)) passed, $((fails > 0 ? 1 : 0)) failed"
[[ $fails == 0 ]]
