"""`python -m malt.cli` runs the command line (as the `malt` script does)."""
from malt.cli import main

main()
