"""Kernel cache: hit, miss, corrupt entries, source edits and concurrent writers."""
import contextlib
import errno
import fcntl
import hashlib
import json
import multiprocessing
import os
import pathlib
import queue
import shutil
import stat
import tempfile
import threading
import time
import warnings

import filelock
import pytest

from fa3lite.runtime import cache, compile as comp, sources
from fa3lite.variants import FwdVariant

SPEC = FwdVariant(64, "bf16", False).spec()
NOBODY = 65534  # another user, to own planted files (tests run as root in CI)
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="chown to another uid needs root")
LONG_AGO_S = 3600  # older than the cache's grace period for temporary files (10 minutes)


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


# ================================================================ hardening of the disk side
# Most of these replace NVRTC by a fast stand-in (fake_compile): they test the disk side, whose
# behaviour does not depend on what the cubin holds. The trust, thread and read-only tests compile
# for real.

def _fake_cubin(spec) -> bytes:
    return hashlib.sha256(repr(spec).encode()).digest() * 64


def _fake_spec(i: int):
    return comp.KernelSpec("fake.cu", f"k{i:03d}")  # names of one length: entries of one size


@pytest.fixture()
def fake_compile(monkeypatch):
    calls = []

    def fake(spec):
        calls.append(spec)
        return comp.Compiled(cubin=_fake_cubin(spec), log="fake")

    monkeypatch.setattr(cache, "compile_spec", fake)
    return calls


def _files(d, spec):
    key = cache.entry_key(spec)
    return d / f"{key}.cubin", d / f"{key}.json", d / f"{key}.lock"


def _entry_bytes(d, spec):
    cubin, meta, _ = _files(d, spec)
    return cubin.stat().st_size + meta.stat().st_size


def _plant(cubin_path, meta_path, key, payload=b"planted machine code"):
    """A well-formed entry (right format, key and checksum) holding someone else's bytes."""
    meta = {"format": cache._FORMAT, "key": key, "sha256": hashlib.sha256(payload).hexdigest(),
            "log": "planted", "spec": "", "nvrtc": ""}
    cubin_path.write_bytes(payload)
    meta_path.write_text(json.dumps(meta))
    for p in (cubin_path, meta_path):
        p.chmod(0o600)
    return payload


@contextlib.contextmanager
def _held_flock(path):
    """Hold the flock that filelock uses on ``path``, as another process compiling would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _get_in_thread(spec, wait_s):
    """cache.get(spec) in a thread joined for at most wait_s: a hang fails the test, not the run."""
    box = {}

    def run():
        try:
            box["value"] = cache.get(spec)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(wait_s)
    return t, box


# ---------------------------------------------------------------- 1: unwritable directories

def test_lock_permission_error_compiles_in_memory(cache_dir, fake_compile, monkeypatch):
    """An existing directory where no lock file can be made (read-only home, another user's
    directory) compiles in memory instead of raising PermissionError, and writes nothing."""
    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied", self.lock_file)

    monkeypatch.setattr(filelock.FileLock, "acquire", denied)
    assert cache.get(SPEC).cubin == _fake_cubin(SPEC)
    assert len(fake_compile) == 1
    assert not list(cache_dir.glob("*.cubin")) and not list(cache_dir.glob("*.json"))


def test_read_only_directory_still_serves_its_entries(cache_dir, fake_compile, monkeypatch):
    """A populated cache that became read-only (an image's baked cache) is still read: a disk hit
    needs no lock."""
    first = cache.get(SPEC)
    cache.clear_memory_cache()

    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied", self.lock_file)

    monkeypatch.setattr(filelock.FileLock, "acquire", denied)
    assert cache.get(SPEC).cubin == first.cubin
    assert len(fake_compile) == 1


def _read_only_scenario(d, want, q):
    """In a directory of this user that is mode 0500: compile in memory; then a populated, read-only
    directory serves its entry without compiling."""
    try:
        os.environ["FA3LITE_CACHE_DIR"] = str(d)
        cache.clear_memory_cache()
        d.chmod(0o500)
        cold = cache.get(SPEC).cubin == want and not os.listdir(d)
        d.chmod(0o700)
        cache.clear_memory_cache()
        cache.get(SPEC)
        d.chmod(0o500)
        cache.clear_memory_cache()
        calls = []
        real = cache.compile_spec
        cache.compile_spec = lambda spec: calls.append(spec) or real(spec)
        try:
            warm = cache.get(SPEC).cubin == want and not calls
        finally:
            cache.compile_spec = real
        q.put(("ok", cold, warm))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        q.put(("error", repr(exc), None))


def test_read_only_directory_for_real(tmp_path, monkeypatch):
    """The real thing, no monkeypatching: a cache directory its owner cannot write. As root (CI)
    permissions do not apply, so a forked child drops to uid 65534 (nobody) first."""
    want = comp.compile_spec(SPEC).cubin  # also loads NVRTC before the fork
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir(mode=0o700)
        monkeypatch.setenv("FA3LITE_CACHE_DIR", str(d))  # restored after the in-process run
        q = queue.Queue()
        try:
            _read_only_scenario(d, want, q)
        finally:
            d.chmod(0o700)
            cache.clear_memory_cache()
        status, cold, warm = q.get_nowait()
    else:
        base = pathlib.Path(tempfile.mkdtemp())
        try:
            base.chmod(0o711)
            d = base / "ro"
            d.mkdir(mode=0o700)
            os.chown(d, NOBODY, NOBODY)

            def child(q):
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                _read_only_scenario(d, want, q)

            ctx = multiprocessing.get_context("fork")
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start()
            status, cold, warm = q.get(timeout=300)
            p.join(timeout=60)
        finally:
            shutil.rmtree(base, ignore_errors=True)
    assert status == "ok", cold
    assert cold, "a read-only directory must compile in memory and write nothing"
    assert warm, "a populated read-only directory must serve its entry"


# ---------------------------------------------------------------- 2: trust

def test_new_cache_directory_and_files_are_private(cache_dir):
    cache.get(SPEC)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    for p in cache_dir.iterdir():
        assert not p.stat().st_mode & 0o022, p


def test_a_well_formed_entry_of_ours_is_loaded(cache_dir, count_compiles):
    """Control for the planted-entry tests: _plant makes an entry the cache accepts when it is ours."""
    cache.get(SPEC)
    cache.clear_memory_cache()
    cubin, meta, _ = _files(cache_dir, SPEC)
    payload = _plant(cubin, meta, cache.entry_key(SPEC))
    assert cache.get(SPEC).cubin == payload
    assert len(count_compiles) == 1


@pytest.mark.parametrize("attack", [
    pytest.param("foreign_owner", marks=needs_root), "world_writable", "group_writable", "symlink"])
def test_planted_entry_is_not_loaded(cache_dir, tmp_path, count_compiles, attack):
    """An entry others could have written is never loaded: the fresh compile is returned and
    replaces it on disk, with one CacheWarning."""
    good = cache.get(SPEC).cubin
    cache.clear_memory_cache()
    cubin, meta, _ = _files(cache_dir, SPEC)
    key = cache.entry_key(SPEC)
    if attack == "symlink":
        evil_cubin, evil_meta = tmp_path / "evil.cubin", tmp_path / "evil.json"
        _plant(evil_cubin, evil_meta, key)
        for link, target in ((cubin, evil_cubin), (meta, evil_meta)):
            link.unlink()
            link.symlink_to(target)
    else:
        _plant(cubin, meta, key)
        for p in (cubin, meta):
            if attack == "foreign_owner":
                os.chown(p, NOBODY, NOBODY)
            else:
                p.chmod(0o666 if attack == "world_writable" else 0o620)
    with pytest.warns(cache.CacheWarning, match="ignoring the kernel cache entry"):
        got = cache.get(SPEC)
    assert got.cubin == good
    assert len(count_compiles) == 2
    st = cubin.lstat()  # rewritten as our own private file
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    cache.clear_memory_cache()
    assert cache.get(SPEC).cubin == good and len(count_compiles) == 2


@pytest.mark.parametrize("attack", [pytest.param("foreign_owner", marks=needs_root), "world_writable"])
def test_untrusted_directory_is_not_used(cache_dir, fake_compile, attack):
    """A directory not ours, or writable by others, is not used at all for the process, even for a
    well-formed entry inside it; one warning says so."""
    cache_dir.mkdir(mode=0o700)
    cubin, meta, _ = _files(cache_dir, SPEC)
    _plant(cubin, meta, cache.entry_key(SPEC))
    if attack == "foreign_owner":
        os.chown(cache_dir, NOBODY, NOBODY)
    else:
        cache_dir.chmod(0o777)
    before = sorted(os.listdir(cache_dir))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get(SPEC).cubin == _fake_cubin(SPEC)
        cache.clear_memory_cache()
        assert cache.get(SPEC).cubin == _fake_cubin(SPEC)
    assert len(fake_compile) == 2  # no disk: compiled again
    assert sorted(os.listdir(cache_dir)) == before  # nothing written, no lock file
    ours = [w for w in caught if issubclass(w.category, cache.CacheWarning)]
    assert len(ours) == 1 and "not using the kernel cache directory" in str(ours[0].message)


def test_entry_renamed_to_another_key_is_not_loaded(cache_dir, fake_compile):
    """Someone able to write the directory could rename a genuine entry (checksum intact) to the
    name of another variant; the metadata names its own key, so this is a miss."""
    a, b = _fake_spec(1), _fake_spec(2)
    cache.get(a)
    cache.clear_memory_cache()
    a_cubin, a_meta, _ = _files(cache_dir, a)
    b_cubin, b_meta, _ = _files(cache_dir, b)
    shutil.copy(a_cubin, b_cubin)
    shutil.copy(a_meta, b_meta)
    assert cache.get(b).cubin == _fake_cubin(b)
    assert len(fake_compile) == 2


# ---------------------------------------------------------------- 3: lock timeout

def test_held_lock_times_out_and_compiles_in_memory(cache_dir, fake_compile, monkeypatch):
    """A lock held by a stuck process delays a first call by the timeout, not forever, and the
    waiter writes nothing (the holder may be writing)."""
    monkeypatch.setenv("FA3LITE_CACHE_LOCK_TIMEOUT", "0.5")
    cache_dir.mkdir(mode=0o700)
    with _held_flock(_files(cache_dir, SPEC)[2]):
        start = time.monotonic()
        t, box = _get_in_thread(SPEC, wait_s=20)
        elapsed = time.monotonic() - start
        assert not t.is_alive(), "cache.get blocked on a held lock"
    assert "error" not in box, box.get("error")
    assert box["value"].cubin == _fake_cubin(SPEC)
    assert 0.4 <= elapsed < 10
    assert not list(cache_dir.glob("*.cubin"))
    cache.clear_memory_cache()  # the lock is free again: the next first call writes the entry
    cache.get(SPEC)
    assert _files(cache_dir, SPEC)[0].exists()


@pytest.mark.parametrize("raw, want", [
    (None, 60.0), ("", 60.0), ("2.5", 2.5), (" 7 ", 7.0), ("0", 0.0),
    ("soon", 60.0), ("-1", 60.0), ("nan", 60.0), ("inf", 60.0)])
def test_lock_timeout_setting(monkeypatch, raw, want):
    if raw is None:
        monkeypatch.delenv("FA3LITE_CACHE_LOCK_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("FA3LITE_CACHE_LOCK_TIMEOUT", raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cache.CacheWarning)
        assert cache.lock_timeout() == want


# ---------------------------------------------------------------- 4: stale files and the size bound

def test_stale_temporary_files_are_removed_young_ones_kept(cache_dir, fake_compile):
    cache_dir.mkdir(mode=0o700)
    key = "0" * 32
    old = time.time() - LONG_AGO_S
    stale = cache_dir / f"{key}.cubinab12cd.tmp"
    young = cache_dir / f"{key}.jsonef34gh.tmp"
    foreign = cache_dir / "notes.tmp"  # not ours: never touched
    for p in (stale, young, foreign):
        p.write_bytes(b"partial")
    for p in (stale, foreign):
        os.utime(p, (old, old))
    cache.get(SPEC)  # first use of the directory by this process
    assert not stale.exists()
    assert young.exists() and foreign.exists()
    os.utime(young, (old, old))  # a writer killed since: swept by the next write
    cache.get(_fake_spec(1))
    assert not young.exists() and foreign.exists()


def test_size_bound_evicts_least_recently_used(cache_dir, fake_compile, monkeypatch):
    a, b, c = (_fake_spec(i) for i in (1, 2, 3))
    cache.get(a)
    size = _entry_bytes(cache_dir, a)
    monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", str(2 * size + size // 2))  # room for two
    cache.get(b)
    now = time.time()
    for spec, age in ((a, 300), (b, 200)):  # a older than b...
        for p in _files(cache_dir, spec)[:2]:
            os.utime(p, (now - age, now - age))
    cache.clear_memory_cache()
    cache.get(a)  # ...until a disk hit uses it
    assert len(fake_compile) == 2
    assert _files(cache_dir, a)[0].stat().st_mtime > now - 100
    cache.get(c)
    assert not _files(cache_dir, b)[0].exists() and not _files(cache_dir, b)[1].exists()
    for spec in (a, c):
        cubin, meta, lock = _files(cache_dir, spec)
        assert cubin.exists() and meta.exists() and lock.exists()
    total = sum(p.stat().st_size for p in cache_dir.iterdir() if p.suffix in (".cubin", ".json"))
    assert total <= 2 * size + size // 2


def test_size_bound_never_evicts_the_entry_just_written(cache_dir, fake_compile, monkeypatch):
    monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", "1")
    a, b = _fake_spec(1), _fake_spec(2)
    cache.get(a)
    assert _files(cache_dir, a)[0].exists()  # alone over the bound, yet kept
    cache.get(b)
    assert not _files(cache_dir, a)[0].exists() and not _files(cache_dir, a)[1].exists()
    assert _files(cache_dir, b)[0].exists() and _files(cache_dir, b)[1].exists()
    cache.clear_memory_cache()
    cache.get(b)
    assert len(fake_compile) == 2


def test_size_bound_skips_an_entry_whose_lock_is_held(cache_dir, fake_compile, monkeypatch):
    monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", "1")
    a, b, c = (_fake_spec(i) for i in (1, 2, 3))
    cache.get(a)
    with _held_flock(_files(cache_dir, a)[2]):  # another process is rewriting a
        cache.get(b)
        assert _files(cache_dir, a)[0].exists()
    cache.get(c)
    assert not _files(cache_dir, a)[0].exists() and not _files(cache_dir, b)[0].exists()


@pytest.mark.parametrize("raw, want", [
    (None, 1 << 30), ("", 1 << 30), ("4096", 4096), (" 2048 ", 2048),
    ("1G", 1 << 30), ("1.5", 1 << 30), ("0", 1 << 30), ("-5", 1 << 30), ("lots", 1 << 30)])
def test_max_bytes_setting(monkeypatch, raw, want):
    if raw is None:
        monkeypatch.delenv("FA3LITE_CACHE_MAX_BYTES", raising=False)
    else:
        monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cache.CacheWarning)
        assert cache.max_bytes() == want


# ---------------------------------------------------------------- 5: threads

@pytest.mark.parametrize("disk", [False, True], ids=["memory_only", "disk"])
def test_threads_first_calling_one_variant_compile_it_once(tmp_path, monkeypatch, count_compiles, disk):
    if disk:
        monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "cache"))
    else:
        (tmp_path / "file").write_text("x")
        monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "file" / "sub"))  # cannot exist
    cache.clear_memory_cache()
    n = 8
    barrier = threading.Barrier(n)
    results = [None] * n

    def first_call(i):
        barrier.wait()
        results[i] = cache.get(SPEC)

    threads = [threading.Thread(target=first_call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    cache.clear_memory_cache()
    assert len(count_compiles) == 1
    assert all(r is not None and r.cubin == results[0].cubin for r in results)


# ---------------------------------------------------------------- 6: no disk failure reaches the caller

_FAILING_OS_CALLS = ["open", "replace", "scandir", "utime", "unlink", "mkdir", "stat", "fstat"]


@pytest.mark.parametrize("phase", ["miss", "hit"])
@pytest.mark.parametrize("call", _FAILING_OS_CALLS + ["lock_timeout", "lock_error"])
def test_disk_failures_degrade_to_compiling(cache_dir, fake_compile, monkeypatch, call, phase):
    """Every disk step (reading, writing, locking, listing, sweeping, evicting, touching) failing
    with an OSError still returns the right cubin."""
    other, spec = _fake_spec(1), _fake_spec(2)
    cache.get(other)  # an entry for eviction to consider...
    monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", "1")  # ...and a bound that makes it try
    old = time.time() - LONG_AGO_S
    tmp = cache_dir / f"{'0' * 32}.cubinxyz.tmp"  # and a stale file for the sweep
    tmp.write_bytes(b"")
    os.utime(tmp, (old, old))
    if phase == "hit":
        monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", str(1 << 30))
        cache.get(spec)
        monkeypatch.setenv("FA3LITE_CACHE_MAX_BYTES", "1")
    cache.clear_memory_cache()
    inside = str(cache_dir)
    if call == "lock_timeout":
        def broken(self, *a, **k):
            raise filelock.Timeout(self.lock_file)
        monkeypatch.setattr(filelock.FileLock, "acquire", broken)
    elif call == "lock_error":
        def broken(self, *a, **k):
            raise OSError(errno.EIO, "injected", self.lock_file)
        monkeypatch.setattr(filelock.FileLock, "acquire", broken)
    else:
        real = getattr(os, call)

        def broken(*args, **kwargs):
            paths = [a for a in args if isinstance(a, (str, os.PathLike))]
            if call == "fstat" or any(inside in os.fspath(p) for p in paths):
                raise OSError(errno.EIO, f"injected failure of os.{call}")
            return real(*args, **kwargs)

        monkeypatch.setattr(os, call, broken)
    got = cache.get(spec)
    monkeypatch.undo()
    assert got.cubin == _fake_cubin(spec)


def test_compile_errors_still_raise(cache_dir, monkeypatch):
    def broken(spec):
        raise comp.CompileError(spec, "error: planted")

    monkeypatch.setattr(cache, "compile_spec", broken)
    with pytest.raises(comp.CompileError, match="planted"):
        cache.get(SPEC)
    assert not list(cache_dir.glob("*.cubin"))
