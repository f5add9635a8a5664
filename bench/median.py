#!/usr/bin/env python3
"""Reads RESULT key=value lines on stdin; prints the median (and min..max) of every numeric key."""
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()[1:]) for line in sys.stdin if line.startswith("RESULT")]
if not rows:
    sys.exit("no RESULT lines")
print(f"medians of {len(rows)} runs:")
for k in rows[0]:
    try:
        vals = [float(r[k]) for r in rows]
    except (KeyError, ValueError):
        continue
    print(f"  {k:18s} {statistics.median(vals):12.3f}   ({min(vals):.3f} .. {max(vals):.3f})")
