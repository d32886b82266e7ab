"""Dollar cost of a call from its token counts.

Prices are USD per million tokens (input, output), list prices as of 2025; override or extend
them through the model config (``prices``). An unknown model costs 0 and logs one warning.
"""

from __future__ import annotations

from services.shared.logging import get_logger

log = get_logger(__name__)

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "deepseek-chat": (0.27, 1.10),
    "deepseek-reasoner": (0.55, 2.19),
}

_warned: set[str] = set()


def lookup_price(
    model: str, table: dict[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    """Exact name, then without a ``provider/`` prefix, then the longest known prefix
    (``gpt-4o-2024-08-06`` -> ``gpt-4o``, but ``gpt-4o-mini-x`` -> ``gpt-4o-mini``)."""
    prices = {**PRICES, **(table or {})}
    for name in (model, model.rsplit("/", 1)[-1]):
        if name in prices:
            return prices[name]
    short = model.rsplit("/", 1)[-1]
    matches = [k for k in prices if short.startswith(k)]
    return prices[max(matches, key=len)] if matches else None


def cost_of(
    model: str, tokens_in: int, tokens_out: int, table: dict[str, tuple[float, float]] | None = None
) -> float:
    price = lookup_price(model, table)
    if price is None:
        if model not in _warned:
            _warned.add(model)
            log.warning("unknown model price; counting cost as 0", model=model)
        return 0.0
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
