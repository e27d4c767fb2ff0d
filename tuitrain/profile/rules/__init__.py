"""The rules between keys of a profile, one module per section (validate.py calls them in order).

Each rule reads the raw profile (a value of the wrong kind counts as absent: the shape check says it)
and returns Problems. `common.py` holds what they share: a section's table, a value or its schema
default, a path from the profile's folder and the file system probes.
"""
