"""Kernel cache: hit, miss, corrupt entries, source edits and concurrent writers."""
import json
import multiprocessing

import pytest

from fa3lite.runtime import cache, compile as comp, sources
from fa3lite.variants import FwdVariant

SPEC = FwdVariant(64, "bf16", False).spec()


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(d))
    cache.clear_memory_cache()
    yield d
    cache.clear_memory_cache()


@pytest.fixture()
def count_compiles(monkeypatch):
    calls = []
    real = comp.compile_spec

    def counting(spec):
        calls.append(spec)
        return real(spec)

    monkeypatch.setattr(cache, "compile_spec", counting)
    return calls


def test_miss_then_memory_hit_then_disk_hit(cache_dir, count_compiles):
    a = cache.get(SPEC)
    assert len(count_compiles) == 1
    assert len(list(cache_dir.glob("*.cubin"))) == 1
    assert cache.get(SPEC) is a                      # memory
    cache.clear_memory_cache()
    b = cache.get(SPEC)                              # disk
    assert len(count_compiles) == 1 and b.cubin == a.cubin


@pytest.mark.parametrize("damage", ["truncate", "flip", "bad_json", "missing_meta"])
def test_corrupt_entry_is_rebuilt_not_loaded(cache_dir, count_compiles, damage):
    good = cache.get(SPEC).cubin
    cache.clear_memory_cache()
    cubin = next(cache_dir.glob("*.cubin"))
    meta = cubin.with_suffix(".json")
    if damage == "truncate":
        cubin.write_bytes(good[: len(good) // 2])
    elif damage == "flip":
        cubin.write_bytes(bytes([good[0] ^ 0xFF]) + good[1:])
    elif damage == "bad_json":
        meta.write_text("{not json")
    else:
        meta.unlink()
    again = cache.get(SPEC)
    assert len(count_compiles) == 2
    assert again.cubin == good
    assert json.loads(meta.read_text())["sha256"]


def test_key_changes_with_sources_options_and_compiler(cache_dir, monkeypatch):
    k0 = cache.entry_key(SPEC)
    assert cache.entry_key(FwdVariant(64, "bf16", True).spec()) != k0
    assert cache.entry_key(FwdVariant(64, "bf16", False, debug=True).spec()) != k0
    monkeypatch.setattr(cache, "nvrtc_version", lambda: "99.9")
    assert cache.entry_key(SPEC) != k0
    monkeypatch.undo()
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(sources, "fingerprint", lambda: "edited")
    assert cache.entry_key(SPEC) != k0


def test_fingerprint_covers_every_source_file():
    files = sources.source_files()
    names = {p.name for p in files}
    assert {"fwd_kernel.cu", "mbarrier.cuh", "wgmma_ops.cuh"} <= names


def _worker(d, q):
    import os

    os.environ["FA3LITE_CACHE_DIR"] = d
    from fa3lite.runtime import cache as c

    q.put(c.get(SPEC).cubin)


def test_concurrent_writers_agree(cache_dir):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(cache_dir), q)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert all(r == results[0] for r in results)
    assert len(list(cache_dir.glob("*.cubin"))) == 1
    assert not list(cache_dir.glob("*.tmp"))
    cache.clear_memory_cache()
    assert cache.get(SPEC).cubin == results[0]


def test_unwritable_cache_dir_still_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(blocker / "sub"))
    cache.clear_memory_cache()
    assert cache.get(SPEC).cubin
    cache.clear_memory_cache()
