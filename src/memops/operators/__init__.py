"""Operator specs (schemas, prompts, parsers), symbolic and learned operators, backends."""
