"""A real Kubernetes control plane for tests: built from Go modules, started per session."""
