"""Runs the StateStore contract against every implementation in conftest.IMPLEMENTATIONS."""

from __future__ import annotations

from tests.store.contract import StateStoreContract


class TestStateStore(StateStoreContract):
    pass
