"""Two small persistent containers, so a decision costs what changed and never copies the whole plan.

Both share every untouched chunk between the old and the new value: an update copies the chunk index
(size/CHUNK entries) and the chunks it touches, nothing else. Callers see plain immutable values.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

CHUNK = 256
BUCKETS = 512

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SortedInts:
    """An immutable sorted set of ints (priority ranks), stored as sorted chunks."""

    __slots__ = ("_chunks", "_firsts", "_size")

    def __init__(self, values: Iterable[int] = ()) -> None:
        ordered = sorted(set(values))
        self._chunks: tuple[tuple[int, ...], ...] = tuple(
            tuple(ordered[i : i + CHUNK]) for i in range(0, len(ordered), CHUNK)
        )
        self._firsts: tuple[int, ...] = tuple(c[0] for c in self._chunks)
        self._size = len(ordered)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[int]:
        for chunk in self._chunks:
            yield from chunk

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int) or not self._chunks:
            return False
        chunk = self._chunks[max(0, bisect_right(self._firsts, value) - 1)]
        index = bisect_right(chunk, value) - 1
        return index >= 0 and chunk[index] == value

    def update(self, remove: Iterable[int] = (), add: Iterable[int] = ()) -> SortedInts:
        """A new set without `remove` and with `add`; cost grows with the chunks touched."""
        touched: dict[int, list[int]] = {}
        chunks = list(self._chunks)
        if not chunks:
            return SortedInts(add)
        for value in remove:
            at = max(0, bisect_right(self._firsts, value) - 1)
            items = touched.get(at)
            if items is None:
                items = touched[at] = list(chunks[at])
            index = bisect_right(items, value) - 1
            if index >= 0 and items[index] == value:
                del items[index]
        for value in add:
            at = max(0, bisect_right(self._firsts, value) - 1)
            items = touched.get(at)
            if items is None:
                items = touched[at] = list(chunks[at])
            index = bisect_right(items, value) - 1
            if index < 0 or items[index] != value:
                insort(items, value)
        if not touched:
            return self
        rebuilt: list[tuple[int, ...]] = []
        for at, chunk in enumerate(chunks):
            items = touched.get(at)
            if items is None:
                rebuilt.append(chunk)
                continue
            for i in range(0, len(items), CHUNK):
                rebuilt.append(tuple(items[i : i + CHUNK]))
        result = SortedInts.__new__(SortedInts)
        result._chunks = tuple(rebuilt)
        result._firsts = tuple(c[0] for c in result._chunks)
        result._size = sum(len(c) for c in result._chunks)
        return result


class ChunkedMap(Generic[K, V]):
    """An immutable mapping split into hash buckets; `updated` copies only the buckets it changes."""

    __slots__ = ("_buckets", "_size")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        buckets: list[dict[K, V]] = [{} for _ in range(BUCKETS)]
        for key, value in (items or {}).items():
            buckets[hash(key) % BUCKETS][key] = value
        self._buckets: tuple[dict[K, V], ...] = tuple(buckets)
        self._size = sum(len(b) for b in buckets)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: K) -> V:
        return self._buckets[hash(key) % BUCKETS][key]

    def get(self, key: K, default: V | None = None) -> V | None:
        return self._buckets[hash(key) % BUCKETS].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[hash(key) % BUCKETS]

    def items(self) -> Iterator[tuple[K, V]]:
        for bucket in self._buckets:
            yield from bucket.items()

    def values(self) -> Iterator[V]:
        for bucket in self._buckets:
            yield from bucket.values()

    def updated(self, changes: Mapping[K, V], delete: Iterable[K] = ()) -> ChunkedMap[K, V]:
        """A new map without `delete`, then with `changes` set."""
        if not changes and not delete:
            return self
        buckets = list(self._buckets)
        copied: set[int] = set()
        size = self._size

        def bucket_for(key: K) -> dict[K, V]:
            at = hash(key) % BUCKETS
            if at not in copied:
                buckets[at] = dict(buckets[at])
                copied.add(at)
            return buckets[at]

        for key in delete:
            bucket = bucket_for(key)
            size -= key in bucket
            bucket.pop(key, None)
        for key, value in changes.items():
            bucket = bucket_for(key)
            size += key not in bucket
            bucket[key] = value
        result: ChunkedMap[K, V] = ChunkedMap.__new__(ChunkedMap)
        result._buckets = tuple(buckets)
        result._size = size
        return result

    def count(self, predicate: Callable[[V], bool]) -> int:
        return sum(1 for v in self.values() if predicate(v))


class ChunkedBytes:
    """An immutable array of small ints (0-255) indexed by rank; `updated` copies only touched chunks."""

    __slots__ = ("_chunks", "_size")
    SPAN = 4096

    def __init__(self, values: bytes | bytearray = b"") -> None:
        span = self.SPAN
        self._chunks: tuple[bytes, ...] = tuple(
            bytes(values[i : i + span]) for i in range(0, len(values), span)
        )
        self._size = len(values)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int) -> int:
        return self._chunks[index // self.SPAN][index % self.SPAN]

    def updated(self, changes: Mapping[int, int]) -> ChunkedBytes:
        if not changes:
            return self
        span = self.SPAN
        chunks = list(self._chunks)
        touched: dict[int, bytearray] = {}
        for index, value in changes.items():
            at = index // span
            chunk = touched.get(at)
            if chunk is None:
                chunk = touched[at] = bytearray(chunks[at])
            chunk[index % span] = value
        for at, chunk in touched.items():
            chunks[at] = bytes(chunk)
        result = ChunkedBytes.__new__(ChunkedBytes)
        result._chunks = tuple(chunks)
        result._size = self._size
        return result
