"""What an assessment reads of an estate: each table, its buckets, commits, findings, and the sessions
it reads with.
"""
