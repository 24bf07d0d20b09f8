"""Model formulas read without running code.

A researcher's regression is written as a formula, ``np.log(SALES) ~ LABOR.COSTS +
I(FIXED.ASSETS ** 2)``.  patsy (and R) *evaluate* the parts of a formula as code: a formula
typed into the dashboard or carried by a recipe could run any Python on the server.  This
module reads the model language itself and builds the design matrix from numpy arrays;
nothing in a formula is ever evaluated as Python.

The language (a subset of patsy's, refused outside it with one line naming the part):

* response ``~`` terms; the response is one arithmetic expression (below);
* terms: column names (bare, or ``Q("any name")``), joined by ``+`` (add), ``-`` (remove),
  ``:`` (interaction, the product of the columns), ``*`` (``a*b`` = ``a + b + a:b``),
  parentheses; ``1``/``0``/``-1`` for the intercept (present unless removed);
* ``C(name)`` (or a text column) for a categorical variable: one 0/1 column a level but the
  first (treatment coding);
* transformations of numeric columns: ``log``, ``log1p``, ``log10``, ``log2``, ``sqrt``,
  ``exp``, ``abs`` (alone or as ``np.`` / ``numpy.`` functions), and ``I(...)`` holding
  arithmetic on names and numbers (``+ - * / **``, parentheses).

Records with a missing cell in a variable the model uses, or a transformed value that is
NaN (the log of a negative number), are left out (patsy's ``NA_action="drop"``); terms are ordered by degree (intercept, main effects, interactions),
as patsy orders them.

A formula may make at most ``MAX_TERMS`` terms and design columns (the intercept aside):
the terms are counted before they are built (``a*b*...*k`` of k variables makes 2**k - 1; a
categorical variable makes a column a level but the first), so ``x0 ~ x1*x2*...*x20``
(2**20 - 1 terms) is refused in milliseconds with one line naming the formula and the count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["parse_model", "design_matrices", "FUNCTIONS"]

FUNCTIONS = {"log": np.log, "log1p": np.log1p, "log10": np.log10, "log2": np.log2, "sqrt": np.sqrt,
             "exp": np.exp, "abs": np.abs}
_ALLOWED = "log, log1p, log10, log2, sqrt, exp, abs (also as np.log ...), I(...) with + - * / **, C(name), Q(\"name\")"
_NUMBER = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_STRING = re.compile(r'"([^"\\]*)"|\'([^\'\\]*)\'')
_OPS = ("**", "+", "-", "*", "/", ":", "(", ")", ",", "~")
_MAX_LEN = 2000
MAX_TERMS = 300  # terms, and design columns, a model may have (the intercept aside)


class FormulaError(ValueError):
    """A formula outside the model language (a ValueError naming the offending part)."""


@dataclass(frozen=True)
class _Tok:
    kind: str  # 'col', 'word', 'num', 'str', 'op', 'end'
    text: str
    pos: int
    value: object = None


def _refuse(model, part, why):
    raise FormulaError(f"model {model!r}: {why} at {part!r}; a model may use column names, numbers and "
                       f"{_ALLOWED}. Nothing in a formula is run as code.")


def _tokens(model, columns):
    """Split the formula into tokens; column names (even with spaces, dots or dashes) are
    matched whole, longest first, where they stand alone."""
    cols = sorted({str(c) for c in columns if str(c)}, key=len, reverse=True)
    out, i, n = [], 0, len(model)
    while i < n:
        ch = model[i]
        if ch.isspace():
            i += 1
            continue
        hit = next((c for c in cols if model.startswith(c, i)
                    and (i == 0 or not (model[i - 1].isalnum() or model[i - 1] in "._"))
                    and (i + len(c) == n or not (model[i + len(c)].isalnum() or model[i + len(c)] in "._"))), None)
        if hit is not None and not (hit[0].isdigit() and _NUMBER.match(model, i)):
            out.append(_Tok("col", hit, i, hit))
            i += len(hit)
            continue
        m = _NUMBER.match(model, i)
        if m and (ch.isdigit() or ch == "."):
            out.append(_Tok("num", m.group(0), i, float(m.group(0))))
            i = m.end()
            continue
        m = _WORD.match(model, i)
        if m:
            out.append(_Tok("word", m.group(0), i))
            i = m.end()
            continue
        m = _STRING.match(model, i)
        if m:
            out.append(_Tok("str", m.group(0), i, m.group(1) if m.group(1) is not None else m.group(2)))
            i = m.end()
            continue
        op = next((o for o in _OPS if model.startswith(o, i)), None)
        if op is None:
            _refuse(model, model[i:i + 12], f"the character {ch!r} is not part of the model language")
        out.append(_Tok("op", op, i))
        i += len(op)
    out.append(_Tok("end", "", n))
    return out


# ---- expression trees: ('col', name) | ('num', x) | ('fun', name, arg) | ('bin', op, a, b)
# ---- | ('neg', a) | ('cat', name).  Terms are frozensets of factor keys (canonical text).

class _Parser:
    def __init__(self, model, tokens, columns):
        self.model, self.t, self.i, self.columns = model, tokens, 0, columns

    # -- helpers
    def peek(self):
        return self.t[self.i]

    def take(self, kind=None, text=None):
        tok = self.t[self.i]
        if (kind and tok.kind != kind) or (text is not None and tok.text != text):
            want = text or kind
            self.fail(tok, f"expected {want!r}")
        self.i += 1
        return tok

    def fail(self, tok, why):
        part = self.model[tok.pos:tok.pos + 20] if tok.kind != "end" else "the end"
        _refuse(self.model, part, why)

    def is_op(self, *ops):
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    # -- arithmetic (response, I(...), function arguments)
    def arith(self):
        node = self.aterm()
        while self.is_op("+", "-"):
            op = self.take().text
            node = ("bin", op, node, self.aterm())
        return node

    def aterm(self):
        node = self.apow()
        while self.is_op("*", "/"):
            op = self.take().text
            node = ("bin", op, node, self.apow())
        return node

    def apow(self):
        node = self.unary()
        if self.is_op("**"):
            self.take()
            node = ("bin", "**", node, self.unary())
        return node

    def unary(self):
        if self.is_op("-"):
            self.take()
            return ("neg", self.unary())
        if self.is_op("+"):
            self.take()
            return self.unary()
        return self.primary(arith=True)

    def primary(self, arith):
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            return ("num", tok.value)
        if tok.kind == "col":
            self.take()
            return ("col", tok.value)
        if tok.kind == "op" and tok.text == "(":
            self.take()
            node = self.arith()
            self.take("op", ")")
            return node
        if tok.kind == "word":
            return self.call(arith)
        self.fail(tok, "expected a column name, a number or a transformation")

    def call(self, arith):
        tok = self.take("word")
        name = tok.text
        if not self.is_op("("):
            self.fail(tok, f"{name!r} is not a column of the data")
        self.take("op", "(")
        if name == "Q":
            s = self.take("str")
            self.take("op", ")")
            if s.value not in self.columns:
                self.fail(s, f"Q({s.text}) names no column of the data")
            return ("col", s.value)
        if name == "I":
            node = self.arith()
            self.take("op", ")")
            return ("I", node)
        if name == "C" and not arith:
            inner = self.peek()
            if inner.kind == "word" and inner.text == "Q":
                col = self.call(arith=True)[1]
            else:
                col = self.take("col").value
            self.take("op", ")")
            return ("cat", col)
        base = name.split(".", 1)[1] if name.startswith(("np.", "numpy.")) else name
        if base not in FUNCTIONS or name.count(".") > 1:
            self.fail(tok, f"{name!r} is not an allowed transformation")
        node = self.arith()
        self.take("op", ")")
        return ("fun", name, node)

    # -- term algebra (right-hand side): ordered lists of terms, a term a tuple of factor
    # -- keys in the formula's order (the intercept is the empty tuple)
    def terms(self):
        node = self.tprod()
        while self.is_op("+", "-"):
            op = self.take().text
            rhs = self.tprod()
            if op == "+":
                node = _union(node, rhs)
            else:
                if _shape(rhs)[3]:
                    self.no_intercept = True
                node = _remove(node, rhs)
        return node

    def tprod(self):
        node = self.tinter()
        while self.is_op("*"):
            self.take()
            node = _star(node, self.tinter())
        return node

    def tinter(self):
        node = self.tatom()
        while self.is_op(":"):
            self.take()
            node = _product(node, self.tatom())
        return node

    def tatom(self):
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(":
            self.take()
            node = self.terms()
            self.take("op", ")")
            return node
        if tok.kind == "num":
            self.take()
            if tok.value in (0.0, 1.0):
                if tok.value == 0.0:
                    self.no_intercept = True
                return [()] if tok.value == 1.0 else []
            self.fail(tok, "a number stands alone only as 1 or 0 (the intercept); use I(...) for arithmetic")
        if tok.kind == "op" and tok.text == "-":
            self.fail(tok, "expected a term")
        start = tok.pos
        node = self.primary(arith=False)
        if node[0] == "num":
            self.fail(tok, "expected a term")
        key = _canonical(self.model[start:self.peek().pos])
        self.factors[key] = node
        return [(key,)]


class _Many:
    """A term list too long to build (more than ``MAX_TERMS``): only how many terms it would
    hold, counted combinatorially (exact while the factors joined are distinct, else an upper
    bound), the factor keys it uses and whether it holds the intercept."""

    __slots__ = ("n", "keys", "exact", "empty", "peak")

    def __init__(self, n, keys, exact, empty, *parts):
        self.n, self.keys, self.exact, self.empty = n, keys, exact, empty
        self.peak = max([n] + [p.peak for p in parts if isinstance(p, _Many)])  # the widest part on the way


def _shape(a):
    """(count, factor keys, exact, holds the intercept) of a term list or a ``_Many``."""
    if isinstance(a, _Many):
        return a.n, a.keys, a.exact, a.empty
    return len(a), frozenset(f for t in a for f in t), True, () in a


def _bounded(terms):
    """A built term list, or a ``_Many`` when it holds more than ``MAX_TERMS`` terms."""
    if len(terms) <= MAX_TERMS:
        return terms
    return _Many(*_shape(terms))


def _union(a, b, cap=True):
    if isinstance(a, _Many) or isinstance(b, _Many):
        (na, ka, ea, za), (nb, kb, eb, zb) = _shape(a), _shape(b)
        return _Many(na + nb - (za and zb), ka | kb, ea and eb and not (ka & kb), za or zb, a, b)
    seen = {frozenset(t) for t in a}
    out = list(a)
    for t in b:
        if frozenset(t) not in seen:
            seen.add(frozenset(t))
            out.append(t)
    return _bounded(out) if cap else out


def _product(a, b, cap=True):
    """The interaction a:b, each term of a joined with each of b (built while both sides are
    lists of at most ``MAX_TERMS`` terms: at most MAX_TERMS**2 joins; counted beyond)."""
    if isinstance(a, _Many) or isinstance(b, _Many):
        (na, ka, ea, za), (nb, kb, eb, zb) = _shape(a), _shape(b)
        return _Many(na * nb, ka | kb, ea and eb and not (ka & kb), za and zb, a, b)
    out, seen = [], set()
    for x in a:
        for y in b:
            t = tuple(dict.fromkeys(x + y))
            if frozenset(t) not in seen:
                seen.add(frozenset(t))
                out.append(t)
    return _bounded(out) if cap else out


def _star(a, b):
    """a*b = a + b + a:b; counted as |a||b| + |a| + |b| (less the intercept's share), exact
    when a and b share no variable, once either side is too long to build."""
    if isinstance(a, _Many) or isinstance(b, _Many):
        (na, ka, ea, za), (nb, kb, eb, zb) = _shape(a), _shape(b)
        return _Many(na * nb + (0 if zb else na) + (0 if za else nb), ka | kb, ea and eb and not (ka & kb),
                     za or zb, a, b)
    return _bounded(_union(_union(a, b, cap=False), _product(a, b, cap=False), cap=False))


def _remove(a, b):
    """a - b: the terms of a not in b (when either is too long to build, a count: at least
    |a| - |b|)."""
    if isinstance(a, _Many) or isinstance(b, _Many):
        (na, ka, _, za), (nb, _, _, zb) = _shape(a), _shape(b)
        return _Many(max(na - nb, 0), ka, False, za and not zb, a, b)
    gone = {frozenset(t) for t in b}
    return [t for t in a if frozenset(t) not in gone]


def _too_many(model, terms):
    n, _, exact, empty = _shape(terms)
    n -= bool(empty)
    many = (f"would make {'' if exact else 'about '}{n} terms (design columns)" if n > MAX_TERMS else
            f"has a part that would make {terms.peak} terms")
    raise FormulaError(f"model {model!r} {many}, more than the {MAX_TERMS} a model may have; use fewer "
                       f"interactions (a*b*c of k variables makes 2**k - 1 terms, a:b only the interaction).")


def _canonical(text):
    """A factor's name as patsy prints it: the formula's text without Q("...") quoting."""
    text = " ".join(text.split())
    return re.sub(r'Q\(\s*"([^"]*)"\s*\)|Q\(\s*\'([^\']*)\'\s*\)', lambda m: m.group(1) or m.group(2) or "", text)


def parse_model(model, columns):
    """Read ``model`` against the column names ``columns``.

    Returns (response name, response tree, ordered terms, factors, intercept) or raises
    ``ValueError`` naming the part of the formula that is not in the model language."""
    if not isinstance(model, str) or model.count("~") != 1:
        raise ValueError(f"model={model!r} must be a formula 'response ~ predictor + predictor ...', e.g. "
                         f"'SALES ~ LABOR.COSTS + FIXED.ASSETS'.")
    if len(model) > _MAX_LEN:
        raise ValueError(f"model has {len(model)} characters; a formula may have at most {_MAX_LEN}.")
    lhs, rhs = model.split("~")
    if not lhs.strip() or not rhs.strip():
        raise ValueError(f"model={model!r} needs a response left of '~' and predictors right of it.")
    columns = [str(c) for c in columns]
    toks = _tokens(model, columns)
    p = _Parser(model, toks, set(columns))
    p.factors = {}
    start = p.peek().pos
    response = p.arith()
    ylabel = _canonical(model[start:p.peek().pos])
    p.take("op", "~")
    p.no_intercept = False
    terms = p.terms()
    if p.peek().kind != "end":
        p.fail(p.peek(), "unexpected text")
    if isinstance(terms, _Many):
        _too_many(model, terms)
    intercept = not p.no_intercept
    return ylabel, response, [t for t in terms if t], p.factors, intercept


def _numeric(df, col, model):
    s = df[col]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise ValueError(f"model {model!r}: {col!r} is not numeric; use C({col}) for a categorical variable "
                         f"(transformations and I(...) need numbers).")
    return s.to_numpy(dtype=float)


def _eval(node, df, model):
    kind = node[0]
    if kind == "num":
        return np.full(len(df), node[1])
    if kind == "col":
        return _numeric(df, node[1], model)
    if kind == "neg":
        return -_eval(node[1], df, model)
    if kind == "I":
        return _eval(node[1], df, model)
    if kind == "fun":
        base = node[1].split(".", 1)[1] if "." in node[1] else node[1]
        return FUNCTIONS[base](_eval(node[2], df, model))
    if kind == "bin":
        a, b = _eval(node[2], df, model), _eval(node[3], df, model)
        op = node[1]
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        return np.power(a, b)
    raise ValueError(f"model {model!r}: a categorical C(...) cannot stand in arithmetic.")


def _columns_of(node):
    if node[0] in ("col", "cat"):
        return {node[1]}
    out = set()
    for child in node[1:]:
        if isinstance(child, tuple):
            out |= _columns_of(child)
    return out


def _is_categorical(node, df):
    if node[0] == "cat":
        return True
    return node[0] == "col" and (not pd.api.types.is_numeric_dtype(df[node[1]])
                                 or pd.api.types.is_bool_dtype(df[node[1]]))


def _levels(values):
    return sorted(pd.unique(values.dropna()), key=lambda v: (str(type(v)), v))


def _ordered(terms, factors, df, intercept, model):
    """patsy's order: terms grouped by their numeric factors (the group without numeric
    factors, which holds the intercept, first; the others in order of appearance), by degree
    within a group; and each term's categorical factor coded by contrasts (a column a level
    but the first) when the term without it is already in the model, else by one column a
    level (patsy's full-rank rule)."""
    groups = {frozenset(): [()] if intercept else []}
    for t in terms:
        numeric = frozenset(f for f in t if not _is_categorical(factors[f], df))
        cats = [f for f in t if _is_categorical(factors[f], df)]
        if len(cats) > 1:
            raise ValueError(f"model {model!r}: the term {':'.join(t)!r} joins {len(cats)} categorical variables; "
                             f"interactions of two categorical variables are not supported (use one, or I(...) "
                             f"of numbers).")
        groups.setdefault(numeric, []).append(t)
    out = []
    for g in groups.values():
        out.extend(sorted(g, key=len))
    coded, seen = [], set()
    for t in out:
        cat = next((f for f in t if _is_categorical(factors[f], df)), None)
        full = cat is not None and frozenset(f for f in t if f != cat) not in seen
        coded.append((t, full))
        seen.add(frozenset(t))
    return coded


def _factor_columns(key, node, df, model, full=False):
    """A factor's design columns: one for a numeric factor; for a categorical one
    (``C(x)`` or a text column) one 0/1 column a level but the first (``x[T.b]``) or, with
    ``full``, a level (``x[a]``)."""
    if _is_categorical(node, df):
        values = df[node[1]]
        levels = _levels(values)
        if full:
            return [(f"{key}[{lv}]", (values == lv).to_numpy(dtype=float)) for lv in levels]
        return [(f"{key}[T.{lv}]", (values == lv).to_numpy(dtype=float)) for lv in levels[1:]]
    return [(key, _eval(node, df, model))]


def _check_width(coded, factors, df, model):
    """Refuse, before building any column, a model whose categorical variables would make
    more than ``MAX_TERMS`` design columns (a level each, or a level but the first)."""
    levels, width = {}, 0
    for term, full in coded:
        n = 1 if term else 0  # the intercept aside
        for f in term:
            if _is_categorical(factors[f], df):
                if f not in levels:
                    levels[f] = int(df[factors[f][1]].nunique(dropna=True))  # as _levels counts them
                n *= levels[f] if full else max(levels[f] - 1, 0)
        width += n
    if width > MAX_TERMS:
        many = ", ".join(f"{f} has {k} levels" for f, k in sorted(levels.items(), key=lambda i: -i[1])[:3])
        raise FormulaError(f"model {model!r} would make {width} design columns, more than the {MAX_TERMS} a "
                           f"model may have ({many or 'too many terms'}); use fewer interactions or a "
                           f"categorical variable with fewer levels.")


def design_matrices(model, df):
    """(y, X) as DataFrames for OLS of ``model`` on ``df``, records with a missing cell in a
    variable of the model left out; X's columns in patsy's order and with patsy's names.  No
    part of ``model`` is evaluated as code."""
    ylabel, response, terms, factors, intercept = parse_model(model, df.columns)
    used = set(_columns_of(response))
    for node in factors.values():
        used |= _columns_of(node)
    keep = ~df[sorted(used)].isna().any(axis=1).to_numpy() if used else np.ones(len(df), bool)
    d = df.loc[keep]
    cols = {}
    coded = _ordered(terms, factors, d, intercept, model)
    _check_width(coded, factors, d, model)
    with np.errstate(all="ignore"):
        y = pd.DataFrame({ylabel: _eval(response, d, model)}, index=d.index)
        for term, full in coded:
            if not term:
                cols["Intercept"] = np.ones(len(d))
                continue
            combos = [("", np.ones(len(d)))]
            for f in term:
                group = _factor_columns(f, factors[f], d, model, full)
                combos = [((a + ":" + b) if a else b, va * vb) for a, va in combos for b, vb in group]
            for name, v in combos:
                cols[name] = v
    if not cols:
        raise ValueError(f"model {model!r} has no predictor and no intercept.")
    X = pd.DataFrame(cols, index=d.index)
    ok = ~(np.isnan(y.to_numpy()).any(axis=1) | np.isnan(X.to_numpy()).any(axis=1))  # NaN after a transform
    return y[ok], X[ok]
