"""``aj.from_torch``: a ``torch.nn.Module`` as an adjoint Module, through
``torch.export``.

1. ``torch.export.export`` traces the module into an ATen graph (high-level
   ops such as ``linear``, ``layer_norm``, ``scaled_dot_product_attention``
   are kept, so they map onto adjoint ops one to one).
2. The function's params are the user inputs, then the module's parameters,
   then its persistent buffers that the graph reads, in the order of the
   graph signature; the non-persistent buffers and constant tensors it
   reads become constants (float16 and bfloat16 ones float32, where torch
   converts them exactly). The function's ``frozen`` attr names the buffers
   and the parameters with ``requires_grad=False``
   (``frozen="bn_running_mean, bn_running_var"``), which training reads
   but does not update, as torch's optimizers do. Symbolic sizes become symbolic dims named after the
   ``torch.export.Dim`` they came from.
3. Each ATen node is translated by its entry in ``torch_ops.OPS``; a node
   with no entry (or an option an entry cannot honour) is an
   ``aj.UnsupportedOpError`` naming the op and the user's source line.
   Operands of different dtypes are promoted as torch promotes them
   (``torch_promote``), and every translation must give the dtype torch
   recorded for the node. An in-place op is imported as its out-of-place
   op when no one can see the change (``torch_inplace``).
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any, Sequence

import numpy as np

from .. import _core, op
from ..builder import FunctionBuilder
from ..errors import Error, UnsupportedOpError
from . import torch_activations, torch_nn_ops, torch_reductions  # noqa: F401  (add their ops to OPS)
from .torch_inplace import changes_only_a_fresh_tensor, in_place_hint, out_of_place_key
from .torch_names import DTYPE_NAMES, dtype_name, param_name, require_torch
from .torch_ops import OPS, Args
from .torch_promote import size_as_value

# float16 and bfloat16 constants are imported as float32, which holds their values exactly
_WIDENED = ("float16", "bfloat16")
# ops that copy a tensor (or convert it to another dtype), and ops that read no values
_COPIES = {"lift_fresh_copy", "detach", "clone", "alias", "contiguous", "_to_copy", "to"}
_NO_VALUE = {"_assert_tensor_metadata"}
# ops that compute in torch's promoted dtype of their operands
_ELEMENTWISE = {"add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
                "ge", "where", "masked_fill"}

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n[ \t]*([^\n]*)')


def from_torch(module: Any, example_inputs: Sequence[Any], dynamic_shapes: Any = None,
               func_name: str = "main") -> _core.Module:
    """Imports ``module`` (a ``torch.nn.Module``) as an adjoint Module.

    ``example_inputs`` is a tuple of tensors, one per positional argument of
    ``module.forward``; ``dynamic_shapes`` is passed to ``torch.export.export``
    (``{"x": {0: torch.export.Dim("batch")}}``) and each dynamic size becomes
    a symbolic dim of the Dim's name. The result holds one function,
    ``func_name``, whose params are the inputs (``num_input`` of them), then
    the weights: every parameter and every persistent buffer the computation
    reads, named after their torch names (``fc1.weight`` -> ``fc1_weight``,
    see ``torch_names.param_name``). It returns the module's output nested as
    ``forward`` returns it (a tuple for each tuple, list, namedtuple or dict). Dropout is the identity in eval mode and an
    error in training mode; import a module in the mode you mean
    (``module.eval()``). Give the weights with ``aj.from_torch_state``.

    Raises ``aj.UnsupportedOpError`` for an op with no translation, naming
    the op and the source line; ``aj.Error`` when torch is missing or cannot
    export the module.
    """
    torch = require_torch("aj.from_torch")
    args = _example_tuple(torch, example_inputs)
    try:
        program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch's own errors: data-dependent control flow, bad dynamic_shapes
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Error(f"torch.export could not export {type(module).__name__}: {first_line}") from e
    return _Importer(torch, module, program, dynamic_shapes).run(func_name)


def _example_tuple(torch: Any, example_inputs: Any) -> tuple:
    args = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else example_inputs
    if not isinstance(args, (tuple, list)):
        raise Error("aj.from_torch: example_inputs must be a tensor or a tuple of tensors, got "
                    f"{type(example_inputs).__name__}")
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise Error(f"aj.from_torch: example_inputs must be a tensor or a tuple of tensors, but item {i} is "
                        f"of type {type(a).__name__}, not a tensor (an input of the function is a tensor: give "
                        f"torch.tensor(...) or torch.from_numpy(...))")
    for j, b in enumerate(args):  # torch.export takes one tensor given twice for one input and drops the other
        i = next(i for i, a in enumerate(args) if a is b)
        if i != j:
            raise Error(f"aj.from_torch: example inputs {i} and {j} are the same tensor, which torch.export would "
                        f"take for one input and leave input {i} unread; give distinct tensors (t.clone())")
    return tuple(args)


class _Importer:
    """One import: the exported program, the builder, and the value of each node."""

    def __init__(self, torch: Any, module: Any, program: Any, dynamic_shapes: Any) -> None:
        self.torch = torch
        self.module = module
        self.program = program
        self.dynamic_shapes = dynamic_shapes
        self.values: dict[str, Any] = {}
        self.out_of_place: set[str] = set()  # the in-place nodes imported as their out-of-place ops
        self.widened: dict[str, tuple[str, str]] = {}  # node: (torch dtype, what) of a float16/bfloat16 constant
        self.dim_names: dict[str, str] = {}
        self.node: Any = None
        self.bb: FunctionBuilder | None = None
        self.default_float = dtype_name(torch.get_default_dtype(), "torch's default dtype")

    def run(self, func_name: str) -> _core.Module:
        specs = self.program.graph_signature.input_specs
        placeholders = {n.name: n for n in self.program.graph.nodes if n.op == "placeholder"}
        user = [s for s in specs if s.kind.name == "USER_INPUT"]
        weights = [s for s in specs if self._is_weight(s, placeholders[s.arg.name])]
        self._name_dims([placeholders[s.arg.name] for s in user])
        kept = [param_name(s.target) for s in weights if self._is_frozen(s)]
        frozen = {"frozen": ", ".join(kept)} if kept else {}  # training reads, does not update them
        with FunctionBuilder(func_name, num_input=len(user), **frozen) as self.bb:
            self._add_params(user, weights, placeholders)
            self._add_constants(specs, placeholders)
            ret = self._translate()
            return self.bb.finish(ret)

    # -- params ----------------------------------------------------------------

    def _is_weight(self, spec: Any, node: Any) -> bool:
        kind = spec.kind.name
        return kind == "PARAMETER" or (kind == "BUFFER" and spec.persistent and len(node.users) > 0)

    def _is_frozen(self, spec: Any) -> bool:
        """Whether training leaves weight ``spec`` as it is: a buffer, or a
        parameter with ``requires_grad=False`` (a frozen layer when fine-tuning)."""
        return spec.kind.name == "BUFFER" or not self.module.get_parameter(spec.target).requires_grad

    def _add_params(self, user: list, weights: list, placeholders: dict) -> None:
        names: dict[str, str] = {}
        for spec in weights:
            name = param_name(spec.target)
            if name in names:
                raise Error(f"aj.from_torch: torch names '{names[name]}' and '{spec.target}' both "
                            f"become param '{name}'; rename one of them")
            names[name] = spec.target
        for spec in user:
            node = placeholders[spec.arg.name]
            name = _unique(param_name(spec.arg.name), names)
            names[name] = spec.arg.name
            self.values[node.name] = self._param(name, node)
        for spec in weights:
            node = placeholders[spec.arg.name]
            self.values[node.name] = self._param(param_name(spec.target), node)

    def _param(self, name: str, node: Any) -> Any:
        val = node.meta.get("val")
        if not isinstance(val, self.torch.Tensor):
            raise Error(f"aj.from_torch: input '{name}' is not a tensor ({type(val).__name__})")
        return self.bb.param(name, self.shape_of(val), dtype_name(val.dtype, f"param '{name}'"))

    def _add_constants(self, specs: list, placeholders: dict) -> None:
        """The non-persistent buffers and constant tensors the graph reads, as
        constants; one nothing reads is not converted. A float16 or bfloat16
        one becomes float32 (exactly), read only where torch converts it
        (``_read_widened``); one of another dtype adjoint lacks is an aj.Error
        naming it and the node that reads it."""
        for spec in specs:
            node = placeholders.get(spec.arg.name)
            if spec.arg.name in self.values or node is None or not node.users:
                continue
            what = f"{'buffer' if spec.kind.name == 'BUFFER' else 'constant tensor'} '{spec.target}'"
            reader = next(iter(node.users))
            where = f"read by node '{reader.name}', from {self.source_line(reader)}"
            tensor = self.program.constants.get(spec.target)
            if tensor is None:
                tensor = self.program.state_dict.get(spec.target)
            if not isinstance(tensor, self.torch.Tensor):
                raise Error(f"aj.from_torch: {what} ({where}) has no tensor in the exported program")
            dtype = str(tensor.dtype).removeprefix("torch.")
            tensor = tensor.detach().cpu()
            if dtype in _WIDENED:
                self.widened[spec.arg.name] = (dtype, what)
                tensor = tensor.float()
            elif dtype not in DTYPE_NAMES:
                raise Error(f"aj.from_torch: {what} ({where}) has dtype {tensor.dtype}; adjoint has "
                            f"{', '.join(DTYPE_NAMES)}")
            self.values[spec.arg.name] = self.constant(tensor.numpy())

    def _name_dims(self, inputs: list) -> None:
        """Maps each symbol of a dynamic input size to its torch.export.Dim's name."""
        if self.dynamic_shapes is None:
            return
        spec = self.dynamic_shapes
        if isinstance(spec, dict):
            arg_names = list(inspect.signature(self.module.forward).parameters)
            spec = [spec.get(n) for n in arg_names]
        for node, axes in zip(inputs, spec):
            if axes is None:
                continue
            items = axes.items() if isinstance(axes, dict) else enumerate(axes)
            for axis, dim in items:
                size = node.meta["val"].shape[axis]
                name = getattr(dim, "__name__", None)
                if name and isinstance(size, self.torch.SymInt) and size.node.expr.is_Symbol:
                    self.dim_names[str(size.node.expr)] = name

    # -- nodes -----------------------------------------------------------------

    def _translate(self) -> Any:
        for node in self.program.graph.nodes:
            self.node = node
            if node.op == "call_function":
                self.values[node.name] = self._call(node)
            elif node.op == "output":
                return self._outputs(node)
            elif node.op != "placeholder":
                raise UnsupportedOpError(f"aj.from_torch: graph node '{node.name}' of kind {node.op} "
                                         f"is not supported (from {self.source_line(node)})")
        raise Error("aj.from_torch: the exported graph has no output")

    def _call(self, node: Any) -> Any:
        if isinstance(node.meta.get("val"), self.torch.SymInt):  # size arithmetic: sym_size, operator.mul
            return self.dim(node.meta["val"])
        key, op_name = _op_key(node.target)
        schema = getattr(node.target, "_schema", None)
        in_place = schema is not None and schema.is_mutable
        if in_place:
            key = self._out_of_place(node, key, op_name)
        read = [n for n in node.all_input_nodes if n.name in self.widened]
        if read and self._read_widened(node, key, op_name, read[0]):
            return self.values[read[0].name]
        handler = OPS.get(key)
        if handler is None:
            raise UnsupportedOpError(f"aj.from_torch: op '{op_name}' has no translation to adjoint "
                                     f"(node '{node.name}', from {self.source_line(node)})")
        try:
            return self._checked(handler(self, self._arguments(node)), in_place)
        except UnsupportedOpError:
            raise
        except Error as e:
            raise type(e)(f"aj.from_torch: op '{op_name}' (node '{node.name}', from "
                          f"{self.source_line(node)}): {e}") from e
        except (TypeError, ValueError, KeyError, IndexError) as e:  # arguments of a form the entry does not take
            raise UnsupportedOpError(f"aj.from_torch: op '{op_name}' with these arguments is not supported "
                                     f"(node '{node.name}', from {self.source_line(node)}): {e}") from e

    def _out_of_place(self, node: Any, key: str, op_name: str) -> str:
        """The op table key to import the in-place ``node`` by, its
        out-of-place op's; UnsupportedOpError when the change could be seen."""
        if not changes_only_a_fresh_tensor(node, self.out_of_place):
            raise UnsupportedOpError(f"aj.from_torch: op '{op_name}' changes a tensor in place (node "
                                     f"'{node.name}', from {self.source_line(node)}); adjoint functions are "
                                     f"pure: {in_place_hint(node)}")
        self.out_of_place.add(node.name)
        return out_of_place_key(key)

    def _read_widened(self, node: Any, key: str, op_name: str, source: Any) -> bool:
        """Whether ``node`` is a copy of the float16/bfloat16 constant
        ``source`` (imported as float32) that keeps its dtype: then it stands
        for the same constant. Otherwise ``node`` may read it only where
        torch converts it exactly, to the dtype the node translation casts
        it to: a conversion (``.float()``), or an elementwise op beside a
        float32 or float64 tensor with dims, whose dtype torch computes in.
        An aj.Error naming the constant and the node else."""
        dtype, what = self.widened[source.name]
        val = node.meta.get("val")
        out = str(val.dtype).removeprefix("torch.") if isinstance(val, self.torch.Tensor) else None
        if key in _COPIES and out == dtype and node.args and node.args[0] is source:
            self.widened[node.name] = (dtype, what)
            return True
        if key in _COPIES or key in _NO_VALUE:
            return False
        beside = [n.meta.get("val") for n in node.all_input_nodes if n.name not in self.widened]
        if key in _ELEMENTWISE and any(isinstance(v, self.torch.Tensor) and v.ndim > 0 and
                                       v.dtype in (self.torch.float32, self.torch.float64) for v in beside):
            return False
        raise Error(f"aj.from_torch: {what} has dtype torch.{dtype}, which adjoint lacks; op '{op_name}' (node "
                    f"'{node.name}', from {self.source_line(node)}) reads it where float32 would not give torch's "
                    f"values. adjoint takes such a constant (as float32, exactly) only converted (c.float()) or "
                    f"beside a float32 or float64 tensor with dims (x * c); convert it in forward")

    def _checked(self, result: Any, in_place: bool) -> Any:
        """``result``, when a tensor, of the dtype torch gives the node (an
        in-place op's result cast to the dtype of the tensor it changes, as
        torch casts it); an aj.Error (a translation that computes something
        else) otherwise."""
        val = self.node.meta.get("val")
        if not isinstance(result, _core.Expr) or not isinstance(val, self.torch.Tensor):
            return result
        expected = str(val.dtype).removeprefix("torch.")
        if result.type.dtype != expected and in_place:
            return op.astype(result, expected)
        if result.type.dtype != expected:
            raise Error(f"its translation gives {result.type.dtype} where torch gives {expected} (a bug of "
                        "aj.from_torch's op table)")
        return result

    def _arguments(self, node: Any) -> Args:
        def value(v: Any) -> Any:
            return self.torch.fx.node.map_arg(v, lambda n: self.values[n.name])

        schema = getattr(node.target, "_schema", None)
        if schema is None:
            return Args({f"arg{i}": value(a) for i, a in enumerate(node.args)})
        named = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args):
                named[arg.name] = value(node.args[i])
            elif arg.name in node.kwargs:
                named[arg.name] = value(node.kwargs[arg.name])
            elif arg.has_default_value():
                named[arg.name] = arg.default_value
        return Args(named)

    def _outputs(self, node: Any) -> Any:
        for n in node.args[0]:
            if getattr(n, "name", None) in self.widened:
                dtype, what = self.widened[n.name]
                raise Error(f"aj.from_torch: the module returns {what}, of dtype torch.{dtype}, which adjoint lacks")
        results = [self.torch.fx.node.map_arg(n, lambda m: self.values[m.name]) for n in node.args[0]]
        for i, (n, r) in enumerate(zip(node.args[0], results)):
            made_by = (f" (node '{n.name}', from {self.source_line(n)})"
                       if isinstance(n, self.torch.fx.Node) else "")
            if isinstance(r, str):
                raise Error(f"aj.from_torch: output {i} of forward{made_by}: {size_as_value(r)}")
            if not isinstance(r, _core.Expr):
                raise Error(f"aj.from_torch: output {i}{made_by} is not a tensor ({type(r).__name__})")
        spec = getattr(self.program.call_spec, "out_spec", None)
        if spec is None or spec.num_leaves != len(results):
            return results[0] if len(results) == 1 else _core.Tuple(results)
        return self._nested(spec, iter(results))

    def _nested(self, spec: Any, leaves: Any) -> Any:
        """The output as forward returns it: a tensor where ``spec`` (torch's
        tree of the output) has a leaf, a tuple for each container (a tuple,
        list or namedtuple; a dict, its values in order), nested as returned."""
        if spec.is_leaf():
            return next(leaves)
        return _core.Tuple([self._nested(child, leaves) for child in spec.children()])

    # -- helpers for the op table ----------------------------------------------

    def unsupported(self, what: str, hint: str = "") -> UnsupportedOpError:
        """The error for an option of the current node that adjoint cannot
        honour: "op '...' {what} is not supported (node, source line)", then
        "; {hint}" when given (what to do instead)."""
        _, op_name = _op_key(self.node.target)
        return UnsupportedOpError(f"aj.from_torch: op '{op_name}' {what} is not supported (node "
                                  f"'{self.node.name}', from {self.source_line(self.node)})"
                                  + (f"; {hint}" if hint else ""))

    def out(self, index: int | None = None) -> Any:
        """The fake tensor torch computed for the current node (or its item ``index``)."""
        val = self.node.meta["val"]
        return val if index is None else val[index]

    def out_shape(self, index: int | None = None) -> tuple:
        return self.shape_of(self.out(index))

    def out_dtype(self) -> str:
        return dtype_name(self.out().dtype, f"the result of node '{self.node.name}'")

    def shape_of(self, tensor: Any) -> tuple:
        return tuple(self.dim(d) for d in tensor.shape)

    def dim(self, size: Any) -> int | str:
        """An int, or the polynomial string of a symbolic size in Dim names."""
        if isinstance(size, int):
            return size
        import sympy

        expr = sympy.expand(size.node.expr)
        if expr.is_Integer:
            return int(expr)
        symbols = sorted(expr.free_symbols, key=str)
        if expr.atoms(sympy.Function) or not expr.is_polynomial(*symbols):
            raise self.unsupported(f"with the size {expr} (not a polynomial in the dynamic dims)")
        return str(expr.xreplace({s: sympy.Symbol(self.dim_names.get(str(s), str(s))) for s in symbols}))

    def constant(self, array: np.ndarray, like: Any = None) -> Any:
        dtype = like.type.dtype if like is not None else None
        return _core.Constant(np.array(array, order="C"), dtype)

    def emit(self, expr: Any) -> Any:
        return self.bb.emit(expr)

    def source_line(self, node: Any) -> str:
        """``file:line: code`` of the innermost frame of the user's code that made ``node``."""
        frames = _FRAME.findall(node.meta.get("stack_trace") or "")
        torch_dir = os.path.dirname(self.torch.__file__)
        user = [f for f in frames if not os.path.abspath(f[0]).startswith(torch_dir)] or frames
        if not user:
            return "an unknown source line"
        file, line, code = user[-1]
        return f"{file}:{line}: {code.strip()}"


def _op_key(target: Any) -> tuple[str, str]:
    """(key in OPS, name for messages) of a node's target."""
    packet = getattr(target, "_overloadpacket", None)
    if packet is not None:
        return packet.__name__, str(target)
    name = getattr(target, "__name__", str(target))
    module = getattr(target, "__module__", None) or ""
    full = f"{module.lstrip('_')}.{name}" if module else name
    return full, full


def _unique(name: str, taken: dict) -> str:
    candidate, k = name, 1
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    return candidate
