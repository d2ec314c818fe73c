"""The client's configuration built from resolved setting values (the one builder of it).

``Settings.api_config`` (which every command calls) ends here, so a rate, a size or a bound is
parsed, and refused with the flag, variable or project key it came from, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from reconciler.model.errors import ConfigError

if TYPE_CHECKING:
    from reconciler.client.config import ApiConfig

__all__: list[str] = []


T = TypeVar("T")


def api_config_of(
    values: Mapping[str, object],
    *,
    insecure: bool = False,
    origins: Mapping[str, str] | None = None,
) -> ApiConfig:
    """Return ``ApiConfig`` from setting values by parameter name; None keeps a default.

    ``origins`` names where each value came from (a flag, a variable, a project-file key), by
    parameter name: a value that cannot be parsed is refused naming it, and the client's own
    checks name it too (``ApiConfig.origins``).
    """
    from reconciler.client.config import ApiConfig
    from reconciler.client.defaults import parse_size
    from reconciler.client.limits import RequestLimits
    from reconciler.client.ratelimit import Rate

    named = dict(origins or {})

    def parsed(name: str, value: object, parse: Callable[[str], T]) -> T:
        try:
            return parse(str(value))
        except (ValueError, ConfigError) as exc:
            where = named.get(name) or f"--{name.replace('_', '-')}"
            raise ConfigError(f"{where}: {exc}") from None

    rates: dict[str, Any] = {
        param: parsed(param, values[param], Rate.parse)
        for param in ("rate", "dashboards_rate")
        if values.get(param) is not None
    }
    size = values.get("max_response_size")
    given: dict[str, Any] = {
        "max_wait": values.get("max_wait"),
        "retry_budget": values.get("retry_budget"),
        "deadline": values.get("request_deadline"),
        "max_response_bytes": None
        if size is None
        else parsed("max_response_size", size, parse_size),
    }
    limits = RequestLimits(**{k: v for k, v in given.items() if v is not None})
    optional: dict[str, Any] = {  # each parsed already, by the setting's kind
        name: values[name]
        for name in ("parallelism", "timeout", "max_attempts")
        if values.get(name) is not None
    }
    base_url = str(values.get("base_url") or "")
    return ApiConfig(
        base_url=base_url,
        key_id=str(values.get("key_id") or ""),
        key_secret=str(values.get("key_secret") or ""),
        dashboards_url=str(values.get("dashboards_url") or base_url),
        dashboards_token=str(values.get("dashboards_token") or ""),
        insecure=insecure,
        limits=limits,
        origins=named,
        **rates,
        **optional,
    )
