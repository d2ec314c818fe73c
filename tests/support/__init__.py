"""Everything test modules share, and the only place it lives: test modules never import one another.

- ``emulator``: a real emulator process on loopback (``start_emulator``, the ``Emulator`` handle).
- ``emulator_app``: the emulator app in-process, a client of it, envelopes, a hand-moved clock
  (also a pytest plugin: the ``clock``, ``app`` and ``client`` fixtures).
- ``asgi``: the API client wired to an in-process emulator app.
- ``contract_exchange``: one request checked against the management contract.
- ``seed_ids``: the ids of the emulator's seed.
- ``cli``: running the real command line, writing manifests, the request log's writes.
- ``pipes``: pipe manifests for CLI tests and the live pipes they look for.
- ``manifests``: the shipped example manifests (a private copy) and manifest editing.
- ``plan_inputs``: inputs of the pure planning functions.
- ``inventory``: the read-only commands run in-process.
- ``hostile_server``: loopback servers that misbehave one way each.
- ``state_servers``: PostgreSQL and an S3-compatible server (also a pytest plugin).
- ``watch``: ``reconcile watch`` as a process, its status page, a browser.
- ``dist``: the built release and a venv it is installed in.
- ``docs``: the documentation's executable pages and the built site.
"""
