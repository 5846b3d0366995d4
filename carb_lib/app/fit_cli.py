"""The body of ``carb fit`` (:mod:`carb_lib.app.cli` keeps only its options): fit CARB on measured
datasets (one ``--data`` file or several of one platform, or without ``--data`` the catalogued
rows of ``--platform P``) and save it, with the latency law chosen as ``CARBRegressor()``
chooses it (``latency_law="auto"``: :func:`carb_lib.ensemble.latency_default.resolve_latency_law`,
called by the estimator's ``fit``) unless the user names one (``--latency-law roofline``, or
``kernel`` with ``--kernel-bench FILE``).

The model records how its rows were timed (threads, heap, device, PyTorch:
:func:`carb_lib.measure.protocol.rows_protocol`; a training set that mixes protocols is
refused), a ladder of its rows for host calibration
(:func:`carb_lib.transfer.calibration.reference_rows`) and, where the main model encodes
families, a *transfer model* (``shared`` features, :data:`TRANSFER_PRESET`) that ``carb
predict`` uses for rows of families the fit did not hold. Its cross-validated error per target
is printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from carb_lib.app.cli_checks import check_model_out
from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, TARGETS
from carb_lib.dataset.catalog import DESIGN, load_catalog

__all__ = ["catalogued_rows", "run_fit"]


#: Preset of the transfer model (``shared`` features) ``carb fit`` stores beside a model that
#: encodes families; chosen on held-out design families by
#: ``benchmarks/choose_transfer_model.py`` (``results/benchmarks/transfer_model_choice.csv``).
TRANSFER_PRESET = "default"


def read_fit_data(data: Path | list[Path]):
    """The rows of one or several ``--data`` files, concatenated and validated."""
    import pandas as pd

    from carb_lib.core.tables import read_table
    from carb_lib.dataset.schema import validate_table

    paths = [data] if isinstance(data, str | Path) else list(data)
    if not paths:
        raise ValueError("give --data FILE (repeat it for several files of one platform), or "
                         "--platform P to fit P's catalogued rows")
    frames = [read_table(p, "--data") for p in paths]
    raw = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    what = "--data " + ", ".join(map(str, paths))
    # the one validator: configs by their family, costs of ok rows > 0, one row per config
    return validate_table(raw, complete=False, what=what, unique=True), what


def catalogued_rows(platform: str) -> list[Path]:
    """The rows files of ``platform``'s design campaign in the catalog (the shipped one and the
    user catalogs: :func:`carb_lib.dataset.catalog.load_catalog`), what ``carb fit --platform
    P`` reads without ``--data``.

    Raises
    ------
    ValueError
        One line: the platform is not catalogued (the known ones named), or has no rows files.
    """
    cat = load_catalog()
    cat.require_platform(platform)
    paths = cat.files(platform, DESIGN, "rows")
    if not paths:
        raise ValueError(f"platform {platform!r} has no rows in its {DESIGN} campaign of the "
                         f"catalog: give --data FILE")
    return paths


def fit_metrics_lines(model) -> list[str]:
    """One line per target: the model's cross-validated error (out-of-fold RMSE of log cost,
    on the learning scale) beside its base law's."""
    import numpy as np

    m = getattr(model, "oof_metrics_", None)
    if m is None or not len(m):
        return []
    lines = []
    for t, r in m.iterrows():
        final = float(r.get("rmse_final", np.nan))
        base = float(r.get("rmse_base", np.nan))
        ape = 100 * (np.exp(final) - 1) if np.isfinite(final) else np.nan
        kept = (" - the learners were worse than it out of fold (by over 2 standard errors): "
                "this target is predicted by the base law alone") if bool(r.get("base_law_only", False)) else ""
        lines.append(f"  {t}: RMSE of log {t} {final:.3f} (about {ape:.1f} % typical error), "
                     f"{int(r.get('n', 0)):,} rows; base law alone {base:.3f}{kept}")
    return lines


def missing_target_lines(rows) -> list[str]:
    """One line per cost that some of ``rows`` (ok rows) hold and others lack (``energy_j``
    where power sampling failed, its ``energy_reason`` saying why): those rows are left out of
    that target's fit only, never out of the other targets'."""
    import pandas as pd

    lines = []
    for t in TARGETS:
        if t not in rows.columns:
            continue
        v = pd.to_numeric(rows[t], errors="coerce")
        n_nan, n = int(v.isna().sum()), len(v)
        if 0 < n_nan < n:
            lines.append(f"{t}: {n_nan:,} of {n:,} ok rows have no {t}; they are left out of "
                         f"the {t} target only (the other targets use all {n:,})")
    return lines


def _warn(message: str) -> None:
    typer.secho(message, fg=typer.colors.YELLOW, err=True)


def run_fit(opts: Any, *, echo=typer.echo, warn=None) -> None:
    """Fit CARB on ``opts.data`` and save it to ``opts.out`` (one model per platform); ``opts``
    is the options object of ``carb fit`` (:data:`carb_lib.app.cli.FitOptions`). The model is
    ``CARBRegressor(latency_law=opts.latency_law, ...)`` of the preset, so its latency law is
    chosen as the estimator's (``latency_law_``); the law used and why are printed and stored
    (with the benchmark's path relative to the repository) in the model's metadata; warnings
    go to ``warn`` (default: yellow on stderr)."""
    import warnings

    from carb_lib.ensemble import PRESETS, CARBRegressor, save_model
    from carb_lib.ensemble.latency_default import LATENCY_LAWS
    from carb_lib.evaluation import prepare_dataset

    if opts.latency_law not in LATENCY_LAWS:
        raise ValueError(f"--latency-law must be one of {' | '.join(LATENCY_LAWS)}, "
                         f"got {opts.latency_law!r}")
    if opts.latency_law == "kernel" and opts.kernel_bench is None:
        raise ValueError("--latency-law kernel and --kernel-bench FILE go together (the kernel "
                         "law sums this platform's timed operators: carb kernels --out FILE); "
                         "--latency-law auto finds the platform's benchmark in data/")
    if opts.latency_law == "roofline" and opts.kernel_bench is not None:
        raise ValueError("--kernel-bench FILE is read by --latency-law kernel (or auto) only, "
                         "not by --latency-law roofline")
    if opts.cache_probe is not None and opts.kernel_bench is None:
        raise ValueError("--cache-probe FILE needs --latency-law kernel and --kernel-bench FILE")
    if opts.preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {opts.preset!r}")
    paths = [opts.data] if isinstance(opts.data, str | Path) else list(opts.data or [])
    if not paths and opts.platform is not None:
        paths = catalogued_rows(opts.platform)
    backup = check_model_out(opts.out, opts.force, inputs=[*(("--data", p) for p in paths),
                                                  ("--kernel-bench", opts.kernel_bench),
                                                  ("--cache-probe", opts.cache_probe)])
    raw, what = read_fit_data(paths)
    ok = raw[raw["status"].astype(str).eq("ok")] if "status" in raw.columns else raw
    if opts.platform is None and "platform" in raw.columns:
        plats = sorted(ok["platform"].dropna().astype(str).unique())
        if len(plats) > 1:
            raise ValueError(f"{what} holds several platforms {plats}: choose one with --platform")
    df = prepare_dataset(raw, opts.platform)
    if opts.feature_set == "shared":  # the family-agnostic extras are not stored by older campaigns
        from carb_lib.dataset.features import fill_static_features

        df = fill_static_features(df, EXTRA_STATIC_FEATURES)
    plat = opts.platform
    if plat is None and "platform" in df.columns and df["platform"].notna().any():
        plat = str(df["platform"].dropna().iloc[0])
    rows = ok if plat is None or "platform" not in ok.columns \
        else ok[ok["platform"].astype(str).eq(plat)]
    from carb_lib.measure.protocol import rows_protocol

    rp = rows_protocol(rows, what)  # one protocol, or one line naming the mixed column
    for line in missing_target_lines(rows):
        echo(line)
    # the latency law: the estimator chooses (latency_law="auto") or takes the one named
    # (files by name: a path object is not a type a model file holds)
    law = {"latency_law": opts.latency_law,
           "kernel_bench": None if opts.kernel_bench is None else str(opts.kernel_bench),
           "kernel_cache_probe": None if opts.cache_probe is None else str(opts.cache_probe)}
    params = dict(PRESETS["quick"]) if opts.quick else {**PRESETS[opts.preset], "n_jobs": opts.n_jobs}
    transfer = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = CARBRegressor(feature_set=opts.feature_set, **{**params, **law}).fit(
            df, rows_file=paths[0] if paths else None)
        # said once fitted: a benchmark or probe refused by the fit is the only line
        echo(f"latency law {model.latency_law_}: {model.latency_law_reason_}")
        echo(f"protocol: the rows were timed with {rp.describe()}"
             + (f", PyTorch {rp.torch_version}" if rp.torch_version else "")
             + "; predictions are for that protocol")
        if opts.feature_set != "shared" and "family" in df.columns:
            from carb_lib.dataset.features import fill_static_features

            tparams = dict(PRESETS["quick"]) if opts.quick else {**PRESETS[TRANSFER_PRESET],
                                                            "n_jobs": opts.n_jobs}
            transfer = CARBRegressor(feature_set="shared", **{**tparams, **law}).fit(
                fill_static_features(df, EXTRA_STATIC_FEATURES),
                rows_file=paths[0] if paths else None)
    seen = set()
    for w in caught:
        if str(w.message) not in seen:
            seen.add(str(w.message))
            (warn or _warn)(f"warning: {w.message}")
    from carb_lib.transfer.calibration import band_edges, reference_rows

    for m in (model, transfer):
        if m is not None:
            m.rows_protocol_ = rp.to_dict()
            m.reference_rows_ = reference_rows(rows)
            m.band_edges_ms_ = band_edges(rows["latency_ms"]) if "latency_ms" in rows else []
    if transfer is not None:
        model.transfer_model_ = transfer
    meta = {"protocol": rp.to_dict(), "protocol_text": rp.describe(),
            "transfer_model": (None if transfer is None else
                               {"feature_set": "shared",
                                "preset": "quick" if opts.quick else TRANSFER_PRESET,
                                "families": list(getattr(model, "families_", []) or []),
                                "use": "rows of families the fit did not hold"}),
            "data": [str(p) for p in paths]}
    save_model(model, opts.out, backup=backup, extra=meta)
    echo("cross-validated error (out of fold, training rows):")
    for line in fit_metrics_lines(model):
        echo(line)
    echo(
        f"wrote {opts.out} (+ {opts.out.name}.json): platform {model.platform_}, targets {model.targets_}, "
        f"skipped {model.skipped_targets_}, {model.n_train_} rows, feature set {model.feature_set}, "
        f"preset {'quick' if opts.quick else opts.preset}, latency law {model.latency_law_}, protocol "
        f"{rp.describe()}"
        + ("" if transfer is None else
           f"; transfer model (shared features) for families other than {model.families_}")
    )
