"""``tilelab._registry.Registry``: entries come from the modules the registry names, on-demand ones when asked for."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tilelab._registry import Registry


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A throwaway package ``regpkg``: ``table.py`` holds the registry, three modules fill it."""
    root = tmp_path / "regpkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "table.py").write_text(
        textwrap.dedent(
            """
            from tilelab._registry import Registry

            TABLE = Registry("test entry", "regpkg", modules=("eager",), on_demand={"rare": ("r1", "r2")})
            """
        )
    )
    (root / "eager.py").write_text("from .table import TABLE\n\nTABLE.register('a', 'b')(len)\n")
    (root / "rare.py").write_text("from .table import TABLE\n\nTABLE.register('r1', 'r2')(abs)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "regpkg"
    for name in [m for m in sys.modules if m == "regpkg" or m.startswith("regpkg.")]:
        del sys.modules[name]


def test_the_first_lookup_imports_the_named_modules_and_not_the_on_demand_ones(package):
    from regpkg.table import TABLE

    assert "regpkg.eager" not in sys.modules  # nothing imported for its side effect yet
    assert TABLE.get("a") is len and TABLE["b"] is len
    assert "regpkg.rare" not in sys.modules
    assert TABLE.get("missing") is None and "missing" not in TABLE
    with pytest.raises(KeyError, match="no test entry for 'missing'"):
        TABLE["missing"]


def test_an_on_demand_module_loads_with_its_first_key(package):
    from regpkg.table import TABLE

    assert TABLE.get("r2") is abs and "regpkg.rare" in sys.modules
    assert TABLE.loaded() == {"a": len, "b": len, "r1": abs, "r2": abs}


def test_iterating_lists_every_entry(package):
    from regpkg.table import TABLE

    assert sorted(TABLE) == ["a", "b", "r1", "r2"] and len(TABLE) == 4


def test_register_returns_the_function_unchanged():
    table = Registry("test entry", __package__ or "tests")
    fn = table.register("x")(print)
    assert fn is print and table.loaded() == {"x": print}
