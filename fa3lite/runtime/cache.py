"""Kernel cache: memory, then disk (``FA3LITE_CACHE_DIR``), then NVRTC.

A disk entry is named by a sha256 over the source fingerprint, the compile options and the NVRTC
version, so an edit of any file in cuda_src/ or a new compiler can never load a stale cubin. Each
entry stores its own checksum; a corrupt or truncated one is rebuilt, never loaded. A file lock per
entry keeps concurrent processes from compiling into the same file at once; writes go to a temporary
file that is renamed into place, so readers never see a half-written entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tempfile
import threading

import filelock

from . import sources
from .compile import Compiled, KernelSpec, compile_spec, nvrtc_version

_memory: dict[str, Compiled] = {}
_memory_lock = threading.Lock()
_FORMAT = 1  # bump when the entry layout changes


def cache_dir() -> pathlib.Path:
    """``FA3LITE_CACHE_DIR`` or ``$XDG_CACHE_HOME/fa3lite`` (default ``~/.cache/fa3lite``)."""
    env = os.environ.get("FA3LITE_CACHE_DIR")
    if env:
        return pathlib.Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "fa3lite"


def entry_key(spec: KernelSpec) -> str:
    h = hashlib.sha256()
    for part in (str(_FORMAT), sources.fingerprint(), spec.options_key(), nvrtc_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def clear_memory_cache() -> None:
    """Forget in-memory cubins (the disk cache is kept); used to time cold loads."""
    with _memory_lock:
        _memory.clear()


def _paths(key: str) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    d = cache_dir()
    return d / f"{key}.cubin", d / f"{key}.json", d / f"{key}.lock"


def _read(key: str) -> Compiled | None:
    cubin_p, meta_p, _ = _paths(key)
    try:
        meta = json.loads(meta_p.read_text())
        cubin = cubin_p.read_bytes()
    except (OSError, ValueError):
        return None
    if meta.get("sha256") != hashlib.sha256(cubin).hexdigest() or meta.get("format") != _FORMAT:
        return None
    return Compiled(cubin=cubin, log=meta.get("log", ""))


def _atomic_write(path: pathlib.Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def _write(key: str, spec: KernelSpec, c: Compiled) -> None:
    cubin_p, meta_p, _ = _paths(key)
    meta = {"format": _FORMAT, "sha256": hashlib.sha256(c.cubin).hexdigest(), "log": c.log,
            "spec": repr(spec), "nvrtc": nvrtc_version()}
    # cubin first, then the metadata that vouches for it: a crash in between leaves a mismatch
    # that _read rejects.
    _atomic_write(cubin_p, c.cubin)
    _atomic_write(meta_p, json.dumps(meta).encode())


def get(spec: KernelSpec) -> Compiled:
    """The compiled cubin for ``spec``, compiling it at most once per cache directory."""
    key = entry_key(spec)
    hit = _memory.get(key)
    if hit is not None:
        return hit
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        writable = True
    except OSError:
        writable = False
    compiled = None
    if writable:
        with filelock.FileLock(str(_paths(key)[2])):
            compiled = _read(key)
            if compiled is None:
                compiled = compile_spec(spec)
                try:
                    _write(key, spec, compiled)
                except OSError:
                    pass  # a read-only or full cache directory must not break attention
    else:
        compiled = compile_spec(spec)
    with _memory_lock:
        _memory[key] = compiled
    return compiled
