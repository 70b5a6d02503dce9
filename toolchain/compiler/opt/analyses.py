"""The analyses cache the pass manager hands to every pass: `analyses.get("domtree")`.

Registered analyses (all per function, rebuilt lazily after a pass invalidates them):
  preds    block -> predecessor blocks          (ir/cfg.block_predecessors)
  domtree  dominator tree + dominance frontiers  (ir/cfg.DomTree)
  loops    the loop nest                         (ir/cfg.LoopInfo)
  uses     value -> using instructions           (ir/module.UseMap)
  pointers alignment and no-alias facts         (opt/pointer_facts.PointerFacts)
  ops      the set of op names the function holds (a census: a pass looking for one op
           asks it instead of walking; exact, as it is dropped after every change)
A pass declares which of these it may invalidate (`"cfg"` = preds, domtree, loops;
`"all"` = everything); a pass that keeps a `UseMap` exact while it edits may leave "uses"
out. `pointers` memoizes facts about values and `ops` lists them, so both are dropped
after every pass that changed something, whatever the pass declares. A pass that only sometimes edits the CFG
(licm making a preheader, simplify-cfg when it merged or deleted blocks) declares less
and sets `analyses.cfg_changed` when it did.
Besides the cache, `Analyses` carries what passes read but never recompute: the module,
its remarks collector, whether the code is GPU code, and the target's facts. `shared` is one
dict for a whole `optimize()` run (all functions): a pass keeps per-function facts about
the other functions there, under its name, as `{Function: fact}`; the manager drops a
function's entries once its pipeline has run (only the function being optimized changes).
The manager's own entry, "calls", holds each GPU function's direct calls as its call-graph
walk found them (valid for the function being optimized while `edits` is 0).
"""
from __future__ import annotations

from ..ir.cfg import TERMINATORS, DomTree, LoopInfo, block_predecessors
from ..ir.module import Function, Module, UseMap
from .pointer_facts import PointerFacts

CFG = ("preds", "domtree", "loops")
ALL = CFG + ("uses", "pointers", "ops")


class TargetInfo:
    """What a target tells the optimizer. `subgroup_width` is None when it varies or is
    unknown. Built from the target registry's object or a plain dict (`from_any`).
    `features`: the instruction features the resolved architecture has (names of the
    registry's PTX instruction table), or None when no architecture was resolved; `has`
    then answers yes, and the backend leaves out a hint its profile lacks."""

    def __init__(self, subgroup_width: int | None = None, name: str | None = None,
                 unrolls_loops: bool = False, features=None):
        self.subgroup_width = subgroup_width
        self.name = name
        self.unrolls_loops = unrolls_loops      # the backend's assembler unrolls (ptxas)
        self.features = None if features is None else frozenset(features)

    def has(self, feature: str) -> bool:
        return self.features is None or feature in self.features

    @classmethod
    def from_any(cls, info) -> "TargetInfo":
        if info is None:
            return cls()
        if isinstance(info, TargetInfo):
            return info
        get = info.get if isinstance(info, dict) else (lambda k, d=None: getattr(info, k, d))
        return cls(get("subgroup_width", None), get("name", None),
                   bool(get("unrolls_loops", False)), get("features", None))


class Analyses:
    def __init__(self, fn: Function, module: Module | None = None, gpu: bool = False,
                 target: TargetInfo | None = None, shared: dict | None = None):
        self.fn = fn
        self.shared = {} if shared is None else shared
        self.module = module
        self.gpu = gpu
        self.target = target or TargetInfo()
        self._cache: dict[str, object] = {}
        self.cfg_changed = False      # set by a pass whose edits reached the CFG (below)
        self._fixpoints: set[str] = set()     # passes that would find nothing to do now
        self._kept: set[str] = set()          # ... that the pass just run left so
        self.edits = 0                # passes that changed the function so far

    def get(self, name: str):
        got = self._cache.get(name)             # (no analysis is None)
        if got is None:
            got = self._cache[name] = self._build(name)
        return got

    def peek(self, name: str):
        """The cached analysis, or None (nothing is built)."""
        return self._cache.get(name)

    def replace(self, name: str, value) -> None:
        """A pass that kept an analysis exact through its edits hands it back."""
        self._cache[name] = value

    def _build(self, name: str):
        if name == "preds":
            return block_predecessors(self.fn)
        if name == "domtree":
            return DomTree(self.fn, self.get("preds"))
        if name == "loops":
            dom = self._cache.get("domtree")            # (a kept one knows about cycles)
            if not (dom.cyclic if dom is not None else _has_cycle(self.fn)):
                return LoopInfo.empty(self.fn)          # most functions: skip the domtree
            return LoopInfo(self.fn, dom or self.get("domtree"))
        if name == "uses":
            return UseMap(self.fn)
        if name == "pointers":
            return PointerFacts(self.fn)
        if name == "ops":
            return {i.op for b in self.fn.blocks for i in b.instrs}
        raise KeyError(f"unknown analysis {name!r}")

    def invalidate(self, names=ALL) -> None:
        if names == "all":
            self._cache.clear()             # (every key is one of ALL)
            return
        for n in names:
            if n == "cfg":
                self.invalidate(CFG)
            else:
                self._cache.pop(n, None)

    def after_pass(self, invalidates) -> None:
        """The manager's invalidation after a changing pass. A pass listed as keeping the
        CFG analyses may still edit the CFG sometimes; it then sets `cfg_changed`."""
        self.edits += 1
        cache = self._cache
        if self.cfg_changed or invalidates == "all":
            cache.clear()
            self.cfg_changed = False
        elif cache:                             # (often empty: nothing to drop)
            self.invalidate(invalidates)
            cache.pop("pointers", None)
            cache.pop("ops", None)
            loops = cache.get("loops")
            if loops is not None and loops.loops:  # a kept loop nest forgets trip counts
                loops.forget_facts()
        if self._fixpoints:
            self._fixpoints &= self._kept
        if self._kept:
            self._kept = set()

    # Fixpoints (compile time): a pass that iterates until it finds nothing to do says so;
    # it is skipped until a pass changes the function, unless that pass's edits cannot give
    # it work (dce deleting unused values leaves simplify-cfg nothing new, say).
    def at_fixpoint(self, name: str) -> bool:
        return name in self._fixpoints

    def reached_fixpoint(self, name: str, changed: bool) -> None:
        """`name` ran until nothing was left to do (its own changes included)."""
        self._fixpoints.add(name)
        if changed:
            self._kept.add(name)

    def keep_fixpoint(self, name: str) -> None:
        """Called by a pass that changed the function without giving `name` work."""
        self._kept.add(name)

    def remark(self, span_or_line, pass_name: str, text: str) -> None:
        if self.module is not None:
            self.module.remarks.add(self.fn, span_or_line, pass_name, text)


def _has_cycle(fn: Function) -> bool:
    """Whether any edge goes back to a block on the current DFS path (a retreating edge)."""
    if not fn.blocks:
        return False
    terms = TERMINATORS
    entry = fn.blocks[0]
    state: dict = {entry: True}                 # True on the path, False finished
    ins = entry.instrs                          # (successors() inlined: a call per block)
    stack = [(entry, iter(ins[-1].targets if ins and ins[-1].op in terms else ()))]
    while stack:
        b, it = stack[-1]
        for s in it:
            st = state.get(s)
            if st:
                return True
            if st is None:
                state[s] = True
                ins = s.instrs
                stack.append((s, iter(ins[-1].targets if ins and ins[-1].op in terms
                                      else ())))
                break
        else:
            state[b] = False
            stack.pop()
    return False
