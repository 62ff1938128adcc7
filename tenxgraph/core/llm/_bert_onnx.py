"""A BERT encoder with mean pooling as an ONNX graph, built from its weights (``MiniLMEmbedder``).

Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output
``pooled`` (float32, batch x hidden): the mean of the last layer's token
vectors over the mask, not yet normalized. Every text has one segment, so
the token-type embedding is row 0, added as a constant. Padding is kept out
of attention by a large negative score and out of the mean by the mask, so
a text gives the same vector alone or in a padded batch.
"""

from __future__ import annotations

from typing import Any

from onnx import ModelProto, TensorProto, helper, numpy_helper

__all__ = ["bert_graph"]

OPSET = 20
"""The first opset with ``Gelu`` (exact, through erf, as BERT's ``gelu``)."""


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.constants: list[TensorProto] = []
        self._count = 0

    def constant(self, name: str, value: Any) -> str:
        self.constants.append(numpy_helper.from_array(value, name))
        return name

    def op(self, kind: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    def linear(self, x: str, weights: dict[str, Any], prefix: str) -> str:
        """``x @ W.T + b`` of the torch ``Linear`` named ``prefix``."""
        w = self.constant(f"{prefix}.wt", weights[f"{prefix}.weight"].T.copy())
        b = self.constant(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", self.op("MatMul", x, w), b)

    def norm(self, x: str, weights: dict[str, Any], prefix: str, eps: float) -> str:
        scale = self.constant(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.constant(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def bert_graph(weights: dict[str, Any], config: dict[str, Any]) -> ModelProto:
    """The encoder of ``weights`` (a BERT state dict as numpy arrays) and ``config``, pooled."""
    import numpy as np

    g = _Builder()
    eps = float(config["layer_norm_eps"])
    heads = int(config["num_attention_heads"])
    ids, mask = "input_ids", "attention_mask"
    x = _embedded(g, weights, ids, eps)
    maskf = g.op("Cast", mask, to=TensorProto.FLOAT)
    # (mask - 1) * 1e4: 0 for tokens, -1e4 for padding (exp underflows to exactly 0)
    blocked = g.op(
        "Mul",
        g.op("Sub", maskf, g.constant("onef", np.array(1.0, np.float32))),
        g.constant("big", np.array(10_000.0, np.float32)),
    )
    bias = g.op("Unsqueeze", blocked, g.constant("axes12", np.array([1, 2], np.int64)))
    for layer in range(int(config["num_hidden_layers"])):
        x = _layer(g, x, weights, f"encoder.layer.{layer}", bias, heads, eps)
    weight = g.op("Unsqueeze", maskf, g.constant("axis2", np.array([2], np.int64)))
    axis1 = g.constant("axis1", np.array([1], np.int64))
    total = g.op("ReduceSum", g.op("Mul", x, weight), axis1, keepdims=0)
    tiny = g.constant("tiny", np.array(1e-9, np.float32))
    pooled = g.op("Div", total, g.op("Max", g.op("ReduceSum", maskf, axis1, keepdims=1), tiny))
    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pooled",
        [
            helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "tokens"]),
        ],
        [
            helper.make_tensor_value_info(
                pooled, TensorProto.FLOAT, ["batch", config["hidden_size"]]
            )
        ],
        initializer=g.constants,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _embedded(g: _Builder, weights: dict[str, Any], ids: str, eps: float) -> str:
    """Word + position + segment-0 embeddings, normalized."""
    import numpy as np

    positions = g.op(
        "Range",
        g.constant("zero", np.array(0, np.int64)),
        g.op("Squeeze", g.op("Shape", ids, start=1, end=2)),
        g.constant("one", np.array(1, np.int64)),
    )
    words = g.constant("word", weights["embeddings.word_embeddings.weight"])
    places = g.constant("pos", weights["embeddings.position_embeddings.weight"])
    segment = g.constant("segment", weights["embeddings.token_type_embeddings.weight"][0].copy())
    summed = g.op(
        "Add", g.op("Add", g.op("Gather", words, ids), g.op("Gather", places, positions)), segment
    )
    return g.norm(summed, weights, "embeddings.LayerNorm", eps)


def _layer(
    g: _Builder, x: str, weights: dict[str, Any], p: str, bias: str, heads: int, eps: float
) -> str:
    """One encoder layer: self-attention over the unmasked tokens, then the feed-forward block."""
    import numpy as np

    size = weights[f"{p}.attention.self.query.weight"].shape[0] // heads
    split = g.constant(f"{p}.split", np.array([0, 0, heads, size], np.int64))
    merged = g.constant(f"{p}.merged", np.array([0, 0, heads * size], np.int64))
    scale = g.constant(f"{p}.scale", np.array(1.0 / np.sqrt(size), np.float32))
    q, k, v = (
        g.op("Reshape", g.linear(x, weights, f"{p}.attention.self.{n}"), split)
        for n in ("query", "key", "value")
    )
    scores = g.op(
        "MatMul", g.op("Transpose", q, perm=[0, 2, 1, 3]), g.op("Transpose", k, perm=[0, 2, 3, 1])
    )
    probs = g.op("Softmax", g.op("Add", g.op("Mul", scores, scale), bias), axis=-1)
    context = g.op("MatMul", probs, g.op("Transpose", v, perm=[0, 2, 1, 3]))
    context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merged)
    attended = g.linear(context, weights, f"{p}.attention.output.dense")
    x = g.norm(g.op("Add", x, attended), weights, f"{p}.attention.output.LayerNorm", eps)
    hidden = g.op("Gelu", g.linear(x, weights, f"{p}.intermediate.dense"))
    out = g.linear(hidden, weights, f"{p}.output.dense")
    return g.norm(g.op("Add", x, out), weights, f"{p}.output.LayerNorm", eps)
