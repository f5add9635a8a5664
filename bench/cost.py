#!/usr/bin/env python3
"""bench/cost.py — groups callgrind (and perf) costs of `widen run` and bench/engine by phase.

Reads, in --out (bench/run-cost writes them):
  callgrind.widen.incl.txt   callgrind_annotate --inclusive=yes of `widen run` (all threads)
  callgrind.engine.incl.txt  the same of bench/engine (the engine path in-process, no Kafka)
  perf.widen.txt             perf report --children --sort sym of `widen run` (optional)
and prints a Markdown table: per phase, instructions per input record (widen and engine) and the
share of widen's instructions and of its CPU time (perf cpu-clock samples, inclusive).

A phase is a sum and difference of inclusive costs of named functions (below); the functions are
chosen so that the phases do not overlap. librdkafka is stripped on Debian, so its broker threads
(fetch, produce requests, acknowledgements, for the consumer and the producer alike) are one row:
everything under start_thread that is not RocksDB's.
"""
import argparse, os, re, sys

# phase -> (added functions, subtracted functions); inclusive costs
PHASES = [
    ("consume (poll, message release)",
     ["wd_consumer_poll_batch", "wd_consumer_poll_available", "wd_kmsg_release"], []),
    ("decode (Debezium JSON)", ["wd_decode_debezium_json"], []),
    ("key encode", ["wd_row_key_encode"], []),
    ("state read (multi-get, entry decode, cache get)", ["wd_state_prefetch_tasks", "state_get"], []),
    # merge_step is the record step wd_message_apply and wd_merge_apply call ;
    # "a|b": the first of them that has a cost (older builds have only wd_merge_apply)
    ("merge (merge_step: build the new row)", ["merge_step|wd_merge_apply"], []),
    ("changelog diff (wd_message_apply less merge and state ops)", ["wd_message_apply"],
     ["merge_step|wd_merge_apply", "state_get", "state_put"]),
    ("state write (cache put, snapshot/flush encode, RocksDB writes + background)",
     ["state_put", "wd_state_snapshot", "wd_rdb_write", "wd_store_batch_merge",
      "rocksdb::DBImpl::BGWorkFlush(void*)", "rocksdb::DBImpl::BGWorkCompaction(void*)"],
     []),
    ("encode (Debezium JSON value + key)", ["wd_changelog_encode_debezium_json", "wd_changelog_encode_key_json"], []),
    ("produce (wd_producer_send)", ["wd_producer_send", "wd_producer_send_dead_letter"], []),
    ("commit (coordinator: prepare record, offsets, txn commit / acks wait; less its state writes)",
     # commit_run_phases: both the blocking and the overlapped commit (wd_commit_run_async) run it;
     # the output it releases to the producer is the produce phase's
     ["commit_run_phases|wd_commit_run", "wd_commit_begin"],
     ["wd_state_snapshot", "wd_rdb_write", "wd_store_batch_merge", "wd_collector_release"]),
    ("librdkafka threads (fetch + produce I/O, both clients)", ["start_thread"],
     ["rocksdb::DBImpl::BGWorkFlush(void*)", "rocksdb::DBImpl::BGWorkCompaction(void*)",
      "rocksdb::ThreadPoolImpl::Impl::BGThreadWrapper(void*)"]),
]
# once per process, not per record: the start-up (the state's definition check and the store opened
# for it, the pipeline's clients, store, topics) and the shutdown; the dynamic loader's relocations
# before main are the difference between the program total and the main thread + worker threads
# (wd_state_dir_check_open and wd_definition_prepare_open: the checks that open the store once and
# hand it to wd_pipeline_new; wd_definition_prepare: the same before they did)
STARTUP = ["wd_state_dir_check_open", "wd_definition_prepare_open", "wd_definition_prepare", "wd_pipeline_new",
           "wd_config_load", "wd_pipeline_destroy"]
MAIN_ROOT = "(below main)"
THREAD_ROOT = "start_thread"
# the engine's generator is not part of the path
ENGINE_EXCLUDE = ["wd_gen_next", "wd_gen_new"]

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def load_callgrind(path):
    """{function name: inclusive Ir} and the program total."""
    cost, total = {}, 0
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            n = int(m.group(1).replace(",", ""))
            rest = m.group(2).strip()
            if rest.startswith("PROGRAM TOTALS"):
                total = n
                continue
            if rest.endswith("]") and " [" in rest:
                rest = rest[: rest.rindex(" [")]
            fn = rest.split(":", 1)[1] if ":" in rest else rest
            fn = fn.strip()
            # a function may appear once per file (inlined copies): keep the largest
            cost[fn] = max(cost.get(fn, 0), n)
    return cost, total


def load_perf(path):
    """{symbol: children %} from perf report --children --sort sym."""
    share = {}
    pat = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+\[[.k]\]\s+(.*)$")
    with open(path, errors="replace") as f:
        for line in f:
            m = pat.match(line)
            if m:
                share.setdefault(m.group(3).strip(), float(m.group(1)))
    return share


def phase_value(cost, add, sub):
    def get(fn):
        if "|" in fn:
            return next((v for v in (get(f) for f in fn.split("|")) if v), 0)
        if fn in cost:
            return cost[fn]
        # C++ names: match on the name before the parameter list
        base = fn.split("(")[0]
        for k, v in cost.items():
            if k.split("(")[0] == base:
                return v
        return 0

    return max(0, sum(get(f) for f in add) - sum(get(f) for f in sub))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w, wtot = load_callgrind(os.path.join(a.out, "callgrind.widen.incl.txt"))
    e, etot = load_callgrind(os.path.join(a.out, "callgrind.engine.incl.txt"))
    pp = os.path.join(a.out, "perf.widen.txt")
    p = load_perf(pp) if os.path.exists(pp) else {}
    etot_path = etot - sum(phase_value(e, [f], []) for f in ENGINE_EXCLUDE)
    n = a.records
    print(f"records: {n} source records; widen total {wtot / n:,.0f} instructions per record (all threads, "
          f"start-up included); engine path {etot_path / n:,.0f} per record (generator excluded)\n")
    print("| phase | widen Ir / record | share of widen Ir | share of widen CPU time (perf) | engine Ir / record |")
    print("|---|---:|---:|---:|---:|")
    ws = es = ps = 0.0
    for name, add, sub in PHASES:
        wv = phase_value(w, add, sub)
        ev = phase_value(e, add, sub) if not name.startswith("librdkafka") else 0
        pv = phase_value(p, add, sub) if p else None
        ws += wv
        es += ev
        if pv is not None:
            ps += pv
        print(f"| {name} | {wv / n:,.0f} | {100 * wv / wtot:.1f} % | "
              f"{'%.1f %%' % pv if pv is not None else '-'} | {ev / n:,.0f} |")
    # start-up and shutdown: fixed per process, so their share per record shrinks with --records
    su = phase_value(w, STARTUP, [])
    below, threads = phase_value(w, [MAIN_ROOT], []), phase_value(w, [THREAD_ROOT], [])
    loader = max(0, wtot - below - threads) if below else 0
    fixed = su + loader
    other = max(0, wtot - ws - fixed)
    print(f"| start-up and shutdown (definition check, store opens, clients, topics, dynamic loader; once per process) "
          f"| {fixed / n:,.0f} | {100 * fixed / wtot:.1f} % | - | 0 |")
    print(f"| other (the pipeline loop, collector hold, row release, group join, logging, ...) | {other / n:,.0f} | "
          f"{100 * other / wtot:.1f} % | {'%.1f %%' % (100 - ps) if p else '-'} | {(etot_path - es) / n:,.0f} |")
    print(f"| **total** | **{wtot / n:,.0f}** | 100 % | 100 % | **{etot_path / n:,.0f}** |")
    print(f"| total less start-up and shutdown (per record in a long run) | {(wtot - fixed) / n:,.0f} | | | |")
    # the commit's own writes (exactly-once: the prepared record holds the encoded state batch)
    print()
    print(f"details (widen): prepared-record encode (wd_store_batch_encode) {phase_value(w, ['wd_store_batch_encode'], []) / n:,.0f} "
          f"Ir/record; fsync'ed writes (wd_store_write_sync, user space) {phase_value(w, ['wd_store_write_sync'], []) / n:,.0f} "
          f"Ir/record; all RocksDB writes (wd_rdb_write) {phase_value(w, ['wd_rdb_write'], []) / n:,.0f} Ir/record")
    if p:
        print(f"details (perf): RocksDB writes incl. kernel {phase_value(p, ['wd_rdb_write'], []):.1f} % of CPU time, "
              f"of which fsync/fdatasync in the kernel {phase_value(p, ['do_fsync'], []):.1f} %; "
              f"prepared-record encode {phase_value(p, ['wd_store_batch_encode'], []):.1f} %; "
              f"kernel total {sum(v for k, v in p.items() if k in ('entry_SYSCALL_64_after_hwframe',)):.1f} % (syscalls)")


if __name__ == "__main__":
    sys.exit(main())
