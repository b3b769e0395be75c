"""Training as a graph (``from adjoint import training as T``): loss
builders, optimizers written as IR, ``AppendLoss``, ``train_step`` (forward,
Gradient, simplification and the optimizer as one function) and ``Trainer``,
which keeps params and optimizer state resident in executor buffers."""

from .append_loss import AppendLoss
from .init import init_params
from .losses import Loss, binary_cross_entropy_with_logits, cross_entropy, huber, l1, mse, nll
from .optim import SGD, Adam, AdamW, Optimizer, RMSprop
from .step import SetupTrainer, StepLayout, train_step
from .trainer import Trainer

__all__ = ["AppendLoss", "SetupTrainer", "StepLayout", "train_step", "Trainer", "init_params",
           "Loss", "mse", "l1", "huber", "cross_entropy", "nll", "binary_cross_entropy_with_logits",
           "Optimizer", "SGD", "Adam", "AdamW", "RMSprop"]
