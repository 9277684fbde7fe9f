"""``accelerate launch train.py op=extract``: the training entry point, from a checkout."""

from memops.cli.train import main

if __name__ == "__main__":
    main()
