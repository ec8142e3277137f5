#!/usr/bin/env bash
# The engine issue's targets on one machine, in one go (docs/performance.md, "Where each target stands"):
#   1. the congested pairs, fast path and message level, three rounds in turn, one case per process
#      (`scale.py --child`), medians of CPU s and their ratio;
#   2. every target case once, one case per process, STREAMS at once (default 3: a 16-core machine stays
#      far from busy; on 2 cores use STREAMS=1).
# Usage: bash benchmarks/reference_timings.sh [OUTDIR]   (OUTDIR defaults to $OUT, else out/reference);
#        PY=python3 by default; PARTS="pairs" or PARTS="targets" runs one part only.
set -u
OUTDIR=${1:-${OUT:-out/reference}}
PARTS=${PARTS:-pairs targets}
STREAMS=${STREAMS:-3}
PY=${PY:-python3}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PY
mkdir -p "$OUTDIR"
$PY setup.py -q build_ext --inplace > "$OUTDIR/build.txt" 2>&1
$PY -c "import sim._ratecore, sim._classcore; print('compiled cores: built')" 2>&1 | tail -n 1
echo "# $(nproc) cores; $(uptime); $(lscpu 2>/dev/null | grep 'Model name' | tr -s ' ')"
PAIRS="ring-rank-256 hd-ls1k tree-1k tree8-ls1k dbt64-512"
if [[ " $PARTS " == *" pairs "* ]]; then
    for r in 1 2 3; do for c in $PAIRS; do for e in fast message; do
        timeout 120 $PY benchmarks/scale.py --child "$c-$e" 2>&1 | tail -n 1 >> "$OUTDIR/pairs.jsonl"
    done; done; done
    $PY - "$OUTDIR/pairs.jsonl" $PAIRS <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
for c in sys.argv[2:]:
    got = {e: [d for d in rows if d["case"] == f"{c}-{e}"] for e in ("fast", "message")}
    if got["fast"] and got["message"]:
        f, m = ([d["cpu_s"] for d in got[e]] for e in ("fast", "message"))
        times = sorted({repr(d["time_s"]) for d in got["fast"] + got["message"]})
        print(f"{c}: fast {[round(x, 3) for x in f]} message {[round(x, 3) for x in m]} "
              f"ratio of medians {statistics.median(m) / statistics.median(f):.2f}x; times {times}")
PY
fi
if [[ " $PARTS " == *" targets "* ]]; then
    printf '%s\n' ring-16k tree-16k double-binary-tree-16k recursive-doubling-16k halving-doubling-16k \
        hierarchical-16k master-worker-16k nccl-h100-16k ring16-h100-16k nccl-tree-h100-16k nvls-tree-h100-16k \
        collnet-direct-h100-16k collnet-chain-h100-16k ps-colocated-16k-ib ps-dedicated-16k-ib ring-ls4to1-16k \
        hd-ls4to1-16k ring-1k-message ring-rank-1k-message hd-1k-message tree-1k-message rd-1k-message \
        mw-1k-message hierarchical-1k-message dbt64-1k-message ps128-1k-message ps-rank-1k-message \
        nccl-1k-message nccl-tree-1k-message nvls-tree-1k-message hierarchical-1m ps-colocated-2k |
        OUTDIR=$OUTDIR xargs -P "$STREAMS" -I{} sh -c \
            '$PY benchmarks/scale.py --timeout 90 --case {} --json "$OUTDIR/targets.jsonl" > /dev/null 2>&1'
    $PY - "$OUTDIR/targets.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "error" in d:
        print(f"{d['case']:26s} {d['error']}")
        continue
    print(f"{d['case']:26s} {d.get('engine', '')!s:14s} cpu {d.get('cpu_s', float('nan')):7.2f} s "
          f"peak {d.get('peak_MiB', 0):7.0f} MiB target {d.get('target_s')} time {d.get('time_s')!r}")
PY
fi
