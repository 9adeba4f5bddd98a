"""Training data, the training loop, and the quality report on photos the model never saw."""
