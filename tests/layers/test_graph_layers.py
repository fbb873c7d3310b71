"""The graph layers compute the published rules: each is checked against the same rule written with a
dense adjacency matrix (A[i, j] = number of edges j -> i), so the edge-list kernels cannot drift."""

import numpy as np
import pytest

from apsi_layers import layers as L
from apsi_layers import nn

# a directed graph with a node (5) that nothing points to and one (2) with three in-edges
EDGES = np.array([[0, 1, 3, 4, 0, 2, 1, 3], [1, 2, 2, 2, 3, 4, 0, 0]])
N = 6
X = np.random.default_rng(0).standard_normal((N, 4))


def adjacency():
    a = np.zeros((N, N))
    for s, t in EDGES.T:
        a[t, s] += 1.0
    return a


def run(layer):
    p = layer.init(seed=0, input_shape=[4])
    return p, L.predict(layer, p, nn.Tensor(X), graph=EDGES).data


def close(a, b):
    assert a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-12), np.abs(a - b).max()


def test_gcn_adds_self_loops_and_normalises_symmetrically():
    p, y = run(L.gcn_layer(3))
    a = adjacency() + np.eye(N)
    d = 1.0 / np.sqrt(a.sum(1))
    close(y, (d[:, None] * a * d[None, :]) @ X @ p.w.data + p.b.data)


def test_sage_averages_the_in_neighbours():
    p, y = run(L.sage_layer(3))
    a = adjacency()
    mean = (a @ X) / np.maximum(a.sum(1), 1)[:, None]        # node 5 has no neighbours: mean 0
    close(y, X @ p.w_self.data + mean @ p.w_neigh.data + p.b.data)


@pytest.mark.parametrize("concat", [True, False])
def test_gat_softmax_runs_over_each_nodes_in_edges_per_head(concat):
    heads, units = 2, 3
    p, y = run(L.gat_layer(units, heads=heads, concat=concat))
    a = adjacency() + np.eye(N)
    z = (X @ p.w.data).reshape(N, heads, units)
    out = np.zeros((N, heads, units))
    for h in range(heads):
        src = z[:, h] @ p.a_src.data[h]
        dst = z[:, h] @ p.a_dst.data[h]
        for i in range(N):
            js = np.nonzero(a[i])[0]
            e = src[js] + dst[i]
            e = np.where(e > 0, e, 0.2 * e)
            w = np.exp(e - e.max()) * a[i, js]
            out[i, h] = (w / w.sum()) @ z[js, h]
    want = out.reshape(N, heads * units) if concat else out.mean(1)
    close(y, want + p.b.data)


@pytest.mark.parametrize("eps, train", [(0.0, False), (0.3, True)])
def test_gin_sums_the_neighbours(eps, train):
    p, y = run(L.gin_layer(2, hidden=5, eps=eps, train_eps=train))
    h = (1.0 + eps) * X + adjacency() @ X
    h = np.maximum(h @ p.w1.data + p.b1.data, 0.0)
    close(y, h @ p.w2.data + p.b2.data)


def test_the_graph_may_be_a_record_or_a_pair_with_the_node_count():
    from apsi_lang.errors import ApsiError
    from apsi_lang.values import Record

    layer = L.gcn_layer(3)
    p, y = run(layer)
    x = nn.Tensor(X)
    for graph in (Record(edges=EDGES, nodes=N), [nn.Tensor(EDGES.astype(float)), N], EDGES.tolist()):
        assert np.array_equal(L.predict(layer, p, x, graph=graph).data, y)
    with pytest.raises(ApsiError, match=r"the graph has an edge to node 4, outside 0..3"):
        L.predict(layer, p, nn.Tensor(X[:4]), graph=EDGES)
    with pytest.raises(ApsiError, match=r"graph= as a record needs a field edges"):
        L.predict(layer, p, x, graph=Record(nodes=N))


@pytest.mark.parametrize("make", [lambda: L.gat_layer(3, heads=2), lambda: L.gcn_layer(3)],
                         ids=["gat", "gcn"])
def test_self_loops_already_in_the_edge_list_count_once(make):
    """Issue 16: with self-loops in the edge list, node i had two terms for itself in GAT's softmax
    (and GCN's degree). The paper's neighbourhood is N(i) ∪ {i}: one self-loop per node, as PyG's
    remove_self_loops + add_self_loops."""
    layer = make()
    p = layer.init(seed=0, input_shape=[4])
    with_loops = np.concatenate([EDGES, [[0, 2, 2, 5], [0, 2, 2, 5]]], axis=1)
    plain = L.predict(layer, p, nn.Tensor(X), graph=EDGES).data
    looped = L.predict(layer, p, nn.Tensor(X), graph=with_loops).data
    close(looped, plain)
