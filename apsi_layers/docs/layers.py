"""The documentation of `use layers` (apsi_lang/doc_source.py): the tables docs/layers.md shows
(every layer, combinator and zoo model, and fit's options)."""

from apsi_lang.doc_table import Table

TABLES = (
    Table('docs/layers.md', 'layer', None,
          ('Layer', 'Input → output (per sample)', 'Parameters and options'),
          (
              ('`dense(units, activation=none, bias=true, inputs=none)`', '`[..., F]` → `[..., units]`', '`w [F, units]`, `b [units]`'),
              ('`embedding(vocab, dim)`', 'int ids `[T]` → `[T, dim]`', '`w [vocab, dim]`'),
              ('`conv1d(filters, kernel, stride=1, padding="valid", dilation=1, groups=1, bias=true, activation=none)`', "`[C, L]` → `[filters, L']`", '`w [filters, C/groups, k]`, `b`'),
              ('`conv2d(filters, kernel, …)` (same options; kernel, stride, dilation an int or `[h, w]`)', "`[C, H, W]` → `[filters, H', W']`", '`w [filters, C/groups, kh, kw]`, `b`'),
              ('`max_pool1d(size=2, stride=size, padding="valid")`, `max_pool2d(…)`', '`[C, L]`, `[C, H, W]`', 'none'),
              ('`avg_pool1d(…)`, `avg_pool2d(…)` (padding counts as zeros, as in PyTorch)', '', 'none'),
              ('`global_avg_pool(axis=none)`', '`[C, …]` → `[C]`; with `axis=1`: `[T, F]` → `[F]`', 'none'),
              ('`flatten()`', '`[…]` → `[features]`', 'none'),
              ('`dropout(rate=0.5)`', 'same', 'zeroes `rate` of the values while training, scales the rest by 1/(1-rate)'),
              ('`batch_norm(momentum=0.1, eps=1e-5)`', 'axis 1 (features of `[F]`, channels of `[C, …]`)', '`gamma`, `beta`, `state.mean`, `state.var`'),
              ('`layer_norm(eps=1e-5, bias=true)`', 'last axis', '`gamma`, `beta`'),
              ('`rms_norm(eps=1e-6)`', 'last axis', '`gamma`'),
              ('`activation(name_or_fn)`', 'same', 'none'),
              ('`lambda_layer(fn, output_shape=none, torch_fn=none)`', "any function of the batch; its output shape is found by running it once (`torch_fn`, from Python: the torch backend's version)", 'none'),
              ('`lstm_layer(units, return_sequences=false, return_state=false)`', '`[T, F]` → `[units]` (or `[T, units]`)', "`w_ih [4u, F]`, `w_hh [4u, u]`, `b_ih`, `b_hh` (PyTorch's layout, gates i f g o)"),
              ('`gru_layer(units, …)`', 'as LSTM', 'gates r z n'),
              ('`attention(heads, dim=none, causal=false, dropout=0.0, bias=true)`', '`[T, F]` → `[T, F]`; `[x, memory]` for cross-attention', "`wq wk wv wo` (+ biases); `dropout` acts on the output (after `wo`), as in a transformer block's residual branch"),
              ('`transformer_block(heads, hidden=4F, dropout=0.0, causal=false, activation="gelu")`', '`[T, F]` → `[T, F]`', 'pre-norm: `x + attn(norm1(x))`, `x + fc2(fc1(norm2(x)))`'),
              ('`positions(context, kind="learned")` (`"sinusoidal"` has no parameters)', '`[T, D]`, `T ≤ context`', '`table [context, D]`'),
          )),
    Table('docs/layers.md', 'combinator', None,
          ('Combinator', 'Meaning'),
          (
              ('`sequential(a, b, …)` (or a list)', 'layers one after another'),
              ('`residual(layer)`', '`x + layer(x)` (the layer must keep the shape)'),
              ('`parallel(a, b, …, merge="concat", axis=-1)`', 'each layer on the same input; merge `"concat"`, `"add"`, `"mean"`, `"mul"`, `"sub"`'),
              ('`merge(kind="concat", axis=-1)`', 'a DAG node that joins several inputs'),
              ('`dag(inputs, nodes, outputs)`', 'named nodes: `nodes={name: [layer, "input"], other: [layer, ["a", "b"]]}`; `inputs` a name, a list of names or a record `{name: shape}`; `outputs` a name or a list (several outputs)'),
          )),
    Table('docs/layers.md', 'layer', None,
          ('Layer', 'Rule'),
          (
              ('`gcn_layer(units, activation=none)`', 'Kipf & Welling: `D^-1/2 (A + I) D^-1/2 X W + b` (self-loops already in the edge list are dropped first, so each node has exactly one, as PyG does)'),
              ('`sage_layer(units, activation=none)`', 'GraphSAGE, mean: `X W_self + mean(neighbours) W_neigh + b`'),
              ('`gat_layer(units, heads=1, concat=true, slope=0.2, activation=none)`', "graph attention: softmax over each node's in-edges and itself, N(i) ∪ {i} (a self-loop in the edge list is not counted twice)"),
              ('`gin_layer(units, hidden=units, eps=0.0, train_eps=false, activation=none)`', 'GIN: `mlp((1 + eps) x + sum(neighbours))`'),
          )),
    Table('docs/layers.md', 'model', None,
          ('Model', 'One line'),
          (
              ('`mlp(inputs, outputs, hidden=[64, 64], activation="relu", dropout=0.0, batch_norm=false)`', '`let net = mlp(2, 3, hidden=[32, 32])`'),
              ('`resnet_mlp(inputs, outputs, width=128, blocks=4, dropout=0.0)`', '`let net = resnet_mlp(16, 4, width=128, blocks=4)`'),
              ('`cnn_classifier(input_shape, classes, filters=[16, 32], kernel=3, hidden=64, dropout=0.0)`', '`let net = cnn_classifier([1, 28, 28], 10)`'),
              ('`lstm_classifier(inputs, classes, units=64, layers=1, vocab=none, embed=32, cell="lstm", dropout=0.0)`', '`let net = lstm_classifier(8, 2, units=32)` or with token ids `lstm_classifier(0, 2, vocab=100)`'),
              ('`transformer_lm(vocab, d=128, heads=4, layers=2, context=128, dropout=0.0, hidden=4d, positions="learned")`', '`let lm = transformer_lm(vocab, d=256, heads=8, layers=6, context=256, dropout=0.1)`'),
              ('`gcn_classifier(inputs, classes, hidden=[16], dropout=0.5, kind="gcn")` (`kind`: gcn, sage, gat, gin)', '`let net = gcn_classifier(34, 2)`'),
              ('`vae(inputs, latent, hidden=[128])`', '`let v = vae(784, 16, hidden=[256])`'),
          )),
    Table('docs/layers.md', 'option', 'fit',
          ('Option', 'Default', 'Meaning'),
          (
              ('`loss`', 'required (`"vae"` for a vae)', '`"mse"`, `"mae"`, `"huber"`, `"cross_entropy"` (logits `[…, C]`, int labels `[…]`), `"bce"` (from logits), `"vae"`, or a function `fn(pred, target)` returning one number, or one loss per sample (shape `[B]`, Keras\'s per-sample losses), which fit averages (or weighs: `sample_weight`). Targets reach a loss function shaped as for the named losses: `[N]` targets for a model with one output arrive as `[N, 1]` (so `pred - target` is never an `[N, N]` matrix); float targets that differ from the output\'s shape only where broadcasting would stretch them are an error naming both shapes'),
              ('`opt`', '`"adam"`', "an `nn` optimizer (`adamw(lr=3e-4, weight_decay=0.1)`) or a name: sgd, adam, adamw, rmsprop, adagrad, nadam, radam (nn's defaults)"),
              ('`epochs`', '1', 'passes over the data'),
              ('`batch_size`', '32', 'samples per step (the last batch may be smaller)'),
              ('`seed`', '0', 'fixes shuffling, dropout and VAE sampling: the same call gives the same numbers, bit for bit'),
              ('`clip`', 'none', "global-norm gradient clipping (as torch's `clip_grad_norm_`)"),
              ('`schedule`', 'none', '`fn(step) => lr`, called with the global step (0, 1, …) before each update'),
              ('`graph`', 'none', 'edges `[2, E]` for graph layers (each epoch is one full-graph step)'),
              ('`mask`', 'none', "bool `[N]` (graph nodes, or samples, that count in the loss) or `[N, T]` (real sequence steps of inputs `[N, T, …]`: used by the layers, and the loss skips padded targets). A mini-batch whose mask keeps no sample is skipped (no step), and the epoch's loss is the mean over the kept samples; a mask that is false everywhere is refused before training"),
              ('`val`', 'none', "`[x_val, y_val]`, `[x_val, y_val, mask_val]` or `{x, y, mask, sample_weight}`: adds `val_history` (evaluation mode). The list's third item is a mask; validation sample weights (Keras's `validation_data=(x, y, w)`) go in the record's `sample_weight`, and weigh `val_loss` and the `weighted_metrics` as in training. A validation mask works as `mask=` does in training: for the layers (padding) and, where it covers the targets, for the loss, which is then the mean over the kept positions"),
              ('`verbose`', 'true on a terminal', "a rich progress bar per epoch (loss, validation loss, steps/s, the fit's time left), each epoch's bar left on screen with its losses; when output is not a terminal, one line per epoch; in a Jupyter notebook, those lines and a live bar that ends as the fit's summary ([editors.md](editors.md))"),
              ('`backend`', '`"numpy"`', '`"numpy"`, `"torch"` (needs permission `python` and PyTorch), `"auto"` (torch when both are there, NumPy otherwise; there the torch-only options are set aside with one note on stderr)'),
              ('`device`', '`"auto"`', 'torch only (docs/backends.md): `"cpu"`, `"cuda"`, `"cuda:1"`, `"mps"`, `"xpu"`; with `backend="numpy"` only `device="cpu"`/`"auto"` pass'),
              ('`precision`', '`"fp32"` on torch', 'torch only: `fp64`, `fp32`, `tf32`, `bf16`, `fp16`; with `backend="numpy"` only `precision="fp64"` passes'),
              ('`compile`', 'false', 'torch only: `torch.compile` the step'),
              ('`metrics`', 'none', 'a list of `"accuracy"`, `"top5"`, `"mae"`, `"mse"`, `"rmse"`, `"r2"` and functions `fn NAME(pred, target)`; computed after each epoch in evaluation mode on the training data (`r.metrics.NAME`) and on val (`r.val_metrics.NAME`), shown in the progress output. `accuracy` follows `task`: argmax for `cross_entropy` ("multiclass"), `logit > 0` for `bce` ("binary"); masks apply as for the loss; `r2` is scikit-learn\'s `r2_score` (per output column, averaged)'),
              ('`weighted_metrics`', 'none', "the same names as `metrics` (not functions), weighed by the samples' weights as Keras's `weighted_metrics`: sum(w · value) / sum(w); read as `r.metrics.weighted_accuracy`, `r.val_metrics.weighted_accuracy` (with `val`'s `sample_weight`). Without weights they equal the plain metrics"),
              ('`task`', "the loss's", 'how the model\'s outputs become classes for `accuracy` and `top5`: `"multiclass"` (argmax of the last axis; targets are labels or one-hot rows), `"binary"` (logit > 0), `"binary_probability"` (output > 0.5, a sigmoid output) or `"regression"` (no classes). `cross_entropy` implies "multiclass", `bce` "binary", `mse`/`mae`/`huber` "regression" (where any task may be given, e.g. mse on one-hot rows); a loss function implies none, so `metrics=["accuracy"]` with `loss=fn` needs `task=`'),
              ('`sample_weight`', 'none', 'one weight ≥ 0 per sample (a list or tensor `[N]`): each sample\'s loss times its weight, summed over the batch and divided by the batch\'s samples (Keras\'s `"sum_over_batch_size"`, not the sum of the weights as `torch.nn.functional.cross_entropy(weight=)` divides). Every loss, both backends; a loss function must then return one loss per sample. Under a sequence mask a sample\'s weight goes to each of its kept steps. With `validation_split` the last part\'s weights go with it. Weights all 1 are the unweighted run, bit for bit'),
              ('`class_weight`', 'none', "`{class: weight}` (classes not named weigh 1) or a list (class i's weight at index i): each sample weighs its class's weight, read from its target (labels `[N]`/`[N, 1]`, or the argmax of one-hot rows), as Keras's `class_weight`; one output only, not with `sample_weight` (Keras refuses both), training data only"),
              ('`reduce_lr`', 'none', 'Keras\'s `ReduceLROnPlateau`: `true` or `{monitor: "val_loss", factor: 0.1, patience: 10, min_delta: 1e-4, cooldown: 0, min_lr: 0.0, mode: "auto"}` (Keras\'s defaults; `monitor` defaults to `loss` without validation data, names as for `early_stopping`). After each epoch: a value better than the best by `min_delta` resets the wait; otherwise, outside a cooldown, when the wait reaches `patience` the rate becomes max(lr · factor, min_lr) and `cooldown` epochs follow. Not with `schedule=` or an `lr` function (they decide the rate). `r.lr_history`, and `r.opt` carries the reduced rate'),
              ('`csv_log`', 'none', "a CSV file of every epoch (Keras's `CSVLogger`): `epoch` (from 1), then the logs' keys sorted (`loss`, `lr`, the metrics, `val_loss`, `val_` metrics), floats written exactly. Rewritten atomically after every epoch under the sandbox's write rules (as `checkpoint`), holding every epoch so far: after `resume` it holds the whole run, never a row twice"),
              ('`validation_split`', 'none', 'a fraction: the last part of the samples (before shuffling, as Keras) becomes `val`'),
              ('`early_stopping`', 'none', 'a patience (`early_stopping=5`) or `{monitor: "val_loss", patience: 5, min_delta: 0.0, mode: "auto", restore_best: true}`: stop when `monitor` (`loss`, `val_loss`, a metric, or `val_` + a metric; default `val_loss` when there is validation data) has not improved by `min_delta` for `patience` epochs; `mode="auto"` maximises accuracy, top5 and r2. With `restore_best` (the default) `r.params` are the best epoch\'s; `r.stopped_epoch`, `r.best_epoch`'),
              ('`checkpoint`', 'none', "a file written (atomically, under the sandbox's write rules) after every epoch: parameters, optimizer state, schedule step, epoch, the positions of the shuffle and dropout streams, the histories, early stopping's and `reduce_lr`'s state and the options that must not change. A zip of NumPy arrays, never a pickle"),
              ('`checkpoint_every`', 'none', 'a number of steps: also write `checkpoint` after every that many steps, inside epochs. `resume` from such a checkpoint continues mid-epoch with the same batches, dropout draws, dataset random streams and loss sums: a run killed (Ctrl-C or `kill -9`) and resumed ends bit for bit where one run ends (NumPy; torch at any precision on the same machine; mapped files, datasets, `distributed=true`, each rank its own streams). See docs/data.md'),
              ('`resume`', 'none', 'a checkpoint to continue from: 4 epochs at once and 2 + resume 2 give the same history and parameters bit for bit (NumPy, torch at any precision on the same machine). `epochs` counts the whole run (`epochs=4` after a 2-epoch checkpoint trains epochs 3 and 4) and `r.history` holds every epoch. A resume with another model, sample count, batch size, seed, loss, optimizer, backend, precision, metrics, sample or class weights, task or `reduce_lr` is refused, naming what differs'),
              ('`distributed`', 'false', '`true`: data-parallel training on several processes started by `apsi launch --nproc N` or torchrun (PyTorch DDP: gloo on the CPU, NCCL on CUDA, rank r on `cuda:LOCAL_RANK`); `"auto"`: distributed when launched that way, one process otherwise. Needs `backend="torch"`; `batch_size` is per process, and N processes train exactly as one with `batch_size` × N. Only rank 0 shows progress and writes checkpoints; a graph model is refused. `rank()` and `world_size()` tell a program where it runs. See docs/distributed.md'),
              ('`on_epoch`', 'none', '`fn(epoch, logs)` after each epoch, with `logs` = `{loss, val_loss, metrics, val_metrics, lr, seconds}` (`lr`: the last step\'s rate); returning `"stop"` stops training'),
          )),
    Table('docs/layers.md', 'layer', None,
          ('Layer', 'Meaning'),
          (
              ('`normalization(eps=1e-12)`', '`(x - mean) / sqrt(var + eps)` per feature (the last axis)'),
              ('`category_lookup(max_categories, unknown="column", output="one_hot")`', 'category codes (numbers, one per sample) to one-hot columns `[unknown, c1, …, cK]` over the K most frequent codes (ties: smaller first), sorted; a code not kept sets the unknown column (`unknown="zeros"`: no column); `output="index"` gives the column number, 0 for unknown'),
              ('`impute(strategy="mean", fill=0.0)`', 'NaN replaced per feature by the mean seen (`"mean"`) or by `fill` (`"constant"`); `fit` and `predict` accept NaN in the inputs of a model that starts with it'),
          )),
)

MODULE = 'models built from layers, trained with fit on NumPy (or PyTorch) and run with predict; ready-made models (mlp, cnn_classifier, transformer_lm, …) (docs/layers.md).'

EXAMPLES = {
    'fit': 'use layers\nuse nn\nlet x = randn(64, 2, seed=0)\nlet y = array([i % 2 for i in range(64)])\nlet net = mlp(2, 2, hidden=[8])\nlet r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=3, verbose=false)\nprint(len(r.history), r.best_epoch)',
    'predict': 'use layers\nuse nn\nlet net = mlp(2, 3)\nlet p = net.init(seed=0)\nprint(predict(net, p, randn(4, 2, seed=1)).shape)',
    'dense': 'use layers\nlet net = sequential(dense(8, activation="relu", inputs=3), dense(1))\nprint(net)',
    'summary': 'use layers\nsummary(mlp(4, 2, hidden=[8]))',
}

PARAGRAPHS = {
    "fit": ("`fit(model, params, inputs, targets, …)` returns a record: `params` (the trained tree, float64 `nn` "
            "tensors like `init` gives), `history` (the mean loss of each epoch), `val_history`, `metrics` and "
            "`val_metrics` (a record of per-epoch lists, one per metric), `opt` (the optimizer with its state "
            "after training), `epochs` (epochs finished, a checkpoint's included), `stopped` (`none`, "
            "`\"early\"`, `\"callback\"`, `\"interrupted\"` or `\"nan\"`), `interrupted`, `stopped_epoch`, "
            "`best_epoch`, `lr_history` (each epoch's learning rate: its last step's), `device`, `backend`, "
            "`steps`, `seconds`, `world_size` and `rank` (1 and 0 unless `distributed`). Epochs count from 1 "
            "(`best_epoch`, `on_epoch`'s `epoch`, `csv_log`'s `epoch`), as the progress lines number them: "
            "`r.best_epoch` is 3 when the third epoch was best, so its loss is `r.history[r.best_epoch - 1]`. "
            "`r.backend` is what computed (`\"numpy\"` or `\"torch\"`) and `r.device` where (`\"cpu\"` on "
            "NumPy; `\"cpu\"`, `\"cuda:0\"`, `\"mps\"`… on torch), the same words `use web`'s `/info` gives."),
    "predict": ("`predict(model, params, x, graph=none, mask=none, batch_size=1024, backend=\"numpy\")` runs the "
                "model in evaluation mode (no dropout, batch norm's running statistics) and returns an `nn` "
                "tensor (a list of tensors for several outputs). The result does not depend on `batch_size`."),
    "summary": ("`summary(model, params=none, input_shape=none)` prints each layer's place, kind, output shape "
                "and parameter count, and the total, under the model's own text: a table on a terminal, "
                "aligned text otherwise."),
    "generate": ("`generate(lm, params, prompt, steps=100, temperature=1.0, seed=0)` continues a list of token "
                 "ids one sampled token at a time (temperature 0 picks the most likely); see "
                 "examples/char_lm.apsi."),
    'plot_history': '`plot_history(r, "loss.png")` draws what `fit` returned: a panel for the loss (with `val_loss` when `r.val_history` has values), one per metric in `r.metrics` (with its `r.val_metrics` curve), epochs on x; `.png` or `.svg`, written under the sandbox\'s write rules. `use plot` exports it too, with figures of your own: see [plot.md](plot.md).',
    'rank': 'Results carry `r.rank` and `r.world_size`; `rank()` and `world_size()` from `use layers` say the same anywhere in a program (0 and 1 when not launched).',
    'world_size': 'Results carry `r.rank` and `r.world_size`; `rank()` and `world_size()` from `use layers` say the same anywhere in a program (0 and 1 when not launched).',
    'devices': '`devices()` lists what this machine offers, one record per device (`name`, `kind`, `detail`):',
    'check_torch': '`check_torch(device="auto")` builds a small model of every layer type — dense, embedding, conv1d, conv2d (stride, padding, dilation, groups), pooling, batch/layer/RMS norm, dropout, LSTM and GRU (with and without a step mask), attention (causal, padding mask), transformer blocks and `transformer_lm`, residual, parallel and DAG composition, siamese weight sharing, `activation(fn)` and `lambda_layer(fn)` written with `nn` functions, GCN, GraphSAGE, GAT, GIN and the VAE — runs each on NumPy and on PyTorch in float64 in training mode, and compares the outputs and the gradients of every weight and input. The torch side draws its dropout masks and VAE noise from the same NumPy stream, so the random layers are compared number for number too. One line per model, then the verdict:',
    'torch_module': '`torch_module(net, params, device="cpu", dtype="float32", seed=0)` copies the parameters into an `ApsiModule`, a subclass of `torch.nn.Module`:',
    'params_from_torch': "`params_from_torch(net, m)` maps the weights back into a parameter tree of float64 `nn` tensors. The tests train a module with a plain `torch.optim` loop, wrap it in `DistributedDataParallel` with two CPU processes (gloo), and export it with `torch.export`, and with `torch.onnx.export` (which needs the `onnx` and `onnxscript` packages) whose file ONNX Runtime then runs when it is installed (`pip install onnx onnxscript onnxruntime`). Multi-GPU training needs none of this: `fit(…, distributed=true)` under `apsi launch` (docs/distributed.md). For ONNX export or TorchScript, take the model to PyTorch this way and use PyTorch's own tools.",
    'save_model': "Writes one file (`.apsim` is added when the name lacks it), atomically (a temporary file, then a rename), under the sandbox's write rules: inside the project no permission is needed (`.apsim` is a data kind, docs/permissions.md). `params` is the parameter tree, or `fit`'s result `r`, which brings `r.params`, the training history (`history`, `val_history`, `metrics`, `val_metrics`, `lr_history`) and `r.opt` with its state. `labels` names the classes (one per output); `meta` is any plain data (numbers, text, lists, records, maps, small tensors).",
    'load_model': 'Returns a record: `net` (the model), `params`, `labels` (or none), `meta`, `history`, `opt` (an optimizer with its state, or none), `input_shape`, `apsi_version`. `predict(m.net, m.params, x)` gives the same bits as the model that was saved, in another process, on NumPy and on torch; `summary(m.net)` works; `fit(m.net, m.params, x, y, …, opt=m.opt)` continues training exactly as the saving program\'s `fit(…, opt=r.opt)` would. `serve_model(load_model("m.apsim"))` serves it, with labels (docs/web.md).',
    'predict_labels': "`predict_labels(m, x)` gives each row's label; `predict_proba(m, x)` the class probabilities: softmax of the outputs (a sigmoid for one output, as `[1 - p, p]`), or the outputs themselves when the model ends in softmax or sigmoid.",
    'predict_proba': "`predict_labels(m, x)` gives each row's label; `predict_proba(m, x)` the class probabilities: softmax of the outputs (a sigmoid for one output, as `[1 - p, p]`), or the outputs themselves when the model ends in softmax or sigmoid.",
    'model_from_checkpoint': '`model_from_checkpoint(ckpt, net, labels=none, path=none)` turns a checkpoint `fit(checkpoint=…)` wrote into the same record (and with `path=`, a model file); `net` must be the model the run trained.',
    'export_onnx': "`export_onnx(net, params, path)` writes an `.onnx` file through `torch.onnx.export` of `torch_module` (needs permission `python`, PyTorch and the `onnx` and `onnxscript` packages); inputs are float32 (int64 for models that start with an embedding) with an open batch axis. ONNX Runtime's outputs match `predict` within 1e-5 (tests/models/test_serve_and_export.py).",
    'adapt': "`adapt(model, params, data)` returns the tree with the state of every preprocessing layer the model starts with learnt from `data` (a tensor, a `load_npy` array or a `dataset`'s x), one streamed pass per layer (each sees the data through the ones before it). The state sits under `state` in the tree, as batch norm's running statistics: the optimizer never changes it, `save_params`/`save_model` and checkpoints keep it, and `predict` (NumPy, torch, `use web`) applies it exactly as `fit` did. Adapt on the training split only (`adapt(net, p, x[0:n_train])`): statistics of held-out rows would leak them into training. See docs/data.md.",
}
