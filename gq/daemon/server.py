"""The Unix-socket server: one JSON request and one JSON response per line.

The caller is whoever the kernel says is at the other end (SO_PEERCRED), never what a
request claims. Requests are served in turns per user (admission.py); each user may hold a
few connections open, none may idle, and no request line may exceed [daemon] max_request.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import pwd
import socket

from gq.daemon.admission import ConnectionCap, Turns
from gq.daemon.core import Daemon
from gq.daemon.diskfull import is_disk_full, refusal
from gq.daemon.ops import HANDLERS
from gq.daemon.peers.route import ROUTED, route
from gq.daemon.submission import Caller
from gq.protocol.attach import peer_creds
from gq.store.lock_holder import is_locked, locked_message
from gq.protocol import (
    LOCKED_ADVICE, VERSION, BadInput, DatabaseLocked, GqError, encode, error, ok,
)
from gq.protocol.ops import parse_op
from gq.units import format_size

log = logging.getLogger("gq.daemon")


def peer_caller(sock: socket.socket) -> Caller:
    pid, uid = peer_creds(sock)
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Caller(uid=uid, user=user, pid=pid)


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")  # Python reads NaN and Infinity; JSON has none


async def dispatch(daemon: Daemon, turns: Turns, caller: Caller, line: bytes) -> dict:
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
        op = parse_op(req.get("op"))
        if op is None:
            raise BadInput(f"unknown operation {str(req.get('op'))[:100]!r}")
        handler = HANDLERS[op]
        args = req.get("args") or {}
        if not isinstance(args, dict):
            raise BadInput("malformed request: args must be an object")
        # Whatever the request says of a user, the caller is who the kernel says (peer_caller).
        # Requests for other hosts go through gq/daemon/peers/route.py; awaitables (`wait`, peers)
        # finish outside the turns.
        unsynced = daemon.store.unsynced
        if op in ROUTED:
            result = await turns.run(caller.uid, lambda: route(daemon, caller, op, args, handler))
        else:
            result = await turns.run(caller.uid, lambda: handler(daemon, caller, args))
        if inspect.isawaitable(result):
            result = await result
        if daemon.store.unsynced != unsynced:  # a submit: answered once it is on disk
            await daemon.group_commit.covering(daemon.store.unsynced)
        return ok(result)
    except GqError as e:
        return error(e)
    except Exception as e:  # a bug must cost one request, not the daemon
        if is_disk_full(e):
            return error(GqError(refusal(daemon.layout.home)))
        if is_locked(e):  # rolled back whole: the same request may come again
            return error(DatabaseLocked(f"{locked_message(str(daemon.layout.db))}: "
                                        f"{LOCKED_ADVICE}"))
        log.exception("request failed")
        return error(GqError(f"internal error in the daemon: {e.__class__.__name__}: {e}"))


async def handle_connection(
    daemon: Daemon, turns: Turns, cap: ConnectionCap, reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter
) -> None:
    access = daemon.config.access
    caller = peer_caller(writer.get_extra_info("socket"))
    if not cap.admit(caller.uid):
        log.warning("refused a connection of %s (uid %s): %s already open", caller.user,
                    caller.uid, cap.cap)
        msg = (f"{caller.user} already has {cap.cap} connections open to the daemon, as many "
               "as [daemon] max_connections_per_user allows; retry once some have closed")
        writer.write(encode(error(GqError(msg))))
        writer.close()
        return
    try:
        while True:
            try:
                async with asyncio.timeout(access.idle_timeout):  # idle or trickling: closed
                    line = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError:
                msg = (f"request larger than {format_size(access.max_request)} refused "
                       "([daemon] max_request)")
                writer.write(encode(error(BadInput(msg))))
                break
            except (asyncio.IncompleteReadError, TimeoutError):
                break
            writer.write(encode(await dispatch(daemon, turns, caller, line)))
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    except asyncio.CancelledError:
        # The daemon stops with this client still connected (gq top, the `gq daemon stop`
        # that asked): the connection ends with it. Not re-raised: Python 3.11's stream
        # server logs a cancelled handler as an unhandled error, traceback and all.
        pass
    finally:
        cap.release(caller.uid)
        writer.close()


async def serve(daemon: Daemon, sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    daemon.attach(loop)
    turns, cap = Turns(), ConnectionCap(daemon.config.access.max_connections)
    server = await asyncio.start_unix_server(
        lambda r, w: handle_connection(daemon, turns, cap, r, w), sock=sock,
        limit=daemon.config.access.max_request,
    )

    async def ticker() -> None:
        locked = False  # said once while another process holds the database
        while True:
            await asyncio.sleep(daemon.config.tick)
            try:
                daemon.tick()
                locked = False
            except Exception as e:
                if not is_locked(e):
                    log.exception("housekeeping failed")
                elif not locked:
                    locked = True
                    log.warning("housekeeping waits: %s", locked_message(str(daemon.layout.db)))

    tasks = [asyncio.create_task(ticker()), asyncio.create_task(turns.serve())]
    async with server:
        await daemon.loop_stop.wait()
    for task in tasks:
        task.cancel()
