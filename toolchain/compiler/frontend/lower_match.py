"""Tagged-enum construction and `match` (statement and expression forms), lowered to a tag
compare chain (layout in tagged.py).

Construction: `Number(42)`, `Plus`, `Plus()`, `Token.Number(42)`, `Token.Plus`. A bare
variant name that several tagged enums share (instances of one generic enum) is resolved by
the context type (`var a: Maybe<int64> = Just(3)`), else it is ambiguous (E0020).

`match (e) { case V(b): {...} case W: {...} default: {...} }`: the subject is evaluated once
into a temporary; each arm tests the tag; a binding is a new local holding a copy of the
payload, scoped to its arm. Arms do not fall through and `match` is not a break target.
Without `default` every variant must be covered (E0020 names the first missing one, at the
`match`); a duplicate arm or a second `default` is E0020 at the arm; a `default` after every
variant is covered is unreachable (warning W0001). The expression form's arms are single
expressions; its type is the first arm's (the context's, for an aggregate initializer), and
the other arms convert to it.
"""
from __future__ import annotations

from . import ast as A
from ..ir.module import Local
from ..ir.types import I32, ArrayType, StructType, ptr
from .scope import TypeSym, VarSym
from .typesys import describe


class MatchMixin:
    # ---------------------------------------------------------------- construction
    def tagged_of(self, t):
        return self.ctx.tagged.get(t.name) if isinstance(t, StructType) else None

    def variant_owner(self, name: str, hint, span):
        owners = self.ctx.variant_owners.get(name)
        if not owners:
            return None
        if isinstance(hint, StructType) and hint.name in owners:
            return self.ctx.tagged[hint.name]
        if len(owners) == 1:
            return self.ctx.tagged[owners[0]]
        raise self.fail("E0020", f"constructor `{name}` belongs to several tagged enums "
                        f"({', '.join(self.ctx.tagged[o].name for o in owners)}); give the "
                        "target a declared type", span)

    def qualified_tagged(self, base: A.Expr):
        """The TaggedEnum named by `base` in `Token.Number`, else None."""
        if isinstance(base, A.Name):
            sym = self.lookup(base.name)
            if isinstance(sym, TypeSym):
                return self.tagged_of(sym.type)
        return None

    def construct(self, enum, variant: str, args: list[A.Expr], span):
        tag = enum.tag_of(variant)
        if tag is None:
            raise self.fail("E0020", f"tagged enum `{enum.name}` has no variant `{variant}`",
                            span)
        payload_t = enum.variants[tag][1]
        want = 0 if payload_t is None else 1
        if len(args) != want:
            raise self.fail("E0108", f"constructor `{variant}` expects {want} argument(s), "
                            f"got {len(args)}", span)
        b = self.b
        slot = b.alloca(enum.type, variant)
        b.store(b.fieldptr(slot, 0), b.const(I32, tag))
        if payload_t is not None:
            value = self.rvalue(args[0], payload_t)
            b.store(self.payload_ptr(slot, payload_t), value)
        return b.load(slot)

    def payload_ptr(self, slot, payload_t):
        area = self.b.fieldptr(slot, 1)
        return self.b.bitcast(area, ptr(payload_t, area.type.space))

    # ---------------------------------------------------------------- match
    def _match_subject(self, subject: A.Expr):
        v = self.value(subject, None)
        enum = self.tagged_of(v.type)
        if enum is None:
            raise self.fail("E0020", f"match needs a tagged enum, not {describe(v.type)}",
                            subject.span)
        return enum, self.spill(v)

    def _match_plan(self, s, enum, expr_form: bool):
        """(tag, arm) tests in order and the default arm; checks arms and coverage."""
        tests, default, seen = [], None, set()
        for arm in s.arms:
            if arm.variant is None:
                if default is not None:
                    raise self.fail("E0020", "only one default arm is allowed in match",
                                    arm.span)
                default = arm
                continue
            tag = enum.tag_of(arm.variant)
            if tag is None:
                raise self.fail("E0020", f"unknown variant `{arm.variant}` for type "
                                f"`{enum.name}` in match", arm.span)
            if tag in seen:
                raise self.fail("E0020", f"duplicate match arm for variant `{arm.variant}` "
                                "(this arm is unreachable)", arm.span)
            seen.add(tag)
            if arm.binding is not None and enum.variants[tag][1] is None:
                raise self.fail("E0020", f"variant `{arm.variant}` carries no payload but "
                                f"binding `{arm.binding}` was given", arm.span)
            tests.append((tag, arm))
        missing = [n for i, (n, _) in enumerate(enum.variants) if i not in seen]
        kind = "match expression" if expr_form else "match"
        if default is None and missing:
            raise self.fail("E0020", f"non-exhaustive {kind} on `{enum.name}`: variant "
                            f"`{missing[0]}` not covered; add a `case {missing[0]}:` arm or "
                            "a `default:` arm", s.span)
        if default is not None and not missing:
            self.warn("W0001", "unreachable match arm: every variant is already covered",
                      default.span)
        if expr_form and not s.arms:
            raise self.fail("E0020", "match expression has no arms to determine a result "
                            "type", s.span)
        return tests, default

    def _branch(self, tag_v, tests, default, end_b):
        blocks = []
        for tag, arm in tests:
            arm_b, nxt = self.new_block("match.arm"), self.new_block("match.next")
            self.b.cbr(self.b.cmp("eq", tag_v, self.b.const(I32, tag)), arm_b, nxt)
            blocks.append((arm_b, tag, arm))
            self.b.position_at_end(nxt)
        if default is not None:
            arm_b = self.new_block("match.default")
            self.b.br(arm_b)
            blocks.append((arm_b, None, default))
        else:
            self.b.unreachable()        # every tag has an arm
        return blocks

    def _bind(self, enum, slot, tag, arm, scope) -> None:
        if arm.binding is None:
            return
        t = enum.variants[tag][1]
        value = self.b.load(self.payload_ptr(slot, t))
        st = self.slot(t, arm.binding, arm.binding in self.addr_taken and not self.device)
        self.store_to(st, value)
        scope.names[arm.binding] = VarSym(arm.binding, t, "local", st, arm.span)

    def stmt_Match(self, s: A.Match) -> None:
        enum, slot = self._match_subject(s.subject)
        tests, default = self._match_plan(s, enum, False)
        end_b = self.new_block("match.end")
        tag_v = self.b.load(self.b.fieldptr(slot, 0))
        before = None if self.assigned is None else set(self.assigned)
        after = None
        reached = False
        for arm_b, tag, arm in self._branch(tag_v, tests, default, end_b):
            self.b.position_at_end(arm_b)
            self.assigned = None if before is None else set(before)
            scope = self.scope.child()
            self._bind(enum, slot, tag, arm, scope)
            self.lower_block_stmts(arm.body.stmts, scope)
            if not self.b.terminated:
                self.b.br(end_b)
                if self.assigned is not None:
                    after = set(self.assigned) if after is None else after & self.assigned
                reached = True
        self.assigned = after if reached else None
        self.b.position_at_end(end_b)

    def expr_MatchExpr(self, e: A.MatchExpr, hint):
        enum, slot = self._match_subject(e.subject)
        tests, default = self._match_plan(e, enum, True)
        end_b = self.new_block("match.end")
        tag_v = self.b.load(self.b.fieldptr(slot, 0))
        aggregate = isinstance(hint, (StructType, ArrayType))
        result, rtype = (self.b.alloca(hint, "match"), hint) if aggregate else (None, None)
        saved = self.scope
        for arm_b, tag, arm in self._branch(tag_v, tests, default, end_b):
            self.b.position_at_end(arm_b)
            self.scope = saved.child()
            try:
                self._bind(enum, slot, tag, arm, self.scope)
                if rtype is None:
                    v = self.value(arm.body, hint)
                    if isinstance(v.type, (StructType, ArrayType)):
                        raise self.fail("E0020", "a match expression of aggregate type needs "
                                        "a declared target (a typed `var` initializer)",
                                        arm.body.span)
                    rtype, result = v.type, self.b.local(self.fn, v.type, "match")
                else:
                    v = self.rvalue(arm.body, rtype)
            finally:
                self.scope = saved
            self.store_to(result, v)
            self.b.br(end_b)
        self.b.position_at_end(end_b)
        return self.load_slot(result) if isinstance(result, Local) else self.b.load(result)
