"""DKIM: the key, its DNS record, and the signature on every letter (docs/reference/transports.md#transports-dkim).

With ``mail.dkim_domain`` set, :meth:`Transport.send <vykhukhol.mail.Transport.send>`
signs each letter with a :class:`Signer` just before it is handed over (after
``dev_redirect`` rewrote ``To``, so the signature covers what is sent), over
the headers of :data:`SIGNED` that the letter has, with those of
:data:`OVERSIGNED` signed once more than they occur: rsa-sha256,
relaxed/relaxed. The signing itself is dkimpy's (``dkim.sign``), imported only
when a letter is signed, with its RSA step done by OpenSSL through the
``cryptography`` package when that is installed (the same signature, ten and
more times sooner). The key is made by :func:`keygen` with ``cryptography``
too (dkimpy's own ``dknewkey`` runs the ``openssl`` program, which a shared
host may not have).

A key that is missing or does not parse is never a reason to send unsigned:
:func:`check_key` refuses it at ``settings set``, :func:`problem` names it in
the status, and a :class:`Signer` that cannot load it raises
:class:`DkimKeyError`, which the transport turns into a temporary failure
(the run stops; nothing leaves).

dkimpy is imported without dnspython (:func:`_dkimpy`): a signer never asks
the DNS, and that import cost a signing process 60-140 ms.

Deliberately not here: verifying signatures (tests use dkimpy's ``verify``),
DNS look-ups, ed25519 keys (dkimpy signs them only through PyNaCl, which
Vykhukhol does not depend on; docs/reference/transports.md#transports-dkim-why gives what a second signature would
cost).
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vykhukhol import files
from vykhukhol.errors import BadInput, Conflict, MissingModule, StorageError
from vykhukhol.mail.alignment import aligned, domain_of
from vykhukhol.settings import KEYS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from vykhukhol.settings import Settings

KEY_BITS = 2048
MIN_KEY_BITS = 1024  # what receivers still accept (RFC 8301)
FOLDER = "dkim"      # under the data directory, 0700; each key 0600
#: What is signed, in this order, where the letter has it (docs/reference/transports.md#transports-dkim; RFC 8058
#: section 4 wants both List-Unsubscribe headers covered).
SIGNED = (b"From", b"To", b"Subject", b"Date", b"Message-ID", b"MIME-Version",
          b"Content-Type", b"Content-Transfer-Encoding", b"List-Id",
          b"List-Unsubscribe", b"List-Unsubscribe-Post")
#: Signed once more than they occur (after :data:`SIGNED`, absent ones too), so
#: that a copy added after signing breaks the signature (RFC 6376 section
#: 8.15): a second From or Subject shown instead of ours, or a one-click
#: unsubscribe link slipped into a letter that had none.
OVERSIGNED = (b"From", b"Subject", b"List-Unsubscribe", b"List-Unsubscribe-Post")
_TXT_CHUNK = 255  # the longest character-string a TXT record holds (RFC 1035 3.3)


class DkimKeyError(BadInput):
    """The DKIM key named by the settings is missing or unusable."""


def key_path(data_root: Path, domain: str, selector: str, key_file: str = "") -> Path:
    """Where the key of ``selector``/``domain`` is: ``key_file`` (relative to
    the data directory) when set, else ``data/dkim/<domain>.<selector>.key``."""
    if key_file:
        path = Path(key_file)
        return path if path.is_absolute() else Path(data_root) / path
    return Path(data_root) / FOLDER / f"{domain}.{selector}.key"


def settings_key_path(data_root: Path, settings: Settings) -> Path:
    return key_path(data_root, settings["mail.dkim_domain"], settings["mail.dkim_selector"],
                    settings["mail.dkim_key_file"])


def load_key(path: Path) -> bytes:
    """The PEM private key at ``path``, checked to be an RSA key dkimpy can sign with.

    Raises :class:`DkimKeyError` saying what is wrong (missing, unreadable,
    not a key, too short)."""
    path = Path(path)
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        raise DkimKeyError(f"the DKIM key {path} does not exist; make one with "
                           "`vykhukhol dkim keygen --domain DOMAIN`") from None
    except OSError as exc:
        raise DkimKeyError(f"the DKIM key {path} cannot be read: {exc.strerror or exc}") from None
    try:
        _dkimpy()
        from dkim.crypto import UnparsableKeyError, parse_pem_private_key
    except ImportError as exc:
        raise MissingModule.of(exc) from None
    try:
        key = parse_pem_private_key(pem)
    except (UnparsableKeyError, ValueError, IndexError, TypeError) as exc:
        raise DkimKeyError(f"the DKIM key {path} is not an RSA private key in PEM form "
                           f"({exc or type(exc).__name__})") from None
    bits = key["modulus"].bit_length()
    if bits < MIN_KEY_BITS:
        raise DkimKeyError(f"the DKIM key {path} has {bits} bits; receivers want at least "
                           f"{MIN_KEY_BITS} (make a new one with `vykhukhol dkim keygen`)")
    return pem


def _dkimpy():
    """dkimpy, imported without dnspython when nothing imported it before.

    dkimpy imports ``dns.resolver`` as it loads (its ``dnsplug``; 60-140 ms
    a process here), only to look up keys when it verifies; a
    signer never asks the DNS. So its ``dnsplug`` is stood in for while it
    loads, by a ``get_txt`` that imports the real one when first called."""
    import sys

    loaded = sys.modules.get("dkim")
    if loaded is not None:
        return loaded
    import types

    stand_in = types.ModuleType("dkim.dnsplug")
    stand_in.get_txt = _get_txt_later
    sys.modules["dkim.dnsplug"] = stand_in
    try:
        import dkim
    finally:
        if sys.modules.get("dkim.dnsplug") is stand_in:
            del sys.modules["dkim.dnsplug"]  # the next import of it is the real one
    return dkim


def _get_txt_later(name: bytes, timeout: int = 5) -> bytes | None:
    """dkimpy's DNS look-up, dnspython imported now (only a verifier asks)."""
    from dkim import dnsplug

    return dnsplug.get_txt(name, timeout)


def check_key(data_root: Path, settings: Settings) -> None:
    """Raises :class:`DkimKeyError` when signing is on and its key is unusable."""
    if settings["mail.dkim_domain"]:
        load_key(settings_key_path(data_root, settings))


#: The settings that say which key signs: changing one of them checks the key.
DKIM_KEYS = ("mail.dkim_domain", "mail.dkim_selector", "mail.dkim_key_file")


def verify_settings(data_root: Path, before: Settings, after: Settings) -> None:
    """The ``verify`` hook of :func:`vykhukhol.settings.update`: when signing
    is turned on or moved to another key, that key must work now, not fail
    every letter of the next run (raises :class:`DkimKeyError`)."""
    if any(before.raw.get(name, KEYS[name].default) != after.raw.get(name, KEYS[name].default)
           for name in DKIM_KEYS):
        check_key(data_root, after)


def problem(data_root: Path, settings: Settings) -> str | None:
    """What the status pages say about DKIM: None when all is well or it is off."""
    try:
        check_key(data_root, settings)
    except DkimKeyError as exc:
        return f"DKIM: {exc.message}; nothing is sent until it is fixed"
    return None


def misaligned(dkim_domain: str, senders: dict[str, str]) -> list[tuple[str, str]]:
    """(service, From domain) of those ``senders`` (service name -> From
    address) a signature of ``dkim_domain`` would not align with for DMARC:
    relaxed alignment, by the doctor's own rule (:mod:`vykhukhol.mail.alignment`),
    so the status pages and the doctor never disagree."""
    if not dkim_domain:
        return []
    return [(name, address.rpartition("@")[2]) for name, address in senders.items()
            if not aligned(dkim_domain, domain_of(address))]


_SIGNERS: dict[tuple, Signer] = {}  # one key read and parsed per process (per key file state)
_MAKING = threading.Lock()


def signer_for(domain: str, selector: str, key_file: Path) -> Signer:
    """The process's :class:`Signer` for this key: made (the key read and
    parsed, dkimpy and cryptography imported) on the first call, shared by
    every transport and thread after it; made anew only when the key file
    changes. Raises :class:`DkimKeyError` or :class:`MissingModule`."""
    try:
        seen = os.stat(key_file)
        state: tuple = (seen.st_mtime_ns, seen.st_size, seen.st_ino)
    except OSError:
        state = ()  # load_key says what is wrong
    which = (domain, selector, str(key_file), state)
    with _MAKING:  # serve's threads: one Signer, and dkimpy's RSA step routed once
        signer = _SIGNERS.get(which)
        if signer is None:
            signer = Signer(domain, selector, key_file)
            _SIGNERS.clear()  # an older state of the key is never used again
            _SIGNERS[which] = signer
    return signer


class Signer:
    """Signs letters as ``selector._domainkey.domain``; the key is read once.

    OpenSSL does the RSA step of dkimpy's signing for this key when it can
    (``fast``; see :func:`_route_rsa_to_openssl`); the signature is the same,
    byte for byte (tests/unit/test_dkim.py holds the two together).
    """

    def __init__(self, domain: str, selector: str, key_file: Path) -> None:
        self.domain = domain.encode("ascii")
        self.selector = selector.encode("ascii")
        self.key = load_key(key_file)
        self.fast = _route_rsa_to_openssl(self.key)

    def sign(self, data: bytes) -> bytes:
        """``data`` (a whole letter, CRLF line ends) with its DKIM-Signature on top."""
        return self.header(data) + data

    def header(self, data: bytes) -> bytes:
        """The DKIM-Signature header field of ``data`` (CRLF at its end)."""
        dkim = _dkimpy()  # imported by load_key already: a dictionary look-up

        include = signed_headers(data)
        try:
            return dkim.sign(data, self.selector, self.domain, self.key,
                             include_headers=include, canonicalize=(b"relaxed", b"relaxed"))
        except dkim.DKIMException as exc:
            raise DkimKeyError(f"DKIM signing failed: {exc}") from None


# dkimpy does RSA in pure Python (two 1024-bit modular powers a signature,
# 8-30 ms on a shared host, 10-40 times OpenSSL's time). PKCS#1 v1.5
# signatures are deterministic, so OpenSSL's signature of the digest dkimpy
# computed is the very one dkimpy would write: its RSA step is routed there
# for the keys a Signer registers; any other key, or no `cryptography`, keeps
# dkimpy's own.
# dkimpy also parses the PEM key again for every letter (in pure Python, about
# a third of what is left): the parse of a registered key is kept.
_OPENSSL_KEYS: dict[int, RSAPrivateKey] = {}  # modulus -> the cryptography package's key
_PARSED: dict[bytes, dict[str, Any]] = {}     # PEM -> dkimpy's parse of it, for registered keys
_PURE_RSA: Callable[[Any, dict[str, Any]], bytes] | None = None  # dkimpy's RSASSA_PKCS1_v1_5_sign
_PURE_PARSE: Callable[[bytes], dict[str, Any]] | None = None  # dkimpy's parse_pem_private_key


def _route_rsa_to_openssl(pem: bytes) -> bool:
    """Let OpenSSL do dkimpy's RSA step for this key; False when it cannot."""
    global _PURE_RSA, _PURE_PARSE
    try:
        dkim = _dkimpy()
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError:
        return False
    if _PURE_RSA is None:
        if not (callable(getattr(dkim, "RSASSA_PKCS1_v1_5_sign", None))
                and callable(getattr(dkim, "parse_pem_private_key", None))):
            return False  # a dkimpy that is laid out otherwise: its own RSA it is
        _PURE_RSA, _PURE_PARSE = dkim.RSASSA_PKCS1_v1_5_sign, dkim.parse_pem_private_key
        dkim.RSASSA_PKCS1_v1_5_sign, dkim.parse_pem_private_key = _rsa_sign, _parse_pem
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        return False
    if not isinstance(key, rsa.RSAPrivateKey):
        return False
    _OPENSSL_KEYS[key.private_numbers().public_numbers.n] = key
    _PARSED[pem] = _parse_pem(pem)
    return True


def _parse_pem(pem: bytes) -> dict[str, Any]:
    """dkimpy's ``parse_pem_private_key``, remembered for a registered key."""
    parsed = _PARSED.get(pem)
    if parsed is not None:
        return parsed
    assert _PURE_PARSE is not None  # kept before this function stood in for it
    return _PURE_PARSE(pem)


def _rsa_sign(digest: Any, private_key: dict[str, Any]) -> bytes:
    """dkimpy's ``RSASSA_PKCS1_v1_5_sign(hash, key)``, by OpenSSL for a registered key."""
    key = _OPENSSL_KEYS.get(private_key.get("modulus", 0))  # 0: no key's modulus
    if key is None or getattr(digest, "name", "").lower() != "sha256":
        assert _PURE_RSA is not None  # kept before this function stood in for it
        return _PURE_RSA(digest, private_key)
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, utils

    return key.sign(digest.digest(), padding.PKCS1v15(), utils.Prehashed(hashes.SHA256()))


def signed_headers(data: bytes) -> list[bytes]:
    """The ``h=`` list for this letter: each field of :data:`SIGNED` as often
    as the letter has it, then each of :data:`OVERSIGNED` once more than that
    (dkimpy signs a name listed past its last copy as an empty field)."""
    counts = _header_counts(data)
    include = [name for name in SIGNED for _ in range(counts.get(name.lower(), 0))]
    return include + [name for name in OVERSIGNED]


def _header_counts(data: bytes) -> dict[bytes, int]:
    """How often each header field (lower-cased name) stands in the letter's head."""
    head = data.split(b"\r\n\r\n", 1)[0]
    counts: dict[bytes, int] = {}
    for line in head.split(b"\r\n"):
        if line and line[:1] not in (b" ", b"\t"):
            name = line.split(b":", 1)[0].strip().lower()
            counts[name] = counts.get(name, 0) + 1
    return counts


# --------------------------------------------------------------------------- keys


def dns_record(domain: str, selector: str, public_der: bytes) -> str:
    """The TXT record to publish for a public key (DER SubjectPublicKeyInfo),
    its text cut into quoted strings of at most 255 characters."""
    text = "v=DKIM1; k=rsa; p=" + base64.b64encode(public_der).decode("ascii")
    chunks = [text[i:i + _TXT_CHUNK] for i in range(0, len(text), _TXT_CHUNK)]
    return f"{selector}._domainkey.{domain}. IN TXT " + " ".join(f'"{c}"' for c in chunks)


def keygen(data_root: Path, domain: str, selector: str) -> tuple[Path, str]:
    """Make a new RSA key for ``selector``/``domain`` in ``data/dkim/`` (0600,
    the folder 0700); returns its path and the DNS record to publish.

    An existing key is never replaced (its record may be published): raises
    :class:`Conflict`; choose a new selector to change keys."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = key_path(data_root, domain, selector)
    if path.exists():
        raise Conflict(f"{path} exists already (its record may be published); "
                       "to change keys, make one with a new --selector")
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = key.private_bytes(serialization.Encoding.PEM,
                            serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    except OSError as exc:
        raise StorageError(f"cannot make {folder}: {exc.strerror or exc}") from exc
    files.atomic_write(path, pem.decode("ascii"), new_mode=0o600)
    return path, dns_record(domain, selector, public)

