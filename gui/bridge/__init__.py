"""The only package that imports the torch-backed engine (never torch itself): ``worker.Backend`` and the
developer-only ``untrained`` colorizer.
"""
