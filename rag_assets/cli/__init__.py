"""The `rag` command line (main.py) and its terminal progress bars."""
