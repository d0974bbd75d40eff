"""The proof tools: the attack matrix and the benchmark."""
