"""Letters per second of one `vykhukhol cron` run over SMTP with DKIM signing
off and on, in the same run of this script, rounds alternating.

Two data directories alike in everything (one service, the same letter, the
same due subscribers, SMTP to one aiosmtpd sink in its own process, durable
journal) except that one has `vykhukhol dkim keygen` run on it. Each round
runs `vykhukhol cron` on each; the rates are letters over the whole process
and over the sending phase (first to last letter at the server). Then, in
this process, what one signature costs and where its time goes.

    python tests/bench/bench_dkim.py [--letters 1000] [--rounds 3]
    python tests/bench/bench_dkim.py --per-letter   # only what one letter costs

The per-letter table includes a second signature, ed25519-sha256 (RFC 8463),
when PyNaCl is installed (dkimpy signs ed25519 only through it).

Goal: signing costs at most 25% of the throughput (on >= 0.75 x off).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, home of support/

from support import benchkit as kit  # noqa: E402
from vykhukhol import services as svc  # noqa: E402
from vykhukhol import settings as settings_mod  # noqa: E402
from vykhukhol.mail import compose  # noqa: E402
from vykhukhol.services import subscribers as subs  # noqa: E402
from vykhukhol.timeutil import now  # noqa: E402

BODY = """Здравствуйте, {{ name or "друг" }}!

Это первое письмо серии. Hello {{ name or "friend" }}, this is lesson one of
the series you subscribed to on {{ date }}. It is about as long as a real
lesson: a few paragraphs of text, some of them in Russian, so that the
quoted-printable encoding has work to do.

Выхухоль — небольшое полуводное млекопитающее. Она живёт в норах по берегам
рек и озёр, хорошо плавает и ныряет, а на суше передвигается неуклюже.

Чтобы отписаться, откройте ссылку: {{ unsubscribe_url }}
"""


def prepare(base: Path, name: str, port: int, letters: int, dkim: bool):
    data = kit.make_data(base / name, serial_per_run=letters, time_limit="3000s",
                         mail__transport="smtp", mail__smtp_host="127.0.0.1",
                         mail__smtp_port=port, mail__from_email="list@example.org")
    if dkim:
        kit.vykhukhol("--data", str(data.root), "dkim", "keygen", "--domain", "example.org")
    service = kit.add_service(data, "news", letters=[("Lesson 1 — {{ name or \"friend\" }}",
                                                      "0s", BODY)])
    return data, service


def reset(data, service, letters: int) -> None:
    kit.write_subscribers(service.subscribers_path, letters, "due")
    for path in data.state.glob("due-*"):
        path.unlink()
    for path in data.state.glob("*.journal"):
        path.unlink()


def run_cron(data, sink: kit.SmtpSink, letters: int) -> dict:
    sink.reset()
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data.root), "cron"],
                          capture_output=True, text=True, env=kit.subprocess_env(), timeout=3000)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"vykhukhol cron failed: {done.stderr}")
    stats = sink.stats()
    if stats["count"] != letters:
        raise RuntimeError(f"the run sent {stats['count']} letters, {letters} expected:\n"
                           f"{done.stdout}")
    return {"wall": wall, "span": stats["last"] - stats["first"], "load": kit.load()}


def per_letter(data, service, count: int = 100) -> list[tuple[str, str]]:
    """In this process: making a letter, signing it, and where signing's time goes."""
    import hashlib

    import dkim

    from vykhukhol.mail import dkim as mail_dkim

    settings = settings_mod.load(data.settings)
    [letter] = svc.load_letters(service)
    people = list(subs.subscribers(service.subscribers_path))[:count]
    presses: dict = {}
    began = time.perf_counter()
    made = [compose.series_letter(service, letter, settings, p.email, p.name, "0123456789abcdef",
                                  now(), presses).data for p in people]
    make = (time.perf_counter() - began) / len(made)
    signer = mail_dkim.Signer("example.org", "vykhukhol",
                              mail_dkim.settings_key_path(data.root, settings))

    def timed(step) -> float:
        began = time.perf_counter()
        for data in made:
            step(data)
        return (time.perf_counter() - began) / len(made)

    sign = timed(signer.sign)
    [openssl] = [key for key in mail_dkim._OPENSSL_KEYS.values()]
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, utils

    digest = hashlib.sha256(b"x").digest()
    rsa = timed(lambda _: openssl.sign(digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA256())))
    profile = cProfile.Profile()
    profile.enable()
    for data in made:
        signer.sign(data)
    profile.disable()
    stats = pstats.Stats(profile)
    top = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:4]  # tottime
    hot = "; ".join(f"{func[2]} {value[2] / len(made) * 1000:.2f} ms" for func, value in top)
    routed = dkim.RSASSA_PKCS1_v1_5_sign
    dkim.RSASSA_PKCS1_v1_5_sign = mail_dkim._PURE_RSA
    try:
        pure = timed(signer.sign) if count else 0.0
    finally:
        dkim.RSASSA_PKCS1_v1_5_sign = routed
    rows_ed25519 = ed25519_cost(made, timed)
    return [("make one letter (press)", kit.ms(make)),
            ("sign it (dkimpy, RSA by OpenSSL)", kit.ms(sign)),
            ("  of which OpenSSL's RSA-2048 alone", kit.ms(rsa)),
            ("  hottest functions (profiled, per letter)", hot),
            ("sign it with dkimpy's own pure-Python RSA", kit.ms(pure)),
            *rows_ed25519]


def ed25519_cost(made: list[bytes], timed) -> list[tuple[str, str]]:
    """What a second signature, ed25519-sha256 (RFC 8463), would cost a letter:
    dkimpy signs it only through PyNaCl, which Vykhukhol does not declare;
    measured when it is installed (`pip install pynacl`)."""
    try:
        import nacl.signing
    except ImportError:
        return [("sign it with ed25519-sha256 (dkimpy + PyNaCl)", "PyNaCl not installed")]
    import base64

    import dkim

    from vykhukhol.mail import dkim as mail_dkim

    seed = base64.b64encode(bytes(nacl.signing.SigningKey.generate()))

    def sign(data: bytes) -> bytes:
        return dkim.sign(data, b"ed", b"example.org", seed,
                         include_headers=mail_dkim.signed_headers(data),
                         canonicalize=(b"relaxed", b"relaxed"),
                         signature_algorithm=b"ed25519-sha256")

    return [("sign it with ed25519-sha256 (dkimpy + PyNaCl)", kit.ms(timed(sign)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--letters", type=int, default=1000, help="due subscribers (and letters)")
    parser.add_argument("--rounds", type=int, default=3, help="off/on pairs, alternating")
    parser.add_argument("--tmp", default=None, help="folder for the scratch data")
    parser.add_argument("--per-letter", action="store_true",
                        help="only the in-process costs of one letter (no cron runs)")
    args = parser.parse_args()
    if args.per_letter:
        base = Path(tempfile.mkdtemp(prefix="vyk-bench-dkim-", dir=args.tmp))
        try:
            data, service = prepare(base, "on", 25, 100, dkim=True)
            reset(data, service, 100)
            print(kit.table(["in process, per letter", "time"], per_letter(data, service)))
        finally:
            shutil.rmtree(base, ignore_errors=True)
        print(f"load at end {kit.load()}")
        return

    kit.banner(f"bench_dkim: {args.letters} letters, {args.rounds} rounds")
    base = Path(tempfile.mkdtemp(prefix="vyk-bench-dkim-", dir=args.tmp))
    rows = []
    results: dict[str, list[dict]] = {"DKIM off": [], "DKIM on": []}
    try:
        with kit.SmtpSink() as sink:
            sites = {"DKIM off": prepare(base, "off", sink.port, args.letters, dkim=False),
                     "DKIM on": prepare(base, "on", sink.port, args.letters, dkim=True)}
            for round_no in range(1, args.rounds + 1):
                for name, (data, service) in sites.items():
                    reset(data, service, args.letters)
                    r = run_cron(data, sink, args.letters)
                    results[name].append(r)
                    rows.append((round_no, name, f"{r['wall']:.3f}",
                                 f"{args.letters / r['wall']:.0f}", f"{r['span']:.3f}",
                                 f"{(args.letters - 1) / r['span']:.0f}", r["load"]))
            data, service = sites["DKIM on"]
            reset(data, service, args.letters)
            detail = per_letter(data, service)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(kit.table(["round", "sender", "wall s", "letters/s (wall)", "send span s",
                     "letters/s (span)", "load 1/5/15"], rows))

    def rate(name: str, key: str) -> float:
        return kit.median([(args.letters if key == "wall" else args.letters - 1) / r[key]
                           for r in results[name]])

    print()
    summary = []
    for key, what in (("wall", "whole process"), ("span", "sending phase")):
        off, on = rate("DKIM off", key), rate("DKIM on", key)
        summary.append([what, f"{off:.0f}", f"{on:.0f}", f"{on / off:.2f}",
                        f"{(1 / on - 1 / off) * 1000:.2f}"])
    print(kit.table(["median letters/s", "DKIM off", "DKIM on", "on/off",
                     "ms added per letter"], summary))
    print()
    print(kit.table(["in process, per letter", "time"], detail))
    ratio = rate("DKIM on", "wall") / rate("DKIM off", "wall")
    print(f"\ngoal on >= 0.75 x off (whole process): {'met' if ratio >= 0.75 else 'MISSED'} "
          f"({ratio:.2f}); load at end {kit.load()}; pid {os.getpid()}")


if __name__ == "__main__":
    main()
