"""Target-neutral descriptors of the cooperative tensor operations (gpu.md "Cooperative
tensor operations", LANGUAGE.md §11).

One IR instruction per construct: `tensor.mma` (one whole D = A*B + C tile),
`tensor.matmul` (one bounded output region of a whole-matrix product) and `tensor.epilogue`
(D = act(alpha*D + beta*bias)). The descriptor (`attrs["desc"]`) carries everything that is
compile-time; runtime values are ordinary operands whose meaning is named by
`attrs["roles"]` (one role per operand, in operand order).

Invariants:
- nothing here names a PTX fragment, lane mapping or instruction: formats, shapes, layouts,
  transposes, rounding, overflow, sparsity and scaling are the neutral vocabulary below;
- a leading dimension is static (an int in the descriptor) or runtime (an operand with the
  role `lda`/`ldb`/`ldc`/`ldd`/...), never both; a matmul always has all four;
- `validate_*` only checks neutral well-formedness; whether a target can execute a
  descriptor is the target's capability question (it refuses with a diagnostic).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .types import F32, F64, I8, I32, U8, U16, Type

FORMATS = ("f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1",
           "i8", "u8", "i4", "u4", "b1", "i32")
LAYOUTS = ("row", "col")
MATHS = ("multiply_add", "xor_popcount", "and_popcount")
SPARSITY = ("dense", "structured_1_to_2", "structured_2_to_4", "structured_4_to_8")
SPARSE_GROUP = {"structured_1_to_2": 2, "structured_2_to_4": 4, "structured_4_to_8": 8}
ROUNDING = ("default", "nearest_even", "toward_zero", "down", "up")
OVERFLOW = ("wrap", "saturate_finite")
SCALE_MODES = ("none", "per_tensor", "block16", "block32")
SCALE_TYPES = ("ue8m0", "ue4m3", "f32")
BLOCK_SCALE_TYPES = ("ue8m0", "ue4m3")            # a block table's element formats
# per_tensor: one f32 value per operand (a float32* to it); D = C + a_scale*b_scale*(A*B)
PACKINGS = ("logical", "unpacked", "packed", "dense_subbyte")
SUBBYTE_PACKINGS = ("packed", "dense_subbyte")     # only for formats narrower than a byte
SCOPES = ("subgroup", "workgroup")
SCHEDULES = ("cooperative", "pingpong", "auto")  # workgroup tensor.matmul (TensorDesc.schedule)
EPILOGUE_TYPES = ("f16", "bf16", "f32", "f64")
BIAS_MODES = ("none", "row", "column", "matrix")
ACTIVATIONS = ("identity", "relu", "clamp")

# Optional runtime operands, in the order they follow the fixed ones.
MMA_ROLES = ("lda", "ldb", "ldc", "ldd", "metadata", "a_scale", "b_scale", "ldsa", "ldsb")
MATMUL_CONTROLS = ("row", "column", "m", "n", "k")
EPILOGUE_ROLES = ("bias", "alpha", "beta", "clamp_min", "clamp_max", "ldd", "ldbias")
# A fused epilogue on tensor.matmul (attrs["epilogue"]): its runtime operands follow the
# matmul's own roles; D's stride is the matmul's ldd
MATMUL_EPILOGUE_ROLES = ("bias", "alpha", "beta", "clamp_min", "clamp_max", "ldbias")
MATMUL_ROLES = ("workspace",)          # tensor.matmul only: the stream-K workspace
POINTER_ROLES = ("a", "b", "c", "d", "metadata", "a_scale", "b_scale", "bias", "workspace")


def storage_type(fmt: str) -> Type:
    """The carrier element type of a format's memory (LANGUAGE.md §11)."""
    return {"f16": U16, "bf16": U16, "f32": F32, "tf32": F32, "f64": F64, "i8": I8,
            "i32": I32}.get(fmt, U8)


def scale_storage(desc: "TensorDesc", side: str) -> Type:
    """The element type an `a_scale`/`b_scale` pointer points to: one f32 value for a
    per_tensor scale, else a byte table."""
    return F32 if getattr(desc, f"{side}_scale_mode") == "per_tensor" else U8


def compute_type(fmt: str) -> Type:
    """Epilogue arithmetic type: f16/bf16/f32 compute in f32, f64 in f64."""
    return F64 if fmt == "f64" else F32


def packed_bits(fmt: str) -> int:
    """Bits per logical element in the neutral dense storage stream."""
    return {"e2m3": 6, "e3m2": 6, "e2m1": 4, "i4": 4, "u4": 4, "b1": 1}.get(fmt, 0) or \
        storage_type(fmt).size * 8


@dataclass(frozen=True)
class TensorDesc:
    """The descriptor shared by tensor.mma and tensor.matmul (for matmul, m/n are the
    region size and k the preferred exact native chunk)."""
    m: int
    n: int
    k: int
    a_type: str
    b_type: str
    accumulator_type: str
    result_type: str
    a_layout: str = "row"           # the language defaults (LANGUAGE.md §11): A row, B col,
    b_layout: str = "col"           # C and D row; gpu.md's examples write B column-major
    c_layout: str = "row"
    d_layout: str = "row"
    transpose_a: bool = False
    transpose_b: bool = False
    math: str = "multiply_add"
    sparsity: str = "dense"
    rounding: str = "default"
    overflow: str = "wrap"
    a_scale_mode: str = "none"
    b_scale_mode: str = "none"
    a_scale_type: str | None = None
    b_scale_type: str | None = None
    a_packing: str = "logical"
    b_packing: str = "logical"
    scope: str = "subgroup"
    lda: int | None = None          # static leading dimensions (None: runtime or default)
    ldb: int | None = None
    ldc: int | None = None
    ldd: int | None = None
    ldsa: int | None = None
    ldsb: int | None = None
    # tensor.matmul, workgroup scope: 0 = one region at (row, column); G > 0 = the whole
    # area from (row, column) to (M, N) in grid-strided region tiles, grouped G row tiles
    # at a time (docs/reference/gemm.md "Persistent tile loop")
    persistent: int = 0
    # tensor.matmul, workgroup scope: how the sm_90a pipeline's consumer warpgroups share
    # a tile (docs/reference/gemm.md "Ping-pong schedule"); semantics are the same
    schedule: str = "cooperative"
    # tensor.matmul, workgroup scope, persistent: 2 runs the sm_90a pipeline in clusters of
    # 2 workgroups that share each B box through a multicast copy (docs/reference/gemm.md
    # "Clusters of 2"); 1 (the default) does not pair; semantics are the same
    cluster: int = 1

    def __str__(self) -> str:
        default = TensorDesc(1, 1, 1, "", "", "", "")
        parts = [f"m{self.m}n{self.n}k{self.k}",
                 f"{self.a_type}x{self.b_type}->{self.accumulator_type}/{self.result_type}"]
        for f in fields(self)[7:]:
            v = getattr(self, f.name)
            if v != getattr(default, f.name):
                parts.append(f"{f.name}={v}")
        return "<" + " ".join(parts) + ">"

    @property
    def scaled(self) -> bool:
        return self.a_scale_mode != "none" or self.b_scale_mode != "none"

    @property
    def sparse(self) -> bool:
        return self.sparsity != "dense"

    def stored_layout(self, which: str) -> str:
        """The layout the operand's memory has when read as the logical (untransposed)
        matrix: a transposed stored matrix in one layout is the logical one in the other."""
        layout = getattr(self, f"{which}_layout")
        flip = {"a": self.transpose_a, "b": self.transpose_b}.get(which, False)
        return ("col" if layout == "row" else "row") if flip else layout


@dataclass(frozen=True)
class EpilogueDesc:
    m: int
    n: int
    element_type: str
    layout: str = "row"
    ld: int | None = None
    bias_mode: str = "none"
    bias_layout: str = "row"
    ldbias: int | None = None
    activation: str = "identity"
    scope: str = "subgroup"

    def __str__(self) -> str:
        return (f"<m{self.m}n{self.n} {self.element_type} {self.layout} ld={self.ld} "
                f"bias={self.bias_mode}/{self.bias_layout} ldbias={self.ldbias} "
                f"{self.activation} {self.scope}>")


def default_ld(desc: TensorDesc, which: str) -> int:
    """The packed leading dimension of a whole tile: the stored row length (row layout) or
    column length (col layout) of that operand's stored shape."""
    rows, cols = {"a": (desc.m, desc.k), "b": (desc.k, desc.n), "c": (desc.m, desc.n),
                  "d": (desc.m, desc.n)}[which]
    if which == "a" and desc.sparse:
        cols = (desc.k + 1) // 2
    if {"a": desc.transpose_a, "b": desc.transpose_b}.get(which, False):
        rows, cols = cols, rows
    return cols if getattr(desc, f"{which}_layout") == "row" else rows


def validate_desc(desc: TensorDesc, roles: tuple[str, ...]) -> list[tuple[str, str]]:
    """Neutral well-formedness: a list of (option, message); empty when valid."""
    errs: list[tuple[str, str]] = []
    for name, v in (("m", desc.m), ("n", desc.n), ("k", desc.k)):
        if not isinstance(v, int) or v <= 0:
            errs.append((name, f"`{name}` must be a positive constant, found {v}"))
    for opt in ("a_type", "b_type", "accumulator_type", "result_type"):
        if getattr(desc, opt) not in FORMATS:
            errs.append((opt, f"`{opt}` must be one of {', '.join(FORMATS)}"))
    popc = desc.math != "multiply_add"
    if popc and (desc.a_type, desc.b_type) != ("b1", "b1"):
        errs.append(("math", f"`math: {desc.math}` needs b1 A and B"))
    if not popc and "b1" in (desc.a_type, desc.b_type):
        errs.append(("math", "b1 A/B need `math: xor_popcount` or `and_popcount`"))
    if desc.sparse and "metadata" not in roles:
        errs.append(("metadata", f"`sparsity: {desc.sparsity}` needs a `metadata:` pointer"))
    if not desc.sparse and "metadata" in roles:
        errs.append(("metadata", "`metadata:` is only meaningful for structured sparsity"))
    if desc.sparse and desc.k % SPARSE_GROUP[desc.sparsity]:
        errs.append(("k", f"K={desc.k} is not a whole number of "
                     f"{SPARSE_GROUP[desc.sparsity]}-wide sparsity groups"))
    for side in ("a", "b"):
        mode = getattr(desc, f"{side}_scale_mode")
        has = f"{side}_scale" in roles
        fmt, packing = getattr(desc, f"{side}_type"), getattr(desc, f"{side}_packing")
        if packing in SUBBYTE_PACKINGS and fmt in FORMATS and packed_bits(fmt) >= 8:
            errs.append((f"{side}_packing", f"`{side}_packing: {packing}` packs sub-byte "
                         f"values, but {side.upper()} is {fmt} "
                         f"({packed_bits(fmt)}-bit elements)"))
        stype = getattr(desc, f"{side}_scale_type")
        if mode != "none" and stype is None:
            errs.append((f"{side}_scale_mode", f"`{side}_scale_mode: {mode}` needs an "
                         f"`{side}_scale_type:` ("
                         f"{'f32' if mode == 'per_tensor' else 'ue8m0 or ue4m3'})"))
        elif mode == "per_tensor" and stype != "f32":
            errs.append((f"{side}_scale_type", f"`{side}_scale_mode: per_tensor` takes one "
                         f"f32 scale (`{side}_scale_type: f32`), not {stype}"))
        elif mode not in ("none", "per_tensor") and stype not in BLOCK_SCALE_TYPES:
            errs.append((f"{side}_scale_type", f"`{side}_scale_mode: {mode}` tables hold "
                         f"ue8m0 or ue4m3 scales, not {stype}"))
        if mode == "per_tensor" and (getattr(desc, f"lds{side}") is not None
                                     or f"lds{side}" in roles):
            errs.append((f"lds{side}", f"`lds{side}` is a block table's leading dimension; "
                         "a per_tensor scale is one value"))
        if mode != "none" and not has:
            errs.append((f"{side}_scale_mode", f"`{side}_scale_mode: {mode}` needs an "
                         f"`{side}_scale:` pointer"))
        if mode == "none" and (getattr(desc, f"lds{side}") is not None
                               or f"lds{side}" in roles):
            errs.append((f"lds{side}", f"`lds{side}` needs a `{side}_scale_mode`"))
        if mode == "none" and has:
            errs.append((f"{side}_scale", f"`{side}_scale:` needs a `{side}_scale_mode`"))
        if mode == "none" and getattr(desc, f"{side}_scale_type") is not None:
            errs.append((f"{side}_scale_type", f"`{side}_scale_type` needs a "
                         f"`{side}_scale_mode`"))
    if desc.persistent and desc.scope != "workgroup":
        errs.append(("persistent", "`persistent:` tiles a workgroup-scope region; it needs "
                     "`scope: workgroup`"))
    if desc.schedule != "cooperative" and desc.scope != "workgroup":
        errs.append(("schedule", f"`schedule: {desc.schedule}` chooses how a workgroup-scope "
                     "region's warpgroups share it; it needs `scope: workgroup`"))
    if desc.cluster not in (1, 2):
        errs.append(("cluster", f"`cluster: {desc.cluster}`: workgroups pair in clusters of 2 "
                     "(`cluster: 2`) or not at all (`cluster: 1`)"))
    elif desc.cluster == 2 and (desc.scope != "workgroup" or not desc.persistent):
        errs.append(("cluster", "`cluster: 2` pairs the workgroups of a persistent "
                     "workgroup-scope tile loop; it needs `scope: workgroup` and "
                     "`persistent: G`"))
    if desc.rounding != "default" and "i32" in (desc.accumulator_type, desc.result_type):
        errs.append(("rounding", f"`rounding: {desc.rounding}` has no meaning for integer "
                     "(i32) accumulation"))
    for opt in ("lda", "ldb", "ldc", "ldd", "ldsa", "ldsb"):
        v = getattr(desc, opt)
        if v is not None and v <= 0:
            errs.append((opt, f"`{opt}` must be positive, found {v}"))
        if v is not None and opt in roles:
            errs.append((opt, f"`{opt}` is both static and runtime"))
    return errs


def validate_epilogue(desc: EpilogueDesc, roles: tuple[str, ...]) -> list[tuple[str, str]]:
    errs: list[tuple[str, str]] = []
    if desc.m <= 0 or desc.n <= 0:
        errs.append(("shape", "the epilogue shape must have positive M and N"))
    if desc.element_type not in EPILOGUE_TYPES:
        errs.append(("element_type", f"`element_type` must be one of "
                     f"{', '.join(EPILOGUE_TYPES)}"))
    if (desc.bias_mode == "none") != ("bias" not in roles):
        errs.append(("bias", "`bias:` and a `bias_mode` other than none go together"))
    if desc.activation == "clamp" and not {"clamp_min", "clamp_max"} <= set(roles):
        errs.append(("clamp_min", "`activation: clamp` needs `clamp_min:` and `clamp_max:`"))
    if desc.activation != "clamp" and {"clamp_min", "clamp_max"} & set(roles):
        errs.append(("clamp_min", "`clamp_min:`/`clamp_max:` need `activation: clamp`"))
    if desc.bias_mode != "matrix" and (desc.ldbias is not None or "ldbias" in roles):
        errs.append(("ldbias", "`ldbias:` is the leading dimension of a matrix bias; it "
                     f"needs `bias_mode: matrix`, not {desc.bias_mode}"))
    for opt in ("ld", "ldbias"):
        v = getattr(desc, opt)
        if v is not None and v <= 0:
            errs.append((opt, f"`{opt}` must be positive, found {v}"))
    return errs


def matmul_epilogue(desc: TensorDesc, **words) -> EpilogueDesc:
    """The fused epilogue of a tensor.matmul region: tensor_epilogue's arithmetic on the
    region's in-range elements, in the result's format (f16/bf16 compute in f32), over D's
    layout and stride. Its bias is a whole vector/matrix indexed by the *global* row and
    column like C and D (so a matrix bias has no default `ldbias`)."""
    return EpilogueDesc(desc.m, desc.n, desc.result_type, desc.d_layout, desc.ldd,
                        scope=desc.scope, **words)


def validate_matmul_epilogue(desc: TensorDesc, epi: EpilogueDesc,
                             roles: tuple[str, ...]) -> list[tuple[str, str]]:
    errs = validate_epilogue(epi, roles)
    if desc.result_type not in EPILOGUE_TYPES:
        errs.insert(0, ("result_type", "epilogue options need a floating-point result "
                        f"(f16, bf16, f32 or f64), found {desc.result_type}"))
    if epi.bias_mode == "matrix" and epi.ldbias is None and "ldbias" not in roles:
        errs.append(("bias_mode", "a matrix bias of tensor_matmul needs an explicit "
                     "`ldbias:` (whole matrices have no default leading dimension)"))
    return errs
