"""The risk floors' settings (``RiskFloors``) and the refusal a release that breaks them
raises (``UnsafeReleaseError``): low in the house, so that the option schema, the recipe
and the results can name the floors without importing the figures behind them
(``floors.py``, the intruders, the linkage)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["RiskFloors", "UnsafeReleaseError"]


class UnsafeReleaseError(ValueError):
    """A release breaks a risk floor; the message names the variable, the floor and the fix.

    Attributes
    ----------
    risk : RiskProfile or None
        The profile behind the refusal (figures only, never data), so that a caller can
        show why.
    """

    def __init__(self, message, risk=None):
        super().__init__(message)
        self.risk = risk


SMALL_BAND = 10  # a band of fewer records: a violation says that one record decides
ONE_RECORD = "one record decides"


@dataclass(frozen=True)
class RiskFloors:
    """The floors every released sensitive variable must meet (see the module docstring).

    Attributes
    ----------
    min_perturbed_share : float in [0, 1]
        The least share of each variable's variance the protection must change.
    max_abs_cor : float in [0, 1]
        The largest |cor(original, protected)| allowed.
    tolerance : float in (0, 1]
        Relative closeness: a record is "close" when |x' - x| <= tolerance |x|.
    max_close_share : float in [0, 1]
        The most records allowed within the tolerance, in every size band.
    bands : int in [1, 100]
        Size bands (quantiles of the original value).
    top_records : int in [1, 100]
        The least number of records in the "largest 1 %" band.
    hold_all_intruders : int, 0 or 1
        1 (the default) holds every intruder of general protection to the floors, in every
        band, as in selective protection.  0 is a lowering that needs a reason: the
        assignment, regression, residual, model and correction intruders and the linked
        record band by band are then measured and reported, not held (held, they refuse
        general FA and PCA on Tarragona in every seed tried, at 2 or 3 of its 9 largest
        firms: an intruder who knows the method takes those firms back).
    """

    min_perturbed_share: float = 0.3
    max_abs_cor: float = 0.9
    tolerance: float = 0.05
    max_close_share: float = 0.2
    bands: int = 10
    top_records: int = 5
    hold_all_intruders: int = 1

    def to_dict(self):
        return asdict(self)

    def lowered(self):
        """The floors set laxer than the defaults, each as 'name value (default d)': a
        smaller perturbed share or tolerance, a larger |cor| or close share, fewer bands.
        A release under lowered floors needs a stated reason (``allow_unsafe``) and says so
        on every output."""
        d = RiskFloors()
        laxer = {"min_perturbed_share": self.min_perturbed_share < d.min_perturbed_share,
                 "max_abs_cor": self.max_abs_cor > d.max_abs_cor,
                 "tolerance": self.tolerance < d.tolerance,
                 "max_close_share": self.max_close_share > d.max_close_share,
                 "bands": self.bands < d.bands,
                 "hold_all_intruders": self.hold_all_intruders < d.hold_all_intruders}
        return tuple(f"{k} {getattr(self, k):g} (default {getattr(d, k):g})" for k, lax in laxer.items() if lax)

    def lowered_text(self):
        """'' for floors at least as strict as the defaults, else one sentence naming them."""
        low = self.lowered()
        return f"risk floors LOWERED below the defaults: {', '.join(low)}" if low else ""

    @classmethod
    def from_value(cls, value):
        """RiskFloors from None (defaults), a RiskFloors or a dict of some fields."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise TypeError("floors must be a dict such as {'max_close_share': 0.2} or a RiskFloors; "
                            f"got {type(value).__name__}.")
        names = set(cls.__dataclass_fields__)
        unknown = sorted(set(value) - names)
        if unknown:
            raise ValueError(f"floors has unknown field(s) {', '.join(map(repr, unknown))}; "
                             f"its fields are {', '.join(sorted(names))}.")
        out = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"floors[{k!r}] must be a number, got {type(v).__name__}.")
            v = float(v)
            if not np.isfinite(v):
                raise ValueError(f"floors[{k!r}] must be finite.")
            if k == "hold_all_intruders":
                if v not in (0.0, 1.0):
                    raise ValueError("floors['hold_all_intruders'] must be 1 (every intruder held, the default) or 0 "
                                     "(a lowering: general protection holds only the own, linked, structural and "
                                     "identity intruders; needs a reason).")
                v = int(v)
            elif k in ("bands", "top_records"):
                if v != int(v) or not 1 <= v <= 100:
                    raise ValueError(f"floors[{k!r}] must be a whole number from 1 to 100.")
                v = int(v)
            elif k == "tolerance":
                if not 0 < v <= 1:
                    raise ValueError("floors['tolerance'] must lie in (0, 1], e.g. 0.05 for 5 %.")
            elif not 0 <= v <= 1:
                raise ValueError(f"floors[{k!r}] must lie in [0, 1].")
            out[k] = v
        return cls(**out)
