"""One module per CLI command; each is a thin function over the core."""
