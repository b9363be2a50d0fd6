"""The Unix-socket server: one JSON request and one JSON response per line.

The caller is whoever the kernel says is at the other end (SO_PEERCRED), never what a
request claims.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import pwd
import socket
import struct

from gq.daemon.core import Daemon
from gq.daemon.diskfull import is_disk_full, refusal
from gq.daemon.ops import OPS
from gq.daemon.submission import Caller
from gq.protocol import MAX_LINE, VERSION, BadInput, GqError, encode, error, ok

log = logging.getLogger("gq.daemon")


def peer_caller(sock: socket.socket) -> Caller:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Caller(uid=uid, user=user)


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")  # Python reads NaN and Infinity; JSON has none


async def dispatch(daemon: Daemon, caller: Caller, line: bytes) -> dict:
    try:
        try:
            req = json.loads(line, parse_constant=_not_json)
        except ValueError:
            raise BadInput("malformed request: not JSON") from None
        except RecursionError:
            raise BadInput("malformed request: nested too deeply") from None
        if not isinstance(req, dict):
            raise BadInput("malformed request: expected a JSON object")
        version = req.get("v")
        if type(version) is not int or version != VERSION:  # true == 1.0 == 1 in Python
            raise GqError(
                f"protocol version {req.get('v')!r} is not {VERSION}: the gq command and the "
                "daemon differ in version; restart the daemon (gq daemon stop)"
            )
        op = req.get("op")
        handler = OPS.get(op) if isinstance(op, str) else None
        if handler is None:
            raise BadInput(f"unknown operation {str(op)[:100]!r}")
        args = req.get("args") or {}
        if not isinstance(args, dict):
            raise BadInput("malformed request: args must be an object")
        result = handler(daemon, caller, args)
        if inspect.isawaitable(result):
            result = await result
        return ok(result)
    except GqError as e:
        return error(e)
    except Exception as e:  # a bug must cost one request, not the daemon
        if is_disk_full(e):
            return error(GqError(refusal(daemon.layout.home)))
        log.exception("request failed")
        return error(GqError(f"internal error in the daemon: {e.__class__.__name__}: {e}"))


async def handle_connection(
    daemon: Daemon, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    caller = peer_caller(writer.get_extra_info("socket"))
    try:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError:
                msg = f"request larger than {MAX_LINE >> 20} MiB refused"
                writer.write(encode(error(BadInput(msg))))
                break
            except asyncio.IncompleteReadError:
                break
            writer.write(encode(await dispatch(daemon, caller, line)))
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def serve(daemon: Daemon, sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    daemon.attach(loop)
    server = await asyncio.start_unix_server(
        lambda r, w: handle_connection(daemon, r, w), sock=sock, limit=MAX_LINE
    )

    async def ticker() -> None:
        while True:
            await asyncio.sleep(daemon.config.tick)
            try:
                daemon.tick()
            except Exception:
                log.exception("housekeeping failed")

    tick_task = asyncio.create_task(ticker())
    async with server:
        await daemon.loop_stop.wait()
    tick_task.cancel()
