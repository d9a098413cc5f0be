"""Show a chapter's result wherever the chapter runs.

On the site and in Jupyter, a result (a table, a comparison, a claim report) that ends a cell is
displayed by the host, as HTML (sphinx-gallery and IPython both call ``_repr_html_``); a chapter
run as ``python plot_<topic>.py`` displays nothing of the kind, so there :func:`show` prints the
result as text (its ``__str__``). A chapter ends a cell with ``show(result)`` and reads the same
in all three.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any


def displayed_by_host() -> bool:
    """Whether a host displays a cell's last value here: sphinx-gallery (building the site) or
    IPython (Jupyter); a script run with python has none."""
    return "sphinx_gallery" in sys.modules or getattr(builtins, "__IPYTHON__", False)


def show(result: Any) -> Any:
    """``result``, for the host to display as the cell's last value; printed as text (and
    nothing returned) where no host displays it."""
    if displayed_by_host():
        return result
    print(result, end="\n\n")
    return None
