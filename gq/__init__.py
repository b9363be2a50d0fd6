"""gq: a GPU job queue for shared lab workstations."""

__version__ = "0.1.0"
