"""Folders in, photos out: finding inputs, planning outputs, and the batch pipeline."""
