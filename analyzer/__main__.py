"""``python -m analyzer`` = ``hvd-analyze``."""

from analyzer.cli import main

main()
