"""The wheel carries every Python module and kernel source (they compile at run time) and finds them
once installed."""
import pathlib
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_wheel_carries_cuda_sources_and_finds_them(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(tmp_path), "--no-deps",
                    "--no-build-isolation", "-q"], check=True, timeout=300)
    wheel = next(tmp_path.glob("fa3lite-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p.relative_to(ROOT / "cuda_src").as_posix() for p in (ROOT / "cuda_src").rglob("*")
               if p.suffix in (".cu", ".cuh")]
    missing = [s for s in sources if f"fa3lite/cuda_src/{s}" not in names]
    assert sources and not missing, f"wheel lacks {missing}"
    modules = [p.relative_to(ROOT).as_posix() for p in (ROOT / "fa3lite").rglob("*.py")]
    missing = [m for m in modules if m not in names]
    assert "fa3lite/hopper/fwd.py" in modules and not missing, f"wheel lacks {missing}"

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, timeout=300)
    probe = ("import fa3lite.hopper.common, fa3lite.runtime.sources as s, pathlib; d = s.cuda_src_dir(); "
             "print(d); assert pathlib.Path(d).is_relative_to(pathlib.Path(fa3lite.__file__).parent)")
    out = subprocess.run([sys.executable, "-c", "import fa3lite; " + probe], cwd=tmp_path, check=True,
                         capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert str(target) in out.stdout


def test_build_requires_a_setuptools_that_reads_the_license_expression():
    """`license = "Apache-2.0"` (a PEP 639 SPDX string) needs setuptools >= 77 to build."""
    import re
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(meta["project"]["license"], str)
    pins = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", pins[0]) if pins else None
    assert found and int(found.group(1)) >= 77, pins
