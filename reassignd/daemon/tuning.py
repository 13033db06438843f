"""The settings in force: the config file's limits and auto-throttle, with the runtime changes operators
made over them (the rules are daemon/settings.py's; this keeps them and the store's record in step).

A change is all or nothing, checked with everything else in force, committed to the store before it
applies (compare and set: another daemon may write the record between our read and our commit), and
applied between two cycles: the controller holds its cycle lock around every call that changes anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from reassignd import config_keys
from reassignd.daemon import settings as runtime_settings
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.settings import FileSettings
from reassignd.engine import Limits
from reassignd.engine.journal import Event, EventKind
from reassignd.engine.run import AutoThrottle, Settings
from reassignd.logs import get_logger
from reassignd.model import InvalidInputError, Problem
from reassignd.store.aio import AsyncStore
from reassignd.store.base import SettingsConflict, WriteBatch
from reassignd.suggest import unknown_key

log = get_logger("reassignd.controller")

COMMIT_ATTEMPTS = 3
Commit = Callable[[str | None], Awaitable[None]]
"""A checked settings change, to commit (journaled with the plan in progress, if any) under the cycle lock."""


class Tuning:
    def __init__(self, store: AsyncStore, file_settings: FileSettings, clock: Callable[[], float]) -> None:
        self.store = store
        self.file_settings = file_settings
        self.clock = clock
        self.limits: Limits = file_settings.limits
        self.auto_throttle: AutoThrottle | None = file_settings.auto_throttle
        self.runtime: dict[str, Any] = {}
        """The runtime changes in force (daemon/settings.py), by key."""
        self._version = 0
        self._document: dict[str, Any] = {}

    @property
    def settings(self) -> Settings:
        return Settings(self.limits, self.auto_throttle)

    def to_json(self) -> JSON:
        auto = self.auto_throttle
        return {
            **self.limits.to_mapping(),
            config_keys.AUTO_THROTTLE_ENABLE: auto is not None,
            config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND: auto.step
            if auto
            else self.file_settings.auto_step,
            config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND: auto.ceiling
            if auto
            else self.file_settings.auto_max,
        }

    async def load(self, *, leading: bool) -> None:
        """The store's record, with what the config file took back since dropped (by the leader only)."""
        record = await self.store.settings()
        outcome = runtime_settings.reconcile(record.document, self.file_settings)
        for key, why in sorted(outcome.kept.items()):
            log.info("runtime setting kept", key=key, why=why)
        for key, why in sorted(outcome.dropped.items()):
            log.warning("runtime setting dropped", key=key, why=why)
        if outcome.changed and leading:
            await self.store.commit(WriteBatch().put_settings(record.version, outcome.document))
            record = await self.store.settings()
        self._apply(record.version, dict(record.document))

    async def reloaded(self, file_settings: FileSettings, *, leading: bool) -> None:
        """SIGHUP: the new config file's values, with the runtime changes that still stand over them."""
        before = self.limits.to_mapping()
        self.file_settings = file_settings
        await self.load(leading=leading)
        after = self.limits.to_mapping()
        diff = {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v}
        log.info("settings after reload", changed=diff, runtime=sorted(self.runtime))

    def _apply(self, version: int, document: dict[str, Any]) -> None:
        try:
            in_force = runtime_settings.effective(document, self.file_settings)
        except InvalidInputError as exc:  # a record no longer valid with this release: the file's values
            log.error(
                "runtime settings refused; the config file's values apply",
                problems=[str(p) for p in exc.problems],
            )
            in_force = runtime_settings.effective({}, self.file_settings)
        self._version, self._document = version, document
        self.limits = in_force.limits
        self.auto_throttle = in_force.auto_throttle
        self.runtime = dict(in_force.overrides)

    def change(self, changes: Mapping[str, Any], known: set[str] | None, where: str) -> Commit:
        """All or nothing: every value checked with everything else in force, bad input refused now, before
        the store is touched, and checked again against the record as stored when the commit runs."""
        allowed = known if known is not None else set(runtime_settings.RUNTIME_KEYS)
        problems = [Problem(where, k[:80], unknown_key(k, allowed)) for k in changes if k not in allowed]
        if not changes:
            problems.append(Problem(where, "(body)", "no changes given"))
        known_changes = {k: v for k, v in changes.items() if k in allowed}

        def checked(current: Mapping[str, Any]) -> dict[str, Any]:
            found = list(problems)
            document: dict[str, Any] = {}
            try:
                document, _ = runtime_settings.changed(
                    current, self.file_settings, known_changes, self.clock()
                )
            except InvalidInputError as exc:
                found += [Problem(where, p.field, p.message) for p in exc.problems]
            if found:  # every problem at once, and nothing applied
                raise ServiceError(
                    "invalid_request", f"{where} unchanged: {len(found)} problem(s)", tuple(found)
                )
            return document

        checked(self._document)

        async def commit(plan_id: str | None) -> None:
            await self._commit(checked, dict(changes), plan_id)
            log.info("runtime settings changed", changes=dict(changes))

        return commit

    def reset(self, keys: list[str] | None) -> Commit:
        """Runtime changes of `keys` (all when None) undone: the config file's values apply again."""

        def reset(current: Mapping[str, Any]) -> dict[str, Any]:
            try:
                return runtime_settings.reset(current, keys)
            except InvalidInputError as exc:
                raise ServiceError("invalid_request", "limits unchanged", exc.problems) from None

        async def commit(plan_id: str | None) -> None:
            await self._commit(reset, {"reset": sorted(keys) if keys is not None else "all"}, plan_id)
            log.info("runtime settings reset", keys=keys or "all")

        return commit

    async def _commit(
        self,
        document_of: Callable[[Mapping[str, Any]], dict[str, Any]],
        event: dict[str, Any],
        plan_id: str | None,
    ) -> None:
        """The record rewritten from what is stored now, journaled with `event`, applied once committed."""
        for _ in range(COMMIT_ATTEMPTS):
            record = await self.store.settings()
            document = document_of(record.document)
            batch = WriteBatch().put_settings(record.version, document)
            batch.append(Event(EventKind.LIMITS_CHANGED, plan_id, None, None, event))
            try:
                await self.store.commit(batch)
            except SettingsConflict:
                continue
            self._apply(record.version + 1, document)
            return
        raise ServiceError("unavailable", "the settings record kept changing; try again")
