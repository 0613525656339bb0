"""The parts of bench/run, one module a measured area: core (initialize,
exec, memory), files (issue 3), code (issue 4) and streamable (issue 7),
over what common holds."""
