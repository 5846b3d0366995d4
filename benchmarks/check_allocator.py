"""Check the allocator model against every measured CPU row, and time it (GPU rows are left out:
the CUDA caching allocator is not what the model describes).

For every file of measured network rows under ``data/`` (:func:`measured_files`, by glob;
``status == ok`` rows): the analytic features
``alloc_peak_bytes`` / ``alloc_peak_bytes_b16`` (:mod:`carb_lib.families._alloc`) against the
measured ``peak_mem_mib`` (rows within 1 byte, largest relative error), beside the former byte
estimate ``param_bytes + peak_act_bytes``; and the meta-device simulation
(:func:`carb_lib.families.allocator.simulate_peak`) on a seeded sample of rows. Writes
``results/benchmarks/allocator_check.csv`` (one row per dataset),
``results/benchmarks/allocator_exact_by_precision.csv`` (the same rows summed per platform and
precision: :func:`by_precision`, with the distinct (platform, config) pairs beside them, a
config re-measured in several files counted once: :func:`distinct_pairs`) and
``results/benchmarks/allocator_speed.csv`` (static features of 1M extended-space configs and
of 100k configs per new family, cold caches, median of ``--repeats``). Both of the model's
oneDNN channel blocks are checked (8 on AVX2, 16 on AVX-512: ``exact_rows_block8/16``), and
the variant of AVX512-FP16 CPUs whose oneDNN runs fp16 convs (``exact_rows_block16+fp16``); the
headline columns use the block that the memory base law learns from the dataset's rows
(``law_block``), and the meta simulation runs with it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

#: Folders under ``data/`` whose files hold no measured network rows of our own: operators timed
#: alone (``kernels/``) and another project's latencies (``external/``).
NOT_NETWORK_ROWS = ("external", "kernels")
#: Columns a file needs for the check (its measured peak memory and each row's config).
NEEDED = ("status", "peak_mem_mib", "family", "precision", "batch")


def is_gpu_file(path: str | Path) -> bool:
    """The file's rows were measured on a CUDA device (a ``cuda`` version recorded): the CUDA
    caching allocator, which the CPU allocator model does not describe."""
    import pyarrow.parquet as pq

    if "cuda" not in pq.read_schema(path).names:
        return False
    return bool(pd.read_parquet(path, columns=["cuda"])["cuda"].notna().any())


def measured_files(data_dir: str | Path = "data") -> list[Path]:
    """Every parquet file under ``data_dir`` with measured CPU network rows, by glob (no hand
    list): the campaigns' files and the re-measurements beside them (reference, audit, pass,
    noise rows), skipping :data:`NOT_NETWORK_ROWS`, files that lack a column of :data:`NEEDED`
    and GPU files (:func:`is_gpu_file`)."""
    import pyarrow.parquet as pq

    data_dir = Path(data_dir)
    out = []
    for f in sorted(data_dir.rglob("*.parquet")):
        if f.relative_to(data_dir).parts[0] in NOT_NETWORK_ROWS:
            continue
        if set(NEEDED) <= set(pq.read_schema(f).names) and not is_gpu_file(f):
            out.append(f)
    return out


def _simulate_row(row: pd.Series, block: int = 8) -> int:
    """:func:`carb_lib.families.allocator.simulate_peak` of one dataset row's network (bytes)."""
    import torch

    from carb_lib.families import get_family
    from carb_lib.families.allocator import simulate_peak

    fam = get_family(row["family"])
    cfg = fam.from_row(row.to_dict())
    if hasattr(cfg, "module"):  # a user module: built on meta by the family's own path (some
        # factories compute with tensors and fail under torch.device("meta")), its input shape
        from carb_lib.families.module import build_from_spec

        model = build_from_spec(cfg.module, cfg.module_kwargs, meta=True)
        shape = (cfg.batch, *cfg.input_shape)
    else:
        with torch.device("meta"):
            model = fam.build_model(cfg)
        shape = (cfg.batch, 3, cfg.resolution, cfg.resolution)
    return simulate_peak(model, shape, precision=cfg.precision, block=block).peak_bytes


def check(path: Path, n_sim: int, seed: int, rows_out: list | None = None) -> dict:
    """The check of one file (one row of ``allocator_check.csv``); with ``rows_out``, its rows'
    ``platform``, ``config_id``, ``precision`` and ``exact`` (the learned variant's peak within
    1 byte) are appended to it as one frame (:func:`distinct_pairs`)."""
    from carb_lib.core.vocab import ALLOC_FEATURES
    from carb_lib.dataset.features import static_features
    from carb_lib.ensemble.base_models import fit_base_law

    df = pd.read_parquet(path)
    df = df[df["status"] == "ok"].reset_index(drop=True)
    meas = df["peak_mem_mib"].to_numpy(dtype=float) * 2**20
    feats = static_features(df)
    # rows stored without their static features (version 1, noise rows): the base law reads them
    df = df.assign(**{c: feats[c].to_numpy() for c in feats.columns if c not in df.columns})
    exact = {b: np.abs(feats[c].to_numpy() - meas) <= 1 for b, c in ALLOC_FEATURES.items()}
    # the block the memory law learns from these rows (the CPU's oneDNN channel block)
    law = fit_base_law(df.assign(**{c: feats[c].to_numpy() for c in ALLOC_FEATURES.values()}),
                       "peak_mem_mib")
    block = law.alloc_block
    pred = feats[ALLOC_FEATURES[block]].to_numpy()
    old = (feats["param_bytes"] + feats["peak_act_bytes"]).to_numpy(dtype=float)
    rel = np.abs(pred / meas - 1)
    if rows_out is not None:
        rows_out.append(pd.DataFrame({"platform": df["platform"].astype(str).to_numpy(),
                                      "config_id": df["config_id"].astype(str).to_numpy(),
                                      "precision": df["precision"].astype(str).to_numpy(),
                                      "exact": exact[block]}))
    sample = df.sample(min(n_sim, len(df)), random_state=seed)
    t0 = time.perf_counter()
    exact_sim = sum(abs(_simulate_row(row, block) - row["peak_mem_mib"] * 2**20) <= 1
                    for _, row in sample.iterrows())
    sim_s = (time.perf_counter() - t0) / max(len(sample), 1)
    host = df["host"].dropna().iloc[0] if "host" in df.columns and df["host"].notna().any() else ""
    return {
        "dataset": str(path), "rows": len(df),
        "platform": ",".join(sorted(df["platform"].astype(str).unique())),
        **{f"{k}_{prec}": int(v[(df["precision"] == prec).to_numpy()].sum())
           for prec in ("fp32", "fp16")
           for k, v in (("rows", np.ones(len(df), bool)), ("exact", exact[block]))},
        **{f"max_rel_err_pct_{prec}": float(100 * rel[m].max()) if m.any() else float("nan")
           for prec in ("fp32", "fp16")
           for m in [(df["precision"] == prec).to_numpy()]},
        "families": ",".join(sorted(df["family"].unique())),
        "torch": ",".join(sorted(df["torch_version"].dropna().astype(str).unique()))
        if "torch_version" in df.columns else "",
        "host": host,
        "law_block": block,
        "exact_rows": int(exact[block].sum()),
        "exact_share": float(exact[block].mean()),
        **{f"exact_rows_block{b}": int(e.sum()) for b, e in exact.items()},
        "fp16_rows": int((df["precision"] == "fp16").sum()),
        "max_rel_err_pct": float(100 * rel.max()),
        "mape_pct": float(100 * rel.mean()),
        "bytes_estimate_mape_pct": float(100 * np.mean(np.abs(old / meas - 1))),
        "sim_rows": len(sample), "sim_exact_rows": int(exact_sim),
        "sim_s_per_row": sim_s,
    }


PRECISIONS = ("fp32", "fp16")


def by_precision(table: pd.DataFrame) -> pd.DataFrame:
    """The per-file check (:func:`check` rows) summed per platform and precision: ``files``
    (files with rows of that precision), ``rows``, ``exact_rows``, ``exact_share`` and the
    largest relative error of a row (``max_rel_err_pct``)."""
    out = []
    for plat, g in table.groupby("platform", sort=True):
        for prec in PRECISIONS:
            rows = g[f"rows_{prec}"].astype(int)
            if rows.sum() == 0:
                continue
            exact = int(g[f"exact_{prec}"].sum())
            out.append({"platform": plat, "precision": prec, "files": int((rows > 0).sum()),
                        "rows": int(rows.sum()), "exact_rows": exact,
                        "exact_share": exact / int(rows.sum()),
                        "max_rel_err_pct": float(g[f"max_rel_err_pct_{prec}"].max())})
    return pd.DataFrame(out, columns=["platform", "precision", "files", "rows", "exact_rows",
                                      "exact_share", "max_rel_err_pct"])


def distinct_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """Distinct (platform, config) pairs per platform and precision over the rows of every
    file (a config re-measured in reference, audit or noise files counts once): ``pairs`` and
    ``exact_pairs`` (every row of the pair exact to the byte)."""
    per = rows.groupby(["platform", "precision", "config_id"], sort=True)["exact"].all()
    g = per.groupby(level=["platform", "precision"])
    return pd.DataFrame({"pairs": g.size(), "exact_pairs": g.sum().astype(int)}).reset_index()


def with_pairs(prec: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`by_precision`'s table with the :func:`distinct_pairs` columns beside it."""
    return prec.merge(distinct_pairs(rows), on=["platform", "precision"], how="left")


def speed(repeats: int) -> pd.DataFrame:
    import importlib

    from carb_lib.dataset import features
    from carb_lib.families import _alloc
    from carb_lib.families.space import extended_sample

    cases = [("resnet (extended space)", extended_sample(1_000_000, seed=0), "resnet")]
    for name in ("mobilenetv2", "vgg", "efficientnet"):
        mod = importlib.import_module(f"carb_lib.families.{name}")
        base = mod.sample_configs(100_000 // 18 + 1, seed=0)
        rng = np.random.default_rng(0)
        df = base.loc[base.index.repeat(18)].reset_index(drop=True).iloc[:100_000]
        df = df.assign(batch=rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256], len(df)),
                       precision=rng.choice(["fp32", "fp16"], len(df)))
        cases.append((name, df, name))
    rows = []
    for label, df, fam in cases:
        times = []
        mod = importlib.import_module(f"carb_lib.families.{fam}")
        unit = getattr(mod, "_resnet_unit", None) or mod._unit
        for _ in range(repeats):
            unit.cache_clear()
            _alloc.clear_cache()
            t0 = time.perf_counter()
            features.static_features(df)
            times.append(time.perf_counter() - t0)
        med = float(np.median(times))
        rows.append({"configs": label, "n_configs": len(df), "median_s": med,
                     "configs_per_s": len(df) / med, "repeats": repeats})
        print(f"{label:>24}: {len(df):,} configs in {med:.2f} s (median of {repeats})")
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sim", type=int, default=200, help="rows simulated on meta per dataset")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--out-dir", type=Path, default=Path("results/benchmarks"))
    ap.add_argument("--data-dir", type=Path, default=Path("data"),
                    help="every measured file under it is checked (glob)")
    args = ap.parse_args()
    rows, row_frames = [], []
    for p in measured_files(args.data_dir):
        r = check(p, args.n_sim, args.seed, rows_out=row_frames)
        rows.append(r)
        print(f"{p}: {r['exact_rows']:,}/{r['rows']:,} rows exact to the byte "
              f"(max error {r['max_rel_err_pct']:.3g} %; byte estimate MAPE "
              f"{r['bytes_estimate_mape_pct']:.2f} %); meta simulation "
              f"{r['sim_exact_rows']}/{r['sim_rows']} exact, {r['sim_s_per_row']:.3f} s/row; "
              f"learned variant {r['law_block']} (exact rows with 8 / 16 / 16+fp16: "
              f"{r['exact_rows_block8']:,} / {r['exact_rows_block16']:,} / "
              f"{r['exact_rows_block16+fp16']:,})")
    table = pd.DataFrame(rows)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out_dir / "allocator_check.csv", index=False)
    prec = with_pairs(by_precision(table), pd.concat(row_frames, ignore_index=True))
    prec.to_csv(args.out_dir / "allocator_exact_by_precision.csv", index=False)
    print(f"\n{len(table)} files, {table['rows'].sum():,} ok rows; exact to the byte by platform "
          "and precision (files, rows exact / rows, share, largest relative error of a row):")
    for _, r in prec.iterrows():
        print(f"  {r['platform']:>18} {r['precision']}: {r['files']} files, "
              f"{r['exact_rows']:,}/{r['rows']:,} ({100 * r['exact_share']:.2f} %), "
              f"max error {r['max_rel_err_pct']:.3g} %")
    print(f"  {'all':>18}: {table['exact_rows'].sum():,}/{table['rows'].sum():,} rows, "
          f"{prec['exact_pairs'].sum():,}/{prec['pairs'].sum():,} distinct (platform, config) "
          "pairs")
    if not args.skip_speed:
        speed(args.repeats).to_csv(args.out_dir / "allocator_speed.csv", index=False)


if __name__ == "__main__":
    main()
