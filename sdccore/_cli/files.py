"""The command line's files: reading an input (with the in-memory reader), checking roles and
paths (an output never overwrites an input, a recipe or another output; only regular files
are written), loading recipes, the output format from the file name, and writing every
output atomically (a temporary file renamed into place, removed on Ctrl-C through
``_CLEANUP``).  Imports only the standard library at start-up, so the command line stays
quick."""

from __future__ import annotations

import glob
import json
import os
import stat
import sys

__all__ = []

_CLEANUP = []  # temporary files and partial folders (globs) this process is writing


def _value(text):
    """--set values: JSON when it parses (numbers, lists, null), else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read(path):
    """The same reader as the dashboard's upload: separator, decimal mark and encoding detected.
    ``-`` reads standard input."""
    from .._io.read import read_table
    if path == "-":
        from .._io.read import _read_stream
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


def _check_named(data, drop, keep, path):
    """--drop and --keep name columns of the file read from ``path``."""
    missing = [c for c in drop + keep if c not in data.columns]
    if missing:
        raise ValueError(f"--drop/--keep name column(s) not in {path}: {', '.join(missing)}.")


def _check_roles(data, drop, keep, exclude, value_labels=None, keys=None, note_keys=False):
    """Identifier-like and text columns need an explicit role: dropped or kept unchanged; with
    ``note_keys``, key variables the file seems to have but the recipe does not name are
    pointed out."""
    from .._data.roles import suggest_roles
    sug = suggest_roles(data, value_labels=value_labels)
    decided = set(drop) | set(keep) | set(exclude or ()) | set(keys or ())
    if note_keys and sug.keys and not keys:
        shown = ", ".join(f'"{c}"' for c in sug.keys)
        print(f"note: possible key variables (what an intruder may know of a person): {', '.join(sug.keys)}; make "
              f"the release 3-anonymous on them with --set 'keys=[{shown}]'", file=sys.stderr)
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
        if f in ("household", "weight") and c not in decided:
            print(f"note: {c} looks like {'a household id' if f == 'household' else 'a sampling weight'}; on the "
                  f"command line it is protected as a measurement unless you --keep it (released unchanged, as it "
                  f"should be)", file=sys.stderr)
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
    outputs = [("--out", args.out), ("--save-recipe", args.save_recipe), ("--codebook", args.codebook),
               ("--report", getattr(args, "report", None)), ("--external-report", getattr(args, "external_report", None))]
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
    for flag, path in (("--report", getattr(args, "report", None)),
                       ("--external-report", getattr(args, "external_report", None))):
        if path == "-":
            raise ValueError(f"{flag} - is not supported (standard output carries the release with --out -); give a "
                             f"file path.")
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
    from .._protect.recipe import RECIPE_VERSION, Recipe, read_recipe
    if os.path.isdir(path):
        raise ValueError(f"--recipe {path} is a folder; give the recipe file (JSON) the tool wrote.")
    try:
        raw = read_recipe(path)  # bounded: /dev/zero or a FIFO is refused past MAX_RECIPE_BYTES
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
    from .._data.inspect import drop_incomplete_columns, drop_incomplete_rows
    from .._core.validation import numeric_columns

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


def _report_pairs(args, rel, data, labels):
    """(path, bytes) of the internal and external HTML reports asked for (--report,
    --external-report): the dashboard's report of this release (``sdccore.report``)."""
    out = []
    for path, kind in ((args.report, "internal"), (args.external_report, "external")):
        if path:
            from .._report.assemble import release_report
            name = "standard input" if args.input == "-" else os.path.basename(args.input)
            out.append((path, release_report(rel, data, kind, name, labels).encode("utf-8")))
    return out


def _split_names(options):
    """--set keys=region,sex,age: an option that names columns takes a comma-separated list, as
    --sensitive does (it was read as one column named 'region,sex,age')."""
    from .._protect.options import option_schema

    try:
        kinds = {o.name: o.kind for o in option_schema(options["method"])}
    except ValueError:
        return  # an unknown method: protect names the choices
    for key, value in options.items():
        if kinds.get(key) in ("names", "transform") and isinstance(value, str) and "," in value:
            options[key] = _names(value)


def _numeric_both(orig, prot):
    """The columns numeric in both files (the scores' columns); the others (a region or sex in
    words, a text id) are left out of the scores with a note, and stay domains of --analyses."""
    from .._core.validation import numeric_columns  # the measures' own test of a numeric column

    both = set(numeric_columns(prot))
    num = [c for c in numeric_columns(orig) if c in both]
    other = [str(c) for c in orig.columns if c not in num]
    if other and num:
        print(f"note: {', '.join(other[:8])}{' ...' if len(other) > 8 else ''} left out of the scores (not numeric in "
              f"both files); with --analyses a text column of 2-30 levels released unchanged is a domain",
              file=sys.stderr)
    return num or list(orig.columns)


def _without_dropped(args, orig, prot):
    """(original, release) without the columns ``evaluate --drop`` names (those protect left
    out; a release that still holds one, made otherwise, loses it too); a release that lacks
    some of the original's columns, not named, is refused with the fix."""
    drop = _names(args.drop)
    gone = [c for c in orig.columns if c not in prot.columns and c not in drop]
    if gone and len(orig.columns) - len(gone) - len(drop) == len(prot.columns):
        raise ValueError(f"{args.protected} has no column(s) {', '.join(gone)} of {args.original}: if protect left "
                         f"them out (--drop), pass --drop {','.join(gone)} here too.")
    orig = orig.drop(columns=[c for c in drop if c in orig.columns])
    prot, note = _aligned(orig, prot.drop(columns=[c for c in drop if c in prot.columns]), _names(args.sensitive))
    if note:
        print(f"note: {note}", file=sys.stderr)
    return orig, prot


def _aligned(orig, prot, sensitive=()):
    """(the release with its records in the original's order, a note or None).  A release made
    with --shuffle-rows (the dashboard's and compare's printed command) has its records in an
    order drawn from the seed: every record-level score (linkage, interval disclosure, the
    distance in PIL, the propensity fit) compared record i of one file with record i of the
    other, so linkage found no record (DBRL 0: a release whose risk was not measured), and no
    text code counted as released unchanged (no domain).  The columns with the same values in
    both files, in another order, pair the records; records that share all of them are paired
    in file order (said).  As it is where the order is the original's or nothing pairs them."""
    import numpy as np
    import pandas as pd

    if len(orig) != len(prot):
        return prot, None
    same = [c for c in orig.columns if c in prot.columns and c not in set(sensitive or ())
            and orig[c].nunique(dropna=False) > 1
            and orig[c].value_counts(dropna=False).sort_index().equals(prot[c].value_counts(dropna=False).sort_index())]
    if not same or any(orig[c].reset_index(drop=True).equals(prot[c].reset_index(drop=True)) for c in same):
        return prot, None
    for keys in (same, [c for c in same if not pd.api.types.is_numeric_dtype(orig[c])]):
        if keys:  # (without --sensitive, a swapped amount keeps its values too: the codes alone then)
            got = _paired(orig, prot, keys)
            if got is not None:
                return got
    return prot, None


def _paired(orig, prot, same):
    """_aligned's pairing on the columns ``same``, or None where some record has no partner."""
    import numpy as np
    import pandas as pd

    both = pd.concat([orig[same], prot[same]], ignore_index=True)
    code = both.groupby(same, dropna=False, sort=False).ngroup().to_numpy()
    ko, kp = pd.Series(code[:len(orig)]), pd.Series(code[len(orig):])
    left = pd.DataFrame({"k": ko, "c": ko.groupby(ko).cumcount()})
    right = pd.DataFrame({"k": kp, "c": kp.groupby(kp).cumcount(), "j": np.arange(len(prot))})
    j = left.merge(right, on=["k", "c"], how="left")["j"]
    if j.isna().any():
        return None
    shared = int(ko.duplicated(keep=False).sum())
    return prot.iloc[j.astype(int).to_numpy()].reset_index(drop=True), (
        f"the release's records are in another order than the original's (--shuffle-rows): paired by "
        f"{', '.join(map(str, same))}, released unchanged"
        + (f"; {shared} records share all of them with another and are paired in file order within those groups "
           f"(their record-level scores are approximate)" if shared else ", which tell every record apart"))
