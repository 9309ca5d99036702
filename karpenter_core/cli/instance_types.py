"""`karpenter instance-types`: the catalogue a cloud provider offers, as the scheduler sees it.

The provider comes from the plugin manager (``--cloud-provider``, default ``kwok``).
``--instance-types FILE`` feeds a catalogue file to providers that read one (the KWOK
provider's ``instance-types-file-path`` setting). The table shows one row per instance
type — capacity, arch/OS, the cheapest available on-demand and spot price and the zones
it is offered in — and ``-o json`` / ``-o yaml`` print the full objects: requirements,
capacity, allocatable, overhead and every offering.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from karpenter_core.apis import labels
from karpenter_core.apis import resources as res
from karpenter_core.cli.exits import BadInput
from karpenter_core.cli.output import JSON, WIDE, YAML, dump, output_option, table_lines
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.plugins import (
    KarpenterPluginManager,
    PluginError,
    cloud_providers,
    get_cloud_provider,
    get_plugin_manager,
)

INSTANCE_TYPES_FILE_SETTING = "instance-types-file-path"
REGION_SETTING = "region"
"""The setting ``--region`` fills: every provider with regions declares one (AWS reads it
from ``AWS_REGION``, Azure from ``LOCATION``, GCP from ``GCP_REGION``)."""
DEFAULT_CLOUD_PROVIDER = "kwok"

TABLE_COLUMNS = ("NAME", "CPU", "MEMORY", "PODS", "ARCH", "OS", "ON-DEMAND", "SPOT", "ZONES")
WIDE_COLUMNS = (*TABLE_COLUMNS, "CAPACITY TYPES")
"""``-o wide`` adds the capacity types offered (zones are in the table already)."""


def _quantity(it: InstanceType, name: str) -> str:
    value = it.capacity.get(name)
    if value is None:
        return "-"
    return res.format_resource_list({name: value})[name]


def _values(it: InstanceType, key: str) -> str:
    if not it.requirements.has(key):
        return "-"
    req = it.requirements.get(key)
    if req.complement or not req.values:
        return "-"
    return ",".join(sorted(req.values))


def _cheapest(it: InstanceType, capacity_type: str) -> str:
    prices = [o.price for o in it.offerings if o.available and o.capacity_type == capacity_type]
    return f"{min(prices):.4f}" if prices else "-"


def _zones(it: InstanceType) -> str:
    zones = sorted({o.zone for o in it.offerings if o.available and o.zone})
    return ",".join(zones) if zones else "-"


def _capacity_types(it: InstanceType) -> str:
    types = sorted({o.capacity_type for o in it.offerings if o.available and o.capacity_type})
    return ",".join(types) if types else "-"


def table_row(it: InstanceType, wide: bool = False) -> tuple[str, ...]:
    """One table row for ``it`` (columns as :data:`TABLE_COLUMNS`, or :data:`WIDE_COLUMNS`
    when ``wide``)."""
    extra = (_capacity_types(it),) if wide else ()
    return (
        it.name,
        _quantity(it, res.CPU),
        _quantity(it, res.MEMORY),
        _quantity(it, res.PODS),
        _values(it, labels.LABEL_ARCH),
        _values(it, labels.LABEL_OS),
        _cheapest(it, labels.CAPACITY_TYPE_ON_DEMAND),
        _cheapest(it, labels.CAPACITY_TYPE_SPOT),
        _zones(it),
        *extra,
    )


def render_table(instance_types: Sequence[InstanceType], wide: bool = False) -> str:
    """Aligned text columns, a header first, no trailing spaces."""
    headers = WIDE_COLUMNS if wide else TABLE_COLUMNS
    return "\n".join(table_lines(headers, [table_row(it, wide) for it in instance_types]))


def region_settings(pm: KarpenterPluginManager, name: str, region: str | None) -> dict[str, str]:
    """``{"region": region}`` for a provider that has regions; BadInput for one that has
    none (kwok), so ``--region`` is never silently ignored."""
    if region is None:
        return {}
    spec = cloud_providers(pm).get(name)
    if spec is not None and not any(s.name == REGION_SETTING for s in spec.settings):
        raise BadInput(f"cloud provider {name!r} has no regions; --region does not apply to it")
    if not region.strip():
        raise BadInput("--region must not be empty")
    return {REGION_SETTING: region.strip()}


def _provider_settings(
    pm: KarpenterPluginManager, name: str, instance_types_file: str | None
) -> dict[str, str]:
    if instance_types_file is None:
        return {}
    spec = cloud_providers(pm).get(name)
    if spec is not None and not any(s.name == INSTANCE_TYPES_FILE_SETTING for s in spec.settings):
        raise BadInput(
            f"cloud provider {name!r} does not read an instance types file; "
            "--instance-types works with providers that have an "
            f"{INSTANCE_TYPES_FILE_SETTING!r} setting (such as kwok)"
        )
    return {INSTANCE_TYPES_FILE_SETTING: instance_types_file}


def list_instance_types(
    provider_name: str, instance_types_file: str | None = None, region: str | None = None
) -> list[InstanceType]:
    """The provider's instance types (for any NodePool); errors as ``ClickException``."""
    try:
        pm = get_plugin_manager()
        settings = _provider_settings(pm, provider_name, instance_types_file)
        settings.update(region_settings(pm, provider_name, region))
        provider = get_cloud_provider(provider_name, settings, pm=pm)
        return list(provider.get_instance_types(None))
    except PluginError as exc:
        raise BadInput(str(exc)) from None
    except NotImplementedError as exc:
        raise BadInput(
            f"cloud provider {provider_name!r} cannot list instance types: {exc}"
        ) from None
    except (ValueError, OSError) as exc:
        # Catalogue problems (a broken instance-types file...) come from the provider as
        # ValueError whose message names the file, entry and field.
        raise BadInput(str(exc)) from None


def to_documents(instance_types: Sequence[InstanceType]) -> list[dict[str, Any]]:
    """The ``-o json|yaml`` shape: one object per instance type."""
    return [it.to_dict() for it in instance_types]


@click.command(
    name="instance-types", short_help="List a cloud provider's instance types and prices."
)
@click.option(
    "--cloud-provider",
    "cloud_provider",
    default=DEFAULT_CLOUD_PROVIDER,
    show_default=True,
    help="Cloud provider plugin to ask (see `karpenter plugins`).",
)
@click.option(
    "--instance-types",
    "instance_types_file",
    # Not click.Path(dir_okay=False): that exits 2 with a usage error, while a wrong path is
    # bad input like any broken file (exit 1, one line from the provider naming the file).
    type=str,
    default=None,
    help="Instance types file for providers that read one (KWOK JSON format for kwok).",
)
@click.option(
    "--region",
    default=None,
    metavar="REGION",
    help="Region whose catalogue to list, for providers with regions (aws, azure, gcp); "
    "with no credentials they answer from their bundled snapshot.",
)
@output_option(wide=True)
def command(
    cloud_provider: str, instance_types_file: str | None, region: str | None, output: str
) -> None:
    """List the instance types a cloud provider offers, with capacity and prices."""
    instance_types = list_instance_types(cloud_provider, instance_types_file, region)
    if output in (JSON, YAML):
        click.echo(dump(to_documents(instance_types), output), nl=False)
    else:
        click.echo(render_table(instance_types, wide=output == WIDE))


__all__ = [
    "TABLE_COLUMNS",
    "WIDE_COLUMNS",
    "command",
    "list_instance_types",
    "region_settings",
    "render_table",
    "table_row",
    "to_documents",
]
