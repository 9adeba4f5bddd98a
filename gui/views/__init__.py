"""Widgets only: each is driven through its own methods and signals, and imports no presenter or bridge."""
