#!/usr/bin/env python3
# tests/chaos/source_keys_gen.py ORDERS SEED: the input of tests/chaos/source_keys, written to
# orders.jsonl and payments.jsonl in the working directory as `widen produce --file` lines
# ({"key":K,"value":V}). Orders (keyed order_id, full before images, 0-3 updates each) and
# payments keyed by their own payment_id as PostgreSQL sends them with REPLICA IDENTITY DEFAULT:
# updates without a before image, some moving the payment to a new order no other record touches,
# deletes whose before image holds payment_id only. One version counter over all records (order_ver,
# ver), each entity's records in order, the entities interleaved at random (seeded), so each
# key's column groups pass through the same values whatever the interleaving of the topics.
import json, random, sys
N = int(sys.argv[1]); seed = int(sys.argv[2]); random.seed(seed)
ver = [0]
def v():
    ver[0] += 1; return ver[0]
streams = []  # list of per-entity event lists (each a list of (topic, key, value))
fresh = [N + 1]
for i in range(1, N + 1):
    ev = []
    cust = "c%d" % i
    row = {"order_id": i, "customer": cust}
    ev.append(("orders", {"order_id": i}, {"before": None, "after": dict(row), "op": "c"}))
    for _ in range(random.randint(0, 3)):
        new = dict(row, customer="%s-%d" % (cust, random.randint(0, 999)))
        ev.append(("orders", {"order_id": i}, {"before": dict(row), "after": dict(new), "op": "u"}))
        row = new
    streams.append(ev)
    if random.random() < 0.85:
        pid = 100000 + i
        pev = []
        prow = {"payment_id": pid, "order_id": i, "amount": random.randint(1, 10**6), "method": random.choice(["card", "cash", "wire"])}
        pev.append(("payments", {"payment_id": pid}, {"before": None, "after": dict(prow), "op": "c"}))
        for _ in range(random.randint(0, 3)):
            prow = dict(prow, amount=random.randint(1, 10**6))
            if random.random() < 0.15:
                prow["order_id"] = fresh[0]; fresh[0] += 1   # a move to an order no one else touches
            pev.append(("payments", {"payment_id": pid}, {"before": None, "after": dict(prow), "op": "u"}))
        if random.random() < 0.15:
            pev.append(("payments", {"payment_id": pid}, {"before": {"payment_id": pid}, "after": None, "op": "d"}))
        streams.append(pev)
# interleave, keeping each entity's order; versions assigned in emission order
out = {"orders": [], "payments": []}
pos = [0] * len(streams)
last = [None] * len(streams)  # per entity: the version of its previous record
live = list(range(len(streams)))
while live:
    k = random.randrange(len(live)); s = live[k]
    t, key, val = streams[s][pos[s]]
    vv = v()
    field = "order_ver" if t == "orders" else "ver"
    if val["after"] is not None: val["after"][field] = vv
    if t == "orders" and val["before"] is not None: val["before"][field] = last[s]
    last[s] = vv
    val["ts_ms"] = 1700000000000 + vv; val["source"] = {"ts_ms": 1700000000000 + vv}
    out[t].append(json.dumps({"key": key, "value": val}))
    pos[s] += 1
    if pos[s] == len(streams[s]): live.pop(k)
for t in out:
    with open(t + ".jsonl", "w") as f: f.write("\n".join(out[t]) + "\n")
print(len(out["orders"]), len(out["payments"]))
