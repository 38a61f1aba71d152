"""Search across every public response: steps whose answer has the words asked for."""
