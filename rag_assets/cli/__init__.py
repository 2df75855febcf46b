"""The `rag` command line: main.py (the parser and the dispatch), one module per command, and its
terminal progress bars."""
