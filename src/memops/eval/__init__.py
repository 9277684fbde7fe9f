"""LOO harness, metrics, statistics, reports and figures, vLLM serving."""
