"""What help() and `apsi doc` show for the modules nn, layers, plot, units and web: one plain-data
module each (apsi_lang/doc_source.py), importable without the modules themselves (no NumPy)."""
