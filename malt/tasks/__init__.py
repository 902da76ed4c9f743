"""Cross-validation protocols (one module per task), the metrics they score and the declarations
they own (options, components, metrics with label, direction and conventions, swept settings).

May import: the vocabulary (params, splits, errors), `malt.numerics` and numpy/scipy/scikit-learn. Tasks are generic
over algorithms: never an algorithm, the registry, the engine, the store, results or the CLI.
"""
from malt.tasks.base import METRICS, Metric, Setting, Task, get_task, metric_info, register_task, tasks

__all__ = ["METRICS", "Metric", "Setting", "Task", "get_task", "metric_info", "register_task", "tasks"]
