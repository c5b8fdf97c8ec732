"""A migration request and what it reaches, below both the assessment (icelake/assess) and the
workflow (icelake/workflow), which read requests alike and import nothing of each other's for it:
the request and its work items (models.py), target names (names.py), the Inventory's selection
(selection.py), the target checks the Plan step makes and an assessment reports (target.py), and
the sessions, ledger and artifacts a step or an assessment reaches them with (deps.py)."""
