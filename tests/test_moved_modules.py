"""The modules that moved into layer folders still load by their old names, warning where they are now."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from gguf_construct.layers import MOVED


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_old_name_is_the_new_module_with_a_warning(old, new):
    code = (
        f"import warnings, importlib; warnings.simplefilter('error', DeprecationWarning)\n"
        f"import gguf_construct.{new} as new\n"
        f"try:\n    importlib.import_module('gguf_construct.{old}')\nexcept DeprecationWarning as w:\n"
        f"    assert 'gguf_construct.{new}' in str(w), w\nelse:\n    raise SystemExit('no warning')\n"
        f"warnings.simplefilter('ignore')\n"
        f"assert importlib.import_module('gguf_construct.{old}') is new\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_public_api_and_old_import_forms():
    import pickle

    with pytest.warns(DeprecationWarning):
        from gguf_construct.stringlist import StringList as Old  # noqa: F401 - the old spelling
    from gguf_construct.format.stringlist import StringList

    assert Old is StringList
    old_pickle = pickle.dumps(StringList(["a", "b"]), protocol=0).replace(
        b"gguf_construct.format.stringlist", b"gguf_construct.stringlist"
    )
    assert b"gguf_construct.stringlist" in old_pickle
    assert pickle.loads(old_pickle) == ["a", "b"]  # pickled before the move
    import gguf_construct as g

    assert g.load is importlib.import_module("gguf_construct.filemodel.gguffile").load
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gguf_construct.no_such_module")
