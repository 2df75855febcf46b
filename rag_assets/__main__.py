import sys

from rag_assets.cli.main import main

sys.exit(main())
