"""The estimate: the time and request model, the requests expected, engine choice, the sync window,
prices and cost.
"""
