"""The commands' options: those of the settings generated from the settings table, and the rest.

A setting's option (``--state``, ``--rate``, ``--max-wait``, …) is built from its row of
``reconciler.settings.table``: flag, metavar, type and bounds, help, and the default and
variable its help names. It declares no default and reads no variable itself: a value given on
the command line is the only one click parses, and ``reconciler.cli.config`` hands it to the
settings as explicit (the variable, the project file and the built-in default are the settings'
to resolve). The built-in default is looked up only when help is shown, since some are owned by
stages ``--help`` does not import.

The other helpers build the options every command family spells the same way: ``-o/--output``,
a choice, a path to write.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from reconciler.settings.table import BY_PARAM, Bounds, Kind, Setting, default_of

__all__: list[str] = []


F = TypeVar("F", bound=Callable[..., Any])

# The settings of every command that talks to the API, in the order ``--help`` lists them.
CONNECTION = (
    "base_url",
    "key_id",
    "key_secret",
    "dashboards_url",
    "dashboards_token",
    "rate",
    "dashboards_rate",
    "parallelism",
    "timeout",
    "max_wait",
    "retry_budget",
    "max_attempts",
    "request_deadline",
    "max_response_size",
)


class Seconds(click.FloatRange):
    """A number of seconds: ``FloatRange`` that also refuses NaN (and infinity unless allowed).

    ``FloatRange`` alone lets ``nan`` through (every comparison with it is false), and a
    zero or negative timeout used to surface later as a misleading connection error.
    """

    name = "seconds"

    def __init__(self, *, min_open: bool = True, allow_inf: bool = False) -> None:
        super().__init__(min=0, min_open=min_open)
        self.allow_inf = allow_inf

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number) or (math.isinf(number) and not self.allow_inf):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return number


def _type_of(setting: Setting, bounds: Bounds | None) -> click.ParamType[Any] | None:
    """Return the click type checking ``setting``'s value as its row's kind and ``bounds`` say."""
    if bounds is None:
        return None
    if setting.kind is Kind.SECONDS:
        return Seconds(min_open=bounds.low_open, allow_inf=bounds.infinite)
    return click.IntRange(int(bounds.low), None if bounds.high is None else int(bounds.high))


class SettingOption(click.Option):
    """A setting's option: its help ends with the setting's default and variable, looked up
    when help is shown (``default``: where a command's own default is read, if it has one)."""

    def __init__(
        self, setting: Setting, default: Callable[[], object] | None, **attrs: Any
    ) -> None:
        super().__init__([setting.flag or setting.param, setting.param], **attrs)
        self.setting = setting
        self.own_default = default

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """Return the option's help line: its help, then its range, default and variable."""
        if self.hidden:
            return None
        facts = [self.get_help_extra(ctx).get("range", ""), *self._facts()]
        shown = "; ".join(fact for fact in facts if fact)
        return self.get_help_spec(ctx), f"{self.help} [{shown}]." if shown else f"{self.help}."

    def _facts(self) -> list[str]:
        setting = self.setting
        facts = []
        default = setting.default_text
        if default is None:
            value = self.own_default() if self.own_default else default_of(setting)
            default = (
                None if value is None else f"{value:g}" if isinstance(value, float) else str(value)
            )
        if default is not None:
            facts.append(f"default: {default}")
        if setting.variable:
            facts.append(f"env {setting.variable}")
        return facts


def setting_option(
    param: str,
    *,
    help: str | None = None,
    default: Callable[[], object] | None = None,
    finite: bool = False,
) -> Callable[[F], F]:
    """The option of the setting ``param``, built from its row of the settings table.

    ``help`` replaces the row's help where a command says more; ``default`` reads the default
    of a command that has its own (``watch``'s lock timeout, owned by its loop) for ``--help``;
    ``finite`` refuses ``inf`` where the row accepts it (a loop that must go on).
    """
    setting = BY_PARAM[param]
    bounds = setting.range
    if finite and bounds is not None:
        bounds = Bounds(bounds.low, bounds.low_open, bounds.high, infinite=False)

    def decorator(func: F) -> F:
        option = SettingOption(
            setting,
            default,
            type=_type_of(setting, bounds),
            metavar=setting.metavar,
            help=help or setting.help,
        )
        params = getattr(func, "__click_params__", [])
        params.append(option)
        func.__click_params__ = params  # type: ignore[attr-defined]
        return func

    return decorator


def setting_options(*params: str) -> Callable[[F], F]:
    """The options of the settings ``params``, listed by ``--help`` in this order."""

    def decorator(func: F) -> F:
        for param in reversed(params):
            func = setting_option(param)(func)
        return func

    return decorator


def connection_options(func: F) -> F:
    """Add the connection settings (URLs, credentials, budgets, bounds) and ``--insecure``
    (handed to the command as ``insecure``: it is a choice of this run, never a setting)."""
    func = setting_options(*CONNECTION[5:])(func)
    func = click.option(
        "--insecure", is_flag=True, help="Allow plain http:// to a host that is not loopback."
    )(func)
    return setting_options(*CONNECTION[:5])(func)


def output_option(
    *choices: str, help: str | None = None, machine: bool = False
) -> Callable[[F], F]:
    """``-o/--output`` choosing among ``choices``; the first is the default.

    ``machine``: the format is remembered before anything else is parsed, so that even an
    error is reported in it (``reconciler.cli.machine``).
    """
    extra: dict[str, Any] = {}
    if machine:
        from reconciler.cli.machine import remember_output

        extra = {"is_eager": True, "callback": remember_output}
    return choice_option("--output", "-o", "output", choices=choices, help=help, **extra)


def choice_option(
    *decls: str, choices: Sequence[str], help: str | None = None, **extra: Any
) -> Callable[[F], F]:
    """An option taking one of ``choices``; the first is the default (and shown)."""
    return click.option(
        *decls,
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help,
        **extra,
    )


def path_option(flag: str, name: str, help: str, *, directory: bool = False) -> Callable[[F], F]:
    """An option naming a file (or, with ``directory``, a directory) to write."""
    kind = click.Path(file_okay=False) if directory else click.Path(dir_okay=False)
    return click.option(flag, name, type=kind, help=help)
