"""netlab without root: planning, names, shaping settings, state files, rank commands, the CLI's errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collsim.cli import main
from netlab import NetlabError, NetlabUnavailable, Plan, Shaping, make_plan, names, rank_commands, system
from netlab.launch import _stop, _wait
from netlab.state import locked, read_state, state_path, write_state
from sim.errors import ConfigError, TopologyError


def test_star_maps_hosts_switches_and_links():
    plan = make_plan("netlab-star4", prefix="ab1")
    assert [h.ns for h in plan.hosts] == ["ab1-h0", "ab1-h1", "ab1-h2", "ab1-h3"]
    assert [h.address for h in plan.hosts] == ["10.213.0.1", "10.213.0.2", "10.213.0.3", "10.213.0.4"]
    assert [(s.name, s.ns, s.bridge) for s in plan.switches] == [("sw0", "ab1-s0", "ab1-br0")]
    for i, link in enumerate(plan.links):
        assert (link.a.ns, link.a.ifname, link.a.bridge) == (f"ab1-h{i}", f"ab1-l{i}a", None)
        assert (link.b.ns, link.b.ifname, link.b.bridge) == ("ab1-s0", f"ab1-l{i}b", "ab1-br0")
        assert link.a.egress.rate == link.b.egress.rate == 25e6
    assert plan.path_rate("h0", "h3") == 25e6 and len(plan.path("h0", "h3")) == 2 and plan.path("h1", "h1") == []


def test_each_direction_is_shaped_at_its_own_rate(tmp_path):
    spec = tmp_path / "asym.yaml"
    spec.write_text(
        "name: asym\nhosts: [{name: x}, {name: y}]\nswitches: [s]\n"
        "links:\n  - {between: [x, s], bandwidth: 100Mbps, reverse: {bandwidth: 50Mbps}}\n"
        "  - {between: [s, y], bandwidth: 300Mbps, reverse: {bandwidth: 400Mbps}}\n"
    )
    plan = make_plan(str(spec))
    x, y = plan.links
    assert (x.a.node, x.a.egress.rate * 8, x.b.egress.rate * 8) == ("x", 100e6, 50e6)
    assert (y.a.node, y.a.egress.rate * 8, y.b.egress.rate * 8) == ("y", 400e6, 300e6)  # host end first
    assert plan.path_rate("x", "y") * 8 == 100e6 and plan.path_rate("y", "x") * 8 == 50e6


def test_multi_gpu_hosts_share_one_namespace():
    plan = make_plan("star:hosts=2,bandwidth=1Gbps,gpus_per_host=3,intra_bandwidth=100GB/s")
    assert [(h.name, h.ranks, h.gpus[0]) for h in plan.hosts] == [
        ("h0", (0, 1, 2), "h0:gpu0"),
        ("h1", (3, 4, 5), "h1:gpu0"),
    ]
    assert len(plan.links) == 2 and plan.world_size == 6  # GPU--NVSwitch links stay inside the host
    assert [h.name for h in plan.rank_hosts()] == ["h0"] * 3 + ["h1"] * 3


def test_two_racks_farthest_pair_crosses_the_core():
    plan = make_plan("netlab-2rack")
    assert plan.farthest_pair() == ("a0", "b1")
    assert [end.node for end in plan.path("a0", "b1")] == ["a0", "tora", "core", "torb"]


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("torus:dims=2x2,bandwidth=1Gbps", "joins hosts 'h0' and 'h2' directly"),
        ("ring:hosts=3,bandwidth=1Gbps", "torus and ring topologies cannot be emulated"),
        ("dgx-h100-4", "multi-NIC"),
        ("leaf-spine:leaves=2,hosts_per_leaf=2,spines=2,bandwidth=1Gbps", "form a loop"),
        ("star:hosts=65,bandwidth=1Gbps", "at most 64"),
    ],
)
def test_refuses_what_it_cannot_emulate(spec, match):
    with pytest.raises(TopologyError, match=match):
        make_plan(spec)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"prefix": "Cs"}, "prefix"), ({"queue": 0.0}, "--queue"), ({"mtu": 100}, "--mtu")]
)
def test_bad_options(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make_plan("netlab-star4", **kwargs)


def test_hostile_node_names_never_reach_system_names(tmp_path):
    evil = ["$(reboot)", "a b;rm -rf /", "x" * 200, "-h0", "ünï"]
    spec = tmp_path / "evil.yaml"
    hosts = ", ".join(json.dumps({"name": n}) for n in evil)
    links = "\n".join(f"  - {{between: [{json.dumps(n)}, sw]}}" for n in evil)
    spec.write_text(f"name: evil\ndefaults: {{bandwidth: 1Gbps}}\nhosts: [{hosts}]\nswitches: [sw]\nlinks:\n{links}\n")
    plan = make_plan(str(spec), prefix="q")
    assert [h.name for h in plan.hosts] == evil
    for name in plan.namespaces + [e.ifname for k in plan.links for e in (k.a, k.b)]:
        assert names.owns_netns("q", name) or names.owns_link("q", name)
    assert Plan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


@given(
    leaves=st.integers(1, 6),
    per_leaf=st.integers(1, 8),
    prefix=st.from_regex(names.PREFIX_PATTERN, fullmatch=True),
    up=st.sampled_from(["100Mbps", "1Gbps"]),
)
def test_names_fit_and_are_unique(leaves, per_leaf, prefix, up):
    plan = make_plan(
        f"leaf-spine:leaves={leaves},hosts_per_leaf={per_leaf},bandwidth=200Mbps,uplink_bandwidth={up}", prefix=prefix
    )
    devices = [e.ifname for k in plan.links for e in (k.a, k.b)] + [s.bridge for s in plan.switches]
    assert all(len(d) <= 15 for d in devices) and len(set(devices)) == len(devices)
    assert len(set(plan.namespaces)) == len(plan.namespaces) and all(
        names.owns_netns(prefix, ns) for ns in plan.namespaces
    )
    assert all(names.owns_link(prefix, d) for d in devices)
    assert len({h.address for h in plan.hosts}) == len(plan.hosts)
    src, dst = plan.hosts[0].name, plan.hosts[-1].name
    assert plan.path_rate(src, dst) == min((e.egress.rate for e in plan.path(src, dst)), default=float("inf"))


def test_prefix_ownership_is_exact():
    assert names.owns_netns("cs", "cs-h12") and names.owns_netns("cs", "cs-s0")
    for other in ("cs2-h0", "cs-h0x", "xcs-h0", "cs-h", "cs-b0", "cs_h0"):
        assert not names.owns_netns("cs", other)
    assert names.owns_link("cs", "cs-l3a") and names.owns_link("cs", "cs-br1")
    for other in ("cs-l3c", "cs-l3", "cs2-l3a", "cs-x0", "eth0", "cs-br"):
        assert not names.owns_link("cs", other)
    assert len(names.veth_name("abcdef", names.MAX_INDEX, "b")) <= 15


@pytest.mark.parametrize("rate_bits", [1e6, 200e6, 1e9, 10e9])
def test_shaping_settings(rate_bits):
    s = Shaping.for_rate(rate_bits / 8, queue=0.01)
    assert s.burst == max(80 * 1024, int(rate_bits / 8 * 1e-3)) and s.limit == int(rate_bits / 8 * 0.01) + s.burst
    assert s.tc_args()[:3] == ["tbf", "rate", f"{round(rate_bits)}bit"]
    assert Shaping.for_rate(rate_bits / 8, burst=16 * 1024).burst == 16 * 1024
    assert Shaping.for_rate(rate_bits / 8, burst=100).burst == 2 * 1514  # at least two frames


def test_state_round_trip_and_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLSIM_NETLAB_STATE_DIR", str(tmp_path))
    plan = make_plan("netlab-2rack", prefix="st")
    path = write_state("st", {"prefix": "st", "status": "up", "plan": plan.to_dict()})
    assert path == tmp_path / "st.json" and not list(tmp_path.glob(".*.tmp"))
    assert Plan.from_dict(read_state("st")["plan"]) == plan
    assert read_state("zz") is None
    state_path("st").write_text("{not json")
    assert read_state("st") is None
    with locked("st"), pytest.raises(NetlabError, match="another collsim netlab command"), locked("st"):
        pass


def test_rank_commands_follow_the_contract():
    plan = make_plan("star:hosts=2,bandwidth=1Gbps,gpus_per_host=2,intra_bandwidth=10GB/s", prefix="rc")
    cmds = rank_commands(
        plan,
        ["--json", "mine.jsonl", "-b", "8"],
        json_path=Path("/x.jsonl"),
        python="py",
        base_env={"OMP_NUM_THREADS": "2"},
    )
    assert [c.ns for c in cmds] == ["rc-h0", "rc-h0", "rc-h1", "rc-h1"]
    assert [c.env["LOCAL_RANK"] for c in cmds] == ["0", "1", "0", "1"]
    assert {c.env["MASTER_ADDR"] for c in cmds} == {"10.213.0.1"} and cmds[3].env["GLOO_SOCKET_IFNAME"] == "rc-l1a"
    assert cmds[0].env["OMP_NUM_THREADS"] == "2" and cmds[0].env["WORLD_SIZE"] == "4"
    assert cmds[2].argv[:9] == ("ip", "netns", "exec", "rc-h1", "py", "-m", "netlab.rankhost", "h1", "validate")
    assert cmds[2].argv[9:] == ("--json", "mine.jsonl", "-b", "8", "--topology", plan.spec)  # the user's --json wins


def test_a_lone_host_runs_on_loopback(tmp_path):
    spec = tmp_path / "solo.yaml"
    spec.write_text("name: solo\nhosts: [{name: s, gpus: 2, intra_bandwidth: 10GB/s}]\n")
    plan = make_plan(str(spec))
    assert plan.links == () and plan.hosts[0].address is None and plan.farthest_pair() is None
    env = rank_commands(plan, [], json_path=Path("r"), base_env={})[1].env
    assert (env["MASTER_ADDR"], env["GLOO_SOCKET_IFNAME"]) == ("127.0.0.1", "lo")


def test_missing_says_what(monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "tc" else f"/sbin/{tool}")
    assert system.missing() == ["root (CAP_NET_ADMIN to create namespaces, veths and qdiscs)", "`tc` (iproute2)"]
    with pytest.raises(NetlabUnavailable, match=r"netlab needs root .* and `tc` \(iproute2\); missing"):
        system.require()


def test_batch_refuses_words_with_spaces():
    with pytest.raises(NetlabError, match="whitespace"):
        system.batch(["ip"], [["netns", "add", "a b"]])


def test_stop_ends_whole_process_groups():
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    procs = [subprocess.Popen([sys.executable, "-c", script], start_new_session=True) for _ in range(2)]
    time.sleep(0.5)
    assert _wait(procs, time.monotonic() + 0.3, grace=5) is True  # the deadline passed first
    _stop(procs, wait=2)
    assert all(p.returncode is not None for p in procs)
    for p in procs:  # the grandchildren are gone too
        with pytest.raises(ProcessLookupError):
            os.killpg(p.pid, 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["netlab", "up", "torus:dims=2x2,bandwidth=1Gbps"], "cannot be emulated"),
        (["netlab", "up", "netlab-star4", "--prefix", "BAD"], "not a valid netlab prefix"),
        (["netlab", "up", "netlab-star4", "--queue", "-1ms"], "--queue"),
        (["netlab", "run", "netlab-star4", "--json", "a", "--", "--json", "b"], "not both"),
        (["netlab", "up", "no-such-topology"], "no topology 'no-such-topology'"),
    ],
)
def test_cli_errors_are_one_line(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim: error: ") and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["netlab", "down"], ["netlab", "status"], ["netlab", "up", "netlab-star4"]])
def test_cli_without_root_says_what_is_missing(capsys, monkeypatch, command):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("shutil.which", lambda tool: f"/sbin/{tool}")  # ip and tc present, whatever this machine has
    assert main(command) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "collsim: error: netlab needs root (CAP_NET_ADMIN to create namespaces, veths and qdiscs); missing on this machine\n"
    )


def test_a_zombie_does_not_make_a_lab_busy():
    """A rank that was killed but not yet reaped runs nothing: netlab does not count it as a live process."""
    import os
    import subprocess
    import time

    from netlab.system import _running

    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(child.pid):
        time.sleep(0.05)  # exited, not yet waited for: a zombie
    assert not _running(child.pid)
    assert os.path.exists(f"/proc/{child.pid}")  # still there as a zombie
    child.wait()
    assert _running(os.getpid())
