"""The report spec (schema, path-qualified errors), clusters at every size, and the points of a sweep."""

from __future__ import annotations

import pytest
import yaml

from reports.clusters import build_graph, cluster_refs
from reports.points import report_points, run_point, workload_of
from reports.spec import bundled_specs, load_spec, parse_spec
from sim.algorithms import algorithm_names
from sim.errors import ConfigError
from sim.topology import hosts_of

from .report_fixtures import extra_algorithms, tiny_spec


def test_defaults_follow_ddp_and_the_registry():
    spec = parse_spec(tiny_spec(algorithms=None))
    assert spec.ddp.bucket_size == 25 * 2**20 and spec.ddp.first_bucket == 2**20 and spec.ddp.overlap
    assert spec.algorithm_specs == algorithm_names("allreduce")
    assert spec.parameters_label == "nominal"
    w = workload_of(spec)
    assert w.forward_s == pytest.approx(0.010 / 3) and w.backward_s == pytest.approx(0.020 / 3)


def test_new_algorithms_appear_without_code_changes():
    with extra_algorithms():
        spec = parse_spec(tiny_spec(algorithms=None))
        assert {"ring", "test-flat", "test-spare"} <= set(spec.algorithm_specs)
        assert {p.algorithm for p in report_points(spec)} >= {"ring", "test-flat", "test-spare"}


def test_compute_from_flops_and_gradients_from_parameters():
    job = {
        "parameters": "1.3B",
        "gradient_dtype": "bf16",
        "flops_per_iteration": "7.8PFLOP",
        "gpu_peak_flops": "989TFLOPS",
        "utilization": 0.4,
        "forward_fraction": 0.25,
    }
    spec = parse_spec(tiny_spec(job=job))
    assert spec.job.total_gradient_bytes == 2.6e9
    assert spec.job.compute_s == pytest.approx(7.8e15 / (989e12 * 0.4))
    assert spec.job.forward_s == pytest.approx(spec.job.compute_s / 4)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, "colour: unknown field (valid: job, cluster"),
        ({"job": {"parameters": "lots", "compute_time": 1}}, "job.parameters: cannot read 'lots' as a count"),
        ({"job": {"parameters": 1e6}}, "job: give compute_time, or flops_per_iteration"),
        ({"job": {"parameters": 1e6, "gradient_bytes": 4e6, "compute_time": 1}}, "job: give parameters"),
        (
            {"job": {"parameters": 1e6, "gradient_dtype": "fp13", "compute_time": 1}},
            "job.gradient_dtype: unknown dtype",
        ),
        (
            {"job": {"parameters": 1e6, "flops_per_iteration": 1e12, "gpu_peak_flops": 1e12, "utilization": 1.5}},
            "job.utilization: must be <= 1",
        ),
        ({"algorithms": ["ring", "nope"]}, "algorithms[1]: unknown allreduce algorithm 'nope' (valid: ring"),
        ({"algorithms": ["ring", "ring"]}, "algorithms: 'ring' is listed twice"),
        ({"ddp": {"bucket_size": "-1MiB"}}, "ddp.bucket_size: must be > 0"),
        ({"sweep": {"message_sizes": "1MiB:1KiB"}}, "sweep.message_sizes: need 0 < MIN <= MAX"),
        ({"cluster": {"builder": "star", "sizes": "64..8"}}, "cluster.sizes: need 1 <= MIN <= MAX"),
        ({"cluster": {"builder": "star", "topology": "netlab-star4", "sizes": [2]}}, "cluster: give exactly one of"),
        ({"cluster": {"builder": "star", "params": {"bandwidth": 1e9}}}, "cluster: sizes: required with builder"),
        ({"gamma": -1}, "gamma: must be >= 0"),
    ],
)
def test_bad_specs_name_the_field(change, message):
    with pytest.raises(ConfigError) as info:
        parse_spec(tiny_spec(**change))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_calibration_files_are_checked_and_applied(tmp_path):
    with pytest.raises(ConfigError, match="calibration: no such file"):
        parse_spec(tiny_spec(calibration="fit.json"), tmp_path)
    (tmp_path / "fit.json").write_text("{}")
    with pytest.raises(ConfigError, match="calibration: .*fit.json: topology: required"):
        parse_spec(tiny_spec(calibration="fit.json"), tmp_path)
    (tmp_path / "fit.json").write_text(
        '{"topology": "star", "classes": {"same-switch": {"latency": 1e-3, "efficiency": 0.5}},'
        ' "gamma": 1e-9, "calibrated": ["same-switch.latency", "same-switch.efficiency", "gamma"]}'
    )
    spec = parse_spec(tiny_spec(calibration="fit.json"), tmp_path)
    assert spec.parameters_label == "calibrated" and spec.effective_gamma == 1e-9
    assert parse_spec(tiny_spec(calibration="fit.json", gamma=0), tmp_path).effective_gamma == 0


@pytest.mark.parametrize(
    "builder, params, size, hosts",
    [
        ("star", {"bandwidth": "25Gbps"}, 12, 12),
        ("ring", {"bandwidth": "25Gbps"}, 6, 6),
        ("dgx", {}, 32, 4),
        ("leaf-spine", {"hosts_per_leaf": 4, "spines": 2, "bandwidth": "100Gbps"}, 2, 2),
        ("leaf-spine", {"hosts_per_leaf": 4, "spines": 2, "bandwidth": "100Gbps"}, 16, 16),
        (
            "leaf-spine",
            {
                "hosts_per_leaf": 4,
                "spines": 2,
                "bandwidth": "100Gbps",
                "gpus_per_host": 2,
                "intra_bandwidth": "100GB/s",
            },
            16,
            8,
        ),
        ("torus", {"bandwidth": "25Gbps"}, 12, 12),
    ],
)
def test_builders_scale_to_every_size(builder, params, size, hosts):
    spec = parse_spec(tiny_spec(cluster={"builder": builder, "params": params, "sizes": [size]}))
    (ref,) = cluster_refs(spec)
    graph = build_graph(ref)
    assert len(graph.graph["ranks"]) == size and len(hosts_of(graph)) == hosts
    assert len(hosts_of(build_graph(ref, spare_hosts=1))) >= hosts + 1


@pytest.mark.parametrize(
    "cluster, message",
    [
        ({"builder": "dgx", "sizes": [12]}, "cluster.sizes: 12 GPUs is not a whole number of 8-GPU hosts"),
        ({"builder": "star", "params": {"hosts": 4, "bandwidth": 1e9}, "sizes": [4]}, "cluster.params.hosts: set from"),
        ({"builder": "star", "params": {"bandwidth": -1}, "sizes": [4]}, "cluster.params.bandwidth: must be > 0"),
        ({"builder": "leaf-spine", "params": {"bandwidth": 1e9}, "sizes": [4]}, "hosts_per_leaf: required"),
        ({"builder": "mesh", "sizes": [4]}, "cluster.builder: unknown builder 'mesh'"),
        ({"topology": "netlab-star4", "sizes": [8]}, "cluster.sizes: 8 GPUs, but 'netlab-star4' has only 4"),
        ({"topologies": ["nowhere.yaml"]}, "cluster.topologies[0]: nowhere.yaml: no such file"),
        ({"topologies": ["netlab-star4", "netlab-star4"]}, "both have 4 GPUs"),
    ],
)
def test_bad_clusters_name_the_field(cluster, message):
    with pytest.raises(ConfigError) as info:
        cluster_refs(parse_spec(tiny_spec(cluster=cluster)))
    assert message in str(info.value)


def test_topology_files_are_read_beside_the_spec(tmp_path):
    (tmp_path / "lab.yaml").write_text(
        yaml.safe_dump({"name": "lab", "builder": "star", "params": {"hosts": 3, "bandwidth": "10Gbps"}})
    )
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(tiny_spec(cluster={"topologies": ["lab.yaml", "netlab-star4"]})))
    spec, path = load_spec(tmp_path / "spec.yaml")
    refs = cluster_refs(spec)
    assert [(r.gpus, r.label) for r in refs] == [(3, "lab"), (4, "netlab-star4")]
    assert run_point(report_points(spec)[0]).status == "ok"


def test_one_topology_at_several_sizes_uses_its_first_gpus():
    spec = parse_spec(tiny_spec(cluster={"topology": "dgx-a100-16", "sizes": [8, 16]}))
    refs = cluster_refs(spec)
    assert [r.gpus for r in refs] == [8, 16] and refs[0].digest == refs[1].digest
    assert refs[0].label == "dgx-a100-16 (8 of 128 GPUs)"


def test_points_have_stable_keys_that_follow_their_inputs():
    a = report_points(parse_spec(tiny_spec()))
    b = report_points(parse_spec(tiny_spec()))
    assert [p.key for p in a] == [p.key for p in b] and len({p.key for p in a}) == len(a) == 4
    c = report_points(parse_spec(tiny_spec(ddp={"bucket_size": "4MiB"})))
    assert a[0].key != c[0].key and a[-1].key == c[-1].key  # the collective sweep does not use buckets
    d = report_points(parse_spec(tiny_spec(gamma=1e-11)))
    assert {p.key for p in a}.isdisjoint(p.key for p in d)


def test_spare_hosts_are_added_to_built_clusters_and_missing_ones_skip():
    with extra_algorithms():
        built = parse_spec(tiny_spec(algorithms=["test-spare"], sweep={"message_sizes": []}))
        assert all(run_point(p).status == "ok" for p in report_points(built))
        whole = parse_spec(
            tiny_spec(algorithms=["test-spare"], cluster={"topology": "netlab-star4"}, sweep={"message_sizes": []})
        )
        (rec,) = [run_point(p) for p in report_points(whole)]
        assert rec.status == "skipped" and "needs a spare host" in rec.reason
        subset = parse_spec(
            tiny_spec(
                algorithms=["test-spare"],
                cluster={"topology": "netlab-star4", "sizes": [3]},
                sweep={"message_sizes": []},
            )
        )
        assert run_point(report_points(subset)[0]).status == "ok"  # host 4 of 4 is spare


def test_the_bundled_default_spec_is_valid():
    assert "default" in bundled_specs()
    spec, path = load_spec("default")
    assert path.name == "default.yaml"
    refs = cluster_refs(spec)
    assert [r.gpus for r in refs] == [8, 16, 32, 64]
    assert len(report_points(spec)) == 2 * len(refs) * len(spec.algorithm_specs)


def test_unknown_spec_lists_the_bundled_ones():
    with pytest.raises(ConfigError, match=r"no such report spec \(not a file, nor a bundled spec: default"):
        load_spec("nonesuch")
