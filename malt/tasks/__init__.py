"""Cross-validation protocols (one module per task) and the declarations they own."""
from malt.tasks.base import METRICS, Metric, Setting, Task, get_task, metric_info, register_task, tasks

__all__ = ["METRICS", "Metric", "Setting", "Task", "get_task", "metric_info", "register_task", "tasks"]
