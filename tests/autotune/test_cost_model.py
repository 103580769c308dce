"""XGBoost ranking cost model: ranking quality, determinism, feature-length checks, save/load,
transfer learning; the random model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autotune.cost_model import CostModel, RandomCostModel, XGBCostModel

F = 8


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def monotone(X: np.ndarray) -> np.ndarray:
    """Throughput rising with features 0-1, falling with 2, an interaction, noise-free, > 0."""
    return 3 * X[:, 0] + np.exp(2 * X[:, 1]) - X[:, 2] ** 2 + 0.5 * X[:, 3] * X[:, 4] + 1.0


def data(n: int, seed: int, f=monotone) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(0, 1, (n, F)).astype(np.float32)
    return X, f(X)


def test_protocol():
    assert isinstance(XGBCostModel(), CostModel)
    assert isinstance(RandomCostModel(), CostModel)


def test_ranks_a_monotone_function_on_held_out_data():
    X, y = data(500, 0)
    Xt, yt = data(400, 1)
    model = XGBCostModel(seed=0)
    model.fit(X, y)
    assert spearman(model.predict(Xt), yt) > 0.9


def test_failed_measurements_rank_last():
    X, y = data(300, 0)
    y[:30] = 0.0  # failures
    model = XGBCostModel(seed=0)
    model.fit(X, y)
    pred = model.predict(X)
    assert np.median(pred[:30]) < np.quantile(pred[30:], 0.1)


def test_untrained_predicts_zeros_and_empty_fit_keeps_it_untrained():
    model = XGBCostModel()
    assert np.array_equal(model.predict(np.ones((3, F))), np.zeros(3))
    model.fit(np.zeros((0, F)), np.zeros(0))
    assert not model.trained
    assert np.array_equal(model.predict(np.ones((2, F))), np.zeros(2))


def test_deterministic_with_a_seed():
    X, y = data(200, 0)
    a, b = XGBCostModel(seed=3), XGBCostModel(seed=3, n_threads=2)
    a.fit(X, y)
    b.fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))


def test_wrong_feature_length_raises():
    X, y = data(50, 0)
    with pytest.raises(ValueError, match="feature length 8 does not match.*12"):
        XGBCostModel(feature_length=12).fit(X, y)
    model = XGBCostModel()
    model.fit(X, y)
    assert model.feature_length == F
    with pytest.raises(ValueError, match="feature length 5"):
        model.fit(X[:, :5], y)
    with pytest.raises(ValueError, match="feature length 9"):
        model.predict(np.zeros((2, 9)))
    with pytest.raises(ValueError, match="labels"):
        model.fit(X, y[:10])


def test_save_load_round_trips_predictions_exactly(tmp_path):
    X, y = data(200, 0)
    model = XGBCostModel(seed=0)
    model.fit(X, y)
    path = tmp_path / "model.json"
    model.save(path)
    # xgboost's JSON model + a JSON sidecar; no pickle
    assert json.loads(path.read_text())["learner"]["objective"]["name"] == "rank:pairwise"
    meta = json.loads((tmp_path / "model.json.meta.json").read_text())
    assert meta["feature_length"] == F
    loaded = XGBCostModel().load(path)
    assert loaded.feature_length == F
    Xt, _ = data(100, 5)
    assert np.array_equal(loaded.predict(Xt), model.predict(Xt))
    with pytest.raises(ValueError, match="feature length"):
        loaded.fit(X[:, :4], y)

    untrained = tmp_path / "untrained.json"
    XGBCostModel(feature_length=F).save(untrained)
    back = XGBCostModel().load(untrained)
    assert not back.trained and back.feature_length == F


def test_transfer_learning_warm_starts_from_other_tasks(tmp_path):
    # other tasks: same underlying preference, different throughput scales (one ranking group each)
    others_X, others_y = [], []
    for seed, scale in [(10, 1.0), (11, 50.0), (12, 0.01)]:
        X, y = data(300, seed)
        others_X.append(X)
        others_y.append(scale * y)
    Xt, yt = data(400, 99)

    pre = XGBCostModel.pretrained(others_X, others_y, seed=0)
    assert pre.trained and pre.feature_length == F
    # before seeing any data of the new task it already ranks it
    assert spearman(pre.predict(Xt), yt) > 0.9

    # a few samples of the new task: the warm-started model beats one trained from scratch
    X_few, y_few = data(12, 20)
    cold = XGBCostModel(seed=0)
    cold.fit(X_few, y_few)
    pre.fit(X_few, y_few)
    warm_rho, cold_rho = spearman(pre.predict(Xt), yt), spearman(cold.predict(Xt), yt)
    assert warm_rho > 0.9 and warm_rho > cold_rho
    # continuation adds trees on top of the base ones
    assert pre.booster.num_boosted_rounds() == 2 * pre.n_rounds

    # refitting restarts from the pretrained base, not from the previous fit
    pre.fit(X_few, y_few)
    assert pre.booster.num_boosted_rounds() == 2 * pre.n_rounds

    # fit(..., base=other) is the same warm start
    other = XGBCostModel(seed=0)
    other.fit(np.concatenate(others_X), np.concatenate(others_y))
    m = XGBCostModel(seed=0)
    m.fit(X_few, y_few, base=other)
    assert m.booster.num_boosted_rounds() == 2 * m.n_rounds
    with pytest.raises(ValueError, match="feature length"):
        XGBCostModel(feature_length=3).fit(X_few, y_few, base=other)

    # the base survives save/load, so a loaded pretrained model keeps warm-starting
    pre.save(tmp_path / "pre.json")
    loaded = XGBCostModel().load(tmp_path / "pre.json")
    assert np.array_equal(loaded.predict(Xt), pre.predict(Xt))
    loaded.fit(X_few, y_few)
    assert np.array_equal(loaded.predict(Xt), pre.predict(Xt))


def test_random_cost_model(tmp_path):
    X, y = data(20, 0)
    a, b = RandomCostModel(seed=4), RandomCostModel(seed=4)
    a.fit(X, y)
    pa, pb = a.predict(X), b.predict(X)
    assert pa.shape == (20,) and np.array_equal(pa, pb)
    assert 0.0 <= pa.min() and pa.max() < 1.0 and len(set(pa)) == 20
    with pytest.raises(ValueError):
        a.fit(X[:, :3], y)
    a.save(tmp_path / "r.json")
    c = RandomCostModel().load(tmp_path / "r.json")
    assert c.seed == 4 and c.feature_length == F
