"""specdash: predicted vs measured decode throughput for speculative-decoding drafters."""

__version__ = "0.3.0"
