"""The half-precision dtype a float32 attention call is cast to, as transformers does for FlashAttention
(transformers.integrations.flash_attention.get_target_dtype).

float32 queries in a half-precision model are a side effect, not a choice: under torch.autocast the
projections run in half precision but rotary embeddings multiply them by float32 tables, and PEFT
keeps layer norms in float32. transformers casts such inputs back to the model's compute dtype
before FlashAttention, so that the kernels run; fa3lite does the same (its kernels take float16 /
bfloat16 only; float32 would go to its torch math). The compute dtype is, in order: autocast's dtype
when autocast is on for the query's device, the config's dtype for quantized models, else the dtype
of the module's first Linear layer. A float32 model (no autocast, float32 weights) is not cast.
"""
from __future__ import annotations

import torch


def cast(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, module):
    """(query, key, value) in the compute dtype when ``query`` is float32 in a half-precision model
    (logged once, as transformers does), else unchanged."""
    target = target_dtype(query, module)
    if target is None:
        return query, key, value
    from transformers.utils import logging

    logging.get_logger(__name__).warning_once(f"fa3lite: casting float32 attention inputs to {target}, the "
                                              f"model's compute dtype, as transformers does for FlashAttention")
    return query.to(target), key.to(target), value.to(target)


def target_dtype(query: torch.Tensor, module) -> torch.dtype | None:
    """The dtype to cast a float32 ``query`` (and its keys and values) to, or None to keep them."""
    if query.dtype != torch.float32:
        return None
    device_type = query.device.type
    if torch.is_autocast_enabled(device_type):
        found = torch.get_autocast_dtype(device_type)
    elif hasattr(getattr(module, "config", None), "_is_quantized"):
        found = getattr(module.config, "dtype", None) or getattr(module.config, "torch_dtype", None)
        if isinstance(found, str):     # configs read from JSON may name it
            found = getattr(torch, found, None)
    else:
        found = _first_linear_dtype(module)
    return found if found not in (None, torch.float32) else None


def _first_linear_dtype(module) -> torch.dtype | None:
    modules = getattr(module, "modules", None)
    if modules is None:
        return None
    return next((layer.weight.dtype for layer in modules() if isinstance(layer, torch.nn.Linear)), None)
