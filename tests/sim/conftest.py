"""Shared fixtures for the simulator's server tests."""

from __future__ import annotations

import warnings

# kafka-python 3.0.12 loads its JSON schemas with importlib.resources.read_text, deprecated in 3.11; the
# warning fires once per message class at import, and pytest runs with warnings as errors.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.admin
    import kafka.protocol.admin
    import kafka.protocol.metadata  # noqa: F401
