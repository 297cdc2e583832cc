"""Host mirror of a kernel's parameter struct.

Every kernel takes one ``const __grid_constant__`` struct. Its layout is declared once here as a list
of fields; ``layout_check`` is compiled into the kernel as a static_assert, so a host/device mismatch
is a compile error (checked in CI), not a silent misread.
"""
from __future__ import annotations

import dataclasses
import functools
import struct

# C type -> (struct format, size, alignment); "tma" is a CUtensorMap (128 bytes, 64-byte aligned).
_TYPES = {
    "tma": (None, 128, 64),
    "ptr": ("Q", 8, 8),
    "i64": ("q", 8, 8),
    "i32": ("i", 4, 4),
    "f32": ("f", 4, 4),
}


def _has_offsetof() -> bool:
    """Whether NVRTC's front end has __builtin_offsetof (13.5 yes, 13.0 no). False when NVRTC cannot be
    asked: building a spec must not fail here, the compile itself reports what is missing."""
    from .compile import nvrtc_version

    try:
        major, minor = (int(x) for x in nvrtc_version().split("."))
    except Exception:  # noqa: BLE001 - no NVRTC (or no cuda.bindings): no offset asserts
        return False
    return (major, minor) >= (13, 5)


@dataclasses.dataclass(frozen=True)
class ParamStruct:
    """A C struct: ``fields`` are (name, type) pairs in declaration order."""

    name: str
    fields: tuple[tuple[str, str], ...]

    @functools.cached_property
    def offsets(self) -> dict[str, int]:
        return self._layout()[0]

    @functools.cached_property
    def size(self) -> int:
        return self._layout()[1]

    @functools.cached_property
    def _packers(self) -> tuple[tuple[str, int, int, struct.Struct | None], ...]:
        """(name, offset, size, packer) per field, computed once: pack() runs on every launch."""
        return tuple((f, self.offsets[f], _TYPES[t][1], struct.Struct("<" + _TYPES[t][0]) if _TYPES[t][0] else None)
                     for f, t in self.fields)

    def _layout(self) -> tuple[dict[str, int], int]:
        off, offsets, max_align = 0, {}, 1
        for fname, ftype in self.fields:
            _, size, align = _TYPES[ftype]
            off = (off + align - 1) // align * align
            offsets[fname] = off
            off += size
            max_align = max(max_align, align)
        return offsets, (off + max_align - 1) // max_align * max_align

    def layout_check(self) -> str:
        """A C++ constant expression true iff the device struct has exactly this layout."""
        terms = [f"__builtin_offsetof({self.name},{f})=={o}" for f, o in self.offsets.items()]
        terms.append(f"sizeof({self.name})=={self.size}")
        return "(" + "&&".join(terms) + ")"

    def layout_defines(self) -> tuple[tuple[str, str], ...]:
        """Defines for the kernel's static_asserts: always the size; every offset where the compiler
        has __builtin_offsetof (NVRTC 13.0's front end lacks it; 13.5 has it, and CI compiles with it)."""
        defs = [("FA3LITE_PARAMS_SIZE", str(self.size))]
        if _has_offsetof():
            defs.append(("FA3LITE_PARAMS_OK", self.layout_check()))
        return tuple(defs)

    def head(self, *names: str) -> str:
        """struct format of the leading fields ``names`` (in declaration order, no padding between
        them), the part of a block that launch.Prepared fills in per call: tma fields as 128-byte
        strings, the rest numbers."""
        if tuple(f for f, _ in self.fields[:len(names)]) != names:
            raise ValueError(f"{self.name}: {names} are not its leading fields "
                             f"{tuple(f for f, _ in self.fields[:len(names)])}")
        fmt, off = "<", 0
        for fname, ftype in self.fields[:len(names)]:
            code, size, _ = _TYPES[ftype]
            if self.offsets[fname] != off:
                raise ValueError(f"{self.name}.{fname}: padding before it (offset {self.offsets[fname]}, not {off})")
            fmt += f"{size}s" if code is None else code
            off += size
        return fmt

    def pack(self, **values) -> bytes:
        """Bytes of one struct; tma fields take 128-byte blobs, the rest numbers."""
        buf = bytearray(self.size)
        if len(values) != len(self.fields) or not values.keys() >= self.offsets.keys():
            missing = sorted(self.offsets.keys() - values.keys())
            extra = sorted(values.keys() - self.offsets.keys())
            raise TypeError(f"{self.name}: missing fields {missing}, unknown fields {extra}")
        for fname, off, size, packer in self._packers:
            v = values[fname]
            if packer is None:
                if len(v) != size:
                    raise ValueError(f"{self.name}.{fname}: expected {size} bytes, got {len(v)}")
                buf[off:off + size] = v
            else:
                packer.pack_into(buf, off, v)
        return bytes(buf)
