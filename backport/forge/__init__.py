"""Forges: the protocol, the GitCode v5 client and the embedded local forge."""

from backport.forge.base import Comment, Forge, PlanSink, PrFile, PullRequest
from backport.forge.factory import make_forge

__all__ = ["Comment", "Forge", "PlanSink", "PrFile", "PullRequest", "make_forge"]
