#!/usr/bin/env bash
# Base against this tree, case by case, in turn (base first), ROUNDS rounds: benchmarks/scale.py --child CASE,
# CPU s, simulated time, events and flows per run (docs/performance.md, "Where each target stands").
# Usage: BASE=DIR [ROUNDS=3] [PY=python3] bash benchmarks/base_vs_head.sh CASE...
#   DIR: another tree's sim/, benchmarks/, setup.py and pyproject.toml, e.g.
#     git archive 07b059d sim benchmarks setup.py pyproject.toml | tar -x -C DIR
#   (a copy, so that it can travel to a machine without the repository's history: the GPU machine).
# Both trees' compiled cores are built first for this Python.
set -u
[ -n "${BASE:-}" ] && [ -d "${BASE:-}/sim" ] || { echo "base_vs_head: set BASE to a tree holding sim/ (see the header)" >&2; exit 2; }
PY=${PY:-python3}
case $PY in */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;; esac
ROUNDS=${ROUNDS:-3}
[ $# -gt 0 ] || { echo "usage: BASE=DIR bash benchmarks/base_vs_head.sh CASE..." >&2; exit 2; }
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
HEAD_DIR=$PWD
for dir in "$BASE" "$HEAD_DIR"; do
    (cd "$dir" && $PY setup.py -q build_ext --inplace > /dev/null 2>&1 && $PY -c "import sim._ratecore") \
        || echo "warning: $dir: compiled core not built (its Python path runs)" >&2
done
echo "# $(nproc) cores; $(uptime)"
for r in $(seq "$ROUNDS"); do
    for c in "$@"; do
        for side in base head; do
            dir=$BASE; [ "$side" = head ] && dir=$HEAD_DIR
            line=$(cd "$dir" && timeout 300 $PY benchmarks/scale.py --child "$c" 2>&1 | tail -n 1)
            $PY -c "
import json, sys
try:
    d = json.loads(sys.argv[1])
    print('$side', 'round $r', d['case'], f\"{d['cpu_s']:.2f}\", repr(d['time_s']), d['events'], d['flows'])
except (ValueError, KeyError):
    sys.exit('$side round $r $c: ' + (sys.argv[1] or 'no output (timed out?)'))" "$line" || exit 1
        done
    done
done
