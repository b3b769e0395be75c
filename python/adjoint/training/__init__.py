"""Training as a graph (``from adjoint import training as T``): loss
builders, optimizers written as IR, ``AppendLoss``, ``train_step`` (forward,
Gradient, simplification and the optimizer as one function) and ``Trainer``,
which keeps params and optimizer state resident in executor buffers."""
