"""The plan of one table's migration, by what each step decides; `build.build_plan` runs them in
order and writes nothing:

- `reach`: what the metadata reaches (the metadata chain, manifest lists, manifests, their files,
  and what older logged versions alone reach), with `entries` (a manifest's files as planned);
- `source`: what is at the source (every carried file exists with its recorded size);
- `copies`: what to copy (absent at the target, identical there, or a conflict);
- `target`: what the target must not hold, and what the mapping must cover;
- `reads`: how a plan reads; `model`: what a plan is (`TablePlan`).

A change to how a sync is planned goes into `build` (the sequence) and the step it changes.
"""
