"""Critical-difference diagrams (Demšar 2006, §3.2.4, Figure 1) of an across-datasets comparison.

The top line is the average-rank axis, turned so the best (lowest) ranks are on the right; each
algorithm setting hangs from its average rank to its label (the better half on the right, the
worse half on the left). With the Nemenyi test, thick bars join the settings whose ranks differ by
less than the critical difference, drawn above the axis; with Holm's procedure against a control,
one bar joins the control (bold) with every setting Holm does not separate from it. When the
Friedman test does not reject, one bar joins all and the caption says so.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

from malt.errors import MaltError
from malt.results.outputs import output_dir, write
from malt.results.ranks import Comparison, comparisons
from malt.results.stats import ALPHA


def _plt():
    from malt.results.style import style_matplotlib

    return style_matplotlib()


def cd_groups(comparison: Comparison, test: str = "nemenyi", control: str | None = None) -> list[list[str]]:
    """The bars of the diagram: lists of labels that the chosen post-hoc test does not separate."""
    f = comparison.friedman
    if test == "nemenyi":
        return f.nemenyi_groups()
    if test == "holm":
        control = control or f.average_ranks.index[0]
        if not f.rejects:
            return [list(f.average_ranks.index)]
        holm = f.holm_against(control)
        group = [control] + list(holm.loc[~holm.rejected, "algorithm"])
        return [sorted(group, key=lambda a: f.average_ranks[a])] if len(group) > 1 else []
    raise MaltError(f"Unknown post-hoc test '{test}'; use 'nemenyi' or 'holm'.")


def plot_cd_diagram(comparison: Comparison, test: str = "nemenyi", control: str | None = None,
                    width: float = 5.0, caption: bool = True):
    """Draw one comparison's critical-difference diagram; returns the matplotlib Figure.

    ``caption=False`` leaves the statistics text out of the image (a page that prints it beside)."""
    plt = _plt()
    f = comparison.friedman
    ranks = f.average_ranks  # ascending: best first
    k = len(ranks)
    names, values = list(ranks.index), [float(v) for v in ranks]
    if test == "holm":
        control = control or names[0]
        if control not in names:
            raise MaltError(f"--control {control}: not among the compared settings ({', '.join(names)}).")
    groups = cd_groups(comparison, test, control)
    right = list(range(math.ceil(k / 2)))  # the best half hangs to the right
    left = list(range(math.ceil(k / 2), k))
    rows = max(len(right), len(left))
    line = 0.16  # inches between label rows
    caption = textwrap.fill(cd_caption(comparison, test, control), width=int(width * 17)) if caption else ""
    # vertical layout in inches from the top: title, CD scale bar, axis, group bars, label rows, caption
    axis_y = 0.8
    first_row = axis_y + 0.1 + 0.1 * len(groups) + 0.1
    caption_y = first_row + line * rows + 0.08
    height = caption_y + (0.105 * (caption.count("\n") + 1) + 0.12 if caption else 0.02)
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_axis_off()
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # y grows downwards, in inches
    margin = 1.35  # room for labels on both sides
    x0, x1 = margin, width - margin

    def x(rank: float) -> float:  # rank 1 on the right
        return x1 - (rank - 1) / max(k - 1, 1) * (x1 - x0)

    title_y = 0.15
    ax.text(width / 2, title_y, comparison.title(), ha="center", va="center", fontsize=8.5)
    ax.plot([x(1), x(k)], [axis_y, axis_y], color="black", linewidth=0.9)
    for r in range(1, k + 1):
        ax.plot([x(r), x(r)], [axis_y, axis_y - 0.06], color="black", linewidth=0.8)
        ax.text(x(r), axis_y - 0.09, str(r), ha="center", va="bottom", fontsize=7)
        if r < k:
            ax.plot([x(r + 0.5)] * 2, [axis_y, axis_y - 0.03], color="black", linewidth=0.5)
    # the critical difference as a scale bar (Nemenyi) above the axis, at the worse end
    cd = f.critical_difference
    cd_y = 0.45
    if test == "nemenyi" and cd <= k - 1:
        ax.plot([x(k), x(k - cd)], [cd_y, cd_y], color="black", linewidth=0.9)
        for end in (k, k - cd):
            ax.plot([x(end)] * 2, [cd_y - 0.04, cd_y + 0.04], color="black", linewidth=0.9)
        ax.text((x(k) + x(k - cd)) / 2, cd_y - 0.05, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=7)
    # group bars below the axis, above the label lines
    for i, group in enumerate(groups):
        lo, hi = min(ranks[g] for g in group), max(ranks[g] for g in group)
        y = axis_y + 0.1 + 0.1 * i
        ax.plot([x(lo) + 0.03, x(hi) - 0.03], [y, y], color="black", linewidth=2.4, solid_capstyle="butt")
    for side, indices in (("right", right), ("left", left)):
        ordered = indices if side == "right" else list(reversed(indices))  # nearest the axis end first
        for row, i in enumerate(ordered):
            y = first_row + line * row
            xi = x(values[i])
            end = width - margin + 0.12 if side == "right" else margin - 0.12
            ax.plot([xi, xi, end], [axis_y, y, y], color="black", linewidth=0.7)
            weight = "bold" if test == "holm" and names[i] == control else "normal"
            label = f"{names[i]} ({values[i]:.2f})" if side == "right" else f"({values[i]:.2f}) {names[i]}"
            ax.text(end + (0.04 if side == "right" else -0.04), y, label, ha="left" if side == "right" else "right",
                    va="center", fontsize=7, fontweight=weight)
    ax.text(0.08, caption_y, caption, ha="left", va="top", fontsize=6, color="#333333", linespacing=1.25)
    return fig


def cd_caption(comparison: Comparison, test: str = "nemenyi", control: str | None = None) -> str:
    """What the diagram shows and the statistics behind it, in words."""
    if test == "nemenyi":
        return comparison.caption()
    control = control or comparison.friedman.average_ranks.index[0]
    return _holm_caption(comparison, control)


def _holm_caption(comparison: Comparison, control: str) -> str:
    f = comparison.friedman
    text = (f"Average ranks over {f.n_datasets} datasets ({', '.join(comparison.datasets)}); rank 1 is best. "
            f"{f.summary()} ")
    if f.rejects:
        holm = f.holm_against(control)
        rows = "; ".join(f"{a}: z = {z:.2f}, p = {p:.3f} vs α/{int(round(f.alpha / ai))}"
                         + (" (different)" if r else "") for a, z, p, ai, r in
                         holm[["algorithm", "z", "p_value", "alpha_i", "rejected"]].itertuples(index=False))
        text += f"Holm's step-down procedure against {control} (bold; α = {f.alpha:g}): {rows}. " \
                "The bar joins the control with the settings not separated from it."
    else:
        text += "The Friedman test does not reject equal ranks, so no post-hoc difference is claimed."
    return text


@dataclass
class CDOutput:
    comparison: Comparison
    figure: object
    paths: list[Path]


def plot_across_datasets(rs, out: str | Path = "figures", *, metrics: list[str] | None = None,
                         formats: tuple[str, ...] = ("png", "pdf"), test: str = "nemenyi",
                         control: str | None = None, alpha: float = ALPHA, keep: bool = False,
                         captions: bool = True) -> list[CDOutput]:
    """One critical-difference diagram per task, option set and metric run on two or more datasets.

    ``test``: 'nemenyi' (all pairs, bars join settings closer than the critical difference) or
    'holm' (step-down against ``control``, default the best-ranked setting)."""
    from malt.results.style import file_metadata

    found = comparisons(rs, metrics, alpha)
    if not found:
        raise MaltError("--across-datasets needs experiments with the same task and task options on two or more "
                        "datasets, each with at least two algorithm settings; none match.")
    plt = _plt()
    out = output_dir(out)
    results = []
    for comparison in found:
        fig = plot_cd_diagram(comparison, test, control, caption=captions)
        paths = []
        for fmt in formats:
            path = out / f"{comparison.slug()}_cd.{fmt}"
            write(path, lambda tmp, fig=fig, fmt=fmt: fig.savefig(tmp, dpi=200, metadata=file_metadata(fmt), format=fmt))
            paths.append(path)
        if not keep:
            plt.close(fig)
        results.append(CDOutput(comparison, fig, paths))
    return results
