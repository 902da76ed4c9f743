"""Cross-validation protocols (one module per task)."""
from malt.tasks.base import Task, get_task, register_task, tasks

__all__ = ["Task", "get_task", "register_task", "tasks"]
