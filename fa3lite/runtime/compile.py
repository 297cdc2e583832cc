"""NVRTC compilation of one kernel variant to an sm_90a cubin (no GPU needed)."""
from __future__ import annotations

import dataclasses
import functools
import io
import os
import re

from . import sources

ARCH = os.environ.get("FA3LITE_ARCH", "sm_90a")
# Bounded spin count of mbarrier waits in debug builds (each try_wait may itself suspend ~us): a wait
# that never ends gave up after 17 s on an H200 (tests/test_ptx.py, RESULTS 47).
DEBUG_SPINS = 1 << 22


class CompileError(RuntimeError):
    """NVRTC rejected a kernel; ``log`` holds the compiler's full output."""

    def __init__(self, spec: "KernelSpec", log: str):
        self.spec = spec
        self.log = log
        super().__init__(f"fa3lite: NVRTC failed to compile {spec.source} ({spec.name}) "
                         f"with {spec.describe()}:\n{log}")


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """One compiled variant: a source under cuda_src/, its extern "C" entry and its defines."""

    source: str
    name: str
    defines: tuple[tuple[str, str], ...] = ()
    debug: bool = False

    def describe(self) -> str:
        """The defines that choose the variant, for messages (the long layout checks left out)."""
        shown = " ".join(f"{k}={v}" for k, v in self.defines if not k.endswith("_OK"))
        return shown + (" debug" if self.debug else "")

    def options_key(self) -> str:
        return f"{ARCH}|{self.source}|{self.name}|{self.defines}|debug={self.debug}|spins={DEBUG_SPINS}"


@dataclasses.dataclass(frozen=True)
class Compiled:
    cubin: bytes
    log: str


@functools.cache
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"fa3lite: nvrtcVersion failed with {err!r}: is the NVRTC library "
                           f"(pip package nvidia-cuda-nvrtc) installed and loadable?")
    return f"{major}.{minor}"


def _options(spec: KernelSpec):
    from cuda.core import ProgramOptions

    macros = [f"{k}={v}" for k, v in spec.defines]
    if spec.debug:
        macros += ["FA3LITE_DEBUG=1", f"FA3LITE_DEBUG_SPINS={DEBUG_SPINS}"]
    return ProgramOptions(
        name=spec.name,
        arch=ARCH,
        std="c++17",
        ptxas_options=["-v"],
        define_macro=macros or None,
        include_path=[str((sources.cuda_src_dir() / spec.source).parent), str(sources.cuda_src_dir())],
        lineinfo=spec.debug,
    )


def compile_spec(spec: KernelSpec) -> Compiled:
    """Compile ``spec`` with NVRTC; raises CompileError carrying the log on failure."""
    from cuda.core import Program

    path = sources.cuda_src_dir() / spec.source
    src = path.read_text()
    log = io.StringIO()
    try:
        prog = Program(src, "c++", options=_options(spec))
        obj = prog.compile("cubin", logs=log)
    except Exception as exc:  # cuda.core raises its own error types; keep NVRTC's log with them
        raise CompileError(spec, log.getvalue() + "\n" + str(exc)) from exc
    text = log.getvalue()
    if re.search(r"\bC75(08|11|17)\b", text):
        # Performance warnings that mean the design silently degraded (setmaxnreg ignored,
        # serialized or waited wgmma): treat as errors so no such kernel ships.
        raise CompileError(spec, text)
    return Compiled(cubin=bytes(obj.code), log=text)
