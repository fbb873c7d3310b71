"""The op set: the one vocabulary every layer's forward pass is written in.

A layer never imports numpy, torch or `nn`; it calls `ctx.ops.NAME(...)`. Two op sets implement every
name below with the same meaning: the NumPy one (apsi_layers/backends/numpy/ops.py, on `nn` tensors with
`nn`'s autodiff; hot spots are fused ops with their own VJP in apsi_layers/nn/fused/) and the torch one
(apsi_layers/backends/torch/ops.py, on torch tensors with torch autograd). tests/layers/test_opset.py checks
that both implement exactly OPS, and the torch tests compare them op by op in float64.

Conventions, shared by both op sets:
- Tensors are the backend's own (nn.Tensor or torch.Tensor); Python operators + - * / ** @, unary -,
  `x.shape` (a tuple of ints) and basic indexing/slicing `x[i]`, `x[:, -1]` work on both.
- Batch first. Sequences [B, T, F]. Images channels first: conv1d input [B, C, L], conv2d [B, C, H, W].
- `axis` arguments are ints (negative allowed) or tuples of ints; `None` means all axes.
- Index tensors (labels, edge lists, token ids) are integer tensors made with `ops.indices(...)`.
- Padding is always explicit: a tuple of (before, after) pairs, one per spatial dimension; layers turn
  "same"/"valid"/int into pairs.
- Weights follow PyTorch's layouts where a fused torch kernel exists, so the torch op set can call it
  without copies: dense w [in, out]; conv w [out, in/groups, *kernel]; LSTM/GRU w_ih [G*H, F],
  w_hh [G*H, H], b_ih/b_hh [G*H], gate order i, f, g, o (LSTM) and r, z, n (GRU), torch's formulas.
"""
# ruff: noqa: E501  (one entry per line reads best as a table)

OPS = {
    # conversion and creation
    "constant": "constant(array_like) -> tensor: float data (float64 on NumPy; the op set's dtype on torch), no gradient",
    "indices": "indices(array_like) -> integer tensor (int64), for labels, token ids and edge lists",
    "is_tensor": "is_tensor(value) -> bool: value is this op set's tensor (a type test: no protocol of value is read)",
    "to_numpy": "to_numpy(t) -> numpy.ndarray (a copy, detached)",
    "zeros": "zeros(shape) -> tensor of zeros in the op set's float dtype",
    "stop_gradient": ("stop_gradient(x) -> the same values with no gradient flowing back (running "
                      "statistics, targets computed from the model)"),
    "ones": "ones(shape) -> tensor of ones",
    # elementwise
    "exp": "exp(x)", "log": "log(x)", "sqrt": "sqrt(x)", "abs": "abs(x)",
    "tanh": "tanh(x)", "sigmoid": "sigmoid(x)", "relu": "relu(x)",
    "gelu": "gelu(x): the tanh approximation (torch: F.gelu(x, approximate='tanh'))",
    "softplus": "softplus(x)", "silu": "silu(x) = x * sigmoid(x)",
    "leaky_relu": "leaky_relu(x, slope=0.01)", "elu": "elu(x, alpha=1.0)",
    "maximum": "maximum(a, b)", "minimum": "minimum(a, b)",
    "where": "where(cond, a, b): cond a boolean tensor (or array) broadcast against a and b",
    "clip": "clip(x, lo, hi) with number bounds",
    # reductions and normalisers
    "sum": "sum(x, axis=None, keepdims=False)", "mean": "mean(x, axis=None, keepdims=False)",
    "max": "max(x, axis=None, keepdims=False)",
    "logsumexp": "logsumexp(x, axis=-1, keepdims=False)",
    "softmax": "softmax(x, axis=-1)", "log_softmax": "log_softmax(x, axis=-1)",
    # shapes and indexing
    "reshape": "reshape(x, shape)", "transpose": "transpose(x, axes)",
    "concat": "concat(list_of_tensors, axis)", "stack": "stack(list_of_tensors, axis)",
    "expand_dims": "expand_dims(x, axis)",
    "take": "take(x, idx, axis=0): gather along axis with an integer tensor (embedding lookup, graph gather)",
    # linear algebra
    "matmul": "matmul(a, b), batched like numpy.matmul",
    "dense": "dense(x, w, b=None) = x @ w + b with x [..., in], w [in, out], b [out] or None",
    # fused hot spots
    "conv": ("conv(x, w, b, stride, padding, dilation, groups): x [B, C, *spatial], w [O, C/groups, *kernel], "
             "b [O] or None; stride/dilation tuples of ints per spatial dim; padding ((lo, hi), ...)"),
    "max_pool": "max_pool(x, size, stride, padding): x [B, C, *spatial]; tuples per spatial dim; pads with -inf",
    "avg_pool": "avg_pool(x, size, stride, padding): mean over the window, padding counted (torch's default)",
    "batch_norm_train": ("batch_norm_train(x, gamma, beta, eps) -> (y, batch_mean, batch_var): statistics over "
                         "every axis but 1 (the feature/channel axis); batch_var is the biased variance used "
                         "to normalise; the layer updates running statistics (with the unbiased variance)"),
    "batch_norm_eval": "batch_norm_eval(x, gamma, beta, mean, var, eps): normalise axis 1 with given statistics",
    "layer_norm": "layer_norm(x, gamma, beta, eps): over the last axis; gamma/beta [F] (beta may be None)",
    "rms_norm": "rms_norm(x, gamma, eps): x * rsqrt(mean(x**2, -1) + eps) * gamma",
    "lstm": ("lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=None) -> (ys [B, T, H], h_T, c_T): whole sequence; "
             "mask [B, T] bool (true = real step): at a masked step the state carries over unchanged and the "
             "output repeats the carried h"),
    "gru": "gru(x, h0, w_ih, w_hh, b_ih, b_hh, mask=None) -> (ys, h_T): as lstm, torch's GRU formulas",
    "attention": ("attention(q, k, v, mask=None, causal=False): q [B, Hd, Tq, D], k/v [B, Hd, Tk, D]; scale "
                  "1/sqrt(D); mask a boolean tensor broadcastable to [B, Hd, Tq, Tk], true = may attend"),
    "softmax_cross_entropy": ("softmax_cross_entropy(logits [..., C], labels int [...], weights=None) -> mean "
                              "over labels; weights [rows] give sum(w * loss) / count (Keras's reduction)"),
    "bce_with_logits": "bce_with_logits(logits, targets) -> mean, numerically stable",
    "dropout": "dropout(x, rate, rng): inverted dropout (kept values scaled by 1/(1-rate)); rng from ops.rng",
    "normal": "normal(shape, rng) -> standard normal samples (no gradient), e.g. VAE reparameterisation",
    "rng": "rng(seed) -> the op set's random stream (a numpy Generator / a torch Generator on the device)",
    # graphs: index [E] holds each edge's target node; n is the node count
    "scatter_add": "scatter_add(src [E, ...], index [E], n) -> [n, ...]: sums the rows of src into their targets",
    "segment_softmax": "segment_softmax(scores [E, ...], index [E], n): softmax over the edges sharing a target",
    "bincount": "bincount(index [E], n) -> float tensor [n] of counts (a constant, no gradient)",
}
