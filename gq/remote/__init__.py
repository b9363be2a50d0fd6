"""The way to other hosts, below the daemon: `spec` (who a peer is, and the errors of reaching
it; light), `ssh` (one paramiko connection per peer carrying a pool of `gq rpc` channels),
`relay` (the `gq rpc` end on the peer, between the channel and the peer's daemon) and `link`
(what the daemon asks of any peer, gq or Slurm). It knows nothing of the daemon."""
