"""``accelerate launch -m memops.train op=extract``: the training entry point as a module."""

from memops.cli.train import main

main()
