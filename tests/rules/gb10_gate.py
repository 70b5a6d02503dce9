"""The strict DGX Spark (GB10) gate's decision, as the spec's `run_hardware_tests
--require-gb10` makes it: pass only natively on AArch64 with an integrated compute-12.1
CUDA device.

Invariants: `refusal` is pure (no driver calls), so its rules are testable anywhere;
`probe_host` reads the machine and the CUDA driver without creating a context.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Optional, Tuple

CU_DEVICE_ATTRIBUTE_INTEGRATED = 18
GB10_COMPUTE = (12, 1)
AARCH64 = ("aarch64", "arm64")


@dataclass(frozen=True)
class Host:
    machine: str                              # platform.machine()
    driver_problem: Optional[str]             # driver.probe(): None when a device is usable
    compute: Optional[Tuple[int, int]] = None
    integrated: Optional[bool] = None


def refusal(host: Host) -> Optional[str]:
    """None when the strict gate may pass here, else why it refuses."""
    if host.machine.lower() not in AARCH64:
        return f"not native AArch64 (machine is {host.machine!r})"
    if host.driver_problem is not None:
        return f"no usable CUDA device ({host.driver_problem})"
    if host.compute != GB10_COMPUTE:
        return f"device compute capability is {host.compute}, not 12.1"
    if not host.integrated:
        return "device is not integrated (GB10 shares memory with the CPU)"
    return None


def probe_host() -> Host:
    from toolchain.providers.cuda import driver
    problem = driver.probe()
    if problem is not None:
        return Host(platform.machine(), problem)
    with driver.Device(0) as dev:
        return Host(platform.machine(), None, dev.compute_capability,
                    bool(dev.attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED)))
