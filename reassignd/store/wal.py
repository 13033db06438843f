"""What SQLite will keep of a write-ahead log, read before SQLite opens it.

SQLite's recovery keeps the WAL's frames up to the last commit frame whose cumulative checksum holds and
drops the rest without a word: `PRAGMA integrity_check` is 'ok' afterwards, since the database it sees is
consistent, only older. A damaged frame therefore makes every transaction committed after it vanish
silently. This reads the log as SQLite's file format defines it (https://sqlite.org/fileformat.html#the_write_ahead_log)
and counts the commit frames of the current log (their salts match the header's) that recovery will drop:
frames written in this log, acknowledged as committed, and lost. Frames after the last commit without a
commit frame of their own are a transaction that was never acknowledged (a kill mid-commit): not counted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_HEADER: Final = 32
_FRAME_HEADER: Final = 24
_MAGIC_LE: Final = 0x377F0682
_MAGIC_BE: Final = 0x377F0683
_MASK: Final = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class WalReport:
    page_size: int = 0
    valid_frames: int = 0
    """Frames SQLite keeps (up to and including the last valid commit frame)."""
    dropped_frames: int = 0
    """Frames of this log after the last valid commit that SQLite drops."""
    dropped_commits: int = 0
    """Commit frames among them: transactions that were committed and will be lost."""


def _checksum(data: bytes, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & _MASK
        s1 = (s1 + words[i + 1] + s0) & _MASK
    return s0, s1


def inspect_wal(path: Path) -> WalReport:
    """The report for the WAL at `path`; an absent, empty or unrecognised file reports nothing lost."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return WalReport()
    if len(data) < _HEADER:
        return WalReport()
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack(">8I", data[:_HEADER])
    if magic not in (_MAGIC_LE, _MAGIC_BE) or page_size < 512 or page_size & (page_size - 1):
        return WalReport()
    big = magic == _MAGIC_BE
    if _checksum(data[:24], big, 0, 0) != (c0, c1):
        return WalReport(page_size)  # SQLite ignores a log whose header is damaged; so do we
    frame_size = _FRAME_HEADER + page_size
    frames = (len(data) - _HEADER) // frame_size
    s0, s1 = c0, c1
    valid = 0
    index = 0
    while index < frames:
        start = _HEADER + index * frame_size
        header = data[start : start + _FRAME_HEADER]
        _page, commit, f_salt1, f_salt2, f0, f1 = struct.unpack(">6I", header)
        if (f_salt1, f_salt2) != (salt1, salt2):
            break
        s0, s1 = _checksum(header[:8], big, s0, s1)
        s0, s1 = _checksum(data[start + _FRAME_HEADER : start + frame_size], big, s0, s1)
        if (s0, s1) != (f0, f1):
            break
        index += 1
        if commit:
            valid = index
    dropped = dropped_commits = 0
    for later in range(valid, frames):
        start = _HEADER + later * frame_size
        _page, commit, f_salt1, f_salt2 = struct.unpack(">4I", data[start : start + 16])
        if (f_salt1, f_salt2) != (salt1, salt2):
            break  # a previous log's frames: overwritten by this one, never part of it
        dropped += 1
        dropped_commits += bool(commit)
    return WalReport(page_size, valid, dropped, dropped_commits)
