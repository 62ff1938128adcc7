"""Persistence: the checkpointer contract and its backends."""
