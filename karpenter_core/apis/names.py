"""Kubernetes name syntax (``k8s.io/apimachinery/pkg/util/validation``): DNS-1123 subdomains,
qualified names (label keys, annotation keys, topology keys) and label values.

The one implementation of these rules: label selectors, NodePool validation, topology keys
and the API model all ask here. Each check returns the problems, worded as Kubernetes words
them, and an empty list when the value is valid.
"""

from __future__ import annotations

import re

__all__ = [
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "label_key_problem",
    "label_value_problem",
]

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = rf"{_DNS1123_LABEL_FMT}(\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)

_QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED_NAME_FMT}')"
)
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{_DNS1123_SUBDOMAIN_FMT}')"
)
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"
)


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1123 subdomain (object names, label prefixes)."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_DNS1123_SUBDOMAIN_ERR)
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Problems with ``value`` as a qualified name (``[prefix/]name``), as Kubernetes words them."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = [f"prefix part {e}" for e in is_dns1123_subdomain(prefix)]
        if errs:
            return errs + _name_part_errors(name)
    else:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_ERR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    return _name_part_errors(name)


def _name_part_errors(name: str) -> list[str]:
    if not name:
        return ["name part must be non-empty"]
    errs = []
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_ERR)
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty is fine)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_LABEL_VALUE_ERR)
    return errs


def label_key_problem(key: object) -> str | None:
    """Why ``key`` is not a valid label key, in one line, or None when it is one."""
    if not isinstance(key, str):
        return f"invalid label key {key!r}: must be a string"
    errs = is_qualified_name(key)
    return f"invalid label key {key!r}: {'; '.join(errs)}" if errs else None


def label_value_problem(value: object) -> str | None:
    """Why ``value`` is not a valid label value, in one line, or None when it is one."""
    if not isinstance(value, str):
        return f"invalid label value {value!r}: must be a string"
    errs = is_valid_label_value(value)
    return f"invalid label value {value!r}: {'; '.join(errs)}" if errs else None
