"""What a path that names nothing was probably meant to name: the mistakes a new user makes when typing a path.

Used when a command's input does not exist, to follow "no such file or directory" with one hint:
- a ``~`` the shell did not expand (the path was quoted): the home folder's file, when it exists;
- a trailing ``/`` after a file's name;
- the same name in other letter case, or a close spelling among the folder's entries;
- a download still under way: the name with a partial-download suffix exists beside it.
"""

from __future__ import annotations

import difflib
import os

from ..base.text import printable

__all__ = ["missing_hint"]

_PARTIAL_SUFFIXES = (".part", ".partial", ".incomplete", ".download", ".crdownload", ".tmp")
_MAX_ENTRIES = 5000  # a folder with more entries is not searched for close names


def missing_hint(path: str) -> str:
    """A short hint (starting with ``"; "``) for a ``path`` that does not exist, or ``""`` when none applies."""
    if not path:
        return ""
    if path.startswith("~"):
        home = os.path.expanduser(path)
        if home != path and os.path.lexists(home):
            return f"; '~' is expanded by the shell only outside quotes: did you mean {printable(home)}?"
    stripped = path.rstrip("/" + (os.sep if os.sep != "/" else ""))
    if stripped != path and stripped and os.path.isfile(stripped):
        return f"; {printable(stripped)} is a file, not a folder: drop the trailing '/'"
    for suffix in _PARTIAL_SUFFIXES:
        if os.path.isfile(path + suffix):
            return f"; {printable(path + suffix)} exists: is the download still under way?"
    return _close_name(path)


def _close_name(path: str) -> str:
    """``"; did you mean X?"`` for an entry of ``path``'s folder spelled like its last part (another letter case,
    a close spelling), or ``""``."""
    folder, name = os.path.split(path)
    try:
        with os.scandir(folder or ".") as entries:
            names = []
            for entry in entries:
                names.append(entry.name)
                if len(names) > _MAX_ENTRIES:
                    return ""
    except OSError:
        return ""
    same_case = [n for n in names if n.lower() == name.lower()]
    close = same_case or difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    if not close:
        return ""
    return f"; did you mean {printable(os.path.join(folder, close[0]))}?"
