"""Moving the bytes: one object's copy, the copy order, the CPU pool for rewrites, the engine that runs
a migration, and the same on Spark executors.
"""
