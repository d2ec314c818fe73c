"""The management API contract as the test oracle: its loader, the run-wide check, the drift report."""
