"""Pure scheduling: jobs, cards and the time in; decisions with reasons out. No IO, no clock."""

from gq.policy.fairshare import FairShareConfig, RunInterval, Score, decayed_usage
from gq.policy.quotas import Limits, UserLimits
from gq.policy.queue import PendingQueue
from gq.policy.schedule import schedule
from gq.policy.decide import PreemptRule, decide
from gq.policy.types import Card, Forecast, Host, Outcome, Plan, SchedulerInput, Start

__all__ = [
    "Card", "FairShareConfig", "Forecast", "Host", "Limits", "Outcome", "Plan", "RunInterval",
    "SchedulerInput", "Score", "Start", "UserLimits", "decayed_usage", "PendingQueue",
    "schedule", "decide", "PreemptRule",
]
