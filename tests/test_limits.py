"""Resource bounds: absurd requests (10^9 GPUs, a billion spines, a 1 EiB message, a million-size sweep, a
billion chunks, a billion local ranks, buffers larger than memory, /dev/zero as a topology) are refused
with one clear line before anything big is allocated -- checked with a memory ceiling on the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from collsim.cli import main
from reports import parse_spec
from sim import simulate
from sim.errors import ConfigError
from sim.topology import dgx, leaf_spine, load_graph, ring, star, torus
from sim.topology.builders import MAX_GPUS
from sim.topology.graph import ClusterBuilder
from sim.units import parse_size
from validate.launch import MAX_LOCAL_RANKS, launch

from .fuzzing import no_hang
from .report_fixtures import tiny_spec

ROOT = Path(__file__).resolve().parents[1]
BILLION = 10**9


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: star(BILLION, "1GB/s"), "star: 1,000,000,000 GPUs is more than collsim builds"),
        (lambda: star(1000, "1GB/s", gpus_per_host=BILLION, intra_bandwidth="1TB/s"), "GPUs is more than"),
        (lambda: leaf_spine(BILLION, 1, 1, "1GB/s"), "GPUs is more than"),
        (lambda: leaf_spine(2, 2, BILLION, "1GB/s"), "links is more than collsim builds"),
        (lambda: dgx(BILLION), "GPUs is more than"),
        (lambda: dgx(2, spines=BILLION), "links is more than"),
        (lambda: torus((1000, 1000, 1000), "1GB/s"), "GPUs is more than"),
        (lambda: ring(BILLION, "1GB/s"), "GPUs is more than"),
        (lambda: load_graph("dgx:hosts=2,gpus_per_host=1000000000"), "GPUs is more than"),
    ],
)
def test_every_builder_refuses_a_billion_before_building(build, message):
    with no_hang(5), pytest.raises(ConfigError, match=message):
        build()


def test_a_file_asking_for_a_billion_gpus_is_refused(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: big\nhosts: [{name: a, gpus: 1000000000, intra_bandwidth: 1TB/s}]\n")
    with no_hang(5), pytest.raises(ConfigError, match=r"big.yaml: hosts\[0\]: host 'a': 1,000,000,000 GPUs"):
        load_graph(path)
    builder_form = tmp_path / "builder.yaml"
    builder_form.write_text("name: b\nbuilder: star\nparams: {hosts: 1000000000, bandwidth: 1GB/s}\n")
    with no_hang(5), pytest.raises(ConfigError, match="1,000,000,000 GPUs"):
        load_graph(builder_form)
    with pytest.raises(ConfigError, match="2,097,153 GPUs is more than"):
        ClusterBuilder("many").add_host("h", gpus=MAX_GPUS + 1, intra_bandwidth=1e12)


def test_files_collsim_would_read_forever_are_refused(capsys):
    with no_hang(10):
        assert main(["simulate", "-t", "/dev/zero"]) == 2
    assert "/dev/zero: is a character device, not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", "--size", "1EiB"],
        ["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", "--sizes", "1K:1EiB"],
        ["compare", "-t", "star:hosts=4,bandwidth=1GB/s", "--size", "1EiB"],
        ["validate", "run", "--ranks", "2", "--sizes", "1EiB"],
    ],
)
def test_a_one_exbibyte_message_is_refused(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is more than 1 PiB (2^50 B), the largest size collsim accepts" in err


def test_sizes_beyond_a_pebibyte_are_refused_everywhere():
    assert parse_size("1PiB") == 2.0**50
    with pytest.raises(ConfigError, match="more than 1 PiB"):
        simulate("star:hosts=2,bandwidth=1GB/s", "allreduce", "ring", 2.0**51)
    with pytest.raises(ConfigError, match=r"sweep.message_sizes\[0\]"):
        parse_spec(tiny_spec(sweep={"message_sizes": [2**60]}))
    with pytest.raises(ConfigError, match="more than 1 PiB"):
        parse_spec(tiny_spec(job={"gradient_bytes": "2PiB", "compute_time": "1s"}))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sizes", "1:1PiB:1.000001"], "sizes, more than one sweep holds (at most 10,000)"),
        (["-a", "tree:chunks=1000000000"], "algorithm tree.chunks: must be <= 1048576"),
        (["--collective", "broadcast", "-a", "ring:chunks=1000000000"], "algorithm ring.chunks: must be <= 1048576"),
        (["--gamma", "1e300"], "--gamma: must be between 0 and 1 s/byte"),
    ],
)
def test_work_that_would_never_end_is_refused(capsys, argv, message):
    with no_hang(10):
        assert main(["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", *argv]) == 2
    assert message in capsys.readouterr().err


def test_validate_refuses_a_billion_local_ranks_and_buffers_beyond_memory():
    with pytest.raises(ConfigError, match=f"at most {MAX_LOCAL_RANKS} local ranks"):
        launch(BILLION, ["--sizes", "1K"])
    with pytest.raises(ConfigError, match="GiB of memory"):
        launch(2, ["--sizes", "1TiB"])


def test_refusals_allocate_nothing_big():
    """The refusals above, in a process whose address space is capped at 2 GiB: a builder that started to
    build, or a parser that expanded a sweep, would die of MemoryError instead of saying no."""
    script = textwrap.dedent(
        f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from collsim.cli import main
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        cases = [["simulate", "-t", "star:hosts=1000000000,bandwidth=1GB/s"],
                 ["simulate", "-t", "leaf-spine:leaves=2,hosts_per_leaf=2,spines=1000000000,bandwidth=1GB/s"],
                 ["simulate", "-t", "dgx:hosts=2,spines=1000000000"],
                 ["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", "--size", "1EiB"],
                 ["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", "--sizes", "1:1PiB:1.0000001"],
                 ["simulate", "-t", "star:hosts=4,bandwidth=1GB/s", "-a", "tree:chunks=1000000000000"],
                 ["simulate", "-t", "/dev/zero"]]
        print([main(argv) for argv in cases])
        # this process's own peak: ru_maxrss would also count the pytest process it was forked from
        print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    codes, peak_kib = done.stdout.splitlines()
    assert codes == str([2] * 7), done.stderr
    assert int(peak_kib) < 1 << 20  # under 1 GiB resident
    assert "out of memory" not in done.stderr and done.stderr.count("\n") == 7
