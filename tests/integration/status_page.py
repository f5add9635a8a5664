#!/usr/bin/env python3
"""The status page of `widen run` in a real browser (Debian's chromium, headless), driven through
the DevTools protocol with the standard library only (a minimal WebSocket client below).

  status_page.py WIDEN_BIN OUT_DIR        (broker: WIDEN_TEST_BROKERS)

One page stays open while the pipeline changes under it:
  1. widen run (per-partition tasks) takes 40 records: the page shows /status's numbers (records in,
     rows out, commits, every task with its state, every partition's lag);
  2. a record that is no JSON: the page shows the dead letter (its reason's count and the example's
     topic, partition and offset) without a reload;
  3. a second member joins the group: tasks move away from the first, and the page follows (the
     states it shows are those of /status again);
  4. `widen rows` of the first member leaves out the rows of the tasks the second moved on and says
     so (the two members' rows split the keys; --all-tasks prints the old copies too);
and a screenshot is written to OUT_DIR/status_page.png. Exit 0 when all hold, 1 with the reason.
"""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

WIDEN, OUT = sys.argv[1], sys.argv[2]
BROKERS = os.environ.get("WIDEN_TEST_BROKERS")
if not BROKERS:
    sys.exit("WIDEN_TEST_BROKERS is not set: start a broker with scripts/kafka start")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    sys.exit("chromium is not installed (scripts/setup installs it)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fail(msg):
    print("FAIL: " + msg, flush=True)
    raise SystemExit(1)


def http(port, path, timeout=5):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def status(port):
    code, body = http(port, "/status")
    st = json.loads(body) if code == 200 else None
    return st if st and "pipeline" in st else None  # None before the first snapshot


def wait(what, fn, timeout=90):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.25)
    fail("waited %d s for %s" % (timeout, what))


class WebSocket:
    """A WebSocket client (RFC 6455) for the DevTools protocol: text frames, client masking."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise OSError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("websocket handshake: " + head.decode(errors="replace"))
        self.next_id = 0

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("websocket closed")
            buf += chunk
        return buf

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            if b0 & 0x0F == 0x9:  # ping: answer nothing (chromium does not require it)
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def call(self, method, **params):
        self.next_id += 1
        self.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise OSError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})


# What the page shows, read from its DOM (the ids and data- attributes of app/ops/status_page.html).
PAGE_STATE = r"""JSON.stringify({
  recordsIn: document.getElementById('records-in').textContent,
  changesOut: document.getElementById('changes-out').textContent,
  commits: document.getElementById('commits').textContent,
  deadLetters: document.getElementById('dead-letters').textContent,
  ready: document.getElementById('ready').textContent,
  tasks: Array.from(document.querySelectorAll('#tasks tr[data-task]')).map(function (r) {
    return [r.getAttribute('data-task'), r.querySelector('.state').textContent]; }),
  partitions: Array.from(document.querySelectorAll('#partitions tr[data-partition]')).map(function (r) {
    return [r.getAttribute('data-partition'), r.querySelector('.lag').textContent]; }),
  reasons: Array.from(document.querySelectorAll('#reasons tr[data-reason]')).map(function (r) {
    return [r.getAttribute('data-reason'), r.querySelector('.count').textContent]; }),
  examples: Array.from(document.querySelectorAll('#dead-examples tr[data-dead-letter]')).map(function (r) {
    return r.getAttribute('data-dead-letter'); }),
  commitBars: document.querySelectorAll('#commit-plot rect[data-commit]').length,
  banner: getComputedStyle(document.getElementById('banner')).display
})"""


def page_state(ws):
    r = ws.call("Runtime.evaluate", expression=PAGE_STATE, returnByValue=True)
    value = r.get("result", {}).get("value")
    return json.loads(value) if isinstance(value, str) else None  # None while the page loads


def num(text):
    return int(text.replace(",", "")) if text not in ("", "-") else None


def shown_tasks(st):
    """The task rows the page must show for a /status document: id and state text."""
    rows = []
    for t in st["tasks"]:
        text = t["state"] + (" (rebuild %s)" % t["rebuild"] if t.get("rebuild") else "") + \
            ("" if t["owned"] else " (not owned)")
        rows.append([str(t["id"]), text])
    return rows


def matches(ws, port, extra=None):
    """The page shows what /status says (read right after the page, retried while /status moves)."""
    page = page_state(ws)
    st = status(port)
    if not st or not page:
        return None
    tot = st["pipeline"]["totals"]
    ok = (num(page["recordsIn"]) == tot["records_in"] and num(page["changesOut"]) == tot["changes_out"]
          and num(page["commits"]) == tot["commits"] and num(page["deadLetters"]) == st["dead_letters"]["total"]
          and page["tasks"] == shown_tasks(st) and page["banner"] == "none"
          and sorted(p[0] for p in page["partitions"]) ==
          sorted("%s[%d]" % (q["topic"], q["partition"]) for t in st["tasks"] for q in t["partitions"])
          and page["commitBars"] == len(st["commits"]))
    if ok and extra:
        ok = extra(page, st)
    return (page, st) if ok else None


def main():
    tmp = tempfile.mkdtemp(prefix="widen-status-page-")
    procs = []
    try:
        prefix = "wdtest.page%d." % os.getpid()
        port_a, port_b, port_cdp = free_port(), free_port(), free_port()
        cfg = os.path.join(tmp, "a.yaml")
        with open(cfg, "w") as f:
            f.write("""kafka:
  bootstrap.servers: %(b)s
  group.id: %(p)sgroup
  properties:
    session.timeout.ms: 6000
table:
  name: page_wide
  schema:
    - {name: id, type: BIGINT NOT NULL}
    - {name: a, type: STRING}
    - {name: b, type: STRING}
  primary-key: [id]
  options:
    merge-engine: partial-update
sources:
  - {name: sa, topic: %(p)sa, columns: {id: , a: }}
  - {name: sb, topic: %(p)sb, columns: {id: , b: }}
sink:
  topic: %(p)sout
state:
  dir: %(d)s/state-a
pipeline:
  tasks: per-partition
  status-interval-s: 1
metrics:
  listen: 127.0.0.1:%(port)d
""" % {"b": BROKERS, "p": prefix, "d": tmp, "port": port_a})
        with open(cfg) as f:
            text = f.read()
        cfg_b = os.path.join(tmp, "b.yaml")
        with open(cfg_b, "w") as f:
            f.write(text.replace("state-a", "state-b").replace("127.0.0.1:%d" % port_a, "127.0.0.1:%d" % port_b))

        def produce(topic, lines):
            path = os.path.join(tmp, "in.jsonl")
            with open(path, "w") as f:
                f.write("".join(line + "\n" for line in lines))
            subprocess.run([WIDEN, "produce", "--brokers", BROKERS, "--topic", prefix + topic, "--file", path],
                           check=True, capture_output=True)

        produce("a", ['{"op":"c","before":null,"after":{"id":%d,"a":"x%d"}}' % (i, i) for i in range(1, 26)])
        produce("b", ['{"op":"c","before":null,"after":{"id":%d,"b":"y%d"}}' % (i, i) for i in range(1, 16)])
        env = dict(os.environ)
        env.pop("WIDEN_BROKERS", None)
        log_a = open(os.path.join(tmp, "a.log"), "w")
        procs.append(subprocess.Popen([WIDEN, "run", "--config", cfg], stdout=log_a, stderr=log_a, env=env))
        wait("widen A to take the 40 records and be ready",
             lambda: (lambda s: s and s["pipeline"]["totals"]["records_in"] == 40 and s["ready"])(status(port_a)))

        profile = os.path.join(tmp, "chromium")
        chrome = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                                   "--no-first-run", "--disable-background-networking", "--disable-component-update",
                                   "--disable-sync", "--user-data-dir=" + profile, "--window-size=1400,1300",
                                   "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=%d" % port_cdp,
                                   "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(chrome)

        def targets():
            code, body = http(port_cdp, "/json/list")
            return [t for t in json.loads(body) if t.get("type") == "page"] if code == 200 else None
        page = wait("chromium's DevTools endpoint", targets, 60)[0]
        ws = WebSocket(page["webSocketDebuggerUrl"])
        ws.call("Page.enable")
        ws.call("Page.navigate", url="http://127.0.0.1:%d/" % port_a)

        # 1. the page renders what /status says
        page1, st1 = wait("the page to show /status's numbers", lambda: matches(ws, port_a), 60)
        if num(page1["recordsIn"]) != 40 or not page1["tasks"] or page1["ready"] != "ready":
            fail("page after the first records: %s" % page1)
        # the sources' partitions are caught up; a repartition topic nothing was forwarded to yet
        # (`repartition: auto` reads it beside a source read directly) has no lag known: '-'
        if any(p[1] != "0" and not (p[1] == "-" and "-repartition[" in p[0]) for p in page1["partitions"]) or \
                not any(p[1] == "0" for p in page1["partitions"]):
            fail("lag per partition not 0: %s" % page1["partitions"])
        print("page shows %s records in, %d task(s) %s, %d partitions" % (
            page1["recordsIn"], len(page1["tasks"]), sorted(set(t[1] for t in page1["tasks"])),
            len(page1["partitions"])), flush=True)

        # 2. a dead letter appears on the open page
        produce("b", ['{"id":7} this is no JSON'])

        def has_dead_letter(page, st):
            lat = st["dead_letters"]["latest"]
            return (st["dead_letters"]["total"] == 1 and lat and page["reasons"] ==
                    [[k, str(v)] for k, v in sorted(st["dead_letters"]["by_reason"].items())] and
                    page["examples"] == ["%s[%d]@%d" % (e["topic"], e["partition"], e["offset"]) for e in lat])
        page2, st2 = wait("the page to show the dead letter", lambda: matches(ws, port_a, has_dead_letter), 60)
        print("page shows dead letter %s %s" % (page2["reasons"], page2["examples"]), flush=True)
        if not page2["examples"][0].startswith(prefix + "b["):
            fail("the example is not of topic %sb: %s" % (prefix, page2["examples"]))

        # 3. a second member joins: tasks move away from A, and the open page follows
        owned_before = sum(1 for t in st2["tasks"] if t["owned"])
        log_b = open(os.path.join(tmp, "b.log"), "w")
        procs.append(subprocess.Popen([WIDEN, "run", "--config", cfg_b], stdout=log_b, stderr=log_b, env=env))

        def moved(page, st):
            owned = [t for t in st["tasks"] if t["owned"]]
            return 0 < len(owned) < owned_before and all(t["state"] == "RUNNING" for t in owned)
        page3, st3 = wait("tasks to move to the second member and the page to follow",
                          lambda: matches(ws, port_a, moved), 120)
        print("after the second member joined the page shows tasks %s" % page3["tasks"], flush=True)

        # 4. `widen rows` of A leaves out the rows of the tasks B moved on, and says so
        produce("a", ['{"op":"u","before":null,"after":{"id":%d,"a":"z%d"}}' % (i, i) for i in range(1, 26)])

        def settled(port):
            st = status(port)
            return st and st["ready"] and all(q["lag"] <= 0 and (q["end"] < 0 or q["committed"] == q["end"])
                                               for t in st["tasks"] if t["owned"] for q in t["partitions"])
        def took_updates():
            sa, sb = status(port_a), status(port_b)
            n = sa["pipeline"]["totals"]["records_in"] + sb["pipeline"]["totals"]["records_in"] if sa and sb else 0
            return settled(port_a) and settled(port_b) and n >= 41 + 25
        try:
            wait("both members to take the updates", took_updates)
        except SystemExit:
            print("A: %s\nB: %s" % (json.dumps(status(port_a)), json.dumps(status(port_b))), flush=True)
            raise

        def rows(cfg_path, *extra):
            r = subprocess.run([WIDEN, "rows", "--config", cfg_path] + list(extra), capture_output=True, text=True,
                               env=env)
            if r.returncode != 0:
                fail("widen rows %s: %s" % (cfg_path, r.stderr))
            return [json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip()], r.stderr

        print("records taken: A %d, B %d" % (status(port_a)["pipeline"]["totals"]["records_in"],
                                              status(port_b)["pipeline"]["totals"]["records_in"]), flush=True)
        rows_a, err_a = wait("A's rows to leave out the moved tasks",
                             lambda: (lambda r: r if "left out" in r[1] else None)(rows(cfg)), 60)
        rows_b, _ = rows(cfg_b)
        all_a, _ = rows(cfg, "--all-tasks")
        if set(rows_a) & set(rows_b) or sorted(set(rows_a) | set(rows_b)) != list(range(1, 26)):
            fail("rows of A %s and of B %s should split the 25 keys" % (rows_a, rows_b))
        if len(all_a) <= len(rows_a) or "--all-tasks prints them" not in err_a:
            fail("A's rows with --all-tasks %d, without %d; stderr: %s" % (len(all_a), len(rows_a), err_a))
        print("widen rows: A %d rows, B %d rows, A --all-tasks %d; %s" % (len(rows_a), len(rows_b), len(all_a),
                                                                        err_a.strip()), flush=True)

        shot = ws.call("Page.captureScreenshot", format="png")
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, "status_page.png"), "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print("screenshot: %s" % os.path.join(OUT, "status_page.png"))
        print("PASS", flush=True)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        # a sanitizer build reports into the widen logs: show it, so that ctest fails the test
        for name in ("a.log", "b.log"):
            path = os.path.join(tmp, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    for line in f:
                        if "Sanitizer" in line or "runtime error" in line:
                            print("widen %s: %s" % (name, line.rstrip()), flush=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
