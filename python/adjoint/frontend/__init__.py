"""Front ends that bring models from other frameworks into adjoint.

``from_torch`` imports a ``torch.nn.Module`` through ``torch.export``;
``from_torch_state`` and ``to_torch_state`` move its weights between a torch
state dict and adjoint params. torch is optional: it is imported only when
one of these is called.
"""

from .torch_export import from_torch
from .torch_state import from_torch_state, to_torch_state

__all__ = ["from_torch", "from_torch_state", "to_torch_state"]
