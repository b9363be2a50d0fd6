"""Stand-ins for libraries the test machines do not have (pynvml without a driver)."""
