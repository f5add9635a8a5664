#!/usr/bin/env python3
"""Every YAML example of README.md and docs/*.md through `widen config check`.

usage: yaml_examples.py WIDEN REPO

A ```yaml block with every required section (kafka, table, sources, sink, state) is a whole config
and is checked as it is.
Any other block is a fragment of one: it is merged into a small base config (a kafka section, a
table keyed by the first column the fragment's sources map, with a STRING column for every other, a source
and a sink where the fragment has none, a schema registry when something is Avro) and the result
is checked. A block with none of widen's sections at its top (a Kubernetes manifest, a compose
file) is not a widen config and is skipped. `${env:NAME}` references get a value in the environment; an `ssl.ca.location` that
does not exist here (`/etc/widen/ca.pem`) is replaced by the system's CA bundle. YAML is read
with libyaml (PyYAML's CSafeLoader), the parser widen itself uses. A block that does not parse
as YAML, or that `widen config check` refuses, fails the test with its file and line.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


class Loader(yaml.CSafeLoader):
    """libyaml's parser with YAML 1.2's booleans (only true/false), as widen reads them: `on:` (a
    lookup's join columns) is a key, not the boolean YAML 1.1 makes of it."""


Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"] for k, v in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                             list("tTfF"))


def blocks(repo):
    files = [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    for f in files:
        text = open(f, encoding="utf-8").read()
        for m in re.finditer(r"^```ya?ml[^\n]*\n(.*?)^```", text, re.S | re.M):
            yield os.path.relpath(f, repo), text[: m.start()].count("\n") + 2, m.group(1)


def mapped_columns(sources):
    cols = []
    for s in sources or []:
        c = s.get("columns") if isinstance(s, dict) else None
        names = list(c.keys()) if isinstance(c, dict) else (c if isinstance(c, list) else [])
        for n in names:
            if isinstance(n, str) and n not in cols:
                cols.append(n)
    return cols


WHOLE = ("kafka", "table", "sources", "sink", "state")
SECTIONS = set(WHOLE) | {"pipeline", "schema-registry", "metrics"}


def complete(frag):
    cfg = {
        "kafka": {"bootstrap.servers": "127.0.0.1:9092", "group.id": "docs-example"},
        "state": {"dir": "./state/docs-example"},
    }
    sources = frag.get("sources") or [{"name": "main", "topic": "docs.main", "columns": {"id": None, "v": None}}]
    cols = mapped_columns(sources)
    key = cols[0] if cols else "id"   # the first column the first source maps
    cfg["table"] = {
        "name": "docs_example",
        "schema": [{"name": key, "type": "BIGINT NOT NULL"}] + [{"name": c, "type": "STRING"} for c in cols if c != key],
        "primary-key": [key],
    }
    cfg["sources"] = sources
    cfg["sink"] = {"topic": "docs.example.out"}
    for k, v in frag.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            merged = dict(cfg[k])
            merged.update(v)
            cfg[k] = merged
        else:
            cfg[k] = v
    avro = any(isinstance(s, dict) and s.get("format") == "debezium-avro" for s in cfg["sources"])
    avro = avro or cfg.get("sink", {}).get("format") == "avro" or cfg.get("sink", {}).get("key-format") == "avro"
    if avro and "schema-registry" not in cfg:
        cfg["schema-registry"] = {"url": "http://127.0.0.1:8081"}
    return cfg


def main():
    widen, repo = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    failed = checked = 0
    env = dict(os.environ)
    for path, line, text in blocks(repo):
        for name in re.findall(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", text):
            env.setdefault(name, "docs-example-value")
        where = "%s:%d" % (path, line)
        try:
            frag = yaml.load(text, Loader=Loader)
        except yaml.YAMLError as e:
            print("FAIL %s: not YAML: %s" % (where, str(e).replace("\n", " ")))
            failed += 1
            continue
        if not isinstance(frag, dict):
            print("FAIL %s: not a mapping" % where)
            failed += 1
            continue
        if not SECTIONS & set(frag):
            print("skip %s: not a widen config (top-level %s)" % (where, ", ".join(map(str, frag))))
            continue
        whole = all(k in frag for k in WHOLE)
        for section in ("kafka", "sink"):
            props = (frag.get(section) or {}).get("properties") if isinstance(frag.get(section), dict) else None
            ca = props.get("ssl.ca.location") if isinstance(props, dict) else None
            if isinstance(ca, str) and not os.path.exists(ca):
                props["ssl.ca.location"] = CA_BUNDLE
                text = text.replace(ca, CA_BUNDLE)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as t:
            if whole:
                t.write(text)   # as written: config check reports its own line numbers
            else:
                yaml.safe_dump(complete(frag), t, sort_keys=False)
            tmp = t.name
        r = subprocess.run([widen, "config", "check", tmp], capture_output=True, text=True, env=env, cwd=repo)
        os.unlink(tmp)
        checked += 1
        if r.returncode != 0:
            failed += 1
            print("FAIL %s (%s): widen config check:\n%s%s" % (where, "whole config" if whole else "fragment",
                                                               r.stdout, r.stderr))
        else:
            print("ok   %s (%s)" % (where, "whole config" if whole else "fragment"))
    print("%d YAML examples checked, %d failed" % (checked, failed))
    if checked == 0:
        print("no YAML examples found")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
