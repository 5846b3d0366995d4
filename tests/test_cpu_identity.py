"""One platform is one machine: the CPU's identity (``cpu_id``) is recorded in every measured
row and kernel-benchmark row, and campaigns, merges, audits and kernel benchmarks refuse to
put two CPUs under one platform name. Cloud VMs call Zen 3, Zen 4 and Zen 5 processors all
"AMD EPYC" (this project has measured all three)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from fast_protocol import FAST_SETTINGS

from carb_lib.kernels import law as kernels
from carb_lib.measure import campaign as cp
from carb_lib.measure import devices
from carb_lib.measure.profiling import Protocol

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
FAST = Protocol(threads=1, **FAST_SETTINGS)

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
"""


def test_cpu_identity_reads_the_first_processor_and_names_isa_and_cache():
    assert devices.cpu_identity(ZEN3, isa="AVX2", l3="32768K") == (
        "AuthenticAMD family 25 model 1 stepping 1 | AVX2 | L3 32768K")
    zen4 = ZEN3.replace("model\t\t: 1\n", "model\t\t: 17\n", 1)
    assert devices.cpu_identity(zen4, isa="AVX512", l3="32768K") != devices.cpu_identity(
        ZEN3, isa="AVX2", l3="32768K")
    # this machine: the same string every call, with the ISA PyTorch uses
    here = devices.cpu_identity()
    assert here == devices.cpu_identity() and torch.backends.cpu.get_cpu_capability() in here


def test_default_platform_name_carries_family_and_model(monkeypatch):
    monkeypatch.setattr(devices, "_machine_cpuinfo", lambda: devices._cpuinfo_fields(ZEN3))
    dev = devices.CpuDevice()
    dev._name = "AMD EPYC"
    assert dev.platform == f"cpu_amd_epyc_f25m1_{torch.get_num_threads()}t"
    monkeypatch.setattr(devices, "_machine_cpuinfo", lambda: {})
    assert dev.platform == f"cpu_amd_epyc_{torch.get_num_threads()}t"


def test_kernel_append_refuses_another_cpu():
    old = pd.DataFrame({"platform": ["p"] * 2, "threads": [1, 1], "torch_version": ["t"] * 2,
                        "sample_seed": [0, 0], "cpu_id": ["zen3 | AVX2", "zen3 | AVX2"]})
    kw = dict(platform="p", threads=1, seed=1, torch_version="t")
    kernels.check_append(old, cpu_id="zen3 | AVX2", **kw)
    with pytest.raises(ValueError, match=r"holds cpu_id \['zen3 \| AVX2'\]; this run's is "
                                         r"'zen4 \| AVX512'"):
        kernels.check_append(old, cpu_id="zen4 | AVX512", **kw)
    kernels.check_append(old.drop(columns="cpu_id"), cpu_id="zen4 | AVX512", **kw)  # unknown


def test_campaign_and_merge_refuse_rows_of_another_cpu(tmp_path):
    cfg = cp.sample_configs(2, seed=3, max_gflops=0.02, sample_under_cap=True)
    out = tmp_path / "parts"
    res = cp.run_campaign(cfg.iloc[:1], out, "cpu", FAST, platform="p_cpu", ref_every=0,
                          progress=False)
    assert res.counts["ok"] == 1
    (part,) = sorted(out.glob("results-*.parquet"))
    rows = pd.read_parquet(part)
    assert rows["cpu_id"].tolist() == [devices.cpu_identity()]
    # the same folder, as if another machine had measured the first row
    other = rows.assign(cpu_id="AuthenticAMD family 26 model 2 | AVX512 | L3 32768K")
    other.to_parquet(part, index=False)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ValueError, match="measured on another CPU"):
        cp.run_campaign(cfg.iloc[1:], out, "cpu", FAST, platform="p_cpu", ref_every=0,
                        progress=False)
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written
    # another platform name in the same folder is a different machine by name: allowed
    res = cp.run_campaign(cfg.iloc[1:], out, "cpu", FAST, platform="p_cpu_here", ref_every=0,
                          progress=False)
    assert res.counts["ok"] == 1
    merged = cp.merge_parts(out, None, allow_mixed_platforms=True)
    assert merged.groupby("platform")["cpu_id"].nunique().tolist() == [1, 1]
    # one platform, two CPUs: refused by the merge, nothing written
    here = pd.read_parquet(sorted(out.glob("results-*.parquet"))[-1])
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    other.to_parquet(mixed / "results-a-000000.parquet", index=False)
    here.assign(platform="p_cpu").to_parquet(mixed / "results-b-000000.parquet", index=False)
    target = tmp_path / "p_cpu.parquet"
    with pytest.raises(ValueError, match=r"platform 'p_cpu' holds rows of 2 different CPUs"):
        cp.merge_parts(mixed, target)
    assert not target.exists()


def test_cli_kernels_append_records_the_cpu_and_notes_rows_without_one(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    out = tmp_path / "b.parquet"
    base = ["kernels", "--out", str(out), "--no-progress", "--platform", "test_cpu", "--n", "2",
            "--no-anchors", "--no-cache-probe"]
    runner = CliRunner()
    assert runner.invoke(app, base).exit_code == 0
    assert kernels.read_bench(out)["cpu_id"].tolist() == [devices.cpu_identity()] * 2
    r = runner.invoke(app, [*base, "--seed", "1", "--append"])
    assert r.exit_code == 0 and "carry no cpu_id" not in r.output
    kernels.read_bench(out).drop(columns="cpu_id").to_parquet(out, index=False)  # older rows
    r = runner.invoke(app, [*base, "--seed", "2", "--append"])
    assert r.exit_code == 0 and "carry no cpu_id (timed before it was recorded)" in r.output
    b = kernels.read_bench(out)
    assert b["cpu_id"].isna().sum() == 4 and (b["cpu_id"] == devices.cpu_identity()).sum() == 2


def test_audit_refuses_a_dataset_of_another_cpu(tmp_path):
    from carb_lib.dataset.schema import read_dataset
    from carb_lib.measure.audit import audit

    rows = read_dataset(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet").head(3)
    other = rows.assign(cpu_id="AuthenticAMD family 26 model 2 | AVX512 | L3 32768K")
    with pytest.raises(ValueError, match=r"the dataset was measured on another CPU \(cpu_id "
                                         r"\['AuthenticAMD family 26 model 2"):
        audit(other, n=2, progress=False)
