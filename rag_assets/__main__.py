from rag_assets.cli.main import run

run()
