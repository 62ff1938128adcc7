"""Tests of the checkpointer backends."""
