"""nn's files: save_params/load_params (params_io.py: a parameter tree as an .npz of dotted names,
written atomically) and load_csv (csv_io.py)."""
