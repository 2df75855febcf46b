import sys

from rag_assets.cli import main

sys.exit(main())
