"""Pure scheduling: jobs, cards and the time in; decisions with reasons out. No IO, no clock."""

from gq.policy.schedule import queue_order, schedule
from gq.policy.types import Card, Forecast, Host, Outcome, Plan, SchedulerInput, Start

__all__ = [
    "Card", "Forecast", "Host", "Outcome", "Plan", "SchedulerInput", "Start", "queue_order",
    "schedule",
]
