"""Measuring in fresh processes: the layer above ``measure``, ``report`` and ``workloads`` that
starts worker processes, hands them workloads to time, and pools what they measured."""
