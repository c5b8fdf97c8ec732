"""The migration workflow's steps: what each Lambda of migrate_tables.asl.json does, as plain functions.

Handlers in lambdas/ parse their event into these models and call one function here.
"""
