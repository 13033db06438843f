"""The persistent containers agree with plain Python collections and never change old values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.engine.persistent import ChunkedBytes, ChunkedMap, SortedInts

ops = st.lists(st.tuples(st.sets(st.integers(0, 3000)), st.sets(st.integers(0, 3000))), max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 3000)), ops)
def test_sorted_ints_matches_a_set(initial: set[int], updates: list[tuple[set[int], set[int]]]) -> None:
    value, reference = SortedInts(initial), set(initial)
    for remove, add in updates:
        before, frozen = value, sorted(reference)
        value = value.update(remove=remove, add=add)
        reference = (reference - remove) | add
        assert list(before) == frozen  # the old value is untouched
        assert list(value) == sorted(reference) and len(value) == len(reference)
        for probe in list(remove)[:20] + list(add)[:20]:
            assert (probe in value) == (probe in reference)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text(max_size=3), st.integers()),
    st.lists(st.dictionaries(st.text(max_size=3), st.integers())),
)
def test_chunked_map_matches_a_dict(initial: dict[str, int], updates: list[dict[str, int]]) -> None:
    value, reference = ChunkedMap(initial), dict(initial)
    for change in updates:
        delete = list(reference)[:2]
        old_value, old_reference = value, dict(reference)
        value = value.updated(change, delete)
        for key in delete:
            reference.pop(key, None)
        reference.update(change)
        assert dict(value.items()) == reference and len(value) == len(reference)
        assert dict(old_value.items()) == old_reference  # the old value is untouched
        assert all(value[k] == v for k, v in reference.items())


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=10_000), st.dictionaries(st.integers(0, 9_999), st.integers(0, 255)))
def test_chunked_bytes_matches_a_bytearray(initial: bytes, changes: dict[int, int]) -> None:
    changes = {i: v for i, v in changes.items() if i < len(initial)}
    value = ChunkedBytes(initial)
    updated = value.updated(changes)
    reference = bytearray(initial)
    for index, byte in changes.items():
        reference[index] = byte
    assert [value[i] for i in range(len(initial))] == list(initial)
    assert [updated[i] for i in range(len(initial))] == list(reference)
