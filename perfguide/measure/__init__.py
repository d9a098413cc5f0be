"""Measuring: the timer, running a workload's variants, the machine and its limits."""
