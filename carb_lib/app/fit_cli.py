"""The body of ``carb fit`` (:mod:`carb_lib.app.cli` keeps only its options): fit CARB on a measured
dataset and save it, with the latency law chosen by :mod:`carb_lib.ensemble.latency_default` unless the
user names one (``--latency-law roofline``, or ``kernel`` with ``--kernel-bench FILE``)."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["run_fit"]


def run_fit(
        *, data: Path, out: Path, feature_set: str, platform: str | None, quick: bool,
        n_jobs: int, preset: str, latency_law: str, kernel_bench: Path | None,
        cache_probe: Path | None, force: bool, echo=typer.echo, warn=None,
) -> None:
    """Fit CARB on ``data`` and save it to ``out`` (one model per platform); the options of
    ``carb fit`` as keyword arguments. Prints the latency law used and why, and stores both
    (with the benchmark's path relative to the repository) in the model's metadata."""
    import warnings

    from carb_lib.app.cli_checks import check_model_out
    from carb_lib.core.tables import read_table
    from carb_lib.dataset.schema import validate_table
    from carb_lib.ensemble import PRESETS, CARBRegressor, save_model
    from carb_lib.ensemble.latency_default import LATENCY_LAWS, LatencyLawChoice, choose_latency_law
    from carb_lib.evaluation import prepare_dataset
    from carb_lib.kernels.law import read_bench

    if latency_law not in LATENCY_LAWS:
        raise ValueError(f"--latency-law must be one of {' | '.join(LATENCY_LAWS)}, "
                         f"got {latency_law!r}")
    if latency_law == "kernel" and kernel_bench is None:
        raise ValueError("--latency-law kernel and --kernel-bench FILE go together (the kernel "
                         "law sums this platform's timed operators: carb kernels --out FILE); "
                         "--latency-law auto finds the platform's benchmark in data/")
    if latency_law == "roofline" and kernel_bench is not None:
        raise ValueError("--kernel-bench FILE is read by --latency-law kernel (or auto) only, "
                         "not by --latency-law roofline")
    if cache_probe is not None and kernel_bench is None:
        raise ValueError("--cache-probe FILE needs --latency-law kernel and --kernel-bench FILE")
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    backup = check_model_out(out, force, inputs=[("--data", data), ("--kernel-bench", kernel_bench),
                                                  ("--cache-probe", cache_probe)])
    # the one validator: configs by their family, costs of ok rows > 0, one row per config
    raw = validate_table(read_table(data, "--data"), complete=False, what=f"--data {data}",
                         unique=True)  # fmt: skip
    ok = raw[raw["status"].astype(str).eq("ok")] if "status" in raw.columns else raw
    if platform is None and "platform" in raw.columns:
        plats = sorted(ok["platform"].dropna().astype(str).unique())
        if len(plats) > 1:
            raise ValueError(f"{data} holds several platforms {plats}: choose one with --platform")
    df = prepare_dataset(raw, platform)
    if feature_set == "shared":  # the family-agnostic extras are not stored by older campaigns
        from carb_lib.core.vocab import EXTRA_STATIC_FEATURES
        from carb_lib.dataset.features import fill_static_features

        df = fill_static_features(df, EXTRA_STATIC_FEATURES)
    plat = platform
    if plat is None and "platform" in df.columns and df["platform"].notna().any():
        plat = str(df["platform"].dropna().iloc[0])
    rows = ok if plat is None or "platform" not in ok.columns \
        else ok[ok["platform"].astype(str).eq(plat)]
    if latency_law == "roofline":
        choice = LatencyLawChoice("roofline", "--latency-law roofline")
    elif plat is None:
        choice = LatencyLawChoice("roofline", f"{data} names no platform: no operator benchmark "
                                  "to look up in data/: roofline law")
    else:
        choice = choose_latency_law(rows, plat, campaign=Path(data).name.split(".")[0],
                                    kernel_bench=kernel_bench, cache_probe=cache_probe)
    params = dict(PRESETS["quick"]) if quick else {**PRESETS[preset], "n_jobs": n_jobs}
    if choice.law == "kernel":  # read and checked before the choice is said: bad input, one line
        probe = None
        if choice.cache_probe is not None:
            from carb_lib.kernels.cache_probe import cache_knee

            probe = read_table(choice.cache_probe, "--cache-probe")
            cache_knee(probe)
        params.update(latency_law="kernel", kernel_bench=read_bench(choice.kernel_bench),
                      kernel_cache_probe=probe)
    echo(f"latency law {choice.law}: {choice.reason}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = CARBRegressor(feature_set=feature_set, **params).fit(df)
    for w in caught:
        (warn or echo)(f"warning: {w.message}")
    save_model(model, out, backup=backup, extra=choice.metadata())
    echo(
        f"wrote {out} (+ {out.name}.json): platform {model.platform_}, targets {model.targets_}, "
        f"skipped {model.skipped_targets_}, {model.n_train_} rows, feature set {model.feature_set}, "
        f"preset {'quick' if quick else preset}, latency law {choice.law}"
    )
