"""The intruders' registry: each intruder of the risk floors' battery (its name, label, what it
knows, where it applies, its guess and the fix its violations name) in one table that every
layer asks -- the battery (``intruders.battery``), the risk profile's long table
(``RiskProfile.intruders``, one row per variable, size band and intruder), its wide columns,
the violations' words, the dashboard, the report, the codebook and the command line -- as the
methods' registry (``sdccore._methods``) is for methods.

Ground floor: this module imports only ``_core.refs`` and no numpy when it loads (only
``register_intruder`` asks the methods' registry which methods exist), so the dashboard can
read the labels before the compiled kernels load; a built-in intruder's guess lives in
``attacks`` and is imported the first time the battery runs it.

An intruder's guess is a function of one ``IntruderContext`` (the checked variable, the
sampled records' original values on what the intruder knows, the released file, the record
each sampled record links to ...) returning its estimate of the variable's original value
for every sampled record (an array of ``len(ctx.rows)`` values, NaN where it has none), a
list of such arrays (alternative guesses: the battery counts the best of them, never pools
them), or None where it does not apply.  A record is disclosed when the guess lies within the
floors' tolerance of the truth; the floors hold the share of records disclosed BEYOND what the
prior (the intruder's knowledge alone) gets right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .._core.refs import check_entry, is_ref, lookup, remove_entry, resolve

__all__ = ["IntruderInfo", "IntruderContext", "intruders", "intruder_info", "register_intruder", "unregister_intruder"]


@dataclass(frozen=True, kw_only=True)
class IntruderContext:
    """What an intruder may use to guess the checked variable of the sampled records.

    Attributes
    ----------
    variable, target : str, int
        The checked variable's name and its column number.
    names : tuple of str
        Every column's name (``known`` and ``target`` index them).
    original : ndarray (records x columns)
        The sampled records' ORIGINAL values (the intruder uses only ``original[:, known]``:
        ``known_values``; the target column is the truth it is scored against).  The
        sample: every record up to 5,000, above that 5,000 records evenly spaced in file
        order (the same for every seed); ``rows`` gives their record numbers.
    released : ndarray (all records x columns)
        The whole release.
    rows : ndarray of int
        The sampled records' numbers in the file (``released[rows]``: their own released rows).
    linked : ndarray of int
        For each sampled record, the released record the intruder links it to (nearest on
        what it knows).
    known : tuple of int
        The columns the intruder knows (the public variables in selective protection, every
        other variable but the target's near-duplicates in general protection).
    selective : bool
        Selective protection (only the sensitive variables protected).
    method : str or None
        The protection method, when known (the intruder knows how the release was made).
    window : int or None
        A swap window the method publishes, in ranks (rank swapping's p), or None.
    settings : dict or None
        What the release publishes of its construction, when the method is known (only the
        seed is secret): the method's own settings ({option: value}, e.g. the quantile
        exchange's ``block``) and, for a conditional method, ``'codes'``: the indicator columns
        (all records x q, or None) of the codes released unchanged it was given.
    observed : ndarray of bool or None
        Which records' cells of the target are released (None: every one).
    tolerance : float
        The floors' tolerance: a guess within it (relative) of the truth discloses the record.
    cells : ndarray of bool or None
        Which cells of the file are released (None: every one).  A plug-in intruder sees
        the cells that are not released as NaN in ``original`` and ``released`` (it knows
        no value nobody knows); the built-in ones work on the completed files with this mask.
    keys : tuple of two ndarrays or None
        With key variables (survey files): every record's key values as integer codes (records
        x keys, -1 missing), as the intruder reads them in the original (after the published
        recodings) and as released (a suppressed value is -1: it matches every value).
    replays : callable or None
        ``replays()`` -> a list of full files (all records x columns): the release made again
        by the same method and settings from the release itself, taken as the original, with
        the intruder's own seeds (the protection pipeline's; None where the method is not
        known).  An intruder learns there how the construction moves a record's values.
    whole_original, scaled, structure, key, prior_original, prior_key : internal
        The built-in intruders' means: the whole original file, the linked records on the
        protection scale, the span of the perturbed factors (FA, PCA) and the priors' cache
        key; the sampled original the priors read where it differs from ``original`` (a file
        with missing cells: those drawn from a fixed stream, the same for every seed, where
        ``original`` holds the run's own draws) and its cache key.  A plug-in intruder uses the
        fields above.
    """

    variable: str
    target: int
    names: tuple
    original: Any
    released: Any
    rows: Any
    linked: Any
    known: tuple
    selective: bool
    method: str | None = None
    window: int | None = None
    settings: Any = None
    observed: Any = None
    tolerance: float = 0.05
    cells: Any = field(default=None, repr=False)            # which cells are released (records x columns), or None
    keys: Any = field(default=None, repr=False)             # (original, released) key codes, or None
    whole_original: Any = field(default=None, repr=False)   # the full original (the battery's own intruders)
    scaled: Any = field(default=None, repr=False)           # the linked records on the protection scale
    structure: Any = field(default=None, repr=False)        # the perturbed factors' span (FA, PCA)
    key: Any = field(default=None, repr=False)              # the priors' cache key
    replays: Any = field(default=None, repr=False)          # the method made again on the release (``replay``)
    prior_original: Any = field(default=None, repr=False)   # the sampled original the priors read (None: original)
    prior_key: Any = field(default=None, repr=False)        # their cache key (None: key)

    @property
    def known_values(self):
        """The sampled records' original values on what the intruder knows (records x known)."""
        return self.original[:, list(self.known)]

    @property
    def linked_release(self):
        """The released rows each sampled record links to (records x columns)."""
        return self.released[self.linked]


@dataclass(frozen=True)
class IntruderInfo:
    """One intruder of the risk floors' battery.

    Attributes
    ----------
    name : str
        Its key in ``RiskProfile.intruders`` (column ``intruder``) and in the violations.
    label : str
        The intruder in words, as a violation names it ("the linking intruder (...)").
    guess : callable or str
        ``guess(ctx: IntruderContext)`` -> an array of one estimate per sampled record, a
        list of such arrays (alternatives; the best one counts), or None (does not apply).
        A string "module:function" is imported on first use.
    knows : str
        What it knows, in words (the report's list of intruders).
    fix : str or callable
        What a violation tells the custodian to do; a callable is called with the keyword
        arguments ``selective``, ``method``, ``names`` and ``identity`` (the identity the
        identity intruder used, or None) and returns the words.
    selective, general : bool
        Applies in selective and in general protection.
    methods : tuple of str or None
        The registered protection methods it attacks, e.g. ``("rankswap",)`` (None: every
        release, including ``evaluate``'s, where the method is not known).
    held_in_general : bool
        Held to the floors in general protection even when the floors are lowered to
        ``hold_all_intruders=0`` (by default, 1, every intruder is held).
    bands_in_general : bool
        Held band by band in general protection (False: overall only).
    column : str or None
        Its wide column of ``RiskProfile.variables`` (``close_own`` ...): the built-in
        intruders' only; a plug-in's figures are in the long table ``RiskProfile.intruders``
        (and in the wide ``intruder``/``beyond_prior`` columns when it does best).
    verb : str
        How a violation says it: "gets", "reconstructs".
    short : str
        Its column heading in the dashboard's and the report's tables ("linked record").
    absent : str
        Why its figure can be missing (it does not apply to a release), in words.
    """

    name: str
    label: str
    guess: Callable | str = field(repr=False, compare=False)
    knows: str = ""
    fix: Callable | str = field(default="", repr=False, compare=False)
    selective: bool = True
    general: bool = True
    methods: tuple | None = None
    held_in_general: bool = True
    bands_in_general: bool = True
    column: str | None = None
    verb: str = "gets"
    short: str = ""
    absent: str = ""

    @property
    def heading(self):
        """Its column heading in tables (its short name, or its name)."""
        return self.short or self.name

    def applies(self, selective, method=None):
        """Whether it attacks a release made so."""
        if not (self.selective if selective else self.general):
            return False
        return self.methods is None or method is None or method in self.methods

    def held(self, strict):
        """Held to the floors (``strict``: selective protection, or every intruder held)."""
        return strict or self.held_in_general

    def run(self, ctx):
        """Its guess for ``ctx`` (a string "module:function" imported on first use)."""
        return resolve(self.guess)(ctx)

    def fix_text(self, *, selective, method=None, names=(), identity=None):
        """The fix its violations name (a callable ``fix`` gets the keyword arguments
        ``selective``, ``method``, ``names`` and ``identity`` and returns the words)."""
        if self.fix == _FIX:  # the built-in intruders' words, one function for all of them
            return resolve(_FIX)(self.name, selective=selective, method=method, names=names, identity=identity)
        fix = resolve(self.fix) if is_ref(self.fix) else self.fix
        if callable(fix):
            try:
                words = fix(selective=selective, method=method, names=tuple(names), identity=identity)
            except Exception as e:  # noqa: BLE001 - a plug-in's failure, named
                raise ValueError(f"intruder {self.name!r}: its fix failed: {type(e).__name__}: {e} (fix is called "
                                 f"with the keyword arguments selective, method, names and identity).") from e
            if not isinstance(words, str):
                raise ValueError(f"intruder {self.name!r}: its fix returned {type(words).__name__}; it must return "
                                 f"the words of the fix (a str).")
            return words
        return fix or "perturb the variable more strongly, or use a method that changes its values"


_A = "sdccore._risk.attacks:"
_C = "sdccore._risk.construction:"
_FIX = "sdccore._risk.fixes:intruder_fix"
REGISTRY = {i.name: i for i in (
    IntruderInfo("own", "the own-record intruder (knows which released record is the target's)", _A + "own",
                 knows="which released record is the target's", fix=_FIX, column="close_own", short="own record"),
    IntruderInfo("linked", "the linking intruder (takes the released record nearest on what it knows)", _A + "linked",
                 knows="the target's values on the known variables; links to the nearest released record", fix=_FIX,
                 bands_in_general=False, column="close_linked", short="linked record"),
    IntruderInfo("reconstruction", "the reconstruction intruder (undoes the change it sees in the known variables)",
                 _A + "reconstruction", knows="the known variables' original values and the method (the law of the "
                 "changes, the span of the perturbed factors)", fix=_FIX, column="close_reconstructed",
                 verb="reconstructs", short="reconstructed", absent="no change in the known variables to undo"),
    IntruderInfo("assignment", "the assignment intruder (orders the records by what it knows and hands out the "
                 "released values in that order)", _A + "assignment",
                 knows="the known variables and the released value set (and a published swap window)", fix=_FIX,
                 held_in_general=False, column="close_assignment",
                 short="assignment", absent="no prediction to order by"),
    IntruderInfo("identity", "the identity intruder (solves an exact identity between columns from known and "
                 "released values)", _A + "identity",
                 knows="an exact identity between columns (a total and its parts)", fix=_FIX, column="close_identity",
                 short="identity", absent="no identity between columns"),
    IntruderInfo("regression", "the regression intruder (predicts the change of the record it links to from the "
                 "changes of the variables it knows)", _A + "regression",
                 knows="the known variables' original values and their released changes", fix=_FIX, selective=False,
                 held_in_general=False, short="regression", absent="selective protection (the reconstruction intruder "
                 "uses the same law there)"),
    # the intruders who know the construction (issue 38; their guesses in ``construction``)
    IntruderInfo("residual", "the residual intruder (hands out the released residuals around the fit the release "
                 "publishes, in the order of what it knows)", _C + "residual",
                 knows="the known variables, the method (the fit it publishes) and the released residuals", fix=_FIX,
                 held_in_general=False, short="residuals", absent="no known variables to fit on"),
    IntruderInfo("residual_size", "the residual-by-size intruder (hands out the released residuals by the size of "
                 "the fit, the largest to the largest fit)", _C + "residual_by_size",
                 knows="the known variables, the method (the fit it publishes exactly, and the original residuals in "
                 "another order)", fix=_FIX, held_in_general=False, short="residuals by size",
                 absent="a release that does not publish the fit and the residual set (IPSO does)", methods=("ipso",)),
    IntruderInfo("shrinkage", "the shrinkage intruder (divides the released value by the ratio to which the "
                 "construction shrinks the largest records, or adds the amount, learnt by redoing it on the "
                 "release)", _C + "shrinkage",
                 knows="the method (IPSO hands the residuals round, so the largest records' released values fall "
                 "short of their own) and the record's released value", fix=_FIX, held_in_general=False,
                 short="shrinkage undone", absent="a release that does not redraw the residuals (IPSO does)",
                 methods=("ipso",)),
    IntruderInfo("release_fit", "the model intruder (fits the variable on the release and applies the fit to what "
                 "it knows)", _C + "release_fit",
                 knows="the known variables; fits least squares (raw and log scale) and nearest neighbours on the "
                 "release", fix=_FIX, held_in_general=False, short="fitted on release", absent="no known variables to fit on"),
    IntruderInfo("correction", "the correction intruder (corrects the own or linked released value by the "
                 "release's regression on the other variables)", _C + "correction",
                 knows="the other variables' original values; the release's regression between the variables",
                 fix=_FIX, selective=False, held_in_general=False, short="own + correction",
                 absent="selective protection (the known variables are released unchanged)"),
    IntruderInfo("replay", "the replay intruder (makes the release again from the release itself with the "
                 "published method and settings, and learns there how a record's released value relates to its "
                 "own, per size band)", "sdccore._risk.replay:replay",
                 knows="the method and every published setting (only the seed is secret), the known variables and "
                 "the record's released row", fix=_FIX, short="replayed", held_in_general=False,
                 absent="a release whose construction is not known (evaluate) or cannot be made again"),
    IntruderInfo("partner", "the partner intruder (finds the record whose value the target's row shows, by what "
                 "it knows, and reads that record's released value: a release that exchanges values in pairs hands "
                 "it the target's own)", "sdccore._risk.partner:partner",
                 knows="the known variables of every record, the target's released row and a published swap window",
                 fix=_FIX, short="partner", held_in_general=False, methods=("rankswap",),
                 absent="a release that does not exchange values between records (rank swapping does)"),
    IntruderInfo("band_mates", "the band-mates intruder (reads each record's band between the regression quantiles "
                 "fitted on the release, rebuilds its block of records of similar predicted size, and takes the place "
                 "its block-mates' released values show: a release that hands places round within blocks keeps each "
                 "block's set of places)", "sdccore._risk.partner:band_mates",
                 knows="the method and its settings, the known variables of every record and the released values",
                 fix=_FIX, short="band-mates", held_in_general=False, methods=("qexchange",), selective=True,
                 general=False, absent="a release that does not hand places round within bands (the quantile "
                 "exchange does)"),
    # survey files (issue 40): the keys released unperturbed narrow the search
    IntruderInfo("key_match", "the key-matching intruder (keeps the released records whose key variables agree "
                 "with the target's, a blank agreeing with every value, and links on what it knows among them)",
                 "sdccore._risk.keymatch:key_match",
                 knows="the target's key variables (region, sex, age ...) and the known variables; the published "
                 "recodings", fix=_FIX, short="key match", absent="no key variables in the release"),
)}
BUILT_IN = tuple(REGISTRY)  # every process knows these without a register call


def intruders(*, selective=None, method=None) -> tuple:
    """The registered intruders' names, in the battery's order (the built-in ones first).

    Parameters
    ----------
    selective : bool, optional
        Only those that apply in selective (True) or general (False) protection.
    method : str, optional
        Only those that attack this method's releases.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import sdccore
    >>> sdccore.intruders(selective=True)
    ('own', 'linked', 'reconstruction', 'assignment', 'identity', 'residual', 'residual_size', 'shrinkage', 'release_fit', 'replay', 'partner', 'band_mates', 'key_match')
    """
    if selective is None:
        return tuple(i.name for i in REGISTRY.values() if method is None or i.methods is None or method in i.methods)
    return tuple(i.name for i in REGISTRY.values() if i.applies(selective, method))


def intruder_info(name) -> IntruderInfo:
    """The registry's entry of an intruder.

    Parameters
    ----------
    name : str
        A registered intruder's name (``intruders()``); ValueError naming them otherwise.

    Returns
    -------
    IntruderInfo

    Examples
    --------
    >>> import sdccore
    >>> sdccore.intruder_info("linked").column
    'close_linked'
    """
    return lookup("intruder", name, REGISTRY)


def label(name) -> str:
    """An intruder's label (its name when it is no longer registered: a comparison made with it)."""
    info = REGISTRY.get(name)
    return info.label if info is not None else f"the intruder {name!r}"


def columns() -> dict:
    """{wide column of RiskProfile.variables: intruder name}, in the registry's order."""
    return {i.column: i.name for i in REGISTRY.values() if i.column}


def plugins() -> tuple:
    """The intruders registered in this process beyond the built-in ones (they travel with a
    comparison's runs to its worker processes)."""
    return tuple(i for n, i in REGISTRY.items() if n not in BUILT_IN)


def register_intruder(info, *, replace=False):
    """Add an intruder to the risk floors' battery: ``protect``, ``evaluate``, ``compare`` and
    the dashboard measure it and hold it to the floors from then on.

    Parameters
    ----------
    info : IntruderInfo
        Its name, label and guess (a function of an ``IntruderContext``).
    replace : bool
        Replace an intruder of that name (a built-in one cannot be replaced).

    Returns
    -------
    IntruderInfo

    Examples
    --------
    >>> import sdccore
    >>> toy = sdccore.IntruderInfo("mean", "the mean intruder (guesses the released mean)",
    ...                            lambda ctx: ctx.released[:, ctx.target].mean() + 0 * ctx.rows)
    >>> sdccore.register_intruder(toy).name
    'mean'
    >>> sdccore.unregister_intruder("mean").name
    'mean'
    """
    check_entry("intruder", info, IntruderInfo, REGISTRY, BUILT_IN, replace, whose="the intruder's",
                make="sdccore.IntruderInfo(name, label, guess)", example="mean",
                label_hint="how a violation names it, e.g. 'the mean intruder (guesses the released mean)'")
    if not (info.selective or info.general):
        raise ValueError(f"intruder {info.name!r} applies neither in selective nor in general protection, so it would "
                         f"never run; leave selective=True or general=True.")
    if info.methods is not None:
        from .._methods import methods as registered

        if isinstance(info.methods, str) or not all(isinstance(m, str) for m in info.methods):
            raise TypeError(f"intruder {info.name!r}: methods must be a tuple of method names such as ('rankswap',), "
                            f"not {info.methods!r}.")
        unknown = [m for m in info.methods if m not in registered()]
        if unknown:
            raise ValueError(f"intruder {info.name!r}: methods {unknown} are not registered; choose among "
                             f"{', '.join(registered())}.")
    if not (callable(info.guess) or is_ref(info.guess)):
        raise TypeError(f"intruder {info.name!r}: guess must be a function of an IntruderContext.")
    if info.column is not None:
        raise ValueError(f"intruder {info.name!r}: column is for the built-in intruders' wide columns; leave it None "
                         f"(a plug-in's figures are in RiskProfile.intruders).")
    REGISTRY[info.name] = info
    return info


def unregister_intruder(name):
    """Remove a registered intruder (not a built-in one).

    Parameters
    ----------
    name : str
        A plug-in intruder's name.

    Returns
    -------
    IntruderInfo
        Its entry.

    Examples
    --------
    >>> import sdccore
    >>> _ = sdccore.register_intruder(sdccore.IntruderInfo("zero", "the zero intruder", lambda ctx: 0 * ctx.rows))
    >>> sdccore.unregister_intruder("zero").label
    'the zero intruder'
    """
    return remove_entry("intruder", name, REGISTRY, BUILT_IN)
