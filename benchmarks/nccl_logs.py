"""Predict published ``all_reduce_perf`` logs with ``nccl``: nominally, calibrated in sample, and
calibrated out of sample.

    python benchmarks/nccl_logs.py [FOLDER] [--min-size 1MiB] [--rows] [--tables nominal,in-sample,out-of-sample]
                                   [--exclude GLOB]

For every log in FOLDER (default: the development set of published logs kept beside the repository, in
../shared/data/nccl-tests, where a checkout has it; give your own folder otherwise) it reads the hardware the log states (GPU
model from the device lines, NICs from ``8x 400 Gb/s``-style figures in its header), builds the matching
``hgx`` topology, simulates every size >= --min-size with ``nccl`` (``nccl:algo=...`` where the log says
NCCL_ALGO was forced, ``nccl:version=...`` where it states the NCCL release that ran) and prints the errors
of the predicted times: per log, then median / p90 / max over the 1-node logs and the multi-node logs.
Three tables:

* **nominal** -- hardware figures only;
* **in-sample** -- calibrated on the log itself (``collsim validate calibrate --from LOG``: efficiencies
  <= 1 per link group, a correction of NCCL's fixed cost per protocol), with the efficiency the fit wanted
  before clamping;
* **out-of-sample** -- calibrated on the largest smaller run of the same hardware (1 node -> 2 nodes, 2 -> 4; the
  same hardware: the same file name before ``-<N>node``), the cross-host links at the NIC's stated rate
  where the smaller run is one node.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.algorithms import get_algorithm  # noqa: E402
from sim.cluster import Cluster  # noqa: E402
from sim.collectives import get_collective  # noqa: E402
from sim.errors import CalibrationError, CollsimError  # noqa: E402
from sim.nccl import ofi  # noqa: E402
from sim.nccl.efa import NEWEST_PLUGIN, parse_plugin  # noqa: E402
from sim.nccl.efa import PRESETS as EFA_PRESETS  # noqa: E402
from sim.nccl.versions import parse_version, tuning_for  # noqa: E402
from sim.simulate import simulate  # noqa: E402
from sim.topology import hgx  # noqa: E402
from sim.topology.hgx import PRESETS as HGX_PRESETS  # noqa: E402
from sim.units import parse_size  # noqa: E402
from validate.calibration.fit import fit_calibration  # noqa: E402
from validate.calibration.inputs import (  # noqa: E402
    GPU_MODEL,
    NCCL_COLLECTIVES,
    NVLS_UNAVAILABLE,
    PCIE_CARD,
    RANK_LINE,
    UNNAMED_DEVICE,
    launch_hosts,
    rank_host,
    read_samples,
    stated_cxi,
    stated_efa,
    strip_label,
)

#: GPU models as device lines and headers name them (the importer's): the ones ``hgx`` builds, and the ones it cannot
_GPU = GPU_MODEL
_BUILT = ("h100", "h200", "h800", "b200", "a100", "a800", "gh200")  # (GH200: the Grace Hopper nodes, gh200-quad)
#: GPUs whose NVSwitch reduces (NVLink SHARP): their logs get an NVLS-capable preset
_NVLS_GPUS = ("h100", "h200", "h800", "b200")
#: why hgx does not build a GPU's servers, where there is more to say than that it does not
_NOT_BUILT = {
    "gb200": "a Grace Blackwell superchip: its NVL72 rack is one NVLink domain across trays (multi-node NVLink, "
    "MNNVL), which hgx does not build",
    "gb300": "a Grace Blackwell Ultra superchip: its NVL72 rack is one NVLink domain across trays (multi-node "
    "NVLink, MNNVL), which hgx does not build",
    "b300": "Blackwell Ultra: hgx has no sourced figures for its servers (ConnectX-8 800 Gb/s NICs, PCIe Gen6)",
}
#: a device line's GPU index on its host (``... on node1 device  7 [0000:da:00] ...``)
_DEVICE = re.compile(r"\bdevice\s+(\d+)\s+\[")
#: an RCCL (AMD) run of rccl-tests, which prints the same table
_RCCL = re.compile(r"\bRCCL version\b|\brccl-tests\b|\blibrccl\b|\bROCm version\b", re.I)
#: an AMD GPU by name (``AMD Instinct MI250X``, rocminfo's ``gfx90a``): where no NVIDIA model is named, a log of one
_AMD_GPU = re.compile(r"\bAMD Instinct(?: MI\w+)?|\bInstinct MI\d\w*|\bgfx9[0-4][0-9a-f]\b")
_UNNAMED_DEVICE = UNNAMED_DEVICE  # (the importer's)
#: an NVIDIA board :data:`_GPU` does not list, by name (``RTX 5880 Ada``, ``GeForce RTX 4090``, ``RTX A6000``,
#: ``RTX PRO 6000``, ``Quadro RTX 8000``, ``TITAN V``): PCIe workstation and gaming cards, none of them on an
#: HGX board; where no device line names the GPU, the header's or the prose's naming one is the log's GPU
_OTHER_NVIDIA = re.compile(
    r"\b(?:(?:NVIDIA|GeForce|Quadro)\s+)*(?:RTX|GTX|TITAN)(?:\s+PRO)?\s*[A-Z]?\d{3,4}\w*(?:\s+(?:Ada|Ti|SUPER)\b)?"
    r"|\bTITAN\s+(?:V|X\w*|RTX)\b"
)
#: the GPUs of an HGX / DGX board: a header's NIC count is stated for them, and a host whose rank lines show
#: fewer (cut short, or none at all) is taken as one
_HGX_GPUS_PER_NODE = 8
#: a GH200 node's GPUs (four Grace Hopper superchips: HPE Cray EX254n), named in device lines
_GH200_PER_NODE = 4
_GH200 = re.compile(r"\bGH200\b", re.I)
_PCIE_CARD = PCIE_CARD  # (the importer's)
#: what follows a GPU's name where it is a PCIe card ("H200 NVL", "H100 PCIe", "A100-PCIE-40GB")
_PCIE_SUFFIX = re.compile(r"[\s-]*(?:NVL\b|PCIe\b|PCIE\b)")
#: multi-node NVLink (a GB200 / GB300 NVL72 rack's NVLink domain across trays): the setting, or NCCL's comm line
_MNNVL = re.compile(r"\bNCCL_MNNVL_ENABLE=1\b|\bMNNVL 1\b")
#: InfiniBand generations by name, Gb/s per port
_IB = {"xdr": 800, "ndr": 400, "ndr200": 200, "hdr": 200, "hdr100": 100, "edr": 100}
#: 400 Gb/s, 400Gbps, 400G, 400GbE; never GB/s or GBps (gigabytes: a busbw the header quotes), whatever the case flag
_UNIT = r"\s*G(?:(?-i:b)/s|(?-i:b)ps|bit/s|bits?|(?-i:b)E\b|(?-i:b)\b|\b)"
_TIMES = r"\s*[x×*]\s*"  # 8x, 8 ×, 8*
_WORDS = r"((?:[A-Za-z][\w-]*\s+){0,3}?)"  # up to three words between a count and a speed
#: ``8x 400 Gb/s``, ``8x CX-7 IB 400Gbps``, ``16 x 100 Gbps``, ``8*400G``, ``8x 200GbE``
_COUNT_SPEED = re.compile(r"(?<![\w.])(\d+)" + _TIMES + _WORDS + r"(\d+(?:\.\d+)?)" + _UNIT)
#: ``100Gbps x 16``, ``400G*8``
_SPEED_COUNT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)" + _UNIT + _TIMES + r"(\d+)\b")
#: ``8x NDR``, ``8x ConnectX-6 HDR``, ``4x HDR200``, ``8x NDR400``
_COUNT_IB = re.compile(r"(?<![\w.])(\d+)" + _TIMES + _WORDS + r"(XDR|NDR200|NDR|HDR100|HDR|EDR)(\d{3})?\b", re.I)
#: a count of ConnectX adapters by model, no speed stated (``4x NVIDIA/Mellanox ConnectX-7 NICs``): the model's
#: port speed, as NVIDIA's product briefs state it (ConnectX-5 100, -6 200, -7 400, -8 800 Gb/s)
_COUNT_CX = re.compile(r"(?<![\w.])(\d+)" + _TIMES + r"((?:[A-Za-z][\w/-]*\s+){0,2}?)(?:ConnectX|CX)-?([5-8])\b", re.I)
_CX_SPEED = {"5": 100.0, "6": 200.0, "7": 400.0, "8": 800.0}
#: a count in words, in the header's ``#%`` lines: ``eight 400 Gb/s ConnectX-7``, ``one 100 Gbps NIC``
_WORD_COUNTS = {"one": 1, "two": 2, "four": 4, "eight": 8, "sixteen": 16, "thirty-two": 32}
_WORD_SPEED = re.compile(r"\b(" + "|".join(_WORD_COUNTS) + r")\s+" + _WORDS + r"(\d+(?:\.\d+)?)" + _UNIT, re.I)
#: GPUs to NICs in the header's ``#%`` lines, without a speed: ``GPU:NIC = 2:1`` (two GPUs share a NIC), ``NIC:GPU = 1:1``
_GPU_NIC_RATIO = re.compile(r"\b(GPU|NIC)s?\s*:\s*(?:GPU|NIC)s?\s*(?:=|is|of)?\s*(\d+)\s*:\s*(\d+)\b", re.I)
#: a count for every GPU: ``2x 200 Gb/s per GPU``
_PER_GPU = re.compile(r"\s*(?:(?:NICs?|HCAs?|EFA|adapters?|ports?|links?)\s+)?(?:per|for each|each|/)\s*GPU\b", re.I)


#: a bare port speed in the header's ``#%`` lines (``400Gbps InfiniBand``, ``NDR``), or a node's total:
#: in Tb/s (``3.2 Tbps``), EFA's (per instance), one said to be the total, or more than a port carries
#: (``1,600 Gbps``, ``3200 Gbps``: no port is faster than XDR's 800)
_BARE = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(T|G)(?:(?-i:b)/s|(?-i:b)ps|bit/s|(?-i:b)E\b)(?:\s+[\w-]+){0,2}",
    re.I,
)
_BARE_IB = re.compile(r"\b(XDR|NDR200|NDR|HDR100|HDR|EDR)\b")
#: HPE Slingshot by name, Gb/s per NIC as HPE states them: Slingshot 11's Cassini NIC 200, Slingshot 10's (a
#: ConnectX-5) 100
_SLINGSHOT = re.compile(r"\bSlingshot(?:[- ]?(1[01]))?\b", re.I)
#: a count of NICs per node without a speed (``2 NICs/node``, ``4 NICs per node``, ``4 CXI NICs per node``)
_NICS_PER_NODE = re.compile(
    r"(?<![\w.])(\d+)\s+(?:[A-Za-z][\w-]*\s+)?(?:NICs?|HCAs?)\s*(?:/|per)\s*(?:node|host)\b", re.I
)
#: the GPU networks of instance shapes and systems by name, as their makers state them, for a header that
#: names the shape but no NIC figure (a figure in the header wins): (NICs per node, Gb/s each), and the
#: GPUs the shape has (a header that lists several shapes gets the one of the log's GPU)
_SHAPES = (
    (re.compile(r"\bBM\.GPU\.H100\.8\b", re.I), (16, 200.0), ("h100",)),  # OCI: 16 x 200 Gb/s RDMA (3.2 Tb/s)
    (re.compile(r"\bBM\.GPU\.H200\.8\b", re.I), (8, 400.0), ("h200",)),  # OCI: 8 x 400 Gb/s RDMA (3.2 Tb/s)
    (re.compile(r"\bBM\.GPU4\.8\b|\bBM\.GPU\.A100-v2\.8\b", re.I), (16, 100.0), ("a100",)),  # OCI: 16 x 100 RoCE
    (re.compile(r"\bp4de?\.24xlarge\b", re.I), (4, 100.0), ("a100",)),  # AWS: 4 x 100 Gb/s EFA (400 Gb/s)
    (re.compile(r"\bp5e?\.48xlarge\b", re.I), (32, 100.0), ("h100", "h200")),  # AWS: 32 x 100 Gb/s EFA (3,200 Gb/s)
    (re.compile(r"\bp5en\.48xlarge\b", re.I), (16, 200.0), ("h200",)),  # AWS: 16 x 200 Gb/s EFAv3 (3,200 Gb/s)
    (re.compile(r"\bND\s*H[12]00\s*v5\b|\bND96isr_H[12]00_v5\b", re.I), (8, 400.0), ("h100", "h200")),  # Azure: NDR
    (re.compile(r"\bND\s*A100\s*v4\b|\bND96asr_v4\b|\bND96amsr_A100_v4\b", re.I), (8, 200.0), ("a100",)),  # 8 x HDR
    (re.compile(r"\ba3-megagpu-8g\b", re.I), (8, 200.0), ("h100",)),  # GCP A3 Mega: 8 x 200 Gb/s GPU NICs (1,600 Gb/s)
    (re.compile(r"\bDGX\s*[HB]200\b|\bDGX\s*H100\b", re.I), (8, 400.0), ("h100", "h200", "b200")),  # 8 x CX-7 400
    (re.compile(r"\bDGX\s*A100\b", re.I), (8, 200.0), ("a100",)),  # NVIDIA: 8 x ConnectX-6 200 Gb/s (compute fabric)
    # ALCF's Polaris Machine Overview: "a pair of Slingshot 11 network adapters" a node (4 A100s); NERSC's
    # Perlmutter architecture page: four Slingshot 11 NICs a GPU node (4 A100s); Slingshot 11: 200 Gb/s
    (re.compile(r"\bPolaris\b", re.I), (2, 200.0), ("a100",)),
    (re.compile(r"\bPerlmutter\b", re.I), (4, 200.0), ("a100",)),
)
#: ``400G`` alone is a port speed only before a network's name (``A100 40G`` is memory): ``400G IB``
_BARE_G = re.compile(
    r"(?<![\w.,])(\d+)\s*G(?=\s+(?:[\w-]+\s+)?(?:IB|InfiniBand|RoCE\w*|Ethernet|NICs?|HCAs?|network|ConnectX[\w-]*|CX-?\d)\b)"
)
#: CPU vendors by name or code name (the code names in the ``#%`` header only)
_AMD, _INTEL = re.compile(r"\bEPYC\b|\bAMD\b"), re.compile(r"\bXeon\b|\bIntel\b")
_AMD_CODE = re.compile(r"\b(?:Rome|Milan|Genoa|Bergamo|Turin)\b")
_INTEL_CODE = re.compile(r"\b(?:Skylake|Cascade Lake|Ice Lake|Sapphire Rapids|Emerald Rapids|Granite Rapids)\b")


class LogError(ValueError):
    """A file that is not an all_reduce_perf log collsim can read."""


@dataclass
class Log:
    path: Path
    ranks: int
    hosts: int
    gpu: str
    text: str
    ranks_given: int | None = None
    note: str = ""  # how the stated hardware was read where it needed a choice (printed with the log)
    nccl: str = ""  # the NCCL release the log states ("" where it states none: the newest tuner decides)
    unmodelled: tuple[str, ...] = ()  # NCCL settings the log states that the model does not represent
    #: (instance family, aws-ofi-nccl release) of a run over AWS EFA as the whole log states them, else None
    efa: tuple[str | None, str | None] | None = None
    collective: str = "allreduce"  # the collective of the log's table (all-reduce, all-gather, reduce-scatter)
    #: ``nccl`` options for the NCCL settings an EFA log states (``buffsize=8388608``: :data:`_EFA_SETTING`)
    settings: tuple[str, ...] = ()
    #: the aws-ofi-nccl release of a run over HPE Slingshot's libfabric provider cxi (``""``: not stated), else None
    cxi: str | None = None

    @property
    def tuner(self) -> str:
        """Which NCCL release's tuner predicts it, as the log's line says (``""`` for the default)."""
        return f"NCCL {tuning_for(parse_version(self.nccl))[1]}" if self.nccl else ""

    @property
    def gpus_per_host(self) -> int:
        return max(1, self.ranks // self.hosts)


def parse_log(path: Path, ranks: int | None = None) -> Log:
    """Read an nccl-tests all_reduce_perf log as calibration reads it (launcher labels, rank lines without
    their ``#`` or only some of them, ``-g 8`` processes, no "Collective test starting" line, one-size logs;
    without rank lines ``ranks`` or the command line or all-reduce's busbw / algbw must say how many).
    The GPUs per node are the most rank lines one host has, the nodes the ranks they make. The GPU is the
    one the device lines (else the header) name; a GPU ``hgx`` does not build (GB200, GH200, V100, PCIe cards
    without an NVSwitch where a host runs more than one, ...) or device lines naming no model are refused with that
    name."""
    text = path.read_text(errors="replace")
    lines = [strip_label(line) for line in text.splitlines()]
    # (a file without nccl-tests' header, columns or command is read all the same: a post may keep only rows,
    # and the importer refuses what has none, or what it cannot count, in a line that names why)
    if m := _RCCL.search(text):
        raise LogError(f"{path.name}: an RCCL run on AMD GPUs ({m.group(0)!r}); collsim models NCCL on NVIDIA GPUs")
    found: dict[tuple[int, str], str] = {}  # (rank, host) -> device; a log of several runs repeats them
    seen: Counter[str] = Counter()  # host -> GPUs its rank lines show: as many as lines, or its highest index + 1
    for line in lines:
        if m := RANK_LINE.match(line.strip()):
            found.setdefault((int(m.group(1)), host := rank_host(m)), m.group(3))
            if d := _DEVICE.search(line):  # a post that lists ranks 0, 7, 8, 15 shows device 7 on each host
                seen[host] = max(seen[host], int(d.group(1)) + 1)
    try:
        samples, source = read_samples(f"{path}:ranks={ranks}" if ranks else str(path))
    except CalibrationError as exc:
        raise LogError(str(exc)) from None
    n = samples[0].ranks
    if samples[0].collective not in NCCL_COLLECTIVES:
        raise LogError(
            f"{path.name}: {'an' if samples[0].collective[0] in 'aeiou' else 'a'} {samples[0].collective} table "
            f"({source.detail.split(',')[0]}); the NCCL model predicts {_predicted()}"
        )
    per_host = Counter(host for _, host in found)
    per_host = Counter({host: max(k, seen[host]) for host, k in per_host.items()})
    note = ""
    # the most GPUs a node holds: an HGX board's 8, a GH200 node's 4 (four superchips)
    most = _GH200_PER_NODE if _GH200.search(" ".join(found.values())) else _HGX_GPUS_PER_NODE
    if found and "" not in per_host and max(per_host.values()) <= _HGX_GPUS_PER_NODE:
        per = max(per_host.values())
        if len(found) < n and per < most:  # rank lines cut short ("..."): the host listed may have more GPUs
            # (an HGX board's 8 where the ranks allow, never fewer hosts than the lines name)
            fits = [d for d in range(most, per - 1, -1) if n % d == 0 and n // d >= len(per_host)]
            if fits and fits[0] != per:
                per = fits[0]
                note = f"{len(found)} of {n} rank lines: taken as {per} GPUs per host"
        nodes = -(-n // per)
    else:  # the file name's -<N>node, else 8 GPUs per node (an HGX board's; containers may all be "localhost")
        m = re.search(r"-(\d+)node", path.name)
        nodes = int(m.group(1)) if m and n % int(m.group(1)) == 0 else 1
        nodes = max(nodes, -(-n // _HGX_GPUS_PER_NODE))
        if found:
            note = f"{len(per_host)} host name(s) for {n} ranks: taken as {nodes} nodes"
        elif listed := launch_hosts(text, n):  # no rank lines: the hosts the launch command lists
            nodes = listed
    devices = list(found.values())
    m = _GPU.search(" ".join(devices)) or _GPU.search(text[:3000])  # the device lines, else what the header states
    if not m and (amd := _AMD_GPU.search(" ".join(devices)) or _AMD_GPU.search(text)):
        raise LogError(f"{path.name}: a run on AMD GPUs ({amd.group(0)!r}); collsim models NCCL on NVIDIA GPUs")
    if not devices and not m and (other := _OTHER_NVIDIA.search(text[:3000])):  # named in the header or prose only
        raise LogError(
            f"{path.name}: the log names {other.group(0)!r} (no device line does), a GPU hgx does not build "
            f"(it builds {', '.join(_BUILT)})"
        )
    if devices and not m:
        if not _UNNAMED_DEVICE.search(devices[0]):
            raise LogError(
                f"{path.name}: the device lines name {devices[0]!r}, a GPU hgx does not build "
                f"(it builds {', '.join(_BUILT)})"
            )
        named = f"name {devices[0]!r}" if devices[0] else "name no device"
        raise LogError(f"{path.name}: the device lines {named}, no GPU model collsim knows; state it in a '#%' line")
    gpu = m.group(1).lower() if m else "a100"
    if gpu not in _BUILT:
        why = f": {_NOT_BUILT[gpu]}" if gpu in _NOT_BUILT else ""
        raise LogError(
            f"{path.name}: {m.group(1) if m else gpu} GPUs are not modelled (hgx builds {', '.join(_BUILT)}){why}"
        )
    models: dict[str, str] = {}  # GPU model -> the first device line naming it (names of one model vary by driver)
    for device in devices:
        if named := _GPU.search(device):
            models.setdefault(named.group(1).lower(), device.strip())
    if len(models) > 1:
        raise LogError(
            f"{path.name}: the device lines name {len(models)} GPU models ({', '.join(map(repr, models.values()))}); "
            "hgx builds hosts of one model"
        )
    if mnnvl := _MNNVL.search(text):
        raise LogError(
            f"{path.name}: a multi-node NVLink run ({mnnvl.group(0)!r}): a GB200 / GB300 NVL72 rack's NVLink "
            "domain across trays, which hgx does not build"
        )
    one_a_host = len(per_host) > 1 and n == nodes and max(per_host.values()) == 1  # no GPU-to-GPU link in a host
    if _PCIE_CARD.search(" ".join(devices[:1])) and not one_a_host:
        raise LogError(
            f"{path.name}: {devices[0].strip()} is a PCIe card without an NVSwitch, which hgx does not build"
        )
    if m and not devices and (card := _PCIE_SUFFIX.match(text, m.end())):  # the header's "H200 NVL", "A100 PCIe"
        raise LogError(
            f"{path.name}: {m.group(1)}{card.group(0)} (as the header states it) is a PCIe card without an NVSwitch, "
            "which hgx does not build"
        )
    note = note or ("" if m else "GPU not named: A100 assumed")
    stated = re.search(r"\bversion=([\w.]+)", samples[0].algorithm)  # the release the importer read
    release = stated.group(1) if stated else ""
    efa = stated_efa(text)
    coll = samples[0].collective
    unmodelled, settings = tuple(source.unmodelled), ()
    if efa is not None:  # the chunk settings the EFA presets model (sim.nccl.efa), as nccl's options
        settings = tuple(f"{k.lower()}={v}" for k, v in _EFA_SETTING.findall(text))
        unmodelled = tuple(u for u in unmodelled if not u.startswith(_EFA_MODELLED))
    cxi = stated_cxi(text)
    return Log(path, n, nodes, gpu, text[:4000], ranks, note, release, unmodelled, efa, coll, settings, cxi)


#: the NCCL settings an EFA log may state that ``nccl``'s options take (the plugin exports them too):
#: NCCL_BUFFSIZE, NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE (bytes); NCCL_P2P_NET_CHUNKSIZE is for
#: send / receive, which an all-reduce does not use
_EFA_SETTING = re.compile(r"\bNCCL_(BUFFSIZE|NVLS_CHUNKSIZE|NVLSTREE_MAX_CHUNKSIZE)\s*[=:]\s*[\"']?(\d+)\b")
_EFA_MODELLED = ("NCCL_BUFFSIZE=", "NCCL_P2P_NET_CHUNKSIZE=")


def _predicted() -> str:
    """The collectives the NCCL model predicts (calibration's :data:`NCCL_COLLECTIVES`), named as prose names
    them: ``all-reduce, ..., all-to-all and send-recv``."""
    names = [next((a for a in get_collective(c).aliases if "-" in a), c) for c in NCCL_COLLECTIVES]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def header_lines(text: str) -> str:
    """The ``#%`` lines of a log (the poster's or our own notes of its hardware), joined: where a stated figure
    or name counts as the log's hardware."""
    return "\n".join(line for line in text.splitlines() if line.startswith("#%"))


def stated_nics(text: str, gpus_per_host: int | None = None, gpu: str | None = None) -> tuple[int | None, float | None]:
    """(NICs per node, Gb/s each) as a log's header states them, or None where it does not; a count of -1
    says the speed is the node's total (``3.2 Tbps``, ``400 Gbps EFA``, ``1,600 Gbps``); a count said per
    GPU (``2x 200 Gb/s per GPU``) counts for each of ``gpus_per_host``; a shape named for another GPU than
    ``gpu`` (the log's) does not count.

    >>> stated_nics("8x H100 and 8x CX-7 IB 400Gbps"), stated_nics("100Gbps x 16"), stated_nics("8x NDR IB")
    ((8, 400.0), (16, 100.0), (8, 400.0))
    >>> stated_nics("8x A100 80GB, 8x ConnectX-6 HDR"), stated_nics("one 10 Gb/s NIC")
    ((8, 200.0), (None, None))
    >>> stated_nics("#% 8x H100, NDR 400G"), stated_nics("#% p4d: 400 Gbps EFA"), stated_nics("#% 3.2 Tbps")
    ((None, 400.0), (-1, 400.0), (-1, 3200.0))
    >>> stated_nics("8*400G RoCE"), stated_nics("RoCE 400G*8"), stated_nics("8x 200GbE"), stated_nics("4x HDR200")
    ((8, 400.0), (8, 400.0), (8, 200.0), (4, 200.0))
    >>> stated_nics("#% 1,600 Gbps GPU network"), stated_nics("#% 3200 Gbps"), stated_nics("#% 800 Gbps total")
    ((-1, 1600.0), (-1, 3200.0), (-1, 800.0))
    >>> stated_nics("#% one 100 Gbps NIC per node"), stated_nics("2x 200 Gb/s per GPU", 8)
    ((1, 100.0), (16, 200.0))
    >>> stated_nics("#% 2 nodes x 8 GPUs, 400G IB"), stated_nics("#% 8x A100 SXM4 40G GPU, HDR")
    ((None, 400.0), (None, 200.0))
    >>> stated_nics("#% 8x NVIDIA H200 GPUs, 4x NVIDIA/Mellanox ConnectX-7 NICs"), stated_nics("#% 2x CX-6 NICs")
    ((4, 400.0), (2, 200.0))

    A header that names an instance shape or a DGX and no figure gets the shape's stated network:

    >>> stated_nics("#% 2x BM.GPU.H100.8"), stated_nics("#% 2x p5.48xlarge"), stated_nics("#% Azure ND H100 v5")
    ((16, 200.0), (32, 100.0), (8, 400.0))
    >>> stated_nics("#% 2x DGX A100"), stated_nics("#% 2x p4d.24xlarge, 4x 100 Gbps EFA")
    ((8, 200.0), (4, 100.0))
    >>> stated_nics("#% one of BM.GPU.H100.8, BM.GPU.A100-v2.8, BM.GPU4.8", gpu="a100")
    (16, 100.0)

    HPE Slingshot by name (no figure): its NIC's speed, and the count a header states per node, else the count of
    the system it names (ALCF Polaris 2, NERSC Perlmutter 4):

    >>> stated_nics("#% 4x A100-SXM4-40GB/node, HPE Slingshot 11, 2 NICs/node"), stated_nics("#% Slingshot-10")
    ((2, 200.0), (None, 100.0))
    >>> stated_nics("#% 256 ALCF Polaris nodes, HPE Slingshot 11"), stated_nics("#% NERSC Perlmutter, Slingshot 11 / CXI")
    ((2, 200.0), (4, 200.0))

    A ratio of GPUs to NICs gives the count where no figure does (a host's GPUs of the run, rounded up):

    >>> stated_nics("#% ConnectX-6 (HDR), GPU:NIC = 2:1", 2), stated_nics("#% NIC:GPU = 1:2, NDR", 8)
    ((1, 200.0), (4, 400.0))
    """
    header = header_lines(text)
    count, speed = _stated_figures(text, header, gpus_per_host, gpu)
    ratio = _GPU_NIC_RATIO.search(header)
    if count is None and ratio and gpus_per_host:  # ``GPU:NIC = 2:1``: the speed stated apart, the count from it
        gpus, nics = (int(ratio.group(2)), int(ratio.group(3)))[:: 1 if ratio.group(1).upper() == "GPU" else -1]
        if gpus and nics:
            count = max(1, -(-gpus_per_host * nics // gpus))
    return count, speed


def _stated_figures(
    text: str, header: str, gpus_per_host: int | None, gpu: str | None
) -> tuple[int | None, float | None]:
    """:func:`stated_nics` but for a GPU:NIC ratio: the figures a header states, the shape's where it names one."""
    found: list[tuple[int, int, float, int]] = []  # (position, count, Gb/s, where the figure ends)
    for m in _COUNT_SPEED.finditer(text):
        if not _GPU.search(m.group(2)):
            found.append((m.start(), int(m.group(1)), float(m.group(3)), m.end()))
    for m in _SPEED_COUNT.finditer(text):
        found.append((m.start(), int(m.group(2)), float(m.group(1)), m.end()))
    for m in _COUNT_IB.finditer(text):
        if not _GPU.search(m.group(2)):
            speed = float(m.group(4) or _IB[m.group(3).lower()])
            found.append((m.start(), int(m.group(1)), speed, m.end()))
    if found:
        _, count, speed, end = min(found)
        if gpus_per_host and _PER_GPU.match(text, end):
            count *= gpus_per_host
        return count, speed
    if m := _WORD_SPEED.search(header):
        count = _WORD_COUNTS[m.group(1).lower()]
        if gpus_per_host and _PER_GPU.match(header, m.end()):
            count *= gpus_per_host
        return count, float(m.group(3))
    if m := _BARE.search(header):
        speed = float(m.group(1).replace(",", "")) * (1000 if m.group(2).lower() == "t" else 1)
        words = m.group(0).lower()
        total = m.group(2).lower() == "t" or "efa" in words or "total" in words or speed > max(_IB.values())
        return (-1, speed) if total else (None, speed)
    if m := _BARE_G.search(header):
        return None, float(m.group(1))
    if m := _BARE_IB.search(header):
        return None, float(_IB[m.group(1).lower()])
    if m := _SLINGSHOT.search(header):  # (the count where the header states one per node, or its system's)
        count = int(c.group(1)) if (c := _NICS_PER_NODE.search(header)) else _shape(header, gpu)[0]
        return count, 100.0 if m.group(1) == "10" else 200.0
    for m in _COUNT_CX.finditer(text):
        if not _GPU.search(m.group(2)):
            return int(m.group(1)), _CX_SPEED[m.group(3)]
    return _shape(header, gpu)


def _shape(header: str, gpu: str | None) -> tuple[int | None, float | None]:
    """(NICs per node, Gb/s each) of the instance shape or system the header names (:data:`_SHAPES`), of the
    log's GPU where it lists several; (None, None) where it names none."""
    for shape, nics, gpus in _SHAPES:
        if shape.search(header) and (gpu is None or gpu in gpus):
            return nics
    return None, None


#: a log's EFA instance family where it names no instance, by its GPU (``sim.nccl.efa.PRESETS`` the presets)
_EFA_BY_GPU = {"a100": "p4d", "h100": "p5", "h200": "p5"}


def efa_topology(log: Log, efa: tuple[str | None, str | None]) -> object:
    """The ``aws-*`` preset of a log that ran over EFA (:func:`validate.calibration.inputs.stated_efa`): its
    instance family, else the one of its GPU (A100 p4d, H100 p5, H200 p5e -- p5en where the header states
    its 16 x 200 Gb/s), with the GPU and GPUs per node the log shows and the aws-ofi-nccl release it states
    (else the newest read). The NICs are the instance's, whatever figure the header gives."""
    platform, plugin = efa
    if platform is None:
        if log.gpu not in _EFA_BY_GPU:
            raise LogError(
                f"{log.path.name}: an EFA run of {log.gpu.upper()} GPUs, which no aws-* preset of hgx builds"
            )
        platform = _EFA_BY_GPU[log.gpu]
        if log.gpu == "h200" and stated_nics(log.text, log.gpus_per_host, log.gpu) == (16, 200.0):
            platform = "p5en"
    preset = EFA_PRESETS[platform]
    kw: dict[str, object] = {"gpu": log.gpu, "gpus_per_host": log.gpus_per_host}
    if plugin:
        kw["efa_plugin"] = plugin
    note = f"EFA: {preset}" + (f", aws-ofi-nccl {plugin}" if plugin else "")
    # (each prediction builds the topology again: the note is added once)
    log.note = (
        note if not log.note or log.note.startswith("EFA") else log.note if note in log.note else f"{log.note}; {note}"
    )
    try:
        return hgx(log.hosts, preset, **kw)
    except CollsimError as exc:
        raise LogError(f"{log.path.name}: the stated hardware does not build: {exc}") from None


#: a 4-GPU board without an NVSwitch (hgx ``nvswitch=false``: ``hgx-a100-4gpu``, ``hgx-h100-4gpu``), by the
#: systems built of them (ALCF Polaris, NERSC Perlmutter, SURF Snellius' gpu_h100) or the board's name, in the
#: header or the file name
_BOARD = re.compile(r"\b(?:Polaris|Perlmutter|Snellius)\b|\bHGX\s*[AH]1\d0\s*4-GPU\b|\b4-GPU\s+board\b", re.I)
#: what says a log is of an NVSwitch host after all (a DGX, an NVSwitch named: a run on 4 of its 8 GPUs), where
#: NCCL's line says a Hopper GPU finds no NVSwitch to multicast on (the importer's :data:`NVLS_UNAVAILABLE`)
_SWITCHED = re.compile(r"\bDGX\b|\bNVSwitch\b", re.I)


def board_preset(log: Log) -> str | None:
    """The hgx preset of a 4-GPU board without an NVSwitch where the log says it ran on one (:data:`_BOARD`,
    or NCCL's NVLS line on a Hopper log of 4 GPUs a node, no DGX or NVSwitch named), else None: never on
    more than 4 GPUs a node, nor for a DGX's ``-g 4``."""
    header = header_lines(log.text)
    if log.gpus_per_host > 4 or log.gpu not in ("a100", "h100", "h200") or _SWITCHED.search(log.text):
        return None
    hopper = log.gpu != "a100"
    if (
        _BOARD.search(header)
        or _BOARD.search(log.path.name)
        or (hopper and log.gpus_per_host == 4 and NVLS_UNAVAILABLE.search(log.text))
    ):
        return "hgx-h100-4gpu" if hopper else "hgx-a100-4gpu"
    return None


def topology(log: Log) -> object:
    """The hgx topology the log's stated hardware describes: the GPU, GPUs per node, the NICs (count and
    speed; more than two per GPU are folded into two per GPU of their summed speed), the CPU vendor where
    the header names it; a run over AWS EFA its ``aws-*`` preset (:func:`efa_topology`)."""
    if log.efa is not None:
        return efa_topology(log, log.efa)
    ppn = log.gpus_per_host
    nics, speed = stated_nics(log.text, ppn, log.gpu)
    if nics == -1 and speed:  # a node's total: one NIC per GPU of its share
        nics, speed = ppn, speed / ppn
        log.note = f"{nics} NICs of {speed:g} Gb/s (the node's stated total, one per GPU)"
    nvswitch = log.gpu in _NVLS_GPUS
    if nics and nics > 2 * ppn and nics % _HGX_GPUS_PER_NODE == 0 and ppn < _HGX_GPUS_PER_NODE and speed:
        # a node's NICs (a DGX's eight) for a run on some of its GPUs: those GPUs' share, not all folded onto them
        nics = nics * ppn // _HGX_GPUS_PER_NODE
        log.note = f"{nics} NICs of {speed:g} Gb/s (the {ppn} GPUs' share of the node's stated NICs)"
    if nics and nics > 2 * ppn and speed:  # e.g. 32 x 100 Gb/s EFA on 8 GPUs: two per GPU at 200 Gb/s
        speed, nics = speed * nics / (2 * ppn), 2 * ppn
        log.note = f"{nics} NICs of {speed:g} Gb/s (folded: hgx lays out at most two per GPU)"
    if nics == 2 * ppn:  # two NICs per GPU (OCI's shapes)
        preset = "oci-bm-gpu-h100-8" if nvswitch else "oci-bm-gpu4-8"
    else:
        preset = "dgx-b200" if log.gpu == "b200" else "dgx-h100" if nvswitch else "hgx-a100-200g"
    if log.gpu == "gh200":  # Grace Hopper nodes (hgx gh200-quad: four GH200 linked directly, a NIC each)
        preset = "gh200-quad"
    if board := board_preset(log):
        preset = board
        told = f"{board}: no NVSwitch"  # (once: topology() runs for every table)
        log.note = log.note if told in log.note else f"{log.note}; {told}" if log.note else told
    kw: dict[str, object] = {"gpu": log.gpu, "gpus_per_host": ppn}
    if board and nics == 2 * ppn:
        kw["nics_per_gpu"] = 2
    if nics and nics not in (ppn, 2 * ppn):  # fewer NICs than GPUs: one per PCIe switch
        kw["nics_per_host"] = nics
    elif ppn % HGX_PRESETS[preset]["gpus_per_pcie_switch"]:  # a run on one GPU of a host whose GPUs pair up
        kw["gpus_per_pcie_switch"] = 1
    if speed:
        kw["nic_bandwidth"] = speed * 1e9 / 8
    if log.cxi is not None:
        cxi_options(log, kw)
    header = header_lines(log.text)
    x86 = log.gpu != "gh200"  # (a GH200's CPU is the superchip's Grace, whatever else the log names)
    if x86 and (_AMD.search(log.text) or _AMD_CODE.search(header)):
        kw["cpu_vendor"] = "amd"
    elif x86 and (_INTEL.search(log.text) or _INTEL_CODE.search(header)):
        kw["cpu_vendor"] = "intel"
    try:
        return hgx(log.hosts, preset, **kw)
    except CollsimError as exc:
        raise LogError(f"{log.path.name}: the stated hardware does not build: {exc}") from None


def cxi_options(log: Log, kw: dict[str, object]) -> None:
    """``hgx``'s options for a run over HPE Slingshot through aws-ofi-nccl on cxi (:mod:`sim.nccl.ofi`):
    ``net=cxi`` and the plugin's release the log states (else the newest read); the NICs stay as the log states
    them (the plugin reports the port's speed). The log's note says what the plugin reports."""
    kw["net"] = "cxi"
    if log.cxi:
        kw["efa_plugin"] = log.cxi
    latency = ofi.reported_latency("cxi", "", parse_plugin(log.cxi) if log.cxi else NEWEST_PLUGIN)
    told = f"cxi: aws-ofi-nccl {log.cxi or 'not stated'}, {latency:g} us reported"
    log.note = log.note if told in log.note else f"{log.note}; {told}" if log.note else told


def _source(log: Log) -> str:
    """The log as ``collsim validate calibrate --from`` names it (the rank count where the log lacks it)."""
    return str(log.path) if log.ranks_given is None else f"{log.path}:ranks={log.ranks}"


#: ``nccl`` options every log's all-reduce takes besides its own settings (--nccl: an experiment's, say
#: ``slots=8``)
_OPTIONS: tuple[str, ...] = ()


def samples_of(log: Log) -> tuple[list, object]:
    """The log's samples as calibration's reader reads them, their all-reduce's ``nccl`` with the settings
    the log states (:attr:`Log.settings`) and --nccl's options."""
    samples, source = read_samples(_source(log))
    if log.settings or _OPTIONS:
        extra = ",".join(log.settings + _OPTIONS)
        samples = [
            replace(x, algorithm=f"{x.algorithm}{',' if ':' in x.algorithm else ':'}{extra}")
            if x.collective == "allreduce" and x.algorithm.split(":")[0] == "nccl"
            else x
            for x in samples
        ]
    return samples, source


def calibrate(log: Log) -> object:
    """The calibration of ``log`` on its own topology (as ``collsim validate calibrate --from`` fits it)."""
    samples, source = samples_of(log)
    return fit_calibration(samples, Cluster(topology(log)), [source])


def predict(log: Log, min_size: float, cal: object = None) -> list[tuple[int, float, float, float, str]]:
    """(bytes, measured us, predicted us, error, pick) for the sizes >= ``min_size``, nominally or under
    ``cal``'s link model; the log is read by calibration's own reader, through the schedule it ran."""
    cluster = Cluster(topology(log))
    if cal is not None:
        cluster = cluster.with_link_model(cal.link_model())  # type: ignore[attr-defined]
    samples, _ = samples_of(log)
    out = []
    for s in samples:
        if s.size < min_size:
            continue
        algo = get_algorithm(s.collective, s.algorithm)
        builds = getattr(algo, "builds", None)  # all-gather / reduce-scatter: a pick collsim does not build
        if builds is not None and not builds(s.ranks, s.size, cluster):
            c = algo.choice(s.ranks, s.size, cluster)  # type: ignore[attr-defined]
            left = f"{s.size} B left out: NCCL picks {c.algorithm}/{c.protocol}, not built"
            log.note = left if not log.note else log.note if left in log.note else f"{log.note}; {left}"
            continue
        r = simulate(cluster, s.collective, algo, s.size, ranks=s.ranks, gamma=0.0)
        c = algo.choice(s.ranks, s.size, cluster)  # type: ignore[attr-defined]
        pred = r.time_s * 1e6
        t = s.time_s * 1e6
        pick = f"{c.algorithm}/{c.protocol}"
        if hasattr(c, "pxn"):  # NCCL's p2p path (all-to-all, send/recv): its sends' protocols, PXN or not
            pick = f"P2P/{c.protocol}{'/PXN' if c.pxn else ''}"
        out.append((s.size, t, pred, abs(pred - t) / t, pick))
    return out


def hardware(path: Path) -> tuple[str, int]:
    """(hardware key, nodes) from a file name ``<hardware>-<N>node<rest>``."""
    m = re.match(r"(.*?)-(\d+)node", path.name)
    return (m.group(1), int(m.group(2))) if m else (path.stem, 0)


def smaller_runs(logs: list[Log]) -> dict[Path, Log]:
    """For every log, the run it is predicted from out of sample: of the logs of the same hardware (the same
    file name before ``-<N>node``) and collective, the first of the largest node count below its own."""
    by_key: dict[tuple[str, str, int], Log] = {}
    for log in logs:
        key, nodes = hardware(log.path)
        if nodes:
            by_key.setdefault((key, log.collective, nodes), log)
    source: dict[Path, Log] = {}
    for log in logs:
        key, nodes = hardware(log.path)
        below = [n for k, c, n in by_key if (k, c) == (key, log.collective) and n < nodes]
        if below:
            source[log.path] = by_key[(key, log.collective, max(below))]
    return source


def summary(errors: list[float]) -> str:
    if not errors:
        return "n/a"
    e = sorted(errors)
    p90 = e[min(len(e) - 1, int(round(0.9 * (len(e) - 1))))]
    return f"median {statistics.median(e):6.1%}  p90 {p90:6.1%}  max {e[-1]:6.1%}  ({len(e)} sizes)"


def _table(
    title: str, logs: list[Log], rows_of: object, show_rows: bool, extra: object = None
) -> tuple[list[float], list[float]]:
    single: list[float] = []
    multi: list[float] = []
    print(f"# {title}")
    print(f"# {'log':44s} {'ranks':>5s} {'nodes':>5s}  error of the predicted time")
    for log in logs:
        try:
            rows = rows_of(log)  # type: ignore[operator]
        except (LogError, CollsimError) as exc:
            print(f"# {log.path.name}: skipped: {exc}")
            continue
        if rows is None:
            continue
        errs = [r[3] for r in rows]
        (single if log.hosts == 1 else multi).extend(errs)
        more = extra(log) if extra else ""  # type: ignore[operator]
        note = f"  ({log.note})" if log.note else ""
        tags = f"  [{log.tuner}]" if log.tuner else ""
        if log.settings:
            tags += f"  [nccl:{','.join(log.settings)}]"
        if log.unmodelled:
            tags += f"  [not modelled: {', '.join(log.unmodelled)}]"
        print(f"  {log.path.name:44s} {log.ranks:5d} {log.hosts:5d}  {summary(errs)}{more}{note}{tags}")
        if show_rows:
            for size, meas, pred, err, pick in rows:
                print(f"      {size:>12d} B  measured {meas:10.1f} us  predicted {pred:10.1f} us  {err:6.1%}  {pick}")
    print(f"# 1-node logs:     {summary(single)}")
    print(f"# multi-node logs: {summary(multi)}")
    print(f"# all logs:        {summary(single + multi)}")
    return single, multi


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared/data/nccl-tests"))
    ap.add_argument("--min-size", default="1MiB")
    ap.add_argument("--rows", action="store_true", help="print every size of every log")
    ap.add_argument("--tables", default="nominal,in-sample,out-of-sample", help="which tables, comma-separated")
    ap.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out logs whose file name matches (e.g. a cluster its owner reported as broken); repeatable",
    )
    ap.add_argument("--nccl", default="", metavar="OPTS", help="nccl options for every log (e.g. slots=8)")
    args = ap.parse_args(argv)
    global _OPTIONS  # noqa: PLW0603 - (one run's options, read by samples_of)
    _OPTIONS = tuple(o.strip() for o in args.nccl.split(",") if o.strip())
    folder = Path(args.folder)
    files = sorted(
        p
        for p in folder.glob("*.txt")
        if p.name.lower() != "readme.txt" and not any(fnmatch.fnmatch(p.name, g) for g in args.exclude)
    )
    if not files:
        print(f"nccl_logs: no .txt logs in {folder}", file=sys.stderr)
        return 2
    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    bad = [t for t in tables if t not in ("nominal", "in-sample", "out-of-sample")]
    if bad:
        print(
            f"nccl_logs: --tables: unknown table {bad[0]!r} (valid: nominal, in-sample, out-of-sample)", file=sys.stderr
        )
        return 2
    min_size = parse_size(args.min_size)
    logs: list[Log] = []
    for path in files:
        try:
            logs.append(parse_log(path))
        except LogError as exc:
            print(f"# {path.name}: skipped: {exc}")
    if not logs:
        print(f"nccl_logs: none of the {len(files)} .txt files in {folder} is a log it can read", file=sys.stderr)
        return 2
    where = f"{len(logs)} logs in {folder}, sizes >= {args.min_size}, algorithm nccl"
    if _OPTIONS:
        where += f" (with {','.join(_OPTIONS)})"
    cals: dict[Path, object] = {}

    def cal_of(log: Log) -> object:
        if log.path not in cals:
            cals[log.path] = calibrate(log)
        return cals[log.path]

    if "nominal" in tables:
        _table(f"nominal predictions of {where}", logs, lambda log: predict(log, min_size), args.rows)
        print()
    if "in-sample" in tables:

        def wanted(log: Log) -> str:
            cal = cal_of(log)
            effs = {k: v.efficiency for k, v in cal.classes.items()}  # type: ignore[attr-defined]
            text = ", ".join(f"{k} {v:.3f}" for k, v in effs.items())
            n = len(cal.warnings)  # type: ignore[attr-defined]
            warn = f"  ({n} warning{'s' if n > 1 else ''} below the table)" if n else ""
            return f"  [{text}]{warn}"

        _table(
            f"in-sample: calibrated on the log itself, {where}",
            logs,
            lambda log: predict(log, min_size, cal_of(log)),
            args.rows,
            wanted,
        )
        for log in logs:
            try:
                warnings = cal_of(log).warnings  # type: ignore[attr-defined]
            except (LogError, CollsimError):
                continue  # the table's line of the log says why
            for w in warnings:
                print(f"# {log.path.name}: {w}")
        print()
    if "out-of-sample" in tables:
        source = smaller_runs(logs)

        def oos(log: Log) -> object:
            if log.path not in source:
                return None
            return predict(log, min_size, cal_of(source[log.path]))

        _table(
            f"out-of-sample: calibrated on the smaller run of the same hardware, {where}",
            logs,
            oos,
            args.rows,
            lambda log: f"  <- {source[log.path].path.name}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
