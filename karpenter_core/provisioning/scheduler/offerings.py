"""Small readers over the cloud-provider Offering/InstanceType values.

They read the offering's own requirements, so the scheduler depends only on the documented
fields (``requirements``, ``price``, ``available``, ``reservation_capacity``).
"""

from __future__ import annotations

from typing import Any

from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, LABEL_TOPOLOGY_ZONE

RESERVATION_ID_LABEL = "karpenter.sh/reservation-id"


def _single_value(reqs: Any, key: str) -> str:
    if not reqs.has(key):
        return ""
    values = reqs.get(key).values
    if len(values) == 1 and not reqs.get(key).complement:
        return str(next(iter(values)))
    return ""


def capacity_type_of(offering: Any) -> str:
    ct = getattr(offering, "capacity_type", None)  # precomputed by cloudprovider.Offering
    if isinstance(ct, str) and ct:
        return ct
    return _single_value(offering.requirements, CAPACITY_TYPE_LABEL_KEY)


def zone_of(offering: Any) -> str:
    return _single_value(offering.requirements, LABEL_TOPOLOGY_ZONE)


def reservation_id_of(offering: Any) -> str:
    rid = getattr(offering, "reservation_id", None)
    if callable(rid):
        rid = rid()
    if isinstance(rid, str) and rid:
        return rid
    return _single_value(offering.requirements, reservation_label())


def reservation_label() -> str:
    """The provider's reservation-id label (upstream ``cloudprovider.ReservationIDLabel``)."""
    from karpenter_core.cloudprovider.types import reservation_id_label

    return reservation_id_label() or RESERVATION_ID_LABEL
