"""How the compiled kernels are called: their Generator argument typed once, their
outputs named (the kernels' results themselves are checked against the SimPy engine in
test_kernel_equals_engine)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, typeof
from numba.core.typing.typeof import Purpose

from sim.kernel import physics, storage_kernel
from sim.kernel.generator_typing import GENERATOR_TYPE, typed_once
from sim.kernel.physics_layout import Out


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.MT19937, np.random.Philox,
                                  np.random.SFC64])
def test_a_generator_is_typed_as_numba_types_it(bits) -> None:
    rng = np.random.Generator(bits(7))
    assert typeof(rng, Purpose.argument) is GENERATOR_TYPE
    assert physics.advance.typeof_pyval(rng) is GENERATOR_TYPE


def test_every_other_value_is_left_to_numba() -> None:
    calls = []

    @njit
    def first(x, rng):
        return x[0] + rng.random() * 0.0

    numba_lookup = first.typeof_pyval

    def counted(value):
        calls.append(type(value).__name__)
        return numba_lookup(value)

    first.typeof_pyval = counted
    typed_once(first)
    rng = np.random.default_rng(3)
    assert first(np.array([2.5]), rng) == 2.5
    assert first(np.array([4.0]), np.random.default_rng(4)) == 4.0
    assert "Generator" not in calls  # answered at once, by numba's own type
    assert first.typeof_pyval(np.arange(3)) == typeof(np.arange(3), Purpose.argument)


def test_the_kernels_take_their_generators_typed_once() -> None:
    rng = np.random.default_rng(0)
    for kernel in (physics.advance, storage_kernel.replay):
        assert kernel.typeof_pyval(rng) is GENERATOR_TYPE


def test_outputs_are_named_once_each_packed_ones_as_rows() -> None:
    names = [n for entry in Out.RETURNED for n in ((entry,) if isinstance(entry, str) else entry)]
    assert len(names) == len(set(names))
    returned = tuple(np.arange(3.0) if isinstance(entry, str)
                     else np.arange(len(entry) * 2.0).reshape(len(entry), 2)
                     for entry in Out.RETURNED)
    out = Out.named(returned)
    assert list(out) == names
    for entry, value in zip(Out.RETURNED, returned, strict=True):
        if isinstance(entry, tuple):
            for row, name in enumerate(entry):
                assert np.shares_memory(out[name], value) and out[name].tolist() == value[row].tolist()


def test_a_project_without_computes_has_no_operations_to_order() -> None:
    from sim.kernel.physics_run import op_order

    # the storage replay asks for every compute's operations at its lane's instants
    assert op_order() == []
    assert op_order(at=np.array([60.0, 120.0])) == []
