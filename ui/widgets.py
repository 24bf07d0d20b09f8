"""Widgets drawn from sdccore's option schema: the label, help, choices, default and limits
of each option come from ``sdccore.option_schema``, never typed out in a page."""

from __future__ import annotations

import sdccore


def spec(method: str, name: str):
    for o in sdccore.option_schema(method):
        if o.name == name:
            return o
    raise KeyError(f"{method} has no option {name!r}")


def default(method: str, name: str, selective: bool):
    """The schema's default of an option that depends on whether variables are sensitive
    (rotation, factors, components, residuals): never restated on a page."""
    return spec(method, name).default_given(selective)


def _label(o):
    return o.label + (f" ({o.unit})" if o.unit else "")


def choice(box, method, name, cfg, key, choices=None, default=None):
    """A selectbox for a 'choice' option; ``choices`` narrows the schema's list (e.g. to the
    choices allowed without sensitive variables)."""
    o = spec(method, name)
    opts = list(choices if choices is not None else o.choices)
    cur = cfg.get(name, default if default is not None else o.default)
    fmt = (lambda c: o.choice_text.get(c, c)) if o.choice_text else str
    return box.selectbox(_label(o), opts, index=opts.index(cur) if cur in opts else 0, key=key, help=o.help,
                         format_func=fmt)


def number(box, method, name, cfg, key, low=None, high=None, step=None, label=None):
    """A number_input for a 'number' or 'integer' option within the schema's interval,
    narrowed by data-bound limits (``low``/``high``, in the schema's units).  An option with a
    ``scale`` (a share shown in %) is shown scaled and returned in the schema's units."""
    o = spec(method, name)
    k = o.scale
    lo = low if low is not None else o.low
    hi = high if high is not None else o.high
    default = o.default if not callable(o.default) else None
    cur = cfg.get(name, default)
    if o.kind in ("integer", "removed"):
        lo = int(lo if lo is not None else 0)
        cur = int(cur if cur is not None else lo)
        cur = min(max(cur, lo), int(hi)) if hi is not None else max(cur, lo)
        return int(box.number_input(label or _label(o), min_value=lo, max_value=int(hi) if hi is not None else None,
                                    value=cur, step=step or 1, key=key, help=o.help))
    lo = lo * k if lo is not None else None
    hi = hi * k if hi is not None else None
    if o.low_open and lo == (o.low * k if o.low is not None else None):
        lo = 0.1  # an open lower end: the smallest step a user types
    cur = float(cur) * k
    if lo is not None:
        cur = max(cur, float(lo))
    if hi is not None:
        cur = min(cur, float(hi))
    value = float(box.number_input(label or _label(o), min_value=float(lo) if lo is not None else None,
                                   max_value=float(hi) if hi is not None else None, value=cur, key=key, help=o.help,
                                   **({"step": step} if step else {})))
    return value / k if k != 1.0 else value


def flag(box, method, name, cfg, key):
    """A checkbox for a 'flag' option (0 or 1)."""
    o = spec(method, name)
    return int(box.checkbox(o.label, bool(cfg.get(name, o.default)), key=key, help=o.help))


# set on the Configure page's other sections (tail also by the Run page's second round)
COMMON = ("exclude", "transform", "bounds", "rounding", "tail", "floors", "keys", "k_anonymity", "household")


def schema_widgets(box, method, cfg, prefix):
    """One widget per option of the method's own schema (not the common ones, which the
    Configure page sets for every method): what a method without a tab of its own (a
    registered plug-in) is configured with.  Returns the options set, with the method."""
    out = {"method": method}
    for o in sdccore.option_schema(method):
        if o.name in COMMON or o.applies is not None and not _applies(o, out):
            continue
        key = f"{prefix}_{o.name}"
        if o.kind == "choice":
            out[o.name] = choice(box, method, o.name, cfg, key)
        elif o.kind in ("number", "integer") and not callable(o.default):
            out[o.name] = number(box, method, o.name, cfg, key)
    return out


def _applies(o, bound):
    try:
        return bool(o.applies(bound, None))
    except (KeyError, AttributeError, TypeError):
        return True


# st.dataframe draws on a canvas and cuts a cell's text at its column's edge: every table of the
# pages goes through ``table``, which sizes each column to its header and its longest cell and,
# past WRAP_PX, wraps the text over taller rows (measured in Chromium: about 7 px a character)
CHAR_PX, PAD_PX, WRAP_PX, LINE_PX = 7.5, 30, 420, 21
# rows taller than one line: the table as tall as its rows (st.dataframe's own height, about 10
# one-line rows, showed one row of the Run page's risk floors table, 15 lines of a violation and
# its fix, at a time), up to TALL_PX, past which it scrolls inside; header and border in HEAD_PX
HEAD_PX, TALL_PX = 40, 1600
LONG_LINES, WIDE_PX = 6, 640  # a text over more lines than this at WRAP_PX is wrapped at WIDE_PX


def _shown(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}" if v == v else ""
    return "" if v is None else str(v)


def table_layout(df, hide_index=False):
    """(column_config, row_height) that show every header and every cell of ``df`` whole: each
    column as wide as its longest text (at most WRAP_PX, then wrapped: ``row_height`` fits the
    most lines any cell needs; None when one line does), with the glossary's meaning of a header
    it explains as the column's tooltip."""
    import math

    cols = [(c, c, df[c].tolist()) for c in df.columns]
    if not hide_index and df.index.nlevels == 1:
        cols.insert(0, ("_index", df.index.name or "", df.index.tolist()))
    config, lines = {}, 1
    for key, head, values in cols:
        text = max([len(_shown(v)) for v in values] or [0])
        head_px = len(str(head)) * CHAR_PX + PAD_PX + 16  # the sort arrow beside the header
        cell_px = text * CHAR_PX + PAD_PX
        width = max(head_px, min(cell_px, WRAP_PX))
        per_line = (width - PAD_PX) / CHAR_PX * 0.8  # words wrap whole: a line is never full
        if cell_px > width and text / per_line > LONG_LINES:  # a paragraph: wider
            width = max(head_px, min(cell_px, WIDE_PX))
            per_line = (width - PAD_PX) / CHAR_PX * 0.8
        if cell_px > width:
            lines = max(lines, math.ceil(text / per_line))
        config[key] = {"width": int(math.ceil(width))}
        tip = sdccore.report.tip(head) if isinstance(head, str) and head else ""
        if tip:
            config[key]["help"] = tip
    return config, (None if lines == 1 else 12 + LINE_PX * lines)


def table(box, df, key=None, hide_index=None, column_config=None, **kw):
    """``box.dataframe`` with every header and cell shown whole (``table_layout``); a caller's
    column_config entries are kept, with the width added where they set none."""
    config, height = table_layout(df, bool(hide_index))
    named = {"small": 75, "medium": 200, "large": 400}
    for k, v in (column_config or {}).items():
        mine = config.get(k, {})
        if isinstance(v, dict):
            asked = named.get(v.get("width"), v.get("width")) or 0
            config[k] = {**mine, **v, "width": max(int(asked), mine.get("width", 0))}
        else:
            config[k] = v
    if height is not None and "height" not in kw:
        kw["height"] = table_height(len(df), height)
    return box.dataframe(df, key=key, hide_index=hide_index, column_config=config, row_height=height, **kw)


def table_height(rows, row_height) -> int:
    """The height in pixels that shows ``rows`` rows of ``row_height`` whole (at most TALL_PX)."""
    return int(min(TALL_PX, HEAD_PX + rows * row_height))
