"""Publication-ready figures computed from a ResultSet alone.

Experiments are grouped into *families*: the same dataset and task with the same task options
except one swept setting (the task's ``settings``: missing fraction, labelled points, ...). Each
family and metric gives one figure: the mean over folds with error bars (std or a 95 % t-interval,
named with the number of folds on the value axis), one line per algorithm setting, numeric settings
on a numeric axis (logarithmic when they span a decade or more). A family with a single setting gives
a bar chart, bars of one algorithm in numeric order of its parameters, and for every algorithm
swept over a numeric parameter a line plot over that parameter, the other algorithms as reference
lines.

Colours are assigned per figure: no two series of a figure share a colour (Okabe–Ito's colour-blind
safe colours first, then Paul Tol's muted ones) nor, up to twelve series, a marker. Each algorithm
has a preferred slot, so it keeps its colour across figures unless another series of the same figure
holds that slot.
"""
from __future__ import annotations

import collections
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from malt.results.describe import known_metrics, metric_info, metric_label, planned_folds
from malt.results.describe import setting_label as _declared_setting_label
from malt.errors import MaltError
from malt.results.formatting import format_value
from malt.results.outputs import output_dir, write
from malt.results.settings import clean as _clean, display_order
from malt.results.settings import setting_names as legend_labels  # the name figures have used
from malt.results.settings import is_reference, sort_value as _sort_value
from malt.results.style import file_metadata, style_matplotlib

# Okabe & Ito (2008) colour-blind-safe colours (their yellow left out: too faint on white), then Paul
# Tol's "muted" scheme (also colour-blind safe; its pale sand and grey left out).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#332288", "#999933", "#882255", "#44AA99", "#CC6677", "#88CCEE", "#AA4499", "#117733"]
MARKERS = ["o", "s", "^", "D", "v", "X", "P", "<", ">", "p", "h", "*"]
KNOWN = ["bmr", "pma-gibbs", "mlknn", "iblr", "ccml", "mllr", "mlsvm", "pmf", "pma-map", "pma-exact", "ilmc",
         "gpr", "column-mean", "gf", "mwem", "lnp", "lgc", "tikreg", "ck", "ltsalp", "gptm", "lda"]
LINESTYLES = ["-", "--", ":", "-."]
WIDTH_IN = 3.5  # single column
HEIGHT_IN = 2.5



def _preferred_slot(name: str) -> int:
    if name in KNOWN:
        return KNOWN.index(name)
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def algorithm_style(name: str) -> dict:
    """The preferred colour and marker of an algorithm (what it gets when its figure has no clash)."""
    slot = _preferred_slot(name)
    return {"color": PALETTE[slot % len(PALETTE)], "marker": MARKERS[slot % len(MARKERS)]}


def _extra_colours(n: int) -> list[str]:
    """Beyond the palette: evenly spaced hues (distinct, no longer colour-blind safe; markers help)."""
    import colorsys

    return ["#%02X%02X%02X" % tuple(int(255 * c) for c in colorsys.hsv_to_rgb(i / n, 0.75, 0.7)) for i in range(n)]


def assign_styles(series: list[tuple[str, str]]) -> dict[str, dict]:
    """Colour and marker per series (display) of one figure, given as (algorithm, display) pairs.

    Every series gets its own colour; markers differ too while there are markers left. A series
    takes its algorithm's preferred slot when free, else the next free one, so styles are stable
    across figures that show the same algorithms. Second and later settings of one algorithm are
    drawn with dashed/dotted lines and open markers as well."""
    colours = list(PALETTE)
    if len(series) > len(colours):
        colours += [c for c in _extra_colours(len(series)) if c not in colours]
    used_colours: set[int] = set()
    used_markers: set[int] = set()
    styles, seen = {}, {}
    for algorithm, display in series:
        slot = _preferred_slot(algorithm)
        c = slot % len(colours)
        while c in used_colours:
            c = (c + 1) % len(colours)
        used_colours.add(c)
        m = slot % len(MARKERS)
        if len(used_markers) < len(MARKERS):
            while m in used_markers:
                m = (m + 1) % len(MARKERS)
        used_markers.add(m)
        nth = seen.get(algorithm, 0)
        seen[algorithm] = nth + 1
        styles[display] = {"color": colours[c], "marker": MARKERS[m], "linestyle": LINESTYLES[nth % len(LINESTYLES)]}
    return styles


def metric_axis_label(name: str, options: dict | None = None, error: str | None = None,
                      folds: tuple[int, int] | None = None, task: str | None = None) -> str:
    """'One-error (%), lower is better' and, with ``error``, a second line saying what the error
    bars are and over how many folds: 'mean ± std over 5 folds'."""
    info = metric_info(name, task)
    text = f"{metric_label(name, options, task=task)}, {info.better} is better"
    if error is not None:
        text += "\n" + error_description(error, folds)
    return text


def error_description(error: str, folds: tuple[int, int] | None) -> str:
    what = {"std": "mean ± std", "ci": "mean ± 95% t-interval"}.get(error, error)
    if not folds:
        return what
    lo, hi = folds
    n = f"{lo}" if lo == hi else f"{lo}–{hi}"
    return f"{what} over {n} fold{'s' if hi != 1 else ''}"


def metric_scale(name: str, task: str | None = None) -> float:
    return 100.0 if metric_info(name, task).percent else 1.0


def setting_label(setting: str, task: str | None = None) -> tuple[str, float]:
    return _declared_setting_label(task, setting)


# ---- families ----------------------------------------------------------------------------------
@dataclass
class Family:
    """Experiments that differ only in one swept task setting (``setting`` None: a single experiment)."""

    dataset: str
    task: str
    setting: str | None
    fixed: dict  # the task options shared by every experiment of the family
    experiments: dict = field(default_factory=dict)  # experiment id -> value of the swept setting
    tag: str = ""  # set by `families` when another family would otherwise share this one's name

    @property
    def swept(self) -> bool:
        return self.setting is not None

    def title(self) -> str:
        return f"{self.dataset} · {self.task}"

    def subtitle(self) -> str:
        """The non-default fixed task options, e.g. 'missing=0.3, discard=True', then the tag ('id 0219cc42')
        of a family whose name another one shares."""
        defaults = _task_defaults(self.task)
        shown = {k: v for k, v in self.fixed.items() if k in defaults and not _same(v, defaults[k])}
        shown.update({k: v for k, v in self.fixed.items() if k not in defaults})
        parts = [f"{k}={format_value(v)}" for k, v in sorted(shown.items())]
        if self.tag:
            parts.append(f"id {self.tag}")
        return ", ".join(parts)

    def slug(self) -> str:
        parts = [self.dataset, self.task]
        if self.swept:
            parts.append(f"by-{self.setting}")
        sub = self.subtitle()
        if sub:
            parts.append(re.sub(r"[^A-Za-z0-9.=-]+", "_", sub.replace(", ", "_")))
        return _safe("_".join(parts))


def _safe(text: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._=-]+", "_", text)
    if len(text) > 100:
        text = text[:80] + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return text


def _same(a, b) -> bool:
    if _missing(a) and _missing(b):
        return True
    try:
        return bool(math.isclose(float(a), float(b)))
    except (TypeError, ValueError):
        return a == b


def option_matches(stored, text: str) -> bool:
    """Whether a stored task option equals a command-line/CSV value ('0.3', 'true', 'none')."""
    if _missing(stored):
        return text.strip().lower() in ("none", "null", "")
    if isinstance(stored, (bool, np.bool_)) or str(stored) in ("True", "False"):
        return str(stored).lower() == text.strip().lower()
    try:
        return abs(float(stored) - float(text)) < 1e-9
    except (TypeError, ValueError):
        return str(stored) == text.strip()


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _task_defaults(task: str) -> dict:
    try:
        from malt.tasks import get_task

        return get_task(task).Params().to_dict()
    except MaltError:  # an unknown task (results from a newer malt): show every option
        return {}


def families(rs) -> list[Family]:
    """Group a ResultSet's experiments into families, one per (dataset, task, fixed options, swept setting).

    An experiment belongs to every family in which its setting is swept over at least two values;
    experiments in none are single-experiment families (drawn as bar charts).
    """
    frame = rs.frame
    if frame.empty:
        return []
    option_cols = [c for c in frame.columns if c.startswith("task.")]
    exps = frame.drop_duplicates("experiment").set_index("experiment")
    out: list[Family] = []
    covered: set[str] = set()
    options = {}
    for exp, row in exps.iterrows():  # the spec holds exactly the options of the experiment's task
        task_params = rs.specs.get(exp, {}).get("task_params")
        if task_params is None:
            task_params = {c[5:]: row[c] for c in option_cols if not _missing(_clean(row[c]))}
        options[exp] = {k: _clean(v) for k, v in task_params.items()}
    by_task: dict[tuple, list[str]] = {}
    for exp, row in exps.iterrows():
        by_task.setdefault((row["dataset"], row["task"]), []).append(exp)
    for (dataset, task), members in sorted(by_task.items()):
        settings = _settings(rs, members, task)
        for setting in settings:
            groups: dict[str, list[str]] = {}
            for exp in members:
                value = options[exp].get(setting)
                if _missing(value) or isinstance(value, bool):
                    continue
                key = repr(sorted((k, _key(v)) for k, v in options[exp].items() if k != setting))
                groups.setdefault(key, []).append(exp)
            for key, group in sorted(groups.items()):
                values = {exp: options[exp][setting] for exp in group}
                if len({_key(v) for v in values.values()}) < 2:
                    continue
                fixed = {k: v for k, v in options[group[0]].items() if k != setting}
                out.append(Family(dataset, task, setting, fixed, dict(sorted(values.items(), key=lambda kv: kv[1]))))
                covered.update(group)
        for exp in members:
            if exp not in covered:
                out.append(Family(dataset, task, None, options[exp], {exp: None}))
    return _distinct_names(out)


def _distinct_names(found: list[Family]) -> list[Family]:
    """Tag the families that would share a slug, so no figure or table file overwrites another's.

    Two families share one when a dataset name and the shown options are the same but the data or an
    unshown option is not: a data file edited between two runs, or specs stored before a task option
    existed. The tag, shown in the subtitle and so in every file name and caption, is the experiment
    id's hash part (one experiment) or a hash of the ids (several).
    """
    slugs = [family.slug() for family in found]
    counts = collections.Counter(slugs)
    for family, slug in zip(found, slugs):
        if counts[slug] > 1:
            ids = sorted(family.experiments)
            family.tag = (ids[0].rsplit("-", 1)[-1] if len(ids) == 1
                          else hashlib.sha256(",".join(ids).encode()).hexdigest()[:8])
    return found


def _settings(rs, members, task) -> list[str]:
    for exp in members:
        spec = rs.specs.get(exp, {})
        if spec.get("settings"):
            return list(spec["settings"])
    try:
        from malt.tasks import get_task

        return list(get_task(task).settings)
    except Exception:
        return []


def _key(value):
    if isinstance(value, float):
        return round(value, 12)
    return value


# ---- statistics ----------------------------------------------------------------------------------
def error_half_width(values: np.ndarray, error: str) -> float:
    """Std over folds (ddof=1), or the half-width of a two-sided 95 % Student-t interval of the mean."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = len(values)
    if n < 2:
        return 0.0
    std = float(np.std(values, ddof=1))
    if error == "std":
        return std
    if error == "ci":
        from scipy import stats

        return float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))
    raise MaltError(f"Unknown error bar '{error}'; use 'std' or 'ci'.")


def family_summary(rs, family: Family, metric: str, error: str = "std") -> pd.DataFrame:
    """Per display (and setting value): algorithm, mean, err, folds, planned — in display units."""
    frame = rs.frame
    frame = frame[frame["experiment"].isin(family.experiments) & (frame["metric"] == metric)]
    scale = metric_scale(metric, family.task)
    rows = []
    for (exp, display), group in frame.groupby(["experiment", "display"], sort=True):
        values = group["value"].to_numpy(dtype=float) * scale
        rows.append({"experiment": exp, "setting": family.experiments[exp], "display": display,
                     "algorithm": group["algorithm"].iloc[0], "mean": float(np.nanmean(values)),
                     "err": error_half_width(values, error), "folds": int(np.isfinite(values).sum()),
                     "planned": planned_folds(rs, exp, display)})
    return pd.DataFrame(rows, columns=["experiment", "setting", "display", "algorithm", "mean", "err", "folds",
                                       "planned"])


def fold_range(summary: pd.DataFrame) -> tuple[int, int] | None:
    if summary.empty:
        return None
    return int(summary["folds"].min()), int(summary["folds"].max())


def incomplete_suffix(summary: pd.DataFrame, display: str) -> str:
    """' (3/5 folds)' when a series has fewer folds than its experiment plans, else ''."""
    part = summary[summary["display"] == display]
    short = part[part["planned"].notna() & (part["folds"] < part["planned"])]
    if short.empty:
        return ""
    row = short.iloc[0]
    return f" ({int(row['folds'])}/{int(row['planned'])} folds)"


def numeric_sweeps(rs, family: Family) -> dict[str, list[str]]:
    """Parameter -> the algorithms of a single experiment whose settings take three or more numeric
    values of it: each parameter gets a line plot over its values."""
    frame = rs.frame[rs.frame["experiment"].isin(family.experiments)].drop_duplicates("display")
    params = [c for c in frame.columns if c.startswith("param.")]
    out: dict[str, list[str]] = {}
    for algo, group in frame.groupby("algorithm", sort=True):
        for column in params:
            values = [_clean(v) for v in group[column]]
            if any(_missing(v) or isinstance(v, (bool, np.bool_)) for v in values):
                continue
            try:
                numbers = {round(float(v), 12) for v in values}
            except (TypeError, ValueError):
                continue
            if len(numbers) >= 3:
                out.setdefault(column[6:], []).append(algo)
    return out


# ---- drawing -------------------------------------------------------------------------------------
def _line_styles(rs, summary: pd.DataFrame) -> dict[str, dict]:
    order = display_order(rs, summary["display"].unique())
    algorithm = summary.drop_duplicates("display").set_index("display")["algorithm"]
    return assign_styles([(algorithm[d], d) for d in order])


def _log_axis(values) -> bool:
    """Positive values spanning a decade or more read better on a logarithmic axis."""
    values = sorted(values)
    return len(values) > 2 and values[0] > 0 and values[-1] / values[0] >= 10


def _title(ax, family: Family):
    sub = family.subtitle()
    ax.set_title(family.title() + (f"\n{sub}" if sub else ""), loc="left")


def _legend(ax, handles, labels, below: float = 0.22):
    """Below the axes (``below`` axes heights under them, clear of the tick labels), outside the data,
    in as many columns as fit a single column."""
    if not handles:
        return
    longest = max(len(t) for t in labels)
    ncol = max(1, min(len(labels), 3 if longest <= 12 else 2 if longest <= 22 else 1))
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -below), ncol=ncol, frameon=False,
              handlelength=2.2, columnspacing=1.2)


REFERENCE_REACH = 0.5
"""A reference baseline farther than this fraction of the models' span outside it is left off the
scale (its value goes into its legend entry) rather than squashing the models' differences."""


def _value_limits(lo: float, hi: float, references: dict[str, float]) -> tuple[tuple[float, float], set[str]]:
    """Limits of the value axis: the models' range [lo, hi] with a margin, widened to a reference
    baseline's value only when it lies within REFERENCE_REACH of that range; returns the limits and
    the references left off the scale."""
    span = hi - lo if hi > lo else max(abs(hi), 1.0) * 0.1
    reach_lo, reach_hi = lo - REFERENCE_REACH * span, hi + REFERENCE_REACH * span
    shown = [v for v in references.values() if reach_lo <= v <= reach_hi and np.isfinite(v)]
    lo, hi = min([lo, *shown]), max([hi, *shown])
    span = hi - lo if hi > lo else span
    off = {name for name, v in references.items() if not reach_lo <= v <= reach_hi}
    return (lo - 0.08 * span, hi + 0.08 * span), off


def _reference_name(name: str, value: float, off_scale: bool) -> str:
    return f"{name} (reference{f', off scale at {value:.3g}' if off_scale else ''})"


def _numeric_axis(ax, xs_all, axis="x"):
    """Ticks at the values, log scale when they span decades; returns the to/from axis transforms."""
    logx = _log_axis(xs_all)
    to_axis, from_axis = (np.log, np.exp) if logx else (lambda v: v, lambda v: v)
    lo, hi = to_axis(np.array(xs_all[0])), to_axis(np.array(xs_all[-1]))
    span = (hi - lo) if len(xs_all) > 1 else 1.0
    if logx:
        ax.set_xscale("log")
        ax.minorticks_off()
    ax.set_xticks(xs_all)
    ax.set_xticklabels([format_value(round(x, 6)) for x in xs_all])
    ax.set_xlim(from_axis(lo - 0.08 * span), from_axis(hi + 0.08 * span))
    return to_axis, from_axis, span


def plot_sweep(rs, family: Family, metric: str, error: str = "std"):
    """Line plot of one family and metric; returns the matplotlib Figure. Reference baselines
    (:data:`malt.results.settings.REFERENCE_BASELINES`) are thin dashed lines without error bars that
    widen the value axis only when near the models' range."""
    plt = style_matplotlib()
    summary = family_summary(rs, family, metric, error)
    xlabel, xscale = setting_label(family.setting, family.task)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    styles = _line_styles(rs, summary)
    order = display_order(rs, summary["display"].unique())
    labels = legend_labels(rs, order)
    xs_all = sorted({float(v) * xscale for v in summary["setting"]})
    to_axis, from_axis, span = _numeric_axis(ax, xs_all)
    models = [d for d in order if not is_reference(summary.loc[summary["display"] == d, "algorithm"].iloc[0])]
    models = models or order
    dodge = 0.012 * span
    handles, names = [], []
    shown = summary[summary["display"].isin(models)]
    lo = float(np.nanmin(shown["mean"] - shown["err"])) if len(shown) else 0.0
    hi = float(np.nanmax(shown["mean"] + shown["err"])) if len(shown) else 1.0
    references = {d: float(summary.loc[summary["display"] == d, "mean"].mean()) for d in order if d not in models}
    limits, off = _value_limits(lo, hi, references)
    for i, display in enumerate(order):
        part = summary[summary["display"] == display].sort_values("setting")
        offset = (i - (len(order) - 1) / 2) * dodge  # keeps overlapping error bars apart
        x = from_axis(to_axis(part["setting"].astype(float).to_numpy() * xscale) + offset)
        y = part["mean"].to_numpy(dtype=float)
        if display in models:
            h = ax.errorbar(x, y, yerr=part["err"].to_numpy(dtype=float), label=labels[display], elinewidth=0.9,
                            markeredgewidth=0.6,
                            markerfacecolor="white" if styles[display]["linestyle"] != "-" else None, **styles[display])
            names.append(labels[display] + incomplete_suffix(summary, display))
        else:
            (h,) = ax.plot(x, y, color=styles[display]["color"], linestyle="--", linewidth=1.0, marker=None)
            names.append(_reference_name(labels[display], references[display], display in off)
                         + incomplete_suffix(summary, display))
        handles.append(h)
    ax.set_ylim(*limits)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(metric_axis_label(metric, family.fixed, error, fold_range(summary), family.task))
    ax.grid(True, axis="y", linewidth=0.4, alpha=0.5)
    _title(ax, family)
    _legend(ax, handles, names)
    return fig


def plot_param_sweep(rs, family: Family, metric: str, parameter: str, algorithms: list[str],
                     error: str = "std"):
    """One experiment: ``metric`` over the numeric ``parameter`` for each of ``algorithms`` (one line
    per combination of an algorithm's other varying parameters); every other setting of the
    experiment is a dashed horizontal line at its mean."""
    plt = style_matplotlib()
    summary = family_summary(rs, family, metric, error)
    frame = rs.frame[rs.frame["experiment"].isin(family.experiments)].drop_duplicates("display").set_index("display")
    column = f"param.{parameter}"
    swept = [d for d in summary["display"] if frame.loc[d, "algorithm"] in algorithms]
    others = [d for d in display_order(rs, summary["display"].unique()) if d not in swept]
    params = [c for c in frame.columns if c.startswith("param.") and c != column]
    lines: dict[tuple, list[str]] = {}
    for algo in algorithms:
        mine = [d for d in swept if frame.loc[d, "algorithm"] == algo]
        varying = [c for c in params if len({repr(_clean(frame.loc[d, c])) for d in mine}) > 1]
        for d in mine:
            key = (algo, tuple(f"{c[6:]}={format_value(_clean(frame.loc[d, c]))}" for c in varying),
                   tuple(_sort_value(frame.loc[d, c]) for c in varying))
            lines.setdefault(key, []).append(d)
    keys = sorted(lines, key=lambda k: (k[0], k[2]))
    line_names = {k: f"{k[0]} ({', '.join(k[1])})" if k[1] else k[0] for k in keys}
    styles = assign_styles([(k[0], line_names[k]) for k in keys] + [(frame.loc[d, "algorithm"], d) for d in others])
    labels = legend_labels(rs, others)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    xs_all = sorted({float(_clean(frame.loc[d, column])) for d in swept})
    to_axis, from_axis, span = _numeric_axis(ax, xs_all)
    handles, names = [], []
    for i, key in enumerate(keys):
        part = summary[summary["display"].isin(lines[key])].copy()
        part["x"] = [float(_clean(frame.loc[d, column])) for d in part["display"]]
        part = part.sort_values("x")
        offset = (i - (len(keys) - 1) / 2) * 0.012 * span  # keeps overlapping error bars apart
        h = ax.errorbar(from_axis(to_axis(part["x"].to_numpy()) + offset), part["mean"].to_numpy(dtype=float), yerr=part["err"].to_numpy(dtype=float),
                        elinewidth=0.9, markeredgewidth=0.6, **dict(styles[line_names[key]], linestyle="-"))
        handles.append(h)
        short = [incomplete_suffix(summary, d) for d in part["display"]]
        names.append(line_names[key] + next((t for t in short if t), ""))
    lo, hi = ax.get_xlim()
    curves = summary[summary["display"].isin(swept)]
    means = {d: float(summary.loc[summary["display"] == d, "mean"].iloc[0]) for d in others}
    limits, off = _value_limits(float(np.nanmin(curves["mean"] - curves["err"])),
                                float(np.nanmax(curves["mean"] + curves["err"])),
                                {d: v for d, v in means.items() if is_reference(frame.loc[d, "algorithm"])})
    for d in others:
        handles.append(ax.axhline(means[d], color=styles[d]["color"], linestyle="--", linewidth=1.0))
        names.append(_reference_name(labels[d], means[d], True) if d in off
                     else f"{labels[d]} (mean){incomplete_suffix(summary, d)}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(*limits)
    ax.set_xlabel(parameter if len(algorithms) > 1 else f"{algorithms[0]}: {parameter}")
    ax.set_ylabel(metric_axis_label(metric, family.fixed, error,
                                    fold_range(summary[summary["display"].isin(swept)]), family.task))
    ax.grid(True, axis="y", linewidth=0.4, alpha=0.5)
    _title(ax, family)
    _legend(ax, handles, names)
    return fig


def plot_bars(rs, family: Family, metric: str, error: str = "std"):
    """Dot plot of one experiment and metric: one row per algorithm setting (settings of one algorithm
    in numeric order of their parameters), the mean with its error bar, on an axis that spans the
    data (not from zero, so 94 % and 96 % look different). Reference baselines are dashed vertical
    lines in the legend, off the scale when far from the models."""
    plt = style_matplotlib()
    summary = family_summary(rs, family, metric, error)
    order = display_order(rs, summary["display"].unique())
    summary = summary.set_index("display").loc[order].reset_index()
    labels = legend_labels(rs, order)
    styles = _line_styles(rs, summary)
    reference = np.array([is_reference(a) for a in summary["algorithm"]], dtype=bool)
    if reference.all():
        reference[:] = False
    models, refs = summary[~reference], summary[reference]
    height = max(1.4, 0.8 + 0.26 * len(models))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    y = np.arange(len(models))[::-1]
    for row, (_, item) in zip(y, models.iterrows()):
        ax.errorbar([item["mean"]], [row], xerr=[item["err"]], fmt=styles[item["display"]]["marker"],
                    color=styles[item["display"]]["color"], elinewidth=1.0, capsize=2.5, markersize=5)
    ax.set_yticks(y)
    ax.set_yticklabels([labels[d] + incomplete_suffix(summary, d) for d in models["display"]])
    ax.set_ylim(-0.7, len(models) - 0.3)
    ax.set_xlabel(metric_axis_label(metric, family.fixed, error, fold_range(summary), family.task))
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)
    ax.set_axisbelow(True)
    values = {d: float(m) for d, m in zip(refs["display"], refs["mean"])}
    limits, off = _value_limits(float(np.nanmin(models["mean"] - models["err"])),
                                float(np.nanmax(models["mean"] + models["err"])), values)
    handles, names = [], []
    for display, value in values.items():
        handles.append(ax.axvline(value, color=styles[display]["color"], linestyle="--", linewidth=1.0))
        names.append(_reference_name(labels[display], value, display in off) + incomplete_suffix(summary, display))
    ax.set_xlim(*limits)
    _title(ax, family)
    _legend(ax, handles, names, below=0.32 + 0.4 / max(1.4, 0.8 + 0.26 * len(models)))
    return fig


@dataclass
class PlotOutput:
    family: Family
    metric: str
    figure: object  # matplotlib Figure (closed unless plot_all(keep=True))
    paths: list[Path]
    parameter_sweep: str | None = None  # the algorithm parameter on the x axis of a parameter sweep


def plot_all(rs, out: str | Path = "figures", *, error: str = "std", metrics: list[str] | None = None,
             formats: tuple[str, ...] = ("png", "pdf"), keep: bool = False, progress=None) -> list[PlotOutput]:
    """Draw and save every family × metric figure of a ResultSet into ``out``. ``progress(total)``, if
    given, returns a function called with each figure's name as it is written."""
    if rs.empty:
        raise MaltError("No finished results to plot; run `malt cv` first (or check the filters).")
    if error not in ("std", "ci"):
        raise MaltError(f"Unknown error bar '{error}'; use 'std' or 'ci'.")
    plt = style_matplotlib()
    out = Path(out)
    out = output_dir(out)
    results, planned = [], []
    for family in families(rs):
        frame = rs.frame[rs.frame["experiment"].isin(family.experiments)]
        chosen = [m for m in known_metrics(frame["metric"].unique()) if metrics is None or m in metrics]
        planned.append((family, chosen, {} if family.swept else numeric_sweeps(rs, family)))
    step = progress(sum(len(chosen) * (1 + len(sweeps)) for _, chosen, sweeps in planned)) if progress else None
    for family, chosen, sweeps in planned:
        for metric in chosen:
            drawings = [("", plot_sweep(rs, family, metric, error) if family.swept
                         else plot_bars(rs, family, metric, error), None)]
            drawings += [(f"_by-{_safe(parameter)}", plot_param_sweep(rs, family, metric, parameter, algos, error),
                          parameter) for parameter, algos in sorted(sweeps.items())]
            for suffix, fig, sweep in drawings:
                stem = _safe(f"{family.slug()}{suffix}_{metric}")
                paths = []
                for fmt in formats:
                    path = out / f"{stem}.{fmt}"  # not with_suffix: slugs hold dots (missing=0.2)
                    write(path, lambda tmp, fig=fig, fmt=fmt: fig.savefig(tmp, dpi=200, bbox_inches="tight",
                                                                         metadata=file_metadata(fmt), format=fmt))
                    paths.append(path)
                if not keep:
                    plt.close(fig)
                results.append(PlotOutput(family, metric, fig, paths, sweep))
                if step:
                    step(stem)
    return results
