"""One screen a file (each with its .tcss beside it)."""
