#!/usr/bin/env python3
"""A real Debezium pipeline end to end: PostgreSQL (scripts/postgres) -> Debezium's PostgreSQL source
connector on Kafka Connect (scripts/connect) -> Kafka -> widen -> Kafka -> Debezium's JDBC sink
connector -> PostgreSQL, checked row by row against the SQL join computed in PostgreSQL.

  pipeline.py SCENARIO     (scenarios: see SCENARIOS below; `pipeline.py list` lists them)

The `shop` schema: orders (order_id pk), payments and shipments (own ids, an order_id column, at
most one per order, a *_version column each). A snapshot phase (rows present before the source
connector starts), then rounds of inserts, multi-column updates, moves of a payment to another
order, deletes and transactions over the three tables. widen's output (sink.schemas-enable: true)
is read read_committed from the beginning and folded by key (the last image per key, a delete
removes it) and must equal the SQL join; then the JDBC sink (primary.key.mode=record_key,
delete.enabled=true, JsonConverter schemas.enable=true) writes it into a table of the same database,
which must equal the SQL join too. With `kill`, widen is SIGKILLed in the middle and restarted.

Environment: WIDEN_BIN (the widen binary), WIDEN_TEST_BROKERS, WIDEN_TEST_PG_PORT (or PG_PORT,
default 15432), WIDEN_TEST_CONNECT_PORT (or CONNECT_PORT, default 18083), DEBEZIUM_ROWS (orders of the snapshot, default 200).
The services must be running (tests/debezium/services start); each scenario uses a database
and topics of its own, dropped at its start.
"""
import base64
import decimal
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIDEN = os.environ.get("WIDEN_BIN", os.path.join(REPO, "build-san", "widen"))
BROKERS = os.environ.get("WIDEN_TEST_BROKERS", "127.0.0.1:9092")
PG_PORT = os.environ.get("WIDEN_TEST_PG_PORT", os.environ.get("PG_PORT", "15432"))
CONNECT = "http://127.0.0.1:%s" % os.environ.get("WIDEN_TEST_CONNECT_PORT", os.environ.get("CONNECT_PORT", "18083"))
NROWS = int(os.environ.get("DEBEZIUM_ROWS", "200"))
PGUSER, PGPASS = os.environ.get("PG_USER", "widen"), os.environ.get("PG_PASSWORD", "widen-secret")
TIMEOUT = float(os.environ.get("DEBEZIUM_TIMEOUT", "180"))

# name: (replica identity, keyed by order_id, source schemas.enable, pipeline.tasks, TOAST rows, kill widen)
SCENARIOS = {
    "full_order_key": ("FULL", True, False, "single", False, True),
    "full_order_key_schemas": ("FULL", True, True, "single", False, False),
    "full_own_id": ("FULL", False, False, "single", False, False),
    "full_per_partition": ("FULL", True, False, "per-partition", False, True),
    # PostgreSQL's and Debezium's defaults: the tables with REPLICA IDENTITY DEFAULT get their own
    # primary-key in widen's config (docs/source-keys.md); TOAST placeholders are not carried
    # (unavailable.value.placeholder's default); schemas.enable=true keys are not co-partitioned
    # and repartition: auto forwards the misplaced records (docs/debezium.md)
    "defaults_identity": ("DEFAULT", False, True, "single", False, False),
    "defaults_toast": ("ORDERS_DEFAULT", True, True, "single", True, False),
    "defaults_per_partition": ("FULL", True, True, "per-partition", False, True),
    # orders with REPLICA IDENTITY DEFAULT and TOAST placeholders but WITHOUT its own primary-key:
    # keyed by the wide key, its deletes' before images (the key and Debezium's defaults for the
    # NOT NULL columns) are read as the key alone, and an update without before image keeps the
    # TOAST value it did not carry (docs/source-keys.md)
    "defaults_orders_no_key": ("ORDERS_DEFAULT_NO_KEY", True, True, "single", True, False),
}

T0 = time.time()


def log(msg):
    print("[%6.1f s] %s" % (time.time() - T0, msg), flush=True)


def die(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def psql(db, sql, check=True):
    env = dict(os.environ, PGPASSWORD=PGPASS)
    r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", PG_PORT, "-U", PGUSER,
                        "-d", db, "-tA", "-f", "-"], env=env, input=sql, capture_output=True, text=True)
    if check and r.returncode != 0:
        die("psql %s: %s\n%s" % (db, sql[:300], r.stderr))
    return r.stdout


def rest(method, path, body=None, ok=(200, 201, 204, 404)):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(CONNECT + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    for attempt in range(20):
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                txt = r.read().decode()
                return r.status, (json.loads(txt) if txt else None)
        except urllib.error.HTTPError as e:
            txt = e.read().decode()
            if e.code == 409 and attempt < 19:  # "rebalance in progress": the worker is busy, again
                time.sleep(0.5)
                continue
            if e.code not in ok:
                die("Connect REST %s %s: HTTP %d %s" % (method, path, e.code, txt))
            return e.code, txt
        except urllib.error.URLError as e:  # refused while the worker is busy: again, then fail
            if attempt == 19:
                die("Connect REST %s %s: %s" % (method, path, e))
            time.sleep(0.5)


def wait_running(name, secs=90):
    deadline = time.time() + secs
    st = None
    while time.time() < deadline:
        code, st = rest("GET", "/connectors/%s/status" % name)
        if code == 200:
            states = [st["connector"]["state"]] + [t["state"] for t in st["tasks"]]
            if "FAILED" in states:
                die("connector %s FAILED: %s" % (name, json.dumps(st)[:3000]))
            if st["tasks"] and all(s == "RUNNING" for s in states):
                return
        time.sleep(0.5)
    die("connector %s not RUNNING within %d s: %s" % (name, secs, st))


def wait_until(what, fn, secs=TIMEOUT):
    """Polls fn() -> (done, detail) until done; fails with the last detail."""
    deadline = time.time() + secs
    detail = None
    while time.time() < deadline:
        done, detail = fn()
        if done:
            return
        time.sleep(1)
    die("%s within %d s: %s" % (what, secs, detail))


# ---- the shop schema and its workload ----------------------------------------------------------

SCHEMA = """
DROP SCHEMA IF EXISTS shop CASCADE;
CREATE SCHEMA shop;
CREATE SEQUENCE shop.v;  -- every *_version: increasing per order across payments moved in and replaced
CREATE TABLE shop.orders (order_id bigint PRIMARY KEY, customer text NOT NULL, amount numeric(12,2),
  created_at timestamp(3), note text, order_version bigint NOT NULL);
CREATE TABLE shop.payments (payment_id bigint PRIMARY KEY, order_id bigint NOT NULL UNIQUE, method text,
  paid numeric(12,2), paid_on date, payment_version bigint NOT NULL);
CREATE TABLE shop.shipments (shipment_id bigint PRIMARY KEY, order_id bigint NOT NULL UNIQUE, carrier text,
  shipped_at timestamp(3), shipment_version bigint NOT NULL);
ALTER TABLE shop.orders REPLICA IDENTITY {ri_orders};
ALTER TABLE shop.payments REPLICA IDENTITY {ri};
ALTER TABLE shop.shipments REPLICA IDENTITY {ri};
"""

# the SQL answer, in the text forms that fold() produces from widen's output
JOIN = """
SELECT json_agg(json_build_array(o.order_id, o.customer, o.amount::text,
         (extract(epoch FROM o.created_at) * 1000)::bigint, md5(o.note), o.order_version,
         p.method, p.paid::text, (p.paid_on - date '1970-01-01'), p.payment_version,
         s.carrier, (extract(epoch FROM s.shipped_at) * 1000)::bigint, s.shipment_version))
FROM {o} o LEFT JOIN {p} p USING (order_id) LEFT JOIN {s} s USING (order_id)
"""
COLS = ["order_id", "customer", "amount", "created_at", "note", "order_version", "method", "paid", "paid_on",
        "payment_version", "carrier", "shipped_at", "shipment_version"]


class Workload:
    def __init__(self, db, toast, seed):
        self.db, self.toast = db, toast
        self.rnd = random.Random(seed)
        self.next_order, self.next_pay, self.next_ship = 1, 100001, 500001

    def note(self):
        if self.toast and self.rnd.random() < 0.3:
            # incompressible text beyond TOAST_TUPLE_THRESHOLD: stored out of line
            return "'%s'" % "".join(self.rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6000))
        return "'n%d'" % self.rnd.randrange(1000)

    def ts(self):
        # 1900 .. 2099, with milliseconds; some before 1970
        return "timestamp '1900-01-01' + interval '%d milliseconds'" % self.rnd.randrange(0, 6311433600000)

    def insert_orders(self, n, with_children=0.7):
        out = []
        for _ in range(n):
            oid = self.next_order
            self.next_order += 1
            out.append("INSERT INTO shop.orders VALUES (%d, 'c%d é\"\\\\', %d.%02d, %s, %s, nextval('shop.v'));"
                       % (oid, self.rnd.randrange(100), self.rnd.randrange(-500, 100000), self.rnd.randrange(100),
                          self.ts(), self.note()))
            if self.rnd.random() < with_children:
                out.append("INSERT INTO shop.payments VALUES (%d, %d, '%s', %d.%02d, date '1969-12-31' + %d, nextval('shop.v'));"
                           % (self.next_pay, oid, self.rnd.choice(["card", "cash", "wire"]),
                              self.rnd.randrange(0, 99999), self.rnd.randrange(100), self.rnd.randrange(-400, 40000)))
                self.next_pay += 1
            if self.rnd.random() < with_children * 0.8:
                out.append("INSERT INTO shop.shipments VALUES (%d, %d, '%s', %s, nextval('shop.v'));"
                           % (self.next_ship, oid, self.rnd.choice(["dhl", "ups", "post"]), self.ts()))
                self.next_ship += 1
        return out

    def ids(self, sql):
        return [int(x) for x in psql(self.db, sql).split()]

    def round(self):
        """One round of changes, as a list of transactions (lists of statements)."""
        txs = []
        orders = self.ids("SELECT order_id FROM shop.orders ORDER BY order_id")
        pays = self.ids("SELECT payment_id FROM shop.payments ORDER BY payment_id")
        ships = self.ids("SELECT shipment_id FROM shop.shipments ORDER BY shipment_id")
        k = max(1, len(orders) // 10)
        for oid in self.rnd.sample(orders, k):  # multi-column updates (not touching note: TOAST)
            txs.append(["UPDATE shop.orders SET customer = customer || 'u', amount = amount + 1.25, "
                        "created_at = created_at + interval '1 day', order_version = nextval('shop.v') "
                        "WHERE order_id = %d;" % oid])
        for pid in self.rnd.sample(pays, max(1, len(pays) // 10)):
            txs.append(["UPDATE shop.payments SET method = 'm' || (payment_version %% 7), paid = paid * 2, "
                        "paid_on = paid_on + 1, payment_version = nextval('shop.v') WHERE payment_id = %d;" % pid])
        for sid in self.rnd.sample(ships, max(1, len(ships) // 12)):
            txs.append(["UPDATE shop.shipments SET carrier = upper(carrier), shipped_at = shipped_at + "
                        "interval '1 hour', shipment_version = nextval('shop.v') WHERE shipment_id = %d;" % sid])
        # transactions over the three tables
        for oid in self.rnd.sample(orders, max(1, len(orders) // 15)):
            txs.append(["UPDATE shop.orders SET amount = amount - 0.5, order_version = nextval('shop.v') "
                        "WHERE order_id = %d;" % oid,
                        "UPDATE shop.payments SET paid = paid + 0.5, payment_version = nextval('shop.v') "
                        "WHERE order_id = %d;" % oid,
                        "UPDATE shop.shipments SET carrier = carrier || '+', shipment_version = nextval('shop.v') "
                        "WHERE order_id = %d;" % oid])
        # moves of a payment to an order that has none
        for pid in self.rnd.sample(pays, max(1, len(pays) // 40)):
            txs.append(["UPDATE shop.payments SET order_id = (SELECT o.order_id FROM shop.orders o WHERE NOT EXISTS "
                        "(SELECT 1 FROM shop.payments p WHERE p.order_id = o.order_id) ORDER BY o.order_id DESC "
                        "LIMIT 1), payment_version = nextval('shop.v') WHERE payment_id = %d AND EXISTS "
                        "(SELECT 1 FROM shop.orders o WHERE NOT EXISTS (SELECT 1 FROM shop.payments p "
                        "WHERE p.order_id = o.order_id));" % pid])
        # deletes: a payment or shipment alone, or an order with its children in one transaction
        for pid in self.rnd.sample(pays, max(1, len(pays) // 25)):
            txs.append(["DELETE FROM shop.payments WHERE payment_id = %d;" % pid])
        for oid in self.rnd.sample(orders, max(1, len(orders) // 20)):
            txs.append(["DELETE FROM shop.payments WHERE order_id = %d;" % oid,
                        "DELETE FROM shop.shipments WHERE order_id = %d;" % oid,
                        "DELETE FROM shop.orders WHERE order_id = %d;" % oid])
        # inserts of new orders with children, one transaction each
        for _ in range(max(1, len(orders) // 10)):
            txs.append(self.insert_orders(1, 0.9))
        # payments/shipments added to existing orders
        txs.append(["INSERT INTO shop.payments SELECT %d + row_number() OVER (), o.order_id, 'late', 1.00, "
                    "date '2038-01-19', nextval('shop.v') FROM shop.orders o WHERE NOT EXISTS (SELECT 1 FROM shop.payments p "
                    "WHERE p.order_id = o.order_id) AND o.order_id %% 3 = 0;" % (self.next_pay + 50000)])
        self.next_pay += 100000
        self.rnd.shuffle(txs)
        return txs

    def run(self, txs):
        # one psql call: every transaction in its own BEGIN/COMMIT
        sql = "\n".join("BEGIN;\n%s\nCOMMIT;" % "\n".join(t) for t in txs)
        psql(self.db, sql)


# ---- widen's output, folded ----------------------------------------------------------------------

def connect_value(schema, v):
    """A payload value of a JsonConverter field schema in the forms the SQL query gives."""
    if v is None:
        return None
    name = schema.get("name")
    if name == "org.apache.kafka.connect.data.Decimal":
        raw = base64.b64decode(v)
        unscaled = int.from_bytes(raw, "big", signed=True)
        scale = int(schema["parameters"]["scale"])
        return str(decimal.Decimal(unscaled).scaleb(-scale).quantize(decimal.Decimal(1).scaleb(-scale)))
    return v


def fold(topic):
    """Key -> row (list in COLS order) of widen's output read read_committed, or an error text."""
    r = subprocess.run(["kcat", "-C", "-b", BROKERS, "-t", topic, "-o", "beginning", "-e", "-q", "-J",
                        "-X", "isolation.level=read_committed"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, "kcat: " + r.stderr[-500:]
    rows, n = {}, 0
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        n += 1
        key = json.loads(m["key"])
        if "schema" not in key or "payload" not in key:
            return None, "key without the Connect envelope: %s" % m["key"][:200]
        k = key["payload"]["order_id"]
        if m["payload"] is None:
            rows.pop(k, None)
            continue
        val = json.loads(m["payload"])
        if set(val) != {"schema", "payload"}:
            return None, "value without the Connect envelope: %s" % m["payload"][:200]
        p = val["payload"]
        fields = {f["field"]: f for f in val["schema"]["fields"]}
        if p["op"] == "d":
            rows.pop(k, None)
            continue
        vs = {f["field"]: f for f in fields["after"]["fields"]}
        a = p["after"]
        rows[k] = [connect_value(vs[c], a[c]) for c in COLS]
    return rows, n


def output_past(topic, n):
    """(done, detail) for wait_until: widen's output holds more than n messages. The output topic
    may not exist yet when widen has just started (kcat fails): not yet, with kcat's words."""
    rows, got = fold(topic)
    if rows is None:
        return False, got
    return got > n, "%d output messages" % got


def sql_join(db, o="shop.orders", p="shop.payments", s="shop.shipments"):
    out = psql(db, JOIN.format(o=o, p=p, s=s)).strip()
    return {r[0]: r for r in json.loads(out or "[]")}


def hash_notes(rows):
    import hashlib
    for r in rows.values():
        if r[4] is not None:
            r[4] = hashlib.md5(r[4].encode()).hexdigest()
    return rows


# the column groups of the three streams (COLS indexes) and their sequence columns
GROUPS = [((1, 2, 3, 4), 5), ((6, 7, 8), 9), ((10, 11), 12)]


def normalize(rows):
    """widen's partial-update semantics (Paimon's) against a join driven by orders: a retracted
    stream keeps its sequence column (the group's data columns are NULL), and a retraction that
    arrives from another topic after the order removed the row leaves a row of sequence values
    only. Such sequence values are not data: they count as NULL, and a row without the order's
    columns (customer is NOT NULL in shop.orders) as absent."""
    for k in list(rows):
        r = rows[k]
        if r[1] is None:
            del rows[k]
            continue
        for data, seq in GROUPS:
            if all(r[i] is None for i in data):
                r[seq] = None
    return rows


def diff(want, got, label="widen"):
    bad = []
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            bad.append("order %s: sql %s %s %s" % (k, want.get(k), label, got.get(k)))
    return bad


# ---- widen ---------------------------------------------------------------------------------------

def widen_config(prefix, topic, source_keys, schemas, tasks, state):
    """widen's configuration as docs/debezium.md and docs/source-keys.md tell a user to write it:
    each table in source_keys (one without full before images: REPLICA IDENTITY DEFAULT) gets its
    own primary key (`primary-key: [payment_id]`), so that its deletes and updates are derived from
    its stored rows: payments' and shipments' deletes carry no order_id (Debezium writes 0 for the
    NOT NULL column). orders, keyed by the wide key, reads the same either way (its delete's
    defaults are not carried: the stored row's order_version orders it; scenario
    defaults_orders_no_key runs it without its primary key). Nothing else depends on Debezium's
    settings (TOAST placeholders and schemas.enable=true keys are taken care of by the defaults:
    unavailable.value.placeholder, repartition: auto)."""
    src_fmt = ""
    if not schemas:
        # schemaless: what the envelope schema would have said
        src_fmt = "\n    options: {decimal-encoding: base64, timestamp-unit: millis}"
    own = dict(orders="order_id", payments="payment_id", shipments="shipment_id")
    pk = {t: ("\n    primary-key: [%s]" % own[t] if t in source_keys else "") for t in own}
    return """kafka:
  bootstrap.servers: %(brokers)s
  group.id: %(prefix)s-widen
table:
  name: orders_wide
  schema:
    - {name: order_id, type: BIGINT NOT NULL}
    - {name: customer, type: STRING}
    - {name: amount, type: "DECIMAL(12,2)"}
    - {name: created_at, type: TIMESTAMP(3)}
    - {name: note, type: STRING}
    - {name: order_version, type: BIGINT}
    - {name: method, type: STRING}
    - {name: paid, type: "DECIMAL(12,2)"}
    - {name: paid_on, type: DATE}
    - {name: payment_version, type: BIGINT}
    - {name: carrier, type: STRING}
    - {name: shipped_at, type: TIMESTAMP(3)}
    - {name: shipment_version, type: BIGINT}
  primary-key: [order_id]
  options:
    merge-engine: partial-update
    fields.order_version.sequence-group: customer,amount,created_at,note
    fields.payment_version.sequence-group: method,paid,paid_on
    fields.shipment_version.sequence-group: carrier,shipped_at
    partial-update.remove-record-on-sequence-group: order_version
sources:
  - name: orders
    topic: %(prefix)s.shop.orders
    format: debezium-json%(pk_orders)s
    columns: {order_id: order_id, customer: customer, amount: amount, created_at: created_at, note: note,
              order_version: order_version}%(opts)s
  - name: payments
    topic: %(prefix)s.shop.payments
    format: debezium-json%(pk_payments)s
    columns: {order_id: order_id, method: method, paid: paid, paid_on: paid_on, payment_version: payment_version}%(opts)s
  - name: shipments
    topic: %(prefix)s.shop.shipments
    format: debezium-json%(pk_shipments)s
    columns: {order_id: order_id, carrier: carrier, shipped_at: shipped_at, shipment_version: shipment_version}%(opts)s
sink:
  topic: %(topic)s
  format: debezium-json
  key-format: json
  schemas-enable: true
state:
  dir: %(state)s
pipeline:
  tasks: %(tasks)s
  status-interval-s: 0
""" % dict(brokers=BROKERS, prefix=prefix, topic=topic, opts=src_fmt, tasks=tasks, state=state,
                  pk_orders=pk["orders"], pk_payments=pk["payments"], pk_shipments=pk["shipments"])


class Widen:
    def __init__(self, cfg, logpath):
        self.cfg, self.logpath, self.proc = cfg, logpath, None

    def start(self):
        self.logf = open(self.logpath, "a")
        self.proc = subprocess.Popen([WIDEN, "run", self.cfg], stdout=self.logf, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, LSAN_OPTIONS="suppressions=%s/tests/lsan.supp" % REPO))
        log("widen started (pid %d)" % self.proc.pid)

    def check_alive(self):
        if self.proc.poll() is not None:
            die("widen exited with %s; its log:\n%s" % (self.proc.returncode, open(self.logpath).read()[-4000:]))

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        log("widen SIGKILLed (pid %d)" % self.proc.pid)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                die("widen did not stop within 60 s of SIGTERM")
            rc = self.proc.returncode
            text = open(self.logpath).read()
            if rc != 0 or "AddressSanitizer" in text or "runtime error" in text or "LeakSanitizer" in text:
                die("widen stopped with %d; its log:\n%s" % (rc, text[-4000:]))


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in list(SCENARIOS) + ["list"]:
        print("usage: pipeline.py SCENARIO|list; scenarios: %s" % ", ".join(SCENARIOS), file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "list":
        print("\n".join(SCENARIOS))
        return
    name = sys.argv[1]
    ri, order_key, schemas, tasks, toast, kill = SCENARIOS[name]
    run = "%x" % (int(time.time() * 1000) % 0xffffffff)
    prefix = "wdtest.dbz_%s_%s" % (name, run)
    db = "dbz_%s" % name
    slot = "wd_%s" % name
    log("scenario %s: REPLICA IDENTITY %s, keyed by %s, schemas.enable=%s, tasks %s, TOAST %s, SIGKILL %s, "
        "%d orders" % (name, ri, "order_id" if order_key else "own id", str(schemas).lower(), tasks, toast, kill,
                       NROWS))
    work = tempfile.mkdtemp(prefix="wd-dbz-%s-" % name)
    log("widen's config, state and log: %s (removed when the scenario passes)" % work)
    src_name, sink_name = "src-%s" % name, "sink-%s" % name
    rest("DELETE", "/connectors/%s" % src_name)
    rest("DELETE", "/connectors/%s" % sink_name)
    # a fresh database: drop the slot of an earlier run first (a slot pins its database)
    for _ in range(120):
        active = psql("postgres", "SELECT active FROM pg_replication_slots WHERE slot_name = '%s'" % slot).strip()
        if active == "":
            break
        if active == "f":
            psql("postgres", "SELECT pg_drop_replication_slot('%s')" % slot)
            break
        time.sleep(0.5)
    psql("postgres", "DROP DATABASE IF EXISTS %s WITH (FORCE)" % db)
    psql("postgres", "CREATE DATABASE %s" % db)
    # ORDERS_DEFAULT: orders with PostgreSQL's default (its key only in a delete's before image, and
    # unchanged TOAST values as Debezium's placeholder), payments and shipments FULL
    orders_default = ri.startswith("ORDERS_DEFAULT")
    psql(db, SCHEMA.format(ri_orders="DEFAULT" if orders_default else ri, ri="FULL" if orders_default else ri))
    wl = Workload(db, toast, seed=sum(name.encode()))
    wl.run([wl.insert_orders(NROWS)])  # the snapshot phase: present before the connector starts
    log("snapshot rows: %s" % psql(db, "SELECT (SELECT count(*) FROM shop.orders), (SELECT count(*) FROM "
                                       "shop.payments), (SELECT count(*) FROM shop.shipments)").strip())

    conv = "true" if schemas else "false"
    src = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1", "database.port": PG_PORT, "database.user": PGUSER,
        "database.password": PGPASS, "database.dbname": db,
        "topic.prefix": prefix,
        "schema.include.list": "shop",
        "slot.name": slot, "publication.name": "wd_pub_%s" % name, "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": conv,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": conv,
    }
    if order_key:
        src["message.key.columns"] = "shop.payments:order_id;shop.shipments:order_id"
    rest("PUT", "/connectors/%s/config" % src_name, src)
    wait_running(src_name)
    log("source connector %s RUNNING" % src_name)

    # the source topics exist once Debezium's snapshot wrote them (per-partition tasks read their
    # partition counts at start)
    def topics_exist():
        r = subprocess.run(["kcat", "-L", "-b", BROKERS, "-m", "10"], capture_output=True, text=True)
        missing = [t for t in ("orders", "payments", "shipments")
                   if 'topic "%s.shop.%s"' % (prefix, t) not in r.stdout]
        return not missing, "missing: %s" % missing
    wait_until("Debezium's snapshot creates the three topics", topics_exist, 90)

    topic = prefix + ".orders_wide"
    cfg = os.path.join(work, "widen.yaml")
    with open(cfg, "w") as f:
        # the tables without full before images: their own primary keys
        source_keys = {"DEFAULT": ["orders", "payments", "shipments"], "ORDERS_DEFAULT": ["orders"]}.get(ri, [])
        f.write(widen_config(prefix, topic, source_keys, schemas, tasks, os.path.join(work, "state")))
    w = Widen(cfg, os.path.join(work, "widen.log"))
    w.start()
    try:
        for rnd in range(4):
            wl.run(wl.round())
            log("round %d written" % (rnd + 1))
            w.check_alive()
            if kill and rnd == 1:
                # let widen commit part of it, then kill it in the middle
                wait_until("widen writes output", lambda: output_past(topic, NROWS // 2), 90)
                w.kill()
                w.start()

        want = sql_join(db)
        log("SQL join: %d rows" % len(want))

        def compare():
            w.check_alive()
            got, n = fold(topic)
            if got is None:
                return False, n
            normalize(hash_notes(got))
            bad = diff(want, got)
            return not bad, "%d of %d rows differ (%d messages); first: %s" % (len(bad), len(want), n,
                                                                             "\n  ".join(bad[:5]))
        wait_until("widen's folded output equals the SQL join", compare)
        got, n = fold(topic)
        rows_out = len(got)
        got = normalize(hash_notes(got))
        log("widen's output: %d messages, %d rows folded (%d with only sequence values of retracted streams), "
            "all equal to the SQL join" % (n, rows_out, rows_out - len(got)))

        # downstream: Debezium's JDBC sink writes the wide table into PostgreSQL
        sink = {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
            "tasks.max": "1",
            "topics": topic,
            "connection.url": "jdbc:postgresql://127.0.0.1:%s/%s" % (PG_PORT, db),
            "connection.username": PGUSER, "connection.password": PGPASS,
            "insert.mode": "upsert", "delete.enabled": "true", "primary.key.mode": "record_key",
            "schema.evolution": "basic", "collection.name.format": "orders_wide",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "true",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
            "consumer.override.isolation.level": "read_committed",
            "consumer.override.auto.offset.reset": "earliest",
        }
        rest("PUT", "/connectors/%s/config" % sink_name, sink)
        wait_running(sink_name)
        log("JDBC sink connector %s RUNNING" % sink_name)

        def sink_equal():
            code, st = rest("GET", "/connectors/%s/status" % sink_name)
            if code == 200 and any(t["state"] == "FAILED" for t in st["tasks"]):
                die("JDBC sink task FAILED: %s" % json.dumps(st)[:3000])
            if psql(db, "SELECT to_regclass('public.orders_wide') IS NOT NULL").strip() != "t":
                return False, "no table public.orders_wide yet"
            # the sink table holds the wide rows: read each column from it directly
            out = psql(db, """SELECT json_agg(json_build_array(order_id, customer, amount::text,
                     (extract(epoch FROM created_at) * 1000)::bigint, md5(note), order_version, method,
                     paid::text, (paid_on - date '1970-01-01'), payment_version, carrier,
                     (extract(epoch FROM shipped_at) * 1000)::bigint, shipment_version)) FROM public.orders_wide""")
            got = normalize({r[0]: r for r in json.loads(out.strip() or "[]")})
            bad = diff(want, got, "jdbc-sink")
            return not bad, "%d of %d rows differ; first: %s" % (len(bad), len(want), "\n  ".join(bad[:5]))
        wait_until("the JDBC sink's table equals the SQL join", sink_equal)
        cols = psql(db, "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM "
                        "information_schema.columns WHERE table_name = 'orders_wide'").strip()
        log("JDBC sink table public.orders_wide (%s): %d rows, all equal to the SQL join" % (cols, len(want)))
    finally:
        w.stop()
        rest("DELETE", "/connectors/%s" % sink_name)
        rest("DELETE", "/connectors/%s" % src_name)
    shutil.rmtree(work, ignore_errors=True)
    log("PASS %s" % name)


if __name__ == "__main__":
    main()
