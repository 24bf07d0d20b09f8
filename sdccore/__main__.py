"""Command line: ``python -m sdccore protect|datasets ...``.

Errors print one line (``error: ...``) and exit with status 2; no traceback, no data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import contextlib
import glob
import os
import signal
import threading
import sys

from ._methods import methods

# the heavy modules (scipy, scikit-learn, numba) are imported by the command that needs them:
# ``python -m sdccore datasets`` starts in well under a second
METHODS = methods()  # the registry (sdccore._methods: imports nothing, so --help stays quick)


def _value(text):
    """--set values: JSON when it parses (numbers, lists, null), else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read(path):
    """The same reader as the dashboard's upload: separator, decimal mark and encoding detected.
    ``-`` reads standard input."""
    from ._io import read_table
    if path == "-":
        from ._io import _read_stream
        res = read_table(_read_stream(sys.stdin.buffer), "stdin.csv")  # bounded: `yes |` is refused at 200 MB
    else:
        if not os.path.exists(path):
            raise ValueError(f"file not found: {path}")
        if os.path.isdir(path):
            raise ValueError(f"{path} is a folder; give the data file's path.")
        res = read_table(path)
    for note in res.notes:
        print(f"note: {note}", file=sys.stderr)
    return res


def _read_csv(path):
    return _read(path).data


def _names(text):
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _check_roles(data, drop, keep, exclude, value_labels=None):
    """Identifier-like and text columns need an explicit role: dropped or kept unchanged."""
    from ._roles import suggest_roles
    sug = suggest_roles(data, value_labels=value_labels)
    decided = set(drop) | set(keep) | set(exclude or ())
    ids = [c for c, f in sug.flags.items() if f == "identifier" and c not in decided]
    text = [c for c, f in sug.flags.items() if f == "text" and c not in decided]
    if ids:
        why = "; ".join(f"{c}: {sug.reasons[c]}" for c in ids[:3])
        raise ValueError(f"column(s) {', '.join(ids)} look like identifiers ({why}); drop them with --drop "
                         f"{','.join(ids)} or release them unchanged on purpose with --keep {','.join(ids)}.")
    if text:
        raise ValueError(f"text column(s) {', '.join(text)} would be released unchanged; say so with --keep "
                         f"{','.join(text)}, or drop them with --drop {','.join(text)}.")
    for c, f in sug.flags.items():
        if f == "code" and c not in decided:
            why = sug.reasons[c].split(", released unchanged")[0].split(", so it is released unchanged")[0]
            print(f"note: {c}: {why}; on the command line it is protected as a measurement unless you --keep it "
                  f"(released unchanged)", file=sys.stderr)


def _same_file(a, b):
    """Whether two paths name one file (any spelling, ./../, symlinks); '-' is never a file."""
    if not a or not b or a == "-" or b == "-":
        return False
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_paths(args):
    """Outputs never overwrite inputs, nor each other."""
    inputs = [("the input", args.input), ("--recipe", args.recipe)]
    outputs = [("--out", args.out), ("--save-recipe", args.save_recipe), ("--codebook", args.codebook)]
    for oname, opath in outputs:
        for iname, ipath in inputs:
            if _same_file(opath, ipath):
                raise ValueError(f"{oname} {opath} is the same file as {iname} {ipath}; it would be overwritten. "
                                 f"Write to another path.")
    for i, (aname, apath) in enumerate(outputs):
        for bname, bpath in outputs[i + 1:]:
            if _same_file(apath, bpath):
                raise ValueError(f"{aname} {apath} and {bname} {bpath} are the same file; give two paths.")
    if args.codebook == "-":
        raise ValueError("--codebook - is not supported (standard output carries the release with --out -); "
                         "give a file path.")
    if args.save_recipe == "-":
        raise ValueError("--save-recipe - is not supported (standard output carries the release with --out -); "
                         "give a file path.")
    for oname, opath in outputs:
        if opath and opath != "-":
            folder = os.path.dirname(os.path.abspath(opath))
            if not os.path.isdir(folder):
                raise ValueError(f"{oname}: the folder {folder} does not exist; create it or write elsewhere. "
                                 f"Nothing was written.")
            if os.path.isdir(opath):
                raise ValueError(f"{oname} {opath} is a folder; give a file name.")
            _check_regular(oname, opath)


def _check_regular(oname, opath):
    """An output is a new or a regular file: a device (/dev/stdout, /dev/null), a FIFO, a
    socket or a symbolic link would be replaced by a regular file when the release is renamed
    into place (the machine's /dev/stdout was clobbered so); refuse them and keep them whole."""
    import stat
    try:
        st_ = os.lstat(opath)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st_.st_mode):
        raise ValueError(f"{oname} {opath} is a symbolic link; name the file itself (it is never replaced through a "
                         f"link). Nothing was written.")
    if not stat.S_ISREG(st_.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st_.st_mode) else "a device" if
                stat.S_ISCHR(st_.st_mode) or stat.S_ISBLK(st_.st_mode) else "a socket" if stat.S_ISSOCK(st_.st_mode)
                else "not a regular file")
        hint = " Use --out - for standard output." if oname == "--out" else ""
        raise ValueError(f"{oname} {opath} is {kind}; outputs are written to regular files only.{hint} Nothing was "
                         f"written.")


def _load_recipe(path):
    from ._recipe import RECIPE_VERSION, Recipe
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ValueError(f"recipe file not found: {path}") from None
    try:
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) is accepted
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; save the recipe the tool wrote with --save-recipe.") from None
    recipe = Recipe.from_json(text, source=path)
    if recipe.version is not None and recipe.version < RECIPE_VERSION:
        print(f"note: {path} is a version {recipe.version} recipe; it is rebuilt as it was written (old option names "
              f"read as today's: noise is noise_sd, noise_model or noise_cov); --save-recipe writes version "
              f"{RECIPE_VERSION}", file=sys.stderr)
    return recipe


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write(pairs):
    """Write each (path, bytes) to a temporary file in the path's folder, then rename them all
    into place: a killed run leaves the previous file whole, and concurrent runs never mix
    their bytes.  Returns, per path, the inode written (to tell whether another run replaced
    it afterwards)."""
    import tempfile

    temps = []
    try:
        for path, data in pairs:
            folder = os.path.dirname(os.path.abspath(path))
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=folder)
            temps.append(tmp)
            _CLEANUP.append(glob.escape(tmp))
            os.fchmod(fd, 0o666 & ~_umask())  # as open() would create it (mkstemp makes 0600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        inodes = []
        for (path, _), tmp in zip(pairs, temps):
            _check_regular("the output", path)  # again: it may have been made a device or a link meanwhile
            ino = os.stat(tmp).st_ino
            os.replace(tmp, path)
            inodes.append(ino)
        return inodes
    except BaseException:
        for tmp in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def _missing_cells(data, how, untouched):
    """--missing: 'keep' (protect the observed cells, missing ones stay missing in place),
    'drop-records' or 'drop-columns' (with a missing cell among the columns protected)."""
    from ._inspect import drop_incomplete_columns, drop_incomplete_rows
    from ._validation import numeric_columns

    cols = [c for c in numeric_columns(data) if c not in untouched]
    if how == "drop-records":
        data, k = drop_incomplete_rows(data, cols)
        if k:
            print(f"note: {k} record(s) with missing cells dropped (--missing drop-records)", file=sys.stderr)
    elif how == "drop-columns":
        data, gone = drop_incomplete_columns(data, cols)
        left = len(cols) - len(gone)
        if gone and left < 2:
            raise ValueError(f"--missing drop-columns would leave {left} numeric column(s) to protect ({len(gone)} "
                             f"have missing cells); use --missing keep (the default) or drop-records.")
        if gone:
            print(f"note: column(s) with missing cells left out of the release: {', '.join(gone)} "
                  f"(--missing drop-columns)", file=sys.stderr)
    return data


OUT_FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "csv", ".parquet": "parquet", ".xlsx": "xlsx", ".sav": "sav",
               ".dta": "dta", ".xpt": "xpt"}


def _out_format(out, read_format):
    """The release's format from the --out extension (standard output: CSV)."""
    if out == "-":
        return "csv"
    ext = os.path.splitext(out)[1].lower()
    if ext == ".sas7bdat":
        raise ValueError("--out: .sas7bdat cannot be written (no open writer exists); write the SAS release as .xpt "
                         "(SAS transport, which SAS reads), or as .csv.")
    return OUT_FORMATS.get(ext, "csv")  # any other name: CSV, as always


@contextlib.contextmanager
def _children_ignore_sigint():
    """Start worker processes (Dask's nannies and workers, compare's loky workers) with SIGINT
    ignored: a process started so inherits the ignored signal and Python installs no
    KeyboardInterrupt handler in it, so Ctrl-C in the terminal (sent to every process of the
    foreground group) reaches only this process, which prints one line and stops them; the
    workers printed 19 to 101 lines of tracebacks before.  A Ctrl-C during the start itself
    is ignored (the next one counts)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


SCHEDULER_WAIT = 15  # seconds a --scheduler address may take to answer (the whole refusal within 20 s)


def _client(args):
    """A distributed client: the scheduler at --scheduler, or a LocalCluster sized to this
    machine (one single-threaded worker process per core)."""
    import logging

    from distributed import Client, LocalCluster

    for name in ("distributed", "distributed.client", "distributed.worker", "distributed.nanny",
                 "distributed.scheduler", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # their tracebacks are not the user's message
    if args.scheduler:
        import threading

        # a port that accepts connections but is not a Dask scheduler leaves the handshake
        # waiting past Client's own timeout (88 s and more): a wall-clock limit of 20 s
        got = {}

        def connect():
            try:
                got["client"] = Client(args.scheduler, timeout="20s")
            except BaseException as exc:  # reported below, in the main thread
                got["error"] = exc

        t = threading.Thread(target=connect, daemon=True)
        t.start()
        t.join(SCHEDULER_WAIT)
        if "client" in got:
            return got["client"], None
        why = type(got["error"]).__name__ if "error" in got else f"no answer within {SCHEDULER_WAIT} s"
        raise ValueError(f"no Dask scheduler answers at {args.scheduler} ({why}); start one (dask scheduler), check "
                         f"the address and port, or leave out --scheduler for a local cluster.")
    with _children_ignore_sigint():
        cluster = LocalCluster(n_workers=max(1, os.cpu_count() or 1), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


def _say(notes, violations):
    """The notes and risk-floor warnings of a release, on standard error."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for line in violations:
        print(f"warning: {line}", file=sys.stderr)


def _recipe_options(args):
    """The recipe (or an empty one) and its options with --set, --method, --sensitive and
    --seed applied on top."""
    from ._recipe import Recipe

    recipe = _load_recipe(args.recipe) if args.recipe else Recipe({}, shuffle=False)
    options = dict(recipe.options)
    for item in args.set or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}.")
        key, val = item.split("=", 1)
        options[key.strip()] = _value(val.strip())
    if args.method:
        options["method"] = args.method
    options.setdefault("method", "fa")
    if args.sensitive is not None:
        options["sensitive"] = _names(args.sensitive) or None
    if args.seed is not None:
        options.pop("rng", None)
        options["seed"] = args.seed
    elif "rng" in options:
        options["seed"] = options.pop("rng")
    return recipe, options


def _protect_dask(args):
    """protect with --engine dask: a Parquet data set (a folder) from Parquet or CSV files."""
    from ._dask import _check_out, protect_dask, read_dask, read_head, scale_refusal
    if args.out == "-" or args.out.lower().endswith((".csv", ".xlsx", ".sav", ".dta", ".xpt")):
        raise ValueError(f"--engine dask writes a Parquet data set into a folder; give --out a folder, e.g. "
                         f"--out released/ (not {args.out}).")
    _check_out(args.out)
    if args.save_recipe:
        import glob as _glob
        if args.save_recipe == "-":
            raise ValueError("--save-recipe - is not supported; give a file path.")
        folder = os.path.dirname(os.path.abspath(args.save_recipe))
        if not os.path.isdir(folder):
            raise ValueError(f"--save-recipe: the folder {folder} does not exist; create it or write elsewhere. "
                             f"Nothing was written.")
        if os.path.isdir(args.save_recipe):
            raise ValueError(f"--save-recipe {args.save_recipe} is a folder; give a file name.")
        _check_regular("--save-recipe", args.save_recipe)
        inputs = ([args.recipe] if args.recipe else []) + (_glob.glob(args.input) or [args.input])
        if any(_same_file(args.save_recipe, i) for i in inputs):
            raise ValueError(f"--save-recipe {args.save_recipe} is one of the inputs; it would be overwritten. Write to "
                             f"another path.")
        if os.path.abspath(args.save_recipe).startswith(os.path.abspath(args.out).rstrip(os.sep) + os.sep):
            raise ValueError(f"--save-recipe {args.save_recipe} lies inside the release folder {args.out}; write it "
                             f"beside it.")
    recipe, options = _recipe_options(args)
    drop = list(recipe.drop) + _names(args.drop)
    keep = list(recipe.keep) + _names(args.keep)
    # the in-memory reading and role rules, before any cluster starts
    head = read_head(args.input)
    ddf = read_dask(args.input, head=head)  # lazy: checks that every file has the same columns
    why = scale_refusal(options)
    if why:
        raise ValueError(why)
    for note in head.notes:
        print(f"note: {note} (read from the first records of the first file; every file is read so)",
              file=sys.stderr)
    _check_roles(head.data.drop(columns=[c for c in drop if c in head.data.columns]), drop, keep,
                 options.get("exclude") if isinstance(options.get("exclude"), list) else None)
    out_abs = os.path.abspath(args.out.rstrip("/") or args.out)
    _CLEANUP.append(os.path.join(glob.escape(os.path.dirname(out_abs)),
                                 f".{glob.escape(os.path.basename(out_abs))}.sdccore-partial-*-{os.getpid()}"))
    client, cluster = _client(args)
    try:

        def show(job):
            fut = client.compute(job)
            if sys.stderr.isatty():
                from distributed import progress
                progress(fut)
            fut.result()

        def save(rec):  # written after the floors are checked, before the release is renamed into place
            _atomic_write([(args.save_recipe, rec.to_json().encode("utf-8"))])

        rel = protect_dask(ddf, options, args.out, drop=drop, keep=keep, sample=args.sample,
                           allow_unsafe=args.allow_unsafe, shuffle=recipe.shuffle, progress=show,
                           before_publish=save if args.save_recipe else None)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    _say(rel.notes, rel.risk.violations)
    _risk_lines(rel.risk)
    how = (f"own-record closeness over all {rel.n:,} records, the prior and the other intruders on a sample of "
           f"{rel.sample:,}")
    floors = f"met ({how})" if rel.risk.ok else f"BROKEN ({how}), released because: {args.allow_unsafe}"
    lowered = rel.risk.floors.lowered_text()
    if lowered:
        floors += f"; {lowered}, released because: {args.allow_unsafe}"
    print(f"wrote {args.out}: {rel.n:,} records as a Parquet data set (method {rel.options['method']}, seed "
          f"{rel.options['seed']}, engine dask; risk floors {floors})", file=sys.stderr)


def _protect(args):
    from ._recipe import Recipe
    from ._release import make_release
    if args.engine == "dask":
        return _protect_dask(args)
    _check_paths(args)
    _out_format(args.out, None)  # an impossible format is refused before any work
    recipe, options = _recipe_options(args)
    if args.strata is not None:
        options["strata"] = _names(args.strata) or None
        if options["strata"] is None:
            options.pop("strata")
    if args.weights is not None:
        options["weights"] = args.weights.strip() or None
    drop = list(recipe.drop) + _names(args.drop)
    keep = list(recipe.keep) + _names(args.keep)
    src = _read(args.input)
    excl = options.get("exclude")
    excl = {c for c in excl if isinstance(c, str)} if isinstance(excl, (list, tuple)) else set()  # validated later
    for key in ("strata", "weights"):  # design columns are released unchanged
        val = options.get(key)
        excl |= {c for c in ([val] if isinstance(val, str) else val or []) if isinstance(c, str)}
    data = _missing_cells(src.data, args.missing, set(drop) | set(keep) | excl)
    missing = [c for c in drop + keep if c not in data.columns]
    if missing:
        raise ValueError(f"--drop/--keep name column(s) not in {args.input}: {', '.join(missing)}.")
    recipe = Recipe(options, tuple(drop), tuple(keep), recipe.shuffle, recipe.version, recipe.versions)
    rel = make_release(data, recipe, allow_unsafe=args.allow_unsafe)
    res, out = rel.result, rel.data
    _check_roles(data, drop, keep, res.options.get("exclude"), src.value_labels)  # after the data's own checks
    fmt = _out_format(args.out, src.format)
    body = rel.to_bytes(fmt, labels=src.labels, value_labels=src.value_labels, sep=src.sep or ",",
                        decimal=src.decimal or ".")
    pairs = []
    if args.save_recipe:
        pairs.append((args.save_recipe, rel.recipe.to_json().encode("utf-8")))
    if args.codebook:
        from ._codebook import codebook_bytes
        fmt_cb = "json" if args.codebook.lower().endswith(".json") else "csv"
        pairs.append((args.codebook, codebook_bytes(rel.codebook(data, src.labels), fmt_cb)))
    digest = hashlib.sha256(body).hexdigest()[:12]
    # .xlsx, .sav and .dta files carry their creation time: the file's hash differs between two
    # rebuilds of the same release; the content hash (of the values, as CSV) does not
    content = "" if fmt == "csv" else f", content sha256 {hashlib.sha256(rel.to_bytes('csv')).hexdigest()[:12]}"
    if args.out == "-":
        if pairs:
            _atomic_write(pairs)
        sys.stdout.buffer.write(body)
        sys.stdout.buffer.flush()
    else:
        pairs.append((args.out, body))
        inodes = _atomic_write(pairs)  # the recipe is renamed into place first, then the release
        try:
            replaced = os.stat(args.out).st_ino != inodes[-1]
        except OSError:
            replaced = True
        if replaced:
            print(f"note: another run replaced {args.out} right after this one wrote it (this run's file had "
                  f"sha256 {digest}); the file there now is the other run's", file=sys.stderr)
    _say(res.notes, res.risk.violations)
    _risk_lines(res.risk)
    print(f"wrote {'standard output' if args.out == '-' else args.out}: {out.shape[0]} records, {out.shape[1]} columns, "
          f"sha256 {digest}{content} "
          f"(method {res.method}, seed {res.options['seed']}; risk floors "
          f"{'met' if res.risk.ok else 'BROKEN, released because: ' + res.unsafe_reason}"
          f"{'; ' + res.risk.floors.lowered_text() + ', released because: ' + res.unsafe_reason if res.risk.floors.lowered() else ''})",
          file=sys.stderr)


def _risk_lines(risk, most=3):
    """'risk: ...' lines on standard error: for the variables the release adds most to, what the
    intruder's knowledge alone predicts and what the release adds (RiskProfile.explain)."""
    lines = risk.explain()  # the variables the release adds most to first
    for t in lines[:most]:
        print(f"risk: {t}", file=sys.stderr)
    if len(lines) > most:
        print(f"risk: ... {len(lines) - most} more variable(s): see the codebook (--codebook PATH)", file=sys.stderr)


def _evaluate_dask(args):
    import math

    from ._dask import read_dask
    from ._dask_measures import evaluate_dask

    client, cluster = _client(args)
    try:
        ev = evaluate_dask(read_dask(args.original), read_dask(args.protected), sensitive=_sens(args),
                           sample=args.sample)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    table = ev.table
    if args.json:
        print(json.dumps({"records": ev.n, "sample": ev.sample,
                          "scores": {k: {**{c: (None if math.isnan(r[c]) else _digits(float(r[c])))
                                            for c in ("estimate", "lo", "hi")}, "how": r["how"]}
                                     for k, r in table.iterrows()},
                          "pil": {k: _digits(float(v)) for k, v in ev.pil.items()}}, indent=2))
    else:
        print(f"scores at scale, {ev.n:,} records, {ev.sample:,} of them sampled (95 % interval; 0 best, 1 worst):")
        for k, r in table.iterrows():
            iv = "exact" if math.isnan(r.lo) else f"[{r.lo:.4f}, {r.hi:.4f}]"
            print(f"  {k:<8s} {r.estimate:.4f}  {iv:<18s} {r.how}")


def _evaluate(args):
    if args.engine == "dask":
        return _evaluate_dask(args)
    from ._evaluate import evaluate
    orig = _read_csv(args.original)
    prot = _read_csv(args.protected)
    sens = [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None
    checks = []
    if args.model:
        from ._regression import regression_check
        checks = [regression_check(orig, prot, m) for m in args.model]  # a bad formula fails before the scores
    ev = evaluate(orig, prot, sensitive=sens, **({"weights": args.weights} if args.weights else {}))
    if args.json:
        # 12 significant digits: the last digits of a sum change with the BLAS kernel and
        # thread count (reduction order), so more would not be the same on another machine
        out = {k: _digits(v) for k, v in ev.scores.items()}
        if args.weights:
            out["weighted"] = {v: {k: _digits(float(x)) for k, x in row.items()}
                               for v, row in ev.details["weighted"].iterrows()}
        if checks:
            out["regression"] = [_regression_json(c.model, c.table, n_original=c.n_original,
                                                  n_protected=c.n_protected, mean_overlap=c.mean_overlap)
                                 for c in checks]
        print(json.dumps(out, indent=2))
    else:
        labels = {"dbrl": "record linkage (DBRL)", "id": "interval disclosure (ID)", "pil": "information loss (PIL)",
                  "ps": "propensity score (PS)", "ps_shape": "PS on normal scores", "validity_loss": "analysis validity lost",
                  "summary": "summary", "selectivity": "selectivity", "overall": "overall"}
        print("score (0 best, 1 worst)")
        for k, v in ev.scores.items():
            print(f"  {labels[k]:<28s} {v:.4f}")
        if ev.details.get("ps_fit") == "separated":
            print("  (the propensity model separates the two files: the release is recognisably not the original)")
        vt = ev.details["validity"]
        print("\nanalysis validity per variable (1 best): OLS CI overlap, R2 kept, correlations kept, "
              "distribution kept")
        for name, r in vt.iterrows():
            print(f"  {str(name):<28s} {r.validity:.3f}  (overlap {r.overlap:.3f}, R2 kept {r.r2_kept:.3f}, "
                  f"correlations {r.cor_kept:.3f}, distribution {r.marginal_kept:.3f})")
        if args.weights:
            t = ev.details["weighted"]
            print(f"\nweighted by {args.weights}: largest change of a weighted mean "
                  f"{t.mean_change_sd.abs().max():.2e} weighted sd (variable {t.mean_change_sd.abs().idxmax()}), "
                  f"of a weighted correlation {ev.details['weighted_cor_gap']:.4f}")
        for c in checks:
            print(f"\nregression {c.model} (records used: original {c.n_original}, protected {c.n_protected}; "
                  f"mean interval overlap {c.mean_overlap:.3f}, 1 = same interval):")
            _print_coefficients(c.table)


_COEF_COLUMNS = ("coef_original", "lo_original", "hi_original", "coef_protected", "lo_protected", "hi_protected",
                 "overlap", "std_diff")


def _regression_json(model, table, **extra):
    terms = {}
    for term, row in table.iterrows():
        terms[term] = {k: _digits(float(row[k])) for k in table.columns if k in _COEF_COLUMNS or k in
                       ("overlap_lo", "overlap_hi")}
        if "sign_kept" in table:
            terms[term]["sign_kept"] = bool(row["sign_kept"]) if table["sign_kept"].dtype == bool \
                else _digits(float(row["sign_kept"]))
    return {"model": model, **{k: _digits(v) if isinstance(v, float) else v for k, v in extra.items()},
            "coefficients": terms}


def _print_coefficients(table):
    w = max(12, *(len(str(t)) for t in table.index))
    print(f"  {'term':<{w}s} {'original [95% CI]':>36s} {'protected [95% CI]':>36s} {'overlap':>8s}")
    for term, r in table.iterrows():
        o = f"{r.coef_original:.4g} [{r.lo_original:.4g}, {r.hi_original:.4g}]"
        p = f"{r.coef_protected:.4g} [{r.lo_protected:.4g}, {r.hi_protected:.4g}]"
        print(f"  {str(term):<{w}s} {o:>36s} {p:>36s} {r.overlap:8.3f}")


def _digits(v, sig=12):
    return float(f"{v:.{sig}g}")


def _sens(args):
    return [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None


def _compare(args):
    from ._compare import _WARMING, compare, warm_workers

    with _children_ignore_sigint():  # the workers start now, ignoring the terminal's Ctrl-C
        warm_workers()
        for t in _WARMING:
            t.join()

    data = _read_csv(args.input)
    configs = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"}}
    def progress(d, t):
        if not args.json and (d == t or d % max(1, t // 10) == 0):
            print(f"  {d}/{t} runs", file=sys.stderr)

    res = compare(data, configs, sensitive=_sens(args), reps=args.reps, rng=args.seed, progress=progress,
                  models=args.model)
    reg = res.regression_summary()
    for label, why in res.errors.items():
        print(f"  {label} was not run on these data: {_one_line(why)}", file=sys.stderr)
    if args.json:
        out = {lab: {r.score: {"mean": _digits(r.mean), "lo": _digits(r.lo), "hi": _digits(r.hi)} for r in res.summary[res.summary.config == lab].itertuples()}
               for lab in configs}
        doc = {"reps": args.reps, "seed": res.seed, "results": out}
        if len(reg):
            doc["regression"] = [dict(_regression_json(model, sub.set_index("term").drop(columns=["config", "model"])),
                                      config=label)
                                 for (label, model), sub in reg.groupby(["config", "model"], sort=False)]
        print(json.dumps(doc, indent=2))
    else:
        key = "overall" if _sens(args) else "summary"
        print(f"{key} score over {args.reps} runs (mean and 95 % t interval of the mean; lower is better):")
        for r in res.summary[res.summary.score == key].sort_values("mean").itertuples():
            print(f"  {r.config:<6s} {r.mean:.4f}  [{r.lo:.4f}, {r.hi:.4f}]")
        for (label, model), sub in (reg.groupby(["config", "model"], sort=False) if len(reg) else ()):
            print(f"\n{label}: regression {model}, protected coefficients and intervals averaged over {args.reps} "
                  f"runs; overlap 1 = same interval:")
            _print_coefficients(sub.set_index("term"))


def _recommend(args):
    from ._recommend import recommend
    data = _read_csv(args.input)
    r = recommend(data, sensitive=_sens(args))
    print(f"recommended: {r.label}" if r.label else
          "recommended: none (no method meets the risk floors with its default settings; the reasons say what breaks)")
    for why in r.reasons:
        print(f"  - {why}")


def _datasets(args):
    from ._datasets import list_datasets
    print(list_datasets().to_string(index=False))


def build_parser():
    p = _Parser(prog="python -m sdccore", description="Statistical disclosure control of continuous microdata.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    pr = sub.add_parser("protect", help="protect the numeric columns of a CSV file")
    pr.add_argument("input", help="input CSV, Excel, Parquet, SPSS (.sav), Stata (.dta) or SAS (.sas7bdat, .xpt); "
                                  "- reads standard input (CSV)")
    pr.add_argument("--method", choices=list(METHODS))
    pr.add_argument("--sensitive", help="comma-separated sensitive column names (default: protect all)")
    pr.add_argument("--seed", type=int, help="random seed (recorded in the recipe)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE", help="an option, e.g. --set n_factors=4 (repeatable)")
    pr.add_argument("--recipe", help="JSON recipe with options (from --save-recipe)")
    pr.add_argument("--out", required=True, help="output file; its extension chooses the format (.csv, .parquet, "
                                                 ".xlsx, .sav, .dta, .xpt; variable and value labels of an SPSS, "
                                                 "Stata or SAS input are kept); - writes CSV to standard output")
    pr.add_argument("--engine", choices=("memory", "dask"), default="memory",
                    help="dask: protect Parquet/CSV files (a glob) that do not fit in memory, on a Dask cluster; "
                         "--out is then a folder for the Parquet data set (fa, pca, noise, magg and rankswap)")
    pr.add_argument("--scheduler", metavar="ADDRESS",
                    help="with --engine dask: a running Dask scheduler (tcp://host:8786); default a local cluster")
    pr.add_argument("--sample", type=int, default=20000,
                    help="with --engine dask: records drawn at random for the risk floors' linking and "
                         "reconstruction checks (default 20000; closeness and |cor| use every record)")
    pr.add_argument("--codebook", metavar="PATH",
                    help="write the codebook here (.json or .csv): per variable its role, method, rounding, what is "
                         "kept exactly and in expectation, and its residual risk")
    pr.add_argument("--save-recipe", help="write the effective options as JSON here")
    pr.add_argument("--drop", help="comma-separated columns to drop from the release (identifiers)")
    pr.add_argument("--keep", help="comma-separated columns to release unchanged on purpose")
    pr.add_argument("--strata", metavar="COLUMNS",
                    help="comma-separated columns whose groups are protected on their own (fa, pca, magg): group "
                         "means kept, no record mixed with another group's; released unchanged")
    pr.add_argument("--weights", metavar="COLUMN",
                    help="a sampling-weight column: released unchanged, weighted means kept (fa, pca, magg)")
    pr.add_argument("--missing", choices=("keep", "drop-records", "drop-columns"), default="keep",
                    help="missing cells: keep them missing in place and protect the observed ones (default), drop "
                         "the records that have them, or leave out the columns that have them")
    pr.add_argument("--allow-unsafe", metavar="REASON",
                    help="write a release that breaks a risk floor anyway (never for publication); the reason is "
                         "printed and recorded in the saved recipe")
    pr.set_defaults(func=_protect)
    ev = sub.add_parser("evaluate", help="disclosure risk and utility of a protected CSV")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--sensitive", help="comma-separated sensitive column names")
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.add_argument("--engine", choices=("memory", "dask"), default="memory",
                    help="dask: the two files are globs of Parquet/CSV files; the scores are estimated on a random "
                         "sample of aligned records, with intervals")
    ev.add_argument("--scheduler", metavar="ADDRESS", help="with --engine dask: a running Dask scheduler")
    ev.add_argument("--sample", type=int, default=5000, help="with --engine dask: records sampled (default 5000)")
    ev.add_argument("--weights", metavar="COLUMN", help="a sampling-weight column in both files: left out of the "
                    "measures; weighted means and correlations of both files are reported")
    ev.add_argument("--model", action="append", metavar="FORMULA",
                    help="a linear regression to fit on both files, e.g. 'SALES ~ LABOR.COSTS + FIXED.ASSETS' "
                         "(repeatable): coefficients, 95%% intervals and their overlap")
    ev.set_defaults(func=_evaluate)
    cp = sub.add_parser("compare", help="compare FA, PCA and M-AGG over repeated runs")
    cp.add_argument("input")
    cp.add_argument("--sensitive", help="comma-separated sensitive column names")
    cp.add_argument("--reps", type=int, default=30)
    cp.add_argument("--seed", type=int)
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--model", action="append", metavar="FORMULA",
                    help="a linear regression to fit on the original and every run's release (repeatable); "
                         "the interval overlaps are averaged over the runs")
    cp.set_defaults(func=_compare)
    rc = sub.add_parser("recommend", help="recommend a method with its reasons")
    rc.add_argument("input")
    rc.add_argument("--sensitive", help="comma-separated sensitive column names")
    rc.set_defaults(func=_recommend)
    ds = sub.add_parser("datasets", help="list the bundled sample data sets")
    ds.set_defaults(func=_datasets)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: 'error: ...' and exit 2, like every other error here."""

    def error(self, message):
        raise _UsageError(f"{message}; see '{self.prog} --help'")


class _UsageError(Exception):
    pass


# the library's messages name its keywords; on the command line they name the flags instead
_CLI_WORDS = [
    ("pass allow_unsafe='reason' (on the command line --allow-unsafe \"reason\")", "pass --allow-unsafe \"reason\""),
    ("--allow-unsafe \"reason\" (allow_unsafe='reason' in the library)", "--allow-unsafe \"reason\""),
    ("pass allow_unsafe='reason'", "pass --allow-unsafe \"reason\""),
    ("allow_unsafe='internal test file, not published'", "--allow-unsafe \"internal test file, not published\""),
    ("allow_unsafe must be", "--allow-unsafe must be"),
    ("(exclude=[...])", "(--keep COLUMNS, released unchanged)"),
    ("exclude it (exclude=[...])", "keep it unchanged (--keep COLUMN)"),
    ("pass sensitive=[...]", "pass --sensitive COLUMNS"),
    ("pass for example rng=12345", "pass for example --seed 12345"),
    ("or leave those columns out (exclude)", "or release those columns unchanged (--keep COLUMNS)"),
    ("pass either rng= or seed=, not both", "give the seed once (--seed)"),
]


def _one_line(text):
    text = " ".join(str(text).split()) or "unknown error"
    for lib, cli in _CLI_WORDS:
        text = text.replace(lib, cli)
    return text


def main(argv=None):
    """Run the command line; every failure is one line on stderr and exit status 2 (130 for
    Ctrl-C), never a traceback."""
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except _UsageError as exc:
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2
        args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        text = _one_line(exc) if str(exc) else type(exc).__name__
        if "libllvmlite" in text or "numba" in text.lower() and ".so" in text:
            text = ("a compiled part of the tool could not be loaded (often: too little memory for it); run again "
                    "with more memory. Nothing was written.")
        print(f"error: {text}", file=sys.stderr)
        return 2
    except RecursionError:
        print("error: the input is nested too deeply to be read; check the recipe or file.", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory; protect fewer records or variables at once, or use a machine with more "
              "memory. Nothing was written.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except SystemError as exc:  # a compiled kernel interrupted by Ctrl-C reports it so
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            return _interrupted()
        raise
    except Exception as exc:  # an engine's own error (Dask's, a worker's): one line, never a traceback
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt) or type(exc).__name__ in (
                "AllExit", "CancelledError"):
            return _interrupted()
        text = _one_line(exc)
        if "llvmlite" in text or ".so" in text:  # a library that failed to load: its path says nothing to a user
            text = "a compiled part of the tool could not be loaded (often: too little memory); try again with more"
        print(f"error: {type(exc).__name__}: {text[:300]}", file=sys.stderr)
        return 2
    return 0



_CLEANUP = []  # temporary files and partial folders (globs) this process is writing


def _on_sigint(signum, frame):
    """Ctrl-C on the command line: one line, this process's worker processes ended, its
    temporary files and partial folders removed, exit 130, at once.  Raising
    KeyboardInterrupt into the running work instead let compiled kernels report it as a
    SystemError or crash (a segfault seen 1 time in 5), and worker processes and Dask's
    threads print tracebacks."""
    import shutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write("error: interrupted; nothing was written (an earlier output file is left as it was).\n")
        sys.stderr.flush()
    except Exception:
        pass
    trackers = []
    try:
        import psutil
        kids = psutil.Process().children(recursive=True)

        def is_tracker(p):
            try:
                return "resource_tracker" in " ".join(p.cmdline())
            except Exception:
                return False

        trackers = [k for k in kids if is_tracker(k)]
        # the workers stopped first, then killed; multiprocessing's resource tracker last, right
        # before exiting: a thread of this process that found it dead printed a warning and a
        # traceback after the one line (1 run in 2 under load)
        workers = [k for k in kids if k not in trackers]
        for action in ("suspend", "kill"):
            for child in workers:
                try:
                    getattr(child, action)()
                except Exception:
                    pass
    except Exception:
        pass
    for pattern in list(_CLEANUP):
        for path in glob.glob(pattern):
            try:
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
            except OSError:
                pass
    for t in trackers:
        try:
            t.kill()
        except Exception:
            pass
    os._exit(130)


def _interrupted():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while stopping prints nothing more
    print("error: interrupted; nothing was written (an earlier output file is left as it was).", file=sys.stderr)
    return 130


def cli():
    """The ``sdccore`` command (``python -m sdccore`` and the console script of ``pip install``)."""
    signal.signal(signal.SIGINT, _on_sigint)
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the interpreter's shutdown is not interrupted
    sys.exit(code)


if __name__ == "__main__":
    cli()
