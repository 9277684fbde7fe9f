"""``python -m memops <command>``: the same as the ``memops`` console script."""

from memops.cli import main

main()
