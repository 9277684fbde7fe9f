"""SFT/QLoRA training code used by train.py."""
