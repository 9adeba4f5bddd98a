"""The only package that imports the torch-backed engine (never torch itself): ``worker.Backend``, ``models`` (the
named models, for the Engine panel and the teach dialog) and the developer-only ``untrained`` colorizer.
"""
