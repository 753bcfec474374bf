"""Reproduction suite for recurrent language-model papers with input-dependent transitions."""

__version__ = "0.1.0"
