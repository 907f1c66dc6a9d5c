"""azjax: a JAX-native AlphaZero research codebase."""

__version__ = "0.1.0"
