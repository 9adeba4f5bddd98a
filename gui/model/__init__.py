"""Qt-free or widget-free state: the queue model and its undo, hint store, run keys, requests, settings, previews."""
