#!/usr/bin/env bash
# scripts/kafka's cluster ids: N of them (default 200) are Kafka Uuid text
# (22 base64url characters) and none begins with '-' (StorageTool would take it for an option;
# the old generator made one in 64 such: about 3 in 200).
set -euo pipefail
n=${2:-200}
ids=$("$1/scripts/kafka" cluster-id "$n")
[[ $(wc -l <<<"$ids") -eq $n ]] || { echo "want $n ids, got: $ids"; exit 1; }
if grep -n '^-' <<<"$ids"; then echo "cluster ids beginning with '-' (above)"; exit 1; fi
if grep -nv '^[A-Za-z0-9_-]\{22\}$' <<<"$ids"; then echo "cluster ids that are not 22 base64url characters (above)"; exit 1; fi
echo "$n cluster ids: none begins with '-', all 22 base64url characters"
