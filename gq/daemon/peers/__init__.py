"""Peers: other hosts that run gq, reached over SSH by running `gq rpc` there (docs/peers.md)."""
