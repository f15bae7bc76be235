"""The offline demo: a local upstream, an empty fork and the local forge in one folder."""
