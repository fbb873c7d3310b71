"""Issue 19: metrics as plain functions, checked on scikit-learn's documented examples (its docs give
these inputs and results) and against brute force; fit's metrics= uses the same definitions."""

import subprocess
import sys

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn


def test_accuracy_from_labels_scores_and_single_scores():
    assert nn.accuracy([0, 1, 2, 3], [0, 2, 1, 3]) == 0.5                  # scikit-learn's example
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert nn.accuracy([0, 1, 1], scores) == pytest.approx(2 / 3)
    assert nn.accuracy([0, 1, 1], [0.2, 0.7, 0.4]) == pytest.approx(2 / 3)   # probabilities > 0.5
    assert nn.accuracy([0, 1, 1], [-2.0, 3.0, -0.1]) == pytest.approx(2 / 3)  # logits > 0


def test_r2_score():
    t, p = [3, -0.5, 2, 7], [2.5, 0.0, 2, 8]
    assert nn.r2_score(t, p) == pytest.approx(0.9486081370449679, rel=1e-15)    # scikit-learn's example
    t2, p2 = [[0.5, 1], [-1, 1], [7, -6]], [[0, 2], [-1, 2], [8, -5]]
    assert nn.r2_score(t2, p2) == pytest.approx(0.9368005266622779, rel=1e-15)  # uniform_average
    assert nn.r2_score([1, 1, 1], [1, 1, 1]) == 1.0 and nn.r2_score([1, 1, 1], [1, 2, 1]) == 0.0


def test_confusion_matrix():
    m = nn.confusion_matrix([2, 0, 2, 2, 0, 1], [0, 0, 2, 2, 0, 2])            # scikit-learn's example
    assert m.data.tolist() == [[2, 0, 0], [0, 0, 1], [1, 0, 2]]
    assert nn.confusion_matrix([0, 1], [0, 0], classes=3).shape == (3, 3)


def test_precision_recall_f1():
    t, p = [0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1]                              # scikit-learn's example
    macro = nn.precision_recall_f1(t, p)
    assert (macro.precision, macro.recall, macro.f1) == pytest.approx((2 / 9, 1 / 3, 4 / 15))
    micro = nn.precision_recall_f1(t, p, average="micro")
    assert (micro.precision, micro.recall, micro.f1) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    each = nn.precision_recall_f1(t, p, average=None)
    assert each.f1 == pytest.approx([0.8, 0.0, 0.0])
    binary = nn.precision_recall_f1([0, 1, 1, 0], [0, 1, 0, 1], average="binary")
    assert (binary.precision, binary.recall) == (0.5, 0.5)


def test_roc_auc_is_the_pairwise_chance_with_ties_as_halves():
    assert nn.roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75             # scikit-learn's example
    rng = np.random.default_rng(0)
    t = rng.integers(0, 2, 200)
    s = rng.integers(0, 10, 200).astype(float)                                  # many ties
    pos, neg = s[t == 1], s[t == 0]
    brute = ((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean()
    assert nn.roc_auc(t, s) == pytest.approx(brute, rel=1e-14)


def test_mistakes_are_named():
    with pytest.raises(ApsiError, match="roc_auc: y_true needs both classes"):
        nn.roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ApsiError, match="accuracy: y_true has 3 samples but y_pred has 2"):
        nn.accuracy([0, 1, 1], [0, 1])
    with pytest.raises(ApsiError, match="average must be one of"):
        nn.precision_recall_f1([0], [0], average="mean")


def test_an_apsi_program_uses_them(tmp_path):
    (tmp_path / "m.apsi").write_text(
        "use nn\n"
        "print(accuracy([0, 1, 2, 3], [0, 2, 1, 3]), roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]))\n"
        "let r = precision_recall_f1([0, 1, 1, 0], [0, 1, 0, 1], average=\"binary\")\n"
        "print(r.precision, r.recall, confusion_matrix([1, 0], [1, 1]).tolist())\n")
    p = subprocess.run([sys.executable, "-m", "apsi", "m.apsi"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "0.5 0.75\n0.5 0.5 [[0, 1], [0, 1]]\n"
