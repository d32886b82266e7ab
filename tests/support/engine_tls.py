"""Certificates for a Docker engine that listens on TCP with mutual TLS, made with ``openssl``.

Docker's convention: the engine gets ``--tlscacert``, ``--tlscert``, ``--tlskey`` and
``--tlsverify`` (it accepts only clients whose certificate its CA signed); a client's directory
holds ``ca.pem``, ``cert.pem`` and ``key.pem`` (what ``GREEN_DOCKER_TLS_DIR`` names).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"


@dataclass(frozen=True)
class EngineTls:
    ca: Path
    server_cert: Path
    server_key: Path
    client_dir: Path
    """ca.pem, cert.pem, key.pem of a client the engine trusts."""

    def dockerd_args(self) -> list[str]:
        return [
            "--tlsverify",
            f"--tlscacert={self.ca}",
            f"--tlscert={self.server_cert}",
            f"--tlskey={self.server_key}",
        ]


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}-key.pem", directory / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", DAYS,
             "-subj", f"/CN={name}", "-keyout", key, "-out", cert)  # fmt: skip
    return cert, key


def _signed(
    directory: Path, name: str, ca: tuple[Path, Path], extensions: str
) -> tuple[Path, Path]:
    """A key and a certificate for ``name`` signed by ``ca``, with ``extensions`` (x509v3)."""
    key, csr, cert = (directory / f"{name}{s}" for s in ("-key.pem", ".csr", "-cert.pem"))
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
             "-keyout", key, "-out", csr)  # fmt: skip
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
             "-days", DAYS, "-extfile", ext, "-out", cert)  # fmt: skip
    return cert, key


def client_dir(directory: Path, ca: tuple[Path, Path], name: str = "client") -> Path:
    """A client directory (ca.pem, cert.pem, key.pem) whose certificate ``ca`` signed."""
    cert, key = _signed(directory, name, ca, "extendedKeyUsage=clientAuth\n")
    out = directory / name
    out.mkdir()
    (out / "ca.pem").write_bytes(ca[0].read_bytes())
    (out / "cert.pem").write_bytes(cert.read_bytes())
    (out / "key.pem").write_bytes(key.read_bytes())
    return out


def make_engine_tls(directory: Path) -> EngineTls:
    """A CA, a server certificate for 127.0.0.1 and a trusted client's directory."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "engine-ca")
    server = _signed(
        directory,
        "server",
        ca,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    return EngineTls(ca[0], server[0], server[1], client_dir(directory, ca))


def stranger_dir(directory: Path, tls: EngineTls) -> Path:
    """A client directory with the engine's CA (it trusts the server) but a certificate signed
    by another CA: the engine must refuse it."""
    directory.mkdir(parents=True, exist_ok=True)
    out = client_dir(directory, _ca(directory, "other-ca"), "stranger")
    (out / "ca.pem").write_bytes(tls.ca.read_bytes())
    return out
