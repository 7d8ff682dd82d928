"""health.bytecode_missing: the status warning for a lib/ whose bytecode the
CGI user could not write (docs/design/startup.md#startup-rules). Real files, real compileall."""

from __future__ import annotations

import compileall
import os
import shutil
from pathlib import Path

from vykhukhol.watch import health


def make_lib(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    for name in health.KEY_MODULES:
        (lib / name).parent.mkdir(parents=True, exist_ok=True)
        (lib / name).write_text("VALUE = 1\n", encoding="utf-8")
    return lib


def test_a_lib_never_compiled_is_reported(tmp_path: Path) -> None:
    lib = make_lib(tmp_path)
    assert health.bytecode_missing(lib) == list(health.KEY_MODULES)


def test_a_compiled_lib_is_not_reported(tmp_path: Path) -> None:
    lib = make_lib(tmp_path)
    assert compileall.compile_dir(str(lib), quiet=1)
    assert health.bytecode_missing(lib) == []


def test_a_module_uploaded_again_after_compiling_is_reported(tmp_path: Path) -> None:
    lib = make_lib(tmp_path)
    compileall.compile_dir(str(lib), quiet=1)
    source = lib / health.KEY_MODULES[1]
    source.write_text("VALUE = 22\n", encoding="utf-8")  # another size
    info = source.stat()
    os.utime(source, (info.st_atime, info.st_mtime + 5))
    assert health.bytecode_missing(lib) == [health.KEY_MODULES[1]]


def test_bytecode_of_another_python_is_reported(tmp_path: Path) -> None:
    lib = make_lib(tmp_path)
    compileall.compile_dir(str(lib), quiet=1)
    for cache in lib.rglob("__pycache__"):
        for compiled in cache.iterdir():
            compiled.write_bytes(b"\x00\x00\r\n" + compiled.read_bytes()[4:])
    assert health.bytecode_missing(lib) == list(health.KEY_MODULES)
    shutil.rmtree(lib)


def test_checked_hash_bytecode_survives_new_file_times_but_not_new_content(tmp_path: Path) -> None:
    import py_compile

    lib = make_lib(tmp_path)
    compileall.compile_dir(str(lib), quiet=1,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    for name in health.KEY_MODULES:  # an FTP upload: the same bytes, new times
        os.utime(lib / name, (1, 1))
    assert health.bytecode_missing(lib) == []
    (lib / health.KEY_MODULES[0]).write_text("VALUE = 2\n", encoding="utf-8")
    assert health.bytecode_missing(lib) == [health.KEY_MODULES[0]]
