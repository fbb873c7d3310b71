"""Data larger than memory: .npy shards read by rows (memmap.py), batch functions (sources.py),
sequence windows (windows.py), read-ahead (prefetch.py) and CSV to shards (csv_shards.py)."""
