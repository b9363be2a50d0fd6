"""The protocol's operations by name (their traits and shapes: gq/protocol/ops.py). Only enum
(which `re` loads anyway): clients name an operation as `Op.SHOW` on their hot paths too."""

from __future__ import annotations

from enum import StrEnum


class Op(StrEnum):
    PING = "ping"
    CONFIG = "config"
    SUBMIT = "submit"
    LIST = "list"
    SHOW = "show"
    WHY = "why"
    LOG = "log"
    GPUS = "gpus"
    CANCEL = "cancel"
    HOLD = "hold"
    RELEASE = "release"
    REQUEUE = "requeue"
    UPDATE = "update"
    WAIT = "wait"
    CLEAN = "clean"
    COMPLETE = "complete"
    ESTIMATE = "estimate"
    OFFENDERS = "offenders"
    SAMPLES = "samples"
    STATS = "stats"
    FAIRSHARE = "fairshare"
    RESERVE = "reserve"
    UNRESERVE = "unreserve"
    RESERVATIONS = "reservations"
    PEERS = "peers"
    PEER_ADD = "peer_add"
    PEER_RM = "peer_rm"
    PEER_CHECK = "peer_check"
    RELOAD = "reload"
    SHUTDOWN = "shutdown"
    TOP = "top"
    SIM_REGISTER = "sim_register"
