"""One presenter per part of the window; each talks to its views through their methods, and to the engine
through the ``Backend`` protocol (``gui.presenters.backend``), never importing the bridge.
"""
