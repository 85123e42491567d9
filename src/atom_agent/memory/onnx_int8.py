"""Run the int8 MiniLM's matrix products on int8 kernels: a small rewrite of its ONNX graph.

The shipped model stores every weight matrix as int8 with a per-column float scale; a Cast and a
Mul turn it back into floats in front of each MatMul. ONNX Runtime folds those at load time into
float32 weights, so every product runs in float32. :func:`int8_matmuls` replaces each
``Cast(int8 weight) → Mul(scale) → MatMul`` chain with one ``com.microsoft.DynamicQuantizeMatMul``
over the same int8 weights and scales (activations are quantised per call, per tensor): the
products then run on ONNX Runtime's int8 kernels (VNNI / AMX), ≈ 2× faster on this machine, and
a vector stays within ≈ 0.99 cosine of its float32 twin.

The rewrite edits the protobuf wire format directly, so the ``onnx`` package is not needed: only
the graph's node list and the model's opset imports change; every other byte is copied as is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

# Protobuf wire types.
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
# Field numbers of onnx.proto (ModelProto, GraphProto, NodeProto, TensorProto, ...).
_MODEL_GRAPH, _MODEL_OPSET = 7, 8
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_OUTPUT = 1, 5, 12
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_DOMAIN = 1, 2, 3, 4, 7
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME = 1, 2, 8
_VALUE_INFO_NAME = 1
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2
_FLOAT, _INT8 = 1, 3  # TensorProto.DataType
_MS_DOMAIN = "com.microsoft"


@dataclass(frozen=True)
class _Field:
    """One encoded field: its number, value and raw bytes (tag included), as views of the buffer."""

    number: int
    value: int | memoryview
    """A varint's value, else the payload (length-delimited) or the fixed-width bytes."""
    raw: memoryview

    @property
    def payload(self) -> memoryview:
        """The bytes of a length-delimited field (a nested message or a string)."""
        if isinstance(self.value, int):
            raise ValueError(f"protobuf field {self.number} is not length-delimited")
        return self.value

    @property
    def text(self) -> str:
        """A string field."""
        return bytes(self.payload).decode("utf-8")


@dataclass(frozen=True)
class _Node:
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class _Tensor:
    data_type: int
    dims: tuple[int, ...]


def int8_matmuls(model: bytes) -> tuple[bytes, int]:
    """Rewrite the weight-dequantising MatMuls of an ONNX model to ``DynamicQuantizeMatMul``.

    Args:
        model: a serialised ``ModelProto``.

    Returns:
        The rewritten model and how many MatMuls were replaced (with 0, `model` unchanged).

    Raises:
        ValueError: `model` is not a well-formed protobuf message.
    """
    top = _fields(model)
    graphs = [i for i, f in enumerate(top) if f.number == _MODEL_GRAPH]
    if len(graphs) != 1:
        return model, 0
    graph, replaced = _rewrite_graph(top[graphs[0]].payload)
    if not replaced:
        return model, 0
    parts = [
        _len_field(_MODEL_GRAPH, graph) if i == graphs[0] else f.raw for i, f in enumerate(top)
    ]
    if _MS_DOMAIN not in _opset_domains(top):
        parts.append(_len_field(_MODEL_OPSET, _opset(_MS_DOMAIN, 1)))
    return b"".join(parts), replaced


def _rewrite_graph(graph: memoryview) -> tuple[bytes, int]:
    fields = _fields(graph)
    nodes = {i: _node(f.payload) for i, f in enumerate(fields) if f.number == _GRAPH_NODE}
    tensors = dict(_initializer(f.payload) for f in fields if f.number == _GRAPH_INITIALIZER)
    producer = {out: i for i, node in nodes.items() for out in node.outputs}
    uses = Counter(name for node in nodes.values() for name in node.inputs)
    uses.update(_value_name(f.payload) for f in fields if f.number == _GRAPH_OUTPUT)
    swaps: dict[int, _Node] = {}  # field index of a MatMul -> its replacement
    dead: set[int] = set()  # Cast / Mul nodes that only the replaced MatMuls used
    for i, node in nodes.items():
        chain = _dequantising_chain(node, nodes, producer, tensors)
        if chain is None:
            continue
        mul, cast = chain
        swaps[i] = _Node(
            name=node.name,
            op_type="DynamicQuantizeMatMul",
            domain=_MS_DOMAIN,
            inputs=(node.inputs[0], nodes[cast].inputs[0], nodes[mul].inputs[1]),
            outputs=node.outputs,
        )
        for j in (mul, cast):
            uses[nodes[j].outputs[0]] -= 1
            if uses[nodes[j].outputs[0]] == 0:
                dead.add(j)
    if not swaps:
        return bytes(graph), 0
    parts: list[bytes | memoryview] = []
    for i, f in enumerate(fields):
        if i in swaps:
            parts.append(_len_field(_GRAPH_NODE, _encode_node(swaps[i])))
        elif i not in dead:
            parts.append(f.raw)
    return b"".join(parts), len(swaps)


def _dequantising_chain(
    node: _Node, nodes: dict[int, _Node], producer: dict[str, int], tensors: dict[str, _Tensor]
) -> tuple[int, int] | None:
    """The (Mul, Cast) node indices when `node` is ``MatMul(x, Mul(Cast(W), scale))``.

    W must be an int8 initializer [K, N] and the scale a float initializer with one value per
    column of W, or one for all: the inputs ``DynamicQuantizeMatMul`` takes.
    """
    if node.op_type != "MatMul" or node.domain or len(node.inputs) != 2:
        return None
    mul = producer.get(node.inputs[1])
    if mul is None or not _is(nodes[mul], "Mul", 2):
        return None
    cast = producer.get(nodes[mul].inputs[0])
    if cast is None or not _is(nodes[cast], "Cast", 1):
        return None
    weight = tensors.get(nodes[cast].inputs[0])
    scale = tensors.get(nodes[mul].inputs[1])
    if weight is None or scale is None or weight.data_type != _INT8 or scale.data_type != _FLOAT:
        return None
    # A float scale makes the Mul, hence the Cast, float: no need to read the Cast's target.
    if len(weight.dims) != 2 or scale.dims not in ((weight.dims[1],), (1, weight.dims[1]), (1,)):
        return None  # a per-row or per-block scale: not expressible, left alone
    return mul, cast


def _is(node: _Node, op_type: str, inputs: int) -> bool:
    return node.op_type == op_type and not node.domain and len(node.inputs) == inputs


# --- protobuf wire format ------------------------------------------------------------------------


def _fields(buf: bytes | memoryview) -> list[_Field]:
    """The top-level fields of one encoded message, in order (views, not copies)."""
    view = memoryview(buf)
    out: list[_Field] = []
    pos = 0
    while pos < len(view):
        start = pos
        key, pos = _read_varint(view, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, pos = _read_varint(view, pos)
        elif wire == _LEN:
            size, pos = _read_varint(view, pos)
            value, pos = view[pos : pos + size], pos + size
        elif wire in (_I64, _I32):
            width = 8 if wire == _I64 else 4
            value, pos = view[pos : pos + width], pos + width
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(view):
            raise ValueError("truncated protobuf message")
        out.append(_Field(number, value, view[start:pos]))
    return out


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while pos < len(view):
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise ValueError("truncated protobuf varint")


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LEN) + _varint(len(payload)) + payload


def _node(buf: memoryview) -> _Node:
    fields = _fields(buf)

    def first(number: int) -> str:
        return next((f.text for f in fields if f.number == number), "")

    return _Node(
        name=first(_NODE_NAME),
        op_type=first(_NODE_OP),
        domain=first(_NODE_DOMAIN),
        inputs=tuple(f.text for f in fields if f.number == _NODE_INPUT),
        outputs=tuple(f.text for f in fields if f.number == _NODE_OUTPUT),
    )


def _encode_node(node: _Node) -> bytes:
    strings = [(_NODE_INPUT, name) for name in node.inputs]
    strings += [(_NODE_OUTPUT, name) for name in node.outputs]
    strings += [(_NODE_NAME, node.name), (_NODE_OP, node.op_type), (_NODE_DOMAIN, node.domain)]
    return b"".join(_len_field(number, text.encode("utf-8")) for number, text in strings)


def _initializer(buf: memoryview) -> tuple[str, _Tensor]:
    name, data_type, dims = "", 0, []
    for f in _fields(buf):
        if f.number == _TENSOR_NAME:
            name = f.text
        elif f.number == _TENSOR_TYPE and isinstance(f.value, int):
            data_type = f.value
        elif f.number == _TENSOR_DIMS and isinstance(f.value, int):
            dims.append(f.value)
        elif f.number == _TENSOR_DIMS:  # packed repeated int64
            pos = 0
            while pos < len(f.payload):
                dim, pos = _read_varint(f.payload, pos)
                dims.append(dim)
    return name, _Tensor(data_type, tuple(dims))


def _value_name(buf: memoryview) -> str:
    return next((f.text for f in _fields(buf) if f.number == _VALUE_INFO_NAME), "")


def _opset_domains(model_fields: list[_Field]) -> set[str]:
    domains = set()
    for f in model_fields:
        if f.number == _MODEL_OPSET:
            sub = _fields(f.payload)
            domains.add(next((s.text for s in sub if s.number == _OPSET_DOMAIN), ""))
    return domains


def _opset(domain: str, version: int) -> bytes:
    version_field = _varint(_OPSET_VERSION << 3 | _VARINT) + _varint(version)
    return _len_field(_OPSET_DOMAIN, domain.encode("utf-8")) + version_field
