"""The daemon's settings (config.toml) and the checks and views of them.

- `settings`: the file, its tables and their defaults, loaded and checked (`load_config`);
- `governance`, `telemetry`: the tables of pools and accounts, and of telemetry and offenders;
- `lab_rules`: the checks a lab's pools and reservations must pass against its cards;
- `lines`: which line of the file sets what, for errors that name it;
- `show`: the effective settings as `gq config show` prints them.
"""

from gq.config.settings import (
    AccessConfig, BackupConfig, Config, NotifyConfig, PeersConfig, PreemptionConfig,
    apply_scheduler, check_cards, load_config,
)

__all__ = [
    "AccessConfig", "BackupConfig", "Config", "NotifyConfig", "PeersConfig", "PreemptionConfig",
    "apply_scheduler", "check_cards", "load_config",
]
