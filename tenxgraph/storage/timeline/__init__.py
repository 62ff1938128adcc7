"""A stored thread as a timeline of events, for ``threads show --timeline`` and the web page."""

from __future__ import annotations

from tenxgraph.storage.timeline._build import ThreadTimeline, TimelineEvent, thread_timeline

__all__ = ["ThreadTimeline", "TimelineEvent", "thread_timeline"]
