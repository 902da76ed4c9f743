"""How every figure looks and is saved: one matplotlib style, and fixed file metadata so that a
regenerated figure is byte-identical to the last one."""
from __future__ import annotations


def style_matplotlib():
    """pyplot on the Agg backend with the style of every malt figure (sizes for a two-column paper)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
        "legend.fontsize": 7, "lines.linewidth": 1.3, "lines.markersize": 4.5, "errorbar.capsize": 2.5,
        "axes.spines.top": False, "axes.spines.right": False, "pdf.fonttype": 42, "ps.fonttype": 42,
        "savefig.dpi": 200, "figure.dpi": 100,
    })
    return plt


def file_metadata(fmt: str) -> dict:
    """Fixed metadata for a figure file of format ``fmt`` (no creation date), so files are byte-stable."""
    if fmt == "pdf":
        return {"Creator": "malt", "Producer": "malt", "CreationDate": None}
    if fmt == "png":
        return {"Software": "malt"}
    return {}
