"""The cost model bills a Lambda's CPU-bound time at its CPU share (memory / 1,769 MB of a
vCPU) and its waits at its memory (the figures must not fall by shrinking memory
under CPU-bound work)."""

from __future__ import annotations

import pytest

from bench.cost_model import FULL_VCPU_GB, lambda_gb_s


def test_cpu_bound_work_costs_the_same_below_a_full_vcpu() -> None:
    small = lambda_gb_s(128 / 1024, cpu_ms=100.0, wait_ms=0.0)
    large = lambda_gb_s(1024 / 1024, cpu_ms=100.0, wait_ms=0.0)
    assert small == large == pytest.approx(0.1 * FULL_VCPU_GB)


def test_waits_cost_the_function_memory() -> None:
    assert lambda_gb_s(0.125, cpu_ms=0.0, wait_ms=1500.0) == pytest.approx(1.5 * 0.125)
    assert lambda_gb_s(2.0, cpu_ms=100.0, wait_ms=0.0) == pytest.approx(0.1 * 2.0)
