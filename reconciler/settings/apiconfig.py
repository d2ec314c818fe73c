"""The client's configuration built from resolved setting values (the one builder of it).

The CLI's connection flags and ``Settings.api_config`` both end here, so a rate, a size or a
bound is parsed, and refused with the flag and variable it came from, in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reconciler.model.errors import ConfigError

if TYPE_CHECKING:
    from reconciler.client.config import ApiConfig


def api_config_of(values: Mapping[str, Any], *, insecure: bool = False) -> ApiConfig:
    """Return ``ApiConfig`` from setting values by parameter name; None keeps a default."""
    from reconciler.client.budget import Rate
    from reconciler.client.config import ApiConfig
    from reconciler.client.limits import RequestLimits, parse_size

    rates: dict[str, Any] = {}
    for param in ("rate", "dashboards_rate"):
        text = values.get(param)
        if text is None:
            continue
        try:
            rates[param] = Rate.parse(str(text))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    size = values.get("max_response_size")
    given: dict[str, Any] = {
        "max_wait": values.get("max_wait"),
        "retry_budget": values.get("retry_budget"),
        "deadline": values.get("request_deadline"),
        "max_response_bytes": None if size is None else parse_size(str(size)),
    }
    limits = RequestLimits(**{k: v for k, v in given.items() if v is not None})
    optional = {
        name: values[name]
        for name in ("parallelism", "timeout", "max_attempts")
        if values.get(name) is not None
    }
    base_url = values.get("base_url") or ""
    return ApiConfig(
        base_url=base_url,
        key_id=values.get("key_id") or "",
        key_secret=values.get("key_secret") or "",
        dashboards_url=values.get("dashboards_url") or base_url,
        dashboards_token=values.get("dashboards_token") or "",
        insecure=insecure,
        limits=limits,
        **rates,
        **optional,
    )
