"""tests/support/servers.py's ``free_port``: the port a test's server is about to bind."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.support import servers
from tests.support.servers import FIRST_PORT, PORT_BAND, free_port


def _ephemeral_floor() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


def test_ports_come_from_the_workers_band_below_the_kernels_ephemeral_range(monkeypatch):
    """A port of the ephemeral range may be handed to another worker's ``bind`` to 0 or to an
    outgoing connection before the server binds it."""
    for worker in ("gw0", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        band = FIRST_PORT + PORT_BAND * int(worker[2:])
        ports = [free_port() for _ in range(50)]
        assert len(set(ports)) == 50
        assert all(band <= p < band + PORT_BAND for p in ports), ports
        assert max(ports) < _ephemeral_floor()


def test_a_port_something_listens_on_is_never_given(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setattr(servers, "_ports", iter(range(PORT_BAND)))
    taken = FIRST_PORT + PORT_BAND  # the band's first port
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", taken))
        listener.listen()
        assert free_port() == taken + 1


def test_two_processes_of_one_worker_start_apart():
    """Each process starts at a random place in its band (a suite run beside another, or a
    service process that imports the module, rarely meets the same ports)."""
    code = "from tests.support.servers import free_port; print(free_port())"
    env = {"PYTEST_XDIST_WORKER": "gw2", "PATH": ""}
    starts = {
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True, cwd=servers.REPO).stdout.strip()
        for _ in range(4)
    }  # fmt: skip
    assert len(starts) > 1
