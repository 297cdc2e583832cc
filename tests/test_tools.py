"""The scripts in tools/ run on the GPU machine, where an import that no longer resolves costs a
device call: every fa3lite module and name they import exists (checked statically, on the CPU,
without running the scripts, some of which need a GPU or arguments at import)."""
import ast
import hashlib
import importlib
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = sorted((ROOT / "tools").glob("*.py"))


def _fa3lite_imports(path):
    """(module, name or None) for every absolute import of fa3lite in a script."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "fa3lite":
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fa3lite":
                    yield alias.name, None


@pytest.mark.parametrize("path", TOOLS, ids=lambda p: p.name)
def test_tool_imports_resolve(path):
    for module, name in _fa3lite_imports(path):
        mod = importlib.import_module(module)
        if name is not None:
            assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None, \
                f"{path.name}: `from {module} import {name}`: {module} has no {name}"


def test_the_check_sees_the_imports():
    assert any(_fa3lite_imports(ROOT / "tools" / "sanitize_grid.py"))


def test_varlen_ab_times_the_bench_batch():
    """tools/varlen_ab.py pins the bench's varlen batch (so old trees without the helper can be timed);
    the pin must stay the batch the bench draws."""
    from fa3lite.bench.feature_cases import varlen_lengths
    spec = importlib.util.spec_from_file_location("varlen_ab", ROOT / "tools" / "varlen_ab.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.LENGTHS == varlen_lengths(16384)


def test_traced_builds_compile():
    # tools/trace_probe.py rebuilds the kernels with FA3LITE_TRACE (event marks and counted mbarrier
    # waits, trace.cuh): those builds must still compile and hold the tables the tool reads
    import dataclasses

    from fa3lite import variants
    from fa3lite.hopper import bwd as hopper_bwd
    from fa3lite.runtime import cache

    for variant in (variants.FwdVariant(64, "bf16", True), hopper_bwd.BwdVariant(64, "bf16", False),
                    hopper_bwd.BwdVariant(256, "bf16", True)):
        spec = variant.spec()
        cubin = cache.get(dataclasses.replace(spec, defines=spec.defines + (("FA3LITE_TRACE", "1"),))).cubin
        for table in (b"fa3lite_trace", b"fa3lite_waits"):
            assert table in cubin, (variant, table)


def test_ab_summary_groups_by_each_tools_own_fields(tmp_path, capsys):
    """tools/ab_summary.py: a cell is a row's scalar fields but tag and timings, whatever tool wrote it
    (ab_time's scalar tflops, gqa_probe's and varlen_ab's lists); each tag's ratio to the first."""
    spec = importlib.util.spec_from_file_location("ab_summary", ROOT / "tools" / "ab_summary.py")
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    rows = [{"tag": "before", "d": 64, "hk": 8, "ms": [2.0, 2.0], "tflops": [100.0, 110.0]},
            {"tag": "after", "d": 64, "hk": 8, "ms": [1.0, 1.0], "tflops": [210.0, 210.0]},
            {"tag": "before", "d": 64, "hk": 32, "ms": [1.0], "tflops": [300.0]},
            {"tag": "after", "d": 64, "hk": 32, "ms": [1.0], "tflops": [150.0]},
            {"tag": "before", "mode": "bwd", "S": 1024, "tflops": 50.0},
            {"tag": "before", "lengths": "5,7", "kind": "varlen", "tflops": [40.0, 44.0]},
            {"tag": "after", "lengths": "5,7", "kind": "varlen", "tflops": [42.0]}]
    path = tmp_path / "ab.jsonl"
    path.write_text("not json\n" + "\n".join(json.dumps(r) for r in rows) + "\n")
    summary.main(str(path), ["before", "after"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert any(line.startswith("d=64 hk=8:") and "after   210.0 (2.000)" in line for line in lines)
    assert any(line.startswith("d=64 hk=32:") and "after   150.0 (0.500)" in line for line in lines)
    assert any(line.startswith("mode=bwd S=1024:") and "before    50.0 (1.000)" in line for line in lines)
    assert any(line.startswith("lengths=5,7 kind=varlen:") and "after    42.0 (1.000)" in line for line in lines)


def _load_tool(name):
    """tools/<name>.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def _ncu_stalls():
    return _load_tool("ncu_stalls")


def test_best_peer_ratios_takes_the_better_peer_per_cell(tmp_path):
    """tools/best_peer_ratios.py: fa3lite over the faster of cuDNN and FA4 in each cell, the
    deterministic backward over the default one, failed rows ignored, the cells at >= 1.05 counted."""
    import csv

    path = tmp_path / "results.csv"
    rows = [("fa3lite", "fwd", 128, "full", 1024, "ok", 530.0), ("cudnn", "fwd", 128, "full", 1024, "ok", 500.0),
            ("fa4", "fwd", 128, "full", 1024, "ok", 520.0), ("fa3lite", "fwd", 128, "full", 4096, "ok", 600.0),
            ("cudnn", "fwd", 128, "full", 4096, "ok", 560.0), ("fa4", "fwd", 128, "full", 4096, "error", 900.0),
            ("fa3lite", "bwd", 64, "causal", 1024, "ok", 300.0), ("fa3lite_det", "bwd", 64, "causal", 1024, "ok", 270.0),
            ("cudnn", "bwd", 64, "causal", 1024, "ok", 310.0), ("fa4", "bwd", 64, "causal", 1024, "ok", 250.0)]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["impl", "head_dim", "mask", "seqlen", "mode", "status", "tflops"])
        for impl, mode, d, mask, seqlen, status, tflops in rows:
            w.writerow([impl, d, mask, seqlen, mode, status, tflops])
    assert _load_tool("best_peer_ratios").lines(path) == [
        "fwd 128 full 1.019 (530/520 FA4) | 1.071 (600/560 cuDNN)",
        "bwd 64 causal 0.968 (300/310 cuDNN) det 0.900",
        "cells >= 1.05: {'fwd': 1, 'bwd': 0} of {'fwd': 2, 'bwd': 1}",
    ]


def test_fa4_sass_finds_the_consumer_loop_in_both_listings():
    """tools/fa4_sass.py: the shortest guarded backward branch around >= 8 wgmma is the loop, whether
    the target is an address (cuobjdump) or a label (CuTe DSL); an mbarrier retry and a stub's
    unconditional return are not loops."""
    tool = _load_tool("fa4_sass")
    hgmma = "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;"
    body = "".join(f"        /*{0x100 + 16 * i:04x}*/  {hgmma}\n" for i in range(8))
    cute = (".L_x_1:\n" + body +
            "        /*0180*/  FADD R1, R2, R3 ;\n"
            "        /*0190*/  SYNCS.PHASECHK.TRANS64 P0, [UR4], R0 ;\n"
            "        /*01a0*/  @!P0 BRA `(.L_x_1) ;\n"      # a retry: not the loop
            "        /*01b0*/  @P1 BRA `(.L_x_1) ;\n"
            "        /*01c0*/  BRA `(.L_x_1) ;\n")          # a stub's return: not the loop
    loop = tool.consumer_loop(tool.parse(cute))
    assert len(loop) == 12 and loop[-1] == "BRA `(.L_x_1)" and sum(op.startswith("HGMMA") for op in loop) == 8
    objdump = body + "        /*0180*/  @P0 BRA 0x100 ;\n        /*0190*/  EXIT ;\n"
    assert [tool.opcode(t) for t in tool.consumer_loop(tool.parse(objdump))] == ["HGMMA.64x128x16.F32.BF16"] * 8 + ["BRA"]
    assert tool.consumer_loop(tool.parse(body)) == []
    assert tool.folded(["A", "A", "B", "A"]) == "A x2, B, A"


def test_ncu_stalls_reads_a_source_page(tmp_path):
    """tools/ncu_stalls.py: shares of the samples, the three largest stall reasons, small instructions
    left out unless they are sync points (a barrier with no samples still shows)."""
    import csv
    import gzip

    path = tmp_path / "page.csv.gz"
    with gzip.open(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel fa3lite_bwd"])
        w.writerow(["Address", "Source", "# Samples", "Instructions Executed", "stall_wait", "stall_mio_throttle",
                    "stall_long_sb", "stall_wait (Not Issued)"])
        w.writerow(["0x10", "FFMA R1, R2, R3, R4", "900", "40", "500", "300", "100", "999"])
        w.writerow(["0x20", "IADD3 R5, R5, 0x1, RZ", "1", "10", "1", "0", "0", "0"])
        w.writerow(["0x30", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x100", "0", "2", "0", "0", "0", "0"])
        w.writerow(["0x40", "MUFU.EX2 R6, R7", "99", "8", "0", "90", "9", "0"])
        w.writerow(["0x50", "@!P0 FFMA R8, R2, R3, R4", "0", "40", "0", "0", "0", "0"])
    tool = _ncu_stalls()
    header, rows = tool.read(path)
    out = tool.lines(header, rows, min_fraction=0.01)
    assert out[0] == "total samples 1000"
    assert out[1].split()[:2] == ["0", "90.00%"] and out[1].endswith("wait:500 mio_throttle:300 long_sb:100")
    assert [line.split()[0] for line in out[1:]] == ["0", "2", "3"]   # the IADD3 (0.1%) left out
    assert out[3].endswith("mio_throttle:90 long_sb:9")
    assert [line.split()[0] for line in tool.lines(header, rows, first=2, last=3, min_fraction=0.01)[1:]] == ["2"]
    mix = tool.opcode_lines(header, rows)   # the predicated FFMA counts as an FFMA
    assert mix[0] == "instructions executed 100, samples 1000"
    assert mix[1].split()[:3] == ["FFMA", "80", "80.00%"] and mix[1].endswith("90.00% of samples")
    assert [line.split()[0] for line in mix[1:]] == ["FFMA", "IADD3", "MUFU.EX2", "BAR.SYNC.DEFER_BLOCKING"]


def test_ncu_stalls_reads_a_real_export():
    """The format ncu wrote on the device (session 41's D = 64 backward, full mask, 4k)."""
    tool = _ncu_stalls()
    path = ROOT / "benchmarks" / "nvidia-h100-x1-2026-11-27" / "session41" / "ncu_round2" / "d64_s4096_c0.csv.gz"
    header, rows = tool.read(path)
    out = tool.lines(header, rows)
    assert int(out[0].split()[-1]) > 0 and any("HGMMA" in line for line in out[1:])


def _fake_peers(repo: pathlib.Path, big_a: int, big_b: int, other: int) -> bytes:
    """A git repo holding what ../shared/tools/stage-fa4.sh leaves: the big wheel split in two
    (.peers/a, .peers/b), another wheel and install.sh with the lines stage_fa4_parts.sh reads.
    Returns the big wheel's bytes."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src.txt").write_text("x" * 1000)
    (repo / ".git" / "info" / "exclude").write_text("/.peers/\n")
    a, b = os.urandom(big_a), os.urandom(big_b)
    for folder, name, data in (("a", "big.part.aa", a), ("b", "big.part.ab", b), ("b", "other.whl", os.urandom(other))):
        (repo / ".peers" / folder).mkdir(parents=True, exist_ok=True)
        (repo / ".peers" / folder / name).write_bytes(data)
    digest = hashlib.sha256(a + b).hexdigest()
    (repo / ".peers" / "b" / "install.sh").write_text(
        "cat /root/peers/big.part.aa .peers/b/big.part.ab > /tmp/big-1.0-py3-none-any.whl\n"
        f'echo "{digest}  /tmp/big-1.0-py3-none-any.whl" | sha256sum -c --quiet || return 1\n')
    return a + b


@pytest.mark.parametrize("part, other, own_part", [(2_000_000, 900_000, False), (1_500_000, 1_200_000, True)])
def test_stage_fa4_parts_split(tmp_path, part, other, own_part):
    """tools/stage_fa4_parts.sh: the parts rejoin into the wheel, none exceeds PART_BYTES, and the other
    wheels ride with the last chunk or, where they would not fit there, in a part of their own whose
    install.sh then joins only what earlier calls left in /root/peers."""
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    repo = tmp_path / "repo"
    wheel = _fake_peers(repo, 3_000_000, 2_000_000, other)
    subprocess.run(["bash", str(ROOT / "tools" / "stage_fa4_parts.sh")], cwd=repo, check=True,
                   env=dict(os.environ, PART_BYTES=str(part)), capture_output=True)
    parts = sorted((repo / ".peers").glob("p[0-9]*"), key=lambda p: int(p.name[1:]))
    chunks = [c for p in parts for c in sorted(p.glob("big.*"))]
    assert b"".join(c.read_bytes() for c in chunks) == wheel
    for p in parts:
        assert sum(f.stat().st_size for f in p.iterdir() if f.name != "install.sh") <= part, p.name
    last = parts[-1]
    assert (last / "other.whl").exists() and (last / "install.sh").exists()
    assert not list(last.glob("big.*")) if own_part else list(last.glob("big.*"))
    join = (last / "install.sh").read_text().splitlines()[1]
    assert join.startswith("cat /root/peers/big.* ") and (f".peers/{last.name}/big.*" in join) != own_part


def test_stage_fa4_parts_default_fits_the_carry_limit(tmp_path):
    """Without PART_BYTES a part is what the tree leaves of the 64 MiB carry limit, less a margin: with a
    small tree the whole fake wheel fits one part."""
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    repo = tmp_path / "repo"
    _fake_peers(repo, 1_000_000, 1_000_000, 100_000)
    subprocess.run(["bash", str(ROOT / "tools" / "stage_fa4_parts.sh")], cwd=repo, check=True, capture_output=True)
    assert [p.name for p in (repo / ".peers").glob("p[0-9]*")] == ["p1"]


def test_timeline_round_runs_each_tree_in_order(tmp_path):
    """tools/timeline_round.sh: per cell, every tree in the listed order (a repeated tag runs again), each
    from its own root with its own PYTHONPATH and compile cache; each run appended to its tag's file
    and its whole-call and kernel lines echoed (a fake python3 stands in for tools/call_timeline.py)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/bash\necho "root $PWD path $PYTHONPATH cache $FA3LITE_CACHE_DIR args $*"\n'
                                  'echo "cold: 557.4 us a call"\necho "   20 x  449.1 us  fa3lite_bwd"\n')
    (fake / "python3").chmod(0o755)
    old = tmp_path / "old"
    old.mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "OUT": str(out)}
    run = subprocess.run(["bash", str(ROOT / "tools" / "timeline_round.sh"), f"old={old} new=. old={old}",
                          "64 1024 1", "128 4096 0"], capture_output=True, text=True, env=env, check=True)
    lines = run.stdout.splitlines()
    assert [line.split()[:4] for line in lines] == [[tag, *cell.split()] for cell in ("64 1024 1", "128 4096 0")
                                                    for tag in ("old", "new", "old")]
    assert all("rc=0" in line and "a call" in line and "fa3lite_bwd" in line for line in lines)
    text = (out / "timeline_old_64_1024_1.txt").read_text()
    assert text.count(f"root {old} path {old} cache /tmp/fa3c_old args ") == 2
    assert text.count("call_timeline.py 64 1024 1 bwd") == 2
    assert f"root {ROOT} path {ROOT}" in (out / "timeline_new_128_4096_0.txt").read_text()
