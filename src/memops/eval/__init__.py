"""The LOO harness: scoring held-out folds with the operators, metrics and statistics, reports
and figures."""
