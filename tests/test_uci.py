"""UCI loaders: shapes and class counts as recorded in each SOURCE.md, missing values, id columns,
subsets, and a real-data quality bar for label propagation."""
from __future__ import annotations

import numpy as np
import pytest

from malt import registry
from malt.engine.context import Context
from malt.datasets.catalogue import DataRoots, catalogue
from malt.tasks import get_task
from tests.conftest import require_data

# (name, file, n, d, class counts, '?' cells) from MALT_DATA/uci/README.md and the SOURCE.md files
EXPECTED = [
    ("hepatitis", "uci/hepatitis/hepatitis.data", 155, 19, [32, 123], 167),
    ("breast-cancer", "uci/breast-cancer-wisconsin/breast-cancer-wisconsin.data", 699, 9, [458, 241], 16),
    ("pima", "uci/pima-indians-diabetes/pima-indians-diabetes.data", 768, 8, [500, 268], 0),
    ("wine", "uci/wine/wine.data", 178, 13, [59, 71, 48], 0),
    ("wine2", "uci/wine/wine.data", 130, 13, [59, 71], 0),
    ("iris", "uci/iris/iris.data", 150, 4, [50, 50, 50], 0),
    ("glass", "uci/glass/glass.data", 214, 9, [70, 76, 17, 13, 9, 29], 0),
    ("usps-1234", "uci/usps/zip.train.gz", 3874, 256, [1269, 929, 824, 852], 0),
    ("letter-ef", "uci/letter-recognition/letter-recognition.data.gz", 1543, 16, [768, 775], 0),
    ("ionosphere", "uci/ionosphere/ionosphere.data", 351, 34, [126, 225], 0),
    ("sonar", "uci/sonar/sonar.all-data", 208, 60, [111, 97], 0),
    ("vehicle", "uci/vehicle/vehicle.tsv.gz", 846, 18, [212, 217, 218, 199], 0),
]


@pytest.mark.parametrize("name,path,n,d,counts,missing", EXPECTED)
def test_shapes_classes_and_missing_values(name, path, n, d, counts, missing):
    root = require_data(path)
    ds = catalogue()[name].loader(DataRoots([root]))
    X, y = ds["X"], ds["y"]
    assert X.shape == (n, d) and X.dtype == float and not np.isnan(X).any()
    assert np.issubdtype(y.dtype, np.integer)
    np.testing.assert_array_equal(np.bincount(y), counts)
    assert ds.meta["imputed"] == missing


def test_breast_cancer_drops_the_id_and_imputes_bare_nuclei_by_its_mean():
    root = require_data("uci/breast-cancer-wisconsin/breast-cancer-wisconsin.data")
    ds = catalogue()["breast-cancer"].loader(DataRoots([root]))
    raw = [line.strip().split(",") for line in open(root / "uci/breast-cancer-wisconsin/breast-cancer-wisconsin.data")
           if line.strip()]
    bare = np.array([float(r[6]) for r in raw if r[6] != "?"])
    holes = [i for i, r in enumerate(raw) if r[6] == "?"]
    assert ds["X"].max() <= 10  # ids (up to 1e7) are gone
    np.testing.assert_allclose(ds["X"][holes, 5], bare.mean())


def test_label_propagation_quality_on_iris():
    root = require_data("uci/iris/iris.data")
    ds = catalogue()["iris"].loader(DataRoots([root]))
    task = get_task("semisupervised")
    P = task.Params(labeled=30)
    ctx = Context.for_arrays(ds["X"])
    errors = []
    for fold in range(5):
        s = task.split(ds, P, fold)
        algo = registry.get("gf")()
        errors.append(task.score(ds, P, s, algo.run(s, algo.Params(), ctx))["error"])
    assert np.mean(errors) < 0.10  # the thesis reports 5.5 ± 2.5 % (Figure 3.4)


@pytest.mark.parametrize("name", ["gf", "gwem", "lnp", "lgc", "tikreg", "ck", "ltsalp", "lelpc", "llelp"])
def test_quality_bar_on_standardised_wine(name):
    root = require_data("uci/wine/wine.data")
    ds = catalogue()["wine"].loader(DataRoots([root]))
    task = get_task("semisupervised")
    P = task.Params(labeled=30)
    algo = registry.get(name)()
    params = algo.Params(scale="standardize", **({"alpha": 0.9} if name in ("lgc", "lnp") else {}))
    ctx = Context.for_arrays(ds["X"])
    errors = [task.score(ds, P, s, algo.run(s, params, ctx))["error"] for s in (task.split(ds, P, f) for f in (0, 1))]
    # measured 4-8 % over five folds (unscaled features give ~30 %, the thesis's Figure 3.4 level)
    assert np.mean(errors) < 0.15, f"{name}: {errors}"
