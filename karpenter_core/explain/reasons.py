"""One reason: a stable machine ``code`` and the sentence Karpenter uses for it."""

from __future__ import annotations

from typing import Any

from attrs import frozen

__all__ = ["Reason"]


@frozen
class Reason:
    """Why something was excluded or blocked.

    ``code`` is stable (documented in ``docs/explain.md``) so programs and tests branch on
    it; ``message`` is the text Karpenter itself gives (the scheduler's error, the
    disruption event's sentence), so what ``explain`` prints matches events and logs."""

    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}
