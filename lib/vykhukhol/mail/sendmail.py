"""The sendmail transport: ``sendmail -i -f ENVELOPE -- RCPT``, the letter on stdin."""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage

from vykhukhol import files
from vykhukhol.mail.headers import _LF_POLICY
from vykhukhol.mail.message import Outgoing
from vykhukhol.mail.transport import PermanentFailure, TemporaryFailure, Transport, _describe

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


class SendmailTransport(Transport):
    """Pipes each letter to ``sendmail -i -f ENVELOPE -- RCPT`` (Unix line ends);
    ENVELOPE is the letter's tagged bounce address (docs/reference/transports.md#transports-envelope).

    The program must be an absolute path to an executable file, and no address
    given to it may read as an option or a file (docs/reference/security.md#security-owner). A program that
    cannot run or such an envelope sender (a hand-edited setting) is a
    temporary failure: nothing is run, and the letter waits until the setting
    is fixed. Such a recipient is a permanent failure of that letter."""

    def _deliver(self, msg: EmailMessage | Outgoing, recipient: str, envelope_from: str,
                 ready: Callable[[], None], meanwhile: Callable[[], object]) -> None:
        path = self.config.sendmail_path
        problem = files.program_problem(path or "")
        if problem:
            raise TemporaryFailure(f"cannot run mail.sendmail_path: {problem}", None, "local")
        if "/" in envelope_from or envelope_from.startswith(_NOT_FIRST):
            raise TemporaryFailure(f"envelope sender {envelope_from!r} may not contain / or start "
                                   "with - or | (fix from_email or mail.bounce_address)", None, "local")
        if recipient.startswith(_NOT_FIRST + ("/",)):
            raise PermanentFailure(f"recipient {recipient!r} cannot be given to sendmail", None, "local")
        ready()
        meanwhile()
        # A written letter goes as written (its DKIM signature covers these
        # bytes), only with Unix line ends, as a local sendmail wants them.
        payload = msg.data.replace(b"\r\n", b"\n") if isinstance(msg, Outgoing) \
            else msg.as_bytes(policy=_LF_POLICY)
        argv = [path, "-i", "-f", envelope_from, "--", recipient]
        import subprocess  # here: every run that sends over SMTP imports this module

        try:
            done = subprocess.run(
                argv,
                input=payload,
                capture_output=True,
                timeout=self.config.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TemporaryFailure(
                f"{path} did not finish within {self.config.timeout:g} s", None, "local"
            ) from None
        except OSError as exc:  # missing, not executable
            raise TemporaryFailure(f"cannot run {path}: {_describe(exc)}", None, "local") from None
        if done.returncode == 0:
            return
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[-500:]
        if done.returncode < 0:
            raise TemporaryFailure(
                f"{path} was killed by signal {-done.returncode}: {said}".rstrip(": "),
                None,
                "local",
            )
        name = _SENDMAIL_TEMPORARY.get(done.returncode)
        words = f"{path} exited with {done.returncode}" + (f" ({name})" if name else "")
        if said:
            words += f": {said}"
        if name:
            raise TemporaryFailure(words, None, "local")
        raise PermanentFailure(words, None, "local")

