"""Trial scripts: large trial counts run outside the test suite (`make trials-store`)."""
