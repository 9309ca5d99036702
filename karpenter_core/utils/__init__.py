"""Small shared predicates and helpers (upstream ``pkg/utils``)."""
