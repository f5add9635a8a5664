#!/usr/bin/env python3
"""bench/scale.py — the scale-out figures of bench/README.md, on a real broker:

  1. one process builds a per-partition, exactly-once table of --keys keys from the orders
     stream (the state changelog topic gets every key);
  2. restore: a second process joins with an empty state directory; the tasks it is given are
     restored from the state changelog topic: records/s of the restore and the time from its
     assignment to the last task restored (a task moving without a standby);
  3. standby: both processes run with num-standby-replicas: 1 until the newcomer's copies of the
     other's tasks are warm; the other is killed (SIGKILL) and its tasks move: time from the
     survivor's assignment to the last task caught up from its copy;
  4. throughput of 1, 2 and 3 processes in one group over the same input, from empty state.

Prints RESULT lines (name value unit) that bench/median.py takes the medians of.
"""
import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--widen", required=True)
ap.add_argument("--brokers", required=True)
ap.add_argument("--keys", type=int, default=1000000)
ap.add_argument("--records", type=int, default=0, help="default: 1.5 x keys")
ap.add_argument("--skip-throughput", action="store_true")
a = ap.parse_args()
records = a.records or int(a.keys * 1.5)
work = tempfile.mkdtemp(prefix="widen-bench-scale-")
prefix = "wdbench.scale%d." % (int(time.time()) % 100000)

CONFIG = """kafka:
  bootstrap.servers: {brokers}
  group.id: {group}
  properties:
    session.timeout.ms: 6000
    group.instance.id: {instance}
table:
  name: orders_t
  schema:
    - {{name: order_id, type: BIGINT NOT NULL}}
    - {{name: customer, type: STRING}}
    - {{name: amount, type: "DECIMAL(10,2)"}}
    - {{name: currency, type: STRING}}
    - {{name: order_version, type: BIGINT}}
  primary-key: [order_id]
  options:
    merge-engine: partial-update
    fields.order_version.sequence-group: customer,amount,currency
sources:
  - name: orders
    topic: {prefix}orders
    columns: [order_id, customer, amount, currency, order_version]
    options: {{decimal-encoding: text}}
sink:
  topic: {prefix}{group}.out
state:
  dir: {state}
pipeline:
  tasks: per-partition
  status-interval-s: 0
  num-standby-replicas: {standby}
"""


def config(group, instance, standby=0):
    d = os.path.join(work, group + "-" + instance)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "widen.yaml")
    with open(path, "w") as f:
        f.write(CONFIG.format(brokers=a.brokers, group=prefix + group, instance=instance, prefix=prefix,
                              state=os.path.join(d, "state"), standby=standby))
    return path


def start(cfg, idle_ms, name):
    log = open(os.path.join(work, name + ".log"), "w")
    env = dict(os.environ, WIDEN_BROKERS=a.brokers)
    p = subprocess.Popen([a.widen, "run", "--config", cfg, "--max-idle-ms", str(idle_ms)], stderr=log, env=env)
    p.logpath = log.name
    p.t0 = time.time()
    return p


def stamp(line):
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z", line)
    return datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp() if m else None


def lines(p):
    with open(p.logpath) as f:
        return f.read().splitlines()


def wait_for(p, pattern, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if any(re.search(pattern, l) for l in lines(p)):
            return True
        time.sleep(0.2)
    return False


RESULTS = {}


def result(name, value, unit):
    """Keeps a figure (printed at the end as one RESULT line of key=value, for bench/median.py)."""
    RESULTS[name + "_" + unit.replace("/", "_per_")] = value
    print("%s %.3f %s" % (name, value, unit), file=sys.stderr, flush=True)


# 1. input and one process building the table
t = time.time()
subprocess.run([a.widen, "produce", "--generate", "--brokers", a.brokers, "--streams", "orders", "--keys",
                str(a.keys), "--records", str(records), "--topic-prefix", prefix, "--late-ratio", "0.05"],
               check=True, stdout=subprocess.DEVNULL)
print("produced %d records in %.1f s" % (records, time.time() - t), file=sys.stderr)
cfg_a = config("g1", "a")
pa = start(cfg_a, 3000, "build")
pa.wait()
summary = [l for l in lines(pa) if "summary:" in l][-1]
rate1 = float(re.search(r"([0-9.]+) records/s while input flowed", summary).group(1))
print(summary, file=sys.stderr)

# 2. a second process joins with no state: its tasks are restored from the changelog topic
pa = start(cfg_a, 120000, "restore-a")
assert wait_for(pa, r"assigned \d+ partition", 60)
time.sleep(2)
cfg_b = config("g1", "b")
pb = start(cfg_b, 120000, "restore-b")
assert wait_for(pb, r"task \d+ restored from", 300), "no restore in %s" % pb.logpath
time.sleep(3)
rec = secs = 0.0
first_assign = last_restore = None
for l in lines(pb):
    m = re.search(r"task \d+ restored from \S+: (\d+) records in ([0-9.]+) s", l)
    if m:
        rec += int(m.group(1))
        secs = max(secs, float(m.group(2)))  # the tasks are restored together
        last_restore = stamp(l)
    if first_assign is None and re.search(r"assigned \d+ partition", l):
        first_assign = stamp(l)
result("restore_records", rec, "records")
result("restore_rate", rec / secs if secs else 0, "records/s")
result("move_without_standby", last_restore - first_assign, "s")
for p in (pa, pb):
    p.send_signal(signal.SIGTERM)
    p.wait()

# 3. standby copies, then a kill: the survivor catches the killed one's tasks up from its copies
cfg_a2, cfg_b2 = config("g1", "a", 1), config("g1", "b", 1)
pa = start(cfg_a2, 120000, "standby-a")
pb = start(cfg_b2, 120000, "standby-b")
time.sleep(8)  # both joined; each tails the other's changelog partitions
# warm: B's standby has read the changelog to its end
assert wait_for(pb, r"standby copies are up to date", 600), "B's copies never caught up (%s)" % pb.logpath
time.sleep(2)
pa.send_signal(signal.SIGKILL)
pa.wait()
kill_t = time.time()
TASK_LINE = r"task \d+ (caught up \(standby copy\)|restored) from \S+: (\d+) records"
assert wait_for(pb, TASK_LINE, 120), "no take-over in %s" % pb.logpath
time.sleep(3)
assigns = [stamp(l) for l in lines(pb) if re.search(r"assigned \d+ partition", l)]
takeover = [l for l in lines(pb) if re.search(TASK_LINE, l) and stamp(l) > kill_t - 1]
caught = sum(int(re.search(TASK_LINE, l).group(2)) for l in takeover)
if any("restored from" in l for l in takeover):
    print("warning: some tasks were restored, not caught up from a copy", file=sys.stderr)
last = max(stamp(l) for l in takeover)
after = [s for s in assigns if s and s > kill_t - 1]
result("move_with_standby", last - after[0], "s")
result("standby_catchup_records", caught, "records")
result("takeover_after_kill", last - kill_t, "s")
pb.send_signal(signal.SIGTERM)
pb.wait()

# 4. throughput of 1, 2, 3 processes from empty state over the same input
result("throughput_1", rate1, "records/s")
if not a.skip_throughput:
    for n in (2, 3):
        procs = [start(config("t%d" % n, "m%d" % i), 5000, "tp%d-%d" % (n, i)) for i in range(n)]
        for p in procs:
            p.wait()
        # each process's busy time (its records / its rate while input flowed); they start
        # together, so the group's throughput is the total over the longest of them
        total, longest = 0, 0.0
        for p in procs:
            s = [l for l in lines(p) if "summary:" in l][-1]
            n_in = int(re.search(r"summary: (\d+) Kafka records in", s).group(1))
            r = float(re.search(r"([0-9.]+) records/s while input flowed", s).group(1))
            total += n_in
            if r > 0:
                longest = max(longest, n_in / r)
        result("throughput_%d" % n, total / longest if longest else 0, "records/s")
print("logs in %s" % work, file=sys.stderr)
print("RESULT " + " ".join("%s=%.3f" % kv for kv in RESULTS.items()), flush=True)
