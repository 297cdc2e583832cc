"""Kernel cache: memory, then disk (``FA3LITE_CACHE_DIR``), then NVRTC.

A disk entry is named by a sha256 over the source fingerprint, the compile options and the NVRTC
version, so an edit of any file in cuda_src/ or a new compiler can never load a stale cubin. Each
entry stores its own checksum and its own key; a corrupt, truncated or renamed one is rebuilt, never
loaded. Writes go to a temporary file that is renamed into place, so readers never see a half-written
file.

The disk is an optimisation, never a requirement: every failure of it (an unwritable or full
directory, an I/O error, a lock held too long) degrades to compiling in memory; only the compile
itself raises (CompileError).

Trust. A cubin is machine code that runs on the GPU with this process's rights, and the entry key is
predictable, so whoever can write the directory could plant one (its checksum sits beside it). So:
the directory is created private (0700); a directory not owned by this user, or writable by group or
others, is not used at all for the process; a file is loaded only if it is a regular file (no
symlink) owned by this user and not writable by group or others, checked with fstat on the very
descriptor it is read from (no check-then-open race). Anything refused is said once per process and
directory with a CacheWarning. POSIX only: without ``os.geteuid`` (Windows) ownership cannot be
checked and no disk cache is used.

Concurrency. Threads of one process first-calling the same variant wait on a per-key lock, so it is
compiled once. Processes sharing the directory read entries without locking (renames are atomic); on
a miss they take the entry's file lock, so one of them compiles while the others wait and then read
its entry. The wait is bounded by ``FA3LITE_CACHE_LOCK_TIMEOUT`` (seconds, default 60): past it the
waiter compiles in memory and writes nothing.

Upkeep. Temporary files left by a killed writer are removed once older than STALE_TMP_AGE_S (a
younger one may belong to a live writer), on the first use of the directory by a process and after
each write. After each write the entries (cubin + json) are bounded by ``FA3LITE_CACHE_MAX_BYTES``
(default 1 GiB): least recently used entries first (a disk hit touches the entry's mtime), never the
one just written, never one whose file lock is held. Lock files are left in place: unlinking one that
another process holds or waits on breaks the mutual exclusion of the file lock.
"""
from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import pathlib
import re
import stat
import tempfile
import threading
import time
import warnings

import filelock

from ..errors import CacheWarning
from . import sources
from .compile import Compiled, KernelSpec, compile_spec, nvrtc_version

_FORMAT = 2  # bump when the entry layout changes (2: the metadata names its own key)

ENV_CACHE_DIR = "FA3LITE_CACHE_DIR"
ENV_LOCK_TIMEOUT = "FA3LITE_CACHE_LOCK_TIMEOUT"
ENV_MAX_BYTES = "FA3LITE_CACHE_MAX_BYTES"
DEFAULT_LOCK_TIMEOUT_S = 60.0  # far above one compile (seconds), far below "hung forever"
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: thousands of entries (a cubin is tens to hundreds of KB)
STALE_TMP_AGE_S = 10 * 60  # a temporary file this old has no live writer (a write takes milliseconds)

_KEY_CHARS = 32  # hex digits of the sha256 that name an entry
_DIR_MODE = 0o700  # the cache is private: nobody else may read its listing or plant files in it
_LOCK_MODE = 0o600
_FOREIGN_WRITE_BITS = stat.S_IWGRP | stat.S_IWOTH
_CUBIN, _META, _LOCK, _TMP = ".cubin", ".json", ".lock", ".tmp"
_ENTRY_FILE = re.compile(rf"([0-9a-f]{{{_KEY_CHARS}}})(\{_CUBIN}|\{_META})")
_TMP_FILE = re.compile(rf"[0-9a-f]{{{_KEY_CHARS}}}(\{_CUBIN}|\{_META}).*\{_TMP}")
_POSIX = hasattr(os, "geteuid")
# O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: a planted FIFO cannot hang the open.
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))

_memory: dict[str, Compiled] = {}
_memory_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}  # one per entry key: threads wait for the first compile
_state_lock = threading.Lock()  # guards the sets below
_untrusted_dirs: set[str] = set()  # refused once, refused for the rest of the process
_swept_dirs: set[str] = set()  # directories whose stale temporary files this process removed
_warned: set[str] = set()  # what was already warned about (a directory, a bad setting)


class _Untrusted(Exception):
    """A cache file someone other than this user could have written: never loaded."""


def cache_dir() -> pathlib.Path:
    """``FA3LITE_CACHE_DIR`` or ``$XDG_CACHE_HOME/fa3lite`` (default ``~/.cache/fa3lite``)."""
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return pathlib.Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "fa3lite"


def entry_key(spec: KernelSpec) -> str:
    h = hashlib.sha256()
    for part in (str(_FORMAT), sources.fingerprint(), spec.options_key(), nvrtc_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:_KEY_CHARS]


def clear_memory_cache() -> None:
    """Forget in-memory cubins (the disk cache is kept); used to time cold loads."""
    with _memory_lock:
        _memory.clear()


def get(spec: KernelSpec) -> Compiled:
    """The compiled cubin for ``spec``, compiling it at most once per process and cache directory.

    A memory hit is one dict lookup (no lock, no file system). A failure of the disk cache never
    raises; what the compile raises (CompileError) does.
    """
    key = entry_key(spec)
    hit = _memory.get(key)
    if hit is not None:
        return hit
    with _key_lock(key):
        hit = _memory.get(key)  # the thread we waited for may have compiled it
        if hit is not None:
            return hit
        compiled = _load_or_compile(key, spec)
        with _memory_lock:
            _memory[key] = compiled
    return compiled


# ---------------------------------------------------------------- settings

def lock_timeout() -> float:
    """Seconds to wait for another process compiling the same entry (``FA3LITE_CACHE_LOCK_TIMEOUT``).

    A finite number >= 0 (0: try once, never wait). Anything else -- not a number, negative (which
    filelock would read as "forever"), nan, inf -- warns once and gives DEFAULT_LOCK_TIMEOUT_S.
    """
    raw = os.environ.get(ENV_LOCK_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value >= 0:
        return value
    _warn_bad_setting(ENV_LOCK_TIMEOUT, raw, "a number of seconds >= 0", DEFAULT_LOCK_TIMEOUT_S)
    return DEFAULT_LOCK_TIMEOUT_S


def max_bytes() -> int:
    """The bound on the entries' total size in bytes (``FA3LITE_CACHE_MAX_BYTES``).

    A positive decimal integer of bytes, without suffix ("1073741824", not "1G"). There is no
    "unbounded": anything else -- a suffix, a fraction, 0, a negative number -- warns once and gives
    DEFAULT_MAX_BYTES (set a huge number for "practically unbounded").
    """
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    if re.fullmatch(r"[0-9]+", raw) and int(raw) > 0:
        return int(raw)
    _warn_bad_setting(ENV_MAX_BYTES, raw, "a positive integer of bytes without suffix", DEFAULT_MAX_BYTES)
    return DEFAULT_MAX_BYTES


def _warn_bad_setting(name: str, raw: str, wanted: str, default) -> None:
    _warn_once(f"{name}={raw}", f"fa3lite: {name}={raw!r} is not {wanted}; using {default}")


def _warn_once(topic: str, message: str) -> None:
    """Warn about ``topic`` once per process: the cause does not change between calls."""
    with _state_lock:
        if topic in _warned:
            return
        _warned.add(topic)
    warnings.warn(message, CacheWarning, stacklevel=2)


# ---------------------------------------------------------------- one lookup

def _key_lock(key: str) -> threading.Lock:
    with _memory_lock:
        return _key_locks.setdefault(key, threading.Lock())


def _load_or_compile(key: str, spec: KernelSpec) -> Compiled:
    """Disk hit, else compile under the entry's file lock and store; in memory if the disk fails."""
    d = _usable_dir()
    if d is None:
        return compile_spec(spec)
    hit = _read_hit(d, key)  # without the lock: entries appear by atomic rename
    if hit is not None:
        return hit
    lock = _acquired_lock(d, key, lock_timeout())
    if lock is None:  # held past the timeout, or no lock file can be made (read-only directory)
        return compile_spec(spec)
    try:
        hit = _read_hit(d, key)  # the process we waited for may have written it
        if hit is not None:
            return hit
        compiled = compile_spec(spec)
        _store(d, key, spec, compiled)
        return compiled
    finally:
        _release(lock)


def _paths(d: pathlib.Path, key: str) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    return d / f"{key}{_CUBIN}", d / f"{key}{_META}", d / f"{key}{_LOCK}"


# ---------------------------------------------------------------- the directory

def _usable_dir() -> pathlib.Path | None:
    """The cache directory, created private if missing, or None when it cannot or must not be used.

    Not usable: it cannot be created or examined (compile in memory, silently: the README promises
    that an unwritable cache only costs recompiles), or it is not trusted (compile in memory for the
    rest of the process, with one warning).
    """
    if not _POSIX:
        return None
    d = cache_dir()
    topic = str(d)
    if topic in _untrusted_dirs:
        return None
    try:
        d.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
        st = os.stat(d)
    except (OSError, ValueError):  # ValueError: a NUL byte in FA3LITE_CACHE_DIR
        return None
    problem = _untrusted(st, stat.S_ISDIR, "a directory")
    if problem is not None:
        with _state_lock:
            _untrusted_dirs.add(topic)
        _warn_once(topic, f"fa3lite: not using the kernel cache directory {d}: it {problem}; kernels "
                          f"are compiled in memory for this process (use a directory only you can "
                          f"write, e.g. chmod 700, or set {ENV_CACHE_DIR})")
        return None
    if _first_use(topic):
        _sweep_stale_tmp(d)
    return d


def _untrusted(st: os.stat_result, is_kind, kind: str) -> str | None:
    """Why a file or directory with this stat could hold someone else's bytes, or None if it cannot."""
    if not is_kind(st.st_mode):
        return f"is not {kind}"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by this process's uid {os.geteuid()}"
    if st.st_mode & _FOREIGN_WRITE_BITS:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


def _first_use(topic: str) -> bool:
    with _state_lock:
        if topic in _swept_dirs:
            return False
        _swept_dirs.add(topic)
        return True


def _listing(d: pathlib.Path) -> list[os.DirEntry]:
    """The directory's entries, or none if it cannot be listed (upkeep is then skipped)."""
    try:
        with os.scandir(d) as it:
            return list(it)
    except OSError:
        return []


def _sweep_stale_tmp(d: pathlib.Path) -> None:
    """Remove temporary files of writers killed mid-write; younger ones may still be renamed."""
    cutoff = time.time() - STALE_TMP_AGE_S
    for e in _listing(d):
        if not _TMP_FILE.fullmatch(e.name):
            continue
        try:
            if e.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(e.path)
        except OSError:
            continue


# ---------------------------------------------------------------- reading

def _read_hit(d: pathlib.Path, key: str) -> Compiled | None:
    """The entry if it is intact and trusted, its use recorded for the LRU bound; else None."""
    hit = _read_entry(d, key)
    if hit is not None:
        _touch(_paths(d, key)[0])
    return hit


def _read_entry(d: pathlib.Path, key: str) -> Compiled | None:
    cubin_p, meta_p, _ = _paths(d, key)
    try:
        meta = json.loads(_read_private(meta_p))
        cubin = _read_private(cubin_p)
    except _Untrusted as exc:
        _warn_once(str(d), f"fa3lite: ignoring the kernel cache entry {exc}; compiling it instead "
                           f"(only files this user owns and only this user can write are loaded)")
        return None
    except (OSError, ValueError):  # missing, unreadable, not JSON
        return None
    if not _vouches_for(meta, key, cubin):
        return None
    return Compiled(cubin=cubin, log=meta["log"])


def _read_private(path: pathlib.Path) -> bytes:
    """The file's bytes if it is ours alone; checked on the descriptor read, so no swap in between."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Untrusted(f"{path}: it is a symbolic link") from None
        raise
    try:
        problem = _untrusted(os.fstat(fd), stat.S_ISREG, "a regular file")
        if problem is not None:
            raise _Untrusted(f"{path}: it {problem}")
        with open(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _vouches_for(meta, key: str, cubin: bytes) -> bool:
    """The metadata is of this format, names this entry (not a renamed one) and matches the cubin."""
    return (isinstance(meta, dict) and meta.get("format") == _FORMAT and meta.get("key") == key
            and meta.get("sha256") == hashlib.sha256(cubin).hexdigest()
            and isinstance(meta.get("log"), str))


def _touch(path: pathlib.Path) -> None:
    """Mark the entry used now: eviction goes by mtime. A read-only cache just keeps its order."""
    try:
        os.utime(path, follow_symlinks=False)
    except OSError:
        pass


# ---------------------------------------------------------------- the file lock

def _acquired_lock(d: pathlib.Path, key: str, timeout: float) -> filelock.FileLock | None:
    """The entry's file lock, held; None if it is not free within ``timeout`` or cannot be made."""
    try:
        lock = filelock.FileLock(str(_paths(d, key)[2]), timeout=timeout, mode=_LOCK_MODE)
        lock.acquire()
    except (filelock.Timeout, OSError):
        return None
    return lock


def _release(lock: filelock.FileLock) -> None:
    try:
        lock.release()
    except OSError:
        pass  # the descriptor's close releases the flock anyway


# ---------------------------------------------------------------- writing and upkeep

def _store(d: pathlib.Path, key: str, spec: KernelSpec, c: Compiled) -> None:
    """Write the entry, then keep the directory tidy and bounded; a failure only skips the rest."""
    try:
        _write(d, key, spec, c)
    except OSError:
        return  # a read-only or full cache directory must not break attention
    _sweep_stale_tmp(d)
    _evict_lru(d, keep=key)


def _write(d: pathlib.Path, key: str, spec: KernelSpec, c: Compiled) -> None:
    cubin_p, meta_p, _ = _paths(d, key)
    meta = {"format": _FORMAT, "key": key, "sha256": hashlib.sha256(c.cubin).hexdigest(),
            "log": c.log, "spec": repr(spec), "nvrtc": nvrtc_version()}
    # cubin first, then the metadata that vouches for it: a crash in between leaves a mismatch
    # that _read_entry rejects.
    _atomic_write(cubin_p, c.cubin)
    _atomic_write(meta_p, json.dumps(meta).encode())


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    """Write to a private (0600) temporary file beside ``path``, then rename it into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=_TMP)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def _entry_usage(d: pathlib.Path) -> dict[str, tuple[int, float]]:
    """Per entry key: bytes of its cubin + json, and its last use (the newer mtime of the two)."""
    usage: dict[str, tuple[int, float]] = {}
    for e in _listing(d):
        m = _ENTRY_FILE.fullmatch(e.name)
        if m is None:
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        size, last = usage.get(m.group(1), (0, 0.0))
        usage[m.group(1)] = (size + st.st_size, max(last, st.st_mtime))
    return usage


def _evict_lru(d: pathlib.Path, keep: str) -> None:
    """Remove least recently used entries until the total is within max_bytes(); ``keep`` stays."""
    limit = max_bytes()
    usage = _entry_usage(d)
    total = sum(size for size, _ in usage.values())
    for key in sorted(usage, key=lambda k: usage[k][1]):
        if total <= limit:
            return
        if key != keep and _remove_entry(d, key):
            total -= usage[key][0]


def _remove_entry(d: pathlib.Path, key: str) -> bool:
    """Delete an entry's files under its file lock, unless it is busy (a writer holds the lock).

    The metadata goes first: without it the entry is a miss, whatever remains. The lock file stays.
    """
    lock = _acquired_lock(d, key, timeout=0)
    if lock is None:
        return False
    try:
        cubin_p, meta_p, _ = _paths(d, key)
        meta_p.unlink(missing_ok=True)
        cubin_p.unlink(missing_ok=True)
        return True
    except OSError:
        return False
    finally:
        _release(lock)
