"""The terminal's progress bars: rates count work done while a bar is shown."""

import io
import re
import time

from rag_assets.cli.progress_bars import TerminalProgress
from rag_assets.progress import OVERALL, ProgressEvent


def test_what_was_done_before_the_bar_appeared_is_not_a_rate():
    out = io.StringIO()
    bars = TerminalProgress(out)
    bars(ProgressEvent(OVERALL, 45, 45))  # 45 unchanged documents, known at once
    bars(ProgressEvent("embed", 0, 10, "chunks"))
    for done in range(1, 11):
        time.sleep(0.03)
        bars(ProgressEvent("embed", done, 10, "chunks"))
    bars.close()
    rates = [float(r) for r in re.findall(r"([0-9.]+) ?(?:documents|chunks)/s", out.getvalue())]
    assert rates and max(rates) < 1000, out.getvalue()[-500:]  # never "6553600.00 documents/s"
