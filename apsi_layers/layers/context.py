"""Ctx: what a forward pass is given besides parameters and inputs.

ops       the op set (ops/spec.py names it; backends/<name>/ops.py): a layer computes only with it
training  true in fit (dropout on, batch statistics), false in predict
rng       the op set's random stream for dropout and sampling (from fit's seed)
graph     a Graph (below) for graph layers, or None
mask      a boolean tensor [B, T] (true = real step) for sequence layers, or None
Batch norm hands back new running statistics with `ctx.set_state(old, new)`: fit puts `new` in the
tree where `old` was.
"""

from apsi_lang.errors import ApsiError


class Ctx:
    __slots__ = ("ops", "training", "rng", "graph", "mask", "updates")

    def __init__(self, ops, training=False, rng=None, graph=None, mask=None):
        self.ops = ops
        self.training = training
        self.rng = rng
        self.graph = graph
        self.mask = mask
        self.updates = {}

    def set_state(self, old, new):
        """Replace the state record `old` (as found in params) by `new` after this step."""
        self.updates[id(old)] = (old, new)

    def need_graph(self, layer):
        if self.graph is None:
            layer.fail("is a graph layer: pass the graph with graph=edges (an int tensor [2, E] of "
                       "source and target nodes) to fit and predict")
        return self.graph


class Graph:
    """A graph on one op set: edge index tensors plus what the graph layers need from them, computed
    once per fit/predict (degrees and GCN's normalisation are constants of the graph).

    src, dst       [E] the edges' source and target nodes
    loop_src/dst   the edges without their own self-loops, then one self-loop on every node
    in_degree      [n, 1] edges arriving at each node, at least 1 (a mean over no neighbours is 0)
    gcn_norm       [E + n, 1] 1 / sqrt(deg(src) deg(dst)) over the self-looped edges
    """

    __slots__ = ("n", "src", "dst", "loop_src", "loop_dst", "in_degree", "gcn_norm")

    def __init__(self, ops, edges, n):
        import numpy as np

        edges = np.asarray(edges)
        src, dst = edges[0].astype(np.int64), edges[1].astype(np.int64)
        # each node gets exactly one self-loop: the edge list's own are dropped first (the papers'
        # N(i) ∪ {i}; PyG's remove_self_loops + add_self_loops), or a node would count itself twice
        loops = np.arange(n, dtype=np.int64)
        other = src != dst
        loop_src, loop_dst = np.concatenate([src[other], loops]), np.concatenate([dst[other], loops])
        deg = np.bincount(loop_dst, minlength=n).astype(np.float64)
        inv = 1.0 / np.sqrt(deg)
        self.n = n
        self.src, self.dst = ops.indices(src), ops.indices(dst)
        self.loop_src, self.loop_dst = ops.indices(loop_src), ops.indices(loop_dst)
        in_degree = np.maximum(np.bincount(dst, minlength=n), 1).astype(np.float64)
        self.in_degree = ops.constant(in_degree[:, None])
        self.gcn_norm = ops.constant((inv[loop_src] * inv[loop_dst])[:, None])


def graph_arg(fn, graph, nodes):
    """(edges as an int ndarray [2, E], node count) from what a user passes as graph=.

    Accepted: an edge tensor/list [2, E] (nodes = the number of input rows), a record {edges, nodes}
    or a list [edges, nodes]."""
    import numpy as np

    from apsi_lang.values import Record
    from apsi_layers.nn.autograd.tensor import to_plain

    n = nodes
    if isinstance(graph, Record):
        if not hasattr(graph, "edges"):
            raise ApsiError(f"{fn}: graph= as a record needs a field edges (an int tensor [2, E]) and "
                            "optionally nodes (the node count)")
        edges, n = graph.edges, getattr(graph, "nodes", nodes)
    elif isinstance(graph, list | tuple) and len(graph) == 2 and isinstance(graph[1], int):
        edges, n = graph
    else:
        edges = graph
    try:
        # (only a tensor, an array or lists of numbers reach NumPy: see nn.tensor.to_plain)
        e = np.asarray(to_plain(edges))
        if e.dtype.kind == "f" and np.all(e == np.round(e)):
            e = e.astype(np.int64)
    except (TypeError, ValueError):
        e = np.asarray([])
    if e.ndim != 2 or e.shape[0] != 2 or e.dtype.kind not in "iu":
        raise ApsiError(f"{fn}: graph= must be an int edge list of shape [2, E] (row 0 sources, row 1 "
                        f"targets), got shape {list(np.shape(e))}")
    if not isinstance(n, int) or n <= 0:
        raise ApsiError(f"{fn}: the graph's node count must be a positive int, got {n!r}")
    if e.size and (e.min() < 0 or e.max() >= n):
        raise ApsiError(f"{fn}: the graph has an edge to node {int(e.max() if e.max() >= n else e.min())}, "
                        f"outside 0..{n - 1} ({n} nodes: one per input row)")
    return e.astype(np.int64), n
