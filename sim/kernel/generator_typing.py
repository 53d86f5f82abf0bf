"""A compiled kernel's `Generator` argument, typed once instead of at every call.

numba types each argument of a compiled function at every call. Arrays and numbers
it types in C; a numpy `Generator` it types in Python, through the dispatcher's
`typeof_pyval`, building a type object that its interning then throws away: about
10 microseconds, a third of a call of the compute kernel on a quiet compute, and a
fleet makes a call or two per compute. Every `Generator` has the one numba type
(whatever its bit generator), so a kernel that takes one gets a `typeof_pyval`
that answers it at once and leaves every other value to numba's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import typeof
from numba.core.typing.typeof import Purpose

#: what numba's own lookup gives every Generator (an interned type)
GENERATOR_TYPE = typeof(np.random.default_rng(0), Purpose.argument)


def typed_once(kernel: Any) -> Any:
    """`kernel` (a numba dispatcher), answering a `Generator` argument's type at once."""
    numba_lookup = kernel.typeof_pyval

    def typeof_pyval(value: Any) -> Any:
        if type(value) is np.random.Generator:
            return GENERATOR_TYPE
        return numba_lookup(value)

    kernel.typeof_pyval = typeof_pyval
    return kernel
