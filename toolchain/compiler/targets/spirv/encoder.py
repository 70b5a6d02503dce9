"""The one generic SPIR-V instruction encoder, driven by the generated grammar tables.

`encode(opname, args, result_id)` walks the opcode's operand list from `_grammar.OPCODES`
and turns Python values into words; nothing here knows any particular opcode. Value forms:
  Id kinds (IdRef, IdResultType, IdScope, IdMemorySemantics)  int id
  LiteralInteger                     int (one word)
  LiteralString                      str (UTF-8, NUL-terminated, zero-padded to 4 bytes)
  LiteralContextDependentNumber      int (one word) or `Words` (already split, low word first)
  LiteralExtInstInteger              int, or an OpenCL.std instruction name
  LiteralSpecConstantOpInteger       int, or an opcode name
  ValueEnum kinds                    enumerant name or int; its parameters follow as args
  BitEnum kinds                      "A|B", ("A", "B") or int; parameters of set bits follow,
                                     in ascending bit order (as the SPIR-V spec orders them)
  Composite kinds (PairIdRefIdRef..) the base values, flattened into args
The IdResult operand is never passed in `args`; the caller allocates it.
Every capability set and extension that the grammar attaches to the opcode or to an
enumerant used is recorded in the returned `Encoded`, so the module declares exactly those.
Invariant: the first word is (word count << 16) | opcode, as the SPIR-V spec requires.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import _grammar as G


class SpirvBuildError(ValueError):
    """Misuse of the SPIR-V builder (a code generator bug, not a user error)."""


@dataclass(frozen=True)
class Words:
    """A literal already split into 32-bit words, low-order word first."""
    words: tuple[int, ...]


@dataclass
class Encoded:
    """One encoded instruction plus what it requires of the module."""
    opname: str
    words: list[int]
    result_id: int | None = None
    # Each entry is a set of alternatives: declaring any one of them satisfies it.
    capabilities: list[tuple[str, ...]] = field(default_factory=list)
    # (extension, core version that made it unnecessary: "" or "None" when none did).
    extensions: list[tuple[str, str]] = field(default_factory=list)
    version: str = ""


def string_words(text: str) -> list[int]:
    """LiteralString: UTF-8 bytes, NUL-terminated, zero-padded to a multiple of 4 bytes."""
    data = text.encode("utf-8") + b"\0"
    data += b"\0" * (-len(data) % 4)
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]


def _u32(value: object, opname: str, kind: str) -> int:
    """`value` as one word; the error names "`opname` `kind`" (formatted only on failure)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpirvBuildError(f"{opname} {kind}: expected an int, got {value!r}")
    if not 0 <= value <= 0xFFFFFFFF:
        raise SpirvBuildError(f"{opname} {kind}: {value} does not fit in a 32-bit word")
    return value


class _Cursor:
    """Arguments still to consume, plus the output being built."""

    def __init__(self, opname: str, args: tuple, out: Encoded):
        self.opname, self.args, self.pos, self.out = opname, args, 0, out

    def more(self) -> bool:
        return self.pos < len(self.args)

    def take(self, kind: str) -> object:
        if not self.more():
            raise SpirvBuildError(f"{self.opname}: missing {kind} operand")
        self.pos += 1
        return self.args[self.pos - 1]

    def require(self, caps: tuple[str, ...], exts: tuple[str, ...], version: str = "") -> None:
        if caps:
            self.out.capabilities.append(tuple(caps))
        if exts:
            self.out.extensions.append((exts[0], version))


def _enumerant(kind: str, name: object, cur: _Cursor) -> tuple[int, tuple[str, ...]]:
    """Value and parameter kinds of one enumerant given by name or number."""
    table = G.ENUMERANTS[kind]
    if isinstance(name, int) and not isinstance(name, bool):
        name = G.ENUMERANT_NAMES[kind].get(name, name)
        if isinstance(name, int):
            return _u32(name, cur.opname, kind), ()
    if name not in table:
        raise SpirvBuildError(f"{cur.opname}: {name!r} is not a {kind} enumerant")
    value, caps, params, exts = table[name]
    cur.require(caps, exts)
    return value, params


def _bit_names(kind: str, value: object) -> list[object]:
    if isinstance(value, str):
        return [part.strip() for part in value.split("|") if part.strip()]
    if isinstance(value, int) and not isinstance(value, bool):
        names = G.ENUMERANT_NAMES[kind]
        bits = [1 << b for b in range(32) if value >> b & 1]
        return [names.get(bit, bit) for bit in bits] or [0]
    return list(value)  # type: ignore[call-overload]


def _encode_enum(kind: str, value: object, cur: _Cursor) -> None:
    table = G.ENUMERANTS[kind]
    if type(value) is str and "|" not in value and value in table:
        # One enumerant by name (the usual spelling, value or bit enum alike): no
        # splitting, masking or sorting needed.
        number, caps, params, exts = table[value]
        cur.require(caps, exts)
        cur.out.words.append(number)
        for pkind in params:
            _encode_one(pkind, cur)
        return
    if G.OPERAND_KINDS[kind] == "ValueEnum":
        number, params = _enumerant(kind, value, cur)
        cur.out.words.append(number)
        for pkind in params:
            _encode_one(pkind, cur)
        return
    found = [_enumerant(kind, name, cur) for name in _bit_names(kind, value)]
    cur.out.words.append(_mask(found))
    for _, params in sorted(found):
        for pkind in params:
            _encode_one(pkind, cur)


def _mask(found: list[tuple[int, tuple[str, ...]]]) -> int:
    mask = 0
    for number, _ in found:
        mask |= number
    return mask


def _encode_literal(kind: str, value: object, cur: _Cursor) -> None:
    words = cur.out.words
    if kind == "LiteralString":
        if not isinstance(value, str):
            raise SpirvBuildError(f"{cur.opname}: expected a string, got {value!r}")
        words.extend(string_words(value))
    elif isinstance(value, Words):
        words.extend(_u32(w, cur.opname, kind) for w in value.words)
    elif kind == "LiteralExtInstInteger" and isinstance(value, str):
        if value not in G.OPENCL_STD:
            raise SpirvBuildError(f"{cur.opname}: {value!r} is not an OpenCL.std instruction")
        words.append(G.OPENCL_STD[value][0])
    elif kind == "LiteralSpecConstantOpInteger" and isinstance(value, str):
        words.append(G.OPCODES[value][0])
    else:
        words.append(_u32(value, cur.opname, kind))


def _encode_one(kind: str, cur: _Cursor) -> None:
    category = G.OPERAND_KINDS[kind]
    if category == "Composite":
        for base in G.COMPOSITE_KINDS[kind]:
            _encode_one(base, cur)
        return
    value = cur.take(kind)
    if category == "Id":
        cur.out.words.append(_u32(value, cur.opname, kind))
    elif category == "Literal":
        _encode_literal(kind, value, cur)
    else:
        _encode_enum(kind, value, cur)


class _Plan:
    """Per-opcode facts precomputed from the grammar (built once, on first use).

    `prefix` is the leading run of required operands that take one plain-int argument
    each (ids, integer literals; IdResult included, fed from `result_id`): `fixed` of the
    arguments. When those arguments are plain in-range ints, their words are built
    directly and only the `tail` operands are walked generically; when the tail is only
    optional one-word operands (`tail_max` more arguments, -1 for any number) it is
    built directly too. Any other argument (a name, `Words`, a bad value) makes the
    generic walk run over everything, so every error message comes from one place."""

    __slots__ = ("opcode", "operands", "caps", "exts", "version", "has_result",
                 "result_at", "prefix", "fixed", "tail", "tail_max", "tail_memo", "requires",
                 "ext_reqs")

    def __init__(self, opname: str):
        opcode, operands, caps, exts, version = G.OPCODES[opname]
        self.opcode, self.operands, self.caps, self.exts = opcode, operands, caps, exts
        self.version = version
        self.has_result = any(k == "IdResult" for k, _ in operands)
        self.requires = [tuple(caps)] if caps else []
        self.ext_reqs = [(exts[0], version)] if exts else []
        i, self.result_at = 0, -1
        while i < len(operands) and operands[i][1] == "" and \
                (operands[i][0] == "IdResult" or operands[i][0] in _ONE_WORD):
            if operands[i][0] == "IdResult":
                self.result_at = i             # args before it: all prefix operands so far
            i += 1
        self.prefix, self.tail = i, operands[i:]
        self.fixed = i - (self.result_at >= 0)
        self.tail_max = None                   # None: the tail needs the generic walk
        self.tail_memo = all(k != "IdResult" for k, _ in self.tail)   # see _tail
        if all(k in _ONE_WORD and q != "" for k, q in self.tail):
            self.tail_max = -1 if any(q == "*" for _, q in self.tail) else len(self.tail)


# Kinds whose argument is exactly one word when it is a plain int (literals may also be
# `Words` or names; those take the generic walk).
_ONE_WORD = frozenset(k for k, c in G.OPERAND_KINDS.items() if c == "Id") | \
    {"LiteralInteger", "LiteralContextDependentNumber"}
_PLANS: dict[str, _Plan] = {}


def _plan(opname: str) -> _Plan:
    plan = _PLANS.get(opname)
    if plan is None:
        if opname not in G.OPCODES:
            raise SpirvBuildError(f"unknown SPIR-V opcode {opname!r}")
        plan = _PLANS[opname] = _Plan(opname)
    return plan


def _plain(values) -> bool:
    """Every value is a plain int that fits in one word (bools and subclasses are not)."""
    for v in values:
        if type(v) is not int or not 0 <= v <= 0xFFFFFFFF:
            return False
    return True


def encode(opname: str, args: tuple = (), result_id: int | None = None) -> Encoded:
    """Encode one instruction. `args` omit IdResult; `result_id` supplies it when needed."""
    plan = _PLANS.get(opname) or _plan(opname)
    if type(args) is not tuple:
        args = tuple(args)
    n, fixed, at, limit = len(args), plan.fixed, plan.result_at, plan.tail_max
    if (at >= 0 and result_id is None) or n < fixed:
        return _walk(plan, plan.operands, _Cursor(opname, args, Encoded(
            opname, [0], result_id, [*plan.requires], [*plan.ext_reqs], plan.version)),
            result_id)
    if limit is not None and (limit < 0 or n - fixed <= limit) and _plain(args):
        # The common case: every argument is one word; only IdResult is spliced in.
        words = [0, *args[:at], result_id, *args[at:]] if at >= 0 else [0, *args]
        if len(words) <= 0xFFFF:
            words[0] = len(words) << 16 | plan.opcode
            return Encoded(opname, words, result_id, [*plan.requires], [*plan.ext_reqs],
                           plan.version)
    out = Encoded(opname, [0], result_id, [*plan.requires], [*plan.ext_reqs], plan.version)
    cur = _Cursor(opname, args, out)
    if not _plain(args[:fixed]):
        return _walk(plan, plan.operands, cur, result_id)
    if at >= 0:
        out.words.extend(args[:at])
        out.words.append(result_id)
        out.words.extend(args[at:fixed])
    else:
        out.words.extend(args[:fixed])
    cur.pos = fixed
    return _tail(plan, cur, result_id)


# (opname, tail args) -> (tail words, capability sets, extensions) of a tail walk that
# succeeded. Only tails of exact str/int arguments are kept (True == 1 and 4.0 == 4 must
# not hit an int's entry: they are errors), and only so many, since ids vary.
_TAILS: dict[tuple, tuple[list[int], list, list]] = {}
_TAILS_MAX = 4096


def _tail(plan: _Plan, cur: _Cursor, result_id: int | None) -> Encoded:
    """Walk the operands after the one-word prefix (memoized: they are mostly enumerant
    names and small literals such as `Aligned 4`, repeated on every load and store)."""
    out, rest = cur.out, cur.args[cur.pos:]
    key = None
    if plan.tail_memo and all(type(a) is str or type(a) is int for a in rest):
        key = (cur.opname, rest)
        hit = _TAILS.get(key)
        if hit is not None:
            out.words.extend(hit[0])
            out.capabilities.extend(hit[1])
            out.extensions.extend(hit[2])
            return _finish(out, plan.opcode)
    marks = len(out.words), len(out.capabilities), len(out.extensions)
    _walk(plan, plan.tail, cur, result_id)
    if key is not None and len(_TAILS) < _TAILS_MAX:
        _TAILS[key] = (out.words[marks[0]:], out.capabilities[marks[1]:],
                       out.extensions[marks[2]:])
    return out


def _walk(plan: _Plan, operands, cur: _Cursor, result_id: int | None) -> Encoded:
    """The generic walk: encode `operands` from the cursor's position, then finish."""
    opname, out = cur.opname, cur.out
    for kind, quant in operands:
        if kind == "IdResult":
            if result_id is None:
                raise SpirvBuildError(f"{opname}: needs a result id")
            out.words.append(result_id)
        elif quant == "":
            _encode_one(kind, cur)
        elif quant == "?":
            if cur.more():
                _encode_one(kind, cur)
        else:
            while cur.more():
                _encode_one(kind, cur)
    if cur.more():
        raise SpirvBuildError(f"{opname}: {len(cur.args) - cur.pos} operand(s) too many")
    return _finish(out, plan.opcode)


def _finish(out: Encoded, opcode: int) -> Encoded:
    if len(out.words) > 0xFFFF:
        raise SpirvBuildError(f"{out.opname}: instruction exceeds 65535 words")
    out.words[0] = len(out.words) << 16 | opcode
    return out


def has_result(opname: str) -> bool:
    """True when the opcode defines a result id (its operand list has IdResult)."""
    plan = _PLANS.get(opname)
    if plan is None:
        G.OPCODES[opname]           # an unknown name is a KeyError here, as it always was
        plan = _plan(opname)
    return plan.has_result
