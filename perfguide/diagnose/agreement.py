"""Whether two results agree: a form's (or another backend's) result against the reader's own
way's, within float32 rounding, or against the range random results span. NumPy only, so the
parent process judges results its workers wrote.
"""

from __future__ import annotations

import numpy as np

#: How far a form's result may be from the eager one's, relative to the result's largest
#: element (XLA may sum in another order).
RTOL, ATOL = 1e-3, 1e-5


def difference(expected: list[np.ndarray], got: list[np.ndarray]) -> str | None:
    """Why ``got`` is not ``expected`` within :data:`RTOL`/:data:`ATOL`, or None."""
    if len(expected) != len(got):
        return f"returns {len(got)} values, not {len(expected)}"
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        if a.shape != b.shape:
            return f"value {i} has shape {b.shape}, not {a.shape}"
        if a.dtype.kind in "fc" and a.size:
            # Against the result's scale: a sum in another order moves every element by a
            # share of the terms' size, which an element near zero does not have.
            a, b = a.astype(np.float64), b.astype(np.float64)
            if not np.array_equal(np.isnan(a), np.isnan(b)):
                return f"value {i} has NaN in other places"
            worst = float(np.nanmax(np.abs(a - b), initial=0.0))
            if worst > ATOL + RTOL * float(np.nanmax(np.abs(a), initial=0.0)):
                return f"value {i} differs by up to {worst:.3g}"
        if a.dtype.kind not in "fc" and not np.array_equal(a, b):
            return f"value {i} differs"
    return None


def outside_range(samples: list[list[np.ndarray]], got: list[np.ndarray]) -> str | None:
    """Why ``got`` is not a result a random function gives, from ``samples`` of its results:
    other value counts, shapes or dtypes, or a value outside the range the samples span (widened
    by a tenth of it either side); None if it is one.

    >>> samples = [[np.array([0.1, 0.9])], [np.array([0.3, 0.5])]]
    >>> outside_range(samples, [np.array([0.2, 0.8])]) is None
    True
    >>> outside_range(samples, [np.array([0.2, 1.5])])
    'value 0 lies outside 0.02 to 0.98, the range its random results span'
    """
    first = samples[0]
    if len(got) != len(first):
        return f"returns {len(got)} values, not {len(first)}"
    for i, b in enumerate(got):
        a = first[i]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"value {i} is {b.dtype}{list(b.shape)}, not {a.dtype}{list(a.shape)}"
        if a.dtype.kind in "fiu" and b.size:
            low = min(float(np.min(s[i])) for s in samples)
            high = max(float(np.max(s[i])) for s in samples)
            margin = (high - low) / 10
            if float(np.min(b)) < low - margin or float(np.max(b)) > high + margin:
                span = f"{low - margin:.3g} to {high + margin:.3g}"
                return f"value {i} lies outside {span}, the range its random results span"
    return None
