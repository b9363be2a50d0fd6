"""The `gq` command: thin commands that parse, call the daemon and format."""
