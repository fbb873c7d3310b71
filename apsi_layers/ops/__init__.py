"""Op sets: the backend-neutral vocabulary layers are written in (spec.py) and its implementations."""
