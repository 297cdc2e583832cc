"""Where the CUDA sources live and a fingerprint of all of them.

The wheel carries them as the package ``fa3lite.cuda_src``; a source checkout (editable install) has
them in ``cuda_src/`` beside the package.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pathlib

_SUFFIXES = (".cu", ".cuh")


@functools.cache
def cuda_src_dir() -> pathlib.Path:
    """The directory holding the kernel sources (``FA3LITE_CUDA_SRC`` overrides)."""
    override = os.environ.get("FA3LITE_CUDA_SRC")
    here = pathlib.Path(__file__).resolve().parent.parent
    candidates = [pathlib.Path(override)] if override else []
    candidates += [here / "cuda_src", here.parent / "cuda_src"]
    for c in candidates:
        if (c / "ptx" / "types.cuh").is_file():
            return c
    raise FileNotFoundError(
        "fa3lite: kernel sources not found; looked in " + ", ".join(str(c) for c in candidates)
    )


def source_files() -> list[pathlib.Path]:
    root = cuda_src_dir()
    return sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file())


@functools.cache
def fingerprint() -> str:
    """sha256 over every source file's relative path and bytes: any edit invalidates the cache."""
    root = cuda_src_dir()
    h = hashlib.sha256()
    for p in source_files():
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()
