"""Controllers, one package per upstream controller family; each exposes
``register(manager, ctx)``."""
