"""Failure triage: why a job died, from its log and what the daemon saw (pure, no IO)."""
