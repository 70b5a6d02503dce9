"""`kernel(block = NAME)`: a block dimension named by a top-level integer `const` of the
kernel's own module (docs/reference/gpu.md "Writing a kernel"), so a kernel whose work-items
follow a tuning constant (`const BLOCK_M = 64; const WORK_ITEMS = 2 * BLOCK_M;`) declares
it once, and `--const WORK_ITEMS=256` (applied before this runs) rebuilds it with another
block. The names are replaced by their values before type checking; everything after the
parser sees integers, as for a literal block. A name that is not such a const is E0303
at the name."""
from __future__ import annotations

from . import ast as A
from .consteval import NOT_CONST, const_value
from .scope import VarSym
from ..diagnostics import DiagnosticBag
from ..ir.types import I64


def resolve_kernel_blocks(items: list, bag: DiagnosticBag) -> None:
    """Replace each named dimension of the kernels among one module's `items`."""
    kernels = [d for d in items if isinstance(d, A.FnDecl) and d.is_kernel and
               d.kernel_block and any(isinstance(x, A.Name) for x in d.kernel_block)]
    if not kernels:
        return
    decls = {d.name: d for d in items if isinstance(d, A.VarDecl) and d.is_const
             and d.init is not None}
    values: dict = {}

    def lookup(name: str):
        if name not in values:
            values[name] = NOT_CONST            # a cycle reads as not constant
            d = decls.get(name)
            v = NOT_CONST if d is None else const_value(d.init, lookup)
            values[name] = v if isinstance(v, int) and not isinstance(v, bool) else NOT_CONST
        v = values[name]
        return None if v is NOT_CONST else VarSym(name, I64, "const", storage=v)

    for d in kernels:
        dims = []
        for x in d.kernel_block:
            if isinstance(x, A.Name):
                sym = lookup(x.name)
                if sym is None:
                    bag.error("E0303", f"kernel block dimension `{x.name}` is not a top-level "
                              "integer const of this module", x.span,
                              help="declare `const NAME = 256;` beside the kernel, or "
                              "write the number")
                    dims = None
                    break
                x = sym.storage
            dims.append(x)
        d.kernel_block = tuple(dims) if dims is not None else (1, 1, 1)
