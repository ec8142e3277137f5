"""Hostile input and faults, counted: every input of issue 16's campaign that broke collsim, and their
neighbours, run as real ``collsim`` processes; then signals and kill -9 of reports, simulations and netlab.

Each input runs in a process of its own (address space capped at 4 GiB so that a blow-up cannot take the
machine with it; wall clock capped at 30 s) and is counted as one of:

* ok        -- exit 0, or exit 2 with exactly one ``collsim: error:`` line on stderr
* traceback -- "Traceback" on stderr
* lines     -- exit 2 with more than one stderr line (or none)
* hang      -- still running after 30 s (killed)
* memory    -- peak resident memory over 2 GiB
* exit      -- any other exit code
* orphan    -- (faults) a process the command started still alive 10 s after it ended

    .venv/bin/python benchmarks/hostile.py            # everything (netlab faults when run as root)
    .venv/bin/python benchmarks/hostile.py --jobs 2 --verbose

docs/reliability.md quotes a run of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLSIM = [sys.executable, "-m", "collsim"]
LIMIT_S = 30.0
AS_CAP = 4 << 30
BIG_RSS_KIB = 2 << 20


@dataclass
class Outcome:
    name: str
    verdict: str
    code: int | None
    seconds: float
    peak_mib: float
    last: str


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_CAP, AS_CAP))
    os.setsid()


def run_one(name: str, argv: list[str], env: dict[str, str], cwd: Path) -> Outcome:
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [*COLLSIM, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            preexec_fn=_cap,  # noqa: PLW1509
        )  # fmt: skip
        hang = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > LIMIT_S:
                hang = True
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left in its session
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    seconds = time.monotonic() - started
    lines = text.splitlines()
    code = proc.returncode
    if hang:
        verdict = "hang"
    elif "Traceback" in text:
        verdict = "traceback"
    elif usage.ru_maxrss > BIG_RSS_KIB:
        verdict = "memory"
    elif code == 2:
        verdict = "ok" if len(lines) == 1 and lines[0].startswith("collsim: error: ") else "lines"
    elif code == 0:
        verdict = "ok"
    else:
        verdict = "exit"
    return Outcome(name, verdict, code, seconds, usage.ru_maxrss / 1024, (lines or [""])[-1][:160])


def corpus(tmp: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, argv, extra environment) of every input."""
    specials = {}
    os.mkfifo(tmp / "fifo.yaml")
    specials["fifo"] = tmp / "fifo.yaml"
    (tmp / "zero.json").symlink_to("/dev/zero")
    specials["dev-zero-link"] = tmp / "zero.json"
    specials["dev-zero"] = Path("/dev/zero")
    specials["dev-null"] = Path("/dev/null")
    specials["dev-urandom"] = Path("/dev/urandom")
    (tmp / "dir.yaml").mkdir()
    specials["dir"] = tmp / "dir.yaml"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp / "sock.yaml"))
    specials["socket"] = tmp / "sock.yaml"
    specials["missing"] = tmp / "missing.yaml"
    (tmp / "x.yaml").write_text("hosts: [{name: a}]\n")
    os.chmod(tmp / "x.yaml", 0)  # unreadable (unless root)
    specials["unreadable"] = tmp / "x.yaml"

    def readers(path: Path) -> list[list[str]]:
        out = str(tmp / "out")
        return [
            ["simulate", "-t", str(path), "--size", "1MiB", "--timeout", "5s"],
            ["topology", "show", str(path)],
            ["compare", "-t", str(path), "--size", "1MiB"],
            ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration", str(path)],
            ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", str(path), "-o", f"{out}.yaml"],
            ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", f"{path}:format=nccl-tests-json", "-o", f"{out}.yaml"],
            ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", f"{path}:format=jsonl", "-o", f"{out}.yaml"],
            ["report", str(path), "--out", out],
            ["validate", "show", str(path)],
        ]  # fmt: skip

    cases: list[tuple[str, list[str], dict[str, str]]] = []
    for kind, path in specials.items():
        for i, argv in enumerate(readers(path)):
            cases.append((f"special {kind} #{i}", argv, {}))
    # integers past what Python converts, and just around the bound
    for digits in (19, 30, 31, 4300, 4301, 5000, 100_000):
        number = "9" * digits
        files = {
            "topology.yaml": f"name: t\nhosts: [{{name: a, gpus: {number}}}, {{name: b}}]\nlinks: []\n",
            "report.yaml": f"job: {{gradient_bytes: {number}, compute_time: 1ms}}\n",
            "cal.json": f'{{"format": "collsim-calibration", "topology": "dgx:hosts=2", "version": {number}}}',
            "m.jsonl": f'{{"size_bytes": {number}, "time_s": 1}}\n',
            "n.json": f'{{"results": [{{"size": {number}}}]}}',
        }
        for fname, text in files.items():
            path = tmp / f"{digits}-{fname}"
            path.write_text(text)
            argv = {
                "topology.yaml": ["simulate", "-t", str(path), "--size", "1MiB"],
                "report.yaml": ["report", str(path), "--out", str(tmp / "out")],
                "cal.json": ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration", str(path)],
                "m.jsonl": ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", str(path), "-o", str(tmp / "o.yaml")],
                "n.json": ["validate", "calibrate", "-t", "dgx:hosts=2", "--from", f"{path}:format=nccl-tests-json",
                           "-o", str(tmp / "o.yaml")],
            }[fname]  # fmt: skip
            cases.append((f"{digits}-digit integer in {fname}", argv, {}))
    # files that are not what was asked (their content must not be printed)
    shadow = tmp / "shadow"
    shadow.write_text("root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    for i, argv in enumerate(readers(shadow)):
        cases.append((f"shadow #{i}", argv, {}))
    # a calibration of 200,000 segments (9 MB)
    segs = [{"min_bytes": i, "latency": 1e-6, "efficiency": 0.9} for i in range(200_000)]
    cal = {"format": "collsim-calibration", "topology": "dgx:hosts=2", "calibrated": ["same-switch.segments"],
           "classes": {"same-switch": {"segments": segs}}}  # fmt: skip
    (tmp / "segs.json").write_text(json.dumps(cal))
    cases.append(("200,000 segments", ["simulate", "-t", "dgx:hosts=2", "--size", "1MiB", "--calibration",
                                       str(tmp / "segs.json"), "--timeout", "5s"], {}))  # fmt: skip
    # huge legal clusters and work, under --timeout
    for argv in (
        ["topology", "show", "dgx:hosts=262144"],
        ["topology", "show", "dgx:hosts=262144", "--timeout", "5s"],
        ["topology", "show", "star:hosts=2097152,bandwidth=1Gbps", "--timeout", "5s"],
        ["simulate", "-t", "star:hosts=2097152,bandwidth=1Gbps", "--size", "1MiB", "--timeout", "5s"],
        ["simulate", "-t", "dgx:hosts=262144", "--size", "1MiB", "--timeout", "5s"],
        ["simulate", "-t", "star:hosts=4,bandwidth=100Gbps", "-a", "tree:chunks=1048576", "--size", "1MiB",
         "--timeout", "5s"],
    ):  # fmt: skip
        cases.append((" ".join(argv)[:70], argv, {}))
    # validate options caught up front
    for name, argv, env in (
        ("--json in a missing folder", ["--json", "/nonexistent/x.jsonl"], {}),
        ("--json a directory", ["--json", str(tmp)], {}),
        ("--json a fifo", ["--json", str(specials["fifo"])], {}),
        ("--backend nccl", ["--backend", "nccl"], {}),
        ("--device cuda", ["--device", "cuda"], {}),
        ("fault garbage", [], {"COLLSIM_VALIDATE_FAULT": "garbage"}),
        ("fault rank=x", [], {"COLLSIM_VALIDATE_FAULT": "rank=x,iteration=1,action=kill"}),
    ):
        cases.append((f"validate {name}", ["validate", "run", "--ranks", "2", "--sizes", "1K", *argv], env))
    # long and hostile strings
    long = "x" * 100_000
    for argv in (
        ["simulate", "-t", f"star:hosts=2,bandwidth=1Gbps,{long}=1"],
        ["simulate", "-t", long],
        ["simulate", "-t", "star:hosts=2,bandwidth=1Gbps", "-a", long],
        ["simulate", "-t", "star:hosts=2,bandwidth=1Gbps", "--size", long],
        ["simulate", "-t", "star:hosts=2,bandwidth=1Gbps,x[1]=2"],
        ["netlab", "up", str(shadow), "--prefix", "hx"],
        ["netlab", "up", "star:hosts=2,bandwidth=1Gbps", "--prefix", "$(touch /tmp/pwned)"],
    ):
        cases.append((f"string {' '.join(argv)[:50]}", argv, {}))
    # COLLSIM_* variables
    for var, value in (
        ("COLLSIM_TIMEOUT", "nan"), ("COLLSIM_TIMEOUT", "-1"), ("COLLSIM_TOPOLOGY", str(specials["fifo"])),
        ("COLLSIM_CALIBRATION", str(specials["dev-zero-link"])), ("COLLSIM_SIZES", "1:1PiB:1.0000001"),
        ("COLLSIM_RANKS", "9" * 5000),
    ):  # fmt: skip
        argv = ["simulate", "--size", "1MiB"] + (
            [] if var == "COLLSIM_TOPOLOGY" else ["-t", "star:hosts=2,bandwidth=1Gbps"]
        )
        if var == "COLLSIM_SIZES":
            argv = ["simulate", "-t", "star:hosts=2,bandwidth=1Gbps"]
        cases.append((f"env {var}", argv, {var: value}))
    return cases


# -- faults ---------------------------------------------------------------------------------------------


def _tagged(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if f"COLLSIM_HOSTILE_TAG={tag}".encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


def _orphans_after(tag: str, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _tagged(tag):
        time.sleep(0.1)
    return _tagged(tag)


def faults(tmp: Path) -> list[Outcome]:
    spec = tmp / "big-report.yaml"
    spec.write_text(
        "name: big\njob: {gradient_bytes: 100MiB, compute_time: 10ms}\n"
        "cluster: {builder: star, params: {bandwidth: 100Gbps, latency: 1us}, sizes: 4..4096}\n"
        "algorithms: [ring, tree]\nsweep: {message_sizes: 1MiB:256MiB:2}\n"
    )
    slow_sim = ["simulate", "-t", "star:hosts=4,bandwidth=100Gbps", "-a", "tree:chunks=1048576", "--size", "1MiB"]
    plans = [(f"report {s.name}", ["report", str(spec), "--out", str(tmp / f"rep-{s.name}"), "--jobs", "2",
                                   "--no-progress"], s, 8.0) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)]  # fmt: skip
    plans += [(f"simulate {s.name}", slow_sim, s, 3.0) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    plans += [(f"validate run {s.name}", ["validate", "run", "--ranks", "2", "--sizes", "1K:1M", "-n", "200"], s, 8.0)
              for s in (signal.SIGTERM, signal.SIGKILL)]  # fmt: skip
    if os.geteuid() == 0 and shutil.which("ip"):
        run = ["netlab", "run", "netlab-star4", "--prefix", "hk", "--module", "tests.netlab_standin", "--json",
               str(tmp / "nl.jsonl"), "--", "--sleep", "300"]  # fmt: skip
        plans += [(f"netlab run {s.name}", run, s, 8.0) for s in (signal.SIGTERM, signal.SIGKILL)]
    out = []
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    for name, argv, sig, after in plans:
        tag = uuid.uuid4().hex
        env = {**os.environ, "COLLSIM_HOSTILE_TAG": tag, "PYTHONPATH": str(ROOT), "COLLSIM_PROGRESS": "0"}
        started = time.monotonic()
        proc = subprocess.Popen([*COLLSIM, *argv], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(after)
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        left = _orphans_after(tag)
        for pid in left:  # clean up what the verdict counted
            with __import__("contextlib").suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        lines = err.splitlines()
        if left:
            verdict = "orphan"
        elif "Traceback" in err:
            verdict = "traceback"
        elif sig == signal.SIGKILL:
            verdict = "ok"
        elif (
            proc.returncode == 130
            and [line for line in lines if line.startswith("collsim: ")] == lines[-1:]
            and (lines[-1].startswith("collsim: interrupted"))
        ):
            verdict = "ok"  # netlab run says what it starts ("netlab hk: 4 ranks ..."), then one line at the end
        else:
            verdict = "exit" if proc.returncode != 130 else "lines"
        out.append(Outcome(f"fault {name}", verdict, proc.returncode, time.monotonic() - started, 0.0,
                           (lines or [""])[-1][:160]))  # fmt: skip
    if os.geteuid() == 0 and shutil.which("ip"):
        subprocess.run([*COLLSIM, "netlab", "down", "--prefix", "hk"], cwd=ROOT, capture_output=True)
    shm_after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    leaked = sorted(shm_after - shm_before)
    out.append(Outcome("fault /dev/shm after all", "orphan" if leaked else "ok", None, 0.0, 0.0, ", ".join(leaked)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--no-faults", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="collsim-hostile-") as tmpdir:
        tmp = Path(tmpdir)
        cases = corpus(tmp)
        env0 = {**os.environ, "COLLSIM_PROGRESS": "0"}
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda c: run_one(c[0], c[1], {**env0, **c[2]}, tmp), cases))
        if not args.no_faults:
            results += faults(tmp)
    counts = Counter(r.verdict for r in results)
    for r in results:
        if args.verbose or r.verdict != "ok":
            print(
                f"{r.verdict:9s} {r.name[:60]:60s} exit {r.code}  {r.seconds:5.1f} s  {r.peak_mib:6.0f} MiB  {r.last}"
            )
    inputs = sum(1 for r in results if not r.name.startswith("fault "))
    slowest = max((r for r in results if not r.name.startswith("fault ")), key=lambda r: r.seconds)
    biggest = max(results, key=lambda r: r.peak_mib)
    print(
        f"{inputs} inputs, {len(results) - inputs} faults: "
        + ", ".join(f"{k} {counts.get(k, 0)}" for k in ("ok", "traceback", "lines", "hang", "memory", "exit", "orphan"))
    )
    print(
        f"slowest input: {slowest.seconds:.1f} s ({slowest.name}); largest: {biggest.peak_mib:.0f} MiB ({biggest.name})"
    )
    return 0 if counts.get("ok", 0) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
