"""One SSH connection per peer (paramiko), with keepalives, carrying a pool of `gq rpc`
channels: each channel is one relay process on the peer, reused for request after request.

Blocking, thread-safe: the daemon calls it from worker threads. Host keys are checked against
~/.ssh/known_hosts (read only, as ssh reads it) and gq's own $GQ_HOME/known_hosts, where
`gq peers add --accept-new` writes; an unknown key is refused unless accepted, a changed one
always."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import paramiko

from gq.protocol import BAD_INPUT, BadInput, GqError, encode, request
from gq.remote.spec import HostKeyRefused, PeerSpec, Unreachable

KEEPALIVE = 15.0  # seconds between SSH keepalives on an idle connection


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


class _Policy(paramiko.MissingHostKeyPolicy):
    """An unknown host key: refused, or with accept_new remembered in gq's known_hosts."""

    def __init__(self, own_file: Path, accept_new: bool, accepted: list | None):
        self.own_file, self.accept_new = own_file, accept_new
        self.accepted = [] if accepted is None else accepted

    def missing_host_key(self, client, hostname, key):
        if not self.accept_new:
            raise HostKeyRefused(
                f"{hostname} is not a known host: its key is {fingerprint(key)}. Check it (on "
                f"that host: ssh-keygen -lf /etc/ssh/ssh_host_{key.get_name().split('-')[-1]}"
                "_key.pub), then add the peer again with --accept-new")
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.accepted.append(fingerprint(key))
        self.own_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.own_file, "a") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def _ssh_config(address: str) -> dict[str, Any]:
    path = Path.home() / ".ssh" / "config"
    if not path.exists():
        return {}
    try:
        return paramiko.SSHConfig.from_path(str(path)).lookup(address)
    except Exception:  # a config paramiko cannot read: ssh's defaults, as if there were none
        return {}


def open_client(spec: PeerSpec, known_hosts: Path, timeout: float,
                accept_new: bool = False, accepted: list | None = None) -> paramiko.SSHClient:
    """An authenticated SSH connection to the peer, its host key checked. With accept_new, an
    unknown key is remembered, and its fingerprint appended to `accepted`."""
    conf = _ssh_config(spec.address)
    client = paramiko.SSHClient()
    client.load_system_host_keys()
    if known_hosts.exists():
        client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(_Policy(known_hosts, accept_new, accepted))
    identity = spec.identity or conf.get("identityfile")
    try:
        client.connect(
            conf.get("hostname", spec.address),
            port=spec.port or int(conf.get("port", 22)),
            username=spec.user or conf.get("user"),
            key_filename=identity,
            timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
            look_for_keys=identity is None,
        )
    except paramiko.BadHostKeyException as e:
        client.close()
        raise HostKeyRefused(
            f"THE HOST KEY OF {spec.name} ({e.hostname}) HAS CHANGED: it offered "
            f"{fingerprint(e.key)}, known as {fingerprint(e.expected_key)}. Someone may be "
            "intercepting the connection, or the host was reinstalled; refusing to connect. "
            f"If you know why it changed: ssh-keygen -R '{e.hostname}' -f {known_hosts} "
            "(and ~/.ssh/known_hosts), then gq peers add again") from None
    except HostKeyRefused:
        client.close()
        raise
    except paramiko.AuthenticationException as e:
        client.close()
        raise Unreachable(f"{spec.name}: SSH login as {spec.where()} refused: {e}") from None
    except (OSError, paramiko.SSHException, EOFError) as e:
        client.close()
        raise Unreachable(f"{spec.name}: cannot connect to {spec.where()}: "
                          f"{e.strerror if isinstance(e, OSError) and e.strerror else e}"
                          ) from None
    client.get_transport().set_keepalive(int(KEEPALIVE))
    return client


class _Relay:
    """One channel running `gq rpc` on the peer: a request line out, an answer line back."""

    def __init__(self, client: paramiko.SSHClient, spec: PeerSpec, timeout: float):
        self.spec = spec
        self.chan = client.get_transport().open_session(timeout=timeout)
        self.chan.exec_command(spec.remote_command())
        self.buf = b""

    def exchange(self, line: bytes, timeout: float | None) -> bytes:
        self.chan.settimeout(timeout)
        self.chan.sendall(line)
        while b"\n" not in self.buf:
            chunk = self.chan.recv(1 << 16)
            if not chunk:
                raise Unreachable(self._died())
            self.buf += chunk
        reply, self.buf = self.buf.split(b"\n", 1)
        return reply

    def _died(self) -> str:
        """Why the relay ended without an answer: its command failed, or the link went."""
        self.chan.settimeout(1.0)
        try:
            err = self.chan.recv_stderr(4096).decode(errors="replace").strip()
        except OSError:
            err = ""
        if self.chan.exit_status_ready() and self.chan.recv_exit_status() != 0:
            return (f"{self.spec.name}: `{self.spec.remote_command()}` failed there: "
                    f"{err.splitlines()[-1] if err else 'no message'} (set the command with "
                    "gq peers add --gq-command)")
        return f"{self.spec.name}: the connection closed before an answer came"

    def close(self) -> None:
        self.chan.close()


class PeerLink:
    """The connection to one peer and its idle relays. call() opens what it needs; a failure
    closes the relay it used, and the whole connection when that is dead."""

    def __init__(self, spec: PeerSpec, known_hosts: Path, connect_timeout: float):
        self.spec = spec
        self.known_hosts = known_hosts
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._client: paramiko.SSHClient | None = None
        self._idle: list[_Relay] = []

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        """Connect now (gq peers add), with accept_new as open_client takes it."""
        with self._lock:
            if self._client is None:
                self._client = open_client(self.spec, self.known_hosts, self.connect_timeout,
                                           accept_new, accepted)

    def call(self, op: str, args: dict[str, Any], timeout: float | None) -> Any:
        relay = self._take()
        try:
            reply = relay.exchange(encode(request(op, **args)), timeout)
        except Unreachable:
            relay.close()
            self._drop_if_dead()
            raise
        except (OSError, EOFError, paramiko.SSHException) as e:  # timeout included
            relay.close()
            self._drop_if_dead()
            what = "no answer in time" if isinstance(e, TimeoutError) else str(e) or type(e)
            raise Unreachable(f"{self.spec.name}: {what}") from None
        with self._lock:
            self._idle.append(relay)
        answer = json.loads(reply)
        if answer.get("down"):
            raise Unreachable(f"{self.spec.name}: {answer.get('error')}")
        if not answer.get("ok"):
            message = f"{self.spec.name}: {answer.get('error', 'unknown error')}"
            raise BadInput(message) if answer.get("code") == BAD_INPUT else GqError(message)
        return answer.get("result")

    def _take(self) -> _Relay:
        with self._lock:
            if self._client is not None and not self._client.get_transport().is_active():
                self._close_locked()  # its relays went with it
            if self._idle:
                return self._idle.pop()
            if self._client is None:
                self._client = open_client(self.spec, self.known_hosts, self.connect_timeout)
            client = self._client
        try:
            return _Relay(client, self.spec, self.connect_timeout)
        except (OSError, EOFError, paramiko.SSHException) as e:
            self._drop_if_dead()
            raise Unreachable(f"{self.spec.name}: cannot open a channel: {e}") from None

    def _drop_if_dead(self) -> None:
        with self._lock:
            if self._client is not None and not self._client.get_transport().is_active():
                self._close_locked()

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        for relay in self._idle:
            relay.close()
        self._idle.clear()
        if self._client is not None:
            self._client.close()
            self._client = None


def ping_time(link: PeerLink, timeout: float) -> tuple[dict, float]:
    """The peer's ping answer and the round trip in seconds."""
    began = time.monotonic()
    info = link.call("ping", {}, timeout)
    return info, time.monotonic() - began
