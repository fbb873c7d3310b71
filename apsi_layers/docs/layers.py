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
    Table('docs/layers.md', 'option', 'dense',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'output features: the last axis becomes `units` wide'),
              ('`activation`', '`none`', 'applied after `x @ w + b`: a name (`"relu"`, `"gelu"`, `"tanh"`, …) or a function `fn(x)`; none is linear'),
              ('`bias`', '`true`', 'whether to add `b`; `false` leaves the layer without it'),
              ('`inputs`', '`none`', 'the input features (or shape) when this is the first layer, so `init` needs no `input_shape`'),
              ('`name`', '`none`', "a name for the layer's parameters and messages (`dense_1` otherwise)"),
          )),
    Table('docs/layers.md', 'option', 'conv1d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`filters`', 'required', 'output channels'),
              ('`kernel`', 'required', 'the window length'),
              ('`stride`', '`1`', 'steps between windows'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"` (output length ⌈L / stride⌉), an int, or a list per side'),
              ('`dilation`', '`1`', "spacing between the window's taps"),
              ('`groups`', '`1`', 'split the channels into this many independent groups (both channel counts must divide)'),
              ('`bias`', '`true`', 'whether to add one bias per filter'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`inputs`', '`none`', 'the input shape `[C, L]` when this is the first layer'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'lstm_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'the state size (the output features)'),
              ('`return_sequences`', '`false`', "`true`: every step's output `[T, units]`; `false`: the last step's `[units]`"),
              ('`return_state`', '`false`', '`true`: also the final states, `[y, h, c]`'),
              ('`inputs`', '`none`', 'the input shape `[T, F]` when this is the first layer'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'attention',
          ('Option', 'Default', 'Meaning'),
          (
              ('`heads`', 'required', 'attention heads; they split the features'),
              ('`dim`', '`none`', 'the width of the projections, split over the heads: a multiple of `heads` (none: the input features)'),
              ('`causal`', '`false`', '`true`: step t sees only steps ≤ t'),
              ('`dropout`', '`0.0`', 'the share of the output zeroed while training'),
              ('`bias`', '`true`', 'whether the projections `wq wk wv wo` have biases'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'mlp',
          ('Option', 'Default', 'Meaning'),
          (
              ('`inputs`', 'required', 'input features'),
              ('`outputs`', 'required', 'output features (classes for a classifier: the logits)'),
              ('`hidden`', '`[64, 64]`', 'the width of each hidden dense layer, in order'),
              ('`activation`', '`"relu"`', 'between the hidden layers (none after the last)'),
              ('`dropout`', '`0.0`', 'the rate of a dropout after each hidden layer (0: none)'),
              ('`batch_norm`', '`false`', '`true`: batch norm between each hidden dense layer and its activation'),
          )),
    Table('docs/layers.md', 'option', 'conv2d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`filters`', 'required', 'output channels'),
              ('`kernel`', 'required', 'the window: an int or `[h, w]`'),
              ('`stride`', '`1`', 'steps between windows: an int or `[h, w]`'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"` (output size ⌈n / stride⌉), an int, or a list per dimension'),
              ('`dilation`', '`1`', "spacing between the window's taps: an int or `[h, w]`"),
              ('`groups`', '`1`', 'split the channels into this many independent groups (both channel counts must divide)'),
              ('`bias`', '`true`', 'whether to add one bias per filter'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`inputs`', '`none`', 'the input shape `[C, H, W]` when this is the first layer'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'dropout',
          ('Option', 'Default', 'Meaning'),
          (
              ('`rate`', '`0.5`', 'the share of values zeroed while training (the rest scaled by 1/(1-rate)); predict keeps all'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'batch_norm',
          ('Option', 'Default', 'Meaning'),
          (
              ('`momentum`', '`0.1`', "the weight of each batch in the running mean and variance (torch's convention)"),
              ('`eps`', '`1e-05`', 'added to the variance before its root, against division by zero'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'layer_norm',
          ('Option', 'Default', 'Meaning'),
          (
              ('`eps`', '`1e-05`', 'added to the variance before its root, against division by zero'),
              ('`bias`', '`true`', 'whether to add `beta` after scaling by `gamma`'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'gru_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'the state size (the output features)'),
              ('`return_sequences`', '`false`', "`true`: every step's output `[T, units]`; `false`: the last step's `[units]`"),
              ('`return_state`', '`false`', '`true`: also the final state, `[y, h]`'),
              ('`inputs`', '`none`', 'the input shape `[T, F]` when this is the first layer'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'transformer_block',
          ('Option', 'Default', 'Meaning'),
          (
              ('`heads`', 'required', 'attention heads'),
              ('`hidden`', '`none`', "the feed-forward layer's width (none: 4 × the input features)"),
              ('`dropout`', '`0.0`', 'the rate of dropout on the attention and feed-forward outputs while training'),
              ('`causal`', '`false`', '`true`: step t sees only steps ≤ t (a language model)'),
              ('`activation`', '`"gelu"`', 'between the two feed-forward layers'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'positions',
          ('Option', 'Default', 'Meaning'),
          (
              ('`context`', 'required', 'the longest sequence it takes'),
              ('`kind`', '`"learned"`', '`"learned"` (a trained table) or `"sinusoidal"` (fixed, no parameters)'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'embedding',
          ('Option', 'Default', 'Meaning'),
          (
              ('`vocab`', 'required', 'how many ids: they run 0..vocab−1'),
              ('`dim`', 'required', "each id's vector length"),
              ('`inputs`', '`none`', 'the input shape `[T]` when this is the first layer'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'transformer_lm',
          ('Option', 'Default', 'Meaning'),
          (
              ('`vocab`', 'required', 'how many token ids (the output logits per step)'),
              ('`d`', '`128`', "the model's width"),
              ('`heads`', '`4`', 'attention heads per block'),
              ('`layers`', '`2`', 'transformer blocks'),
              ('`context`', '`128`', 'the longest sequence (the positions table)'),
              ('`dropout`', '`0.0`', 'the dropout rate inside the blocks while training'),
              ('`hidden`', '`none`', 'the feed-forward width (none: 4 × d)'),
              ('`positions`', '`"learned"`', '`"learned"` or `"sinusoidal"`'),
          )),
    Table('docs/layers.md', 'option', 'rms_norm',
          ('Option', 'Default', 'Meaning'),
          (
              ('`eps`', '`1e-06`', 'added to the mean square before its root, against division by zero'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'max_pool1d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`size`', '`2`', 'the window: an int'),
              ('`stride`', '`none`', 'steps between windows (none: `size`)'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"`, an int, or a list per side; average pools count padding as zeros, as PyTorch'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'max_pool2d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`size`', '`2`', 'the window: an int or `[h, w]`'),
              ('`stride`', '`none`', 'steps between windows (none: `size`)'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"`, an int, or a list per side; average pools count padding as zeros, as PyTorch'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'avg_pool1d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`size`', '`2`', 'the window: an int'),
              ('`stride`', '`none`', 'steps between windows (none: `size`)'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"`, an int, or a list per side; average pools count padding as zeros, as PyTorch'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'avg_pool2d',
          ('Option', 'Default', 'Meaning'),
          (
              ('`size`', '`2`', 'the window: an int or `[h, w]`'),
              ('`stride`', '`none`', 'steps between windows (none: `size`)'),
              ('`padding`', '`"valid"`', '`"valid"` (none), `"same"`, an int, or a list per side; average pools count padding as zeros, as PyTorch'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'global_avg_pool',
          ('Option', 'Default', 'Meaning'),
          (
              ('`axis`', '`none`', 'the axis averaged away, counting the batch axis as 0 (none: every axis after the channels, `[C, …]` → `[C]`; `axis=1`: `[T, F]` → `[F]`)'),
              ('`name`', '`none`', "a name for the layer's messages"),
          )),
    Table('docs/layers.md', 'option', 'gcn_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'output features per node'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'sage_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'output features per node'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'gat_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'output features per node and head'),
              ('`heads`', '`1`', 'attention heads'),
              ('`concat`', '`true`', "`true`: the heads' outputs side by side (`heads · units`); `false`: their mean"),
              ('`slope`', '`0.2`', 'the negative slope of the leaky ReLU in the attention scores'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'gin_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`units`', 'required', 'output features per node'),
              ('`hidden`', '`none`', "the width of GIN's inner mlp (none: `units`)"),
              ('`eps`', '`0.0`', "the weight of a node's own features: `(1 + eps) x`"),
              ('`train_eps`', '`false`', '`true`: eps is a trained parameter'),
              ('`activation`', '`none`', "applied to the output, as dense's"),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'resnet_mlp',
          ('Option', 'Default', 'Meaning'),
          (
              ('`inputs`', 'required', 'input features'),
              ('`outputs`', 'required', 'output features'),
              ('`width`', '`128`', "the residual blocks' width"),
              ('`blocks`', '`4`', 'how many residual blocks `x + dense(relu(dense(layer_norm(x))))`'),
              ('`dropout`', '`0.0`', 'the dropout rate inside each block (0: none)'),
          )),
    Table('docs/layers.md', 'option', 'cnn_classifier',
          ('Option', 'Default', 'Meaning'),
          (
              ('`input_shape`', 'required', 'the images `[channels, height, width]`'),
              ('`classes`', 'required', 'output logits'),
              ('`filters`', '`[16, 32]`', 'one `conv2d(f, kernel, padding="same", relu)` and `max_pool2d(2)` per entry'),
              ('`kernel`', '`3`', "the convolutions' window"),
              ('`hidden`', '`64`', 'the dense layer after flattening'),
              ('`dropout`', '`0.0`', 'the rate of a dropout before the last layer (0: none)'),
          )),
    Table('docs/layers.md', 'option', 'lstm_classifier',
          ('Option', 'Default', 'Meaning'),
          (
              ('`inputs`', 'required', 'features per step (ignored with `vocab`)'),
              ('`classes`', 'required', 'output logits'),
              ('`units`', '`64`', "each recurrent layer's state size"),
              ('`layers`', '`1`', 'stacked recurrent layers; the last gives its final state'),
              ('`vocab`', '`none`', 'token ids `[T]` in 0..vocab−1 instead of features: an embedding first'),
              ('`embed`', '`32`', "the embedding's size (with `vocab`)"),
              ('`cell`', '`"lstm"`', '`"lstm"` or `"gru"`'),
              ('`dropout`', '`0.0`', 'the rate of a dropout between recurrent layers (0: none)'),
          )),
    Table('docs/layers.md', 'option', 'gcn_classifier',
          ('Option', 'Default', 'Meaning'),
          (
              ('`inputs`', 'required', 'features per node'),
              ('`classes`', 'required', 'logits per node'),
              ('`hidden`', '`[16]`', 'the width of each hidden graph layer (with relu)'),
              ('`dropout`', '`0.5`', 'the rate of a dropout before each graph layer (0: none)'),
              ('`kind`', '`"gcn"`', '`"gcn"`, `"sage"`, `"gat"` or `"gin"`: which graph layer'),
          )),
    Table('docs/layers.md', 'option', 'activation',
          ('Option', 'Default', 'Meaning'),
          (
              ('`fn`', 'required', 'a name (`"relu"`, `"gelu"`, `"tanh"`, …) or a function `fn(x)` written with `nn` functions'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'lambda_layer',
          ('Option', 'Default', 'Meaning'),
          (
              ('`fn`', 'required', 'any function of the batch'),
              ('`output_shape`', '`none`', "one sample's output shape (none: found by running fn once)"),
              ('`torch_fn`', '`none`', "from Python: the torch backend's version of fn"),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'sequential',
          ('Option', 'Default', 'Meaning'),
          (
              ('`name`', '`none`', "a name for the model's parameters and messages"),
              ('`inputs`', '`none`', 'the input shape (a list of them for several inputs), so `init` needs no `input_shape`'),
          )),
    Table('docs/layers.md', 'option', 'residual',
          ('Option', 'Default', 'Meaning'),
          (
              ('`layer`', 'required', 'a layer that keeps the shape: the result is `x + layer(x)`'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'parallel',
          ('Option', 'Default', 'Meaning'),
          (
              ('`merge`', '`"concat"`', '`"concat"`, `"add"`, `"mean"`, `"mul"` or `"sub"`: how the branches\' outputs join'),
              ('`axis`', '`-1`', 'the axis `"concat"` joins along'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'merge',
          ('Option', 'Default', 'Meaning'),
          (
              ('`kind`', '`"concat"`', '`"concat"`, `"add"`, `"mean"`, `"mul"` or `"sub"`'),
              ('`axis`', '`-1`', 'the axis `"concat"` joins along'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'dag',
          ('Option', 'Default', 'Meaning'),
          (
              ('`inputs`', 'required', 'a name, a list of names or a record `{name: shape}`'),
              ('`nodes`', 'required', 'a record `{name: [layer, input name or list of names]}`'),
              ('`outputs`', 'required', 'a node name, or a list of them (several outputs)'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'normalization',
          ('Option', 'Default', 'Meaning'),
          (
              ('`eps`', '`1e-12`', 'added to the variance before its root, against division by zero'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'category_lookup',
          ('Option', 'Default', 'Meaning'),
          (
              ('`max_categories`', 'required', 'the K most frequent codes kept (ties: the smaller first)'),
              ('`unknown`', '`"column"`', '`"column"`: a column for codes not kept; `"zeros"`: none (they give all zeros)'),
              ('`output`', '`"one_hot"`', '`"one_hot"` columns, or `"index"`: the column number (0 for unknown)'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'impute',
          ('Option', 'Default', 'Meaning'),
          (
              ('`strategy`', '`"mean"`', 'NaN becomes what `adapt` saw in that feature: `"mean"`, `"median"` or `"most_frequent"` (the smallest of tied values), as scikit-learn\'s `SimpleImputer`; `"constant"`: NaN becomes `fill`. `"median"` and `"most_frequent"` keep each distinct value seen with its count while adapting (memory of the distinct values, not of the rows)'),
              ('`fill`', '`0.0`', 'the value for `strategy="constant"`, and for a feature in which `adapt` saw no value'),
              ('`name`', '`none`', "a name for the layer's parameters and messages"),
          )),
    Table('docs/layers.md', 'option', 'flatten',
          ('Option', 'Default', 'Meaning'),
          (
              ('`tree`', '`none`', 'a parameter tree: gives its `(dotted name, tensor)` pairs; none: a flatten layer (`[…]` → `[features]`)'),
              ('`name`', '`none`', "the layer's name (when tree is none)"),
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
              ('`normalization(eps=1e-12)`', '`(x - mean) / sqrt(var + eps)` per feature (the last axis); a feature '
               'that is constant in the data `adapt` saw keeps its scale (its `var` is stored as 1, so it gives '
               '`x - mean`), as scikit-learn\'s `StandardScaler` does: its `1/sqrt(eps)` would turn a difference '
               'of 1 at `predict` into 10^6'),
              ('`category_lookup(max_categories, unknown="column", output="one_hot")`', 'category codes (numbers, one per sample) to one-hot columns `[unknown, c1, …, cK]` over the K most frequent codes (ties: smaller first), sorted; a code not kept, or NaN (a missing code), sets the unknown column (`unknown="zeros"`: no column), and `fit`/`predict` accept NaN in the inputs of a model that starts with it; `output="index"` gives the column number, 0 for unknown (`embedding(max_categories + 1, dim)` takes it, on both backends); on torch below `precision="fp64"` the codes are compared in float32, so kept codes must be whole numbers below 2^24 (16777216; others are refused: renumber them 0, 1, 2, …)'),
              ('`impute(strategy="mean", fill=0.0)`', 'NaN replaced per feature by the mean, median or most frequent value seen (`"mean"`, `"median"`, `"most_frequent"`) or by `fill` (`"constant"`); `fit` and `predict` accept NaN in the inputs of a model that starts with it'),
          )),
    Table('docs/layers.md', 'option', 'predict',
          ('Option', 'Default', 'Meaning'),
          (
              ('`graph`', 'none', 'edges `[2, E]` (or `{edges, nodes}`) for a model with graph layers'),
              ('`mask`', 'none', 'bool `[N, T]`, the real steps of padded sequences: LSTM/GRU carry their state over padded steps, attention ignores padded keys'),
              ('`batch_size`', '`1024`', 'rows per forward pass; the result does not depend on it'),
              ('`backend`', '`"numpy"`', '`"numpy"`, `"torch"` (needs permission `python` and PyTorch) or `"auto"`, as fit\'s'),
              ('`device`', 'none', 'torch only: `"cpu"`, `"cuda"`, `"cuda:1"`, `"mps"`, … as fit\'s `device`'),
              ('`precision`', '`"fp32"` on torch', "torch only: `fp64`, `fp32`, `tf32`, `bf16`, `fp16`, as fit's"),
              ('`compile`', 'false', 'torch only: `torch.compile` the model'),
          )),
    Table('docs/layers.md', 'option', 'summary',
          ('Option', 'Default', 'Meaning'),
          (
              ('`model`', 'required', 'the model'),
              ('`params`', '`none`', "the model's parameters (optional: the shapes and counts follow from the model alone)"),
              ('`input_shape`', '`none`', "one sample's shape, for a model that does not know it"),
          )),
    Table('docs/layers.md', 'option', 'generate',
          ('Option', 'Default', 'Meaning'),
          (
              ('`model`', 'required', 'a `transformer_lm`'),
              ('`params`', 'required', 'its parameters'),
              ('`prompt`', 'required', 'a list of token ids to continue'),
              ('`steps`', '`100`', 'how many tokens to add'),
              ('`temperature`', '`1.0`', 'sampling temperature; 0 always picks the most likely token'),
              ('`seed`', '`0`', 'the seed of the sampling'),
          )),
    Table('docs/layers.md', 'option', 'plot_history',
          ('Option', 'Default', 'Meaning'),
          (
              ('`r`', 'required', 'the record `fit` returned'),
              ('`path`', 'required', "a `.png` or `.svg` file, written under the sandbox's write rules"),
              ('`title`', '`none`', 'a title above the panels'),
          )),
    Table('docs/models.md', 'option', 'save_model',
          ('Option', 'Default', 'Meaning'),
          (
              ('`path`', 'required', 'the file (`.apsim` is added when missing), written atomically'),
              ('`net`', 'required', 'the model'),
              ('`params`', 'required', "the parameter tree, or fit's result (it brings the history and optimizer too)"),
              ('`labels`', '`none`', 'the class names, one per output'),
              ('`meta`', '`none`', 'any plain data kept with the model'),
              ('`opt`', '`none`', 'an optimizer with its state, to continue training later'),
              ('`history`', '`none`', "a training history, when `params` is a tree rather than fit's result"),
          )),
    Table('docs/models.md', 'option', 'load_model',
          ('Option', 'Default', 'Meaning'),
          (
              ('`path`', 'required', 'the `.apsim` file'),
              ('`max_mb`', '`2048`', 'the most megabytes read: a larger file is refused'),
          )),
    Table('docs/models.md', 'option', 'model_from_checkpoint',
          ('Option', 'Default', 'Meaning'),
          (
              ('`checkpoint`', 'required', 'the file `fit(checkpoint=…)` wrote'),
              ('`net`', 'required', 'the model that run trained'),
              ('`labels`', '`none`', 'the class names, one per output'),
              ('`path`', '`none`', 'also write it as a model file there'),
          )),
    Table('docs/backends.md', 'option', 'torch_module',
          ('Option', 'Default', 'Meaning'),
          (
              ('`net`', 'required', 'the model'),
              ('`params`', 'required', 'its parameters (copied)'),
              ('`device`', '`"cpu"`', '`"cpu"`, `"cuda"`, `"auto"`, …'),
              ('`dtype`', '`"float32"`', '`"float32"` (or `"fp32"`) or `"float64"` (`"fp64"`)'),
              ('`seed`', '`0`', "the seed of the module's own dropout stream"),
          )),
    Table('docs/backends.md', 'option', 'check_torch',
          ('Option', 'Default', 'Meaning'),
          (
              ('`device`', '`"auto"`', '`"auto"`, `"cpu"`, `"cuda"`, …: where the torch side runs'),
          )),
    Table('docs/models.md', 'option', 'export_onnx',
          ('Option', 'Default', 'Meaning'),
          (
              ('`net`', 'required', 'the model'),
              ('`params`', 'required', 'its parameters'),
              ('`path`', 'required', 'a file name ending in `.onnx`'),
              ('`opset`', '`none`', "the ONNX opset version (none: torch.onnx's default)"),
          )),
)

MODULE = 'models built from layers, trained with fit on NumPy (or PyTorch) and run with predict; ready-made models (mlp, cnn_classifier, transformer_lm, …) (docs/layers.md).'

EXAMPLES = {
    'torch_module': 'use layers\ntry:\n    let net = mlp(2, 1, hidden=[4])\n    let m = torch_module(net, net.init(seed=0))   # apsi --allow-python, with PyTorch\n    print(m)\ncatch e:\n    print(e.message)',
    'params_from_torch': 'use layers\ntry:\n    let net = mlp(2, 1, hidden=[4])\n    let m = torch_module(net, net.init(seed=0))   # apsi --allow-python\n    print(param_count(params_from_torch(net, m)))\ncatch e:\n    print(e.message)',
    'export_onnx': 'use layers\ntry:\n    let net = mlp(2, 1, hidden=[4])\n    print(export_onnx(net, net.init(seed=0), "m.onnx"))   # --allow-python; torch, onnx, onnxscript\ncatch e:\n    print(e.message)',
    'check_torch': 'use layers\ntry:\n    print(check_torch(device="cpu"))   # apsi --allow-python, with PyTorch\ncatch e:\n    print(e.message)',
    'fit': 'use layers\nuse nn\nlet x = randn(64, 2, seed=0)\nlet y = array([i % 2 for i in range(64)])\nlet net = mlp(2, 2, hidden=[8])\nlet r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=3, verbose=false)\nprint(len(r.history), r.best_epoch)',
    'predict': 'use layers\nuse nn\nlet net = mlp(2, 3)\nlet p = net.init(seed=0)\nprint(predict(net, p, randn(4, 2, seed=1)).shape)',
    'dense': 'use layers\nlet net = sequential(dense(8, activation="relu", inputs=3), dense(1))\nprint(net)',
    'summary': 'use layers\nsummary(mlp(4, 2, hidden=[8]))',
}

def _shape(make, input_shape, x):
    """An example that builds `make`, runs it on `x` and prints the output's shape."""
    return (f"use layers\nuse nn\nlet net = {make}\nlet p = net.init(seed=0, input_shape={input_shape})\n"
            f"print(predict(net, p, {x}).shape)")


def _graph(make):
    """A graph layer on a 4-node ring of 3 features."""
    return (f"use layers\nuse nn\nlet edges = array([[0, 1, 2, 3], [1, 2, 3, 0]], dtype=\"int\")\n"
            f"let net = {make}\n"
            f"print(predict(net, net.init(seed=0, input_shape=[3]), ones(4, 3), graph=edges).shape)")


EXAMPLES.update({
    'embedding': _shape('embedding(10, 4)', '[3]', 'array([[1, 2, 3]], dtype="int")'),
    'conv1d': _shape('conv1d(4, 3, padding="same")', '[2, 10]', 'randn(5, 2, 10, seed=0)'),
    'conv2d': _shape('conv2d(8, 3, stride=2)', '[1, 9, 9]', 'randn(2, 1, 9, 9, seed=0)'),
    'max_pool1d': _shape('max_pool1d(2)', '[2, 8]', 'randn(1, 2, 8, seed=0)'),
    'max_pool2d': _shape('max_pool2d(2)', '[1, 4, 4]', 'randn(1, 1, 4, 4, seed=0)'),
    'avg_pool1d': _shape('avg_pool1d(size=3, stride=1)', '[2, 8]', 'randn(1, 2, 8, seed=0)'),
    'avg_pool2d': _shape('avg_pool2d(2)', '[1, 4, 4]', 'randn(1, 1, 4, 4, seed=0)'),
    'global_avg_pool': _shape('global_avg_pool()', '[3, 5]', 'randn(2, 3, 5, seed=0)'),
    'flatten': _shape('sequential(flatten(), dense(2))', '[3, 4]', 'randn(5, 3, 4, seed=0)'),
    'dropout': _shape('sequential(dense(4, inputs=2), dropout(0.2))', 'none', 'ones(3, 2)'),
    'batch_norm': _shape('sequential(dense(4, inputs=2), batch_norm())', 'none', 'randn(8, 2, seed=0)'),
    'layer_norm': _shape('layer_norm()', '[6]', 'randn(2, 6, seed=0)'),
    'rms_norm': _shape('rms_norm(eps=1e-6)', '[6]', 'randn(2, 6, seed=0)'),
    'activation': _shape('sequential(dense(3, inputs=2), activation("relu"))', 'none', 'randn(4, 2, seed=0)'),
    'lambda_layer': _shape('lambda_layer(fn(x) => x * 2)', '[3]', 'ones(2, 3)'),
    'lstm_layer': _shape('lstm_layer(8, return_sequences=true)', '[5, 3]', 'randn(2, 5, 3, seed=0)'),
    'gru_layer': _shape('gru_layer(8)', '[5, 3]', 'randn(2, 5, 3, seed=0)'),
    'attention': _shape('attention(2, causal=true)', '[5, 8]', 'randn(1, 5, 8, seed=0)'),
    'transformer_block': _shape('transformer_block(2, hidden=16)', '[5, 8]', 'randn(1, 5, 8, seed=0)'),
    'positions': _shape('positions(16)', '[5, 8]', 'randn(1, 5, 8, seed=0)'),
    'normalization': ('use layers\nuse nn\nlet net = sequential(normalization(), dense(1), inputs=2)\n'
                      'let x = randn(20, 2, seed=0) * 10 + 3\n'
                      'print(predict(net, adapt(net, net.init(seed=0), x), x).shape)'),
    'category_lookup': ('use layers\nuse nn\nlet net = sequential(category_lookup(2), inputs=1)\n'
                        'let x = array([[5], [7], [5], [9]])\n'
                        'print(predict(net, adapt(net, net.init(seed=0), x), x))'),
    'impute': ('use layers\nuse nn\nlet net = sequential(impute(), inputs=2)\n'
               'let x = array([[1, nan], [3, 4]])\n'
               'print(predict(net, adapt(net, net.init(seed=0), x), x))'),
    'adapt': ('use layers\nuse nn\nlet net = sequential(normalization(), dense(1), inputs=2)\n'
              'let p = adapt(net, net.init(seed=0), randn(50, 2, seed=0) * 4 + 1)\n'
              'print(p.normalization.state.mean)'),
    'gcn_layer': _graph('gcn_layer(2)'),
    'sage_layer': _graph('sage_layer(2)'),
    'gat_layer': _graph('gat_layer(2, heads=2)'),
    'gin_layer': _graph('gin_layer(2)'),
    'sequential': _shape('sequential(dense(4, activation="relu"), dense(1))', '[3]', 'ones(2, 3)'),
    'residual': _shape('residual(dense(3))', '[3]', 'ones(2, 3)'),
    'parallel': _shape('parallel(dense(3), dense(5), merge="concat")', '[2]', 'ones(4, 2)'),
    'merge': ('use layers\nuse nn\n'
              'let net = dag(inputs={a: [3], b: [3]}, nodes={s: [merge("add"), ["a", "b"]]}, outputs="s")\n'
              'print(predict(net, net.init(seed=0), [ones(2, 3), ones(2, 3)]))'),
    'dag': ('use layers\nuse nn\nlet net = dag(inputs={x: [2]}, outputs="y",\n'
            '              nodes={h: [dense(4), "x"], y: [dense(1), "h"]})\n'
            'print(predict(net, net.init(seed=0), ones(3, 2)).shape)'),
    'mlp': _shape('mlp(2, 3, hidden=[16, 16])', 'none', 'ones(4, 2)'),
    'resnet_mlp': _shape('resnet_mlp(4, 2, width=16, blocks=2)', 'none', 'ones(3, 4)'),
    'cnn_classifier': _shape('cnn_classifier([1, 8, 8], 10, filters=[4], hidden=8)', 'none',
                             'randn(2, 1, 8, 8, seed=0)'),
    'lstm_classifier': _shape('lstm_classifier(3, 2, units=8)', '[5, 3]', 'randn(4, 5, 3, seed=0)'),
    'transformer_lm': _shape('transformer_lm(20, d=16, heads=2, layers=1, context=8)', 'none',
                             'array([[1, 2, 3]], dtype="int")'),
    'gcn_classifier': _graph('gcn_classifier(3, 2, hidden=[4])'),
    'vae': ('use layers\nuse nn\nlet v = vae(6, 2, hidden=[8])\nlet p = v.init(seed=0)\n'
            'print(predict(v, p, rand(3, 6, seed=1)).shape)'),
    'generate': ('use layers\nuse nn\nlet lm = transformer_lm(10, d=16, heads=2, layers=1, context=8)\n'
                 'print(generate(lm, lm.init(seed=0), [1, 2], steps=4, temperature=0))'),
    'param_count': 'use layers\nlet net = mlp(2, 3, hidden=[8])\nprint(param_count(net.init(seed=0)))',
    'plot_history': ('use layers\nuse nn\nlet net = mlp(2, 1, hidden=[4])\n'
                     'let r = fit(net, net.init(seed=0), ones(8, 2), zeros(8), loss="mse", epochs=2, verbose=false)\n'
                     'print(plot_history(r, "loss.svg"))'),
    'rank': 'use layers\nprint(rank(), world_size())',
    'world_size': 'use layers\nprint(world_size())',
    'save_model': ('use layers\nuse nn\nlet net = mlp(2, 3, hidden=[4])\n'
                   'print(save_model("m.apsim", net, net.init(seed=0), labels=["a", "b", "c"]))'),
    'load_model': ('use layers\nuse nn\nlet net = mlp(2, 3, hidden=[4])\n'
                   'save_model("m.apsim", net, net.init(seed=0), labels=["a", "b", "c"])\n'
                   'print(load_model("m.apsim").labels)'),
    'predict_labels': ('use layers\nuse nn\nlet net = mlp(2, 3, hidden=[4])\n'
                       'save_model("m.apsim", net, net.init(seed=0), labels=["a", "b", "c"])\n'
                       'print(predict_labels(load_model("m.apsim"), randn(2, 2, seed=1)))'),
    'predict_proba': ('use layers\nuse nn\nlet net = mlp(2, 3, hidden=[4])\n'
                      'save_model("m.apsim", net, net.init(seed=0), labels=["a", "b", "c"])\n'
                      'print(predict_proba(load_model("m.apsim"), randn(2, 2, seed=1)).shape)'),
    'model_from_checkpoint': ('use layers\nuse nn\nlet net = mlp(2, 1, hidden=[4])\n'
                              'fit(net, net.init(seed=0), ones(8, 2), zeros(8), loss="mse", checkpoint="c.ckpt", verbose=false)\n'
                              'print(param_count(model_from_checkpoint("c.ckpt", net).params))'),
    'devices': 'use layers\nprint(devices()[0].name)',
})

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
    'save_model': "Writes one file (`.apsim` is added when the name lacks it), atomically (a temporary file, then a rename), under the sandbox's write rules: inside the project no permission is needed (`.apsim` is a data kind, docs/permissions.md). `params` is the parameter tree, or `fit`'s result `r`, which brings `r.params`, the training history (`history`, `val_history`, `metrics`, `val_metrics`, `lr_history`) and `r.opt` with its state. `labels` names the classes (one per output, two for a model of one output; a count that does not fit is refused); `meta` is any plain data (numbers, text, lists, records, maps, small tensors).",
    'load_model': 'Returns a record: `net` (the model), `params`, `labels` (or none), `meta`, `history`, `opt` (an optimizer with its state, or none), `input_shape`, `apsi_version`. `predict(m.net, m.params, x)` gives the same bits as the model that was saved, in another process, on NumPy and on torch; `summary(m.net)` works; `fit(m.net, m.params, x, y, …, opt=m.opt)` continues training exactly as the saving program\'s `fit(…, opt=r.opt)` would. `serve_model(load_model("m.apsim"))` serves it, with labels (docs/web.md).',
    'predict_labels': "`predict_labels(m, x)` gives each row's label; `predict_proba(m, x)` the class probabilities: softmax of the outputs (a sigmoid for one output, as `[1 - p, p]`), or the outputs themselves when the model ends in softmax or sigmoid.",
    'predict_proba': "`predict_labels(m, x)` gives each row's label; `predict_proba(m, x)` the class probabilities: softmax of the outputs (a sigmoid for one output, as `[1 - p, p]`), or the outputs themselves when the model ends in softmax or sigmoid.",
    'model_from_checkpoint': '`model_from_checkpoint(ckpt, net, labels=none, path=none)` turns a checkpoint `fit(checkpoint=…)` wrote into the same record (and with `path=`, a model file); `net` must be the model the run trained.',
    'export_onnx': "`export_onnx(net, params, path)` writes an `.onnx` file through `torch.onnx.export` of `torch_module` (needs permission `python`, PyTorch and the `onnx` and `onnxscript` packages); inputs are float32 (int64 for models that start with an embedding) with an open batch axis. ONNX Runtime's outputs match `predict` within 1e-5 (tests/models/test_serve_and_export.py).",
    'adapt': "`adapt(model, params, data)` returns the tree with the state of every preprocessing layer in the model learnt from `data` (a tensor, a `load_npy` array or a `dataset`'s x), one streamed pass per layer: each learns from what reaches it in the model's forward pass (the layers before it as learnt), so a layer may sit in a `parallel` branch or a `dag` node after a `lambda_layer` that picks its columns (the example below). It refuses, naming the layer (and the row), a layer reached through trainable weights (`dense(3), normalization()`: it would learn the initial weights' output), data of another width than `init` made the layer for, NaN or inf reaching a `normalization` (put `impute()` before it), inf reaching an `impute`, and more than one code per sample for a `category_lookup`. `fit` and `predict` accept NaN in the inputs when it reaches only layers that take it (`impute`, `category_lookup`; `lambda_layer`s before them, every branch of a `parallel`). The state sits under `state` in the tree, as batch norm's running statistics: the optimizer never changes it, `save_params`/`save_model` and checkpoints keep it, and `predict` (NumPy, torch, `use web`) applies it exactly as `fit` did. Adapt on the training split only (`adapt(net, p, x[0:n_train])`; of a `load_npy` array, `x.split(n_train)[0]`, which reads nothing): statistics of held-out rows would leak them into training. See docs/data.md.",
}
