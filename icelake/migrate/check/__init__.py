"""Checking a target: validate (every snapshot read back), since (in proportion to a sync), verify (day
2), row digests, exact values, what the metadata reaches.
"""
