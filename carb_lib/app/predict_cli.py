"""The bodies of ``carb predict``, ``carb screen`` and ``carb transfer`` (:mod:`carb_lib.app.cli`
keeps only their options): each takes the command's options as keyword arguments and prints
through ``echo``. ``--calibrate`` (predict, screen) times a handful of reference configs on this
host first and scales the latency predictions by the host factor
(:mod:`carb_lib.transfer.calibration`); ``carb transfer --kernels`` predicts a new CPU from its operator
benchmark (the zero-shot route of :mod:`carb_lib.transfer.cpus`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from carb_lib.app.cli_checks import check_coverage, module_configs_capped
from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, coverage_value

__all__ = ["run_predict", "run_screen", "run_transfer"]


def _calibrated(model: Any, calibrate: bool, budget_s: float, echo) -> Any:
    """``model`` itself, or wrapped with the host factor timed now (said in one line)."""
    if not calibrate:
        return model
    from carb_lib.transfer.calibration import CalibratedModel, calibrate_model

    if not 0 < budget_s <= 600:
        raise ValueError(f"--calibrate-budget-s must be in (0, 600] seconds, got {budget_s}")
    cal = calibrate_model(model, budget_s=budget_s, warn=echo)
    echo(f"calibration: {cal.reason}")
    return CalibratedModel(model, cal)


def run_screen(opts: Any, *, echo=typer.echo) -> None:
    """The body of ``carb screen``: ``opts`` is its options object
    (:data:`carb_lib.app.cli.ScreenOptions`, as the command line parses them)."""
    from carb_lib import screening as scr
    from carb_lib.ensemble import load_model

    inputs = [("--model", opts.model), ("--model-b", opts.model_b), ("--measured", opts.measured)]
    if opts.candidates not in ("grid", "extended", "extended-dense"):
        inputs.append(("--candidates", Path(opts.candidates)))
    if opts.validate and not re.fullmatch(r"auto|cpu|cuda(:\d+)?", str(opts.device)):
        raise ValueError(f"--device {opts.device}: not a device --validate can measure on; use "
                         "auto, cpu, cuda or cuda:N")
    backup = scr.check_shortlist_outs(  # the output rule for the shortlist and its companions
        opts.out, opts.force, "carb screen", inputs=inputs,
        extra=[opts.out.with_name(f"{opts.out.stem}_hardware.csv")] if opts.validate else [])
    if opts.fig_dir is not None:  # figures/ of the checkout is the study's (carb reproduce); a
        from carb_lib.core.safe_io import check_folder  # folder it can write, before the set

        check_folder(opts.fig_dir, "--fig-dir", command="carb screen", create=False)
    if opts.rank_by is not None and opts.model_b is None:
        raise ValueError("--rank-by ranks --model's predictions for --model-b (cross-platform "
                         "screening); give --model-b or leave --rank-by out")
    if opts.rank_by is not None and opts.rank_by != "pareto" and opts.rank_by not in scr.BUDGET_METRICS:
        raise ValueError(f"--rank-by {opts.rank_by!r}: one of {list(scr.BUDGET_METRICS)} or 'pareto'")
    # read before anything is screened or written: a bad --measured is its own line
    held_out = (scr.load_candidates(opts.measured, what="--measured") if opts.measured is not None
                else None)

    if opts.cluster is not None:
        from carb_lib.distributed import parse_cluster_spec, require_dask

        parse_cluster_spec(opts.cluster)
        if opts.model_b is not None:
            raise ValueError("--cluster does not run the cross-platform variant (--model-b)")
        if opts.partition_size < 1:
            raise ValueError(f"--partition-size must be >= 1, got {opts.partition_size}")
        require_dask()
    m_first = load_model(opts.model, trust=opts.trust)
    m_deploy, m_a = ((load_model(opts.model_b, trust=opts.trust), m_first) if opts.model_b is not None
                     else (m_first, None))
    if m_a is None and opts.top_n is not None:
        raise ValueError("--top-n needs --model-b (cross-platform screening)")
    if opts.calibrate and opts.cluster is not None:
        raise ValueError("--calibrate does not run with --cluster (the workers' hosts differ)")
    from carb_lib.ensemble.routing import routed

    if opts.validate:  # checked before anything is timed or written
        from carb_lib.measure.protocol import model_protocol
        from carb_lib.transfer.calibration import require_device

        rp = model_protocol(m_deploy)
        dev = require_device(rp)
        if opts.device not in ("auto", dev) and not str(opts.device).startswith(dev):
            raise ValueError(f"--device {opts.device}: the model's rows were timed on {rp.device}; "
                             "--validate times under the rows' protocol (leave --device auto)")
    m_deploy = _calibrated(routed(m_deploy), opts.calibrate, opts.calibrate_budget_s, echo)

    check_coverage(m_deploy, opts.coverage, opts.model_b if opts.model_b is not None else opts.model)
    if m_a is not None:
        check_coverage(m_a, opts.coverage, opts.model)
    spec = scr.DeploymentSpec(
        platform=getattr(m_deploy, "platform_", None), budgets=opts.budget or [],
        objectives=opts.objective or scr.default_objectives(m_deploy), quality=opts.quality,
        use_quality=not opts.no_quality, coverage=opts.coverage, k=opts.k, shortlist_method=opts.method,
    )
    if not opts.timeout_s > 0:
        raise ValueError(f"--timeout-s must be > 0 seconds, got {opts.timeout_s}")
    cands = module_configs_capped(opts.module, opts.input_shape, opts.module_kwargs, opts.batches, opts.precisions,
                                  opts.timeout_s)
    if cands is not None and (opts.candidates != "grid" or opts.cluster is not None):
        raise ValueError("--module takes neither --candidates nor --cluster")
    if opts.cluster is None:
        if cands is None:
            cands = scr.load_candidates(opts.candidates, n_extended=opts.n_extended, seed=opts.seed)
        result = scr.screen(m_deploy, cands, spec, model_a=m_a, top_n=opts.top_n, rank_by=opts.rank_by)
    else:
        from carb_lib.distributed import open_cluster, screen_on_cluster

        with open_cluster(opts.cluster, timeout_s=opts.cluster_timeout_s) as client:
            result = screen_on_cluster(m_deploy, opts.candidates, spec, client, n_extended=opts.n_extended,
                                       seed=opts.seed, partition_size=opts.partition_size)
    # scored before anything is written: a --measured that cannot be scored writes nothing
    v = (scr.validate_against_measured(m_deploy, held_out, spec, model_a=m_a, top_n=opts.top_n)
         if opts.measured is not None else None)
    from carb_lib.measure.protocol import model_protocol

    result.extra["protocol"] = model_protocol(m_deploy).describe()
    if opts.calibrate:  # the factor and its spread go into the summary beside the shortlist
        result.extra["host_calibration"] = m_deploy.calibration_.to_dict()
    paths = result.write(opts.out, backup=backup)
    echo(result.summary_text())
    echo(f"protocol: predictions for {result.extra['protocol']}")
    echo("wrote " + ", ".join(str(p) for p in paths))
    if opts.fig_dir is not None:
        from carb_lib import plots

        fig = plots.plot_screening_front(result)
        echo("wrote " + ", ".join(map(str, plots.save_figure(fig, "screening_front",
                                                                     opts.fig_dir))))
    if v is not None:
        echo(scr.format_validation(v))
    if opts.validate:  # timed as the model's rows were (threads, heap, device), in fresh processes
        echo(f"validate: timing the shortlist under the rows' protocol: {rp.describe()}")
        table, summ = scr.validate_on_hardware(result, dev, protocol=rp)
        hw = opts.out.with_name(f"{opts.out.stem}_hardware.csv")
        from carb_lib.core.tables import write_table

        write_table(table, hw, backup=hw in backup)
        echo(scr.format_hardware(table, summ))
        echo(f"wrote {hw}")


def run_transfer(opts: Any, *, echo=typer.echo) -> None:
    """The body of ``carb transfer``: ``opts`` is its options object
    (:data:`carb_lib.app.cli.TransferOptions`, as the command line parses them)."""
    import pandas as pd

    from carb_lib.characterize.scaling_data import CONFIG_COLS
    from carb_lib.core.tables import table_format, write_table
    from carb_lib.dataset.readers import load_measurements, read_configs
    from carb_lib.transfer.pairwise import few_shot_predict

    method = opts.method  # replaced below when --kernels is given
    table_format(opts.out, "--out")
    from carb_lib.core.safe_io import check_output, table_with

    if opts.kernels is None and opts.target_samples is None:
        raise ValueError("give --target-samples FILE (k measured rows of the target) or "
                         "--kernels FILE (its operator benchmark, carb kernels), or both")
    if opts.kernels is not None and opts.target != "latency_ms":
        raise ValueError(f"--kernels predicts latency_ms from operator times, not {opts.target!r}")
    if opts.kernels is not None and len(opts.source_kernels) == 0:
        raise ValueError("--kernels needs the sources' operator benchmarks too: "
                         "--source-kernels FILE per source platform")
    backup = check_output(opts.out, "--out", inputs=[*(("--source", p) for p in opts.source),
                                                ("--target-samples", opts.target_samples),
                                                ("--kernels", opts.kernels),
                                                *(("--source-kernels", p) for p in opts.source_kernels),
                                                ("--query", opts.query)],
                          own=table_with("config_id", f"{opts.target}_pred", "method"), force=opts.force,
                          command="carb transfer")  # fmt: skip
    src = pd.concat([load_measurements(p) for p in opts.source], ignore_index=True)
    samples = None if opts.target_samples is None else load_measurements(opts.target_samples)
    if samples is not None:
        from carb_lib.dataset.schema import check_repeats

        check_repeats(samples, f"--target-samples {opts.target_samples}")
    q = read_configs(opts.query, what="--query")
    if "batch" not in q.columns:  # configs without a batch: the target samples' batch
        if samples is None:
            raise ValueError(f"--query {opts.query}: no 'batch' column (give each config's batch)")
        from carb_lib.families.space import add_config_ids

        q = add_config_ids(q.assign(batch=int(samples["batch"].iloc[0])))
    if opts.kernels is None:
        pred = few_shot_predict(src, samples, q, target=opts.target, method=method)
        platform = samples["platform"].iloc[0]
    else:
        from carb_lib.kernels.law import read_bench
        from carb_lib.transfer.cpus import kernel_transfer_predict

        tb = read_bench(opts.kernels)
        method = "zero_shot" if samples is None else method
        pred = kernel_transfer_predict(src, [read_bench(p) for p in opts.source_kernels], tb, q,
                                       target_samples=samples,
                                       method="offset" if samples is None else method)
        platform = str(tb["platform"].iloc[0])
    res = pd.DataFrame({"config_id": q["config_id"].to_numpy()})
    for c in CONFIG_COLS:
        if c in q.columns:
            res[c] = q[c].to_numpy()
    res["platform"] = platform
    res[f"{opts.target}_pred"] = pred
    res["method"] = method
    write_table(res, opts.out, "--out", backup=backup)
    echo(f"wrote {opts.out}: {len(res)} predictions of {opts.target} on "
         f"{platform} ({method}, k={0 if samples is None else len(samples)})")


def check_query_threads(df, rp, what: str) -> None:
    """A query whose ``threads`` column asks for another thread count than the model's rows were
    timed with: one line (the model predicts for its rows' protocol only)."""
    if "threads" not in df.columns or rp.device != "cpu" or rp.threads is None:
        return
    asked = sorted({int(t) for t in df["threads"].dropna()})
    other = [t for t in asked if t != rp.threads]
    if other:
        raise ValueError(f"{what}: asks for {other[0]} thread(s) but the model predicts for "
                         f"{rp.describe()} (its rows' protocol); fit a model on rows timed "
                         f"with {other[0]} thread(s)")


def prepare_query(m, df, what: str):
    """``df`` checked against ``m`` (families it can predict, static features present)."""
    import numpy as np

    from carb_lib.ensemble import STATIC_FEATURES
    from carb_lib.families import get_family

    known = getattr(m, "families_", None)
    shared = getattr(m, "feature_set", None) == "shared"  # no family encoding: any family
    transfer = getattr(m, "transfer_model_", None) is not None
    if known and not shared and not transfer:  # a family without config encoding (module)
        other = sorted(f for f in set(df["family"].astype(str)) - set(known)
                       if not get_family(f).predict_unseen)
        if other:
            first = int(np.flatnonzero(df["family"].astype(str).isin(other).to_numpy())[0])
            raise ValueError(f"{what}: row {first}: family {other[0]!r} was never "
                             f"seen by this model (trained on {known}); fit one on that family")  # fmt: skip
    need = (*STATIC_FEATURES, *(EXTRA_STATIC_FEATURES if shared or transfer else ()))
    if not all(c in df.columns for c in need):
        from carb_lib.dataset.features import with_static_features

        df = with_static_features(df)
    return df


def run_predict(opts: Any, *, echo=typer.echo) -> None:
    """The body of ``carb predict``: ``opts`` is its options object
    (:data:`carb_lib.app.cli.PredictOptions`, as the command line parses them)."""
    import pandas as pd

    from carb_lib.core.tables import table_format, write_table
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed
    from carb_lib.measure.protocol import model_protocol

    table_format(opts.out, "--out")
    coverage_value(opts.coverage, "--coverage")
    if opts.calibrate_on_query < 0:
        raise ValueError(f"--calibrate-on-query must be >= 0, got {opts.calibrate_on_query}")
    if opts.calibrate_on_query and not opts.calibrate:
        raise ValueError("--calibrate-on-query K goes with --calibrate")
    if opts.calibrate and not 0 < opts.calibrate_budget_s <= 600:
        raise ValueError(f"--calibrate-budget-s must be in (0, 600] seconds, got "
                         f"{opts.calibrate_budget_s}")
    mdf = module_query(opts.module, opts.input_shape, opts.module_kwargs, opts.batches, opts.precisions, opts.timeout_s,
                       opts.configs)
    from carb_lib.core.safe_io import check_output, table_with

    backup = check_output(opts.out, "--out", inputs=[("--model", opts.model), ("--configs", opts.configs)],
                          own=table_with("model_platform"), force=opts.force,
                          command="carb predict")  # fmt: skip
    m = load_model(opts.model, trust=opts.trust)
    rp = model_protocol(m)
    df = load_query(m, opts.configs, mdf, opts.module, ids=False)
    check_coverage(m, opts.coverage, opts.model)
    r = routed(m)
    cal = None
    if opts.calibrate:
        from carb_lib.transfer.calibration import apply_calibration, calibrate_model

        if opts.calibrate_on_query > len(df):
            raise ValueError(f"--calibrate-on-query {opts.calibrate_on_query}: the query holds only "
                             f"{len(df)} config(s)")
        cal = calibrate_model(r, budget_s=opts.calibrate_budget_s, query=df,
                              k_query=opts.calibrate_on_query, warn=echo)
        echo(f"calibration: {cal.reason}")
    pred = r.predict_interval(df, coverage=opts.coverage)
    if cal is not None:  # the factor, its spread and whether it was applied, on every row
        pred = apply_calibration(pred, cal)
    # predictions never overwrite measured columns of the input: they are named *_pred
    rename = {}
    for t in m.targets_:
        for suffix in ("", "_lo", "_hi"):
            if f"{t}{suffix}" in pred.columns:
                rename[f"{t}{suffix}"] = f"{t}_pred{suffix}"
    pred = pred.rename(columns=rename)
    pred["model_platform"] = str(m.platform_)
    pred["protocol"] = rp.describe()
    if r is not m:
        pred["predicted_by"] = pd.Series(r.transfer_rows(df), index=df.index).map(
            {False: "fitted model", True: "transfer model"}).to_numpy()
    keep = [c for c in df.columns if c not in pred.columns]
    write_table(pd.concat([df[keep], pred.set_index(df.index)], axis=1), opts.out, backup=backup)
    n_ext = int(pred["extrapolated"].sum()) if "extrapolated" in pred.columns else 0
    if r is not m:
        echo(r.served_line())
    echo(f"protocol: predictions for {rp.describe()}"
         + ("" if rp.recorded else " (assumed: the model records no protocol)"))
    echo(f"wrote {opts.out}: {len(pred)} rows, targets {m.targets_} (model platform "
         f"{m.platform_}), coverage {opts.coverage}, {n_ext} row(s) flagged extrapolated")  # fmt: skip


def module_query(module, input_shape, module_kwargs, batches, precisions, timeout_s, configs):
    """The configs of ``--module`` (None without it), built before anything else is read; one
    of ``--configs`` and ``--module`` must be given."""
    if not timeout_s > 0:
        raise ValueError(f"--timeout-s must be > 0 seconds, got {timeout_s}")
    df = module_configs_capped(module, input_shape, module_kwargs, batches, precisions, timeout_s)
    if (df is None) == (configs is None):
        raise ValueError("give --configs FILE or --module SPEC --input-shape C,H,W (one of them)")
    return df


def load_query(m, configs, df, module, *, ids: bool = True):
    """The configs of ``--configs FILE`` or of ``--module`` (``df``, :func:`module_query`),
    checked against ``m`` (with a ``config_id`` where ``ids`` and the query has none)."""
    from carb_lib.core.tables import read_table
    from carb_lib.families import DEFAULT_FAMILY
    from carb_lib.families.space import add_config_ids, validate_config_frame
    from carb_lib.measure.protocol import model_protocol

    what = f"--configs {configs}" if configs else f"--module {module}"
    if df is None:
        df = read_table(configs, "--configs").reset_index(drop=True)
    if "family" not in df.columns:
        df["family"] = DEFAULT_FAMILY
    validate_config_frame(df, what)
    if configs is not None:
        from carb_lib.families.space import check_config_ids

        check_config_ids(df, f"--configs {configs}")
    if ids and "config_id" not in df.columns:
        df = add_config_ids(df)
    check_query_threads(df, model_protocol(m), what)
    return prepare_query(m, df, what)


def run_check(opts: Any, *, echo=typer.echo) -> None:
    """The body of ``carb check``: ``opts`` is its options object
    (:data:`carb_lib.app.cli.CheckOptions`, as the command line parses them)."""
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed
    from carb_lib.measure.protocol import model_protocol
    from carb_lib.transfer.calibration import require_device
    from carb_lib.transfer.check import check_predictions

    coverage_value(opts.coverage, "--coverage")
    if opts.k < 1:
        raise ValueError(f"--k must be >= 1, got {opts.k}")
    if opts.repeat < 0:
        raise ValueError(f"--repeat must be >= 0, got {opts.repeat}")
    if not 0 < opts.budget_s <= 600:
        raise ValueError(f"--budget-s must be in (0, 600] seconds, got {opts.budget_s}")
    mdf = module_query(opts.module, opts.input_shape, opts.module_kwargs, opts.batches, opts.precisions, opts.timeout_s,
                       opts.configs)
    backup = False
    if opts.out is not None:
        from carb_lib.core.safe_io import check_output, table_with
        from carb_lib.core.tables import table_format

        table_format(opts.out, "--out")
        backup = check_output(opts.out, "--out", inputs=[("--model", opts.model), ("--configs", opts.configs)],
                              own=table_with("latency_ms_meas", "latency_ms_pred"), force=opts.force,
                              command="carb check")  # fmt: skip
    m = load_model(opts.model, trust=opts.trust)
    rp = model_protocol(m)
    if not rp.recorded:
        echo(f"warning: the model records no timing protocol; timing under the assumed one: "
             f"{rp.describe()}")
    require_device(rp)
    df = load_query(m, opts.configs, mdf, opts.module)
    if opts.k > len(df):
        raise ValueError(f"--k {opts.k} is larger than the query ({len(df)} config(s))")
    check_coverage(m, opts.coverage, opts.model)
    r = routed(m)
    if opts.calibrate:
        r = _calibrated(r, True, opts.calibrate_budget_s, echo)
    res = check_predictions(r, df, k=opts.k, budget_s=opts.budget_s, repeat=min(opts.repeat, opts.k),
                            coverage=opts.coverage)
    for line in res.lines():
        echo(line)
    if opts.out is not None:
        from carb_lib.core.tables import write_table

        write_table(res.table.assign(protocol=res.protocol), opts.out, backup=backup)
        echo(f"wrote {opts.out}")
