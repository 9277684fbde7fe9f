"""Renamed: python scripts/make_model.py tiny [--path DIR] [--force]."""

import sys

sys.exit("scripts/make_tiny_model.py is now: python scripts/make_model.py tiny [--path DIR] [--force]")
