"""Piping one written letter to ``sendmail -i -f ENVELOPE -- RCPT``.

What the sendmail transport (:mod:`.sendmail`) does with a letter's bytes,
apart from it so that the confirmation request a subscribe post writes
without the e-mail package (:mod:`.confirm_letter`) is handed over by the
same steps and fails the same way.
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.mail.failures import DeliveryError, PermanentFailure, TemporaryFailure, _describe

_NOT_FIRST = ("-", "|")  # an option, a pipe to a program: never the first character for sendmail

# sysexits.h codes that describe this machine, not the recipient: retry later.
_SENDMAIL_TEMPORARY = {
    71: "EX_OSERR",
    73: "EX_CANTCREAT",
    74: "EX_IOERR",
    75: "EX_TEMPFAIL",
    77: "EX_NOPERM",
    78: "EX_CONFIG",
}


def refusal(path: str, envelope_from: str, recipient: str) -> DeliveryError | None:
    """Why nothing may be run for this letter, or None: the program must be an
    absolute path to an executable file, and no address given to it may read
    as an option or a file (docs/reference/security.md#security-owner)."""
    problem = files.program_problem(path or "")
    if problem:
        return TemporaryFailure(f"cannot run mail.sendmail_path: {problem}", None, "local")
    if "/" in envelope_from or envelope_from.startswith(_NOT_FIRST):
        return TemporaryFailure(f"envelope sender {envelope_from!r} may not contain / or start "
                                "with - or | (fix from_email or mail.bounce_address)", None, "local")
    if recipient.startswith(_NOT_FIRST + ("/",)):
        return PermanentFailure(f"recipient {recipient!r} cannot be given to sendmail", None, "local")
    return None


def pipe(path: str, timeout: float, payload: bytes, envelope_from: str, recipient: str) -> None:
    """Run ``path -i -f envelope_from -- recipient`` with ``payload`` (Unix line
    ends) on its standard input; raises :class:`TemporaryFailure` or
    :class:`PermanentFailure` as its exit status says."""
    argv = [path, "-i", "-f", envelope_from, "--", recipient]
    import subprocess  # here: every run that sends over SMTP imports the transport

    try:
        done = subprocess.run(argv, input=payload, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise TemporaryFailure(f"{path} did not finish within {timeout:g} s", None,
                               "local") from None
    except OSError as exc:  # missing, not executable
        raise TemporaryFailure(f"cannot run {path}: {_describe(exc)}", None, "local") from None
    if done.returncode == 0:
        return
    said = " ".join(done.stderr.decode("utf-8", "replace").split())[-500:]
    if done.returncode < 0:
        raise TemporaryFailure(
            f"{path} was killed by signal {-done.returncode}: {said}".rstrip(": "), None, "local")
    name = _SENDMAIL_TEMPORARY.get(done.returncode)
    words = f"{path} exited with {done.returncode}" + (f" ({name})" if name else "")
    if said:
        words += f": {said}"
    if name:
        raise TemporaryFailure(words, None, "local")
    raise PermanentFailure(words, None, "local")
