"""The leaderboard Django app: models, results and pages around the evaluation engine."""
