"""What ran: device, driver, library versions and the fa3lite code identity, for the output files."""
from __future__ import annotations

import datetime
import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

COMMIT_ENV = "FA3LITE_COMMIT"  # set by whoever runs a copy of the tree without .git (the GPU machine)
_PEER_DISTS = ("flash-attn-4", "flash_attn_3", "flash-attn", "triton", "nvidia-cutlass-dsl", "matplotlib")
_SOURCE_SUFFIXES = (".py", ".cu", ".cuh")
_TOOL_TIMEOUT_S = 10


def _run(cmd, cwd=None) -> str | None:
    try:
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def _package_dir() -> Path:
    return Path(__file__).resolve().parent.parent


def fa3lite_commit() -> str:
    """git HEAD of the checkout fa3lite is imported from (+ '-dirty'), else $FA3LITE_COMMIT, else 'unknown'."""
    root = _package_dir().parent
    head = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if head:
        dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
        return head + ("-dirty" if dirty else "")
    return os.environ.get(COMMIT_ENV, "unknown")


def source_hash() -> str:
    """sha256 (first 16 hex digits) over fa3lite's Python and CUDA sources: identifies the code even
    where there is no git."""
    pkg = _package_dir()
    roots = [pkg, pkg.parent / "cuda_src"]
    h = hashlib.sha256()
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(p for p in root.rglob("*") if p.suffix in _SOURCE_SUFFIXES and p.is_file()):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def driver_version() -> str:
    smi = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if smi:
        return smi.splitlines()[0].strip()
    try:
        from cuda.bindings import driver

        err, ver = driver.cuDriverGetVersion()
        if int(err) == 0:
            return f"CUDA {ver // 1000}.{ver % 1000 // 10} (driver API; nvidia-smi unavailable)"
    except Exception:
        pass
    return "unknown"


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def collect_env() -> dict:
    """Flat-ish dict: keys device, capability, sm_count, l2_bytes, memory_gib, driver, torch, cuda,
    cudnn, python, fa3lite_version, fa3lite_commit, fa3lite_source_hash, date_utc, packages."""
    import fa3lite

    info = {
        "device": "cpu",
        "capability": None,
        "sm_count": None,
        "l2_bytes": None,
        "memory_gib": None,
        "driver": None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "python": platform.python_version(),
        "fa3lite_version": getattr(fa3lite, "__version__", "unknown"),
        "fa3lite_commit": fa3lite_commit(),
        "fa3lite_source_hash": source_hash(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "packages": {n: v for n in _PEER_DISTS if (v := _dist_version(n))},
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            device=props.name,
            capability=f"{props.major}.{props.minor}",
            sm_count=props.multi_processor_count,
            l2_bytes=getattr(props, "L2_cache_size", None),
            memory_gib=round(props.total_memory / 2**30, 1),
            driver=driver_version(),
        )
    return info


def hopper_status() -> tuple[bool, str]:
    """(True, device name) on an sm_90 GPU, else (False, why not)."""
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    if (major, minor) != (9, 0):
        return False, f"device 0 is {name} (sm_{major}{minor}), not Hopper (sm_90)"
    return True, name
