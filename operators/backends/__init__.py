"""Inference backends: a batch of (adapter, messages, json_schema, max_tokens) in, texts out."""
