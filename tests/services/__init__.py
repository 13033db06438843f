"""Real services for tests: each on a free loopback port with its own data dir, stopped by its PID."""
