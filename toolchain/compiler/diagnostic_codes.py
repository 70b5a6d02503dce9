"""What each diagnostic code means: the text of `mettle explain CODE` and of the code list in
docs/reference/language.md.

One entry per code any layer raises (tests/cli/test_explain.py greps the compiler for codes
and fails on one missing here). A code names a family of related mistakes, so each entry
says what the family is, typical messages, and how to fix them. Plain data: importing this
costs nothing at compile time (only `mettle explain` reads it).
"""
from __future__ import annotations

# code -> (title, explanation). Explanations are plain text, wrapped by the reader.
CODES: dict[str, tuple[str, str]] = {
    # ---------------------------------------------------------------- lexing and parsing
    "E0001": ("malformed token", """
The lexer met text that is not a Mettle token: an unexpected character, an unterminated
string literal, an unclosed block comment, an invalid numeric literal, or a character literal
that is not one byte or one known escape. Fix the token at the caret. Escapes are \\n \\t
\\r \\0 \\\\ \\" and \\' (in a string an unknown escape keeps both characters)."""),
    "E0002": ("syntax error", """
The parser expected something else at this point, e.g. a missing `;`, `)` or `}`, a keyword
used as a name, or an expression where a statement was expected. The message names what was
expected and what was found. "program is nested too deeply" means the nesting of blocks or
expressions exceeds what the parser supports; split the expression or function."""),
    "E0003": ("declaration needs a type", """
A `var` (or a local `const`) has no type the compiler can use: locals are declared as
`var name: T = value;`. Write the type explicitly."""),
    "E0004": ("float conversion needs a cast", """
A floating-point value is used where an integer (or another float width) is expected, or `%`
is applied to a float. Mettle converts between float and integer types only with an explicit
cast: `(int32)x`, `(float32)i`. `%` is defined for integers only."""),
    "E0005": ("integer literal out of range", """
An integer literal is larger than the largest value of the widest integer type, uint64
(18446744073709551615). Literals never wrap: an unsuffixed literal is int32 when it fits,
else int64, else uint64, and one beyond uint64 is refused rather than truncated. (Storing
a literal that fits into a narrower variable, as in `var u: uint8 = 300;`, converts the
value as any assignment does.) Write a smaller value or compute it in a wider form."""),
    "E0009": ("not supported yet", """
The construct is Mettle syntax this compiler does not implement yet: inline `asm`. Write
the code in Mettle, or in C linked in through an `extern fn`. (On host targets the code
generators also use it for vector operations they cannot encode.)"""),
    "E0010": ("statement not allowed here", """
The statement cannot appear where it is: e.g. `break` or `continue` outside a loop (or naming
a label that is not an enclosing loop), or a declaration form that is only legal at the top
level. Move the statement or restructure the loop."""),
    "E0011": ("missing return or bad loop attribute", """
A function with a return type may reach its end without `return`, or an `@unroll(N)`
attribute has a count outside 2..16. Add the missing `return` on every path (or end with an
explicit one), or use an unroll count from 2 to 16."""),
    "E0012": ("aggregate literal in the wrong place", """
An aggregate literal (`{...}` or `[v; n]`) is used where it cannot be: only a `var`/`const`
initializer or the right side of a plain assignment may be one, and its type must be an array
or struct. It cannot be an operand of a compound assignment such as `+=`."""),
    "E0013": ("not a compile-time constant", """
A global initializer, enum value or `const` must be computable at compile time (literals,
other constants, arithmetic on them), and a global needs a type the compiler can infer.
Move run-time work into a function, or give the global an explicit type."""),
    "E0014": ("bad case value", """
A `case` label must be a compile-time integer constant (an integer, char or enum constant),
and each value may appear only once in a `switch`."""),
    "E0015": ("switch not exhaustive", """
A `switch` over an enum must name every enumerator or have a `default`; a switch over `bool`
must cover `true` and `false` or have a `default`. The message lists the missing cases."""),
    "E0016": ("bad condition", """
Conditions of `if`, `while` and `for` must be `bool` or numeric. A pointer is not a
condition: compare it explicitly, `p != 0`."""),
    "E0017": ("static_assert failed", """
A `static_assert(cond)` (at top level or in a function) takes exactly one condition, which
must fold to an integer at compile time: literals, integer `const`s, enum variants,
`sizeof(T)` and the arithmetic, comparison, logical, bitwise and shift operators on them. A
condition that folds to zero fails the build. Fix the condition or the layout it checks."""),
    "E0018": ("generic misuse", """
A generic function or struct is used wrongly: the wrong number of type arguments
(`Pair<int32>` for `struct Pair<A, B>`), type arguments on something that is not generic, a
type argument that does not implement a trait its parameter is bounded by (`T: Ordered`
needs an `impl Ordered for` exactly that type), a bound or `where` clause naming an unknown
trait or type parameter, or instantiation that never ends (a generic using itself with ever
larger types). Generic calls always spell their type arguments: `swap_in<int64>(&a, &b)`."""),
    "E0019": ("trait, impl or method misuse", """
A trait or impl declaration is inconsistent (a duplicate trait or impl, an impl of an unknown
trait, a missing trait method, a parameter or return type that differs from the trait's after
`Self` is replaced), or a method call names no method: `recv.m()` needs a `method m` in
the receiver's struct, an `impl` function `m` for the receiver's type (or, for a pointer
receiver, for its pointee), or a function-pointer field `m`."""),
    "E0020": ("tagged enum or match misuse", """
A tagged enum value or a `match` is used wrongly: an unknown variant (`Token.Nope`), a
constructor shared by several tagged enums with no declared target type to pick one, a
`match` subject that is not a tagged enum (use `switch` for plain enums and integers), an arm
naming an unknown variant, a duplicate arm (it could never run) or a second `default`, a
binding on a variant without payload, or a `match` that does not cover every variant and has
no `default:` arm. The message names the first variant not covered."""),
    "E0021": ("errdefer needs a scalar return", """
`errdefer` runs when the function returns a non-zero value (an error code, `true`, a
non-null pointer), so it needs a function whose return type is a scalar or a pointer; in a
function returning a struct, array or `string` it is rejected. Return an error code, or use
`defer` and decide inside the deferred block."""),
    "E0022": ("test function or assertion", """
`@test` functions take no parameters and return int64 (0 means pass); `assert(cond)` and
`assert_eq(left, right)` are test builtins, legal only inside a `@test` function. Under
`mettle test`, a failed assertion is reported with this code at the assertion, with the
operands (`left: A, right: B`) or `condition was false`. Outside tests, check with `if` and
return an error code instead."""),
    # ---------------------------------------------------------------- driver
    "E0090": ("usage error", """
The command line is wrong: an unknown flag, a missing input file, a flag that needs another
(`--dump-spirv` without `--emit-spirv`) or a value out of range. `mettle --help` lists the
flags; docs/reference/cli.md describes each. The process exits with status 2."""),
    "E0091": ("program nests too deeply", """
The program's nesting (expressions or statements) exceeded the compiler's recursion limit.
Split deeply nested expressions into local variables or helper functions."""),
    "E0092": ("cannot write the output", """
The output file could not be written (missing directory, no permission, disk full). No
partial file is left behind. Check the `-o` path."""),
    "E0095": ("the formatter cannot print this syntax yet", """
`mettle fmt` met syntax it was not written for (later-tier constructs such as generics,
`impl`, `trait`, `match` or `defer`). Rather than guess at a layout, it leaves the file
unchanged. Format the file by hand for now."""),
    "E0096": ("formatting would change the program", """
`mettle fmt` checks every output: it must lex to the same tokens, parse to the same syntax
tree and keep every comment in order. This output did not, so the file was left unchanged.
This is a formatter bug; please report it with the file."""),
    # ---------------------------------------------------------------- names and declarations
    "E0101": ("undefined name or module", """
A name, function or module is not defined where it is used: a typo, a missing `import`, a
name that the imported module does not export, or an import path that is not found (the
message lists where the compiler looked: the stdlib root, mettle.deps roots, the importing
file's directory, -I directories and the current directory). When visible names are close
to the unknown one, a help line suggests up to three ("did you mean `count`?")."""),
    "E0102": ("unknown type or unreadable source", """
A type name is not defined, an array size is not positive, a struct contains itself by
value, a type form is not supported, or a source file cannot be read or is not UTF-8. An
unknown type name gets a suggestion: Mettle's spelling of a C or Rust name (`int` is
`int32`, `double` is `float64`, `usize` is `uint64`), or the closest declared types."""),
    "E0103": ("duplicate definition", """
A name is defined twice in one scope: two top-level declarations, two parameters or two
struct fields with one name. Rename one of them. Public names of all modules share one
scope, so two imported modules that both define the same public name are reported at the
import that brings in the second; private names of different modules never collide."""),
    "E0104": ("possibly used before assignment", """
A local variable may be read on a path where it was not assigned yet. Initialize it at its
declaration, or assign it on every path before the read."""),
    "E0105": ("not public or never defined", """
A selective import names something the module does not make public (a module that uses
`export` hides its other names), or a function is declared without a body and never
defined. Export the name, import another one, or define the function."""),
    "E0106": ("cannot assign", """
The target of an assignment is not a variable that may change: a constant, a function or a
parameter that is not assignable. Assign to a `var`."""),
    "E0107": ("not callable", """
The callee is not a function: a kernel is called like a function (launch kernels from host
code with `dispatch`), or a value of a non-function type is called."""),
    "E0108": ("wrong number of arguments", """
A call passes a different number of arguments than the function declares. The message
gives both counts."""),
    "E0109": ("no address", """
`&expr` or an assignment needs an lvalue: a variable, an array element, a field or a
dereference. Values such as calls, literals or arithmetic results have no address."""),
    "E0110": ("name is private to its module", """
The name exists, but in another module that uses `export` and does not export it: such a
module's other top-level names are private to it, invisible to importers (plainly imported,
selected with `import { name } from`, or reached through an alias). Export the name in its
module if it is meant as public API, or call an exported function that uses it."""),
    # ---------------------------------------------------------------- types and expressions
    "E0201": ("type mismatch", """
A value of one type is used where another is required: an argument, an initializer, a
`return`, a range-loop variable that is not an integer, a switch subject that is not an
integer, bool or enum, a variable of type `void`, or an initializer that does not fit (too
many elements, a string longer than the array). The message names both types."""),
    "E0202": ("operator not defined for these types", """
The operator has no meaning for its operand types: bitwise operators on floats, arithmetic
on structs, comparing unrelated types, or string concatenation with `+` in device code (it
allocates and is host-only). Convert the operands with a cast or use another operation."""),
    "E0203": ("integer or pointer conversion needs a cast", """
Mettle does not convert implicitly between integers and pointers, nor between unrelated
pointer types. Write a cast: `(int64)p`, `(uint8*)p`. Only the literal 0 is a null
pointer. (Numeric types convert implicitly, except float to integer: see E0004.)"""),
    "E0204": ("invalid cast", """
The cast has no meaning between these two types (e.g. a struct to an integer). Casts exist
between numeric types, between pointers, and between pointers and 64-bit integers."""),
    "E0205": ("no such field", """
The struct (or the built-in vector such as `thread`, `block`) has no field or member with
that name. Built-in index vectors have `x`, `y` and `z`."""),
    "E0206": ("cannot index", """
Only arrays and pointers can be indexed, and the index must be an integer."""),
    "E0207": ("cannot dereference", """
Only pointers can be dereferenced (`*p`, `p->f`)."""),
    "E0208": ("return value mismatch", """
A function that returns a value has a bare `return;`, or a `void` function returns a value.
Make the `return` match the declared return type."""),
    "E0212": ("named arguments not accepted", """
Named arguments (`name: value`) are accepted only by GPU built-ins such as `tensor_matmul`
and the atomics; ordinary functions take positional arguments."""),
    # ---------------------------------------------------------------- GPU source rules
    "E0301": ("kernel must return void", """
A `kernel` produces results through its pointer parameters; its return type must be
`void`."""),
    "E0302": ("bad kernel parameter type", """
Kernel parameters are scalars or pointers to scalars (device buffers). Pass a struct's
fields separately, or a pointer to device memory that holds it."""),
    "E0303": ("bad kernel block shape", """
In `kernel(block = (x, y, z))`, each dimension must be 1..1024 and their product at most
1024 threads. A dimension written as a name must be a top-level integer `const` of the
kernel's own module."""),
    "E0304": ("per = warp needs a fitting block", """
`kernel(block = N, per = warp)` divides work per warp: it needs a declared block whose
volume is a multiple of 32."""),
    "E0310": ("only legal directly inside a kernel", """
`workgroup var`, `private var` and some built-ins are legal only in the body of a kernel
(not in helper functions or host code)."""),
    "E0311": ("no local arrays or addresses of locals in device code", """
Device code keeps locals in registers: arrays cannot be plain locals and `&local` is not
allowed. Use `private var` (per-thread memory) or `workgroup var` (shared by the block)."""),
    "E0312": ("bad workgroup/private variable", """
`workgroup var` and `private var` need a scalar numeric array type (workgroup memory may also
be a pointer view), cannot have an initializer, and cannot be rebound: assign to their
elements."""),
    "E0313": ("memory space mismatch", """
A pointer into one memory space (global, workgroup, private) is used where another space is
expected. Keep workgroup pointers for workgroup memory and global pointers for buffers."""),
    "E0320": ("bad atomic operation", """
Atomics need a `uint32*` or `uint64*` (or a workgroup array of them), and valid memory
orders: the failure order of a compare-exchange may not be `release`/`acq_rel` nor stronger
than the success order, and each operation allows only some orders (the message lists
them)."""),
    "E0321": ("bad async copy", """
`async_copy` moves data from global to workgroup memory: it needs pointers in those spaces
and a constant element count; `async_copy_wait(N)` needs a constant N in 0..7."""),
    "E0322": ("bad subgroup operation", """
Subgroup operations take `uint32` or `float32` values, bool predicates and integer lanes;
the message says which operand is wrong."""),
    "E0323": ("bad barrier", """
`barrier(regions, order)` regions are `workgroup` and/or `global`, and only some memory
orders are allowed. A plain `barrier()` means workgroup regions, seq_cst."""),
    "E0324": ("bad tensor_transfer_workgroup", """
`tensor_transfer_workgroup(dst, src, rank:, element:, direction:, ...)` needs a rank of 1 to
5, a known element format and direction, positive constant `extentD`, `tileD` and (for
D >= 1) `strideD` in bytes for every dimension below the rank, `stride0` equal to the element
size when given (dimension 0 is contiguous), element strides of 1 to 8, `bounds: zero`, a
`uint8*` view, and pointers of the element's storage type in the right spaces (a load reads
global and writes workgroup memory, a store the reverse). The message names the option."""),
    "E0325": ("format must be a string literal", """
`gpu_print` (debug printing) takes a string literal as its format."""),
    "E0330": ("bad dispatch", """
A `dispatch` statement is malformed: it is used in device code, names a function instead of
a kernel, gives a stream twice (`stream:` and `on`), has non-positive or non-integer
geometry, a `grid:`/`block:` that is not three dimensions, more than 64 arguments, or an
argument whose type does not match the kernel (buffers are int64 device addresses or
pointers)."""),
    "E0340": ("bad tensor operation arguments", """
A tensor built-in has the wrong positional arguments or an invalid named option: an
unknown shape, element type, layout or epilogue word, or options that contradict each other
(sub-byte packing of a byte-sized format, a scale mode without its scale type or table,
rounding of integer accumulation, ...). The message names the option; the rules are listed
in docs/reference/language_rules.md."""),
    "E0341": ("bad tensor_matmul region controls", """
`tensor_matmul`'s row, column, M, N and K are unsigned integers of at most 32 bits, and a
whole-matrix operation needs explicit leading dimensions (`lda:` ... `ldd:`, plus `ldsa:`/
`ldsb:` for block-scaled operands)."""),
    "E0342": ("bad tensor epilogue operand", """
An epilogue operand (e.g. `alpha:`/`beta:` scale or bias) must have the epilogue's element
type, and the options must fit together (`bias:` with a `bias_mode`, `clamp_min:` and
`clamp_max:` with `activation: clamp`, `ldbias:`/`bias_layout:` for a matrix bias). The
same rules hold for the fused-epilogue options of `tensor_matmul`, which also need a
floating-point result and an explicit `ldbias:` for a matrix bias (docs/reference/gemm.md)."""),
    "E0343": ("bad tensor operand pointer", """
A tensor operand pointer has the wrong element type for its declared format (f16 data are
`uint16*`, f32 data `float32*` and so on)."""),
    # ---------------------------------------------------------------- tile values
    "E0350": ("bad tile type", """
`tile<FORMAT, ROWS, COLUMNS>` takes a format (`f16`, `bf16`, `f32`) and two extents, each a
number or a top-level integer `const`, each 1 or a multiple of 16 from 16 to 256. Vector
tiles (one extent 1) are f32 only (docs/reference/tiles.md)."""),
    "E0351": ("tile constructor needs a tile type", """
`tile_fill`, `tile_load` and the other tile constructors take their shape and format from the
variable they initialise or are assigned to: `var t: tile<f32, 64, 64> = tile_fill(0.0);`."""),
    "E0352": ("tile shape or format mismatch", """
The operands of a tile operation do not fit together: a matmul whose inner extents differ,
shapes that do not broadcast (same shape, R x 1, 1 x C or a float32 scalar), arithmetic on a
16-bit tile (convert it to f32 first), or a result assigned to a tile of another type."""),
    "E0353": ("tile value in a place tiles cannot go", """
Tiles are `var` locals of a kernel body. They cannot be parameters, results, globals,
struct fields, array elements, workgroup/private variables or host values, have no element
access, and are used only by the tile operations (docs/reference/tiles.md)."""),
    "E0355": ("bad compile-time constant", """
`--const NAME=VALUE` names a top-level `const` of the compiled file and gives a value of its
kind: an integer literal for an integer const, `f16`, `bf16` or `f32` for a format constant
(`const ELEM = f16;`). A format constant names a tile format and is not a value."""),
    "E0354": ("bad tile operation arguments", """
A tile operation was called with the wrong number of arguments, an unknown or repeated
option, an option word it does not know (`layout: row | col`), a region control that is not
an unsigned integer of at most 32 bits, or a scalar of the wrong type."""),
    # ---------------------------------------------------------------- shared IR verifiers
    "E0400": ("invalid IR", """
The IR verifier found an inconsistency after lowering or a pass. This is a compiler bug;
please report it with the input file."""),
    "E0401": ("no kernel", """
GPU output (`--emit-ptx`, `--emit-spirv`) needs at least one `kernel` in the module."""),
    "E0402": ("recursion in device code", """
GPU code cannot recurse (there is no call stack to grow). The message shows the cycle;
rewrite it as a loop."""),
    "E0403": ("indirect call in device code", """
Device code may only call functions by name, not through function pointers."""),
    "E0404": ("extern call in device code", """
Device code cannot call `extern` (host library) functions."""),
    "E0405": ("kernel called as a function", """
A kernel cannot be called from other code; launch it from the host with `dispatch`."""),
    "E0406": ("dispatch in device code", """
`dispatch` is a host statement; device code cannot launch kernels."""),
    "E0407": ("host-only operation in device code", """
The operation (string allocation, host I/O and similar) exists only in host programs."""),
    "E0410": ("barrier under divergent control flow", """
Every work-item of the workgroup must reach a barrier; this one is inside control flow that
depends on per-thread values. Move the barrier out of the branch (or make the condition
uniform across the workgroup)."""),
    "E0411": ("subgroup collective under divergent control flow", """
Subgroup collectives (shuffles, reductions, ballots) must be reached by the whole subgroup;
this one is under control flow that varies between lanes."""),
    "E0412": ("varying broadcast lane", """
`subgroup_broadcast` needs a source lane that is the same for every lane of the subgroup."""),
    "E0413": ("scoped operation under divergent control flow", """
A tensor or collective operation with subgroup or workgroup scope is reached under control
flow that varies within that scope. All participants must reach it together."""),
    "E0414": ("operand must be uniform", """
An operand of a scoped operation (for example a tensor region's row or column) varies within
the scope; it must have one value for every participant."""),
    "E0420": ("async copies left open", """
A function can exit with uncommitted or unwaited async copies. Commit every copy and call
`async_copy_wait(0)` before returning."""),
    "E0421": ("too many async groups", """
More than the hardware limit of committed async copy groups are pending. Wait before
committing another group."""),
    "E0422": ("async groups differ between paths", """
Two control-flow paths reach a join with different numbers of pending async copy groups.
Make every path commit and wait the same way."""),
    "E0423": ("bad async_copy_wait count", """
`async_copy_wait(N)` takes a constant N in 0..7."""),
    "E0424": ("bad async copy size", """
An async copy's size must be a positive multiple of its transaction size (4, 8 or 16
bytes)."""),
    # ---------------------------------------------------------------- target capabilities
    "E0501": ("unknown GPU architecture", """
`--gpu-arch` takes gb10, portable, sm_NN, sm_NNa or compute_NN with a known NN; `a`
(architecture-specific) targets exist from sm_90 on."""),
    "E0502": ("bad PTX version", """
`--ptx-version` takes MAJOR.MINOR of an existing PTX ISA no newer than the newest supported
one (the message says which)."""),
    "E0503": ("PTX version too old for the target", """
The requested PTX ISA is older than the target needs (sm_90a needs 8.0, sm_100a 8.6, sm_120a
8.7, sm_121a 8.8). Use the `--ptx-version` the help line suggests, or drop the flag."""),
    "E0504": ("feature needs a newer target", """
An operation (a tensor shape, an async copy form, block-scaled formats...) needs a newer PTX
ISA or GPU architecture than the selected profile. Select a newer `--gpu-arch` or avoid the
feature."""),
    "E0505": ("no PTX lowering", """
The PTX backend cannot express this operation: e.g. an intrinsic on an unsupported type, a kernel name that is not a valid
PTX identifier, or a global initialized with an address."""),
    "E0510": ("not representable in OpenCL SPIR-V", """
The type or operation has no form in the OpenCL 2.0 SPIR-V profile (e.g. function
pointers). Compile with `--emit-ptx`, or avoid the feature in kernels meant for SPIR-V."""),
    "E0511": ("varying shuffle on SPIR-V", """
The OpenCL 2.0 profile cannot shuffle from a lane that varies; use `subgroup_broadcast` with a
uniform lane, or compile for PTX."""),
    "E0512": ("gpu_print on SPIR-V", """
`gpu_print` is PTX only; the OpenCL SPIR-V profile has no printf. Compile with `--emit-ptx`
to print."""),
    "E0513": ("gpu_assert on SPIR-V", """
The OpenCL SPIR-V profile has no trap, so `gpu_assert` (and `--gpu-checks`) cannot be
lowered. Compile with `--emit-ptx` or drop the assertion."""),
    "E0514": ("operation not available on SPIR-V", """
The operation (for example some tensor or atomic forms) is not available in the OpenCL 2.0
SPIR-V profile; the message says which part."""),
    # ---------------------------------------------------------------- linker
    "E0600": ("link input or argument error", """
The linker cannot use an input: an unreadable object, objects for different machines, a
relocation naming an unknown symbol, or an unsupported link argument (supported: -lNAME,
-LDIR, -rpath DIR, --rpath=DIR)."""),
    "E0601": ("undefined symbol", """
A referenced symbol is defined by no input object and no library searched. Define the
function, or add the library with `-l`."""),
    "E0602": ("duplicate symbol", """
Two input objects define the same global symbol. Rename one or make it non-exported."""),
    "E0603": ("bad library", """
A library given with `-l` cannot be found or read, or is built for another machine."""),
    "E0604": ("thread-local import", """
The symbol is thread-local in a shared library; importing TLS variables is not
supported."""),
    "E0605": ("unsupported relocation", """
An object holds a relocation the linker does not support for its section or against an
imported symbol. This usually means a compiler bug; please report it."""),
    # ---------------------------------------------------------------- internal
    "E0900": ("internal compiler error", """
The compiler failed on this input. This is a bug in Mettle, not in your program: please
report it with the input file. The process exits with status 70."""),
    # ---------------------------------------------------------------- memory-safety analysis
    "M0105": ("constant index out of bounds", """
An array is indexed with a constant outside its bounds (arrays are 0-based: valid indices of
an array of N are 0..N-1)."""),
    "M0116": ("constant divide by zero", """
An integer division or remainder by a constant zero. Division by zero has no defined
result; check the divisor."""),
    # ---------------------------------------------------------------- warnings
    "W0001": ("unreachable statement", """
A statement follows `return`, `break` or `continue` in the same block and can never run.
Remove it or fix the control flow. (A warning: the compile still succeeds.)"""),
    "W0002": ("errdefer triggered by a constant", """
A function with a pending `errdefer` returns a non-zero constant (`return 42;`): by
convention a non-zero return is an error, so the errdefer statements run. Return 0 on
success, or use `defer` if the statement should always run. (A warning.)"""),
    "W0103": ("import cycle skipped", """
Two modules import each other (directly or through others); the repeated import is skipped.
Move the shared declarations into a third module. (A warning.)"""),
}


def explain(code: str) -> str | None:
    """The text `mettle explain CODE` prints, or None for an unknown code."""
    entry = CODES.get(code.strip().upper())
    if entry is None:
        return None
    import textwrap
    title, text = entry
    return f"{code.strip().upper()}: {title}\n\n{textwrap.fill(' '.join(text.split()), 88)}\n"
