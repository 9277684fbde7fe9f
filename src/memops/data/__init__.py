"""Scenario generators, trajectory annotations and replay, dataset builders, LOO splits."""
