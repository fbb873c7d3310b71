"""The dynamic batcher on its own (no server): what goes into one predict call."""

import asyncio
import time
from dataclasses import dataclass

import pytest

from apsi_layers.web.batching import Batcher
from apsi_layers.web.http import Problem


@dataclass
class Item:
    n: int
    key: object = "k"
    alone: bool = False
    tag: str = ""


def run_batches(items, max_batch, max_wait, gap=0.0, coming=1):
    """Submit `items` (gap seconds apart); returns (the batches run, each item's result)."""
    batches = []

    def run(batch):
        batches.append([it.tag for it in batch])
        return [f"{it.tag}:{len(batch)}" for it in batch]

    async def main():
        b = Batcher(run, max_batch, max_wait, lambda rows: None)
        b.start()
        b.coming = coming
        tasks = []
        for it in items:
            tasks.append(asyncio.create_task(b.submit(it)))
            if gap:
                await asyncio.sleep(gap)
        results = await asyncio.gather(*tasks)
        await b.stop()
        return results

    return batches, asyncio.run(main())


def test_requests_arriving_together_share_one_call_up_to_max_batch():
    items = [Item(2, tag=str(i)) for i in range(7)]
    batches, results = run_batches(items, max_batch=6, max_wait=0.2)
    assert batches == [["0", "1", "2"], ["3", "4", "5"], ["6"]]
    assert results == ["0:3", "1:3", "2:3", "3:3", "4:3", "5:3", "6:1"]     # each gets its own answer


def test_max_wait_closes_a_batch():
    items = [Item(1, tag=str(i)) for i in range(3)]
    batches, _ = run_batches(items, max_batch=64, max_wait=0.0, gap=0.05)
    assert batches == [["0"], ["1"], ["2"]]


def test_a_lone_request_does_not_wait_when_nothing_else_is_on_its_way():
    items = [Item(1, tag=str(i)) for i in range(3)]
    start = time.perf_counter()
    # (a wide max_wait: the time asserted, ~0.1 s of gaps, stays far below it on a loaded machine too)
    batches, _ = run_batches(items, max_batch=64, max_wait=5, gap=0.05, coming=0)
    assert batches == [["0"], ["1"], ["2"]] and time.perf_counter() - start < 4.5
    batches, _ = run_batches(items, max_batch=64, max_wait=0.5, gap=0.05, coming=1)
    assert batches == [["0", "1", "2"]]          # others on their way: the batch waits for them


def test_only_requests_of_one_kind_share_a_call_and_a_graph_runs_alone():
    items = [Item(1, key="a", tag="a1"), Item(1, key="b", tag="b1"), Item(1, key="a", tag="a2"),
             Item(1, key="a", alone=True, tag="g"), Item(1, key="b", tag="b2"), Item(100, key="a", tag="big")]
    batches, _ = run_batches(items, max_batch=8, max_wait=0.2)
    assert sorted(batches) == sorted([["a1", "a2"], ["b1", "b2"], ["g"], ["big"]])


def test_a_failing_batch_is_split_so_each_request_gets_only_its_own_error():
    """One request whose rows make the call fail used to fail every request of its batch (other
    clients got 422/500 with its error): the batch is bisected down to the requests that fail alone."""
    calls = []

    def run(batch):
        calls.append([it.tag for it in batch])
        bad = [it.tag for it in batch if it.tag.startswith("bad")]
        if bad:
            raise ValueError(bad[0])
        return [f"ok {it.tag}" for it in batch]

    async def main():
        b = Batcher(run, 64, 0.1, lambda rows: None, explain=lambda e: KeyError(str(e)))
        b.start()
        b.coming = 1
        tags = [f"g{i}" for i in range(6)] + ["bad1"] + [f"g{i}" for i in range(6, 9)] + ["bad2"]
        first = await asyncio.gather(*(b.submit(Item(1, tag=t)) for t in tags), return_exceptions=True)
        b.coming = 0
        second = await b.submit(Item(1, tag="after"))
        await b.stop()
        return tags, first, second

    tags, first, second = asyncio.run(main())
    for tag, got in zip(tags, first):
        if tag.startswith("bad"):
            assert type(got) is KeyError and got.args == (tag,)        # its own error, explained
        else:
            assert got == f"ok {tag}"
    assert calls[0] == tags                                 # (all of them shared one call first)
    assert len(calls) <= 1 + 2 * 2 * 4                      # bisection, not one call per request
    assert second == "ok after"


def test_a_batch_of_a_model_with_two_outputs_splits_each_output_by_request():
    """ModelService.run: rows of several requests in one predict call, each output split back."""
    import numpy as np

    from apsi_lang.values import Record
    from apsi_layers.layers import dag, dense, predict
    from apsi_layers.web.model_app import ModelService

    net = dag(inputs=Record(x=[3]), nodes=Record(h=[dense(4), "x"], a=[dense(2), "h"], b=[dense(1), "h"]),
              outputs=["a", "b"])
    params = net.init(seed=0)
    service = ModelService(net, params, "numpy", None)
    rows = [[[1.0, 2.0, 3.0]], [[0.0, 1.0, 0.0], [2.0, 2.0, 2.0]]]
    items = [service.prepare({"inputs": r}) for r in rows]
    results = service.run(items)
    for r, got in zip(rows, results):
        want = predict(net, params, np.asarray(r))
        assert len(got) == 2
        assert np.allclose(got[0], want[0].data, rtol=1e-12) and np.allclose(got[1], want[1].data, rtol=1e-12)
        assert np.asarray(got[0]).shape == (len(r), 2) and np.asarray(got[1]).shape == (len(r), 1)


def test_a_graph_request_runs_alone_with_its_graph_and_a_bad_graph_is_predicts_error():
    import numpy as np

    from apsi_layers.layers import gcn_classifier, predict
    from apsi_layers.web.model_app import ModelService

    net = gcn_classifier(3, 2)
    params = net.init(seed=0)
    service = ModelService(net, params, "numpy", None)
    service.warm_up("serve_model")          # on one node without edges
    assert service.output_shape == [2]
    x = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    edges = [[0, 1, 1, 2], [1, 0, 2, 1]]
    item = service.prepare({"inputs": x, "graph": edges})
    assert item.alone
    got = service.run([item])[0]
    assert np.array_equal(got, predict(net, params, np.asarray(x), graph=np.asarray(edges)).data)
    with pytest.raises(Problem, match="^predict: the graph has an edge to node 7, outside 0..2") as e:
        service.prepare({"inputs": x, "graph": [[0, 7], [1, 0]]})
    assert e.value.status == 422


def test_a_clients_graph_is_checked_before_anything_is_allocated_for_it():
    """{"inputs": [[0, 0]], "graph": [[[0], [0]], 20000000]} (56 bytes) took a plain mlp server to 1.6 GB:
    a model without graph layers refuses a graph, and a graph's node count is the rows sent."""
    import resource

    from apsi_layers.layers import gcn_classifier, mlp
    from apsi_layers.web.model_app import ModelService

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    plain = ModelService(mlp(2, 2, hidden=[4]), mlp(2, 2, hidden=[4]).init(seed=0), "numpy", None)
    with pytest.raises(Problem, match="^predict: this model has no graph layers: send no \"graph\" field"):
        plain.prepare({"inputs": [[0, 0]], "graph": [[[0], [0]], 20000000]})
    net = gcn_classifier(2, 2)
    service = ModelService(net, net.init(seed=0), "numpy", None)
    with pytest.raises(Problem, match="^predict: the graph has 20000000 nodes but 1 input rows were sent; "):
        service.prepare({"inputs": [[0, 0]], "graph": [[[0], [0]], 20000000]})
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000     # KB
    ok = service.prepare({"inputs": [[0, 0], [1, 1]], "graph": [[[0], [1]], 2]})
    assert len(service.run([ok])[0]) == 2


def test_sequence_models_warm_up_and_show_their_open_lengths():
    """A model whose sequence length is open (none) warms up on 1 and 2 steps: /info shows none where
    the output follows that length."""
    from apsi_layers.layers import lstm_classifier, transformer_lm
    from apsi_layers.web.model_app import ModelService

    lm = transformer_lm(30, d=16, heads=2, layers=1, context=8)
    for net, inputs, outputs in [(lstm_classifier(8, 2, units=4), [None, 8], [2]),
                                 (lstm_classifier(0, 2, vocab=20), [None], [2]),
                                 (lm, [None], [None, 30])]:
        service = ModelService(net, net.init(seed=0), "numpy", None)
        service.warm_up("serve_model")
        info = service.info({})
        assert (info["inputs"], info["outputs"]) == (inputs, outputs), net


def test_the_torch_backend_moves_the_parameters_to_the_device_once(python_allowed, monkeypatch):
    import numpy as np
    import pytest

    pytest.importorskip("torch")
    from apsi_layers.backends.torch import convert
    from apsi_layers.layers import mlp, predict
    from apsi_layers.web.model_app import ModelService

    moved = []
    real = convert.to_torch
    monkeypatch.setattr(convert, "to_torch", lambda *a: moved.append(1) or real(*a))
    net = mlp(4, 3, hidden=[16])
    params = net.init(seed=0)
    service = ModelService(net, params, "torch", "cpu")
    assert not service.on_loop              # (torch runs its own threads: never on the event loop)
    rows = [[[1.0, 2.0, 3.0, 4.0]], [[0.0, 1.0, 0.0, 1.0], [2.0, 2.0, 2.0, -2.0]]]
    for _ in range(3):
        results = service.run([service.prepare({"inputs": r}) for r in rows])
    assert len(moved) == 1
    want = predict(net, params, np.asarray(rows[0] + rows[1]), backend="torch", device="cpu").data
    assert np.array_equal(np.asarray(results[0] + results[1]), want)


def _threads_of_calls(inline, burn=0.0, calls=4):
    """The thread each of `calls` one-request batches ran on, one after another; each call uses `burn`
    seconds of CPU time."""
    import threading

    ran = []

    def run(batch):
        ran.append(threading.current_thread())
        start = time.thread_time()
        while time.thread_time() - start < burn:
            pass
        return ["ok"] * len(batch)

    async def main():
        b = Batcher(run, 64, 0.0, lambda rows: None, inline=inline)
        b.start()
        for _ in range(calls):
            assert await b.submit(Item(1)) == "ok"
        await b.stop()
        return threading.current_thread()

    return asyncio.run(main()), ran


def test_a_cheap_batch_runs_on_the_event_loop_once_its_cost_is_measured():
    """Handing a 1-row call to the predict thread and back cost more than the call: once a size of batch
    has measured cheap, it runs on the loop's own thread."""
    loop_thread, ran = _threads_of_calls(inline=True)
    assert ran[0] is not loop_thread                   # (its cost not known yet: the worker measures it)
    assert ran[1:] == [loop_thread] * 3


def test_a_batch_runs_on_the_worker_thread_when_costly_or_when_the_model_may_run_program_code():
    from apsi_layers.web import batching

    loop_thread, ran = _threads_of_calls(inline=True, burn=2 * batching.INLINE_SECONDS, calls=3)
    assert loop_thread not in ran
    loop_thread, ran = _threads_of_calls(inline=False)
    assert loop_thread not in ran


def test_only_a_model_of_apsis_own_layers_may_compute_on_the_event_loop():
    """A program's function in the model (lambda_layer, activation=fn) or a Python custom layer may take
    any time: on the loop it would stop every other request, timeouts included."""
    from apsi_lang.values import Record
    from apsi_layers.layers import (
        CustomLayer,
        activation,
        cnn_classifier,
        dag,
        dense,
        gcn_classifier,
        lambda_layer,
        lstm_classifier,
        mlp,
        sequential,
        transformer_lm,
    )
    from apsi_layers.web.model_app import ModelService

    class Scale(CustomLayer):
        kind = "scale"

        def params(self, rng, input_shape):
            return {}, input_shape

        def forward(self, params, x, ctx):
            return x

    own = [mlp(4, 3, hidden=[8], batch_norm=True, dropout=0.1), cnn_classifier([8, 8, 1], 3),
           lstm_classifier(8, 2, units=4), transformer_lm(30, d=16, heads=2, layers=1, context=8),
           gcn_classifier(3, 2), sequential([dense(4, activation="tanh", inputs=4), activation("relu")]),
           dag(inputs=Record(x=[3]), nodes=Record(h=[dense(4), "x"], a=[dense(2), "h"]), outputs=["a"])]
    theirs = [sequential([lambda_layer(lambda x: x, output_shape=[4]), dense(3)]),
              sequential([dense(3, activation=lambda x: x, inputs=4)]),
              sequential([dense(3, inputs=4), activation(lambda x: x)]),
              sequential([dense(3, inputs=4), Scale()])]
    for net in own + theirs:
        service = ModelService(net, None, "numpy", None)
        assert service.on_loop == any(net is o for o in own), net
