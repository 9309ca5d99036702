"""Node controllers (upstream ``pkg/controllers/node``)."""
