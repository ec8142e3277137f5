"""The quirks of the thirteenth held-out set of published nccl-tests logs (docs/nccl-heldout.md, "A thirteenth held-out
set"): each test feeds a short excerpt to the log reader (validate.calibration's import and its fit, and
benchmarks/nccl_logs.py)."""

from __future__ import annotations

import nccl_logs
import pytest

from sim.cluster import Cluster
from sim.errors import CalibrationError
from validate.calibration import read_samples
from validate.calibration.compare import predict
from validate.calibration.file import Calibration
from validate.calibration.fit import fit_calibration

#: a homelab guide's 2-node run, "Key Parts": rank lines without the device's bus id, NCCL INFO lines, and the
#: table cut by the poster to size, time, algbw, busbw and #wrong (4 ranks: busbw = 1.5 algbw)
CUT = """\
# Using devices
#  Rank  0 Group  0 Pid  15326 on gpuserver1 device  0 Tesla V100-PCIE-16GB
#  Rank  1 Group  0 Pid  15327 on gpuserver1 device  1 Tesla V100-PCIE-16GB
#  Rank  2 Group  0 Pid  14869 on gpuserver2 device  0 Tesla V100-PCIE-16GB
#  Rank  3 Group  0 Pid  14871 on gpuserver2 device  1 Tesla V100-PCIE-16GB

gpuserver1:15326 [0] NCCL INFO NET/IB : Using [0]={[0] rocep130s0:1/RoCE, [1] rocep130s0:2/RoCE}
gpuserver1:15326 [0] NCCL INFO Using network IB

#       size      time   algbw   busbw  #wrong
     1048576    1398.1    0.75    1.12       0
   134217728   107800    1.25    1.87       0
"""


def test_rank_lines_without_a_bus_id_and_a_table_cut_to_five_columns_are_read(tmp_path):
    """The post's rank lines print no ``[bus id]`` (they were not read: no hosts, no GPU), and its table names
    only size, time, algbw, busbw and #wrong (no row was read: "an nccl-tests log without result rows"): both
    are read now, 4 ranks on 2 hosts, and its GPU is refused as for a full log."""
    path = tmp_path / "v100.txt"
    path.write_text(CUT)
    samples, source = read_samples(str(path))
    assert [(s.size, s.time_s, s.ranks, s.hosts) for s in samples] == [
        (1048576, pytest.approx(1398.1e-6), 4, 2),
        (134217728, pytest.approx(0.1078), 4, 2),
    ]
    assert {s.gpu for s in samples} == {"Tesla V100-PCIE-16GB"} and source.detail.startswith("allreduce, 4 ranks")
    with pytest.raises(CalibrationError, match=r"name 'Tesla V100-PCIE-16GB', but the topology builds A100"):
        fit_calibration(samples, Cluster("hgx:hosts=2,gpus_per_host=2,gpu=a100"), [source])
    with pytest.raises(nccl_logs.LogError, match=r"V100 GPUs are not modelled"):
        nccl_logs.parse_log(path)
    # a row of the cut table that does not read (a word for its time) is no row
    bad = tmp_path / "bad.txt"
    bad.write_text(CUT.replace("1398.1", "n/a"))
    assert [s.size for s in read_samples(str(bad))[0]] == [134217728]


#: a recipe's single-node run on 8 H200 NVL (PCIe cards with NVLink bridges), rank lines of single spaces
NVL = """\
# nccl-tests version 2.17.6 nccl-headers=22808 nccl-library=22808
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 34359738368 maxBytes 34359738368 step: 2(factor)
#
# Using devices
#   Rank 0 Group 0 Pid 52 on node device 0 [0000:18:00] NVIDIA H200 NVL
#   Rank 1 Group 0 Pid 52 on node device 1 [0000:67:00] NVIDIA H200 NVL
#   Rank 2 Group 0 Pid 52 on node device 2 [0000:b2:00] NVIDIA H200 NVL
#   Rank 3 Group 0 Pid 52 on node device 3 [0000:d8:00] NVIDIA H200 NVL
#   Rank 4 Group 0 Pid 52 on node device 4 [0001:18:00] NVIDIA H200 NVL
#   Rank 5 Group 0 Pid 52 on node device 5 [0001:69:00] NVIDIA H200 NVL
#   Rank 6 Group 0 Pid 52 on node device 6 [0001:8f:00] NVIDIA H200 NVL
#   Rank 7 Group 0 Pid 52 on node device 7 [0001:b3:00] NVIDIA H200 NVL
#
#       size    count   type  redop  root   time   algbw   busbw  #wrong
#        (B)  (elements)                    (us)  (GB/s)  (GB/s)
  34359738368 8589934592  float   sum    -1  875713  39.24   68.66       0
# Avg bus bandwidth    : 68.6248
"""


def test_calibrate_and_compare_refuse_a_pcie_card_of_the_topologys_gpu(tmp_path):
    """`calibrate -t hgx:hosts=1,gpu=h200 --from` an H200 NVL log fitted the NVSwitch board's links (NVLS) to PCIe
    cards and exited 0, where benchmarks/nccl_logs.py refuses the post: the fit and compare refuse it now too,
    one line naming the card; an HGX H200's log is fitted."""
    path = tmp_path / "nvl.txt"
    path.write_text(NVL)
    samples, source = read_samples(str(path))
    assert {s.gpu for s in samples} == {"NVIDIA H200 NVL"} and samples[0].ranks == 8
    cluster = "hgx:hosts=1,gpu=h200"
    with pytest.raises(CalibrationError, match=r"'NVIDIA H200 NVL', a PCIe card without an NVSwitch, but the topol"):
        fit_calibration(samples, Cluster(cluster), [source])
    with pytest.raises(CalibrationError, match=r"hgx does not build NVIDIA H200 NVL$"):
        predict(samples, cluster, Calibration(topology=cluster))
    with pytest.raises(nccl_logs.LogError, match=r"H200 NVL is a PCIe card without an NVSwitch"):
        nccl_logs.parse_log(path)
    sxm = tmp_path / "sxm.txt"
    sxm.write_text(NVL.replace("NVIDIA H200 NVL", "NVIDIA H200"))
    samples, source = read_samples(str(sxm))
    fit_calibration(samples, Cluster(cluster), [source])  # the HGX board's GPU: fitted


def test_cli_refuses_a_pcie_card_in_one_line(tmp_path, capsys):
    """The refusal is one line and exit 2 from the command line."""
    from collsim.cli import main

    path = tmp_path / "nvl.txt"
    path.write_text(NVL)
    code = main(["validate", "calibrate", "-t", "hgx:hosts=1,gpu=h200", "--from", str(path), "-o", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "H200 NVL" in err[0]


#: a SkyPilot page's 2-node run of 16 H200 over the pods' TCP network: no rank lines, no command, no '#' before
#: the average; at 2 GB/s the median's two decimals admit 16 or 17 ranks, each row's own admit 16 alone
TCP = """\
#                                                              out-of-place                       in-place
#     size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#      (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
536870912      134217728     float     sum      -1   269865    1.99    3.73      0   267004    2.01    3.77      0
1073741824     268435456     float     sum      -1   536466    2.00    3.75      0   539227    1.99    3.73      0
2147483648     536870912     float     sum      -1  1071841    2.00    3.76      0  1078080    1.99    3.73      0
4294967296    1073741824     float     sum      -1  2137076    2.01    3.77      0  2143324    2.00    3.76      0
8589934592    2147483648     float     sum      -1  4280791    2.01    3.76      0  4339219    1.98    3.71      0

Avg bus bandwidth    : 3.7478
"""


def test_the_rank_count_every_row_admits_alone_is_read(tmp_path):
    """A table of rows at 2 GB/s was refused ("cannot tell the number of ranks ... suggests ranks=16"): the
    median's slack admitted 17 too. Each row's own two decimals admit 16 alone, so 16 is read; where the rows
    admit two counts the log is still refused with the hint."""
    path = tmp_path / "tcp.txt"
    path.write_text(TCP)
    samples, source = read_samples(str(path))
    assert {s.ranks for s in samples} == {16} and len(samples) == 5
    loose = tmp_path / "loose.txt"  # one row at 0.50 GB/s: 15, 16 and 17 ranks all print 0.94
    loose.write_text(TCP.splitlines()[2] + "\n 536870912  134217728  float  sum  -1  1073742  0.50  0.94  0\n")
    with pytest.raises(CalibrationError, match=r"cannot tell the number of ranks .*give FILE:ranks=N"):
        read_samples(str(loose))


#: a report's 4-node run on ALCF Polaris (4 A100 and 2 Slingshot NICs a node): the column lines and rows only,
#: the hardware in the header
POLARIS = """\
#% hardware as stated: 4 nodes x 4 A100-SXM4-40GB, HPE Slingshot 11 (cxi), 2 NICs/node, NCCL 2.28.3
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
    33554432       8388608     float     sum      -1  2045.76   16.40   30.75       0  2099.26   15.98   29.97       0
   134217728      33554432     float     sum      -1  8776.81   15.29   28.67       0  8860.42   15.15   28.40       0
  1073741824     268435456     float     sum      -1  70570.3   15.22   28.53       0  70527.4   15.22   28.55       0
  4294967296    1073741824     float     sum      -1   283197   15.17   28.44       0   282835   15.19   28.47       0
"""


def test_slingshot_and_its_nics_per_node_are_the_stated_network(tmp_path):
    """A header naming HPE Slingshot 11 and '2 NICs/node' got the A100 preset's NIC per GPU (4 a node): the
    nominal prediction was 3.4x fast. Slingshot's NIC speed (200 Gb/s; Slingshot 10's 100) and the count
    stated per node are the network now."""
    path = tmp_path / "a100-polaris-4node.txt"
    path.write_text(POLARIS)
    log = nccl_logs.parse_log(path)
    assert (log.ranks, log.hosts, log.gpus_per_host, log.gpu) == (16, 4, 4, "a100")
    g = nccl_logs.topology(log)
    assert (g.graph["nics_per_host"], g.graph["nic_bw"]) == (2, 25e9)
    assert nccl_logs.stated_nics("#% Slingshot 10, 4 NICs per node") == (4, 100.0)


#: a notes page's run on 4 of a DGX A100's GPUs with peer access off: NVLink unused, 45x slower
P2P_OFF = """\
NCCL_P2P_DISABLE=1 ./build/all_reduce_perf -b 1G -e 10G -f 2 -g 4
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1   309766    3.47    5.20      0   309701    3.47    5.20      0
  2147483648     536870912     float     sum      -1   619555    3.47    5.20      0   619608    3.47    5.20      0
"""


def test_peer_access_turned_off_is_reported_as_not_modelled(tmp_path):
    """`NCCL_P2P_DISABLE=1` (a host's GPUs exchange through host memory, not NVLink) went unremarked: the nominal
    rows were 98% off with no word. It is an unmodelled setting now (the benchmark tags the row, calibrate
    warns); set to 0 it is not."""
    path = tmp_path / "p2p.txt"
    path.write_text(P2P_OFF)
    samples, source = read_samples(str(path))
    assert source.unmodelled == ["NCCL_P2P_DISABLE=1"] and {s.ranks for s in samples} == {4}
    path.write_text(P2P_OFF.replace("NCCL_P2P_DISABLE=1", "NCCL_P2P_DISABLE=0"))
    assert read_samples(str(path))[1].unmodelled == []
