"""Recorded sessions as tests (the pytest plugin, ``python -m mcpx check`` and ``log``): replay a
flow file offline through mcpx as chosen client revisions, per call what each side was delivered,
the change records, and whether each delivered message is valid for its receiver's revision."""
