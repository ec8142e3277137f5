"""The report's figures, drawn with matplotlib (imported inside :func:`draw_all`, Agg canvas, no pyplot
state) from the report's rows; each comes back as PNG bytes. Every title names the link parameters
the numbers rest on. Each algorithm keeps one colour in every figure.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sim.units import format_size

from .analysis import ReportData
from .rows import CollectiveRow, IterationRow

__all__ = ["FIGURES", "draw_all"]

R = TypeVar("R", IterationRow, CollectiveRow)


def _setup() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    return Figure, FigureCanvasAgg


def _png(fig: Any) -> bytes:
    _, canvas_cls = _setup()
    canvas_cls(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _colors(algorithms: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(algorithms) <= 10 else "tab20"]
    return {a: cmap(i % cmap.N) for i, a in enumerate(algorithms)}


def _gpu_axis(ax: Any, sizes: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(sizes))
    ax.set_xticklabels([str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("GPUs")
    ax.grid(True, alpha=0.3)


def _size_axis(ax: Any, sizes: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    step = max(1, len(sizes) // 8)
    ticks = list(sizes)[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_size(s) for s in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlabel("message size per GPU")
    ax.grid(True, alpha=0.3)


def _by_algorithm(rows: Sequence[R], order: Sequence[str]) -> list[tuple[str, list[R]]]:
    return [(a, [r for r in rows if r.algorithm == a]) for a in order if any(r.algorithm == a for r in rows)]


def _legend(fig: Any, ax: Any, count: int) -> None:
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(count, 5), frameon=False)


def _gpu_panels(
    data: ReportData, left_value: Callable[[IterationRow], float], right_value: Callable[[IterationRow], float]
) -> tuple[Any, Any, Any, list[int]]:
    """Two panels side by side against cluster size, from ``data.iterations``: one line per algorithm
    (in ``data.algorithms``' order and colours) of ``left_value(row)`` on the left panel and of
    ``right_value(row)`` on the right. Returns the figure, the two axes and the cluster sizes, for the
    caller to label."""
    figure, _ = _setup()
    colors = _colors(data.algorithms)
    fig = figure(figsize=(11, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    sizes = sorted({r.gpus for r in data.iterations})
    for algo, rows in _by_algorithm(data.iterations, data.algorithms):
        xs = [r.gpus for r in rows]
        left.plot(xs, [left_value(r) for r in rows], "o-", color=colors[algo], label=algo)
        right.plot(xs, [right_value(r) for r in rows], "o-", color=colors[algo], label=algo)
    return fig, left, right, sizes


def iteration_figure(data: ReportData) -> bytes | None:
    """Iteration time and scaling efficiency against cluster size, one line per algorithm."""
    if not data.iterations:
        return None
    fig, left, right, sizes = _gpu_panels(data, lambda r: r.iteration_s * 1e3, lambda r: r.scaling_efficiency * 100)
    compute = data.job.compute_s
    left.axhline(compute * 1e3, color="grey", ls="--", lw=1, label="compute only")
    left.set_ylabel("iteration time (ms)")
    left.set_title("Iteration time")
    left.set_ylim(bottom=0)
    right.set_ylabel("scaling efficiency (%)")
    right.set_title("Weak-scaling efficiency vs the smallest size")
    right.set_ylim(0, 105)
    for ax in (left, right):
        _gpu_axis(ax, sizes)
    fig.suptitle(f"Training iteration per cluster size ({data.parameters} link parameters)")
    _legend(fig, left, len(_by_algorithm(data.iterations, data.algorithms)) + 1)
    return _png(fig)


def breakdown_figure(data: ReportData) -> bytes | None:
    """Where the iteration goes at the largest size: forward, backward, exposed comm, optimizer."""
    rows = [r for r in data.iterations if r.gpus == data.largest]
    if not rows:
        return None
    figure, _ = _setup()
    rows.sort(key=lambda r: r.iteration_s, reverse=True)
    fig = figure(figsize=(10, 0.9 + 0.45 * len(rows)), layout="constrained")
    ax = fig.subplots()
    parts = (
        ("forward_s", "forward", "#9ecae1"),
        ("backward_s", "backward (overlaps comm)", "#3182bd"),
        ("exposed_comm_s", "exposed communication", "#e6550d"),
        ("optimizer_s", "optimizer", "#74c476"),
    )
    names = [r.algorithm for r in rows]
    left = [0.0] * len(rows)
    for key, label, color in parts:
        widths = [getattr(r, key) * 1e3 for r in rows]
        ax.barh(names, widths, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("milliseconds per iteration")
    ax.set_title(f"Iteration breakdown at {data.largest} GPUs ({data.parameters} link parameters)")
    ax.grid(True, axis="x", alpha=0.3)
    _legend(fig, ax, len(parts))
    return _png(fig)


def _shown_sizes(sizes: Sequence[int], most: int = 4) -> list[int]:
    sizes = sorted(sizes)
    if len(sizes) <= most:
        return sizes
    picks = {sizes[round(i * (len(sizes) - 1) / (most - 1))] for i in range(most)}
    return sorted(picks)


def busbw_figure(data: ReportData) -> bytes | None:
    """Bus bandwidth (nccl-tests' busbw) against message size, a panel per cluster size."""
    if not data.collectives:
        return None
    figure, _ = _setup()
    colors = _colors(data.algorithms)
    shown = _shown_sizes({r.gpus for r in data.collectives})
    cols = min(2, len(shown))
    rows = -(-len(shown) // cols)
    fig = figure(figsize=(5.5 * cols, 3.8 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True).ravel()
    msizes = sorted({r.size_bytes for r in data.collectives})
    for ax, gpus in zip(axes, shown, strict=False):
        for algo, rows in _by_algorithm([r for r in data.collectives if r.gpus == gpus], data.algorithms):
            ax.plot(
                [r.size_bytes for r in rows],
                [r.busbw_GBps for r in rows],
                "o-",
                ms=3,
                color=colors[algo],
                label=algo,
            )
        _size_axis(ax, msizes)
        ax.set_title(f"{gpus} GPUs")
    for ax in axes[len(shown) :]:
        ax.set_visible(False)
    for ax in axes[::cols]:
        ax.set_ylabel("bus bandwidth (GB/s)")
    fig.suptitle(f"All-reduce bus bandwidth by message size ({data.parameters} link parameters)")
    _legend(fig, axes[0], len(data.algorithms))
    return _png(fig)


def crossover_figure(data: ReportData) -> bytes | None:
    """The fastest algorithm at every (message size, cluster size)."""
    if not data.crossover:
        return None
    figure, _ = _setup()
    colors = _colors(data.algorithms)
    gpus = sorted({c.gpus for c in data.crossover})
    msizes = sorted({c.size_bytes for c in data.crossover})
    fig = figure(figsize=(max(6.0, 0.75 * len(msizes) + 2), 1.2 + 0.5 * len(gpus)), layout="constrained")
    ax = fig.subplots()
    winners = []
    for c in data.crossover:
        x, y = msizes.index(c.size_bytes), gpus.index(c.gpus)
        ax.add_patch(_rect(x, y, colors.get(c.fastest, "white")))
        winners.append(c.fastest)
        if c.margin is not None:
            ax.text(x + 0.5, y + 0.5, f"+{c.margin * 100:.0f}%", ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(msizes))
    ax.set_ylim(0, len(gpus))
    ax.set_xticks([i + 0.5 for i in range(len(msizes))])
    ax.set_xticklabels([format_size(s) for s in msizes], rotation=45, ha="right")
    ax.set_yticks([i + 0.5 for i in range(len(gpus))])
    ax.set_yticklabels([str(g) for g in gpus])
    ax.set_xlabel("message size per GPU")
    ax.set_ylabel("GPUs")
    ax.set_title(
        f"Fastest all-reduce (cell text: how much slower the runner-up is) ({data.parameters} link parameters)",
        fontsize=10,
    )
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[a], label=a) for a in data.algorithms if a in winners]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), frameon=False)
    return _png(fig)


def _rect(x: int, y: int, color: Any) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), 1, 1, facecolor=color, edgecolor="white", linewidth=1.5)


def traffic_figure(data: ReportData) -> bytes | None:
    """Traffic per iteration by algorithm: all bytes put on the network, and the busiest rank's."""
    if not data.iterations:
        return None
    fig, left, right, sizes = _gpu_panels(data, lambda r: r.bytes_sent / 2**30, lambda r: r.max_rank_bytes / 2**30)
    left.set_ylabel("GiB sent by all ranks per iteration")
    left.set_title("Total traffic")
    right.set_ylabel("GiB sent + received by the busiest rank")
    right.set_title("Hotspot: the busiest rank")
    for ax in (left, right):
        _gpu_axis(ax, sizes)
        _amount_axis(ax)
    fig.suptitle(f"Traffic per iteration ({data.parameters} link parameters)")
    _legend(fig, left, len(data.algorithms))
    return _png(fig)


def _amount_axis(ax: Any) -> None:
    """Log scale where the values span a decade or more, else linear from zero; plain tick labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    values = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
    if values and max(values) / min(values) >= 10:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(bottom=0, top=max(values, default=1) * 1.1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))


def links_figure(data: ReportData) -> bytes | None:
    """The busiest link directions at the largest size, for every algorithm."""
    rows = [r for r in data.links if r.gpus == data.largest]
    if not rows:
        return None
    figure, _ = _setup()
    colors = _colors(data.algorithms)
    rows.sort(key=lambda r: (data.algorithms.index(r.algorithm) if r.algorithm in data.algorithms else 0, r.rank))
    fig = figure(figsize=(10, 1.0 + 0.3 * len(rows)), layout="constrained")
    ax = fig.subplots()
    labels = [f"{r.algorithm}: {r.link}" for r in rows]
    ax.barh(labels, [r.utilization * 100 for r in rows], color=[colors[r.algorithm] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the iteration the link direction is busy (bytes / capacity / iteration time)")
    ax.set_title(f"Busiest links at {data.largest} GPUs ({data.parameters} link parameters)")
    ax.grid(True, axis="x", alpha=0.3)
    return _png(fig)


#: name -> (caption, drawing function); the order is the report's
FIGURES: dict[str, tuple[str, Callable[[ReportData], bytes | None]]] = {
    "iteration": ("Iteration time and scaling efficiency", iteration_figure),
    "breakdown": ("Where the iteration goes", breakdown_figure),
    "busbw": ("Bus bandwidth by message size", busbw_figure),
    "crossover": ("Crossover map: fastest algorithm", crossover_figure),
    "traffic": ("Traffic per algorithm", traffic_figure),
    "links": ("Busiest links", links_figure),
}


def draw_all(data: ReportData) -> dict[str, bytes]:
    """Every figure that has data to show, as PNG bytes by name."""
    out = {}
    for name, (_caption, draw) in FIGURES.items():
        png = draw(data)
        if png:
            out[name] = png
    return out
