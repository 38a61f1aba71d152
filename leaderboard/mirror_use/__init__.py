"""The mirror-use view: each model's main score against its control runs (issue 36)."""
