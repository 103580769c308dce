"""Cost models that score schedule configurations (higher score = faster).

The tuner turns each candidate into a feature row (`autotune.features`) and asks a `CostModel`
to rank them; only the order of the scores matters. `XGBCostModel` is AutoTVM's choice: gradient
boosted trees trained with a pairwise ranking objective on the measured throughputs, refit after
every measured batch. `RandomCostModel` gives uniform random scores (the random tuner).

Training data: `X` is an (N, F) feature matrix, `y` the measured throughput (GFLOP/s) of each row,
0 for a failed measurement. Models are saved as XGBoost's own JSON model format plus a small JSON
sidecar (`<path>.meta.json`) holding the feature length; nothing is pickled.

Transfer learning: `XGBCostModel.pretrained(records_X, records_y)` trains on other tasks'
records (one ranking group per task, since throughputs of different kernels are not comparable);
every later `fit(X, y)` on the new task's data continues boosting from those trees (XGBoost's
`xgb_model=` warm start) instead of starting from scratch. `fit(X, y, base=other_model)` does the
same with an existing model as the base.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np

from compiler.errors import ZigguratError

META_SUFFIX = ".meta.json"
BASE_SUFFIX = ".base.json"
META_FORMAT = 1


def _xgboost() -> Any:
    """The xgboost module, or one clear error naming the install step (a core dependency, so
    missing only in a broken install)."""
    try:
        import xgboost
    except ImportError as e:
        raise ZigguratError(
            f"the tuner's cost model needs xgboost ({e}): pip install xgboost-cpu "
            "(or reinstall ziggurat, which depends on it)"
        ) from None
    return xgboost


@runtime_checkable
class CostModel(Protocol):
    """Scores feature rows; a higher score predicts a faster configuration."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> None: ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...

    def save(self, path: str | os.PathLike[str]) -> None: ...

    def load(self, path: str | os.PathLike[str]) -> Self: ...


def _as_matrix(X: Any) -> np.ndarray:
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"cost model: expected a 2-D feature matrix, got shape {X.shape}")
    return X


def _normalized_labels(y: np.ndarray) -> np.ndarray:
    """Scale throughputs into [0, 1] (AutoTVM's y / max(y)); non-finite or negative -> 0."""
    y = np.asarray(y, dtype=np.float64)
    y = np.where(np.isfinite(y) & (y > 0), y, 0.0)
    top = float(y.max()) if y.size else 0.0
    return (y / top if top > 0 else y).astype(np.float32)


class XGBCostModel:
    """XGBoost ranking model (objective rank:pairwise, higher score = faster).

    A fixed number of boosting rounds (`n_rounds`) per fit, deterministic for a given `seed`
    (also across `n_threads`). `feature_length` is fixed at construction or by the first fit;
    a fit or predict with another number of columns raises ValueError.
    """

    def __init__(
        self,
        feature_length: int | None = None,
        *,
        n_rounds: int = 50,
        seed: int = 0,
        n_threads: int = 1,
        max_depth: int = 6,
        eta: float = 0.3,
        pairs_per_sample: int = 32,
    ) -> None:
        self.feature_length = feature_length
        self.n_rounds = n_rounds
        self.seed = seed
        self.n_threads = n_threads
        self.max_depth = max_depth
        self.eta = eta
        self.pairs_per_sample = pairs_per_sample
        self.booster: Any = None  # xgboost.Booster once trained
        self.base: Any = None  # booster that every fit continues from (transfer learning)

    # ---------------------------------------------------------------- parameters

    def params(self) -> dict[str, Any]:
        return {
            "objective": "rank:pairwise",
            # "mean" samples pairs across the whole group; the default "topk" only looks at the
            # top of the list and ranks the rest of the space poorly.
            "lambdarank_pair_method": "mean",
            "lambdarank_num_pair_per_sample": self.pairs_per_sample,
            "tree_method": "hist",
            "max_depth": self.max_depth,
            "eta": self.eta,
            "gamma": 1e-4,
            "min_child_weight": 1,
            "subsample": 1.0,
            "lambda": 1.0,
            "alpha": 0.0,
            "seed": self.seed,
            "nthread": self.n_threads,
            "verbosity": 0,
        }

    @property
    def trained(self) -> bool:
        return self.booster is not None

    def _check_length(self, X: np.ndarray, what: str) -> None:
        if self.feature_length is None:
            self.feature_length = int(X.shape[1])
        elif X.shape[1] != self.feature_length:
            raise ValueError(
                f"XGBCostModel.{what}: feature length {X.shape[1]} does not match the model's "
                f"feature length {self.feature_length} (features from another space/feature "
                "version?)"
            )

    # ---------------------------------------------------------------- training

    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        base: XGBCostModel | None = None,
        groups: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        """Train from scratch on (X, y), or continue from `base` / the pretrained trees.

        `groups` optionally gives a ranking-group id per row (rows of different tasks must not be
        compared); by default all rows form one group. With no rows the model stays untrained
        (or keeps only its base trees).
        """
        xgb = _xgboost()

        if base is not None:
            if base.feature_length is not None:
                if self.feature_length is None:
                    self.feature_length = base.feature_length
                elif self.feature_length != base.feature_length:
                    raise ValueError(
                        f"XGBCostModel.fit: base model feature length {base.feature_length} "
                        f"does not match {self.feature_length}"
                    )
            self.base = base.booster.copy() if base.booster is not None else None
        X = _as_matrix(X) if np.size(X) else np.zeros((0, self.feature_length or 0), np.float32)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"XGBCostModel.fit: {X.shape[0]} feature rows but {y.shape[0]} labels")
        if X.shape[0] == 0:
            self.booster = self.base.copy() if self.base is not None else None
            return
        self._check_length(X, "fit")
        qid = np.zeros(len(y), np.int64) if groups is None else np.asarray(groups, np.int64)
        if qid.shape != y.shape:
            raise ValueError("XGBCostModel.fit: groups must give one id per row")
        order = np.argsort(qid, kind="stable")  # xgboost wants rows sorted by query id
        X, y, qid = X[order], y[order], qid[order]
        labels = np.empty(len(y), np.float32)
        for g in np.unique(qid):
            sel = qid == g
            labels[sel] = _normalized_labels(y[sel])
        dtrain = xgb.DMatrix(X, label=labels, qid=qid)
        start = self.base.copy() if self.base is not None else None
        self.booster = xgb.train(
            self.params(),
            dtrain,
            num_boost_round=self.n_rounds,
            xgb_model=start,
            verbose_eval=False,
        )

    @classmethod
    def pretrained(
        cls,
        records_X: Sequence[np.ndarray] | np.ndarray,
        records_y: Sequence[np.ndarray] | np.ndarray,
        **kwargs: Any,
    ) -> XGBCostModel:
        """A model trained on other tasks' records that later fits continue from.

        `records_X`/`records_y` are either one matrix/vector (a single ranking group) or
        sequences of per-task matrices/vectors (one ranking group per task).
        """
        if isinstance(records_X, np.ndarray) and records_X.ndim == 2:
            xs, ys = [records_X], [np.asarray(records_y)]
        else:
            xs = [_as_matrix(x) for x in records_X if np.size(x)]
            ys = [np.asarray(v).reshape(-1) for v in records_y if np.size(v)]
        if len(xs) != len(ys):
            raise ValueError("XGBCostModel.pretrained: records_X and records_y differ in length")
        source = cls(**kwargs)
        if xs:
            X = np.concatenate(xs)
            y = np.concatenate(ys)
            groups = np.concatenate([np.full(len(v), i, np.int64) for i, v in enumerate(ys)])
            source.fit(X, y, groups=groups)
        model = cls(**kwargs)
        if source.trained:
            model.fit(np.zeros((0, 0)), np.zeros(0), base=source)
        return model

    # ---------------------------------------------------------------- inference

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores (float64, higher = faster); zeros while untrained."""
        xgb = _xgboost()

        X = _as_matrix(X)
        if self.booster is None:
            return np.zeros(X.shape[0])
        if X.shape[1] != self.feature_length:
            raise ValueError(
                f"XGBCostModel.predict: feature length {X.shape[1]} does not match the model's "
                f"feature length {self.feature_length}"
            )
        if X.shape[0] == 0:
            return np.zeros(0)
        return self.booster.predict(xgb.DMatrix(X)).astype(np.float64)

    # ---------------------------------------------------------------- persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write `path` (XGBoost JSON model), `path.meta.json` and, with a base, `path.base.json`."""
        path = Path(path)
        meta: dict[str, Any] = {
            "format": META_FORMAT,
            "kind": "xgb",
            "feature_length": self.feature_length,
            "trained": self.booster is not None,
            "has_base": self.base is not None,
            "n_rounds": self.n_rounds,
            "seed": self.seed,
            "max_depth": self.max_depth,
            "eta": self.eta,
            "pairs_per_sample": self.pairs_per_sample,
        }
        if self.booster is not None:
            self.booster.save_model(str(path))
        if self.base is not None:
            self.base.save_model(str(path) + BASE_SUFFIX)
        Path(str(path) + META_SUFFIX).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")

    def load(self, path: str | os.PathLike[str]) -> Self:
        """Load what `save` wrote into this model; returns self."""
        xgb = _xgboost()

        path = Path(path)
        meta = json.loads(Path(str(path) + META_SUFFIX).read_text())
        if meta.get("format") != META_FORMAT or meta.get("kind") != "xgb":
            raise ValueError(f"{path}: not an XGBCostModel sidecar (format {meta.get('format')})")
        self.feature_length = meta["feature_length"]
        for name in ("n_rounds", "seed", "max_depth", "eta", "pairs_per_sample"):
            if name in meta:
                setattr(self, name, meta[name])
        self.booster = None
        self.base = None
        if meta["trained"]:
            self.booster = xgb.Booster(params={"nthread": self.n_threads}, model_file=str(path))
        if meta.get("has_base"):
            self.base = xgb.Booster(
                params={"nthread": self.n_threads}, model_file=str(path) + BASE_SUFFIX
            )
        return self


class RandomCostModel:
    """Uniform random scores (seeded); `fit` is a no-op. Drives the random tuner."""

    def __init__(self, seed: int = 0, feature_length: int | None = None) -> None:
        self.seed = seed
        self.feature_length = feature_length
        self._rng = np.random.default_rng(seed)

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        if np.size(X):
            matrix = _as_matrix(X)
            if self.feature_length is not None and matrix.shape[1] != self.feature_length:
                raise ValueError(
                    f"RandomCostModel.fit: feature length {matrix.shape[1]} != {self.feature_length}"
                )
            self.feature_length = int(matrix.shape[1])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self._rng.random(int(_as_matrix(X).shape[0])))

    def save(self, path: str | os.PathLike[str]) -> None:
        meta = {
            "format": META_FORMAT,
            "kind": "random",
            "seed": self.seed,
            "feature_length": self.feature_length,
        }
        Path(str(path) + META_SUFFIX).write_text(json.dumps(meta, sort_keys=True) + "\n")

    def load(self, path: str | os.PathLike[str]) -> Self:
        meta = json.loads(Path(str(path) + META_SUFFIX).read_text())
        if meta.get("kind") != "random":
            raise ValueError(f"{path}: not a RandomCostModel sidecar")
        self.seed = meta["seed"]
        self.feature_length = meta["feature_length"]
        self._rng = np.random.default_rng(self.seed)
        return self
