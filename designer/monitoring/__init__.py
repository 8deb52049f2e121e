"""The operator's toolbox: ``/healthz`` and ``/readyz`` for a load balancer or an orchestrator, the workers'
heartbeat table they read, and Prometheus metrics (``/metrics`` on the web process, the worker's own registry on
a private port). See the README's "Operating Trellis"."""
