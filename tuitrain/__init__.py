"""tuitrain: launch and watch Hugging Face training runs from a terminal."""

__version__ = "0.1.0"
