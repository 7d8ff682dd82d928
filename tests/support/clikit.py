"""``refused``: a command that must say no in one line and leave the data
directory exactly as it was.
"""

from __future__ import annotations

from pathlib import Path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``, by relative path."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def refused(site, *args: str, code: int = 1, says: tuple[str, ...] = ()) -> str:
    """Run ``vykhukhol ARGS`` in-process and check it was refused cleanly; return stderr."""
    before = snapshot(site.root)
    rc, out, err = site.call(*args)
    shown = f"vykhukhol {' '.join(map(repr, args))} → {rc}\nstdout: {out!r}\nstderr: {err!r}"
    assert rc == code, shown
    assert out == "", shown
    assert len(err.splitlines()) == 1 and err.strip(), f"not one line on stderr: {shown}"
    assert err.startswith("vykhukhol"), shown
    for word in says:
        assert word.lower() in err.lower(), f"{word!r} not in the message: {shown}"
    assert snapshot(site.root) == before, f"the data directory changed: {shown}"
    return err.strip()
