"""Tools that run inside simulated jobs (burn: hold memory and utilisation on simulated cards)."""
