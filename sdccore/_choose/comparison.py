"""The result of ``compare``: ``Comparison`` (scores per configuration and run, their
intervals, the risk profiles, the safety table and the suggested release) and the intervals it
reports (``mean_interval``, ``run_range``, ``bootstrap_interval``).  Running the comparison is
``_compare``; this module only reads its results."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._core.validation import check_number

__all__ = []

VALIDITY_TIE = 0.005  # analysis-validity losses this close count as a tie in suggest
REQUIRED_OVERLAP = 0.9  # a required regression's smallest slope overlap by default (the battery's OLS target)


def bootstrap_interval(values, rng, level=0.95, B=2000):
    """Mean and the percentile bootstrap interval of the mean of ``values``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    if v.size == 1:
        return float(v[0]), float(v[0]), float(v[0])
    idx = rng.integers(0, v.size, (B, v.size))
    means = v[idx].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(v.mean()), float(lo), float(hi)


def mean_interval(values, level=0.95):
    """Mean and Student's t interval of the mean over runs: mean +- t(n-1) s / sqrt(n).

    Replaces the percentile bootstrap of the mean, which undercovers with few runs (measured
    coverage of a nominal 95 %: 0.74 at 3 runs, 0.85 at 5, 0.88 at 10); run scores are means
    over hundreds of records, close to normal, where the t interval keeps its level (tested
    in tests/choose/test_compare.py by simulation, also on skewed run scores)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(v.mean())
    if v.size == 1:
        return m, m, m
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return m, m - half, m + half


def run_range(values, level=0.95):
    """The central ``level`` range of single runs (2.5 % and 97.5 % quantiles at 95 %): what
    one release may score, the spread the papers' intervals show (Table 4, FA Fig. 4)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    lo, hi = np.quantile(v, [a, 1 - a])
    return float(lo), float(hi)


def summary_rows(runs, labels, keys):
    """Each configuration's mean score with its 95 % interval and the runs' range."""
    summ = []
    for label in labels:
        sub = runs[runs.config == label] if len(runs) else runs
        if sub is None or len(sub) == 0:
            continue
        for key in keys:
            if key in sub:
                vals = sub[key].to_numpy(dtype=float)
                vals = vals[~np.isnan(vals)]  # a run where a plug-in analysis could not measure (NaN) is left out
                if len(vals) == 0:
                    continue
                mean, lo, hi = mean_interval(vals)
                run_lo, run_hi = run_range(vals)
                summ.append({"config": label, "score": key, "mean": mean, "lo": lo, "hi": hi,
                             "run_lo": run_lo, "run_hi": run_hi, "reps": len(vals)})
    return summ


def config_label(cfg):
    """A short readable label of a configuration, e.g. 'fa factors=[1, 2]'."""
    rest = {k: v for k, v in cfg.items() if k not in ("method", "label", "floors")}
    return cfg.get("label") or (cfg["method"] + (" " + " ".join(f"{k}={v}" for k, v in sorted(rest.items())) if rest else ""))


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` returns.

    Attributes
    ----------
    summary : DataFrame
        One row per configuration and score: mean, lo, hi (95 % t interval of the mean over
        runs), run_lo, run_hi (2.5-97.5 % range of single runs: what one release may score)
        and reps.
    runs : DataFrame
        The per-run scores (configuration, run, seed, each score).
    configs : dict
        The configurations by label.
    sensitive : tuple of str
    seed : int
        The master seed (reproduces every run).
    cancelled : bool
        True if stopped early.
    seconds : dict
        Time spent protecting and evaluating.
    risk_variables, risk_bands : DataFrame
        The risk profile of every run (per variable and per size band).
    errors : dict
        Label -> why a configuration could not be run on these data (for example
        pca_remove whose utility threshold no removal meets); its runs are left out and the
        other configurations are compared as usual.
    regression : DataFrame
        With ``models``: one row per configuration, run, model and coefficient, the
        columns of ``RegressionCheck.table``; ``regression_summary()`` averages the runs.
    released : dict
        For each configuration that met the floors over the runs: '' when the run the master
        seed releases (``protect(..., rng=seed)``) meets every floor too, else what it breaks
        (``compare(released=True)``, the default); ``safety()``'s ``released_ok``.
    analyses : dict
        For the same configurations, what analysts keep in that run (``analyst_checks``, issue
        39): (analyses meeting their targets, analyses that apply, the labels of those
        missed); ``suggest`` prefers the configuration that keeps the most.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    configs: dict
    sensitive: tuple | None
    seed: int
    cancelled: bool = False
    seconds: dict = field(default_factory=dict)
    risk_variables: pd.DataFrame = field(default_factory=pd.DataFrame)
    risk_bands: pd.DataFrame = field(default_factory=pd.DataFrame)
    errors: dict = field(default_factory=dict)
    regression: pd.DataFrame = field(default_factory=pd.DataFrame)
    released: dict = field(default_factory=dict)
    analyses: dict = field(default_factory=dict)

    def __repr__(self):
        reps = int(self.summary.reps.max()) if len(self.summary) else 0
        left = f"; left out: {', '.join(self.errors)}" if self.errors else ""
        return (f"Comparison({', '.join(self.configs)} x {reps} runs, seed {self.seed}"
                f"{', cancelled' if self.cancelled else ''}{left}; .table('summary') for the scores)")

    def regression_summary(self, level=0.95):
        """Per configuration, model and coefficient: the original's coefficient and interval,
        the mean over runs of the release's coefficient, of the interval overlap (Karr et
        al. 2006) with its t interval, of the standardised difference, and the share of runs
        keeping the coefficient's sign.  Empty without ``models``."""
        if self.regression.empty:
            return pd.DataFrame()
        rows = []
        for (label, model, term), sub in self.regression.groupby(["config", "model", "term"], sort=False):
            m, lo, hi = mean_interval(sub["overlap"].to_numpy(), level)
            rows.append({"config": label, "model": model, "term": term,
                         "coef_original": sub["coef_original"].iloc[0], "lo_original": sub["lo_original"].iloc[0],
                         "hi_original": sub["hi_original"].iloc[0],
                         "coef_protected": float(sub["coef_protected"].mean()),
                         "lo_protected": float(sub["lo_protected"].mean()),
                         "hi_protected": float(sub["hi_protected"].mean()),
                         "overlap": m, "overlap_lo": lo, "overlap_hi": hi,
                         "std_diff": float(sub["std_diff"].mean()), "sign_kept": float(sub["sign_kept"].mean()),
                         "reps": len(sub)})
        return pd.DataFrame(rows)

    def safety(self, fixes_here=False):
        """Per configuration: runs, share of runs meeting every risk floor, the variables
        that broke a floor in some run, and the first violation seen (plain words).  With
        ``fixes_here``, a violation's fix leaves out the methods whose every configuration in
        this comparison broke a floor (a fix must not send the custodian to a method that just
        failed; the Run page's table and the command line's lines)."""
        table = self._safety()
        if not fixes_here or not len(table):
            return table
        from .._risk.fixes import without_failed

        ok = {}
        for r in table.itertuples():
            m = (self.configs.get(r.config) or {}).get("method")
            ok[m] = ok.get(m, False) or r.floors_met >= 1
        failed = {m for m, v in ok.items() if not v}
        return table.assign(violation=[without_failed(v, failed) if v else v for v in table.violation])

    def _safety(self):
        rows = []
        for label in self.configs:
            sub = self.runs[self.runs.config == label] if len(self.runs) else self.runs
            if len(sub) == 0:
                continue
            failing = sorted({v for f in sub.failing for v in f.split(", ") if v})
            first = next((v for v in sub.violation if v), "")
            rows.append({"config": label, "runs": len(sub), "floors_met": float(sub.floors_ok.mean()),
                         "expected_ok": self._expected_ok(label, sub),
                         "released_ok": not self.released.get(label, ""),
                         "failing": ", ".join(failing), "violation": first})
        return pd.DataFrame(rows, columns=["config", "runs", "floors_met", "expected_ok", "released_ok", "failing",
                                           "violation"])

    def refused(self):
        """The configurations ``suggest`` does not offer on the risk floors: not met over the
        runs (``expected_ok``), or broken in the run released (``released_ok``)."""
        return self._refused(self.safety())

    @staticmethod
    def _refused(safe):
        """``refused`` from a ``safety()`` table already computed."""
        if not len(safe):
            return []
        return list(safe[~(safe.expected_ok.astype(bool) & safe.released_ok.astype(bool))].config)

    def _expected_ok(self, label, sub):
        """Whether a configuration meets the floors in expectation: every run meets them, or
        breaks them only in bands so small that one record decides (fewer than 10 records)
        and, in every such band, the mean over the runs of the share beyond the prior meets
        the floor (issue 38: the released run is held to the floors as well, by ``protect``)."""
        ok = sub.floors_ok.astype(bool)
        luck = sub["one_record_decides"].astype(bool) if "one_record_decides" in sub else ok & False
        if not (ok | luck).all():
            return False
        if ok.all():
            return True
        from .._risk.settings import SMALL_BAND

        b = self.risk_bands
        b = b[(b.config == label) & (b.records < SMALL_BAND)]
        if not len(b):
            return False
        floor = self.floors_max_close_share(label)
        mean = b.groupby(["variable", "band"], sort=False).beyond_prior.mean()
        return bool((mean <= floor + 1e-12).all())

    def floors_max_close_share(self, label):
        """The floors' largest share beyond the prior of a configuration's runs."""
        from .._risk.settings import RiskFloors

        cfg = self.configs.get(label) or {}
        return RiskFloors.from_value(cfg.get("floors")).max_close_share

    def variable_risk(self):
        """Per configuration and checked variable, the worst value over the runs of each
        risk figure (smallest perturbed share, largest |cor| and closeness shares)."""
        if len(self.risk_variables) == 0:
            return pd.DataFrame()
        from .._risk.registry import columns

        g = self.risk_variables.groupby(["config", "variable"], sort=False)
        close = [c for c in columns() if c in self.risk_variables]  # each intruder's wide column (the registry's)
        return pd.DataFrame({
            "perturbed_share": g.perturbed_share.min(), "abs_cor": g.abs_cor.max(),
            **{c: g[c].max() for c in close[:3]},
            "residual_cor": g.residual_cor.max(), **{c: g[c].max() for c in close[3:]},
            "prior": g.prior.max(), "beyond_prior": g.beyond_prior.max(),
            # the intruder of the run where the release added most
            "intruder": g.apply(lambda t: t.intruder.iloc[int(np.argmax(t.beyond_prior.to_numpy()))],
                                include_groups=False),
            "worst_band_close": g.worst_band_close.max(), "runs_ok": g.ok.mean()}).reset_index()

    def band_risk(self):
        """Per configuration, variable and size band: the mean and the largest share of
        records within the tolerance over the runs."""
        if len(self.risk_bands) == 0:
            return pd.DataFrame()
        g = self.risk_bands.groupby(["config", "variable", "band"], sort=False)
        return pd.DataFrame({"close_mean": g.close_own.mean(), "close_max": g.close_own.max(),
                             "reconstructed_mean": g.close_reconstructed.mean(),
                             "reconstructed_max": g.close_reconstructed.max(), "prior": g.prior.max(),
                             "beyond_mean": g.beyond_prior.mean(), "beyond_max": g.beyond_prior.max(),
                             "median_rel_error": g.median_rel_error.mean()}).reset_index()

    def suggest(self, max_risk=None, require=None):
        """The configuration to release: among those whose every run met every risk floor (or
        their expected share, where one record decides) and whose run released with the
        comparison's seed meets them too (``released``), whose disclosure risk (upper end of
        its interval) is at most ``max_risk`` and that keep every required regression, the one
        whose release keeps the most of the analyses researchers run within their targets
        (``analyses``: the battery of ``analyst_checks`` on the run released, issue 39; a
        method that keeps one analysis by construction does not win on it alone; those within
        one analysis of the most kept count as equal, a single run's count being no finer),
        then whose analysis validity is best (lowest ``validity_loss``, upper end of its
        interval), ties (within 0.005) broken by the lower utility loss (PIL and PS, upper end).

        ``require``: the custodian's own regressions that must hold, among the ``models``
        the comparison ran: a formula, a list of formulas (each kept with a smallest CI
        overlap of its slopes of at least ``REQUIRED_OVERLAP``, the mean over the runs) or a
        dict {formula: smallest overlap}.  Returns (label or None, reason)."""
        if max_risk is not None:
            max_risk = check_number(max_risk, "max_risk", low=0, high=1)
        require = self._required(require)
        safe = self.safety()
        ok = set(safe.config) - set(self._refused(safe))
        if not ok:
            return None, self._none_safe(safe)
        kept_words = ""
        if require:
            summary = self.regression_summary()  # once: every configuration's slopes
            held = {c: self._worst_required(c, require, summary) for c in ok}
            keeping = {c for c, (ok_all, _, _) in held.items() if ok_all}
            if not keeping:
                best_c = max(held, key=lambda c: held[c][1])
                _, val, where = held[best_c]
                return None, (f"no configuration that meets the risk floors keeps your required regression(s) "
                              f"({'; '.join(f'{m}: smallest slope overlap >= {t:g}' for m, t in require.items())}). "
                              f"Closest: {best_c}, {where} at overlap {val:.2f} (mean over the runs). No release is "
                              f"offered: lower the required overlap, drop a term, or protect fewer variables")
            ok = keeping
        ru = self.risk_utility()
        ru = ru[ru.config.isin(ok)]
        if max_risk is not None:
            within = ru[ru.risk_hi <= max_risk]
            if len(within) == 0:
                return None, (f"the configurations that meet the floors ({', '.join(sorted(ok))}) all have a disclosure "
                              f"risk above the ceiling {max_risk:.2f}; raise the ceiling or protect more")
            ru = within
        ru = ru.assign(_v=(ru.validity_loss_hi / VALIDITY_TIE).round(), _k=ru.config.map(self._battery_rank(ok)))
        best = ru.sort_values(["_k", "_v", "utility_loss_hi", "risk_hi"]).iloc[0]
        met = safe.set_index("config").floors_met.get(best.config, 1.0)
        released = (f" and in the run released with seed {self.seed}" if best.config in self.released else "")
        reps = int(best.reps)
        every = f"all {reps} runs" if reps > 2 else "both runs" if reps == 2 else "its run"
        runs_words = (f"met every risk floor in {every}{released}" if met >= 1.0 else
                      f"met every risk floor in {int(round(met * best.reps))} of {int(best.reps)} runs{released} and, "
                      f"where it broke one, only in a band so small that one record decides, whose share over the "
                      f"runs meets the floor")
        skipped = sorted(c for c, v in self.released.items() if v)
        if skipped:
            runs_words += (f" ({', '.join(skipped)} met the floors over the runs, but the run seed {self.seed} "
                           f"releases breaks one: another seed may give it)")
        if require:
            kept_words = (f", keeps your required regression(s) (smallest slope overlap "
                          f"{held[best.config][1]:.2f}, mean over the runs)")
        kept_words += self._battery_words(best.config, ru)
        why = (f"{best.config} {runs_words}"
               + (f", its risk {best.risk_hi:.3f} (upper end) is within the ceiling {max_risk:.2f}" if max_risk is not None else "")
               + kept_words
               + (f" and it keeps the analysis best among those (analysis validity {1 - best.validity_loss_hi:.3f}, "
                  f"lower end; PIL/PS loss {best.utility_loss_hi:.3f})" if best.config not in self.analyses else
                  f"; its analysis validity (the OLS of each sensitive variable and its marginal) "
                  f"{1 - best.validity_loss_hi:.3f}, lower end; PIL/PS loss {best.utility_loss_hi:.3f}"))
        return str(best.config), why

    def _battery_rank(self, ok):
        """{configuration: sort key} by the share of the battery's analyses its run released
        keeps: those within one analysis of the most kept share the best key (-1 .. 0), the
        rest their own share's negative; 0 without the battery."""
        share = {c: (met / n, 1 / n) for c, (met, n, _) in self.analyses.items() if n and c in ok}
        if not share:
            return {}
        top = max(v for v, _ in share.values())
        return {c: -top if v >= top - step - 1e-9 else -v for c, (v, step) in share.items()}

    def _battery_words(self, best, ru):
        """', keeps 6 of 10 analyses researchers run within their targets (misses: ...; IPSO
        keeps 3)' for the suggestion, or '' without the battery."""
        if best not in self.analyses or not self.analyses[best][1]:
            return ""
        met, n, missed = self.analyses[best]
        others = [(c, self.analyses[c][0], self.analyses[c][1]) for c in ru.config if c != best and c in self.analyses]
        beside = "; ".join(f"{c} {m} of {k}" for c, m, k in others[:3])
        return (f", keeps {met} of {n} analyses researchers run within their targets in the run released"
                + (f" (misses: {', '.join(missed)})" if missed else "")
                + (f"; the others that meet the floors keep {beside}" if beside else ""))

    def _required(self, require):
        """``require`` as {formula: smallest overlap}, each formula among the models run."""
        if require is None:
            return {}
        if isinstance(require, str):
            require = [require]
        if isinstance(require, (list, tuple)):
            require = {m: REQUIRED_OVERLAP for m in require}
        if not isinstance(require, dict):
            raise TypeError(f"require must be a formula, a list of formulas or a dict {{formula: smallest overlap}}; "
                            f"got {type(require).__name__}.")
        ran = set(self.regression.model) if not self.regression.empty else set()
        out = {}
        for m, t in require.items():
            m = str(m).strip()
            if m not in ran:
                raise ValueError(f"require names {m!r}, which this comparison did not fit; pass it in models= of "
                                 f"compare (the Run page's box) and run the comparison again.")
            out[m] = check_number(t, f"require[{m!r}]", low=-1, high=1)
        return out

    def _worst_required(self, label, require, summary):
        """(every required regression kept, the smallest margin's overlap, where) for one
        configuration: per model, the smallest mean overlap over its slopes (intercept left
        out, as the analysts' battery does)."""
        t = summary[(summary.config == label) & (summary.term != "Intercept")]
        ok_all, worst, where, margin = True, np.inf, "", np.inf
        for m, need in require.items():
            sub = t[t.model == m]
            if not len(sub):
                return False, -np.inf, f"`{m}` could not be fitted on its release"
            i = sub.overlap.idxmin()
            val = float(sub.overlap.loc[i])
            ok_all &= val >= need
            if val - need < margin:
                margin, worst, where = val - need, val, f"`{m}` keeps {sub.term.loc[i]}"
        return ok_all, worst, where

    def _none_safe(self, safe):
        """Why nothing can be suggested, in plain words: the configuration that came closest
        (most runs meeting the floors, then the best analysis validity) and what broke."""
        base = "no configuration met the risk floors in every run (or in expectation, where one record decides)"
        if not len(safe):
            return base + "; run the comparison again"
        broke = [c for c, v in self.released.items() if v]
        if broke:
            label = broke[0]
            return (f"{label} met the risk floors over the runs, but the run released with seed {self.seed} breaks "
                    f"one: {self.released[label]}. No release is offered with this seed: the floors hold over the "
                    f"runs, so another seed (the Data page, or rng=) will likely give one; or change the "
                    f"configuration as the fix says")
        ru = self.risk_utility().set_index("config")
        t = safe.set_index("config").join(ru[["validity_loss"]])
        t = t.sort_values(["floors_met", "validity_loss"], ascending=[False, True])
        label, r = t.index[0], t.iloc[0]
        runs = int(r.runs)
        met = int(round(r.floors_met * runs))
        # its fix may send the custodian to methods that failed here too: those are left out
        from .._risk.fixes import without_failed

        what = without_failed(r.violation or "", {c.get("method") for c in self.configs.values()})
        return (f"{base}. Closest: {label}, which met them in {met} of {runs} runs"
                + f" (analysis validity {1 - r.validity_loss:.3f})"
                + (f"; where it broke one: {what}" if what else "")
                + ". No release is offered: change the configuration as the fix says, or mark more variables "
                  "sensitive")

    def risk_utility(self):
        """Per configuration: disclosure risk = mean of DBRL and ID, utility loss = mean of PIL
        and PS, and the analysis-validity loss (``validity_loss``), each with the mean over
        runs, its 95 % t interval (_lo, _hi) and the 2.5-97.5 % range of single runs
        (_run_lo, _run_hi)."""
        rows = []
        for label in self.configs:
            sub = self.runs[self.runs.config == label]
            if len(sub) == 0:
                continue
            risk = (sub.dbrl + sub.id).to_numpy() / 2
            loss = (sub.pil + sub.ps).to_numpy() / 2
            r = mean_interval(risk)
            u = mean_interval(loss)
            rr, ur = run_range(risk), run_range(loss)
            vl = sub.validity_loss.to_numpy()
            v, vr = mean_interval(vl), run_range(vl)
            rows.append({"config": label, "risk": r[0], "risk_lo": r[1], "risk_hi": r[2],
                         "risk_run_lo": rr[0], "risk_run_hi": rr[1],
                         "utility_loss": u[0], "utility_loss_lo": u[1], "utility_loss_hi": u[2],
                         "utility_loss_run_lo": ur[0], "utility_loss_run_hi": ur[1],
                         "validity_loss": v[0], "validity_loss_lo": v[1], "validity_loss_hi": v[2],
                         "validity_loss_run_lo": vr[0], "validity_loss_run_hi": vr[1], "reps": len(sub)})
        return pd.DataFrame(rows)

    def table(self, score=None):
        """Configurations x scores of means (or mean, lo, hi of one score)."""
        if score is None:
            return self.summary.pivot(index="config", columns="score", values="mean")
        return self.summary[self.summary.score == score].set_index("config")[["mean", "lo", "hi", "reps"]]
