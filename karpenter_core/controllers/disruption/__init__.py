"""Voluntary disruption: the ``disruption`` singleton and the ``disruption.queue``
orchestration queue (upstream ``pkg/controllers/disruption``; spec disruption §3-§12).

Methods are written against :mod:`.types`; see that module for the contract.
"""
