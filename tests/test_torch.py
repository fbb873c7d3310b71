"""check_torch: every layer type on NumPy and on PyTorch in float64 (outputs and gradients).

Runs under pytest and as `python -m unittest tests.test_torch`; skipped when PyTorch is missing.
"""

import importlib.util
import os
import subprocess
import sys
import unittest
from pathlib import Path

HAVE_TORCH = importlib.util.find_spec("torch") is not None
ROOT = Path(__file__).resolve().parent.parent


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
class CheckTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import torch

        # small tensors: one thread avoids OpenMP's waiting threads on a machine with shared cores
        cls.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        import torch

        torch.set_num_threads(cls.threads)

    def test_every_layer_agrees_with_numpy_on_the_cpu(self):
        from apsi_layers.backends.torch.check import TOLERANCE, cases, check_torch

        lines = []
        result = check_torch("cpu", out=lines.append)
        self.assertTrue(result.ok, result.summary())
        self.assertEqual(len(lines), len(cases()) + 1)
        self.assertTrue(lines[-1].startswith("OK: largest difference "), lines[-1])
        self.assertTrue(lines[-1].endswith(" on cpu"))
        self.assertLess(result.largest, TOLERANCE)
        names = [r.name for r in result.rows]
        # every layer type the issue lists: dense, convolution, pooling, batch/layer/RMS norm, LSTM, GRU,
        # attention, transformers, residual/parallel/DAG composition, siamese, GCN, GraphSAGE, GAT, GIN, VAE
        for kind in ("mlp", "dense", "embedding", "conv1d", "conv2d", "pooling", "pooling1d",
                     "batch_norm", "batch_norm2d", "layer_norm", "rms_norm", "dropout", "lstm", "lstm_mask",
                     "gru", "gru_mask", "attention", "attention_mask", "transformer", "transformer_lm",
                     "residual", "parallel", "dag", "siamese", "activation_fn", "lambda_layer", "gcn",
                     "sage", "gat", "gin", "vae"):
            self.assertIn(kind, names)
        first = lines[0].split()
        self.assertEqual((first[1], first[3]), ("output", "gradient"))

    def test_a_wrong_kernel_fails_and_names_the_culprit(self):
        from apsi_layers.backends.torch.check import check_torch
        from apsi_layers.backends.torch.ops import TorchOps

        real = TorchOps.__dict__["rms_norm"]
        TorchOps.rms_norm = staticmethod(lambda x, gamma, eps: real.__func__(x, gamma, eps) * (1 + 1e-8))
        try:
            result = check_torch("cpu", out=lambda line: None, names={"mlp", "rms_norm"})
        finally:
            TorchOps.rms_norm = real
        self.assertFalse(result.ok)
        self.assertEqual([r.name for r in result.culprits], ["rms_norm"])
        self.assertTrue(result.summary().startswith("FAILED: 1 of 2 layers differ by more than 1e-10"))
        self.assertIn("rms_norm (output", result.summary())

    def test_the_command_line(self):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-m", "apsi", "check-torch", "--device", "cpu"],
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.strip().splitlines()[-1].startswith("OK: largest difference"))
        from click.testing import CliRunner

        from apsi_cli.check_torch_cmd import check_torch

        bad = CliRunner().invoke(check_torch, ["--device", "cuda:7"])
        self.assertEqual(bad.exit_code, 1)
        self.assertIn('device="cuda:7": PyTorch sees', bad.output)

    def test_the_command_line_exits_1_when_a_layer_differs(self):
        from click.testing import CliRunner

        from apsi_cli.check_torch_cmd import check_torch
        from apsi_layers.backends.torch.ops import TorchOps

        real = TorchOps.__dict__["gru"]
        TorchOps.gru = lambda self, *a, **k: tuple(t * (1 + 1e-9) for t in real(self, *a, **k))
        try:
            out = CliRunner().invoke(check_torch, ["--device", "cpu"])
        finally:
            TorchOps.gru = real
        self.assertEqual(out.exit_code, 1, out.output)
        last = out.output.strip().splitlines()[-1]
        self.assertTrue(last.startswith("FAILED: 2 of "), last)
        self.assertIn("gru (output", last)
        self.assertIn("gru_mask (output", last)


if __name__ == "__main__":
    unittest.main()
