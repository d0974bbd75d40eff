"""Prometheus metrics of one server, in a registry of its own (two servers in one process, as
in the tests, never share counters)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .admission import Admission

ROUTES = frozenset({
    "/health", "/metrics", "/v1/tasks", "/v1/key", "/v1/grade", "/v1/grade/batch",
    "/run_code", "/v1/ping", "/api/v2/execute", "/api/v2/runtimes",
})  # fmt: skip
"""Label values are these routes or "other": a client's path never becomes a label."""

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)


class Metrics:
    def __init__(self, admission: Admission) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "assay_serve_requests", "Requests answered, by route and HTTP status",
            ["route", "status"], registry=r,
        )  # fmt: skip
        self.latency = Histogram(
            "assay_serve_request_seconds", "Time to answer a request, by route", ["route"],
            buckets=BUCKETS, registry=r,
        )  # fmt: skip
        self.outcomes = Counter(
            "assay_serve_outcomes", "Gradings and runs by outcome: passed, failed, invalid, "
            "infra_error (native); success, failed, sandbox_error (run_code, execute)",
            ["route", "outcome"], registry=r,
        )  # fmt: skip
        self.infra_errors = Counter(
            "assay_serve_infra_errors", "Items that got an infrastructure error, not a result",
            ["route"], registry=r,
        )  # fmt: skip
        self.tampered = Counter(
            "assay_serve_tampered", "Items whose verdict (or run) carries a tamper signal",
            ["route"], registry=r,
        )  # fmt: skip
        self.rejected = Counter(
            "assay_serve_rejected", "Items refused before any work: full, draining",
            ["reason"], registry=r,
        )  # fmt: skip
        self.connections_dropped = Counter(
            "assay_serve_connections_dropped", "Connections closed by the server before a "
            "request was whole: head-timeout, body-timeout, shed (idle, to make room), refused",
            ["reason"], registry=r,
        )  # fmt: skip
        queued = Gauge("assay_serve_queue_depth", "Items admitted, not started", registry=r)
        queued.set_function(lambda: admission.waiting)
        running = Gauge("assay_serve_in_flight", "Items running on a worker", registry=r)
        running.set_function(lambda: admission.running)
        Gauge("assay_serve_workers", "Worker threads", registry=r).set(admission.workers)
        Gauge("assay_serve_queue_capacity", "Items that may wait", registry=r).set(admission.queue)

    @staticmethod
    def label(route: str) -> str:
        return route if route in ROUTES else "other"

    def observe(self, route: str, status: int, seconds: float) -> None:
        label = self.label(route)
        self.requests.labels(label, str(status)).inc()
        self.latency.labels(label).observe(seconds)

    def outcome(self, route: str, outcome: str, tampered: bool = False) -> None:
        self.outcomes.labels(self.label(route), outcome).inc()
        if tampered:
            self.tampered.labels(self.label(route)).inc()
        if outcome in ("infra_error", "sandbox_error"):
            self.infra_errors.labels(self.label(route)).inc()

    def dropped(self, reason: str) -> None:
        self.connections_dropped.labels(reason).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)
