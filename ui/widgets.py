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


COMMON = ("exclude", "transform", "bounds", "rounding", "floors", "keys", "k_anonymity", "household")  # set on the Configure page's other sections


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
