"""nn's autodiff: the Tensor (tensor.py), the tape it records on (tape.py), the differentiable ops
(ops.py, reduce.py, shape.py; graph.py gives Tensor its operators), their gradient rules (vjps.py on
the RAW namespace of xp.py), grad/value_and_grad/jacobian/hessian (autodiff.py), defop (extend.py),
parameter trees (tree.py), and what lets an Apsi function run on torch tensors too (foreign.py).

Each rule of the numeric library (nn/numlib/) and every fused kernel (nn/fused/) plugs into this."""
