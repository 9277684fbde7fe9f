"""The lowest layer above the engine: what every package shares and none owns."""
