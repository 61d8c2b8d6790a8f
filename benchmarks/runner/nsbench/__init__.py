"""Nearstream benchmark runner: starts brokers, producers and Flink jobs, measures, plots."""
